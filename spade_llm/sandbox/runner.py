"""The sandbox API the pipeline calls: run a program, call an entry point on inputs, compare outputs.

Everything here is backend-independent and blocking (the pipeline runs it in worker threads).
Each call sends ``harness.py`` (``common.harness_program``) through ``Sandbox.run`` with the code
under test as a file beside it, and turns the harness's report into an ``ExecutionResult`` with
``verdict.py``. The harness never runs here: this process does not even import it. Expected
values never enter the sandbox: ``execute_calls`` brings back encoded outputs and ``compare_outputs``
compares them outside.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..languages import pyast
from .base import Limits, Program, Sandbox
from .common import HARNESS_MODULE, HARNESS_STUB, PATH, frame, harness_program
from .result import ExecutionResult, TestResult, TestStatus
from .verdict import MAX_DEPTH, Interpretation, Mode, Output, Unsupported, interpret, passes, shared_parse, show

if TYPE_CHECKING:
    from ..types import TestCase  # only read here: running a program needs no pydantic

SOLUTION_FILE = "solution.py"
CHECK_FILE = "check.py"
MAIN_FILE = "main.py"
STDIN_FILE = "stdin.txt"
"""A program's standard input, written beside it (the harness opens it as the program's fd 0)."""
RESULTS_FACTOR = 8
"""The results channel may carry this many times ``output_limit_bytes`` (all tests' outputs)."""

__all__ = [
    "HARNESS_MODULE",
    "HARNESS_STUB",
    "CallsOutcome",
    "CommandRun",
    "Output",
    "compare_outputs",
    "execute_calls",
    "harness_program",
    "parse_input",
    "run_check",
    "run_command",
    "run_program",
    "run_tests",
]


@dataclass(frozen=True)
class CallsOutcome:
    """One execution of the entry point on a list of inputs, before any comparison.

    ``outputs`` has one entry per call that finished, in input order: all of them when the run
    completed, a prefix when it was cut short (see ``result.status``) or stopped after
    ``max_timeouts`` timed-out calls (``stopped``), none when the code did not load
    (``load_error``) or the harness protocol was violated.
    """

    result: ExecutionResult
    outputs: list[Output] = field(default_factory=list)
    load_error: str | None = None
    stopped: bool = False
    """The harness stopped calling the entry point after ``max_timeouts`` calls timed out."""


MAX_INPUT_CHARS = 100_000
"""Longest test input (the text of its argument tuple)."""
MAX_INPUT_DEPTH = MAX_DEPTH + 1
"""Deepest nesting of containers in a test input: the argument tuple, then as deep as an output may go."""


def parse_input(text: str) -> tuple[Any, ...] | str:
    """The arguments of one test input, or a message saying why it is not a literal tuple.

    The one parser of test inputs: validation's ``bad_input`` gate and the runner (which sends the
    parsed arguments into the sandbox, where a bad one becomes that test's error) both use it.
    """
    if len(text) > MAX_INPUT_CHARS:
        return f"input longer than {MAX_INPUT_CHARS} characters ({len(text)})"
    value = _json_shaped(text)
    if value is None:
        try:
            value = pyast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
            return f"not a Python literal: {text[:60]!r} ({type(e).__name__})"
    if type(value) is not tuple:
        return f"not a tuple of arguments: {text[:60]!r} ({type(value).__name__}; write a 1-tuple as '(x,)')"
    # a container opens with a bracket: text with fewer cannot nest deeper (the walk costs more than the parse)
    if sum(text.count(c) for c in "([{") > MAX_INPUT_DEPTH and _depth(value) > MAX_INPUT_DEPTH:
        return f"nested deeper than {MAX_INPUT_DEPTH} levels"
    return value


_shared_input = shared_parse(parse_input)
"""``parse_input``, shared: only for the harness request, which is marshalled, never changed."""


def _no_constant(name: str) -> Any:
    raise ValueError(name)


_JSON = json.JSONDecoder(parse_constant=_no_constant)


def _json_shaped(text: str) -> tuple[Any, ...] | None:
    """The arguments of an input that reads the same as JSON inside its parentheses, such as
    ``([1, 2.5], 3)`` (what ``repr`` writes for numbers, lists and double-quoted strings), parsed
    by the C JSON decoder in a tenth of ``literal_eval``'s time; None for any other text (then
    ``literal_eval`` decides). Taken only when ``repr`` of the result gives back the very text: the
    value ``literal_eval`` would give, with its types (``true``, ``NaN`` or ``"\\/"`` never pass)."""
    if len(text) < 2 or text[0] != "(" or text[-1] != ")" or "\\" in text or text.count("(") != 1:
        return None
    inner = text[1:-1]
    body = inner[:-1] if inner.endswith(",") else inner
    try:
        value = _JSON.decode("[" + body + "]")
    except (ValueError, RecursionError):
        return None
    args = tuple(value)
    return args if repr(args) == text else None


def _depth(value: Any) -> int:
    """How deeply containers nest in a literal (iterative: no recursion limit to hit)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((x, depth + 1) for pair in item.items() for x in pair)
        elif isinstance(item, (list, tuple, set, frozenset)):
            deepest = max(deepest, depth)
            stack.extend((x, depth + 1) for x in item)
    return deepest


def _execute(
    sandbox: Sandbox,
    mode: Mode,
    files: dict[str, str] | dict[str, bytes],
    request: dict[str, Any],
    limits: Limits,
    *,
    n: int = 0,
    hash_seed: int = 0,
    marker: str | None = None,
    max_timeouts: int | None = None,
    report_room: int = 0,
) -> Interpretation:
    nonce = secrets.token_hex(16)
    request = {
        "v": 1,
        "mode": mode,
        "timeout_s": float(limits.timeout_s),
        "output_limit": int(limits.output_limit_bytes),
        "value_limit": int(limits.output_limit_bytes),
        "results_limit": int(limits.output_limit_bytes) * RESULTS_FACTOR,
        **request,
    }
    stdin = frame(request) + frame({"nonce": nonce, "marker": marker})
    stub, harness_files = harness_program()
    program = Program(
        source=stub,
        stdin=stdin,
        files={**harness_files, **{name: _bytes(data) for name, data in files.items()}},
        env={"PYTHONHASHSEED": str(hash_seed)},
    )
    raw = sandbox.run(program, replace(limits, output_limit_bytes=_report_cap(limits) + report_room))
    return interpret(raw, nonce, mode, n, marker, max_timeouts)


def _bytes(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


def _report_cap(limits: Limits) -> int:
    """Room for the harness's report: both streams JSON-escaped (up to 6x) plus the results."""
    return 12 * limits.output_limit_bytes + 2 * RESULTS_FACTOR * limits.output_limit_bytes + (1 << 16)


def run_program(
    sandbox: Sandbox,
    source: str,
    limits: Limits,
    *,
    stdin: str | None = None,
    cpu_s: float | None = None,
    hash_seed: int = 0,
) -> ExecutionResult:
    """Run ``source`` as ``__main__`` (``spade exec``); its exit code and streams are the result's.

    ``stdin``: what the program reads on its standard input (default: nothing, ``/dev/null``).
    ``cpu_s``: a CPU-time budget (every thread of the program's process), after which the run ends as
    ``timeout``; the wall limit stays ``limits.timeout_s`` (a program that sleeps or ignores the
    budget's signal meets it). ``hash_seed``: the program's PYTHONHASHSEED."""
    return timed_program(sandbox, source, limits, stdin=stdin, cpu_s=cpu_s, hash_seed=hash_seed)[0]


def timed_program(
    sandbox: Sandbox,
    source: str,
    limits: Limits,
    *,
    stdin: str | None = None,
    cpu_s: float | None = None,
    hash_seed: int = 0,
) -> tuple[ExecutionResult, float | None]:
    """``run_program``, and the CPU seconds the program's process used (None when the harness did not
    report it): what a time limit derived from a reference's runs is measured in."""
    files = {MAIN_FILE: source}
    request: dict[str, Any] = {"file": MAIN_FILE}
    if stdin is not None:
        files[STDIN_FILE] = stdin
        request["stdin_file"] = STDIN_FILE
    if cpu_s is not None:
        request["cpu_s"] = float(cpu_s)
    seen = _execute(sandbox, "main", files, request, limits, hash_seed=hash_seed)
    return seen.result, seen.cpu_s


@dataclass(frozen=True)
class CommandRun:
    """One ``run_command``: what happened, the CPU it used, and the files it was asked to leave."""

    result: ExecutionResult
    cpu_s: float | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    files_error: str | None = None
    """Why ``files`` is empty although files were asked for (they were larger than allowed)."""


def run_command(
    sandbox: Sandbox,
    argv: list[str],
    files: dict[str, bytes],
    limits: Limits,
    *,
    stdin: str | None = None,
    cpu_s: float | None = None,
    env: dict[str, str] | None = None,
    executables: tuple[str, ...] = (),
    collect: tuple[str, ...] = (),
    collect_limit: int = 0,
) -> CommandRun:
    """Run ``argv`` (an absolute program path, or one of ``files``) in the sandbox's scratch directory
    holding ``files``, as the harness's child under ``limits`` (the harness's ``exec`` mode); its exit
    status and streams are the result's. ``stdin``, ``cpu_s``: as ``run_program``. ``env``: the
    command's environment (``HOME`` and ``TMPDIR`` are the scratch directory). ``executables``: files
    made executable first. ``collect``: files to bring back after the run (names, or ``*.ext``), at
    most ``collect_limit`` bytes in all (a compile's output).

    Raises:
        ValueError: a file of ``files`` has a name the sandbox keeps for itself (its harness, stdin)."""
    taken = sorted(set(files) & {STDIN_FILE, *harness_program()[1]})
    if taken:  # the harness's own files and the stdin it feeds: a caller's file must not replace them
        raise ValueError(f"file name {taken[0]!r} is reserved for the sandbox's own use")
    all_files: dict[str, bytes] = dict(files)
    command_env = {"PATH": PATH, "LANG": "C.UTF-8", **(env or {})}
    request: dict[str, Any] = {"argv": list(argv), "env": command_env, "executables": list(executables)}
    if stdin is not None:
        all_files[STDIN_FILE] = stdin.encode("utf-8", "surrogatepass")
        request["stdin_file"] = STDIN_FILE
    if cpu_s is not None:
        request["cpu_s"] = float(cpu_s)
    if collect:
        request["collect"] = list(collect)
        request["collect_limit"] = int(collect_limit)
    # base64 and JSON make the collected files ~4/3 their size in the report
    seen = _execute(sandbox, "exec", all_files, request, limits, report_room=collect_limit * 4 // 3 + 4096)
    return CommandRun(seen.result, seen.cpu_s, seen.files, seen.files_error)


def execute_calls(
    sandbox: Sandbox,
    code: str,
    entry_point: str,
    inputs: Sequence[str | tuple[Any, ...]],
    limits: Limits,
    test_timeout_s: float,
    hash_seed: int = 0,
    max_timeouts: int | None = None,
    block_s: float | None = None,
    entry_class: str | None = None,
) -> CallsOutcome:
    """Call ``entry_point`` of ``code`` on each input (a literal tuple of arguments) in one execution.

    An input that is not a literal tuple gives that call an error output; the others still run. An
    input may also come as the tuple ``parse_input`` gave for its text (validation's mutation gate
    sends each test's arguments to forty versions: parsing each copy of the text again was a third of
    the parent's CPU time in validation); it goes in as it is, so it must share no object with another input
    (the request's encoding keeps shared objects shared, and a call may change its arguments).
    ``hash_seed`` is the program's PYTHONHASHSEED (validation runs twice to catch nondeterminism).
    ``max_timeouts``: after this many calls timed out the harness calls no more (code that loops on
    every input would otherwise spend the whole wall limit); None: every input is tried.
    ``block_s``: the wall clock ends a call only once it blocks (uses next to no CPU for this long) or
    the execution's deadline comes, never for computing slowly (validation's gates); None: the judge's
    wall backstop (``harness``).
    ``entry_class``: the entry point is a method of this class, instantiated once (``Task.entry_class``).
    """
    request = _calls_request(entry_point, inputs, test_timeout_s, max_timeouts, entry_class)
    if block_s is not None:
        request["block_s"] = float(block_s)
    seen = _execute(
        sandbox,
        "tests",
        {SOLUTION_FILE: code},
        request,
        limits,
        n=len(inputs),
        hash_seed=hash_seed,
        max_timeouts=max_timeouts,
    )
    return CallsOutcome(seen.result, seen.outputs, seen.load_error, seen.stopped)


def _calls_request(
    entry_point: str,
    inputs: Sequence[str | tuple[Any, ...]],
    test_timeout_s: float,
    max_timeouts: int | None,
    entry_class: str | None = None,
) -> dict[str, Any]:
    """The harness request to call ``SOLUTION_FILE``'s entry point on each input (tests and check mode)."""
    if max_timeouts is not None and max_timeouts < 1:
        raise ValueError(f"max_timeouts must be at least 1 or None, got {max_timeouts}")
    return {
        "file": SOLUTION_FILE,
        "entry_point": entry_point,
        "inputs": [_shared_input(text) if type(text) is str else text for text in inputs],
        "test_timeout_s": float(test_timeout_s),
        "max_timeouts": max_timeouts,
        "entry_class": entry_class,
    }


def compare_outputs(outcome: CallsOutcome, tests: list[TestCase]) -> ExecutionResult:
    """``outcome.result`` with the verdict of each test filled in (pure; nothing runs).

    A test passes only when its call returned a value that ``passes`` it (``matches`` its
    ``expected``, or the imported benchmark's own rule the test carries); a test with no
    ``expected`` has nothing to compare with and is an ``error``. Tests the harness did not get to
    after ``max_timeouts`` timeouts are ``timeout`` (not run).
    """
    result = outcome.result
    verdicts: list[TestResult] = []
    for i, test in enumerate(tests):
        out = outcome.outputs[i] if i < len(outcome.outputs) else None
        status: TestStatus
        output = error = None
        ms = None
        if out is None:
            if outcome.stopped and outcome.load_error is None:
                status, error = "timeout", NOT_RUN_AFTER_TIMEOUTS
            else:
                status = "timeout" if result.status == "timeout" else "error"
                error = outcome.load_error or _not_run(result)
        else:
            ms = out.duration_ms
            if out.status != "ok":
                status, error = out.status, out.error
            else:
                output = show(out.value)
                if not test.has_expected:
                    status, error = "error", "no expected value"
                elif isinstance(out.value, Unsupported):
                    status = "failed"
                    error = (
                        f"unsupported output type {out.value.type_name}: only exact builtin types "
                        "(None, bool, int, float, str, list, tuple, dict, ...) are compared"
                    )
                elif passes(out.value, test):
                    status = "passed"
                else:
                    status = "failed"
        verdicts.append(
            TestResult(index=i, input=test.input, status=status, output=output, error=error, duration_ms=ms)
        )
    passed = sum(v.status == "passed" for v in verdicts)
    return replace(
        result, tests_passed=passed, tests_total=len(tests), test_results=verdicts, load_error=outcome.load_error
    )


NOT_RUN_AFTER_TIMEOUTS = "not run: earlier tests timed out"


def _not_run(result: ExecutionResult) -> str:
    if result.status == "timeout":
        return "not run: the execution ran out of time"
    if result.status == "ok":
        return "no result"
    return f"not run: the execution ended early ({result.status})"


def run_tests(
    sandbox: Sandbox,
    code: str,
    entry_point: str,
    tests: list[TestCase],
    limits: Limits,
    test_timeout_s: float,
    hash_seed: int = 0,
    max_timeouts: int | None = None,
) -> ExecutionResult:
    """``execute_calls`` on the tests' inputs, then ``compare_outputs`` (the pipeline's entry is
    ``spade_llm.judge``)."""
    inputs = [t.input for t in tests]
    outcome = execute_calls(sandbox, code, entry_point, inputs, limits, test_timeout_s, hash_seed, max_timeouts)
    return compare_outputs(outcome, tests)


def run_check(
    sandbox: Sandbox,
    program: str,
    check_code: str,
    entry_point: str,
    limits: Limits,
    tests: list[TestCase] | None = None,
    test_timeout_s: float | None = None,
    max_timeouts: int | None = None,
) -> ExecutionResult:
    """Judge ``program`` on an imported benchmark: its ``tests`` (asserts turned into tests at import,
    compared outside the sandbox), then its ``check_code`` (what could not be turned: a script
    defining ``check(candidate)``), in one execution.

    The program runs in a process of its own; the check runs in another, which the program cannot
    reach (no shared memory, file or descriptor; the script never on disk for it): ``candidate``
    there passes plain arguments across and gets back plain values of exact builtin types. The
    check is one more test, after ``tests`` (index ``len(tests)``): it passes only if the harness's
    completion marker, a secret neither process saw, comes back after ``check`` returned. A program
    that raises before any test runs is an ``error`` with its ``load_error``.
    """
    cases = list(tests or [])
    marker = secrets.token_hex(16)
    timeout_s = DEFAULT_TEST_TIMEOUT_S if test_timeout_s is None else test_timeout_s
    request = {
        **_calls_request(entry_point, [t.input for t in cases], timeout_s, max_timeouts),
        "check_file": CHECK_FILE,
    }
    files = {SOLUTION_FILE: program, CHECK_FILE: check_code}
    seen = _execute(sandbox, "check", files, request, limits, n=len(cases), marker=marker, max_timeouts=max_timeouts)
    judged = compare_outputs(CallsOutcome(seen.result, seen.outputs, seen.load_error, seen.stopped), cases)
    result = seen.result
    passed = seen.check_passed
    status: TestStatus
    error: str | None = None
    if passed:
        status = "passed"
    elif seen.load_error is not None:
        status, error = "error", seen.load_error
    elif seen.stopped:
        status, error = "timeout", NOT_RUN_AFTER_TIMEOUTS
    elif result.status == "timeout":
        status = "timeout"
    elif result.return_code == 1 and result.signal is None:
        status = "failed"  # an assert (or another exception) stopped the check
    else:
        status = "error"  # exited early, crashed, killed, out of memory or output
    if not passed and error is None:
        error = (result.stderr.strip().splitlines() or [result.status])[-1][:500]
    verdict = TestResult(
        index=len(cases), input=f"check({entry_point})", status=status, error=error, duration_ms=result.duration_ms
    )
    results = [*(judged.test_results or []), verdict]
    return replace(
        judged,
        tests_passed=(judged.tests_passed or 0) + int(passed),
        tests_total=len(cases) + 1,
        test_results=results,
        load_error=seen.load_error,
    )


DEFAULT_TEST_TIMEOUT_S = 3.0
"""Per-test budget when no config says otherwise (``sandbox.test_timeout_s``)."""
