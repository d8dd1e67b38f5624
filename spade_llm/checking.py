"""Async access to the sandbox for the pipeline: check an answer against a task, validate a task.

Sandbox calls block, so they run in worker threads, at most ``concurrency`` at once; the event
loop stays free for model requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .config import SandboxConfig
from .judge import Judge
from .kinds import DEFAULT_PUBLIC_TESTS, get_kind, run_gates
from .languages import DEFAULT_ANSWER_LANGUAGE
from .sandbox.base import Sandbox
from .types import ExecutionResult, Task
from .validation import ValidationReport, Validator


class CodeChecker:
    """Runs solutions and validations in the sandbox, ``concurrency`` executions at a time."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: SandboxConfig,
        concurrency: int,
        banned_imports: frozenset[str] = frozenset(),
        *,
        min_kill_rate: float = 1.0,
        max_mutants: int = 40,
        public_tests: int = DEFAULT_PUBLIC_TESTS,
        max_bug_lines: int = 3,
    ) -> None:
        """``public_tests``: the run's ``solver.public_tests`` (which tests the leak gate keeps hidden);
        ``max_bug_lines``: ``bugfix.max_changed_lines``."""
        self.public_tests = public_tests
        self.sandbox = sandbox
        self.config = config
        self.limits = config.limits()
        self.validator = Validator(
            sandbox,
            self.limits,
            config.test_timeout_s,
            banned_imports,
            min_kill_rate=min_kill_rate,
            max_mutants=max_mutants,
            fingerprint_behaviour=True,
            max_bug_lines=max_bug_lines,
            public_tests=public_tests,
        )
        self.judge = Judge(sandbox, self.limits, config.test_timeout_s, compile_timeout_s=config.compile_timeout_s)
        self._slots = asyncio.Semaphore(max(1, concurrency))

    def check_answer_sync(
        self, task: Task, code: str, tests: Sequence[int] | None = None, *, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> ExecutionResult:
        """The kind's ``check_answer`` on the task's tests (``tests``: a subset by index), or its ``check_code``,
        the code written in ``language``."""
        return get_kind(task.kind).check_answer(self.judge, task, code, tests, language=language)

    async def check_answer(
        self, task: Task, code: str, tests: Sequence[int] | None = None, *, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> ExecutionResult:
        """``check_answer_sync`` in a worker thread, at most ``concurrency`` at once."""
        async with self._slots:
            return await asyncio.to_thread(self.check_answer_sync, task, code, tests, language=language)

    async def validate(self, task: Task) -> ValidationReport:
        """The task's gates and the leak gate (``kinds.run_gates``), in a worker thread."""
        async with self._slots:
            return await asyncio.to_thread(run_gates, self.validator, task, self.public_tests)
