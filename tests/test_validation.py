"""Every validity gate of SPEC, in order, on the subprocess sandbox (none of these programs is hostile)."""

import pytest

from spade_llm.config import SandboxConfig
from spade_llm.languages.python import defines_name
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator


def task(code, tests=None, entry="f", **kw):
    tests = tests if tests is not None else [TestCase(input=f"({i},)") for i in (1, 2, 5, 7)]
    return Task(task_id="t", description="d", entry_point=entry, reference_code=code, tests=tests, **kw)


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=4, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


GOOD = "def f(x):\n    return x * 2 + 1\n"


@pytest.mark.parametrize(
    ("code", "tests", "reason"),
    [
        ("def f(x)\n    return x\n", None, "syntax_error"),
        ("def g(x):\n    return x\n", None, "missing_entry_point"),
        (GOOD, [TestCase(input="1"), TestCase(input="(2,)"), TestCase(input="(3,)")], "bad_input"),
        (GOOD, [TestCase(input="(__import__('os'),)"), TestCase(input="(2,)"), TestCase(input="(3,)")], "bad_input"),
        (GOOD, [TestCase(input="(1,)"), TestCase(input="(2,)")], "too_few_tests"),
        ("def f(x):\n    while True:\n        pass\n", None, "timeout"),
        ("def f(x):\n    return 10 // (x - 5)\n", None, "runtime_error"),
        ("import random\ndef f(x):\n    return x + random.random()\n", None, "nondeterministic"),
        ("def f(x):\n    return list({str(i) for i in range(x + 5)})\n", None, "nondeterministic"),
        (
            GOOD,
            [TestCase(input="(1,)", expected=3), TestCase(input="(2,)", expected=6), TestCase(input="(3,)")],
            "expected_mismatch",
        ),
        ("def f(x):\n    return None\n", None, "weak_tests"),
        ("def f(x):\n    return x\n", None, "weak_tests"),
        ("def f(x):\n    return 0 if x < 100 else 1\n", None, "weak_tests"),
        (GOOD, None, None),
    ],
)
def test_gates_in_spec_order(validator, code, tests, reason):
    report = validator.validate(task(code, tests))
    assert report.reason == reason, report.detail
    assert report.valid == (reason is None)
    row = report.row()
    assert set(row) >= {"task_id", "valid", "reason", "status", "tests_passed", "tests_total"}


def test_valid_task_gets_expected_values_from_reference(validator):
    report = validator.validate(task(GOOD))
    assert report.status == "passed" and report.tests_passed == report.tests_total == 4
    assert [t.expected for t in report.task.tests] == [3, 5, 11, 15]


def test_reference_runs_even_when_an_earlier_gate_fails(validator):
    report = validator.validate(task(GOOD, [TestCase(input="(1,)"), TestCase(input="(2,)")]))
    assert report.reason == "too_few_tests" and report.status == "passed" and report.tests_passed == 2


def test_reward_hack_reference_gets_no_passes(validator):
    hack = "import os\nos._exit(0)\ndef f(x):\n    return x\n"
    tests = [
        TestCase(input="(1,)", expected=3),
        TestCase(input="(2,)", expected=5),
        TestCase(input="(5,)", expected=11),
    ]
    report = validator.validate(task(hack, tests))
    assert not report.valid and report.tests_passed == 0 and report.status != "passed"


def test_defines_name_sees_defs_assignments_imports_and_branches():
    import ast

    for code in [
        "def f(): pass",
        "f = lambda: 1",
        "from math import sqrt as f",
        "if True:\n    def f(): pass",
        "class f: pass",
        "try:\n    f = 1\nexcept Exception:\n    pass",
    ]:
        assert defines_name(ast.parse(code), "f"), code
    assert not defines_name(ast.parse("def g():\n    def f(): pass"), "f")


def given(*pairs):
    return [TestCase(input=i, expected=e) for i, e in pairs]


