"""What every real transport shares: a request's way through retries, endpoints and stats.

Both real transports, :class:`~spade_llm.llm.litellm.LiteLLM` and
:class:`~spade_llm.llm.openai_http.OpenAIHTTP`, are a :class:`Transport`. It owns the path of one
request: a free server from the role's :class:`~spade_llm.llm.endpoints.EndpointPool`, one
attempt, the fault kind of a failure, a retry with backoff under the run's
:class:`~spade_llm.llm.retry.RetryPolicy` (:func:`~spade_llm.llm.retry.complete_with_retries`),
every attempt, retry and final failure counted in ``LLMStats``, and a parameter a server refused
by name dropped and the request sent again at once. A transport says only what is its own: how
it builds and sends one request (:meth:`Transport.prepare`, :meth:`Transport.send`), which
errors refuse a parameter (:meth:`Transport.refused`), and how its errors are sorted and told
(:meth:`Transport.classify`, :meth:`Transport.error_text`).

This module imports neither litellm nor openai (nor httpx): the transports bring their own.
"""

from __future__ import annotations

from typing import Any

from .._util.redact import redact_text
from ..config import LLMConfig, RoleConfig
from .base import LLMRequest, LLMResponse
from .endpoints import EndpointPool, Route
from .formats import ResponseFormats
from .retry import RequestClock, RetryPolicy, complete_with_retries
from .stats import LLMStats, RoleStats

__all__ = ["Transport", "policy_from_config", "scrub"]


def scrub(text: str, limit: int = 300) -> str:
    """Error text as it may be shown: every credential masked by the one rule (``redact``), then cut
    to ``limit`` characters (masking first, so a cut never leaves half a key behind)."""
    return redact_text(text)[:limit]


def policy_from_config(llm_config: LLMConfig) -> RetryPolicy:
    """The retry policy of a run's ``llm`` config section."""
    budget = getattr(llm_config, "retry_budget_s", None)
    return RetryPolicy(
        max_retries=llm_config.max_retries,
        backoff_s=llm_config.backoff_s,
        max_backoff_s=30.0,
        max_retry_after_s=float(getattr(llm_config, "max_retry_after_s", 60.0)),
        budget_s=float(budget) if budget is not None else None,
    )


ALLOW_MODEL_REQUESTS = True
"""Tests set this to False (tests/conftest.py) so no test reaches a real model by accident."""


def _requests_allowed() -> bool:
    return ALLOW_MODEL_REQUESTS


class Transport:
    """Chat completions with counted, budgeted retries over a role's servers.

    :meth:`servers` names the servers of the role's :class:`EndpointPool`; each attempt gets one of
    them (the least busy, another one than the previous attempt's when one has room).
    """

    def __init__(
        self,
        role_config: RoleConfig,
        llm_config: LLMConfig,
        stats: LLMStats | RoleStats,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.model = role_config.model
        self.role_config = role_config
        self.llm_config = llm_config
        self.stats = stats
        self.policy = policy or policy_from_config(llm_config)
        self.timeout_s = float(llm_config.timeout_s)
        self.urls = self.servers(role_config)
        """Each server's name in the pool -> the URL a request to it goes to (None: the provider's default)."""
        self.pool = EndpointPool(list(self.urls), llm_config.max_inflight_per_endpoint)
        self.formats = ResponseFormats(self.model, stats)

    # -- what each transport says ---------------------------------------------------------------

    def servers(self, role_config: RoleConfig) -> dict[str, str | None]:
        """The role's servers: a name for the pool -> the URL to send to (raise ``UserError`` on a bad one)."""
        raise NotImplementedError

    def classify(self, exc: BaseException) -> str:
        """The fault kind of an exception one attempt raised (``retry.RETRYABLE`` kinds are retried)."""
        raise NotImplementedError

    def error_text(self, exc: BaseException) -> str:
        """An error's text for a message or the log, before :func:`scrub`."""
        return " ".join((str(exc).strip() or type(exc).__name__).split())

    def ready(self) -> None:
        """Called once per request, before its first attempt (and outside the retries)."""

    def prepare(self, request: LLMRequest, endpoint: str, timeout: float) -> dict[str, Any]:
        """What one try of ``request`` to ``endpoint`` sends, the refused parameters left out."""
        raise NotImplementedError

    async def send(self, endpoint: str, sent: dict[str, Any], timeout: float) -> LLMResponse:
        """Send ``sent`` to ``endpoint`` once, within ``timeout``; raise on any fault."""
        raise NotImplementedError

    def refused(self, sent: dict[str, Any], exc: Exception) -> bool:
        """Whether ``exc`` refuses a parameter ``sent`` carried by name; if so that parameter is never sent
        again (the request is re-sent at once without it)."""
        return False

    # -- the shared path ------------------------------------------------------------------------

    def describe(self, exc: BaseException, limit: int) -> str:
        """An error's text with credentials scrubbed, cut to ``limit`` characters."""
        return scrub(self.error_text(exc), limit)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One answer, after retries; raises ``LLMCallError(kind)`` when the endpoint fails for good."""
        if not _requests_allowed():
            raise RuntimeError(f"real model requests are blocked in tests (model {self.model})")
        self.ready()
        route = Route(self.pool)

        async def attempt(clock: RequestClock) -> LLMResponse:
            async with route.attempt(clock) as endpoint:
                while True:
                    timeout = clock.timeout()
                    sent = self.prepare(request, endpoint, timeout)
                    try:
                        response = await self.send(endpoint, sent, timeout)
                    except Exception as exc:
                        # a refused parameter is dropped for good, so this re-sends at most once per parameter
                        if not self.refused(sent, exc):
                            raise
                    else:
                        url = scrub(self.urls.get(endpoint) or endpoint, 200)
                        self.stats.served(url, response.served_model, response.system_fingerprint)
                        return response
                    self.stats.request()  # the re-send is a request of its own

        return await complete_with_retries(
            self.model,
            attempt,
            self.policy,
            self.timeout_s,
            self.stats,
            classify=self.classify,
            describe=self.describe,
        )
