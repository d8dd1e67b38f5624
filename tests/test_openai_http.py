"""The direct OpenAI-compatible transport (spade_llm.llm.openai_http): respx at the HTTP level, then real sockets.

The respx tests talk to http://127.0.0.1:9 (a closed port): if respx stopped seeing the
transport's traffic, calls would fail to connect and the call counts would be wrong. The last
tests start a FakeServer of their own on 127.0.0.1 (conftest's ``fake_server``) and the shared fault
proxy in front of it (``fault_proxy``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import respx

from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError, UserError
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.openai_http import OpenAIHTTP, StatusError, classify
from spade_llm.llm.retry import RetryPolicy
from spade_llm.llm.stats import LLMStats
from spade_llm.server import FakeServer
from spade_llm.types import Message, TokenUsage

BASE = "http://127.0.0.1:9/v1"
URL = f"{BASE}/chat/completions"


Reply = Callable[..., httpx.Response]  # the conftest builders openai_response / openai_error
StartServer = Callable[..., FakeServer]  # the conftest fixture fake_server
SpecCounts = Callable[[LLMStats], dict[str, object]]  # the conftest fixture spec_counts


def make(
    model: str = "openai/m", api_base: str | list[str] = BASE, max_connections: int = 64, **llm: Any
) -> tuple[OpenAIHTTP, LLMStats]:
    stats = LLMStats()
    config = LLMConfig(**{"max_retries": 3, "backoff_s": 0.01, "timeout_s": 5.0, **llm})
    return OpenAIHTTP(RoleConfig(model=model, api_base=api_base), config, stats, max_connections=max_connections), stats


def request(**kw: Any) -> LLMRequest:
    return LLMRequest(
        messages=[Message(role="system", content="be brief"), Message(role="user", content="hi")], role="solver", **kw
    )


# -- the wire format ---------------------------------------------------------------------------


async def test_request_body_auth_and_usage(
    waits: list[float], allow_model_requests: str, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("x"))
        response = await llm.complete(
            request(seed=42, response_format="json_object", temperature=0.3, max_tokens=99, metadata={"task_id": "t1"})
        )
    sent_request = route.calls[0].request
    sent = json.loads(sent_request.content)
    assert sent == {
        "model": "m",  # the part after openai/
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "temperature": 0.3,
        "max_tokens": 99,
        "seed": 42,
        "response_format": {"type": "json_object"},
        "stream": True,  # answers stream, so llm.timeout_s measures silence
        "stream_options": {"include_usage": True},
    }
    assert "t1" not in sent_request.content.decode()  # role and metadata never leave us
    assert sent_request.headers["authorization"] == f"Bearer {allow_model_requests}"
    assert sent_request.headers["content-type"] == "application/json"
    assert response == LLMResponse(
        text="x",
        usage=TokenUsage(prompt_tokens=11, completion_tokens=7, cost=None),
        finish_reason="stop",
        model="openai/m",
    )
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 0, "by_kind": {}}


async def test_optional_fields_left_out_and_local_server_gets_a_placeholder_key(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, openai_response: Reply
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    llm, _ = make(model="openai/org/model-7b", api_base=BASE + "/")
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("x"))
        await llm.complete(request())
    sent = json.loads(route.calls[0].request.content)
    assert sent["model"] == "org/model-7b"
    assert "seed" not in sent and "response_format" not in sent
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-no-key-required"


async def test_missing_content_refusal_and_content_parts_are_text(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "image_url"}]
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                openai_response(None, finish=None),
                openai_response("I'm sorry, I can't help with that."),
                openai_response(parts, finish="content_filter"),
            ]
        )
        empty = await llm.complete(request())
        refusal = await llm.complete(request())
        joined = await llm.complete(request())
    assert (empty.text, empty.finish_reason) == ("", "stop")
    assert refusal.text.startswith("I'm sorry")
    assert (joined.text, joined.finish_reason) == ("ab", "content_filter")
    assert stats.summary()["retries"] == 0


async def test_truncated_answer_surfaces_finish_reason_length(waits: list[float], openai_response: Reply) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response('{"tasks": [{"desc', finish="length"))
        response = await llm.complete(request())
    assert (response.text, response.finish_reason) == ('{"tasks": [{"desc', "length")
    assert route.call_count == 1 and stats.summary()["retries"] == 0  # the caller judges, not us


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{"Retry-After": "2"}, {"retry-after-ms": "2000"}])
async def test_rate_limit_then_success_honours_retry_after(
    waits: list[float], headers: dict[str, str], openai_response: Reply, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(URL).mock(side_effect=[openai_error(429, "slow down", headers), openai_response("fine")])
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
    assert "after 4 attempts" in str(info.value) and "boom" in str(info.value)
    assert route.call_count == 4
    assert spec_counts(stats) == {"requests": 4, "retries": 3, "failures": 1, "by_kind": {"server_error": 4}}
    assert len(waits) == 3 and waits[0] < waits[2]  # exponential


async def test_time_budget_stops_before_a_wait_that_would_cross_it(
    waits: list[float], openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=10)
    llm.policy = RetryPolicy(max_retries=10, backoff_s=0.01, budget_s=10.0, max_retry_after_s=120.0)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(429, "later", {"Retry-After": "60"}))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "rate_limit"
    assert route.call_count == 1 and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {"rate_limit": 1}}


async def test_html_error_page_is_a_retried_server_error(
    waits: list[float], openai_response: Reply, spec_counts: SpecCounts
) -> None:
    """A 502 from a proxy in front of the model: the status is the server's word (server_error, as the
    litellm provider counts it), the HTML is quoted shortly in the log, and the retry gets through."""
    llm, stats = make(max_retries=1)
    page = httpx.Response(
        502, text="<html><body><h1>502 Bad Gateway</h1></body></html>", headers={"content-type": "text/html"}
    )
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[page, openai_response("back"), page, page])
        assert (await llm.complete(request())).text == "back"
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "server_error" and "502 Bad Gateway" in str(info.value)
    assert spec_counts(stats) == {"requests": 4, "retries": 2, "failures": 1, "by_kind": {"server_error": 3}}


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text='{"id": "x", "choices": [{"mess'),  # half a body
        httpx.Response(200, text="<html><body>oops</body></html>", headers={"content-type": "text/html"}),
        httpx.Response(200, text="not json at all"),
        httpx.Response(200, text=""),
        httpx.Response(200, json=[1, 2]),
        httpx.Response(200, json={"id": "x", "choices": []}),
        httpx.Response(200, json={"id": "x"}),
        httpx.Response(200, json={"error": {"message": "upstream overloaded"}}),
        httpx.Response(200, json={"choices": ["text"]}),
        httpx.Response(200, json={"choices": [{"finish_reason": "stop"}]}),
        httpx.Response(200, json={"choices": [{"message": {"content": 42}}]}),
    ],
    ids=[
        "half",
        "html",
        "prose",
        "empty",
        "list",
        "no-choices",
        "choices-missing",
        "error-object",
        "choice-str",
        "no-message",
        "content-int",
    ],
)
async def test_unusable_bodies_are_retried_bad_responses(
    waits: list[float], answer: httpx.Response, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=[answer, openai_response("good")])
        response = await llm.complete(request())
    assert response.text == "good" and route.call_count == 2
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 0, "by_kind": {"bad_response": 1}}


async def test_unusable_bodies_for_good_raise_bad_response(waits: list[float], spec_counts: SpecCounts) -> None:
    llm, stats = make(max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=httpx.Response(200, text='{"choices": [{"mess'))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "bad_response" and "not JSON" in str(info.value)
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 1, "by_kind": {"bad_response": 2}}


@pytest.mark.parametrize(
    "fault",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.ConnectTimeout("connect timed out"),
        httpx.PoolTimeout("no free connection"),
    ],
)
async def test_transport_timeouts_are_retried_then_fail_as_timeout(
    waits: list[float], fault: Exception, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=2)
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=fault)
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "timeout"
    assert route.call_count == 3
    assert spec_counts(stats) == {"requests": 3, "retries": 2, "failures": 1, "by_kind": {"timeout": 3}}


async def test_server_408_is_a_timeout(waits: list[float], openai_response: Reply, openai_error: Reply) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[openai_error(408, "request timeout"), openai_response("later")])
        assert (await llm.complete(request())).text == "later"
    assert stats.summary()["by_kind"] == {"timeout": 1}


async def test_hung_endpoint_is_cut_by_our_own_guard(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    """A transport that never answers (mocked, so httpx's timeouts never fire) still ends: the answer
    cap bounds every attempt, and an attempt with nothing streamed is a timeout (retried)."""
    llm, stats = make(max_retries=1, timeout_s=0.3, answer_timeout_s=0.3)
    hung = 0

    async def hang(_: httpx.Request) -> httpx.Response:
        nonlocal hung
        hung += 1
        await asyncio.sleep(30)
        return openai_response()

    loop = asyncio.get_running_loop()
    with respx.mock(assert_all_called=False) as mock:  # respx records a call only once it is answered
        mock.post(URL).mock(side_effect=hang)
        started = loop.time()
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "timeout"
    assert hung == 2 and loop.time() - started < 5
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 1, "by_kind": {"timeout": 2}}


async def test_dropped_connections_are_retried(
    waits: list[float], openai_response: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=4)
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                httpx.RemoteProtocolError("Server disconnected without sending a response."),
                httpx.ReadError("connection reset by peer"),
                ConnectionResetError("reset"),
                openai_response("up"),
            ]
        )
        response = await llm.complete(request())
    assert response.text == "up"
    assert spec_counts(stats) == {"requests": 4, "retries": 3, "failures": 0, "by_kind": {"connection": 3}}


async def test_a_refused_connection_is_not_retried_here(waits: list[float], spec_counts: SpecCounts) -> None:
    """Nobody listens: the request fails at once as ``unreachable``; the run's circuit breaker
    (llm/breaker.py) decides how long to wait for the endpoint, not each request's retries."""
    llm, stats = make(max_retries=4)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "unreachable" and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {"unreachable": 1}}


