"""The episode loop ``spade run`` and ``spade solve`` share: a run's records held in memory
(``RunState``), and ``Episodes``, which runs each sample of a task that has no trajectory yet,
appends its trajectory, and writes the task's ``task_stats`` row once all its samples are judged.

Episodes are keyed by (task, sample) and each record is a function of its key (the solver seeds
its turns from it), so the order episodes end in never changes what is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .curriculum import EpochPlan
from .evaluator import task_stats
from .executors import Executor, WorkItem
from .store import TASK_STATS, TRAJECTORIES, RunDir, RunRecords, apply_repairs, check_integrity, read_run
from .types import EpochMetrics, Rejection, Task, TaskStats, Trajectory


@dataclass
class RunState:
    """What the run directory holds (empty for a new run), indexed for the loop."""

    tasks: list[Task] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    metrics: list[EpochMetrics] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    task_stats: dict[str, TaskStats] = field(default_factory=dict)
    """task id -> its ``task_stats.jsonl`` row."""
    by_task: dict[str, list[Trajectory]] = field(default_factory=dict)
    """task id -> its trajectories (an index of ``trajectories``: episodes end one by one, and each
    asks whether its task is complete; a scan of every trajectory each time grows with the run)."""
    plans: dict[int, EpochPlan] = field(default_factory=dict)
    proposals: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    """(epoch, request index) -> the ``proposals.jsonl`` row."""

    def add_trajectory(self, trajectory: Trajectory) -> None:
        self.trajectories.append(trajectory)
        self.by_task.setdefault(trajectory.task_id, []).append(trajectory)

    @classmethod
    def load(cls, run: RunDir) -> RunState:
        """What ``run`` holds (nothing, for a new one), checked against itself first
        (``store.check_integrity``), with what can be re-derived exactly written back: a line that is
        not a record, or records that disagree with what the run recorded, stop here with exit 2.

        Raises:
            UserError: the run directory is damaged (FILE:LINE), or was changed after it was written.
        """
        if not (run.path / "config.yaml").is_file():
            return cls()  # a new run: nothing written yet
        records = check_integrity(read_run(run.path))
        apply_repairs(run, records)
        return cls.from_records(records)

    @classmethod
    def from_records(cls, records: RunRecords) -> RunState:
        """The state of a run read back by ``store.read_run``."""
        state = cls(tasks=records.tasks, metrics=records.metrics, rejected=records.rejected)
        state.task_stats = {row.task_id: row for row in records.task_stats}
        for trajectory in records.trajectories:
            state.add_trajectory(trajectory)
        state.plans = {plan.epoch: plan for plan in records.plans}
        state.proposals = {(int(row["epoch"]), int(row["request_index"])): row for row in records.proposals}
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
        if task.task_id in self.state.task_stats:
            return
        trajs = self.state.by_task.get(task.task_id, [])
        if not trajs or (len(trajs) < self.samples_per_task and not force):
            return
        stats = task_stats(task.task_id, epoch, task.kind, trajs)
        self.state.task_stats[task.task_id] = stats
        self.run.append(TASK_STATS, [stats.model_dump(mode="json")])
