"""What both real transports must do alike, each test run for both: litellm (``spade_llm.llm.litellm``) and the
direct HTTP transport (``spade_llm.llm.openai_http``), respx answering for the endpoint.

Every test talks to http://127.0.0.1:9 (a closed port): if respx ever stopped seeing a transport's
traffic (another transport, an openai client on httpx2), the calls would fail to connect and the call
counts below would be wrong. What only one transport does stays in its own file (tests/llm/test_litellm.py,
tests/llm/test_openai_http.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

import httpx
import pytest
import respx

import spade_llm.llm.litellm as litellm_provider
from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.litellm import LiteLLM
from spade_llm.llm.openai_http import OpenAIHTTP
from spade_llm.llm.retry import RetryPolicy
from spade_llm.llm.stats import LLMStats
from spade_llm.llm.transport import Transport, scrub
from spade_llm.types import Message, TokenUsage

BASE = "http://127.0.0.1:9/v1"
URL = f"{BASE}/chat/completions"

Reply = Callable[..., httpx.Response]  # the conftest builders openai_response / openai_error
SpecCounts = Callable[[LLMStats], dict[str, object]]  # the conftest fixture spec_counts


class Make(Protocol):
    def __call__(
        self, model: str = "openai/m", api_base: str | list[str] = BASE, **llm: Any
    ) -> tuple[Transport, LLMStats]: ...


TRANSPORTS: dict[str, type[Transport]] = {"litellm": LiteLLM, "http": OpenAIHTTP}


def only(transports: list[str], cases: list[Any]) -> list[Any]:
    """``cases`` (tuples of a test's other parameters) for each of ``transports``: rows of a shared test that
    hold for some transports only (``transport`` parametrized directly overrides the fixture)."""
    return [pytest.param(t, *case, id=f"{t}-{case[0]}") for t in transports for case in cases]


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    """The transport under test: ``litellm`` or ``http``."""
    return str(request.param)


@pytest.fixture
def make(transport: str) -> Make:
    """``make(model="openai/m", api_base=BASE, **llm)``: the transport under test and its stats, with a quick
    policy (3 retries, 0.01 s backoff, 5 s timeout) unless ``llm`` says otherwise."""

    def build(model: str = "openai/m", api_base: str | list[str] = BASE, **llm: Any) -> tuple[Transport, LLMStats]:
        stats = LLMStats()
        config = LLMConfig(**{"max_retries": 3, "backoff_s": 0.01, "timeout_s": 5.0, **llm})
        return TRANSPORTS[transport](RoleConfig(model=model, api_base=api_base), config, stats), stats

    return build


def request(**kw: Any) -> LLMRequest:
    return LLMRequest(
        messages=[Message(role="system", content="be brief"), Message(role="user", content="hi")], role="solver", **kw
    )


async def failure(llm: Transport) -> LLMCallError:
    """The ``LLMCallError`` that ``llm.complete(request())`` raises."""
    with pytest.raises(LLMCallError) as info:
        await llm.complete(request())
    return info.value


# -- answers -----------------------------------------------------------------------------------


async def test_request_body_auth_and_usage(
    waits: list[float],
    allow_model_requests: str,
    transport: str,
    make: Make,
    openai_response: Reply,
    spec_counts: SpecCounts,
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("x"))
        response = await llm.complete(
            request(seed=42, response_format="json_object", temperature=0.3, max_tokens=99, metadata={"task_id": "t1"})
        )
    sent_request = route.calls[0].request
    streamed = {"stream": True, "stream_options": {"include_usage": True}}  # so llm.timeout_s measures silence
    assert json.loads(sent_request.content) == {
        "model": "m",  # the part after openai/
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "temperature": 0.3,
        "max_tokens": 99,
        "seed": 42,
        "response_format": {"type": "json_object"},
        **(streamed if transport == "http" else {}),  # litellm's answers are not streamed
    }
    assert "t1" not in sent_request.content.decode()  # role and metadata never leave us
    assert sent_request.headers["authorization"] == f"Bearer {allow_model_requests}"
    assert sent_request.headers["content-type"] == "application/json"
    assert response == LLMResponse(
        text="x",
        usage=TokenUsage(prompt_tokens=11, completion_tokens=7, cost=None),  # nobody knows "m": no guessed price
        finish_reason="stop",
        model="openai/m",
        served_model="m",  # what the answer's body says served it
    )
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 0, "by_kind": {}}


async def test_optional_fields_left_out_and_local_server_gets_a_placeholder_key(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, make: Make, openai_response: Reply
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


async def test_missing_content_and_refusal_are_text(waits: list[float], make: Make, openai_response: Reply) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                openai_response(None),
                openai_response(None, finish=None),
                openai_response("I'm sorry, I can't help with that."),
            ]
        )
        empty = await llm.complete(request())
        unfinished = await llm.complete(request())
        refusal = await llm.complete(request())
    assert (empty.text, empty.finish_reason) == ("", "stop")
    assert (unfinished.text, unfinished.finish_reason) == ("", "stop")
    assert refusal.text.startswith("I'm sorry")
    assert stats.summary()["retries"] == 0


async def test_truncated_answer_surfaces_finish_reason_length(
    waits: list[float], make: Make, openai_response: Reply
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response('{"tasks": [{"desc', finish="length"))
        response = await llm.complete(request())
    assert (response.text, response.finish_reason) == ('{"tasks": [{"desc', "length")
    assert route.call_count == 1 and stats.summary()["retries"] == 0  # the caller judges, not us


# -- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{"Retry-After": "2"}, {"retry-after-ms": "2000"}])
async def test_rate_limit_then_success_honours_retry_after(
    waits: list[float],
    make: Make,
    headers: dict[str, str],
    openai_response: Reply,
    openai_error: Reply,
    spec_counts: SpecCounts,
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
    waits: list[float], make: Make, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=3)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(500, "boom"))
        error = await failure(llm)
    assert error.kind == "server_error"
    assert "after 4 attempts" in str(error) and "boom" in str(error)
    assert route.call_count == 4  # 1 + max_retries: nothing retried underneath us
    assert spec_counts(stats) == {"requests": 4, "retries": 3, "failures": 1, "by_kind": {"server_error": 4}}
    assert len(waits) == 3 and waits[0] < waits[2]  # exponential


async def test_time_budget_stops_before_a_wait_that_would_cross_it(
    waits: list[float], make: Make, openai_error: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=10)
    llm.policy = RetryPolicy(max_retries=10, backoff_s=0.01, budget_s=10.0, max_retry_after_s=120.0)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_error(429, "later", {"Retry-After": "60"}))
        error = await failure(llm)
    assert error.kind == "rate_limit"
    assert route.call_count == 1 and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {"rate_limit": 1}}


@pytest.mark.parametrize(
    ("transport", "status", "kind"),
    only(
        list(TRANSPORTS),
        [(400, "client_error"), (401, "auth"), (403, "auth"), (404, "not_found"), (422, "client_error")],
    )
    # litellm takes a 413 for a server error, and its openai client follows a redirect
    + only(["http"], [(413, "client_error"), (301, "client_error")]),
)
async def test_no_retry_on_client_errors(
    waits: list[float],
    transport: str,
    make: Make,
    status: int,
    kind: str,
    openai_error: Reply,
    spec_counts: SpecCounts,
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(
            return_value=openai_error(status, "bad request", {"Location": "https://elsewhere/v1"})
        )
        error = await failure(llm)
    assert error.kind == kind
    said = {"http": f"HTTP {status}: bad request", "litellm": "OpenAIException - bad request"}[transport]
    assert said in str(error) and "after" not in str(error)
    assert route.call_count == 1 and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {kind: 1}}


async def test_server_408_is_a_timeout(
    waits: list[float], make: Make, openai_response: Reply, openai_error: Reply
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[openai_error(408, "request timeout"), openai_response("later")])
        assert (await llm.complete(request())).text == "later"
    assert stats.summary()["by_kind"] == {"timeout": 1}


async def test_html_error_page_is_a_retried_server_error(
    waits: list[float], transport: str, make: Make, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    """A 502 from a proxy in front of the model: the status is the server's word (server_error), the error
    names it (the HTTP transport quotes the page shortly), and the retry gets through."""
    llm, stats = make(max_retries=1)
    page = httpx.Response(
        502, text="<html><body><h1>502 Bad Gateway</h1></body></html>", headers={"content-type": "text/html"}
    )
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=[page, openai_response("back"), page, page])
        assert (await llm.complete(request())).text == "back"
        error = await failure(llm)
    said = {"http": "HTTP 502: <html><body><h1>502 Bad Gateway", "litellm": "Error code: 502"}[transport]
    assert error.kind == "server_error" and said in str(error)
    assert spec_counts(stats) == {"requests": 4, "retries": 2, "failures": 1, "by_kind": {"server_error": 3}}


UNUSABLE = {
    "half": httpx.Response(200, text='{"id": "x", "choices": [{"mess'),
    "half-obj": httpx.Response(200, text='{"id": "x", "obj'),
    "html": httpx.Response(200, text="<html><body>oops</body></html>", headers={"content-type": "text/html"}),
    "html-untyped": httpx.Response(200, text="<html><body>oops</body></html>"),
    "prose": httpx.Response(200, text="not json at all"),
    "empty": httpx.Response(200, text=""),
    "list": httpx.Response(200, json=[1, 2]),
    "no-choices": httpx.Response(200, json={"id": "x", "choices": []}),
    "no-choices-whole": httpx.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 0},
        },
    ),
}
UNUSABLE_TO_HTTP = {  # litellm's parser takes these for a server's or client's error
    "choices-missing": httpx.Response(200, json={"id": "x"}),
    "error-object": httpx.Response(200, json={"error": {"message": "upstream overloaded"}}),
    "choice-str": httpx.Response(200, json={"choices": ["text"]}),
    "no-message": httpx.Response(200, json={"choices": [{"finish_reason": "stop"}]}),
    "content-int": httpx.Response(200, json={"choices": [{"message": {"content": 42}}]}),
}


@pytest.mark.parametrize(
    ("transport", "name", "answer"),
    only(list(TRANSPORTS), list(UNUSABLE.items())) + only(["http"], list(UNUSABLE_TO_HTTP.items())),
)
async def test_unusable_bodies_are_retried_bad_responses(
    waits: list[float], make: Make, name: str, answer: httpx.Response, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    llm, stats = make()
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=[answer, openai_response("good")])
        response = await llm.complete(request())
    assert response.text == "good" and route.call_count == 2
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 0, "by_kind": {"bad_response": 1}}


async def test_unusable_bodies_for_good_raise_bad_response(
    waits: list[float], transport: str, make: Make, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=httpx.Response(200, text='{"choices": [{"mess'))
        error = await failure(llm)
    said = {"http": "answer is not JSON", "litellm": "OpenAIException - Empty or invalid response"}[transport]
    assert error.kind == "bad_response" and f"after 2 attempts: {said}" in str(error)
    assert spec_counts(stats) == {"requests": 2, "retries": 1, "failures": 1, "by_kind": {"bad_response": 2}}


@pytest.mark.parametrize(
    "fault",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.ConnectTimeout("connect timed out"),
        httpx.PoolTimeout("no free connection"),
    ],
    ids=["read", "connect", "pool"],
)
async def test_transport_timeouts_are_retried_then_fail_as_timeout(
    waits: list[float], make: Make, fault: Exception, spec_counts: SpecCounts
) -> None:
    llm, stats = make(max_retries=2)
    with respx.mock() as mock:
        route = mock.post(URL).mock(side_effect=fault)
        error = await failure(llm)
    assert error.kind == "timeout"
    assert route.call_count == 3
    assert spec_counts(stats) == {"requests": 3, "retries": 2, "failures": 1, "by_kind": {"timeout": 3}}


async def test_hung_endpoint_is_cut_by_our_own_guard(
    waits: list[float], monkeypatch: pytest.MonkeyPatch, make: Make, openai_response: Reply, spec_counts: SpecCounts
) -> None:
    """A transport that never answers (mocked, so httpx's timeouts never fire) still ends, as a retried timeout:
    litellm's attempt is cut by our guard around its call (``_GRACE_S`` past the timeout, which a transport
    may ignore), the HTTP transport's by the answer cap (``llm.answer_timeout_s``; nothing streamed, nothing kept)."""
    monkeypatch.setattr(litellm_provider, "_GRACE_S", 0.0)
    llm, stats = make(max_retries=1, answer_timeout_s=0.3)
    hung = 0

    async def hang(_: httpx.Request) -> httpx.Response:
        nonlocal hung
        hung += 1
        await asyncio.sleep(30)
        return openai_response()

    loop = asyncio.get_running_loop()
    with respx.mock(assert_all_called=False) as mock:  # respx records a call only once it is answered
        # respx calls a callable in a side-effect list too; its type for the list's items leaves callables out
        mock.post(URL).mock(side_effect=[openai_response("warm"), hang, hang])  # type: ignore[list-item]
        assert (await llm.complete(request())).text == "warm"  # litellm's first call sets up its clients
        llm.timeout_s = 0.3
        started = loop.time()
        error = await failure(llm)
    assert error.kind == "timeout"
    assert hung == 2  # both attempts reached the endpoint and were cut
    assert loop.time() - started < 5
    assert spec_counts(stats) == {"requests": 3, "retries": 1, "failures": 1, "by_kind": {"timeout": 2}}


async def test_dropped_connections_are_retried(
    waits: list[float], make: Make, openai_response: Reply, spec_counts: SpecCounts
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


async def test_connection_failures_for_good_name_the_cause(waits: list[float], transport: str, make: Make) -> None:
    llm, _ = make(max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=httpx.RemoteProtocolError("Server disconnected without sending a response."))
        error = await failure(llm)
    assert error.kind == "connection"
    said = {"http": "RemoteProtocolError: Server disconnected", "litellm": "OpenAIException - Connection error"}[
        transport
    ]
    assert f"after 2 attempts: {said}" in str(error)


async def test_a_refused_connection_is_not_retried_here(
    waits: list[float], make: Make, spec_counts: SpecCounts
) -> None:
    """Nobody listens: the request fails at once as ``unreachable``; the run's circuit breaker
    (llm/breaker.py) decides how long to wait for the endpoint, not each request's retries."""
    llm, stats = make(max_retries=4)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=httpx.ConnectError("refused"))
        error = await failure(llm)
    assert error.kind == "unreachable" and waits == []
    assert spec_counts(stats) == {"requests": 1, "retries": 0, "failures": 1, "by_kind": {"unreachable": 1}}


async def test_api_key_never_in_error_messages(
    waits: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    make: Make,
    openai_error: Reply,
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
            error = await failure(llm)
            assert error.__cause__ is None and error.__suppress_context__
            messages.append(str(error))
    assert [m.split(": ")[1] for m in messages] == [
        "auth",
        "server_error after 2 attempts",
        "bad_response after 2 attempts",
    ]
    assert all("Incorrect API key" in m for m in messages)  # the server's words survive, the key does not
    for text in [*messages, caplog.text]:
        assert secret not in text and "abcdefghijklmnop" not in text


# -- endpoints ---------------------------------------------------------------------------------


async def test_round_robin_over_api_bases_and_failover_on_retry(
    waits: list[float], make: Make, openai_response: Reply, openai_error: Reply
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


async def test_requests_blocked_unless_allowed(make: Make) -> None:
    llm, stats = make()
    with pytest.raises(RuntimeError, match="blocked"):
        await llm.complete(request())
    assert stats.summary()["requests"] == 0


def test_classify_plain_exceptions(make: Make) -> None:
    llm, _ = make()
    assert llm.classify(TimeoutError()) == "timeout"
    assert llm.classify(ConnectionResetError()) == "connection"
    assert llm.classify(LLMCallError("x", kind="rate_limit")) == "rate_limit"
    assert llm.classify(ValueError("odd")) == "bad_response"


def test_scrub_hides_key_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_0123456789abcdef")
    text = scrub(
        'key sk-abcdefghij1234 "api_key": "hunter2hunter2" Authorization: Bearer abc.def.ghi tok_0123456789abcdef'
    )
    assert "sk-abcdefghij1234" not in text and "hunter2" not in text and "abc.def.ghi" not in text
    assert "tok_0123456789abcdef" not in text
