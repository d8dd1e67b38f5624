"""The litellm provider at the HTTP level: respx answers for the endpoint, litellm and openai run for real.

Every test talks to http://127.0.0.1:9 (a closed port): if respx ever stopped seeing litellm's
traffic (another transport, an openai client on httpx2), the calls would fail to connect and the
call counts below would be wrong, so these tests also guard the transport choice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

import spade_llm.llm.litellm as provider
import spade_llm.llm.retry as retry_mod
from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError
from spade_llm.llm.base import LLMRequest
from spade_llm.llm.litellm import LiteLLM, classify, scrub
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


async def test_rate_limit_then_success_honours_retry_after(
    waits: list[float], openai_response: Reply, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(URL).mock(
            side_effect=[openai_error(429, "slow down", {"Retry-After": "2"}), openai_response("fine")]
        )
        response = await llm.complete(request())
    assert response.text == "fine"
    assert route.call_count == 2
    assert len(waits) == 1 and 2.0 <= waits[0] <= 2.5, waits  # the server's 2 s, not our 0.01 s backoff
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 0, "by_kind": {"rate_limit": 1}}


async def test_server_errors_until_the_budget_ends(
    waits: list[float], openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=3)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(500, "boom"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "server_error"
    assert "after 4 attempts" in str(info.value)
    assert route.call_count == 4  # 1 + max_retries: nothing retried underneath us
    assert spec_counts(stats) == {"requests": 4, "retries": 3, "failures": 1, "by_kind": {"server_error": 4}}
    assert len(waits) == 3 and waits[0] < waits[2]  # exponential


async def test_time_budget_stops_before_a_wait_that_would_cross_it(waits: list[float], openai_error: Reply) -> None:
    llm, stats = make(max_retries=10)
    llm.policy = RetryPolicy(max_retries=10, backoff_s=0.01, budget_s=10.0, max_retry_after_s=120.0)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(429, "later", {"Retry-After": "60"}))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "rate_limit"
    assert route.call_count == 1 and waits == []
    assert stats.summary()["failures"] == 1


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "client_error"), (401, "auth"), (403, "auth"), (404, "not_found"), (422, "client_error")]
)
async def test_no_retry_on_client_errors(
    waits: list[float], status: int, kind: str, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(status, "bad request"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == kind
    assert route.call_count == 1 and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {kind: 1}}


async def test_html_error_page_is_retried(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    page = httpx.Response(
        502, text="<html><body><h1>502 Bad Gateway</h1></body></html>", headers={"content-type": "text/html"}
    )
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[page, openai_response("back")])
        response = await llm.complete(request())
    assert response.text == "back"
    assert stats.summary()["by_kind"] == {"server_error": 1}


@pytest.mark.parametrize("body", ['{"id": "x", "obj', "<html><body>oops</body></html>", "not json at all"])
async def test_malformed_body_is_a_retried_bad_response(
    waits: list[float], body: str, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[httpx.Response(200, text=body), openai_response("good")])
        response = await llm.complete(request())
    assert response.text == "good"
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 0, "by_kind": {"bad_response": 1}}


async def test_malformed_bodies_for_good_raise_bad_response(waits: list[float]) -> None:
    llm, stats = make(max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=httpx.Response(200, text='{"choices": [{"mess'))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "bad_response"
    assert stats.summary()["failures"] == 1


async def test_no_choices_is_retried(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    empty = httpx.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 0},
        },
    )
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=[empty, openai_response("there")])
        response = await llm.complete(request())
    assert response.text == "there" and route.call_count == 2
    assert stats.summary()["by_kind"] == {"bad_response": 1}


async def test_truncated_answer_surfaces_finish_reason_length(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response('{"tasks": [{"desc', finish="length"))
        response = await llm.complete(request())
    assert response.finish_reason == "length"
    assert response.text == '{"tasks": [{"desc'
    assert route.call_count == 1 and stats.summary()["retries"] == 0  # the caller judges, not us


async def test_missing_content_and_refusal_are_text(waits: list[float], openai_response: Reply) -> None:
    llm, _ = make()
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[openai_response(None), openai_response("I'm sorry, I can't help with that.")])
        empty = await llm.complete(request())
        refusal = await llm.complete(request())
    assert empty.text == "" and empty.finish_reason == "stop"
    assert refusal.text.startswith("I'm sorry")


async def test_transport_timeout_is_retried_then_fails_as_timeout(waits: list[float], spec_counts: SpecCounts) -> None:
    llm, stats = make(max_retries=2)
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "timeout"
    assert route.call_count == 3
    assert spec_counts(stats) == {"requests": 3, "retries": 2, "failures": 1, "by_kind": {"timeout": 3}}


async def test_hung_endpoint_is_cut_by_the_request_timeout(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, openai_response: Reply
) -> None:
    """A transport that never answers (and ignores litellm's timeout) still ends: our own guard fires."""
    monkeypatch.setattr(provider, "_GRACE_S", 0.0)
    llm, stats = make(max_retries=1)
    llm.policy = RetryPolicy(max_retries=1, backoff_s=0.01)

    hung = 0

    async def hang(_: httpx.Request) -> httpx.Response:
        nonlocal hung
        hung += 1
        await asyncio.sleep(30)
        return openai_response()

    loop = asyncio.get_running_loop()
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[openai_response("warm"), hang, hang])
        assert (await llm.complete(request())).text == "warm"  # litellm's first call sets up clients
        llm.timeout_s = 0.5
        started = loop.time()
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "timeout"
    assert hung == 2  # both attempts reached the endpoint and were cut
    assert loop.time() - started < 5
    assert stats.summary()["by_kind"] == {"timeout": 2}


