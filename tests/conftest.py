"""Test-wide guards and the fixtures the provider and server tests share.

Guard (autouse): no real model request by accident. Tests that talk to respx mocks or to servers of
their own on 127.0.0.1 lift it with ``allow_model_requests`` (or ``waits``, which also records the
retry backoffs instead of sleeping them). ``openai_response`` / ``openai_error`` build the bodies an
OpenAI-compatible endpoint answers with; ``fake_server`` starts in-process FakeServers and
``fault_proxy`` puts shared/tools/faulty_proxy.py in front of one. ``sandbox`` is the subprocess
sandbox the judging tests share, one per module.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import builders
import httpx
import pytest
from serve_env_kit import serve_env  # noqa: F401  (a fixture: spade serve-env processes, killed after each test)
from trainer_kit import REQUIRE_ENV, trainers_required

import spade_llm.llm.retry as retry_mod
import spade_llm.llm.transport as transport
from spade_llm.llm.stats import LLMStats

if TYPE_CHECKING:
    from spade_llm.sandbox.base import Sandbox
    from spade_llm.serve.fake import FakeServer

TEST_API_KEY = "sk-test-key-1234567890"


CLIENT_MARKERS = ("trl", "verl", "env", "verifiers", "tracking")
"""The markers of tests that run a real client's code (TRL, verl, openenv-core, verifiers)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under ``SPADE_TEST_REQUIRE_TRAINERS`` (CI's trainer lane) a test marked ``trl``, ``verl``, ``env``
    or ``verifiers`` that skips fails instead: the extras are installed there, so a skip would hide a
    broken test of a real client."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail") and trainers_required():
        marked = [name for name in CLIENT_MARKERS if item.get_closest_marker(name)]
        if marked:
            report.outcome = "failed"
            report.longrepr = f"{REQUIRE_ENV} is set, but this {'/'.join(marked)} test skipped: {report.longrepr}"


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test its own user cache (``_util.cache``): none reads or writes the machine's ``~/.cache``,
    nor finds what another test left there."""
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "spade-cache"))


@pytest.fixture(autouse=True)
def block_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "ALLOW_MODEL_REQUESTS", False)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)


# -- model requests to mocks and local servers -----------------------------------------------------


@pytest.fixture
def allow_model_requests(monkeypatch: pytest.MonkeyPatch) -> str:
    """Lift the guard for a test whose requests reach only respx mocks or servers of its own on
    127.0.0.1; sets a dummy OPENAI_API_KEY and returns it."""
    monkeypatch.setattr(transport, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_API_KEY)
    return TEST_API_KEY


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch, allow_model_requests: str) -> list[float]:
    """Model requests allowed (as ``allow_model_requests``), and every retry backoff recorded here
    instead of slept."""
    recorded: list[float] = []

    async def no_backoff_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(retry_mod, "_sleep", no_backoff_sleep)
    return recorded


def _chat_completion(
    content: Any = "hello", finish: str | None = "stop", model: str = "m", **extra: Any
) -> httpx.Response:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        **extra,
    }
    return httpx.Response(200, json=body)


def _error(status: int, message: str = "nope", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "x", "code": None}}, headers=headers)


@pytest.fixture
def openai_response() -> Callable[..., httpx.Response]:
    """``openai_response(content="hello", finish="stop", model="m", **fields)``: a 200 chat.completion
    (usage 11 + 7 tokens); extra fields replace the body's own."""
    return _chat_completion


@pytest.fixture
def openai_error() -> Callable[..., httpx.Response]:
    """``openai_error(status, message="nope", headers=None)``: an error answer in OpenAI's shape."""
    return _error


# -- sandboxes --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A subprocess sandbox for the module's tests, closed after its last one. Modules whose tests run on
    several backends (test_sandbox_conformance.py, test_program_output.py) define a parametrized
    ``sandbox`` of their own, which takes this one's place there."""
    from spade_llm.sandbox.registry import get_sandbox

    box = get_sandbox("subprocess")
    yield box
    box.close()


