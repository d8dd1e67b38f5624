"""``spade serve-env --executor ray``: every program the run judges (each reply's tests, each proposal's
validation) runs on a Ray cluster's sandbox hosts (here a local cluster the server starts), and the records
are the local executor's for the same seed and the same client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import run_records
from trainer_kit import need

need("openenv", "env")
need("ray", "ray")

from serve_env_kit import play  # noqa: E402

from spade_llm.types import Task  # noqa: E402

pytestmark = [pytest.mark.env, pytest.mark.slow]

JOURNALS = ("tasks.jsonl", "rejected.jsonl", "trajectories.jsonl", "task_stats.jsonl", "metrics.jsonl", "plans.jsonl")


def wrong_then_right(run: Path) -> Any:
    """The scripted client: a wrong function first, the task's reference once told it failed."""

    def reply(messages: list[dict[str, str]]) -> str:
        opening = messages[1]["content"]
        task = next(
            Task.model_validate_json(line)
            for line in (run / "tasks.jsonl").read_text().splitlines()
            if Task.model_validate_json(line).description in opening
        )
        if any(m["role"] == "assistant" for m in messages):
            return f"```python\n{task.reference_code}```"
        return f"```python\ndef {task.entry_point}(*args):\n    return None\n```"

    return reply


def served(tmp_path: Path, serve_env: Any, name: str, *executor: str) -> dict[str, list[Any]]:
    run = tmp_path / name
    server = serve_env("--model", "fake/default", "--epochs", "2", "--tasks-per-epoch", "2", "--samples-per-task", "2",
                       "--seed", "3", "--out", str(run), *executor)  # fmt: skip
    episodes = play(server.url, wrong_then_right(run), 8)
    assert len(episodes) == 8 and all(e[-1].done for e in episodes)
    assert server.wait(timeout=120) == 0, server.stderr  # its 2 epochs are done: it stops by itself
    return run_records(run, JOURNALS)


def test_the_ray_executor_judges_on_the_cluster_and_writes_the_local_records(tmp_path: Path, serve_env: Any) -> None:
    local = served(tmp_path, serve_env, "local")
    remote = served(tmp_path, serve_env, "ray", "--executor", "ray")
    assert local["trajectories.jsonl"] and any(t["final_status"] == "passed" for t in local["trajectories.jsonl"])
    for name in JOURNALS:
        assert remote[name] == local[name], name
    where = {name: json.loads((tmp_path / name / "manifest.json").read_text())["sandbox"] for name in ("local", "ray")}
    assert where["ray"] == f"ray:{where['local']}", where  # where the programs ran is on record
