"""``spade import apps`` and ``spade import taco``: APPS (codeparrot/apps) and TACO (BAAI/TACO) problems,
which share one shape.

A row holds ``question``, ``solutions`` (JSON text: a list of Python programs, or ``""``),
``input_output`` (JSON text: ``inputs``, ``outputs`` and, for a function problem, ``fn_name``),
``starter_code`` and ``difficulty``; APPS adds ``problem_id`` and ``url``, TACO its ``time_limit``
(``"1 second"``), ``source``, ``tags``, ``skill_types`` and more. Without ``fn_name`` a problem is a
``program`` task: each input is its stdin and each output its stdout (a list of lines is joined with
newlines, as APPS's harness joins it). With ``fn_name`` it is an ``induction`` task on that function:
each input is the list of arguments, each output the return value, which the published files wrap in
a one-element list (unwrapped here). A function problem whose starter code is ``class Solution`` is
left out, counted: LiveCodeBench's are judged as its harness judges them (``entry_class``), but
APPS's harness calls them its own way, which is not followed yet.

No test is shown apart from the question (``public_tests`` 0): the question itself carries APPS's
examples. The reference is the first solution that compiles (defining ``fn_name`` for a function
problem); a problem without one is judge-only. A row with an empty ``input_output`` (APPS's train
split has some) is left out, counted.
"""

from __future__ import annotations

import re
from typing import Any

from ..kinds.induction import KIND as FUNCTION
from ..kinds.program import KIND as PROGRAM
from ..sandbox.runner import parse_input
from ..sandbox.verdict import json_exact
from ..types import Task, TestCase
from .fields import (
    CLASS_SOLUTION,
    NO_TESTS,
    LeftOut,
    bad,
    decoded,
    first_compiling,
    make_task,
    optional,
    required,
    text,
    unique_tests,
)
from .rows import Row

__all__ = ["task_of"]

DIFFICULTY = {
    "introductory": 0.25, "interview": 0.5, "competition": 0.75,  # APPS
    "EASY": 0.2, "MEDIUM": 0.35, "MEDIUM_HARD": 0.5, "HARD": 0.7, "VERY_HARD": 0.9,  # TACO
}  # fmt: skip
"""Each published difficulty as a task's 0..1 (another, TACO's ``UNKNOWN_DIFFICULTY`` included, is 0.5)."""
TACO_META = ("name", "source", "tags", "skill_types", "raw_tags", "time_limit", "memory_limit", "date")
"""TACO's fields kept in ``meta`` as published (its ``source`` as ``meta.site``)."""
_SECONDS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)\b", re.I)


def task_of(row: Row, source: str) -> Task | LeftOut:
    """The row as a task of ``source`` (``apps`` or ``taco``), or why it is left out."""
    io = decoded(row, "input_output", required(row, "input_output"))
    if not io:
        return LeftOut(NO_TESTS)
    if not isinstance(io, dict):
        raise bad(row, "input_output", f"a JSON {type(io).__name__}, not an object with inputs and outputs")
    fn_name = io.get("fn_name")
    if fn_name is not None and not isinstance(fn_name, str):
        raise bad(row, "input_output.fn_name", "not a string")
    starter = text(row, "starter_code", default="")
    if fn_name and "class Solution" in starter:  # APPS's own harness tells a method apart the same way
        return LeftOut(CLASS_SOLUTION)
    tests, repeats = unique_tests(_tests(row, io, fn_name))
    if not tests:
        return LeftOut(NO_TESTS)
    solutions = _solutions(row)
    chosen = first_compiling(solutions, fn_name or "")
    native_id = optional(row, "problem_id")
    own_id = native_id if native_id is not None else row.index  # TACO has no id of its own: its row's place
    difficulty = text(row, "difficulty", default="")
    meta: dict[str, Any] = {
        "problem_id": own_id,
        "difficulty": difficulty or None,
        "url": optional(row, "url"),
        "solutions": len(solutions),
        "reference_solution": chosen,
        "tests": {"total": len(tests) + repeats, "repeated_dropped": repeats},
        **{("site" if k == "source" else k): row.data[k] for k in TACO_META if row.data.get(k)},
    }
    return make_task(
        row,
        task_id=f"{source}/{own_id}",
        kind=FUNCTION.name if fn_name else PROGRAM.name,
        description=_description(text(row, "question"), starter),
        entry_point=fn_name or "",
        reference_code="" if chosen is None else solutions[chosen],
        tests=tests,
        public_tests=0,
        time_limit_s=_seconds(row.data.get("time_limit")),
        difficulty=DIFFICULTY.get(difficulty, 0.5),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _tests(row: Row, io: dict[str, Any], fn_name: str | None) -> list[TestCase]:
    """``input_output``'s tests: calls of ``fn_name`` when it is set, else stdin and stdout."""
    inputs, outputs = io.get("inputs"), io.get("outputs")
    for name, value in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(value, list):
            raise bad(row, f"input_output.{name}", "missing" if value is None else "not a list")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    if len(inputs) != len(outputs):
        raise bad(row, "input_output.outputs", f"{len(outputs)} outputs for {len(inputs)} inputs")
    return _function_tests(row, inputs, outputs) if fn_name else _stdio_tests(row, inputs, outputs)


def _description(question: str, starter: str) -> str:
    """The question, and the starter code when there is some (a function's name and signature)."""
    return question + (f"\n\nStarter code:\n```python\n{starter.rstrip()}\n```\n" if starter.strip() else "")


def _solutions(row: Row) -> list[str]:
    value = decoded(row, "solutions", optional(row, "solutions"))
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise bad(row, "solutions", "not a JSON list of programs")
    return value


def _lines(row: Row, field: str, value: Any) -> str:
    """A stdin or stdout text: a string, or a list of lines joined with newlines (APPS's harness joins them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise bad(row, field, "neither a string nor a list of lines")


def _stdio_tests(row: Row, inputs: list[Any], outputs: list[Any]) -> list[TestCase]:
    return [
        TestCase(
            input=_lines(row, f"input_output.inputs[{i}]", given),
            expected=_lines(row, f"input_output.outputs[{i}]", wanted),
        )
        for i, (given, wanted) in enumerate(zip(inputs, outputs, strict=True))
    ]


def _function_tests(row: Row, inputs: list[Any], outputs: list[Any]) -> list[TestCase]:
    tests = []
    for i, (args, wanted) in enumerate(zip(inputs, outputs, strict=True)):
        where = f"input_output.inputs[{i}]"
        if not isinstance(args, list):
            raise bad(row, where, "a function test's input is the list of its arguments")
        if not json_exact(args):
            raise bad(row, where, "holds a number that is not finite")
        literal = repr(tuple(args))
        parsed = parse_input(literal)
        if isinstance(parsed, str):
            raise bad(row, where, f"cannot be written as Python arguments: {parsed}")
        expected = wanted[0] if isinstance(wanted, list) and len(wanted) == 1 else wanted  # the wrapped return
        if not json_exact(expected):
            raise bad(row, f"input_output.outputs[{i}]", "holds a number that is not finite")
        tests.append(TestCase(input=literal, expected=expected))
    return tests


def _seconds(value: Any) -> float | None:
    """TACO's ``time_limit`` (``"1 second"``, ``"2.5 seconds"``) in seconds; None when it says none."""
    match = _SECONDS.match(value) if isinstance(value, str) else None
    seconds = float(match.group(1)) if match else 0.0
    return seconds if seconds > 0 else None
