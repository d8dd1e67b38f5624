"""``abduction``: the solver reads the program and finds inputs that make it return given outputs.

Design (one query per test, all asked at once, as for ``deduction``):

* Each test of an abduction task is a query: its ``expected`` output (filled from the reference by
  validation) is shown, its ``input`` is one answer among possibly many and is never shown. The
  first prompt shows the description, the reference program and every query's output.
* The answer is one line per output, ``f(args) == <output>``, in order, in a ```python block or
  bare (``f(args)`` alone, or a bare argument tuple such as ``(3, [1, 2])``, also count). A line
  whose ``== <output>`` matches a query's output answers that query; the other lines fill the
  queries left, in order, the last ones written winning.
* Judging runs the *reference* (never the solver's code) on each proposed input in the sandbox,
  all in one execution (``execute_calls``), and compares what it returned with the query's
  expected output outside the sandbox (``verdict.matches``). Any input that gives the output
  passes. An input that makes the reference raise is a ``failed`` test (the input is wrong), one
  that makes it run out of time a ``timeout``; a malformed answer is an ``error`` with
  ``load_error``, never an exception.
* The reference is the judge, so it must agree with itself: once some input gave its output, every
  input of the answer runs again in another execution (another hash seed, the reverse order,
  ``CONFIRMATIONS`` times each). One that passed and does not give its output there every time fails
  (``NOT_ITS_OWN``), and if the reference gives any input of the answer two different outcomes, every
  query fails: a judge that disagrees with itself pays nothing. A reference that is a coin flip on
  inputs no test has (validation's ``nondeterministic`` probes reject such tasks) cannot pay an answer
  by chance, and the same answer judged again gets the same verdict (0) but with a chance that
  shrinks with every input and round (a fair coin on one input: 1 in 8 rounds of agreement).
* Feedback: a repair prompt may show what the program returned on the solver's own inputs (the
  program is public), and the output asked for (the question); never the task's original inputs,
  which the ``TestResult``s of this kind do not even hold (their ``input`` is the proposal).
* Gates: validation's shared gates (see ``deduction``), then ``weak_tests`` here means the queries
  make no exercise: every output is the same (one input answers all), an output too long to show,
  or the program gives back each output when called with that output as its one argument (an
  identity-like program: no search needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..languages import DEFAULT_ANSWER_LANGUAGE, Statement
from ..sandbox.runner import NOT_RUN_AFTER_TIMEOUTS, CallsOutcome, execute_calls, parse_input
from ..sandbox.verdict import Output, Unsupported, passes, show
from ..types import TestCase, TestResult
from .base import python_only
from .queries import (
    all_same,
    answer_text,
    call_text,
    chosen_tests,
    malformed,
    output_too_long,
    query_kind,
    read_items,
    reference_answer,
    shared_gates,
    tests_result,
    unreadable,
    with_own_gate,
)

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task, TestStatus
    from ..validation import ValidationReport, Validator


def _args_of(item: Statement) -> tuple[Any, ...] | None:
    """The arguments an item proposes: a call's, or a bare literal (a tuple of arguments, or one argument)."""
    if item.args is not None:
        return item.args
    if item.has_value:
        return item.value if type(item.value) is tuple else (item.value,)
    return None


def proposals(task: Task, answer: str) -> dict[int, tuple[Any, ...]] | str:
    """Each query's proposed arguments by test index, or why the answer holds none."""
    region = answer_text(answer)
    why = unreadable(region)
    if why is not None:
        return why
    found: dict[int, tuple[Any, ...]] = {}
    pool: list[tuple[Any, ...]] = []
    for item in read_items(region):
        args = _args_of(item)
        if args is None:
            continue
        target = None
        if item.args is not None and item.has_value:
            hits = [i for i, t in enumerate(task.tests) if t.has_expected and passes(item.value, t)]
            target = next((i for i in hits if i not in found), hits[0] if hits else None)
        if target is None:
            pool.append(args)
        else:
            found[target] = args
    missing = [i for i in range(len(task.tests)) if i not in found]
    if pool and missing:
        for i, args in zip(missing, pool[-len(missing) :], strict=False):
            found[i] = args
    if not found:
        return (
            "no input could be read: write one line per output, "
            f"`{task.entry_point}(args) == output`, the arguments Python literals"
        )
    return found


