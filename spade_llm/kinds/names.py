"""The kinds' names, and the default one: the one list every module reads.

It imports nothing of the project, so ``types`` (whose records carry a ``kind``) can read it while
the kind modules import ``types``: no import goes both ways. ``spade_llm.kinds``'s registry holds a
module for each name here (``tests/architecture/test_layout_kinds.py`` checks they agree).
"""

from __future__ import annotations

from typing import Final

KIND_NAMES: Final[tuple[str, ...]] = (
    "induction",
    "deduction",
    "abduction",
    "program",
    "program_deduction",
    "program_abduction",
    "bugfix",
)
"""Every kind's name, in the order prompts and reports list them."""
DEFAULT_KIND: Final = "induction"
"""The kind of a task, a request or a row that does not say (records written before kinds existed)."""


def known_kind(name: str) -> str:
    """``name`` when it is a kind's name; a ValueError naming the known kinds otherwise (pydantic's
    validator of ``types.TaskKind``, and ``kinds.get_kind``'s message)."""
    if name not in KIND_NAMES:
        raise ValueError(f"unknown task kind {name!r}; known: {', '.join(sorted(KIND_NAMES))}")
    return name
