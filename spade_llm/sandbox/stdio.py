"""Whole programs judged on (stdin, expected stdout) tests: the output rule and the runs.

The field's program tasks (CodeContests, APPS, TACO, LiveCodeBench, Codeforces) test a program by what it
prints for what it reads. Each test is one sandbox execution of the program as ``__main__`` with the
test's input as its standard input (``runner.run_program``), under a CPU-time budget per test, so load
does not move a verdict; its stdout is compared *outside* the sandbox by the one output rule,
``same_output``. A test passes only when the run ended normally with exit code 0 and printed what was
expected; a run that used up its budget (or the wall limit) is a ``timeout``; any other ending (a
non-zero exit, an exception, a signal, the memory or output limit) fails it, with what it printed kept.

After ``max_timeouts`` tests timed out the rest are not run (``timeout``, "not run: ..."): a program that
loops on every input would otherwise spend a budget per test.

**Checkers.** Where several outputs are right (any index of a maximum, the pairs in any order), a task
carries a *checker* (``Task.checker``) and the output rule gives way to it. The contract: a Python
program, run in the sandbox as ``__main__`` like any other, that reads on stdin one JSON object,
``{"input": ..., "expected": ..., "actual": ...}`` (``checker_stdin``: the test's input, the reference's
output, the answer's output, each a string), and exits 0 to accept ``actual`` and non-zero to reject
it; what it prints is not read. Each run has its own CPU budget, ``CHECKER_CPU_S``. The answer's
output reaches it only as a JSON string value, escaped by ``json.dumps`` (quotes, NULs, lone
surrogates, text shaped like JSON fields: all data), in another execution after the answer's ended:
nothing of the answer runs beside the checker. A test of a task with a checker passes when the
answer's run ended normally with exit 0 within its limits, its output was not cut at the output
limit, and the checker accepted it (``accepted``); a rejection, or a checker that fails or runs out of
time on that output, fails the test. Every verdict on a program task goes through ``run_stdio_tests``
(the judge, the rewards, validation's stand-ins through ``checked_stand_in_passes``); a Harbor
folder's standalone judge runs its checker by the same contract.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..languages import DEFAULT_ANSWER_LANGUAGE, get_toolchain, pyast
from ..types import TestCase
from .base import Limits, Sandbox
from .compiled import DEFAULT_COMPILE_TIMEOUT_S, Build, build, run_built
from .result import ExecStatus, ExecutionResult, TestResult, TestStatus
from .runner import MAIN_FILE, NOT_RUN_AFTER_TIMEOUTS, run_program

__all__ = [
    "CHECKER_CPU_S",
    "NOT_RUN_AFTER_TIMEOUTS",
    "accepted",
    "checked_stand_in_passes",
    "checker_stdin",
    "first_difference",
    "output_lines",
    "per_test_limits",
    "rejection",
    "run_checker",
    "run_stdio_tests",
    "same_output",
    "stand_in_passes",
]

SHOWN_OUTPUT_CHARS = 2000
"""Most of a test's stdout kept in its ``TestResult.output`` (feedback clips further)."""
WALL_FACTOR = 10.0
"""A test's wall limit is this many times its CPU budget (plus ``WALL_SLACK_S``): only a program that
sleeps, blocks or ignores the budget's signal meets it, so a loaded machine does not."""
WALL_SLACK_S = 1.0
STAND_IN_CHARS = 60
"""Most of a constant output a weak-tests message quotes."""
CHECKER_CPU_S = 2.0
"""CPU seconds one run of a task's checker may take: its own budget, whatever the task's time limit."""
SHOWN_CHECKER_CHARS = 200
"""Most of a checker's last stderr line a rejection quotes."""


