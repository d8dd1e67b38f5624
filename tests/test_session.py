"""A run from Python, as docs/python-api.md shows it: ``start_run`` into a ``RunDir``, read back with
``read_run`` (through tests/builders.py's ``small_config`` and ``run_fake``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade_llm import read_run


def test_a_run_started_from_python_reads_back_whole(
    tmp_path: Path, small_config: Callable[..., Any], run_fake: Callable[..., Path]
) -> None:
    config = small_config(seed=4, controller={"epochs": 2}, solver={"samples_per_task": 2})
    run = run_fake(tmp_path / "run", config)
    records = read_run(run)
    assert len(records.metrics) == 2
    assert len(records.tasks) == sum(m.tasks_accepted for m in records.metrics) > 0
    assert len(records.trajectories) == 2 * len(records.tasks)  # every accepted task, both samples
    assert json.loads((run / "summary.json").read_text())["complete"] is True


def test_the_manifest_says_which_commit_wrote_the_run_and_whether_it_had_changes(tmp_path: Path) -> None:
    import shutil
    import subprocess

    import spade_llm
    from spade_llm.session import source_revision

    package = Path(spade_llm.__file__).parent
    head = subprocess.run(["git", "-C", str(package), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0 or shutil.which("git") is None:  # a wheel: nothing to say, and it says nothing
        assert source_revision() is None
        return
    assert source_revision() == {"commit": head.stdout.strip(), "dirty": source_revision()["dirty"]}  # type: ignore[index]
    # a checkout of its own: clean, then a tracked file changed
    repo = tmp_path / "checkout"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.py"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "a"], check=True)
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert source_revision(repo) == {"commit": commit.strip(), "dirty": False}
    (repo / "a.py").write_text("x = 2\n")
    assert source_revision(repo) == {"commit": commit.strip(), "dirty": True}
    assert source_revision(tmp_path / "elsewhere") is None  # not a checkout (or no git): None, never a guess