async def test_dropped_connections_are_retried_refused_ones_are_not(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                httpx.RemoteProtocolError("Server disconnected without a response"),
                openai_response("up"),
            ]
        )
        response = await llm.complete(request())
    assert response.text == "up"
    assert stats.summary()["by_kind"] == {"connection": 1}
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "unreachable"  # the run's circuit breaker waits for the endpoint, not this request


async def test_request_body_and_usage(waits: list[float], openai_response: Reply) -> None:
    llm, _ = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("x"))
        response = await llm.complete(
            request(seed=42, response_format="json_object", temperature=0.3, max_tokens=99, metadata={"task_id": "t1"})
        )
    sent = json.loads(route.calls[0].request.content)
    assert sent["seed"] == 42 and sent["max_tokens"] == 99 and sent["temperature"] == 0.3
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][1] == {"role": "user", "content": "hi"}
    assert "metadata" not in sent and "t1" not in route.calls[0].request.content.decode()
    assert response.usage.prompt_tokens == 11 and response.usage.completion_tokens == 7
    assert response.usage.cost is None  # litellm does not know "m": no guessed price
    params = llm._params(request(), 5.0)
    assert params["max_retries"] == 0 and params["num_retries"] == 0 and params["timeout"] == 5.0
    assert "drop_params" not in params  # litellm re-sends 422s with drop_params, out of our sight


async def test_cost_when_litellm_knows_the_model(waits: list[float], openai_response: Reply) -> None:
    llm, _ = make(model="openai/gpt-4o-mini")
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=openai_response("x", model="gpt-4o-mini"))
        response = await llm.complete(request())
    assert response.usage.cost is not None and response.usage.cost > 0


async def test_round_robin_over_api_bases_and_failover_on_retry(
    waits: list[float], openai_response: Reply, openai_error: Reply
) -> None:
    other = "http://127.0.0.2:9/v1"
    llm, _ = make(api_base=[BASE, other])
    with respx.mock() as mock:
        first = mock.post(URL).mock(side_effect=[openai_error(503, "down"), openai_response("a2")])
        second = mock.post(f"{other}/chat/completions").mock(return_value=openai_response("b"))
        r1 = await llm.complete(request())  # BASE fails -> retry goes to the other base
        r2 = await llm.complete(request())  # BASE again
    assert (r1.text, r2.text) == ("b", "a2")
    assert first.call_count == 2 and second.call_count == 1


async def test_api_key_never_in_error_messages(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, openai_error: Reply
) -> None:
    secret = "sk-live-abcdefghijklmnop123456"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    llm, _ = make()
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=openai_error(401, f"Incorrect API key provided: {secret}. Bearer {secret}"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert secret not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_local_server_without_key_gets_a_placeholder(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, openai_response: Reply
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    llm, _ = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("x"))
        await llm.complete(request())
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-no-key-required"


async def test_requests_blocked_unless_allowed() -> None:
    llm, stats = make()
    with pytest.raises(RuntimeError, match="blocked"):
        await llm.complete(request())
    assert stats.summary()["requests"] == 0


def test_classify_plain_exceptions() -> None:
    assert classify(TimeoutError()) == "timeout"
    assert classify(ConnectionResetError()) == "connection"
    assert classify(LLMCallError("x", kind="rate_limit")) == "rate_limit"
    assert classify(ValueError("odd")) == "bad_response"


def test_scrub_hides_key_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_0123456789abcdef")
    text = scrub(
        'key sk-abcdefghij1234 "api_key": "hunter2hunter2" Authorization: Bearer abc.def.ghi tok_0123456789abcdef'
    )
    assert "sk-abcdefghij1234" not in text and "hunter2" not in text and "abc.def.ghi" not in text
    assert "tok_0123456789abcdef" not in text


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
