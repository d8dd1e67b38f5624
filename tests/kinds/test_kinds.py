"""The deduction and abduction kinds: reading answers, judging them, their gates, the kind mix, and
the fake model's play on them (subprocess sandbox; none of these programs is hostile)."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.checking import CodeChecker
from spade_llm.config import SandboxConfig
from spade_llm.errors import TemplateError, UserError
from spade_llm.fake import bank
from spade_llm.fake.kinds import answer_kind, detect_kind
from spade_llm.fake.model import FakeLLM
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import KIND_NAMES, allocate_kinds, get_kind, normalize_mix
from spade_llm.kinds.abduction import proposals
from spade_llm.kinds.deduction import predictions
from spade_llm.llm.base import LLMRequest
from spade_llm.sandbox.verdict import matches, to_json
from spade_llm.solver import LLMSolver
from spade_llm.templates import Prompts
from spade_llm.types import Attempt, Message, Task, TestCase
from spade_llm.validation import Validator

DEDUCTION = get_kind("deduction")
ABDUCTION = get_kind("abduction")

SORT_CODE = "def f(xs, k):\n    return sorted(xs)[:k]\n"
SORT_TESTS = [
    TestCase(input="([3, 1, 2], 2)", expected=[1, 2]),
    TestCase(input="([5, 4], 1)", expected=[4]),
    TestCase(input="([9, 7, 8], 3)", expected=[7, 8, 9]),
]
COUNT_CODE = "def g(s):\n    return sum(1 for ch in s if ch in 'aeiou')\n"
COUNT_TESTS = [
    TestCase(input="('a',)", expected=1),
    TestCase(input="('banana',)", expected=3),
    TestCase(input="('xyz',)", expected=0),
]


def make_task(kind: str, code: str = SORT_CODE, tests: list[TestCase] | None = None, entry: str = "f") -> Task:
    return Task(
        task_id=f"t-{kind}",
        kind=kind,
        description="A small program.",
        entry_point=entry,
        reference_code=code,
        tests=list(SORT_TESTS if tests is None else tests),
    )


@pytest.fixture(scope="module")
def judge(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=0.5)
    return Judge(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


def statuses(result):
    return [r.status for r in result.test_results]


# -- registry ------------------------------------------------------------------------------------


def test_registry_knows_the_seven_kinds_and_induction_is_unchanged():
    assert KIND_NAMES == (
        "induction",
        "deduction",
        "abduction",
        "program",
        "program_deduction",
        "program_abduction",
        "bugfix",
    )
    induction = get_kind("induction")
    task = make_task("induction")
    assert induction.view(task) == {"entry_class": None}  # a method's class only for LeetCode imports
    assert induction.reference_answer(task) == task.reference_code
    with pytest.raises(UserError, match="known: abduction, bugfix, deduction, induction, program"):
        get_kind("transduction")


# -- deduction: reading and judging --------------------------------------------------------------

RIGHT = "```python\nf([3, 1, 2], 2) == [1, 2]\nf([5, 4], 1) == [4]\nf([9, 7, 8], 3) == [7, 8, 9]\n```"


@pytest.mark.parametrize(
    ("answer", "expected_statuses", "final"),
    [
        (RIGHT, ["passed"] * 3, "passed"),
        # order and spacing do not matter: calls are matched by their arguments; tuples equal lists
        ("f([9,7,8],3) == (7, 8, 9)\nf([3,1,2], 2)==[1,2]\nf([5, 4], 1) == [4]", ["passed"] * 3, "passed"),
        ("Working...\n- f([3, 1, 2], 2) -> [1, 2]\n- f([5, 4], 1) → [4]\nf([9, 7, 8], 3) == [7, 8, 9]", None, "passed"),
        (
            "assert f([3, 1, 2], 2) == [1, 2]\nassert f([5, 4], 1) == [4]\nassert f([9, 7, 8], 3) == [7, 8, 9]",
            None,
            "passed",
        ),
        ("The outputs are:\n[1, 2]\n[4]\n[7, 8, 9]\n", ["passed"] * 3, "passed"),  # bare literals, in order
        (
            "f([3, 1, 2], 2) == [2, 1]\nf([5, 4], 1) == [4]\nf([9, 7, 8], 3) == [7, 8, 9]",
            ["failed", "passed", "passed"],
            "failed",
        ),
        ("f([3, 1, 2], 2) == [1, 2]", ["passed", "error", "error"], "failed"),  # the others missing
        ("f([3, 1, 2], 2) == [1, 2] + x\nf([5, 4], 1) == [4]", ["error", "passed", "error"], "failed"),
        ("[1,", ["error"] * 3, "error"),
        ("", ["error"] * 3, "error"),
        ("I cannot tell.", ["error"] * 3, "error"),
    ],
)
def test_deduction_verdicts(answer, expected_statuses, final):
    task = make_task("deduction")
    result = DEDUCTION.check_answer(None, task, DEDUCTION.parse_answer(answer), None)  # type: ignore[arg-type]
    if expected_statuses is not None:
        assert statuses(result) == expected_statuses
    assert result.tests_total == 3
    assert result.tests_passed == statuses(result).count("passed")
    assert final_status(result) == final
    if final == "error":
        assert result.status == "error" and result.load_error


def test_deduction_types_are_strict():
    task = make_task("deduction", COUNT_CODE, COUNT_TESTS, entry="g")
    answer = "g('a') == True\ng('banana') == 3.0\ng('xyz') == 0"
    result = DEDUCTION.check_answer(None, task, answer, None)  # type: ignore[arg-type]
    assert statuses(result) == ["failed", "failed", "passed"]


def test_deduction_judges_a_subset_and_keeps_indices():
    task = make_task("deduction")
    result = DEDUCTION.check_answer(None, task, RIGHT, [2])  # type: ignore[arg-type]
    assert result.test_results is not None
    assert [r.index for r in result.test_results] == [2]
    assert result.tests_total == 1 and result.all_passed


def test_deduction_reference_answer_passes():
    task = make_task("deduction")
    assert DEDUCTION.check_answer(None, task, DEDUCTION.reference_answer(task), None).all_passed  # type: ignore[arg-type]


@pytest.mark.parametrize("answer", ["[" * 50_000, "f(" * 50_000 + " == 1", "(1,\n" * 20_000, "x" * 200_000, "1" * 5000])
def test_deduction_hostile_answers_are_data_and_fast(answer):
    task = make_task("deduction")
    started = time.process_time()  # CPU time: what a blow-up costs, whatever the machine's load
    result = DEDUCTION.check_answer(None, task, answer, None)  # type: ignore[arg-type]
    assert time.process_time() - started < 5
    assert result.tests_passed == 0


# -- abduction: judging by running the reference --------------------------------------------------

LOOPS_CODE = """\
def h(n):
    while n < 0:
        pass
    if n == 13:
        raise ValueError('unlucky')
    return n % 5
