"""``spade_llm.languages.python_asserts``: a benchmark's asserts become tests; what cannot, stays a check script.

Pure: nothing runs here but the AST walk and the bounded constant folding.
"""

from __future__ import annotations

import ast

import pytest

from spade_llm.languages.python_asserts import AssertsError, asserts_as_check, split_check
from spade_llm.types import TestCase


def only(check_body: str, **kw) -> list[tuple[str, object, float | None, bool]]:
    split = split_check("def check(candidate):\n" + check_body, "f", **kw)
    assert split.residue is None, split.residue
    return [(t.input, t.expected, t.abs_tol, t.as_bool) for t in split.tests]


@pytest.mark.parametrize(
    ("line", "case"),
    [
        ("assert candidate(1, [2]) == 3", ("(1, [2])", 3, None, False)),
        ("assert 3 == candidate('a')", ("('a',)", 3, None, False)),
        ("assert candidate(3 * 19) == [3, 19]", ("(57,)", [3, 19], None, False)),
        ("assert candidate('ab' + 'c') == 'abc' * 2", ("('abc',)", "abcabc", None, False)),
        ("assert candidate([]) == (0, 1)", ("([],)", [0, 1], None, False)),  # JSON has no tuple: python_eq keeps it
        ("assert candidate([3, 5]) == (3 + 5, 3 * 5)", ("([3, 5],)", [8, 15], None, False)),
        ("assert tuple(candidate([1, 2])) == tuple([2, 1])", ("([1, 2],)", [2, 1], None, False)),
        ("assert candidate(2) is True", ("(2,)", True, None, False)),
        ("assert candidate(2) is None", ("(2,)", None, None, False)),
        ("assert candidate(-1.5) == -0.5", ("(-1.5,)", -0.5, None, False)),
        ("assert candidate({'a': 1}) == {'b': [None]}", ("({'a': 1},)", {"b": [None]}, None, False)),
        ("assert abs(candidate(1.33) - 0.33) < 1e-6", ("(1.33,)", 0.33, 1e-6, False)),
        ("assert abs(2.0/3.0 - candidate([1.0])) < 1e-6", ("([1.0],)", 2.0 / 3.0, 1e-6, False)),
        ("assert math.fabs(candidate(2) - 1) < 0.01", ("(2,)", 1, 0.01, False)),
        ("assert candidate('()')", ("('()',)", True, None, True)),
        ("assert not candidate(')(')", ("(')(',)", False, None, True)),
        ("assert candidate([1, 0**0]) == None, 'message'", ("([1, 1],)", None, None, False)),
    ],
)
def test_asserts_of_a_known_shape_become_tests(line, case):
    assert only(f"    {line}\n") == [case]


def test_statements_that_check_nothing_are_dropped_and_order_is_kept():
    body = '    """doc"""\n    print\n    assert candidate(1) == 1\n'
    body += '    assert True, "fine"\n    assert candidate(2) == 4\n'
    assert [c[0] for c in only(body)] == ["(1,)", "(2,)"]


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("assert candidate([]) == (0, 1)", ("(0, 1)", False)),  # a tuple is not a list to `==`
        ("assert candidate(3) == 3.0", ("3.0", False)),  # an int output equals it all the same
        ("assert 0.5 == candidate(3.5)", ("0.5", False)),
        ("assert candidate(1) == {'a': (1, [None])}", ("{'a': (1, [None])}", False)),
        ("assert tuple(candidate([1, 2])) == tuple([2, 1])", ("(2, 1)", True)),
        ("assert list(candidate([1, 2])) == [2, 1]", ("(2, 1)", True)),  # list(out) == V iff tuple(out) == tuple(V)
        ("assert candidate(2) is True", (None, False)),  # identity: matches is exactly `is` on these
        ("assert abs(candidate(1.33) - 0.33) < 1e-6", (None, False)),  # the test's own tolerance
        ("assert candidate('()')", (None, False)),
    ],
)
def test_equality_keeps_the_asserts_value_as_a_python_literal(line, rule):
    """``assert f(x) == VALUE`` is judged by Python's ``==`` on VALUE as written, as the benchmark's harness does."""
    (test,) = split_check(f"def check(candidate):\n    {line}\n", "f").tests
    assert (test.python_eq, test.as_tuple) == rule


@pytest.mark.parametrize(
    "line",
    [
        "assert tuple(candidate(1)) == [1]",  # never true as written: the check runs it
        "assert list(candidate(1)) == (1,)",
        "assert candidate(x) == 1",  # a name
        "assert candidate(1) == candidate(2)",  # two calls
        "assert candidate(1) != 2",  # not equality
        "assert candidate(1) is 2",  # identity of an int
        "assert candidate(1) == {1, 2}",  # a set has no JSON form
        "assert candidate(1) == b'x'",  # nor bytes
        "assert candidate(n=1) == 1",  # keywords
        "assert candidate(*[1]) == 1",
        "assert abs(candidate(1) - 1) <= 1e-6",  # <= is not the shape
        "assert abs(candidate(1) - 1) < -1",  # a tolerance must be positive
        "assert candidate(2 ** 100000) == 1",  # folded only under bounds
        "assert candidate('x' * 10 ** 6) == 1",
        "assert candidate(len('ab')) == 2",  # a call of anything else
        "assert False",
        "assert candidate(1) == 1 == 1",  # a chained comparison
        "assert sorted(candidate([2, 1])) == [1, 2]",  # only tuple()/list() wrap the call
    ],
)
def test_other_statements_stay_in_the_check(line):
    split = split_check(f"def check(candidate):\n    {line}\n", "f")
    assert split.tests == []
    assert split.residue is not None
    (check,) = ast.parse(split.residue).body
    assert isinstance(check, ast.FunctionDef)
    assert [ast.dump(s) for s in check.body] == [ast.dump(s) for s in ast.parse(line).body]


