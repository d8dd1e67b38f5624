"""``program_abduction``: the solver reads a whole program and finds inputs on which it prints given outputs.

Why the name: it is ``abduction`` (find an input that gives the output) asked of a ``program`` task (a
whole program on stdin and stdout), and says both, as ``program_deduction`` does for output prediction;
it sorts beside the two kinds it joins.

Design (one query per test, all asked at once, as ``abduction``; what it shares with
``program_deduction`` is in ``program_queries``):

* Each test is a query: its ``expected`` stdout (filled by the gates) is shown, its ``input`` is one
  answer among possibly many and is never shown. The first prompt shows the description (the input
  format and its constraints), the program and every query's output, numbered, each in a fenced block.
* The answer is one ```` ```input N ```` block per query holding the whole stdin for output N (a missing
  final newline is added back).
* Judging runs the *reference* (never the solver's code) on each proposed stdin in the sandbox, as the
  ``program`` kind runs a program on a test (``Judge.stdio``: one run per input under the task's
  ``time_limit_s`` of CPU), and compares its stdout with the query's output by the output rule
  (``same_output``). Any stdin that gives the output passes. It fails when the program exits non-zero or
  crashes on it (an input the program does not accept is a wrong input, whatever it printed first), when
  its output was cut at the limit, and, for a task with an ``input_validator``, when the validator does not
  accept it (exit 0), checked before the program runs: an input outside the task's constraints is no
  answer, even one on which the program happens to print the output. A stdin that runs out of time is a
  ``timeout``; after ``Judge.max_timeouts`` of them the rest are not run. A malformed answer is an
  ``error`` with ``load_error``, never an exception.
* The reference is the judge, so it must agree with itself (as ``abduction``'s ``_confirm``): a stdin that
  passed runs ``CONFIRMATIONS`` times more, each under another hash seed; it passes only if every run
  exits 0 and prints the output again, and when any of them prints something else every passed query of
  the answer fails (``NOT_ITS_OWN``): a program the gates found deterministic on its tests may still be a
  coin flip on an input none of them has, and a judge that disagrees with itself pays nothing.
* Feedback: a repair prompt shows, for the public queries, the output asked for (the question) and what
  the program printed (or how it failed) on the solver's own input; never the task's inputs, which the
  ``TestResult``s of this kind do not hold (their ``input`` is the proposal).
* Gates: the ``program`` kind's (``program_queries.query_gates``: with an ``input_validator``, it must
  accept every test and reject malformed inputs), then ``weak_tests`` here means the queries make no
  exercise: an output too long to show or holding a fence, every query printing the same (one input
  answers them all), or the program printing each query's output back when given it as its input (and
  the validator accepting it): no input to search for.
* Leaks (``find_leaks``): a query's stdin shown with its stdout in the description, the tags or the
  program's comments and strings, or an input of two lines or more shown whole in the description.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..sandbox.runner import run_program
from ..sandbox.stdio import per_test_limits, same_output
from ..types import TestCase, TestResult
from .abduction import CONFIRMATIONS
from .base import TaskKind, every_test, python_only
from .program import HELPER_CPU_S, MAX_STDIN_CHARS, clip, fill_expected
from .program_queries import (
    SAMPLE_PROGRAM,
    SAMPLE_PUBLIC,
    SAMPLE_TASK,
    all_print_alike,
    answer_of,
    answer_reader,
    assign,
    line_end,
    printed,
    query_gates,
    query_outputs,
    shown_output,
)
from .program_queries import find_leaks as query_leaks
from .program_queries import shown_text as query_text
from .queries import chosen_tests, malformed, tests_result

if TYPE_CHECKING:
    from ..judge import Judge
    from ..leaks import Leak
    from ..sandbox.base import Limits, Sandbox
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

TAGS = ("input", "stdin")
"""The info strings of an answer's blocks (the first is the one prompts ask for)."""
NOT_ITS_OWN = "on another run the program printed something else for this input: it does not decide it alike"
"""A query whose input gave the output once and not on a run that checks it (see the module docstring)."""
REJECTED = "the task's input validator rejects this input"
SHOWN_INPUT_CHARS = 2000
"""Most of an over-long proposed input a verdict keeps."""

parse_answer = answer_reader(TAGS)


def proposals(task: Task, answer: str) -> dict[int, str] | str:
    """Each query's proposed stdin by test index (ending with a newline), or why the answer holds none."""
    found = assign(task, answer, TAGS, "output")
    if isinstance(found, str):
        return found
    return {i: line_end(body) for i, body in found.items()}