"""
LOOPS_TESTS = [
    TestCase(input="(7,)", expected=2),
    TestCase(input="(3,)", expected=3),
    TestCase(input="(4,)", expected=4),
]


async def test_abduction_any_input_giving_the_output_passes(judge):
    task = make_task("abduction")
    # none of these is the task's own input
    answer = "```python\nf([2, 1, 50], 2) == [1, 2]\nf([4], 1) == [4]\nf([8, 9, 7, 100], 3) == [7, 8, 9]\n```"
    result = ABDUCTION.check_answer(judge, task, ABDUCTION.parse_answer(answer), None)
    assert statuses(result) == ["passed"] * 3 and final_status(result) == "passed"
    assert result.test_results is not None
    assert [r.input for r in result.test_results] == ["([2, 1, 50], 2)", "([4], 1)", "([8, 9, 7, 100], 3)"]


def test_abduction_lines_match_outputs_first_then_order(judge):
    task = make_task("abduction")
    answer = "f([8, 9, 7], 3) == [7, 8, 9]\nf([2, 1], 2)\n(([4, 5], 1))"
    found = proposals(task, answer)
    assert found == {2: ([8, 9, 7], 3), 0: ([2, 1], 2), 1: ([4, 5], 1)}
    assert ABDUCTION.check_answer(judge, task, answer, None).all_passed


def test_abduction_wrong_garbage_raising_and_looping_inputs(judge):
    task = make_task("abduction", LOOPS_CODE, LOOPS_TESTS, entry="h")
    wrong = ABDUCTION.check_answer(judge, task, "h(8) == 2\nh(9) == 3\nh(14) == 4", None)
    assert statuses(wrong) == ["failed", "failed", "passed"]
    assert wrong.test_results is not None
    assert wrong.test_results[0].output == "3"
    garbage = ABDUCTION.check_answer(judge, task, "no idea, sorry", None)
    assert final_status(garbage) == "error" and garbage.load_error
    assert garbage.test_results is not None
    assert all(r.input == "" for r in garbage.test_results)  # the task's own inputs are the answers
    raising = ABDUCTION.check_answer(judge, task, "h(13) == 2\nh(3) == 3\nh(4) == 4", None)
    assert statuses(raising) == ["failed", "passed", "passed"]
    assert raising.test_results is not None
    assert "ValueError" in (raising.test_results[0].error or "")
    looping = ABDUCTION.check_answer(judge, task, "h(-1) == 2\nh(3) == 3\nh(4) == 4", None)
    assert looping.test_results is not None
    assert looping.test_results[0].status == "timeout"
    assert final_status(looping) == "timeout"


def test_abduction_cannot_force_an_output_through_a_default_parameter(judge):
    memo_fib = (
        "def fib(n, memo=None):\n    memo = {} if memo is None else memo\n    if n < 2:\n        return n\n"
        "    if n not in memo:\n        memo[n] = fib(n - 1, memo) + fib(n - 2, memo)\n    return memo[n]\n"
    )
    tests = [
        TestCase(input="(10,)", expected=55),
        TestCase(input="(20,)", expected=6765),
        TestCase(input="(15,)", expected=610),
    ]
    task = make_task("abduction", memo_fib, tests, entry="fib")
    forced = ABDUCTION.check_answer(
        judge, task, "fib(0, {0: 55}) == 55\nfib(0, {0: 6765}) == 6765\nfib(0, {0: 610}) == 610", None
    )
    assert forced.test_results is not None
    assert statuses(forced) == ["failed"] * 3 and "arguments" in (forced.test_results[0].error or "")
    honest = ABDUCTION.check_answer(judge, task, "fib(10) == 55\nfib(20) == 6765\nfib(15) == 610", None)
    assert honest.all_passed


def test_answers_with_ints_too_long_to_print_are_data(judge):
    huge = "0x" + "f" * 5000
    for kind in (DEDUCTION, ABDUCTION):
        task = make_task(kind.name)
        for answer in (f"f({huge}) == 3", f"f([1], 1) == {huge}", huge):
            result = kind.check_answer(judge, task, answer, None)
            assert final_status(result) in ("failed", "error")


def test_overflowing_kind_weights_still_allocate():
    assert (
        sorted(allocate_kinds({"induction": 1e308, "deduction": 1e308}, 4, 0, 0))
        == ["deduction"] * 2 + ["induction"] * 2
    )


def test_abduction_reference_answer_passes(judge):
    task = make_task("abduction")
    assert ABDUCTION.check_answer(judge, task, ABDUCTION.reference_answer(task), None).all_passed


# -- gates ---------------------------------------------------------------------------------------


def unfilled(tests: list[TestCase]) -> list[TestCase]:
    return [TestCase(input=t.input) for t in tests]


@pytest.mark.parametrize("kind", ["deduction", "abduction"])
def test_good_tasks_pass_the_gates_with_expected_filled(validator, kind):
    task = make_task(kind, tests=unfilled(SORT_TESTS))
    report = get_kind(kind).gates(validator, task)
    assert report.valid, report.detail
    assert report.task is not None and [t.expected for t in report.task.tests] == [[1, 2], [4], [7, 8, 9]]


@pytest.mark.parametrize(
    ("kind", "code", "reason", "detail"),
    [
        ("deduction", "def f(xs, k):\n    return 7\n", "weak_tests", "same output"),
        ("deduction", "def f(xs, k):\n    return xs\n", "weak_tests", "first argument"),
        ("deduction", "def f(xs, k):\n    return list(range(k * 100))\n", "weak_tests", "characters long"),
        ("deduction", "def f(xs, k)\n    return xs\n", "syntax_error", ""),
        ("abduction", "def f(xs, k):\n    return 'same'\n", "weak_tests", "same output"),
        ("abduction", "def f(xs, k=0):\n    return sorted(xs)\n", "weak_tests", "argument unchanged"),
        ("abduction", "def f(xs, k):\n    return xs[k]\n", "runtime_error", ""),
    ],
)
def test_bad_tasks_fail_the_gates(validator, kind, code, reason, detail):
    report = get_kind(kind).gates(validator, make_task(kind, code, unfilled(SORT_TESTS)))
    assert report.reason == reason and not report.valid
    assert detail in report.detail


def test_gates_skip_the_induction_test_strength_gate_when_validate_can(validator):
    """With a ``test_strength`` flag, validate is asked to skip it; without, its weak_tests is overridden."""
    seen = []

    class Flagged:
        judge = validator.judge

        def validate(self, task, *, test_strength=True):
            seen.append(test_strength)
            return validator.validate(task)

    task = make_task("deduction", tests=unfilled(SORT_TESTS))
    assert DEDUCTION.gates(Flagged(), task).valid  # type: ignore[arg-type]
    assert seen == [False]


def test_too_few_queries_is_too_few_tests(validator):
    report = DEDUCTION.gates(validator, make_task("deduction", tests=unfilled(SORT_TESTS[:2])))
    assert report.reason == "too_few_tests"


# -- prompts: public information only -------------------------------------------------------------


def render_first(task: Task) -> str:
    kind = get_kind(task.kind)
    view = {"description": task.description, "entry_point": task.entry_point, "difficulty": 0.5, "tags": []}
    return Prompts().render(kind.first_template, task=view, public_tests=[], **kind.view(task))


SECRET_TESTS = [
    TestCase(input="('zebra',)", expected="ZEBRA-42"),
    TestCase(input="('yak',)", expected="YAK-42"),
    TestCase(input="('ox',)", expected="OX-42"),
]
SECRET_CODE = "def s(w):\n    return w.upper() + '-42'\n"


def test_first_prompts_show_the_program_and_queries_but_never_the_answers():
    deduction = make_task("deduction", SECRET_CODE, SECRET_TESTS, entry="s")
    text = render_first(deduction)
    assert text.startswith("Predict the output") and "def s(w):" in text
    assert "s('zebra') == ?" in text and "ZEBRA-42" not in text
    abduction = deduction.model_copy(update={"kind": "abduction"})
    text = render_first(abduction)
    assert text.startswith("Find an input") and "s(?) == 'ZEBRA-42'" in text and "zebra" not in text


async def test_repair_prompts_never_reveal_expected_values_or_inputs(judge):
    deduction = make_task("deduction", SECRET_CODE, SECRET_TESTS, entry="s")
    solver = LLMSolver(FunctionLLM(lambda r: ""), Prompts(), None, seed=0, max_turns=3, public_tests=1,  # type: ignore[arg-type]
                       temperature=0.0, max_tokens=100)  # fmt: skip
    answer = "s('zebra') == 'ZEBRA-41'\ns('yak') == 'YAK-42'\ns('ox') == 'OX-42'"
    result = DEDUCTION.check_answer(judge, deduction, answer, [0])
    text = solver.repair_message(deduction, Attempt(turn=1, code=answer, result=result), result).content
    assert text.startswith("Predict the output") and "ZEBRA-41" in text and "ZEBRA-42" not in text
    abduction = deduction.model_copy(update={"kind": "abduction"})
    for answer in ("s('cat') == 'ZEBRA-42'", "gibberish"):
        result = ABDUCTION.check_answer(judge, abduction, answer, [0])
        text = solver.repair_message(abduction, Attempt(turn=1, code=answer, result=result), result).content
        assert text.startswith("Find an input") and "zebra" not in text
        assert answer != "s('cat') == 'ZEBRA-42'" or "CAT-42" in text  # what its own input gave


# -- the kind mix ----------------------------------------------------------------------------------


def test_allocate_kinds_examples():
    mix = {"induction": 0.6, "deduction": 0.2, "abduction": 0.2}
    counts = Counter(allocate_kinds(mix, 16, epoch=0, seed=0))
    assert counts == {"induction": 10, "deduction": 3, "abduction": 3}
    assert allocate_kinds(["induction"], 5, 0, 0) == ["induction"] * 5
    assert Counter(allocate_kinds(["induction", "deduction"], 4, 0, 0)) == {"induction": 2, "deduction": 2}
    assert Counter(allocate_kinds({"induction": 0.98, "deduction": 0.01, "abduction": 0.01}, 3, 0, 0)) == {
        "induction": 1,
        "deduction": 1,
        "abduction": 1,
    }
    assert allocate_kinds(mix, 0, 0, 0) == []
    bad: dict[str, float] | list[str]
    for bad in ({"induction": -1.0}, {"induction": 0.0}, {"induction": float("nan")}, []):
        with pytest.raises(ValueError):
            allocate_kinds(bad, 3, 0, 0)


def test_allocate_kinds_takes_turns_when_requests_are_fewer_than_kinds():
    mix = {"induction": 1.0, "deduction": 1.0, "abduction": 1.0}
    seen = {k for epoch in range(12) for k in allocate_kinds(mix, 1, epoch, seed=3)}
    assert seen == set(mix)


weights = st.dictionaries(
    st.sampled_from(KIND_NAMES), st.floats(min_value=0.0, max_value=10.0, allow_nan=False), min_size=1
).filter(lambda m: sum(m.values()) > 0)


@settings(max_examples=300, deadline=None)
@given(mix=weights, n=st.integers(0, 80), epoch=st.integers(0, 50), seed=st.integers(0, 2**32))
def test_allocate_kinds_properties(mix, n, epoch, seed):
    kinds = allocate_kinds(mix, n, epoch, seed)
    assert kinds == allocate_kinds(dict(mix), n, epoch, seed)  # deterministic
    assert len(kinds) == n
    live = [k for k, w in normalize_mix(mix).items() if w > 0]
    counts = Counter(kinds)
    assert set(counts) <= set(live)
    if n >= len(live):
        assert set(counts) == set(live)
    total = sum(mix[k] for k in live)
    quotas = {k: mix[k] * n / total for k in live}
    if all(q >= 1 for q in quotas.values()):
        assert all(abs(counts[k] - quotas[k]) < 1 + 1e-9 for k in live)
    else:
        assert all(abs(counts[k] - quotas[k]) < len(live) for k in live)


# -- the fake model ---------------------------------------------------------------------------------


def bank_task(kind: str, variant: bank.Variant, seed: int) -> Task:
    built = bank.build_task(variant, random.Random(seed), variant.difficulty)
    tests = [
        TestCase(input=repr(tuple(a)), expected=to_json(o)) for a, o in zip(built.inputs, built.outputs, strict=True)
    ]
    return Task(
        task_id=f"{kind}-{seed}",
        kind=kind,
        description=built.description,
        entry_point=built.entry_point,
        reference_code=built.reference_code,
        tests=tests,
        difficulty=built.difficulty,
    )


def first_request(task: Task, seed: int) -> LLMRequest:
    messages = [Message(role="system", content="system"), Message(role="user", content=render_first(task))]
    return LLMRequest(messages=messages, role="solver", seed=seed)


def in_process_verdicts(task: Task, answer: str) -> list[bool]:
    """Each query right or not, judged with the bank's trusted reference in-process (fast)."""
    if task.kind == "deduction":
        found = predictions(task, answer)
        assert not isinstance(found, str)
        return [
            i in found and found[i].has_value and matches(found[i].value, t.expected) for i, t in enumerate(task.tests)
        ]
    inputs = proposals(task, answer)
    assert not isinstance(inputs, str)
    outcomes = bank.run_in_process(
        task.reference_code, task.entry_point, [inputs.get(i, ()) for i in range(len(task.tests))], 1.0
    )
    return [
        i in inputs and o.ok and matches(o.value, t.expected)
        for i, (o, t) in enumerate(zip(outcomes, task.tests, strict=True))
    ]


