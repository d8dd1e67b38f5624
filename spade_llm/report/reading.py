"""What the page is made of, computed from the run's records: the run is read once, through
``spade_llm.store.read_run(path, tolerant=True)`` (a run still going or damaged still gets a page:
a line that is not a record is counted in ``damaged`` and skipped), and everything here is derived
from those typed records: episode counts, the tasks table's rows, the run's state, its totals.

The trajectories, a run's bulk, are streamed (``store.RunStream``): each is counted as it passes, and
what the page may embed of it is kept as its byte offset (per task a few candidates, ``TaskPicks``), read
again only if the sample takes it. Tasks and rejections are streamed too, each kept as what the page
shows of it (``TaskBrief``, ``RejectionBrief``): a task's reference and tests are read again for the
tasks the sample embeds. So the page's memory follows the tasks' briefs, not the records."""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..kinds.names import DEFAULT_KIND
from ..store import (
    METRICS,
    PLANS,
    PROPOSALS,
    REJECTED,
    TASK_STATS,
    TASKS,
    TRAJECTORIES,
    LazyRows,
    RunRecords,
    RunStream,
    read_run,
)
from ..types import Attempt, EpochMetrics, Rejection, Task, TaskStats, Trajectory
from .common import num, snippet, text_of, to_int


@dataclass(slots=True)
class TaskCounts:
    """One task's episodes, counted."""

    samples: int = 0
    passed: int = 0
    turns: int = 0


PER_TASK = 3
"""Trajectories kept per task at most: a repaired one, a failing one, one passed first try."""
CATEGORIES = ("repaired", "failing", "first_try")
"""Kinds of episode kept per task, in order of preference (package docstring)."""


def category(trajectory: Trajectory) -> str:
    if trajectory.final_status != "passed":
        return "failing"
    return "first_try" if len(trajectory.attempts) <= 1 else "repaired"


@dataclass(slots=True)
class TaskPicks:
    """One task's candidate episodes, by byte offset in ``trajectories.jsonl``: the first of each
    category, then others in file order."""

    picks: dict[str, int] = field(default_factory=dict)
    """The first episode of each category."""
    extras: list[tuple[int, str]] = field(default_factory=list)
    """Further episodes in file order, up to ``PER_TASK``: they fill the places no category took."""

    def keep(self, offset: int, kind: str) -> None:
        if kind not in self.picks:
            self.picks[kind] = offset
        elif len(self.extras) < PER_TASK - 1:
            self.extras.append((offset, kind))

    def ordered(self) -> list[tuple[int, str]]:
        """(offset, category) of the episodes to embed, best first."""
        firsts = [(self.picks[c], c) for c in CATEGORIES if c in self.picks]
        return [*firsts, *self.extras][:PER_TASK]


@dataclass
class Episodes:
    """Aggregates over the run's trajectories: what the charts and the header need."""

    count: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    turns_to_pass: Counter[int] = field(default_factory=Counter)
    not_passed: int = 0
    attempt_classes: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    flags: Counter[str] = field(default_factory=Counter)
    reward_sum: float = 0.0
    rewarded: int = 0
    per_task: dict[str, TaskCounts] = field(default_factory=dict)
    epoch_of: dict[str, int] = field(default_factory=dict)
    kind_of: dict[str, str] = field(default_factory=dict)
    tokens: int = 0
    """Prompt and completion tokens of every episode."""
    picks: dict[str, TaskPicks] = field(default_factory=dict)
    """Per task id (in file order of first appearance), the episodes the page may embed."""
    answers: dict[str, tuple[int | None, int]] = field(default_factory=dict)
    """Per task id: its first passing played episode (None: none passed) and its last played one, by offset
    (``sampling.beside_answers``)."""

    def add(self, t: Trajectory, offset: int = -1) -> None:
        """Count one episode (at ``offset`` in ``trajectories.jsonl``)."""
        status = t.final_status
        self.count += 1
        self.statuses[status] += 1
        reward = num(t.reward)
        if reward is not None:
            self.reward_sum += reward
            self.rewarded += 1
        if status == "passed":
            self.turns_to_pass[max(1, len(t.attempts))] += 1
        else:
            self.not_passed += 1
        for n, a in enumerate(t.attempts, 1):
            cls = attempt_class(a)
            if cls is not None:
                self.attempt_classes[cls][n] += 1
        for flag in t.flags:
            self.flags[flag] += 1
        self.epoch_of.setdefault(t.task_id, t.epoch)
        self.kind_of.setdefault(t.task_id, t.kind)
        per = self.per_task.setdefault(t.task_id, TaskCounts())
        per.samples += 1
        per.passed += status == "passed"
        per.turns += len(t.attempts)
        self.tokens += t.usage.prompt_tokens + t.usage.completion_tokens
        self.picks.setdefault(t.task_id, TaskPicks()).keep(offset, category(t))
        if t.attempts:
            first_pass, _ = self.answers.get(t.task_id, (None, offset))
            if first_pass is None and status == "passed":
                first_pass = offset
            self.answers[t.task_id] = (first_pass, offset)