def _validator_run(sandbox: Sandbox, limits: Limits, code: str, stdin: str) -> str | None:
    """Why the task's input validator does not accept ``stdin`` (a run of ``HELPER_CPU_S`` at most), or None.
    What the validator wrote on stderr is not said: the solver is not shown the validator, and an author's
    message there could quote anything."""
    run = run_program(sandbox, code, per_test_limits(HELPER_CPU_S, limits), stdin=stdin, cpu_s=HELPER_CPU_S)
    if run.status == "ok" and run.return_code == 0:
        return None
    if run.status == "timeout":
        return f"{REJECTED} (it ran out of time on it)"
    return f"{REJECTED} (exit code {run.return_code})"  # its stderr stays out: the validator is not shown


def _as_failed(r: TestResult) -> TestResult:
    """A run that did not end normally on a proposed input: the input is wrong (``failed``), not the answer
    unreadable (``stdio`` calls such a test an ``error``)."""
    if r.status != "error":
        return r
    return replace(r, status="failed", error=f"the program failed on this input: {r.error}")


def _confirm(judge: Judge, task: Task, shown: dict[int, str], results: list[TestResult]) -> list[TestResult]:
    """``results`` with each passed query run ``CONFIRMATIONS`` times more (hash seeds 1, 2, ...): it stays
    passed only if every run exits 0 and prints its output again, and only if no run of a passed input
    printed something else (the module docstring). A run out of time tells nothing of agreement, but a
    passed query must finish."""
    passed = [r.index for r in results if r.status == "passed"]
    if not passed:
        return results
    cpu_s = task.time_limit_s or judge.test_timeout_s
    limits = per_test_limits(cpu_s, judge.limits)
    agreed = dict.fromkeys(passed, True)
    split = False
    for seed in range(1, CONFIRMATIONS + 1):
        for i in passed:
            if not agreed[i]:
                continue
            run = run_program(judge.sandbox, task.reference_code, limits, stdin=shown[i], cpu_s=cpu_s, hash_seed=seed)
            finished = run.status != "timeout"
            ok = run.status == "ok" and run.return_code == 0 and not run.stdout_truncated
            same = ok and same_output(printed(task.tests[i]) or "", run.stdout)
            agreed[i] = same
            split = split or (finished and not same)
    return [
        r if r.status != "passed" or (agreed[r.index] and not split) else replace(r, status="failed", error=NOT_ITS_OWN)
        for r in results
    ]


