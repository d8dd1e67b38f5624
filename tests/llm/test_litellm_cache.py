"""CachedLLM: a re-run answers from disk; failures and empty answers are never stored."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import respx

from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.errors import LLMCallError
from spade_llm.llm.base import LLM, LLMRequest, LLMResponse
from spade_llm.llm.cache import CachedLLM, cache_key
from spade_llm.llm.litellm import LiteLLM
from spade_llm.llm.stats import LLMStats
from spade_llm.types import Message, TokenUsage


class Counting:
    """An LLM that counts calls; answers with a counter so a second real call would be visible."""

    def __init__(self, text: str = "answer", fail: int = 0, delay: float = 0.0) -> None:
        self.model = "openai/m"
        self.calls = 0
        self.text = text
        self.fail = fail
        self.delay = delay

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.calls <= self.fail:
            raise LLMCallError("boom", kind="server_error")
        return LLMResponse(
            text=f"{self.text}-{self.calls}" if self.text else "",
            finish_reason="stop",
            usage=TokenUsage(prompt_tokens=5, completion_tokens=2, cost=0.5),
            model=self.model,
        )


def req(content: str = "hi", **kw: object) -> LLMRequest:
    return LLMRequest(messages=[Message(role="user", content=content)], role="solver", **kw)  # type: ignore[arg-type]


async def test_second_identical_request_is_served_from_disk(tmp_path: Path) -> None:
    inner = Counting()
    cached = CachedLLM(inner, tmp_path / "cache")
    assert isinstance(cached, LLM)
    first = await cached.complete(req(seed=1))
    again = await CachedLLM(Counting(), tmp_path / "cache").complete(req(seed=1))  # a new process, same folder
    assert inner.calls == 1
    assert again.text == first.text == "answer-1"
    assert again.usage.prompt_tokens == 5 and again.usage.cost == 0.0  # same tokens, no cost this time
    assert first.usage.cost == 0.5
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["text"] == "answer-1"


def test_key_covers_what_decides_the_answer_and_nothing_else() -> None:
    base = req(seed=1, temperature=0.5, max_tokens=100)
    key = cache_key("openai/m", base)
    for changed in [
        dataclasses.replace(base, seed=2),
        dataclasses.replace(base, temperature=0.6),
        dataclasses.replace(base, max_tokens=101),
        dataclasses.replace(base, response_format="json_object"),
        dataclasses.replace(base, messages=[Message(role="user", content="hi!")]),
    ]:
        assert cache_key("openai/m", changed) != key
    assert cache_key("openai/other", base) != key
    assert cache_key("openai/m", dataclasses.replace(base, metadata={"turn": 3}, role="generator")) == key


async def test_failures_and_empty_answers_are_not_cached(tmp_path: Path) -> None:
    inner = Counting(fail=1)
    cached = CachedLLM(inner, tmp_path)
    with pytest.raises(LLMCallError):
        await cached.complete(req())
    assert (await cached.complete(req())).text == "answer-2"  # asked again, not a stored failure
    empty = Counting(text="")
    cached_empty = CachedLLM(empty, tmp_path / "e")
    await cached_empty.complete(req())
    await cached_empty.complete(req())
    assert empty.calls == 2


async def test_identical_requests_in_flight_share_one_call(tmp_path: Path) -> None:
    inner = Counting(delay=0.1)
    cached = CachedLLM(inner, tmp_path)
    answers = await asyncio.gather(*(cached.complete(req()) for _ in range(8)), cached.complete(req("other")))
    assert inner.calls == 2
    assert {a.text for a in answers[:8]} == {answers[0].text}
    assert (cached.hits, cached.misses) == (7, 2)


async def test_shared_failure_reaches_every_waiter(tmp_path: Path) -> None:
    inner = Counting(fail=1, delay=0.05)
    cached = CachedLLM(inner, tmp_path)
    results = await asyncio.gather(*(cached.complete(req()) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, LLMCallError) for r in results)
    assert inner.calls == 1


async def test_damaged_entry_is_a_miss_and_gets_rewritten(tmp_path: Path) -> None:
    inner = Counting()
    cached = CachedLLM(inner, tmp_path)
    path = cached.path_for(cache_key(inner.model, req()))
    path.parent.mkdir(parents=True)
    path.write_text('{"text": "half')
    assert (await cached.complete(req())).text == "answer-1"
    assert json.loads(path.read_text())["text"] == "answer-1"
    assert not list(tmp_path.rglob("*.tmp"))


async def test_unwritable_cache_does_not_fail_the_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = CachedLLM(Counting(), tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("spade_llm.llm.cache.tempfile.mkstemp", refuse)
    assert (await cached.complete(req())).text == "answer-1"


async def test_a_rerun_through_litellm_sends_no_request(
    tmp_path: Path, allow_model_requests: str, openai_response: Callable[..., httpx.Response]
) -> None:
    stats = LLMStats()
    with respx.mock() as mock:
        route = mock.post("http://127.0.0.1:9/v1/chat/completions").mock(return_value=openai_response("from the wire"))
        for _ in range(2):  # two "runs"
            llm = CachedLLM(
                LiteLLM(RoleConfig(model="openai/m", api_base="http://127.0.0.1:9/v1"), LLMConfig(), stats=stats),
                tmp_path,
            )
            assert (await llm.complete(req(seed=7))).text == "from the wire"
    assert route.call_count == 1
    assert stats.summary()["requests"] == 1
