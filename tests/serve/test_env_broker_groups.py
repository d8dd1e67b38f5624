"""serve-env's groups at the broker: the ``group_size`` takes naming one ``group_id`` get episodes of one
task, whatever order takes and episodes arrive in (no openenv-core needed: the broker is the run's side)."""

from __future__ import annotations

import asyncio
import random

import pytest
from builders import make_task
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.llm.base import LLMRequest
from spade_llm.serve.env import broker as broker_module
from spade_llm.serve.env.broker import EnvBroker, EpisodeGone
from spade_llm.types import Message, Task


def _task(i: int) -> Task:
    return make_task(f"t{i}", meta={"epoch": 0})


def _offer(broker: EnvBroker, task: Task, k: int) -> asyncio.Future[object]:
    """Episode ``k`` of ``task`` opened and its first turn offered, as the run's solver does."""
    broker.open(task, 0, k)
    request = LLMRequest(
        messages=[Message(role="user", content=task.task_id)],
        role="solver",
        metadata={"epoch": 0, "task_id": task.task_id, "sample_index": k, "turn": 1},
    )
    return asyncio.ensure_future(broker.complete(request))


async def _play(
    samples: int, group_size: int, groups: int, seed: int, ungrouped: int, offer_first: bool
) -> tuple[list[tuple[str | None, str]], EnvBroker]:
    broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=10, samples_per_task=samples)
    rng = random.Random(seed)
    n_tasks = groups + ungrouped  # enough even if each take without a group starts a task of its own
    episodes = [(_task(i), k) for i in range(n_tasks) for k in range(samples)]
    takes = [f"g{g}" for g in range(groups) for _ in range(group_size)] + [None] * ungrouped
    rng.shuffle(takes)
    solving: list[asyncio.Future[object]] = []
    if offer_first:
        solving += [_offer(broker, t, k) for t, k in episodes]
    waits = []
    for key in takes:
        waits.append(asyncio.ensure_future(broker.take(group=key, group_size=group_size if key else None)))
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    if not offer_first:  # takes wait first; the episodes come in task order, a few at a time
        for t, k in episodes:
            solving.append(_offer(broker, t, k))
            if rng.random() < 0.5:
                await asyncio.sleep(0)
    got = await asyncio.gather(*waits)
    for s in solving:
        s.cancel()
    await asyncio.gather(*solving, return_exceptions=True)
    return [(key, episode.task.task_id) for key, (episode, _) in zip(takes, got, strict=True)], broker


@settings(max_examples=80, deadline=None)
@given(
    group_size=st.sampled_from([1, 2, 4]),
    per_group=st.sampled_from([1, 2]),
    groups=st.integers(1, 6),
    ungrouped=st.integers(0, 3),
    seed=st.integers(0, 10_000),
    offer_first=st.booleans(),
)
def test_every_group_shares_one_task_whatever_the_order(group_size, per_group, groups, ungrouped, seed, offer_first):
    samples = group_size * per_group
    taken, _ = asyncio.run(_play(samples, group_size, groups, seed, ungrouped, offer_first))
    by_group: dict[str, set[str]] = {}
    for key, task_id in taken:
        if key is not None:
            by_group.setdefault(key, set()).add(task_id)
    assert all(len(tasks) == 1 for tasks in by_group.values()), by_group
    per_task: dict[str, int] = {}
    for _, task_id in taken:
        per_task[task_id] = per_task.get(task_id, 0) + 1
    assert all(n <= samples for n in per_task.values())  # no task handed more episodes than it has
    if group_size > 1 and samples == group_size:  # a task went to one group, or to takes without one
        owners: dict[str, set[str | None]] = {}
        for key, task_id in taken:
            owners.setdefault(task_id, set()).add(key)
        assert all(len(keys) == 1 for keys in owners.values()), owners


def test_a_key_taken_again_after_its_group_is_whole_starts_a_new_group():
    async def main() -> list[str]:
        broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=5, samples_per_task=2)
        solving = [_offer(broker, _task(i), k) for i in range(3) for k in range(2)]
        tasks = [(await broker.take(group="slot-0", group_size=2))[0].task.task_id for _ in range(6)]
        for s in solving:
            s.cancel()
        await asyncio.gather(*solving, return_exceptions=True)
        return tasks

    assert asyncio.run(main()) == ["t0", "t0", "t1", "t1", "t2", "t2"]


def test_a_group_size_that_does_not_divide_the_samples_is_refused_with_the_fix():
    async def main() -> None:
        broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=5, samples_per_task=2)
        with pytest.raises(EpisodeGone, match=r"--samples-per-task 4"):
            await broker.take(group="g", group_size=4)

    asyncio.run(main())


def test_a_group_member_given_back_unseen_is_replaced_by_the_next_member():
    async def main() -> tuple[str, str]:
        broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=5, samples_per_task=2)
        solving = [_offer(broker, _task(i), k) for i in range(2) for k in range(2)]
        await asyncio.sleep(0)
        first, _ = await broker.take(group="g", group_size=2)
        second, _ = await broker.take(group="g", group_size=2)
        broker.give_back(second)  # its client left before it saw the episode
        third, _ = await broker.take(group="g", group_size=2)  # still the group's: the same task
        other, _ = await broker.take()  # a take without a group: the next task
        for s in solving:
            s.cancel()
        await asyncio.gather(*solving, return_exceptions=True)
        assert third is second
        return first.task.task_id, other.task.task_id

    assert asyncio.run(main()) == ("t0", "t1")


def test_a_take_without_a_group_never_takes_an_episode_promised_to_one():
    async def main() -> None:
        broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=0.2, samples_per_task=2)
        solving = [_offer(broker, _task(0), k) for k in range(2)]
        await asyncio.sleep(0)
        await broker.take(group="g", group_size=2)
        with pytest.raises(EpisodeGone, match="promised to a group"):
            await broker.take()
        for s in solving:
            s.cancel()
        await asyncio.gather(*solving, return_exceptions=True)

    asyncio.run(main())


def test_a_reset_that_waits_says_why_in_the_servers_log_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_module, "SAY_WAIT_AFTER_S", 0.05)

    async def main() -> list[str]:
        broker = EnvBroker(episode_timeout_s=30, reset_timeout_s=5, samples_per_task=2)
        said: list[str] = []
        broker.log = said.append
        takes = [asyncio.ensure_future(broker.take()) for _ in range(3)]  # no episode yet: all three wait
        await asyncio.sleep(0.2)
        assert len(said) == 1, said  # a batch of resets waits for one reason: told once
        solving = [_offer(broker, _task(0), k) for k in range(2)] + [_offer(broker, _task(1), 0)]
        await asyncio.gather(*takes)
        for s in solving:
            s.cancel()
        await asyncio.gather(*solving, return_exceptions=True)
        return said

    (line,) = asyncio.run(main())
    assert line.startswith("a reset waits for an episode: the next tasks are still being proposed and validated")
