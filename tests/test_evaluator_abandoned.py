"""Abandoned episodes (a serve-env client that left mid-episode) are recorded but measure nothing:
not the pass rates, not the episode count the target moves on, not a task's learnability."""

from builders import make_task
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.config import RunConfig
from spade_llm.curriculum import Curriculum
from spade_llm.evaluator import epoch_metrics, task_stats
from spade_llm.types import ABANDONED, FinalStatus, Task, Trajectory

STATUSES = st.sampled_from(["passed", "failed", "error", "timeout"])


def _task(task_id: str) -> Task:
    return make_task(task_id, meta={"epoch": 0})


def _trajectory(task_id: str, k: int, status: FinalStatus, abandoned: bool) -> Trajectory:
    return Trajectory(
        trajectory_id=f"{task_id}/{k}",
        task_id=task_id,
        epoch=0,
        sample_index=k,
        messages=[],
        attempts=[],
        final_status="error" if abandoned else status,
        reward=-0.5 if abandoned else 1.0,
        flags=[ABANDONED] if abandoned else [],
    )


def _metrics(by_task: dict[str, list[Trajectory]]):
    config = RunConfig()
    stats = {i: task_stats(i, 0, "induction", ts) for i, ts in by_task.items() if ts}
    row = epoch_metrics(
        0,
        0.3,
        tasks=[_task(i) for i in by_task],
        earlier_tasks=[],
        nearest=lambda _: 0.0,
        trajectories=by_task,
        rejected=[],
        proposals=[],
        task_stats=stats,
        earlier_metrics=[],
        controller=config.controller,
    )
    return row, stats, Curriculum(config).next_target(row)


@settings(max_examples=60, deadline=None)
@given(
    measured=st.lists(st.lists(STATUSES, min_size=0, max_size=4), min_size=1, max_size=6),
    left=st.lists(st.integers(0, 8), min_size=6, max_size=6),
)
def test_abandoned_episodes_change_no_rate_and_no_target(measured, left):
    played = {f"t{i}": [_trajectory(f"t{i}", k, s, False) for k, s in enumerate(ss)] for i, ss in enumerate(measured)}
    with_left = {
        task_id: [*ts, *(_trajectory(task_id, len(ts) + j, "failed", True) for j in range(left[i]))]
        for i, (task_id, ts) in enumerate(played.items())
    }
    row, stats, target = _metrics({i: ts for i, ts in played.items()})
    row_left, stats_left, target_left = _metrics(with_left)

    assert target_left == target
    assert (row_left.pass_rate, row_left.episodes, row_left.first_try_pass_rate) == (
        row.pass_rate,
        row.episodes,
        row.first_try_pass_rate,
    )
    assert row_left.mean_learnability == row.mean_learnability
    assert row_left.abandoned == sum(left[: len(played)])
    for task_id, ts in with_left.items():
        if not ts:
            continue
        s = stats_left[task_id]
        assert s.samples == len(ts)  # every recorded episode is counted as recorded
        assert s.abandoned == len(ts) - len(played[task_id])
        if played[task_id]:
            assert (s.passed, s.pass_rate, s.learnability) == (
                stats[task_id].passed,
                stats[task_id].pass_rate,
                stats[task_id].learnability,
            )
        else:
            assert s.pass_rate is None and s.learnability == 0.0


def test_an_epoch_of_abandoned_episodes_only_keeps_the_target():
    ts = {"t0": [_trajectory("t0", k, "failed", True) for k in range(64)]}
    row, _, target = _metrics(ts)
    assert row.pass_rate is None and row.episodes == 0 and row.abandoned == 64
    assert target == row.difficulty == 0.3
    assert any("abandoned" in w for w in row.warnings)
