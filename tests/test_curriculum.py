"""The plan steers diversity: the tasks the last epoch's duplicates copied are named, and the prompts carry them."""

from __future__ import annotations

import json
from pathlib import Path

from builders import make_task, run_fake, small_config

from spade_llm.curriculum import repeated_tasks
from spade_llm.dedup import HELD_OUT, twin_of
from spade_llm.types import Rejection


def _duplicate(detail: str) -> Rejection:
    return Rejection(epoch=0, reason="duplicate", detail=detail)


def test_a_duplicate_names_its_twin_whatever_the_gate_that_caught_it() -> None:
    assert twin_of("95% similar to t-3") == "t-3"
    assert twin_of("computes what t-4 computes: the same outputs on every shared probe input") == "t-4"
    assert twin_of("the same task as t-5") == "t-5"
    assert twin_of(f"the same task as {HELD_OUT}") is None and twin_of("96% similar to a held-out task") is None
    assert twin_of("validity: no tests") is None


def test_the_plan_names_what_duplicates_copied_twice_or_more_most_copied_first() -> None:
    known = [make_task(f"t{i}") for i in range(5)]
    rejected = [
        _duplicate("91% similar to t3"),
        _duplicate("computes what t1 computes: the same outputs on every shared probe input"),
        _duplicate("97% similar to t3"),
        _duplicate("100% similar to t1"),
        _duplicate("100% similar to t3"),
        _duplicate("92% similar to t0"),  # copied once: chance, not a habit
        _duplicate("99% similar to gone"),  # not a task of the run (any more): nothing to show
        _duplicate("99% similar to gone"),
        Rejection(epoch=0, reason="no_tests", detail="95% similar to t2"),  # not a duplicate's detail
        Rejection(epoch=0, reason="no_tests", detail="95% similar to t2"),
    ]
    assert repeated_tasks(rejected, known, 3) == ["t3", "t1"]
    assert repeated_tasks(rejected, known, 1) == ["t3"]
    assert repeated_tasks(rejected, known, 0) == []


def test_a_collapsing_run_is_told_what_it_repeats_and_a_run_that_opts_out_is_not(tmp_path: Path) -> None:
    def epoch_one(name_repeats: int) -> tuple[dict[str, list[str]], list[str]]:
        config = small_config(
            seed=9,
            generator={"model": "fake/collapse"},
            controller={"epochs": 2, "tasks_per_epoch": 5, "max_empty_epochs": None},
            curriculum={"name_repeats": name_repeats},
        )
        out = run_fake(tmp_path / f"repeats{name_repeats}", config)
        plans = [json.loads(line) for line in (out / "plans.jsonl").read_text().splitlines()]
        prompts = [
            json.loads(line)["prompt"][-1]["content"]
            for line in (out / "proposals.jsonl").read_text().splitlines()
            if json.loads(line)["epoch"] == 1
        ]
        return plans[1], prompts

    plan, prompts = epoch_one(3)
    lines = (tmp_path / "repeats3" / "tasks.jsonl").read_text().splitlines()
    tasks: dict[str, dict[str, str]] = {t["task_id"]: t for t in map(json.loads, lines)}
    assert plan["repeated"] and all(task_id in tasks for task_id in plan["repeated"])
    for task_id in plan["repeated"]:
        named = f"- {tasks[task_id]['entry_point']}: "
        assert all("Proposals keep coming back to these accepted tasks" in p and named in p for p in prompts)
    plan, prompts = epoch_one(0)
    assert "repeated" not in plan  # written only when there is something to say: older plans read the same
    assert prompts and not any("keep coming back" in p for p in prompts)
