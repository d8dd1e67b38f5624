"""The language seam: one module per language behind the ``Language`` contract (``base.py``).

Everything that reads model code as code (syntax, entry point, banned imports, literals, answers'
calls and values, comments and strings, code tokens, mutants) asks the task's language here; no
module outside this package imports ``ast`` or ``tokenize`` for model code (tests/architecture/test_layout.py).
Python (``python.py``) is the one language today: every task is written in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .base import Bug, Language, Mutant, Statement
from .cpp import CPP
from .go import GO
from .java import JAVA
from .javascript import NODEJS
from .python import PYTHON, PYTHON_ANSWERS
from .rust import RUST
from .toolchain import Toolchain

if TYPE_CHECKING:
    from ..types import Task

__all__ = [
    "DEFAULT_ANSWER_LANGUAGE",
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "PYTHON",
    "TOOLCHAINS",
    "TOOLCHAIN_ALIASES",
    "Bug",
    "Language",
    "Mutant",
    "Statement",
    "Toolchain",
    "get_language",
    "get_toolchain",
    "language_of",
    "toolchain_for_file",
]

LANGUAGES: Final[dict[str, Language]] = {PYTHON.name: PYTHON}
"""Every language by name: the one list."""
DEFAULT_LANGUAGE: Final = PYTHON.name


def get_language(name: str) -> Language:
    """The language called ``name``; a ``UserError`` naming the known ones otherwise."""
    try:
        return LANGUAGES[name]
    except KeyError:
        from ..errors import UserError

        raise UserError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}") from None


def language_of(task: Task) -> Language:
    """The language of ``task``'s reference and tests (Python for every task so far)."""
    return LANGUAGES[DEFAULT_LANGUAGE]


TOOLCHAINS: Final[dict[str, Toolchain]] = {t.name: t for t in (PYTHON_ANSWERS, CPP, JAVA, NODEJS, GO, RUST)}
"""Every language a whole-program answer may be written in, by name: the one list (``toolchain.py``)."""
DEFAULT_ANSWER_LANGUAGE: Final = PYTHON_ANSWERS.name
TOOLCHAIN_ALIASES: Final[dict[str, str]] = {"python3": PYTHON_ANSWERS.name}
"""Other names a client may give a toolchain (SandboxFusion's clients send ``python3`` too): alias -> name."""


def get_toolchain(name: str) -> Toolchain:
    """The answer language called ``name``; a ``UserError`` naming the known ones otherwise."""
    try:
        return TOOLCHAINS[name]
    except KeyError:
        from ..errors import UserError

        raise UserError(f"unknown answer language {name!r}; known: {', '.join(TOOLCHAINS)}") from None


def toolchain_for_file(path: str) -> Toolchain:
    """The answer language a source file's name says (its ending), Python when none does."""
    lowered = path.lower()
    found = next((t for t in TOOLCHAINS.values() if lowered.endswith(t.extensions)), None)
    return found or TOOLCHAINS[DEFAULT_ANSWER_LANGUAGE]
