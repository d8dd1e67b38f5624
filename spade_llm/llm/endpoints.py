"""Which server a request goes to, and how many requests each server has at once.

A llama.cpp server with one slot answers one request at a time: a second one queues inside the
server, where its timeout runs while it waits, and a retry of it queues again behind the first.
``llm.max_inflight_per_endpoint`` keeps that queue on our side instead, where waiting costs
nothing: a request starts only when its server has a free slot, and its silence timeout starts
with it.

One count per server URL per event loop, shared by every model of the run: a generator and a
solver on the same server share its slots. Among a role's ``api_base`` list, a request goes to
the server with the fewest requests in flight (ties in turn), avoiding the one its previous
attempt failed on when another has room.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["EndpointPool", "Route"]


class _LoopState:
    """In-flight counts of one event loop, and the requests waiting for a slot."""

    def __init__(self) -> None:
        self.inflight: dict[str, int] = {}
        self.waiters: list[asyncio.Future[None]] = []

    def release(self, url: str) -> None:
        self.inflight[url] -= 1
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:  # everyone looks again: a freed slot may suit any of them
            if not waiter.done():
                waiter.set_result(None)


_STATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()


def _state() -> _LoopState:
    loop = asyncio.get_running_loop()
    state = _STATES.get(loop)
    if state is None:
        state = _STATES[loop] = _LoopState()
    return state


class EndpointPool:
    """The servers of one role, each with at most ``limit`` requests in flight (None: no limit)."""

    def __init__(self, urls: list[str], limit: int | None = None) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.urls = list(urls)
        self.limit = limit
        self._turn = itertools.count()

    def _pick(self, state: _LoopState, avoid: str | None) -> str | None:
        start = next(self._turn) % len(self.urls)
        order = self.urls[start:] + self.urls[:start]
        free = [u for u in order if self.limit is None or state.inflight.get(u, 0) < self.limit]
        if avoid is not None and len(free) > 1:
            free = [u for u in free if u != avoid] or free
        if not free:
            return None
        return min(free, key=lambda u: state.inflight.get(u, 0))  # min keeps the first of equals

    @asynccontextmanager
    async def slot(self, avoid: str | None = None) -> AsyncIterator[str]:
        """A server URL with a free slot, held until the block ends; waits while every server is full."""
        state = _state()
        while True:
            url = self._pick(state, avoid)
            if url is not None:
                break
            waiter = asyncio.get_running_loop().create_future()
            state.waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in state.waiters:
                    state.waiters.remove(waiter)
        state.inflight[url] = state.inflight.get(url, 0) + 1
        try:
            yield url
        finally:
            state.release(url)

    def inflight(self, url: str) -> int:
        """Requests in flight to ``url`` now, from every pool of this loop."""
        return _state().inflight.get(url, 0)


class Route:
    """One request's way through a pool, attempt after attempt: each attempt holds a slot, the time it
    queued for one is taken out of the request's retry budget (``clock.exclude``), and a retry avoids
    the server the previous attempt failed on when another has room."""

    def __init__(self, pool: EndpointPool) -> None:
        self.pool = pool
        self.failed_on: str | None = None

    @asynccontextmanager
    async def attempt(self, clock: Any = None) -> AsyncIterator[str]:
        """A server URL with a free slot for one attempt (see :meth:`EndpointPool.slot`); ``clock`` is the
        request's ``retry.RequestClock``."""
        queued = time.monotonic()
        async with self.pool.slot(avoid=self.failed_on) as url:
            if clock is not None:
                clock.exclude(time.monotonic() - queued)  # waiting for a free slot is not the server failing
            try:
                yield url
            except BaseException:
                self.failed_on = url
                raise
