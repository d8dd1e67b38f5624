"""Episodes as asyncio tasks in this process (the controller bounds how many run at once)."""

from __future__ import annotations

from ..solver import Solver
from ..types import Trajectory
from .base import WorkItem


class LocalExecutor:
    """Runs each work item with one in-process solver."""

    def __init__(self, solver: Solver, slots: int) -> None:
        self.solver = solver
        self.slots = slots

    async def run(self, item: WorkItem) -> Trajectory:
        return await self.solver.solve(item.task, item.epoch, item.sample_index, item.deadline)
