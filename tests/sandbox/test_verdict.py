"""The outside half of test verdicts: the tagged encoding, strict comparison, strict report framing.

Nothing here starts a sandbox: values are encoded with the harness's own encoder in-process and
reports are written by hand, so each protocol rule is checked in isolation.
"""

from __future__ import annotations

import ast
import collections
import json
import math

import pytest

from spade_llm.sandbox import verdict
from spade_llm.sandbox.harness import MAX_DEPTH, encode_value
from spade_llm.sandbox.runner import CallsOutcome, compare_outputs
from spade_llm.sandbox.verdict import (
    Output,
    ProtocolError,
    Unsupported,
    UnsupportedOutput,
    decode_value,
    interpret,
    matches,
    parse_records,
    parse_report,
    to_json,
)
from spade_llm.types import ExecutionResult, TestCase

LIMIT = 1 << 20


def roundtrip(value, limit=LIMIT):
    return decode_value(json.loads(encode_value(value, limit)))


# -- encoding --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        -(2**200),
        0.1,
        -0.0,
        1e300,
        math.inf,
        -math.inf,
        1 + 2j,
        "",
        'h\u00e9llo \u4e16\u754c \U0001f600 "quoted" \\ \n\t\x00',
        "\ud800 lone surrogate",
        b"\x00\xffbytes",
        [1, [2, [3]]],
        (1, "a", None),
        (),
        {1, 2, 3},
        frozenset({"a", (1, 2)}),
        {"a": 1, "b": [1, 2]},
        {1: "int key", (1, 2): "tuple key", None: 0},
        {True: "bool key", 2.5: "float key"},
        [{"nested": ({1}, frozenset())}],
    ],
)
def test_roundtrip_keeps_value_and_exact_types(value):
    back = roundtrip(value)
    assert type(back) is type(value)
    assert back == value
    if not isinstance(value, (set, frozenset)):  # a set's repr order follows the string hash seed
        assert repr(back) == repr(value)  # also catches 1 vs True inside containers


def test_ints_beyond_the_str_conversion_limit_roundtrip():
    big = 10**5000  # str(big) raises ValueError on 3.11+: the encoding is hex
    back = roundtrip(-big)
    assert type(back) is int and back == -big


def test_nan_roundtrips_as_nan():
    back = roundtrip(float("nan"))
    assert type(back) is float and math.isnan(back)


def test_bool_int_float_stay_distinct_inside_containers():
    back = roundtrip([True, 1, 1.0])
    assert [type(x) for x in back] == [bool, int, float]


