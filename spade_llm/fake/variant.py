"""What the fake's task bank is made of: a :class:`Variant` (one kind of exercise) and the stable hash
every random choice of the fake is seeded from.

A *family* (strings, dynamic programming, graphs, ...; :mod:`spade_llm.fake.families`) holds
variants. A variant is one kind of exercise with an intrinsic difficulty, a few entry-point
synonyms, several statement templates, a small finite list of parameter choices, a random input
generator, fixed edge-case inputs, and a catalogue of realistic mistakes expressed as edits of the
reference source.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Params = Mapping[str, Any]
Args = tuple[Any, ...]
InputGen = Callable[[random.Random, Params, float], Args]
EdgeGen = Callable[[Params], list[Args]]

MISTAKE_KINDS: tuple[str, ...] = (
    "off_by_one",
    "edge_case",
    "logic",
    "exception",
    "infinite_loop",
    "syntax_error",
    "wrong_name",
)
"""Every kind of wrong answer the fake solver writes. The first five come from per-variant edits
or generic loop rewrites; ``syntax_error`` and ``wrong_name`` apply to any code."""

_GENERIC = frozenset({"off_by_one", "exception", "infinite_loop"})


def stable_hash(*parts: Any) -> int:
    """A 64-bit hash of ``parts`` that is the same in every process and Python version.

    ``hash()`` is salted per process (PYTHONHASHSEED), so it cannot seed reproducible runs.
    """
    blob = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Variant:
    """One exercise type of a family.

    ``code`` and ``statements`` are :class:`string.Template` texts. Their placeholders are
    ``$ep`` (entry point), ``$sig`` (call signature), every parameter ``$name`` (its ``str``) and
    ``$name_r`` (its ``repr``, for code). Parameters whose name starts with ``_`` are not
    rendered (``_bump`` raises the difficulty of a harder parameter choice). A line of ``code``
    that is a lone placeholder rendering to nothing is dropped.

    ``bugs`` maps a mistake kind to edits ``(old, new)`` applied to the code template before
    rendering (every occurrence is replaced); ``generic`` lists which generic loop rewrites may
    stand in for kinds that have no explicit edit.
    """

    family: str
    name: str
    topic: str
    difficulty: float
    entry_points: tuple[str, ...]
    args: tuple[str, ...]
    statements: tuple[str, ...]
    code: str
    make_input: InputGen
    edges: EdgeGen
    params: tuple[Params, ...] = ({},)
    bugs: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    generic: frozenset[str] = _GENERIC

    @property
    def key(self) -> str:
        return f"{self.family}/{self.name}"

    def signature(self, entry_point: str) -> str:
        return f"{entry_point}({', '.join(self.args)})"

    def mapping(self, params_index: int, entry_point: str) -> dict[str, str]:
        values: dict[str, str] = {"ep": entry_point, "sig": self.signature(entry_point)}
        for name, value in self.params[params_index].items():
            if name.startswith("_"):
                continue
            values[name] = value if isinstance(value, str) else str(value)
            values[name + "_r"] = repr(value)
        return values

    def statement(self, params_index: int, entry_point: str, template_index: int) -> str:
        text = string.Template(self.statements[template_index]).substitute(self.mapping(params_index, entry_point))
        return re.sub(r"[ \t]+", " ", text).strip()

    def code_for(self, params_index: int, entry_point: str, bug: str | None = None) -> str | None:
        """The reference source, or the variant's explicit ``bug`` edit of it (None: no such edit)."""
        template = self.code
        if bug is not None:
            edits = self.bugs.get(bug)
            if not edits:
                return None
            for old, new in edits:
                if old not in template:
                    return None
                template = template.replace(old, new)
        return _render_code(template, self.mapping(params_index, entry_point))

    def difficulty_for(self, params_index: int) -> float:
        return self.difficulty + float(self.params[params_index].get("_bump", 0.0))


def _render_code(template: str, values: Mapping[str, str]) -> str:
    lines = []
    for line in template.splitlines():
        rendered = string.Template(line).substitute(values)
        if not rendered.strip() and re.fullmatch(r"\s*\$\w+\s*", line):
            continue
        lines.append(rendered.rstrip())
    return "\n".join(lines).strip("\n") + "\n"


def _code(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _edit(old: str, new: str) -> tuple[tuple[str, str], ...]:
    return ((old, new),)
