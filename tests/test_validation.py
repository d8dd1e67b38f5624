"""Every validity gate of SPEC, in order, on the subprocess sandbox (none of these programs is hostile)."""

import pytest

from spade_llm.checking import limits_from
from spade_llm.config import SandboxConfig
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator, defines_name


def task(code, tests=None, entry="f", **kw):
    tests = tests if tests is not None else [TestCase(input=f"({i},)") for i in (1, 2, 5, 7)]
    return Task(task_id="t", description="d", entry_point=entry, reference_code=code, tests=tests, **kw)


@pytest.fixture(scope="module")
def validator():
    sandbox = get_sandbox("subprocess")
    config = SandboxConfig(backend="subprocess", timeout_s=4, test_timeout_s=1)
    yield Validator(sandbox, limits_from(config), config.test_timeout_s)
    sandbox.close()


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
