"""``spade import lcb``: LiveCodeBench (livecodebench/code_generation_lite) problems as tasks, from its own
rows or from SandboxFusion's ``live_code_bench`` samples: whole programs, and LeetCode's methods.

A LiveCodeBench row: ``question_title``, ``question_content``, ``platform``, ``question_id``,
``contest_id``, ``contest_date``, ``starter_code``, ``difficulty``, ``public_test_cases`` (JSON text: a
list of ``{"input", "output", "testtype"}``), ``private_test_cases`` (the same JSON text, or, in the
later releases, that text pickled, zlib-compressed and base64-encoded: ``packed.unpack`` reads it
without unpickling any object) and ``metadata`` (JSON text; ``func_name`` for LeetCode).

A test's ``testtype`` is ``stdin`` (Codeforces, AtCoder: input on stdin, output on stdout) or
``functional`` (LeetCode: a method of ``class Solution`` called on JSON arguments). Stdin problems
become ``program`` tasks, public tests shown first (``public_tests`` counts them), private ones
hidden. A functional problem becomes an ``induction`` task judged as LiveCodeBench's harness judges it:
the answer is ``class Solution`` (``entry_class``), made once, and its method ``func_name``
(``entry_point``) is called on each test's arguments (its input's lines, one JSON value each); the
result, a tuple turned into a list, must be ``==`` the parsed output (``python_eq``,
``tuple_as_list``); and the answer runs after the harness's imports (``prelude``: ``from typing import
*``, ``from collections import *``..., so ``List`` needs no import). LiveCodeBench publishes no
solutions: every task is judge-only.

SandboxFusion's sample: ``id``, ``content`` (a prompt whose question sits between ``### Question:`` and
``### Format:``, the starter code after it), ``labels`` (JSON text: ``task_id``, ``difficulty``...) and
``test`` (packed: a dict whose ``input_output`` is JSON text of ``inputs``, ``outputs`` and ``fn_name``,
set for a functional problem, whose inputs and outputs are JSON lines as above; no split, so every test
is hidden). Its ``canonical_solution`` is a placeholder that prints nothing: not a reference.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..kinds.induction import KIND as FUNCTION
from ..kinds.program import KIND as PROGRAM
from ..sandbox.runner import parse_input
from ..sandbox.verdict import json_exact
from ..types import Task, TestCase
from .fields import (
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
_STARTER = re.compile(r"### Format:.*?```python\n(.*?)```", re.S)
ENTRY_CLASS = "Solution"
"""The class a LeetCode answer defines; LiveCodeBench's harness makes one and calls its method."""
_MODULES = (
    "string re datetime collections heapq bisect copy math random statistics itertools functools operator io sys json"
)
PRELUDE = "\n".join(
    [*(f"from {m} import *" for m in (*_MODULES.split(), "builtins", "typing"))]
    + [f"import {m}" for m in _MODULES.split()]
    + ["sys.setrecursionlimit(50000)"]
)
"""What LiveCodeBench's harness runs before a functional answer (``testing_util.import_string``), in its
order: later star imports win (``builtins`` restores ``pow`` after ``math``'s)."""


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
    kinds = {kind for kind, _ in public + private}
    if len(kinds) > 1:
        raise bad(row, "public_test_cases", "stdin and functional tests mixed in one problem")
    functional = kinds == {"functional"}
    func_name = _func_name(row) if functional else None
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
        description=description,
        reference_code="",  # LiveCodeBench publishes no solution: judge-only
        tests=tests,
        public_tests=len(shown),
        **_shape(func_name),
        difficulty=DIFFICULTY.get(difficulty.lower(), 0.5),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _shape(func_name: str | None) -> dict[str, Any]:
    """The fields that make a task a whole program (stdin) or LiveCodeBench's ``Solution`` method."""
    if func_name is None:
        return {"kind": PROGRAM.name, "entry_point": ""}
    return {"kind": FUNCTION.name, "entry_point": func_name, "entry_class": ENTRY_CLASS, "prelude": PRELUDE}


def _func_name(row: Row) -> str:
    """``metadata.func_name``: the method of ``Solution`` a functional problem's tests call."""
    meta = decoded(row, "metadata", optional(row, "metadata"))
    name = meta.get("func_name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name.isidentifier():
        raise bad(row, "metadata.func_name", "a functional problem names its method here")
    return name


def functional_test(row: Row, where: str, given: Any, wanted: Any) -> TestCase:
    """One call test as LiveCodeBench reads it: each line of ``given`` one argument's JSON, ``wanted`` the
    result's JSON, compared by Python's ``==`` after a tuple result becomes a list."""
    if not isinstance(given, str) or not isinstance(wanted, str):
        raise bad(row, where, "a functional test's input and output are JSON text")
    try:
        args = [json.loads(line) for line in given.split("\n")]
        expected = json.loads(wanted)
    except ValueError as e:
        raise bad(row, where, f"not JSON lines: {e}") from None
    if not json_exact(args) or not json_exact(expected):
        raise bad(row, where, "holds a number that is not finite")
    literal = repr(tuple(args))
    parsed = parse_input(literal)
    if isinstance(parsed, str):
        raise bad(row, where, f"cannot be written as Python arguments: {parsed}")
    return TestCase(input=literal, expected=expected, python_eq=repr(expected), tuple_as_list=True)


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
        given, wanted = case.get("input"), case.get("output")
        test = (
            functional_test(row, where, given, wanted)
            if kind == "functional"
            else stdio_test(row, where, given, wanted)
        )
        out.append((kind, test))
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
    func_name = io.get("fn_name")
    if func_name is not None and (not isinstance(func_name, str) or not func_name.isidentifier()):
        raise bad(row, "test.input_output.fn_name", "not a method's name")
    tests, repeats = unique_tests(_io_tests(row, io, func_name))
    if not tests:
        return LeftOut(NO_TESTS)
    content = text(row, "content")
    question = _QUESTION.search(content)
    description = question.group(1) if question else content
    starter = _STARTER.search(content) if func_name else None
    if starter and question and starter.group(1).strip():
        description += f"\n\nStarter code:\n```python\n{starter.group(1).rstrip()}\n```\n"
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
        description=description,
        **_shape(func_name),
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


def _io_tests(row: Row, io: dict[str, Any], func_name: str | None) -> list[TestCase]:
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if func_name is None:
        return stdio_tests(row, "test.input_output", inputs, outputs, ("inputs", "outputs"))
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise bad(row, "test.input_output", "inputs and outputs are not two lists of one length")
    return [
        functional_test(row, f"test.input_output.inputs[{i}]", given, wanted)
        for i, (given, wanted) in enumerate(zip(inputs, outputs, strict=True))
    ]
