"""The scripted and function-driven fakes used for exact transcript tests."""

from __future__ import annotations

import pytest

from spade_llm.errors import LLMCallError
from spade_llm.fake.scripted import FunctionLLM, ScriptedLLM, ScriptExhausted
from spade_llm.llm.base import LLM, LLMRequest, LLMResponse
from spade_llm.types import Message, TokenUsage


def request(text: str, role: str = "solver") -> LLMRequest:
    return LLMRequest(messages=[Message(role="user", content=text)], role=role)  # type: ignore[arg-type]


async def test_scripted_llm_replies_in_order_and_records_every_call() -> None:
    canned = LLMResponse(text="cut", usage=TokenUsage(prompt_tokens=1, completion_tokens=1), finish_reason="length")
    llm = ScriptedLLM(["first", canned, LLMCallError("down", kind="server_error"), TimeoutError], model="m")
    assert isinstance(llm, LLM) and llm.model == "m" and llm.remaining == 4

    first = await llm.complete(request("a", role="generator"))
    assert first.text == "first" and first.model == "m" and first.usage.completion_tokens > 0
    assert await llm.complete(request("b")) is canned
    with pytest.raises(LLMCallError, match="down"):
        await llm.complete(request("c"))
    with pytest.raises(TimeoutError):
        await llm.complete(request("d"))

    assert [c.messages[0].content for c in llm.calls] == ["a", "b", "c", "d"]
    assert llm.calls[0].role == "generator"
    llm.assert_complete()


async def test_scripted_llm_fails_loudly_when_it_runs_out_or_is_left_unused() -> None:
    llm = ScriptedLLM(["only"])
    await llm.complete(request("one"))
    with pytest.raises(ScriptExhausted, match=r"request #2 .*only 1 replies.*'two'"):
        await llm.complete(request("two"))
    assert isinstance(ScriptExhausted("x"), AssertionError)

    unused = ScriptedLLM(["a", "b"])
    await unused.complete(request("x"))
    with pytest.raises(AssertionError, match="1 of 2 scripted replies were never requested"):
        unused.assert_complete()


async def test_function_llm_accepts_sync_and_async_functions() -> None:
    sync = FunctionLLM(lambda r: r.messages[-1].content.upper())
    assert (await sync.complete(request("echo"))).text == "ECHO"
    assert sync.model == "function" and len(sync.calls) == 1

    async def answer(r: LLMRequest) -> LLMResponse:
        return LLMResponse(text=f"{r.role}:{len(r.messages)}", finish_reason="stop")

    asynchronous = FunctionLLM(answer, model="fn")
    assert (await asynchronous.complete(request("x", role="generator"))).text == "generator:1"
    assert asynchronous.calls[0].role == "generator"


async def test_function_llm_propagates_errors_and_rejects_bad_replies() -> None:
    def broken(r: LLMRequest) -> str:
        raise LLMCallError("rate limited", kind="rate_limit")

    with pytest.raises(LLMCallError):
        await FunctionLLM(broken).complete(request("x"))
    with pytest.raises(TypeError, match="str or LLMResponse"):
        await FunctionLLM(lambda r: 42).complete(request("x"))  # type: ignore[arg-type,return-value]
