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

_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")
_CODE_LINE = re.compile(r"^[^\S\n]*(def|class|import|from)\s", re.M)
"""A line that starts code; ``[^\\S\\n]*`` keeps each scan within one line (linear on long text)."""


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of each fenced block: a fence, a tag and the rest of its line, then
    the body up to the next fence or the end of the text. One pass with ``str.find``, linear."""
    blocks = []
    pos = 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            break
        newline = text.find("\n", start + 3)
        if newline < 0:
            break
        lang = _LANG.match(text, start + 3, newline)
        end = text.find("```", newline + 1)
        body = text[newline + 1 :] if end < 0 else text[newline + 1 : end]
        blocks.append((lang.group(1).lower() if lang else "", body))
        if end < 0:
            break
        pos = end + 3
    return blocks


def extract_code(text: str) -> str:
    """The code in a model's answer: the last python-tagged fenced block, else the last fenced
    block, else the whole answer when it looks like code, else ''."""
    blocks = _fenced_blocks(text)
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    if python:
        return python[-1].strip("\n") + "\n"
    if blocks:
        return blocks[-1][1].strip("\n") + "\n"
    if _CODE_LINE.search(text):
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
