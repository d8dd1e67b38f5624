"""Validations and episodes on a Ray cluster (``executor: ray``, ``pip install 'spade-selfplay[ray]'``).

The driver keeps the controller, the curriculum and the run directory; the cluster only computes.
Each node gets ``ray.workers_per_node`` worker actors (``SpadeWorker``), each a ``SolverSession`` rebuilt
from the run's config with its own models and warm sandbox. A work item goes to the least busy live
worker; the records come back to the driver, which alone writes them, so a worker that dies (Ray
restarts it and runs its items again, ``ray.max_retries`` times) can neither lose nor duplicate one.
Every record is a function of its work item and the config (seeds derive from stable keys), so the
records equal the local executor's, whatever node ran what.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..config import HooksConfig, RayConfig, RunConfig, TrainerConfig
from ..errors import ExecutorError, SpadeError, UserError
from ..llm.limited import LimitedLLM
from ..llm.registry import aclose_llm
from ..llm.stats import LLMStats
from ..solver_session import SolverSession
from ..train_step import RoleSwitch
from ..types import Task, Trajectory
from ..validation import ValidationReport
from .base import WorkItem

FORWARDED_ENV_PREFIXES = ("SPADE_", "OPENAI_", "LITELLM_", "ANTHROPIC_", "AZURE_", "GEMINI_", "HF_")
FORWARDED_ENV_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL")
"""Environment variables a worker takes from the driver (keys, endpoints, ``SPADE_SANDBOX``): a node
started by ``ray start`` elsewhere has none of the driver's environment."""

MAX_TEMPLATE_BYTES = 4 * 2**20
"""A prompts folder bigger than this is not shipped to the workers (it holds more than templates)."""


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(FORWARDED_ENV_PREFIXES) or k.endswith(FORWARDED_ENV_SUFFIXES)}


def templates_of(prompts_dir: str | None) -> dict[str, str]:
    """The user's template folder as {relative path: text}: workers on other machines cannot read it."""
    if prompts_dir is None:
        return {}
    root = Path(prompts_dir)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if sum(p.stat().st_size for p in files) > MAX_TEMPLATE_BYTES:
        raise UserError(f"prompts folder {root} holds more than {MAX_TEMPLATE_BYTES >> 20} MiB: only templates belong")
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in files}


