"""Where episodes run. An ``Executor`` maps work items ``(task, sample_index)`` to trajectories.

``local`` runs them as asyncio tasks in this process. A remote executor (Ray) rebuilds the solver's
models and sandbox from the ``RunConfig`` in each worker; since every record depends only on the
work item and the config (seeds derive from stable keys), where an item runs cannot change it.
"""

from __future__ import annotations

from .base import Executor, WorkItem
from .local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "WorkItem"]
