"""Task kinds by name: what the solver is shown, how its answer is read, how it is judged.

Three kinds, as in Absolute Zero, each in its own module:

* ``induction`` (the default): write the function from its description and example tests;
* ``deduction``: read the program and predict its output on given inputs (judged outside the
  sandbox, nothing runs);
* ``abduction``: read the program and find inputs that make it return given outputs (judged by
  running the *reference* on the proposed inputs in the sandbox).

Every kind keeps the same task record (SPEC "Task"), so generation, validation, records, rewards
and metrics are shared; only the prompts, the answer's reading, the gates and the judge differ.
``allocate_kinds`` (``mix.py``) hands an epoch's generator requests their kinds from a weighted mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from .mix import allocate_kinds, normalize_mix

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

__all__ = ["KIND_NAMES", "TaskKind", "allocate_kinds", "get_kind", "normalize_mix"]


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
    """The model's answer text -> the answer to judge ('' when there is none)."""
    gates: Callable[[Validator, Task], ValidationReport]
    """Proves a proposed task of this kind sound (SPEC's gates, in order)."""
    judge: Callable[[Judge, Task, str, Sequence[int] | None], ExecutionResult]
    """Judges an answer on the task's tests (a subset by index, or all)."""
    summary: str = ""
    view: Callable[[Task], dict[str, Any]] = _no_view
    """Extra variables for this kind's first and repair templates (built from public information
    only: the program for deduction and abduction, and their queries)."""
    reference_answer: Callable[[Task], str] = _reference_code
    """The answer a perfect solver gives (``spade evaluate`` judges it when no samples are given)."""


def _induction() -> TaskKind:
    from .induction import KIND

    return KIND


def _deduction() -> TaskKind:
    from .deduction import KIND

    return KIND


def _abduction() -> TaskKind:
    from .abduction import KIND

    return KIND


_REGISTRY: dict[str, Callable[[], TaskKind]] = {
    "induction": _induction,
    "deduction": _deduction,
    "abduction": _abduction,
}
KIND_NAMES: tuple[str, ...] = tuple(_REGISTRY)
"""Every kind's name, in the order prompts and reports list them."""


def get_kind(name: str) -> TaskKind:
    """The kind called ``name``; a UserError naming the known kinds otherwise."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise UserError(f"unknown task kind {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
