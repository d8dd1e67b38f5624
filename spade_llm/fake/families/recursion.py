"""The ``recursion`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

from ..inputs import _nested, _size
from ..steps import Step, _step
from ..variant import Variant, _code, _edit

_FLATTEN = Variant(
    family="recursion",
    name="flatten",
    topic="nested lists",
    difficulty=0.25,
    entry_points=("flatten", "flatten_nested", "deep_flatten"),
    args=("items",),
    statements=(
        "Write `$sig` that takes a list whose elements are either integers or (possibly nested) lists, and "
        "returns a flat list of all the integers in left-to-right order. Empty sublists contribute nothing.",
        "Implement `$sig`: flatten an arbitrarily nested list structure `items` into a single list, keeping "
        "the original order of the values.",
        "Nested lists can hide values several levels deep. `$sig` should collect every non-list item of "
        "`items`, at any depth, into one flat list (left to right).",
    ),
    code=_code(
        """
        def $ep(items):
            flat = []
            for item in items:
                if isinstance(item, list):
                    flat.extend($ep(item))
                else:
                    flat.append(item)
            return flat
        """
    ),
    make_input=lambda rng, p, scale: (_nested(rng, 0, 1 + round(3 * scale)),),
    edges=lambda p: [([],), ([1, [2, [3, [4]]], 5],), ([[], [[]], 7],), ([[1, 2], [3, [4, 5]]],)],
    bugs={
        "edge_case": _edit("flat.extend($ep(item))", "flat.extend(item)"),
        "exception": _edit("flat.extend($ep(item))", "flat.extend($ep(items))"),
    },
)

_SUBSETS = Variant(
    family="recursion",
    name="subsets",
    topic="power set",
    difficulty=0.45,
    entry_points=("subsets", "power_set", "all_subsets"),
    args=("items",),
    statements=(
        "Write `$sig` that returns all subsets of the list `items`, whose elements are distinct integers. "
        "Each subset keeps the elements in the same relative order as in `items`, and the list of subsets "
        "is sorted by length first and then lexicographically. The empty subset is always included.",
        "Implement `$sig`: generate the power set of `items` as a list of lists. Inside a subset the elements "
        "appear in input order; order the subsets by size, breaking ties by comparing the lists "
        "lexicographically.",
        "`$sig` should list every subset of `items` (2**len(items) of them, including `[]` and `items` "
        "itself). Sort the result by `(len(subset), subset)`; each subset preserves input order.",
    ),
    code=_code(
        """
        def $ep(items):
            if not items:
                return [[]]
            rest = $ep(items[1:])
            with_first = [[items[0]] + subset for subset in rest]
            return sorted(rest + with_first, key=lambda subset: (len(subset), subset))
        """
    ),
    make_input=lambda rng, p, scale: (rng.sample(range(-5, 30), _size(rng, 1, 6, scale)),),
    edges=lambda p: [([],), ([3, 1, 2],), ([5],)],
    bugs={
        "edge_case": _edit("return [[]]", "return []"),
        "exception": _edit("    if not items:\n        return [[]]\n", ""),
        "off_by_one": _edit("$ep(items[1:])", "$ep(items[2:])"),
    },
    generic=frozenset(),
)

_HANOI = Variant(
    family="recursion",
    name="hanoi",
    topic="divide and conquer",
    difficulty=0.38,
    entry_points=("hanoi_moves", "solve_hanoi", "tower_moves"),
    args=("n",),
    statements=(
        "Tower of Hanoi: `n` disks start on peg '$src' and must move to peg '$dst', using peg '$via' as a "
        "spare, one disk at a time and never placing a larger disk on a smaller one. Write `$sig` that returns "
        "the optimal sequence of moves as a list of strings of the form `'X->Y'` (from peg, arrow, to peg).",
        "Implement `$sig` for the Tower of Hanoi puzzle with pegs named '$src' (start), '$via' (spare) and "
        "'$dst' (target). Return the moves of the shortest solution for `n` disks, each written as "
        "`'<from>-><to>'`; for `n = 0` the list is empty.",
        "`$sig` solves the Towers of Hanoi with `n` disks moved from '$src' to '$dst' via '$via'. Produce the "
        "standard minimal move sequence (2**n - 1 moves) as strings such as `'$src->$dst'`.",
    ),
    code=_code(
        """
        def $ep(n):
            moves = []

            def move(count, source, target, spare):
                if count == 0:
                    return
                move(count - 1, source, spare, target)
                moves.append(source + "->" + target)
                move(count - 1, spare, target, source)

            move(n, $src_r, $dst_r, $via_r)
            return moves
        """
    ),
    params=(
        {"src": "A", "via": "B", "dst": "C"},
        {"src": "L", "via": "M", "dst": "R"},
        {"src": "1", "via": "2", "dst": "3"},
    ),
    make_input=lambda rng, p, scale: (rng.randint(2, 5 + round(3 * scale)),),
    edges=lambda p: [(0,), (1,), (3,)],
    bugs={
        "exception": _edit(
            "        if count == 0:\n            return\n",
            '        if count == 1:\n            moves.append(source + "->" + target)\n            return\n',
        ),
        "edge_case": _edit("move(count - 1, source, spare, target)", "move(count - 1, source, target, spare)"),
        "off_by_one": _edit("move(n, ", "move(n - 1, "),
    },
    generic=frozenset(),
)


VARIANTS: tuple[Variant, ...] = (
    _FLATTEN,
    _HANOI,
    _SUBSETS,
)
"""The recursion exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "flatten_nested", "recursion", "flattening", "nested", "ints", 0.12,
        "flatten it into the list of its integers, in order",
        """
        def collect(item, out):
            if isinstance(item, list):
                for inner in item:
                    collect(inner, out)
            else:
                out.append(item)
            return out

        $OUT = collect($IN, [])
        """,
        "flat", bugs={"logic": [("            collect(inner, out)\n", "            out.append(inner)\n")]},
    ),
    _step(
        "nested_depth", "recursion", "depth", "nested", "int", 0.15,
        "take its nesting depth (a list without inner lists has depth 1)",
        """
        def depth(item):
            if not isinstance(item, list):
                return 0
            return 1 + max((depth(inner) for inner in item), default=0)

        $OUT = depth($IN)
        """,
        "depth", bugs={"edge_case": [("default=0)", "default=-1)")]},
    ),
    _step(
        "weighted_sum", "recursion", "weighted sums", "nested", "int", 0.22,
        "add up its integers, each multiplied by its depth (integers directly in the list have depth 1)",
        """
        def weigh(item, level):
            if isinstance(item, list):
                return sum(weigh(inner, level + 1) for inner in item)
            return item * level

        $OUT = weigh($IN, 0)
        """,
        "weighted_sum", bugs={"off_by_one": [("weigh($IN, 0)", "weigh($IN, 1)")]},
    ),
    _step(
        "digital_roots", "recursion", "digit recursion", "ints", "ints", 0.12,
        "replace every number by its digital root: sum the digits of its absolute value, repeating until one "
        "digit is left",
        """
        def root(x):
            if x < 10:
                return x
            return root(sum(int(d) for d in str(x)))

        $OUT = [root(abs(x)) for x in $IN]
        """,
        "digital_roots", bugs={"off_by_one": [("if x < 10:", "if x < 100:")]},
    ),
    # for harder chains
    _step(
        "nested_flip", "recursion", "nested lists", "nested", "nested", 0.2,
        "reverse it at every level (the inner lists are reversed too)",
        """
        def flip(item):
            if isinstance(item, list):
                return [flip(inner) for inner in reversed(item)]
            return item

        $OUT = flip($IN)
        """,
        "flipped", bugs={"logic": [("[flip(inner) for inner in reversed(item)]", "list(reversed(item))")]},
    ),
    _step(
        "level_sums", "recursion", "depth", "nested", "ints", 0.3,
        "list the sums of its integers depth by depth, integers directly in the list having depth 1, down to "
        "the deepest integer (0 for a depth without integers)",
        """
        def visit(item, level, sums):
            for inner in item:
                if isinstance(inner, list):
                    visit(inner, level + 1, sums)
                else:
                    while len(sums) < level:
                        sums.append(0)
                    sums[level - 1] += inner
            return sums

        $OUT = visit($IN, 1, [])
        """,
        "level_sums", bugs={"off_by_one": [("sums[level - 1] += inner", "sums[level - 2] += inner")]},
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "nested_sum", "recursion", "nested lists", "nested", "int", 0.06, "add up all its integers, at any depth",
        """
        def total_of(item):
            if isinstance(item, list):
                return sum(total_of(inner) for inner in item)
            return item

        $OUT = total_of($IN)
        """,
        "nested_total",
        bugs={
            "logic": [
                (
                    "return sum(total_of(inner) for inner in item)",
                    "return sum(inner for inner in item if not isinstance(inner, list))",
                )
            ],
        },
    ),
    _step(
        "nested_count", "recursion", "nested lists", "nested", "int", 0.05, "count its integers, at any depth",
        """
        def count_of(item):
            if isinstance(item, list):
                return sum(count_of(inner) for inner in item)
            return 1

        $OUT = count_of($IN)
        """,
        "integer_count", bugs={"logic": [("return sum(count_of(inner) for inner in item)", "return len(item)")]},
    ),
)  # fmt: skip
"""The recursion building blocks of pipeline exercises."""
