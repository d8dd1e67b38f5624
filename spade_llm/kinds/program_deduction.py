"""``program_deduction``: the solver reads a whole program and predicts what it prints for given inputs.

Why the name: it is ``deduction`` (predict the output from the program and the input) asked of a
``program`` task (a whole program on stdin and stdout), and says both, as CRUXEval's output prediction
and the contests' "what does this program print" exercises do; it sorts beside the two kinds it joins.

Design (one query per test, all asked at once, as ``deduction``; what it shares with
``program_abduction`` is in ``program_queries``):

* Each test is a query: its ``input`` (the stdin) is shown, its ``expected`` (the reference's stdout,
  filled by the gates) is what must be predicted. The first prompt shows the description, the program
  and every query's stdin, numbered, each in a fenced block; no expected stdout ever reaches a prompt.
* The answer is one ```` ```output N ```` block per query holding exactly what the program prints on
  input N (``program_queries``: reading, numbering, a plain block's fallback).
* Judging compares each prediction with the query's expected stdout by the output rule
  (``sandbox/stdio.py`` ``same_output``: each line's trailing whitespace and the trailing blank lines do
  not count, so a missing final newline or trailing spaces do not matter; leading spaces, letter case and
  number formats do) *outside* the sandbox: nothing runs. Each query is one test of the
  ``ExecutionResult``, so splits, partial credit, ``final_status`` and rewards work as for every kind; an
  answer with nothing readable is an ``error`` with ``load_error`` saying why.
* A repair prompt says which public queries were predicted wrong and what the solver itself predicted,
  never what the program prints.
* Gates: the ``program`` kind's, for a sound program task (``program_queries.query_gates``), then
  ``weak_tests`` here means the queries make no exercise: an output too long to predict (over
  ``MAX_QUERY_OUTPUT_CHARS``) or holding a fence, every query printing the same, or the program printing
  each query's input back (nothing to work out). A query's stdin over ``MAX_QUERY_STDIN_CHARS`` or holding
  a fence is ``bad_input`` (it is shown whole, in a fenced block).
* Leaks (``find_leaks``): a query's stdin shown with its stdout in the description, the tags or the
  program's comments and strings (the answer must not be in the shown text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..sandbox.stdio import SHOWN_OUTPUT_CHARS, same_output
from ..types import TestResult
from .base import TaskKind, every_test, python_only
from .program import clip, fill_expected
from .program_queries import (
    SAMPLE_PROGRAM,
    SAMPLE_PUBLIC,
    SAMPLE_TASK,
    all_print_alike,
    answer_of,
    answer_reader,
    assign,
    printed,
    query_gates,
    query_outputs,
    shown_input,
)
from .program_queries import find_leaks as query_leaks
from .program_queries import shown_text as query_text
from .queries import chosen_tests, malformed, tests_result

if TYPE_CHECKING:
    from ..judge import Judge
    from ..leaks import Leak
    from ..types import ExecutionResult, Task, TestCase
    from ..validation import ValidationReport, Validator

TAGS = ("output", "stdout")
"""The info strings of an answer's blocks (the first is the one prompts ask for)."""

parse_answer = answer_reader(TAGS)


def predictions(task: Task, answer: str) -> dict[int, str] | str:
    """Each query's predicted stdout by test index, or why the answer holds none."""
    return assign(task, answer, TAGS, "input")


def _verdict(task: Task, i: int, said: str | None) -> TestResult:
    test = task.tests[i]
    if said is None:
        return TestResult(index=i, input=test.input, status="error", error="no prediction for this input")
    shown = said[:SHOWN_OUTPUT_CHARS]
    expected = printed(test)
    if expected is None:
        return TestResult(index=i, input=test.input, status="error", output=shown, error="no expected output")
    right = same_output(expected, said)
    return TestResult(index=i, input=test.input, status="passed" if right else "failed", output=shown)


def check_answer(
    judge: Judge, task: Task, answer: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """Each chosen query's prediction against the reference's stdout by the output rule; nothing runs."""
    python_only("program_deduction", language)
    chosen = chosen_tests(task, tests)
    found = predictions(task, answer)
    if isinstance(found, str):
        return malformed(task, chosen, found)
    return tests_result([_verdict(task, i, found.get(i)) for i in chosen])


def reference_answer(task: Task) -> str:
    """The right prediction for every query whose expected stdout is known."""
    return answer_of(task.tests, TAGS[0], printed)


# -- gates ---------------------------------------------------------------------------------------------


def _weak_queries(validator: Validator, task: Task) -> str | None:
    why = query_outputs(task)
    if why is not None:
        return why
    if all_print_alike(task):
        return "every query prints the same output: predicting it needs no reading of the program"
    if all(same_output(t.input, printed(t) or "") for t in task.tests):
        return "the program prints its input back on every query: nothing to work out"
    return None


def gates(validator: Validator, task: Task) -> ValidationReport:
    return query_gates(validator, task, _weak_queries, input_shown=True)


# -- what the solver is shown ---------------------------------------------------------------------------


def shown_text(task: Task, public_tests: int) -> dict[str, str]:
    """The description, the tags, the program, its prose, and every query's stdin (never an output)."""
    return query_text(task, [t.input for t in task.tests])


def find_leaks(task: Task, public_tests: int) -> list[Leak]:
    """Queries whose stdout the shown text gives away (``program_queries.find_leaks``)."""
    return query_leaks(task, hidden_input=False)


def view(task: Task) -> dict[str, Any]:
    """The program and every query's stdin, numbered (never an expected stdout)."""
    return {
        "program": task.reference_code.rstrip("\n"),
        "queries": [
            {
                "number": k + 1,
                "input": shown_input(t.input),
                "no_final_newline": bool(t.input) and not t.input.endswith("\n"),
            }
            for k, t in enumerate(task.tests)
        ],
    }


def feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public query's verdict in a tool's feedback: its input, and for a wrong prediction what the
    solver said, never what the program prints (it is the answer)."""
    where = f"input {clip(shown_input(test.input), 200)!r}"
    if r is None:
        return f"- FAIL {where}: not run"
    if r.passed:
        return f"- PASS {where}"
    said = r.error or f"you predicted {clip(r.output or '', 200)!r}, which is not what it prints"
    return f"- FAIL {where}: {said}"


KIND = TaskKind(
    name="program_deduction",
    first_template="solver/program_deduction_first.j2",
    repair_template="solver/program_deduction_repair.j2",
    parse_answer=parse_answer,
    gates=gates,
    check_answer=check_answer,
    summary="predict what a whole program prints for given inputs",
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
    feedback_stderr=False,
    colour="#7c3aed",
    sample_first={
        "task": SAMPLE_TASK,
        "public_tests": SAMPLE_PUBLIC,
        "program": SAMPLE_PROGRAM,
        "queries": [{"number": 1, "input": "1", "no_final_newline": False}],
    },
    sample_repair={
        "entry_point": "",
        "turn": 2,
        "code": "```output 1\n3\n```\n",
        "status": "ok",
        "passed": 0,
        "total": 1,
        "failing": [{**SAMPLE_PUBLIC[0], "output": "3\n", "error": None}],
        "stderr_tail": "",
        "program": SAMPLE_PROGRAM,
        "queries": [{"number": 1, "input": "1", "no_final_newline": False}],
    },
)
