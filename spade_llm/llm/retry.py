"""Bounded, jittered retries for model calls, with tenacity.

Why not litellm's ``num_retries`` or the openai client's ``max_retries``: they retry out of our
sight (nothing counted in ``summary.json``), ignore our time budget, and stack with each other.
Providers turn those off and wrap each call in :func:`call_with_retries` instead, which

* retries only the fault kinds it is told are transient (rate limits, 5xx, dropped connections,
  timeouts, unusable bodies), never other 4xx: a bad request or a bad key does not get better;
* waits an exponential backoff with jitter (half to all of the step, so concurrent clients that
  failed together do not come back together), and at least what the server asked for in
  ``Retry-After``;
* stops after ``max_retries`` retries, or before a wait would cross ``budget_s``;
* reports every attempt, retry and final failure through callbacks (for ``LLMStats``).

This module imports neither litellm nor openai: it knows exceptions only through ``classify``.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.stop import stop_base

T = TypeVar("T")

log = logging.getLogger("spade_llm.llm")

RETRYABLE = frozenset({"rate_limit", "timeout", "connection", "server_error", "bad_response"})
"""Fault kinds worth another try; ``client_error`` (other 4xx) never is."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one request tries.

    ``budget_s`` bounds the whole request (attempts and waits together); the per-attempt
    timeout is the provider's business, but :meth:`attempt_timeout` helps it keep the last
    attempt inside the budget.
    """

    max_retries: int = 4
    """Retries after the first attempt."""
    backoff_s: float = 1.0
    """Base of the exponential backoff: the n-th retry waits up to ``backoff_s * 2**(n-1)``."""
    max_backoff_s: float = 30.0
    """Cap on one computed backoff."""
    max_retry_after_s: float = 60.0
    """Cap on a wait the server asks for; a server asking for an hour should not stall a run."""
    budget_s: float | None = None
    """Total seconds one request may take, retries included; None for no bound but ``max_retries``."""

    def backoff(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based).

        Jitter on the exponential step (half to all of it), and never less than the server's ``Retry-After``
        (capped): a throttling server says when it will take us again, waiting less wastes
        the retry.
        """
        step = min(self.max_backoff_s, self.backoff_s * 2 ** max(0, retry_number - 1))
        delay = random.uniform(0.5 * step, step)
        if retry_after is not None and retry_after > 0:
            delay = max(delay, min(retry_after, self.max_retry_after_s))
        return delay

    def attempt_timeout(self, timeout_s: float, started: float) -> float:
        """The timeout of an attempt starting now: ``timeout_s``, or less when the budget is nearly spent."""
        if self.budget_s is None:
            return timeout_s
        left = self.budget_s - (time.monotonic() - started)
        return max(min(1.0, timeout_s), min(timeout_s, left))  # a last attempt gets at least a second


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed response asked for, from ``retry-after-ms`` or ``Retry-After`` (seconds or a date).

    Looks at the exception's ``response.headers`` (httpx/openai) and ``litellm_response_headers``;
    None when there is no such header or it does not parse.
    """
    for headers in _headers_of(exc):
        value = _header(headers, "retry-after-ms")
        if value is not None:
            try:
                return max(0.0, float(value) / 1000.0)
            except ValueError:
                pass
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            continue
        if when is not None:
            return max(0.0, when.timestamp() - time.time())
    return None


def _headers_of(exc: BaseException) -> list[Any]:
    found = []
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        found.append(response.headers)
    extra = getattr(exc, "litellm_response_headers", None)
    if extra is not None:
        found.append(extra)
    headers = getattr(exc, "headers", None)
    if headers is not None:
        found.append(headers)
    return found


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
        if value is None and isinstance(headers, dict):  # a plain dict is case-sensitive
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    except Exception:
        return None
    return None if value is None else str(value).strip()


async def _sleep(seconds: float) -> None:
    """The wait between attempts; a module-level function so tests can record waits instead of taking them."""
    await asyncio.sleep(seconds)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    classify: Callable[[BaseException], str],
    retryable: Collection[str],
    on_attempt: Callable[[], None] | None = None,
    on_retry: Callable[[str, float, BaseException], None] | None = None,
    on_failure: Callable[[str, BaseException], None] | None = None,
    clock: RequestClock | None = None,
) -> T:
    """Await ``attempt()`` until it returns, retrying transient faults under ``policy``.

    Re-raises the last exception when the fault is not retryable or the budget is spent, after
    calling ``on_failure(kind, exc)``; ``on_retry(kind, delay, exc)`` runs before each wait and
    ``on_attempt()`` before each attempt. The budget is measured on ``clock`` when given
    (time queued for a server left out), else from the first attempt.
    """

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return policy.backoff(state.attempt_number, retry_after_seconds(exc) if exc else None)

    stop: stop_base = stop_after_attempt(policy.max_retries + 1)
    if policy.budget_s is not None:
        stop = stop | (_StopBeforeBudget(clock, policy.budget_s) if clock else stop_before_delay(policy.budget_s))

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if exc is not None and on_retry is not None:
            on_retry(classify(exc), state.upcoming_sleep, exc)

    retrying = AsyncRetrying(
        stop=stop,
        wait=wait,
        # CancelledError and KeyboardInterrupt are BaseExceptions: never retried, always re-raised
        retry=retry_if_exception(lambda e: isinstance(e, Exception) and classify(e) in retryable),
        before_sleep=before_sleep,
        sleep=lambda s: _sleep(s),
        reraise=True,
    )
    try:
        async for trial in retrying:
            with trial:
                if on_attempt is not None:
                    on_attempt()
                return await attempt()
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        if on_failure is not None and isinstance(exc, Exception):
            on_failure(classify(exc), exc)
        raise
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover


class RequestClock:
    """Time one request has used against its retry budget.

    Waiting for a free slot on a busy server (``llm.max_inflight_per_endpoint``) is not the
    endpoint failing: the provider reports it with :meth:`exclude` and it does not count.
    """

    def __init__(self, policy: RetryPolicy, timeout_s: float) -> None:
        self.policy = policy
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.excluded_s = 0.0

    def elapsed(self) -> float:
        return time.monotonic() - self.started - self.excluded_s

    def exclude(self, seconds: float) -> None:
        self.excluded_s += max(0.0, seconds)

    def timeout(self) -> float:
        """The timeout of an attempt starting now: ``timeout_s``, less when the budget is nearly spent."""
        return self.policy.attempt_timeout(self.timeout_s, time.monotonic() - self.elapsed())


class _StopBeforeBudget(stop_base):
    """Stop before a wait would cross the budget, measured on a :class:`RequestClock`."""

    def __init__(self, clock: RequestClock, budget_s: float) -> None:
        self.clock = clock
        self.budget_s = budget_s

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.clock.elapsed() + (retry_state.upcoming_sleep or 0.0) >= self.budget_s


async def complete_with_retries(
    model: str,
    attempt: Callable[[RequestClock], Awaitable[T]],
    policy: RetryPolicy,
    timeout_s: float,
    stats: Any,
    *,
    classify: Callable[[BaseException], str],
    describe: Callable[[BaseException, int], str],
) -> T:
    """One model answer through :func:`call_with_retries`, the way every provider counts it
    (:class:`~spade_llm.llm.transport.Transport` calls it for both real transports).

    ``attempt(clock)`` makes one try; ``clock.timeout()`` is the time it may take (cut so the last
    try fits the budget), ``clock.exclude(s)`` takes time spent queueing for a server out of the
    budget. ``stats`` (an ``LLMStats`` view) gets each attempt, retry and final failure;
    ``describe(exc, limit)`` gives an error's text with credentials scrubbed.

    Raises:
        LLMCallError: the endpoint failed for good, with the fault kind.
    """
    from ..errors import LLMCallError

    clock = RequestClock(policy, timeout_s)
    attempts = 0

    async def one() -> T:
        nonlocal attempts
        attempts += 1
        return await attempt(clock)

    def on_retry(kind: str, delay: float, exc: BaseException) -> None:
        stats.retry(kind)
        log.info("retrying %s after %s in %.1fs (attempt %d): %s", model, kind, delay, attempts, describe(exc, 160))

    try:
        return await call_with_retries(
            one,
            policy,
            classify=classify,
            retryable=RETRYABLE,
            on_attempt=stats.request,
            on_retry=on_retry,
            on_failure=lambda kind, exc: stats.failure(kind),
            clock=clock,
        )
    except Exception as exc:
        kind = classify(exc)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise LLMCallError(f"{model}: {kind}{tries}: {describe(exc, 300)}", kind=kind) from None