def check_answer(
    judge: Judge, task: Task, answer: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """The reference run on each chosen query's proposed stdin (once the task's validator accepts it), its
    stdout judged by the output rule; the stdins that pass run again and pass only if it agrees (``_confirm``)."""
    python_only("program_abduction", language)
    chosen = chosen_tests(task, tests)
    found = proposals(task, answer)
    if isinstance(found, str):
        return malformed(task, chosen, found, inputs_public=False)
    refused: dict[int, TestResult] = {}
    runnable: list[int] = []
    for i in chosen:
        if i not in found:
            refused[i] = TestResult(index=i, input="", status="error", error="no input given for this output")
        elif printed(task.tests[i]) is None:
            refused[i] = TestResult(index=i, input=found[i], status="error", error="no expected output")
        elif len(found[i]) > MAX_STDIN_CHARS:
            long = f"an input of {len(found[i])} characters, at most {MAX_STDIN_CHARS}"
            refused[i] = TestResult(index=i, input=found[i][:SHOWN_INPUT_CHARS], status="failed", error=long)
        elif task.input_validator is not None and (
            rejected := _validator_run(judge.sandbox, judge.limits, task.input_validator, found[i])
        ):
            refused[i] = TestResult(index=i, input=found[i], status="failed", error=rejected)
        else:
            runnable.append(i)
    base = None
    ran: dict[int, TestResult] = {}
    if runnable:
        cases = [TestCase(input=found[i], expected=task.tests[i].expected) for i in runnable]
        base = judge.stdio(task.model_copy(update={"tests": cases}), task.reference_code)
        for k, r in enumerate(base.test_results or []):
            ran[runnable[k]] = _as_failed(replace(r, index=runnable[k]))
    results = [refused[i] if i in refused else ran[i] for i in chosen]
    results = _confirm(judge, task, found, results)
    return tests_result(results, base)


def reference_answer(task: Task) -> str:
    """The task's own stdin for every query whose output is known."""
    return answer_of(task.tests, TAGS[0], lambda t: t.input if printed(t) is not None else None)


# -- gates ---------------------------------------------------------------------------------------------


def _prints_back(validator: Validator, task: Task) -> bool:
    """Whether the reference, given each query's output as its input (that the validator, if any, accepts),
    prints that output back: an identity on its outputs."""
    cpu_s = task.time_limit_s or validator.test_timeout_s
    limits = per_test_limits(cpu_s, validator.limits)
    for test in task.tests:
        output = printed(test) or ""
        if task.input_validator is not None and _validator_run(
            validator.sandbox, validator.limits, task.input_validator, output
        ):
            return False
        run = run_program(validator.sandbox, task.reference_code, limits, stdin=output, cpu_s=cpu_s)
        if not (run.status == "ok" and run.return_code == 0 and same_output(output, run.stdout)):
            return False
    return True


def _weak_queries(validator: Validator, task: Task) -> str | None:
    why = query_outputs(task)
    if why is not None:
        return why
    if all_print_alike(task):
        return "every query has the same output: one input answers them all"
    if _prints_back(validator, task):
        return "the program prints each query's output back when given it as its input: no input to search for"
    return None


def gates(validator: Validator, task: Task) -> ValidationReport:
    return query_gates(validator, task, _weak_queries, input_shown=False)


# -- what the solver is shown ---------------------------------------------------------------------------


def shown_text(task: Task, public_tests: int) -> dict[str, str]:
    """The description, the tags, the program, its prose, and every query's output (never a stdin)."""
    return query_text(task, [shown_output(printed(t) or "") for t in task.tests])


def find_leaks(task: Task, public_tests: int) -> list[Leak]:
    """Queries whose stdin the shown text gives away (``program_queries.find_leaks``)."""
    return query_leaks(task, hidden_input=True)


def view(task: Task) -> dict[str, Any]:
    """The program, whether an input validator checks the answers, and every query's output, numbered
    (never a task's stdin)."""
    return {
        "program": task.reference_code.rstrip("\n"),
        "validated": task.input_validator is not None,
        "queries": [
            {"number": k + 1, "output": shown_output(printed(t) or "") if printed(t) is not None else "?"}
            for k, t in enumerate(task.tests)
        ],
    }


def feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public query's verdict in a tool's feedback: the output asked for (the question) and what the
    program did on the solver's own input, never the task's."""
    asked = f"for output {clip(shown_output(printed(test) or ''), 200)!r}"
    if r is None or not r.input:
        return f"- FAIL {asked}: {r.error if r and r.error else 'no input given'}"
    got = r.error if r.error else f"it printed {clip(r.output or '', 200)!r}"
    return f"- {'PASS' if r.passed else 'FAIL'} {asked}: on your input {clip(r.input, 200)!r} {got}"


KIND = TaskKind(
    name="program_abduction",
    first_template="solver/program_abduction_first.j2",
    repair_template="solver/program_abduction_repair.j2",
    parse_answer=parse_answer,
    gates=gates,
    check_answer=check_answer,
    summary="find inputs on which a whole program prints given outputs",
    view=view,
    reference_answer=reference_answer,
    secret_tests=every_test,
    shown_text=shown_text,
    public_answers_in_prompt=False,
    flags_hardcoding=False,
    needs_reference=True,
    field_tests=None,
    own_fields=frozenset({"input_validator"}),
    strict_parse=None,
    fill_expected=fill_expected,
    find_leaks=find_leaks,
    feedback_line=feedback_line,
    colour="#db2777",
    sample_first={
        "task": SAMPLE_TASK,
        "public_tests": SAMPLE_PUBLIC,
        "program": SAMPLE_PROGRAM,
        "validated": False,
        "queries": [{"number": 1, "output": "2"}],
    },
    sample_repair={
        "entry_point": "",
        "turn": 2,
        "code": "```input 1\n5\n```\n",
        "status": "ok",
        "passed": 0,
        "total": 1,
        "failing": [{**SAMPLE_PUBLIC[0], "input": "5\n", "output": "6\n", "error": None}],
        "stderr_tail": "",
        "program": SAMPLE_PROGRAM,
        "validated": False,
        "queries": [{"number": 1, "output": "2"}],
    },
)