class Weird(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __repr__(self):
        return "3"


class Spoof:
    """Claims to be an int to isinstance (``__class__``); type() is not fooled."""

    @property  # type: ignore[misc]
    def __class__(self):
        return int


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (Weird(7), "Weird"),
        (AlwaysEqual(), "AlwaysEqual"),
        (Spoof(), "Spoof"),
        (collections.OrderedDict(a=1), "OrderedDict"),
        (collections.defaultdict(int), "defaultdict"),
        (type("S", (str,), {})("x"), "S"),
        (iter([1]), "list_iterator"),
        (object(), "object"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,  # reprs with addresses differ per process
)
def test_subclasses_and_other_types_are_unsupported(value, type_name):
    back = roundtrip(value)
    assert isinstance(back, Unsupported) and back.type_name == type_name
    for expected in (3, 7, "x", {"a": 1}, [1], None):
        assert not matches(back, expected)


def test_unsupported_inside_a_container_never_matches():
    back = roundtrip([1, AlwaysEqual()])
    assert isinstance(back[1], Unsupported)
    assert not matches(back, [1, 3])


def test_depth_and_size_are_capped():
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    assert roundtrip(deep).detail == "<too deep>"
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert roundtrip(cyclic).detail == "<too deep>"
    assert roundtrip(list(range(1000)), limit=100).detail == "<too large>"
    assert roundtrip("x" * 1000, limit=100).detail == "<too large>"
    assert roundtrip(10**1000, limit=100).detail == "<too large>"


def test_unsupported_repr_failures_are_contained():
    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no")

    assert roundtrip(BadRepr()).detail == "<repr failed>"


@pytest.mark.parametrize(
    "tagged",
    [
        "x",
        [],
        ["?"],
        ["i", "12"],
        ["i", "0x1g"],
        ["i", 3],
        ["b", 1],
        ["f", "abc"],
        ["s", 1],
        ["S", [["l", []]]],  # unhashable set item
        ["d", [[["l", []], ["N"]]]],  # unhashable key
        ["d", [["N"]]],
        ["l", "notalist"],
        ["N", 1],
    ],
)
def test_malformed_values_are_protocol_errors(tagged):
    with pytest.raises(ProtocolError):
        decode_value(tagged)


# -- comparison --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected", "result"),
    [
        (3, 3, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (1, 1.0, False),
        (1.0, 1, False),
        ("1", 1, False),
        (None, None, True),
        (0, None, False),
        (0.1 + 0.2, 0.3, True),  # within 1e-9 relative
        (0.31, 0.3, False),
        (float("nan"), float("nan"), False),
        (math.inf, math.inf, True),
        ((1, 2), [1, 2], True),
        ([1, 2], [1, 2], True),
        ([1, 2], [2, 1], False),
        ([1], [1, 2], False),
        ((True,), [1], False),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({1: 1}, {"1": 1}, False),
        ({"a": (1,)}, {"a": [1]}, True),
        ({1, 2}, [1, 2], False),
        (b"ab", "ab", False),
        (1 + 0j, 1, False),
        (Unsupported("X"), 1, False),
    ],
)
def test_matches_is_strict(value, expected, result):
    assert matches(value, expected) is result


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (3, 3),
        (10**30, 10**30),
        (0.5, 0.5),
        ("s", "s"),
        ((1, (2, 3)), [1, [2, 3]]),
        ({"a": (1,)}, {"a": [1]}),
    ],
)
def test_to_json(value, expected):
    out = to_json(value)
    assert out == expected and json.loads(json.dumps(out)) == expected
    assert matches(value, json.loads(json.dumps(out)))


@pytest.mark.parametrize(
    "value",
    [{1, 2}, frozenset(), b"x", 1j, float("nan"), math.inf, {1: "a"}, [{(1,): 2}], Unsupported("X")],
)
def test_to_json_refuses_outputs_without_a_faithful_json_form(value):
    with pytest.raises(UnsupportedOutput):
        to_json(value)


# -- an imported benchmark's own rule: Python's == on the assert's literal ---------------------------


def python_eq(literal: str, **rule: bool) -> TestCase:
    return TestCase(input="(1,)", expected=to_json(ast.literal_eval(literal)), python_eq=literal, **rule)


@pytest.mark.parametrize(
    ("output", "literal", "result"),
    [
        ([4, 6], "(4, 6)", False),  # HumanEval/107, /136: the harness's `==` wants the tuple
        ((4, 6), "(4, 6)", True),
        ((None, 1), "[None, 1]", False),
        (0.5000000001, "0.5", False),  # HumanEval/2: compared exactly, no tolerance
        (0.5, "0.5", True),
        (21.0, "21", True),  # HumanEval/60's n*(n+1)/2, /53's x+y+0.0
        (3, "3.0", True),
        (True, "1", True),  # bool is an int to `==`
        (1, "True", True),
        ("1", "1", False),
        (-0.0, "0", True),
        ({"a": (1, 2.0)}, "{'a': (1, 2)}", True),
        ({"a": [1, 2]}, "{'a': (1, 2)}", False),
        ({1, 2}, "[1, 2]", False),
        ([Unsupported("X")], "[1]", False),  # an object of the answer's equals nothing, even inside
        (Unsupported("_Yes"), "1", False),
        (float("nan"), "0.0", False),
    ],
)
def test_python_eq_is_pythons_equality_on_decoded_values(output, literal, result):
    assert verdict.passes(output, python_eq(literal)) is result


