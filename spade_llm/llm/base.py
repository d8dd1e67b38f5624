"""The one contract every model backend fulfils: a chat request in, text and usage out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..types import Message, TokenUsage

Role = Literal["generator", "solver"]
ResponseFormat = Literal["text", "json_object", "json_schema"]

TRUNCATED = frozenset({"length", "answer_cap"})
"""``finish_reason`` values of an answer that was cut off: ``length`` (``max_tokens`` reached) and
``answer_cap`` (``llm.answer_timeout_s`` ran out while the answer streamed)."""


@dataclass(frozen=True)
class LLMRequest:
    """One chat completion request.

    ``role`` and ``metadata`` describe where the request comes from (epoch, task id, turn):
    providers may forward them (the fake model uses them); they never change the prompt.
    """

    messages: list[Message]
    role: Role
    temperature: float = 0.7
    max_tokens: int = 2048
    seed: int | None = None
    response_format: ResponseFormat = "text"
    """``json_object`` asks for any JSON object, ``json_schema`` for one matching ``json_schema``
    (servers enforce both by grammar); ``text`` sends no ``response_format``."""
    json_schema: dict[str, Any] | None = None
    """The schema sent with ``response_format="json_schema"`` (OpenAI's ``{"name", "schema"}`` form)."""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def json_mode(self) -> bool:
        """Whether the answer is asked to be JSON (either form)."""
        return self.response_format != "text"


@dataclass(frozen=True)
class LLMResponse:
    """The model's answer.

    ``finish_reason`` is ``stop``, ``length`` (truncated by ``max_tokens``), ``answer_cap`` (cut by
    ``llm.answer_timeout_s``), ``content_filter`` or another provider string; ``text`` may be empty.
    """

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str = "stop"
    model: str = ""


@runtime_checkable
class LLM(Protocol):
    """A chat model.

    ``complete`` is the only verb. It raises ``LLMCallError`` when the endpoint fails for good
    (after whatever retries the provider does) and returns any answer it got, however bad:
    judging the text is the caller's job.
    """

    model: str

    async def complete(self, request: LLMRequest) -> LLMResponse: ...
