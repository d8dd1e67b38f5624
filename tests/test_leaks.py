"""The leak gate (issue 35, finding 1): no hidden test shows, input with its answer, in what a solver reads.

At a685e31 nothing compared a task's text with its tests: the fake generator wrote one of its tests
into each description (a hidden one in 115 of 200 induction tasks, and in every deduction and
abduction task, where every test is hidden), ``spade verify`` called such a task valid, and the run
accepted it. Here: the detector (``spade_llm.leaks``) on a table of forms and negatives and on
random prose, the kinds' say on what is hidden and what is shown, the gate wherever tasks enter
(``run``'s checker, ``verify``, ``proposal_reward``), the report for tasks judged as written
(``solve``, ``evaluate``, an imported benchmark), and the fake's own tasks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sandbox_backends import run_backend

from spade_llm import kinds
from spade_llm._util import cache
from spade_llm.checking import CodeChecker
from spade_llm.cli import app as cli
from spade_llm.config import SandboxConfig
from spade_llm.kinds import LEAK_CACHE, LEAK_REASON, get_kind, leaks, mark_leaks, run_gates
from spade_llm.kinds import base as kind_base
from spade_llm.kinds.base import public_indices, same_case
from spade_llm.leaks import Secret, describe, find_leaks
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator

HUMANEVAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "HumanEval.jsonl.gz"


def found(text: str, args: tuple[Any, ...], expected: Any) -> str | None:
    """The form in which ``text`` shows the test ``args -> expected`` (None: it does not)."""
    hits = find_leaks({"description": text}, [Secret(0, args, expected)])
    return hits[0].form if hits else None


# -- the detector: a table of forms ---------------------------------------------------------------

SHOWN = [
    # (text, args, expected, form)
    ("f(3) -> 9", (3,), 9, "call"),
    ("square(3) == 9", (3,), 9, "call"),
    ("f(3) = 9", (3,), 9, "call"),
    ("f(3): 9", (3,), 9, "call"),
    ("f(3) => 9 and f(4) => 16", (4,), 16, "call"),
    ("f(3) → 9", (3,), 9, "call"),
    ("f(3) ➞ 9", (3,), 9, "call"),
    ("f(3) ==> 9", (3,), 9, "call"),
    ("f(3) returns 9", (3,), 9, "call"),
    ("Calling f(3) should return the number 9.", (3,), 9, "call"),
    ("For example, `f(3)` returns `9`.", (3,), 9, "call"),
    ("f(3) is 9", (3,), 9, "call"),
    ("print(f(3))  # 9", (3,), 9, "call"),
    ("f(n=3) -> 9", (3,), 9, "call"),
    ("f(3,) -> 9", (3,), 9, "call"),
    ("f(3) -> 9.0", (3,), 9, "call"),
    ("f(3) -> 9", (3,), 9.0, "call"),
    ("f(0.1) -> 0.3333", (0.1,), 1 / 3, "call"),
    ("f(-2) == -8", (-2,), -8, "call"),
    ("obj.f(3) -> 9", (3,), 9, "call"),
    (">>> f(3)\n9", (3,), 9, "doctest"),
    ('    """\n    >>> sq(3)\n    9\n    """', (3,), 9, "doctest"),
    (">>> print(f(3))\n9", (3,), 9, "doctest"),
    ("3 -> 9", (3,), 9, "bare"),
    ("For example, 3 -> 9", (3,), 9, "bare"),
    ("3 gives 9", (3,), 9, "bare"),
    ("1, 2 -> 3", (1, 2), 3, "bare"),
    ("(1, 2) gives 3", (1, 2), 3, "bare"),
    ("[1, 2], 'a' -> {'x': True}", ([1, 2], "a"), {"x": True}, "bare"),
    ("abc -> cba", ("abc",), "cba", "bare"),
    ("input 3 gives 9", (3,), 9, "io"),
    ("Input: 3, Output: 9", (3,), 9, "io"),
    ("Input: arr = [-3, -4, 5], k = 3\nOutput: [-4, -3, 5]", ([-3, -4, 5], 3), [-4, -3, 5], "io"),
    ('{"input": [3], "output": 9}', (3,), 9, "io"),
    ("for 3 the answer is 9", (3,), 9, "io"),
    ("given n = 3, it returns 9", (3,), 9, "io"),
    ('For s = "abc" the output should be 2', ("abc",), 2, "io"),
    ("| 3 | 9 |", (3,), 9, "table"),
    ("| 1 | 2 | 3 |", (1, 2), 3, "table"),
    ("9 == f(3)", (3,), 9, "reverse"),
    # literal spellings: JSON or Python, any spacing, a tuple or a list
    ('f([1,2], "a") == {"x": true}', ([1, 2], "a"), {"x": True}, "call"),
    ("f((1, 2), 'a') returns {'x': True}", ([1, 2], "a"), {"x": True}, "call"),
    ("f([ 1 ,2 ]) -> [ 3, 4 ]", ([1, 2],), [3, 4], "call"),
    ("f([1, 2]) -> (3, 4)", ([1, 2],), [3, 4], "call"),
    ("f(null) -> false", (None,), False, "call"),
    ("f('it\\'s') -> \"it's\"", ("it's",), "it's", "call"),
    ("f() -> 5", (), 5, "call"),
    ("f(-0.0) -> -0.0", (-0.0,), -0.0, "call"),
    ("f(+3) -> 9", (3,), 9, "call"),
]

SQUARE = ((3,), 9)
SORTED = (([4, 1, 3],), [1, 3, 4])
ADD = ((2, 5), 7)
REVERSED = (("abc",), "cba")
SUM = (([1, 2, 3],), 6)
PHRASED = [
    # (text, (args, expected), form): how models write an example, each found (fix round, finding 1)
    # the reviewer's, none found before
    ("When n is 3, the function returns 9.", SQUARE, "io"),
    ("if n = 3 then the answer is 9", SQUARE, "io"),
    ("The value for 3 is 9", SQUARE, "noun"),
    ("[4, 1, 3] should become [1, 3, 4]", SORTED, "bare"),
    ("For example [4, 1, 3] sorted is [1, 3, 4]", SORTED, "bare"),
    ("'abc' reversed is 'cba'", REVERSED, "bare"),
    ("a=2, b=5: 7", ADD, "keyed"),
    # more of the category
    ("When x is 3, the result is 9.", SQUARE, "io"),
    ("If you pass 3, you get 9.", SQUARE, "io"),
    ("Input: 3 / Output: 9", SQUARE, "io"),
    ("Sample input: 3\nSample output: 9", SQUARE, "io"),
    ("In: 3  Out: 9", SQUARE, "io"),
    ('{"n": 3, "expected": 9}', SQUARE, "io"),
    ('{"args": [2, 5], "result": 7}', ADD, "io"),
    ("With a = 2 and b = 5 we get 7", ADD, "io"),
    ("given the list 1, 2, 3 it returns 6", SUM, "io"),
    ("the output for input [4, 1, 3] is [1, 3, 4]", SORTED, "noun"),
    ("Output for [4,1,3]: [1,3,4]", SORTED, "noun"),
    ("3 squared is 9", SQUARE, "bare"),
    ("3 doubled is 6", ((3,), 6), "bare"),
    ("3 cubed equals 27", ((3,), 27), "bare"),
    ("'abc' backwards is 'cba'", REVERSED, "bare"),
    ("[4, 1, 3] ends up as [1, 3, 4]", SORTED, "bare"),
    ("'hello' turns into 'olleh'", (("hello",), "olleh"), "bare"),
    ("x = 3 → y = 9", SQUARE, "bare"),
    ("f(1,2,3) -> 6", SUM, "call"),
    ("# f(3) == 9", SQUARE, "call"),
    ("f(3)  // => 9", SQUARE, "call"),
    ("f(3) is equal to 9", SQUARE, "call"),
    ("f(3) -> result = 9", SQUARE, "call"),
    ("f('hello') gives back 'olleh'", (("hello",), "olleh"), "call"),
    ("In [1]: f(3)\nOut[1]: 9", SQUARE, "call"),
    ("2 + 5 = 7", ADD, "op"),
    ("2 + 5 -> 7", ADD, "op"),
    ("f(3) = 3 * 3 = 9", SQUARE, "chain"),
    ("sum_sq([1, 2, 3]) = 1 + 4 + 9 = 14", (([1, 2, 3],), 14), "chain"),
    ("For [1, 2, 3]: 1 + 4 + 9 = 14", (([1, 2, 3],), 14), "chain"),
    ("| n | result |\n|---|---|\n| 3 | 9 |", SQUARE, "table"),
    ("| `f(3)` | `9` |", SQUARE, "table"),
    ("returns 9 for 3", SQUARE, "after"),
    ("It returns 9 when n is 3.", SQUARE, "after"),
    ("gives [1, 3, 4] for [4, 1, 3].", SORTED, "after"),
    ("sum of [1,2,3] is 6", SUM, "near"),
    ("a list like [4, 1, 3] is returned as [1, 3, 4]", SORTED, "near"),
    ("Take 'hello world': the answer is 'dlrow olleh'", (("hello world",), "dlrow olleh"), "near"),
    ('e.g. 147: digit sum 12, so the output is "1100"', ((147,), "1100"), "near"),
    ("f(3)  # returns 9", SQUARE, "call"),
    ("print(f(3))  # Output: 9", SQUARE, "call"),
    ("f(3): returns 9", SQUARE, "call"),
    ("f(3) gives you 9", SQUARE, "call"),
    ("For input 3, expect 9", SQUARE, "io"),
    ("An input of 3 should produce 9", SQUARE, "io"),
    ("Let n = 3; then f(n) = 9", SQUARE, "io"),
    ("For n = 3, f(n) = 9.", SQUARE, "io"),
    ("Suppose n = 3. Then the answer is 9.", SQUARE, "io"),
    ("when x = [4,1,3], sort(x) == [1,3,4]", SORTED, "io"),
    ('{"input": "(3,)", "expected": 9}', SQUARE, "io"),  # the task file's own spelling
    ("3 as input gives 9", SQUARE, "bare"),
    ("3 ⟼ 9", SQUARE, "bare"),
    ("The function maps 3 to 9", SQUARE, "maps"),
    ("It turns [4, 1, 3] into [1, 3, 4]", SORTED, "maps"),
    ("| a=2, b=5 | 7 |", ADD, "table"),
    ("Output should be 9 for input 3.", SQUARE, "after"),
    ("the function returns 9 if given 3.", SQUARE, "after"),
    ("self.assertEqual(sq(3), 9)", SQUARE, "assert"),
    ("expect(f(3)).toBe(9)", SQUARE, "assert"),
    ("assert_eq!(f(3), 9)", SQUARE, "assert"),
]

NOT_SHOWN = [
    # (text, args, expected): the numbers are there, never tied to each other
    ("13 -> 9", (3,), 9),
    ("3 -> 19", (3,), 9),
    ("3 -> 9.5", (3,), 9),
    ("-3 -> 9", (3,), 9),
    ("3 -> -9", (3,), 9),
    ("f(3) -> 9", (3,), 8),
    ("f(30) -> 9", (3,), 9),
    ("Return 3 or 9.", (3,), 9),
    ("3 and 9", (3,), 9),
    ("f(3) and 9", (3,), 9),
    ("3 = 9", (3,), 9),
    ("3 is 9", (3,), 9),
    ("Given a list of 3 numbers, the result is 9 characters long.", (3,), 9),
    ("At most 3 items; returns 9 if none.", (3,), 9),
    ("x 1, 3 -> 9", (3,), 9),
    ("f(1, 2) -> 3", (2,), 3),
    ("f(3)", (3,), 9),
    ("-> 5", (), 5),
    ("'3' -> 9", (3,), 9),
    ("f('3') -> 9", (3,), 9),
    ("f(3) -> '9'", (3,), 9),
    ("f(True) -> 1", (1,), 1),
    ("if n == 3:\n        return 9", (3,), 9),
    ("TABLE = {3: 9, 4: 16}", (3,), 9),
    ("abcd -> cba", ("abc",), "cba"),
    ("1 <= n <= 10", (1,), 10),
    # the fix round's forms, each one's near miss
    ("Return the sum of 3 numbers; the result is 9 digits long at most.", (3,), 9),
    ("Given n, return n squared. Constraints: 0 <= n <= 3. Output fits in 9 bits.", (3,), 9),
    ("Takes 2 lists and returns 7 values", (2, 5), 7),
    ("returns 9 for 3 items", (3,), 9),
    ("It returns 9 for 30.", (3,), 9),
    ("The value for 13 is 9", (3,), 9),
    ("A value of 3 is 9 times smaller", (3,), 9),
    ("The value for 3 is 9 times smaller", (3,), 9),
    ("When n is 3 or more, the count is at most 9.", (3,), 9),
    ("n=3 is the smallest; 9 is the largest", (3,), 9),
    ("when 3 arrives, print 9 lines", (3,), 9),
    ("For 3 items return 9 items.", (3,), 9),
    ("a=2, b=15: 7", (2, 5), 7),
    ("2 + 15 = 7", (2, 5), 7),
    ("The 2 + 5 rule: never more than 7", (2, 5), 7),
    ("Step 3: total = 9", (3,), 9),
    ("f(3) = 4, f(5) = 9", (3,), 9),
    ("f(3) = 4 + 5", (3,), 9),  # arithmetic is not evaluated
    ("the list [4, 1, 3] has 3 items; the answer is 1", ([4, 1, 3],), 1),
    ("[4, 1, 3]" + " words" * 12 + " [1, 3, 4]", ([4, 1, 3],), [1, 3, 4]),
    ("[4, 1, 3] is one input. [1, 3, 4] is another.", ([4, 1, 3],), [1, 3, 4]),
    ("[[4, 1, 3], [2]] -> [1, 3, 4]", ([4, 1, 3],), [1, 3, 4]),
    ("'hello' and 'world' are words; 'olleh' is not", ("world",), "olleh"),
    ("Say hello to the olleh team", ("hello",), "olleh"),  # near reads a string quoted only
    ("1 <= n <= 1000, and the answer is at most 1000", (1000,), 1000),  # an input that is its own answer
    ("Values from 3 to 9.", (3,), 9),
    ("Take 3 to 9 items", (3,), 9),
    ("Convert 3 to 9-bit form", (3,), 9),
    ("maps each value to 9 buckets, 3 at a time", (3,), 9),
    ("Let n = 3 be the size; the list has 9 items", (3,), 9),
    ("f(n) = 9 for every n, n >= 3", (3,), 9),
    ("calls f(3), 9 times", (3,), 9),
    ("g(f(3), 9)", (3,), 9),
]


@pytest.mark.parametrize(("text", "args", "expected", "form"), SHOWN, ids=[s[0][:40] for s in SHOWN])
def test_each_form_of_a_hidden_test_is_found(text: str, args: tuple[Any, ...], expected: Any, form: str) -> None:
    assert found(text, args, expected) == form


@pytest.mark.parametrize(("text", "args", "expected"), NOT_SHOWN, ids=[s[0][:40] for s in NOT_SHOWN])
def test_numbers_that_are_not_tied_are_no_leak(text: str, args: tuple[Any, ...], expected: Any) -> None:
    assert found(text, args, expected) is None


@pytest.mark.parametrize(("text", "case", "form"), PHRASED, ids=[s[0][:40] for s in PHRASED])
def test_each_phrasing_of_an_example_is_found(text: str, case: tuple[tuple[Any, ...], Any], form: str) -> None:
    assert found(text, *case) == form


def test_a_long_literal_is_found_verbatim_and_only_whole() -> None:
    args, out = (list(range(400)),), list(range(400, 0, -1))
    assert found(f"f({args[0]}) -> {out}", args, out) in ("call", "verbatim")
    assert found(f"f({json.dumps(args[0])}) returns\n{json.dumps(out)}", args, out) in ("call", "verbatim")
    assert found(f"f({args[0]}) -> {out[1:]}", args, out) is None
    assert found(f"f({args[0][1:]}) -> {out}", args, out) is None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("0 -> 0 " * 20_000, False),  # the value after a connector everywhere, the arguments nowhere
        ("g(2) returns 0 " * 10_000, True),
        ("| 2 | 1 " * 20_000, False),
        (">>> g(3)\n0\n" * 10_000 + ">>> g(2)\n0", True),
        ("f(2)" + " " * 100_000 + "-> 0", True),  # a tie padded with a page of blanks is a tie
        ("\n" * 100_000 + "0", False),
        ("[" * 5_000 + "0" + "]" * 5_000, False),
        ("2 " * 50_000 + "2 -> 0", True),
        ("f(3) -> 0, 2 " * 5_000, False),  # the arguments' text near every value, never just before
        ("f(5, 2) -> 0 " * 5_000 + "f(2) -> 0", True),  # just before, in the wrong call, until the last
        ("the value for 12 is 0 " * 5_000, False),
        ("a=12: b=2 2: 0: " * 6_000, False),
        ("f(12) = 1 + 1 = 0 " * 6_000, False),
        ("returns 0 for 12 or 2x " * 5_000 + "returns 0 for 2.", True),
        ("2 + 12 = 0 " * 9_000, False),
        ("Input: 12 Output: 0 for 2x " * 3_500, False),
        ("[4, 1, 3] 5 0 " * 7_000, False),  # a distinctive input, the value parted from it by a literal
        (("[4, 1, 3]" + " x" * 31 + " [1, 3, 4] ") * 1_300, False),  # the value too far
        ("[4, 1, 3] and then 7 " * 5_000 + "[4, 1, 3] is [1, 3, 4]", True),
    ],
    ids=[
        "arrows", "calls", "table", "doctests", "blanks", "newlines", "brackets", "last-of-many", "near", "crafted",
        "noun", "keyed", "chain", "after", "op", "io", "near-parted", "near-far", "near-last",
    ],
)  # fmt: skip
def test_texts_built_to_be_slow_get_the_right_answer(text: str, shown: bool) -> None:
    """Linear in the text: each connector is read once, only near a value, a distinctive input's
    span once (at most a few hundred ms at 100 kB: ``benchmarks/bench_leaks.py``)."""
    secrets = [Secret(i, (2,), 0) for i in range(8)]
    secrets += [Secret(8, ([4, 1, 3],), [1, 3, 4]), Secret(9, ([4, 1, 3],), 0), Secret(10, (2, 2), 0)]
    assert bool(find_leaks({"description": text}, secrets)) is shown


def test_each_hidden_test_is_reported_once_with_where_it_shows() -> None:
    secrets = [Secret(4, (3,), 9), Secret(5, (4,), 16), Secret(6, (5,), 25)]
    hits = find_leaks({"description": "Squares.", "tags": "f(4) -> 16, 4 -> 16"}, secrets)
    assert [(h.test, h.part, h.form, h.excerpt) for h in hits] == [(5, "tags", "call", "f(4) -> 16")]
    assert "hidden test 5 shown in the tags" in describe(hits)
    assert find_leaks({"a": "f(3) -> 9", "b": "f(3) -> 9"}, secrets[:1])[0].part == "a"  # a test counts once
    assert describe([]) == ""


# -- the detector: random prose -------------------------------------------------------------------

_PROSE_TEXT = (
    "the list of numbers returns gives input output for is each value sorted in order -> = : and "
    "instance, result answer when called with g(120) [100,200] (300,400) 'abc' \"def\" | "
    "true-ish nothing 150 250 999 100 returns 777 -> 888 = 555 given 101 the answer is 102"
)
PROSE = _PROSE_TEXT.split()
"""Words honest prose is made of: connectors and numbers too (100 to 999, a range no test below uses).
Bare values just after a number and a comma are not searched (``1, 3 -> 9`` is no ``3 -> 9``): no
word here ends so."""

small_ints = st.one_of(st.integers(-99, 99), st.integers(1_000, 10**6))
floats = st.floats(-50, 50, allow_nan=False).filter(lambda x: not x.is_integer())
texts = st.text(alphabet="xyzQ09_ -", max_size=6)
scalars = st.one_of(st.none(), st.booleans(), small_ints, floats, texts)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(alphabet="xyz", min_size=1, max_size=3), scalars, max_size=2),
)


def _spell(value: Any, style: str, tight: bool) -> str:
    """A literal as a description might write it: Python's or JSON's, spaced or not."""
    if style == "json":
        return json.dumps(value, separators=(",", ":") if tight else (", ", ": "))
    text = repr(value)
    return text.replace(", ", ",").replace(": ", ":") if tight else text


@st.composite
def rendered_tests(draw: st.DrawFn) -> tuple[Secret, str]:
    """A hidden test and one line that shows it, in a form drawn at random."""
    args = tuple(draw(st.lists(values, max_size=3)))
    expected = draw(values)
    style = draw(st.sampled_from(["python", "json"]))
    tight = draw(st.booleans())
    shown_args = (", " if not tight else ",").join(_spell(a, style, tight) for a in args)
    exp = _spell(expected, style, tight)
    name = draw(st.sampled_from(["f", "solve_it", "Parser.run"]))
    call = f"{name}({shown_args})"
    connector = draw(st.sampled_from(["->", "==", "=", "=>", "→", "returns", "should return", "gives", "is"]))
    forms = [
        f"{call} {connector} {exp}",
        f"`{call}` returns `{exp}`.",
        f"\n>>> {call}\n{exp}\n",
        f"{exp} == {call}",
    ]
    if args:
        bare = shown_args if draw(st.booleans()) else f"({shown_args}{',' if len(args) == 1 else ''})"
        named = ", ".join(f"{k} = {_spell(a, style, tight)}" for k, a in zip("abc", args, strict=False))
        forms += [
            f"{bare} {draw(st.sampled_from(['->', '=>', '→', 'gives', 'returns', 'yields']))} {exp}",
            f"input {shown_args}, output {exp}",
            f"\nInput: {shown_args}\nOutput: {exp}\n",
            f"for {shown_args} the answer is {exp}",
            f"| {shown_args} | {exp} |",
            # the fix round's forms
            f"When {named}, the result is {exp}.",
            f"The value for {shown_args} is {exp}.",
            f"It returns {exp} for {shown_args}.",
            f"{named}: {exp}",
            f"{call} = 1 + 2 = {exp}",
            f"{shown_args} should become {exp}",
            f"| {call} | {exp} |",
            f"It maps {shown_args} to {exp}.",
            f"{call}  # returns {exp}",
        ]
        if len(args) >= 2:
            forms.append(f"{' + '.join(_spell(a, style, tight) for a in args)} = {exp}")
    return Secret(3, args, expected), draw(st.sampled_from(forms))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=rendered_tests(),
    before=st.lists(st.sampled_from(PROSE), max_size=12),
    after=st.lists(st.sampled_from(PROSE), max_size=12),
)
def test_a_hidden_test_in_any_form_inside_prose_is_found_and_the_prose_alone_is_clean(
    case: tuple[Secret, str], before: list[str], after: list[str]
) -> None:
    secret, line = case
    prose = " ".join(before) + " " + " ".join(after)
    assert find_leaks({"description": prose}, [secret]) == []
    text = " ".join(before) + " " + line + " " + " ".join(after)
    hits = find_leaks({"description": text}, [secret])
    assert [h.test for h in hits] == [3], text


# -- what each kind keeps hidden and shows ----------------------------------------------------------


def square_task(kind: str = "induction", description: str = "Return n squared.", n: int = 6, **kw: Any) -> Task:
    """``sq(n) = n * n`` on the tests 2, 3, 4, ... (test ``i`` is ``sq(i + 2)``)."""
    fields: dict[str, Any] = {
        "task_id": "sq",
        "kind": kind,
        "description": description,
        "entry_point": "sq",
        "reference_code": "def sq(n):\n    return n * n\n",
        "tests": [TestCase(input=f"({i},)", expected=i * i) for i in range(2, 2 + n)],
        **kw,
    }
    return Task.model_validate(fields)


@pytest.mark.parametrize("public", [1, 2, 3, 5, 10])
@pytest.mark.parametrize("total", [0, 1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("own", [None, 0, 1, 4])
def test_the_kinds_split_is_the_solvers(public: int, total: int, own: int | None) -> None:
    from spade_llm.solver import split_tests

    task = square_task(n=total, public_tests=own)
    assert public_indices(task, public) == split_tests(task, public)[0]


def test_induction_hides_the_tests_after_the_public_ones() -> None:
    # tests: sq(2)=4, sq(3)=9, sq(4)=16, ...; with 3 public the first three may be shown
    assert leaks(square_task(description="E.g. sq(3) -> 9 and sq(4) -> 16.")) == []
    hit = leaks(square_task(description="E.g. sq(5) -> 25."))
    assert [(h.test, h.part) for h in hit] == [(3, "description")]
    assert [h.test for h in leaks(square_task(description="E.g. sq(3) -> 9."), public_tests=1)] == [1]
    assert leaks(square_task(description="E.g. sq(5) -> 25.", public_tests=4)) == []  # the task's own split
    assert [h.test for h in leaks(square_task(tags=["sq(6) -> 36"]))] == [4]  # a template may show tags


def test_a_hidden_test_that_copies_a_public_one_is_shown() -> None:
    task = square_task()
    task.tests[4] = TestCase(input="(2,)", expected=4)  # the same as public test 0
    assert [(h.test, h.part) for h in leaks(task)] == [(4, "public tests")]


@pytest.mark.parametrize("kind", ["deduction", "abduction"])
def test_a_query_kind_hides_every_test_and_shows_its_program(kind: str) -> None:
    assert [h.test for h in leaks(square_task(kind, description="E.g. sq(2) -> 4."))] == [0]
    doc = square_task(kind, reference_code='def sq(n):\n    """>>> sq(4)\n    16\n    """\n    return n * n\n')
    assert [(h.test, h.part, h.form) for h in leaks(doc)] == [(2, "program", "doctest")]
    asserted = square_task(kind, reference_code="def sq(n):\n    return n * n\n\nassert sq(7) == 49\n")
    assert [h.test for h in leaks(asserted)] == [5]
    unittest = square_task(kind, reference_code="def sq(n):\n    return n * n\n\nassertEqual(sq(7), 49)\n")
    assert [(h.test, h.form) for h in leaks(unittest)] == [(5, "assert")]
    commented = square_task(kind, reference_code="def sq(n):\n    return n * n  # e.g. 5 -> 25\n")
    assert [(h.test, h.part) for h in leaks(commented)] == [(3, "program's comments and strings")]
    # the program's own logic is the exercise, not a leak: code is read for calls only
    logic = square_task(kind, reference_code="def sq(n):\n    if n == 3:\n        return 9\n    return n * n\n")
    assert leaks(logic) == []
    returns = square_task(kind, reference_code="def sq(n):\n    if n < 0:\n        return 3\n    return 9\n")
    assert leaks(returns) == []  # `3 ... return 9` in code is no `3 -> 9`
    assert get_kind(kind).shown_text(logic, 3)["program"] == logic.reference_code


def test_tests_without_an_answer_yet_cannot_leak() -> None:
    task = square_task(description="sq(5) -> 25")
    unfilled = task.model_copy(update={"tests": [TestCase(input=t.input) for t in task.tests]})
    assert leaks(unfilled) == []


# -- the gate ----------------------------------------------------------------------------------------


class NoSandbox:
    """A sandbox that must not be used: the static part of the gates runs nothing."""

    name = "none"

    def run(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the sandbox ran")

    def close(self) -> None:
        pass


def validator(sandbox: Any) -> Validator:
    return Validator(sandbox, Limits(timeout_s=10), 2.0)


def test_a_leak_the_author_wrote_is_rejected_before_anything_runs() -> None:
    task = square_task(description="Return n squared: sq(5) returns 25.")
    report = run_gates(validator(NoSandbox()), task)
    assert (report.valid, report.reason) == (False, LEAK_REASON)
    assert "hidden test 3 shown in the description" in report.detail and "sq(5) returns 25" in report.detail


def test_static_reasons_come_before_the_leak(sandbox: Any) -> None:
    leaking = "Return n squared: sq(5) returns 25."
    broken = square_task(description=leaking).model_copy(update={"reference_code": "def sq(n:\n"})
    assert run_gates(validator(sandbox), broken).reason == "syntax_error"
    renamed = square_task(description=leaking).model_copy(update={"entry_point": "cube"})
    assert run_gates(validator(sandbox), renamed).reason == "missing_entry_point"
    few = square_task(description="sq(4) -> 16", n=3)  # 3 tests: 1 public, 2 hidden
    assert run_gates(validator(sandbox), few).reason == LEAK_REASON
    assert run_gates(validator(sandbox), square_task(description=leaking, n=2)).reason == "too_few_tests"


def test_a_leak_of_a_value_the_reference_fills_is_found_after_the_run(sandbox: Any) -> None:
    task = square_task(description="For example `sq(6)` gives `36`.")
    unfilled = task.model_copy(update={"tests": [TestCase(input=t.input) for t in task.tests]})
    report = run_gates(validator(sandbox), unfilled)
    assert (report.reason, report.status, report.behaviour) == (LEAK_REASON, "passed", None)
    assert report.task is not None and report.task.tests[4].expected == 36
    # later reasons give way to the leak: a reference that raises on another test
    raising = unfilled.model_copy(
        update={"reference_code": "def sq(n):\n    if n == 7:\n        raise ValueError(n)\n    return n * n\n"}
    )
    assert run_gates(validator(sandbox), raising).reason == LEAK_REASON


def test_verify_runs_the_reference_on_every_test_of_a_leaking_task(sandbox: Any) -> None:
    task = square_task(description="Return n squared: sq(5) returns 25.")
    report = run_gates(validator(sandbox), task, full=True)
    assert (report.reason, report.status, report.tests_passed, report.tests_total) == (LEAK_REASON, "passed", 6, 6)


def test_an_honest_task_passes_the_gates(sandbox: Any) -> None:
    report = run_gates(validator(sandbox), square_task(description="Return n squared, e.g. sq(3) -> 9."))
    assert report.valid, report.detail


def test_the_run_checker_gates_with_the_runs_public_count(sandbox: Any) -> None:
    task = square_task(description="Return n squared: sq(4) -> 16.")  # test 2: public with 3, hidden with 1
    for public, reason in ((3, None), (1, LEAK_REASON)):
        checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess"), 1, public_tests=public)
        assert asyncio.run(checker.validate(task)).reason == reason


def test_an_imported_benchmark_is_not_rejected_for_its_docstring(sandbox: Any) -> None:
    task = square_task(description=">>> sq(5)\n25", public_tests=0)
    assert task.shows_examples and [h.test for h in leaks(task)] == [3]
    assert run_gates(validator(sandbox), task).valid


def test_a_run_rejects_leaking_proposals_and_counts_them(tmp_path: Path, sandbox: Any) -> None:
    """``run`` (and ``serve-env``, whose loop is the same controller): the checker's gate, recorded as
    every other reason is (rejected.jsonl, rejected_by_reason, the funnel)."""
    from test_controller import StubExecutor

    from spade_llm.config import load_config
    from spade_llm.controller import Controller
    from spade_llm.generator import Candidate, Proposal
    from spade_llm.llm.stats import LLMStats
    from spade_llm.store import RunDir

    class Leaky:
        async def propose(self, ctx: Any) -> Proposal:
            p = Proposal(request_index=ctx.request_index)
            for i, description in enumerate(["Square n; sq(5) returns 25.", "Square n; sq(2) returns 4."]):
                task = square_task(description=description).model_copy(
                    update={
                        "task_id": f"t{ctx.request_index}-{i}",
                        "meta": {"epoch": ctx.epoch, "target_difficulty": ctx.difficulty},
                    }
                )
                p.candidates.append(Candidate((ctx.request_index, i), task=task, raw={}))
            return p

    config = load_config(None, {"controller": {"epochs": 1, "tasks_per_epoch": 2, "proposals_per_request": 2}})
    run = RunDir.create(tmp_path / "run")
    run.touch_journals()
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess"), 2)
    executor = StubExecutor(lambda d: 0.5)
    asyncio.run(Controller(config, run, Leaky(), executor, checker, LLMStats(), log=lambda _m: None).run_all())
    rejected = [json.loads(x) for x in (run.path / "rejected.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rejected] == [LEAK_REASON]
    metrics = json.loads((run.path / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["rejected_by_reason"] == {LEAK_REASON: 1}
    assert (metrics["funnel"]["parsed"], metrics["funnel"]["valid"], metrics["funnel"]["accepted"]) == (2, 1, 1)


def test_proposal_reward_pays_nothing_for_a_leaking_task(sandbox: Any) -> None:
    from spade_llm.config import RunConfig
    from spade_llm.rewards.proposal import make_proposal_reward

    reward = make_proposal_reward(
        samples=2, config=RunConfig.model_validate({"sandbox": {"test_timeout_s": 0.5}}), sandbox=sandbox
    )
    task = {
        "description": "Write `sq(n)`, n squared. Example: sq(6) -> 36.",
        "entry_point": "sq",
        "reference_code": "def sq(n):\n    return n * n\n",
        "tests": [{"input": f"({i},)"} for i in range(2, 8)],
    }
    verdict = reward.score(json.dumps({"tasks": [task]}), n=1)
    (outcome,) = verdict.tasks
    assert (verdict.score, outcome.reason, outcome.samples) == (0.0, LEAK_REASON, 0)


# -- the commands ----------------------------------------------------------------------------------


def _write(path: Path, tasks: list[Task]) -> Path:
    path.write_text("".join(json.dumps(t.dump()) + "\n" for t in tasks), encoding="utf-8")
    return path


def test_verify_rejects_a_leaking_task_and_reports_a_benchmarks(tmp_path: Path, capsys: Any) -> None:
    leaking = square_task(description="sq(5) returns 25").model_copy(update={"task_id": "leaky"})
    honest = square_task(description="Return n squared.").model_copy(update={"task_id": "honest"})
    bench = square_task(description=">>> sq(5)\n25", public_tests=0).model_copy(update={"task_id": "bench"})
    tasks = _write(tmp_path / "t.jsonl", [leaking, honest, bench])
    assert cli.main(["verify", str(tasks), "--sandbox", run_backend()]) == 0
    out, err = capsys.readouterr()
    rows = {r["task_id"]: r for r in map(json.loads, out.splitlines())}
    leaky = rows["leaky"]
    assert (leaky["reason"], leaky["status"], leaky["tests_passed"]) == (LEAK_REASON, "passed", 6)
    assert rows["honest"]["valid"] and "leaks_hidden_test" not in rows["honest"]
    assert rows["bench"]["valid"] and rows["bench"]["leaks_hidden_test"] == [3]
    assert f"'{LEAK_REASON}': 1" in err
    config = tmp_path / "c.yaml"
    config.write_text("solver:\n  public_tests: 4\n")  # test 3 is public now
    assert cli.main(["verify", str(tasks), "--sandbox", run_backend(), "--config", str(config)]) == 0
    rows = {r["task_id"]: r for r in map(json.loads, capsys.readouterr()[0].splitlines())}
    assert rows["leaky"]["valid"]


def test_evaluate_names_leaking_tasks_and_marks_their_rows(tmp_path: Path, capsys: Any) -> None:
    leaking = square_task(description="sq(5) returns 25").model_copy(update={"task_id": "leaky"})
    honest = square_task().model_copy(update={"task_id": "honest"})
    tasks = _write(tmp_path / "t.jsonl", [leaking, honest])
    assert cli.main(["evaluate", str(tasks), "--sandbox", run_backend()]) == 0
    out, err = capsys.readouterr()
    rows = {r["task_id"]: r for r in map(json.loads, [x for x in out.splitlines() if x.startswith("{")])}
    assert rows["leaky"]["passed"] and rows["leaky"]["leaks_hidden_test"] == [3]  # judged as written
    assert "leaks_hidden_test" not in rows["honest"]
    (line,) = [x for x in err.splitlines() if "hidden test" in x]
    assert "1 task(s)" in line and "leaky" in line and "honest" not in line


def test_solve_names_leaking_tasks_and_keeps_their_split(tmp_path: Path, capsys: Any) -> None:
    leaking = square_task(description="Square it. sq(5) returns 25").model_copy(update={"task_id": "leaky"})
    tasks = _write(tmp_path / "t.jsonl", [leaking, square_task().model_copy(update={"task_id": "honest"})])
    out = tmp_path / "solved"
    args = ["solve", str(tasks), "--model", "fake/strong-solver", "--sandbox", run_backend(), "--out", str(out)]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    assert any("1 task(s)" in x and "leaky" in x for x in err.splitlines())
    written = {t["task_id"]: t for t in map(json.loads, (out / "tasks.jsonl").read_text().splitlines())}
    assert written["leaky"]["meta"][LEAK_REASON] == [3] and LEAK_REASON not in written["honest"]["meta"]
    assert written["leaky"]["tests"] == [t.dump() for t in leaking.tests]  # the split as written


def test_mark_leaks_replaces_an_old_mark() -> None:
    stale = square_task(meta={LEAK_REASON: [1]})
    (task,), ids = mark_leaks([stale])
    assert ids == [] and LEAK_REASON not in task.meta


def test_a_task_searched_once_is_found_in_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task file judged again (an evaluation per checkpoint) is not searched again: on main every
    ``spade evaluate`` of imported HumanEval spent ~0.5 s searching its docstrings anew."""
    leaking = square_task(description="sq(5) returns 25").model_copy(update={"task_id": "leaky"})
    honest = square_task().model_copy(update={"task_id": "honest"})
    first, ids = mark_leaks([leaking, honest])
    assert ids == ["leaky"] and first[0].meta[LEAK_REASON] == [3]

    def searched(task: Task, public_tests: int) -> list[Any]:
        raise AssertionError(f"{task.task_id} searched again")

    monkeypatch.setattr(kinds, "leaks", searched)
    again, ids = mark_leaks([leaking, honest])
    assert ids == ["leaky"] and again == first
    again, ids = mark_leaks([first[0], honest])  # with the mark it got: the same task
    assert ids == ["leaky"] and again == first