def worker_config(config: RunConfig) -> dict[str, Any]:
    """What a worker builds its session from: the run's config, solving only (no hooks, report or
    training step: those run in the driver), with ``concurrency_per_worker`` items in flight."""
    per_worker = config.ray.concurrency_per_worker or config.controller.concurrency
    worker = config.model_copy(
        update={
            "executor": "local",
            "hooks": HooksConfig(),
            "report": False,
            "trainer": TrainerConfig(),
            "prompts_dir": None,
            "controller": config.controller.model_copy(update={"concurrency": per_worker}),
        }
    )
    return worker.model_dump(mode="json")


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once, with one line, when nothing listens at a ``HOST:PORT`` or ``ray://HOST:PORT``
    address (``auto`` and others are left to Ray).

    Raises:
        UserError: the address does not parse, or its port does not answer within ``timeout_s``.
    """
    target = address.removeprefix("ray://")
    if address == "auto" or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    if not port.isdigit():
        raise UserError(f"Ray address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        default = "10001 for ray://" if address.startswith("ray://") else "6379, the head's GCS port"
        raise UserError(
            f"nothing answers at Ray address {address} ({e.strerror or e}); start the head with "
            f"`ray start --head` and give its address (default port {default})"
        ) from None


def ray_connect(r: RayConfig) -> None:
    """Join the cluster ``r`` names (``address``, else ``$RAY_ADDRESS``), or start a local one.

    Raises:
        UserError: nothing answers at the address, or Ray cannot join or start the cluster.
    """
    address = r.address or os.environ.get("RAY_ADDRESS")
    if address:
        check_reachable(address)  # Ray itself keeps retrying an address nobody listens on for minutes
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if r.address is None and not os.environ.get("RAY_ADDRESS"):
        kwargs["include_dashboard"] = False  # a throwaway local cluster: no web server to start
    try:
        ray.init(address=r.address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = r.address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        raise UserError(f"cannot reach the Ray cluster at {where}: {e}") from None


def start_actors(cls: type, r: RayConfig, max_concurrency: int, *args: Any) -> list[Any]:
    """``ray.workers_per_node`` actors of ``cls`` (built with ``args``) on every alive node with
    ``ray.worker_cpus`` free, each placed on its node (softly: Ray moves one whose node dies) and restarted
    ``ray.max_retries`` times, in node order (so a run's placement reads the same every time).

    Raises:
        UserError: the cluster has no such node.
    """
    cluster_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes  # ray's API has no annotations
    nodes = sorted(
        (n for n in cluster_nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= r.worker_cpus),
        key=lambda n: (n["NodeManagerAddress"], n["NodeID"]),
    )
    if not nodes:
        raise UserError(f"the Ray cluster has no alive node with {r.worker_cpus:g} free CPU for a worker")
    actor: Any = ray.remote(cls)
    return [
        actor.options(
            num_cpus=r.worker_cpus,
            max_restarts=r.max_retries,
            max_task_retries=r.max_retries,
            max_concurrency=max_concurrency,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=True),
        ).remote(*args)
        for node in nodes
        for _ in range(r.workers_per_node)
    ]


class SpadeWorker:
    """One worker actor: validates tasks and runs episodes with a session of its own.

    Every method returns ``(result, llm_counts, pid)``; a ``SpadeError`` is returned as the result
    (the driver raises it), so an error means the same on either side of the wire.
    """

    def __init__(self, config: dict[str, Any], templates: dict[str, str], env: dict[str, str]) -> None:
        os.environ.update(env)
        self.error: SpadeError | None = None
        node_ip: Callable[[], str] = ray.util.get_node_ip_address  # ray's API has no annotations
        self.node = node_ip()
        self._templates = tempfile.TemporaryDirectory(prefix="spade-prompts-") if templates else None
        try:
            run_config = RunConfig.model_validate(config)
            if self._templates is not None:
                for name, text in templates.items():
                    path = Path(self._templates.name, name)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
                run_config.prompts_dir = self._templates.name
            base = run_config.ray.node_api_base.get(self.node)
            if base is not None:
                run_config.solver.api_base = base
            self.role = {"model": run_config.solver.model, "api_base": run_config.solver.api_base}
            """The driver's solver model and endpoint this worker last followed."""
            self.session = SolverSession(run_config)
            self.slots = asyncio.Semaphore(run_config.controller.concurrency)
            self.checker, self.solver = self.session.build_solver(self.slots)
        except SpadeError as e:
            self.error = e

    def ready(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": self.error, "node": self.node}
        return {"sandbox": self.session.sandbox.name, "node": self.node, "pid": os.getpid()}

    def pid(self) -> int:
        return os.getpid()

    async def solve(self, item: WorkItem, role: dict[str, Any]) -> tuple[Trajectory | SpadeError, dict[str, Any], int]:
        try:
            await self._follow(role)
            result: Trajectory | SpadeError = await self.solver.solve(
                item.task, item.epoch, item.sample_index, item.deadline
            )
        except SpadeError as e:
            result = e
        return result, self.session.stats.drain(), os.getpid()

    async def validate(self, task: Task) -> tuple[ValidationReport | SpadeError, dict[str, Any], int]:
        try:
            result: ValidationReport | SpadeError = await self.checker.validate(task)
        except SpadeError as e:
            result = e
        return result, self.session.stats.drain(), os.getpid()

    async def _follow(self, role: dict[str, Any]) -> None:
        """Solve with the model the driver's solver uses now (a training step may have switched it).
        Only what changed is taken, so a node's own ``api_base`` stays unless the switch names one."""
        changed = {k: v for k, v in role.items() if v != self.role.get(k)}
        if not changed:
            return
        retired = self.session.use_solver_model(RoleSwitch(changed.get("model"), changed.get("api_base")))
        self.solver.llm = LimitedLLM(self.session.sol_llm, self.slots)
        self.role = dict(role)
        await aclose_llm(retired)


class RayExecutor:
    """Sends validations and episodes to worker actors on a Ray cluster; see the module docstring.

    Raises (from the constructor):
        UserError: the cluster cannot be reached, or a worker cannot build its session (a bad
            template, no sandbox on a node...).
        ExecutorError: the workers did not start within ``ray.start_timeout_s``.
    """

    def __init__(self, config: RunConfig, stats: LLMStats, log: Any = None) -> None:
        self.config = config
        self.stats = stats
        self.log = log or (lambda _m: None)
        r = config.ray
        self.per_worker = r.concurrency_per_worker or config.controller.concurrency
        self.owns_cluster = not ray.is_initialized()
        if self.owns_cluster:
            self._connect()
        try:
            payload = (worker_config(config), templates_of(config.prompts_dir), forwarded_env())
            self.workers: list[Any] = start_actors(SpadeWorker, r, 2 * self.per_worker + 4, *payload)
        except UserError:
            self.close()
            raise
        self.slots = len(self.workers) * self.per_worker
        try:
            ready = ray.get([w.ready.remote() for w in self.workers], timeout=r.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise ExecutorError(
                f"{len(self.workers)} Ray workers did not start within {r.start_timeout_s:g} s (each reserves "
                f"{r.worker_cpus:g} CPU: is the cluster short of CPUs? lower ray.worker_cpus)"
            ) from None
        except ray.exceptions.RayError as e:
            self.close()
            raise ExecutorError(f"a Ray worker failed to start: {e}") from None
        for info in ready:
            if "error" in info:
                self.close()
                error: SpadeError = info["error"]
                raise type(error)(f"Ray worker on {info['node']}: {error}") if isinstance(error, UserError) else error
        self.info = ready
        """Per worker: ``node``, ``pid`` (at start) and ``sandbox``."""
        self.pids = [int(i["pid"]) for i in ready]
        self.nodes = sorted({str(i["node"]) for i in ready})
        self.sandbox_name = ",".join(sorted({str(i["sandbox"]) for i in ready}))
        self.inflight = 0
        self._busy = [0] * len(self.workers)
        self._dead: set[int] = set()
        self._ready: asyncio.Condition | None = None

    def _connect(self) -> None:
        ray_connect(self.config.ray)

    def describe(self) -> dict[str, Any]:
        """What the manifest says about where the run's work ran."""
        return {"name": "ray", "nodes": len(self.nodes), "workers": len(self.workers), "slots": self.slots}

    # -- the two verbs -------------------------------------------------------------------------------

    async def run(self, item: WorkItem) -> Trajectory:
        role = {"model": self.config.solver.model, "api_base": self.config.solver.api_base}
        result: Trajectory = await self._call("solve", item, role)
        return result

    async def validate(self, task: Task) -> ValidationReport:
        result: ValidationReport = await self._call("validate", task)
        return result

    # -- dispatch ---------------------------------------------------------------------------------------

    async def _call(self, method: str, *args: Any) -> Any:
        """``method`` on the least busy live worker. Ray reruns it on a restarted worker when its worker
        dies; a worker dead for good (past ``ray.max_retries``) is dropped and the item goes to another."""
        while True:
            index = await self._acquire()
            ref = getattr(self.workers[index], method).remote(*args)
            try:
                result, counts, pid = await ref
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
                raise
            except ray.exceptions.RayActorError as e:
                self._dead.add(index)
                alive = len(self.workers) - len(self._dead)
                node = self.info[index]["node"]
                self.log(f"ray: worker {index} on {node} is gone ({type(e).__name__}); {alive} left")
                continue  # to another worker; with none left, _acquire says so
            except ray.exceptions.RayTaskError as e:  # a bug in the worker's code, not a lost worker
                raise ExecutorError(f"a Ray worker failed: {e}") from None
            finally:
                await self._release(index)
            if pid != self.pids[index]:
                node = self.info[index]["node"]
                self.log(f"ray: worker {index} on {node} was restarted (pid {self.pids[index]} -> {pid}); items rerun")
                self.pids[index] = pid
            self.stats.carry(counts)
            if isinstance(result, SpadeError):
                raise result
            return result

    def _condition(self) -> asyncio.Condition:
        if self._ready is None:
            self._ready = asyncio.Condition()
        return self._ready

    def _free(self) -> int | None:
        free = [i for i in range(len(self.workers)) if i not in self._dead and self._busy[i] < self.per_worker]
        return min(free, key=lambda i: (self._busy[i], i)) if free else None

    async def _acquire(self) -> int:
        ready = self._condition()
        async with ready:
            await ready.wait_for(lambda: self._free() is not None or len(self._dead) == len(self.workers))
            index = self._free()
            if index is None:
                raise ExecutorError(
                    f"every Ray worker died more than ray.max_retries={self.config.ray.max_retries} times; "
                    "nothing of the lost work was recorded: resume the run"
                )
            self._busy[index] += 1
            self.inflight += 1
            return index

    async def _release(self, index: int) -> None:
        ready = self._condition()
        async with ready:
            self._busy[index] -= 1
            self.inflight -= 1
            ready.notify_all()

    # -- the end -----------------------------------------------------------------------------------------

    def close(self) -> None:
        for worker in getattr(self, "workers", []):
            with contextlib.suppress(Exception):
                ray.kill(worker, no_restart=True)
        self.workers = []
        if self.owns_cluster and ray.is_initialized():
            ray.shutdown()
