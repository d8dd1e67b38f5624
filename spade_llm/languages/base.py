"""The ``Language`` contract: everything the pipeline needs to know about the language a task's code
is written in, so the core never parses model code itself.

A language answers: which fence tags mark its code in an answer; whether a program is well formed,
imports what a run bans and defines the task's entry point (``static_error``); how a test's input
and expected value are written as text and read back (``literal``, ``encode``); what one line of a
query answer says (``statements``: a call and/or a value); a program's comments and strings (the
leak gate reads them), its code tokens (the duplicate gate) and its mutants (the ``weak_tests``
gate); and which in-sandbox runner executes it (``runner``). ``python.py`` is the one language
today; a second is one module here plus its runner (docs/layout.md, CONTRIBUTING.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Bug", "Language", "Mutant", "Statement"]


@dataclass(frozen=True)
class Statement:
    """One statement read from an answer: a call and/or a value."""

    args: tuple[Any, ...] | None = None
    """Positional arguments of a call ``name(args)`` (None: no call)."""
    value: Any = None
    has_value: bool = False
    """A value was read: the literal after ``==``, or a bare literal."""
    error: str | None = None
    """Why the value after ``==`` could not be read (not a literal of the language)."""


@dataclass(frozen=True)
class Mutant:
    """One mutated copy of a reference: its source, and the change as a short diff for people."""

    source: str
    operator: str
    """``relational``, ``arithmetic``, ``literal``, ``boolean``, ``not``, ``constant_return``."""
    diff: str
    """``line N:`` then ``-`` the original line, ``+`` the mutated one."""
    line: int = 0
    """The line of the reference the change is on."""
    in_while: bool = False
    """The change is inside a ``while`` loop (its condition or body): the mutant may never stop."""


@dataclass(frozen=True)
class Bug:
    """A procedural bug of a reference (``Language.bugs``): one or more small edits of the kinds people make."""

    source: str
    edits: tuple[str, ...]
    """The edit family of each change, in the order made (``off_by_one``, ``dropped_branch``, ``swapped_branch``,
    ``wrong_variable``, ``swapped_arguments``, ``removed_return``, ``inverted_boundary``, or a mutant
    operator's name)."""
    diff: str
    """The change for people: ``line N:`` then ``-`` the original lines, ``+`` the buggy ones."""


class Language(ABC):
    """How the pipeline reads, checks and mutates code of one language."""

    name: str
    """The language's name in configs and records."""
    fence_tags: tuple[str, ...]
    """Tags of a fenced block holding code of this language (```` ```python ````)."""
    runner: str
    """The module that runs a task's tests on code of this language in the sandbox."""

    @abstractmethod
    def static_error(
        self, code: str, entry_point: str, banned: frozenset[str], entry_class: str | None = None
    ) -> tuple[str, str] | None:
        """The first static gate ``code`` fails, as (reason, detail): ``syntax_error``,
        ``banned_import`` (only when ``banned`` names modules), ``missing_entry_point`` (never for an
        ``entry_point`` of "": a whole program; with ``entry_class``, a method of that class); None
        when it passes them all. Nothing runs."""

    @abstractmethod
    def literal(self, text: str) -> Any:
        """The value a literal of the language denotes (a test's input or expected value as written);
        raises ``ValueError`` or ``SyntaxError`` for text that is no literal."""

    @abstractmethod
    def statements(self, source: str) -> list[Statement] | None:
        """The calls and values ``source`` states, one per statement (``f(1, 2) == 3``, ``f(1, 2)``,
        ``3``); None when ``source`` is not a program of the language as a whole."""

    @abstractmethod
    def prose(self, code: str) -> str:
        """The comments and string literals of ``code``, one a line ('' when it does not tokenize)."""

    @abstractmethod
    def code_tokens(self, code: str) -> list[str]:
        """Tokens of ``code`` with names, strings and numbers abstracted: two programs that differ only
        by renaming or constants get the same tokens (what "near-duplicate" means for a task bank)."""

    @abstractmethod
    def mutants(self, code: str, max_mutants: int, key: str = "", *, whole_program: bool = False) -> Sequence[Mutant]:
        """At most ``max_mutants`` one-change mutants of ``code``, chosen by ``key`` (a stable seed).
        ``whole_program``: the code is a program run as a whole, so its top level is behaviour too (else
        only the functions' code is mutated)."""

    @abstractmethod
    def normalised(self, code: str) -> str | None:
        """``code`` in one canonical layout (comments and blank lines gone, spacing and quotes unified), so
        that two texts of one program compare equal and a diff counts only real changes; None when it does
        not parse."""

    @abstractmethod
    def renamed(self, *codes: str) -> tuple[str, ...] | None:
        """``codes`` normalised (``normalised``) with the names they bind (parameters, locals, their own
        functions) renamed in order of first appearance, one renaming for all of them, so that two versions
        of one program compare alike whatever their names, and still differ where one uses another
        variable; None when one does not parse."""

    def bugs(
        self, code: str, count: int, max_edits: int, key: str = "", *, min_edits: int = 1, whole_program: bool = False
    ) -> Sequence[Bug]:
        """Up to ``count`` distinct procedural bugs of ``code``, each of ``min_edits`` to ``max_edits`` edits
        (several combined, as SWE-smith combines them), chosen by ``key`` (a stable seed); none for code that
        does not parse, or in a language without a bug maker. Nothing runs: whether the tests catch a bug is
        the ``bugfix`` gates' to say."""
        return []

    def edit_families(self, before: str, after: str) -> tuple[str, ...]:
        """The edit families (``Bug.edits``' names) that turn ``before`` into ``after``, as well as they
        can be told (a model's bug is classified so; ``()`` when none is recognised)."""
        return ()
