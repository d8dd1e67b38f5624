"""The episode loop ``spade run`` and ``spade solve`` share: what a run's loop holds of its records
(``RunState``), and ``Episodes``, which runs each sample of a task that has no trajectory yet,
appends its trajectory, and writes the task's ``task_stats`` row once all its samples are judged.

Episodes are keyed by (task, sample) and each record is a function of its key (the solver seeds
its turns from it), so the order episodes end in never changes what is written.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from .curriculum import EpochPlan, KnownTask
from .evaluator import FacetCounts, count_facets, count_labels, proposed_tasks, task_stats
from .executors import Executor, WorkItem
from .store import (
    METRICS,
    PLANS,
    PROPOSALS,
    REJECTED,
    TASK_STATS,
    TASKS,
    TRAJECTORIES,
    MetricsRows,
    RunDir,
    RunStream,
    apply_repairs,
    read_checked,
    record_at,
)
from .types import (
    ABANDONED,
    EpochMetrics,
    Rejection,
    Task,
    TaskStats,
    TokenUsage,
    Trajectory,
    decision_key,
    task_epoch,
)


@dataclass
class RunTally:
    """Counts over every episode, answer and rejection a run recorded, kept as they are added: what
    ``summary.json`` says of the whole run, without the records (``RunState`` lets finished epochs' go)."""

    episodes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    """final status -> episodes."""
    reward: Fraction = Fraction(0)
    """The exact sum of the episodes' rewards (so the mean is ``math.fsum``'s, whatever the order)."""
    first_try_passed: int = 0
    turns: int = 0
    solver_usage: TokenUsage = field(default_factory=TokenUsage)
    generator_prompt_tokens: int = 0
    generator_completion_tokens: int = 0
    generator_cost: float | None = None
    """The sum of the answers' costs in the order they were recorded; None while no answer had one."""
    reasons: Counter[str] = field(default_factory=Counter)
    """rejection reason -> rejections."""
    facets: FacetCounts = field(default_factory=dict)
    """``evaluator.facet_counts`` of the run, counted as its records are added."""

    def add_episode(self, trajectory: Trajectory, task: KnownTask | None) -> None:
        """An episode, and what the run keeps of its task (its facet labels, computed once)."""
        self.episodes += 1
        self.statuses[trajectory.final_status] += 1
        self.reward += Fraction(trajectory.reward)
        self.first_try_passed += bool(trajectory.attempts and trajectory.attempts[0].result.all_passed)
        self.turns += len(trajectory.attempts)
        self.solver_usage = self.solver_usage + trajectory.usage
        if ABANDONED in trajectory.flags:
            return
        passed = trajectory.final_status == "passed"
        if task is not None and task.facets is not None:
            count_labels(self.facets, task.kind, task.facets, "episodes")
            count_labels(self.facets, task.kind, task.facets, "passed", passed)

    def add_answer(self, row: dict[str, Any], proposed: Iterable[Task]) -> None:
        """A ``proposals.jsonl`` row, and the tasks its candidates parsed into."""
        self.generator_prompt_tokens += int(row["prompt_tokens"])
        self.generator_completion_tokens += int(row["completion_tokens"])
        if row.get("cost") is not None:
            self.generator_cost = (self.generator_cost or 0) + row["cost"]
        for task in proposed:
            count_facets(self.facets, task, "proposed")

    def pass_rate(self) -> float | None:
        """``evaluator.pass_rate`` of every episode."""
        return round(self.statuses["passed"] / self.episodes, 4) if self.episodes else None

    def mean_reward(self) -> float | None:
        """``evaluator.mean_reward`` of every episode."""
        return round(float(self.reward) / self.episodes, 4) if self.episodes else None


class Measured(NamedTuple):
    """What a run keeps of a task's ``task_stats`` row once its epoch is over."""

    epoch: int
    samples: int
    pass_rate: float | None


@dataclass
class RunState:
    """What a run's loop holds of its run directory (nothing, for a new run), indexed for the loop.

    A run's memory must not grow with its records: the tasks, episodes, answers, stats rows and plans of
    an epoch are held whole while it runs and let go once its metrics row is written (``end_epoch``):
    of a task then only what plans read (``KnownTask``), of a stats row its counts (``Measured``), of a
    metrics row its offset past the latest few (``MetricsRows``); the rest is counted in ``tally`` for
    the summary. A solve (no epoch ever finishes) holds its tasks and episodes.
    """

    path: Path | None = None
    """The run directory, where tasks let go are read again (None: nothing to read, a test's state)."""
    tasks: list[KnownTask] = field(default_factory=list)
    """Every accepted task, in file order."""
    open_tasks: dict[str, Task] = field(default_factory=dict)
    """task id -> the task whole, for the tasks of epochs still running (a solve's: all)."""
    metrics: MetricsRows = field(default_factory=MetricsRows)
    """Every metrics row, in epoch order (the latest few whole, the rest read again as asked for)."""
    rejected: list[Rejection] = field(default_factory=list)
    """The rejections of the epochs still running and of the last two finished (their duplicates shape
    the next plans); ``tally.reasons`` counts all."""
    task_stats: dict[str, TaskStats] = field(default_factory=dict)
    """task id -> its ``task_stats.jsonl`` row, for the tasks of epochs still running."""
    measured: dict[str, Measured] = field(default_factory=dict)
    """task id -> its stats row's counts, for every task that has one."""
    by_task: dict[str, list[Trajectory]] = field(default_factory=dict)
    """task id -> its trajectories, for the tasks of epochs still running (a solve's: all): episodes end
    one by one, and each asks whether its task is complete."""
    plans: dict[int, EpochPlan] = field(default_factory=dict)
    """The plans of the epochs still running and the one before them (an overlapped plan reads it)."""
    proposals: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    """(epoch, request index) -> the ``proposals.jsonl`` row, for the epochs still running."""
    tally: RunTally = field(default_factory=RunTally)
    _known: dict[str, KnownTask] = field(default_factory=dict, repr=False)

    def add_task(self, task: Task, offset: int = -1) -> None:
        """An accepted task, and where its line starts in ``tasks.jsonl`` (``RunDir.append_record``)."""
        known = KnownTask.of(task, offset)
        self.tasks.append(known)
        self._known[known.task_id] = known
        self.open_tasks[known.task_id] = task
        if known.facets is not None:
            count_labels(self.tally.facets, known.kind, known.facets, "accepted")

    def known(self, task_id: str) -> KnownTask | None:
        return self._known.get(task_id)

    def task(self, task_id: str) -> Task:
        """The accepted task ``task_id`` whole (read again from ``tasks.jsonl`` once its epoch is over).

        Raises:
            KeyError: the run has no such task.
        """
        held = self.open_tasks.get(task_id)
        if held is not None:
            return held
        known = self._known[task_id]
        if known.offset < 0 or self.path is None:
            raise KeyError(f"task {task_id} is no longer held, and was not read from a run directory")
        task: Task = record_at(self.path, TASKS, known.offset)
        return task

    def tasks_of(self, epoch: int) -> list[Task]:
        """The tasks of a running epoch, whole, in file order."""
        return [t for t in list(self.open_tasks.values()) if task_epoch(t) == epoch]

    def add_rejection(self, rejection: Rejection) -> None:
        self.rejected.append(rejection)
        self.tally.reasons[rejection.reason] += 1

    def add_stats(self, stats: TaskStats) -> None:
        self.task_stats[stats.task_id] = stats
        self.measured[sys.intern(stats.task_id)] = Measured(stats.epoch, stats.samples, stats.pass_rate)

    def add_proposal(self, epoch: int, request_index: int, row: dict[str, Any]) -> None:
        self.proposals[(epoch, request_index)] = row
        self.tally.add_answer(row, proposed_tasks([row]))

    def add_trajectory(self, trajectory: Trajectory) -> None:
        self.by_task.setdefault(trajectory.task_id, []).append(trajectory)
        self.tally.add_episode(trajectory, self._known.get(trajectory.task_id))

    def metrics_before(self, epoch: int) -> Sequence[EpochMetrics]:
        """The metrics rows of the epochs before ``epoch``, read as asked for."""
        return self.metrics.before(epoch)

    def whole(self, task_ids: Iterable[str]) -> dict[str, Task]:
        """Those of ``task_ids`` the run accepted, whole, by id (the few a plan names)."""
        return {i: self.task(i) for i in dict.fromkeys(task_ids) if i in self._known}

    def each_task(self) -> Iterator[Task]:
        """Every accepted task whole, in file order: those let go streamed from ``tasks.jsonl`` (the
        duplicate gate is built so on resume), in one pass."""
        if self.path is None or len(self.open_tasks) == len(self.tasks):
            yield from list(self.open_tasks.values())
            return
        for _, task in RunStream(self.path).records(TASKS):
            yield self.open_tasks.get(task.task_id, task)

    def recorded(self, task_id: str) -> int:
        """How many of the task's samples have a trajectory."""
        held = self.by_task.get(task_id)
        if held is not None:
            return len(held)
        stats = self.measured.get(task_id)
        return stats.samples if stats is not None else 0

    def episodes_of(self, epoch: int) -> list[Trajectory]:
        """The trajectories of ``epoch`` held (a running epoch's: all of them), safe to call while the loop
        adds more (the progress block's thread)."""
        return [t for held in list(self.by_task.values()) for t in list(held) if t.epoch == epoch]

    def end_epoch(self, row: EpochMetrics, offset: int = -1) -> None:
        """An epoch's metrics row is written (at ``offset`` of ``metrics.jsonl``): hold the row, and let
        the epoch's tasks, stats rows, episodes and answers go (counted in ``tally``), with the plans
        before it and the rejections before the one before it."""
        self.metrics.append(row, offset)
        epoch = row.epoch
        for task in self.tasks_of(epoch):
            del self.open_tasks[task.task_id]
            self.by_task.pop(task.task_id, None)
            self.task_stats.pop(task.task_id, None)
        self.proposals = {k: row for k, row in self.proposals.items() if k[0] > epoch}
        self.plans = {e: plan for e, plan in self.plans.items() if e >= epoch}
        # an overlapped plan made after the next epoch ended too reads this epoch's duplicates
        self.rejected = [r for r in self.rejected if r.epoch >= epoch - 1]

    @classmethod
    def load(cls, run: RunDir) -> RunState:
        """What ``run`` holds (nothing, for a new one), checked against itself first
        (``store.read_checked``), with what can be re-derived exactly written back: a line that is
        not a record, or records that disagree with what the run recorded, stop here with exit 2.
        Read in one pass: of the finished epochs' records only what ``end_epoch`` would keep is kept.

        Raises:
            UserError: the run directory is damaged (FILE:LINE), or was changed after it was written.
        """
        state = cls(path=run.path, metrics=MetricsRows(run.path))
        if not (run.path / "config.yaml").is_file():
            return state  # a new run: nothing written yet
        # the epochs finished, as its metrics rows count them (the checks then prove the count): their
        # records are counted as they pass, not held; a solve (no plan, answer or metrics row) holds
        # all its tasks and episodes
        written = RunStream(run.path)
        finished, solve = written.count(METRICS), not written.played

        def seen(journal: str, offset: int, raw: dict[str, Any], record: Any) -> None:
            if journal == TASKS:
                state.add_task(record, offset)
                if not solve and task_epoch(record) < finished:
                    del state.open_tasks[record.task_id]
            elif journal == TRAJECTORIES:
                state.tally.add_episode(record, state.known(record.task_id))
                if solve or record.epoch >= finished:
                    state.by_task.setdefault(record.task_id, []).append(record)
            elif journal == PROPOSALS:
                state.tally.add_answer(raw, [c.task for c in record.candidates or () if c.task is not None])
                if record.epoch >= finished:
                    state.proposals[(record.epoch, record.request_index)] = raw
            elif journal == REJECTED:
                keep(record)
            elif journal == TASK_STATS:
                stats(record)
            elif journal == METRICS:
                state.metrics.append(record, offset)
            elif journal == PLANS and record.epoch >= finished - 1:
                state.plans[record.epoch] = record

        def keep(rejection: Rejection) -> None:
            state.add_rejection(rejection)
            if rejection.epoch < finished - 2:  # counted, not held: as ``end_epoch`` leaves them
                state.rejected.pop()

        def stats(row: TaskStats) -> None:
            state.add_stats(row)
            if not solve and row.epoch < finished:
                del state.task_stats[row.task_id]

        checked = read_checked(run.path, seen=seen)
        apply_repairs(run, checked)
        for _, rejection in checked.repairs.rejections:
            keep(rejection)
        for row in checked.repairs.stats:
            stats(row)
        # in file order, as ``apply_repairs`` placed the re-derived ones (decision order)
        state.rejected.sort(key=lambda r: (r.epoch, *decision_key(r.request_index, r.position)))
        return state


class Episodes:
    """Runs a task's samples on ``executor``, at most ``executor.slots`` at once, recording each."""

    def __init__(
        self,
        run: RunDir,
        state: RunState,
        executor: Executor,
        samples_per_task: int,
        *,
        task_budget_s: float | None = None,
        on_trajectory: Callable[[Task, Trajectory], None] | None = None,
        warnings: dict[int, list[str]] | None = None,
    ) -> None:
        """``task_budget_s``: wall time a task's samples may take together, from its first start;
        ``on_trajectory``: told of each recorded episode (after its record is written); ``warnings``:
        where to say what a budget left unrun (epoch -> lines; shared with the caller's, so an epoch's
        warnings stay in the order they happened)."""
        self.run = run
        self.state = state
        self.executor = executor
        self.samples_per_task = samples_per_task
        self.task_budget_s = task_budget_s
        self.on_trajectory = on_trajectory
        self.warnings: dict[int, list[str]] = warnings if warnings is not None else {}
        self._slots = asyncio.Semaphore(executor.slots)
        self._task_clock: dict[str, float] = {}

    def start(self, task: Task, epoch: int, deadline: float | None = None) -> list[asyncio.Task[None]]:
        """One episode per sample of ``task`` that has no trajectory yet; ``deadline``: the epoch's."""
        done = {t.sample_index for t in self.state.by_task.get(task.task_id, [])}
        return [
            asyncio.create_task(self._episode(task, epoch, k, deadline))
            for k in range(self.samples_per_task)
            if k not in done
        ]

    async def _episode(self, task: Task, epoch: int, sample_index: int, epoch_deadline: float | None) -> None:
        async with self._slots:
            now = time.time()
            if epoch_deadline is not None and now >= epoch_deadline:
                self.warnings.setdefault(epoch, []).append(
                    f"epoch budget ran out: {task.task_id} sample {sample_index} not run"
                )
                return
            budget = self.task_budget_s
            task_deadline = self._task_clock.setdefault(task.task_id, now) + budget if budget is not None else None
            deadlines = [d for d in (epoch_deadline, task_deadline) if d is not None]
            item = WorkItem(task, epoch, sample_index, min(deadlines) if deadlines else None)
            trajectory = await self.executor.run(item)
        self.run.append(TRAJECTORIES, [trajectory.model_dump(mode="json")])
        self.state.add_trajectory(trajectory)
        self.write_stats(task, epoch)
        if self.on_trajectory is not None:
            self.on_trajectory(task, trajectory)

    def write_stats(self, task: Task, epoch: int, *, force: bool = False) -> None:
        """Append the task's ``task_stats`` row once all its samples are judged (``force``: once the
        epoch is over, with the samples it has, if a budget left some unrun)."""
        if task.task_id in self.state.measured:
            return
        trajs = self.state.by_task.get(task.task_id, [])
        if not trajs or (len(trajs) < self.samples_per_task and not force):
            return
        stats = task_stats(task.task_id, epoch, task.kind, trajs)
        self.state.add_stats(stats)
        self.run.append(TASK_STATS, [stats.model_dump(mode="json")])
