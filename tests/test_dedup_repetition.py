"""R-Zero's repetition penalty (``dedup.repetition_penalties``): the share of a batch's other tasks in a task's
cluster, weighted; clusters chain by code-shape similarity within a kind, keyed kinds join on their key."""

from __future__ import annotations

import random
from typing import Any

import pytest
from builders import make_task
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.dedup import REPETITION_SIMILARITY, repetition_penalties, task_shape
from spade_llm.nearest import jaccard

ADD = "def add(a, b):\n    return a + b\n"
ADD_RENAMED = "def plus(x, y):\n    return x + y\n"  # the same shape: names are abstracted away
SQUARES = (
    "def squares(xs):\n    out = []\n    for x in xs:\n"
    "        if x > 0:\n            out.append(x * x)\n    return out\n"
)
WORDS = "def words(s):\n    return sorted(set(w.lower() for w in s.split() if w.isalpha()), key=len)\n"
BUG = "def add(a, b):\n    return a - b\n"


def test_tasks_unlike_each_other_pay_no_penalty_and_copies_pay_their_share() -> None:
    unlike = [make_task("a", ADD), make_task("b", SQUARES), make_task("c", WORDS)]
    assert repetition_penalties(unlike, 1.0) == [0.0, 0.0, 0.0]
    # two of four ask the same question: each has one of the three others in its cluster
    batch = [make_task("a", ADD), make_task("b", SQUARES), make_task("a2", ADD_RENAMED), make_task("c", WORDS)]
    assert repetition_penalties(batch, 1.0) == [round(1 / 3, 6), 0.0, round(1 / 3, 6), 0.0]
    assert repetition_penalties(batch, 0.5) == [round(0.5 / 3, 6), 0.0, round(0.5 / 3, 6), 0.0]
    # the whole batch one question: R-Zero's weight takes all of it
    assert repetition_penalties([make_task(str(i), ADD) for i in range(4)], 1.0) == [1.0] * 4


def test_no_penalty_without_a_weight_or_for_a_batch_of_one() -> None:
    assert repetition_penalties([make_task("a", ADD), make_task("b", ADD)], 0.0) == [0.0, 0.0]
    assert repetition_penalties([make_task("a", ADD)], 1.0) == [0.0]
    assert repetition_penalties([], 1.0) == []


def test_only_tasks_of_one_kind_are_one_question() -> None:
    batch = [make_task("a", ADD), make_task("b", ADD, kind="deduction")]
    assert repetition_penalties(batch, 1.0) == [0.0, 0.0]


def test_a_keyed_kinds_tasks_join_on_their_key_not_their_shared_reference() -> None:
    one_bug = make_task("f1", ADD, kind="bugfix", buggy_code=BUG)
    same_bug_renamed = make_task("f2", ADD_RENAMED, kind="bugfix", buggy_code="def plus(x, y):\n    return x - y\n")
    other_bug = make_task("f3", ADD, kind="bugfix", buggy_code="def add(a, b):\n    return a * b\n")
    assert repetition_penalties([one_bug, same_bug_renamed, other_bug], 1.0) == [0.5, 0.5, 0.0]


@st.composite
def _batches(draw: st.DrawFn) -> tuple[list[Any], int]:
    pool = [ADD, ADD_RENAMED, SQUARES, WORDS, SQUARES.replace("x * x", "x + x"), WORDS.replace("len", "str")]
    codes = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=10))
    kinds = draw(st.lists(st.sampled_from(["induction", "deduction"]), min_size=len(codes), max_size=len(codes)))
    tasks = [make_task(f"t{i}", c, kind=k) for i, (c, k) in enumerate(zip(codes, kinds, strict=True))]
    return tasks, draw(st.integers(0, 2**32))


@settings(max_examples=50, deadline=None)
@given(_batches())
def test_penalties_are_a_property_of_the_batch_not_of_its_order(batch: tuple[list[Any], int]) -> None:
    tasks, seed = batch
    penalties = dict(zip((t.task_id for t in tasks), repetition_penalties(tasks, 1.0), strict=True))
    shuffled = list(tasks)
    random.Random(seed).shuffle(shuffled)
    again = dict(zip((t.task_id for t in shuffled), repetition_penalties(shuffled, 1.0), strict=True))
    assert again == penalties

    # and as single linkage defines them: each task's cluster is everything reachable through alike pairs
    def alike(t: Any, u: Any) -> bool:
        return t.kind == u.kind and jaccard(task_shape(t), task_shape(u)) >= REPETITION_SIMILARITY

    for t in tasks:
        cluster, frontier = {t.task_id}, [t]
        while frontier:
            here = frontier.pop()
            for u in tasks:
                if u.task_id not in cluster and alike(here, u):
                    cluster.add(u.task_id)
                    frontier.append(u)
        assert penalties[t.task_id] == round((len(cluster) - 1) / (len(tasks) - 1), 6)


@pytest.mark.parametrize("weight", [0.25, 1.0, 2.0])
def test_the_penalty_scales_with_its_weight(weight: float) -> None:
    batch = [make_task("a", ADD), make_task("a2", ADD), make_task("b", SQUARES)]
    assert repetition_penalties(batch, weight) == [round(weight / 2, 6), round(weight / 2, 6), 0.0]
