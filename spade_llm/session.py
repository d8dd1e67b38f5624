"""Assembles a run from its config: sandbox, models, prompts, stages, run directory.

This is the one place that knows how the pieces plug together; the CLI and the Python API
both start runs through ``start_run``.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import platform
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

from .checking import CodeChecker
from .config import RunConfig, config_from_dict
from .controller import Controller, LimitedLLM
from .errors import UserError
from .generator import LLMGenerator
from .llm.registry import get_llm
from .llm.stats import LLMStats
from .sandbox.registry import get_sandbox
from .solver import LLMSolver
from .evaluator import first_try_pass_rate, mean_turns, pass_rate
from .store import TASKS, TRAJECTORIES, RunDir, scrub_secrets
from .templates import Prompts
from .types import EpochMetrics, Task, Trajectory


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def manifest(config: RunConfig, prompts: Prompts, sandbox_name: str, resumed: bool) -> dict[str, Any]:
    return {
        "spade_llm": _version("spade_llm"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "litellm": _version("litellm"),
        "pydantic": _version("pydantic"),
        "models": {"generator": config.generator.model, "solver": config.solver.model},
        "seed": config.seed,
        "sandbox": sandbox_name,
        "templates": prompts.hashes,
        "prompts_dir": config.prompts_dir,
        "argv": [scrub_secrets(a) for a in sys.argv[1:]],
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "resumed": resumed,
    }


def load_resumed_config(run: RunDir, overrides: dict[str, Any]) -> RunConfig:
    """The config a run was started with, plus flags that may change on resume (epochs, concurrency...)."""
    data = run.read_yaml("config.yaml")
    if not isinstance(data, dict):
        raise UserError(f"{run.path / 'config.yaml'} is not a config mapping")
    from .config import _deep_merge

    return config_from_dict(_deep_merge(data, overrides), str(run.path / "config.yaml"))


def _build(config: RunConfig, stats: LLMStats, slots: asyncio.Semaphore, prompts: Prompts, sandbox: Any,
           sol_llm: Any) -> tuple[CodeChecker, LLMSolver]:
    checker = CodeChecker(sandbox, config.sandbox, config.controller.concurrency)
    solver = LLMSolver(LimitedLLM(sol_llm, slots), prompts, checker.check, seed=config.seed,
                       max_turns=config.solver.max_turns, public_tests=config.solver.public_tests,
                       temperature=config.solver.temperature, max_tokens=config.solver.max_tokens,
                       stderr_lines=config.solver.stderr_tail_lines, reward=config.reward)
    return checker, solver


def start_run(config: RunConfig, run: RunDir, *, resumed: bool = False,
              log: Callable[[str], None] = print) -> list[EpochMetrics]:
    """Run (or resume) the self-play loop in ``run``; returns one metrics row per epoch."""
    prompts = Prompts(config.prompts_dir)
    problems = prompts.check_all()  # a broken user template fails now, not mid-run
    if problems:
        raise UserError(problems[0])
    stats = LLMStats()
    gen_llm = get_llm(config.generator, config.llm, seed=config.seed, stats=stats)
    sol_llm = get_llm(config.solver, config.llm, seed=config.seed, stats=stats)
    sandbox = get_sandbox(config.sandbox.backend)
    run.write_yaml("config.yaml", scrub_secrets(config.model_dump(mode="json")))
    run.write_json("manifest.json", manifest(config, prompts, sandbox.name, resumed))

    async def main() -> list[EpochMetrics]:
        slots = asyncio.Semaphore(config.controller.concurrency)
        checker, solver = _build(config, stats, slots, prompts, sandbox, sol_llm)
        generator = LLMGenerator(LimitedLLM(gen_llm, slots), prompts, temperature=config.generator.temperature,
                                 max_tokens=config.generator.max_tokens, json_mode=config.generator.json_mode,
                                 stats=stats)
        controller = Controller(config, run, generator, solver, checker, stats, log=log)
        return await controller.run_all()

    try:
        return asyncio.run(main())
    finally:
        sandbox.close()


def solve_tasks(config: RunConfig, tasks: list[Task], run: RunDir, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The solver alone on existing tasks (e.g. an imported benchmark); resumable like a run."""
    prompts = Prompts(config.prompts_dir)
    problems = prompts.check_all()
    if problems:
        raise UserError(problems[0])
    stats = LLMStats()
    sol_llm = get_llm(config.solver, config.llm, seed=config.seed, stats=stats)
    sandbox = get_sandbox(config.sandbox.backend)
    run.write_yaml("config.yaml", scrub_secrets(config.model_dump(mode="json")))
    run.write_json("manifest.json", manifest(config, prompts, sandbox.name, resumed=False))
    done = {r["task_id"] for r in run.read(TRAJECTORIES)}
    if not (run.path / TASKS).exists():
        run.append(TASKS, [t.dump() for t in tasks])

    async def main() -> None:
        slots = asyncio.Semaphore(config.controller.concurrency)
        _, solver = _build(config, stats, slots, prompts, sandbox, sol_llm)

        async def one(task: Task) -> None:
            trajectory = await solver.solve(task, 0)
            run.append(TRAJECTORIES, [trajectory.model_dump(mode="json")])
            log(f"{task.task_id}: {trajectory.final_status} in {len(trajectory.attempts)} turn(s)")

        await asyncio.gather(*(one(t) for t in tasks if t.task_id not in done))

    try:
        asyncio.run(main())
    finally:
        sandbox.close()
    trajs = [Trajectory.model_validate(r) for r in run.read(TRAJECTORIES)]
    summary = {"complete": True, "tasks": len(tasks), "trajectories": len(trajs), "pass_rate": pass_rate(trajs),
               "first_try_pass_rate": first_try_pass_rate(trajs), "mean_turns": mean_turns(trajs),
               "llm": stats.summary()}
    run.write_json("summary.json", summary)
    return summary