async def test_connection_failures_for_good_name_the_cause(waits: list[float]) -> None:
    llm, _ = make(max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=httpx.RemoteProtocolError("Server disconnected without sending a response."))
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == "connection"
    assert "after 2 attempts" in str(info.value) and "disconnected" in str(info.value)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "client_error"),
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (413, "client_error"),
        (422, "client_error"),
        (301, "client_error"),
    ],
)
async def test_no_retry_on_client_errors(
    waits: list[float], status: int, kind: str, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(
            return_value=openai_error(status, "bad request", {"Location": "https://elsewhere/v1"})
        )
        with pytest.raises(LLMCallError) as info:
            await llm.complete(request())
    assert info.value.kind == kind
    assert f"HTTP {status}" in str(info.value) and "bad request" in str(info.value)
    assert "after" not in str(info.value)
    assert route.call_count == 1 and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {kind: 1}}


async def test_api_key_never_in_error_messages(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, openai_error: Reply
) -> None:
    secret = "sk-live-abcdefghijklmnop123456"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    llm, _ = make(max_retries=1)
    echo = f"Incorrect API key provided: {secret}. Bearer {secret}"
    caplog.set_level("INFO", logger="spade_llm.llm")
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                openai_error(401, echo),  # refused key, raised at once
                openai_error(500, echo),
                openai_error(500, echo),  # server error, logged on retry then raised
                httpx.Response(200, text=f"<html>{echo}</html>"),  # unusable body
                httpx.Response(200, text=f"<html>{echo}</html>"),
            ]
        )
        messages = []
        for _ in range(3):
            with pytest.raises(LLMCallError) as info:
                await llm.complete(request())
            assert info.value.__cause__ is None and info.value.__suppress_context__
            messages.append(str(info.value))
    assert [m.split(": ")[1] for m in messages] == [
        "auth",
        "server_error after 2 attempts",
        "bad_response after 2 attempts",
    ]
    assert all("Incorrect API key" in m for m in messages)  # the server's words survive, the key does not
    for text in [*messages, caplog.text]:
        assert secret not in text and "abcdefghijklmnop" not in text


