"""What the query kinds (``deduction``, ``abduction``) share: reading an answer's lines, building
the verdicts of an answer, their gates, and the reference answer.

An answer to a query kind is one line per query, ``f(args) == <Python literal>`` (or a bare call or
literal), in a fenced block or bare; ``read_items`` reads them, each kind matches them to its
queries its own way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..languages import PYTHON
from ..languages.base import Statement
from ..sandbox.verdict import json_exact, matches
from ..types import ExecutionResult, TestResult
from .base import CODE_TAGS, TaskKind, call_text, every_test, fenced_blocks, program_text, safe_repr

__all__ = ["call_text", "safe_repr"]  # where the query kinds found them first; base holds them

if TYPE_CHECKING:
    from ..types import Task
    from ..validation import ValidationReport, Validator

MAX_ANSWER_CHARS = 100_000
"""Longest answer block read (a longer one is malformed: no prediction is that long)."""
MAX_ITEMS = 256
"""Answer lines considered, the last ones (a model may think aloud before answering)."""
MAX_OUTPUT_CHARS = 300
"""Longest repr of a query's output the gates accept: a prediction must fit on a line."""
_BULLET = re.compile(r"^(?:[-*+]\s+|\d{1,3}[.)]\s+)")
_ARROW = re.compile(r"\s*(?:->|→|=>)\s*")


def answer_text(text: str) -> str:
    """The part of an answer holding the predictions: the last python-tagged fenced block, else
    the last fenced block, else the whole answer; '' when it is blank."""
    blocks = fenced_blocks(text)
    python = [body for lang, body in blocks if lang in CODE_TAGS]
    region = python[-1] if python else blocks[-1][1] if blocks else text
    return region.strip()


def _parse(source: str) -> list[Statement] | None:
    return PYTHON.statements(source)


def _line_items(line: str) -> list[Statement]:
    """Items of one line of a block that is not Python as a whole (prose around the answers)."""
    line = _BULLET.sub("", line.strip()).strip().strip("`").strip()
    if not line:
        return []
    body = _parse(line)
    if body is None and _ARROW.search(line):
        body = _parse(_ARROW.sub(" == ", line, count=1))
    return list(body or [])


def read_items(region: str) -> list[Statement]:
    """Every call and value written in an answer block, in order (the last ``MAX_ITEMS``)."""
    body = _parse(region)
    items = body if body is not None else [it for line in region.splitlines() for it in _line_items(line)]
    return items[-MAX_ITEMS:]


def unreadable(region: str) -> str | None:
    """Why an answer block holds nothing to judge, or None."""
    if not region:
        return "the answer is empty"
    if len(region) > MAX_ANSWER_CHARS:
        return f"the answer is longer than {MAX_ANSWER_CHARS} characters"
    return None


def malformed(task: Task, chosen: Sequence[int], why: str, *, inputs_public: bool = True) -> ExecutionResult:
    """The verdict on an answer with nothing to judge: an ``error``, like code that does not load.
    ``inputs_public`` False (abduction, whose inputs are the answers) leaves the inputs out."""
    results = [
        TestResult(index=i, input=task.tests[i].input if inputs_public else "", status="error", error=why)
        for i in chosen
    ]
    return ExecutionResult(
        status="error", stderr=f"{why}\n", tests_passed=0, tests_total=len(chosen), test_results=results, load_error=why
    )


def chosen_tests(task: Task, tests: Sequence[int] | None) -> list[int]:
    return list(range(len(task.tests))) if tests is None else list(tests)


def tests_result(results: list[TestResult], base: ExecutionResult | None = None) -> ExecutionResult:
    """``base`` (default: a clean ``ok`` run) with the tests' verdicts filled in."""
    base = base or ExecutionResult(status="ok")
    return replace(
        base, tests_passed=sum(r.status == "passed" for r in results), tests_total=len(results), test_results=results
    )


# -- gates ---------------------------------------------------------------------------------------


def shared_gates(validator: Validator, task: Task) -> ValidationReport:
    """Validation's gates without induction's test-strength gate (stand-ins and mutants)."""
    return validator.validate(task, test_strength=False)


def with_own_gate(report: ValidationReport, weak: str | None) -> ValidationReport:
    """The shared report, its ``weak_tests`` replaced by this kind's own verdict ``weak``."""
    if report.reason not in (None, "weak_tests"):
        return report
    if weak:
        return replace(report, valid=False, reason="weak_tests", detail=weak)
    return replace(report, valid=True, reason=None, detail="")


def output_too_long(expected: list[Any]) -> str | None:
    for i, value in enumerate(expected):
        size = len(safe_repr(value)) if type(value) is not int or value.bit_length() < 4000 else MAX_OUTPUT_CHARS + 1
        if size > MAX_OUTPUT_CHARS:
            return f"query {i}: the output is {size} characters long, at most {MAX_OUTPUT_CHARS} can be shown"
    return None


def all_same(expected: list[Any]) -> bool:
    """Whether every expected value is the first (a literal-only one, a set or bytes that ``matches``
    never equals, by its type and Python's ``==``: values of literals, never an answer's object)."""
    first = expected[0]
    plain = json_exact(first)
    return all(
        matches(value, first) or (not plain and type(value) is type(first) and value == first) for value in expected[1:]
    )


def reference_answer(task: Task) -> str:
    """The right prediction for every query whose expected value is known (as the benchmark wrote it when
    its rule is Python's ``==``: CRUXEval's tuples are not the JSON form's lists)."""
    lines = [f"{call_text(task.entry_point, t.input)} == {t.expected_repr}" for t in task.tests if t.has_expected]
    return "```python\n" + "\n".join(lines) + "\n```\n"


# -- the kind ------------------------------------------------------------------------------------

_SAMPLE_PROGRAM = "def f(x):\n    return x + 1"


def query_kind(
    name: str, *, query: dict[str, str], shown_expected: str, answer: str, failing: dict[str, Any], **own: Any
) -> TaskKind:
    """A query kind: what ``deduction`` and ``abduction`` decide alike (the answer is read as lines of
    calls and values; every test is secret, the program is shown and needed by a judge; no partial
    credit for shown answers, no hardcoding check, no SandboxFusion form, no strict trainer parse), its
    templates by name, and the template check's sample variables from the kind's ``query``, an
    ``answer`` and one ``failing`` query; ``own`` holds what the kind decides for itself."""
    return TaskKind(
        name=name,
        first_template=f"solver/{name}_first.j2",
        repair_template=f"solver/{name}_repair.j2",
        parse_answer=answer_text,
        secret_tests=every_test,
        shown_text=program_text,
        public_answers_in_prompt=False,
        flags_hardcoding=False,
        needs_reference=True,
        field_tests=None,
        strict_parse=None,
        sample_first={
            "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
            "public_tests": [{"input": "(1,)", "expected": shown_expected}],
            "program": _SAMPLE_PROGRAM,
            "queries": [query],
        },
        sample_repair={
            "entry_point": "f",
            "turn": 2,
            "code": answer,
            "status": "ok",
            "passed": 0,
            "total": 1,
            "failing": [failing],
            "stderr_tail": "",
            "program": _SAMPLE_PROGRAM,
            "queries": [query],
        },
        **own,
    )