def test_a_changed_task_or_split_is_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    leaking = square_task(description="sq(5) returns 25")
    mark_leaks([leaking])
    searched: list[str] = []
    real = kinds.leaks

    def counted(task: Task, public_tests: int) -> list[Any]:
        searched.append(f"{task.description} / {public_tests}")
        return real(task, public_tests)

    monkeypatch.setattr(kinds, "leaks", counted)
    (task,), ids = mark_leaks([leaking.model_copy(update={"description": "Return n squared."})])
    assert ids == [] and LEAK_REASON not in task.meta
    (task,), ids = mark_leaks([leaking], public_tests=4)  # test 3 is public now
    assert ids == [] and LEAK_REASON not in task.meta
    assert searched == ["Return n squared. / 3", "sq(5) returns 25 / 4"]


def test_a_cache_entry_no_search_could_have_made_is_searched_again() -> None:
    leaking = square_task(description="sq(5) returns 25")
    mark_leaks([leaking])
    (entry,) = (cache.cache_dir() / LEAK_CACHE).iterdir()
    for damaged in ("[99]", "[3, 3]", '{"3": true}', "[3"):
        entry.write_text(damaged)
        (task,), ids = mark_leaks([leaking])
        assert ids == ["sq"] and task.meta[LEAK_REASON] == [3]
        assert json.loads(entry.read_text()) == [3]


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=6),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=4),
)
def test_a_benchmarks_hidden_tests_are_those_no_example_shows(
    tests: list[tuple[int, int]], examples: list[tuple[int, int]]
) -> None:
    """The examples are read once per task, not once per test: the split is the pairwise one's."""
    task = square_task(
        public_tests=0,
        tests=[TestCase(input=f"({a},)", expected=b) for a, b in tests],
        examples=[TestCase(input=f"({a},)", expected=b) for a, b in examples],
    )
    pairwise = [i for i, t in enumerate(task.tests) if not any(same_case(t, e) for e in task.examples)]
    assert kind_base.tests_after_public(task, 3) == pairwise == [i for i, t in enumerate(tests) if t not in examples]


