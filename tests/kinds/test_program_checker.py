"""Checker programs for ``program`` tasks where several outputs are right: the gates that prove a checker,
judging by it (the judge, spade's reward), and a checker that gets the answer's output only as data.

The task: print the 1-based position of any largest of n integers. The reference prints the first; a
solution printing the last is right too, and only the checker can say so. Every program here is
benign (parsing, prints, a loop that spins), run in the subprocess sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from builders import ARGMAX, ARGMAX_CASES, ARGMAX_CHECKER, ARGMAX_LAST, ARGMIN, argmax_task

from spade_llm.config import SandboxConfig
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind, run_gates
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder, compute_score, parse_ground_truth
from spade_llm.rewards.groundtruth import (
    LEFT_OUT_CHECKER,
    ground_truth,
    sandbox_fusion_form,
    sandbox_fusion_ground_truth,
)
from spade_llm.sandbox.base import Limits
from spade_llm.sandbox.stdio import checker_stdin, run_checker
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator

PROGRAM = get_kind("program")
INPUTS = [i for i, _ in ARGMAX_CASES]


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def judge(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Judge(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def checked(validator) -> Task:
    report = run_gates(validator, argmax_task())
    assert report.valid and report.task is not None, report.detail
    return report.task


# -- gates ---------------------------------------------------------------------------------------------


def test_a_checker_task_passes_its_gates_and_keeps_its_checker(checked: Task) -> None:
    assert checked.checker == ARGMAX_CHECKER
    assert [t.expected for t in checked.tests] == ["2\n", "1\n", "1\n", "3\n", "2\n"]  # the reference's: one right
    assert Task.model_validate(checked.dump()).checker == ARGMAX_CHECKER
    assert "checker" not in argmax_task(checker=None).dump()  # unset: left out of the record


def test_without_its_checker_a_second_right_reference_is_nondeterministic_and_with_it_is_not(validator) -> None:
    # a reference printing the first or the last largest position, by its hash seed: both are right
    either = (
        "import os\n"
        "n = int(input())\n"
        "xs = list(map(int, input().split()))[:n]\n"
        "first, last = xs.index(max(xs)) + 1, n - xs[::-1].index(max(xs))\n"
        "print(first if os.environ.get('PYTHONHASHSEED') == '0' else last)\n"
    )
    assert run_gates(validator, argmax_task(reference_code=either, checker=None)).reason == "nondeterministic"
    # the mutant gate is off here: no test can pin the `last` branch, which only another hash seed takes
    no_mutants = Validator(validator.sandbox, validator.limits, validator.test_timeout_s, min_kill_rate=0)
    report = run_gates(no_mutants, argmax_task(reference_code=either))
    assert report.valid, report.detail


def test_an_author_given_expected_may_be_another_right_output(validator) -> None:
    tests = [TestCase(input=i) for i in INPUTS]
    tests[3] = TestCase(input=INPUTS[3], expected="5\n")  # 9 is at 3 and 5: the reference prints 3
    report = run_gates(validator, argmax_task(tests=tests))
    assert report.valid and report.task is not None, report.detail
    assert report.task.tests[3].expected == "3\n"  # the reference's output is what the checker is given
    wrong = [*tests[:3], TestCase(input=INPUTS[3], expected="2\n"), tests[4]]  # 2 holds a 2
    assert run_gates(validator, argmax_task(tests=wrong)).reason == "expected_mismatch"


SPIN = "while True:\n    pass\n"
CHECKER_TRAPS: dict[str, tuple[dict[str, Any], str]] = {
    "syntax_error": ({"checker": "import json\nprint(\n"}, "the checker"),
    "bad_checker": ({"checker": ARGMAX_CHECKER.replace("max(xs)", "min(xs)")}, "reference's own output"),
    "weak_checker": ({"checker": "import sys\nsys.stdin.read()\n"}, "accepts a program that prints nothing"),
}
BAD_CHECKERS = {
    "rejects": ARGMAX_CHECKER.replace("max(xs)", "min(xs)"),
    "crashes": "import json, sys\njson.load(sys.stdin)\nraise ValueError('no')\n",
    "loops": "import json, sys\njson.load(sys.stdin)\n" + SPIN,
    "rejects everything": "import sys\nsys.stdin.read()\nsys.exit(2)\n",
}


@pytest.mark.parametrize("reason", list(CHECKER_TRAPS))
def test_a_checker_that_cannot_be_trusted_is_rejected_for_its_own_reason(validator, reason: str) -> None:
    fields, said = CHECKER_TRAPS[reason]
    report = run_gates(validator, argmax_task(**fields))
    assert (report.valid, report.reason) == (False, reason) and said in report.detail, report.detail


@pytest.mark.parametrize("how", list(BAD_CHECKERS))
def test_a_checker_that_rejects_crashes_or_loops_on_the_references_output_is_a_bad_checker(validator, how: str) -> None:
    report = run_gates(validator, argmax_task(checker=BAD_CHECKERS[how]))
    assert (report.valid, report.reason) == (False, "bad_checker"), report.detail
    assert report.detail.startswith("test 0: on the reference's own output '2\\n'")
    if how == "loops":
        assert "ran out of its 2 s" in report.detail


def test_each_stand_in_must_be_rejected_on_some_test(validator) -> None:
    # a checker that takes any single number: the stand-in always printing the most common output passes it
    lenient = "import json, sys\ntokens = json.load(sys.stdin)['actual'].split()\n"
    lenient += "assert len(tokens) == 1\nint(tokens[0])\n"
    report = run_gates(validator, argmax_task(checker=lenient))
    assert report.reason == "weak_checker"
    assert report.detail == "the checker accepts a program that always prints '2' on every test"
    # one that also takes the input echoed back (anything that starts with a number) lets the echo pass
    echo = "import json, sys\nint(json.load(sys.stdin)['actual'].split()[0])\n"
    assert "prints its input back" in run_gates(validator, argmax_task(checker=echo)).detail
    # the tests themselves weak: every right answer is 1, whatever checker judges them
    ones = ["1\n5\n", "2\n3 1\n", "3\n9 9 1\n"]
    assert run_gates(validator, argmax_task(tests=[TestCase(input=i) for i in ones])).reason == "weak_tests"


def test_a_banned_import_in_the_checker_is_rejected(sandbox) -> None:
    strict = Validator(sandbox, Limits(timeout_s=5), 1.0, banned_imports=frozenset({"socket"}))
    report = run_gates(strict, argmax_task(checker="import socket\n" + ARGMAX_CHECKER))
    assert (report.reason, report.detail.startswith("the checker")) == ("banned_import", True), report.detail


# -- judging -------------------------------------------------------------------------------------------


def test_another_right_output_passes_and_a_wrong_one_fails(checked: Task, judge) -> None:
    last = PROGRAM.check_answer(judge, checked, ARGMAX_LAST, None)
    assert final_status(last) == "passed", last.test_results
    wrong = PROGRAM.check_answer(judge, checked, ARGMIN, None)
    assert [r.status for r in wrong.test_results or []] == ["failed", "passed", "passed", "failed", "failed"]
    assert "the task's checker rejected this output (exit code 1: AssertionError: position 1 does not" in str(
        (wrong.test_results or [])[0].error
    )
    # without the checker the output rule would fail the right answer wherever it picks another position
    plain = PROGRAM.check_answer(judge, checked.model_copy(update={"checker": None}), ARGMAX_LAST, None)
    assert [r.status for r in plain.test_results or []] == ["failed", "passed", "failed", "failed", "passed"]


def test_the_answers_own_limits_still_decide_before_the_checker(checked: Task, judge) -> None:
    crash = PROGRAM.check_answer(judge, checked, "print(2)\nraise SystemExit(1)\n", [0])
    assert [r.status for r in crash.test_results or []] == ["error"]  # printed a right answer, then exit 1
    slow = PROGRAM.check_answer(judge, checked, SPIN, [0])
    assert final_status(slow) == "timeout"


HOSTILE = {
    # another field written into the output: were it pasted into the JSON, the last "actual" would win
    "json fields": 'print(\'junk", "actual": "2\\n\')\n',
    "a whole object": 'print(json.dumps({"input": "1\\n7\\n", "expected": "1\\n", "actual": "1\\n"}))\n',
    "NULs": "sys.stdout.write('2\\x00\\n')\n",
    "a closing brace and newlines": 'print(\'2"}\\n\\n{"actual": "2"}\')\n',
    "bytes that are no UTF-8": "sys.stdout.buffer.write(b'2\\xff\\xfe\\n')\n",
    "a flood past the output limit": "sys.stdout.write('2\\n' * 2_000_000)\n",
    "just under the limit": "sys.stdout.write('2' + ' ' * 900_000 + '\\n')\n",
}


@pytest.mark.parametrize("how", list(HOSTILE))
def test_the_answers_output_reaches_the_checker_only_as_data(checked: Task, judge, how: str) -> None:
    """A checker that accepts exactly the expected text: an output that tried to pass itself off as another
    field of the checker's JSON, or to break it, is one string value, and is rejected (but the last case:
    trailing spaces are the checker's to judge, and this one strips them)."""
    exact = "import json, sys\ndata = json.load(sys.stdin)\n"
    exact += "sys.exit(0 if data['actual'].strip() == data['expected'].strip() else 1)\n"
    task = checked.model_copy(update={"checker": exact})
    result = PROGRAM.check_answer(judge, task, "import json, sys\n" + HOSTILE[how], [0])
    (verdict,) = result.test_results or []
    if how == "just under the limit":
        assert verdict.status == "passed", verdict.error
    elif how == "a flood past the output limit":  # stopped at the limit: never handed to the checker
        assert verdict.status == "error" and "output limit exceeded" in str(verdict.error)
    else:
        assert verdict.status == "failed" and "the task's checker rejected" in str(verdict.error), verdict


