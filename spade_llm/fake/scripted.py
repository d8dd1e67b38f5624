"""Fakes for exact transcript tests: a scripted model and a function-driven one.

Why: the deterministic ``fake/<profile>`` model is right for whole runs, but a test that checks a
precise conversation (this answer, then that repair prompt, then this verdict) wants to say exactly
what the model answers, and to look afterwards at every request it received. Both fakes here
satisfy the :class:`~spade_llm.llm.base.LLM` protocol and record each request in ``.calls``.

    llm = ScriptedLLM(["not json", '{"tasks": []}'])
    ...  # run the code under test
    llm.assert_complete()
    assert llm.calls[1].role == "generator"
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from ..llm.base import LLMRequest, LLMResponse
from ..types import TokenUsage

__all__ = ["FunctionLLM", "Reply", "ScriptExhausted", "ScriptedLLM"]

Reply = str | LLMResponse | BaseException | type[BaseException]
"""One scripted reply: text, a full response, or an exception (instance or class) to raise."""


class ScriptExhausted(AssertionError):
    """A scripted model was asked for more replies than its script holds."""


def _usage(request: LLMRequest, text: str) -> TokenUsage:
    prompt = sum(len(m.content) for m in request.messages)
    return TokenUsage(prompt_tokens=(prompt + 3) // 4, completion_tokens=(len(text) + 3) // 4)


def _as_response(reply: str | LLMResponse, request: LLMRequest, model: str) -> LLMResponse:
    if isinstance(reply, LLMResponse):
        return reply
    if isinstance(reply, str):
        return LLMResponse(text=reply, usage=_usage(request, reply), model=model)
    raise TypeError(f"a fake model's reply must be str or LLMResponse, got {type(reply).__name__}")


class ScriptedLLM:
    """Returns ``replies`` in order, one per request; an exception item is raised instead.

    Every request is appended to ``calls`` before it is answered (also the ones that raise).
    Asking past the end raises :class:`ScriptExhausted` (an ``AssertionError``) showing the last
    request, so a test that loops more often than it meant to fails loudly.
    """

    def __init__(self, replies: Sequence[Reply], model: str = "scripted") -> None:
        self.model = model
        self.replies: list[Reply] = list(replies)
        self.calls: list[LLMRequest] = []

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        return max(0, len(self.replies) - len(self.calls))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        index = len(self.calls)
        self.calls.append(request)
        if index >= len(self.replies):
            last = request.messages[-1].content if request.messages else ""
            raise ScriptExhausted(
                f"{self.model}: request #{index + 1} ({request.role}) but only {len(self.replies)} "
                f"replies were scripted; last message: {last[:200]!r}"
            )
        reply = self.replies[index]
        if isinstance(reply, BaseException) or (isinstance(reply, type) and issubclass(reply, BaseException)):
            raise reply
        return _as_response(reply, request, self.model)

    def assert_complete(self) -> None:
        """Fail unless every scripted reply was consumed."""
        if self.remaining:
            raise AssertionError(
                f"{self.model}: {self.remaining} of {len(self.replies)} scripted replies were never requested"
            )


class FunctionLLM:
    """Answers each request with ``fn(request)``, sync or async, returning text or a response.

    For tests whose answer depends on the prompt (e.g. echo the entry point back). Exceptions
    raised by ``fn`` propagate to the caller, as an endpoint failure would.
    """

    def __init__(
        self,
        fn: Callable[[LLMRequest], str | LLMResponse | Awaitable[str | LLMResponse]],
        model: str = "function",
    ) -> None:
        self.model = model
        self.fn = fn
        self.calls: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        reply = self.fn(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return _as_response(reply, request, self.model)
