"""The one contract every model backend fulfils: a chat request in, text and usage out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .._util.text import clean_text
from ..types import Message, TokenUsage

Role = Literal["generator", "solver"]
ResponseFormat = Literal["text", "json_object", "json_schema"]

TRUNCATED = frozenset({"length", "answer_cap"})
"""``finish_reason`` values of an answer that was cut off: ``length`` (``max_tokens`` reached) and
``answer_cap`` (``llm.answer_timeout_s`` ran out while the answer streamed)."""


def _clean_message(message: Message) -> Message:
    """``message`` itself, or a copy whose content holds no lone surrogate (see ``spade_llm._util.text``)."""
    content = getattr(message, "content", None)
    if not isinstance(content, str):
        return message
    cleaned = clean_text(content)
    return message if cleaned is content else message.model_copy(update={"content": cleaned})


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

    def __post_init__(self) -> None:
        # a prompt can carry text holding a lone surrogate (a task decoded from a model's JSON escape
        # "\ud800"): cleaned here, so no provider's request body or cache key fails to encode
        cleaned = [_clean_message(m) for m in self.messages]
        if any(c is not m for c, m in zip(cleaned, self.messages, strict=True)):
            object.__setattr__(self, "messages", cleaned)

    @property
    def json_mode(self) -> bool:
        """Whether the answer is asked to be JSON (either form)."""
        return self.response_format != "text"


@dataclass(frozen=True)
class LLMResponse:
    """The model's answer.

    ``finish_reason`` is ``stop``, ``length`` (truncated by ``max_tokens``), ``answer_cap`` (cut by
    ``llm.answer_timeout_s``), ``content_filter`` or another provider string; ``text`` may be empty.

    Every answer of every provider (the fakes and the cache included) is built here, so this is where
    model text enters: on construction a lone surrogate in ``text`` (a JSON ``"\\ud800"``) becomes
    U+FFFD and a pair (its halves streamed in two chunks) the character it spells, so every later
    write of it encodes (:func:`spade_llm._util.text.clean_text`; free for ASCII).
    """

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str = "stop"
    model: str = ""
    served_model: str = ""
    """The model the server says answered (the body's ``model``: vLLM's served name, Ollama's tag, OpenAI's
    dated snapshot); '' when it said none."""
    system_fingerprint: str = ""
    """The server's ``system_fingerprint`` (OpenAI's backend configuration, llama.cpp's build); '' when none."""

    def __post_init__(self) -> None:
        for name in ("text", "finish_reason", "model", "served_model", "system_fingerprint"):
            value = getattr(self, name)
            if isinstance(value, str):
                cleaned = clean_text(value)
                if cleaned is not value:
                    object.__setattr__(self, name, cleaned)


@runtime_checkable
class LLM(Protocol):
    """A chat model.

    ``complete`` is the only verb. It raises ``LLMCallError`` when the endpoint fails for good
    (after whatever retries the provider does) and returns any answer it got, however bad:
    judging the text is the caller's job.
    """

    model: str

    async def complete(self, request: LLMRequest) -> LLMResponse: ...
