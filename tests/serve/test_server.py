"""``spade serve-fake`` (spade_llm.serve.fake): the OpenAI wire format, keep-alive, concurrency, shutdown.

Most tests put a stand-in model behind the server (echoing what it was asked), so they test the
HTTP layer alone and stay exact whatever the fake model answers; the last ones use the real fake.
Servers come from conftest's ``fake_server``; traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import httpx
import pytest

from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.litellm import LiteLLM
from spade_llm.llm.stats import LLMStats
from spade_llm.serve.fake import FakeServer
from spade_llm.types import Message, TokenUsage


class StubLLM:
    """Echoes profile, role and the last message; records every request."""

    seen: ClassVar[list[tuple[str, LLMRequest]]] = []

    def __init__(self, profile: str = "default", seed: int = 0) -> None:
        self.profile = profile
        self.model = f"fake/{profile}"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        StubLLM.seen.append((self.profile, request))
        last = request.messages[-1].content
        if last == "explode":
            raise RuntimeError("stand-in failure")
        finish = "length" if last == "cut" else "stop"
        return LLMResponse(
            text=f"{self.profile}|{request.role}|{last}",
            finish_reason=finish,
            usage=TokenUsage(prompt_tokens=len(last), completion_tokens=3),
        )


STUB = SimpleNamespace(
    FakeLLM=StubLLM,
    PROFILES={"default": None, "noisy": None, "strong-solver": None},
    infer_role=lambda messages, json_mode: "generator" if json_mode else "solver",
)


StartServer = Callable[..., FakeServer]  # the conftest fixture fake_server
SpecCounts = Callable[[LLMStats], dict[str, object]]  # the conftest fixture spec_counts


def chat(messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"model": "default", "messages": messages or [{"role": "user", "content": "hi"}], **extra}


def post(
    conn: http.client.HTTPConnection, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_models_and_a_completion_in_openai_shape(fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]][:1] == ["default"]
    assert {"noisy", "strong-solver"} <= {m["id"] for m in models["data"]}
    status, body = post(conn, "/v1/chat/completions", chat(model="my-model"))
    assert status == 200
    assert body["object"] == "chat.completion" and body["model"] == "my-model"
    assert body["id"].startswith("chatcmpl-") and isinstance(body["created"], int)
    choice = body["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "default|solver|hi"}
    assert body["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}


@pytest.mark.parametrize(
    ("model", "profile"),
    [("noisy", "noisy"), ("fake/strong-solver", "strong-solver"), ("gpt-4o", "default"), ("", "default")],
)
def test_model_name_selects_the_profile(model: str, profile: str, fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    _, body = post(conn, "/v1/chat/completions", chat(model=model))
    assert body["choices"][0]["message"]["content"].split("|")[0] == profile


def test_body_maps_onto_llm_request(fake_server: StartServer) -> None:
    StubLLM.seen.clear()
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "two"}]},
    ]
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    _, body = post(
        conn,
        "/chat/completions",
        chat(
            messages,
            temperature=0.1,
            max_tokens=77,
            seed=9,
            response_format={"type": "json_object"},
            metadata={"task_id": "t"},
        ),
    )
    _, request = StubLLM.seen[-1]
    assert request.messages == [Message(role="system", content="sys"), Message(role="user", content="part one, two")]
    assert (request.temperature, request.max_tokens, request.seed, request.response_format) == (
        0.1,
        77,
        9,
        "json_object",
    )
    assert request.role == "generator" and request.metadata == {"task_id": "t"}
    assert body["choices"][0]["message"]["content"] == "default|generator|part one, two"


def test_truncation_is_reported_as_finish_reason_length(fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    _, body = post(conn, "/v1/chat/completions", chat([{"role": "user", "content": "cut"}]))
    assert body["choices"][0]["finish_reason"] == "length"


def test_bad_requests_get_openai_errors_and_keep_the_connection(fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    status, body = post(conn, "/v1/chat/completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = post(conn, "/v1/chat/completions", {"model": "x"})
    assert status == 400 and "messages" in body["error"]["message"]
    status, body = post(conn, "/v1/chat/completions", chat(temperature="hot"))
    assert status == 400
    status, body = post(conn, "/v1/chat/completions", chat([{"role": "user", "content": "explode"}]))
    assert status == 500 and body["error"]["type"] == "server_error"
    conn.request("GET", "/v1/nothing")
    response = conn.getresponse()
    assert response.status == 404 and "error" in json.loads(response.read())
    conn.request("GET", "/v1/chat/completions")
    response = conn.getresponse()
    assert response.status == 405
    response.read()
    status, body = post(conn, "/v1/chat/completions", chat())  # same connection, still serving
    assert status == 200
    assert server.stats.requests == 7 and server.stats.errors == 6


def test_keep_alive_reuses_one_connection(fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for i in range(3):
        status, _ = post(conn, "/v1/chat/completions", chat([{"role": "user", "content": str(i)}]))
        assert status == 200
    sock = conn.sock
    assert sock is not None
    post(conn, "/v1/chat/completions", chat())
    assert conn.sock is sock  # no reconnect


def test_chunked_body_expect_continue_and_connection_close(fake_server: StartServer) -> None:
    body = json.dumps(chat([{"role": "user", "content": "chunky"}])).encode()
    half = len(body) // 2
    raw = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
        + f"{half:x}\r\n".encode()
        + body[:half]
        + b"\r\n"
        + f"{len(body) - half:x}\r\n".encode()
        + body[half:]
        + b"\r\n0\r\n\r\n"
    )
    server = fake_server(STUB)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):  # the server closes: Connection: close was asked for
            data += chunk
    assert data.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")
    assert b'"default|solver|chunky"' in data


def test_streaming_answer(fake_server: StartServer) -> None:
    server = fake_server(STUB)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request(
        "POST", "/v1/chat/completions", body=json.dumps(chat(stream=True, stream_options={"include_usage": True}))
    )
    response = conn.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream"
    events = [line[6:] for line in response.read().decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "default|solver|hi"
    assert chunks[-1]["usage"]["total_tokens"] == 5


class BarrierLLM(StubLLM):
    """``StubLLM`` that answers only once ``BarrierLLM.need`` requests are in at once: concurrency made
    a fact (a server or client that queued them would never get there: 500 after ``patience_s``),
    whatever the load, instead of a wall time."""

    need = 1
    inside = 0
    patience_s = 60.0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        BarrierLLM.inside += 1
        try:
            deadline = time.monotonic() + BarrierLLM.patience_s
            while BarrierLLM.inside < BarrierLLM.need:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {BarrierLLM.inside} of {BarrierLLM.need} requests came in at once")
                await asyncio.sleep(0.005)
            BarrierLLM.need = 1  # once met, the barrier stays open for the rest
            return await super().complete(request)
        finally:
            BarrierLLM.inside -= 1


BARRIER = SimpleNamespace(**{**vars(STUB), "FakeLLM": BarrierLLM})


async def test_sixteen_concurrent_requests_overlap(fake_server: StartServer) -> None:
    server = fake_server(BARRIER)
    BarrierLLM.need = 16
    async with httpx.AsyncClient(base_url=server.url, timeout=90, limits=httpx.Limits(max_connections=32)) as client:
        responses = await asyncio.gather(*(client.post("/chat/completions", json=chat()) for _ in range(16)))
    assert [r.status_code for r in responses] == [200] * 16, [r.text for r in responses if r.status_code != 200]
    assert server.stats.max_inflight == 16


def litellm_for(server: FakeServer, model: str = "openai/default", **llm: Any) -> tuple[LiteLLM, LLMStats]:
    stats = LLMStats()
    config = LLMConfig(**{"max_retries": 2, "backoff_s": 0.01, "timeout_s": 10.0, **llm})
    return LiteLLM(RoleConfig(model=model, api_base=server.url), config, stats=stats), stats


async def test_through_litellm_concurrently(
    allow_model_requests: str, fake_server: StartServer, spec_counts: SpecCounts
) -> None:
    """16 requests through litellm are in the server at once (``BarrierLLM``: none is answered before all
    16 are in), with no retry: concurrency as a fact, not as a wall time, which fails under load."""
    server = fake_server(BARRIER)
    llm, stats = litellm_for(server, timeout_s=90.0)
    BarrierLLM.need = 1
    first = await llm.complete(LLMRequest(messages=[Message(role="user", content="warm")], role="solver"))
    assert first.text == "default|solver|warm" and first.usage.completion_tokens == 3
    BarrierLLM.need = 16
    answers = await asyncio.gather(
        *(
            llm.complete(LLMRequest(messages=[Message(role="user", content=str(i))], role="solver", seed=i))
            for i in range(16)
        )
    )
    assert [a.text.split("|")[2] for a in answers] == [str(i) for i in range(16)]
    assert server.stats.max_inflight == 16
    assert spec_counts(stats) == {"requests": 17, "retries": 0, "failures": 0, "by_kind": {}}


@pytest.mark.slow
async def test_every_fault_of_the_fault_proxy_is_survived_and_counted(
    allow_model_requests: str, fake_server: StartServer, fault_proxy: Callable[[str], Any]
) -> None:
    """Real sockets: 429 + Retry-After, 500, 502 HTML, half a JSON body, refusal, truncation, a slow
    answer (past our timeout), a dropped connection and no choices, each once, in the proxy's cycle."""
    server = fake_server(STUB)
    proxy = fault_proxy(f"http://127.0.0.1:{server.port}")
    stats = LLMStats()
    config = LLMConfig(max_retries=4, backoff_s=0.05, timeout_s=2.0)
    llm = LiteLLM(RoleConfig(model="openai/default", api_base=proxy.url), config, stats=stats)
    texts, finishes = [], []
    for i in range(22):  # 22 answers + 7 retries = 29 proxy requests: the whole fault cycle
        try:
            r = await llm.complete(LLMRequest(messages=[Message(role="user", content=f"q{i}")], role="solver"))
            texts.append(r.text)
            finishes.append(r.finish_reason)
        except LLMCallError as e:  # allowed, but then counted
            texts.append(f"!{e.kind}")
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
    summary = stats.summary()
    assert summary["failures"] == 0, summary
    assert {"rate_limit", "server_error", "bad_response", "timeout", "connection"} <= set(summary["by_kind"]), summary
    # no hidden retries: the proxy never sees more attempts than we count. It may see fewer: an attempt
    # that ends as a timeout or a connection error before the proxy has read its body (a loaded machine,
    # a kept-alive connection the proxy closed) is never counted there; the slow and the dropped answer
    # are one of each that did reach it
    unseen = summary["requests"] - injected["requests"]
    by_kind = summary["by_kind"]
    assert 0 <= unseen <= by_kind.get("timeout", 0) + by_kind.get("connection", 0) - 2, (unseen, summary, injected)
    assert "I'm sorry, I can't help with that." in texts  # a refusal is text for the caller to judge
    assert "length" in finishes


