"""The procedural bug maker (``languages/python_bugs.py``): every family it promises, edits that keep the
rest of the program as it was, the same bugs for the same key, and the classifier reading them back."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.languages import PYTHON
from spade_llm.languages.python_bugs import FAMILIES

REFERENCE = '''def scan(xs, k):
    """Sum the items before the first negative one, skipping those above k."""
    total = 0
    for i in range(0, len(xs)):
        if xs[i] < 0:
            break
        if xs[i] > k:
            continue
        else:
            total = total + xs[i]  # the running sum
    return max(total, 0)
'''


def _changed(before: str, after: str) -> int:
    a, b = PYTHON.normalised(before), PYTHON.normalised(after)
    assert a is not None and b is not None
    ops = difflib.SequenceMatcher(a=a.splitlines(), b=b.splitlines(), autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in ops if op != "equal")


def test_every_family_people_make_is_made_and_read_back() -> None:
    made = PYTHON.bugs(REFERENCE, 200, 1, key="k")
    families = {b.edits[0] for b in made}
    assert set(FAMILIES) <= families, set(FAMILIES) - families
    for bug in made:
        assert len(bug.edits) == 1
        compile(bug.source, "<bug>", "exec")
        assert PYTHON.normalised(bug.source) != PYTHON.normalised(REFERENCE)
        assert bug.diff.startswith("line ")
        if bug.edits[0] in FAMILIES:  # the classifier names a human-style edit as it was made
            assert PYTHON.edit_families(REFERENCE, bug.source) == bug.edits, bug.diff


def test_an_edit_keeps_the_rest_of_the_text_and_its_comments() -> None:
    for bug in PYTHON.bugs(REFERENCE, 60, 1, key="layout"):
        assert "# the running sum" in bug.source or bug.edits == ("dropped_branch",)
        assert _changed(REFERENCE, bug.source) <= 2  # a dropped else takes its two lines
        kept = [line for line in REFERENCE.splitlines() if line in bug.source.splitlines()]
        assert len(kept) >= len(REFERENCE.splitlines()) - 2


def test_no_parentheses_the_author_did_not_write() -> None:
    for bug in PYTHON.bugs(REFERENCE, 80, 1, key="parens"):
        added = [line for line in bug.diff.splitlines() if line.startswith("+")]
        bare = [line.replace("not (", "not ") for line in added]  # a negated condition keeps its own
        assert not any("((" in line or "(xs[i] <" in line or "(xs[i] >" in line for line in bare), bug.diff


def test_combined_bugs_have_the_sizes_asked_for_and_are_distinct() -> None:
    made = PYTHON.bugs(REFERENCE, 12, 3, key="combine", min_edits=3)
    assert len(made) == 12
    assert all(len(b.edits) == 3 for b in made)
    assert len({PYTHON.normalised(b.source) for b in made}) == 12
    spread = PYTHON.bugs(REFERENCE, 30, 3, key="spread")
    assert {len(b.edits) for b in spread} == {1, 2, 3}


def test_the_same_key_the_same_bugs_another_key_others() -> None:
    first = [b.source for b in PYTHON.bugs(REFERENCE, 10, 2, key="a")]
    assert first == [b.source for b in PYTHON.bugs(REFERENCE, 10, 2, key="a")]
    assert first != [b.source for b in PYTHON.bugs(REFERENCE, 10, 2, key="b")]


def test_code_that_does_not_parse_or_has_nothing_to_break_has_no_bugs() -> None:
    assert PYTHON.bugs("def f(:\n", 5, 2) == []
    assert PYTHON.bugs("def f():\n    pass\n", 5, 2) == []
    assert PYTHON.edit_families("def f(:\n", REFERENCE) == ()


def test_the_classifier_names_hand_written_bugs() -> None:
    cases = {
        "off_by_one": REFERENCE.replace("range(0, len(xs))", "range(0, len(xs) - 1)"),
        "inverted_boundary": REFERENCE.replace("xs[i] < 0", "xs[i] <= 0"),
        "wrong_variable": REFERENCE.replace("total + xs[i]", "total + k"),
        "swapped_arguments": REFERENCE.replace("max(total, 0)", "max(0, total)"),
        "removed_return": REFERENCE.replace("            break\n", "            pass\n"),
        "dropped_branch": REFERENCE.replace("        else:\n", "").replace(
            "            total = total + xs[i]  # the running sum\n", ""
        ),
    }
    for family, buggy in cases.items():
        assert family in PYTHON.edit_families(REFERENCE, buggy), family


@settings(max_examples=40, deadline=None)
@given(key=st.text(max_size=8), edits=st.integers(1, 3))
def test_every_bug_compiles_and_stays_small_for_any_key(key: str, edits: int) -> None:
    for bug in PYTHON.bugs(REFERENCE, 6, edits, key=key, min_edits=edits):
        compile(bug.source, "<bug>", "exec")
        assert len(bug.edits) == edits
        assert 1 <= _changed(REFERENCE, bug.source) <= 2 * edits


def test_no_edit_lands_in_a_type_annotation() -> None:
    # HumanEval's signatures: ``-> List[str]`` became ``-> List[str + 1]``, no bug at all, and a changed
    # signature line the statement shows (the bug gates turned each such candidate down as given away)
    code = (
        "from typing import List, Optional\n\n"
        "def pick(xs: List[int], k: Optional[int] = None) -> List[int]:\n"
        "    out: List[int] = []\n"
        "    for i in range(len(xs)):\n"
        "        if k is None or xs[i] < k:\n"
        "            out.append(xs[i] + 1)\n"
        "    return out\n"
    )
    made = PYTHON.bugs(code, 200, 1, key="typing")
    assert len(made) >= 10
    for bug in made:
        kept = [line for line in bug.source.splitlines() if "List[" in line]
        assert kept == ["def pick(xs: List[int], k: Optional[int] = None) -> List[int]:", "    out: List[int] = []"]


@pytest.mark.parametrize("code", ["x = [1, 2]\nprint(x[0] + 1)\n"])
def test_a_whole_program_is_broken_at_its_top_level_only_when_asked(code: str) -> None:
    assert PYTHON.bugs(code, 5, 1, key="p") == []
    assert PYTHON.bugs(code, 5, 1, key="p", whole_program=True)


def test_a_form_feed_or_line_separator_in_a_string_does_not_shift_the_line_edits() -> None:
    code = (
        'def f(xs):\n    sep = "a\x0cb\u2028c"\n    for x in xs:\n        if x:\n'
        '            continue\n        else:\n            return sep\n    return ""\n'
    )
    made = PYTHON.bugs(code, 60, 1, key="ff")
    dropped = [b for b in made if b.edits == ("dropped_branch",)]
    assert any("continue" in b.source and "else" not in b.source for b in dropped)
    assert any(b.edits == ("removed_return",) and "            pass\n" in b.source for b in made)
