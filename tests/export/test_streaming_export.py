"""Exports stream: ``read_for_export`` keeps where each task and episode is, not the records, and rows are
written as they are made, so an export's memory does not grow with the run's trajectories (issue 41).

The runs are a small fake run grown by ``benchmarks/synthetic_run.py`` (the template copied as later
epochs, each copy's texts marked so its rows are examples of their own), the generator the scaling
benchmark uses."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from builders import grown_run, run_fake, small_config

from spade_llm.errors import UserError
from spade_llm.export.solver_rows import ExportFilters, TaskRecords, export_run, read_for_export
from spade_llm.store import check_integrity, read_run


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = small_config(7, controller={"epochs": 2, "tasks_per_epoch": 4}, solver={"samples_per_task": 3})
    return run_fake(tmp_path_factory.mktemp("template") / "run", config)


def _grown(template: Path, folder: Path, copies: int) -> Path:
    return grown_run(template, folder / f"x{copies}", copies)


def _peak_export(run: Path, out: Path) -> tuple[int, int]:
    """(rows written, peak bytes traced while exporting sft)."""
    tracemalloc.start()
    try:
        result = export_run(run, "sft", out, ExportFilters())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result.rows, peak


def test_a_grown_run_is_one_spade_could_have_written(template: Path, tmp_path: Path) -> None:
    grown = _grown(template, tmp_path, 3)
    records = check_integrity(read_run(grown))  # resume's checks: nothing missing, repeated or re-derived
    base = read_run(template)
    assert len(records.trajectories) == 3 * len(base.trajectories) and len(records.metrics) == 3 * len(base.metrics)
    assert not records.repairs.rejections and not records.repairs.stats
    assert len({t.task_id for t in records.tasks}) == len(records.tasks)


def test_an_exports_memory_does_not_grow_with_the_trajectories(template: Path, tmp_path: Path) -> None:
    small, large = _grown(template, tmp_path, 2), _grown(template, tmp_path, 16)
    _peak_export(small, tmp_path / "warm.jsonl")  # imports and caches filled before anything is measured
    rows_small, peak_small = _peak_export(small, tmp_path / "small.jsonl")
    rows_large, peak_large = _peak_export(large, tmp_path / "large.jsonl")
    assert rows_large == 8 * rows_small > 0  # every copy's rows are written: 8x the rows...
    assert peak_large < 1.5 * peak_small, (peak_small, peak_large)  # ...in about the same memory


def test_streamed_rows_are_the_rows_in_order_with_each_example_once(template: Path, tmp_path: Path) -> None:
    grown = _grown(template, tmp_path, 3)
    run = read_for_export(grown, 0.1)
    assert isinstance(run.tasks, TaskRecords)
    records = list(run.tasks)  # read again and again, each time the same
    assert [r.task.task_id for r in records] == [r.task.task_id for r in run.tasks] and len(records) == len(run.tasks)
    for fmt in ("sft", "dpo", "grpo"):
        result = export_run(grown, fmt, tmp_path / f"{fmt}.jsonl", ExportFilters())
        rows = [json.loads(line) for line in (tmp_path / f"{fmt}.jsonl").read_text().splitlines()]
        assert result.rows == len(rows) and result.test == sum(r["split"] == "test" for r in rows)
        assert result.tasks == len({r["task_id"] for r in rows})
        key = "messages" if fmt == "sft" else "prompt"
        assert len({json.dumps(r[key]) for r in rows}) == len(rows) or fmt == "dpo"
        order = {r.task.task_id: i for i, r in enumerate(records)}
        assert [order[r["task_id"]] for r in rows] == sorted(order[r["task_id"]] for r in rows)


def test_a_damaged_episode_is_refused_before_anything_is_written(template: Path, tmp_path: Path) -> None:
    grown = _grown(template, tmp_path, 2)
    lines = (grown / "trajectories.jsonl").read_text().splitlines(keepends=True)
    lines[-2] = '{"trajectory_id": "half"}\n'
    (grown / "trajectories.jsonl").write_text("".join(lines))
    out = tmp_path / "sft.jsonl"
    with pytest.raises(UserError, match=rf"trajectories.jsonl:{len(lines) - 1}: not a trajectory"):
        export_run(grown, "sft", out, ExportFilters())
    assert not out.exists()