def _verdict(task: Task, i: int, shown: str, outcome: CallsOutcome, k: int) -> TestResult:
    """Test ``i``'s verdict from the ``k``-th call of the execution (its proposed input ``shown``)."""
    out = outcome.outputs[k] if k < len(outcome.outputs) else None
    if out is None:
        if outcome.load_error is not None:
            return TestResult(index=i, input=shown, status="error", error=outcome.load_error)
        if outcome.stopped:
            return TestResult(index=i, input=shown, status="timeout", error=NOT_RUN_AFTER_TIMEOUTS)
        status: TestStatus = "timeout" if outcome.result.status == "timeout" else "error"
        return TestResult(index=i, input=shown, status=status, error=f"not run ({outcome.result.status})")
    if out.status == "timeout":
        return TestResult(index=i, input=shown, status="timeout", error=out.error, duration_ms=out.duration_ms)
    if out.status != "ok":
        error = f"the program raised {out.error}" if out.error else "the program failed on this input"
        return TestResult(index=i, input=shown, status="failed", error=error, duration_ms=out.duration_ms)
    right = passes(out.value, task.tests[i])  # an imported benchmark's own rule (CRUXEval: Python's ==), else matches
    return TestResult(
        index=i,
        input=shown,
        status="passed" if right else "failed",
        output=show(out.value),
        duration_ms=out.duration_ms,
    )


def _literal(args: tuple[Any, ...]) -> str | None:
    try:
        return repr(args)
    except ValueError:  # an int too long for repr
        return None


def _out_of_shape(task: Task, i: int, args: tuple[Any, ...]) -> str | None:
    """Why proposed arguments cannot count for query ``i``: another number of arguments than the
    task's own inputs (a default or extra parameter would let any output be forced through it)."""
    own = parse_input(task.tests[i].input)
    if isinstance(own, tuple) and len(own) != len(args):
        return f"{len(args)} arguments given; the program's inputs have {len(own)}"
    return None


NOT_ITS_OWN = "on a second run the program returned another value for this input: it does not decide it alike"
"""A query whose input gave the output once and not on the run that checks it (see the module docstring)."""


CONFIRMATIONS = 3
"""Times the second run asks the reference again for each input of the answer (the queries in reverse
order, round after round): a reference that flips a fair coin on an input agrees with itself on all four
runs once in 8, and every input of the answer must."""


def _confirm(
    judge: Judge, task: Task, shown: dict[int, str], results: list[TestResult], first: dict[int, Output]
) -> list[TestResult]:
    """``results`` checked on a second run of the reference (hash seed 1, every input of the answer that
    ran, ``first`` its outputs there, in reverse order, ``CONFIRMATIONS`` rounds), when some query passed:
    a passed one that does not give its output every time, or does not finish, fails; and when any input
    got two different outcomes (values, or an exception where the other returned), every passed query
    fails: the judge disagrees with itself on this answer. A call that runs out of time tells nothing
    (but a passed query must finish)."""
    from ..validation import same_outcome

    passed = [r.index for r in results if r.status == "passed"]
    if not passed:
        return results
    ran = [r.index for r in results if r.index in first]
    order = [i for _ in range(CONFIRMATIONS) for i in reversed(ran)]
    again = execute_calls(
        judge.sandbox,
        task.reference_code,
        task.entry_point,
        [shown[i] for i in order],
        judge.limits,
        judge.test_timeout_s,
        hash_seed=1,
        max_timeouts=judge.max_timeouts,
    )
    agreed = dict.fromkeys(passed, True)
    split = False
    for k, i in enumerate(order):
        out = again.outputs[k] if k < len(again.outputs) else None
        if i in agreed:
            same = out is not None and out.ok and not isinstance(out.value, Unsupported)
            agreed[i] = (
                agreed[i] and same and out is not None and passes(out.value, task.tests[i])
            )  # the test's own rule
        told = out is not None and out.status != "timeout" and first[i].status != "timeout"
        split = split or (told and out is not None and not same_outcome(first[i], out))
    return [
        r if r.status != "passed" or (agreed[r.index] and not split) else replace(r, status="failed", error=NOT_ITS_OWN)
        for r in results
    ]


