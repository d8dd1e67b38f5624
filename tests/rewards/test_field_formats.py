"""Ground truths in the field's formats (issue 38): verl's ``prime_code`` shape, LiveCodeBench's and
SandboxFusion's test cases, read as spade tasks and judged in spade's sandbox by ``compute_score`` and
``code_reward``; and the shapes refused because no exact reading exists.

Every answer here is a benign program or function written by the test, run in the subprocess sandbox.
(Parity with verl's own ``prime_code`` judge: ``test_prime_code_parity.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from spade_llm.errors import UserError
from spade_llm.kinds import get_kind, kind_for_field_tests
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder, code_reward, compute_score, make_code_reward, parse_ground_truth
from spade_llm.rewards.field_formats import field_ground_truth
from spade_llm.sandbox.base import Limits
from spade_llm.types import TestCase

SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
MAX = "input()\nprint(max(map(int, input().split())))\n"
CASES = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n")]
PRIME = {"inputs": [i for i, _ in CASES], "outputs": [o for _, o in CASES]}
LCB = [{"input": i, "output": o, "testtype": "stdin"} for i, o in CASES]
SANDBOX_FUSION = [{"input": {"stdin": i}, "output": {"stdout": o}} for i, o in CASES]


def block(code: str) -> str:
    return f"```python\n{code}```"


def score(answer: str, truth: Any, **kw: Any) -> dict[str, Any]:
    return compute_score("codecontests", block(answer), truth if isinstance(truth, str) else json.dumps(truth), **kw)


@pytest.fixture(scope="module", autouse=True)
def default_rewarder() -> Iterator[Rewarder]:
    rewarder = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, rewarder
    yield rewarder
    rewards._default = saved
    rewarder.close()


# -- stdin programs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "truth", [PRIME, LCB, SANDBOX_FUSION, {"test": SANDBOX_FUSION, "id": 7}], ids=["prime", "lcb", "sf", "sf_row"]
)
def test_each_shape_of_stdin_tests_is_a_program_task_judged_by_its_stdout(truth: Any) -> None:
    task, public = parse_ground_truth(json.dumps(truth))
    assert task.kind == kind_for_field_tests("stdin").name and task.entry_point == "" and public == 0
    assert [(t.input, t.expected) for t in task.tests] == CASES
    assert score(SUM, truth)["score"] == 1.0
    wrong = score(MAX, truth)  # max is the sum on "1\n7\n" only
    assert (wrong["score"], wrong["tests_passed"], wrong["status"]) == (0.0, 1, "failed")
    crash = score("raise SystemExit(2)\n", truth)
    assert (crash["score"], crash["tests_passed"]) == (0.0, 0)
    if truth is PRIME:  # the same judge for every shape: one timeout is enough
        assert score("while True:\n    pass\n", truth)["status"] == "timeout"
    assert compute_score("codecontests", SUM, json.dumps(truth))["status"] == "no_code"  # no python block


def test_prime_codes_lists_of_lines_are_joined_as_prime_code_joins_them() -> None:
    truth = {"inputs": [["3", "1 2 3"], ["1", "7"]], "outputs": [["6"], ["7"]]}
    task, _ = parse_ground_truth(truth)
    assert [t.input for t in task.tests] == ["3\n1 2 3", "1\n7"]
    assert score(SUM, truth)["score"] == 1.0


def test_the_trl_reward_reads_the_same_column() -> None:
    truths = [json.dumps(PRIME), json.dumps(LCB), json.dumps(SANDBOX_FUSION)]
    assert code_reward(completions=[block(SUM), block(MAX), block(SUM)], ground_truth=truths) == [1.0, 0.0, 1.0]


def test_livecodebench_rows_count_their_public_tests_as_shown() -> None:
    row = {"question_id": "abc301_a", "public_test_cases": json.dumps(LCB[:1]), "private_test_cases": LCB[1:]}
    task, public = parse_ground_truth(row)
    assert (task.task_id, public, len(task.tests)) == ("abc301_a", 1, 3)
    # partial credit pays the private tests only: MAX fails the public one and passes one of two private
    assert score(MAX, row, partial_credit=True)["score"] == 0.5
    assert make_code_reward(partial_credit=True)(completions=[block(MAX)], ground_truth=[json.dumps(row)]) == [0.5]


# -- call-based tests ----------------------------------------------------------------------------------


def test_a_livecodebench_rows_functional_tests_are_judged_as_its_harness_judges_them() -> None:
    cases = [{"input": "[1, 2]\n3", "output": "[4, 5]", "testtype": "functional"}]
    more = [{"input": "[]\n0", "output": "[]", "testtype": "functional"}]
    row = {"question_id": "2727", "public_test_cases": json.dumps(cases), "private_test_cases": more}
    row["metadata"] = json.dumps({"func_name": "shift"})
    task, public = parse_ground_truth(row)
    assert (task.entry_point, task.entry_class, public) == ("shift", "Solution", 1) and task.prelude
    method = "class Solution:\n    def shift(self, xs: List[int], k: int) -> Tuple[int, ...]:\n"
    right = method + "        return tuple(x + k for x in xs)\n"  # a tuple is a list; List from the prelude
    wrong = method + "        return tuple(xs)\n"
    function = "def shift(xs, k):\n    return [x + k for x in xs]\n"
    assert [score(code, row)["score"] for code in (right, wrong, function)] == [1.0, 0.0, 0.0]
    with pytest.raises(UserError, match="a functional test, a method of LeetCode's `class Solution`, and no"):
        parse_ground_truth({**row, "metadata": "{}"})
    with pytest.raises(UserError, match="stdin and functional tests mixed"):
        parse_ground_truth({**row, "private_test_cases": LCB[:1]})


def test_prime_code_fn_name_tests_are_calls_of_the_function_kind() -> None:
    truth = {"fn_name": "add", "inputs": ["1\n[2, 3]", '"a"\n["b"]'], "outputs": ["[1, 2, 3]", '["a", "b"]']}
    with pytest.raises(UserError, match="test 0: the output is a list"):  # prime_code also takes its first item
        parse_ground_truth(truth)
    truth = {"fn_name": "count", "inputs": ["1\n[2, 1]", '"a"\n["b"]', '{"k": 1}\nnull'], "outputs": ["1", "0", "{}"]}
    task, _ = parse_ground_truth(truth)
    assert task.kind == get_kind("induction").name and task.entry_point == "count"
    calls = [("(1, [2, 1])", 1), ("('a', ['b'])", 0), ("({'k': 1}, None)", {})]
    assert [(t.input, t.expected) for t in task.tests] == calls
    right = "def count(x, xs):\n    return {} if xs is None else xs.count(x)\n"
    assert score(right, truth)["score"] == 1.0
    assert score("def count(x, xs):\n    return 0\n", truth)["tests_passed"] == 1
    # prime_code calls Solution().count when the answer defines `class Solution`; spade's function kind
    # calls a function the answer defines (docs/training.md)
    method = "class Solution:\n    def count(self, x, xs):\n        return {} if xs is None else xs.count(x)\n"
    assert score(method, truth)["score"] == 0.0


@pytest.mark.parametrize(
    ("truth", "why"),
    [
        ({"fn_name": "f", "inputs": ['{"1": 2}'], "outputs": ["1"]}, "turns this dict's keys into ints"),
        ({"fn_name": "f", "inputs": ["1"], "outputs": ['{"1": 2}']}, "turns this dict's keys into ints"),
        ({"fn_name": "f", "inputs": ["1\n"], "outputs": ["1"]}, "argument line is not one JSON value"),
        ({"fn_name": "f", "inputs": ["NaN"], "outputs": ["1"]}, "argument line is not one JSON value"),
        ({"fn_name": "f", "inputs": ["1e999"], "outputs": ["1"]}, "a number JSON cannot carry"),
        ({"fn_name": "f", "inputs": [[1]], "outputs": ["1"]}, "one JSON value a line"),
        ({"fn_name": "f", "inputs": ["1"], "outputs": ["abc"]}, "the output is not one JSON value"),
        ({"fn_name": "f-1", "inputs": ["1"], "outputs": ["1"]}, "is not a Python name"),
        ({"inputs": ["1"], "outputs": ["1", "2"]}, "two lists of the same length"),
        ({"inputs": [1], "outputs": ["1"]}, "input must be text"),
        ({"inputs": [], "outputs": []}, "without tests"),
        ([{"input": "[1]", "output": "1", "testtype": "functional"}], "a functional test"),
        ({"public_test_cases": "[]", "private_test_cases": "eJzLSM3JyQcABiwCFQ=="}, "decode them into a JSON list"),
        ([{"input": {"stdin": "1"}, "output": {"files": {}}}], "not a SandboxFusion stdin test"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_shapes_without_an_exact_reading_are_refused_saying_why(truth: Any, why: str) -> None:
    with pytest.raises(UserError, match=why):
        parse_ground_truth(truth if isinstance(truth, str) else json.dumps(truth))


# -- the form exports write ----------------------------------------------------------------------------


def test_stdin_tests_are_written_as_the_output_rule_sees_them_and_read_back() -> None:
    tests = [TestCase(input="1\n", expected="1 2  \n3\n\n\n"), TestCase(input="", expected="")]
    truth = field_ground_truth(tests)
    assert truth == {"inputs": ["1\n", ""], "outputs": ["1 2\n3\n", ""]}
    back, _ = parse_ground_truth(truth)
    assert [(t.input, t.expected) for t in back.tests] == [("1\n", "1 2\n3\n"), ("", "")]
    with pytest.raises(UserError, match="test 0 has no expected output text"):
        field_ground_truth([TestCase(input="1\n")])
