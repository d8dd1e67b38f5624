"""The one judge (``spade_llm.judge``): final verdicts, subsets of tests, stopping after timeouts,
the one input parser, and the settings ``verify``/``evaluate`` read from a run config.

Programs here are benign (loops, raises, wrong answers) and run on the subprocess sandbox.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.errors import UserError
from spade_llm.judge import MAX_TEST_TIMEOUTS, Judge, final_status, load_settings, parse_input, run_task_tests
from spade_llm.sandbox.base import Limits
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.runner import MAX_INPUT_CHARS, MAX_INPUT_DEPTH
from spade_llm.types import ExecutionResult, Task, TestCase, TestResult

LIMITS = Limits(timeout_s=5.0, memory_mb=256)
TEST_TIMEOUT_S = 0.5
TESTS = [TestCase(input=f"({i},)", expected=i * 2 + 1) for i in (1, 2, 5, 7)]


def task(code: str = "", tests=None, **kw) -> Task:
    return Task(
        task_id="t",
        description="d",
        entry_point="f",
        reference_code=code or "def f(x):\n    return x * 2 + 1\n",
        tests=TESTS if tests is None else tests,
        **kw,
    )


def run(sandbox, code: str, **kw) -> ExecutionResult:
    return run_task_tests(sandbox, task(), code, LIMITS, TEST_TIMEOUT_S, **kw)


# -- final_status ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("def f(x):\n    return x * 2 + 1\n", "passed"),
        ("def f(x)\n    return x\n", "error"),  # SyntaxError
        ("raise RuntimeError('at import')\ndef f(x):\n    return x * 2 + 1\n", "error"),
        ("def g(x):\n    return x * 2 + 1\n", "error"),  # no entry point
        ("f = 3\n", "error"),  # not callable
        ("", "error"),  # no code at all
        ("import os\nos._exit(0)\n", "error"),  # ends before any test
        ("def f(x):\n    while True:\n        pass\n", "timeout"),
        ("def f(x):\n    while x == 5:\n        pass\n    return x * 2 + 1\n", "timeout"),
        ("def f(x):\n    return x * 2\n", "failed"),  # wrong answers
        ("def f(x):\n    return 1 // (x - 5) * 0 + x * 2 + 1\n", "failed"),  # raises on one input
        ("def f(x):\n    raise ValueError(x)\n", "failed"),  # raises on every input: it ran
        ("def f(x):\n    return True if x == 1 else x * 2 + 1\n", "failed"),  # True is not 3
    ],
)
def test_final_status(sandbox, code, status):
    result = run_task_tests(sandbox, task(), code or "\n", LIMITS, TEST_TIMEOUT_S)
    assert final_status(result) == status, (result.status, result.load_error, result.test_results)


def test_final_status_load_error_is_kept():
    result = run_task_tests(get_sandbox("subprocess"), task(), "def f(x)\n", LIMITS, TEST_TIMEOUT_S)
    assert result.load_error and "SyntaxError" in result.load_error


def test_final_status_of_check_mode_results():
    """``check_code`` runs give one test and no outputs: a failed assert is ``failed``, not ``error``."""

    def check(status, exec_status="error"):
        verdict = TestResult(index=0, input="check(f)", status=status)
        passed = int(status == "passed")
        return ExecutionResult(status=exec_status, tests_passed=passed, tests_total=1, test_results=[verdict])

    assert final_status(check("passed", "ok")) == "passed"
    assert final_status(check("failed")) == "failed"
    assert final_status(check("error")) == "error"
    assert final_status(check("timeout", "timeout")) == "timeout"


# -- run_task_tests ------------------------------------------------------------------------------


def test_subset_keeps_task_indices(sandbox):
    result = run_task_tests(sandbox, task(), "def f(x):\n    return x * 2 + 1 if x > 2 else 0\n", LIMITS, tests=[3, 0])
    assert result.test_results is not None
    assert [(r.index, r.input, r.status) for r in result.test_results] == [(3, "(7,)", "passed"), (0, "(1,)", "failed")]
    assert result.tests_total == 2 and result.tests_passed == 1


def test_judge_object_is_the_function(sandbox):
    j = Judge(sandbox, LIMITS, TEST_TIMEOUT_S)
    assert j.max_timeouts == MAX_TEST_TIMEOUTS == 2
    result = j(task(), "def f(x):\n    return x * 2 + 1\n", tests=[1])
    assert result.test_results is not None
    assert result.all_passed and [r.index for r in result.test_results] == [1]
    outcome = j.outputs(task(), "def f(x):\n    return x * 2 + 1\n")
    assert [o.value for o in outcome.outputs] == [3, 5, 11, 15]


def test_two_timeouts_stop_an_execution(sandbox):
    tests = [TestCase(input=f"({i},)", expected=i) for i in range(6)]
    code = "def f(x):\n    if x == 0:\n        return 0\n    while True:\n        pass\n"
    result = run_task_tests(sandbox, task(tests=tests), code, LIMITS, TEST_TIMEOUT_S)
    assert result.status == "ok" and final_status(result) == "timeout"
    assert result.test_results is not None
    assert [r.status for r in result.test_results] == ["passed"] + ["timeout"] * 5
    assert [r.error for r in result.test_results[3:]] == ["not run: earlier tests timed out"] * 3
    assert "2 tests timed out; the remaining 3 were not run" in result.stderr


def test_max_timeouts_none_tries_every_test(sandbox):
    code = "def f(x):\n    while x < 5:\n        pass\n    return x * 2 + 1\n"
    result = run(sandbox, code, max_timeouts=None)
    assert result.test_results is not None
    assert [r.status for r in result.test_results] == ["timeout", "timeout", "passed", "passed"]
    stopped = run(sandbox, code)
    assert stopped.test_results is not None
    assert [r.status for r in stopped.test_results] == ["timeout"] * 4 and stopped.tests_passed == 0
    assert final_status(result) == final_status(stopped) == "timeout"


def test_max_timeouts_must_be_positive(sandbox):
    with pytest.raises(ValueError, match="max_timeouts"):
        run(sandbox, "def f(x):\n    return x\n", max_timeouts=0)


def test_check_code_tasks_run_their_asserts(sandbox):
    check = "def check(candidate):\n    assert candidate(2) == 5\n"
    t = task(check_code=check, tests=[])
    assert final_status(run_task_tests(sandbox, t, "def f(x):\n    return x * 2 + 1\n", LIMITS)) == "passed"
    assert final_status(run_task_tests(sandbox, t, "def f(x):\n    return x\n", LIMITS)) == "failed"
    assert final_status(run_task_tests(sandbox, t, "def f(x)\n", LIMITS)) == "error"


# -- parse_input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("(1,)", (1,)), ("()", ()), ("([1, 2], {'a': (None, True)}, 'x')", ([1, 2], {"a": (None, True)}, "x"))],
)
def test_parse_input_reads_literal_tuples(text, value):
    assert parse_input(text) == value


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1", "not a tuple of arguments"),
        ("[1, 2]", "write a 1-tuple"),
        ("(__import__('os'),)", "not a Python literal"),
        ("(1, 2", "not a Python literal"),
        ("(" + "0," * (MAX_INPUT_CHARS // 2) + ")", "longer than"),
        ("(" + "[" * MAX_INPUT_DEPTH + "]" * MAX_INPUT_DEPTH + ",)", "nested deeper"),
        ("(" + "(" * 250 + ")" * 250 + ",)", "not a Python literal"),  # the parser's own nesting limit
    ],
)
def test_parse_input_says_why_not(text, fragment):
    why = parse_input(text)
    assert isinstance(why, str) and fragment in why


def test_parse_input_allows_the_deepest_input():
    text = "(" + "[" * (MAX_INPUT_DEPTH - 1) + "]" * (MAX_INPUT_DEPTH - 1) + ",)"
    assert isinstance(parse_input(text), tuple)


def test_one_parser_for_validation_and_runner():
    import spade_llm.sandbox.runner as runner
    import spade_llm.validation as validation

    assert validation.parse_input is runner.parse_input


# -- settings for verify/evaluate ------------------------------------------------------------


def test_settings_default_to_spec_limits():
    s = load_settings(None)
    assert s.limits == Limits() and s.backend == "auto" and s.test_timeout_s == 3.0


def test_settings_from_a_run_config(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "sandbox:\n  backend: subprocess\n  timeout_s: 4\n  test_timeout_s: 0.25\n  memory_mb: 300\n"
        "  max_processes: 8\n  scratch_mb: 16\n  output_limit_bytes: 4096\n"
    )
    s = load_settings(str(cfg))
    assert s.limits == Limits(timeout_s=4, memory_mb=300, max_processes=8, scratch_mb=16, output_limit_bytes=4096)
    assert s.test_timeout_s == 0.25 and s.backend == "subprocess"
    over = load_settings(str(cfg), timeout_s=2.5, backend=None)
    assert over.limits.timeout_s == 2.5 and over.limits.memory_mb == 300 and over.backend == "subprocess"
    assert load_settings(None, backend="bwrap", timeout_s=None).backend == "bwrap"


def test_settings_bad_config_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_settings(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("sandbox:\n  timeout_s: -1\n")
    with pytest.raises(UserError):
        load_settings(str(bad))


def test_settings_without_a_config_import_no_config_models():
    code = (
        "import sys\nfrom spade_llm.judge import load_settings\nload_settings(None, timeout_s=1.0)\n"
        "print(sorted(m for m in ('spade_llm.config', 'litellm', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUES, max_size=4))
def test_parse_input_gives_literal_evals_values_with_their_types(args):
    # the JSON fast path must never give another value or type than literal_eval would
    import ast

    text = repr(tuple(args))
    assert repr(parse_input(text)) == repr(ast.literal_eval(text))
    spaced = text.replace(", ", ",")  # no fast path: literal_eval itself
    assert repr(parse_input(spaced)) == repr(ast.literal_eval(spaced))


@pytest.mark.parametrize("text", ["(true,)", "(null,)", "(NaN,)", "(Infinity,)", '("a\\/b",)', "([1, 2],"])
def test_json_only_spellings_are_never_inputs(text):
    import ast

    try:
        want = repr(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        want = None
    got = parse_input(text)
    assert (repr(got) if isinstance(got, tuple) else None) == want


def test_a_deep_input_is_refused_on_the_fast_path_too():
    deep = "(" + "[" * (MAX_INPUT_DEPTH + 1) + "]" * (MAX_INPUT_DEPTH + 1) + ",)"
    assert "nested deeper" in str(parse_input(deep))
