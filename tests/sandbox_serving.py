"""A ``SandboxServer`` for the serve-sandbox tests: on a free 127.0.0.1 port, its event loop in a thread;
and ``Gated``, a backend that runs nothing and holds each run until the test lets it go."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spade_llm.sandbox.base import Limits, Program, Sandbox
from spade_llm.serve.sandbox import RunCancel, SandboxServer
from spade_llm.types import ExecutionResult


@contextmanager
def serving(sandbox: Sandbox, **options: Any) -> Iterator[SandboxServer]:
    """The server on ``sandbox`` (``options``: ``SandboxServer``'s), closed and its loop stopped after
    (a ``Gated`` sandbox's runs let go first)."""
    loop = asyncio.new_event_loop()
    srv = SandboxServer("127.0.0.1", 0, sandbox, **options)
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(srv.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "server did not start"
    try:
        yield srv
    finally:
        if isinstance(sandbox, Gated):
            sandbox.gate.set()  # a test that failed holding runs would otherwise wait for them for good
        asyncio.run_coroutine_threadsafe(srv.close(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


class Gated(Sandbox):
    """Records each program it is asked to run (its source) and holds the run until ``gate`` is set;
    ``run`` takes a ``cancel`` hook, so the server can kill a run (``killed`` records those)."""

    name = "gated"
    isolating = True

    def __init__(self) -> None:
        self.started: list[str] = []
        self.killed: list[str] = []
        self.gate = threading.Event()

    def run(self, program: Program, limits: Limits, cancel: RunCancel | None = None) -> ExecutionResult:
        return self._hold(program, cancel)

    def _hold(self, program: Program, cancel: RunCancel | None) -> ExecutionResult:
        self.started.append(program.source)
        stop = threading.Event()
        undo = cancel.on_cancel(stop.set) if cancel is not None else (lambda: None)
        try:
            while not self.gate.is_set() and not stop.is_set():
                stop.wait(0.01)
        finally:
            undo()
        if stop.is_set():
            self.killed.append(program.source)
            return ExecutionResult(status="killed", signal=9)
        return ExecutionResult(status="ok", return_code=0, stdout=f"ran {program.source}\n")


class GatedNoCancel(Gated):
    """``Gated`` whose ``run`` takes no ``cancel``: a backend that cannot stop a run it has started."""

    def run(self, program: Program, limits: Limits) -> ExecutionResult:  # type: ignore[override]
        return self._hold(program, None)
