"""The direct OpenAI-compatible transport (spade_llm.llm.openai_http): respx at the HTTP level, then real sockets.

The respx tests talk to http://127.0.0.1:9 (a closed port): if respx stopped seeing the
transport's traffic, calls would fail to connect and the call counts would be wrong. What it does as
litellm does (the wire format, faults, retries, endpoints) is tested for both in tests/llm/test_transports.py;
here is its own: streaming's answer cap, content parts, its client and its URLs. The last
tests start a FakeServer of their own on 127.0.0.1 (conftest's ``fake_server``) and the shared fault
proxy in front of it (``fault_proxy``).
"""

from __future__ import annotations

import asyncio
import socket
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
from spade_llm.llm.stats import LLMStats
from spade_llm.serve.fake import FakeServer
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


async def test_content_parts_are_joined_text(waits: list[float], openai_response: Reply) -> None:
    """Content parts (litellm's parser refuses them) keep their text ones; a missing content and a
    refusal are text for both transports (tests/llm/test_transports.py)."""
    llm, stats = make()
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "image_url"}]
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=openai_response(parts, finish="content_filter"))
        joined = await llm.complete(request())
    assert (joined.text, joined.finish_reason) == ("ab", "content_filter")
    assert stats.summary()["retries"] == 0


# -- faults ------------------------------------------------------------------------------------


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
        answers = await asyncio.gather(*(llm.complete(ask(str(i), seed=i)) for i in range(16)))
    finally:
        await llm.aclose()
    assert [a.text for a in answers] == [f"echo:{i}" for i in range(16)]
    assert answers[0].usage == TokenUsage(prompt_tokens=1, completion_tokens=3, cost=None)
    assert server.stats.max_inflight == 16  # all at once: queued, they would have been one at a time
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
