"""``induction``: the solver writes the function from its description and some example tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..languages import DEFAULT_ANSWER_LANGUAGE
from .base import CODE_TAGS, TaskKind, fenced_blocks, python_only

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

_CODE_LINE = re.compile(r"^[^\S\n]*(def|class|import|from)\s", re.M)
"""A line that starts code; ``[^\\S\\n]*`` keeps each scan within one line (linear on long text)."""


def extract_code(text: str) -> str:
    """The code in a model's answer: the last python-tagged fenced block, else the last fenced
    block, else the whole answer when it looks like code, else ''."""
    blocks = fenced_blocks(text)
    python = [body for lang, body in blocks if lang in CODE_TAGS]
    if python:
        return python[-1].strip("\n") + "\n"
    if blocks:
        return blocks[-1][1].strip("\n") + "\n"
    if _CODE_LINE.search(text):
        return text.strip("\n") + "\n"
    return ""


def tool_code(text: str) -> str:
    """The code in a tool argument: lenient, unlike a completion (the argument *is* the code): a
    fenced block is unwrapped, bare source taken whole."""
    return extract_code(text) or (text.strip("\n") + "\n" if text.strip() else "")


def gates(validator: Validator, task: Task) -> ValidationReport:
    return validator.validate(task)


def view(task: Task) -> dict[str, Any]:
    """``entry_class``: the class whose method the answer writes (LiveCodeBench's ``Solution``), or None
    for a function: the prompt must not ask for a function the judge will not call."""
    return {"entry_class": task.entry_class}


def check_answer(
    judge: Judge, task: Task, code: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """The code run on the task's tests (or its ``check_code``) in the judge's sandbox."""
    python_only("induction", language)
    return judge(task, code, tests)


KIND = TaskKind(
    name="induction",
    first_template="solver/first.j2",
    repair_template="solver/repair.j2",
    parse_answer=extract_code,
    gates=gates,
    check_answer=check_answer,
    view=view,
    summary="write the function from its description and example tests",
    tool_parse=tool_code,
    colour="#2563eb",
    sample_first={
        "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "(1,)", "expected": "1"}],
        "entry_class": None,
    },
    sample_repair={
        "entry_point": "f",
        "entry_class": None,
        "turn": 2,
        "code": "def f(x):\n    return x\n",
        "status": "error",
        "passed": 0,
        "total": 3,
        "failing": [{"input": "(1,)", "expected": "2", "output": "1", "error": None}],
        "stderr_tail": "Traceback ...\nValueError: bad",
    },
)
