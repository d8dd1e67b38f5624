"""The one contract every model backend fulfils: a chat request in, text and usage out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..types import Message, TokenUsage

Role = Literal["generator", "solver"]


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
    json_mode: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LLMResponse:
    """The model's answer.

    ``finish_reason`` is ``stop``, ``length`` (truncated), ``content_filter`` or another
    provider string; ``text`` may be empty.
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