def output_lines(text: str) -> list[str]:
    """The lines the output rule compares: each line without its trailing whitespace (``\\r`` included),
    and no trailing empty lines (so a missing or an extra final newline does not matter)."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def same_output(expected: str, actual: str) -> bool:
    """The output rule: ``actual`` stdout matches ``expected`` when their lines are equal after stripping
    each line's trailing whitespace and ignoring trailing blank lines. Leading whitespace, blank lines
    between lines, letter case and number formats all count (``1.0`` is not ``1``): a task whose answers
    may differ gives a checker program instead.

    >>> same_output("1 2\\n3\\n", "1 2   \\n3")
    True
    >>> same_output("1 2\\n", "1  2\\n"), same_output("YES\\n", "yes\\n"), same_output("", "\\n\\n")
    (False, False, True)
    """
    return output_lines(expected) == output_lines(actual)


def first_difference(expected: str, actual: str) -> str | None:
    """Where ``actual`` first departs from ``expected`` under the output rule, in words, or None when
    they match: what a repair prompt shows beside a long output, whose clipped text may hide it.

    >>> first_difference("1\\n2\\n3\\n", "1\\n5   \\n3")
    "line 2: expected '2', printed '5'"
    >>> first_difference("1\\n2\\n", "1\\n")
    "line 2: expected '2', printed nothing more (1 of 2 lines)"
    >>> first_difference("1\\n", "1\\n2\\n"), first_difference("1\\n", "1")
    ("line 2: printed '2' after the 1 expected line", None)
    """
    want, got = output_lines(expected), output_lines(actual)
    for n, (w, g) in enumerate(zip(want, got, strict=False), start=1):  # the shorter ends it
        if w != g:
            return f"line {n}: expected {_clip_line(w)!r}, printed {_clip_line(g)!r}"
    if len(got) < len(want):
        n = len(got) + 1
        return f"line {n}: expected {_clip_line(want[n - 1])!r}, printed nothing more ({len(got)} of {len(want)} lines)"
    if len(got) > len(want):
        lines = f"{len(want)} expected line{'s' if len(want) != 1 else ''}"
        return f"line {len(want) + 1}: printed {_clip_line(got[len(want)])!r} after the {lines}"
    return None


DIFF_LINE_CHARS = 80
"""Most of one line ``first_difference`` quotes."""


def _clip_line(line: str) -> str:
    return line if len(line) <= DIFF_LINE_CHARS else line[:DIFF_LINE_CHARS] + "..."


def _expected_texts(tests: Sequence[TestCase]) -> list[str]:
    return [t.expected if isinstance(t.expected, str) else "" for t in tests]


def _most_common_output(expected: Sequence[str]) -> str:
    """The expected output most tests share, as the output rule reads it (its lines joined)."""
    return Counter("\n".join(output_lines(e)) for e in expected).most_common(1)[0][0] if expected else ""


def _shown_constant(common: str) -> str:
    return common if len(common) <= STAND_IN_CHARS else common[:STAND_IN_CHARS] + "..."


def stand_in_passes(tests: Sequence[TestCase]) -> str | None:
    """Which trivial program passes every test (prints nothing, echoes its input, prints the most common
    expected output), or None. Decided from the texts, by the output rule: nothing runs. The program
    kind's ``weak_tests`` gate, and the exports' check of the tests verl's judges score."""
    expected = _expected_texts(tests)
    if all(not output_lines(e) for e in expected):
        return "a program that prints nothing passes every test (every expected output is empty)"
    if all(same_output(e, t.input) for e, t in zip(expected, tests, strict=True)):
        return "a program that prints its input back passes every test"
    common = _most_common_output(expected)
    if all(same_output(e, common) for e in expected):
        return f"a program that always prints {_shown_constant(common)!r} passes every test"
    return None


# -- checkers -----------------------------------------------------------------------------------------

Check = Callable[[TestCase, str], str | None]
"""A checker's verdict on a test and the answer's output: None when accepted, else why not."""


def checker_stdin(test_input: str, expected: str, actual: str) -> str:
    """What a checker reads on stdin: one JSON object with the three texts as string values. ASCII
    throughout (``json.dumps`` escapes every quote, control character, NUL and lone surrogate), so no
    output, however it is made, is more than a string's value to the checker."""
    return json.dumps({"input": test_input, "expected": expected, "actual": actual})


