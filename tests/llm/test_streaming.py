"""Real endpoints as they are: slow, one slot, lacking features. Streaming with a silence timeout,
the answer cap, per-endpoint concurrency, and the json_schema fall-back, over real sockets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import respx

from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError
from spade_llm.generator import task_answer_schema
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.openai_http import OpenAIHTTP
from spade_llm.llm.stats import LLMStats
from spade_llm.serve.fake import FakeServer
from spade_llm.types import Message, TokenUsage

StartServer = Callable[..., FakeServer]

pytestmark = pytest.mark.usefixtures("allow_model_requests")


class EchoLLM:
    """Answers ``echo:<last message>`` padded to ``size`` characters, so pacing has text to spread."""

    size = 40

    def __init__(self, profile: str = "default", seed: int = 0) -> None:
        self.model = f"fake/{profile}"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        text = f"echo:{request.messages[-1].content}".ljust(self.size, ".")
        return LLMResponse(text=text, usage=TokenUsage(prompt_tokens=5, completion_tokens=len(text) // 4))


ECHO = SimpleNamespace(FakeLLM=EchoLLM, PROFILES={"default": None}, infer_role=lambda messages, json_mode: "solver")


def make(api_base: str | list[str], **llm: Any) -> tuple[OpenAIHTTP, LLMStats]:
    stats = LLMStats()
    config = LLMConfig(**{"max_retries": 2, "backoff_s": 0.01, "timeout_s": 5.0, **llm})
    return OpenAIHTTP(RoleConfig(model="openai/default", api_base=api_base), config, stats.view("solver")), stats


def ask(text: str) -> LLMRequest:
    return LLMRequest(messages=[Message(role="user", content=text)], role="solver")


# -- slow is not dead --------------------------------------------------------------------------------


@pytest.mark.slow
async def test_an_answer_streaming_for_8s_is_not_cut_by_a_3s_silence_timeout(fake_server: StartServer) -> None:
    """The measured defect: a server taking 8 s per answer, a chunk every 0.5 s, and ``timeout_s: 3``.
    Streamed, every answer arrives on its first request; nothing is retried."""
    server = fake_server(ECHO, answer_s=8.0, chunk_s=0.5)
    llm, stats = make(server.url, timeout_s=3.0)
    started = time.monotonic()
    try:
        answers = await asyncio.gather(*(llm.complete(ask(f"q{i}")) for i in range(3)))
    finally:
        await llm.aclose()
    assert [a.text.rstrip(".") for a in answers] == ["echo:q0", "echo:q1", "echo:q2"]
    assert all(a.finish_reason == "stop" for a in answers)
    assert time.monotonic() - started >= 7.5  # they really were slow
    counts = stats.summary()
    assert (counts["requests"], counts["retries"], counts["failures"]) == (3, 0, 0), counts
    assert server.stats.completions == 3


@pytest.mark.slow
async def test_the_same_server_without_streaming_times_out(fake_server: StartServer) -> None:
    """What the silence timeout saves us from: unstreamed, the server is silent for 8 s and every attempt
    (the identical request, generated again) times out."""
    server = fake_server(ECHO, answer_s=8.0, chunk_s=0.5)
    llm, stats = make(server.url, timeout_s=3.0, stream=False, max_retries=1)
    try:
        with pytest.raises(LLMCallError) as info:
            await llm.complete(ask("q"))
    finally:
        await llm.aclose()
    assert info.value.kind == "timeout"
    assert stats.summary()["by_kind"] == {"timeout": 2}


@pytest.mark.slow
def test_spade_solve_against_a_slow_streaming_server_needs_no_retry(fake_server: StartServer, tmp_path: Path) -> None:
    """The whole path a user takes: ``spade solve`` with ``llm.timeout_s: 3`` against a server that takes
    8 s per answer, streaming a chunk every 0.5 s: every task answered by its first request and solved."""
    from spade_llm.cli.app import main

    server = fake_server(answer_s=8.0, chunk_s=0.5)
    assert main(["run", "--epochs", "1", "--tasks-per-epoch", "3", "--out", str(tmp_path / "gen")]) == 0  # offline
    tasks = tmp_path / "gen" / "tasks.jsonl"
    assert len(tasks.read_text().splitlines()) >= 2
    config = tmp_path / "c.yaml"
    config.write_text("llm:\n  timeout_s: 3\n  max_retries: 2\n  backoff_s: 0.01\nsolver:\n  max_turns: 1\n")
    out = tmp_path / "run"
    code = main(
        [
            "solve",
            str(tasks),
            "--config",
            str(config),
            "--model",
            "openai/strong-solver",
            "--api-base",
            server.url,
            "--concurrency",
            "3",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    trajectories = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    n = len(tasks.read_text().splitlines())
    assert [t["final_status"] for t in trajectories] == ["passed"] * n
    assert all(len(t["attempts"]) == 1 and t["attempts"][0]["finish_reason"] == "stop" for t in trajectories)
    llm = summary["llm"]
    assert (llm["requests"], llm["retries"], llm["failures"]) == (n, 0, 0), llm
    assert llm["by_role"]["solver"]["requests"] == n


async def test_an_answer_past_the_cap_is_kept_as_truncated_not_retried(fake_server: StartServer) -> None:
    server = fake_server(ECHO, answer_s=4.0, chunk_s=0.2)
    llm, stats = make(server.url, timeout_s=2.0, answer_timeout_s=1.0)
    try:
        answer = await llm.complete(ask("long"))
    finally:
        await llm.aclose()
    assert answer.finish_reason == "answer_cap"
    assert 0 < len(answer.text) < EchoLLM.size and "echo:long".startswith(answer.text[:9].rstrip("."))
    counts = stats.summary()
    assert (counts["requests"], counts["retries"], counts["failures"]) == (1, 0, 0)


# -- the wire, mocked: what a server may send ---------------------------------------------------------

BASE = "http://127.0.0.1:9/v1"
URL = f"{BASE}/chat/completions"


def sse(*events: Any, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def chunk(content: str | None = None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_usage_comes_from_the_final_chunk() -> None:
    llm, _ = make(BASE)
    body = sse(
        chunk("he"),
        chunk("llo"),
        chunk(None, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
    )
    with respx.mock() as mock:
        mock.post(URL).mock(
            return_value=httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
        )
        answer = await llm.complete(ask("x"))
    assert answer.text == "hello" and answer.usage == TokenUsage(prompt_tokens=9, completion_tokens=2, cost=None)


async def test_without_usage_completion_tokens_are_the_content_chunks() -> None:
    llm, _ = make(BASE)
    body = sse({"choices": [{"delta": {"role": "assistant"}}]}, chunk("a"), chunk("b"), chunk("c", "length"))
    with respx.mock() as mock:
        mock.post(URL).mock(
            return_value=httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
        )
        answer = await llm.complete(ask("x"))
    assert (answer.text, answer.finish_reason, answer.usage.completion_tokens) == ("abc", "length", 3)


async def test_an_event_stream_under_a_json_content_type_is_understood() -> None:
    """A proxy that buffers the stream and labels it application/json."""
    llm, _ = make(BASE)
    with respx.mock() as mock:
        mock.post(URL).mock(
            return_value=httpx.Response(
                200, content=sse(chunk("ok", "stop")), headers={"content-type": "application/json"}
            )
        )
        assert (await llm.complete(ask("x"))).text == "ok"


async def test_a_plain_json_answer_to_a_streaming_request_is_understood() -> None:
    llm, stats = make(BASE)
    body = {
        "choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=httpx.Response(200, json=body))
        assert (await llm.complete(ask("x"))).text == "whole"
    assert json.loads(route.calls[0].request.content)["stream"] is True
    assert stats.summary()["retries"] == 0


async def test_what_a_server_says_it_is_is_kept_per_role_and_server_streamed_or_not() -> None:
    """``manifest.json``'s ``model_servers``: the answers' ``model`` and ``system_fingerprint``."""
    llm, stats = make(BASE)
    said = {"model": "Qwen/Qwen2.5-Coder-7B-Instruct", "system_fingerprint": "b6123-4f0a"}
    streamed = sse({**chunk("he"), **said}, {**chunk(None, "stop"), **said})
    whole = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "model": "swapped", "id": "1"}
    with respx.mock() as mock:
        route = mock.post(URL)
        route.mock(return_value=httpx.Response(200, content=streamed, headers={"content-type": "text/event-stream"}))
        first = await llm.complete(ask("x"))
        await llm.complete(ask("y"))  # the same identity again: kept once
        route.mock(return_value=httpx.Response(200, json=whole))
        second = await llm.complete(ask("z"))
        route.mock(return_value=httpx.Response(200, json={**whole, "model": 7}))  # not a string: nothing said
        await llm.complete(ask("w"))
    assert (first.served_model, first.system_fingerprint) == (said["model"], said["system_fingerprint"])
    assert (second.served_model, second.system_fingerprint) == ("swapped", "")
    assert stats.servers == {"solver": {BASE: [said, {"model": "swapped"}]}}
    # a worker's drained counts carry them to the driver's stats
    driver = LLMStats()
    driver.carry(stats.drain())
    assert driver.servers == stats.servers


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (sse(chunk("half"), done=False), "connection"),  # the stream stopped mid-answer
        (b"data: {not json\n\n", "bad_response"),
        (sse({"error": {"message": "overloaded", "code": 503}}), "server_error"),
        (sse({"choices": []}), "bad_response"),  # [DONE] without a single choice
        (sse(chunk("cut")), "connection"),  # [DONE] without a finish_reason: the server stopped the answer
        (b'error: {"code": 500, "message": "slot failed"}\n\n', "server_error"),  # llama.cpp's older error field
    ],
)
async def test_a_broken_stream_is_a_retried_transport_fault(body: bytes, kind: str) -> None:
    llm, stats = make(BASE, max_retries=1)
    good = sse(chunk("fine", "stop"))
    with respx.mock() as mock:
        mock.post(URL).mock(
            side_effect=[
                httpx.Response(200, content=body, headers={"content-type": "text/event-stream"}),
                httpx.Response(200, content=good, headers={"content-type": "text/event-stream"}),
            ]
        )
        assert (await llm.complete(ask("x"))).text == "fine"
    assert stats.summary()["retried_by_kind"] == {kind: 1}


# -- one slot per server -------------------------------------------------------------------------------


async def test_max_inflight_per_endpoint_keeps_a_one_slot_server_at_one(fake_server: StartServer) -> None:
    server = fake_server(ECHO, answer_s=0.4, chunk_s=0.1)
    llm, stats = make(server.url, max_inflight_per_endpoint=1, timeout_s=1.0)
    try:
        answers = await asyncio.gather(*(llm.complete(ask(str(i))) for i in range(6)))
    finally:
        await llm.aclose()
    assert len(answers) == 6 and server.stats.max_inflight == 1
    assert stats.summary()["retries"] == 0  # queueing on our side is no timeout


async def test_the_limit_is_per_server_and_load_spreads_over_the_list(fake_server: StartServer) -> None:
    a, b = fake_server(ECHO, answer_s=0.4, chunk_s=0.1), fake_server(ECHO, answer_s=0.4, chunk_s=0.1)
    llm, _ = make([a.url, b.url], max_inflight_per_endpoint=1)
    both_busy = 0

    async def watch() -> None:
        # two at a time, not one: seen as both servers answering at once, not as a wall time (load moves it)
        nonlocal both_busy
        while True:
            both_busy += a.stats.inflight == b.stats.inflight == 1
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    try:
        await asyncio.gather(*(llm.complete(ask(str(i))) for i in range(6)))
    finally:
        watcher.cancel()
        await llm.aclose()
    assert a.stats.max_inflight == b.stats.max_inflight == 1
    assert a.stats.completions == b.stats.completions == 3
    assert both_busy > 0


async def test_roles_on_one_server_share_its_slots(fake_server: StartServer) -> None:
    server = fake_server(ECHO, answer_s=0.3, chunk_s=0.1)
    stats = LLMStats()
    config = LLMConfig(max_inflight_per_endpoint=1, backoff_s=0.01)
    gen = OpenAIHTTP(RoleConfig(model="openai/g", api_base=server.url), config, stats.view("generator"))
    sol = OpenAIHTTP(RoleConfig(model="openai/s", api_base=server.url), config, stats.view("solver"))
    try:
        await asyncio.gather(*(llm.complete(ask(str(i))) for i in range(3) for llm in (gen, sol)))
    finally:
        await gen.aclose()
        await sol.aclose()
    assert server.stats.max_inflight == 1
    by_role = stats.summary()["by_role"]
    assert by_role["generator"]["requests"] == by_role["solver"]["requests"] == 3


# -- structured outputs ---------------------------------------------------------------------------------


def generator_request(n: int = 1) -> LLMRequest:
    return LLMRequest(
        messages=[Message(role="user", content="Propose a task as JSON.")],
        role="generator",
        response_format="json_schema",
        json_schema=task_answer_schema(n),
    )


def test_the_task_schema_comes_from_the_task_model() -> None:
    form = task_answer_schema(2)
    tasks = form["schema"]["properties"]["tasks"]
    assert (tasks["minItems"], tasks["maxItems"]) == (1, 2)
    item = tasks["items"]
    assert set(item["required"]) == {"description", "entry_point", "reference_code", "tests"}
    assert item["properties"]["tests"]["items"]["properties"]["input"] == {"type": "string"}
    assert "$ref" not in json.dumps(form) and "$defs" not in json.dumps(form)


async def test_json_schema_is_sent_in_openais_form() -> None:
    llm, _ = make(BASE)
    with respx.mock() as mock:
        route = mock.post(URL).mock(
            return_value=httpx.Response(
                200, content=sse(chunk("{}", "stop")), headers={"content-type": "text/event-stream"}
            )
        )
        await llm.complete(generator_request(3))
    sent = json.loads(route.calls[0].request.content)
    assert sent["response_format"] == {"type": "json_schema", "json_schema": task_answer_schema(3)}
    assert sent["response_format"]["json_schema"]["name"] == "tasks"


async def test_a_server_refusing_json_schema_gets_json_object_once_and_for_good(fake_server: StartServer) -> None:
    server = fake_server(refuse=frozenset({"json_schema"}))
    llm, stats = make(server.url, max_retries=3)
    try:
        for _ in range(4):
            answer = await llm.complete(generator_request())
            assert json.loads(answer.text)["tasks"]
    finally:
        await llm.aclose()
    assert server.stats.errors == 1  # one refusal; every later request went without the schema
    summary = stats.summary()
    assert summary["retries"] == 0 and summary["requests"] == 5  # 4 answers + the one refused send
    fallback = summary["fallbacks"]["response_format"]
    assert (fallback["from"], fallback["to"], fallback["status"]) == ("json_schema", "json_object", 500)


async def test_a_refused_stream_options_is_dropped_and_usage_counted_from_chunks(fake_server: StartServer) -> None:
    server = fake_server(ECHO, refuse=frozenset({"stream_options"}))
    llm, stats = make(server.url)
    try:
        first = await llm.complete(ask("a"))
        await llm.complete(ask("b"))
    finally:
        await llm.aclose()
    assert first.text.startswith("echo:a") and first.usage.completion_tokens == 1  # one content chunk
    assert server.stats.errors == 1 and "stream_options" in stats.summary()["fallbacks"]


@pytest.mark.slow
def test_a_run_against_a_server_refusing_json_schema_falls_back_and_accepts_tasks(
    fake_server: StartServer, tmp_path: Path
) -> None:
    from spade_llm.cli.app import main

    server = fake_server(refuse=frozenset({"json_schema"}))
    out = tmp_path / "run"
    args = ["run", "--model", "openai/default", "--api-base", server.url, "--epochs", "1"]
    code = main([*args, "--tasks-per-epoch", "6", "--concurrency", "2", "--out", str(out)])
    assert code == 0
    tasks = (out / "tasks.jsonl").read_text().splitlines()
    assert tasks, "no task accepted after the fall-back"
    assert server.stats.errors <= 2  # only requests already in flight met the refusal
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["llm_fallbacks"]["response_format"]["to"] == "json_object"
    identity = [{"model": "default", "system_fingerprint": "spade-fake"}]  # what the fake server's answers say
    assert manifest["model_servers"] == {role: {server.url: identity} for role in ("generator", "solver")}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm"]["fallbacks"]["response_format"]["role"] == "generator"
    assert summary["llm"]["retries"] == 0


# -- found in review -----------------------------------------------------------------------------------


def test_the_schema_keeps_a_field_named_description() -> None:
    """Stripping ``description`` keywords from the schema must not strip the task's description field."""
    item = task_answer_schema(1)["schema"]["properties"]["tasks"]["items"]
    assert set(item["required"]) <= set(item["properties"]) and "description" in item["properties"]


