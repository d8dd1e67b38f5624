"""The ``sorting_searching`` family of the fake's task bank (sorting and searching): its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _ints, _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit


def _search_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = sorted(rng.sample(range(-50, 60 + round(200 * scale)), _size(rng, 1, 45, scale)))
    target = rng.choice(nums) if rng.random() < 0.6 else rng.randint(-60, 70 + round(200 * scale))
    return nums, target


_BINARY_SEARCH = Variant(
    family="sorting_searching",
    name="binary_search",
    topic="binary search",
    difficulty=0.22,
    entry_points=("binary_search", "find_index", "search_sorted"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns the index of `target` in the sorted list `nums` (strictly increasing "
        "integers), or `$missing_words` if it is absent. Your solution should run in logarithmic time.",
        "Implement binary search: `$sig` looks for `target` in the ascending list `nums` of distinct integers "
        "and returns its position, or `$missing_words` when it does not occur.",
        "`$sig` should locate `target` in `nums`, which is sorted in increasing order without duplicates, by "
        "repeatedly halving the search range. Return the index, or `$missing_words` if `target` is not present.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            lo, hi = 0, len(nums) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if nums[mid] == target:
                    return mid
                if nums[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid - 1
            return $missing_r
        """
    ),
    params=({"missing": -1, "missing_words": "-1"}, {"missing": None, "missing_words": "None"}),
    make_input=_search_input,
    edges=lambda p: [([], 3), ([5], 5), ([1, 3], 3), ([1, 2, 3], 10), ([2, 4, 6, 8], 1)],
    bugs={
        "edge_case": _edit("    return $missing_r", "    return lo"),
        "infinite_loop": _edit("lo = mid + 1", "lo = mid"),
        "off_by_one": _edit("while lo <= hi:", "while lo < hi:"),
        "exception": _edit("lo, hi = 0, len(nums) - 1", "lo, hi = 0, len(nums)"),
    },
)


def _bisect_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = sorted(_ints(rng, _size(rng, 1, 45, scale), -20, 20 + round(60 * scale)))
    target = rng.choice(nums) if rng.random() < 0.6 else rng.randint(-25, 25 + round(60 * scale))
    return nums, target