@pytest.mark.parametrize(
    "actual", ['2", "actual": "1', "\x00\x01\x1f", "\udcff\ud800", '{"input": 1}', "\\u0022", "é" * 10, ""]
)
def test_the_checkers_stdin_is_one_json_object_holding_the_three_texts_as_they_are(actual: str) -> None:
    text = checker_stdin("3\n1 3 3\n", "2\n", actual)
    assert text.isascii() and "\x00" not in text
    assert json.loads(text) == {"input": "3\n1 3 3\n", "expected": "2\n", "actual": actual}


def test_the_checker_reads_what_the_answer_printed_byte_for_byte(sandbox) -> None:
    echo = "import json, sys\nsys.stdout.write(repr(json.load(sys.stdin)['actual']))\n"
    printed = 'a", "actual": "b\x00\n\\n}'
    run = run_checker(sandbox, echo, "1\n", "1\n", printed, Limits(timeout_s=5))
    assert run.return_code == 0 and run.stdout == repr(printed)


# -- the solver's prompts ------------------------------------------------------------------------------


def test_the_prompts_say_any_right_output_is_accepted_and_that_the_checker_rejected(checked: Task, judge) -> None:
    from spade_llm.fake.scripted import FunctionLLM
    from spade_llm.solver import LLMSolver, first_messages
    from spade_llm.types import Attempt, ExecutionResult

    prompts = Prompts()
    first = first_messages(prompts, checked, 1)[-1].content
    assert "any correct output is accepted" in first
    plain = first_messages(prompts, checked.model_copy(update={"checker": None}), 1)[-1].content
    assert "any correct output" not in plain
    public = PROGRAM.check_answer(judge, checked, ARGMIN, [0])

    async def unused(
        task: Task, code: str, tests: Sequence[int] | None, *, language: str = "python"
    ) -> ExecutionResult:
        raise AssertionError("only the repair prompt is built here")

    solver = LLMSolver(
        FunctionLLM(lambda request: ""), prompts, unused, seed=0, max_turns=2, public_tests=1, temperature=0.0,
        max_tokens=10,
    )  # fmt: skip
    attempt = Attempt(turn=1, code=ARGMIN, result=public)
    repair = solver.repair_message(checked, attempt, public).content
    assert "one right output" in repair and "Expected output" in repair and "\n2\n" in repair
    assert "It failed: the task's checker rejected this output (exit code 1: AssertionError: position 1" in repair
    assert "after printing:\n```\n1\n```" in repair
    line = PROGRAM.feedback_line(checked, checked.tests[0], (public.test_results or [])[0])
    assert line.startswith("- FAIL input '3\\n1 3 3': printed '1\\n'; the task's checker rejected this output")