async def test_round_robin_over_api_bases_and_failover_on_retry(
    waits: list[float], openai_response: Reply, openai_error: Reply
) -> None:
    other = "http://127.0.0.2:9/v1"
    llm, _ = make(api_base=[BASE, other])
    with respx.mock() as mock:
        first = mock.post(URL).mock(
            side_effect=[openai_error(503, "down"), openai_response("a2"), openai_response("a3")]
        )
        second = mock.post(f"{other}/chat/completions").mock(side_effect=[openai_response("b"), openai_response("b2")])
        r1 = await llm.complete(request())  # BASE fails -> the retry goes to the other base
        r2 = await llm.complete(request())  # BASE again
        r3 = await llm.complete(request())  # other
        r4 = await llm.complete(request())  # BASE
    assert [r.text for r in (r1, r2, r3, r4)] == ["b", "a2", "b2", "a3"]
    assert first.call_count == 3 and second.call_count == 2


async def test_requests_blocked_unless_allowed() -> None:
    llm, stats = make()
    with pytest.raises(RuntimeError, match="blocked"):
        await llm.complete(request())
    assert stats.summary()["requests"] == 0


@pytest.mark.parametrize("api_base", [None, "", "   ", ["http://ok/v1", ""], "localhost:8000/v1"])
def test_a_usable_api_base_is_required(api_base: Any) -> None:
    with pytest.raises(UserError, match="api_base"):
        OpenAIHTTP(RoleConfig(model="openai/m", api_base=api_base), LLMConfig(), LLMStats())