def test_the_residue_is_self_contained_with_the_prompts_helpers_and_without_the_stub():
    prompt = "import math\n\n\ndef poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n\n\n"
    prompt += 'def f(xs):\n    """Find a zero."""\n'
    check = (
        "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate([1, 1]) == -1.0\n"
        "    for xs in ([1, 2], [2, 4]):\n        assert math.fabs(poly(xs, candidate(xs))) < 1e-4\n"
    )
    split = split_check(check, "f", prompt)
    assert [(t.input, t.expected) for t in split.tests] == [("([1, 1],)", -1.0)]
    residue = split.residue
    assert residue is not None
    tree = ast.parse(residue)  # it parses, defines the helpers and the check, not the entry point's stub
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert names == ["poly", "check"]
    assert "import math" in residue and "METADATA" in residue
    assert "candidate([1, 1])" not in residue  # the converted assert is not run twice


PLAIN = "def check(candidate):\n    assert candidate(1) == 1\n"


@pytest.mark.parametrize(
    "check",
    [
        "def check(candidate):\n    candidate = lambda x: 1\n    assert candidate(1) == 1\n",  # rebound
        "def check(candidate):\n    def g(candidate):\n        return 1\n    assert candidate(1) == 1\n",
        "def check(candidate, extra):\n    assert candidate(1) == 1\n",
        "@something\n" + PLAIN,
        "assert f(1) == 1\n",  # no check function at all
        PLAIN + PLAIN,  # two: which one runs is not ours to guess
    ],
)
def test_a_check_that_is_not_plain_is_kept_whole(check):
    split = split_check(check, "f")
    assert split.tests == [] and split.residue is not None


def test_inputs_read_back_as_exactly_the_arguments():
    split = split_check("def check(candidate):\n    assert candidate(True, 1.0, -0.0, 'a\\nb', (1,)) == 1\n", "f")
    (test,) = split.tests
    assert test == TestCase(input="(True, 1.0, -0.0, 'a\\nb', (1,))", expected=1, python_eq="1")


def test_a_script_that_does_not_parse_is_kept_as_it_is():
    split = split_check("def check(candidate:\n", "f", "def f(x):\n    pass\n")
    assert split.tests == [] and split.residue == "def check(candidate:\n"


def test_a_plain_range_loop_of_asserts_becomes_a_test_per_turn():
    check = "def check(candidate):\n    for x in range(2, 5):\n        assert candidate(x, x + 1) == str(x)\n"
    split = split_check(check, "f")
    assert split.residue is None
    assert [(t.input, t.expected) for t in split.tests] == [("(2, 3)", "2"), ("(3, 4)", "3"), ("(4, 5)", "4")]


@pytest.mark.parametrize(
    "loop",
    [
        "for x in range(3):\n        assert candidate(x) == y\n",  # another name: the loop stays whole
        "for x in range(1000):\n        assert candidate(x) == x\n",  # too many turns
        "for x in range(n):\n        assert candidate(x) == x\n",  # bounds not constant
        "for x in [1, 2]:\n        assert candidate(x) == x\n",  # not a range
        "for x in range(3):\n        y = x\n        assert candidate(y) == x\n",  # not only asserts
        "for x in range(3):\n        assert candidate(x) == x\n    else:\n        pass\n",
    ],
)
def test_other_loops_stay_in_the_check(loop):
    split = split_check(f"def check(candidate):\n    {loop}", "f")
    assert split.tests == [] and split.residue is not None


# -- bare asserts that call the function by its name (MBPP) ------------------------------------------


def test_bare_asserts_become_a_check_of_the_function_they_call():
    code = "import math\nimport re\nK = 2\ndef g(x):\n    return x\ndef f(x):\n    return g(x) * K\n"
    script = asserts_as_check(["assert abs(f(g(1))) == 2", "assert math.isclose(f(1), K)"], code, "Z = 0")
    assert script.entry_point == "f"  # the outermost call of a function the code defines, not abs or g
    assert script.answer_names == ["K", "g"]  # the answer's own: a check run apart cannot see them
    assert script.check_source == (
        "import math\nZ = 0\n\ndef check(candidate):\n"
        "    assert abs(candidate(g(1))) == 2\n    assert math.isclose(candidate(1), K)\n"
    )
    renamed = asserts_as_check(["assert f(candidate) == 1"], "candidate = 1\ndef f(x):\n    return x\n")
    assert "def check(candidate_):\n    assert candidate_(candidate) == 1" in renamed.check_source


@pytest.mark.parametrize(
    ("asserts", "code", "field"),
    [
        (["assert f(1) == 1"], "def f(x:\n", "code"),
        (["assert f(1) = 1"], "def f(x):\n    return x\n", "test_list[0]"),
        (["assert g(1) == 1"], "def f(x):\n    return x\n", "test_list"),
    ],
)
def test_bare_asserts_that_cannot_be_read_name_their_field(asserts, code, field):
    with pytest.raises(AssertsError) as e:
        asserts_as_check(asserts, code)
    assert e.value.field == field
