"""Task kinds by name: what the solver is shown, how its answer is read, how it is judged.

Three kinds, as in Absolute Zero, each in its own module:

* ``induction`` (the default): write the function from its description and example tests;
* ``deduction``: read the program and predict its output on given inputs (judged outside the
  sandbox, nothing runs);
* ``abduction``: read the program and find inputs that make it return given outputs (judged by
  running the *reference* on the proposed inputs in the sandbox).

Every kind keeps the same task record (SPEC "Task"), so generation, validation, records, rewards
and metrics are shared; only the prompts, the answer's reading, the gates and ``check_answer`` differ.
``allocate_kinds`` (``mix.py``) hands an epoch's generator requests their kinds from a weighted mix.

The interface, ``TaskKind``, lives in ``base.py`` with what every kind shares; ``queries.py`` holds
what the two query kinds share. Imports go one way: this package imports the kind modules (when a
kind is first asked for), and they import ``base`` and ``queries``, never the package.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UserError
from .base import TaskKind
from .mix import allocate_kinds, normalize_mix

__all__ = ["KIND_NAMES", "TaskKind", "allocate_kinds", "get_kind", "normalize_mix"]


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