def test_classify() -> None:
    headers = httpx.Headers()
    assert classify(StatusError(429, "x", headers)) == "rate_limit"
    assert classify(StatusError(503, "x", headers)) == "server_error"
    assert classify(StatusError(404, "x", headers)) == "not_found"
    assert classify(StatusError(408, "x", headers)) == "timeout"
    assert classify(TimeoutError()) == "timeout"
    assert classify(httpx.WriteTimeout("x")) == "timeout"
    assert classify(httpx.WriteError("x")) == "connection"
    assert classify(ConnectionRefusedError()) == "unreachable"
    assert classify(httpx.UnsupportedProtocol("ftp")) == "client_error"
    assert classify(LLMCallError("x", kind="rate_limit")) == "rate_limit"
    assert classify(ValueError("odd")) == "bad_response"


def test_a_new_event_loop_gets_a_new_client(allow_model_requests: str, openai_response: Reply) -> None:
    """A client's pool belongs to one loop: two ``asyncio.run`` calls (a run, then a resume) both work."""
    llm, stats = make()

    async def once() -> tuple[str, int]:
        text = (await llm.complete(request())).text
        return text, id(llm._client)

    with respx.mock() as mock:
        mock.post(URL).mock(return_value=openai_response("x"))
        first = asyncio.run(once())
        second = asyncio.run(once())
        assert asyncio.run(llm.aclose()) is None  # from a third loop: dropped, no error
    assert first[0] == second[0] == "x" and first[1] != second[1]
    assert llm._client is None and stats.summary()["requests"] == 2


# -- real sockets: our own FakeServer on 127.0.0.1, and the fault proxy in front of it --------------


class EchoLLM:
    """Stand-in model behind the FakeServer: answers ``echo:<last message>`` (exact, whatever the fake does)."""

    def __init__(self, profile: str = "default", seed: int = 0) -> None:
        self.model = f"fake/{profile}"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        last = request.messages[-1].content
        return LLMResponse(text=f"echo:{last}", usage=TokenUsage(prompt_tokens=len(last), completion_tokens=3))


ECHO = SimpleNamespace(FakeLLM=EchoLLM, PROFILES={"default": None}, infer_role=lambda messages, json_mode: "solver")


def ask(text: str, seed: int | None = None) -> LLMRequest:
    return LLMRequest(messages=[Message(role="user", content=text)], role="solver", seed=seed)


async def test_concurrent_requests_overlap_and_connections_are_kept_alive(
    waits: list[float], fake_server: StartServer, spec_counts: SpecCounts
) -> None:
    server = fake_server(ECHO, latency=0.5)
    llm, stats = make(api_base=server.url, max_retries=0)
    try:
        for i in range(3):  # sequential: one connection, reused
            assert (await llm.complete(ask(f"s{i}"))).text == f"echo:s{i}"
        assert len(server._connections) == 1
        started = time.monotonic()
        answers = await asyncio.gather(*(llm.complete(ask(str(i), seed=i)) for i in range(16)))
        wall = time.monotonic() - started
    finally:
        await llm.aclose()
    assert [a.text for a in answers] == [f"echo:{i}" for i in range(16)]
    assert answers[0].usage == TokenUsage(prompt_tokens=1, completion_tokens=3, cost=None)
    assert wall < 2.0, wall  # 16 x 0.5 s = 8 s if they queued
    assert server.stats.max_inflight == 16
    assert spec_counts(stats) == {"requests": 19, "retries": 0, "failures": 0, "by_kind": {}}