@pytest.fixture(scope="module")
def run_sandbox() -> Iterator[Sandbox]:
    """The backend of ``sandbox_backends.run_backend`` (bwrap where it works), for a module whose gates
    make hundreds of executions: on subprocess each starts an interpreter, at twice the CPU."""
    from sandbox_backends import run_backend, started

    yield from started(run_backend())


# -- real sockets: in-process FakeServers and the fault proxy ----------------------------------------


def _free_port() -> int:
    """A port nobody listens on once this returns (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeServer]]:
    """``fake_server(backend=None, latency=0.0, seed=0, **pacing)`` starts a FakeServer on a free 127.0.0.1
    port, its event loop in a thread of its own, and returns it (``.url`` is the base URL, ``.port``,
    ``.stats``); ``backend`` is a stand-in for ``spade_llm.fake``; ``pacing`` goes to FakeServer
    (``answer_s``, ``chunk_s``, ``tokens_per_s``, ``refuse``). Every one stops at teardown."""
    from spade_llm.serve.fake import FakeServer

    stops: list[Callable[[], None]] = []

    def start(backend: Any = None, latency: float = 0.0, seed: int = 0, **pacing: Any) -> FakeServer:
        loop = asyncio.new_event_loop()
        server = FakeServer("127.0.0.1", 0, latency, seed, backend=backend, **pacing)
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(server.start())
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert ready.wait(10), "server did not start"

        def stop() -> None:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

        stops.append(stop)
        return server

    yield start
    for stop in reversed(stops):
        stop()


def _shared_tool(name: str) -> Path | None:
    here = Path(__file__).resolve().parents[1]
    for root in (here.parent / "shared", here / "shared", Path("/work/shared")):
        if (root / "tools" / name).is_file():
            return root / "tools" / name
    return None


class FaultProxy:
    """shared/tools/faulty_proxy.py in a process of its own, on a free port, in front of ``upstream``."""

    def __init__(self, script: Path, upstream: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(self.port), upstream], stderr=subprocess.PIPE, text=True
        )
        for _ in range(100):
            try:
                httpx.get(f"{self.url}/models", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)

    def stop(self) -> dict[str, Any]:
        """End the proxy; its last report: requests so far, most in flight, the faults it served."""
        if self.proc.poll() is None:
            self.proc.terminate()
        _, stderr = self.proc.communicate(timeout=10)
        return dict(json.loads([line for line in stderr.splitlines() if line.startswith("{")][-1]))


@pytest.fixture
def fault_proxy() -> Iterator[Callable[[str], FaultProxy]]:
    """``fault_proxy("http://127.0.0.1:PORT")`` starts the shared fault proxy in front of that server
    (skips the test when shared/tools/faulty_proxy.py is not there); ``.stop()`` ends it and returns
    what it injected. Any still running stop at teardown."""
    script = _shared_tool("faulty_proxy.py")
    if script is None:
        pytest.skip("shared/tools/faulty_proxy.py not found")
    started: list[FaultProxy] = []

    def start(upstream: str) -> FaultProxy:
        proxy = FaultProxy(script, upstream)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        if proxy.proc.poll() is None:
            proxy.proc.terminate()
            proxy.proc.communicate(timeout=10)


SpecCounts = Callable[[LLMStats], dict[str, object]]


@pytest.fixture
def spec_counts() -> SpecCounts:
    """``spec_counts(stats)``: SPEC's four ``summary.llm`` counts (``requests``, ``retries``, ``failures``,
    ``by_kind``), without the per-role, content-fault and fall-back rows the summary also has."""

    def counts(stats: LLMStats) -> dict[str, object]:
        summary = stats.summary()
        return {k: summary[k] for k in ("requests", "retries", "failures", "by_kind")}

    return counts


# -- shared builders (tests/builders.py), as fixtures -------------------------------------------------


@pytest.fixture
def make_task() -> Callable[..., Any]:
    """``builders.make_task``: a valid task, or one changed by its arguments."""
    return builders.make_task


@pytest.fixture
def small_config() -> Callable[..., Any]:
    """``builders.small_config``: a run config on the fake model small enough for a test."""
    return builders.small_config


@pytest.fixture
def run_fake() -> Callable[..., Any]:
    """``builders.run_fake``: a whole fake run in this process, into a new directory."""
    return builders.run_fake
