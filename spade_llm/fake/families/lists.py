"""The ``lists`` family of the fake's task bank: its classic exercises and its
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

_SUM_MULTIPLES = Variant(
    family="lists",
    name="sum_multiples",
    topic="filtering",
    difficulty=0.08,
    entry_points=("sum_multiples", "sum_divisible", "total_of_multiples"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the sum of all elements of the integer list `nums` that are divisible by "
        "$k. Negative numbers count too; an empty list sums to 0.",
        "Implement `$sig`: add up every number in `nums` that is a multiple of $k (including negative "
        "multiples and zero) and return the total.",
        "Given a list of integers `nums`, `$sig` returns the total of those values that leave no remainder "
        "when divided by $k.",
    ),
    code=_code(
        """
        def $ep(nums):
            total = 0
            for x in nums:
                if x % $k == 0:
                    total += x
            return total
        """
    ),
    params=({"k": 2}, {"k": 3}, {"k": 4}, {"k": 5}, {"k": 7}),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 25, scale), -30, 60),),
    edges=lambda p: [([],), ([3 * p["k"], 1, -2 * p["k"], p["k"] + 1],), ([p["k"], p["k"], p["k"]],)],
    bugs={"edge_case": _edit("if x % $k == 0:", "if x % $k == 0 and x > 0:")},
)

_ROTATE = Variant(
    family="lists",
    name="rotate",
    topic="slicing",
    difficulty=0.2,
    entry_points=("rotate", "rotate_list", "shift_items"),
    args=("items", "k"),
    statements=(
        "Write `$sig` that returns a new list with the elements of `items` rotated $dir by `k` positions. "
        "`k` may be larger than the length of the list, and an empty list stays empty. Do not modify the input.",
        "Implement `$sig`: shift every element of `items` `k` places to the $dir, wrapping around the end, "
        "and return the result as a new list. Rotating by a multiple of the length gives the list back unchanged.",
        "Rotate a list: `$sig` moves each element `k` steps to the $dir (elements that fall off one end "
        "re-enter at the other) and returns the rotated list. `k` is a non-negative integer that can exceed "
        "`len(items)`.",
    ),
    code=_code(
        """
        def $ep(items, k):
            if not items:
                return []
            k %= len(items)
            return $ret
        """
    ),
    params=(
        {"dir": "right", "ret": "items[-k:] + items[:-k]", "ret_obo": "items[-k + 1:] + items[:-k + 1]"},
        {"dir": "left", "ret": "items[k:] + items[:k]", "ret_obo": "items[k + 1:] + items[:k + 1]"},
    ),
    make_input=lambda rng, p, scale: (
        (items := _ints(rng, _size(rng, 2, 20, scale), -9, 99)),
        rng.randint(1, 2 * len(items) + 3),
    ),
    edges=lambda p: [([], 3), ([1, 2, 3, 4, 5], 2), ([1, 2, 3, 4, 5], 7), (["a", "b", "c"], 0)],
    bugs={
        "exception": _edit("    if not items:\n        return []\n", ""),
        "edge_case": _edit("    k %= len(items)\n", ""),
        "off_by_one": _edit("$ret", "$ret_obo"),
    },
    generic=frozenset(),
)

_KTH_LARGEST = Variant(
    family="lists",
    name="kth_largest",
    topic="distinct values",
    difficulty=0.3,
    entry_points=("kth_largest_distinct", "nth_biggest", "runner_up"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the $kth largest distinct value in the list `nums`, or `None` when `nums` "
        "has fewer than $k distinct values. Repeated values count once.",
        "Implement `$sig`. Ignoring duplicates, find the $kth largest number in `nums` and return it; if "
        "there are not enough different numbers, return `None`.",
        "`$sig` looks at the distinct values of the integer list `nums` and returns the $kth biggest of them. "
        "Return `None` if that value does not exist (for example for an empty list).",
    ),
    code=_code(
        """
        def $ep(nums):
            distinct = sorted(set(nums), reverse=True)
            if len(distinct) < $k:
                return None
            return distinct[$idx]
        """
    ),
    params=({"k": 2, "kth": "second", "idx": 1}, {"k": 3, "kth": "third", "idx": 2, "_bump": 0.04}),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 25, scale), -20, 20 + round(30 * scale)),),
    edges=lambda p: [([],), ([7, 7, 7],), (list(range(4, 4 + 5 * p["k"], 5)),), ([9, 9, 4, 9, 1, 4, 12],)],
    bugs={
        "edge_case": _edit("sorted(set(nums), reverse=True)", "sorted(nums, reverse=True)"),
        "exception": _edit("    if len(distinct) < $k:\n        return None\n", ""),
        "off_by_one": _edit("if len(distinct) < $k:", "if len(distinct) <= $k:"),
    },
    generic=frozenset(),
)


def _window_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = _ints(rng, _size(rng, 2, 35, scale), -20, 30)
    return nums, rng.randint(1, len(nums) + (1 if rng.random() < 0.15 else 0))


_MAX_WINDOW = Variant(
    family="lists",
    name="max_window",
    topic="sliding window",
    difficulty=0.42,
    entry_points=("max_window_sum", "best_k_run", "max_consecutive_sum"),
    args=("nums", "k"),
    statements=(
        "Write `$sig` that returns the largest sum of `k` consecutive elements of `nums`. If `k` is not "
        "positive or `nums` has fewer than `k` elements, return `None`. The numbers may be negative.",
        "Implement `$sig`: slide a window of width `k` over the integer list `nums` and return the maximum "
        "window sum (`None` when no full window fits or `k <= 0`).",
        "Given integers `nums` and a window size `k`, `$sig` returns the best total of any `k` adjacent "
        "values. Return `None` when `k < 1` or `k > len(nums)`.",
    ),
    code=_code(
        """
        def $ep(nums, k):
            if k <= 0 or len(nums) < k:
                return None
            window = sum(nums[:k])
            best = window
            for i in range(k, len(nums)):
                window += nums[i] - nums[i - k]
                best = max(best, window)
            return best
        """
    ),
    make_input=_window_input,
    edges=lambda p: [([1, 2, 3, 10], 2), ([5, 1], 3), ([4, -1, 2], 0), ([-3, -1, -2], 1)],
    bugs={
        "off_by_one": _edit("range(k, len(nums))", "range(k, len(nums) - 1)"),
        "edge_case": _edit("    if k <= 0 or len(nums) < k:\n        return None\n", ""),
        "exception": _edit("window += nums[i] - nums[i - k]", "window += nums[i + 1] - nums[i + 1 - k]"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _SUM_MULTIPLES,
    _ROTATE,
    _KTH_LARGEST,
    _MAX_WINDOW,
)
"""The lists exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "keep_multiples", "lists", "filtering", "ints", "ints", 0.04,
        "keep only the numbers divisible by $k", "$OUT = [x for x in $IN if x % $k == 0]", "multiples",
        ({"k": 2}, {"k": 3}, {"k": 5}), {"edge_case": [("x % $k == 0", "x % $k == 0 and x != 0")]},
    ),
    _step(
        "keep_greater", "lists", "filtering", "ints", "ints", 0.04,
        "keep only the numbers greater than $k", "$OUT = [x for x in $IN if x > $k]", "large",
        ({"k": 0}, {"k": 5}, {"k": 10}), {"off_by_one": [("x > $k", "x >= $k")]},
    ),
    _step(
        "square_each", "lists", "mapping", "ints", "ints", 0.04,
        "replace every number by its square",
        """
        squares = []
        for x in $IN:
            squares.append(x * x)
        $OUT = squares
        """,
        "squares", bugs={"logic": [("x * x", "x * 2")]},
    ),
    _step(
        "affine", "lists", "mapping", "ints", "ints", 0.05,
        "multiply every number by $a and then $b_text", "$OUT = [x * $a $b_op for x in $IN]", "scaled",
        ({"a": 2, "b_text": "add 1", "b_op": "+ 1"}, {"a": 3, "b_text": "subtract 2", "b_op": "- 2"}),
        {"logic": [("x * $a $b_op", "(x $b_op) * $a")]},
    ),
    _step(
        "reverse", "lists", "slicing", "ints", "ints", 0.03, "reverse the order of the numbers",
        "$OUT = $IN[::-1]", "reversed", bugs={"off_by_one": [("$IN[::-1]", "$IN[:0:-1]")]}, reorders=True,
    ),
    _step(
        "every_other", "lists", "slicing", "ints", "ints", 0.04,
        "keep the numbers at the 1st, 3rd, 5th, ... positions", "$OUT = $IN[::2]", "alternate",
        bugs={"off_by_one": [("[::2]", "[1::2]")]},
    ),
    _step(
        "clamp", "lists", "mapping", "ints", "ints", 0.06,
        "clamp every number into the range $lo to $hi (smaller numbers become $lo, larger ones $hi)",
        "$OUT = [min(max(x, $lo), $hi) for x in $IN]", "clamped",
        ({"lo": 0, "hi": 9}, {"lo": -5, "hi": 5}), {"logic": [("min(max(x, $lo), $hi)", "max(min(x, $lo), $hi)")]},
    ),
    _step(
        "dedupe", "lists", "distinct values", "ints", "ints", 0.1,
        "remove repeated numbers, keeping only the first occurrence of each",
        """
        seen = set()
        unique = []
        for x in $IN:
            if x not in seen:
                seen.add(x)
                unique.append(x)
        $OUT = unique
        """,
        "unique", bugs={"logic": [("if x not in seen:", "if x not in unique[-1:]:")]},
    ),
    _step(
        "prefix_sums", "lists", "running totals", "ints", "ints", 0.1,
        "replace the list by its running totals (the i-th total is the sum of the first i numbers)",
        """
        running = 0
        totals = []
        for x in $IN:
            running += x
            totals.append(running)
        $OUT = totals
        """,
        "running_totals",
        bugs={
            "off_by_one": [
                (
                    "    running += x\n    totals.append(running)\n",
                    "    totals.append(running)\n    running += x\n",
                )
            ],
        },
    ),
    _step(
        "differences", "lists", "adjacent pairs", "ints", "ints", 0.1,
        "replace the list by the differences between neighbours (each number minus the one before it), which "
        "leaves one number fewer",
        "$OUT = [b - a for a, b in zip($IN, $IN[1:])]", "steps", bugs={"logic": [("b - a", "a - b")]},
    ),
    _step(
        "pair_sums", "lists", "adjacent pairs", "ints", "ints", 0.1,
        "add up the numbers in pairs (1st + 2nd, 3rd + 4th, ...), an unpaired last number staying as it is",
        "$OUT = [sum($IN[i:i + 2]) for i in range(0, len($IN), 2)]", "pair_sums",
        bugs={"off_by_one": [("range(0, len($IN), 2)", "range(0, len($IN) - 1, 2)")]},
    ),
    _step(
        "window_sums", "lists", "sliding window", "ints", "ints", 0.18,
        "replace the list by the sums of every $k consecutive numbers (a list shorter than $k gives no sums)",
        "$OUT = [sum($IN[i:i + $k]) for i in range(len($IN) - $k + 1)]", "window_sums",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("range(len($IN) - $k + 1)", "range(len($IN) - $k)")]},
    ),
    _step(
        "running_max", "lists", "running maximum", "ints", "ints", 0.12,
        "replace every number by the largest number up to and including it",
        """
        peaks = []
        for x in $IN:
            peaks.append(x if not peaks else max(peaks[-1], x))
        $OUT = peaks
        """,
        "peaks", bugs={"edge_case": [("x if not peaks else max(peaks[-1], x)", "max(peaks[-1] if peaks else 0, x)")]},
    ),
    _step(
        "rotate", "lists", "rotation", "ints", "ints", 0.12,
        "rotate the list $k places to the right (the last $k numbers move to the front, wrapping around "
        "as many times as needed for a short list)",
        """
        if $IN:
            shift = $k % len($IN)
            $OUT = $IN[len($IN) - shift:] + $IN[:len($IN) - shift]
        else:
            $OUT = []
        """,
        "rotated", ({"k": 2}, {"k": 3}), {"edge_case": [("shift = $k % len($IN)", "shift = min($k, len($IN))")]},
        reorders=True,
    ),
    _step(
        "total", "lists", "aggregation", "ints", "int", 0.03, "add the numbers up (no numbers give 0)",
        """
        total = 0
        for x in $IN:
            total += x
        $OUT = total
        """,
        "total", order_free=True,
    ),
    _step(
        "largest", "lists", "aggregation", "ints", "int", 0.05, "take the largest number (0 when there are none)",
        "$OUT = max($IN, default=0)", "largest", bugs={"edge_case": [("max($IN, default=0)", "max($IN + [0])")]},
        order_free=True,
    ),
    _step(
        "spread", "lists", "aggregation", "ints", "int", 0.06,
        "take the largest number minus the smallest one (0 when there are no numbers)",
        "$OUT = max($IN) - min($IN) if $IN else 0", "spread", bugs={"logic": [("- min($IN)", "- $IN[0]")]},
        order_free=True,
    ),
    _step(
        "count_distinct", "lists", "distinct values", "ints", "int", 0.04, "count how many different numbers there are",
        "$OUT = len(set($IN))", "distinct_count", bugs={"logic": [("len(set($IN))", "len($IN)")]}, order_free=True,
    ),
    # for harder chains
    _step(
        "equilibrium", "lists", "balance points", "ints", "int", 0.25,
        "take the first position (from 0) where the sum of the numbers before it equals the sum of the numbers "
        "after it, or -1 when there is none",
        """
        left, right = 0, sum($IN)
        pivot = -1
        for i, x in enumerate($IN):
            right -= x
            if left == right:
                pivot = i
                break
            left += x
        $OUT = pivot
        """,
        "balance_point", bugs={"edge_case": [("pivot = -1", "pivot = None")]},
    ),
    _step(
        "longest_run", "lists", "runs", "ints", "int", 0.15,
        "take the length of the longest run of equal neighbouring numbers (0 for no numbers)",
        """
        longest = current = 0
        for i, x in enumerate($IN):
            current = current + 1 if i and $IN[i - 1] == x else 1
            longest = max(longest, current)
        $OUT = longest
        """,
        "longest_run", bugs={"off_by_one": [("if i and $IN[i - 1] == x else 1", "if i and $IN[i - 1] == x else 0")]},
    ),
    _step(
        "pair_count", "lists", "pair counting", "ints", "int", 0.22,
        "count the pairs of positions i < j whose numbers add up to $k",
        """
        seen_values = {}
        pairs_found = 0
        for x in $IN:
            pairs_found += seen_values.get($k - x, 0)
            seen_values[x] = seen_values.get(x, 0) + 1
        $OUT = pairs_found
        """,
        "pair_count", ({"k": 10}, {"k": 0}),
        {
            "logic": [
                (
                    "    pairs_found += seen_values.get($k - x, 0)\n    seen_values[x] = seen_values.get(x, 0) + 1\n",
                    "    seen_values[x] = seen_values.get(x, 0) + 1\n    pairs_found += seen_values.get($k - x, 0)\n",
                )
            ],
        },
        order_free=True,
    ),
    _step(
        "evens_first", "lists", "partitioning", "ints", "ints", 0.08,
        "move the even numbers to the front, keeping the order among the even and among the odd numbers",
        "$OUT = [x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 != 0]", "evens_first",
        bugs={
            "logic": [
                (
                    "[x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 != 0]",
                    "[x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 == 1 and x > 0]",
                )
            ],
        },
        reorders=True,
    ),
    _step(
        "zigzag", "lists", "alternating runs", "ints", "int", 0.3,
        "take the length of the longest run of consecutive numbers whose neighbours always differ, with the "
        "differences alternating in sign (one number is a run of 1, no numbers give 0)",
        """
        best = cur = min(len($IN), 1)
        for i in range(1, len($IN)):
            diff = $IN[i] - $IN[i - 1]
            if diff == 0:
                cur = 1
            elif i >= 2 and ($IN[i - 1] - $IN[i - 2]) * diff < 0:
                cur += 1
            else:
                cur = 2
            best = max(best, cur)
        $OUT = best
        """,
        "zigzag_length", bugs={"edge_case": [("            cur = 1\n", "            cur = 2\n")]},
    ),
)  # fmt: skip
"""The lists building blocks of pipeline exercises."""
