"""The controller and curriculum in isolation: stub generator, validator and executor, no sandbox."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spade_llm.config import RunConfig, load_config
from spade_llm.controller import Controller
from spade_llm.curriculum import Curriculum, History, KnownTask
from spade_llm.executors import WorkItem
from spade_llm.generator import Candidate, Proposal, ProposalContext
from spade_llm.hooks import EpochEnd, HookError, load_hook
from spade_llm.llm.stats import LLMStats
from spade_llm.store import RunDir
from spade_llm.types import Attempt, EpochMetrics, ExecutionResult, Task, TestCase, Trajectory
from spade_llm.validation import ValidationReport

BUILTINS = ["abs", "len", "min", "max", "sum", "sorted", "list", "tuple", "str", "int", "float", "set", "round", "repr"]


def unique_code(key: str) -> str:
    """Structurally distinct code per key (builtin names survive the duplicate fingerprint)."""
    h = hashlib.sha256(key.encode()).digest()
    names = [BUILTINS[b % len(BUILTINS)] for b in h[:6]]
    return "def f(x):\n    return " + "(".join(names) + "(x" + ")" * len(names) + "\n"


class StubGenerator:
    """One task per request (or a failure for request indices in ``fail``); records what it saw."""

    def __init__(self, run: RunDir, fail: set[int] | None = None) -> None:
        self.run, self.fail = run, fail or set()
        self.calls: list[ProposalContext] = []
        self.plans_seen: list[int] = []

    async def propose(self, ctx: ProposalContext) -> Proposal:
        await asyncio.sleep(0)
        self.calls.append(ctx)
        plans = [json.loads(x)["epoch"] for x in (self.run.path / "plans.jsonl").read_text().splitlines()]
        self.plans_seen.append(plans[-1])
        p = Proposal(request_index=ctx.request_index, usage_prompt=10, usage_completion=5)
        if ctx.request_index in self.fail:
            p.failure, p.detail = "bad_json", "no JSON"
            return p
        for i in range(ctx.n):
            key = f"{ctx.seed}-{ctx.epoch}-{ctx.request_index}-{i}"
            task = Task(
                task_id=f"e{ctx.epoch}-{ctx.request_index}-{i}",
                description=f"task {key}",
                entry_point="f",
                reference_code=unique_code(key),
                tests=[TestCase(input=f"({j},)", expected=j) for j in range(5)],
                difficulty=1.0,  # a generator that calls everything hard
                meta={"epoch": ctx.epoch, "target_difficulty": ctx.difficulty},
            )
            p.candidates.append(Candidate((ctx.request_index, i), task=task, raw={}))
        return p


class StubChecker:
    async def validate(self, task: Task) -> ValidationReport:
        await asyncio.sleep(0)
        return ValidationReport(task.task_id, True, None, "", "passed", len(task.tests), len(task.tests), task)


class StubExecutor:
    """Passes an episode with probability ``skill(target difficulty)``, drawn from stable keys."""

    def __init__(self, pass_prob, delay: float = 0.0, slots: int = 4) -> None:
        self.pass_prob, self.delay, self.slots = pass_prob, delay, slots
        self.items: list[WorkItem] = []

    async def run(self, item: WorkItem) -> Trajectory:
        self.items.append(item)
        await asyncio.sleep(self.delay)
        d = item.task.meta["target_difficulty"]
        h = int(hashlib.sha256(f"{item.task.task_id}:{item.sample_index}".encode()).hexdigest()[:8], 16) / 2**32
        passed = h < self.pass_prob(d)
        result = ExecutionResult(status="ok", tests_passed=5 if passed else 2, tests_total=5)
        return Trajectory(
            trajectory_id=f"{item.task.task_id}-{item.sample_index}",
            task_id=item.task.task_id,
            epoch=item.epoch,
            sample_index=item.sample_index,
            messages=[],
            attempts=[Attempt(turn=1, code="x", result=result)],
            final_status="passed" if passed else "failed",
            reward=1.0 if passed else -0.2,
        )


def make(tmp_path: Path, config: RunConfig, pass_prob=lambda d: 0.5, **gen_kw):
    run = RunDir.create(tmp_path / "run")
    run.touch_journals()
    gen = StubGenerator(run, **gen_kw)
    executor = StubExecutor(pass_prob, slots=config.controller.concurrency)
    controller = Controller(config, run, gen, executor, StubChecker(), LLMStats(), log=lambda _m: None)
    return controller, gen, executor, run


def cfg(**controller) -> RunConfig:
    return load_config(None, {"controller": {"epochs": 4, "tasks_per_epoch": 6, **controller}})


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_plan_is_on_disk_before_the_epochs_first_request(tmp_path):
    controller, gen, _, run = make(tmp_path, cfg())
    asyncio.run(controller.run_all())
    plans = rows(run.path / "plans.jsonl")
    assert [p["epoch"] for p in plans] == [0, 1, 2, 3]
    assert [c.epoch for c in gen.calls] == gen.plans_seen  # each request saw its epoch's plan on disk
    for plan in plans:  # examples come from earlier epochs only
        assert all(int(i.split("-")[0][1:]) < plan["epoch"] for i in plan["example_ids"])
        assert len({r["seed"] for r in plan["requests"]}) == len(plan["requests"])


def test_plan_depends_only_on_the_history_it_is_given():
    config = cfg()
    cur = Curriculum(config)
    task = Task(
        task_id="e0-a",
        description="d",
        entry_point="f",
        reference_code="def f(x): return x",
        tests=[TestCase(input="(1,)", expected=1)] * 3,
        tags=["strings"],
        meta={"epoch": 0},
    )
    row = EpochMetrics(
        epoch=0,
        difficulty=0.3,
        pass_rate=0.9,
        first_try_pass_rate=0.9,
        mean_turns=1.0,
        tasks_proposed=6,
        tasks_accepted=6,
        rejected_by_reason={},
        novelty=1.0,
        mean_reward=1.0,
        episodes=6,
        next_difficulty=0.4,
    )
    a = cur.plan(1, History(tasks=[KnownTask.of(task)], metrics=[row]))
    b = cur.plan(1, History(tasks=[KnownTask.of(task)], metrics=[row]))
    assert a == b and a.target_difficulty == 0.4 and a.example_ids == ["e0-a"] and a.capability == 0.9


def test_goal_and_topics_reach_every_request(tmp_path):
    config = load_config(
        None,
        {
            "controller": {"epochs": 1, "tasks_per_epoch": 4},
            "curriculum": {"goal": "dynamic programming on strings", "topics": ["tries", "heaps"]},
        },
    )
    controller, gen, _, _ = make(tmp_path, config)
    asyncio.run(controller.run_all())
    assert {c.goal for c in gen.calls} == {"dynamic programming on strings"}
    assert sorted(c.focus for c in gen.calls) == ["heaps", "heaps", "tries", "tries"]


def test_samples_per_task_and_task_stats_agree(tmp_path):
    config = load_config(None, {"controller": {"epochs": 2, "tasks_per_epoch": 5}, "solver": {"samples_per_task": 4}})
    controller, _, _executor, run = make(tmp_path, config)
    asyncio.run(controller.run_all())
    trajs, stats = rows(run.path / "trajectories.jsonl"), rows(run.path / "task_stats.jsonl")
    tasks = rows(run.path / "tasks.jsonl")
    assert len(trajs) == 4 * len(tasks) and len(stats) == len(tasks)
    assert len({(t["task_id"], t["sample_index"]) for t in trajs}) == len(trajs)
    for s in stats:
        mine = [t for t in trajs if t["task_id"] == s["task_id"]]
        passed = sum(t["final_status"] == "passed" for t in mine)
        assert s["samples"] == 4 and s["passed"] == passed and s["pass_rate"] == passed / 4
        assert s["learnability"] == (1 - passed / 4 if 0 < passed < 4 else 0.0)
    metrics = rows(run.path / "metrics.jsonl")
    assert [m["episodes"] for m in metrics] == [4 * m["tasks_accepted"] for m in metrics]  # steering on episodes


def test_failed_requests_count_what_was_asked(tmp_path):
    controller, _, _, run = make(tmp_path, cfg(epochs=1), fail={1, 4})
    asyncio.run(controller.run_all())
    (m,) = rows(run.path / "metrics.jsonl")
    assert m["tasks_proposed"] == 6 and m["tasks_accepted"] == 4 and m["rejected_by_reason"] == {"bad_json": 2}
    assert m["generator_prompt_tokens"] == 60


def test_an_epoch_without_episodes_is_unmeasured_and_keeps_the_difficulty(tmp_path):
    controller, _, _, run = make(tmp_path, cfg(epochs=2), fail=set(range(6)))
    asyncio.run(controller.run_all())
    metrics = rows(run.path / "metrics.jsonl")
    assert [m["pass_rate"] for m in metrics] == [None, None]
    assert [m["difficulty"] for m in metrics] == [0.3, 0.3] and metrics[0]["warnings"]
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["pass_rate"] is None and summary["complete"] is True


def test_reward_difficulty_is_the_target_not_the_generators_claim(tmp_path):
    from spade_llm.solver import reward_difficulty

    controller, _, executor, _ = make(tmp_path, cfg(epochs=1))
    asyncio.run(controller.run_all())
    assert {reward_difficulty(i.task) for i in executor.items} == {0.3}  # the stub labels every task 1.0


SKILLS = {
    "slope": st.floats(0.8, 2.0),
    "center": st.floats(0.2, 0.8),
    "initial": st.floats(0.0, 1.0),
    "tasks": st.integers(4, 16),
    "seed": st.integers(0, 10_000),
}
"""A solver whose pass rate falls with the target around ``center``, and a run's shape: the band tests' draws."""


def band_run(base: Path, slope, center, initial, tasks, seed, **more) -> tuple[list[EpochMetrics], tuple]:
    """A stub run of the drawn solver and shape (``more``: other controller keys); its metrics rows and band."""
    config = load_config(
        None, {"seed": seed, "controller": {"tasks_per_epoch": tasks, "initial_difficulty": initial, **more}}
    )
    skill = lambda d: min(1.0, max(0.0, 0.5 - slope * (d - center)))  # noqa: E731
    controller, _, _, _ = make(base, config, pass_prob=skill)
    return asyncio.run(controller.run_all()), config.controller.band


def assert_moved_only_out_of_band(measured: EpochMetrics, before: float, after: float, band: tuple) -> None:
    """A target (``before`` -> ``after``) stays after an in-band, unmeasured or too small epoch (``measured``),
    goes up after one above the band and down after one below."""
    lo, hi = band
    if measured.pass_rate is None or lo <= measured.pass_rate <= hi or measured.episodes < 4:
        assert after == before
    elif measured.pass_rate > hi:
        assert after >= before
    else:
        assert after <= before


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**SKILLS)
def test_difficulty_never_moves_after_an_in_band_epoch(tmp_path_factory, slope, center, initial, tasks, seed):
    metrics, band = band_run(tmp_path_factory.mktemp("band"), slope, center, initial, tasks, seed, epochs=10)
    for before, after in itertools.pairwise(metrics):
        assert_moved_only_out_of_band(before, before.difficulty, after.difficulty, band)


def record_hook(event: EpochEnd) -> None:
    assert (event.run_dir / "metrics.jsonl").read_text().count("\n") == event.epoch + 1  # its row is on disk
    HOOK_CALLS.append(event.epoch)


def failing_hook(event: EpochEnd) -> None:
    raise RuntimeError("trainer out of memory")


HOOK_CALLS: list[int] = []


def test_on_epoch_end_hooks_run_after_each_metrics_row(tmp_path):
    HOOK_CALLS.clear()
    config = cfg(epochs=3)
    controller, _, _, _ = make(tmp_path, config)
    controller.hooks = [("tests.test_controller:record_hook", record_hook)]
    asyncio.run(controller.run_all())
    assert HOOK_CALLS == [0, 1, 2]


def test_a_failing_hook_stops_the_run_and_keeps_its_records(tmp_path):
    controller, _, _, run = make(tmp_path, cfg(epochs=3))
    controller.hooks = [("tests.test_controller:failing_hook", failing_hook)]
    with pytest.raises(HookError, match="trainer out of memory"):
        asyncio.run(controller.run_all())
    assert len(rows(run.path / "metrics.jsonl")) == 1 and rows(run.path / "trajectories.jsonl")


@pytest.mark.parametrize("entry", ["nocolon", "no_such_module_xyz:f", "json:no_such_function"])
def test_bad_hook_names_are_user_errors(entry):
    from spade_llm.errors import UserError

    with pytest.raises(UserError, match="hook"):
        load_hook(entry)


def test_epoch_budget_ends_an_epoch_with_a_warning_not_a_hang(tmp_path):
    config = load_config(
        None, {"controller": {"epochs": 2, "tasks_per_epoch": 8, "concurrency": 1, "epoch_budget_s": 0.3}}
    )
    controller, _, executor, run = make(tmp_path, config)
    executor.delay = 0.1
    asyncio.run(asyncio.wait_for(controller.run_all(), timeout=10))
    metrics = rows(run.path / "metrics.jsonl")
    assert len(metrics) == 2
    assert all(any("budget" in w for w in m["warnings"]) for m in metrics)
    assert all(m["episodes"] < m["tasks_accepted"] or m["tasks_accepted"] < 8 for m in metrics)


BROKEN_ANSWER = (
    '{"tasks": [{"description": "Add two numbers.", "entry_point": "add",\n'
    '  "reference_code": "def add(a, b):\\n    return a + b",\n'
    '  "tests": [{"input": "(1, 2)"}, {"input": "(3, 4)"}, {"input": "(5, 6)"}] "difficulty": 0.3}]}'
)


def test_bad_answers_are_kept_in_their_rejections_and_make_no_phantom_tasks(tmp_path):
    from spade_llm.fake.scripted import FunctionLLM
    from spade_llm.generator import LLMGenerator
    from spade_llm.templates import Prompts

    config = cfg(epochs=1, tasks_per_epoch=4, proposals_per_request=2)
    run = RunDir.create(tmp_path / "run")
    run.touch_journals()
    stats = LLMStats()
    gen = LLMGenerator(
        FunctionLLM(lambda request: BROKEN_ANSWER),
        Prompts(),
        temperature=0.9,
        max_tokens=100,
        stats=stats.view("generator"),
    )
    controller = Controller(config, run, gen, StubExecutor(lambda d: 0.5), StubChecker(), stats, log=lambda _m: None)
    asyncio.run(controller.run_all())
    rejected = rows(run.path / "rejected.jsonl")
    assert [r["reason"] for r in rejected] == ["bad_json", "bad_json"]  # one per request, not one per test
    assert all(r["answer"] == BROKEN_ANSWER for r in rejected)
    assert all(r["parse_error"]["line"] == 3 for r in rejected)
    metrics = rows(run.path / "metrics.jsonl")[0]
    assert metrics["tasks_proposed"] == 4 and metrics["rejected_by_reason"] == {"bad_json": 2}
    llm = json.loads((run.path / "summary.json").read_text())["llm"]
    assert llm["by_kind"] == {} and llm["content_faults"] == {"bad_json": 4}  # two asks per request
    assert llm["by_role"]["generator"]["content_faults"] == {"bad_json": 4}


def test_frontier_examples_show_the_edge_and_one_task_past_it_on_each_side():
    from spade_llm.curriculum import frontier_examples

    tasks = [
        KnownTask.of(Task(task_id=f"t{i}", description="d", entry_point="f", reference_code="def f(x): x", tests=[]))
        for i in range(8)
    ]
    rates = {"t0": 0.5, "t1": 1.0, "t2": 0.0, "t3": 0.4, "t4": 0.9, "t5": 0.6, "t6": 0.1}  # t7: not measured yet
    chosen, shown_rates = frontier_examples(History(tasks, [], rates), shown=2, band=(0.3, 0.7))
    assert [t.task_id for t in chosen] == ["t3", "t5", "t4", "t6"]  # the two latest in band, then easy, hard
    assert shown_rates == {"t3": 0.4, "t5": 0.6, "t4": 0.9, "t6": 0.1}
    unmeasured, none = frontier_examples(History(tasks, [], {}), shown=2, band=(0.3, 0.7))
    assert [t.task_id for t in unmeasured] == ["t6", "t7"] and none == {}  # nothing measured: the latest
    assert frontier_examples(History(tasks, [], rates), shown=0, band=(0.3, 0.7)) == ([], {})


def test_the_plan_records_example_rates_and_the_prompt_shows_them(tmp_path):
    from spade_llm.fake.scripted import ScriptedLLM
    from spade_llm.generator import LLMGenerator
    from spade_llm.templates import Prompts

    controller, gen, _, run = make(tmp_path, cfg(epochs=3, tasks_per_epoch=4), pass_prob=lambda d: 0.5)
    asyncio.run(controller.run_all())
    plans = rows(run.path / "plans.jsonl")
    stats = {r["task_id"]: r["pass_rate"] for r in rows(run.path / "task_stats.jsonl")}
    assert plans[0]["example_rates"] == {}
    later = plans[-1]
    assert later["example_ids"] and later["example_rates"]
    assert all(stats[i] == rate for i, rate in later["example_rates"].items())  # rates of earlier epochs
    ctx = gen.calls[-1]
    assert ctx.example_rates == later["example_rates"] and ctx.band == (0.3, 0.7)
    text = LLMGenerator(ScriptedLLM([]), Prompts(), temperature=0.9, max_tokens=10).messages(ctx)[1].content
    assert "solver passed" in text and ("at the edge" in text or "too easy" in text or "too hard" in text)


def test_epoch_rows_carry_the_funnel_and_a_stuck_pass_rate_is_said_as_persisting(tmp_path):
    lines: list[str] = []
    controller, _, _, run = make(tmp_path, cfg(epochs=4, tasks_per_epoch=4), pass_prob=lambda d: 1.0)
    controller.log = lines.append
    asyncio.run(controller.run_all())
    metrics = rows(run.path / "metrics.jsonl")
    assert metrics[0]["funnel"] == {"proposed": 4, "parsed": 4, "valid": 4, "novel": 4, "accepted": 4}
    assert metrics[0]["kinds"] == {"induction": 4} and metrics[0]["zero_spread_share"] == 1.0
    stuck = "pass rate stuck near 1 for 3 epochs: the tasks are too easy to learn from"
    assert [stuck in m["warnings"] for m in metrics] == [False, False, True, True]
    # written every epoch it holds, and printed under each: first as news, then as persisting
    said = [line for line in lines if stuck in line]
    assert len(said) == 2 and f"warning: {stuck}" in said[0] and f"warning: still: {stuck}" in said[1]
