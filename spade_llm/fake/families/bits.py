"""The ``bits`` family of the fake's task bank (bit manipulation): its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit

_POPCOUNT = Variant(
    family="bits",
    name="popcount",
    topic="counting bits",
    difficulty=0.12,
    entry_points=("count_set_bits", "popcount", "hamming_weight"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the number of 1 bits in the binary representation of the non-negative integer `n`.",
        "Implement `$sig`: count how many bits are set when `n` (n >= 0) is written in base 2; 13 is `0b1101`, "
        "which has three set bits.",
        "`$sig` computes the population count (Hamming weight) of the non-negative integer `n`, that is the "
        "number of ones in its binary form.",
    ),
    code=_code(
        """
        def $ep(n):
            count = 0
            while n:
                count += n & 1
                n >>= 1
            return count
        """
    ),
    make_input=lambda rng, p, scale: (rng.randint(0, 2 ** (8 + round(40 * scale))),),
    edges=lambda p: [(0,), (1,), (255,), (1024,)],
    bugs={
        "infinite_loop": _edit("        n >>= 1\n", ""),
        "off_by_one": _edit("while n:", "while n > 1:"),
        "logic": _edit("count += n & 1", "count += 1"),
    },
)


def _pow2_input(rng: random.Random, p: Params, scale: float) -> Args:
    if rng.random() < 0.3:
        return (2 ** rng.randint(0, 10 + round(30 * scale)),)
    return (rng.randint(-3, 2 ** (4 + round(30 * scale))),)


_NEXT_POW2 = Variant(
    family="bits",
    name="next_power_of_two",
    topic="powers of two",
    difficulty=0.18,
    entry_points=("next_power_of_two", "round_up_pow2", "ceil_pow2"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the smallest power of two that is greater than or equal to `n`. For "
        "`n <= 1` the answer is 1.",
        "Implement `$sig`: round `n` up to the next power of two (a number of the form `2**k` with k >= 0). If "
        "`n` is already a power of two, return it unchanged; any `n` below 1 gives 1.",
        "`$sig` should return the least `2**k` (k >= 0) that is at least `n`.",
    ),
    code=_code(
        """
        def $ep(n):
            power = 1
            while power < n:
                power <<= 1
            return power
        """
    ),
    make_input=_pow2_input,
    edges=lambda p: [(0,), (1,), (16,), (17,), (-5,)],
    bugs={
        "off_by_one": _edit("while power < n:", "while power <= n:"),
        "infinite_loop": _edit("    power = 1\n", "    power = 0\n"),
        "edge_case": _edit("    power = 1\n", "    power = 2\n"),
    },
)

_REVERSE_BITS = Variant(
    family="bits",
    name="reverse_bits",
    topic="bit shifting",
    difficulty=0.34,
    entry_points=("reverse_bits", "mirror_bits", "bit_reverse"),
    args=("n",),
    statements=(
        "Write `$sig` that reverses the order of the lowest $width bits of `n` (0 <= n < 2**$width) and "
        "returns the resulting integer. Leading zeros count: with $width bits, 1 becomes $top.",
        "Implement `$sig`: treat `n` as a $width-bit unsigned integer, mirror its bit pattern (bit 0 swaps "
        "with bit $hi, bit 1 with bit $hi2, and so on) and return the value.",
        "`$sig` returns the integer whose $width-bit binary representation is the reverse of that of `n` "
        "(padded with leading zeros to $width bits).",
    ),
    code=_code(
        """
        def $ep(n):
            result = 0
            for _ in range($width):
                result = (result << 1) | (n & 1)
                n >>= 1
            return result
        """
    ),
    params=(
        {"width": 8, "top": 128, "hi": 7, "hi2": 6},
        {"width": 16, "top": 32768, "hi": 15, "hi2": 14},
        {"width": 32, "top": 2147483648, "hi": 31, "hi2": 30, "_bump": 0.02},
    ),
    make_input=lambda rng, p, scale: (rng.randint(2, 2 ** p["width"] - 2),),
    edges=lambda p: [(0,), (1,), (2 ** p["width"] - 1,), (6,)],
)


def _single_input(rng: random.Random, p: Params, scale: float) -> Args:
    k = p["k"]
    others = rng.sample(range(-1000, 1000), _size(rng, 1, 7, scale))
    unique = rng.choice([v for v in range(-200, 200) if v not in others and v != 0])
    if rng.random() < scale:
        unique = rng.randint(-(2**31), 2**31 - 1)
        while unique == 0 or unique in others:
            unique = rng.randint(-(2**31), 2**31 - 1)
    nums = others * k + [unique]
    rng.shuffle(nums)
    return (nums,)


_SINGLE_NUMBER = Variant(
    family="bits",
    name="single_number",
    topic="xor and bit counts",
    difficulty=0.42,
    entry_points=("single_number", "find_unique", "lonely_value"),
    args=("nums",),
    statements=(
        "Every value in the integer list `nums` appears exactly $times, except for one value that appears "
        "only once. Write `$sig` that returns that lonely value. Values may be negative and fit in a signed "
        "32-bit integer.",
        "Implement `$sig`: in `nums`, each number occurs $times except a single number that occurs once; find "
        "it (bit manipulation allows constant extra space). Numbers are 32-bit signed integers.",
        "`$sig` receives a list where all elements come in groups of $k equal values, apart from one element "
        "that is unique, and returns the unique element. Elements are between -2**31 and 2**31 - 1.",
    ),
    code=_code(
        """
        def $ep(nums):
            result = 0
            for bit in range(32):
                total = 0
                for x in nums:
                    total += (x >> bit) & 1
                if total % $k:
                    result |= 1 << bit
            if result >= 1 << 31:
                result -= 1 << 32
            return result
        """
    ),
    params=({"k": 2, "times": "twice"}, {"k": 3, "times": "three times", "_bump": 0.08}),
    make_input=_single_input,
    edges=lambda p: [([7],), ([4, 1] + [4] * (p["k"] - 1),), ([5] * (p["k"] - 1) + [-3, 5],)],
    bugs={"edge_case": _edit("    if result >= 1 << 31:\n        result -= 1 << 32\n", "")},
)


VARIANTS: tuple[Variant, ...] = (
    _POPCOUNT,
    _NEXT_POW2,
    _REVERSE_BITS,
    _SINGLE_NUMBER,
)
"""The bit manipulation exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "popcounts", "bits", "set bits", "ints", "ints", 0.05,
        "replace every number by the number of 1 bits in the binary form of its absolute value",
        "$OUT = [bin(x).count('1') for x in $IN]", "bit_counts",
        bugs={"logic": [("bin(x).count('1')", "len(bin(abs(x))) - 2")]},
    ),
    _step(
        "xor_all", "bits", "xor", "ints", "int", 0.06, "combine all the numbers with bitwise XOR (0 for no numbers)",
        """
        folded = 0
        for x in $IN:
            folded ^= x
        $OUT = folded
        """,
        "xor", bugs={"logic": [("folded ^= x", "folded |= x")]}, order_free=True,
    ),
    _step(
        "xor_k", "bits", "xor", "ints", "ints", 0.04, "replace every number x by x XOR $k",
        "$OUT = [x ^ $k for x in $IN]", "masked", ({"k": 1}, {"k": 5}, {"k": 12}),
        {"logic": [("x ^ $k", "x | $k")]},
    ),
    _step(
        "powers_of_two", "bits", "powers of two", "ints", "ints", 0.1,
        "keep only the numbers that are powers of two (1, 2, 4, 8, ...)",
        "$OUT = [x for x in $IN if x > 0 and x & (x - 1) == 0]", "powers",
        bugs={"edge_case": [("x > 0 and x & (x - 1) == 0", "x & (x - 1) == 0")]},
    ),
    _step(
        "lowest_bit", "bits", "lowest set bit", "ints", "ints", 0.1,
        "replace every number x by its lowest set bit, x AND -x (0 stays 0)", "$OUT = [x & -x for x in $IN]",
        "low_bits", bugs={"logic": [("x & -x", "x & (x - 1)")]},
    ),
    _step(
        "bits_of", "bits", "binary digits", "int", "ints", 0.08,
        "write its absolute value in binary as a list of bits, most significant first (0 gives [0])",
        "$OUT = [int(b) for b in bin(abs($IN))[2:]]", "bits",
        bugs={
            "edge_case": [("bin(abs($IN))[2:]", "bin($IN)[2:]")],
        },
    ),
    _step(
        "one_bit_pairs", "bits", "hamming distance", "ints", "int", 0.25,
        "count the pairs of positions i < j whose numbers differ in exactly one bit",
        """
        close = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                if bin($IN[i] ^ $IN[j]).count('1') == 1:
                    close += 1
        $OUT = close
        """,
        "one_bit_pairs",
        bugs={
            "logic": [("bin($IN[i] ^ $IN[j]).count('1') == 1", "bin($IN[i] ^ $IN[j]).count('1') <= 1")],
        },
    ),
    # for harder chains
    _step(
        "max_xor_pair", "bits", "xor", "ints", "int", 0.3,
        "take the largest XOR of two numbers at different positions, or 0 when no pair gives more than 0",
        """
        best_xor = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                best_xor = max(best_xor, $IN[i] ^ $IN[j])
        $OUT = best_xor
        """,
        "max_xor", bugs={"logic": [("$IN[i] ^ $IN[j]", "$IN[i] | $IN[j]")]}, order_free=True,
    ),
    _step(
        "gray_code", "bits", "gray codes", "ints", "ints", 0.1,
        "replace every number x by its Gray code, x XOR (x shifted right by one bit)",
        "$OUT = [x ^ (x >> 1) for x in $IN]", "gray", bugs={"logic": [("x ^ (x >> 1)", "x ^ (x << 1)")]},
    ),
)  # fmt: skip
"""The bit manipulation building blocks of pipeline exercises."""