_INSERTION_POINT = Variant(
    family="sorting_searching",
    name="insertion_point",
    topic="lower bound",
    difficulty=0.34,
    entry_points=("insertion_index", "lower_bound", "bisect_position"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns the index at which `target` should be inserted into the sorted list `nums` "
        "to keep it sorted. If `target` is already present (possibly several times), return the index of its "
        "leftmost occurrence.",
        "Implement `$sig` to behave like `bisect.bisect_left`: return the number of elements of the "
        "non-decreasing list `nums` that are strictly smaller than `target`, found in O(log n) time.",
        "`$sig` finds the leftmost position where `target` could be placed in the ascending list `nums` "
        "(duplicates allowed) without breaking the order.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            lo, hi = 0, len(nums)
            while lo < hi:
                mid = (lo + hi) // 2
                if nums[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        """
    ),
    make_input=_bisect_input,
    edges=lambda p: [([], 4), ([1, 2, 2, 2, 3], 2), ([1, 3], 3), ([1, 2, 3], 10), ([5, 6], 0)],
    bugs={
        "edge_case": _edit("if nums[mid] < target:", "if nums[mid] <= target:"),
        "off_by_one": _edit("lo, hi = 0, len(nums)\n", "lo, hi = 0, len(nums) - 1\n"),
        "infinite_loop": _edit("lo = mid + 1", "lo = mid"),
        "exception": _edit("lo, hi = 0, len(nums)\n", "lo, hi = 0, len(nums) + 1\n"),
    },
)


def _two_sum_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = _ints(rng, _size(rng, 2, 35, scale), -20, 40)
    target = sum(rng.sample(nums, 2)) if rng.random() < 0.7 else rng.randint(-40, 80)
    return nums, target


_TWO_SUM = Variant(
    family="sorting_searching",
    name="two_sum",
    topic="hash lookups",
    difficulty=0.36,
    entry_points=("two_sum", "pair_with_sum", "find_pair"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns `[i, j]` with `i < j` and `nums[i] + nums[j] == target`, or `None` if no "
        "such pair exists. When several pairs work, choose the one with the smallest `j`, and for that `j` the "
        "smallest `i`.",
        "Implement `$sig`: find two different positions in `nums` whose values add up to `target` and return "
        "them as a list `[i, j]` (i < j). Prefer the pair that is completed earliest (smallest `j`), then the "
        "smallest `i`. Return `None` when there is none.",
        "`$sig` scans `nums` once and reports the first pair of indices `[i, j]`, `i < j`, whose elements sum "
        "to `target`, where first means smallest `j`, ties broken by smallest `i`. If no pair exists return "
        "`None`.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            seen = {}
            for j, x in enumerate(nums):
                if target - x in seen:
                    return [seen[target - x], j]
                if x not in seen:
                    seen[x] = j
            return None
        """
    ),
    make_input=_two_sum_input,
    edges=lambda p: [([2, 7, 11, 15], 9), ([3, 4], 6), ([2, 2, 5], 7), ([], 1), ([1, 5, 5, 1], 10)],
    bugs={
        "edge_case": _edit("        if x not in seen:\n            seen[x] = j\n", "        seen[x] = j\n"),
        "off_by_one": _edit(
            "        if target - x in seen:\n            return [seen[target - x], j]\n"
            "        if x not in seen:\n            seen[x] = j\n",
            "        if x not in seen:\n            seen[x] = j\n"
            "        if target - x in seen:\n            return [seen[target - x], j]\n",
        ),
    },
)

_INVERSIONS = Variant(
    family="sorting_searching",
    name="inversions",
    topic="merge sort",
    difficulty=0.6,
    entry_points=("count_inversions", "inversion_count", "disorder_pairs"),
    args=("nums",),
    statements=(
        "Write `$sig` that counts the pairs of positions `i < j` in `nums` with $rel. The list can hold a few "
        "thousand numbers, so an O(n log n) method such as a modified merge sort is expected.",
        "Implement `$sig`: return the number of index pairs `(i, j)` where `i < j` and $rel. Aim for better "
        "than quadratic time.",
        "`$sig` should return how many pairs `i < j` of the list `nums` satisfy $rel (0 for an empty or "
        "one-element list).",
    ),
    code=_code(
        """
        def $ep(nums):
            def sort_count(items):
                if len(items) <= 1:
                    return items, 0
                mid = len(items) // 2
                left, a = sort_count(items[:mid])
                right, b = sort_count(items[mid:])
                merged = []
                count = a + b
                i = j = 0
                while i < len(left) and j < len(right):
                    if left[i] $cmp right[j]:
                        merged.append(left[i])
                        i += 1
                    else:
                        merged.append(right[j])
                        j += 1
                        count += len(left) - i
                merged.extend(left[i:])
                merged.extend(right[j:])
                return merged, count

            return sort_count(list(nums))[1]
        """
    ),
    params=(
        {"cmp": "<=", "cmp_bug": "<", "rel": "`nums[i] > nums[j]`"},
        {"cmp": "<", "cmp_bug": "<=", "rel": "`nums[i] >= nums[j]`", "_bump": 0.03},
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 2, 500, scale), 0, 10 + round(100 * scale)),),
    edges=lambda p: [([],), ([2, 2, 1],), ([3, 1, 2],), ([1, 2, 3, 4],), ([5, 4, 3, 2, 1],)],
    bugs={
        "edge_case": _edit("left[i] $cmp right[j]", "left[i] $cmp_bug right[j]"),
        "off_by_one": _edit("count += len(left) - i", "count += len(left) - i - 1"),
        "exception": _edit("        if len(items) <= 1:", "        if len(items) == 1:"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _BINARY_SEARCH,
    _INSERTION_POINT,
    _TWO_SUM,
    _INVERSIONS,
)
"""The sorting and searching exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "sort_asc", "sorting_searching", "sorting", "ints", "ints", 0.03, "sort the numbers in increasing order",
        "$OUT = sorted($IN)", "sorted", bugs={"logic": [("sorted($IN)", "sorted($IN, key=abs)")]}, reorders=True,
    ),
    _step(
        "sort_desc", "sorting_searching", "sorting", "ints", "ints", 0.03, "sort the numbers in decreasing order",
        "$OUT = sorted($IN, reverse=True)", "descending",
        bugs={
            "logic": [("sorted($IN, reverse=True)", "sorted($IN)")],
        },
        reorders=True,
    ),
    _step(
        "sort_by_abs", "sorting_searching", "custom sort keys", "ints", "ints", 0.08,
        "sort the numbers by absolute value, a negative number before the positive one of the same size",
        "$OUT = sorted($IN, key=lambda x: (abs(x), x))", "by_size",
        bugs={"edge_case": [("key=lambda x: (abs(x), x)", "key=abs")]}, reorders=True,
    ),
    _step(
        "sort_words", "sorting_searching", "custom sort keys", "words", "words", 0.08,
        "sort the words by length, shortest first, keeping the original order of words of equal length",
        "$OUT = sorted($IN, key=len)", "by_length", bugs={"logic": [("sorted($IN, key=len)", "sorted($IN)")]},
    ),
    _step(
        "top_k", "sorting_searching", "selection", "ints", "ints", 0.05,
        "keep the $k largest numbers, largest first (all of them when there are fewer)",
        "$OUT = sorted($IN, reverse=True)[:$k]", "top", ({"k": 3}, {"k": 4}),
        {"logic": [("sorted($IN, reverse=True)[:$k]", "sorted($IN)[-$k:]")]},
    ),
    _step(
        "count_below", "sorting_searching", "binary search", "ints", "int", 0.15,
        "count how many numbers are smaller than $k (binary search in the sorted numbers is one way)",
        """
        ordered = sorted($IN)
        lo, hi = 0, len(ordered)
        while lo < hi:
            mid = (lo + hi) // 2
            if ordered[mid] < $k:
                lo = mid + 1
            else:
                hi = mid
        $OUT = lo
        """,
        "count_below", ({"k": 0}, {"k": 10}), {"off_by_one": [("if ordered[mid] < $k:", "if ordered[mid] <= $k:")]},
        order_free=True,
    ),
    _step(
        "lower_median", "sorting_searching", "order statistics", "ints", "int", 0.1,
        "take the lower median: the middle number once sorted, the smaller middle one for an even count (0 when "
        "there are no numbers)",
        "$OUT = sorted($IN)[(len($IN) - 1) // 2] if $IN else 0", "median",
        bugs={"off_by_one": [("[(len($IN) - 1) // 2]", "[len($IN) // 2]")]}, order_free=True,
    ),
    _step(
        "inversions", "sorting_searching", "inversions", "ints", "int", 0.22,
        "count the pairs of positions i < j where the number at i is larger than the number at j",
        """
        inverted = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                if $IN[i] > $IN[j]:
                    inverted += 1
        $OUT = inverted
        """,
        "inversions",
        bugs={
            "edge_case": [("if $IN[i] > $IN[j]:", "if $IN[i] >= $IN[j]:")],
            "off_by_one": [("range(i + 1, len($IN))", "range(i + 2, len($IN))")],
        },
    ),
    # for harder chains
    _step(
        "min_gap", "sorting_searching", "closest pairs", "ints", "int", 0.15,
        "take the smallest difference between two numbers at different positions (-1 when there are fewer than "
        "two numbers)",
        """
        ordered = sorted($IN)
        gaps = [b - a for a, b in zip(ordered, ordered[1:])]
        $OUT = min(gaps) if gaps else -1
        """,
        "min_gap", bugs={"logic": [("ordered = sorted($IN)", "ordered = $IN")]}, order_free=True,
    ),
    _step(
        "h_index", "sorting_searching", "order statistics", "ints", "int", 0.2,
        "take the largest h such that at least h of the numbers are h or more",
        """
        ranked = sorted($IN, reverse=True)
        h = 0
        while h < len(ranked) and ranked[h] >= h + 1:
            h += 1
        $OUT = h
        """,
        "h_index", bugs={"off_by_one": [("ranked[h] >= h + 1", "ranked[h] >= h")]}, order_free=True,
    ),
    _step(
        "sort_by_frequency", "sorting_searching", "custom sort keys", "ints", "ints", 0.25,
        "sort the numbers by how often they occur, most frequent first, equally frequent ones in increasing order",
        """
        freq = {}
        for x in $IN:
            freq[x] = freq.get(x, 0) + 1
        $OUT = sorted($IN, key=lambda x: (-freq[x], x))
        """,
        "by_frequency", bugs={"logic": [("key=lambda x: (-freq[x], x)", "key=lambda x: -freq[x]")]}, reorders=True,
    ),
    _step(
        "ranks", "sorting_searching", "ranking", "ints", "ints", 0.2,
        "replace every number by its rank among the different numbers (the smallest has rank 1, equal numbers "
        "share a rank)",
        """
        rank_of = {x: i + 1 for i, x in enumerate(sorted(set($IN)))}
        $OUT = [rank_of[x] for x in $IN]
        """,
        "ranks", bugs={"logic": [("enumerate(sorted(set($IN)))", "enumerate(sorted($IN))")]},
    ),
    _step(
        "longest_consecutive", "sorting_searching", "consecutive runs", "ints", "int", 0.3,
        "take the length of the longest run of consecutive integers that can be formed from the numbers, in any "
        "order and ignoring repeats (0 for no numbers)",
        """
        present = set($IN)
        longest_streak = 0
        for x in present:
            if x - 1 not in present:
                length = 1
                while x + length in present:
                    length += 1
                longest_streak = max(longest_streak, length)
        $OUT = longest_streak
        """,
        "longest_streak", bugs={"logic": [("if x - 1 not in present:", "if x + 1 not in present:")]}, order_free=True,
    ),
)  # fmt: skip
"""The sorting and searching building blocks of pipeline exercises."""
