"""The duplicate gate: is a validated candidate a near copy of a task the run already accepted?

Two tests, in this order: the reference code's token shingles (``evaluator.task_fingerprint``) are
at least ``novelty_threshold`` similar to an accepted task's of the same kind, or the candidate
computes what an accepted task computes (the same outputs on every shared probe input, the
behaviour fingerprint ``validation`` measures). Pure: it remembers what it was told and answers
questions; the controller records the decisions.

A task that must not be shown (one of the solver's test split, in a generator's training row) can still
be known *sealed*: its kind, its fingerprint with each shingle hashed (``seal``) and its behaviour
fingerprint (and a keyed kind's ``duplicate_key``, itself a hash), which give the same verdicts and hold
none of its code, tests or text (``sealed_entry``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .evaluator import similarity, task_fingerprint
from .types import Task

if TYPE_CHECKING:
    from .validation import ValidationReport

Fingerprint = frozenset[tuple[str, ...]]
Sealed = frozenset[str]
"""A fingerprint with each shingle replaced by a short hash (:func:`seal`): the same similarities, no code."""
SEALED_KEY = "sealed"
"""Marks a sealed known task (:func:`sealed_entry`) among tasks given as JSON."""


def seal(fp: Fingerprint) -> Sealed:
    """``fp`` with every shingle hashed (64 bits): similarity between sealed fingerprints is the same as
    between the fingerprints (up to a collision in 2**64). The shingles are already abstracted (names,
    strings and numbers replaced): no name, constant, test or line of the code can be read back."""
    return frozenset(hashlib.blake2b(repr(s).encode(), digest_size=8).hexdigest() for s in fp)


def sealed_entry(task: Task) -> dict[str, Any]:
    """What the duplicate gate needs of a task that must not be shown (a task of the solver's test split
    in a training row): its kind, its sealed code fingerprint and its behaviour fingerprint, no id,
    description, code or test. ``Deduper.accept_sealed`` reads it back."""
    behaviour = task.meta.get("behaviour")
    entry: dict[str, Any] = {
        SEALED_KEY: True,
        "kind": task.kind,
        "shingles": sorted(seal(task_fingerprint(task.reference_code))),
        "behaviour": behaviour if isinstance(behaviour, str) else None,
    }
    key = duplicate_key(task)
    if key is not None:  # a keyed kind's gate compares this alone; a hash of the code, which it does not show
        entry["key"] = key
    return entry


HELD_OUT = "a held-out task"
"""How a duplicate of a sealed task names it (it has no id to show)."""


@dataclass(frozen=True)
class _Accepted:
    task_id: str
    kind: str
    fingerprint: Fingerprint | Sealed
    sealed: bool = False


class Deduper:
    """What the run accepted so far, by code shape and by behaviour, in acceptance order."""

    def __init__(self, novelty_threshold: float, accepted: Iterable[Task] = ()) -> None:
        """``accepted``: the run's tasks so far (a resumed run's ``tasks.jsonl``), in file order."""
        self.novelty_threshold = novelty_threshold
        self._accepted: list[_Accepted] = []
        self._behaviours: dict[str, str] = {}
        """``kind:behaviour fingerprint`` -> the accepted task that has it (``behaviour.py``)."""
        self._keys: dict[str, str] = {}
        """``kind:duplicate key`` -> the accepted task that has it (a kind's ``duplicate_key``)."""
        for task in accepted:
            behaviour = task.meta.get("behaviour")
            self.accept(
                task,
                task_fingerprint(task.reference_code),
                task.kind,
                behaviour if isinstance(behaviour, str) else None,
            )

    def fingerprints(self) -> dict[str, Fingerprint]:
        """Accepted task id -> its code fingerprint, in acceptance order (sealed tasks left out)."""
        return {a.task_id: cast(Fingerprint, a.fingerprint) for a in self._accepted if not a.sealed}

    def duplicate(self, kind: str, fp: Fingerprint, behaviour: str | None, key: str | None = None) -> str | None:
        """Why a candidate of ``kind`` with this code fingerprint (``evaluator.task_fingerprint`` of
        its reference) and behaviour is a duplicate (the ``detail`` of its rejection), or None when
        it is new. With ``key`` (its kind's ``duplicate_key``: tasks of that kind share references),
        the key alone decides."""
        if key is not None:
            same_key = self._keys.get(f"{kind}:{key}")
            return f"the same task as {same_key}" if same_key is not None else None
        # a program may come back as another kind (predict its output rather than write it): only
        # tasks of the same kind are compared
        sealed = seal(fp) if any(a.sealed for a in self._accepted) else frozenset()
        score, index = max(
            (
                (similarity(sealed if a.sealed else fp, a.fingerprint), i)
                for i, a in enumerate(self._accepted)
                if a.kind == kind
            ),
            default=(0.0, -1),
        )
        if score >= self.novelty_threshold:
            return f"{score:.0%} similar to {self._accepted[index].task_id}"
        same = self._behaviours.get(f"{kind}:{behaviour}") if behaviour else None
        if same is not None:
            return f"computes what {same} computes: the same outputs on every shared probe input"
        return None

    def accept(self, task: Task, fp: Fingerprint, kind: str, behaviour: str | None) -> None:
        """Remember an accepted ``task`` with its code fingerprint, proposed as ``kind`` (the kind its
        behaviour is filed under)."""
        key = duplicate_key(task)
        if key is not None:  # compared by key alone (``duplicate``); novelty counts it new (``evaluator.novelty``)
            self._keys.setdefault(f"{task.kind}:{key}", task.task_id)
            return
        self._accepted.append(_Accepted(task.task_id, task.kind, fp))
        if behaviour:
            self._behaviours.setdefault(f"{kind}:{behaviour}", task.task_id)

    def accept_sealed(self, entry: dict[str, Any]) -> None:
        """Remember a task known only by its ``sealed_entry``: a candidate that copies it is a duplicate
        of :data:`HELD_OUT`, which is all its detail can say.

        Raises:
            ValueError: ``entry`` is not a sealed entry.
        """
        kind, shingles, behaviour = entry.get("kind"), entry.get("shingles"), entry.get("behaviour")
        if not isinstance(kind, str) or not isinstance(shingles, list) or not all(isinstance(s, str) for s in shingles):
            raise ValueError("a sealed task needs its kind and its shingles (a list of strings)")
        if behaviour is not None and not isinstance(behaviour, str):
            raise ValueError("a sealed task's behaviour is a string or null")
        key = entry.get("key")
        if key is not None:
            if not isinstance(key, str):
                raise ValueError("a sealed task's key is a string")
            self._keys.setdefault(f"{kind}:{key}", HELD_OUT)  # its kind's gate compares keys alone (``accept``)
            return
        self._accepted.append(_Accepted(HELD_OUT, kind, frozenset(shingles), sealed=True))
        if behaviour:
            self._behaviours.setdefault(f"{kind}:{behaviour}", HELD_OUT)


def duplicate_key(task: Task) -> str | None:
    """``task``'s kind's ``duplicate_key`` of it, or None (the kind has none, or the task cannot be keyed)."""
    from .kinds import get_kind

    key_of = get_kind(task.kind).duplicate_key
    return key_of(task) if key_of is not None else None


@dataclass(frozen=True)
class Decision:
    """What becomes of a validated candidate: the task the run accepts, or why it is rejected."""

    accepted: Task | None
    reason: str | None = None
    """The rejection's reason: the first gate the candidate failed, or ``duplicate``."""
    detail: str = ""


def decide(
    report: ValidationReport, request_index: int, position: int, gate: Deduper, known: Deduper | None = None
) -> Decision:
    """The one acceptance rule, the loop's (``Controller.decide``) and the generator's reward's: a
    candidate is accepted unless it failed a gate or nearly copies a task ``known`` (tasks given from
    outside, asked first) or ``gate`` holds; an accepted one carries where it was proposed, its
    behaviour fingerprint and its mutant count in ``meta``, and ``gate`` remembers it."""
    task = report.task
    if not report.valid or task is None:
        return Decision(None, report.reason or "invalid", report.detail)
    fp = task_fingerprint(task.reference_code)
    key = duplicate_key(task)
    twin = known.duplicate(task.kind, fp, report.behaviour, key) if known is not None else None
    twin = twin or gate.duplicate(task.kind, fp, report.behaviour, key)
    if twin is not None:
        return Decision(None, "duplicate", twin)
    meta: dict[str, Any] = {**task.meta, "request_index": request_index, "position": position}
    if report.behaviour:
        meta["behaviour"] = report.behaviour
    if report.mutation is not None:
        # only what the code fixes: how many mutants were killed or equivalent can hang on timing
        meta["mutants"] = report.mutation.total
    accepted = task.model_copy(update={"meta": meta})
    gate.accept(accepted, fp, accepted.kind, report.behaviour)
    return Decision(accepted)
