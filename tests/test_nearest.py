"""The nearest task by code shape: exact inside the window, a verified LSH past it that misses no duplicate."""

from __future__ import annotations

import random

import pytest
from builders import make_task
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm import nearest
from spade_llm.dedup import Deduper, sealed_entry, shape
from spade_llm.evaluator import task_fingerprint
from spade_llm.nearest import MISS_AT_THRESHOLD, NUM_PERM, BandTable, ShapeIndex, jaccard, lsh_bands

KINDS = ("induction", "deduction")


def _full_scan(
    entries: list[tuple[str, frozenset[int]]], query: frozenset[int], kind: str | None, before: int
) -> tuple[float, int] | None:
    """What the gate computed before the index: every earlier entry compared, ties to the latest."""
    scored = [(jaccard(query, s), i) for i, (k, s) in enumerate(entries[:before]) if kind is None or k == kind]
    return max(scored) if scored else None


@st.composite
def _shape_streams(draw: st.DrawFn) -> list[tuple[str, frozenset[int]]]:
    """Shapes as a run makes them: some new, many near copies of an earlier one (a few shingles swapped)."""
    seed = draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    stream: list[tuple[str, frozenset[int]]] = []
    for _ in range(draw(st.integers(1, 40))):
        if stream and rng.random() < 0.6:
            base = sorted(rng.choice(stream)[1])
            for _ in range(rng.randint(0, 3)):
                base[rng.randrange(len(base))] = rng.getrandbits(64)
            new = frozenset(base)
        else:
            new = frozenset(rng.getrandbits(64) for _ in range(rng.randint(5, 60)))
        stream.append((rng.choice(KINDS), new))
    return stream


@settings(max_examples=60, deadline=None)
@given(_shape_streams(), st.sampled_from([None, *KINDS]))
def test_within_its_window_the_index_answers_as_a_full_scan(
    stream: list[tuple[str, frozenset[int]]], kind: str | None
) -> None:
    index = ShapeIndex(0.9, window=len(stream))
    for i, (k, s) in enumerate(stream):
        near = index.nearest(s, kind=kind)
        expected = _full_scan(stream, s, kind, i)
        if expected is None:
            assert near is None
        else:
            assert near is not None and (near.similarity, near.key) == (expected[0], f"t{expected[1]}")
        index.add(f"t{i}", k, s)
    for i, (_, s) in enumerate(stream):  # novelty's question: the nearest among the entries before one
        near = index.nearest(index.shape(i), before=i)
        expected = _full_scan(stream, s, None, i)
        assert (near.similarity if near else None) == (expected[0] if expected else None)


@settings(max_examples=60, deadline=None)
@given(_shape_streams(), st.integers(1, 4), st.sampled_from([0.5, 0.8, 0.9]))
def test_past_its_window_no_duplicate_is_missed_and_every_similarity_is_exact(
    stream: list[tuple[str, frozenset[int]]], window: int, threshold: float
) -> None:
    index = ShapeIndex(threshold, window=window)
    for i, (k, s) in enumerate(stream):
        near = index.nearest(s, kind=k)
        expected = _full_scan(stream, s, k, i)
        if near is not None:  # whatever it reports is true of the entry it names
            found = int(near.key[1:])
            assert stream[found][0] == k and near.similarity == jaccard(s, stream[found][1])
            assert expected is not None and near.similarity <= expected[0]
        if expected is not None and expected[0] >= threshold:  # a duplicate is found, as similar as the scan's
            assert near is not None and near.similarity == expected[0]
            gate = index.nearest(s, kind=k, at_least=threshold)  # the gate's question skips what cannot match
            assert gate is not None and (gate.similarity, gate.key) == (expected[0], f"t{expected[1]}")
        index.add(f"t{i}", k, s)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0])