RAISES_AT_5 = "def f(x):\n    return 10 // (x - 5)\n"
RAISES_THEN_LOOPS = (
    "def f(x):\n    if x == 5:\n        raise ValueError(x)\n    while x == 7:\n        pass\n    return x\n"
)
RAISES_AND_RANDOM = "import random\ndef f(x):\n    return 10 // (x - 5) + random.random()\n"
LOOPS_FOREVER = "def f(x):\n    while True:\n        pass\n"


@pytest.mark.parametrize(
    ("code", "tests", "reason"),
    [
        # each task also fails every later gate it can reach: only the order decides its reason
        ("def g(x)\n    return x\n", [TestCase(input="1")], "syntax_error"),
        ("def g(x):\n    while True:\n        pass\n", [TestCase(input="1")], "missing_entry_point"),
        (LOOPS_FOREVER, [TestCase(input="1"), TestCase(input="(2,)")], "bad_input"),
        (LOOPS_FOREVER, [TestCase(input="(1,)"), TestCase(input="(2,)")], "too_few_tests"),
        (RAISES_THEN_LOOPS, given(("(5,)", 1), ("(7,)", 7), ("(1,)", 1)), "timeout"),
        (RAISES_THEN_LOOPS, None, "timeout"),
        (RAISES_AT_5, given(("(1,)", -3), ("(5,)", 0), ("(7,)", 5)), "runtime_error"),
        (RAISES_AT_5, None, "runtime_error"),
        (RAISES_AND_RANDOM, given(("(1,)", -3), ("(5,)", 0), ("(7,)", 5)), "runtime_error"),
        (RAISES_AND_RANDOM, None, "runtime_error"),
        (
            "import random\ndef f(x):\n    return x + random.random()\n",
            given(("(1,)", 9), ("(2,)", 9), ("(3,)", 9)),
            "nondeterministic",
        ),
        ("def f(x):\n    return None\n", given(("(1,)", 1), ("(2,)", None), ("(3,)", None)), "expected_mismatch"),
        (
            "def f(x):\n    return float('nan')\n",
            given(("(1,)", 1.0), ("(2,)", 2.0), ("(3,)", 3.0)),
            "expected_mismatch",
        ),
        ("def f(x):\n    return None\n", given(("(1,)", None), ("(2,)", None), ("(3,)", None)), "weak_tests"),
    ],
)
def test_each_reason_wins_over_the_later_ones(validator, code, tests, reason):
    report = validator.validate(task(code, tests))
    assert report.reason == reason, report.detail


def test_reference_raising_where_expected_is_given_is_a_runtime_error(validator):
    report = validator.validate(task(RAISES_AT_5, given(("(1,)", -3), ("(5,)", 0), ("(7,)", 5))))
    assert report.reason == "runtime_error" and "ZeroDivisionError" in report.detail and "test 1" in report.detail
    assert report.status == "failed" and report.tests_passed == 2 and report.tests_total == 3


def test_status_is_the_judges_final_status(validator):
    assert validator.validate(task("def f(x):\n    return x +\n")).status == "error"
    assert validator.validate(task("raise RuntimeError('import')\ndef f(x):\n    return x\n")).status == "error"
    assert validator.validate(task(RAISES_THEN_LOOPS)).status == "timeout"
    wrong = validator.validate(task(GOOD, given(("(1,)", 4), ("(2,)", 5), ("(3,)", 7))))
    assert wrong.reason == "expected_mismatch" and wrong.status == "failed" and wrong.tests_passed == 2


def test_a_tests_own_rule_is_the_one_the_reference_must_pass(validator):
    """A task file's test compared by Python's ``==`` (``python_eq``) is validated by it too: a reference
    returning the list where the test wants the tuple does not pass, one returning floats for ints does."""
    pairs = [(x, [x, x + 1]) for x in (1, 2, 3)]
    tests = [TestCase(input=f"({x},)", expected=e, python_eq=repr(tuple(e))) for x, e in pairs]
    wrong = validator.validate(task("def f(x):\n    return [x, x + 1]\n", tests))
    assert wrong.reason == "expected_mismatch" and wrong.tests_passed == 0
    right = validator.validate(task("def f(x):\n    return (x * 1.0, x + 1.0)\n", tests))
    assert right.valid, right.detail


