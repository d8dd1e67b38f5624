"""What every task kind is and shares: the ``TaskKind`` interface and the reading of fenced blocks.

The kind modules (``induction``, ``deduction``, ``abduction``) import this module, never the
package: ``spade_llm.kinds`` imports them (lazily, by name), so no import goes both ways.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

PYTHON_TAGS: Final = ("python", "py", "python3")
"""Language tags of a fenced block that mark it as Python."""


def _no_view(task: Task) -> dict[str, Any]:
    """Induction's prompts need nothing beyond what the solver already passes."""
    return {}


def _reference_code(task: Task) -> str:
    """Induction's perfect answer is the reference itself."""
    return task.reference_code


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: the pieces the pipeline looks up by ``task.kind``."""

    name: str
    first_template: str
    """Template of the solver's first prompt."""
    repair_template: str
    """Template of a repair prompt after a failed attempt."""
    parse_answer: Callable[[str], str]
    """The model's answer text -> the answer to check ('' when there is none)."""
    gates: Callable[[Validator, Task], ValidationReport]
    """Proves a proposed task of this kind sound (SPEC's gates, in order)."""
    check_answer: Callable[[Judge, Task, str, Sequence[int] | None], ExecutionResult]
    """Checks an answer (already parsed) on the task's tests (a subset by index, or all): each
    test's verdict, as an ``ExecutionResult``."""
    summary: str = ""
    view: Callable[[Task], dict[str, Any]] = _no_view
    """Extra variables for this kind's first and repair templates (built from public information
    only: the program for deduction and abduction, and their queries)."""
    reference_answer: Callable[[Task], str] = _reference_code
    """The answer a perfect solver gives (``spade evaluate`` checks it when no samples are given)."""


_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
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
