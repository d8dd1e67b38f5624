"""Exact resume: a run killed at any point and resumed writes the records the uninterrupted run writes.

In-process, a run directory that dies at its k-th append (optionally leaving half a line) stands
for a SIGKILL at every possible point; hypothesis draws seeds, cut points, sample counts and the
resumed run's concurrency. The CLI test below kills a real ``spade run`` process with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from builders import strip_times
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_kit import BACKEND, RECORDS, DyingRunDir, Killed, records

from spade_llm.config import RunConfig, load_config
from spade_llm.session import Session
from spade_llm.store import RunDir

EXAMPLES = int(os.environ.get("RESUME_EXAMPLES", "14"))
"""Kill points tried per CI run (``RESUME_EXAMPLES=60`` to search harder)."""


COLLAPSE_SEED = 9
"""The seed played by ``fake/collapse``: its later epochs' plans name the tasks its duplicates copied
(``EpochPlan.repeated``), so a kill must not change what the next plan steers away from."""
BUGFIX_MIX = {"induction": 1.0, "bugfix": 1.0}
"""A mix whose bug-fix requests are made on tasks of earlier epochs (``RequestPlan.base_id``)."""


def _config(
    seed: int, samples: int, concurrency: int, epochs: int = 3, overlap: bool = False, kinds: Any = None
) -> RunConfig:
    overrides: dict[str, Any] = {
        "seed": seed,
        "controller": {"epochs": epochs, "tasks_per_epoch": 5, "concurrency": concurrency, "overlap": overlap},
        "solver": {"samples_per_task": samples},
        "sandbox": {"backend": BACKEND, "test_timeout_s": 0.3},  # the fake's looping mistakes stay cheap
    }
    if seed == COLLAPSE_SEED:
        overrides["generator"] = {"model": "fake/collapse"}
    if kinds is not None:
        overrides["curriculum"] = {"kinds": kinds}
        overrides["bugfix"] = {"base_share": 1.0}  # after epoch 0 every bug is made on a base
    return load_config(None, overrides)


def _run(config: RunConfig, run: RunDir, resumed: bool = False) -> None:
    with Session(config) as session:
        session.run(run, resumed=resumed, log=lambda _m: None)


@cache
def _reference(seed: int, samples: int, root: str, overlap: bool = False) -> tuple[dict[str, list[Any]], int]:
    """The uninterrupted run's records, and how many appends it made."""
    path = Path(root) / f"ref-{seed}-{samples}-{overlap}"
    run = DyingRunDir(path, kill_at=10**9, partial=False)
    path.mkdir(parents=True)
    _run(_config(seed, samples, concurrency=4, overlap=overlap), run)
    return records(path), run.appends


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("resume"))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.sampled_from([1, 2, 23, COLLAPSE_SEED]),
    samples=st.sampled_from([1, 2]),
    cut=st.floats(0.0, 0.999),
    partial=st.booleans(),
    concurrency=st.sampled_from([1, 3, 8]),
    overlap=st.booleans(),  # serve-env's: two epochs at once
)
def test_killed_anywhere_and_resumed_equals_the_uninterrupted_run(
    root, seed, samples, cut, partial, concurrency, overlap
):
    expected, appends = _reference(seed, samples, root, overlap)
    kill_at = int(cut * appends)
    path = Path(root) / f"cut-{seed}-{samples}-{kill_at}-{partial}-{concurrency}-{overlap}"
    if path.exists():
        return
    path.mkdir()
    with pytest.raises(Killed):
        _run(_config(seed, samples, concurrency=4, overlap=overlap), DyingRunDir(path, kill_at, partial))
    # resumed with another concurrency: records must not depend on it
    _run(_config(seed, samples, concurrency=concurrency, overlap=overlap), RunDir.open_existing(path), resumed=True)
    got = records(path)
    for name in RECORDS:
        assert got[name] == expected[name], f"{name} differs after a kill at append {kill_at}/{appends}"
    summary = _summary(path)
    assert summary["complete"] is True and summary["epochs"] == 3
    # counted as records were added, and for a resumed run as they were read back: the same counts
    assert summary == _summary(Path(root) / f"ref-{seed}-{samples}-{overlap}")
    # the generator's tokens of a resumed epoch are not lost
    assert [m["generator_prompt_tokens"] for m in got["metrics.jsonl"]] == [
        m["generator_prompt_tokens"] for m in expected["metrics.jsonl"]
    ]


