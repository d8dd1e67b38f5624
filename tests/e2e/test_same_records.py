"""The restructure guard: ``spade run`` and ``spade solve`` on several seeds write the records they
wrote before (``tests/data/same_records.json``, made from the code as it stood).

Each journal is canonicalised as the resume tests do (time fields dropped, files written in
completion order sorted) and every row keeps its key order, so a renamed, reordered or re-valued
field shows. The golden file holds one short digest per row, so a failure names the first row that
changed. A deliberate change of behaviour regenerates it: ``SPADE_REGEN_RECORDS=1 pytest
tests/e2e/test_same_records.py`` (and says why in its commit).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from builders import COMPLETION_ORDER, strip_times  # the resume tests' canonical form: time fields dropped

from spade_llm.config import RunConfig, load_config
from spade_llm.session import Session
from spade_llm.store import RunDir
from spade_llm.tasksets.importers import import_humaneval

GOLDEN = Path(__file__).parents[1] / "data" / "same_records.json"
HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"
JOURNALS = [
    "plans.jsonl",
    "proposals.jsonl",
    "tasks.jsonl",
    "rejected.jsonl",
    "trajectories.jsonl",
    "task_stats.jsonl",
    "metrics.jsonl",
]
RUNS: dict[str, dict[str, Any]] = {
    "run-1": {"seed": 1},
    "run-7": {"seed": 7},
    "run-23": {"seed": 23},
    "run-noisy-5": {"seed": 5, "generator": {"model": "fake/noisy"}},  # rejections of every kind
    "run-collapse-9": {"seed": 9, "generator": {"model": "fake/collapse"}},  # the duplicate gate
    "run-kinds-13": {"seed": 13, "curriculum": {"kinds": ["induction", "deduction", "abduction"]}},
}
"""Named runs: the seed and the config beside the common one."""
SOLVES = {"solve-3": 3, "solve-11": 11}


def _digest(row: Any) -> str:
    return hashlib.sha256(json.dumps(row, ensure_ascii=False).encode()).hexdigest()[:16]


def digests(path: Path) -> dict[str, list[str]]:
    """One digest per reproducible row of each record file (summary.json as one row)."""
    out: dict[str, list[str]] = {}
    for name in JOURNALS:
        file = path / name
        if not file.exists():
            continue
        rows = [strip_times(json.loads(x)) for x in file.read_text(encoding="utf-8").splitlines() if x.strip()]
        if name in COMPLETION_ORDER:
            rows.sort(key=lambda r: (r["task_id"], r.get("sample_index", 0)))
        out[name] = [_digest(r) for r in rows]
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    summary.pop("llm", None)  # request counters include retries timed by the clock
    out["summary.json"] = [_digest(strip_times(summary))]
    return out


def _config(extra: dict[str, Any]) -> RunConfig:
    overrides: dict[str, Any] = {
        "controller": {"epochs": 2, "tasks_per_epoch": 5, "concurrency": 4},
        "solver": {"samples_per_task": 2},
        "sandbox": {"backend": "subprocess", "test_timeout_s": 0.5},
    }
    return load_config(None, {**overrides, **extra})


def _run(name: str, path: Path) -> dict[str, list[str]]:
    with Session(_config(RUNS[name])) as session:
        session.run(RunDir(path), log=lambda _m: None)
    return digests(path)


def _solve(name: str, path: Path) -> dict[str, list[str]]:
    tasks = import_humaneval(HUMANEVAL)[:12]
    config = _config({"seed": SOLVES[name], "solver": {"samples_per_task": 2, "model": "fake/default"}})
    with Session(config, need_generator=False) as session:
        session.solve(tasks, RunDir(path), log=lambda _m: None)
    return digests(path)


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    if os.environ.get("SPADE_REGEN_RECORDS") or not GOLDEN.exists():
        return {}
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("key", [*RUNS, *SOLVES])
def test_records_are_the_ones_written_before(tmp_path, golden, key):
    if key in SOLVES and not HUMANEVAL.exists():
        pytest.skip(f"needs {HUMANEVAL}")
    path = tmp_path / "run"
    path.mkdir()
    got = (_run if key in RUNS else _solve)(key, path)
    if os.environ.get("SPADE_REGEN_RECORDS"):
        data = json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.exists() else {}
        data[key] = got
        GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert key in golden, f"no golden records for {key}: regenerate with SPADE_REGEN_RECORDS=1"
    want = golden[key]
    assert sorted(got) == sorted(want), "the run wrote other record files"
    for name, rows in want.items():
        assert len(got[name]) == len(rows), f"{key}: {name} has {len(got[name])} rows, before {len(rows)}"
        for i, (a, b) in enumerate(zip(got[name], rows, strict=True)):
            assert a == b, f"{key}: {name} row {i} differs from the records written before"
