"""Tell an outage from a weak model: the circuit breaker in front of each endpoint.

A request that still fails after its own retries (``retry.py``) failed for the *endpoint's* sake:
nobody answered, the server errored, the credentials were refused. Recording it as the model's
failure (a rejected proposal, a failed episode) would lower the difficulty and put an outage into
the training data. So ``GuardedLLM`` keeps such a request waiting and tries it again, while a
``CircuitBreaker`` shared by every request to the endpoint watches the streak of failures: any
answer ends the streak; once the endpoint has been unusable for ``window_s`` (all requests in flight
counted together), or at once when it refuses our credentials or does not know the model, every
request raises ``EndpointDown`` and the run stops, resumable, having recorded nothing of the outage.

Faults that belong to one request (``client_error``: a prompt too long for the model, say) are not
the endpoint's: they pass through as ``LLMCallError`` and are recorded like a bad answer; so does a
request that keeps failing for twice the window while the endpoint answers other requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..errors import EndpointDown, LLMCallError
from .base import LLM, LLMRequest, LLMResponse

FATAL_KINDS = frozenset({"auth", "not_found"})
"""Waiting does not fix these: the breaker opens on the first one."""
REQUEST_KINDS = frozenset({"client_error"})
"""Faults of one request, not of the endpoint: recorded, not waited out."""


class CircuitBreaker:
    """The failure streak of one endpoint, shared by all its requests."""

    def __init__(self, endpoint: str, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = endpoint
        self.window_s = window_s
        self.clock = clock
        self.failing_since: float | None = None
        self.last_error = ""
        self.opened: str | None = None
        """Why the breaker opened (None while closed)."""

    def success(self) -> None:
        self.failing_since = None

    def failure(self, error: LLMCallError) -> None:
        now = self.clock()
        if self.failing_since is None:
            self.failing_since = now
        self.last_error = str(error)
        if error.kind in FATAL_KINDS:
            self.opened = f"{self.endpoint} refused the run ({error.kind}): {error}"
        elif now - self.failing_since >= self.window_s:
            self.opened = (
                f"{self.endpoint} unusable for {now - self.failing_since:.0f} s "
                f"(circuit breaker {self.window_s:g} s); last error: {error}"
            )

    def check(self) -> None:
        if self.opened is not None:
            raise EndpointDown(self.opened, self.endpoint)


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class GuardedLLM:
    """An LLM whose endpoint failures wait for the endpoint instead of reaching the pipeline."""

    def __init__(self, llm: LLM, breaker: CircuitBreaker, max_pause_s: float = 5.0) -> None:
        self.llm = llm
        self.model = llm.model
        self.breaker = breaker
        self.max_pause_s = max_pause_s

    async def complete(self, request: LLMRequest) -> LLMResponse:
        pause = 0.25
        started = self.breaker.clock()
        while True:
            self.breaker.check()
            try:
                response = await self.llm.complete(request)
            except LLMCallError as e:
                if e.kind in REQUEST_KINDS:
                    raise
                self.breaker.failure(e)
                self.breaker.check()
                if self.breaker.clock() - started >= 2 * self.breaker.window_s:
                    # the endpoint answers others but never this request (a prompt that crashes the
                    # server, say): it is this request's failure after all, not a reason to wait forever
                    raise
                await _sleep(min(pause, self.max_pause_s, max(0.05, self.breaker.window_s / 4)))
                pause *= 2
                continue
            self.breaker.success()
            return response
