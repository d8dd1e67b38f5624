"""The kind seam (docs/layout.md, "Adding a kind"): every decision about a task kind is an attribute
of its ``TaskKind``, set in its module under ``spade_llm/kinds/``; the rest of the package asks
``get_kind(task.kind)`` and never names a kind.

The scan covers every string in a module outside ``kinds/`` and ``fake/`` (the fake model plays each
kind, so it names them): string constants read with ``ast`` (docstrings included), and any quoted
kind name in the source text, so a doctest or a comment that quotes one counts too (the issue's
acceptance: ``grep -rn '"induction"\\|"deduction"\\|"abduction"' spade_llm`` outside those two finds
nothing).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pydantic
import pytest

from spade_llm.kinds import DEFAULT_KIND, KIND_NAMES, get_kind, kind_for_field_tests
from spade_llm.kinds.base import TaskKind
from spade_llm.templates import PACKAGED_DIR, TEMPLATE_VARIABLES
from spade_llm.types import Task

PACKAGE = Path(__file__).resolve().parents[2] / "spade_llm"
KIND_HOMES = ("kinds", "fake")
"""The folders of ``spade_llm`` that may name a kind."""


def _outside_kinds() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in KIND_HOMES or p.parent == PACKAGE
    )


def test_no_kind_name_outside_kinds_and_fake():
    quoted = re.compile("[\"'](" + "|".join(map(re.escape, KIND_NAMES)) + ")[\"']")
    found = []
    for path in _outside_kinds():
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and node.value in KIND_NAMES:
                found.append(f"{where}:{node.lineno}: the string {node.value!r}")
        for n, line in enumerate(source.splitlines(), 1):
            if quoted.search(line):
                found.append(f"{where}:{n}: {line.strip()}")
    assert found == [], "ask get_kind(task.kind) (a TaskKind attribute) or use DEFAULT_KIND:\n" + "\n".join(found)


def test_the_scan_sees_the_package():
    files = {p.relative_to(PACKAGE).as_posix() for p in _outside_kinds()}
    assert {"integrations/trl.py", "rewards/groundtruth.py", "rewards/code.py", "report/charts.py", "types.py"} <= files
    assert not any(f.startswith(("kinds/", "fake/")) for f in files)


def test_one_list_of_names():
    assert DEFAULT_KIND in KIND_NAMES
    assert len(set(KIND_NAMES)) == len(KIND_NAMES)
    for name in KIND_NAMES:
        kind = get_kind(name)
        assert isinstance(kind, TaskKind)
        assert kind.name == name  # the module named for the kind holds it
        for template in (kind.first_template, kind.repair_template):
            assert (PACKAGED_DIR / template).is_file()
            assert template in TEMPLATE_VARIABLES  # `spade prompts check` renders it


def test_types_validate_kinds_against_the_registry():
    base: dict[str, Any] = {"task_id": "t", "description": "d", "entry_point": "f", "reference_code": "", "tests": []}
    assert Task(**base).kind == DEFAULT_KIND
    for name in KIND_NAMES:
        assert Task(**base, kind=name).kind == name
    with pytest.raises(
        pydantic.ValidationError, match="unknown task kind 'poetry'; known: abduction, bugfix, deduction"
    ):
        Task(**base, kind="poetry")
    assert Task.model_json_schema()["properties"]["kind"]["enum"] == list(KIND_NAMES)


def test_kind_decisions_are_attributes():
    """What the callers used to branch on by name, now each kind's own answer."""
    default = get_kind(DEFAULT_KIND)
    assert default.public_answers_in_prompt and default.flags_hardcoding and default.sandbox_fusion
    assert not default.needs_reference
    # each of the field's test shapes is read as one kind's, the first of KIND_NAMES that takes it
    shapes = [shape for name in KIND_NAMES if (shape := get_kind(name).field_tests) is not None]
    assert sorted(set(shapes)) == ["call", "stdin"]
    assert kind_for_field_tests("call") is default
    colours = {get_kind(name).colour for name in KIND_NAMES}
    assert len(colours) == len(KIND_NAMES)  # the report tells them apart
    for name in KIND_NAMES:
        kind = get_kind(name)
        # a kind that hides its public answers never flags hardcoding and is judged with its program
        if not kind.public_answers_in_prompt:
            assert not kind.flags_hardcoding and kind.needs_reference and not kind.sandbox_fusion
        assert kind.shown_tests(2, 3, after_feedback=True) == (2, 3)
        expected_first = (2, 3) if kind.public_answers_in_prompt else (0, 0)
        assert kind.shown_tests(2, 3, after_feedback=False) == expected_first
