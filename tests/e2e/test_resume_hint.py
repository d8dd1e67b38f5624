"""An interrupted ``run`` or ``solve`` advises ``--resume DIR`` only for a directory that holds a run to
resume, and ``solve`` advises it too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli.app import main
from spade_llm.session import Session


def _interrupt(*_args: Any, **_kwargs: Any) -> None:
    raise KeyboardInterrupt


def _generated_tasks(tmp_path: Path, count: int) -> Path:
    """The tasks file of a one-epoch fake run of ``count`` tasks."""
    gen = tmp_path / "gen"
    argv = ["run", "--quiet", "--sandbox", "auto", "--epochs", "1", "--tasks-per-epoch", str(count)]
    assert main([*argv, "--out", str(gen)]) == 0
    return gen / "tasks.jsonl"


def _solve_is_interrupted(tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``spade solve`` of ``tasks`` (with ``Session.solve`` patched to be interrupted): it exits 130 and
    its last line advises resuming the directory it made, which is returned."""
    out = tmp_path / "solved"
    argv = ["solve", str(tasks), "--model", "fake/default", "--sandbox", "auto", "--out", str(out)]
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"spade solve: interrupted; continue with: spade solve --resume {out}"
    return out


def test_ctrl_c_during_start_up_advises_no_resume_of_a_directory_never_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Session, "__init__", _interrupt)  # still checking models, templates, sandbox
    out = tmp_path / "never"
    assert main(["run", "--out", str(out)]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "spade run: interrupted" and not out.exists()


def test_ctrl_c_mid_solve_advises_its_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = Session.solve

    def solve_then_interrupt(self: Session, tasks: list[Any], run: Any, **kwargs: Any) -> Any:
        original(self, tasks, run, **kwargs)  # the run directory holds its episodes
        raise KeyboardInterrupt

    monkeypatch.setattr(Session, "solve", solve_then_interrupt)
    out = _solve_is_interrupted(_generated_tasks(tmp_path, 2), tmp_path, capsys)
    monkeypatch.setattr(Session, "solve", original)
    assert main(["solve", "--resume", str(out)]) == 0  # the advice works
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("masking", [BrokenPipeError, RuntimeError, OSError])
def test_an_error_raised_while_a_ctrl_c_unwinds_is_still_the_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], masking: type
) -> None:
    # answered as itself, such an error ended an interrupted run as an internal error, or with 0 and no
    # word for a broken pipe (what `spade ... | head` exits 0 on)
    original = Session.solve

    def solve_interrupted_then_cleanup_fails(self: Session, tasks: list[Any], run: Any, **kwargs: Any) -> Any:
        original(self, tasks, run, **kwargs)
        try:
            raise KeyboardInterrupt
        finally:
            raise masking(32, "Broken pipe")  # a cleanup that fails as the command stops

    monkeypatch.setattr(Session, "solve", solve_interrupted_then_cleanup_fails)
    _solve_is_interrupted(_generated_tasks(tmp_path, 1), tmp_path, capsys)


def test_ctrl_c_of_a_run_without_out_names_the_directory_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    original = Session._write_header

    def header_then_interrupt(self: Session, run: Any, resumed: bool) -> None:
        original(self, run, resumed)  # config.yaml is there: the directory can be resumed
        raise KeyboardInterrupt

    monkeypatch.setattr(Session, "run", lambda self, run, **kw: header_then_interrupt(self, run, False))
    assert main(["run", "--sandbox", "auto"]) == 130
    [made] = [p.relative_to(tmp_path) for p in (tmp_path / "runs").iterdir()]
    assert (
        capsys.readouterr().err.strip().splitlines()[-1]
        == f"spade run: interrupted; continue with: spade run --resume {made}"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child")
@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="open defect: a SIGINT early in a busy solve is sometimes ignored (the solve runs on; in CI 4 of 4 "
    "runs on 2026-12-07, never by hand on an idle machine); the fix needs its own issue",
)
def test_a_real_sigint_mid_solve(tmp_path: Path, fake_server: Any) -> None:
    """As a user's Ctrl-C arrives: a signal, while episodes run."""
    tasks = _generated_tasks(tmp_path, 4)
    out = tmp_path / "solved"
    # the fake's answers from a server that takes 1 s for each, two at a time: the 200 episodes last
    # minutes of wall clock however fast the machine. Answered at once, in two busy CI runs they were
    # all done before this test's process saw the first trajectory, and the signal met a solve that had
    # ended (exit 0, its summary complete); at 0.1 s a third busy run still saw it end first
    server = fake_server(latency=1.0)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"OPENAI_API_KEY": "sk-test"}
    argv = ["solve", str(tasks), "--model", "openai/default", "--api-base", server.url]
    proc = subprocess.Popen(
        [sys.executable, "-m", "spade_llm.cli", *argv, "--samples-per-task", "50", "--concurrency", "2",
         "--sandbox", "auto", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    trajectories = out / "trajectories.jsonl"
    deadline = time.monotonic() + 120
    while not (trajectories.exists() and trajectories.read_text().strip()) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)  # a heeded signal ends it in seconds
    finally:
        if proc.poll() is None:  # the signal was ignored: the solve is not left running past the test
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == f"spade solve: interrupted; continue with: spade solve --resume {out}"
    assert len(trajectories.read_text().splitlines()) < 200  # it was stopped mid-way
