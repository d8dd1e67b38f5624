"""Small asyncio helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

__all__ = ["wait_unless_failed"]


async def wait_unless_failed(waiting: Awaitable[Any], task: asyncio.Task[Any]) -> None:
    """Wait for ``waiting``, unless ``task`` ends first: then its failure is raised here (a task that
    ended well returns)."""
    waiter = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done() and not waiter.done():
        task.result()
