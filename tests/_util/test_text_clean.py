"""Text that never breaks a run: a lone surrogate becomes U+FFFD where model text enters.

A lone surrogate (JSON ``"\\ud800"``) is the one kind of ``str`` content UTF-8 cannot encode. The unit
tests pin ``spade_llm._util.text``; the provider tests feed one through each way an answer comes back (a JSON
body, a stream whose chunks split a surrogate pair, litellm, the cache, the scripted fakes) and into a
prompt. ``test_text_clean_cli.py`` runs ``solve``, ``export`` and ``report`` on such text end to end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from hypothesis import given
from hypothesis import strategies as st

from spade_llm._util.text import REPLACEMENT, clean_data, clean_text, json_loads, to_utf8
from spade_llm.config import LLMConfig, RoleConfig
from spade_llm.fake.scripted import FunctionLLM, ScriptedLLM
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.cache import CachedLLM, cache_key
from spade_llm.llm.openai_http import OpenAIHTTP, parse_completion_body
from spade_llm.llm.stats import LLMStats
from spade_llm.types import Message

LONE = "\ud800"
SMILE = "\U0001f600"
HIGH, LOW = "\ud83d", "\ude00"  # SMILE as a UTF-16 pair
BASE = "http://127.0.0.1:9/v1"  # a closed port: only respx answers
URL = f"{BASE}/chat/completions"


def encodes(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def reference_clean(s: str) -> str:
    """What ``clean_text`` must give, written the slow, obvious way."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if "\ud800" <= c <= "\udbff" and i + 1 < len(s) and "\udc00" <= s[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(s[i + 1]) - 0xDC00)))
            i += 2
            continue
        out.append(REPLACEMENT if "\ud800" <= c <= "\udfff" else c)
        i += 1
    return "".join(out)


# any text, lone surrogates and pairs of halves included (hypothesis leaves surrogates out by default)
any_char = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr), st.sampled_from([HIGH, LOW, "a", "é"]))
any_text = st.text(alphabet=any_char, max_size=60)


# -- spade_llm._util.text ------------------------------------------------------------------------------


@given(any_text)
def test_clean_text_always_encodes_and_is_idempotent(s: str) -> None:
    cleaned = clean_text(s)
    assert encodes(cleaned)
    assert clean_text(cleaned) == cleaned
    assert cleaned == reference_clean(s)


@given(st.text(max_size=200))
def test_encodable_text_is_returned_as_it_is(s: str) -> None:
    assert encodes(s)  # hypothesis' default alphabet has no surrogates
    assert clean_text(s) is s


def test_each_lone_surrogate_becomes_one_replacement_and_a_pair_its_character() -> None:
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\udfff\ud800") == "\ufffd\ufffd"  # a low then a high is no pair
    assert clean_text(f"x{HIGH}") == "x\ufffd"
    assert clean_text(f"{HIGH}{LOW}!") == f"{SMILE}!"  # halves that arrived apart (two streamed chunks)
    assert clean_text(f"{HIGH}x{LOW}") == "\ufffdx\ufffd"
    # U+FFFD, not deletion: nothing apart is joined, lengths and offsets stay
    assert clean_text("<scr\ud800ipt>") == "<scr\ufffdipt>"
    assert len(clean_text("ab\ud800cd\udc80")) == 6


@given(any_text)
def test_to_utf8_is_the_encoding_of_the_cleaned_text(s: str) -> None:
    assert to_utf8(s) == reference_clean(s).encode("utf-8")


def test_clean_data_cleans_keys_and_nested_values_and_keeps_the_rest() -> None:
    value = {"a\ud800": [LONE, ("x", 1, None, 2.5, True)], "n": {"deep": [{"s": f"{HIGH}{LOW}"}]}}
    assert clean_data(value) == {"a\ufffd": ["\ufffd", ("x", 1, None, 2.5, True)], "n": {"deep": [{"s": SMILE}]}}
    assert encodes(json.dumps(clean_data(value), ensure_ascii=False))


def test_json_loads_replaces_escaped_and_raw_surrogates() -> None:
    assert json_loads('{"t": "a\\ud800b"}') == {"t": "a\ufffdb"}
    assert json_loads(b'{"t": "a\\uDFFFb"}') == {"t": "a\ufffdb"}
    assert json_loads(b'["\xed\xa0\x80"]') == ["\ufffd"]  # ill-formed UTF-8 that json.loads lets through
    assert json_loads('["\\ud83d\\ude00"]') == [SMILE]  # an escaped pair is a character already
    assert json_loads('["\\\\ud800"]') == ["\\ud800"]  # an escaped backslash: six plain characters, kept
    assert json_loads('{"k": [1, "\\u001b[0m"]}') == {"k": [1, "\x1b[0m"]}
    with pytest.raises(ValueError):
        json_loads('{"t": ')


# -- where model text enters: every provider builds an LLMResponse --------------------------------


