"""``spade import lcb``: LiveCodeBench (livecodebench/code_generation_lite) problems as ``program`` tasks,
from its own rows or from SandboxFusion's ``live_code_bench`` samples.

A LiveCodeBench row: ``question_title``, ``question_content``, ``platform``, ``question_id``,
``contest_id``, ``contest_date``, ``starter_code``, ``difficulty``, ``public_test_cases`` (JSON text: a
list of ``{"input", "output", "testtype"}``), ``private_test_cases`` (the same JSON text, or, in the
later releases, that text pickled, zlib-compressed and base64-encoded: ``packed.unpack`` reads it
without unpickling any object) and ``metadata`` (JSON text; ``func_name`` for LeetCode).

A test's ``testtype`` is ``stdin`` (Codeforces, AtCoder: input on stdin, output on stdout) or
``functional`` (LeetCode: a method of ``class Solution`` called on JSON arguments). Stdin problems
become ``program`` tasks, public tests shown first (``public_tests`` counts them), private ones
hidden. A functional problem is left out, counted: its answer is a method no kind calls, and
LiveCodeBench's harness also gives it names (``List``, ``math``...) without an import, so no existing
kind judges it as LiveCodeBench does. LiveCodeBench publishes no solutions: every task is judge-only.

SandboxFusion's sample: ``id``, ``content`` (a prompt whose question sits between ``### Question:`` and
``### Format:``), ``labels`` (JSON text: ``task_id``, ``difficulty``...) and ``test`` (packed: a dict whose
``input_output`` is JSON text of ``inputs``, ``outputs`` and ``fn_name``; no split, so every test is
hidden). Its ``canonical_solution`` is a placeholder that prints nothing: not a reference.
"""

from __future__ import annotations

import re
from typing import Any

from ..kinds.program import KIND as PROGRAM
from ..types import Task, TestCase
from .fields import (
    CLASS_SOLUTION,
    NO_TESTS,
    LeftOut,
    bad,
    decoded,
    make_task,
    optional,
    required,
    stdio_test,
    stdio_tests,
    text,
    unique_tests,
)
from .packed import PackedError, unpack
from .rows import Row

__all__ = ["task_of"]

DIFFICULTY = {"easy": 0.25, "medium": 0.5, "hard": 0.75}
TEST_TYPES = ("stdin", "functional")
_QUESTION = re.compile(r"### Question:\n(.*?)\n\n### Format:", re.S)


def task_of(row: Row, source: str) -> Task | LeftOut:
    """The row (LiveCodeBench's own, or SandboxFusion's sample) as a task, or why it is left out."""
    if "content" in row.data and "test" in row.data:
        return _sandbox_fusion_task(row, source)
    return _native_task(row, source)