def test_reference_runs_on_every_test_however_many_time_out(validator):
    code = "def f(x):\n    while x < 3:\n        pass\n    return x * 2 + 1\n"
    tests = given(("(0,)", 1), ("(1,)", 3), ("(2,)", 5), ("(3,)", 7), ("(4,)", 9))
    report = validator.validate(task(code, tests))
    assert report.reason == "timeout" and report.status == "timeout" and report.tests_passed == 2


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("(" + "1," * 60_000 + ")", "longer than"),
        ("(" + "[" * 150 + "]" * 150 + ",)", "nested deeper"),
        ("[1]", "not a tuple"),
        ("(x,)", "not a Python literal"),
    ],
)
def test_bad_inputs_say_why(validator, text, fragment):
    tests = [TestCase(input=text), TestCase(input="(2,)"), TestCase(input="(3,)")]
    report = validator.validate(task(GOOD, tests))
    assert report.reason == "bad_input" and fragment in report.detail


BANNED = frozenset({"random", "time", "os", "subprocess"})


@pytest.mark.parametrize(
    "code",
    [
        "import random\ndef f(x):\n    return x * 2 + 1\n",
        "import os.path as p\ndef f(x):\n    return x * 2 + 1\n",
        "from time import sleep\ndef f(x):\n    return x * 2 + 1\n",
        "def f(x):\n    __import__('subprocess')\n    return x * 2 + 1\n",
        "import importlib\ndef f(x):\n    importlib.import_module('random')\n    return x * 2 + 1\n",
    ],
)
def test_banned_imports_are_rejected_when_configured(validator, code):
    strict = Validator(validator.sandbox, validator.limits, validator.test_timeout_s, BANNED)
    report = strict.validate(task(code))
    assert report.reason == "banned_import" and "validation.banned_imports" in report.detail
    assert report.status == "passed"  # the reference still ran on its tests, as for every static reason
    assert validator.validate(task(code)).valid  # off by default: the same task is fine


def test_allowed_and_relative_imports_pass_the_import_policy(validator):
    strict = Validator(validator.sandbox, validator.limits, validator.test_timeout_s, BANNED)
    assert strict.validate(task("import math\ndef f(x):\n    return x * 2 + 1 + math.floor(0.5)\n")).valid
    assert "line 2" in strict.validate(task("import math\nimport time\ndef f(x):\n    return x\n")).detail


@pytest.mark.parametrize(
    ("code", "tests", "reason"),
    [
        ("def f(x)\n    return x\n", None, "syntax_error"),
        ("import random\ndef f(x):\n    return x\n", None, "banned_import"),
        ("def g(x):\n    return x\n", None, "missing_entry_point"),
        (GOOD, [TestCase(input="1", expected=3), TestCase(input="(2,)"), TestCase(input="(3,)")], "bad_input"),
        (GOOD, [TestCase(input="(1,)"), TestCase(input="(2,)")], "too_few_tests"),
        (GOOD, None, None),
    ],
)
def test_the_static_gates_are_one_rule_for_validation_and_the_leak_gate(sandbox, code, tests, reason):
    # kinds.run_gates may reject a leak before anything runs, but only once the static gates pass: it
    # asks validation's own static_reason (it used to check them again in a copy of its own)
    from spade_llm.kinds import run_gates

    config = SandboxConfig(backend="subprocess", timeout_s=4, test_timeout_s=1)
    validator = Validator(sandbox, config.limits(), config.test_timeout_s, frozenset({"random"}))
    plain = task(code, tests)
    found = validator.static_reason(plain)
    assert (found[0] if found else None) == reason
    if reason is not None:
        assert validator.validate(plain).reason == reason
    # the same task with a hidden test's input and answer in its description
    cases = tests or [TestCase(input=f"({i},)", expected=2 * i + 1) for i in (1, 2, 5, 7)]
    hidden = cases[-1]
    leaky = task(code, cases).model_copy(update={"description": f"Example: f{hidden.input} -> {hidden.expected}"})
    assert run_gates(validator, leaky, public_tests=1).reason == (reason or "leaks_hidden_test")
