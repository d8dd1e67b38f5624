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
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .evaluator import task_fingerprint
from .nearest import WINDOW, Shape, ShapeIndex, jaccard
from .types import Task

if TYPE_CHECKING:
    from .validation import ValidationReport

Fingerprint = frozenset[tuple[str, ...]]
Sealed = frozenset[str]
"""A fingerprint with each shingle replaced by a short hash (:func:`seal`): the same similarities, no code."""
SEALED_KEY = "sealed"
"""Marks a sealed known task (:func:`sealed_entry`) among tasks given as JSON."""


def _shingle_hash(shingle: tuple[str, ...]) -> bytes:
    return hashlib.blake2b(repr(shingle).encode(), digest_size=8).digest()


def seal(fp: Fingerprint) -> Sealed:
    """``fp`` with every shingle hashed (64 bits): similarity between sealed fingerprints is the same as
    between the fingerprints (up to a collision in 2**64). The shingles are already abstracted (names,
    strings and numbers replaced): no name, constant, test or line of the code can be read back."""
    return frozenset(_shingle_hash(s).hex() for s in fp)


def shape(fp: Fingerprint) -> Shape:
    """``fp`` as the gate compares it: each shingle's :func:`seal` hash as an int, so a sealed task and a
    shown one compare alike, and sets of ints intersect fast."""
    return frozenset(int.from_bytes(_shingle_hash(s), "big") for s in fp)


def _sealed_shape(shingles: list[str]) -> Shape:
    """A sealed entry's shingles (hex, :func:`seal`) as a :func:`shape`."""
    try:
        return frozenset(int(s, 16) for s in shingles)
    except ValueError:
        raise ValueError("a sealed task's shingles are hex hashes, as sealed_entry writes them") from None


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
_TWIN = re.compile(r"^(?:\d+% similar to|the same task as|computes what) (.+)")


def twin_of(detail: str) -> str | None:
    """The accepted task a ``duplicate`` rejection's detail names (:meth:`Deduper.duplicate` writes it), or
    None (a held-out task, which has no id, or another detail)."""
    match = _TWIN.match(detail)
    if match is None or match.group(1).startswith(HELD_OUT):
        return None
    return match.group(1).split()[0]