def test_an_answer_is_cleaned_when_it_is_built() -> None:
    answer = LLMResponse(text=f"code # {LONE}", finish_reason=f"stop{LONE}", model=f"m{LONE}")
    assert (answer.text, answer.finish_reason, answer.model) == ("code # \ufffd", "stop\ufffd", "m\ufffd")
    kept = "ordinary text, é and " + SMILE
    assert LLMResponse(text=kept).text is kept


def test_a_request_never_carries_a_lone_surrogate() -> None:
    clean = Message(role="system", content="be brief")
    request = LLMRequest(messages=[clean, Message(role="user", content=f"task {LONE}")], role="solver")
    assert [m.content for m in request.messages] == ["be brief", "task \ufffd"]
    assert request.messages[0] is clean
    cache_key("m", request)  # encodes: the key of such a request used to raise UnicodeEncodeError
    plain = [clean]
    assert LLMRequest(messages=plain, role="solver").messages is plain


async def test_scripted_and_function_fakes_answer_clean_text() -> None:
    request = LLMRequest(messages=[Message(role="user", content="hi")], role="solver")
    scripted = ScriptedLLM([f"a {LONE}", LLMResponse(text=f"b {LONE}")])
    assert (await scripted.complete(request)).text == "a \ufffd"
    assert (await scripted.complete(request)).text == "b \ufffd"
    assert (await FunctionLLM(lambda r: f"{HIGH}{LOW}{LONE}").complete(request)).text == f"{SMILE}\ufffd"


def _http(**llm: Any) -> OpenAIHTTP:
    config = LLMConfig(**{"max_retries": 1, "backoff_s": 0.01, "timeout_s": 5.0, **llm})
    return OpenAIHTTP(RoleConfig(model="openai/m", api_base=BASE), config, LLMStats(), max_connections=4)


def _request(content: str = "hi") -> LLMRequest:
    return LLMRequest(messages=[Message(role="user", content=content)], role="solver")


def test_a_json_body_with_an_escaped_surrogate() -> None:
    body = json.dumps({"choices": [{"message": {"content": f"x {LONE}"}, "finish_reason": "stop"}]}).encode()
    assert b"\\ud800" in body
    assert parse_completion_body(body, "application/json", "m").text == "x \ufffd"


async def test_a_stream_whose_chunks_split_a_pair_and_hold_a_lone_surrogate(allow_model_requests: str) -> None:
    chunks = [f"see {HIGH}", f"{LOW} and {LONE}"]
    events = "".join(
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': c}, 'finish_reason': None}]})}\n\n"
        for c in chunks
    )
    events += (
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\ndata: [DONE]\n\n"
    )
    llm = _http()
    with respx.mock() as mock:
        mock.post(URL).mock(
            return_value=httpx.Response(200, content=events.encode(), headers={"content-type": "text/event-stream"})
        )
        answer = await llm.complete(_request())
    await llm.aclose()
    assert answer.text == f"see {SMILE} and \ufffd"


async def test_a_prompt_holding_a_lone_surrogate_is_sent(allow_model_requests: str, openai_response: Any) -> None:
    llm = _http(stream=False)
    with respx.mock() as mock:
        route = mock.post(URL).mock(return_value=openai_response("ok"))
        answer = await llm.complete(_request(f"a task {LONE}"))
    await llm.aclose()
    assert answer.text == "ok"
    assert json.loads(route.calls[0].request.content)["messages"][0]["content"] == "a task \ufffd"


async def test_litellm_answers_are_cleaned(allow_model_requests: str) -> None:
    pytest.importorskip("litellm", reason="litellm is not installed")
    from spade_llm.llm.litellm import LiteLLM

    config = LLMConfig(max_retries=1, backoff_s=0.01, timeout_s=5.0)
    llm = LiteLLM(RoleConfig(model="openai/m", api_base=BASE), config, stats=LLMStats())
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"x {LONE}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    with respx.mock() as mock:
        mock.post(URL).mock(return_value=httpx.Response(200, content=json.dumps(body).encode()))
        answer = await llm.complete(_request(f"prompt {LONE}"))
    assert answer.text == "x \ufffd"


async def test_a_cache_entry_holding_an_escaped_surrogate_is_answered_clean(tmp_path: Path) -> None:
    inner = ScriptedLLM([f"first {LONE}"])
    cache = CachedLLM(inner, tmp_path)
    request = _request()
    assert (await cache.complete(request)).text == "first \ufffd"
    path = cache.path_for(cache_key(inner.model, request))
    assert json.loads(path.read_text(encoding="utf-8"))["text"] == "first \ufffd"  # stored encodable
    # an entry another tool (or an older version) wrote, holding an escaped lone surrogate
    entry = {"text": f"other {LONE}", "finish_reason": "stop", "model": "scripted", "usage": {}}
    path.write_text(json.dumps(entry), encoding="utf-8")
    again = await CachedLLM(ScriptedLLM([]), tmp_path).complete(request)
    assert again.text == "other \ufffd"
