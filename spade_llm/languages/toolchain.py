"""The ``Toolchain`` contract: how an answer written in one language is compiled and run in the sandbox.

A task's own code (its reference, input generator, validator, checker) is Python and read through the
``Language`` contract; a whole-program answer may be written in any language of ``TOOLCHAINS``. A
toolchain says which fence tags mark the answer, the file its source is written to, the command that
compiles it (None: nothing to compile), the command that runs it, which files a compile leaves that
the runs need, the Debian packages that provide it, and how much CPU a run spends before the program's
own code starts (a JVM's start-up), which each test's budget grants on top. Commands are argv lists
with ``{source}`` (the source file's name) and ``{main}`` (the class or binary name) filled in; they
run inside the sandbox as the answer does, under the same limits. One module per language
(``cpp.py``, ``java.py``...) ends with its instance; ``TOOLCHAINS`` in ``__init__.py`` is the one list.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["Toolchain", "heap_mb", "host_paths"]


@dataclass(frozen=True)
class Toolchain:
    """One answer language: its fences, its compile and run commands, and what provides them."""

    name: str
    """The name in configs, records and ``serve-sandbox`` requests (SandboxFusion's: ``cpp``, ``java``,
    ``nodejs``, ``go``, ``rust``, ``python``)."""
    label: str
    """How prompts name it (``C++17``)."""
    fence_tags: tuple[str, ...]
    """Tags of a fenced block holding an answer in it; the first is the one prompts ask for."""
    source_file: str
    """The file the answer is written to in the sandbox's scratch directory."""
    extensions: tuple[str, ...]
    """File name endings of its source (``spade exec main.cpp`` runs it as this language)."""
    run: tuple[str, ...]
    """The command that runs the answer (after its compile), with ``{source}``, ``{main}`` and ``{heap_mb}``
    filled in."""
    compile: tuple[str, ...] | None = None
    """The command that compiles it (None: an interpreted language, nothing to compile)."""
    artifacts: tuple[str, ...] = ()
    """What a compile leaves that the runs need: file names, or ``*.ext`` for every file so ending."""
    executables: tuple[str, ...] = ()
    """Artifacts a run executes directly (made executable when written back)."""
    packages: tuple[str, ...] = ()
    """The Debian packages that provide the toolchain (what a ``SandboxUnavailable`` tells to install)."""
    host_paths: tuple[str, ...] = ()
    """Paths outside ``/usr`` its commands read (glob patterns): an isolating backend binds the ones present
    read-only (a JDK's ``conf/`` links into ``/etc/java-17-openjdk``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment of its compile and run beyond the sandbox's own (``HOME`` and ``TMPDIR`` are the scratch
    directory)."""
    startup_cpu_s: float = 0.0
    """CPU a run spends before the answer's own code runs (a JVM's start): added to each test's budget."""
    address_space_mb: int | None = None
    """Address space its runs and compile need where no memory cgroup bounds them (``Limits.address_space_mb``):
    a runtime that reserves more than it uses (a JVM, Go's, V8) does not start below it."""
    in_harness: bool = False
    """Run by the harness's own interpreter as ``__main__`` (Python), not by ``run``'s command."""
    main_name: Callable[[str], str] | None = None
    """The ``{main}`` of a given source (Java: its public class); None: ``main``."""
    source_name: Callable[[str], str] | None = None
    """The source file's name for a given source, when it depends on it (Java: ``<public class>.java``)."""
    prompt_name: str = ""
    """How a solver's prompt names it when not by ``label`` (Python: ``Python``, the words prompts always
    used); '' : the label."""

    @property
    def shown_name(self) -> str:
        """The language's name in a solver's prompt: "Write a complete <shown_name> program"."""
        return self.prompt_name or self.label

    @property
    def fence(self) -> str:
        """The fence tag prompts ask the answer to be in (the first of ``fence_tags``)."""
        return self.fence_tags[0]

    def prompt_variables(self) -> dict[str, str]:
        """What the solver's templates are told of the answer language: ``language`` (its name), ``label``
        (``shown_name``) and ``fence`` (the tag the answer is asked in). Python's render every template as
        before answers had languages."""
        return {"language": self.name, "label": self.shown_name, "fence": self.fence}

    def source_for(self, code: str) -> str:
        """The file ``code`` is written to."""
        return self.source_file if self.source_name is None else self.source_name(code)

    def argv(self, command: tuple[str, ...], code: str, memory_mb: int = 512) -> list[str]:
        """``command`` with ``{source}`` and ``{main}`` filled in for ``code``, and ``{heap_mb}`` for a run
        allowed ``memory_mb`` (``heap_mb``)."""
        main = "main" if self.main_name is None else self.main_name(code)
        values = {"source": self.source_for(code), "main": main, "heap_mb": str(heap_mb(memory_mb))}
        return [part.format(**values) for part in command]

    def commands(self) -> tuple[str, ...]:
        """The programs its commands start (their first words), the compile's own output left out."""
        return tuple(c[0] for c in (self.compile, self.run) if c is not None and not c[0].startswith("./"))

    def missing(self) -> list[str]:
        """The programs of its commands not found on this machine (absolute paths are checked as given)."""
        return [c for c in self.commands() if not _found(c)]


def _found(command: str) -> bool:
    return os.access(command, os.X_OK) if os.path.isabs(command) else shutil.which(command) is not None


CLASS_NAME: Final = re.compile(r"^\s*public\s+(?:final\s+)?class\s+([A-Za-z_$][\w$]*)", re.MULTILINE)
"""A Java source's public class (the file must be named after it)."""


def heap_mb(memory_mb: int) -> int:
    """The heap a garbage-collected runtime (a JVM, V8) is given in a run allowed ``memory_mb``: five
    eighths of it, leaving the rest to its code, stacks and own structures, so that the heap running out
    is the program's ``OutOfMemoryError`` rather than the sandbox's kill."""
    return max(32, memory_mb * 5 // 8)


def host_paths(toolchains: Iterable[Toolchain]) -> list[str]:
    """The ``host_paths`` of ``toolchains`` present on this machine, each once, in order."""
    found: list[str] = []
    for toolchain in toolchains:
        for pattern in toolchain.host_paths:
            found.extend(p for p in sorted(glob.glob(pattern)) if p not in found and os.path.exists(p))
    return found
