"""The language seam (issue 36): the ``Language`` contract and Python, its one implementation."""

from __future__ import annotations

import pytest
from builders import make_task

from spade_llm.errors import UserError
from spade_llm.languages import DEFAULT_LANGUAGE, LANGUAGES, PYTHON, Statement, get_language, language_of


def test_python_is_the_default_and_the_registry_refuses_an_unknown_name() -> None:
    assert get_language(DEFAULT_LANGUAGE) is PYTHON and list(LANGUAGES) == ["python"]
    with pytest.raises(UserError, match="unknown language 'cobol'; known: python"):
        get_language("cobol")
    assert language_of(make_task()) is PYTHON


@pytest.mark.parametrize(
    ("code", "banned", "reason"),
    [
        ("def f(:\n", frozenset(), "syntax_error"),
        ("import random\ndef f(x): return x", frozenset({"random"}), "banned_import"),
        ("import importlib\ndef f(x): return importlib.import_module('os.path')", frozenset({"os"}), "banned_import"),
        ("def g(x): return x", frozenset(), "missing_entry_point"),
        ("if True:\n    def f(x): return x", frozenset(), None),
        ("from math import sqrt as f", frozenset(), None),
    ],
)
def test_static_error_names_the_first_gate_failed(code: str, banned: frozenset[str], reason: str | None) -> None:
    found = PYTHON.static_error(code, "f", banned)
    assert (found[0] if found else None) == reason, found


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("class Solution:\n    def f(self, x): return x", None),
        ("class Solution:\n    if True:\n        def f(self, x): return x", None),
        ("def f(x): return x", "missing_entry_point"),  # a function is no method of the class
        ("class Solution:\n    def g(self, x): return x", "missing_entry_point"),
        ("class Other:\n    def f(self, x): return x", "missing_entry_point"),
        ("def make():\n    class Solution:\n        def f(self, x): return x", "missing_entry_point"),
    ],
)
def test_with_an_entry_class_the_entry_point_is_a_method_of_that_class(code: str, reason: str | None) -> None:
    found = PYTHON.static_error(code, "f", frozenset(), "Solution")
    assert (found[0] if found else None) == reason, found
    if found:
        assert "Solution.f" in found[1]


def test_literals_and_statements_read_what_an_answer_says() -> None:
    assert PYTHON.literal("(1, [2, 'a'], {3: None})") == (1, [2, "a"], {3: None})
    with pytest.raises((ValueError, SyntaxError)):
        PYTHON.literal("__import__('os')")
    said = PYTHON.statements("f(1, 2) == 3\nf(4)\n5\nf(x) == 1\nf(1) == g()")
    assert said == [
        Statement(args=(1, 2), value=3, has_value=True),
        Statement(args=(4,)),
        Statement(value=5, has_value=True),
        Statement(args=(1,), value=None, has_value=False, error="the value after == is not a Python literal"),
    ]
    assert PYTHON.statements("f(1) -> 2, so the answer is") is None


def test_prose_tokens_and_mutants() -> None:
    code = "def f(x):\n    # the secret is 42\n    return x + 1  # plus one\n"
    assert PYTHON.prose(code) == "# the secret is 42\n# plus one"
    renamed = "def g(y):\n    return y + 7\n"
    assert PYTHON.code_tokens(code) == PYTHON.code_tokens(renamed)
    assert PYTHON.code_tokens("def f(:") == ["def", "f", "(", ":"]  # broken code: a plain split
    mutants = PYTHON.mutants(code, 10, key="k")
    assert mutants and all(m.source != code for m in mutants)
    assert {m.operator for m in mutants} >= {"arithmetic", "literal"}
    assert list(PYTHON.mutants(code, 10, key="k")) == list(mutants)  # a stable choice for a key
