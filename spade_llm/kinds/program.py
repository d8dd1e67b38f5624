"""``program``: the solver writes a whole program that reads standard input and prints the answer.

The dialect of CodeContests, APPS, TACO, LiveCodeBench and Codeforces. Design:

* A test's ``input`` is the text the program reads on stdin, its ``expected`` the text it must print
  (filled from the reference's run when the author gave none). ``entry_point`` is ``""``: a whole
  program defines no name the judge calls.
* Judging (``Judge.stdio``, ``sandbox/stdio.py``): one sandbox run per test under the task's
  ``time_limit_s`` of CPU, stdout compared outside the sandbox by the one output rule
  (``same_output``: lines equal after stripping trailing whitespace, trailing blank lines ignored); a
  non-zero exit, a crash or a timeout fails the test. A task where several outputs are right carries
  a ``checker`` instead (``Task.checker``; its contract in ``sandbox/stdio.py``): a program run in the
  sandbox on the test's input, the reference's output and the answer's, which exits 0 to accept; it
  decides every test of the task in place of the output rule.
* The solver sees the description and the public tests' stdin and stdout; a repair prompt shows a
  failing public test's stdin, expected and actual output (clipped) and the end of stderr, never a
  hidden test. For a task with a checker (``view``'s ``checked``) both say that any right output is
  accepted and the expected one is one of them; a rejected output's error says the checker rejected it.
* Gates (``gates``): the static ones (syntax of the reference and of the author's input generator,
  validator and checker, banned imports, each input text within ``MAX_STDIN_CHARS``, at least
  ``MIN_TESTS`` tests); with an ``input_validator``, it accepts every test's input (``invalid_input``)
  but not every malformed probe (``weak_validator``); with an ``input_generator`` (after rStar-Coder and
  CodeContests+), a hidden test is drawn at each of ``GENERATED_SIZES`` (``bad_generator`` when a draw
  fails or the validator rejects it); the reference runs on every input within its time limit and
  exits 0 (``timeout``, ``runtime_error``); with a ``checker``, the checker accepts the reference's own
  output on every test (``bad_checker``: it rejects one, fails or runs out of time); the reference
  prints the same in a second run in the other order with another hash seed (``nondeterministic``; with
  a checker, the second output need only be accepted beside the first: several outputs are right),
  prints what an author-given ``expected`` says (``expected_mismatch``; with a checker, one the checker
  accepts beside the reference's output); a task without a ``time_limit_s`` gets one derived from the
  reference's slowest run (``derived_time_limit``: 4x, raised to 1, 2, 4 or 8 s; a reference too slow
  for 8 s is a ``timeout``), so a solution much slower than the reference fails as ``timeout``;
  ``empty_output`` when the reference prints nothing on every test; then ``weak_tests`` when the tests
  cannot tell the reference from a stand-in: a program that prints nothing, one that echoes its input,
  one that prints the most common expected output; with a checker, ``weak_checker`` when the checker
  accepts one of those stand-ins' outputs on every test (each must be rejected on at least one test: a
  checker that accepts anything would pass any answer); and ``weak_tests`` again when the tests miss a
  mutant of the reference (``mutant_gate``). The leak gate (``kinds.run_gates``) reads ``find_leaks``:
  a hidden test's input shown with its output right after it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..languages import DEFAULT_ANSWER_LANGUAGE, language_of
from ..sandbox.runner import run_program, timed_program
from ..sandbox.stdio import (
    accepted,
    checked_stand_in_passes,
    per_test_limits,
    rejection,
    run_checker,
    same_output,
    stand_in_passes,
)
from .base import STDIN_TESTS, TaskKind, free_text, public_indices, tests_after_public
from .induction import extract_code, tool_code

if TYPE_CHECKING:
    from ..judge import Judge
    from ..languages.base import Mutant
    from ..leaks import Leak
    from ..types import ExecutionResult, Task, TestCase, TestResult, TestStatus
    from ..validation import MutationStats, ValidationReport, Validator

MAX_STDIN_CHARS = 1_000_000
"""Longest test input, in characters (a contest's large case fits; the prompt shows public ones clipped)."""
SHOWN_IO_CHARS = 2000
"""Most of one test's stdin or stdout a first prompt shows (longer ones are clipped, saying so)."""
LEAK_GAP_CHARS = 80
"""How far after a hidden test's input its output may start for the pair to count as shown together."""
MIN_LEAK_INPUT_CHARS = 2
"""A shorter hidden input (one digit) is everywhere in a text: it is not looked for."""
TIME_LIMIT_FACTOR = 4.0
"""A generated task's CPU limit per test is this many times its reference's slowest run (rounded up to a rung)."""
TIME_LIMIT_RUNGS = (1.0, 2.0, 4.0, 8.0)
"""The CPU limits a generated task can get, in seconds."""
PUBLIC_PART = "public tests"
GENERATED_SIZES = (1, 2, 10, 100, 1000, 10000)
"""The sizes a task's input generator is asked for: small, edge and large cases (a quadratic solution
of a linear task meets its limit at the large ones)."""
"""The part of ``shown_text`` that lists the public tests."""
HELPER_CPU_S = 2.0
"""CPU seconds one run of a task's input generator or validator may take."""
MAX_PROGRAM_MUTANTS = 12
"""Mutants of a reference program run at most: each costs whole-program runs, not in-process calls."""
MUTANT_BUDGET_FACTOR = 10.0
"""A mutant's run gets this many times the reference's slowest run of CPU (at least ``MUTANT_BUDGET_FLOOR_S``,
at most the task's time limit): a mutant that loops is cut off early instead of costing a whole limit."""
MUTANT_BUDGET_FLOOR_S = 0.25
PROBE_SIZES = (1, 2, 3, 5, 8, 13)
"""The sizes the input generator is asked for when probing a surviving mutant (other seeds than the tests')."""


def clip(text: str, limit: int = SHOWN_IO_CHARS) -> str:
    """``text``, or its first ``limit`` characters and a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters)"


def shown_io(test: TestCase) -> dict[str, str]:
    """A test as prompts show it: its stdin and expected stdout, clipped, without trailing newlines."""
    expected = test.expected if isinstance(test.expected, str) else ""
    return {"input": clip(test.input).rstrip("\n"), "output": clip(expected).rstrip("\n")}


def _shown_cases(task: Task, public_tests: int) -> list[TestCase]:
    return task.examples if task.shows_examples else [task.tests[i] for i in public_indices(task, public_tests)]


def shown_text(task: Task, public_tests: int) -> dict[str, str]:
    """What the solver is shown: the description, the tags, and the public tests' stdin and stdout."""
    parts = free_text(task)
    cases = _shown_cases(task, public_tests)
    if cases:
        parts[PUBLIC_PART] = "\n\n".join(
            f"input:\n{io['input']}\noutput:\n{io['output']}" for io in map(shown_io, cases)
        )
    return parts


def check_answer(
    judge: Judge, task: Task, code: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """The answer run as a whole program in ``language`` (compiled once first, when the language compiles) on
    each chosen test's stdin, its stdout judged by the output rule."""
    return judge.stdio(task, code, tests, language=language)


def feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public test's verdict in a tool's feedback: its input, and for a failure what was expected
    and what the program printed (or why it failed)."""
    io = shown_io(test)
    where = f"input {clip(io['input'], 200)!r}"
    if r is None:
        return f"- FAIL {where}: not run"
    if r.passed:
        return f"- PASS {where}"
    if task.checker is not None and r.status == "failed" and r.output is not None:
        # several outputs are right: the expected one is one of them, and the checker said no to this one
        printed = clip(r.output, 200)
        return f"- FAIL {where}: printed {printed!r}; {r.error} (one right output: {clip(io['output'], 200)!r})"
    got = r.error if r.error else f"printed {clip(r.output or '', 200)!r}"
    return f"- FAIL {where}: expected {clip(io['output'], 200)!r}, {got}"


def view(task: Task) -> dict[str, bool]:
    """What the program templates need beyond the task: ``checked``, whether a checker judges its outputs
    (then any right output is accepted, and the one shown is one of them)."""
    return {"checked": task.checker is not None}


# -- leaks --------------------------------------------------------------------------------------------


def _spaced(text: str) -> str:
    return " ".join(text.split())


def find_leaks(task: Task, public_tests: int) -> list[Leak]:
    """The hidden tests whose input *and* output the solver's text shows: in the description or tags,
    the output within ``LEAK_GAP_CHARS`` after the input (whitespace runs counted as one space, whole
    tokens: ``100.`` shows ``100``, ``1000`` does not); in the public tests, a public test with the same
    input and output (a copy: matching across the listed pairs would tie one test's output to the next
    one's input)."""
    from ..leaks import Leak

    found: list[Leak] = []
    texts = shown_text(task, public_tests)
    # the public tests are shown as pairs: a hidden test is there only as one of them (a copy)
    public = [(_spaced(io["input"]), _spaced(io["output"])) for io in map(shown_io, _shown_cases(task, public_tests))]
    shown = {part: _spaced(text) for part, text in texts.items() if part != PUBLIC_PART}
    for i in tests_after_public(task, public_tests):
        test = task.tests[i]
        given, answer = _spaced(test.input), _spaced(test.expected) if isinstance(test.expected, str) else ""
        if not answer:
            continue
        copied = next((n for n, pair in enumerate(public) if pair == (given, answer)), None)
        if copied is not None:
            found.append(Leak(i, PUBLIC_PART, 0, "verbatim", f"public test {copied}: {given[:50]} -> {answer[:50]}"))
            continue
        if len(given) < MIN_LEAK_INPUT_CHARS:
            continue
        if not any(given in text and answer in text for text in shown.values()):
            continue  # shown nowhere: no pattern to build (a contest's input can be a megabyte)
        pattern = re.compile(  # whole tokens: no letter or digit glued to either end (punctuation may be)
            rf"(?<!\w){re.escape(given)}(?!\w).{{0,{LEAK_GAP_CHARS}}}?(?<!\w){re.escape(answer)}(?!\w)", re.S
        )
        for part, text in shown.items():
            match = pattern.search(text)
            if match:
                found.append(Leak(i, part, match.start(), "io", match.group(0)[:120]))
                break
    return found


# -- the reference's outputs --------------------------------------------------------------------------


def fill_expected(judge: Judge, task: Task, indices: Sequence[int]) -> list[TestCase]:
    """The tests at ``indices`` with what the reference prints on their inputs as ``expected``.

    Raises:
        UserError: the reference does not run to its end on one of them (named, with why).
    """
    from ..errors import UserError

    cpu_s = task.time_limit_s or judge.test_timeout_s
    limits = per_test_limits(cpu_s, judge.limits)
    out = []
    for i in indices:
        test = task.tests[i]
        run = run_program(judge.sandbox, task.reference_code, limits, stdin=test.input, cpu_s=cpu_s)
        why = _failure(i, run)
        if why is not None:
            raise UserError(f"task {task.task_id}: cannot fill its expected output: {why[1]}")
        out.append(test.model_copy(update={"expected": run.stdout}))
    return out


# -- gates --------------------------------------------------------------------------------------------


def _runs(
    validator: Validator, task: Task, order: Sequence[int], hash_seed: int
) -> tuple[dict[int, ExecutionResult], float]:
    """The reference run on each test's input, in ``order``, under the task's time limit, up to the first
    run that disqualifies it (``_failure``: no need to spend a time limit on every input); and the most
    CPU seconds one run took."""
    cpu_s = task.time_limit_s or validator.test_timeout_s
    limits = per_test_limits(cpu_s, validator.limits)
    runs: dict[int, ExecutionResult] = {}
    slowest = 0.0
    for i in order:
        code, stdin = task.reference_code, task.tests[i].input
        runs[i], used = timed_program(validator.sandbox, code, limits, stdin=stdin, cpu_s=cpu_s, hash_seed=hash_seed)
        slowest = max(slowest, used or 0.0)
        if _failure(i, runs[i]) is not None:
            break
    return runs, slowest


def derived_time_limit(reference_cpu_s: float) -> float | None:
    """A test's CPU limit from the reference's slowest run (EvalPlus's ``max(floor, k x T_reference)``):
    ``TIME_LIMIT_FACTOR`` times it, raised to the next of ``TIME_LIMIT_RUNGS`` (so a few percent of
    measurement noise rarely moves it, and a fast reference always gets the first rung); None when even
    the last rung is too short (the reference itself is too slow).

    >>> derived_time_limit(0.01), derived_time_limit(0.3), derived_time_limit(1.5), derived_time_limit(3.0)
    (1.0, 2.0, 8.0, None)
    """
    wanted = TIME_LIMIT_FACTOR * reference_cpu_s
    return next((rung for rung in TIME_LIMIT_RUNGS if wanted <= rung), None)


def _failure(i: int, run: ExecutionResult) -> tuple[str, str] | None:
    """Why the reference's run on test ``i`` disqualifies it, or None."""
    if run.status == "timeout":
        return "timeout", f"test {i}: the reference ran out of its time limit"
    if run.status != "ok" or run.return_code != 0 or run.stdout_truncated:
        tail = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
        why = "its output was cut at the limit" if run.stdout_truncated else f"status {run.status}"
        return "runtime_error", f"test {i}: the reference failed ({why}, exit {run.return_code}" + (
            f"): {tail[0][:300]}" if tail else ")"
        )
    return None


def _helper_run(validator: Validator, code: str, stdin: str) -> ExecutionResult:
    """One run of the task's input generator or validator (the author's code, in the sandbox)."""
    limits = per_test_limits(HELPER_CPU_S, validator.limits)
    return run_program(validator.sandbox, code, limits, stdin=stdin, cpu_s=HELPER_CPU_S)


def malformed_inputs(tests: Sequence[TestCase]) -> list[str]:
    """Inputs a validator must not accept all of: nothing, the first test's input without its last line
    (or last token), and the first test's input with a stray line of text after it."""
    first = tests[0].input if tests else "1\n"
    lines = first.rstrip("\n").split("\n")
    cut = "\n".join(lines[:-1]) + "\n" if len(lines) > 1 else " ".join(lines[0].split()[:-1]) + "\n"
    return ["", cut, first.rstrip("\n") + "\nnot an input\n"]


def _check_validator(validator: Validator, task: Task) -> tuple[str, str] | None:
    """``invalid_input`` when the task's validator rejects one of its tests, ``weak_validator`` when it
    accepts every malformed probe (``malformed_inputs``), ``bad_validator`` when it hangs."""
    code = task.input_validator or ""
    for i, test in enumerate(task.tests):
        run = _helper_run(validator, code, test.input)
        if run.status == "timeout":
            return "bad_validator", f"the input validator ran out of time on test {i}"
        if run.status != "ok" or run.return_code != 0:
            return "invalid_input", f"test {i}: the task's own input validator rejects its input ({_ending(run)})"
    probes = malformed_inputs(task.tests)
    if all(_helper_run(validator, code, probe).return_code == 0 for probe in probes):
        shown = ", ".join(repr(clip(p, 40)) for p in probes)
        return "weak_validator", f"the input validator accepts every malformed input tried: {shown}"
    return None


def generated_tests(validator: Validator, task: Task) -> tuple[list[TestCase], tuple[str, str] | None]:
    """Tests drawn from the task's input generator, one per size of ``GENERATED_SIZES``, each seed derived
    from the task id and the size (the same task, the same inputs); ``bad_generator`` when a run fails,
    prints nothing, prints more than ``MAX_STDIN_CHARS`` or an input the task's validator rejects. A draw
    equal to a test already there is dropped."""
    from .._util.seeding import derive_seed
    from ..types import TestCase

    seen = {t.input for t in task.tests}

    code = task.input_generator or ""
    drawn: list[TestCase] = []
    for size in GENERATED_SIZES:
        seed = derive_seed("program-input", task.task_id, size)
        run = _helper_run(validator, code, f"{size} {seed}\n")
        where = f"the input generator (size {size}, seed {seed})"
        if run.status != "ok" or run.return_code != 0:
            return drawn, ("bad_generator", f"{where} failed: {_ending(run)}")
        if not run.stdout.strip() or run.stdout_truncated or len(run.stdout) > MAX_STDIN_CHARS:
            return drawn, ("bad_generator", f"{where} printed no input, or one over {MAX_STDIN_CHARS} characters")
        if task.input_validator:
            check = _helper_run(validator, task.input_validator, run.stdout)
            if check.status != "ok" or check.return_code != 0:
                return drawn, ("bad_generator", f"{where} printed an input the task's validator rejects")
        if run.stdout not in seen:  # a small draw may repeat a test (a hidden copy of a public one leaks it)
            seen.add(run.stdout)
            drawn.append(TestCase(input=run.stdout))
    return drawn, None


# -- mutants ------------------------------------------------------------------------------------------


INT_TOKEN = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
"""An integer in an input text: not part of a word or a decimal number."""


def _perturbed(text: str, key: int) -> list[str]:
    """``text`` with one integer token (which from ``key``) one up, and one down: inputs of the tests'
    shape that no test has (none when it has no integer token). In an input of several lines the first
    line's tokens are left alone: it usually holds the sizes, and a moved size makes an input outside
    the task's constraints rather than another valid one."""
    after_first = text.find("\n") + 1 if "\n" in text.rstrip("\n") else 0  # several lines: skip the first
    spans = [m.span() for m in INT_TOKEN.finditer(text, after_first)] or [m.span() for m in INT_TOKEN.finditer(text)]
    if not spans:
        return []
    start, end = spans[key % len(spans)]
    value = int(text[start:end])
    return [text[:start] + str(value + step) + text[end:] for step in (1, -1)]


def probe_inputs(validator: Validator, task: Task, cpu_s: float) -> list[tuple[str, str]]:
    """Inputs no test has, with what the reference prints on each: drawn from the author's input
    generator at ``PROBE_SIZES`` (seeds apart from the tests'), else the first tests' inputs with one
    integer moved by one, either way (``_perturbed``). An input the task's validator rejects, that the
    reference does not answer within its limit, or (with a checker) on which the checker rejects the
    reference's own output, is no probe: it is outside the constraints."""
    from .._util.seeding import derive_seed

    candidates: list[str] = []
    if task.input_generator:
        for size in PROBE_SIZES:
            stdin = f"{size} {derive_seed('program-probe', task.task_id, size)}\n"
            run = _helper_run(validator, task.input_generator, stdin)
            if run.status == "ok" and run.return_code == 0 and run.stdout.strip() and not run.stdout_truncated:
                candidates.append(run.stdout)
    else:
        for i, test in enumerate(task.tests[: len(PROBE_SIZES)]):
            candidates += _perturbed(test.input, derive_seed("program-probe", task.task_id, i))
    known = {t.input for t in task.tests}
    limits = per_test_limits(cpu_s, validator.limits)
    probes: list[tuple[str, str]] = []
    for given in dict.fromkeys(c for c in candidates if c not in known):
        if task.input_validator is not None:
            check = _helper_run(validator, task.input_validator, given)
            if check.status != "ok" or check.return_code != 0:
                continue
        run = run_program(validator.sandbox, task.reference_code, limits, stdin=given, cpu_s=cpu_s)
        if _failure(0, run) is not None:
            continue
        if task.checker is not None:
            own = run_checker(validator.sandbox, task.checker, given, run.stdout, run.stdout, validator.limits)
            if not accepted(own):
                continue
        probes.append((given, run.stdout))
    return probes


def _told_apart(
    validator: Validator,
    code: str,
    cases: Sequence[tuple[str, str]],
    cpu_s: float,
    checker: str | None,
    *,
    timeout_tells: bool = True,
) -> bool:
    """Whether some case's run of ``code`` fails (exit, crash, or a timeout when ``timeout_tells``) or
    prints an output the task's judge rejects: other than the case's output by the output rule, or one
    its ``checker`` rejects. On probes a timeout tells nothing (``timeout_tells=False``), as in the
    function kind's gate: a mutant slower on an input no test has is not one the tests miss."""
    limits = per_test_limits(cpu_s, validator.limits)
    for given, output in cases:
        run = run_program(validator.sandbox, code, limits, stdin=given, cpu_s=cpu_s)
        if run.status == "timeout" and not timeout_tells:
            continue
        if _failure(0, run) is not None:
            return True
        if checker is None:
            if not same_output(output, run.stdout):
                return True
        elif not accepted(run_checker(validator.sandbox, checker, given, output, run.stdout, validator.limits)):
            return True
    return False


def mutant_gate(
    validator: Validator, task: Task, reference_cpu_s: float = 0.0
) -> tuple[MutationStats | None, Mutant | None]:
    """The reference's mutants (at most ``MAX_PROGRAM_MUTANTS``) run on the tests of ``task`` (filled),
    each until one tells it apart: a wrong output or a failed exit kills it, and so does running out of
    its CPU budget (``MUTANT_BUDGET_FACTOR`` times ``reference_cpu_s``, the reference's slowest run, at
    least ``MUTANT_BUDGET_FLOOR_S`` and at most the time limit: a mutant that loops costs a fraction of
    a limit; one between that budget and the limit is counted killed though the judge would pass it, a
    leniency of the cut-off). A survivor is then run on ``probe_inputs``: one that prints
    otherwise on some probe is what the tests miss (*survived*), one that prints the same on every
    probe is taken as equivalent. Returns the stats and the first real survivor (None when there is
    none); no stats when the gate is off (``min_kill_rate`` 0) or the reference has no mutant."""
    import time

    from ..validation import MutationStats

    if validator.min_kill_rate <= 0:
        return None, None
    cap = min(validator.max_mutants, MAX_PROGRAM_MUTANTS)
    found = list(language_of(task).mutants(task.reference_code, cap, key=task.reference_code, whole_program=True))
    if not found:
        return None, None
    started = time.monotonic()
    limit = task.time_limit_s or validator.test_timeout_s
    cpu_s = min(limit, max(MUTANT_BUDGET_FLOOR_S, MUTANT_BUDGET_FACTOR * reference_cpu_s))
    cases = [(t.input, t.expected if isinstance(t.expected, str) else "") for t in task.tests]
    survivors = [m for m in found if not _told_apart(validator, m.source, cases, cpu_s, task.checker)]
    real: list[Mutant] = []
    if survivors:
        probes = probe_inputs(validator, task, limit)
        real = [
            m
            for m in survivors
            if probes and _told_apart(validator, m.source, probes, cpu_s, task.checker, timeout_tells=False)
        ]
        # with no probe the reference answers, no survivor can be told from an equivalent mutant
        unknown = len(survivors) if not probes else 0
    else:
        unknown = 0
    equivalent = len(survivors) - len(real) - unknown
    killed = len(found) - len(survivors)
    stats = MutationStats(len(found), killed, equivalent, len(real), unknown, time.monotonic() - started)
    return stats, (real[0] if real else None)


def _ending(run: ExecutionResult) -> str:
    tail = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
    return f"status {run.status}, exit {run.return_code}" + (f": {tail[0][:200]}" if tail else "")


def _checker_run(validator: Validator, task: Task, i: int, expected: str, actual: str) -> ExecutionResult:
    """The task's checker run on test ``i`` with ``expected`` (the reference's output) and ``actual``."""
    return run_checker(validator.sandbox, task.checker or "", task.tests[i].input, expected, actual, validator.limits)


def _check_checker(validator: Validator, task: Task, outputs: Sequence[str]) -> tuple[str, str] | None:
    """``bad_checker`` when the task's checker does not accept the reference's own output (``outputs``,
    one per test) on some test: it rejects it, fails or runs out of time."""
    for i, out in enumerate(outputs):
        run = _checker_run(validator, task, i, out, out)
        if not accepted(run):
            return "bad_checker", f"test {i}: on the reference's own output {clip(out, 60)!r}, {rejection(run)}"
    return None


def gates(validator: Validator, task: Task, *, mutants: bool = True) -> ValidationReport:
    """The program kind's gates in order (the module docstring). ``mutants=False`` skips the mutant
    gate: the program query kinds judge their tests' strength their own way (their tests are queries)."""
    from ..validation import MIN_TESTS, ValidationReport

    total = len(task.tests)

    def report(reason: str | None, detail: str, passed: int = 0, filled: Task | None = None) -> ValidationReport:
        status: TestStatus = "passed" if reason is None else "error"
        return ValidationReport(task.task_id, reason is None, reason, detail, status, passed, total, filled)

    language = language_of(task)
    programs = (("", task.reference_code), ("input generator", task.input_generator),
                ("input validator", task.input_validator), ("checker", task.checker))  # fmt: skip
    for what, code in programs:
        found = language.static_error(code, "", validator.banned_imports) if code is not None else None
        if found is not None:
            return report(found[0], f"the {what}: {found[1]}" if what else found[1])
    for i, test in enumerate(task.tests):
        if len(test.input) > MAX_STDIN_CHARS:
            size = len(test.input)
            return report("bad_input", f"test {i}: the input is {size} characters, at most {MAX_STDIN_CHARS}")
    if total < MIN_TESTS:
        return report("too_few_tests", f"{total} tests, at least {MIN_TESTS} needed")
    if task.input_validator is not None:
        found = _check_validator(validator, task)
        if found is not None:
            return report(*found)
    if task.input_generator is not None:
        drawn, found = generated_tests(validator, task)
        if found is not None:
            return report(*found)
        task = task.model_copy(update={"tests": [*task.tests, *drawn]})  # hidden: after the author's
        total = len(task.tests)
    first, slowest = _runs(validator, task, range(total), hash_seed=0)
    for i, run in first.items():
        why = _failure(i, run)
        if why is not None:
            return report(*why)
    outputs = [first[i].stdout for i in range(total)]
    if task.checker is not None:
        found = _check_checker(validator, task, outputs)
        if found is not None:
            return report(*found)

    def agrees(i: int, expected: str, actual: str) -> bool:
        """Whether ``actual`` is as right as the reference's ``expected`` on test ``i``: the same by the
        output rule, or with a checker accepted by it (an identical text already was, by ``bad_checker``)."""
        if task.checker is None:
            return same_output(expected, actual)
        return actual == expected or accepted(_checker_run(validator, task, i, expected, actual))

    second, slowest_again = _runs(validator, task, range(total - 1, -1, -1), hash_seed=1)
    for i, run in second.items():
        why = _failure(i, run)
        # a second run that fails where the first passed is the reference disagreeing with itself too
        if why is not None or not agrees(i, outputs[i], run.stdout):
            detail = why[1] if why else f"test {i}: two runs of the reference print different outputs"
            if why is None and task.checker is not None:
                second_out, first_out = clip(run.stdout, 60), clip(outputs[i], 60)
                detail = f"test {i}: the checker rejects a second run's output {second_out!r} beside {first_out!r}"
            return report("nondeterministic", detail)
    for i, test in enumerate(task.tests):
        if test.has_expected and not (isinstance(test.expected, str) and agrees(i, outputs[i], test.expected)):
            given, printed = clip(str(test.expected), 60), clip(outputs[i], 60)
            return report("expected_mismatch", f"test {i}: expected {given!r}, the reference prints {printed!r}")
    time_limit = task.time_limit_s
    if time_limit is None:  # the author gave none: derived from the reference, so a slower solution fails
        time_limit = derived_time_limit(max(slowest, slowest_again))
        if time_limit is None:
            detail = f"the reference takes {max(slowest, slowest_again):.2f} s of CPU on a test: too slow to judge by"
            return report("timeout", detail)
    tests = [t.model_copy(update={"expected": outputs[i]}) for i, t in enumerate(task.tests)]
    filled = task.model_copy(update={"tests": tests, "time_limit_s": time_limit})
    if not any(t.expected.strip() for t in tests if isinstance(t.expected, str)):
        return report("empty_output", "the reference prints nothing on every test", passed=total, filled=filled)
    weak = stand_in_passes(tests)
    if weak is not None:
        return report("weak_tests", weak, passed=total, filled=filled)
    if task.checker is not None:
        weak = checked_stand_in_passes(validator.sandbox, task.checker, tests, validator.limits)
        if weak is not None:
            return report("weak_checker", weak, passed=total, filled=filled)
    stats, survivor = mutant_gate(validator, filled, max(slowest, slowest_again)) if mutants else (None, None)
    if stats is not None and stats.kill_rate < validator.min_kill_rate:
        assert survivor is not None
        detail = (
            f"the tests miss {stats.survived} of {stats.total} mutants of the reference (kill rate "
            f"{stats.kill_rate:.0%}, {validator.min_kill_rate:.0%} needed); this one passes every test but "
            f"prints otherwise on another valid input, add a test that tells them apart:\n{survivor.diff}"
        )
        checked = report("weak_tests", detail, passed=total, filled=filled)
    else:
        checked = report(None, "", passed=total, filled=filled)
    checked.mutation = stats
    return checked


KIND = TaskKind(
    name="program",
    first_template="solver/program_first.j2",
    repair_template="solver/program_repair.j2",
    parse_answer=extract_code,
    gates=gates,
    check_answer=check_answer,
    summary="write a whole program that reads standard input and prints the answer",
    view=view,
    tool_parse=tool_code,
    shown_text=shown_text,
    feedback_line=feedback_line,
    find_leaks=find_leaks,
    fill_expected=fill_expected,
    field_tests=STDIN_TESTS,
    own_fields=frozenset({"input_generator", "input_validator", "checker"}),
    answer_languages=True,
    colour="#059669",
    sample_first={
        "task": {"description": "d", "entry_point": "", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "1 2", "expected": "'3\\n'", "expected_text": "3\n"}],
        "checked": True,
    },
    sample_repair={
        "entry_point": "",
        "turn": 2,
        "code": "print(input())\n",
        "status": "ok",
        "passed": 0,
        "total": 3,
        "failing": [
            {
                "input": "1 2",
                "expected": "'3\\n'",
                "expected_text": "3",
                "output": "1 2",
                "error": None,
                "difference": "line 1: expected '3', printed '1 2'",
            }
        ],
        "stderr_tail": "",
        "checked": True,
    },
)