async def test_max_connections_bounds_requests_in_flight(waits: list[float], fake_server: StartServer) -> None:
    server = fake_server(ECHO, latency=0.2)
    llm, _ = make(api_base=server.url, max_connections=4)
    try:
        await asyncio.gather(*(llm.complete(ask(str(i))) for i in range(12)))
    finally:
        await llm.aclose()
    assert 2 <= server.stats.max_inflight <= 4  # the pool's cap, not the 12 asked for at once


async def test_refused_connection_on_a_real_socket(waits: list[float], spec_counts: SpecCounts) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens once the socket is closed
    llm, stats = make(api_base=f"http://127.0.0.1:{port}/v1", max_retries=1)
    try:
        with pytest.raises(LLMCallError) as info:
            await llm.complete(ask("x"))
    finally:
        await llm.aclose()
    assert info.value.kind == "unreachable" and "ConnectError" in str(info.value)
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {"unreachable": 1}}


@pytest.mark.slow
async def test_every_fault_of_the_fault_proxy_is_survived_and_counted(
    waits: list[float], fake_server: StartServer, fault_proxy: Callable[[str], Any], spec_counts: SpecCounts
) -> None:
    """Real sockets, the proxy's fixed cycle: 429 + Retry-After, 500, 502 HTML, half a JSON body, a refusal,
    truncation, a slow answer (8 s, past our 3 s timeout), a dropped connection and no choices, each once.

    The proxy rewrites whole JSON bodies, so it plays a server that does not stream (``stream: false``);
    the streamed path through it is ``test_the_fault_proxy_is_survived_when_streaming``."""
    server = fake_server(ECHO)
    proxy = fault_proxy(f"http://127.0.0.1:{server.port}")
    llm, stats = make(api_base=proxy.url, max_retries=4, timeout_s=3.0, stream=False)
    try:
        texts, finishes = [], []
        for i in range(20):  # 20 answers + 7 retries = 27 proxy requests: the cycle, once
            try:
                r = await llm.complete(ask(f"q{i}"))
                texts.append(r.text)
                finishes.append(r.finish_reason)
            except LLMCallError as e:  # allowed, but then counted
                texts.append(f"!{e.kind}")
    finally:
        await llm.aclose()
    injected = proxy.stop()
    assert set(injected["faults"]) == {
        "429",
        "500",
        "502",
        "badjson",
        "refusal",
        "truncated",
        "slow",
        "drop",
        "nochoices",
    }
    summary = spec_counts(stats)
    assert summary == {
        "requests": 27,
        "retries": 7,
        "failures": 0,
        "by_kind": {"bad_response": 2, "connection": 1, "rate_limit": 1, "server_error": 2, "timeout": 1},
    }, summary
    assert summary["requests"] == injected["requests"]  # every attempt reached the proxy once: nothing hidden
    assert any(w >= 1.0 for w in waits)  # the proxy's Retry-After: 1 was honoured
    assert "I'm sorry, I can't help with that." in texts  # a refusal is text for the caller to judge
    assert "length" in finishes
    assert sum(t.startswith("echo:q") for t in texts) == 18  # the rest came back whole


def test_get_llm_routes_openai_with_api_base_to_the_direct_transport() -> None:
    """Once the registry is wired (``LLMConfig.transport``): openai/ + api_base is HTTP, the rest litellm."""
    if "transport" not in LLMConfig.model_fields:
        pytest.skip("registry not wired to OpenAIHTTP yet (LLMConfig.transport missing)")
    from spade_llm.llm.registry import get_llm

    role = RoleConfig(model="openai/default", api_base="http://127.0.0.1:9/v1")
    assert isinstance(get_llm(role, LLMConfig()), OpenAIHTTP)
    assert isinstance(get_llm(role, LLMConfig.model_validate({"transport": "http"})), OpenAIHTTP)
    assert not isinstance(get_llm(role, LLMConfig.model_validate({"transport": "litellm"})), OpenAIHTTP)
    no_base = RoleConfig(model="openai/gpt-4o-mini")
    assert not isinstance(get_llm(no_base, LLMConfig()), OpenAIHTTP)
    with pytest.raises(UserError, match="transport"):
        get_llm(no_base, LLMConfig.model_validate({"transport": "http"}))
