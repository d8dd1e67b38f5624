"""A :class:`Step`: one building block of the bank's composed (pipeline) exercises.

Each family (:mod:`spade_llm.fake.families`) defines its steps with :func:`_step`;
:mod:`spade_llm.fake.pipelines` chains them into exercises.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .variant import Params, _code


@dataclass(frozen=True)
class Step:
    """One building block of a pipeline: reads a value of type ``takes``, produces ``gives``.

    ``code`` is a :class:`string.Template` of statements with ``$IN`` (the variable read),
    ``$OUT`` (the variable assigned, last) and the parameters; ``phrase`` describes it as one item
    of the statement's numbered list (no ``;``, no final full stop). ``bugs`` are realistic edits
    of ``code`` per mistake kind. ``cost`` is what the step adds to the task's difficulty.
    """

    name: str
    family: str
    topic: str
    takes: str
    gives: str
    cost: float
    phrase: str
    code: str
    slug: str
    params: tuple[Params, ...] = ({},)
    bugs: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    reorders: bool = False
    """Only changes the order of a list (a reorder right after another one is pointless)."""
    order_free: bool = False
    """Ignores the order of its input (a reorder right before it is pointless)."""
    first_only: bool = False
    """Only reads the function's own argument (its work grows with the value of an integer, which a
    step before it could make huge)."""

    def values(self, params_index: int) -> dict[str, str]:
        return {k: (v if isinstance(v, str) else str(v)) for k, v in self.params[params_index].items()}

    def render_phrase(self, params_index: int) -> str:
        return string.Template(self.phrase).substitute(self.values(params_index))

    def render_code(self, params_index: int, src: str, dst: str, template: str | None = None) -> str:
        text = _code(self.code if template is None else template)
        return string.Template(text).substitute({**self.values(params_index), "IN": src, "OUT": dst})


def _step(
    name: str, family: str, topic: str, takes: str, gives: str, cost: float, phrase: str, code: str, slug: str,
    params: tuple[Params, ...] = ({},), bugs: Mapping[str, Sequence[tuple[str, str]]] | None = None, **flags: bool,
) -> Step:  # fmt: skip
    edits = {kind: tuple(pairs) for kind, pairs in (bugs or {}).items()}
    return Step(name, family, topic, takes, gives, cost, phrase, code, slug, params, edits, **flags)
