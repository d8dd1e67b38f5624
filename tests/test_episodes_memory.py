"""A run's loop holds the epochs still running, not the run (issue 41): ``RunState`` lets an epoch's episodes,
answers and plan go once its metrics row is written, and resume reads a run back holding only those of the
epochs still running, counting the rest as it reads (``RunTally``); ``summary.json`` says the same as when it
was computed from every record."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from builders import grown_run, run_fake, small_config

from spade_llm.episodes import RunState
from spade_llm.evaluator import count_reasons, facet_counts, pass_rate, proposed_tasks
from spade_llm.progress import run_summary
from spade_llm.store import METRICS, RunDir, RunRecords, read_run
from spade_llm.types import EpochMetrics, TokenUsage, task_epoch


def summary_from_records(records: RunRecords, samples_per_task: int) -> dict[str, Any]:
    """What ``run_summary`` said when it was computed from every record (its code before the tally)."""
    trajs = records.trajectories
    by_task: dict[str, list[Any]] = {}
    for t in trajs:
        by_task.setdefault(t.task_id, []).append(t)
    rows = records.proposals
    costs = [r["cost"] for r in rows if r.get("cost") is not None]
    facets = facet_counts(proposed_tasks(rows), records.tasks, by_task)
    return {
        "epochs": len(records.metrics),
        "tasks_accepted": len(records.tasks),
        "tasks_rejected": len(records.rejected),
        "rejected_by_reason": count_reasons(r.reason for r in records.rejected),
        "trajectories": len(trajs),
        "samples_per_task": samples_per_task,
        "final_status": dict(sorted(Counter(t.final_status for t in trajs).items())),
        "pass_rate": pass_rate(trajs),
        "mean_reward": round(math.fsum(t.reward for t in trajs) / len(trajs), 4) if trajs else None,
        "difficulty": [m.difficulty for m in records.metrics],
        **({"facets": facets} if facets else {}),
        "usage": {
            "solver": sum((t.usage for t in trajs), TokenUsage()).model_dump(),
            "generator": {
                "prompt_tokens": sum(int(r["prompt_tokens"]) for r in rows),
                "completion_tokens": sum(int(r["completion_tokens"]) for r in rows),
                "cost": sum(costs) if costs else None,
            },
        },
    }


def _written(path: Path) -> dict[str, Any]:
    summary = json.loads((path / "summary.json").read_text())
    for key in ("llm", "complete", "stopped_because"):
        summary.pop(key, None)
    return dict(summary)


@pytest.fixture(scope="module")
def bugfix_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three epochs of induction and bug-fix tasks (their facets are counted), two samples a task."""
    config = small_config(
        2,
        controller={"epochs": 3, "tasks_per_epoch": 4},
        solver={"samples_per_task": 2},
        curriculum={"kinds": {"induction": 1.0, "bugfix": 1.0}},
    )
    return run_fake(tmp_path_factory.mktemp("bugfix") / "run", config)


def test_the_summary_a_run_counts_as_it_goes_is_the_one_its_records_give(bugfix_run: Path) -> None:
    """Written by the loop (episodes let go epoch by epoch) and recounted by resume, the summary is the one
    computed from every record: counts, exact mean reward, token sums and facets."""
    expected = summary_from_records(read_run(bugfix_run), 2)
    assert "facets" in expected and expected["trajectories"] > 0
    assert _written(bugfix_run) == expected
    state = RunState.load(RunDir.open_existing(bugfix_run))
    resumed = run_summary(state, 2, {}, done=True)
    for key in ("llm", "complete"):
        resumed.pop(key)
    assert resumed == expected


def _unfinish_last_epoch(run: Path) -> int:
    """Remove the last metrics row, as a kill just before it was written leaves the run; its epoch."""
    lines = (run / METRICS).read_text().splitlines(keepends=True)
    (run / METRICS).write_text("".join(lines[:-1]))
    return len(lines) - 1


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = small_config(7, controller={"epochs": 2, "tasks_per_epoch": 4}, solver={"samples_per_task": 3})
    return run_fake(tmp_path_factory.mktemp("template") / "run", config)


