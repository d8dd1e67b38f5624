"""Judge-only tasks (issue 38): an imported problem without a usable reference (``reference_code`` "")
is judged on its tests like any task; the gates say ``no_reference``, and evaluating references
leaves it out (and refuses when there is nothing else). Programs are benign, in the subprocess sandbox.
"""

from __future__ import annotations

import pytest

from spade_llm.errors import UserError
from spade_llm.tasksets.judging import evaluate_samples, verify_tasks
from spade_llm.types import Task, TestCase

ECHO_SUM = "print(sum(map(int, input().split())))\n"


def program(task_id: str, reference: str) -> Task:
    tests = [TestCase(input=i, expected=o) for i, o in [("1 2\n", "3\n"), ("4 5\n", "9\n"), ("0 7\n", "7\n")]]
    return Task(
        task_id=task_id, kind="program", description="Print the sum.", entry_point="", reference_code=reference,
        tests=tests, public_tests=1,
    )  # fmt: skip


def test_a_blank_reference_makes_a_task_judge_only():
    assert program("j", "").judge_only and program("j", "  \n").judge_only
    assert not program("r", ECHO_SUM).judge_only


def test_the_gates_say_no_reference_and_run_nothing(sandbox):
    reports = list(verify_tasks([program("r", ECHO_SUM), program("j", "")], sandbox=sandbox, concurrency=1))
    assert [(r.task_id, r.valid, r.reason) for r in reports] == [("r", True, None), ("j", False, "no_reference")]
    assert "judge-only" in reports[1].detail and reports[1].tests_total == 3


def test_evaluating_references_leaves_judge_only_tasks_out_and_samples_judge_them(sandbox):
    tasks = [program("r", ECHO_SUM), program("j", "")]
    result = evaluate_samples(tasks, sandbox=sandbox, concurrency=1)
    assert [(row["task_id"], row["passed"]) for row in result.rows] == [("r", True)]
    samples = [(tasks[1], ECHO_SUM), (tasks[1], "print(3)\n")]
    judged = evaluate_samples(tasks, samples, sandbox=sandbox, concurrency=1)
    assert [(row["task_id"], row["passed"]) for row in judged.rows] == [("j", True), ("j", False)]


def test_evaluating_only_judge_only_tasks_without_samples_is_refused():
    with pytest.raises(UserError, match="every task is judge-only"):
        evaluate_samples([program("j", "")], sandbox="subprocess")
