"""Imported HumanEval tasks get the verdicts of HumanEval's own harness (issue 38).

OpenAI's harness runs ``check(candidate)`` and its ``assert candidate(ARGS) == VALUE`` is Python's
``==``. spade turned those asserts into tests compared by its own rule (a tuple equals a list, floats
within 1e-9, ``21.0`` is not ``21``), and disagreed with the harness on the tasks below. Now each
such test keeps the assert's value as a literal (``python_eq``) and is compared by ``==``, still on
the output decoded outside the sandbox. The harness's verdict on each variant is the one
``exec(prompt + completion + test); check(entry_point)`` gives (checked by hand; the harness itself
runs side by side in shared/checks/humaneval.sh). The variants are ordinary code, so they run in the
subprocess sandbox; the hostile answers run in bwrap (tests/tasksets/test_benchmark_hacks.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from spade_llm.judge import final_status, run_task_tests
from spade_llm.sandbox.base import Limits
from spade_llm.tasksets.importers import import_humaneval
from spade_llm.types import Task, TestCase

HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"
LIMITS = Limits(timeout_s=10.0)

PALINDROMES = (
    "    def p(k):\n        return str(k) == str(k)[::-1]\n"
    "    evens = sum(1 for i in range(1, n + 1) if i % 2 == 0 and p(i))\n"
    "    odds = sum(1 for i in range(1, n + 1) if i % 2 == 1 and p(i))\n"
)
EXTREMES = (
    "    s = [x for x in lst if x < 0]\n    g = [x for x in lst if x > 0]\n"
    "    a, b = (max(s) if s else None), (min(g) if g else None)\n"
)

VARIANTS = [  # task, completion, what the harness says
    pytest.param("HumanEval/107", PALINDROMES + "    return [evens, odds]\n", False, id="107-list-for-tuple"),
    pytest.param("HumanEval/107", PALINDROMES + "    return (evens, odds)\n", True, id="107-tuple"),
    pytest.param("HumanEval/136", EXTREMES + "    return [a, b]\n", False, id="136-list-for-tuple"),
    pytest.param("HumanEval/136", EXTREMES + "    return (a, b)\n", True, id="136-tuple"),
    pytest.param("HumanEval/2", "    return number % 1.0 + 1e-10\n", False, id="2-off-by-1e-10"),  # `== 0.5` is exact
    pytest.param("HumanEval/2", "    return number % 1.0\n", True, id="2-exact"),
    pytest.param("HumanEval/60", "    return n * (n + 1) / 2\n", True, id="60-float-sum"),  # 21.0 == 21
    pytest.param("HumanEval/53", "    return x + y + 0.0\n", True, id="53-float-sum"),  # and in the loop's check
    pytest.param("HumanEval/53", "    return x - y\n", False, id="53-wrong"),
]


@pytest.fixture(scope="module")
def humaneval() -> dict[str, Task]:
    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    return {t.task_id: t for t in import_humaneval(HUMANEVAL)}


@pytest.mark.parametrize(("task_id", "completion", "harness_passes"), VARIANTS)
def test_a_variant_gets_the_harness_verdict(humaneval, sandbox, task_id, completion, harness_passes):
    task = humaneval[task_id]
    result = run_task_tests(sandbox, task, task.meta["prompt"] + completion, LIMITS)
    assert (final_status(result) == "passed") is harness_passes, result.test_results


def test_the_named_tasks_compare_by_the_asserts_literal(humaneval):
    assert [t.python_eq for t in humaneval["HumanEval/107"].tests][:2] == ["(8, 13)", "(4, 6)"]
    assert humaneval["HumanEval/2"].tests[0].dump() == {"input": "(3.5,)", "expected": 0.5, "python_eq": "0.5"}
    assert [t.abs_tol for t in humaneval["HumanEval/2"].tests] == [None, 1e-6, 1e-6]  # the test's own tolerances
    assert humaneval["HumanEval/53"].check_code is not None  # the random loop stays a check, run apart
    assert humaneval["HumanEval/37"].tests[0].as_tuple  # tuple(candidate(...)) == tuple([...])


def test_every_canonical_solution_passes_under_the_harness_rule(humaneval, sandbox):
    failing = []
    for task in humaneval.values():
        if final_status(run_task_tests(sandbox, task, task.reference_code, LIMITS)) != "passed":
            failing.append(task.task_id)
    assert failing == []


# -- the rule in task files -------------------------------------------------------------------------


def test_the_rule_is_written_only_where_set_and_old_lines_load_with_spades_rule():
    plain = TestCase(input="(1,)", expected=[4, 6])
    assert plain.dump() == {"input": "(1,)", "expected": [4, 6]}  # a generated task's line keeps its shape
    ruled = TestCase(input="(1,)", expected=[4, 6], python_eq="(4, 6)", as_tuple=True)
    assert ruled.dump() == {"input": "(1,)", "expected": [4, 6], "python_eq": "(4, 6)", "as_tuple": True}
    assert TestCase.model_validate_json(json.dumps(ruled.dump())) == ruled
    old = TestCase.model_validate_json('{"input": "(12,)", "expected": [4, 6]}')  # a line from before
    assert old.python_eq is None and not old.as_tuple


@pytest.mark.parametrize(
    "fields",
    [
        {"expected": [4, 7], "python_eq": "(4, 6)"},  # not the same value
        {"expected": 1, "python_eq": "1.0"},  # nor the same type
        {"python_eq": "1"},  # no expected
        {"expected": [1], "python_eq": "[1"},  # not a literal
        {"expected": [1], "python_eq": "[x]"},
        {"expected": 1.0, "python_eq": "1.0", "abs_tol": 0.1},  # a rule of its own
        {"expected": True, "python_eq": "True", "as_bool": True},
        {"expected": [1], "as_tuple": True},  # as_tuple goes with python_eq
    ],
)
def test_a_rule_that_does_not_say_expected_is_refused(fields):
    with pytest.raises(ValidationError):
        TestCase(input="(1,)", **fields)