def test_python_eq_is_judged_on_the_decoded_output_never_the_answers_object():
    """An answer's object reaches the host as plain data: ``__eq__`` and int subclasses do not come along."""

    class Yes:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    class Int(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    for hostile in (Yes(), Int(1), [Yes()], (Int(4), 6)):
        decoded = roundtrip(hostile)
        assert not verdict.passes(decoded, python_eq("(4, 6)")) and not verdict.passes(decoded, python_eq("1"))
    judged = compare_outputs(outcome([Output("ok", roundtrip(Yes()))]), [python_eq("(4, 6)")])
    assert judged.tests_passed == 0


@pytest.mark.parametrize(
    ("output", "result"),
    [([2, 1], True), ((2, 1), True), ([2.0, 1], True), ([1, 2], False), ("ab", False), ({2, 1}, False), (21, False)],
)
def test_as_tuple_compares_the_output_turned_into_a_tuple(output, result):
    assert verdict.passes(output, python_eq("(2, 1)", as_tuple=True)) is result
    assert verdict.passes("ab", python_eq("('a', 'b')", as_tuple=True))


@pytest.mark.parametrize(
    ("output", "result"),
    [
        ([[1, 2], 3], True),
        (([1, 2], 3), True),  # LiveCodeBench's list(prediction) for a tuple
        ([[1.0, 2], True + 2], True),  # its == : 1.0 is 1, True + 2 is 3
        ([(1, 2), 3], False),  # only the top is turned: a tuple within is not a list
        (((1, 2), 3), False),
        ([[1, 2], 3.5], False),
        ("[[1, 2], 3]", False),
    ],
)
def test_tuple_as_list_turns_only_a_top_level_tuple_into_a_list(output, result):
    assert verdict.passes(output, python_eq("[[1, 2], 3]", tuple_as_list=True)) is result


def test_tuple_as_list_needs_python_eq():
    with pytest.raises(ValueError, match="need python_eq"):
        TestCase(input="(1,)", expected=[1], tuple_as_list=True)


def test_without_a_rule_of_its_own_a_test_keeps_spades_comparison():
    assert verdict.passes([4, 6], TestCase(input="(1,)", expected=[4, 6]))  # a generated task's: a tuple is a list
    assert verdict.passes(0.5000000001, TestCase(input="(1,)", expected=0.5))  # within 1e-9
    assert not verdict.passes(21.0, TestCase(input="(1,)", expected=21))  # 21.0 is not 21
    assert verdict.passes(0.33, TestCase(input="(1,)", expected=0.330001, abs_tol=1e-5))
    assert verdict.passes([0], TestCase(input="(1,)", expected=True, as_bool=True))


# -- report framing ---------------------------------------------------------------------------

NONCE = "n0nce"
TOKEN = "t0ken"


def report_line(nonce=NONCE, **fields):
    data = {
        "v": 1,
        "rc": 0,
        "sig": None,
        "out": "",
        "err": "",
        "out_trunc": False,
        "err_trunc": False,
        "res": "",
        "res_trunc": False,
        "timed_out": False,
        "cpu_exceeded": False,
        "output_limit": False,
    }
    data.update(fields)
    return f"{nonce} {json.dumps(data)}\n"


def results(*payloads, token=TOKEN, start=True):
    lines = [f"{token} start"] if start else []
    lines += [f"{token} {p if isinstance(p, str) else json.dumps(p)}" for p in payloads]
    return "".join(line + "\n" for line in lines)


def rec(i, value, ms=0.1):
    return {"i": i, "ms": ms, "ok": True, "v": json.loads(encode_value(value, LIMIT))}


def test_report_with_another_nonce_is_ignored():
    stdout = report_line("someone-else", rc=0) + report_line(rc=3)
    assert parse_report(stdout, NONCE).return_code == 3


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "garbage\n",
        report_line() + report_line(),  # two reports with the nonce
        f"{NONCE} not json\n",
        f"{NONCE} [1]\n",
        report_line(rc="0"),
        report_line(rc=True),
        report_line(out=None),
        report_line(marker=5),
        f'{NONCE} {{"harness_error": "boom"}}\n',
    ],
)
def test_bad_reports_are_protocol_errors(stdout):
    with pytest.raises(ProtocolError):
        parse_report(stdout, NONCE)