@dataclass(frozen=True, slots=True)
class TaskBrief:
    """What the page shows of an accepted task but its reference and tests (the tasks table, the coverage
    chart, the tags), and where it is read again whole (``RunData.task``)."""

    task_id: str
    kind: str
    difficulty: float
    tags: tuple[str, ...]
    description: str
    """Its first line, clipped (``common.snippet``): all the tasks table shows of it."""
    epoch: Any
    """``meta["epoch"]`` as written; None when its meta does not say."""
    offset: int
    """In ``tasks.jsonl``."""

    @classmethod
    def of(cls, task: Task, offset: int = -1) -> TaskBrief:
        epoch = task.meta.get("epoch")
        tags = tuple(sys.intern(tag) for tag in task.tags)  # a run's tags repeat: one string each
        return cls(task.task_id, sys.intern(task.kind), task.difficulty, tags, snippet(task.description), epoch, offset)


@dataclass(frozen=True, slots=True)
class StatsBrief:
    """What the tasks table reads of a ``task_stats.jsonl`` row."""

    epoch: int
    learnability: float | None

    @classmethod
    def of(cls, stats: TaskStats) -> StatsBrief:
        return cls(stats.epoch, stats.learnability)


@dataclass(frozen=True, slots=True)
class RejectionBrief:
    """What the page shows of a rejection (without the task and the answer it carries)."""

    epoch: int
    reason: str
    task_id: str | None
    detail: str

    @classmethod
    def of(cls, rejection: Rejection) -> RejectionBrief:
        return cls(rejection.epoch, sys.intern(rejection.reason), rejection.task_id, rejection.detail)


class MetricsText(LazyRows):
    """A run's metrics rows in epoch order, each kept as its JSON text and made a model again when read:
    held as models, the rows of a run of 30,000 epochs took ~10x their ``metrics.jsonl`` (a third of the
    page's memory at a million trajectories); the charts read them a dozen times, ~1 s a pass there."""

    def __init__(self, rows: Iterable[EpochMetrics]) -> None:
        by_epoch = sorted(((row.epoch, row.model_dump_json().encode()) for row in rows), key=lambda kept: kept[0])
        self._rows = [text for _, text in by_epoch]

    def __len__(self) -> int:
        return len(self._rows)

    def _row(self, index: int) -> EpochMetrics:
        return EpochMetrics.model_validate_json(self._rows[index])


@dataclass
class RunData:
    """Everything the page is made of, read once: the run's records (without the trajectories, which are
    streamed and counted: ``episodes``) and what is counted from them."""

    records: RunRecords
    metrics: Sequence[EpochMetrics]
    """By epoch (``MetricsText``, read from a run)."""
    task_stats: dict[str, StatsBrief]
    """By task id (the last row of a task wins)."""
    episodes: Episodes
    stream: RunStream | None = None
    """Where the episodes ``episodes`` keeps by offset are read again (``trajectory``)."""
    tasks: list[TaskBrief] = field(default_factory=list)
    """The accepted tasks, in file order."""
    rejected: list[RejectionBrief] = field(default_factory=list)
    """The rejections, in file order."""
    is_solve: bool = False
    """A ``spade solve`` directory: no plan, proposal or epoch was ever written (``RunRecords.is_solve``)."""

    def trajectory(self, offset: int) -> Trajectory:
        """The episode at ``offset`` of ``trajectories.jsonl`` (one ``episodes`` kept)."""
        assert self.stream is not None
        record: Trajectory = self.stream.at(TRAJECTORIES, offset)
        return record

    @property
    def path(self) -> Path:
        return self.records.path

    @property
    def config(self) -> dict[str, Any]:
        return self.records.config

    @property
    def manifest(self) -> dict[str, Any]:
        return self.records.manifest

    @property
    def summary(self) -> dict[str, Any]:
        return self.records.summary

    def task(self, brief: TaskBrief) -> Task:
        """The accepted task ``brief`` describes, whole (read again from ``tasks.jsonl``)."""
        if brief.offset < 0 or self.stream is None:
            raise ValueError(f"task {brief.task_id} was not read from a run directory")
        record: Task = self.stream.at(TASKS, brief.offset)
        return record

    @property
    def damaged(self) -> Counter[str]:
        return self.records.damaged


