"""Bug-fix self-play on the fake model, end to end (``spade run --kinds bugfix``), over several seeds:
every accepted bug is shown by a public test and fixed by the reference; no prompt the solver reads holds
a line of the reference the bug changed; the strong fixer fixes most, the weak one few; and the band
moves the bugs' difficulty (edits per bug, their families) as it moves induction's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from sandbox_backends import run_backend

from spade_llm.judge import Judge
from spade_llm.kinds.base import public_indices
from spade_llm.kinds.bugfix import BUG_META, secret_lines
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task

pytestmark = pytest.mark.slow
_FENCE = re.compile(r"```.*?```", re.S)


def fake_run(tmp_path: Path, seed: int, solver: str = "default", epochs: int = 2) -> Path:
    from spade_llm.cli.app import main

    out = tmp_path / f"bugfix-{seed}-{solver}"
    argv = ["run", "--model", "fake/default", "--solver-model", f"fake/{solver}", "--kinds", "bugfix"]
    argv += ["--epochs", str(epochs), "--tasks-per-epoch", "8", "--seed", str(seed), "--sandbox", run_backend()]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pass_rate(run: Path) -> float:
    runs = read_jsonl(run / "trajectories.jsonl")
    return sum(t["final_status"] == "passed" for t in runs) / max(1, len(runs))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_accepted_bug_is_shown_and_fixed_by_the_reference_and_never_given_away(tmp_path, sandbox, seed):
    run = fake_run(tmp_path, seed)
    tasks = {row["task_id"]: Task.model_validate(row) for row in read_jsonl(run / "tasks.jsonl")}
    assert len(tasks) >= 4 and {t.kind for t in tasks.values()} == {"bugfix"}
    judge = Judge(sandbox, Limits(), 2.0)
    for task in tasks.values():
        assert judge(task, task.reference_code, None).all_passed, task.task_id
        public = public_indices(task, 3)
        shown = judge(task, task.buggy_code or "", public)
        assert not shown.all_passed, task.task_id  # the symptom is on a test the solver sees
        assert task.meta[BUG_META]["failed_tests"] < len(task.tests)
    for trajectory in read_jsonl(run / "trajectories.jsonl"):
        task = tasks[trajectory["task_id"]]
        secrets = [s for s in secret_lines(task) if len(s) >= 4]
        answers = [m["content"] for m in trajectory["messages"] if m["role"] == "assistant"]
        for message in trajectory["messages"]:
            if message["role"] == "assistant":
                continue
            own = {line.strip() for a in answers for line in a.splitlines()}  # the solver's code, echoed back
            lines = {line.strip() for line in message["content"].splitlines()} - own
            prose = _FENCE.sub("", message["content"])
            for secret in secrets:
                assert secret not in lines and secret not in prose, (task.task_id, secret)


def _edits_by_epoch(run: Path) -> dict[int, float]:
    by_epoch: dict[int, list[int]] = {}
    for row in read_jsonl(run / "tasks.jsonl"):
        by_epoch.setdefault(row["meta"]["epoch"], []).append(len(row["meta"][BUG_META]["edits"]))
    return {epoch: mean(sizes) for epoch, sizes in sorted(by_epoch.items())}


def test_the_strong_fixer_fixes_most_the_weak_one_few_and_the_band_moves_the_bugs(tmp_path):
    strong = fake_run(tmp_path, 0, "strong-solver", epochs=4)
    weak = fake_run(tmp_path, 0, "weak-solver", epochs=4)
    assert pass_rate(strong) >= 0.75 and pass_rate(weak) <= 0.35, (pass_rate(strong), pass_rate(weak))
    targets = [row["difficulty"] for row in read_jsonl(strong / "metrics.jsonl")]
    assert targets == sorted(targets) and targets[-1] > targets[0]  # every bug fixed: the target climbs
    edits = _edits_by_epoch(strong)
    assert edits[max(edits)] > edits[min(edits)], edits  # harder bugs: more edits at once
    weak_targets = [row["difficulty"] for row in read_jsonl(weak / "metrics.jsonl")]
    assert weak_targets[-1] < weak_targets[0]
    assert max(_edits_by_epoch(weak).values()) <= 1.5  # single, blatant edits
    late = [row for row in read_jsonl(strong / "tasks.jsonl") if row["meta"]["epoch"] >= 2]
    subtle = {"off_by_one", "inverted_boundary", "wrong_variable", "swapped_arguments", "literal"}
    families = [f for row in late for f in row["meta"][BUG_META]["edits"]]
    assert sum(f in subtle for f in families) / len(families) >= 0.5, families
