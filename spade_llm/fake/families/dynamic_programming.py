"""The ``dynamic_programming`` family of the fake's task bank (dynamic programming): its classic exercises and its
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

_CLIMB_STAIRS = Variant(
    family="dynamic_programming",
    name="climb_stairs",
    topic="counting paths",
    difficulty=0.3,
    entry_points=("count_ways", "climb_stairs", "stair_paths"),
    args=("n",),
    statements=(
        "You are climbing a staircase with `n` steps and each move climbs $steps_words. Write `$sig` that "
        "returns the number of distinct sequences of moves that reach exactly the top. There is one way to "
        "climb zero steps (do nothing).",
        "Implement `$sig`: count the ways to reach step `n` from the ground if every move advances "
        "$steps_words. Different orders of the same moves count as different ways. For `n = 0` return 1.",
        "`$sig` returns how many different ways there are to climb `n` stairs when a single stride covers "
        "$steps_words. Overshooting the top is not allowed.",
    ),
    code=_code(
        """
        def $ep(n):
            ways = [0] * (n + 1)
            ways[0] = 1
            for i in range(1, n + 1):
                for step in $steps_r:
                    if step <= i:
                        ways[i] += ways[i - step]
            return ways[n]
        """
    ),
    params=(
        {"steps": (1, 2), "steps_words": "1 or 2 steps"},
        {"steps": (1, 2, 3), "steps_words": "1, 2 or 3 steps", "_bump": 0.03},
        {"steps": (1, 3), "steps_words": "1 or 3 steps", "_bump": 0.02},
        {"steps": (2, 3), "steps_words": "2 or 3 steps", "_bump": 0.05},
    ),
    make_input=lambda rng, p, scale: (_size(rng, 2, 40, scale),),
    edges=lambda p: [(0,), (1,), (5,), (10,)],
    bugs={
        "exception": _edit("[0] * (n + 1)", "[0] * n"),
        "edge_case": _edit("if step <= i:", "if step < i:"),
    },
)


def _coins_input(rng: random.Random, p: Params, scale: float) -> Args:
    coins = sorted(rng.sample(range(1, 13 + round(20 * scale)), _size(rng, 2, 4, scale)))
    return coins, rng.randint(0, 20 + round(80 * scale))


_MIN_COINS = Variant(
    family="dynamic_programming",
    name="min_coins",
    topic="change making",
    difficulty=0.5,
    entry_points=("min_coins", "fewest_coins", "coin_change"),
    args=("coins", "amount"),
    statements=(
        "Write `$sig` that returns the minimum number of coins needed to make exactly `amount` using the "
        "denominations in `coins` (each available in unlimited supply). If the amount cannot be formed, "
        "return `$missing_words`. Making 0 needs 0 coins.",
        "Implement `$sig`: given coin values `coins` and a target `amount`, find the fewest coins that add "
        "up to `amount`, or return `$missing_words` when no combination works. Taking the largest coin "
        "first is not always optimal.",
        "`$sig` solves the change-making problem: the smallest count of coins from `coins` (any number of "
        "each) summing to `amount`; `$missing_words` if that is impossible.",
    ),
    code=_code(
        """
        def $ep(coins, amount):
            best = [0] + [None] * amount
            for total in range(1, amount + 1):
                for coin in coins:
                    if coin <= total and best[total - coin] is not None:
                        candidate = best[total - coin] + 1
                        if best[total] is None or candidate < best[total]:
                            best[total] = candidate
            return $missing_r if best[amount] is None else best[amount]
        """
    ),
    params=({"missing": -1, "missing_words": "-1"}, {"missing": None, "missing_words": "None"}),
    make_input=_coins_input,
    edges=lambda p: [([1, 3, 4], 6), ([2], 3), ([5, 10], 0), ([7, 3], 20)],
    bugs={
        "edge_case": _edit(
            "    best = [0] + [None] * amount\n"
            "    for total in range(1, amount + 1):\n"
            "        for coin in coins:\n"
            "            if coin <= total and best[total - coin] is not None:\n"
            "                candidate = best[total - coin] + 1\n"
            "                if best[total] is None or candidate < best[total]:\n"
            "                    best[total] = candidate\n"
            "    return $missing_r if best[amount] is None else best[amount]\n",
            "    count = 0\n"
            "    for coin in sorted(coins, reverse=True):\n"
            "        count += amount // coin\n"
            "        amount %= coin\n"
            "    return count if amount == 0 else $missing_r\n",
        ),
        "exception": _edit("if coin <= total and best[total - coin] is not None:", "if coin <= total:"),
    },
)


def _letters(rng: random.Random, alphabet: str, lo: int, hi: int, scale: float) -> str:
    return "".join(rng.choice(alphabet) for _ in range(_size(rng, lo, hi, scale)))


_LCS = Variant(
    family="dynamic_programming",
    name="lcs",
    topic="longest common subsequence",
    difficulty=0.6,
    entry_points=("lcs_length", "longest_common_subsequence", "common_subsequence_len"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the length of the longest common subsequence of the strings `a` and `b`. "
        "A subsequence keeps the order of characters but need not be contiguous.",
        "Implement `$sig`: find how long the longest sequence of characters is that appears, in order (not "
        "necessarily adjacent), in both `a` and `b`.",
        "`$sig` computes the LCS length of two strings; for example the longest common subsequence of "
        "`'ABCBDAB'` and `'BDCABA'` has length 4. Either string may be empty.",
    ),
    code=_code(
        """
        def $ep(a, b):
            rows, cols = len(a), len(b)
            table = [[0] * (cols + 1) for _ in range(rows + 1)]
            for i in range(1, rows + 1):
                for j in range(1, cols + 1):
                    if a[i - 1] == b[j - 1]:
                        table[i][j] = table[i - 1][j - 1] + 1
                    else:
                        table[i][j] = max(table[i - 1][j], table[i][j - 1])
            return table[rows][cols]
        """
    ),
    make_input=lambda rng, p, scale: (_letters(rng, "ACGT", 0, 25, scale), _letters(rng, "ACGT", 1, 25, scale)),
    edges=lambda p: [("", "abc"), ("abcde", "ace"), ("xyz", "xyzw"), ("AGGTAB", "GXTXAYB")],
    bugs={
        "edge_case": _edit("max(table[i - 1][j], table[i][j - 1])", "table[i - 1][j]"),
        "exception": _edit("[[0] * (cols + 1) for _ in range(rows + 1)]", "[[0] * cols for _ in range(rows + 1)]"),
    },
)

_HOUSE_ROBBER = Variant(
    family="dynamic_programming",
    name="non_adjacent_sum",
    topic="take or skip",
    difficulty=0.45,
    entry_points=("max_non_adjacent_sum", "rob_houses", "best_loot"),
    args=("values",),
    statements=(
        "A row of houses holds the amounts of money in `values` (non-negative integers). Write `$sig` that "
        "returns the largest total you can collect without ever taking from two adjacent houses.",
        "Implement `$sig`: choose a subset of positions of `values` with no two consecutive positions and "
        "return the maximum possible sum of the chosen values (0 for an empty list).",
        "`$sig` returns the maximum sum of non-adjacent elements of `values`. All values are non-negative; "
        "choosing nothing gives 0.",
    ),
    code=_code(
        """
        def $ep(values):
            take, skip = 0, 0
            for v in values:
                take, skip = skip + v, max(take, skip)
            return max(take, skip)
        """
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 35, scale), 0, 20 + round(80 * scale)),),
    edges=lambda p: [([],), ([5, 1, 1, 5],), ([2, 1, 1, 2],), ([7],)],
    bugs={"edge_case": _edit("take, skip = skip + v, max(take, skip)", "take, skip = skip + v, take")},
)

_EDIT_DISTANCE = Variant(
    family="dynamic_programming",
    name="edit_distance",
    topic="string alignment",
    difficulty=0.72,
    entry_points=("edit_distance", "levenshtein", "min_edits"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the edit distance between strings `a` and `b`: the minimum total cost of "
        "insertions, deletions and replacements of single characters that turn `a` into `b`. $cost_note",
        "Implement `$sig`. You may insert a character, delete a character or replace one character by "
        "another. $cost_note Return the cheapest total cost of transforming `a` into `b`.",
        "`$sig` computes a Levenshtein-style distance between `a` and `b`. $cost_note Either string may be empty.",
    ),
    code=_code(
        """
        def $ep(a, b):
            previous = list(range(len(b) + 1))
            for i in range(1, len(a) + 1):
                current = [i] + [0] * len(b)
                for j in range(1, len(b) + 1):
                    if a[i - 1] == b[j - 1]:
                        current[j] = previous[j - 1]
                    else:
                        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + $sub)
                previous = current
            return previous[len(b)]
        """
    ),
    params=(
        {"sub": 1, "cost_note": "Each of the three operations costs 1."},
        {"sub": 2, "cost_note": "Insertions and deletions cost 1, but a replacement costs 2.", "_bump": 0.06},
    ),
    make_input=lambda rng, p, scale: (
        _letters(rng, "abcdeh", 0, 18, scale),
        _letters(rng, "abcdeh", 1, 18, scale),
    ),
    edges=lambda p: [("", "abc"), ("kitten", "sitting"), ("abc", "abc"), ("flaw", "lawn"), ("abc", "")],
    bugs={
        "edge_case": _edit("previous = list(range(len(b) + 1))", "previous = [0] * (len(b) + 1)"),
        "exception": _edit("current = [i] + [0] * len(b)", "current = [i] + [0] * (len(b) - 1)"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _CLIMB_STAIRS,
    _HOUSE_ROBBER,
    _MIN_COINS,
    _LCS,
    _EDIT_DISTANCE,
)
"""The dynamic programming exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "max_subarray", "dynamic_programming", "maximum subarray", "ints", "int", 0.22,
        "take the largest sum of a non-empty run of consecutive numbers (0 when there are no numbers)",
        """
        best = $IN[0] if $IN else 0
        current = 0
        for x in $IN:
            current = max(x, current + x)
            best = max(best, current)
        $OUT = best
        """,
        "best_run", bugs={"edge_case": [("best = $IN[0] if $IN else 0", "best = 0")]},
    ),
    _step(
        "lis", "dynamic_programming", "increasing subsequences", "ints", "int", 0.35,
        "take the length of the longest strictly increasing subsequence (its numbers need not be adjacent)",
        """
        ending = []
        for i, x in enumerate($IN):
            ending.append(1 + max((ending[j] for j in range(i) if $IN[j] < x), default=0))
        $OUT = max(ending, default=0)
        """,
        "longest_increasing", bugs={"edge_case": [("if $IN[j] < x", "if $IN[j] <= x")]},
    ),
    _step(
        "no_adjacent", "dynamic_programming", "non-adjacent sums", "ints", "int", 0.28,
        "take the largest sum of numbers no two of which are neighbours in the list (taking none gives 0)",
        """
        take, skip = 0, 0
        for x in $IN:
            take, skip = skip + x, max(take, skip)
        $OUT = max(take, skip)
        """,
        "best_non_adjacent",
        bugs={
            "logic": [("take, skip = skip + x, max(take, skip)", "take, skip = take + x, max(take, skip)")],
        },
    ),
    _step(
        "coin_ways", "dynamic_programming", "counting combinations", "ints", "int", 0.35,
        "count the ways to make $k as a sum of the different positive numbers of the list, each usable any number "
        "of times and the order not mattering (1 way for an empty sum)",
        """
        ways = [1] + [0] * $k
        for coin in sorted(set(x for x in $IN if x > 0)):
            for total in range(coin, $k + 1):
                ways[total] += ways[total - coin]
        $OUT = ways[$k]
        """,
        "coin_ways", ({"k": 10}, {"k": 15}),
        {
            "logic": [("sorted(set(x for x in $IN if x > 0))", "[x for x in $IN if x > 0]")],
            "off_by_one": [("range(coin, $k + 1)", "range(coin, $k)")],
        },
        order_free=True,
    ),
    _step(
        "stairs", "dynamic_programming", "counting paths", "int", "int", 0.18,
        "count the ways to climb that many stairs taking 1, 2 or 3 stairs at a time, modulo 1000007 (1 way for "
        "0 stairs, none for a negative number)",
        """
        if $IN < 0:
            $OUT = 0
        else:
            a, b, c = 1, 0, 0
            for _ in range($IN):
                a, b, c = (a + b + c) % 1000007, a, b
            $OUT = a
        """,
        "stair_ways", bugs={"off_by_one": [("for _ in range($IN):", "for _ in range($IN - 1):")]}, first_only=True,
    ),
    _step(
        "grid_path", "dynamic_programming", "grid paths", "grid", "int", 0.3,
        "take the largest sum along a path from the top-left to the bottom-right entry that only moves right "
        "or down (0 for a grid without rows)",
        """
        best = []
        for r, row in enumerate($IN):
            best.append([])
            for c, x in enumerate(row):
                before = [v for v in (best[r - 1][c] if r else None, best[r][c - 1] if c else None) if v is not None]
                best[r].append(x + max(before, default=0))
        $OUT = best[-1][-1] if best else 0
        """,
        "best_path", bugs={"edge_case": [("x + max(before, default=0)", "x + max(before + [0])")]},
    ),
    # for harder chains
    _step(
        "best_prefix", "dynamic_programming", "prefix sums", "ints", "int", 0.08,
        "take the largest sum of a prefix of the list (the empty prefix counts, with sum 0)",
        """
        best = running = 0
        for x in $IN:
            running += x
            best = max(best, running)
        $OUT = best
        """,
        "best_prefix", bugs={"logic": [("best = max(best, running)", "best = max(best, x)")]},
    ),
    _step(
        "fibonacci", "dynamic_programming", "recurrences", "int", "int", 0.1,
        "take the Fibonacci number at that position modulo 1000007 (position 0 gives 0, position 1 gives 1, a "
        "negative position gives 0)",
        """
        prev, cur = 0, 1
        for _ in range(max($IN, 0)):
            prev, cur = cur, (prev + cur) % 1000007
        $OUT = prev
        """,
        "fibonacci", bugs={"off_by_one": [("$OUT = prev", "$OUT = cur")]}, first_only=True,
    ),
    _step(
        "best_ending_here", "dynamic_programming", "maximum subarray", "ints", "ints", 0.12,
        "replace every number by the largest sum of a run of consecutive numbers that ends with it",
        """
        ending_sums = []
        for x in $IN:
            ending_sums.append(x if not ending_sums else max(x, ending_sums[-1] + x))
        $OUT = ending_sums
        """,
        "best_ending", bugs={"edge_case": [("max(x, ending_sums[-1] + x)", "ending_sums[-1] + max(x, 0)")]},
    ),
)  # fmt: skip
"""The dynamic programming building blocks of pipeline exercises."""
