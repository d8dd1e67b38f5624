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