# -- imported benchmarks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval() -> list[Task]:
    from spade_llm.tasksets.importers import import_humaneval

    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    return import_humaneval(HUMANEVAL)


def test_humaneval_asserts_its_docstrings_show_are_public(humaneval: list[Task]) -> None:
    shown = [t for t in humaneval if t.meta.get("docstring_tests")]
    assert len(shown) == 126 and sum(len(t.meta["docstring_tests"]) for t in shown) == 335
    assert all(leaks(t) == [] for t in humaneval)  # every assert a docstring shows is an example now
    by_id = {t.task_id: t for t in humaneval}
    # the fix round's forms found 7 more, each shown: "-> 19 - 5 - 6 = 8" (a worked example, 3 of
    # them), `decimal_to_binary(32)   # returns "db100000db"` (2), "For N = 147, the sum of digits
    # will be 12 the output should be "1100"", and a doctest whose answer is mistyped (`== ""aaaaaaa"`)
    assert by_id["HumanEval/67"].meta["docstring_tests"] == [0, 2, 4]
    assert by_id["HumanEval/79"].meta["docstring_tests"] == [1, 3]
    assert 2 in by_id["HumanEval/84"].meta["docstring_tests"]
    assert 2 in by_id["HumanEval/158"].meta["docstring_tests"]
    fly = by_id["HumanEval/72"]  # "will_it_fly([3, 2, 3], 9) ➞ True": not a doctest, shown all the same
    assert ("([3, 2, 3], 9)", True) in [(e.input, e.expected) for e in fly.examples]
    assert all(t.shows_examples and t.public_tests == 0 for t in humaneval)  # the asserts still decide


