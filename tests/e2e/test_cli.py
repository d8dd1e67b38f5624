"""The CLI end to end, as a user runs it: offline runs, determinism, resume, bad input."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_backends import run_backend

SPADE = [sys.executable, "-m", "spade_llm.cli"]


def spade(*args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "a"
    proc = spade("run", "--epochs", "3", "--seed", "7", "--sandbox", run_backend(), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc


@pytest.mark.e2e
@pytest.mark.slow
def test_run_writes_spec_run_directory(run_a):
    out, proc = run_a
    assert str(out) in proc.stdout
    # it ends saying what to do next, with commands that work as printed
    nexts = [line.split("(")[0].split() for line in proc.stdout.splitlines()[-2:]]
    assert nexts == [["next:", "spade", "report", str(out)], ["spade", "export", str(out), "--format", "sft"]]
    for name in [
        "config.yaml",
        "manifest.json",
        "tasks.jsonl",
        "rejected.jsonl",
        "trajectories.jsonl",
        "metrics.jsonl",
        "summary.json",
    ]:
        assert (out / name).is_file(), name
    tasks, trajs, metrics = rows(out / "tasks.jsonl"), rows(out / "trajectories.jsonl"), rows(out / "metrics.jsonl")
    assert tasks and trajs
    for t in tasks:
        assert {
            "task_id",
            "kind",
            "description",
            "entry_point",
            "reference_code",
            "tests",
            "difficulty",
            "tags",
            "source",
            "meta",
        } <= t.keys()
        assert len(t["tests"]) >= 3 and all("expected" in c for c in t["tests"])
    assert {t["task_id"] for t in trajs} == {t["task_id"] for t in tasks}
    assert len({t["trajectory_id"] for t in trajs}) == len(trajs)
    for t in trajs:
        assert {"trajectory_id", "task_id", "messages", "attempts", "final_status", "reward", "usage"} <= t.keys()
        assert t["final_status"] in {"passed", "failed", "error", "timeout"}
        for a in t["attempts"]:
            assert {"turn", "code", "result"} <= a.keys() and "status" in a["result"]
    assert [m["epoch"] for m in metrics] == [0, 1, 2]
    need = {
        "epoch",
        "difficulty",
        "pass_rate",
        "first_try_pass_rate",
        "mean_turns",
        "tasks_proposed",
        "tasks_accepted",
        "rejected_by_reason",
        "novelty",
        "mean_reward",
    }
    assert all(need <= m.keys() for m in metrics)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and set(summary["llm"]) >= {"requests", "retries", "failures", "by_kind"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 7 and "solver/repair.j2" in manifest["templates"]


@pytest.mark.e2e
@pytest.mark.slow
def test_some_trajectory_repairs_with_the_earlier_error(run_a):
    out, _ = run_a
    found = 0
    for t in rows(out / "trajectories.jsonl"):
        if len(t["attempts"]) < 2:
            continue
        first = t["attempts"][0]["result"]
        later_user = " ".join(m["content"] for m in t["messages"][3:] if m["role"] == "user")
        err = [ln for ln in first["stderr"].splitlines() if ln.strip()]
        failing = [r["input"] for r in first.get("test_results") or [] if r["status"] != "passed"]
        if (err and err[-1].strip()[:40] in later_user) or any(i in later_user for i in failing):
            found += 1
    assert found >= 1


@pytest.mark.e2e
@pytest.mark.slow
def test_same_seed_same_tasks_and_resume_adds_epochs(run_a, tmp_path):
    out, _ = run_a
    b = tmp_path / "b"
    assert (
        spade("run", "--epochs", "3", "--seed", "7", "--sandbox", run_backend(), "--out", str(b), "--quiet").returncode
        == 0
    )
    key = lambda p: sorted((t["task_id"], t["reference_code"], json.dumps(t["tests"])) for t in rows(p))  # noqa: E731
    assert key(out / "tasks.jsonl") == key(b / "tasks.jsonl")
    # resume a finished run with more epochs: the first three stay as they were, nothing repeats
    before = (b / "tasks.jsonl").read_text()
    proc = spade("run", "--resume", str(b), "--epochs", "4", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert (b / "tasks.jsonl").read_text().startswith(before)
    assert [m["epoch"] for m in rows(b / "metrics.jsonl")] == [0, 1, 2, 3]
    trajs = rows(b / "trajectories.jsonl")
    assert len({t["task_id"] for t in trajs}) == len(trajs) == len(rows(b / "tasks.jsonl"))


@pytest.mark.e2e
@pytest.mark.slow
def test_resume_after_a_kill_mid_epoch_loses_and_repeats_nothing(tmp_path):
    full = tmp_path / "full"
    assert (
        spade(
            "run", "--epochs", "2", "--seed", "11", "--sandbox", run_backend(), "--out", str(full), "--quiet"
        ).returncode
        == 0
    )
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ["config.yaml", "manifest.json", "tasks.jsonl", "rejected.jsonl"]:
        (cut / name).write_bytes((full / name).read_bytes())
    trajs = (full / "trajectories.jsonl").read_text().splitlines(keepends=True)
    metrics = (full / "metrics.jsonl").read_text().splitlines(keepends=True)
    # as if killed in epoch 1's solving: epoch 0 done, two of epoch 1's episodes written, one half-written
    e1 = [ln for ln in trajs if json.loads(ln)["epoch"] == 1]
    e0 = [ln for ln in trajs if json.loads(ln)["epoch"] == 0]
    (cut / "trajectories.jsonl").write_text("".join(e0 + e1[:2]) + e1[2][: len(e1[2]) // 2])
    (cut / "metrics.jsonl").write_text(metrics[0])
    proc = spade("run", "--resume", str(cut), "--quiet")
    assert proc.returncode == 0, proc.stderr
    got = rows(cut / "trajectories.jsonl")
    assert sorted(t["trajectory_id"] for t in got) == sorted(json.loads(t)["trajectory_id"] for t in trajs)
    assert [m["epoch"] for m in rows(cut / "metrics.jsonl")] == [0, 1]
    assert rows(cut / "tasks.jsonl") == rows(full / "tasks.jsonl")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--config", "/nonexistent.yaml"], "config file not found"),
        (["run", "--epochs", "-1"], "--epochs"),
        (["run", "--epochs", "abc"], "--epochs"),
        (["run", "--model", "fake/nonexistent-profile"], "nonexistent-profile"),
        pytest.param(["run", "--model", "nonsense-model-xyz"], "unknown model", marks=pytest.mark.slow),  # ~30 s here
        (["exec", "/nonexistent.py"], "not found"),
        (["verify", "/nonexistent.jsonl"], "not found"),
        (["evaluate", "/nonexistent.jsonl"], "not found"),
    ],
)
def test_bad_input_is_one_line_no_traceback(tmp_path, args, message):
    proc = (
        spade(*args, "--sandbox", run_backend(), cwd=tmp_path)
        if args[0] in ("exec", "verify", "evaluate")
        else spade(*args, "--out", str(tmp_path / "o"), cwd=tmp_path)
    )
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "warning" not in ln.lower()]
    assert len(lines) == 1, proc.stderr
    assert message in lines[0] and "Traceback" not in proc.stderr


def test_bad_yaml_and_broken_template(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("controller: {epochs: [\n")
    proc = spade("run", "--config", str(bad), "--out", str(tmp_path / "o1"))
    assert proc.returncode != 0 and "not valid YAML" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "p" / "solver").mkdir(parents=True)
    (tmp_path / "p" / "solver" / "first.j2").write_text("{{ task.entry_point }} {{ undefined_thing }}")
    proc = spade("run", "--prompts", str(tmp_path / "p"), "--out", str(tmp_path / "o2"))
    assert proc.returncode != 0 and "undefined_thing" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_non_empty_out_is_refused_and_kept(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "precious.txt").write_text("x")
    proc = spade("run", "--out", str(tmp_path / "o"))
    assert proc.returncode != 0 and "not empty" in proc.stderr
    assert (tmp_path / "o" / "precious.txt").read_text() == "x"


def test_help_for_every_command():
    for cmd in ["run", "exec", "verify", "evaluate", "import", "prompts"]:
        proc = spade(cmd, "--help")
        assert proc.returncode == 0 and "usage" in proc.stdout


@pytest.mark.e2e
@pytest.mark.slow
def test_resume_after_a_kill_mid_proposals_matches_an_uninterrupted_run(tmp_path):
    full = tmp_path / "full"
    args = ("--epochs", "2", "--seed", "5", "--sandbox", run_backend(), "--quiet")
    assert spade("run", *args, "--out", str(full)).returncode == 0
    tasks, rejected = rows(full / "tasks.jsonl"), rows(full / "rejected.jsonl")
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ["config.yaml", "manifest.json", "metrics.jsonl"]:
        (cut / name).write_bytes((full / name).read_bytes())
    (cut / "metrics.jsonl").write_text((full / "metrics.jsonl").read_text().splitlines(keepends=True)[0])
    # on disk at that kill too: both epochs' plans (each written before its first request) and the
    # task_stats rows of epoch 0 (written as its tasks finished), which epoch 1's examples are chosen by
    (cut / "plans.jsonl").write_bytes((full / "plans.jsonl").read_bytes())
    epoch0_stats = [r for r in rows(full / "task_stats.jsonl") if r["epoch"] == 0]
    (cut / "task_stats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in epoch0_stats))
    # killed during epoch 1's proposals: only decisions of its first three requests reached the disk
    keep = lambda r, idx: r.get("epoch", r.get("meta", {}).get("epoch")) == 0 or idx < 3  # noqa: E731
    kept_tasks = [t for t in tasks if keep(t, t["meta"]["request_index"])]
    kept_rejected = [r for r in rejected if keep(r, r["request_index"])]
    (cut / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in kept_tasks))
    (cut / "rejected.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept_rejected))
    solved = {t["task_id"] for t in kept_tasks}
    (cut / "trajectories.jsonl").write_text(
        "".join(
            line
            for line in (full / "trajectories.jsonl").read_text().splitlines(keepends=True)
            if json.loads(line)["task_id"] in solved
        )
    )
    assert len(kept_tasks) < len(tasks)
    proc = spade("run", "--resume", str(cut), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert sorted(t["task_id"] for t in rows(cut / "tasks.jsonl")) == sorted(t["task_id"] for t in tasks)
    assert sorted(r["task_id"] or "" for r in rows(cut / "rejected.jsonl")) == sorted(
        r["task_id"] or "" for r in rejected
    )
    got = sorted(t["trajectory_id"] for t in rows(cut / "trajectories.jsonl"))
    assert got == sorted(t["trajectory_id"] for t in rows(full / "trajectories.jsonl"))


@pytest.mark.e2e
@pytest.mark.slow
def test_samples_per_task_gives_k_trajectories_and_agreeing_task_stats(tmp_path):
    out = tmp_path / "k4"
    proc = spade(
        "run", "--epochs", "2", "--tasks-per-epoch", "4", "--samples-per-task", "4", "--seed", "3",
        "--goal", "string manipulation", "--sandbox", run_backend(), "--out", str(out), "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    tasks, trajs, stats = rows(out / "tasks.jsonl"), rows(out / "trajectories.jsonl"), rows(out / "task_stats.jsonl")
    assert tasks and len(trajs) == 4 * len(tasks) and len(stats) == len(tasks)
    for task in tasks:
        mine = [t for t in trajs if t["task_id"] == task["task_id"]]
        assert sorted(t["sample_index"] for t in mine) == [0, 1, 2, 3]
        assert len({t["trajectory_id"] for t in mine}) == 4
        (row,) = [s for s in stats if s["task_id"] == task["task_id"]]
        passed = sum(t["final_status"] == "passed" for t in mine)
        assert (row["samples"], row["passed"], row["epoch"], row["kind"]) == (
            4,
            passed,
            task["meta"]["epoch"],
            "induction",
        )
        assert row["learnability"] == pytest.approx(1 - passed / 4 if 0 < passed < 4 else 0.0)
    # samples are independent episodes: across the run, some task's samples do not all end alike
    assert any(len({t["final_status"] for t in trajs if t["task_id"] == task["task_id"]}) > 1 for task in tasks)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["goal"] == "string manipulation" and manifest["samples_per_task"] == 4
    plans = rows(out / "plans.jsonl")
    assert [p["goal"] for p in plans] == ["string manipulation"] * 2


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--seed", "9"], "--seed cannot change a run being resumed"),
        (["--tasks-per-epoch", "3"], "--tasks-per-epoch cannot change"),
        (["--model", "fake/strong-solver"], "--model cannot change"),
        (["--samples-per-task", "2"], "--samples-per-task cannot change"),
    ],
)
def test_resume_refuses_flags_that_change_what_the_run_is(run_a, tmp_path, flags, message):
    out, _ = run_a
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    proc = spade("run", "--resume", str(out), *flags)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # nothing touched


@pytest.mark.e2e
@pytest.mark.slow
def test_resume_accepts_repeated_flags_and_keeps_the_original_start(tmp_path):
    out = tmp_path / "r"
    first = spade("run", "--epochs", "1", "--seed", "4", "--sandbox", run_backend(), "--out", str(out), "--quiet")
    assert first.returncode == 0
    started = json.loads((out / "manifest.json").read_text())["started_at"]
    proc = spade("run", "--resume", str(out), "--epochs", "2", "--seed", "4", "--concurrency", "2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["started_at"] == started and len(manifest["resumes"]) == 1
    assert manifest["resumes"][0]["epochs"] == 2
    assert [m["epoch"] for m in rows(out / "metrics.jsonl")] == [0, 1]


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.xdist_group("heavy-load")  # with -n: never beside the timing tests of test_validation_under_load
def test_fake_default_settles_in_the_band(tmp_path):
    """SPEC's default fake profile against the controller (benchmarks/bench_band.py measures all seeds)."""
    # one seed's 8 late epochs of about 13 episodes each are a lottery (each epoch's pass rate has a
    # standard deviation near 0.14): the band is kept over several seeds' epochs together. The runs
    # go side by side (each waits on its sandbox much of the time): 1.5x faster than one by one.
    seeds = (1, 2, 3, 4, 5)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    # the fake's too-slow answers run each test to its budget: at the default 3 s they were a third of
    # the runs' CPU; the band does not depend on it (seed 1 writes the same records at 0.5 s)
    config = tmp_path / "budget.yaml"
    config.write_text("sandbox:\n  test_timeout_s: 0.5\n")
    procs = []
    for seed in seeds:
        cmd = [
            *SPADE, "run", "--config", str(config), "--model", "fake/default", "--seed", str(seed), "--epochs",
            "12", "--tasks-per-epoch", "16", "--out", str(tmp_path / f"default-{seed}"), "--quiet",
        ]  # fmt: skip
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env))
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
    late: list[dict] = []
    for seed in seeds:
        default = rows(tmp_path / f"default-{seed}" / "metrics.jsonl")
        late += [m for m in default if m["epoch"] >= 4]
        for before, after in itertools.pairwise(default):
            if 0.3 <= before["pass_rate"] <= 0.7:
                assert after["difficulty"] == before["difficulty"]
    assert 3 * sum(0.3 <= m["pass_rate"] <= 0.7 for m in late) >= 2 * len(late)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize(("profile", "moves"), [("strong-solver", 0.3), ("weak-solver", -0.1)])
