"""Each epoch's plan, computed from a frozen snapshot of *earlier* epochs only.

The plan (target difficulty, the requests with their topics, kinds and seeds, the examples shown,
the tags to avoid) is written to ``plans.jsonl`` before the epoch's first request, and a resumed
epoch reads it back. Nothing of the epoch being run can feed its own plan, so a run killed
anywhere and resumed asks the generator exactly what the uninterrupted run asked.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ._util.seeding import derive_seed
from .config import RunConfig
from .evaluator import next_difficulty
from .kinds.mix import allocate_kinds
from .types import EpochMetrics, Rejection, Task, decision_key, task_epoch

_T = TypeVar("_T")

TOPICS = (
    "strings",
    "lists",
    "arithmetic",
    "recursion",
    "dynamic programming",
    "parsing",
    "dictionaries",
    "sorting and searching",
    "bit manipulation",
    "matrices",
    "intervals",
    "simulation",
    "stacks",
    "graphs",
)
"""Built-in focus topics handed round the concurrent proposal requests of an epoch: requests that
cannot see each other's answers would otherwise converge on the same few favourite exercises."""


class RequestPlan(BaseModel):
    """One generator request of an epoch: one answer to one proposal prompt."""

    request_index: int
    n: int
    """Tasks asked for."""
    focus: str | None
    kind: str
    seed: int
    prompt_index: int | None = None
    """Which of the epoch's prompts this request answers (None in plans written before
    ``generator.samples_per_request``: the request index, one answer per prompt)."""
    sample: int = 0
    """Which answer to that prompt this is (0..samples_per_request-1)."""
    base_id: str | None = None
    """The accepted task of an earlier epoch this request's tasks are made from (a kind with
    ``on_base``: a bug is hidden in its reference), by id; None: written from scratch (and always
    for a kind without, or before the run has a task that can be one)."""

    @property
    def prompt(self) -> int:
        return self.request_index if self.prompt_index is None else self.prompt_index


class EpochPlan(BaseModel):
    """What an epoch asks for, fixed before its first request (a row of ``plans.jsonl``)."""

    epoch: int
    target_difficulty: float
    capability: float | None
    """The solver's last measured pass rate (None before any)."""
    goal: str | None
    avoid_tags: list[str]
    example_ids: list[str]
    """Accepted tasks of earlier epochs the proposal prompts show, by id."""
    example_rates: dict[str, float] = {}
    """The measured pass rate of each example that has one: the prompt says which were at the edge
    of the solver's ability (inside the band), too easy or too hard."""
    requests: list[RequestPlan]
    repeated: list[str] = Field(default_factory=list, exclude_if=lambda ids: not ids)
    """Accepted tasks the last epoch's duplicates copied most, by id: the prompts name them and ask for
    tasks unlike them (``curriculum.name_repeats``; written only when there are some)."""


@dataclass(frozen=True, slots=True)
class KnownTask:
    """What a run keeps of an accepted task for as long as it goes on: what plans read of it (its tags;
    whether a request of another kind can be made on it, and its reference's digest), its decision order
    and, for the rest, where it is in ``tasks.jsonl`` (read again for the few a prompt shows). A run of a
    million tasks holds these, not the tasks."""

    task_id: str
    epoch: int
    kind: str
    tags: tuple[str, ...]
    order: tuple[int, int]
    """Its decision key in its epoch (``types.decision_key``)."""
    reference: bytes
    """A digest of its reference code: tasks made on one function share it (``pick_base``)."""
    bases: tuple[str, ...]
    """The kinds whose requests can be made on it (``TaskKind.on_base``)."""
    facets: tuple[tuple[str, tuple[str, ...]], ...] | None
    """Its kind's facet labels (``TaskKind.facets``), or None for a kind without."""
    offset: int = -1
    """Where its line starts in ``tasks.jsonl`` (-1: not written from here, a test's)."""

    @classmethod
    def of(cls, task: Task, offset: int = -1) -> KnownTask:
        from .kinds import KIND_NAMES, get_kind

        labelled = get_kind(task.kind).facets
        facets = None
        if labelled is not None:
            facets = tuple((sys.intern(f), tuple(map(sys.intern, labels))) for f, labels in labelled(task).items())
        bases = tuple(k for k in KIND_NAMES if (can := get_kind(k).on_base) is not None and can(task))
        return cls(
            task_id=sys.intern(task.task_id),
            epoch=task_epoch(task),
            kind=sys.intern(task.kind),
            tags=_shared(tuple(map(sys.intern, task.tags))),
            order=_shared(decision_key(task.meta.get("request_index"), task.meta.get("position"))),
            reference=hashlib.blake2b(task.reference_code.encode(), digest_size=16).digest(),
            bases=_shared(bases),
            facets=_shared(facets) if facets is not None else None,
            offset=offset,
        )