def _native_task(row: Row, source: str) -> Task | LeftOut:
    question_id = required(row, "question_id")
    if not isinstance(question_id, (str, int)) or isinstance(question_id, bool):
        raise bad(row, "question_id", "not a string")
    public = _cases(row, "public_test_cases", decoded(row, "public_test_cases", required(row, "public_test_cases")))
    private = _cases(row, "private_test_cases", _private_cases(row))
    if any(kind == "functional" for kind, _ in public + private):
        return LeftOut(CLASS_SOLUTION)
    shown = unique_tests([t for _, t in public])[0]
    tests, repeats = unique_tests([t for _, t in public + private])
    if not tests:
        return LeftOut(NO_TESTS)
    starter = text(row, "starter_code", default="")
    description = text(row, "question_content")
    if starter.strip():
        description += f"\n\nStarter code:\n```python\n{starter.rstrip()}\n```\n"
    difficulty = text(row, "difficulty", default="")
    meta = {
        "question_id": question_id,
        "question_title": optional(row, "question_title"),
        "platform": optional(row, "platform"),
        "contest_id": optional(row, "contest_id"),
        "contest_date": optional(row, "contest_date"),
        "difficulty": difficulty,
        "tests": {"public": len(public), "private": len(private), "repeated_dropped": repeats},
    }
    return make_task(
        row,
        task_id=f"{source}/{question_id}",
        kind=PROGRAM.name,
        description=description,
        entry_point="",
        reference_code="",  # LiveCodeBench publishes no solution: judge-only
        tests=tests,
        public_tests=len(shown),
        difficulty=DIFFICULTY.get(difficulty.lower(), 0.5),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _private_cases(row: Row) -> Any:
    """``private_test_cases`` decoded: JSON text, or that text packed (base64 of zlib of a pickle)."""
    value = required(row, "private_test_cases")
    if not isinstance(value, str) or value.lstrip()[:1] in ("[", ""):
        return decoded(row, "private_test_cases", value)
    try:
        inner = unpack(value.strip())
    except PackedError as e:
        raise bad(row, "private_test_cases", f"neither JSON nor packed tests: {e}") from None
    if not isinstance(inner, str):
        raise bad(row, "private_test_cases", f"the packed value is a {type(inner).__name__}, not JSON text")
    return decoded(row, "private_test_cases", inner)


def _cases(row: Row, field: str, value: Any) -> list[tuple[str, TestCase]]:
    """(testtype, test) of each ``{"input", "output", "testtype"}`` of a list (null or blank: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(row, field, f"a {type(value).__name__}, not a list of tests")
    out = []
    for i, case in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(case, dict):
            raise bad(row, where, 'not {"input", "output", "testtype"}')
        kind = case.get("testtype")
        if kind not in TEST_TYPES:
            raise bad(row, f"{where}.testtype", f"{kind!r}, not one of {', '.join(TEST_TYPES)}")
        out.append((kind, stdio_test(row, where, case.get("input"), case.get("output"))))
    return out


# -- SandboxFusion's samples ----------------------------------------------------------------------------


def _sandbox_fusion_task(row: Row, source: str) -> Task | LeftOut:
    labels = decoded(row, "labels", optional(row, "labels")) or {}
    if not isinstance(labels, dict):
        raise bad(row, "labels", "not an object")
    native_id = labels.get("task_id", required(row, "id"))
    if not isinstance(native_id, (int, str)) or isinstance(native_id, bool):
        raise bad(row, "labels.task_id", "not a string")
    io = _sandbox_fusion_io(row)
    if io.get("fn_name") is not None:
        return LeftOut(CLASS_SOLUTION)
    tests, repeats = unique_tests(_io_tests(row, io))
    if not tests:
        return LeftOut(NO_TESTS)
    content = text(row, "content")
    question = _QUESTION.search(content)
    named = labels.get("difficulty")
    difficulty = named if isinstance(named, str) else ""
    meta = {
        "sandbox_fusion_id": optional(row, "id"),
        "platform": labels.get("category"),
        "difficulty": difficulty,
        "tests": {"total": len(tests) + repeats, "repeated_dropped": repeats},
    }
    return make_task(
        row,
        task_id=f"{source}/{native_id}",
        kind=PROGRAM.name,
        description=question.group(1) if question else content,
        entry_point="",
        reference_code="",  # its canonical_solution is a placeholder that prints nothing
        tests=tests,
        public_tests=0,
        difficulty=DIFFICULTY.get(difficulty.lower(), 0.5),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _sandbox_fusion_io(row: Row) -> dict[str, Any]:
    """``test`` decoded: packed (or plain JSON text) ``{"input_output": JSON text}``, that text parsed."""
    value = required(row, "test")
    if isinstance(value, str) and value.lstrip()[:1] not in ("{", ""):
        try:
            value = unpack(value.strip())
        except PackedError as e:
            raise bad(row, "test", f"neither JSON nor packed tests: {e}") from None
    value = decoded(row, "test", value)
    io = value.get("input_output") if isinstance(value, dict) else None
    io = decoded(row, "test.input_output", io)
    if not isinstance(io, dict):
        raise bad(row, "test.input_output", "not an object with inputs and outputs")
    return io


def _io_tests(row: Row, io: dict[str, Any]) -> list[TestCase]:
    return stdio_tests(row, "test.input_output", io.get("inputs"), io.get("outputs"), ("inputs", "outputs"))
