"""The ``intervals`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _size
from ..steps import Step, _step
from ..variant import Variant, _code, _edit


def _intervals(rng: random.Random, scale: float, min_len: int) -> list[list[int]]:
    out = []
    for _ in range(_size(rng, 2, 12, scale)):
        start = rng.randint(0, 50)
        out.append([start, start + rng.randint(min_len, 10)])
    return out


_MERGE_INTERVALS = Variant(
    family="intervals",
    name="merge",
    topic="sorting by start",
    difficulty=0.42,
    entry_points=("merge_intervals", "merge_ranges", "union_intervals"),
    args=("intervals",),
    statements=(
        "Write `$sig` that merges overlapping intervals. `intervals` is a list of `[start, end]` pairs with "
        "`start <= end`, in any order; return the merged intervals sorted by start. $touch_note",
        "Implement `$sig`: combine every group of overlapping closed intervals in `intervals` into one interval "
        "spanning the group, and return the resulting disjoint intervals in increasing order as a list of "
        "`[start, end]` lists. $touch_note",
        "`$sig` takes unsorted `[start, end]` intervals and returns their union as a sorted list of "
        "non-overlapping intervals. $touch_note An empty input gives `[]`.",
    ),
    code=_code(
        """
        def $ep(intervals):
            merged = []
            for start, end in sorted(intervals):
                if merged and start $cmp merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
            return merged
        """
    ),
    params=(
        {
            "cmp": "<=",
            "cmp_bug": "<",
            "touch_note": "Intervals that merely touch, such as `[1, 3]` and `[3, 5]`, are merged too.",
        },
        {
            "cmp": "<",
            "cmp_bug": "<=",
            "touch_note": "Intervals that only touch at an endpoint, such as `[1, 3]` and `[3, 5]`, stay separate.",
            "_bump": 0.02,
        },
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 0),),
    edges=lambda p: [([],), ([[1, 3], [3, 5]],), ([[1, 10], [2, 3]],), ([[8, 9], [1, 2], [2, 4]],)],
    bugs={
        "off_by_one": _edit("start $cmp merged[-1][1]", "start $cmp_bug merged[-1][1]"),
        "edge_case": _edit("max(merged[-1][1], end)", "end"),
        "exception": _edit("if merged and start", "if start"),
    },
)

_COVERED = Variant(
    family="intervals",
    name="covered_length",
    topic="interval union",
    difficulty=0.36,
    entry_points=("covered_length", "total_coverage", "union_length"),
    args=("intervals",),
    statements=(
        "Write `$sig` that returns the total length covered by the union of the half-open intervals "
        "`[start, end)` in `intervals`. Overlapping parts are counted once; the intervals may come in any order.",
        "Implement `$sig`: several time ranges `[start, end)` (start < end) may overlap. Return how many time "
        "units are covered by at least one of them.",
        "`$sig` measures the union of the intervals in `intervals` (each `[start, end)` with `start < end`): "
        "the answer is the total length of the points covered by any interval. Return 0 for an empty list.",
    ),
    code=_code(
        """
        def $ep(intervals):
            total = 0
            current_start = current_end = None
            for start, end in sorted(intervals):
                if current_end is None or start > current_end:
                    if current_end is not None:
                        total += current_end - current_start
                    current_start, current_end = start, end
                else:
                    current_end = max(current_end, end)
            if current_end is not None:
                total += current_end - current_start
            return total
        """
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 1),),
    edges=lambda p: [([],), ([[1, 4], [2, 6]],), ([[0, 2], [2, 3]],), ([[5, 8], [1, 2]],)],
    bugs={
        "edge_case": _edit("    if current_end is not None:\n        total += current_end - current_start\n", ""),
        "off_by_one": _edit("current_end - current_start", "current_end - current_start + 1"),
        "exception": _edit("if current_end is None or start > current_end:", "if start > current_end:"),
    },
)

_ROOMS = Variant(
    family="intervals",
    name="meeting_rooms",
    topic="sweep line",
    difficulty=0.58,
    entry_points=("min_rooms", "rooms_needed", "max_overlap"),
    args=("meetings",),
    statements=(
        "Write `$sig` that returns the minimum number of rooms needed to hold all the meetings in `meetings`, "
        "where each meeting is `[start, end)` with `start < end`. A meeting that ends at time `t` frees its "
        "room for another that starts at `t`.",
        "Implement `$sig`: given half-open meeting intervals, compute the largest number of meetings that are "
        "running at the same moment, which is the number of rooms required. Back-to-back meetings "
        "(`[1, 3)` then `[3, 5)`) can share a room.",
        "`$sig` schedules meetings `[start, end)` into as few rooms as possible and returns that number "
        "(0 when there are no meetings); a room freed at time `t` can be reused by a meeting starting at `t`.",
    ),
    code=_code(
        """
        def $ep(meetings):
            events = []
            for start, end in meetings:
                events.append((start, 1))
                events.append((end, -1))
            events.sort(key=lambda e: (e[0], e[1]))
            rooms = best = 0
            for _, delta in events:
                rooms += delta
                best = max(best, rooms)
            return best
        """
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 1),),
    edges=lambda p: [([],), ([[1, 3], [3, 5]],), ([[0, 30], [5, 10], [15, 20]],), ([[1, 5], [2, 6], [3, 7]],)],
    bugs={"edge_case": _edit("key=lambda e: (e[0], e[1])", "key=lambda e: (e[0], -e[1])")},
)


VARIANTS: tuple[Variant, ...] = (
    _COVERED,
    _MERGE_INTERVALS,
    _ROOMS,
)
"""The intervals exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "sort_spans", "intervals", "sorting intervals", "spans", "spans", 0.05,
        "sort the intervals by start, and by end for equal starts", "$OUT = sorted($IN)", "sorted_spans",
        bugs={"logic": [("sorted($IN)", "sorted($IN, key=lambda s: s[1])")]},
    ),
    _step(
        "span_lengths", "intervals", "lengths", "spans", "ints", 0.04,
        "replace every interval `[start, end]` by its length, end - start",
        "$OUT = [end - start for start, end in $IN]", "lengths",
        bugs={
            "off_by_one": [("end - start for", "end - start + 1 for")],
        },
    ),
    _step(
        "long_spans", "intervals", "filtering", "spans", "spans", 0.05,
        "keep only the intervals whose length, end - start, is at least $k",
        "$OUT = [[start, end] for start, end in $IN if end - start >= $k]", "long_spans",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("if end - start >= $k", "if end - start > $k")]},
    ),
    _step(
        "merge_spans", "intervals", "merging", "spans", "spans", 0.3,
        "merge intervals that overlap or touch ([1, 3] and [3, 5] become [1, 5]), giving the result sorted by "
        "start",
        """
        merged = []
        for start, end in sorted($IN):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        $OUT = merged
        """,
        "merged",
        bugs={
            "edge_case": [("start <= merged[-1][1]", "start < merged[-1][1]")],
            "logic": [("merged[-1][1] = max(merged[-1][1], end)", "merged[-1][1] = end")],
        },
    ),
    _step(
        "covered_length", "intervals", "coverage", "spans", "int", 0.3,
        "take the total length covered by the intervals, counting overlaps once",
        """
        covered = 0
        reach = None
        for start, end in sorted($IN):
            if reach is None or start > reach:
                covered += end - start
                reach = end
            elif end > reach:
                covered += end - reach
                reach = end
        $OUT = covered
        """,
        "covered", bugs={"logic": [("        covered += end - reach\n", "        covered += end - start\n")]},
        order_free=True,
    ),
    _step(
        "max_overlap", "intervals", "sweep line", "spans", "int", 0.35,
        "take the largest number of intervals that share a common point (the intervals are closed, so [1, 3] "
        "and [3, 4] share 3)",
        """
        events = []
        for start, end in $IN:
            events.append((start, 0))
            events.append((end, 1))
        depth = deepest = 0
        for _, kind in sorted(events):
            depth += 1 if kind == 0 else -1
            deepest = max(deepest, depth)
        $OUT = deepest
        """,
        "max_overlap", bugs={"edge_case": [("events.append((end, 1))", "events.append((end, -1))")]}, order_free=True,
    ),
    _step(
        "runs_to_spans", "intervals", "ranges", "ints", "spans", 0.2,
        "turn the different numbers, in increasing order, into maximal runs of consecutive integers, each as "
        "`[first, last]`",
        """
        runs = []
        for x in sorted(set($IN)):
            if runs and x == runs[-1][1] + 1:
                runs[-1][1] = x
            else:
                runs.append([x, x])
        $OUT = runs
        """,
        "runs", bugs={"edge_case": [("for x in sorted(set($IN)):", "for x in sorted($IN):")]}, order_free=True,
    ),
)  # fmt: skip
"""The intervals building blocks of pipeline exercises."""