def test_records_in_order_decode():
    got = parse_records(results(rec(0, 3), rec(1, (1, 2))), 2, cut=False)
    assert [o.value for o in got.outputs] == [3, (1, 2)]
    assert all(o.ok for o in got.outputs)


@pytest.mark.parametrize(
    "text",
    [
        results(rec(0, 3), rec(0, 3)),  # duplicate
        results(rec(1, 3)),  # missing index 0
        results(rec(0, 3), rec(2, 3)),  # gap
        results(rec(1, 3), rec(0, 3)),  # out of order
        results(rec(0, 3), rec(1, 3), rec(2, 3)),  # more records than inputs
        results(rec(0, 3)) + f"other {json.dumps(rec(1, 3))}\n",  # another token
        results(rec(0, 3), start=False),  # no start line
        results(rec(0, 3)) + f"{TOKEN} {json.dumps(rec(1, 3))}",  # incomplete last line
        results({"load_error": "x"}, rec(0, 3)),  # records after a load error
        results(rec(0, 3), {"load_error": "x"}),
        results({"i": 0, "ms": 1, "ok": True, "v": ["i", "0x3"], "extra": 1}),
        results({"i": 0, "ms": 1, "ok": False, "kind": "weird", "error": "x"}),
        results({"i": True, "ms": 1, "ok": True, "v": ["N"]}),
        results("not json"),
        results("done", rec(0, 3)),  # nothing may follow the done line
    ],
)
def test_record_stream_violations(text):
    with pytest.raises(ProtocolError):
        parse_records(text, 2, cut=False)


def test_a_cut_run_may_end_mid_record():
    text = results(rec(0, 3)) + f'{TOKEN} {{"i": 1, "ms'
    got = parse_records(text, 2, cut=True)
    assert [o.value for o in got.outputs] == [3]


def raw(stdout="", **kw):
    return ExecutionResult(status=kw.pop("status", "ok"), stdout=stdout, duration_ms=5.0, **kw)


def test_interpret_fake_records_printed_by_the_program_do_not_count():
    fake = json.dumps(rec(0, 3)) + "\n" + report_line("guess", rc=0)
    stdout = report_line(out=fake, res=results())
    seen = interpret(raw(stdout), NONCE, "tests", 1)
    assert seen.outputs == [] and seen.result.status == "error"
    assert seen.result.stdout == fake


def test_interpret_protocol_violation_is_an_error_with_a_note():
    stdout = report_line(res=results(rec(0, 3), rec(0, 3)))
    seen = interpret(raw(stdout), NONCE, "tests", 2)
    assert seen.result.status == "error" and seen.outputs == []
    assert "[spade] harness protocol violated" in seen.result.stderr


def test_interpret_missing_report():
    seen = interpret(raw("hello\n"), NONCE, "main")
    assert seen.result.status == "error" and "protocol violated" in seen.result.stderr
    seen = interpret(raw("", status="killed", signal=9), NONCE, "main")
    assert seen.result.status == "killed" and "killed by signal 9" in seen.result.stderr
    seen = interpret(raw("", status="timeout"), NONCE, "main")
    assert seen.result.status == "timeout"


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"timed_out": True, "sig": 9, "rc": None}, "timeout"),
        ({"sig": 24, "rc": None}, "timeout"),
        ({"cpu_exceeded": True, "sig": 9, "rc": None}, "timeout"),
        ({"output_limit": True, "out_trunc": True, "sig": 9, "rc": None}, "output_limit"),
        ({"res": results("mem"), "rc": 1}, "memory"),
        ({"sig": 11, "rc": None}, "error"),
        ({"sig": 9, "rc": None}, "killed"),
        ({"rc": 0}, "ok"),
        ({"rc": 2}, "error"),
    ],
)
def test_program_status(fields, status):
    seen = interpret(raw(report_line(**fields)), NONCE, "main")
    assert seen.result.status == status


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"sig": 9, "rc": None}, "memory"),  # the child the OOM killer took
        ({"sig": 9, "rc": None, "timed_out": True}, "timeout"),  # the deadline's kill, not memory
        ({"sig": 11, "rc": None}, "error"),  # a crash stays a crash
        ({"rc": 0}, "ok"),  # a grandchild hit the limit, the program coped
        ({"rc": 1}, "error"),
    ],
)
def test_backend_memory_event_explains_a_kill_only(fields, status):
    seen = interpret(raw(report_line(**fields), status="memory"), NONCE, "main")
    assert seen.result.status == status
    if status == "memory":
        assert "memory limit exceeded" in seen.result.stderr
    assert interpret(raw(report_line(**fields)), NONCE, "main").result.status != "memory"


