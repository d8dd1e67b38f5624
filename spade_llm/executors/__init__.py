"""Where validations and episodes run. An ``Executor`` maps work items ``(task, sample_index)`` to
trajectories; a ``Checker`` proves proposed tasks sound.

``local`` runs them as asyncio tasks in this process. ``ray`` (``executors/ray.py``, imported only
when chosen) runs them on worker actors that rebuild the solver's models and sandbox from the
``RunConfig``; since every record depends only on the work item and the config (seeds derive from
stable keys), where an item runs cannot change it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UserError, pip_install
from .base import Checker, Executor, WorkItem
from .local import LocalExecutor

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..llm.stats import LLMStats
    from .ray import RayExecutor
    from .ray_sandbox import RaySandbox

EXECUTORS = ("local", "ray")
"""Executor names, as ``executor:`` in a config and ``--executor`` take them."""


def start_ray_executor(config: RunConfig, stats: LLMStats, log: Callable[[str], None] | None = None) -> RayExecutor:
    """Join (or start) the Ray cluster and start the run's workers on it.

    Raises:
        UserError: Ray is not installed, the cluster cannot be reached or a worker cannot start.
    """
    try:
        from .ray import RayExecutor
    except ImportError as e:
        if (e.name or "").split(".")[0] != "ray":
            raise
        raise UserError(f"executor 'ray' needs Ray: {pip_install('ray')}") from None
    return RayExecutor(config, stats, log)


def start_ray_sandbox(config: RunConfig) -> RaySandbox:
    """Join (or start) the Ray cluster and start a sandbox host on each node: ``executor: ray`` where only
    the programs go to the cluster (``spade serve-env``: its episodes are conversations held here).

    Raises:
        UserError: Ray is not installed, the cluster cannot be reached or a host cannot start its sandbox.
    """
    try:
        from .ray_sandbox import RaySandbox
    except ImportError as e:
        if (e.name or "").split(".")[0] != "ray":
            raise
        raise UserError(f"executor 'ray' needs Ray: {pip_install('ray')}") from None
    return RaySandbox(config)


__all__ = ["EXECUTORS", "Checker", "Executor", "LocalExecutor", "WorkItem", "start_ray_executor", "start_ray_sandbox"]
