"""The duplicate gate: is a validated candidate a near copy of a task the run already accepted?

Two tests, in this order: the reference code's token shingles (``evaluator.task_fingerprint``) are
at least ``novelty_threshold`` similar to an accepted task's of the same kind, or the candidate
computes what an accepted task computes (the same outputs on every shared probe input, the
behaviour fingerprint ``validation`` measures). Pure: it remembers what it was told and answers
questions; the controller records the decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .evaluator import similarity, task_fingerprint
from .types import Task

Fingerprint = frozenset[tuple[str, ...]]


@dataclass(frozen=True)
class _Accepted:
    task_id: str
    kind: str
    fingerprint: Fingerprint


class Deduper:
    """What the run accepted so far, by code shape and by behaviour, in acceptance order."""

    def __init__(self, novelty_threshold: float, accepted: Iterable[Task] = ()) -> None:
        """``accepted``: the run's tasks so far (a resumed run's ``tasks.jsonl``), in file order."""
        self.novelty_threshold = novelty_threshold
        self._accepted: list[_Accepted] = []
        self._behaviours: dict[str, str] = {}
        """``kind:behaviour fingerprint`` -> the accepted task that has it (``behaviour.py``)."""
        for task in accepted:
            behaviour = task.meta.get("behaviour")
            self.accept(
                task,
                task_fingerprint(task.reference_code),
                task.kind,
                behaviour if isinstance(behaviour, str) else None,
            )

    def fingerprints(self) -> dict[str, Fingerprint]:
        """Accepted task id -> its code fingerprint, in acceptance order."""
        return {a.task_id: a.fingerprint for a in self._accepted}

    def duplicate(self, kind: str, fp: Fingerprint, behaviour: str | None) -> str | None:
        """Why a candidate of ``kind`` with this code fingerprint (``evaluator.task_fingerprint`` of
        its reference) and behaviour is a duplicate (the ``detail`` of its rejection), or None when
        it is new."""
        # a program may come back as another kind (predict its output rather than write it): only
        # tasks of the same kind are compared
        score, index = max(
            ((similarity(fp, a.fingerprint), i) for i, a in enumerate(self._accepted) if a.kind == kind),
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
        self._accepted.append(_Accepted(task.task_id, task.kind, fp))
        if behaviour:
            self._behaviours.setdefault(f"{kind}:{behaviour}", task.task_id)
