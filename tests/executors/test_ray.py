"""``executor: ray``: the same records as the local executor, through kills of the driver and of workers.

Every test here shares one local cluster (``ray.init(num_cpus=2)``; workers reserve half a CPU, so
four fit and none waits on another). They run in one xdist group, so the suite starts one cluster.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from run_kit import BACKEND, DyingRunDir, Killed, records

from spade_llm.config import RunConfig, load_config
from spade_llm.errors import ExecutorError, UserError
from spade_llm.session import Session
from spade_llm.store import RunDir, read_run

ray = pytest.importorskip("ray", reason="executor 'ray' needs Ray: pip install 'spade-selfplay[ray]'")
pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Any:
    """One local cluster for the module (the executor joins it and leaves it running)."""
    import logging

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    yield
    ray.shutdown()


def _config(seed: int = 3, executor: str = "local", epochs: int = 2, **extra: Any) -> RunConfig:
    layer: dict[str, Any] = {
        "seed": seed,
        "executor": executor,
        "controller": {"epochs": epochs, "tasks_per_epoch": 5, "concurrency": 3},
        "solver": {"samples_per_task": 2},
        "sandbox": {"backend": BACKEND, "test_timeout_s": 0.3},
        "ray": {"workers_per_node": 2, "concurrency_per_worker": 2},
    }
    for section, values in extra.items():
        if isinstance(values, dict):
            layer.setdefault(section, {}).update(values)
        else:
            layer[section] = values
    return load_config(None, layer)


def _run(config: RunConfig, run: RunDir, *, resumed: bool = False, log: Any = None) -> Session:
    with Session(config) as session:
        session.run(run, resumed=resumed, log=log or (lambda _m: None))
    return session


def _summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "summary.json").read_text())
    return data


@pytest.mark.parametrize("seed", [3, 11])
def test_ray_run_writes_the_records_of_a_local_run(tmp_path: Path, seed: int) -> None:
    local, remote = tmp_path / "local", tmp_path / "ray"
    _run(_config(seed), RunDir.create(str(local), "runs"))
    _run(_config(seed, "ray"), RunDir.create(str(remote), "runs"))
    expected, got = records(local), records(remote)
    assert expected["trajectories.jsonl"], "the run solved nothing"
    for name in expected:
        assert got[name] == expected[name], f"{name} differs between the executors"
    # the workers' model requests reach the driver's summary
    assert _summary(remote)["llm"]["by_role"] == _summary(local)["llm"]["by_role"]
    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["executor"] == {"name": "ray", "nodes": 1, "workers": 2, "slots": 4}


@pytest.mark.parametrize(
    ("cut", "first", "then"),
    [(0.15, "ray", "ray"), (0.5, "ray", "local"), (0.8, "local", "ray"), (0.35, "ray", "ray")],
)
def test_killed_and_resumed_with_either_executor_matches(tmp_path: Path, cut: float, first: str, then: str) -> None:
    reference = DyingRunDir(tmp_path / "ref", kill_at=10**9, partial=False)
    (tmp_path / "ref").mkdir()
    _run(_config(7), reference)
    expected = records(tmp_path / "ref")
    path = tmp_path / "cut"
    path.mkdir()
    kill_at = int(cut * reference.appends)
    with pytest.raises(Killed):
        _run(_config(7, first), DyingRunDir(path, kill_at, partial=True))
    _run(_config(7, then), RunDir.open_existing(path), resumed=True)
    assert records(path) == expected, f"a kill at append {kill_at}/{reference.appends} changed the records"
    assert _summary(path)["complete"] is True


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _kill_workers_when(session_box: dict[str, Session], journal: Path, count: int, killed: list[int]) -> None:
    """Wait until ``journal`` has ``count`` lines, then SIGKILL every worker process of the session."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        session = session_box.get("session")
        if session is not None and session.remote is not None and len(_lines(journal)) >= count:
            for pid in session.remote.pids:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            return
        time.sleep(0.002)


def _served(url: str, seed: int, executor: str, **extra: Any) -> RunConfig:
    """Solver answers from a FakeServer with latency: episodes last long enough to be killed mid-way."""
    return _config(seed, executor, solver={"model": "openai/default", "api_base": url, "samples_per_task": 2}, **extra)


def _run_killing_workers(config: RunConfig, path: Path, count: int) -> tuple[list[int], list[str], Session]:
    box: dict[str, Session] = {}
    killed: list[int] = []
    logged: list[str] = []
    killer = threading.Thread(
        target=_kill_workers_when, args=(box, path / "trajectories.jsonl", count, killed), daemon=True
    )
    killer.start()
    run = RunDir.create(str(path), "runs")
    with Session(config) as session:
        box["session"] = session
        try:
            session.run(run, log=logged.append)
        finally:
            killer.join(5)
            run.unlock()  # as the CLI does: a stopped run is resumed next
    return killed, logged, session