def read_report_data(run_dir: Path | str) -> RunData:
    """Read a run directory, tolerating a run still being written (partial lines, no summary yet).

    Raises:
        UserError: ``run_dir`` is missing or not a run directory (no ``config.yaml``).
    """
    # the bulk is streamed (trajectories, tasks, stats rows, rejections) or never shown (proposals, plans)
    skip = (TRAJECTORIES, PROPOSALS, TASKS, REJECTED, PLANS, TASK_STATS, METRICS)
    records = read_run(run_dir, tolerant=True, skip=skip)
    stream = RunStream(run_dir, tolerant=True)
    metrics = MetricsText(row for _, row in stream.records(METRICS))
    task_stats = {stats.task_id: StatsBrief.of(stats) for _, stats in stream.records(TASK_STATS)}
    tasks = [TaskBrief.of(task, offset) for offset, task in stream.records(TASKS)]
    rejected = [RejectionBrief.of(rejection) for _, rejection in stream.records(REJECTED)]
    episodes = Episodes()
    for offset, trajectory in stream.records(TRAJECTORIES):
        episodes.add(trajectory, offset)
    records.damaged.update(stream.damaged)
    return RunData(
        records=records,
        metrics=metrics,
        task_stats=task_stats,
        episodes=episodes,
        stream=stream,
        tasks=tasks,
        rejected=rejected,
        is_solve=not stream.played,
    )


def config_section(run: RunData, name: str) -> dict[str, Any]:
    """One section of ``config.yaml`` (``controller``, ``solver``...), empty when missing or damaged."""
    value = run.config.get(name)
    return value if isinstance(value, dict) else {}


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))\b")


def attempt_class(attempt: Attempt) -> str | None:
    """Why one attempt failed, in one word (None when every test passed): ``timeout``, ``memory``...,
    ``no_code``, an exception type, ``hidden_only`` (the public tests passed, hidden ones did not: a
    sign of hard-coding) or ``wrong_answer``. It follows ``evaluator.failure_class``, per attempt."""
    result = attempt.result
    tests = result.test_results or []
    total = result.tests_total or 0
    if total and (result.tests_passed or 0) == total:
        return None
    status = result.status
    if status == "timeout" or any(t.status == "timeout" for t in tests):
        return "timeout"
    if status in ("memory", "output_limit", "killed"):
        return status
    if not attempt.code.strip():
        return "no_code"
    for text in [result.load_error or "", *(t.error or "" for t in tests if t.status != "passed")]:
        match = _EXCEPTION.match(text.strip())
        if match:
            return match.group(1).rsplit(".", 1)[-1]
    if attempt.public_total and attempt.public_passed == attempt.public_total:
        return "hidden_only"
    return "wrong_answer"


# -- the tasks table -------------------------------------------------------------------------------


@dataclass(slots=True)
class TaskRow:
    task_id: str
    epoch: int
    kind: str
    difficulty: float | None
    tags: tuple[str, ...]
    description: str
    samples: int
    passed: int
    mean_turns: float | None
    learnability: float | None
    status: str


STATUS_LABELS = {
    "solved": "all samples passed",
    "mixed": "some samples passed",
    "unsolved": "no sample passed",
    "pending": "not solved yet",
}


def _task_status(samples: int, passed: int) -> str:
    if samples == 0:
        return "pending"
    return "solved" if passed == samples else "unsolved" if passed == 0 else "mixed"