def test_serve_in_a_process_prints_its_url_and_stops_on_sigint(tmp_path: Path) -> None:
    """``serve()`` as the CLI runs it: port 0 picks a free port, the URL is on stderr, Ctrl-C ends it cleanly."""
    code = "from spade_llm.serve.fake import serve; serve('127.0.0.1', 0, 0.0)"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split("listening on ")[1].split()[0]
        models = httpx.get(f"{url}/models", timeout=10).json()
        assert models["data"][0]["id"] == "default"
    finally:
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "stopped" in rest and "Traceback" not in rest


def _real_fake() -> Any:
    try:
        from spade_llm import fake
    except ImportError:
        pytest.skip("spade_llm.fake not available yet")
    return fake


async def test_real_fake_model_through_litellm(allow_model_requests: str, fake_server: StartServer) -> None:
    fake = _real_fake()
    server = fake_server(fake, seed=3)
    llm, stats = litellm_for(server, model="openai/strong-solver")
    direct = fake.FakeLLM(profile="strong-solver", seed=3)
    messages = [
        Message(role="system", content="You write Python."),
        Message(role="user", content="Write a function `add(a, b)` that returns a + b."),
    ]
    request = LLMRequest(
        messages=messages, role=fake.infer_role(messages, False), seed=11, temperature=0.2, max_tokens=512
    )
    over_http = await llm.complete(request)
    in_process = await direct.complete(request)
    assert over_http.text == in_process.text  # same profile, seed and request: the same answer
    assert over_http.finish_reason == in_process.finish_reason
    assert stats.summary()["requests"] == 1


def test_serve_reports_a_busy_port_as_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_llm.serve.fake as server_mod
    from spade_llm.errors import UserError

    monkeypatch.setattr(server_mod, "FakeServer", lambda *a, **kw: FakeServer(*a, **{**kw, "backend": STUB}))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(UserError, match="cannot listen"):
            server_mod.serve("127.0.0.1", busy.getsockname()[1], 0.0)
    with pytest.raises(UserError, match="latency"):
        server_mod.serve("127.0.0.1", 0, -1.0)
