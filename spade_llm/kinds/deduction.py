"""``deduction``: the solver reads the program and predicts what it returns on given inputs.

Design (one query per test, all asked at once):

* Each test of a deduction task is a query: its ``input`` is shown, its ``expected`` (filled from
  the reference by validation) is what must be predicted. The first prompt shows the description,
  the reference program and *every* query's call; the inputs are the question, so showing them
  gives nothing away, and what stays hidden of a hidden test is its expected value and its
  verdict. No expected value ever reaches a prompt: a repair prompt says which public calls were
  predicted wrong (and what the solver itself said), never the right value.
* The answer is one line per call, ``f(args) == <Python literal>``, in a ```python block or bare.
  Lines are matched to queries by their arguments (so order and spacing do not matter); bare
  literals (``<literal>`` alone on a line) fill the queries left unanswered, in order, the last
  ones written winning. Reading is linear in the answer: one ``ast.parse`` of the block, or of
  each line when the block as a whole is not Python (prose around the answers).
* Judging compares each prediction with the query's expected value *outside* the sandbox with
  ``verdict.matches`` (strict types: ``True`` is not ``1``; a tuple equals a list). Nothing runs.
  Each query is one test of the ``ExecutionResult``, so public/hidden splits, partial credit,
  ``final_status``, rewards and metrics work as for induction. An answer with nothing readable
  is data, not an exception: status ``error`` with ``load_error`` saying why.
* Gates: validation's shared gates (syntax, entry point, inputs, at least 3 tests so that one is
  public and two hidden, runtime errors, timeouts, nondeterminism, expected values), but not
  induction's test-strength gate (trivial stand-ins and mutants judge tests meant to catch wrong
  *code*; a deduction query catches wrong *predictions*). Instead ``weak_tests`` here means the
  queries make no exercise: every output is the same value, or every output is the call's first
  argument (nothing to work out), or an output is too long to write as a prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..languages import DEFAULT_ANSWER_LANGUAGE, Statement
from ..sandbox.runner import parse_input
from ..sandbox.verdict import passes, show
from ..types import TestResult
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
    safe_repr,
    shared_gates,
    tests_result,
    unreadable,
    with_own_gate,
)

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task, TestCase
    from ..validation import ValidationReport, Validator


def predictions(task: Task, answer: str) -> dict[int, Statement] | str:
    """Each query's prediction by test index, or why the answer holds none."""
    region = answer_text(answer)
    why = unreadable(region)
    if why is not None:
        return why
    items = read_items(region)
    by_args: dict[str, list[int]] = {}
    for i, test in enumerate(task.tests):
        args = parse_input(test.input)
        if not isinstance(args, str):
            by_args.setdefault(safe_repr(args), []).append(i)
    found: dict[int, Statement] = {}
    for item in items:
        if item.args is not None and (item.has_value or item.error):
            for i in by_args.get(safe_repr(item.args), []):
                found[i] = item  # the last line for a call wins
    bare = [it for it in items if it.args is None and it.has_value]
    missing = [i for i in range(len(task.tests)) if i not in found]
    if bare and missing:
        for i, item in zip(missing, bare[-len(missing) :], strict=False):
            found[i] = item
    if not found:
        return (
            "no prediction could be read: write one line per call, "
            f"`{task.entry_point}(args) == value`, the value a Python literal"
        )
    return found


def _verdict(task: Task, i: int, item: Statement | None) -> TestResult:
    test = task.tests[i]
    if item is None:
        return TestResult(index=i, input=test.input, status="error", error="no prediction for this call")
    if item.error is not None:
        return TestResult(index=i, input=test.input, status="error", error=item.error)
    if not test.has_expected:
        return TestResult(index=i, input=test.input, status="error", output=show(item.value), error="no expected value")
    right = passes(item.value, test)  # an imported benchmark's own rule (CRUXEval: Python's ==), else matches
    return TestResult(index=i, input=test.input, status="passed" if right else "failed", output=show(item.value))


def check_answer(
    judge: Judge, task: Task, answer: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """Each chosen query's prediction against its expected value, outside the sandbox; nothing runs."""
    python_only("deduction", language)
    chosen = chosen_tests(task, tests)
    found = predictions(task, answer)
    if isinstance(found, str):
        return malformed(task, chosen, found)
    return tests_result([_verdict(task, i, found.get(i)) for i in chosen])


# -- gates ---------------------------------------------------------------------------------------


def _weak_queries(task: Task) -> str | None:
    expected = [t.expected for t in task.tests]
    too_long = output_too_long(expected)
    if too_long:
        return too_long
    if len(expected) > 1 and all_same(expected):
        return "every query has the same output: predicting it needs no reading of the program"
    firsts = [parse_input(t.input) for t in task.tests]
    if all(isinstance(a, tuple) and a and passes(a[0], t) for a, t in zip(firsts, task.tests, strict=True)):
        return "the program returns its first argument on every query: nothing to work out"
    return None


def gates(validator: Validator, task: Task) -> ValidationReport:
    report = shared_gates(validator, task)
    if report.reason not in (None, "weak_tests") or report.task is None:
        return report
    return with_own_gate(report, _weak_queries(report.task))


# -- prompts -------------------------------------------------------------------------------------


def view(task: Task) -> dict[str, Any]:
    """The program and every query's call (never an expected value)."""
    return {
        "program": task.reference_code.rstrip("\n"),
        "queries": [{"call": call_text(task.entry_point, t.input)} for t in task.tests],
    }


def feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public query's verdict as the repair prompt tells it: the call, never the right value (it
    is the answer)."""
    call = call_text(task.entry_point, test.input)
    if r is None:
        return f"- FAIL {call}: not run"
    if r.passed:
        return f"- PASS {call}"
    said = r.error or f"you predicted {r.output}, which is not what it returns"
    return f"- FAIL {call}: {said}"


KIND = query_kind(
    "deduction",
    query={"call": "f(1)"},
    shown_expected="1",
    answer="f(1) == 3",
    failing={"input": "(1,)", "expected": "2", "output": "3", "error": None},
    gates=gates,
    check_answer=check_answer,
    summary="predict the program's output on given inputs",
    view=view,
    reference_answer=reference_answer,
    feedback_line=feedback_line,
    feedback_stderr=False,
    colour="#d97706",
)