@pytest.mark.slow
def test_killing_every_worker_mid_run_loses_and_duplicates_nothing(
    tmp_path: Path, fake_server: Any, allow_model_requests: str
) -> None:
    server = fake_server(latency=0.05)
    local = tmp_path / "local"
    _run(_served(server.url, 5, "local"), RunDir.create(str(local), "runs"))
    path = tmp_path / "ray"
    killed, logged, _ = _run_killing_workers(_served(server.url, 5, "ray"), path, count=3)
    assert len(killed) == 2, "the workers were not killed during the run"
    rows = _lines(path / "trajectories.jsonl")
    episodes = Counter((r["task_id"], r["sample_index"]) for r in rows)
    assert max(episodes.values()) == 1, "an episode was recorded twice"
    assert records(path) == records(local), "a killed worker's episodes changed or went missing"
    assert any("was restarted" in line for line in logged), logged
    assert _summary(path)["complete"] is True


@pytest.mark.slow
def test_workers_dead_for_good_stop_the_run_and_resume_finishes_it(
    tmp_path: Path, fake_server: Any, allow_model_requests: str
) -> None:
    server = fake_server(latency=0.05)
    local = tmp_path / "local"
    _run(_served(server.url, 9, "local"), RunDir.create(str(local), "runs"))
    path = tmp_path / "ray"
    with pytest.raises(ExecutorError, match="resume"):
        _run_killing_workers(_served(server.url, 9, "ray", ray={"max_retries": 0}), path, count=2)
    summary = _summary(path)
    assert summary["complete"] is False and "Ray worker" in summary["stopped_because"]
    _run(_served(server.url, 9, "ray"), RunDir.open_existing(path), resumed=True)
    assert records(path) == records(local)


def test_user_templates_reach_the_workers(tmp_path: Path) -> None:
    from spade_llm.templates import Prompts

    prompts = tmp_path / "prompts" / "solver"
    prompts.mkdir(parents=True)
    source = Prompts().source_path("solver/system.j2").read_text()
    (prompts / "system.j2").write_text("MARKER-FROM-THE-USER-FOLDER\n" + source)
    path = tmp_path / "run"
    _run(_config(4, "ray", epochs=1, prompts_dir=str(tmp_path / "prompts")), RunDir.create(str(path), "runs"))
    trajectories = _lines(path / "trajectories.jsonl")
    assert trajectories
    assert all("MARKER-FROM-THE-USER-FOLDER" in t["messages"][0]["content"] for t in trajectories)


def test_a_training_step_switches_the_workers_solver(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import json, os, pathlib\n"
        'pathlib.Path(os.environ["SPADE_SWITCH_FILE"]).write_text(json.dumps({"solver_model": "fake/strong-solver"}))\n'
    )
    trainer = {"command": [sys.executable, str(script)], "formats": ["grpo"]}
    solver = {"model": "fake/weak-solver", "samples_per_task": 2}
    local, remote = tmp_path / "local", tmp_path / "ray"
    _run(_config(6, "local", trainer=trainer, solver=solver), RunDir.create(str(local), "runs"))
    _run(_config(6, "ray", trainer=trainer, solver=solver), RunDir.create(str(remote), "runs"))
    models = {(t["epoch"], t["solver_model"]) for t in _lines(remote / "trajectories.jsonl")}
    assert models == {(0, "fake/weak-solver"), (1, "fake/strong-solver")}
    assert records(remote) == records(local)


def test_a_worker_that_cannot_build_its_session_fails_before_the_run_directory(tmp_path: Path) -> None:
    node = ray.util.get_node_ip_address()
    config = _config(
        2,
        "ray",
        solver={"model": "openai/x", "api_base": "http://127.0.0.1:9/v1"},
        ray={"node_api_base": {node: "ftp://wrong"}},
    )
    with pytest.raises(UserError, match=f"Ray worker on {node}.*api_base"):
        Session(config)


def test_a_solve_on_ray_matches_a_local_solve(tmp_path: Path) -> None:
    from spade_llm.session import solve_tasks

    run = RunDir.create(str(tmp_path / "source"), "runs")
    _run(_config(8, epochs=1), run)
    tasks = read_run(run.path).tasks
    out: dict[str, list[Any]] = {}
    for executor in ("local", "ray"):
        path = tmp_path / executor
        solve_tasks(_config(8, executor), tasks, RunDir.create(str(path), "runs"), log=lambda _m: None)
        out[executor] = sorted(
            (t["task_id"], t["sample_index"], t["final_status"], t["reward"])
            for t in _lines(path / "trajectories.jsonl")
        )
    assert out["local"] and out["ray"] == out["local"]


def test_an_address_nobody_answers_at_is_one_line_and_no_run_directory(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "spade_llm.cli", "run", "--ray-address", "127.0.0.1:1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.count("\n") == 1 and "nothing answers at Ray address 127.0.0.1:1" in proc.stderr
