"""``--resume`` keeps every flag the run was started with unless told otherwise (issue 35, finding 6).

Before, ``spade serve-env --resume DIR`` forgot ``--epochs``: a run started for 2 epochs went on until
stopped (1,580 empty epochs, 9 MB, in 20 s against a generator answering prose), and a ``--prompts``
folder named relative to where the run started was not found, or worse another folder of that name
was used, when the resume ran elsewhere. The serve-env tests need the ``env`` extra (openenv-core).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_resume_empty_epochs import prose_server
from test_resume_provenance import directory, refused, snapshot

SPADE = [sys.executable, "-m", "spade_llm.cli"]


def spade(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _prompts(folder: Path, marker: str) -> Path:
    """A prompts folder whose solver system prompt ends with ``marker``."""
    shown = spade("prompts", "show", "solver/system.j2")
    assert shown.returncode == 0, shown.stderr
    (folder / "solver").mkdir(parents=True)
    (folder / "solver" / "system.j2").write_text(shown.stdout.rstrip("\n") + f"\n{marker}\n")
    return folder


@pytest.mark.e2e
@pytest.mark.slow
def test_a_resume_from_elsewhere_uses_the_prompts_folder_the_run_started_with(tmp_path: Path) -> None:
    started, elsewhere = tmp_path / "started", tmp_path / "elsewhere"
    _prompts(started / "my_prompts", "MARKER-ORIGINAL")
    _prompts(elsewhere / "my_prompts", "MARKER-DECOY")  # the same relative name, other templates
    flags = ("--tasks-per-epoch", "2", "--sandbox", "subprocess", "--quiet")
    first = spade("run", "--prompts", "my_prompts", "--epochs", "1", *flags, "--out", "run", cwd=started)
    assert first.returncode == 0, first.stderr
    run = started / "run"
    resumed = spade("run", "--resume", str(run), "--epochs", "2", "--quiet", cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    systems = {t["epoch"]: t["messages"][0]["content"] for t in rows(run / "trajectories.jsonl") if t["messages"]}
    assert sorted(systems) == [0, 1]
    assert all("MARKER-ORIGINAL" in s and "MARKER-DECOY" not in s for s in systems.values())
    # the same folder under another name is the same flag; another folder is refused
    same = spade("run", "--resume", str(run), "--epochs", "2", "--prompts", str(started / "my_prompts"), "--quiet")
    assert same.returncode == 0, same.stderr
    other = spade("run", "--resume", str(run), "--prompts", "my_prompts", "--quiet", cwd=elsewhere)
    assert other.returncode == 2 and "--prompts cannot change a run being resumed" in other.stderr


@pytest.mark.e2e
@pytest.mark.slow
def test_a_run_moved_to_another_machine_resumes_with_a_copy_of_its_prompts_folder(tmp_path: Path) -> None:
    """The stored folder is absolute, so on another machine it is gone: ``--prompts COPY`` is accepted when
    the copy's templates hash to manifest.json's (before: refused, "--prompts cannot change a run being
    resumed", and without it "prompts folder not found"); another folder is refused naming what differs."""
    here, there = tmp_path / "here", tmp_path / "there"
    _prompts(here / "my_prompts", "MARKER-ORIGINAL")
    flags = ("--tasks-per-epoch", "2", "--sandbox", "subprocess", "--quiet")
    first = spade("run", "--prompts", "my_prompts", "--epochs", "1", *flags, "--out", "run", cwd=here)
    assert first.returncode == 0, first.stderr
    there.mkdir()
    run = Path(shutil.move(str(here / "run"), str(there / "run")))  # the machine moved to: no `here`
    shutil.move(str(here / "my_prompts"), str(there / "copy"))
    _prompts(there / "decoy", "MARKER-DECOY")
    before = snapshot(run)

    missing = spade("run", "--resume", str(run), "--epochs", "2", "--quiet", cwd=there)
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith(
        f"spade run: error: the prompts folder {here / 'my_prompts'} this run was started with is not there"
    )
    assert "give --prompts with a copy of it" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    decoy = spade("run", "--resume", str(run), "--epochs", "2", "--prompts", "decoy", "--quiet", cwd=there)
    assert decoy.returncode == 2 and len(decoy.stderr.strip().splitlines()) == 1
    assert "(solver/system.j2 differ from manifest.json's hashes)" in decoy.stderr
    assert snapshot(run) == before  # a refused resume touches nothing

    moved = spade("run", "--resume", str(run), "--epochs", "2", "--prompts", "copy", "--quiet", cwd=there)
    assert moved.returncode == 0, moved.stderr
    systems = {t["epoch"]: t["messages"][0]["content"] for t in rows(run / "trajectories.jsonl") if t["messages"]}
    assert sorted(systems) == [0, 1] and all("MARKER-ORIGINAL" in s for s in systems.values())
    assert yaml.safe_load((run / "config.yaml").read_text())["prompts_dir"] == str((there / "copy").resolve())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["prompts_dir"] == str(here / "my_prompts")  # the start stays; the resume says where now
    assert manifest["resumes"][-1]["prompts_dir"] == str((there / "copy").resolve())
    # from then on the copy is the run's folder: a resume needs no flag, and the same copy by any name is it
    again = spade("run", "--resume", str(run), "--epochs", "2", "--prompts", str(there / "copy"), "--quiet")
    assert again.returncode == 0, again.stderr
    other = spade("run", "--resume", str(run), "--prompts", "decoy", "--quiet", cwd=there)
    assert other.returncode == 2 and "--prompts cannot change a run being resumed" in other.stderr


# -- serve-env ----------------------------------------------------------------------------------------------


def _need_openenv() -> None:
    from trainer_kit import need

    need("openenv", "env")


@pytest.mark.env
@pytest.mark.slow
def test_serve_env_resumed_keeps_its_epochs(tmp_path: Path) -> None:
    _need_openenv()
    run = tmp_path / "run"
    with prose_server() as url:
        flags = ("--port", "0", "--model", "openai/prose", "--api-base", url, "--tasks-per-epoch", "2")
        first = spade("serve-env", *flags, "--epochs", "2", "--out", str(run), timeout=90)
        assert first.returncode == 0, first.stderr
        assert len(rows(run / "metrics.jsonl")) == 2
        # before: the resume ran until stopped (a liveness bound here: the run has nothing left to do)
        again = spade("serve-env", "--resume", str(run), "--port", "0", timeout=90)
        assert again.returncode == 0, again.stderr
        assert len(rows(run / "metrics.jsonl")) == 2 and "its 2 epochs are done" in again.stderr
        # --epochs N: N in all; the third empty epoch in a row is the last planned one, so the run ends
        # as planned (exit 0, complete) and that epoch's row warns (before: exit 5, complete false)
        more = spade("serve-env", "--resume", str(run), "--port", "0", "--epochs", "3", timeout=90)
        assert more.returncode == 0, more.stderr
        metrics = rows(run / "metrics.jsonl")
        assert [m["epoch"] for m in metrics] == [0, 1, 2]
        warned = [w for w in metrics[-1]["warnings"] if w.startswith("3 epochs in a row (epochs 0-2) accepted no task")]
        assert len(warned) == 1 and "bad_json 6" in warned[0] and "ends as planned" in warned[0]
        summary = json.loads((run / "summary.json").read_text())
        assert summary["complete"] is True and "stopped_because" not in summary


@pytest.mark.env
@pytest.mark.slow
def test_serve_env_whose_generator_answers_prose_stops_with_exit_5(tmp_path: Path) -> None:
    _need_openenv()
    run = tmp_path / "run"
    with prose_server() as url:
        flags = ("--port", "0", "--model", "openai/prose", "--api-base", url, "--tasks-per-epoch", "2")
        proc = spade("serve-env", *flags, "--out", str(run), timeout=90)  # until stopped: before, it never stopped
    assert proc.returncode == 5, proc.stderr
    assert len(rows(run / "metrics.jsonl")) == 3
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("spade serve-env: stopped: 3 epochs in a row (epochs 0-2) accepted no task")
    assert "bad_json 6" in last and f"spade serve-env --resume {run}" in last
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and "bad_json 6" in summary["stopped_because"]


@pytest.mark.env
@pytest.mark.slow
@pytest.mark.parametrize("wrote", ["run", "solve"])
def test_serve_env_refuses_run_and_solve_directories(tmp_path: Path, wrote: str) -> None:
    _need_openenv()
    path = directory(tmp_path / "d", wrote, "argv")
    before = snapshot(path)
    proc = spade("serve-env", "--resume", str(path), "--port", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip() == refused(wrote, "serve-env", path)  # before, a solve's: "resume it with spade run"
    assert snapshot(path) == before