def check_answer(
    judge: Judge, task: Task, answer: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """The reference run on each chosen query's proposed input, its output compared outside; the inputs
    that pass run once more, and pass only if the reference gives their output again (``_confirm``)."""
    python_only("abduction", language)
    chosen = chosen_tests(task, tests)
    found = proposals(task, answer)
    if isinstance(found, str):
        return malformed(task, chosen, found, inputs_public=False)
    shown: dict[int, str] = {}
    refused: dict[int, str] = {}
    for i in chosen:
        if i not in found or not task.tests[i].has_expected:
            continue
        why = _out_of_shape(task, i, found[i])
        text = _literal(found[i])
        if why is None and text is None:
            why = "an argument too long to write as a literal"
        if why is not None:
            refused[i] = why
        else:
            shown[i] = text  # type: ignore[assignment]
    runnable = [i for i in chosen if i in shown]
    outcome = None
    if runnable:
        outcome = execute_calls(
            judge.sandbox,
            task.reference_code,
            task.entry_point,
            [shown[i] for i in runnable],
            judge.limits,
            judge.test_timeout_s,
            max_timeouts=judge.max_timeouts,
        )
    position = {i: k for k, i in enumerate(runnable)}
    results = []
    for i in chosen:
        if i not in found:
            results.append(TestResult(index=i, input="", status="error", error="no input given for this output"))
        elif i in refused:
            results.append(TestResult(index=i, input=_literal(found[i]) or "", status="failed", error=refused[i]))
        elif outcome is None or i not in position:
            results.append(
                TestResult(index=i, input=_literal(found[i]) or "", status="error", error="no expected value")
            )
        else:
            results.append(_verdict(task, i, shown[i], outcome, position[i]))
    first = {} if outcome is None else {i: outcome.outputs[k] for i, k in position.items() if k < len(outcome.outputs)}
    results = _confirm(judge, task, shown, results, first)
    base = replace(outcome.result, load_error=outcome.load_error) if outcome else None
    return tests_result(results, base)


# -- gates ---------------------------------------------------------------------------------------


def _identity_like(validator: Validator, task: Task) -> bool:
    """Whether the reference gives back every query's output when called with it as its one argument."""
    probes = [TestCase(input=repr((t.expected,))) for t in task.tests]
    outcome = validator.judge.outputs(task.model_copy(update={"tests": probes}), task.reference_code)
    return len(outcome.outputs) == len(task.tests) and all(
        o.ok and passes(o.value, t) for o, t in zip(outcome.outputs, task.tests, strict=True)
    )


def _weak_queries(validator: Validator, task: Task) -> str | None:
    expected = [t.expected for t in task.tests]
    too_long = output_too_long(expected)
    if too_long:
        return too_long
    if len(expected) > 1 and all_same(expected):
        return "every query has the same output: one input answers them all"
    if _identity_like(validator, task):
        return "the program returns its argument unchanged on every query's output: no input to search for"
    return None


def gates(validator: Validator, task: Task) -> ValidationReport:
    report = shared_gates(validator, task)
    if report.reason not in (None, "weak_tests") or report.task is None:
        return report
    return with_own_gate(report, _weak_queries(validator, report.task))


# -- prompts -------------------------------------------------------------------------------------


def view(task: Task) -> dict[str, Any]:
    """The program and every query's output (never the task's inputs)."""
    return {
        "program": task.reference_code.rstrip("\n"),
        "queries": [{"output": t.expected_repr if t.has_expected else "?"} for t in task.tests],
    }


def feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public query's verdict as the repair prompt tells it: the output asked for (the question)
    and what the program did on the solver's own input, never the task's."""
    asked = f"for output {test.expected_repr}"
    if r is None or not r.input:
        return f"- FAIL {asked}: {r.error if r and r.error else 'no input given'}"
    got = f"raised {r.error}" if r.error else f"returned {r.output}"
    return f"- {'PASS' if r.passed else 'FAIL'} {asked}: {call_text(task.entry_point, r.input)} {got}"


KIND = query_kind(
    "abduction",
    query={"output": "2"},
    shown_expected="2",
    answer="f(5) == 2",
    failing={"input": "(5,)", "expected": "2", "output": "6", "error": None},
    gates=gates,
    check_answer=check_answer,
    summary="find inputs that make the program return given outputs",
    view=view,
    reference_answer=reference_answer,
    feedback_line=feedback_line,
    colour="#0891b2",
)
