"""Assembles a run from its config: sandbox, models, prompts, stages, run directory.

This is the one place that knows how the pieces plug together; the CLI and the Python API
both start runs through ``start_run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import platform
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import RunConfig, config_from_dict, deep_merge
from .controller import Controller
from .episodes import Episodes, RunState
from .errors import DISTRIBUTION, EmptyEpochs, EndpointDown, ExecutorError, UserError
from .executors import Checker, Executor, LocalExecutor, start_ray_executor
from .generator import LLMGenerator
from .hooks import load_hooks
from .llm.base import LLM
from .llm.limited import LimitedLLM
from .llm.registry import aclose_llm
from .llm.stats import LLMStats
from .progress import progress_block, solve_lines, solve_summary
from .sandbox.base import Sandbox
from .solver import LLMSolver, Solver
from .solver_session import SolverSession
from .store import TASKS, RunDir, check_written_by, run_command, scrub_secrets
from .templates import Prompts
from .train_step import RoleSwitch, Switch, Trainer, last_switch
from .types import EpochMetrics, Task, Trajectory

if TYPE_CHECKING:
    from .executors.ray import RayExecutor


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def source_revision(folder: Path = Path(__file__).parent) -> dict[str, Any] | None:
    """The git commit spade_llm runs from and whether a tracked file of that checkout differs from it
    (``dirty``), when it runs from a checkout (an editable install); None from a wheel, or without git.
    Which code wrote a run is a fact a version number does not give while the code is being changed."""
    import subprocess

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    changes = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": bool(changes.strip()) if changes is not None else None}


def manifest(
    config: RunConfig, prompts: Prompts, sandbox_name: str, executor: dict[str, Any], command: str = "run"
) -> dict[str, Any]:
    """``manifest.json`` of a run started now by ``command`` (``run``, ``solve``, ``serve-env``)."""
    return {
        "command": command,
        "spade_llm": _version(DISTRIBUTION),
        "source": source_revision(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "litellm": _version("litellm"),
        "pydantic": _version("pydantic"),
        "models": {"generator": config.generator.model, "solver": config.solver.model},
        "seed": config.seed,
        "goal": config.curriculum.goal,
        "topics": config.curriculum.topics,
        "kinds": config.curriculum.kinds,
        "samples_per_task": config.solver.samples_per_task,
        "sandbox": sandbox_name,
        "executor": executor,
        "templates": prompts.hashes,
        "prompts_dir": config.prompts_dir,
        "argv": [scrub_secrets(a) for a in sys.argv[1:]],
        "started_at": _now(),
        "resumes": [],
    }


def load_resumed_config(run: RunDir, overrides: dict[str, Any]) -> RunConfig:
    """The config a run was started with, plus flags that may change on resume (epochs, concurrency...)."""
    data = run.read_yaml("config.yaml")
    if not isinstance(data, dict):
        raise UserError(f"{run.path / 'config.yaml'} is not a config mapping")
    return config_from_dict(deep_merge(data, overrides), str(run.path / "config.yaml"))


class Session:
    """Everything a run needs, checked before anything is written.

    Building it validates the prompt templates, both model strings and the sandbox backend,
    so a mistake fails with one clear error before a run directory is created. The solver's half is
    a ``SolverSession`` it holds (``solving``); what serve-env puts in place of the config's parts
    comes through the constructor: the solver's model (``solver_model``), what each episode's solver
    becomes (``episode_solver``), and a call once the run's event loop runs (``on_start``).
    """

    def __init__(
        self,
        config: RunConfig,
        *,
        need_generator: bool = True,
        solver_model: LLM | None = None,
        episode_solver: Callable[[LLMSolver], Solver] | None = None,
        on_start: Callable[[], None] | None = None,
        episode_slots: int | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """``episode_slots``: episodes in flight at once (default ``controller.concurrency``; serve-env's
        pool: a client's thinking holds an episode, not a model request). ``sandbox``: where the programs
        run instead of ``config.sandbox``'s backend here (serve-env's Ray sandbox); closed with the session."""
        self.gen_llm: LLM | None = None
        self.episode_slots = episode_slots or config.controller.concurrency

        def generator_first(solving: SolverSession) -> None:  # its mistakes are told before the solver's
            if need_generator:
                self.gen_llm = solving.role_llm(config.generator, "generator")

        self.given_sandbox = sandbox
        source = (lambda: sandbox) if sandbox is not None else None
        self.solving = SolverSession(config, solver_model=solver_model, sandbox=source, before_solver=generator_first)
        self.episode_solver = episode_solver
        self.on_start = on_start
        self.state: RunState | None = None
        """What the run directory holds, kept up to date by the running loop (once ``run`` read it)."""
        entries = list(config.hooks.on_epoch_end)
        if config.report:
            from .report import require_matplotlib

            require_matplotlib()  # before the run directory exists, not after the first epoch
            entries.append("spade_llm.report:epoch_hook")
        self.hooks = load_hooks(entries)  # a typo fails before a run directory exists
        if config.tracking:
            from .tracking.base import opener

            for name in config.tracking:  # a tool not installed fails before a run directory exists
                opener(name)
        if config.trainer.command is not None and "verl" in config.trainer.formats:
            from .export.solver_rows import require_pyarrow

            require_pyarrow("trainer.formats: verl")
        self.remote: RayExecutor | None = None
        """The Ray executor (``executor: ray``): its workers validate and solve, each with a sandbox
        of its own, so this process starts none."""
        if config.executor == "ray":
            self.remote = start_ray_executor(config, self.stats)
        else:
            self.sandbox  # noqa: B018  started now: a backend that cannot run fails before a run directory exists

    # the solver's half, as the run reads it
    @property
    def config(self) -> RunConfig:
        return self.solving.config

    @property
    def prompts(self) -> Prompts:
        return self.solving.prompts

    @property
    def stats(self) -> LLMStats:
        return self.solving.stats

    @property
    def sandbox(self) -> Sandbox:
        return self.solving.sandbox

    @property
    def sol_llm(self) -> LLM:
        return self.solving.sol_llm

    def fill_expected(self, tasks: list[Task]) -> list[Task]:
        """See ``SolverSession.fill_expected``."""
        return self.solving.fill_expected(tasks)

    def use_generator_model(self, switch: RoleSwitch) -> LLM | None:
        """Point ``config.generator`` and ``gen_llm`` at the model a training step handed back; returns
        the model it replaces (to close when the run ends).

        Raises:
            UserError: the model string names no known provider or fake profile.
        """
        self.config.generator, llm = self.solving.switched_role(self.config.generator, "generator", switch)
        replaced, self.gen_llm = self.gen_llm, llm
        return replaced

    def use_models(self, switch: Switch) -> list[LLM]:
        """Both roles switched as ``switch`` says; returns the models replaced. A model that cannot be
        used raises UserError, which stops the run with the step unrecorded (``--resume`` reruns it)."""
        replaced: list[LLM] = []
        if switch.solver is not None:
            replaced.append(self.solving.use_solver_model(switch.solver))
        if switch.generator is not None:
            old = self.use_generator_model(switch.generator)
            if old is not None:
                replaced.append(old)
        return replaced

    @property
    def sandbox_name(self) -> str:
        return self.remote.sandbox_name if self.remote is not None else self.sandbox.name

    def executor_info(self) -> dict[str, Any]:
        if self.remote is not None:
            return self.remote.describe()
        return {"name": "local", "slots": self.episode_slots}

    def executors(self, slots: asyncio.Semaphore) -> tuple[Executor, Checker, LLMSolver | None]:
        """Where episodes and validations run: this process (with its solver, returned too) or the
        Ray workers (no solver here)."""
        if self.remote is not None:
            return self.remote, self.remote, None
        checker, solver = self.solving.build_solver(slots)
        runs = self.episode_solver(solver) if self.episode_solver is not None else solver
        return LocalExecutor(runs, self.episode_slots), checker, solver

    def close(self) -> None:
        try:
            if self.remote is not None:
                self.remote.close()
            if self.given_sandbox is not None:
                self.given_sandbox.close()
        finally:
            self.solving.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_header(self, run: RunDir, resumed: bool, command: str = "run") -> None:
        if self.config.prompts_dir is not None:  # a resume from elsewhere finds the same folder
            self.config.prompts_dir = str(Path(self.config.prompts_dir).resolve())
        run.touch_journals()  # every journal exists from the start, even if nothing is accepted
        run.write_yaml("config.yaml", scrub_secrets(self.config.model_dump(mode="json")))
        previous = run.read_json("manifest.json") if resumed else None
        if isinstance(previous, dict):  # the original start stays; each resume is appended
            kept = previous.get("resumes")
            resumes: list[Any] = kept if isinstance(kept, list) else []
            resumes.append(
                {
                    "at": _now(),
                    "spade_llm": _version(DISTRIBUTION),
                    "argv": [scrub_secrets(a) for a in sys.argv[1:]],
                    "sandbox": self.sandbox_name,
                    "executor": self.executor_info(),
                    "epochs": self.config.controller.epochs,
                }
            )
            folders = [previous.get("prompts_dir"), *(r.get("prompts_dir") for r in resumes if isinstance(r, dict))]
            if self.config.prompts_dir != next((f for f in reversed(folders) if f is not None), None):
                resumes[-1]["prompts_dir"] = self.config.prompts_dir  # a moved copy (hashes checked by the CLI)
            run.write_json("manifest.json", {**previous, "resumes": resumes})
        else:
            header = manifest(self.config, self.prompts, self.sandbox_name, self.executor_info(), command)
            run.write_json("manifest.json", header)

    def run(
        self, run: RunDir, *, resumed: bool = False, log: Callable[[str], None] = print, live: bool = False
    ) -> Sequence[EpochMetrics]:
        """Run (or resume) the self-play loop in ``run``; returns one metrics row per epoch. ``live``:
        a progress block on stderr (a terminal), the log lines printed above it."""
        assert self.gen_llm is not None
        command = run_command(self.config.solver.model)  # serve-env's solver is its clients
        if resumed:  # never self-play into a benchmark's solve, nor the other way round
            check_written_by(run.path, command)
        state = self.state = RunState.load(run)  # checked before the header: a damaged run is refused untouched
        self._write_header(run, resumed, command)
        tracking = None
        hooks = list(self.hooks)
        if self.config.tracking:
            from .tracking.run import RunTracking

            tracking = RunTracking(self.config, run.path, state.metrics)  # a resumed run's unlogged rows first
            hooks.append(("tracking", tracking.epoch_hook))
        retired: list[LLM] = []
        switched = last_switch(run) if resumed else None
        if switched is not None:  # a resumed run plays with the models its training steps chose
            retired += self.use_models(switched)
        gen_llm = self.gen_llm

        async def main() -> Sequence[EpochMetrics]:
            if self.on_start is not None:  # serve-env: its loop and main task are what stopping needs
                self.on_start()
            c = self.config
            slots = asyncio.Semaphore(c.controller.concurrency)
            executor, checker, solver = self.executors(slots)
            generator = LLMGenerator(
                LimitedLLM(gen_llm, slots),
                self.prompts,
                temperature=c.generator.temperature,
                max_tokens=c.generator.max_tokens,
                response_format=c.generator.response_format,
                stats=self.stats.view("generator"),
                model=c.generator.model,
            )

            def switch_models(switch: Switch) -> None:
                retired.extend(self.use_models(switch))  # Ray workers follow config.solver
                if switch.solver is not None and solver is not None:
                    solver.llm = LimitedLLM(self.sol_llm, slots)
                if switch.generator is not None and self.gen_llm is not None:
                    generator.llm = LimitedLLM(self.gen_llm, slots)
                    generator.model = c.generator.model

            def inflight() -> int:
                models = (generator.llm, solver.llm if solver is not None else None)
                local = sum(x.inflight for x in models if isinstance(x, LimitedLLM))
                return local + (self.remote.inflight if self.remote is not None else 0)

            block = progress_block(live, lambda: controller.progress(inflight()), log)
            if self.remote is not None:
                self.remote.log = block.log
            controller = Controller(
                c,
                run,
                generator,
                executor,
                checker,
                self.stats,
                hooks=hooks,
                trainer=Trainer(c.trainer, run, block.log) if c.trainer.command is not None else None,
                switch_models=switch_models,
                log=block.log,
                state=state,
            )
            try:
                with block:
                    return await controller.run_all()
            except (EndpointDown, ExecutorError, EmptyEpochs) as e:  # --resume goes on from here
                controller.write_summary(done=False, stopped_because=str(e))
                raise
            except UserError as e:  # a hook or the training step failed: the summary says why the run stopped
                with contextlib.suppress(UserError, OSError):  # unless the run directory is what failed
                    controller.write_summary(done=False, stopped_because=str(e))
                raise
            finally:
                for llm in (self.gen_llm, self.sol_llm, *retired):
                    await aclose_llm(llm)
                if tracking is not None:
                    try:
                        tracking.close()
                    except Exception as e:  # the records are safe on disk: a tool failing at the end fails nothing
                        log(f"tracking: could not close {e.__class__.__name__}: {e}")

        return asyncio.run(main())

    def solve(
        self,
        tasks: list[Task],
        run: RunDir,
        *,
        resumed: bool = False,
        log: Callable[[str], None] = print,
        live: bool = False,
    ) -> dict[str, Any]:
        """The solver alone on existing tasks (e.g. an imported benchmark); resumable like a run.
        ``live``: a progress block on stderr (a terminal).

        Each task gets ``solver.samples_per_task`` episodes; ``task_stats.jsonl`` summarises them. Tests
        without an expected value get the reference's output first (``fill_expected``; the CLI does it
        before the run directory exists), so ``tasks.jsonl`` holds the values the episodes were judged on.
        """
        if resumed:
            check_written_by(run.path, "solve")
        state = RunState.load(run)  # checked first: a damaged directory is refused untouched
        tasks = self.fill_expected(tasks)
        self._write_header(run, resumed, "solve")
        k = self.config.solver.samples_per_task
        on_disk = state.tally.episodes
        if not state.tasks:
            run.append(TASKS, [t.dump() for t in tasks])

        async def main() -> None:
            executor, _, solver = self.executors(asyncio.Semaphore(self.config.controller.concurrency))
            passed = 0

            def progress() -> list[str]:
                inflight = solver.llm.inflight if solver is not None and isinstance(solver.llm, LimitedLLM) else 0
                inflight += self.remote.inflight if self.remote is not None else 0
                ended = state.tally.episodes
                return solve_lines(ended, on_disk, passed, len(tasks) * k, self.stats, inflight)

            block = progress_block(live, progress, log)
            if self.remote is not None:
                self.remote.log = block.log

            def ended(task: Task, trajectory: Trajectory) -> None:
                nonlocal passed
                passed += trajectory.final_status == "passed"
                sample = f"#{trajectory.sample_index}" if k > 1 else ""
                block.log(f"{task.task_id}{sample}: {trajectory.final_status} in {len(trajectory.attempts)} turn(s)")

            episodes = Episodes(
                run, state, executor, k, task_budget_s=self.config.solver.task_budget_s, on_trajectory=ended
            )
            try:
                for task in tasks:
                    episodes.write_stats(task, 0)  # a kill between the last sample and its stats row
                with block:
                    await asyncio.gather(*(e for task in tasks for e in episodes.start(task, 0)))
            finally:
                await aclose_llm(self.sol_llm)

        stopped: EndpointDown | ExecutorError | None = None
        try:
            asyncio.run(main())
        except (EndpointDown, ExecutorError) as e:
            stopped = e
        summary = solve_summary(state, len(tasks), k, self.stats.summary(), str(stopped) if stopped else None)
        run.write_json("summary.json", summary)
        run.note_llm(self.stats.fallbacks, self.stats.servers)
        if stopped is not None:
            raise stopped
        return summary


def start_run(
    config: RunConfig, run: RunDir, *, resumed: bool = False, log: Callable[[str], None] = print
) -> Sequence[EpochMetrics]:
    """Run (or resume) the self-play loop in ``run``; returns one metrics row per epoch."""
    with Session(config) as session:
        return session.run(run, resumed=resumed, log=log)


def solve_tasks(
    config: RunConfig, tasks: list[Task], run: RunDir, *, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """The solver alone on existing tasks; see ``Session.solve``. Tasks whose text shows a hidden
    test with its answer are solved as written, marked (``kinds.mark_leaks``) and named in ``log``."""
    from .kinds import leak_note, mark_leaks

    with Session(config, need_generator=False) as session:
        tasks, leaking = mark_leaks(session.fill_expected(tasks), config.solver.public_tests)
        if leaking:
            log(leak_note(leaking))
        return session.solve(tasks, run, log=log)