_SHARED: dict[Any, Any] = {}
"""One copy of each tuple many tasks share (tags, decision keys, kinds): a million tasks hold few distinct ones."""


def _shared(value: _T) -> _T:
    kept: _T = _SHARED.setdefault(value, value)
    return kept


@dataclass(frozen=True)
class History:
    """What the run holds from the epochs before the one being planned."""

    tasks: Sequence[KnownTask]
    """Accepted tasks of earlier epochs, in the order they were accepted, as the run keeps them."""
    metrics: Sequence[EpochMetrics]
    """Metrics rows of earlier epochs, in epoch order."""
    pass_rates: Mapping[str, float] = field(default_factory=dict)
    """Task id -> its measured pass rate over its samples (``task_stats.jsonl``), earlier epochs only."""
    rejected: Sequence[Rejection] = ()
    """Rejections of the epoch just before (what its duplicates copied)."""


def repeated_tasks(rejected: Sequence[Rejection], known: Sequence[Task | KnownTask], most: int) -> list[str]:
    """The accepted tasks ``rejected``'s duplicates copied at least twice, most copied first (ties: the
    earlier accepted), at most ``most``: what a generator keeps coming back to. Steering, not policing:
    the gate already refused the copies; the prompt now says what not to write again."""
    from .dedup import twin_of

    counts = Counter(t for r in rejected if r.reason == "duplicate" and (t := twin_of(r.detail)) is not None)
    order = {t.task_id: i for i, t in enumerate(known)}
    ranked = sorted((task_id for task_id, n in counts.items() if n >= 2 and task_id in order),
                    key=lambda task_id: (-counts[task_id], order[task_id]))  # fmt: skip
    return ranked[:most]


def frontier_examples(
    history: History, shown: int, band: tuple[float, float]
) -> tuple[list[KnownTask], dict[str, float]]:
    """The examples a proposal prompt shows, and their measured pass rates.

    Up to ``shown`` of the most recent tasks whose pass rate fell inside the band (the edge of the
    solver's ability, what the generator should aim at), plus the most recent too-easy and too-hard
    one, so the generator sees where the edge is; recent tasks fill up to ``shown`` (before anything
    was measured, or with one sample per task, where every rate is 0 or 1).
    """
    if not shown:
        return [], {}
    lo, hi = band
    rates = history.pass_rates
    recent = list(reversed(history.tasks))
    edge = [t for t in recent if t.task_id in rates and lo <= rates[t.task_id] <= hi][:shown]
    easy = [t for t in recent if t.task_id in rates and rates[t.task_id] > hi][:1]
    hard = [t for t in recent if t.task_id in rates and rates[t.task_id] < lo][:1]
    picked = {t.task_id for t in (*edge, *easy, *hard)}
    fill = [t for t in recent if t.task_id not in picked][: max(0, shown - len(edge) - len(easy) - len(hard))]
    chosen = [*reversed(edge), *reversed(fill), *easy, *hard]
    return chosen, {t.task_id: rates[t.task_id] for t in chosen if t.task_id in rates}


def focus_topics(seed: int, epoch: int, n_requests: int, avoid: Sequence[str], topics: Sequence[str]) -> list[str]:
    """One topic per request: a seeded rotation of ``topics``, saturated ones last."""
    start = derive_seed(seed, "topics", epoch) % len(topics)
    rotation = [topics[(start + i) % len(topics)] for i in range(len(topics))]
    saturated = {a.replace("_", " ").lower() for a in avoid}
    fresh = [t for t in rotation if t.lower() not in saturated] or rotation
    return [fresh[i % len(fresh)] for i in range(n_requests)]