def task_rows(run: RunData) -> list[TaskRow]:
    """One row per accepted task, and per task that only trajectories name (``spade solve`` runs)."""
    rows: list[TaskRow] = []
    seen: set[str] = set()
    eps = run.episodes
    records: list[TaskBrief | str] = [*run.tasks, *eps.per_task]  # repeats are skipped below
    for t in records:
        task = t if isinstance(t, TaskBrief) else None
        task_id = t.task_id if isinstance(t, TaskBrief) else t
        if task_id in seen:
            continue
        seen.add(task_id)
        per = eps.per_task.get(task_id, TaskCounts())
        stats = run.task_stats.get(task_id)
        epoch: Any = stats.epoch if stats is not None else eps.epoch_of.get(task_id, 0)
        if task is not None and task.epoch is not None:
            epoch = task.epoch
        p = per.passed / per.samples if per.samples else None
        learn_default = None if p is None else (1 - p if 0 < p < 1 else 0.0)
        learn = num(stats.learnability, learn_default) if stats is not None else learn_default
        rows.append(
            TaskRow(
                task_id=task_id,
                epoch=to_int(epoch),
                kind=task.kind if task is not None else eps.kind_of.get(task_id, DEFAULT_KIND),
                difficulty=num(task.difficulty) if task is not None else None,
                tags=task.tags if task is not None else (),
                description=task.description if task is not None else "",
                samples=per.samples,
                passed=per.passed,
                mean_turns=per.turns / per.samples if per.samples else None,
                learnability=learn,
                status=_task_status(per.samples, per.passed),
            )
        )
    return rows


def task_epoch(task: TaskBrief) -> int:
    """The epoch that accepted ``task`` (0 when its ``meta`` does not say)."""
    return to_int(task.epoch)


# -- the run as a whole ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunStatus:
    complete: bool
    label: str


def run_status(run: RunData) -> RunStatus:
    """Finished, stopped early, or still going: ``summary.json``'s ``complete`` is only set after the
    last epoch's hooks, so a run with all its epochs counts as finished too."""
    planned = to_int(config_section(run, "controller").get("epochs"))
    if run.summary.get("stopped_because"):
        return RunStatus(False, f"stopped early: {run.summary['stopped_because']}")
    if run.summary.get("complete") is True or (planned and len(run.metrics) >= planned):
        return RunStatus(True, "complete")
    return RunStatus(False, f"in progress: {len(run.metrics)} of {planned or '?'} epochs")


def models(run: RunData) -> tuple[str, str]:
    """The generator's and the solver's model names (``?`` when the run does not say)."""
    named = run.manifest.get("models") if isinstance(run.manifest.get("models"), dict) else {}
    assert isinstance(named, dict)
    gen = named.get("generator") or config_section(run, "generator").get("model")
    sol = named.get("solver") or config_section(run, "solver").get("model")
    return text_of(gen) or "?", text_of(sol) or "?"


def total_tokens(run: RunData) -> int:
    usage = run.summary.get("usage")
    if isinstance(usage, dict):
        return sum(
            to_int(u.get(k))
            for u in usage.values()
            if isinstance(u, dict)
            for k in ("prompt_tokens", "completion_tokens")
        )
    if run.is_solve:  # no epoch rows: the episodes carry what the solver spent
        return run.episodes.tokens
    return sum(
        m.prompt_tokens + m.completion_tokens + m.generator_prompt_tokens + m.generator_completion_tokens
        for m in run.metrics
    )


def pass_at_k(run: RunData) -> dict[str, float]:
    """A solve's pass@k (``summary.json``'s ``pass_at_k``, ``{"1": 0.4, "10": 0.7}``), or computed from its
    episodes while it runs (every task with at least k samples); {} for a self-play run."""
    if not run.is_solve:
        return {}
    written = run.summary.get("pass_at_k")
    if isinstance(written, dict) and written:
        return {str(k): float(v) for k, v in written.items() if num(v) is not None}
    from ..evaluator import counted_pass_at_k

    return counted_pass_at_k({task_id: (c.samples, c.passed) for task_id, c in run.episodes.per_task.items()})


def llm_roles(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``summary.json``'s ``llm.by_role``, or the totals as one ``all`` role for older summaries."""
    llm = summary.get("llm") if isinstance(summary.get("llm"), dict) else {}
    assert isinstance(llm, dict)
    roles = llm.get("by_role")
    if isinstance(roles, dict) and roles:
        return {text_of(k): v for k, v in roles.items() if isinstance(v, dict)}
    return {"all": llm} if llm else {}


FUNNEL_STAGES = ("proposed", "parsed", "valid", "novel", "accepted")


def funnel_totals(run: RunData) -> dict[str, int]:
    totals: Counter[str] = Counter()
    for m in run.metrics:
        if m.funnel:
            for stage in FUNNEL_STAGES:
                totals[stage] += m.funnel.get(stage, 0)
        else:  # older rows: the ends of the funnel only
            totals["proposed"] += m.tasks_proposed
            totals["accepted"] += m.tasks_accepted
    return {stage: totals[stage] for stage in FUNNEL_STAGES if stage in totals}


def top(counter: Counter[str], n: int) -> list[str]:
    """The ``n`` most common keys; ties broken by name so the order is stable."""
    return [k for k, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