def test_check_mode_needs_the_marker_and_the_done_line():
    good = report_line(res=results("done"), marker="m1")
    assert interpret(raw(good), NONCE, "check", marker="m1").check_passed
    assert not interpret(raw(good), NONCE, "check", marker="m2").check_passed
    no_done = report_line(res=results(), marker="m1")
    assert not interpret(raw(no_done), NONCE, "check", marker="m1").check_passed
    no_marker = report_line(res=results("done"))
    seen = interpret(raw(no_marker), NONCE, "check", marker="m1")
    assert not seen.check_passed and seen.result.status == "error"


# -- judging ---------------------------------------------------------------------------------


def outcome(outputs, status="ok", load_error=None):
    return CallsOutcome(ExecutionResult(status=status), outputs, load_error)


def test_judge_statuses():
    tests = [
        TestCase(input="(1,)", expected=3),
        TestCase(input="(2,)", expected=4),
        TestCase(input="(3,)", expected=1),
        TestCase(input="(4,)"),
        TestCase(input="(5,)", expected=5),
        TestCase(input="(6,)", expected=6),
    ]
    outputs = [
        Output("ok", 3),
        Output("ok", 5),
        Output("ok", True),
        Output("ok", 1),
        Output("error", error="ValueError: x"),
        Output("timeout", error="timed out after 1 s"),
    ]
    result = compare_outputs(outcome(outputs), tests)
    assert result.test_results is not None
    statuses = [(r.status, r.error) for r in result.test_results]
    assert statuses == [
        ("passed", None),
        ("failed", None),
        ("failed", None),
        ("error", "no expected value"),
        ("error", "ValueError: x"),
        ("timeout", "timed out after 1 s"),
    ]
    assert result.tests_passed == 1 and result.tests_total == 6
    assert result.test_results[2].output == "True"


def test_judge_missing_outputs():
    tests = [TestCase(input="(1,)", expected=1), TestCase(input="(2,)", expected=2)]
    cut = compare_outputs(outcome([Output("ok", 1)], status="timeout"), tests)
    assert cut.test_results is not None
    assert [r.status for r in cut.test_results] == ["passed", "timeout"]
    failed = compare_outputs(outcome([], status="error", load_error="SyntaxError: bad"), tests)
    assert failed.test_results is not None
    assert [r.status for r in failed.test_results] == ["error", "error"]
    assert failed.test_results[0].error == "SyntaxError: bad" and failed.tests_passed == 0


def test_judge_unsupported_output_fails_with_reason():
    result = compare_outputs(outcome([Output("ok", Unsupported("Weird", "7"))]), [TestCase(input="(1,)", expected=7)])
    assert result.test_results is not None
    error = result.test_results[0].error
    assert result.test_results[0].status == "failed" and error is not None and "unsupported output type Weird" in error


# -- stopping after max_timeouts -------------------------------------------------------------


def timeout_rec(i, ms=500.0):
    return {"i": i, "ms": ms, "ok": False, "kind": "timeout", "error": "timed out after 0.5 s"}


def test_records_stop_after_max_timeouts():
    text = results(rec(0, 3), timeout_rec(1), timeout_rec(2))
    got = parse_records(text, 6, cut=False, max_timeouts=2)
    assert got.stopped and got.timeouts == 2 and len(got.outputs) == 3
    assert not parse_records(text, 6, cut=False).stopped  # no limit asked for: nothing stops