async def test_a_finished_answer_on_a_stream_left_open_stands(fake_server: StartServer) -> None:
    """A server that sends the finish chunk and [DONE], then holds the connection: the answer is whole."""

    async def held(request: httpx.Request) -> httpx.Response:
        async def body():
            yield sse(chunk("whole", "stop"))
            await asyncio.sleep(30)

        return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    llm, stats = make(BASE, timeout_s=0.5, answer_timeout_s=2.0)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=held)
        started = time.monotonic()
        answer = await llm.complete(ask("x"))
    assert (answer.text, answer.finish_reason) == ("whole", "stop")
    assert time.monotonic() - started < 15  # not held the 30 s the server keeps it open
    assert stats.summary()["retries"] == 0


async def test_a_stream_that_never_says_a_word_before_the_cap_is_a_timeout() -> None:
    async def pings(request: httpx.Request) -> httpx.Response:
        async def body():
            for _ in range(100):
                yield b": ping\n\n"
                await asyncio.sleep(0.1)

        return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    llm, stats = make(BASE, timeout_s=1.0, answer_timeout_s=0.5, max_retries=1)
    with respx.mock() as mock:
        mock.post(URL).mock(side_effect=pings)
        with pytest.raises(LLMCallError) as info:
            await llm.complete(ask("x"))
    assert info.value.kind == "timeout" and stats.summary()["retried_by_kind"] == {"timeout": 1}


def test_an_answer_cut_by_the_cap_is_not_cached(tmp_path: Path) -> None:
    from spade_llm.fake.scripted import ScriptedLLM
    from spade_llm.llm.cache import CachedLLM

    inner = ScriptedLLM([LLMResponse(text="part", finish_reason="answer_cap"), LLMResponse(text="whole")])
    cached = CachedLLM(inner, tmp_path)
    assert asyncio.run(cached.complete(ask("x"))).finish_reason == "answer_cap"
    assert asyncio.run(cached.complete(ask("x"))).text == "whole"  # asked again, not answered from disk
    assert asyncio.run(cached.complete(ask("x"))).text == "whole" and len(inner.calls) == 2