def saturated_tags(tasks: Sequence[Task | KnownTask], share: float = 0.3) -> list[str]:
    """Tags on more than ``share`` of the tasks: the generator is asked to go elsewhere."""
    if len(tasks) < 6:
        return []
    counts = Counter(tag for t in tasks for tag in set(t.tags))
    return sorted(tag for tag, n in counts.items() if n / len(tasks) > share)


def pick_base(
    tasks: Sequence[KnownTask], kind: str, seed: int, epoch: int, request: int, share: float = 1.0
) -> str | None:
    """The id of the accepted task a request of ``kind`` is made on (``TaskKind.on_base``), or None (a
    kind without; no task of the run can be a base yet; or, for ``1 - share`` of the requests, a new
    task written from scratch): one of the run's tasks that can be, one per distinct reference (bugs
    made on one function are no new functions to break), drawn by a key of (seed, epoch, request), so a
    resumed run plans the same base."""
    from .kinds import get_kind

    if get_kind(kind).on_base is None or derive_seed(seed, "base share", epoch, request) % 1000 >= round(1000 * share):
        return None
    firsts: dict[bytes, str] = {}
    for t in tasks:
        if kind in t.bases:
            firsts.setdefault(t.reference, t.task_id)
    fit = list(firsts.values())
    return fit[derive_seed(seed, "base", epoch, request) % len(fit)] if fit else None


class Curriculum:
    """Plans epochs and steers the target difficulty from measured pass rates."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config

    def target_for(self, epoch: int, history: History, previous_target: float | None = None) -> float:
        """The epoch's target: the last measured epoch's next target, or with ``previous_target`` (the
        epoch before's, still running: ``controller.overlap``) that target moved by the last measured
        epoch's pass rate, so the target moves every epoch on the latest measurement."""
        c = self.config.controller
        if previous_target is not None:
            if not history.metrics:
                return previous_target
            row = history.metrics[-1]
            return next_difficulty(
                previous_target, row.pass_rate, row.episodes, c.band, c.difficulty_step, c.min_episodes
            )
        if epoch == 0 or not history.metrics:
            return c.initial_difficulty
        return history.metrics[-1].next_difficulty

    def next_target(self, row: EpochMetrics) -> float:
        """Where the target goes after ``row``: it moves only when the epoch's pass rate, measured on
        enough episodes, left the band; never after an in-band epoch."""
        c = self.config.controller
        return next_difficulty(row.difficulty, row.pass_rate, row.episodes, c.band, c.difficulty_step, c.min_episodes)

    def plan(self, epoch: int, history: History, previous_target: float | None = None) -> EpochPlan:
        c = self.config.controller
        cur = self.config.curriculum
        n_requests = math.ceil(c.tasks_per_epoch / c.proposals_per_request)
        avoid = saturated_tags(history.tasks)
        topics = focus_topics(self.config.seed, epoch, n_requests, avoid, cur.topics or TOPICS)
        examples, rates = frontier_examples(history, self.config.generator.examples_shown, c.band)
        # the last measured row, read from the end (a long run's rows are read again from disk: ``MetricsRows``)
        measured = next((m for m in reversed(history.metrics) if m.pass_rate is not None), None)
        kinds = allocate_kinds(cur.kinds, n_requests, epoch, self.config.seed)
        answers = self.config.generator.samples_per_request
        share = self.config.bugfix.base_share
        bases = [pick_base(history.tasks, kinds[i], self.config.seed, epoch, i, share) for i in range(n_requests)]
        requests = [
            RequestPlan(
                request_index=i * answers + sample,
                n=min(c.proposals_per_request, c.tasks_per_epoch - i * c.proposals_per_request),
                focus=topics[i],
                kind=kinds[i],
                # the first answer keeps the seed a prompt had before there could be several
                seed=derive_seed(self.config.seed, "generate", epoch, i, *([sample] if sample else [])),
                prompt_index=i,
                sample=sample,
                base_id=bases[i],
            )
            for i in range(n_requests)
            for sample in range(answers)
        ]
        return EpochPlan(
            epoch=epoch,
            target_difficulty=self.target_for(epoch, history, previous_target),
            capability=measured.pass_rate if measured is not None else None,
            goal=cur.goal,
            avoid_tags=avoid,
            example_ids=[t.task_id for t in examples],
            example_rates=rates,
            requests=requests,
            repeated=repeated_tasks(history.rejected, history.tasks, cur.name_repeats),
        )
