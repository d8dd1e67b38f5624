"""A ``SandboxServer`` for the serve-sandbox tests: on a free 127.0.0.1 port, its event loop in a thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spade_llm.sandbox.base import Sandbox
from spade_llm.sandbox_server import SandboxServer


@contextmanager
def serving(sandbox: Sandbox, **options: Any) -> Iterator[SandboxServer]:
    """The server on ``sandbox`` (``options``: ``SandboxServer``'s), closed and its loop stopped after."""
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
        asyncio.run_coroutine_threadsafe(srv.close(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
