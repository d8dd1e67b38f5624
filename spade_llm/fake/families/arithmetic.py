"""The ``arithmetic`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

from ..inputs import _ints, _size
from ..steps import Step, _step
from ..variant import Variant, _code, _edit

_DIGIT_SUM = Variant(
    family="arithmetic",
    name="digit_sum",
    topic="digits",
    difficulty=0.08,
    entry_points=("digit_sum", "sum_of_digits", "digits_total"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the sum of the digits of the integer `n` written in $base_words. The sign "
        "is ignored, so a negative number has the same digit sum as its absolute value.",
        "Implement `$sig`: express `abs(n)` in $base_words notation and add up its digits. For `n = 0` the "
        "answer is 0.",
        "`$sig` should compute the digit sum of `n` in $base_words, treating negative inputs like their "
        "absolute value.",
    ),
    code=_code(
        """
        def $ep(n):
            n = abs(n)
            total = 0
            while n > 0:
                total += n % $base
                n //= $base
            return total
        """
    ),
    params=(
        {"base": 10, "base_words": "decimal"},
        {"base": 8, "base_words": "octal (base 8)", "_bump": 0.05},
        {"base": 2, "base_words": "binary", "_bump": 0.04},
    ),
    make_input=lambda rng, p, scale: (rng.randint(-(10 ** (2 + round(5 * scale))), 10 ** (3 + round(8 * scale))),),
    edges=lambda p: [(0,), (-4071,), (987654,), (7,)],
    bugs={
        "edge_case": _edit("    n = abs(n)\n", ""),
        "infinite_loop": _edit("        n //= $base\n", ""),
        "off_by_one": _edit("while n > 0:", "while n >= $base:"),
        "exception": _edit(
            "    n = abs(n)\n    total = 0\n    while n > 0:\n        total += n % $base\n        n //= $base\n"
            "    return total\n",
            "    return sum(int(d) for d in str(n))\n",
        ),
    },
)

_COUNT_PRIMES = Variant(
    family="arithmetic",
    name="count_primes",
    topic="sieve of Eratosthenes",
    difficulty=0.26,
    entry_points=("count_primes", "prime_count", "primes_below"),
    args=("n",),
    statements=(
        "Write `$sig` that returns how many prime numbers are $range_words. Remember that 1 is not prime and "
        "that the answer is 0 when `n` is small or negative.",
        "Implement `$sig`: count the primes $range_words. Use an efficient method: `n` can be as large as 20000.",
        "`$sig` counts the prime numbers $range_words (a prime has exactly two divisors, 1 and itself).",
    ),
    code=_code(
        """
        def $ep(n):
            limit = $limit
            if limit < 2:
                return 0
            sieve = [True] * limit
            sieve[0] = sieve[1] = False
            for i in range(2, int(limit ** 0.5) + 1):
                if sieve[i]:
                    for j in range(i * i, limit, i):
                        sieve[j] = False
            return sum(sieve)
        """
    ),
    params=(
        {"limit": "n", "range_words": "strictly less than `n`"},
        {"limit": "n + 1", "range_words": "less than or equal to `n`"},
    ),
    make_input=lambda rng, p, scale: (rng.randint(3, 60 + round(20000 * scale)),),
    edges=lambda p: [(0,), (1,), (2,), (10,), (100,)],
    bugs={
        "off_by_one": _edit("int(limit ** 0.5) + 1", "int(limit ** 0.5)"),
        "edge_case": _edit("sieve[0] = sieve[1] = False", "sieve[0] = False"),
        "exception": _edit("    if limit < 2:\n        return 0\n", ""),
    },
)

_LCM = Variant(
    family="arithmetic",
    name="lcm",
    topic="gcd and lcm",
    difficulty=0.3,
    entry_points=("lcm_of_list", "least_common_multiple", "lcm_all"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the least common multiple of all the positive integers in `nums`. The LCM "
        "of an empty list is 1.",
        "Implement `$sig`: find the smallest positive integer that every number in `nums` divides evenly. "
        "`nums` contains positive integers; for an empty list return 1.",
        "`$sig` computes the least common multiple of a list of positive integers (Euclid's algorithm for "
        "the greatest common divisor helps). Return 1 when the list is empty.",
    ),
    code=_code(
        """
        def $ep(nums):
            result = 1
            for x in nums:
                a, b = result, x
                while b:
                    a, b = b, a % b
                result = result * x // a
            return result
        """
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 2, 6, scale), 1, 12 + round(30 * scale)),),
    edges=lambda p: [([],), ([4, 6],), ([7],), ([2, 3, 4, 5, 6],)],
    bugs={
        "exception": _edit("    result = 1\n    for x in nums:\n", "    result = nums[0]\n    for x in nums[1:]:\n"),
        "edge_case": _edit("result = result * x // a", "result = result * x"),
    },
)

_ROMAN_CODE = _code(
    """
    def $ep(n):
        values = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                  (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        parts = []
        for value, symbol in values:
            while n >= value:
                parts.append(symbol)
                n -= value
        return $ret
    """
)
_ROMAN_VALUES = _ROMAN_CODE[_ROMAN_CODE.index("[") : _ROMAN_CODE.index("]\n") + 1]

_TO_ROMAN = Variant(
    family="arithmetic",
    name="to_roman",
    topic="number formatting",
    difficulty=0.4,
    entry_points=("to_roman", "int_to_roman", "roman_numeral"),
    args=("n",),
    statements=(
        "Write `$sig` that converts an integer `n` between 1 and 3999 into a Roman numeral written in $case "
        "letters, using the subtractive forms (IV, IX, XL, XC, CD, CM) wherever they apply.",
        "Implement `$sig`: return the standard Roman numeral for `n` (1 <= n <= 3999) as a $case string, "
        "choosing subtractive pairs where needed, so 4 is written with the symbols I and V and 1994 with "
        "M, CM, XC and IV.",
        "`$sig` turns a positive integer below 4000 into Roman numerals ($case). Use the usual symbols I, V, "
        "X, L, C, D, M and subtractive pairs such as IX for 9.",
    ),
    code=_ROMAN_CODE,
    params=(
        {"case": "upper-case", "ret": '"".join(parts)'},
        {"case": "lower-case", "ret": '"".join(parts).lower()', "_bump": 0.02},
    ),
    make_input=lambda rng, p, scale: (rng.randint(1, 50 + round(3949 * scale)),),
    edges=lambda p: [(4,), (1994,), (3999,), (9,), (40,)],
    bugs={
        "edge_case": _edit(
            _ROMAN_VALUES,
            '[(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]',
        ),
        "off_by_one": _edit("while n >= value:", "while n > value:"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _DIGIT_SUM,
    _COUNT_PRIMES,
    _LCM,
    _TO_ROMAN,
)
"""The arithmetic exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "alt_sum", "arithmetic", "alternating sums", "ints", "int", 0.08,
        "add the numbers with alternating signs: plus the 1st, minus the 2nd, plus the 3rd, and so on (0 for no "
        "numbers)",
        """
        signed = 0
        for i, x in enumerate($IN):
            if i % 2 == 0:
                signed += x
            else:
                signed -= x
        $OUT = signed
        """,
        "alternating_sum", bugs={"off_by_one": [("if i % 2 == 0:", "if i % 2 == 1:")]},
    ),
    _step(
        "digit_sums", "arithmetic", "digits", "ints", "ints", 0.1,
        "replace every number by the sum of its decimal digits (ignoring the sign)",
        """
        digit_sums = []
        for x in $IN:
            rest = abs(x)
            acc = 0
            while rest:
                acc += rest % 10
                rest //= 10
            digit_sums.append(acc)
        $OUT = digit_sums
        """,
        "digit_sums",
        bugs={
            "off_by_one": [("while rest:", "while rest > 9:")],
            "edge_case": [("rest = abs(x)", "rest = x if x > 0 else 0")],
        },
    ),
    _step(
        "gcd_all", "arithmetic", "greatest common divisor", "ints", "int", 0.2,
        "take the greatest common divisor of all the numbers, ignoring signs (0 when there are no numbers or "
        "all are 0)",
        """
        g = 0
        for x in $IN:
            a, b = g, abs(x)
            while b:
                a, b = b, a % b
            g = a
        $OUT = g
        """,
        "gcd", bugs={"edge_case": [("a, b = g, abs(x)", "a, b = g, x")]}, order_free=True,
    ),
    _step(
        "keep_primes", "arithmetic", "primes", "ints", "ints", 0.15, "keep only the prime numbers",
        """
        primes = []
        for x in $IN:
            if x < 2:
                continue
            d = 2
            while d * d <= x:
                if x % d == 0:
                    break
                d += 1
            else:
                primes.append(x)
        $OUT = primes
        """,
        "primes",
        bugs={
            "edge_case": [("if x < 2:", "if x < 1:")],
            "off_by_one": [("while d * d <= x:", "while d * d < x:")],
        },
    ),
    _step(
        "digits_of", "arithmetic", "digits", "int", "ints", 0.05,
        "split the number into its decimal digits, most significant first (ignoring the sign)",
        "$OUT = [int(c) for c in str(abs($IN))]", "digits", bugs={"edge_case": [("str(abs($IN))", "str($IN)")]},
    ),
    _step(
        "divisors", "arithmetic", "divisors", "int", "ints", 0.15,
        "list the positive divisors of its absolute value in increasing order (0 has none)",
        """
        target = abs($IN)
        small, large = [], []
        d = 1
        while d * d <= target:
            if target % d == 0:
                small.append(d)
                if d != target // d:
                    large.append(target // d)
            d += 1
        $OUT = small + large[::-1]
        """,
        "divisors",
        bugs={
            "edge_case": [("if d != target // d:", "if True:")],
            "off_by_one": [("while d * d <= target:", "while d * d < target:")],
        },
    ),
    _step(
        "reverse_digits", "arithmetic", "digits", "int", "int", 0.1,
        "reverse its decimal digits, keeping its sign (-120 becomes -21)",
        "$OUT = int(str(abs($IN))[::-1]) * (-1 if $IN < 0 else 1)", "reversed_digits",
        bugs={"edge_case": [("int(str(abs($IN))[::-1]) * (-1 if $IN < 0 else 1)", "int(str(abs($IN))[::-1])")]},
    ),
    # for harder chains
    _step(
        "prime_factors", "arithmetic", "prime factors", "int", "ints", 0.25,
        "list the prime factors of its absolute value in increasing order, repeated as often as they divide it "
        "(0 and 1 have none)",
        """
        rest = abs($IN)
        factors = []
        p = 2
        while rest > 1 and p * p <= rest:
            while rest % p == 0:
                factors.append(p)
                rest //= p
            p += 1
        if rest > 1:
            factors.append(rest)
        $OUT = factors
        """,
        "prime_factors",
        bugs={
            "edge_case": [("if rest > 1:\n    factors.append(rest)\n", "")],
            "logic": [("while rest % p == 0:", "if rest % p == 0:")],
        },
    ),
    _step(
        "count_primes_upto", "arithmetic", "sieves", "int", "int", 0.3,
        "count the primes that are not larger than it",
        """
        limit = max($IN, 0)
        sieve = [True] * (limit + 1)
        found_primes = 0
        for k in range(2, limit + 1):
            if sieve[k]:
                found_primes += 1
                for multiple in range(k * k, limit + 1, k):
                    sieve[multiple] = False
        $OUT = found_primes
        """,
        "prime_count", bugs={"off_by_one": [("for k in range(2, limit + 1):", "for k in range(2, limit):")]},
        first_only=True,
    ),
    _step(
        "to_base", "arithmetic", "number bases", "int", "text", 0.15,
        "write its absolute value in base $b with the digits 0 to $top (0 is written 0)",
        """
        rest = abs($IN)
        written = ''
        while rest:
            written = str(rest % $b) + written
            rest //= $b
        $OUT = written or '0'
        """,
        "in_base", ({"b": 3, "top": 2}, {"b": 7, "top": 6}),
        {
            "edge_case": [("$OUT = written or '0'", "$OUT = written")],
        },
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "abs_each", "arithmetic", "absolute values", "ints", "ints", 0.03, "replace every number by its absolute value",
        "$OUT = [abs(x) for x in $IN]", "absolute", bugs={"logic": [("abs(x) for", "max(x, 0) for")]},
    ),
    _step(
        "mod_each", "arithmetic", "remainders", "ints", "ints", 0.04,
        "replace every number by its remainder after division by $k (between 0 and $k - 1, also for negative "
        "numbers)",
        "$OUT = [x % $k for x in $IN]", "remainders", ({"k": 3}, {"k": 7}),
        {"edge_case": [("x % $k for", "abs(x) % $k for")]},
    ),
    _step(
        "halve_each", "arithmetic", "integer division", "ints", "ints", 0.03,
        "replace every number by half of it, rounded down (-3 becomes -2)", "$OUT = [x // 2 for x in $IN]", "halves",
        bugs={"edge_case": [("x // 2 for", "int(x / 2) for")]},
    ),
)  # fmt: skip
"""The arithmetic building blocks of pipeline exercises."""