def run_checker(
    sandbox: Sandbox, checker: str, test_input: str, expected: str, actual: str, limits: Limits
) -> ExecutionResult:
    """One run of ``checker`` in the sandbox on a test's input, its expected and an actual output, under
    ``CHECKER_CPU_S`` of CPU (its wall limit from ``per_test_limits``)."""
    stdin = checker_stdin(test_input, expected, actual)
    return run_program(sandbox, checker, per_test_limits(CHECKER_CPU_S, limits), stdin=stdin, cpu_s=CHECKER_CPU_S)


def accepted(run: ExecutionResult) -> bool:
    """Whether a checker's run accepted: it ended by itself with exit code 0 (anything else rejects)."""
    return run.status == "ok" and run.return_code == 0 and run.signal is None


def rejection(run: ExecutionResult) -> str:
    """Why a checker's run is no acceptance, in one line: its exit code and last stderr line, or the limit
    it met (what a failed test's ``error`` says)."""
    if run.status == "timeout":
        return f"the task's checker ran out of its {CHECKER_CPU_S:g} s on this output"
    if run.status in ("ok", "error") and run.return_code is not None:
        last = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
        said = f": {last[0][:SHOWN_CHECKER_CHARS]}" if last else ""
        return f"the task's checker rejected this output (exit code {run.return_code}{said})"
    return f"the task's checker failed on this output ({_ending(run)})"


def _checking(sandbox: Sandbox, checker: str, limits: Limits) -> Check:
    """``checker`` as a test's judge: None when it accepts the answer's output, else why not."""

    def check(test: TestCase, actual: str) -> str | None:
        expected = test.expected if isinstance(test.expected, str) else ""
        run = run_checker(sandbox, checker, test.input, expected, actual, limits)
        return None if accepted(run) else rejection(run)

    return check


def checked_stand_in_passes(sandbox: Sandbox, checker: str, tests: Sequence[TestCase], limits: Limits) -> str | None:
    """Which trivial program (``stand_in_passes``'s: prints nothing, echoes its input, prints the most
    common expected output) ``checker`` accepts on every test, or None when each is rejected on at least
    one. Each stand-in's output goes through the checker, test after test, until one rejects it."""
    expected = _expected_texts(tests)
    common = _most_common_output(expected)
    stand_ins: list[tuple[str, Callable[[TestCase], str]]] = [
        ("a program that prints nothing", lambda t: ""),
        ("a program that prints its input back", lambda t: t.input),
        (f"a program that always prints {_shown_constant(common)!r}", lambda t: common + "\n"),
    ]
    for name, prints in stand_ins:
        if all(
            accepted(run_checker(sandbox, checker, t.input, e, prints(t), limits))
            for t, e in zip(tests, expected, strict=True)
        ):
            return f"the checker accepts {name} on every test"
    return None


def per_test_limits(cpu_s: float, limits: Limits) -> Limits:
    """``limits`` for one test's run under a CPU budget of ``cpu_s``: its wall limit ``WALL_FACTOR`` times
    the budget plus the slack, never more than ``limits.timeout_s``."""
    return replace(limits, timeout_s=min(limits.timeout_s, WALL_FACTOR * cpu_s + WALL_SLACK_S))


def _verdict(index: int, test: TestCase, run: ExecutionResult, check: Check | None = None) -> TestResult:
    expected = test.expected if isinstance(test.expected, str) else None
    status: TestStatus
    error: str | None = None
    if run.status == "timeout":
        status, error = "timeout", "time limit exceeded"
    elif run.status != "ok" or run.return_code != 0:
        status = "error"
        error = _ending(run)
    elif expected is None:
        status, error = "error", "the test has no expected output to compare with"
    elif run.stdout_truncated:
        status, error = "failed", "output limit exceeded"
    elif check is not None:
        error = check(test, run.stdout)
        status = "passed" if error is None else "failed"
    else:
        status = "passed" if same_output(expected, run.stdout) else "failed"
    return TestResult(
        index=index,
        input=test.input,
        status=status,
        output=run.stdout[:SHOWN_OUTPUT_CHARS],
        error=error,
        duration_ms=run.duration_ms,
    )


