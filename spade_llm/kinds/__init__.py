"""Task kinds by name: what the solver is shown, how its answer is read, how it is judged.

Only ``induction`` (write the function from its description and examples) exists so far;
``deduction`` and ``abduction`` will be added as entries here, each in its own module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: the pieces the pipeline looks up by ``task.kind``."""

    name: str
    first_template: str
    """Template of the solver's first prompt."""
    repair_template: str
    """Template of a repair prompt after a failed attempt."""
    parse_answer: Callable[[str], str]
    """The model's answer text -> the code to judge ('' when there is none)."""
    gates: Callable[[Validator, Task], ValidationReport]
    """Proves a proposed task of this kind sound (SPEC's gates, in order)."""
    judge: Callable[[Judge, Task, str, Sequence[int] | None], ExecutionResult]
    """Judges an answer's code on the task's tests (a subset by index, or all)."""
    summary: str = ""


def _induction() -> TaskKind:
    from .induction import KIND

    return KIND


_REGISTRY: dict[str, Callable[[], TaskKind]] = {"induction": _induction}


def get_kind(name: str) -> TaskKind:
    """The kind called ``name``; a UserError naming the known kinds otherwise."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise UserError(f"unknown task kind {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