def test_import_says_how_many_docstrings_carry_asserts(tmp_path: Path, capsys: Any) -> None:
    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    assert cli.main(["import", "humaneval", str(HUMANEVAL), "-o", str(tmp_path / "he.jsonl")]) == 0
    assert "126 show 335 of their asserts in their docstring" in capsys.readouterr().err


def test_an_imported_file_is_evaluated_without_searching_it_again(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spade import`` checks the tasks it writes for leaks; ``evaluate`` then finds every check done."""
    import gzip

    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    with gzip.open(HUMANEVAL, "rt") as f:
        rows = [next(f) for _ in range(3)]
    source = tmp_path / "he3.jsonl.gz"
    with gzip.open(source, "wt") as f:
        f.writelines(rows)
    tasks = tmp_path / "he.jsonl"
    assert cli.main(["import", "humaneval", str(source), "-o", str(tasks)]) == 0
    assert len(list((cache.cache_dir() / LEAK_CACHE).iterdir())) == 3

    def searched(task: Task, public_tests: int) -> list[Any]:
        raise AssertionError(f"{task.task_id} searched again")

    monkeypatch.setattr(kinds, "leaks", searched)
    capsys.readouterr()
    assert cli.main(["evaluate", str(tasks), "--sandbox", run_backend()]) == 0
    out = capsys.readouterr().out
    assert [json.loads(x)["passed"] for x in out.splitlines() if x.startswith("{")] == [True] * 3


# -- the fake generator ----------------------------------------------------------------------------


def fake_tasks(kind: str, n: int) -> list[Task]:
    """``n`` tasks of ``kind`` as the fake proposes them through the generator's own prompt, every
    expected value filled by running the reference in-process (validation fills them so)."""
    from spade_llm.fake.model import FakeLLM
    from spade_llm.fake.running import run_in_process
    from spade_llm.generator import LLMGenerator, ProposalContext
    from spade_llm.sandbox.runner import parse_input
    from spade_llm.sandbox.verdict import to_json
    from spade_llm.templates import Prompts

    generator = LLMGenerator(FakeLLM("default"), Prompts(), temperature=1.0, max_tokens=4096)
    out: list[Task] = []
    r = 0
    while len(out) < n:
        ctx = ProposalContext(
            epoch=r // 8,
            request_index=r % 8,
            n=4,
            difficulty=[0.2, 0.4, 0.6, 0.8][r % 4],
            capability=0.5,
            examples=[],
            avoid_tags=[],
            seed=1000 + r,
            kind=kind,
            run_seed=7,
        )
        r += 1
        for c in asyncio.run(generator.propose(ctx)).candidates:
            if c.task is None or len(out) >= n:
                continue
            args = [parse_input(t.input) for t in c.task.tests]
            calls = run_in_process(c.task.reference_code, c.task.entry_point, [a for a in args if isinstance(a, tuple)])
            tests = [
                t if t.has_expected else TestCase(input=t.input, expected=to_json(o.value))
                for t, o in zip(c.task.tests, calls, strict=True)
            ]
            out.append(c.task.model_copy(update={"tests": tests}))
    return out


@pytest.mark.parametrize("kind", ["induction", "deduction", "abduction"])
def test_the_fakes_descriptions_show_no_test(kind: str) -> None:
    tasks = fake_tasks(kind, 24)
    assert [t.task_id for t in tasks if leaks(t, public_tests=1)] == []
    assert sum("\n\n" in t.description for t in tasks) >= 18  # most still show an example


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["induction", "deduction", "abduction"])
def test_no_hidden_test_in_200_fake_tasks_of_each_kind(kind: str) -> None:
    """The issue's figure (a685e31, this detector: 115 of 200 induction tasks, 200 of 200 deduction
    and abduction tasks showed a hidden test)."""
    tasks = fake_tasks(kind, 200)
    leaking = [(t.task_id, leaks(t, public_tests=1)[0].excerpt) for t in tasks if leaks(t, public_tests=1)]
    assert leaking == []


def test_the_fake_leaves_out_a_test_its_statement_spells_out() -> None:
    import random

    from spade_llm.fake import bank

    variant = bank.compose((("bits_of", 0),))  # "... as a list of bits (0 gives [0])", and 0 is an edge case
    assert (0,) in variant.edges(variant.params[0])
    for seed in range(10):
        task = bank.build_task(variant, random.Random(seed), 0.5)
        assert (0,) not in task.inputs and len(task.inputs) >= 5
        secrets = [Secret(i, tuple(a), o) for i, (a, o) in enumerate(zip(task.inputs, task.outputs, strict=True))]
        assert find_leaks({"description": task.description}, secrets) == []


def test_every_familys_honest_statement_shows_none_of_its_tests() -> None:
    """The negatives of the fix round's forms: every classic variant of the fake's 14 families and
    every building block alone, over seeds, its statement read against all of its tests (the fake
    leaves out a test its statement spells out, so none may show; before the fix as after, 0)."""
    import random

    from spade_llm.fake import bank

    variants: list[Any] = list(bank.VARIANTS)
    for step in bank.STEPS:
        try:
            variants.append(bank.compose(((step.name, 0),)))
        except ValueError:  # a block that neither reads an input nor returns a value alone
            continue
    assert len({v.family for v in bank.VARIANTS}) == 14 and len(variants) > 150
    shown = []
    for variant in variants:
        for seed in range(2):
            task = bank.build_task(variant, random.Random(seed), 0.5)
            secrets = [Secret(i, tuple(a), o) for i, (a, o) in enumerate(zip(task.inputs, task.outputs, strict=True))]
            shown += [(variant.name, h.form, h.excerpt) for h in find_leaks({"description": task.description}, secrets)]
    assert shown == []


def test_prose_vocabulary_has_no_literal_the_property_draws() -> None:
    # the negative half of the property relies on it: prose numbers are 100..999, strings lack x, y, z, Q
    assert not any(set(w) & set("xyzQ") for w in PROSE)
    assert all(100 <= int(w) <= 999 for w in PROSE if w.isdigit())