# -- rewards ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rewarder() -> Iterator[Rewarder]:
    rewarder = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, rewarder
    yield rewarder
    rewards._default = saved
    rewarder.close()


def test_the_ground_truth_carries_the_checker_and_the_reward_judges_by_it(checked: Task, rewarder) -> None:
    truth = ground_truth(checked, 1)
    assert truth["checker"] == ARGMAX_CHECKER and parse_ground_truth(json.dumps(truth))[0].checker == ARGMAX_CHECKER
    text = json.dumps(truth)

    def block(code: str) -> str:
        return f"```python\n{code}```"

    assert compute_score("spade_llm", block(ARGMAX_LAST), text)["score"] == 1.0
    assert compute_score("spade_llm", block(ARGMAX), text)["score"] == 1.0
    wrong = compute_score("spade_llm", block(ARGMIN), text)
    assert (wrong["score"], wrong["tests_passed"]) == (0.0, 2)


def test_verls_judges_cannot_run_a_checker_so_its_tasks_are_left_out_for_them(checked: Task) -> None:
    form = sandbox_fusion_form(checked)
    assert (form.truth, form.reason) == (None, LEFT_OUT_CHECKER)
    assert sandbox_fusion_ground_truth(checked) is None


def test_the_generators_parser_keeps_a_program_tasks_checker_and_drops_one_on_another_kind() -> None:
    from spade_llm.generator import parse_task

    item = {**argmax_task().dump(), "input_validator": "import sys\n"}
    task = parse_task(item, task_id="t", epoch=0, target=0.5, kind="program")
    assert (task.checker, task.input_validator) == (ARGMAX_CHECKER, "import sys\n")
    function = {**item, "entry_point": "f", "reference_code": "def f(x):\n    return x\n", "tests": [{"input": "(1,)"}]}
    other = parse_task(function, task_id="t", epoch=0, target=0.5, kind="induction")
    assert (other.checker, other.input_validator) == (None, None)  # no gate of its kind would prove them
    # a query over a program keeps its validator (its gates check the queries' inputs with it), no checker
    query = parse_task(item, task_id="t", epoch=0, target=0.5, kind="program_abduction")
    assert (query.checker, query.input_validator, query.input_generator) == (None, "import sys\n", None)
