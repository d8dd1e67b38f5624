"""The litellm provider at the HTTP level: respx answers for the endpoint, litellm and openai run for real.

Every test talks to http://127.0.0.1:9 (a closed port): if respx ever stopped seeing litellm's
traffic (another transport, an openai client on httpx2), the calls would fail to connect and the
call counts below would be wrong, so these tests also guard the transport choice. What litellm does
as the direct HTTP transport does is tested for both in tests/llm/test_transports.py; here is litellm's own,
and the retry policy's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

import spade_llm.llm.retry as retry_mod
from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.llm.base import LLMRequest
from spade_llm.llm.litellm import LiteLLM
from spade_llm.llm.retry import RetryPolicy
from spade_llm.llm.stats import LLMStats
from spade_llm.types import Message

BASE = "http://127.0.0.1:9/v1"
URL = f"{BASE}/chat/completions"


Reply = Callable[..., httpx.Response]  # the conftest builders openai_response / openai_error
SpecCounts = Callable[[LLMStats], dict[str, object]]  # the conftest fixture spec_counts


def make(model: str = "openai/m", api_base: str | list[str] = BASE, **llm: Any) -> tuple[LiteLLM, LLMStats]:
    stats = LLMStats()
    config = LLMConfig(**{"max_retries": 3, "backoff_s": 0.01, "timeout_s": 5.0, **llm})
    return LiteLLM(RoleConfig(model=model, api_base=api_base), config, stats=stats), stats


def request(**kw: Any) -> LLMRequest:
    return LLMRequest(
        messages=[Message(role="system", content="be brief"), Message(role="user", content="hi")], role="solver", **kw
    )


def test_params_switch_off_retries_underneath_us() -> None:
    """The shared request body and usage are tests/llm/test_transports.py's; litellm's own knobs are here."""
    llm, _ = make()
    params = llm._params(request(), 5.0)
    assert params["max_retries"] == 0 and params["num_retries"] == 0 and params["timeout"] == 5.0
    assert "drop_params" not in params  # litellm re-sends 422s with drop_params, out of our sight


async def test_cost_when_litellm_knows_the_model(waits: list[float], openai_response: Reply) -> None:
    llm, _ = make(model="openai/gpt-4o-mini")
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=openai_response("x", model="gpt-4o-mini"))
        response = await llm.complete(request())
    assert response.usage.cost is not None and response.usage.cost > 0


def test_backoff_is_exponential_jittered_capped_and_respects_retry_after() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, max_retry_after_s=20.0)
    for n, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        delays = [policy.backoff(n) for _ in range(50)]
        assert all(step / 2 <= d <= step for d in delays)
        assert len(set(delays)) > 1  # jitter
    assert policy.backoff(1, retry_after=5.0) >= 5.0
    assert policy.backoff(1, retry_after=500.0) == 20.0


def test_retry_after_parsing() -> None:
    class E(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__("x")
            self.response = httpx.Response(429, headers=headers)

    assert retry_mod.retry_after_seconds(E({"Retry-After": "3"})) == 3.0
    assert retry_mod.retry_after_seconds(E({"retry-after-ms": "250"})) == 0.25
    date = retry_mod.retry_after_seconds(E({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}))
    assert date == 0.0  # in the past
    assert retry_mod.retry_after_seconds(E({"Retry-After": "soon"})) is None
    assert retry_mod.retry_after_seconds(ValueError()) is None


async def test_cancellation_is_not_retried() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await retry_mod.call_with_retries(
            attempt, RetryPolicy(max_retries=3, backoff_s=0), classify=lambda e: "x", retryable={"x"}
        )
    assert calls == 1


def test_attempt_timeout_keeps_the_last_attempt_inside_the_budget() -> None:
    import time

    now = time.monotonic()
    assert RetryPolicy(budget_s=None).attempt_timeout(30.0, now - 100) == 30.0
    assert RetryPolicy(budget_s=60.0).attempt_timeout(30.0, now) == pytest.approx(30.0)
    assert RetryPolicy(budget_s=60.0).attempt_timeout(30.0, now - 50) == pytest.approx(10.0, abs=0.5)
    assert RetryPolicy(budget_s=60.0).attempt_timeout(30.0, now - 70) == 1.0
    assert RetryPolicy(budget_s=60.0).attempt_timeout(0.5, now - 70) == 0.5
