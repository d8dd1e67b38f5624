"""What solving needs, assembled from a run config: prompts, the solver's model, a sandbox, and
the checker and solver built from them.

``Session`` (a whole run) holds one, a Ray worker builds one of its own from the same ``RunConfig``
(so where an episode runs cannot change its record), and the generator's reward builds one on its
rewarder's sandbox. What a caller supplies instead of the config's part (``solver_model``,
``sandbox``) is given to the constructor: the session is composed, never subclassed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from ._util.redact import scrub_secrets
from .checking import CodeChecker
from .config import RoleConfig, RunConfig
from .errors import UserError
from .llm.base import LLM
from .llm.breaker import CircuitBreaker, GuardedLLM
from .llm.limited import LimitedLLM
from .llm.registry import get_llm
from .llm.stats import LLMStats
from .sandbox.base import Sandbox
from .sandbox.registry import get_sandbox
from .solver import LLMSolver
from .templates import Prompts
from .train_step import RoleSwitch, configured_endpoints, env_keys_allowed
from .types import Task

_Role = TypeVar("_Role", bound=RoleConfig)


def guarded(llm: LLM, role: RoleConfig, window_s: float) -> LLM:
    """``llm`` behind a circuit breaker named after its endpoint (see ``llm/breaker.py``)."""
    base = role.api_base[0] if isinstance(role.api_base, list) else role.api_base
    endpoint = f"{role.model} at {scrub_secrets(base)}" if base else role.model
    return GuardedLLM(llm, CircuitBreaker(endpoint, window_s))


class SolverSession:
    """The solver's side of a run, checked as it is built: templates, the solver's model string,
    and (on first use) the sandbox backend."""

    def __init__(
        self,
        config: RunConfig,
        *,
        solver_model: LLM | None = None,
        sandbox: Callable[[], Sandbox] | None = None,
        before_solver: Callable[[SolverSession], None] | None = None,
    ) -> None:
        """``solver_model``: the solver's model instead of ``config.solver``'s (serve-env's broker: its
        clients answer), kept through a training step's switch. ``sandbox``: where the sandbox comes
        from instead of ``config.sandbox`` (a reward's rewarder; never closed here). ``before_solver``:
        called before the solver's model is built, so the models built there (a run's generator) have
        their mistakes told first."""
        self.config = config
        self._solver_model = solver_model
        self._sandbox_source = sandbox
        self.key_endpoints = configured_endpoints(config)
        """Where our environment's keys may go: the endpoints of the config, before a step switches any."""
        self.prompts = Prompts(config.prompts_dir)
        problems = self.prompts.check_all()  # a broken user template fails now, not mid-run
        if problems:
            raise UserError(problems[0])
        self.stats = LLMStats()
        if before_solver is not None:
            before_solver(self)
        self.sol_llm = self.role_llm(config.solver, "solver")
        self._sandbox: Sandbox | None = None

    def role_llm(self, role: RoleConfig, name: str) -> LLM:
        """The model of one role (``generator``, ``solver``), behind its circuit breaker.

        Raises:
            UserError: the model string names no known provider or fake profile.
        """
        if name == "solver" and self._solver_model is not None:
            return self._solver_model
        c = self.config
        keys = env_keys_allowed(role, self.key_endpoints, c.trainer.pass_env)  # a switched endpoint may get none
        llm = get_llm(
            role, c.llm, seed=c.seed, stats=self.stats.view(name), concurrency=c.controller.concurrency, env_keys=keys
        )
        return guarded(llm, role, c.llm.breaker_s)

    @property
    def sandbox(self) -> Sandbox:
        """This process's sandbox, started on first use (or the one the ``sandbox`` source gives)."""
        if self._sandbox_source is not None:
            return self._sandbox_source()
        if self._sandbox is None:
            self._sandbox = get_sandbox(self.config.sandbox.backend, docker_image=self.config.sandbox.docker_image)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()

    def build_solver(self, slots: asyncio.Semaphore) -> tuple[CodeChecker, LLMSolver]:
        """The checker and solver of this session, the solver's requests sharing ``slots``."""
        c = self.config
        checker = CodeChecker(
            self.sandbox,
            c.sandbox,
            c.controller.concurrency,
            frozenset(c.validation.banned_imports),
            min_kill_rate=c.validation.min_kill_rate,
            max_mutants=c.validation.max_mutants,
            public_tests=c.solver.public_tests,
            max_bug_lines=c.bugfix.max_changed_lines,
        )
        solver = LLMSolver(
            LimitedLLM(self.sol_llm, slots),
            self.prompts,
            checker.check_answer,
            seed=c.seed,
            max_turns=c.solver.max_turns,
            public_tests=c.solver.public_tests,
            temperature=c.solver.temperature,
            max_tokens=c.solver.max_tokens,
            stderr_lines=c.solver.stderr_tail_lines,
            reward=c.reward,
            stats=self.stats.view("solver"),
            languages=c.curriculum.languages,
            samples_per_task=c.solver.samples_per_task,
        )
        return checker, solver

    def fill_expected(self, tasks: list[Task]) -> list[Task]:
        """``tasks`` with the expected values their tests lack taken from each task's reference, run
        in this process's sandbox under the run's limits (``expected.fill_expected``); nothing runs
        when none lacks one.

        Raises:
            UserError: a reference cannot give a missing value (the task and test are named).
        """
        from .judge import Judge
        from .tasksets.expected import fill_expected, needs_filling

        if not any(needs_filling(t) for t in tasks):
            return list(tasks)
        c = self.config
        judge = Judge(
            self.sandbox, c.sandbox.limits(), c.sandbox.test_timeout_s, compile_timeout_s=c.sandbox.compile_timeout_s
        )
        return fill_expected(judge, tasks, c.controller.concurrency)

    def switched_role(self, role: _Role, name: str, switch: RoleSwitch) -> tuple[_Role, LLM]:
        """``role`` (the ``name`` role's config) pointed at the model a training step handed back, and
        that model; the caller puts both in place (``use_solver_model``, ``Session.use_generator_model``).

        Raises:
            UserError: the model string names no known provider or fake profile.
        """
        role = role.model_copy(update=switch.dump())
        try:
            llm = self.role_llm(role, name)
        except UserError as e:
            raise UserError(f"the trainer's {name} model: {e}") from None
        return role, llm

    def use_solver_model(self, switch: RoleSwitch) -> LLM:
        """Point ``config.solver`` and ``sol_llm`` at the model a training step handed back; returns the
        model it replaces (to close when the run ends).

        Raises:
            UserError: the model string names no known provider or fake profile.
        """
        self.config.solver, llm = self.switched_role(self.config.solver, "solver", switch)
        replaced, self.sol_llm = self.sol_llm, llm
        return replaced