def test_fake_extremes_move_the_difficulty(tmp_path, profile, moves):
    """A solver that passes nearly everything drives the difficulty up, one that fails most drives it
    down (apart from the band test, so parallel workers share them)."""
    out = tmp_path / profile
    # 35 s alone; beside the band test's five runs it took 170 s and more: the timeout only stops a hang
    proc = spade(
        "run", "--model", f"fake/{profile}", "--seed", "1", "--epochs", "10", "--tasks-per-epoch", "8",
        "--out", str(out), "--quiet", timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    metrics = rows(out / "metrics.jsonl")
    shift = metrics[-1]["next_difficulty"] - metrics[0]["difficulty"]
    assert shift >= moves if moves > 0 else shift <= moves


@pytest.mark.e2e
@pytest.mark.slow
def test_solve_refuses_an_existing_out_and_resumes_only_as_it_was_started(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    run_dir = tmp_path / "src"
    assert (
        spade(
            "run", "--epochs", "1", "--seed", "2", "--sandbox", run_backend(), "--out", str(run_dir), "--quiet"
        ).returncode
        == 0
    )
    tasks.write_text((run_dir / "tasks.jsonl").read_text())
    out = tmp_path / "solved"
    args = ("--model", "fake/default", "--samples-per-task", "2", "--sandbox", run_backend())
    assert spade("solve", str(tasks), *args, "--out", str(out)).returncode == 0
    before = (out / "trajectories.jsonl").read_text()
    again = spade("solve", str(tasks), "--model", "fake/strong-solver", "--out", str(out))
    assert again.returncode == 2 and "not empty" in again.stderr
    other = spade("solve", "--resume", str(out), "--model", "fake/strong-solver")
    assert other.returncode == 2 and "--model cannot change" in other.stderr
    assert (out / "trajectories.jsonl").read_text() == before  # nothing mixed in
    # a kill before the last two episodes, in the middle of the first: their task has no stats row
    # yet, and the solve no summary; resume finishes exactly those
    lines = before.splitlines(keepends=True)
    (out / "trajectories.jsonl").write_text("".join(lines[:-2]) + lines[-2][:40])
    cut = {json.loads(x)["task_id"] for x in lines[-2:]}
    stats = (out / "task_stats.jsonl").read_text().splitlines(keepends=True)
    (out / "task_stats.jsonl").write_text("".join(x for x in stats if json.loads(x)["task_id"] not in cut))
    (out / "summary.json").unlink()
    resumed = spade("solve", "--resume", str(out), "--concurrency", "3")
    assert resumed.returncode == 0, resumed.stderr
    key = lambda text: sorted(json.loads(x)["trajectory_id"] for x in text.splitlines())  # noqa: E731
    assert key((out / "trajectories.jsonl").read_text()) == key(before)
    assert len(rows(out / "task_stats.jsonl")) == len(rows(tasks))