def _ending(run: ExecutionResult) -> str:
    """Why a run that did not end normally failed its test, in one line."""
    if run.status in ("ok", "error") and run.return_code is not None:  # it ended by itself
        last = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
        return f"exit code {run.return_code}" + (f": {last[0][:300]}" if last else "")
    note = [line for line in run.stderr.splitlines() if line.startswith("[spade]")]
    return note[-1].removeprefix("[spade] ") if note else run.status


def run_stdio_tests(
    sandbox: Sandbox,
    code: str,
    tests: Sequence[TestCase],
    limits: Limits,
    cpu_s: float,
    *,
    indices: Sequence[int] | None = None,
    max_timeouts: int | None = 2,
    checker: str | None = None,
    language: str = DEFAULT_ANSWER_LANGUAGE,
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
) -> ExecutionResult:
    """``code`` run once per test on its input, its stdout judged by ``same_output``, or with a
    ``checker`` by the checker (the module docstring): one ``ExecutionResult`` over all (``indices``:
    each test's index to report, default 0..n-1).

    The result's streams are the first failing test's (else the last test's): what feedback may show of
    the public tests. ``status`` is ``ok`` unless every test ran into the same limit.
    """
    chosen = list(range(len(tests))) if indices is None else list(indices)
    toolchain = get_toolchain(language)
    per_test = per_test_limits(cpu_s + toolchain.startup_cpu_s, limits)
    built: Build | None = None
    if toolchain.in_harness:
        load_error = _syntax_error(code)
        stderr = load_error
    else:
        built = build(sandbox, toolchain, code, limits, compile_timeout_s)
        load_error = None if built.ok else built.error
        stderr = built.result.stderr if built.result is not None else load_error
    if load_error is not None:  # it would fail every test the same way: no run needed
        not_run = [
            TestResult(index=i, input=t.input, status="error", error=load_error)
            for i, t in zip(chosen, tests, strict=True)
        ]
        return ExecutionResult(
            status="error", stderr=stderr or load_error, tests_passed=0, tests_total=len(not_run),
            test_results=not_run, load_error=load_error,
        )  # fmt: skip
    check = None if checker is None else _checking(sandbox, checker, limits)
    results: list[TestResult] = []
    runs: list[ExecutionResult] = []
    timeouts = 0
    for index, test in zip(chosen, tests, strict=True):
        if max_timeouts is not None and timeouts >= max_timeouts:
            results.append(TestResult(index=index, input=test.input, status="timeout", error=NOT_RUN_AFTER_TIMEOUTS))
            continue
        if built is None:
            run = run_program(sandbox, code, per_test, stdin=test.input, cpu_s=cpu_s)
        else:
            run = run_built(sandbox, built, per_test, stdin=test.input, cpu_s=cpu_s).result
        verdict = _verdict(index, test, run, check)
        timeouts += verdict.status == "timeout"
        results.append(verdict)
        runs.append(run)
    failing = [run for run, r in zip(runs, results, strict=False) if not r.passed]  # runs: the results' prefix
    shown = failing[0] if failing else runs[-1] if runs else ExecutionResult(status="ok")
    status: ExecStatus = "timeout" if results and all(r.status == "timeout" for r in results) else "ok"
    return ExecutionResult(
        status=status,
        return_code=shown.return_code,
        signal=shown.signal,
        stdout=shown.stdout,
        stderr=shown.stderr,
        stdout_truncated=shown.stdout_truncated,
        stderr_truncated=shown.stderr_truncated,
        duration_ms=sum(run.duration_ms for run in runs),
        tests_passed=sum(r.passed for r in results),
        tests_total=len(results),
        test_results=results,
    )


def _syntax_error(code: str) -> str | None:
    """Why ``code`` does not compile (``SyntaxError: ... (line N)``), or None; parsed here, outside the
    sandbox, without running anything (a source too deep for the parser is left for the run to judge)."""
    try:
        pyast.parse(code, MAIN_FILE)
    except SyntaxError as e:
        return f"{type(e).__name__}: {e.msg} (line {e.lineno})"
    except (RecursionError, MemoryError, ValueError):
        return None
    return None
