"""The rewards on ``program`` tasks (issue 38): spade's own ground truth of a whole program on stdin/stdout,
judged by ``compute_score`` and ``code_reward`` as the loop judges it (``Judge.stdio``).

Every program here is benign (sums and prints), run in the subprocess sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli.app import main
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder, code_reward, compute_score, parse_ground_truth
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task, TestCase

SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
CASES = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n"), ("4\n10 20 30 40\n", "100\n")]


def block(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


def program_task(**fields: object) -> Task:
    tests = [TestCase(input=i, expected=o) for i, o in CASES]
    base: dict[str, object] = {
        "task_id": "p1",
        "kind": "program",
        "description": "Read n, then n integers; print their sum.",
        "entry_point": "",
        "reference_code": SUM,
        "tests": tests,
    }
    return Task.model_validate({**base, **fields})


@pytest.fixture(scope="module", autouse=True)
def default_rewarder() -> Iterator[Rewarder]:
    """The module functions' default rewarder, on the subprocess sandbox with a 1 s budget per test."""
    rewarder = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, rewarder
    yield rewarder
    rewards._default = saved
    rewarder.close()


def test_a_program_tasks_ground_truth_is_judged_by_its_stdout() -> None:
    truth = json.dumps(ground_truth(program_task(), 1))
    right = compute_score("spade_llm", block(SUM), truth)
    assert (right["score"], right["status"], right["tests_total"]) == (1.0, "passed", 4)
    trailing = "n = int(input())\nprint(sum(map(int, input().split()[:n])), end='  \\n\\n')\n"
    assert compute_score("spade_llm", block(trailing), truth)["score"] == 1.0  # the output rule: trailing space
    first_only = compute_score("spade_llm", block("input()\nprint(input().split()[0])\n"), truth)
    assert (first_only["score"], first_only["tests_passed"]) == (0.0, 1)
    assert code_reward(completions=[block(SUM), "print(6)"], ground_truth=[truth, truth]) == [1.0, 0.0]  # no block


def test_the_tasks_time_limit_travels_in_its_ground_truth() -> None:
    """The loop judges a program task under its ``time_limit_s`` of CPU: so does the reward."""
    limited = program_task(time_limit_s=0.1)
    truth = ground_truth(limited, 1)
    assert truth["time_limit_s"] == 0.1 and "time_limit_s" not in ground_truth(program_task(), 1)
    assert parse_ground_truth(json.dumps(truth))[0].time_limit_s == 0.1
    slow = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n" + SUM
    assert compute_score("spade_llm", block(slow), json.dumps(ground_truth(program_task(), 1)))["score"] == 1.0
    assert compute_score("spade_llm", block(slow), json.dumps(truth))["status"] == "timeout"


def exported_rows(tmp_path: Path, task: Task) -> dict[str, dict[str, Any]]:
    """``task``'s verl rows (``--verl-reward spade`` and ``sandbox_fusion``) from a run directory holding it."""
    pq = pytest.importorskip("pyarrow.parquet")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "tasks.jsonl").write_text(json.dumps(task.dump()) + "\n")
    rows = {}
    for reward in ("spade", "sandbox_fusion"):
        out = tmp_path / f"{reward}.parquet"
        assert main(["export", str(run), "--format", "verl", "--verl-reward", reward, "-o", str(out)]) == 0
        (rows[reward],) = pq.read_table(out).to_pylist()
    return rows


def test_a_program_tasks_verl_rows_are_scored_by_compute_score_in_both_forms(tmp_path: Path) -> None:
    rows = exported_rows(tmp_path, program_task(tests=[TestCase(input=i, expected=o + "  ") for i, o in CASES]))
    spade, fusion = rows["spade"], rows["sandbox_fusion"]
    assert spade["data_source"] == "spade_llm" and fusion["data_source"] == "codecontests"
    truth = json.loads(fusion["reward_model"]["ground_truth"])  # verl's prime_code and SandboxFusion read it
    assert truth == {"inputs": [i for i, _ in CASES], "outputs": [o for _, o in CASES]}  # trailing spaces gone
    answers = {
        block(SUM): 1.0,
        block("n = int(input())\nprint(sum(map(int, input().split()[:n])), end='')\n"): 1.0,
        block("input()\nprint(input().split()[0])\n"): 0.0,
        block("raise ValueError('no')\n"): 0.0,
    }
    for row in (spade, fusion):
        for answer, want in answers.items():
            verdict = compute_score(row["data_source"], answer, row["reward_model"]["ground_truth"], row["extra_info"])
            assert verdict["score"] == want, (row["data_source"], answer, verdict)