class Deduper:
    """What the run accepted so far, by code shape and by behaviour, in acceptance order.

    Shapes are searched through a :class:`~spade_llm.nearest.ShapeIndex`: exact over the latest
    ``window`` tasks, through a verified MinHash LSH index past them, so a question costs about the
    same at a million accepted tasks as at a thousand."""

    def __init__(self, novelty_threshold: float, accepted: Iterable[Task] = (), *, window: int = WINDOW) -> None:
        """``accepted``: the run's tasks so far (a resumed run's ``tasks.jsonl``), in file order;
        ``window``: how many of the latest tasks are compared exactly (``nearest.WINDOW``)."""
        self.novelty_threshold = novelty_threshold
        self._index = ShapeIndex(novelty_threshold, window)
        self._entries: dict[str, int] = {}
        """Accepted task id -> its entry in the index (a keyed kind's tasks have none)."""
        self._behaviours: dict[str, str] = {}
        """``kind:behaviour fingerprint`` -> the accepted task that has it (``behaviour.py``)."""
        self._keys: dict[str, str] = {}
        """``kind:duplicate key`` -> the accepted task that has it (a kind's ``duplicate_key``)."""
        for task in accepted:
            behaviour = task.meta.get("behaviour")
            self.accept(task, task_shape(task), task.kind, behaviour if isinstance(behaviour, str) else None)

    def nearest_similarity(self, task_id: str) -> float | None:
        """How similar an accepted task is to the most similar task of any kind accepted before it
        (0.0 when it was the first), what the novelty metric reads; None for a task with no code
        shape to compare (a keyed kind's, told apart by its ``duplicate_key``) or one not accepted.
        Asked of an epoch's tasks only, so a resumed run does not pay it for every task it reloads."""
        entry = self._entries.get(task_id)
        if entry is None:
            return None
        near = self._index.nearest(self._index.shape(entry), before=entry, counted_only=True)
        return near.similarity if near is not None else 0.0

    def duplicate(self, kind: str, fp: Shape, behaviour: str | None, key: str | None = None) -> str | None:
        """Why a candidate of ``kind`` with this code shape (:func:`shape` of ``evaluator.task_fingerprint``
        of its reference) and behaviour is a duplicate (the ``detail`` of its rejection), or None when
        it is new. With ``key`` (its kind's ``duplicate_key``: tasks of that kind share references),
        the key alone decides."""
        if key is not None:
            same_key = self._keys.get(f"{kind}:{key}")
            return f"the same task as {same_key}" if same_key is not None else None
        # a program may come back as another kind (predict its output rather than write it): only
        # tasks of the same kind are compared
        near = self._index.nearest(fp, kind=kind, at_least=self.novelty_threshold)
        if near is not None and near.similarity >= self.novelty_threshold:
            return f"{near.similarity:.0%} similar to {near.key}"
        same = self._behaviours.get(f"{kind}:{behaviour}") if behaviour else None
        if same is not None:
            return f"computes what {same} computes: the same outputs on every shared probe input"
        return None

    def accept(self, task: Task, fp: Shape, kind: str, behaviour: str | None) -> None:
        """Remember an accepted ``task`` with its code shape, proposed as ``kind`` (the kind its
        behaviour is filed under)."""
        key = duplicate_key(task)
        if key is not None:  # compared by key alone (``duplicate``); novelty counts it new (``evaluator.novelty``)
            self._keys.setdefault(f"{task.kind}:{key}", task.task_id)
            return
        task_id = sys.intern(task.task_id)  # one string per id, shared with the index and the run's state
        self._entries[task_id] = self._index.add(task_id, task.kind, fp)
        if behaviour:
            self._behaviours.setdefault(f"{kind}:{behaviour}", task_id)

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
        self._index.add(HELD_OUT, kind, _sealed_shape(shingles), counted=False)
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
    fp = task_shape(task)
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


REPETITION_SIMILARITY = 0.5
"""Code-shape similarity at which two proposed tasks count as one question asked again, for
:func:`repetition_penalties` (R-Zero clusters at BLEU distance 0.5; well below the duplicate gate's
``novelty_threshold``, which rejects near copies outright)."""


def task_shape(task: Task) -> Shape:
    """The code shape the duplicate gate compares for ``task`` (:func:`shape` of its reference's fingerprint)."""
    return shape(task_fingerprint(task.reference_code))


def repetition_penalties(
    tasks: Sequence[Task], weight: float, similarity: float = REPETITION_SIMILARITY
) -> list[float]:
    """R-Zero's repetition penalty for each of a batch's proposed ``tasks``: ``weight`` times the share of
    the *other* tasks of the batch that fall in its cluster.

    Clusters join tasks of one kind whose code shapes are at least ``similarity`` alike, chained (single
    linkage: connected components, so the clusters do not depend on the batch's order); a keyed kind's
    tasks (bug-fix: many share a reference) join on their ``duplicate_key`` instead. R-Zero divides
    the cluster's size by the batch's; counting the others (``(|C| - 1) / (B - 1)``) lets a task unlike
    the rest keep its whole reward, and a batch of one (verl's per-answer score) pay no penalty.
    """
    count = len(tasks)
    if count < 2 or weight == 0.0:
        return [0.0] * count
    keys = [duplicate_key(t) for t in tasks]
    shapes = [task_shape(t) if k is None else None for t, k in zip(tasks, keys, strict=True)]
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(count):
        for j in range(i + 1, count):
            if tasks[i].kind != tasks[j].kind:
                continue
            a, b = shapes[i], shapes[j]
            if a is not None and b is not None:
                alike = jaccard(a, b) >= similarity
            else:  # keyed tasks join on their key, never a keyed task with an unkeyed one
                alike = a is None and b is None and keys[i] == keys[j]
            if alike:
                parent[root(i)] = root(j)
    sizes = Counter(root(i) for i in range(count))
    return [round(weight * (sizes[root(i)] - 1) / (count - 1), 6) for i in range(count)]