FAKE_VARIANTS = bank.VARIANTS[::3]


@pytest.mark.parametrize("kind", ["deduction", "abduction"])
def test_fake_is_right_when_strong_and_wrong_when_weak(kind):
    rates = {}
    for profile in ("strong-solver", "weak-solver"):
        fake = FakeLLM(profile)
        whole, queries = [], []
        for i, variant in enumerate(FAKE_VARIANTS):
            task = bank_task(kind, variant, i)
            request = first_request(task, seed=i)
            assert detect_kind(request.messages) == kind
            answer = answer_kind(fake, request)
            assert answer is not None and answer == answer_kind(fake, request)  # deterministic
            verdicts = in_process_verdicts(task, answer)
            whole.append(all(verdicts))
            queries.extend(verdicts)
        rates[profile] = (sum(whole) / len(whole), sum(queries) / len(queries))
    strong, weak = rates["strong-solver"], rates["weak-solver"]
    if kind == "deduction":
        assert strong[0] >= 0.9 and weak[0] <= 0.2, rates
    else:  # an output the fake's search never meets cannot be answered: judged per query
        assert strong[1] >= 0.75 and weak[1] <= 0.45, rates
    assert weak[1] < strong[1] - 0.3, rates


def test_fake_answers_other_prompts_with_none():
    request = LLMRequest(messages=[Message(role="user", content="Write a function `f(x)`.")], role="solver", seed=1)
    assert detect_kind(request.messages) is None
    assert answer_kind(FakeLLM("default"), request) is None


