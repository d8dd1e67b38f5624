"""The executor contract: one verb, ``run(item) -> Trajectory``; validation has its own, ``validate``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..types import Task, Trajectory
from ..validation import ValidationReport


@dataclass(frozen=True)
class WorkItem:
    """One solving episode to run."""

    task: Task
    epoch: int
    sample_index: int
    deadline: float | None = None
    """Wall-clock time (``time.time()``) after which the episode starts no new turn: the tighter of
    the task's and the epoch's budgets; None: no budget."""

    @property
    def key(self) -> tuple[str, int]:
        """What identifies the episode across resumes."""
        return self.task.task_id, self.sample_index


class Executor(Protocol):
    """Runs episodes. ``run`` never raises for model or program failures (they are in the record)."""

    slots: int
    """Episodes it can run at once (the controller keeps no more in flight)."""

    async def run(self, item: WorkItem) -> Trajectory: ...


class Checker(Protocol):
    """Proves a proposed task sound (``CodeChecker`` here, a Ray executor's workers there)."""

    async def validate(self, task: Task) -> ValidationReport: ...