def test_resume_holds_the_running_epochs_records_and_counts_the_rest(template: Path, tmp_path: Path) -> None:
    grown = grown_run(template, tmp_path / "grown", 6)
    running = _unfinish_last_epoch(grown)
    records = read_run(grown)
    state = RunState.load(RunDir.open_existing(grown))

    running_tasks = {t.task_id for t in records.tasks if task_epoch(t) == running}
    assert running_tasks and set(state.by_task) == running_tasks
    assert sum(map(len, state.by_task.values())) == sum(t.epoch == running for t in records.trajectories)
    assert state.proposals and {epoch for epoch, _ in state.proposals} == {running}
    assert set(state.plans) == {running - 1, running}
    assert {r.epoch for r in state.rejected} <= {running - 2, running - 1, running}
    # what was let go is counted: the summary is the one every record gives
    expected = summary_from_records(records, 3)
    summary = run_summary(state, 3, {}, done=False)
    assert {k: summary[k] for k in expected} == expected
    # of the finished epochs' tasks, stats rows and metrics rows only what plans read is held; each is read
    # back whole as it was written
    assert [t.task_id for t in state.tasks] == [t.task_id for t in records.tasks]
    assert set(state.open_tasks) == running_tasks
    assert set(state.task_stats) <= running_tasks
    assert set(state.measured) == {s.task_id for s in records.task_stats}
    assert all(state.task(t.task_id) == t for t in records.tasks)
    assert list(state.each_task()) == records.tasks
    assert len(state.metrics) == running and list(state.metrics) == records.metrics[:running]
    assert list(state.metrics_before(2)) == records.metrics[:2] and list(state.metrics.difficulties) == [
        m.difficulty for m in records.metrics[:running]
    ]


def test_an_ended_epoch_lets_its_records_go(template: Path, tmp_path: Path) -> None:
    """``end_epoch``: the row is held; the epoch's episodes and answers are not, nor the plans before it
    and the rejections before the one before it (an overlapped plan may still read them)."""
    run = grown_run(template, tmp_path / "grown", 2)
    last_row = (run / METRICS).read_text().splitlines()[-1]
    running = _unfinish_last_epoch(run)
    state = RunState.load(RunDir.open_existing(run))
    held = sum(map(len, state.by_task.values()))
    assert held and state.proposals
    state.end_epoch(EpochMetrics.model_validate_json(last_row))
    assert not state.by_task and not state.proposals and len(state.metrics) == running + 1
    assert not state.open_tasks and not state.task_stats  # the tasks are known by their briefs
    assert set(state.plans) == {running} and {r.epoch for r in state.rejected} <= {running - 1, running}
    assert state.tally.episodes == len(read_run(run).trajectories)
    task = next(t for t in state.tasks if t.epoch == running)
    assert state.recorded(task.task_id) == 3  # from its stats row, its episodes let go


def test_an_overlapped_plan_made_after_two_epochs_ended_still_reads_the_duplicates_it_steers_from() -> None:
    """With ``controller.overlap`` epoch 2's plan reads epoch 0's rejections (``history(1)``), and epoch 1 may
    end before that plan is made: ending epoch 1 must not let epoch 0's go (a fake ``collapse`` run then
    planned without the tasks its duplicates copied, one run in four)."""
    from spade_llm.types import Rejection

    state = RunState()
    for epoch in range(3):
        state.add_rejection(Rejection(epoch=epoch, request_index=0, position=0, reason="duplicate"))
    rows = [
        EpochMetrics(
            epoch=e, difficulty=0.3, pass_rate=None, first_try_pass_rate=None, mean_turns=None, tasks_proposed=1,
            tasks_accepted=0, rejected_by_reason={"duplicate": 1}, novelty=1.0, mean_reward=None,
        )
        for e in range(3)
    ]  # fmt: skip
    state.end_epoch(rows[0])
    state.end_epoch(rows[1])
    assert [r.epoch for r in state.rejected] == [0, 1, 2]
    state.end_epoch(rows[2])
    assert [r.epoch for r in state.rejected] == [1, 2]
    assert state.tally.reasons == {"duplicate": 3}