def test_the_bands_miss_an_entry_at_the_threshold_with_at_most_the_stated_chance(threshold: float) -> None:
    bands, rows = lsh_bands(threshold)
    assert bands * rows <= NUM_PERM
    assert (1 - threshold**rows) ** bands <= MISS_AT_THRESHOLD
    # one row more per band would miss more often: the rows are as many as the bound allows
    more = rows + 1
    assert more > NUM_PERM or (1 - threshold**more) ** (NUM_PERM // more) > MISS_AT_THRESHOLD


def _variants(count: int, seed: int) -> list[str]:
    """Reference programs of a few shapes, many of them near copies of each other (a run's collapse)."""
    rng = random.Random(seed)
    statements = [
        "    total = total + {v}\n",
        "    if {v} > total:\n        total = {v}\n",
        "    for i in range({v}):\n        total += i\n",
        "    while total > {v}:\n        total -= 1\n",
        "    total = max(total, {v})\n",
        "    xs.append(total)\n",
        "    total = total * 2 if total % 2 else total // 2\n",
    ]
    codes = []
    for _ in range(count):
        body = "".join(rng.choice(statements).format(v=rng.choice("abn")) for _ in range(rng.randint(2, 6)))
        codes.append(f"def f(a, b, n):\n    total = 0\n    xs = []\n{body}    return total\n")
    return codes


def test_a_deduper_past_its_window_rejects_what_one_that_sees_everything_rejects() -> None:
    """Real references through the whole gate: a window of 3 and LSH past it takes the decisions of a full
    scan, and its novelty never reads lower than the full scan's."""
    exact, indexed = Deduper(0.9, window=10_000), Deduper(0.9, window=3)
    tasks = [make_task(f"t{i}", code, entry_point="f") for i, code in enumerate(_variants(150, 4))]
    decisions = []
    for task in tasks:
        fp = shape(task_fingerprint(task.reference_code))
        verdict = exact.duplicate(task.kind, fp, None)
        assert indexed.duplicate(task.kind, fp, None) == verdict
        decisions.append(verdict)
        if verdict is None:
            exact.accept(task, fp, task.kind, None)
            indexed.accept(task, fp, task.kind, None)
    accepted = [t.task_id for t, d in zip(tasks, decisions, strict=True) if d is None]
    assert 10 < len(accepted) < 140  # both outcomes were exercised
    for task_id in accepted:
        full, near = exact.nearest_similarity(task_id), indexed.nearest_similarity(task_id)
        assert full is not None and near is not None and near <= full


def test_a_held_out_task_gates_its_copies_but_does_not_count_against_novelty() -> None:
    held = make_task("held", _variants(1, 0)[0], entry_point="f")
    gate = Deduper(0.9)
    gate.accept_sealed(sealed_entry(held))
    fp = shape(task_fingerprint(held.reference_code))
    assert gate.duplicate(held.kind, fp, None) == "100% similar to a held-out task"
    copy = held.model_copy(update={"task_id": "copy"})
    gate.accept(copy, fp, copy.kind, None)  # the loop never accepts it; novelty still must not see the sealed one
    assert gate.nearest_similarity("copy") == 0.0
    assert gate.nearest_similarity("never-accepted") is None
    with pytest.raises(ValueError, match="hex"):
        gate.accept_sealed({**sealed_entry(held), "shingles": ["not hex"]})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1) | st.sampled_from([0, 7, 2**64 - 1]), min_size=1, max_size=4),
                max_size=60), st.integers(1, 9))  # fmt: skip
def test_the_band_table_finds_every_entry_sharing_a_key_before_and_after_its_merges(
    entries: list[list[int]], tail: int
) -> None:
    """Keys sorted into arrays (merged every ``tail`` keys) or still waiting: a query finds exactly the
    entries a plain dict of every key would."""
    table, plain = BandTable(), dict[int, set[int]]()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nearest, "TAIL", tail)
        for entry, keys in enumerate(entries):
            table.add(keys, entry)
            for key in keys:
                plain.setdefault(key, set()).add(entry)
            asked = [*keys, 1, 2**63]
            assert table.query(asked) == set().union(*(plain.get(k, set()) for k in asked))
