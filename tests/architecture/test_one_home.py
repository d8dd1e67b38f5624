"""One home per rule (issue 36, point 4): names and lists that were written in several modules are
written once, and the others read them."""

from __future__ import annotations

import ast
from pathlib import Path

from spade_llm.export.names import FORMATS, GENERATOR_FORMATS
from spade_llm.rewards import code as rewards
from spade_llm.serve import env
from spade_llm.serve.env import access

PACKAGE = Path(__file__).resolve().parents[2] / "spade_llm"


def constants(path: Path) -> list[ast.Constant]:
    return [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Constant)]


def test_the_env_token_variable_is_named_once() -> None:
    # before: env/access.py, trl.py and verifiers.py each wrote "SPADE_ENV_TOKEN"
    written = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in constants(path)
        if node.value == "SPADE_ENV_TOKEN"
    ]
    assert written == ["serve/env/__init__.py"]
    assert access.TOKEN_ENV is env.TOKEN_ENV  # trl.py and verifiers.py import it too (their extras are not here)


def test_the_export_formats_are_listed_once() -> None:
    # before: exports.py, proposal_exports.py, config.py and four choice lists of the CLI each listed them
    lists: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = getattr(node, "elts", None)
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
                items = node.slice.elts  # Literal["sft", "dpo", ...]
            values = {e.value for e in items or [] if isinstance(e, ast.Constant)}
            if values >= set(GENERATOR_FORMATS):  # a whole list (a pair such as ("grpo", "verl") is a rule)
                lists.add(path.relative_to(PACKAGE).as_posix())
    assert lists == {"export/names.py"}, lists
    assert set(GENERATOR_FORMATS) < set(FORMATS) == {"sft", "dpo", "grpo", "verl", "harbor"}


def test_one_reader_of_the_columns_a_trainer_passes() -> None:
    rows = rewards.column_rows(2, {"tests": ["[]", "[]"], "entry_point": ["f", "g"]}, ("tests", "entry_point"))
    assert [row["entry_point"] for row in rows] == ["f", "g"]
