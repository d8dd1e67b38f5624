"""LiveCodeBench's LeetCode problems (``Task.entry_class``, ``Task.prelude``) in what carries a task out of
spade: spade's own ground truth keeps the class and the prelude, so a reward judges an answer as the loop
does; formats whose judge calls a module's function as written (Harbor's, verl's SandboxFusion form) leave
the task out, counted by reason, rather than judge it wrongly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade_llm.export.harbor import write_harbor
from spade_llm.kinds.induction import KIND as FUNCTION
from spade_llm.rewards.code import Rewarder
from spade_llm.rewards.groundtruth import LEFT_OUT_METHOD, ground_truth, sandbox_fusion_form, task_from_ground_truth
from spade_llm.sandbox.base import Limits
from spade_llm.tasksets.livecodebench import ENTRY_CLASS, PRELUDE
from spade_llm.types import Task, TestCase


def leetcode(**over: object) -> Task:
    fields: dict[str, object] = {
        "task_id": "lcb/2727",
        "kind": FUNCTION.name,
        "description": "Count the items.",
        "entry_point": "count",
        "entry_class": ENTRY_CLASS,
        "prelude": PRELUDE,
        "reference_code": "",
        "tests": [
            TestCase(input="([1, 2],)", expected=[2, 1], python_eq="[2, 1]", tuple_as_list=True),
            TestCase(input="([],)", expected=[0, 1], python_eq="[0, 1]", tuple_as_list=True),
        ],
    }
    return Task.model_validate({**fields, **over})


RIGHT = "class Solution:\n    def count(self, xs: List[int]) -> Tuple[int, int]:\n        return len(xs), 1\n"
NO_CLASS = "def count(xs):\n    return [len(xs), 1]\n"
NO_PRELUDE = "class Solution:\n    def count(self, xs):\n        return [len(xs), gcd(4, 2) - 1]\n"


@pytest.fixture(scope="module")
def rewarder():
    with Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=2.0, max_workers=2) as r:
        yield r


def test_spades_ground_truth_carries_the_class_and_prelude_and_a_reward_judges_as_the_loop(rewarder) -> None:
    gt = ground_truth(leetcode(), 1)
    assert (gt["entry_class"], gt["prelude"]) == (ENTRY_CLASS, PRELUDE)
    back, public = task_from_ground_truth(json.dumps(gt))
    assert (back.entry_class, back.prelude, back.tests, public) == (ENTRY_CLASS, PRELUDE, leetcode().tests, 1)
    scores = [rewarder.score(f"```python\n{code}```\n", json.dumps(gt)).score for code in (RIGHT, NO_PRELUDE, NO_CLASS)]
    assert scores == [1.0, 1.0, 0.0]  # gcd, as List, from the prelude; a function is no method of Solution
    plain = ground_truth(leetcode(entry_class=None, prelude=None, entry_point="f"), 1)
    assert "entry_class" not in plain and "prelude" not in plain  # other tasks keep their shape


def test_formats_that_call_a_modules_function_leave_the_task_out_counted(tmp_path: Path) -> None:
    form = sandbox_fusion_form(leetcode())
    assert form.truth is None and form.reason == LEFT_OUT_METHOD
    plain = Task(
        task_id="plain", description="d", entry_point="f", reference_code="def f(x):\n    return x\n",
        tests=[TestCase(input="(1,)", expected=1), TestCase(input="(2,)", expected=2)],
    )  # fmt: skip
    done = write_harbor(
        [(leetcode(), "easy"), (plain, "easy")], tmp_path / "harbor", public_tests=1, prompts_dir=None,
        test_timeout_s=2.0,
    )  # fmt: skip
    assert done.tasks == 1 and [p.name for p in (tmp_path / "harbor").iterdir()] == ["plain"]
    assert done.left_out == {LEFT_OUT_METHOD: ["lcb/2727"]}


def test_a_class_or_prelude_is_refused_on_a_task_the_gates_would_run() -> None:
    # validation's gates call a reference's module-level function without the prelude: refused, not misjudged
    for over in ({"reference_code": RIGHT}, {"check_code": "def check(candidate):\n    pass\n"}):
        for fields in ({}, {"entry_class": None}, {"prelude": None}):
            with pytest.raises(ValueError, match="for judge-only tasks"):
                leetcode(**over, **fields)
    assert leetcode(entry_class=None, prelude=None, reference_code=RIGHT).reference_code == RIGHT
