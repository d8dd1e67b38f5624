"""Tests whose expected value has no JSON form (``TestCase.literal_only``: CRUXEval's set or bytes
outputs, judged by Python's ``==`` on ``python_eq``) in what carries a task out of spade: spade's own
ground truth writes the literal and a reward judges by it as the loop does; formats that cannot say
Python's ``==`` on such a value (Harbor's judge reads expected values as JSON, verl's SandboxFusion form
compares printed text) leave the task out, counted by reason, rather than judge it wrongly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade_llm.export.harbor import write_harbor
from spade_llm.kinds.abduction import KIND as INPUT_PREDICTION
from spade_llm.kinds.deduction import KIND as OUTPUT_PREDICTION
from spade_llm.kinds.induction import KIND as FUNCTION
from spade_llm.rewards.code import Rewarder
from spade_llm.rewards.groundtruth import (
    TEST_NO_JSON_FORM,
    ground_truth,
    sandbox_fusion_form,
    task_from_ground_truth,
)
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task, TestCase

EVENS = "def f(xs):\n    return {x for x in xs if x % 2 == 0}\n"


def task(kind: str, literal: str = "{2, 4}") -> Task:
    return Task(
        task_id=f"evens/{kind}",
        kind=kind,
        description="Which even numbers does the list hold?",
        entry_point="f",
        reference_code=EVENS,
        tests=[TestCase(input="([1, 2, 3, 4],)", python_eq=literal)],
    )


def fenced(text: str) -> str:
    return f"```python\n{text}\n```\n"


@pytest.fixture(scope="module")
def rewarder():
    with Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=2.0, max_workers=2) as r:
        yield r


def test_spades_ground_truth_carries_the_literal_and_a_reward_judges_by_pythons_eq(rewarder: Rewarder) -> None:
    for kind in (OUTPUT_PREDICTION.name, INPUT_PREDICTION.name):
        gt = json.dumps(ground_truth(task(kind), 1))  # JSON: the literal, no stand-in
        assert json.loads(gt)["tests"] == [{"input": "([1, 2, 3, 4],)", "python_eq": "{2, 4}"}]
        back, _ = task_from_ground_truth(gt)
        assert back.tests[0].expected == {2, 4} and back.tests[0] == task(kind).tests[0]
    right, wrong = fenced("f([1, 2, 3, 4]) == {4, 2}"), fenced("f([1, 2, 3, 4]) == [2, 4]")
    gt = json.dumps(ground_truth(task(OUTPUT_PREDICTION.name), 1))
    assert [rewarder.score(text, gt).score for text in (right, wrong)] == [1.0, 0.0]
    gt = json.dumps(ground_truth(task(INPUT_PREDICTION.name), 1))
    other, wrong_input = fenced("f([4, 2, 7]) == {2, 4}"), fenced("f([2, 3]) == {2, 4}")
    assert [rewarder.score(text, gt).score for text in (right, other, wrong_input)] == [1.0, 1.0, 0.0]


def test_a_function_task_with_a_literal_only_test_is_judged_by_it(rewarder: Rewarder) -> None:
    gt = json.dumps(ground_truth(task(FUNCTION.name), 1))
    as_list = "def f(xs):\n    return sorted(x for x in xs if x % 2 == 0)\n"
    assert [rewarder.score(fenced(code), gt).score for code in (EVENS, as_list)] == [1.0, 0.0]


def test_formats_that_cannot_say_pythons_eq_leave_the_task_out_counted(tmp_path: Path) -> None:
    assert sandbox_fusion_form(task(OUTPUT_PREDICTION.name)).truth is None
    function = task(FUNCTION.name)
    form = sandbox_fusion_form(function)  # the set test dropped: a list, a frozenset print otherwise
    assert form.truth is None and form.tests_left_out == {TEST_NO_JSON_FORM: 1}
    plain = function.model_copy(update={"task_id": "plain", "tests": [TestCase(input="(1,)", expected=1)]})
    tasks = [(function, "easy"), (task(OUTPUT_PREDICTION.name), "easy"), (plain, "easy")]
    done = write_harbor(tasks, tmp_path / "harbor", public_tests=1, prompts_dir=None, test_timeout_s=2.0)
    assert done.tasks == 1 and sorted(p.name for p in (tmp_path / "harbor").iterdir()) == ["plain"]
    assert done.left_out["a test whose expected value has no JSON form"] == ["evens/induction"]