def test_a_record_after_the_stop_is_a_protocol_error():
    text = results(timeout_rec(0), timeout_rec(1), rec(2, 3))
    with pytest.raises(ProtocolError):
        parse_records(text, 6, cut=False, max_timeouts=2)
    assert len(parse_records(text, 6, cut=False, max_timeouts=3).outputs) == 3


def test_interpret_a_stopped_run_is_ok_with_a_note():
    stdout = report_line(res=results(timeout_rec(0), timeout_rec(1)))
    seen = interpret(raw(stdout), NONCE, "tests", 6, max_timeouts=2)
    assert seen.stopped and seen.result.status == "ok" and len(seen.outputs) == 2
    assert "[spade] 2 tests timed out; the remaining 4 were not run" in seen.result.stderr
    # the same records without the stop asked for: the program ended early
    unasked = interpret(raw(stdout), NONCE, "tests", 6)
    assert not unasked.stopped and unasked.result.status == "error"
    # fewer timeouts than the limit and records missing: still the program ending early
    early = interpret(raw(report_line(res=results(timeout_rec(0)))), NONCE, "tests", 6, max_timeouts=2)
    assert not early.stopped and early.result.status == "error"
    # the stop on the last input leaves nothing unrun
    last = interpret(raw(report_line(res=results(rec(0, 1), timeout_rec(1)))), NONCE, "tests", 2, max_timeouts=1)
    assert not last.stopped and last.result.status == "ok" and "[spade]" not in last.result.stderr


def test_judge_tests_not_run_after_the_stop_are_timeouts():
    tests = [TestCase(input=f"({i},)", expected=i) for i in range(4)]
    outputs = [Output("ok", 0), Output("timeout", error="timed out after 1 s"), Output("timeout", error="timed out")]
    result = compare_outputs(CallsOutcome(ExecutionResult(status="ok"), outputs, None, stopped=True), tests)
    assert result.test_results is not None
    assert [(r.status, r.error) for r in result.test_results][2:] == [
        ("timeout", "timed out"),
        ("timeout", "not run: earlier tests timed out"),
    ]
    assert result.test_results[0].status == "passed" and result.tests_passed == 1


def test_load_error_record_is_allowed_in_check_mode_only():
    stdout = report_line(res=results({"load_error": "SyntaxError: bad"}), rc=1)
    seen = interpret(raw(stdout), NONCE, "check", marker="m1")
    assert seen.load_error == "SyntaxError: bad" and not seen.check_passed and seen.result.status == "error"
    seen = interpret(raw(stdout), NONCE, "main")
    assert seen.result.status == "error" and "protocol violated" in seen.result.stderr


def test_the_host_knows_the_harness_depth_without_importing_the_harness():
    assert verdict.MAX_DEPTH == MAX_DEPTH


def test_a_tests_literals_are_parsed_once_for_every_answer_judged(monkeypatch):
    """A task's tests are judged for every answer: their inputs and ``python_eq`` literals were parsed
    with ``ast`` each time (a fifth of the judge's own CPU on HumanEval). The values are shared now,
    and what judges read of them is unchanged."""
    from spade_llm.languages import pyast
    from spade_llm.sandbox import runner

    parsed: list[str] = []
    real = pyast.literal_eval

    def counted(text: str) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(pyast, "literal_eval", counted)
    literal, given = "(1, [2.5, 'a'], {'k': (3,)})", "({'x': 1}, (2,))"
    for _ in range(3):
        assert verdict.python_equal((1, [2.5, "a"], {"k": (3,)}), literal)
        assert not verdict.python_equal([1, [2.5, "a"], {"k": (3,)}], literal)  # a list is not the tuple
        assert runner._calls_request("f", [given], 1.0, None)["inputs"] == [({"x": 1}, (2,))]
    assert parsed.count(literal) <= 1 and parsed.count(given) <= 1
    long = "(" + "1, " * 2000 + ")"  # past SHARED_TEXT_CHARS: parsed, not kept
    for _ in range(2):
        assert runner._calls_request("f", [long], 1.0, None)["inputs"] == [(1,) * 2000]
    assert parsed.count(long) == 2
