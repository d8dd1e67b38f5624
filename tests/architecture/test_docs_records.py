"""docs/records.md names every field of every record a run directory holds, and every file a run writes.

The record models' fields come from their pydantic ``model_fields`` (a dataclass's from its fields);
the dict-shaped files (``summary.json``, ``manifest.json``, ``config.yaml``, a ``proposals.jsonl``
row) from a small fake run made here, so a key added to the code without a line in the reference fails this test.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from spade_llm.cli.app import main
from spade_llm.curriculum import EpochPlan, RequestPlan
from spade_llm.evaluator import ANSWER_REASONS
from spade_llm.kinds import BEFORE_LEAKS, LEAK_REASON
from spade_llm.store import JOURNALS, LOCK_FILE
from spade_llm.store.integrity import CandidateRecord, ProposalRecord
from spade_llm.types import (
    Attempt,
    EpochMetrics,
    ExecutionResult,
    Message,
    Rejection,
    Task,
    TaskStats,
    TestCase,
    TestResult,
    TokenUsage,
    Trajectory,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"

RECORD_MODELS: list[type[Any]] = [
    Task,
    TestCase,
    ExecutionResult,  # a dataclass (sandbox/result.py), held by Attempt
    TestResult,
    Attempt,
    Message,
    TokenUsage,
    Trajectory,
    Rejection,
    EpochMetrics,
    TaskStats,
    EpochPlan,
    RequestPlan,
    ProposalRecord,
    CandidateRecord,
]
"""Every model a run directory's lines are written from or read back as."""


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def quoted(doc: str) -> set[str]:
    """Every name the page writes in backticks."""
    return set(re.findall(r"`([^`\n]+)`", doc))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "run"
    argv = ["run", "--epochs", "1", "--tasks-per-epoch", "3", "--samples-per-task", "1"]
    code = main([*argv, "--sandbox", "auto", "--quiet", "--out", str(out)])
    assert code == 0
    return out


def _missing(names: set[str], quoted: set[str]) -> list[str]:
    return sorted(n for n in names if n not in quoted)


def _fields(model: type[Any]) -> set[str]:
    if dataclasses.is_dataclass(model):
        return {f.name for f in dataclasses.fields(model)}
    assert issubclass(model, BaseModel)
    return set(model.model_fields)


@pytest.mark.parametrize("model", RECORD_MODELS, ids=lambda m: m.__name__)
def test_every_record_field_is_documented(model: type[Any], quoted: set[str]) -> None:
    missing = _missing(_fields(model), quoted)
    assert not missing, f"docs/records.md does not name these fields of {model.__name__}: {missing}"


def test_every_file_of_a_run_is_named(run_dir: Path, quoted: set[str]) -> None:
    written = {p.name for p in run_dir.iterdir()}
    assert {*JOURNALS, LOCK_FILE, "config.yaml", "manifest.json", "summary.json"} <= written
    missing = _missing(written | set(JOURNALS) | {LOCK_FILE}, quoted)
    assert not missing, f"docs/records.md does not name these files of a run directory: {missing}"


def _keys(data: Any, *paths: str) -> set[str]:
    """The keys of ``data`` and of the objects at the dotted ``paths`` in it (those present)."""
    out = set(data)
    for path in paths:
        node = data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            out |= set(node)
    return out


def test_summary_manifest_and_config_keys_are_documented(run_dir: Path, quoted: set[str]) -> None:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    roles = summary["llm"]["by_role"]
    keys = _keys(summary, "usage.solver", "llm") | {k for row in roles.values() for k in row} | set(roles)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    keys |= _keys(manifest, "models", "executor")
    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    keys |= set(config)
    missing = _missing(keys, quoted)
    assert not missing, f"docs/records.md does not name these keys of a run's JSON/YAML files: {missing}"


def test_proposal_rows_as_written_are_documented(run_dir: Path, quoted: set[str]) -> None:
    rows = [json.loads(line) for line in (run_dir / "proposals.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows, "the run answered no generator request"
    keys = {k for row in rows for k in row} | {k for row in rows for c in row["candidates"] for k in c}
    missing = _missing(keys, quoted)
    assert not missing, f"docs/records.md does not name these keys of proposals.jsonl: {missing}"


def test_rejection_reasons_are_documented_in_gate_order(doc: str, quoted: set[str]) -> None:
    reasons = {*BEFORE_LEAKS, LEAK_REASON, *ANSWER_REASONS, "undecided", "duplicate"}
    assert not _missing(reasons, quoted)
    order = [*BEFORE_LEAKS, LEAK_REASON, "timeout", "runtime_error", "nondeterministic", "expected_mismatch"]
    table = doc[doc.index("### Rejection reasons") :]
    places = [table.index(f"| `{reason}` |") for reason in [*order, "weak_tests", "duplicate"]]
    assert places == sorted(places), "the gate table is not in the code's order"


def test_the_code_cites_the_projects_own_reference() -> None:
    """Docstrings cite docs/ (this repository's pages), never documents outside it ("SPEC", "ARCHITECTURE")."""
    package = Path(__file__).resolve().parents[2] / "spade_llm"
    cited = [
        f"{path.relative_to(package.parent)}:{n}"
        for path in sorted(package.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b(SPEC|ARCHITECTURE)\b", line)
    ]
    assert cited == []