def test_fake_repair_turn_keeps_a_right_answer_and_differs_by_seed():
    task = bank_task("deduction", FAKE_VARIANTS[0], 0)
    strong = FakeLLM("strong-solver")
    first = first_request(task, seed=5)
    answer = answer_kind(strong, first)
    assert answer is not None and all(in_process_verdicts(task, answer))
    repair = LLMRequest(
        messages=[
            *first.messages,
            Message(role="assistant", content=answer),
            Message(role="user", content="Predict the output: wrong"),
        ],
        role="solver",
        seed=6,
    )
    assert answer_kind(strong, repair) is not None and all(in_process_verdicts(task, answer_kind(strong, repair) or ""))
    weak = FakeLLM("weak-solver")
    answers = {answer_kind(weak, first_request(task, seed=s)) for s in range(8)}
    assert len(answers) > 1


# -- end to end through the solver (once it passes the kind's view to the templates) -----------------


def _solver_passes_view() -> bool:
    task = make_task("deduction")
    solver = LLMSolver(FunctionLLM(lambda r: ""), Prompts(), None, seed=0, max_turns=1, public_tests=1,  # type: ignore[arg-type]
                       temperature=0.0, max_tokens=10)  # fmt: skip
    try:
        solver.first_messages(task)
    except TemplateError:
        return False
    return True


@pytest.mark.skipif(not _solver_passes_view(), reason="solver.py does not pass TaskKind.view to the templates yet")
@pytest.mark.parametrize("kind", ["deduction", "abduction"])
async def test_episodes_of_each_kind_with_the_fake(sandbox, kind):
    fake = FakeLLM("strong-solver")
    llm = FunctionLLM(lambda request: answer_kind(fake, request) or "")
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess", timeout_s=5), concurrency=1)
    solver = LLMSolver(
        llm, Prompts(), checker.check_answer, seed=0, max_turns=2, public_tests=1, temperature=0.0, max_tokens=100
    )
    task = bank_task(kind, FAKE_VARIANTS[1], 1)
    trajectory = await solver.solve(task, epoch=0)
    assert trajectory.kind == kind and trajectory.attempts
    assert trajectory.final_status in ("passed", "failed")
