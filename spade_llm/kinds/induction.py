"""``induction``: the solver writes the function from its description and some example tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import TaskKind

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

_CODE_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


def extract_code(text: str) -> str:
    """The code in a model's answer: the last python-tagged fenced block, else the last fenced
    block, else the whole answer when it looks like code, else ''."""
    blocks = [(lang.lower(), body) for lang, body in _CODE_BLOCK.findall(text)]
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    if python:
        return python[-1].strip("\n") + "\n"
    if blocks:
        return blocks[-1][1].strip("\n") + "\n"
    if re.search(r"^\s*(def|class|import|from)\s", text, re.M):
        return text.strip("\n") + "\n"
    return ""


def gates(validator: Validator, task: Task) -> ValidationReport:
    return validator.validate(task)


def judge(judge: Judge, task: Task, code: str, tests: Sequence[int] | None) -> ExecutionResult:
    return judge(task, code, tests)


KIND = TaskKind(
    name="induction",
    first_template="solver/first.j2",
    repair_template="solver/repair.j2",
    parse_answer=extract_code,
    gates=gates,
    judge=judge,
    summary="write the function from its description and example tests",
)
