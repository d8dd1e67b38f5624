"""The checks ``read_run`` makes of a run directory before anyone trusts it.

Resume trusts the run directory: what a finished epoch holds is never redone. A line removed,
duplicated or replaced after spade wrote it would therefore pass unnoticed into the resumed run and
every export of it, so resume checks before it trusts. Each journal's lines must be records of
their kind (a line that is not names FILE:LINE and the field, before anything else is compared),
and the records must agree with what the run wrote down about them as it went:

- a finished epoch (one with a ``metrics.jsonl`` row) has exactly the tasks, rejections (by
  reason) and episodes its row counts, and as many proposals as it says were made;
- decisions are made in (request, position) order, so the decided candidates of any epoch are a
  prefix of its answered requests' candidates (``proposals.jsonl`` in plan order): a gap is a lost line;
- a ``task_stats.jsonl`` row says how many episodes its task has; every episode and stats row
  names a task of ``tasks.jsonl``; no record appears twice;
- at most two epochs run at once (``controller.overlap``): an epoch has records only once the one two
  before it has its metrics row.

What is missing is written back only where it can be recomputed exactly, from records that are
there, by the same code that wrote it: a finished epoch's ``task_stats`` row (a function of the
task's episodes, once those are complete) and the rejection of a request or candidate that did
not parse (a function of the ``proposals.jsonl`` row, just as a resumed epoch re-decides it). A
task, an episode, a validation or duplicate rejection, a plan, a proposal or a metrics row would
take the model or the sandbox again, whose answer may differ: those stop the resume with exit 2
naming the file, the epoch and what is missing. A partial last line (a killed writer) is not
damage: ``RunDir.open_existing`` cuts it before anything is read. An epoch with no recorded answer
at all (an older spade kept no ``proposals.jsonl``) has no decision order to check: its counts are.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..curriculum import EpochPlan
from ..errors import UserError
from ..evaluator import task_stats
from ..generator import Candidate, Proposal, kept_answer
from ..types import REQUEST_FAILED, EpochMetrics, Rejection, Task, TaskStats, Trajectory, decision_key, task_epoch
from .rundir import (
    METRICS,
    PLANS,
    PROPOSALS,
    REJECTED,
    TASK_STATS,
    TASKS,
    TRAJECTORIES,
    read_at,
    read_located,
)

CHANGED = "the run directory was changed after it was written (restore it from a copy, or start the run again)"
"""How every consistency error ends: spade never writes these, so someone else did."""


class CandidateRecord(BaseModel):
    """What resume reads of a candidate in a ``proposals.jsonl`` row."""

    model_config = ConfigDict(extra="allow")

    position: int
    task: Task | None = None
    reason: str | None = None
    detail: str | None = None

    @property
    def task_id(self) -> str | None:
        """The id of the task it parsed into; None: it did not parse."""
        return self.task.task_id if self.task is not None else None


class ProposalRecord(BaseModel):
    """What resume reads of a ``proposals.jsonl`` row (``generator.Proposal.record`` writes it)."""

    model_config = ConfigDict(extra="allow")

    epoch: int
    request_index: int
    n: int
    failure: str | None = None
    detail: str | None = None
    candidates: list[CandidateRecord] | None = None
    prompt_tokens: int
    completion_tokens: int
    cost: float | None = None
    text: str | None = None
    parse_error: dict[str, Any] | None = None
    generator_model: str | None = None
    """Absent in rows an older spade wrote."""
    prompt_index: int | None = None
    sample: int = 0
    prompt: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class CandidateRef:
    """A candidate of an answer: its position, and the id of the task it parsed into (None: it did not)."""

    position: int
    task_id: str | None


@dataclass(frozen=True, slots=True)
class AnswerRef:
    """A ``proposals.jsonl`` row as the checks need it, and where to read it again: what a reader whose
    memory must not grow with the run keeps of each (``Lines``' ``light`` journals)."""

    epoch: int
    request_index: int
    n: int
    failure: str | None
    candidates: tuple[CandidateRef, ...] | None
    offset: int


@dataclass(frozen=True, slots=True)
class TaskRef:
    """A task as the checks need it (see ``AnswerRef``): its id, kind, epoch and decision key."""

    task_id: str
    kind: str
    epoch: int
    key: tuple[int, int] | None
    offset: int


@dataclass(frozen=True, slots=True)
class RejectionRef:
    """A rejection as the checks need it (see ``AnswerRef``)."""

    epoch: int
    request_index: int | None
    position: int | None
    reason: str
    offset: int


@dataclass(frozen=True, slots=True)
class StatsRef:
    """A ``task_stats.jsonl`` row as the checks need it (see ``AnswerRef``)."""

    task_id: str
    samples: int
    offset: int


@dataclass(frozen=True, slots=True)
class MetricsRef:
    """A metrics row as the checks need it (see ``AnswerRef``): the counts they compare."""

    epoch: int
    episodes: int
    abandoned: int
    tasks_proposed: int
    tasks_accepted: int
    rejected_by_reason: dict[str, int]
    offset: int


@dataclass(frozen=True, slots=True)
class PlanRef:
    """A plan, by its epoch; the checks read it again (``Lines.plan``), one epoch at a time."""

    epoch: int
    offset: int


def _answer_ref(record: ProposalRecord, offset: int) -> AnswerRef:
    candidates = None
    if record.candidates is not None:
        candidates = tuple(CandidateRef(c.position, _ids_interned(c.task_id)) for c in record.candidates)
    return AnswerRef(record.epoch, record.request_index, record.n, record.failure, candidates, offset)


def _ids_interned(task_id: str | None) -> str | None:
    return sys.intern(task_id) if task_id is not None else None


def _task_ref(task: Task, offset: int) -> TaskRef:
    return TaskRef(sys.intern(task.task_id), sys.intern(task.kind), task_epoch(task), _task_key(task), offset)


def _rejection_ref(r: Rejection, offset: int) -> RejectionRef:
    return RejectionRef(r.epoch, r.request_index, r.position, sys.intern(r.reason), offset)


def _stats_ref(row: TaskStats, offset: int) -> StatsRef:
    return StatsRef(sys.intern(row.task_id), row.samples, offset)


def _metrics_ref(row: EpochMetrics, offset: int) -> MetricsRef:
    reasons = {sys.intern(k): v for k, v in row.rejected_by_reason.items()}
    return MetricsRef(row.epoch, row.episodes, row.abandoned, row.tasks_proposed, row.tasks_accepted, reasons, offset)


def _plan_ref(plan: EpochPlan, offset: int) -> PlanRef:
    return PlanRef(plan.epoch, offset)


LIGHT: Mapping[str, Callable[[Any, int], Any]] = {
    TASKS: _task_ref,
    REJECTED: _rejection_ref,
    TASK_STATS: _stats_ref,
    METRICS: _metrics_ref,
    PLANS: _plan_ref,
    PROPOSALS: _answer_ref,
}
"""What ``Lines`` keeps of each record of a journal when asked to keep it light: everything the checks
compare, and the byte offset to read the rest again when a repair needs it (the trajectories, a run's
bulk, are always kept so: ``EpisodeIndex``)."""

RecordSeen = Callable[[str, int, dict[str, Any], Any], None]
"""Told of each record as it is read: (journal, its byte offset, the record as written, the record validated)."""

RECORD_MODELS: Mapping[str, tuple[type[BaseModel], str]] = {
    TASKS: (Task, "task"),
    REJECTED: (Rejection, "rejection"),
    TRAJECTORIES: (Trajectory, "trajectory"),
    TASK_STATS: (TaskStats, "task_stats row"),
    METRICS: (EpochMetrics, "metrics row"),
    PLANS: (EpochPlan, "plan"),
    PROPOSALS: (ProposalRecord, "proposals row"),
}
"""Each journal's record model, and what its records are called in messages."""


def located(path: Path, journal: str) -> Iterator[tuple[int, int, Any]]:
    """(line, byte offset, record validated) for each record of a journal: a streaming reader keeps the
    offset and reads the record again with ``validated(read_at(...))``.

    Raises:
        UserError: a line is not JSON, or not a record of the journal's kind: ``FILE:LINE``, the
            first field pydantic names, and how many more it found.
    """
    for n, offset, raw in read_located(path):
        yield n, offset, validated(path, journal, n, raw)


def validated(path: Path, journal: str, line: int | None, raw: dict[str, Any]) -> Any:
    """``raw`` as a record of ``journal`` (``RECORD_MODELS``).

    Raises:
        UserError: it is not one: ``FILE:LINE``, the first field pydantic names, and how many more it found.
    """
    model, what = RECORD_MODELS[journal]
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        errors = e.errors()
        first = errors[0] if errors else {"loc": (), "msg": str(e)}
        where = ".".join(str(p) for p in first["loc"]) or "record"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        at = f"{path}:{line}" if line is not None else str(path)
        raise UserError(
            f"{at}: not a {what}: {where}: {first['msg']}{more}; repair that line, or start the run again"
        ) from None


def record_at(root: Path, journal: str, offset: int) -> Any:
    """The record of ``root``'s ``journal`` at byte ``offset`` (a reader that streams, or
    ``RunDir.append_record``, gave it), read and validated again.

    Raises:
        UserError: the line there is no longer a record of its journal (the file changed since).
    """
    path = root / journal
    return validated(path, journal, None, read_at(path, offset))


def request_rejection(epoch: int, request_index: int, proposal: Proposal) -> Rejection:
    """The rejection of a request that failed as a whole. The loop and resume's repair both build it
    here, so a repaired line is the line the loop writes."""
    return Rejection(
        epoch=epoch,
        request_index=request_index,
        reason=proposal.failure or "",
        detail=proposal.detail,
        answer=kept_answer(proposal.text) if proposal.text else None,
        parse_error=proposal.parse_error,
    )


def candidate_rejection(epoch: int, request_index: int, proposal: Proposal, candidate: Candidate) -> Rejection:
    """The rejection of a candidate that did not parse as a task (see ``request_rejection``)."""
    raw = candidate.raw if isinstance(candidate.raw, dict) else {"value": candidate.raw}
    return Rejection(
        epoch=epoch,
        request_index=request_index,
        position=candidate.position[1],
        reason=candidate.reason or "invalid_task",
        detail=candidate.detail,
        task=raw,
        answer=kept_answer(proposal.text) if proposal.text else None,
    )


def _task_key(task: Task) -> tuple[int, int] | None:
    """A run's task's decision key; None for a task no generator request decided (a solve's)."""
    ri, pos = task.meta.get("request_index"), task.meta.get("position")
    return (ri, pos) if isinstance(ri, int) and isinstance(pos, int) else None


def _epoch_of(task: Task | TaskRef) -> int:
    return task.epoch if isinstance(task, TaskRef) else task_epoch(task)


def _key_of(task: Task | TaskRef) -> tuple[int, int] | None:
    return task.key if isinstance(task, TaskRef) else _task_key(task)


class EpisodeIndex:
    """Every trajectory of a run by task, as three ints in an array per task (its sample, its line, and
    where it is: its byte offset, or its place in ``Lines.rows`` when kept whole): a million episodes
    take some 60 MB, where a dict of keys to records took six times that."""

    def __init__(self) -> None:
        self.by_task: dict[str, array[int]] = {}
        """task id -> (sample, line, where) of each of its trajectories, in file order; tasks in the order
        their first trajectory comes."""
        self.count = 0

    def add(self, task_id: str, sample: int, line: int, where: int) -> None:
        held = self.by_task.get(task_id)
        if held is None:
            held = self.by_task[sys.intern(task_id)] = array("q")
        held.extend((sample, line, where))
        self.count += 1

    def samples(self, task_id: str) -> list[int]:
        held = self.by_task.get(task_id)
        return list(held[0::3]) if held is not None else []

    def episodes(self, task_id: str) -> int:
        held = self.by_task.get(task_id)
        return len(held) // 3 if held is not None else 0

    def places(self, task_id: str) -> list[int]:
        held = self.by_task.get(task_id)
        return list(held[2::3]) if held is not None else []

    def first_repeat(self) -> tuple[int, str, int, int] | None:
        """The first trajectory in file order whose (task, sample) came before: (its line, the task,
        the sample, the first one's line), or None."""
        first: tuple[int, str, int, int] | None = None
        for task_id, held in self.by_task.items():
            seen: dict[int, int] = {}
            for i in range(0, len(held), 3):
                sample, line = held[i], held[i + 1]
                if sample in seen:
                    if first is None or line < first[0]:
                        first = (line, task_id, sample, seen[sample])
                    break  # later repeats of this task come after this one
                seen[sample] = line
        return first


def _ids(values: list[str], limit: int = 5) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


class Lines:
    """The records of one run directory with their line numbers, for the checks' messages."""

    def __init__(
        self, root: Path, journals: tuple[str, ...], *, light: Collection[str] = (), seen: RecordSeen | None = None
    ) -> None:
        """``light``: journals whose records are kept as their references (``LIGHT``; the trajectories
        in ``index`` only), not whole: the checks need no more, and a repair reads what it needs again;
        ``seen``: told of every record as it is read, for a reader that keeps more of some."""
        self.root = root
        self.rows: dict[str, list[tuple[int, Any]]] = {}
        self.raw_proposals: dict[int, dict[str, Any]] = {}
        """``proposals.jsonl`` rows as written, by line, unless kept light: ``Proposal.from_record`` reads these."""
        self.index = EpisodeIndex()
        """The trajectories, by task (kept whole in ``rows`` too unless ``light`` names them)."""
        self.light = frozenset(light)
        for journal in journals:  # every line is checked before any record is compared
            rows: list[tuple[int, Any]] = []
            path = root / journal
            lighten = LIGHT.get(journal) if journal in light else None
            for n, offset, raw in read_located(path):
                record = validated(path, journal, n, raw)
                if seen is not None:
                    seen(journal, offset, raw, record)
                if journal == TRAJECTORIES:
                    whole = journal not in light
                    self.index.add(record.task_id, record.sample_index, n, len(rows) if whole else offset)
                    if whole:
                        rows.append((n, record))
                    continue
                if lighten is not None:
                    rows.append((n, lighten(record, offset)))
                    continue
                rows.append((n, record))
                if journal == PROPOSALS:
                    self.raw_proposals[n] = raw
            self.rows[journal] = rows

    def raw_proposal(self, n: int, record: ProposalRecord | AnswerRef) -> dict[str, Any]:
        """The ``proposals.jsonl`` row at line ``n`` as written (read again when kept light)."""
        kept = self.raw_proposals.get(n)
        if kept is not None:
            return kept
        assert isinstance(record, AnswerRef)
        return read_at(self.path(PROPOSALS), record.offset)

    def trajectories(self, task_id: str) -> list[Trajectory]:
        """The task's trajectories whole, in file order (read again where kept light)."""
        places = self.index.places(task_id)
        if TRAJECTORIES not in self.light:
            return [self.rows[TRAJECTORIES][i][1] for i in places]
        return [record_at(self.root, TRAJECTORIES, offset) for offset in places]

    def plan(self, record: EpochPlan | PlanRef) -> EpochPlan:
        """A plan whole (read again where kept light)."""
        if isinstance(record, EpochPlan):
            return record
        plan: EpochPlan = record_at(self.root, PLANS, record.offset)
        return plan

    def path(self, journal: str) -> Path:
        return self.root / journal

    def at(self, journal: str, line: int) -> str:
        return f"{self.path(journal)}:{line}"

    @staticmethod
    def ref(journal: str, line: int) -> str:
        """Another line of the same run, named short (the message names the run's path once)."""
        return f"{journal}:{line}"

    def episodes(self) -> tuple[dict[Any, tuple[int, Any]], dict[Any, tuple[int, Any]], EpisodeIndex]:
        """Tasks by id, task_stats rows by task id, each once (``unique``), and the trajectories, none
        twice: what a run and a solve share."""
        tasks = self.unique(TASKS, lambda t: t.task_id, lambda t: f"task {t.task_id}")
        stats = self.unique(TASK_STATS, lambda s: s.task_id, lambda s: f"the task_stats row of {s.task_id}")
        repeat = self.index.first_repeat()
        if repeat is not None:
            n, task_id, sample, first = repeat
            raise UserError(
                f"{self.at(TRAJECTORIES, n)}: the trajectory of {task_id} sample {sample} again (first at line "
                f"{first}): a line duplicated; {CHANGED}"
            )
        return tasks, stats, self.index

    def unique(
        self, journal: str, key: Callable[[Any], Hashable | None], what: Callable[[Any], str]
    ) -> dict[Any, tuple[int, Any]]:
        """``key(record) -> (line, record)`` (records whose key is None left out); a key seen twice is
        a duplicated line (UserError, saying ``what(record)``)."""
        seen: dict[Any, tuple[int, Any]] = {}
        for n, record in self.rows[journal]:
            k = key(record)
            if k is None:
                continue
            if k in seen:
                raise UserError(
                    f"{self.at(journal, n)}: {what(record)} again (first at line {seen[k][0]}): a line duplicated; "
                    f"{CHANGED}"
                )
            seen[k] = (n, record)
        return seen


@dataclass
class Repairs:
    """What ``read_run`` re-derived exactly; ``apply_repairs`` writes it back (resume does)."""

    rejections: list[tuple[int, Rejection]] = field(default_factory=list)
    """(the line of ``rejected.jsonl`` it goes before, the rejection) for rejections re-derived."""
    stats: list[TaskStats] = field(default_factory=list)


@dataclass
class _Slot:
    """One place in an epoch's decision order: a failed request, or one of a request's candidates."""

    key: tuple[int, int]
    rejection: Callable[[], Rejection] | None
    """The rejection it gets when it can be derived from the proposal alone (it did not parse), made
    when asked for: only a lost one is, and making it reads the proposal whole."""
    task_id: str | None


def _slots(
    epoch: int,
    plan: EpochPlan,
    answers: dict[int, tuple[int, ProposalRecord | AnswerRef]],
    raw: Callable[[int, ProposalRecord | AnswerRef], dict[str, Any]],
) -> list[_Slot]:
    """The epoch's decision order as far as it is known: requests in plan order up to the first one
    with no recorded answer (decisions stop there), each answer's candidates in position order.
    ``answers``: request index -> (its ``proposals.jsonl`` line, its record); ``raw``: that row as written."""

    def proposal(n: int, answer: ProposalRecord | AnswerRef) -> Proposal:
        return Proposal.from_record(raw(n, answer))

    def failed(n: int, answer: ProposalRecord | AnswerRef) -> Callable[[], Rejection]:
        return lambda: request_rejection(epoch, answer.request_index, proposal(n, answer))

    def unparsed(n: int, answer: ProposalRecord | AnswerRef, key: tuple[int, int]) -> Callable[[], Rejection]:
        def make() -> Rejection:
            whole = proposal(n, answer)
            candidate = next(c for c in whole.candidates if c.position == key)
            return candidate_rejection(epoch, answer.request_index, whole, candidate)

        return make

    slots: list[_Slot] = []
    for request in plan.requests:
        found = answers.get(request.request_index)
        if found is None:
            break
        n, answer = found
        if answer.failure:
            slots.append(_Slot((request.request_index, REQUEST_FAILED), failed(n, answer), None))
        for cand in answer.candidates or ():
            key = (request.request_index, cand.position)
            if cand.task_id is None:
                slots.append(_Slot(key, unparsed(n, answer, key), None))
            else:
                slots.append(_Slot(key, None, cand.task_id))
    return slots


def check_run(lines: Lines) -> Repairs:
    """The checks of ``read_run`` on a self-play run, in an order that names the likeliest cause first: repeated lines,
    the epochs' sequence, answers, decisions, then episodes and their stats."""
    repairs = Repairs()
    tasks, stats, trajs = lines.episodes()
    lines.unique(  # a rejection repeated (those of requests with no index cannot be told apart)
        REJECTED,
        lambda r: (r.epoch, *decision_key(r.request_index, r.position)) if r.request_index is not None else None,
        lambda r: f"the rejection of epoch {r.epoch} request {r.request_index} position {r.position}",
    )
    plans = lines.unique(PLANS, lambda p: p.epoch, lambda p: f"the plan of epoch {p.epoch}")
    proposals = lines.unique(
        PROPOSALS,
        lambda p: (p.epoch, p.request_index),
        lambda p: f"the answer to epoch {p.epoch} request {p.request_index}",
    )
    metrics: dict[int, tuple[int, EpochMetrics | MetricsRef]] = {}
    for i, (n, row) in enumerate(lines.rows[METRICS]):
        if row.epoch != i:
            why = (
                f"a second row for epoch {row.epoch} (first at line {metrics[row.epoch][0]}): a line duplicated"
                if row.epoch in metrics
                else f"the row of epoch {row.epoch} where epoch {i}'s belongs: a line was removed"
            )
            raise UserError(f"{lines.at(METRICS, n)}: {why}; {CHANGED}")
        metrics[i] = (n, row)
    finished = len(metrics)

    by_epoch: dict[int, list[tuple[int, Task | TaskRef]]] = defaultdict(list)
    for n, task in tasks.values():
        by_epoch[_epoch_of(task)].append((n, task))
    rejections_of: dict[int, list[tuple[int, Rejection | RejectionRef]]] = defaultdict(list)
    for n, r in lines.rows[REJECTED]:
        rejections_of[r.epoch].append((n, r))
    later = [
        (lines.ref(journal, n), epoch)
        for journal, epochs in (
            (TASKS, [(n, _epoch_of(t)) for n, t in tasks.values()]),
            (REJECTED, [(n, r.epoch) for n, r in lines.rows[REJECTED]]),
            (PLANS, [(n, p.epoch) for n, p in plans.values()]),
            (PROPOSALS, [(n, p.epoch) for n, p in proposals.values()]),
        )
        for n, epoch in epochs
        if epoch > finished + 1  # overlapped epochs (``controller.overlap``): the next one starts early
    ]
    if later:
        where, epoch = later[0]
        raise UserError(
            f"{lines.path(METRICS)}: no row for epoch {epoch - 2}, though epoch {epoch} has records ({where}); "
            f"{CHANGED}"
        )

    answers_of: dict[int, dict[int, tuple[int, ProposalRecord | AnswerRef]]] = defaultdict(dict)
    for (epoch, request), found in proposals.items():  # by epoch once: a scan per epoch grew with the square
        answers_of[epoch][request] = found
    epochs = sorted({*range(finished + 1), *by_epoch, *rejections_of} - {-1})
    for epoch in epochs:
        answers = answers_of.get(epoch, {})
        _check_decisions(lines, epoch, metrics.get(epoch), plans, answers, by_epoch, rejections_of, trajs, repairs)
    check_episodes(lines, tasks, stats, trajs)
    for epoch in range(finished):
        n_metrics, row = metrics[epoch]
        epoch_tasks = [t for _, t in by_epoch.get(epoch, [])]
        episodes = sum(trajs.episodes(t.task_id) for t in epoch_tasks)
        if episodes != row.episodes + row.abandoned:  # abandoned episodes are recorded, not measured
            unstated = [t.task_id for t in epoch_tasks if t.task_id not in stats and t.task_id in trajs.by_task]
            hint = f" (tasks without a task_stats row: {_ids(unstated)})" if unstated else ""
            raise UserError(
                f"{lines.path(TRAJECTORIES)}: epoch {epoch} has {_plural(episodes, 'episode')}, its metrics "
                f"({lines.ref(METRICS, n_metrics)}) say {row.episodes + row.abandoned}{hint}; {CHANGED}"
            )
        for task in epoch_tasks:  # the episodes are complete: a lost stats row is recomputed exactly
            if task.task_id not in stats and trajs.episodes(task.task_id):
                episodes_of = lines.trajectories(task.task_id)
                repairs.stats.append(task_stats(task.task_id, epoch, task.kind, episodes_of))
    return repairs


def _check_decisions(
    lines: Lines,
    epoch: int,
    metrics: tuple[int, EpochMetrics | MetricsRef] | None,
    plans: dict[Any, tuple[int, EpochPlan | PlanRef]],
    answers: dict[int, tuple[int, ProposalRecord | AnswerRef]],
    by_epoch: dict[int, list[tuple[int, Task | TaskRef]]],
    rejections_of: dict[int, list[tuple[int, Rejection | RejectionRef]]],
    trajs: EpisodeIndex,
    repairs: Repairs,
) -> None:
    """One epoch's tasks and rejections against its answers (request index -> (line, record)) and (once
    finished) its metrics row."""
    decided: dict[tuple[int, int], tuple[str, int]] = {}
    for n, task in by_epoch.get(epoch, []):
        key = _key_of(task)
        if key is not None:
            decided[key] = (TASKS, n)
    for n, r in rejections_of.get(epoch, []):
        if r.request_index is None:
            continue
        key = decision_key(r.request_index, r.position)
        if key in decided:
            journal, first = decided[key]
            raise UserError(
                f"{lines.at(REJECTED, n)}: rejects epoch {epoch} request {key[0]} position {r.position}, which "
                f"{lines.ref(journal, first)} decided already; {CHANGED}"
            )
        decided[key] = (REJECTED, n)
    missing: list[_Slot] = []
    if answers:  # an epoch of an older spade's run kept no answers
        missing = _gaps(lines, epoch, metrics, plans, answers, decided)
    derived = [(slot.key, slot.rejection()) for slot in missing if slot.rejection is not None]
    unknown = [slot for slot in missing if slot.rejection is None]
    if metrics is not None:
        _check_counts(lines, epoch, metrics, by_epoch, rejections_of, derived, unknown)
    elif unknown:  # the running epoch: a gap in its decisions (its last one may be lost: a kill)
        slot = unknown[0]
        where = lines.path(TASKS) if slot.task_id in trajs.by_task else f"{lines.path(TASKS)} or {REJECTED}"
        raise UserError(
            f"{where}: epoch {epoch} has no decision for request {slot.key[0]} position "
            f"{slot.key[1]} ({slot.task_id}), though later candidates are decided; {CHANGED}"
        )
    for key, rejection in derived:
        repairs.rejections.append((_line_before(lines, epoch, key), rejection))


def _gaps(
    lines: Lines,
    epoch: int,
    metrics: tuple[int, EpochMetrics | MetricsRef] | None,
    plans: dict[Any, tuple[int, EpochPlan | PlanRef]],
    located: dict[int, tuple[int, ProposalRecord | AnswerRef]],
    decided: dict[tuple[int, int], tuple[str, int]],
) -> list[_Slot]:
    """The places of the epoch's decision order that should be decided and are not: all its metrics
    row counts once it finished, up to its last decision while it runs."""
    found = plans.get(epoch)
    if found is None:
        if metrics is not None or decided:
            why = f"which finished ({lines.ref(METRICS, metrics[0])})" if metrics else "which has decisions"
            raise UserError(f"{lines.path(PLANS)}: no plan for epoch {epoch}, {why}; {CHANGED}")
        return []
    answers = {request: row for request, (_, row) in located.items()}
    plan = lines.plan(found[1])
    slots = _slots(epoch, plan, located, lines.raw_proposal)
    order = {slot.key: i for i, slot in enumerate(slots)}
    unanswered = [r.request_index for r in plan.requests if r.request_index not in answers]
    for key in sorted(k for k in decided if k not in order):  # the first such decision, in decision order
        journal, n = decided[key]
        before = [r for r in unanswered if r <= key[0]]  # decisions stop at the first unanswered request
        why = (
            f"no answer to epoch {epoch} request {before[0]}"
            if before
            else f"epoch {epoch} request {key[0]}'s answer has no candidate at position {key[1]}"
        )
        raise UserError(
            f"{lines.path(PROPOSALS)}: {why}, though {lines.ref(journal, n)} decides request {key[0]} position "
            f"{key[1]}; {CHANGED}"
        )
    if metrics is None:
        return [slot for slot in slots[: max((order[k] + 1 for k in decided), default=0)] if slot.key not in decided]
    n_metrics, row = metrics
    made = sum(p.n if p.failure else len(p.candidates or []) for p in answers.values())
    if made != row.tasks_proposed:
        hint = f"; no answer to request {_ids([str(r) for r in unanswered])}" if unanswered else ""
        raise UserError(
            f"{lines.path(PROPOSALS)}: epoch {epoch}'s answers hold {made} proposals, its metrics "
            f"({lines.ref(METRICS, n_metrics)}) say {row.tasks_proposed}{hint}; {CHANGED}"
        )
    size = row.tasks_accepted + sum(row.rejected_by_reason.values())
    if size > len(slots):
        raise UserError(
            f"{lines.path(PROPOSALS)}: epoch {epoch}'s answers hold {len(slots)} candidates, its metrics "
            f"({lines.ref(METRICS, n_metrics)}) count {size} decisions; {CHANGED}"
        )
    beyond = sorted((order[k], k) for k in decided if order[k] >= size)
    if beyond:
        journal, n = decided[beyond[0][1]]
        raise UserError(
            f"{lines.at(journal, n)}: epoch {epoch} decided more candidates than its metrics count; {CHANGED}"
        )
    return [slot for slot in slots[:size] if slot.key not in decided]


def _check_counts(
    lines: Lines,
    epoch: int,
    metrics: tuple[int, EpochMetrics | MetricsRef],
    by_epoch: dict[int, list[tuple[int, Task | TaskRef]]],
    rejections_of: dict[int, list[tuple[int, Rejection | RejectionRef]]],
    derived: list[tuple[tuple[int, int], Rejection]],
    unknown: list[_Slot],
) -> None:
    """A finished epoch's tasks, and its rejections by reason (with those re-derived), against its
    metrics row; ``unknown``: the undecided candidates that only the sandbox could decide."""
    n_metrics, row = metrics
    said = f"its metrics ({lines.ref(METRICS, n_metrics)}) say"
    have_tasks = len(by_epoch.get(epoch, []))
    if have_tasks != row.tasks_accepted:
        short = row.tasks_accepted - have_tasks
        ids = [s.task_id or "?" for s in unknown]
        what = ""
        if short > 0 and unknown:
            what = f" (missing {_ids(ids)})" if short == len(unknown) else f" (missing {short} of {_ids(ids)})"
        raise UserError(
            f"{lines.path(TASKS)}: epoch {epoch} has {_plural(have_tasks, 'task')}, {said} "
            f"{row.tasks_accepted}{what}; {CHANGED}"
        )
    reasons = Counter(r.reason for _, r in rejections_of.get(epoch, []))
    reasons.update(rejection.reason for _, rejection in derived)
    if dict(reasons) != {k: v for k, v in row.rejected_by_reason.items() if v}:
        diff = sorted(set(reasons) | set(row.rejected_by_reason))
        reason = next(r for r in diff if reasons.get(r, 0) != row.rejected_by_reason.get(r, 0))
        ids = [f"{s.task_id} at request {s.key[0]} position {s.key[1]}" for s in unknown]
        hint = f" (missing: the rejection of {_ids(ids)})" if ids else ""
        raise UserError(
            f"{lines.path(REJECTED)}: epoch {epoch} has {_plural(reasons.get(reason, 0), 'rejection')} for "
            f"{reason!r}, {said} {row.rejected_by_reason.get(reason, 0)}{hint}; {CHANGED}"
        )


def _line_before(lines: Lines, epoch: int, key: tuple[int, int]) -> int:
    """The ``rejected.jsonl`` line a re-derived rejection goes before: the file is in decision order
    (epochs in turn, each in (request, position) order), so the first line that sorts after it."""
    for n, r in lines.rows[REJECTED]:
        if (r.epoch, *decision_key(r.request_index, r.position)) > (epoch, *key):
            return n
    return 10**12


def check_episodes(
    lines: Lines,
    tasks: dict[Any, tuple[int, Task]],
    stats: dict[Any, tuple[int, TaskStats]],
    trajs: EpisodeIndex,
    epochs: bool = True,
) -> None:
    """Every episode and stats row names a known task; a stats row counts its task's episodes.
    ``epochs``: name the task's epoch (a run's tasks have one; a solve's are all its own)."""
    for task_id, held in trajs.by_task.items():  # tasks in the order of their first episode: the first
        if task_id not in tasks:  # unknown one's first episode is the first episode of an unknown task
            raise UserError(
                f"{lines.path(TASKS)}: no task {task_id}, though {lines.ref(TRAJECTORIES, held[1])} is one of its "
                f"episodes; {CHANGED}"
            )
    for task_id, (n, row) in stats.items():
        if task_id not in tasks:
            raise UserError(
                f"{lines.path(TASKS)}: no task {task_id}, though {lines.ref(TASK_STATS, n)} is its stats row; {CHANGED}"
            )
        have = sorted(trajs.samples(task_id))
        if len(have) != row.samples:
            samples = f" (sample {', '.join(map(str, have))})" if have else ""
            epoch = f" (epoch {_epoch_of(tasks[task_id][1])})" if epochs else ""
            count = _plural(len(have), "trajectory")
            raise UserError(
                f"{lines.path(TRAJECTORIES)}: task {task_id}{epoch} has {count}{samples}, its task_stats row "
                f"({lines.ref(TASK_STATS, n)}) says {row.samples}; {CHANGED}"
            )


def check_solve(lines: Lines, summary: Any) -> None:
    """A solve's checks: every line a record of its kind (FILE:LINE), none twice, every episode and
    stats row of a known task, each stats row counting its task's episodes, and as many tasks (and at
    least as many episodes) as ``summary.json`` counted when it was written.

    A lost stats row needs no repair here: ``Session.solve`` writes the row of every task whose
    samples are all judged, as after a kill.
    """
    tasks, stats, trajs = lines.episodes()
    check_episodes(lines, tasks, stats, trajs, epochs=False)
    if isinstance(summary, dict) and "epochs" not in summary:
        counted, episodes = summary.get("tasks"), summary.get("trajectories")
        if isinstance(counted, int) and counted != len(tasks):
            raise UserError(
                f"{lines.path(TASKS)}: {_plural(len(tasks), 'task')}, summary.json counted {counted}; {CHANGED}"
            )
        if isinstance(episodes, int) and episodes > trajs.count:
            raise UserError(
                f"{lines.path(TRAJECTORIES)}: {_plural(trajs.count, 'trajectory')}, summary.json counted "
                f"{episodes} when it was written; {CHANGED}"
            )
