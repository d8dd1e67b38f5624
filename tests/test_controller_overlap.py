"""``controller.overlap``: the next epoch's tasks are made while this epoch's episodes are played
(serve-env turns it on, so no reset waits at an epoch boundary), with the records still a function of the
seed: plans read the epochs before the one before, metrics rows come in epoch order."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from builders import run_records
from hypothesis import HealthCheck, given, settings
from test_controller import (
    SKILLS,
    StubChecker,
    StubExecutor,
    StubGenerator,
    assert_moved_only_out_of_band,
    band_run,
    cfg,
    make,
    rows,
)

from spade_llm.config import load_config
from spade_llm.controller import Controller
from spade_llm.errors import UserError
from spade_llm.evaluator import next_difficulty
from spade_llm.executors import WorkItem
from spade_llm.generator import Proposal, ProposalContext
from spade_llm.hooks import EpochEnd
from spade_llm.llm.stats import LLMStats
from spade_llm.store import RunDir, check_integrity, read_run
from spade_llm.types import Trajectory


class AsksAhead(StubGenerator):
    """Notes when a request of epoch 1 arrives."""

    def __init__(self, run: RunDir) -> None:
        super().__init__(run)
        self.epoch_one = asyncio.Event()

    async def propose(self, ctx: ProposalContext) -> Proposal:
        if ctx.epoch == 1:
            self.epoch_one.set()
        return await super().propose(ctx)


class HeldUntilEpochOne(StubExecutor):
    """Epoch 0's episodes end only once epoch 1's proposals are asked for (a client still thinking)."""

    def __init__(self, generator: AsksAhead) -> None:
        super().__init__(lambda d: 0.5, slots=64)
        self.generator = generator

    async def run(self, item: WorkItem) -> Trajectory:
        if item.epoch == 0:
            await asyncio.wait_for(self.generator.epoch_one.wait(), timeout=10)
        return await super().run(item)


def controller_for(tmp_path: Path, **controller: Any) -> tuple[Controller, AsksAhead, RunDir]:
    run = RunDir.create(tmp_path / "run")
    run.touch_journals()
    generator = AsksAhead(run)
    config = cfg(epochs=3, **controller)
    executor = HeldUntilEpochOne(generator)
    return Controller(config, run, generator, executor, StubChecker(), LLMStats(), log=lambda _m: None), generator, run


def test_the_next_epoch_is_proposed_while_this_one_is_played(tmp_path: Path) -> None:
    # before: epoch 1's first request waited for epoch 0's last episode, so a client resetting at the
    # boundary waited out proposals and validation; here epoch 0's episodes end only once epoch 1 is asked
    controller, _, run = controller_for(tmp_path, overlap=True)
    metrics = asyncio.run(controller.run_all())
    assert [m.epoch for m in metrics] == [0, 1, 2]
    assert [r["epoch"] for r in rows(run.path / "metrics.jsonl")] == [0, 1, 2]  # rows in epoch order
    assert json.loads((run.path / "summary.json").read_text())["complete"] is True


def test_without_overlap_epochs_run_one_after_another(tmp_path: Path) -> None:
    controller, _, _ = controller_for(tmp_path, overlap=False)
    with pytest.raises(TimeoutError):  # epoch 0's episodes wait for epoch 1, which waits for them
        asyncio.run(controller.run_all())


JOURNALS = ("tasks.jsonl", "plans.jsonl", "task_stats.jsonl", "trajectories.jsonl", "metrics.jsonl")


def skill(d: float) -> float:
    return min(1.0, max(0.0, 1.2 - 1.5 * d))


def test_each_plan_moves_the_target_before_it_by_the_last_measured_epoch(tmp_path: Path) -> None:
    config = cfg(epochs=6, overlap=True)
    controller, _, _, run = make(tmp_path, config, pass_prob=lambda d: 1.0 if d < 0.55 else 0.0)
    metrics = asyncio.run(controller.run_all())
    plans = {p["epoch"]: p for p in rows(run.path / "plans.jsonl")}
    c = config.controller
    assert [plans[e]["target_difficulty"] for e in (0, 1)] == [0.3, 0.3]
    for e in range(2, 6):  # epoch e - 1 still runs when e is planned: e - 2 is the last measured
        before = metrics[e - 2]
        moved = next_difficulty(
            plans[e - 1]["target_difficulty"], before.pass_rate, before.episodes, c.band, c.difficulty_step
        )
        assert plans[e]["target_difficulty"] == moved
        # examples come from the epochs a plan may read
        assert all(int(i.split("-")[0][1:]) < e - 1 for i in plans[e]["example_ids"])
    targets = [m.difficulty for m in metrics]
    assert targets[2] > targets[1] and targets[3] > targets[2], targets  # it moves every epoch, not every other


def test_an_overlapped_run_writes_the_same_records_at_any_speed(tmp_path: Path) -> None:
    def run_once(name: str, concurrency: int, delay: float) -> dict[str, list[Any]]:
        config = cfg(epochs=4, overlap=True, concurrency=concurrency)
        run = RunDir.create(tmp_path / name)
        run.touch_journals()
        executor = StubExecutor(skill, delay=delay, slots=concurrency)
        generator, quiet = StubGenerator(run), lambda _m: None
        asyncio.run(Controller(config, run, generator, executor, StubChecker(), LLMStats(), log=quiet).run_all())
        return run_records(run.path, JOURNALS)

    assert run_once("fast", 8, 0.0) == run_once("slow", 1, 0.002)


def test_a_run_directory_holds_records_of_one_epoch_ahead_but_not_two(tmp_path: Path) -> None:
    controller, _, _, run = make(tmp_path, cfg(epochs=3, overlap=True))
    asyncio.run(controller.run_all())
    # as if killed while epoch 1 ran and epoch 2 had started: a state an overlapped run leaves
    records = cut_to(run.path, tmp_path / "one", finished=1)
    assert {t.meta["epoch"] for t in records.tasks} == {0, 1, 2}
    with pytest.raises(UserError, match=r"no row for epoch 0, though epoch 2 has records"):
        cut_to(run.path, tmp_path / "two", finished=0)  # two ahead: a row was removed


def cut_to(source: Path, copy: Path, finished: int) -> Any:
    """The records of ``source`` copied to ``copy`` with only the first ``finished`` epochs' rows, checked."""
    shutil.copytree(source, copy)
    (copy / "config.yaml").write_text("seed: 0\n")  # the stub run wrote none
    metrics = (copy / "metrics.jsonl").read_text().splitlines()[:finished]
    (copy / "metrics.jsonl").write_text("".join(line + "\n" for line in metrics))
    stats = [r for r in rows(copy / "task_stats.jsonl") if r["epoch"] < finished]
    (copy / "task_stats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stats))
    return check_integrity(read_run(copy))


HOOK_EPOCHS: list[int] = []


def in_order_hook(event: EpochEnd) -> None:
    assert (event.run_dir / "metrics.jsonl").read_text().count("\n") == event.epoch + 1  # its row is the last
    HOOK_EPOCHS.append(event.epoch)


def test_hooks_see_each_epoch_once_in_order(tmp_path: Path) -> None:
    HOOK_EPOCHS.clear()
    controller, _, _, _ = make(tmp_path, cfg(epochs=4, overlap=True))
    controller.hooks = [("tests.test_controller_overlap:in_order_hook", in_order_hook)]
    asyncio.run(controller.run_all())
    assert HOOK_EPOCHS == [0, 1, 2, 3]


def test_overlap_and_a_training_step_are_refused_together() -> None:
    with pytest.raises(Exception, match=r"controller\.overlap .* trainer\.command"):
        load_config(None, {"controller": {"overlap": True}, "trainer": {"command": "true"}})


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**SKILLS)
def test_overlapped_the_target_moves_only_after_an_epoch_out_of_band(
    tmp_path_factory: pytest.TempPathFactory, slope: float, center: float, initial: float, tasks: int, seed: int
) -> None:
    base = tmp_path_factory.mktemp("band")
    metrics, band = band_run(base, slope, center, initial, tasks, seed, epochs=8, overlap=True)
    # epoch e's target is epoch e - 1's, moved by what epoch e - 2 measured
    for measured, before, after in zip(metrics, metrics[1:], metrics[2:], strict=False):
        assert_moved_only_out_of_band(measured, before.difficulty, after.difficulty, band)
