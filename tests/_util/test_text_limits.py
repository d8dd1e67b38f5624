"""Every parser of model or user text stays linear on long, adversarial input.

A megabyte of text that defeats a backtracking regex (``^\\s*`` over a million newlines, a word a
million letters long before ``\\s*\\(``) or a start-by-start JSON scan (a million ``[1,``) used to
take minutes or hours, or crash; each case here must finish in a few seconds on a busy 2-core
machine (they take well under one on an idle one).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from spade_llm.fake import bank
from spade_llm.fake.model import FakeLLM, infer_role
from spade_llm.generator import MAX_ANSWER_CHARS, BadAnswer, extract_json
from spade_llm.kinds.induction import extract_code
from spade_llm.llm.base import LLMRequest
from spade_llm.types import Message

MB = 1_000_000
LIMIT_S = 5.0


def timed(fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = fn()
    took = time.perf_counter() - started
    assert took < LIMIT_S, f"took {took:.1f}s on 1 MB"
    return result


def reason(text: str) -> str:
    try:
        extract_json(text)
    except BadAnswer as e:
        assert len(e.detail.splitlines()) == 1 and len(e.detail) < 300
        return e.reason
    return "parsed"


@pytest.mark.parametrize(
    "text",
    [
        "{" * MB,
        "[" * MB,
        "[1," * (MB // 3),  # nesting far past the recursion limit
        '{"a' * (MB // 3),
        '{"a": "' + "x" * (MB - 10),  # a string that never ends
        "[" * 1000 + '"' + "x" * (MB - 2000),
        "{ " * (MB // 2),
        "```json\n" * (MB // 8),
        "```json\n[" + "1," * (MB // 2 - 10),
        "prose [note] {x} " * (MB // 17),
    ],
    ids=["braces", "brackets", "deep-list", "open-keys", "open-string", "nested-open-string", "spaced", "fences",
         "fenced-open-list", "prose"],
)  # fmt: skip
def test_extract_json_is_linear_on_adversarial_text(text):
    assert timed(lambda: reason(text)) in ("bad_json", "truncated")


def test_extract_json_caps_what_it_reads():
    assert timed(lambda: reason(" " * MAX_ANSWER_CHARS + "x")) == "too_long"
    assert reason('{"tasks": []}' + " " * (MAX_ANSWER_CHARS - 20)) == "parsed"


def test_extract_json_still_finds_json_after_prose_and_junk_starts():
    text = 'Sure! [1] {x} [note] here it is:\n```json\n{"tasks": [{"a": 1}]}\n```\n'
    assert extract_json(text) == {"tasks": [{"a": 1}]}
    assert extract_json("{x} [y] " * 1000 + '{"tasks": []}') == {"tasks": []}


@pytest.mark.parametrize(
    "text",
    [
        "```" * (MB // 3),
        "``` " + " " * MB,
        "```py\n" * (MB // 6),
        "\n" * MB + "x",
        " \n" * (MB // 2) + "x",
        "def " * (MB // 4),
        "```python\n" + "x = 1\n" * (MB // 6),
    ],
    ids=["fences", "spaces-after-fence", "py-fences", "newlines", "blank-lines", "defs", "open-block"],
)
def test_extract_code_is_linear_on_adversarial_text(text):
    assert isinstance(timed(lambda: extract_code(text)), str)


def test_extract_code_keeps_its_rules():
    assert extract_code("a\n```python\ndef f(): pass\n```\nb\n```\nx\n```") == "def f(): pass\n"
    assert extract_code("```\nlast\n```") == "last\n"
    assert extract_code("\n\n  def f(x):\n    return x") == "  def f(x):\n    return x\n"
    assert extract_code("no code here") == ""
    assert extract_code("```py\nopen to the end") == "open to the end\n"


def _variant_statement() -> tuple[bank.Variant, str, str]:
    variant = bank.VARIANTS[0]
    entry_point = variant.entry_points[0]
    return variant, entry_point, variant.statement(0, entry_point, 0)


@pytest.mark.parametrize(
    "kind",
    ["one-word", "calls", "backticked-calls", "all-entry-points", "numbered-steps", "examples", "statement-far-in"],
)
def test_identify_is_linear_on_a_megabyte(kind):
    variant, entry_point, statement = _variant_statement()
    names = " ".join(f"{name}(" for name in bank.entry_point_index())
    text = {
        "one-word": "a" * MB,
        "calls": "f(" * (MB // 2),
        "backticked-calls": f"`{entry_point}(" * (MB // (len(entry_point) + 2)),
        "all-entry-points": names + " x" * (MB // 2),
        "numbered-steps": "1. 2. 3. 4. " * (MB // 12),
        "examples": statement.replace("the", "teh") + f" `{entry_point}(1)` returns `2`" * (MB // 30),
        "statement-far-in": "x " * (MB // 2) + statement,
    }[kind]
    found = timed(lambda: bank.identify(text))
    if kind == "statement-far-in":
        assert found is not None and found.variant.key == variant.key and found.exact


def _solve(*contents: str) -> str:
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=c) for i, c in enumerate(contents)]
    response = asyncio.run(FakeLLM("default", seed=0).complete(LLMRequest(messages=messages, role="solver")))
    return response.text


@pytest.mark.parametrize(
    "description",
    [
        "Write `add(a, b)` that adds. " + "x" * MB,
        "def f(" * (MB // 6),
        "\n" * MB,
        "a" * MB,
        "padding " * (MB // 16) + _variant_statement()[2] + " padding" * (MB // 16),
    ],
    ids=["prose", "open-defs", "newlines", "one-word", "bank-task-in-padding"],
)
def test_fake_solver_answers_a_megabyte_description_quickly(description):
    assert "def " in timed(lambda: _solve(description))


def test_fake_solver_repair_turn_on_megabyte_answers():
    _, entry_point, statement = _variant_statement()
    assert timed(lambda: _solve(statement, "\n" * MB, "fix it: " + f"{entry_point} " * (MB // 10)))
    assert timed(lambda: _solve(statement, "def f(" * (MB // 6), "```\n" * (MB // 4)))


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("assistant", "\n" * MB + "x"),
        ("assistant", " \n" * (MB // 2)),
        ("assistant", "```" + " " * MB),
        ("user", "def " * (MB // 4)),
        ("user", "`a(" * (MB // 3)),
        ("user", "a" * MB),
    ],
    ids=["newlines", "blank-lines", "open-fence", "defs", "backticks", "one-word"],
)
def test_fake_role_inference_is_linear(role, content):
    assert timed(lambda: infer_role([Message(role="user", content="task"), Message(role=role, content=content)]))
