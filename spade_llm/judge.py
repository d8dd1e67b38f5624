"""The one judge: how well does ``code`` do on ``task``? Used by validation, the solver, ``evaluate``,
``verify`` and the reward functions, so a verdict means the same thing everywhere.

``run_task_tests`` (what calling a ``Judge`` does) runs the code on the chosen tests in one sandbox
execution and compares its outputs with the expected values outside the sandbox; ``final_status``
turns that execution into an attempt's verdict. Validation, which needs the raw outputs (to fill in
expected values and to compare two runs), takes them from ``Judge.outputs`` and compares with
``compare_outputs``: the same execution and the same comparison.

Blocking: the pipeline calls it from worker threads (``checking.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .languages import DEFAULT_ANSWER_LANGUAGE
from .sandbox.base import Limits, Sandbox
from .sandbox.compiled import DEFAULT_COMPILE_TIMEOUT_S
from .sandbox.registry import AUTO
from .sandbox.runner import (
    DEFAULT_TEST_TIMEOUT_S,
    CallsOutcome,
    compare_outputs,
    execute_calls,
    parse_input,
    run_check,
)
from .types import ExecutionResult, FinalStatus, Task

if TYPE_CHECKING:  # the config models cost ~0.2 s to import: only a config file brings them in
    from .config import RunConfig

__all__ = [
    "DEFAULT_TEST_TIMEOUT_S",
    "MAX_TEST_TIMEOUTS",
    "Judge",
    "JudgeSettings",
    "compare_outputs",
    "final_status",
    "judge_settings",
    "load_settings",
    "parse_input",
    "run_task_tests",
]

MAX_TEST_TIMEOUTS = 2
"""An execution stops calling the entry point after this many tests timed out: code that loops on
every input would otherwise spend the whole wall limit, one test budget at a time."""


@dataclass(frozen=True)
class Judge:
    """Judges code against tasks in one sandbox under fixed limits.

    ``max_timeouts``: tests that may time out before an execution stops calling the entry point
    (None: every test is tried, as validation does for a reference).
    """

    sandbox: Sandbox
    limits: Limits
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    max_timeouts: int | None = MAX_TEST_TIMEOUTS
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S
    """Wall seconds an answer's compile may take (answers in a compiled language)."""

    def __call__(self, task: Task, code: str, tests: Sequence[int] | None = None) -> ExecutionResult:
        """``run_task_tests`` in this judge's sandbox, under its limits."""
        return run_task_tests(
            self.sandbox, task, code, self.limits, self.test_timeout_s, tests=tests, max_timeouts=self.max_timeouts
        )

    def stdio(
        self, task: Task, code: str, tests: Sequence[int] | None = None, *, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> ExecutionResult:
        """``code`` as a whole program on the task's (stdin, expected stdout) tests (a subset by index, or
        all), one run per test under the task's ``time_limit_s`` of CPU (default: this judge's
        ``test_timeout_s``), judged by the output rule, or by the task's ``checker`` when it has one
        (``sandbox/stdio.py``). ``language``: the answer's (``languages.TOOLCHAINS``); one in another language than
        Python is compiled once and each test runs the build, with its start-up CPU granted on top."""
        from .sandbox.stdio import run_stdio_tests

        chosen = list(range(len(task.tests))) if tests is None else list(tests)
        cpu_s = task.time_limit_s or self.test_timeout_s
        cases = [task.tests[i] for i in chosen]
        return run_stdio_tests(
            self.sandbox, code, cases, self.limits, cpu_s, indices=chosen, max_timeouts=self.max_timeouts,
            checker=task.checker, language=language, compile_timeout_s=self.compile_timeout_s,
        )  # fmt: skip

    def outputs(self, task: Task, code: str, *, hash_seed: int = 0) -> CallsOutcome:
        """What ``code``'s entry point returned on each of the task's test inputs, before comparison
        (``compare_outputs(outcome, tests)`` compares); ``hash_seed`` is the run's PYTHONHASHSEED."""
        return execute_calls(
            self.sandbox,
            with_prelude(task, code),
            task.entry_point,
            [t.input for t in task.tests],
            self.limits,
            self.test_timeout_s,
            hash_seed=hash_seed,
            max_timeouts=self.max_timeouts,
            entry_class=task.entry_class,
        )


def run_task_tests(
    sandbox: Sandbox,
    task: Task,
    code: str,
    limits: Limits,
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
    *,
    tests: Sequence[int] | None = None,
    max_timeouts: int | None = MAX_TEST_TIMEOUTS,
) -> ExecutionResult:
    """Run ``code`` on the task's tests (``tests``: indices into ``task.tests``, default all) in one
    execution and compare outside the sandbox; a ``check_code`` task judged on all its tests also runs
    its residual assert script, in a process the code cannot reach (``runner.run_check``).

    Each ``TestResult.index`` is the test's index in ``task.tests``, whatever subset ran. After
    ``max_timeouts`` tests timed out the rest are not run and come back as ``timeout`` ("not run:
    earlier tests timed out"); None tries every test.
    """
    if task.check_code is not None and tests is None:
        return run_check(
            sandbox, code, task.check_code, task.entry_point, limits, task.tests, test_timeout_s, max_timeouts
        )
    chosen = list(range(len(task.tests))) if tests is None else list(tests)
    cases = [task.tests[i] for i in chosen]
    outcome = execute_calls(
        sandbox,
        with_prelude(task, code),
        task.entry_point,
        [t.input for t in cases],
        limits,
        test_timeout_s,
        max_timeouts=max_timeouts,
        entry_class=task.entry_class,
    )
    result = compare_outputs(outcome, cases)
    if result.test_results is not None and tests is not None:  # a subset: each result names its test's index
        result.test_results = [replace(r, index=chosen[r.index]) for r in result.test_results]
    return result


def with_prelude(task: Task, code: str) -> str:
    """``code`` as the sandbox runs it: after the task's ``prelude`` when it has one (the names its
    benchmark's harness gives every answer), on lines of their own."""
    return code if not task.prelude else f"{task.prelude.rstrip()}\n\n{code}"


def final_status(result: ExecutionResult) -> FinalStatus:
    """An attempt's verdict: ``passed`` (every test), ``error`` (the code never got to run a test:
    syntax error, import-time exception, missing entry point, no code, or the execution ended before
    any test gave a result), ``timeout`` (some test, or the execution, ran out of time), else
    ``failed`` (wrong answers, or raised on some inputs)."""
    if result.all_passed:
        return "passed"
    if result.load_error is not None:
        return "error"
    tests = result.test_results or []
    if result.status == "timeout" or any(r.status == "timeout" for r in tests):
        return "timeout"
    # a test with an output got to run; a "failed" one without (check mode: an assert) did too
    ran = any(r.output is not None or r.status == "failed" for r in tests)
    if result.status != "ok" and not ran:
        return "error"
    return "failed"


@dataclass(frozen=True)
class JudgeSettings:
    """Limits and backend for ``verify``/``evaluate``: the default limits, or a run config's ``sandbox:``."""

    limits: Limits
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    backend: str = AUTO
    docker_image: str | None = None
    banned_imports: frozenset[str] = frozenset()
    """``validation.banned_imports`` of the run config (``verify`` rejects such tasks as ``banned_import``)."""
    min_kill_rate: float = 1.0
    """``validation.min_kill_rate`` of the run config (the mutation part of ``weak_tests``)."""
    max_mutants: int = 40
    """``validation.max_mutants`` of the run config."""
    max_bug_lines: int = 3
    """``bugfix.max_changed_lines`` of the run config (a bug's largest edit)."""
    max_bug_edits: int = 3
    """``bugfix.max_bugs`` of the run config (the most edits one procedural bug combines)."""
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S
    """``sandbox.compile_timeout_s`` of the run config (an answer in a compiled language)."""


def load_settings(config_path: str | None = None, **overrides: Any) -> JudgeSettings:
    """The ``sandbox:`` section of the run config at ``config_path`` (the default limits when None), with
    ``overrides`` (``timeout_s``, ``backend``...; None values ignored) on top.

    The config models are imported only when a file is given: ``verify`` and ``evaluate`` start fast.

    Raises:
        UserError: the file is missing, not YAML, or holds an invalid value.
    """
    if config_path is None:
        return judge_settings(None, **overrides)
    from .config import load_config

    return judge_settings(load_config(config_path), **overrides)


def judge_settings(config: RunConfig | None, **overrides: Any) -> JudgeSettings:
    """``load_settings`` of a config already loaded (None: the default limits)."""
    settings = JudgeSettings(Limits())
    if config is not None:
        sandbox = config.sandbox
        settings = JudgeSettings(
            sandbox.limits(),
            sandbox.test_timeout_s,
            sandbox.backend,
            sandbox.docker_image,
            frozenset(config.validation.banned_imports),
            config.validation.min_kill_rate,
            config.validation.max_mutants,
            config.bugfix.max_changed_lines,
            config.bugfix.max_bugs,
            sandbox.compile_timeout_s,
        )
    given = {k: v for k, v in overrides.items() if v is not None}
    limits = {k: given.pop(k) for k in list(given) if k in Limits.__dataclass_fields__}
    return replace(settings, limits=replace(settings.limits, **limits), **given)
