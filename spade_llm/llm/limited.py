"""``LimitedLLM``: one limit on requests in flight, shared by the roles that use one slot pool."""

from __future__ import annotations

import asyncio

from .base import LLM, LLMRequest, LLMResponse


class LimitedLLM:
    """An LLM wrapper sharing one limit on requests in flight between generator and solver."""

    def __init__(self, llm: LLM, slots: asyncio.Semaphore) -> None:
        self.llm = llm
        self.model = llm.model
        self._slots = slots
        self.inflight = 0
        """Requests sent and not answered yet (what the progress block shows)."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        async with self._slots:
            self.inflight += 1
            try:
                return await self.llm.complete(request)
            finally:
                self.inflight -= 1