def _summary(path: Path) -> dict[str, Any]:
    """``summary.json`` without what timing decides (request counters, which count retries; times)."""
    summary = json.loads((path / "summary.json").read_text())
    summary.pop("llm", None)
    return dict(strip_times(summary))


@cache
def _bugfix_reference(seed: int, root: str) -> tuple[dict[str, list[Any]], int]:
    path = Path(root) / f"bugfix-ref-{seed}"
    run = DyingRunDir(path, kill_at=10**9, partial=False)
    path.mkdir(parents=True)
    _run(_config(seed, 1, concurrency=4, kinds=BUGFIX_MIX), run)
    return records(path), run.appends


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from([1, 2]), cut=st.floats(0.0, 0.999), concurrency=st.sampled_from([1, 8]))
def test_a_bug_fix_run_killed_anywhere_and_resumed_equals_the_uninterrupted_run(root, seed, cut, concurrency):
    expected, appends = _bugfix_reference(seed, root)
    kill_at = int(cut * appends)
    path = Path(root) / f"bugfix-cut-{seed}-{kill_at}-{concurrency}"
    if path.exists():
        return
    path.mkdir()
    with pytest.raises(Killed):
        _run(_config(seed, 1, concurrency=4, kinds=BUGFIX_MIX), DyingRunDir(path, kill_at, False))
    _run(_config(seed, 1, concurrency=concurrency, kinds=BUGFIX_MIX), RunDir.open_existing(path), resumed=True)
    got = records(path)
    for name in RECORDS:
        assert got[name] == expected[name], f"{name} differs after a kill at append {kill_at}/{appends}"
    assert _summary(path) == _summary(Path(root) / f"bugfix-ref-{seed}")  # its facets counted alike
    tasks = expected["tasks.jsonl"]
    assert any(t["kind"] == "bugfix" and t["meta"].get("base_task") for t in tasks), "no bug was made on a base"


@pytest.mark.slow  # 5-11 s on 2 cores: the full lane runs it, the fast lane does not
def test_killed_twice_in_a_row_still_matches(root):
    expected, appends = _reference(7, 2, root)
    path = Path(root) / "twice"
    path.mkdir()
    with pytest.raises(Killed):
        _run(_config(7, 2, 4), DyingRunDir(path, appends // 4, partial=True))
    run = DyingRunDir(path, appends // 3, partial=False)
    RunDir.open_existing(path)  # repairs the half line, as the CLI does
    with pytest.raises(Killed):
        _run(_config(7, 2, 2), run, resumed=True)
    _run(_config(7, 2, 4), RunDir.open_existing(path), resumed=True)
    assert records(path) == expected


# -- a real process, killed with SIGKILL ------------------------------------------------------------


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _spade(*args: str) -> list[str]:
    return [sys.executable, "-m", "spade_llm.cli", *args]


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize(
    ("journal", "count"),
    [("plans.jsonl", 1), ("trajectories.jsonl", 3), ("metrics.jsonl", 1), ("trajectories.jsonl", 9)],
    ids=["early", "mid-epoch-0", "between-epochs", "mid-epoch-1"],
)
def test_sigkill_then_resume_reproduces_the_run(tmp_path, journal, count):
    args = ("--epochs", "3", "--tasks-per-epoch", "6", "--seed", "23", "--sandbox", BACKEND, "--quiet")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full = tmp_path / "full"
    subprocess.run(_spade("run", *args, "--out", str(full)), check=True, capture_output=True, env=env, timeout=300)
    cut = tmp_path / "cut"
    proc = subprocess.Popen(
        _spade("run", *args, "--out", str(cut)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while _lines(cut / journal) < count and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    summary = json.loads((cut / "summary.json").read_text()) if (cut / "summary.json").exists() else {}
    assert not summary.get("complete"), "the run finished before it could be killed"
    resumed = subprocess.run(
        _spade("run", "--resume", str(cut), "--quiet"), capture_output=True, text=True, env=env, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert records(cut) == records(full)
    manifest = json.loads((cut / "manifest.json").read_text())
    assert len(manifest["resumes"]) == 1 and manifest["started_at"]
