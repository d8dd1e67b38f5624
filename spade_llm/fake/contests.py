"""The fake model's contest problems: ``program`` tasks written the way a contest setter writes them.

Why beside :mod:`spade_llm.fake.programs` (the bank's exercises as programs): those have a JSON input
format and no input generator, so they never exercise what makes contest data worth training on:
hidden tests drawn from the author's *input generator* at sizes up to 10000, checked by the author's
*input validator*, and a time limit derived from the reference, so that a correct but quadratic
solution fails the large tests as ``timeout``. Each :class:`Problem` here has a statement with its
input format, constraints and example, a linear (or n log n) reference, a generator and a validator
(programs, run in the sandbox by the gates), a correct but **too slow** version and **wrong** ones a
weak solver writes (a plausible misreading of the statement or a missed edge case).

The solver side recognises a problem by its title (:func:`identify`, the first words of the
statement), as it recognises the bank's by their statements, and picks the reference or one of the
problem's mistakes (:func:`solve`); a repair fixes a mistake more surely when the feedback names its
symptom (a timeout for the slow version, a wrong output for the others). The ``noisy`` profile
spoils some problems the way a careless setter does (:func:`spoil`), each spoiling caught by its own
gate of the program kind.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["PROBLEMS", "Problem", "choose", "identify", "pick", "solve", "spoil", "task_json"]


@dataclass(frozen=True)
class Problem:
    """One contest problem: its statement, reference, input generator and validator, and the
    versions a weaker solver writes (``slow``: right but quadratic; ``wrong``: wrong on some input)."""

    key: str
    title: str
    difficulty: float
    tags: tuple[str, ...]
    statement: str
    reference: str
    generator: str
    validator: str
    slow: str
    wrong: tuple[str, ...]
    tests: tuple[str, ...]
    """The author's own tests (the first is the statement's example); hidden ones come from the generator."""
    trivial_tests: tuple[str, ...]
    """Inputs a careless setter tests with: all with the same answer (the noisy profile's weak tests)."""
    topics: tuple[str, ...] = ()
    """The built-in focus topics (``curriculum``) this problem answers: each topic is one problem's at
    most, and an epoch hands each topic to one request, so concurrent requests propose different ones."""

    @property
    def mistakes(self) -> tuple[str, ...]:
        return (self.slow, *self.wrong)


# -- the problems ---------------------------------------------------------------------------------------

# each generator reads "SIZE SEED" and prints one input of about that size; each validator exits 0 exactly
# on inputs the constraints allow (an AssertionError or a parse error exits 1)

_INTS_VALIDATOR = """import sys
lines = sys.stdin.read().split("\\n")
n = int(lines[0])
xs = [int(x) for x in lines[1].split()]
assert 1 <= n <= 100000 and len(xs) == n and all(-{bound} <= x <= {bound} for x in xs)
assert lines[0] == str(n) and not any(line.strip() for line in lines[2:])
"""

ZERO_PAIRS = Problem(
    key="zero_pairs",
    title="Zero-sum pairs",
    difficulty=0.45,
    tags=("hashing", "counting"),
    statement=(
        "Zero-sum pairs. Given n integers a_1..a_n, count the pairs of positions i < j with a_i + a_j = 0.\n\n"
        "Input: the first line holds n (1 <= n <= 100000), the second the n integers, separated by spaces "
        "(-1000 <= a_i <= 1000).\nOutput: one line, the number of pairs.\n\nExample: for the input\n"
        "4\n1 -1 2 -2\nthe output is 2."
    ),
    reference=(
        "from collections import Counter\n"
        "input()\n"
        "seen, pairs = Counter(), 0\n"
        "for x in map(int, input().split()):\n"
        "    pairs += seen[-x]\n"
        "    seen[x] += 1\n"
        "print(pairs)\n"
    ),
    generator=(
        "import random\n"
        "size, seed = map(int, input().split())\n"
        "rng = random.Random(seed)\n"
        "span = rng.choice([1, 5, 1000])\n"
        "print(size)\n"
        "print(' '.join(str(rng.randint(-span, span)) for _ in range(size)))\n"
    ),
    validator=_INTS_VALIDATOR.format(bound=1000),
    slow=(
        "n = int(input())\n"
        "a = list(map(int, input().split()))\n"
        "count = 0\n"
        "for i in range(n):\n"
        "    for j in range(i + 1, n):\n"
        "        if a[i] + a[j] == 0:\n"
        "            count += 1\n"
        "print(count)\n"
    ),
    wrong=(
        # forgets that two zeros make a pair
        "from collections import Counter\n"
        "input()\n"
        "seen, pairs = Counter(), 0\n"
        "for x in map(int, input().split()):\n"
        "    if x != 0:\n"
        "        pairs += seen[-x]\n"
        "    seen[x] += 1\n"
        "print(pairs)\n",
        # counts each value pair once, not each pair of positions
        "input()\nvalues = set(map(int, input().split()))\nprint(sum(1 for x in values if x > 0 and -x in values))\n",
    ),
    tests=("4\n1 -1 2 -2\n", "3\n0 0 0\n", "1\n5\n", "5\n3 -3 3 -3 1\n", "6\n2 2 -2 7 0 -7\n"),
    trivial_tests=("1\n5\n", "2\n1 2\n", "3\n4 5 6\n", "2\n-1 -2\n", "1\n0\n"),
    topics=("dictionaries", "bit manipulation"),
)

MAX_SUBARRAY = Problem(
    key="max_subarray",
    title="Best stretch",
    difficulty=0.55,
    tags=("dynamic programming", "arrays"),
    statement=(
        "Best stretch. Given n integers, print the largest sum of a non-empty run of consecutive ones.\n\n"
        "Input: the first line holds n (1 <= n <= 100000), the second the n integers "
        "(-10000 <= a_i <= 10000).\nOutput: one line, the largest sum.\n\nExample: for the input\n"
        "5\n2 -3 4 -1 3\nthe output is 6."
    ),
    reference=(
        "input()\n"
        "best = current = None\n"
        "for x in map(int, input().split()):\n"
        "    current = x if current is None or current < 0 else current + x\n"
        "    best = current if best is None else max(best, current)\n"
        "print(best)\n"
    ),
    generator=(
        "import random\n"
        "size, seed = map(int, input().split())\n"
        "rng = random.Random(seed)\n"
        "low, high = rng.choice([(-10000, 10000), (-100, -1), (-10, 100)])\n"
        "print(size)\n"
        "print(' '.join(str(rng.randint(low, high)) for _ in range(size)))\n"
    ),
    validator=_INTS_VALIDATOR.format(bound=10000),
    slow=(
        "n = int(input())\n"
        "a = list(map(int, input().split()))\n"
        "best = a[0]\n"
        "for i in range(n):\n"
        "    total = 0\n"
        "    for j in range(i, n):\n"
        "        total += a[j]\n"
        "        best = max(best, total)\n"
        "print(best)\n"
    ),
    wrong=(
        # lets the run be empty: 0 where every number is negative
        "input()\n"
        "best = current = 0\n"
        "for x in map(int, input().split()):\n"
        "    current = max(0, current + x)\n"
        "    best = max(best, current)\n"
        "print(best)\n",
    ),
    tests=("5\n2 -3 4 -1 3\n", "3\n-5 -2 -9\n", "1\n7\n", "4\n1 2 3 4\n", "6\n-1 5 -9 4 4 -20\n"),
    trivial_tests=("1\n5\n", "2\n5 -1\n", "2\n-1 5\n", "3\n2 -9 5\n", "3\n5 -5 5\n"),
    topics=("dynamic programming", "matrices"),
)

LONGEST_RISE = Problem(
    key="longest_rise",
    title="Longest rise",
    difficulty=0.35,
    tags=("arrays", "scanning"),
    statement=(
        "Longest rise. Given n integers, print the length of the longest run of consecutive numbers in which "
        "each is strictly larger than the one before.\n\nInput: the first line holds n (1 <= n <= 100000), "
        "the second the n integers (-1000000 <= a_i <= 1000000).\nOutput: one line, the length.\n\n"
        "Example: for the input\n6\n1 2 2 3 4 1\nthe output is 3."
    ),
    reference=(
        "input()\n"
        "a = list(map(int, input().split()))\n"
        "best = run = 1\n"
        "for prev, x in zip(a, a[1:]):\n"
        "    run = run + 1 if x > prev else 1\n"
        "    best = max(best, run)\n"
        "print(best)\n"
    ),
    generator=(
        "import random\n"
        "size, seed = map(int, input().split())\n"
        "rng = random.Random(seed)\n"
        "if size >= 100:  # long rises: a solution that restarts at every position is quadratic on them\n"
        "    a = sorted(rng.sample(range(-1000000, 1000000), size))\n"
        "    a[rng.randrange(size)] = -1000000\n"
        "else:\n"
        "    a = [rng.randint(-5, 5) for _ in range(size)]\n"
        "print(size)\n"
        "print(' '.join(map(str, a)))\n"
    ),
    validator=_INTS_VALIDATOR.format(bound=1000000),
    slow=(
        "n = int(input())\n"
        "a = list(map(int, input().split()))\n"
        "best = 1\n"
        "for i in range(n):\n"
        "    j = i\n"
        "    while j + 1 < n and a[j + 1] > a[j]:\n"
        "        j += 1\n"
        "    best = max(best, j - i + 1)\n"
        "print(best)\n"
    ),
    wrong=(
        # reads "larger" as "not smaller"
        "input()\n"
        "a = list(map(int, input().split()))\n"
        "best = run = 1\n"
        "for prev, x in zip(a, a[1:]):\n"
        "    run = run + 1 if x >= prev else 1\n"
        "    best = max(best, run)\n"
        "print(best)\n",
        # forgets the last run
        "input()\n"
        "a = list(map(int, input().split()))\n"
        "best = 1\n"
        "run = 1\n"
        "for prev, x in zip(a, a[1:]):\n"
        "    if x > prev:\n"
        "        run += 1\n"
        "    else:\n"
        "        best = max(best, run)\n"
        "        run = 1\n"
        "print(best)\n",
    ),
    tests=("6\n1 2 2 3 4 1\n", "1\n-4\n", "4\n4 3 2 1\n", "5\n1 2 3 4 5\n", "7\n5 1 2 3 0 1 2\n"),
    trivial_tests=("1\n3\n", "2\n2 1\n", "3\n3 3 3\n", "2\n5 5\n", "3\n9 8 7\n"),
    topics=("lists", "stacks"),
)

INVERSIONS = Problem(
    key="inversions",
    title="Out of order",
    difficulty=0.7,
    tags=("sorting", "divide and conquer"),
    statement=(
        "Out of order. Given n integers, count the pairs of positions i < j with a_i > a_j.\n\nInput: the "
        "first line holds n (1 <= n <= 100000), the second the n integers (-1000 <= a_i <= 1000).\n"
        "Output: one line, the number of such pairs.\n\nExample: for the input\n4\n3 1 2 1\nthe output is 4."
    ),
    reference=(
        "input()\n"
        "a = list(map(int, input().split()))\n"
        "OFFSET = 1001\n"
        "tree = [0] * (2 * OFFSET + 2)\n"
        "count = 0\n"
        "for seen, x in enumerate(a):\n"
        "    i, not_above = x + OFFSET, 0\n"
        "    while i > 0:\n"
        "        not_above += tree[i]\n"
        "        i -= i & -i\n"
        "    count += seen - not_above\n"
        "    i = x + OFFSET\n"
        "    while i < len(tree):\n"
        "        tree[i] += 1\n"
        "        i += i & -i\n"
        "print(count)\n"
    ),
    generator=(
        "import random\n"
        "size, seed = map(int, input().split())\n"
        "rng = random.Random(seed)\n"
        "span = rng.choice([2, 1000])\n"
        "print(size)\n"
        "print(' '.join(str(rng.randint(-span, span)) for _ in range(size)))\n"
    ),
    validator=_INTS_VALIDATOR.format(bound=1000),
    slow=(
        "n = int(input())\n"
        "a = list(map(int, input().split()))\n"
        "print(sum(1 for i in range(n) for j in range(i + 1, n) if a[i] > a[j]))\n"
    ),
    wrong=(
        # counts equal values as out of order too
        "input()\n"
        "a = list(map(int, input().split()))\n"
        "OFFSET = 1001\n"
        "tree = [0] * (2 * OFFSET + 2)\n"
        "count = 0\n"
        "for seen, x in enumerate(a):\n"
        "    i, below = x + OFFSET - 1, 0\n"
        "    while i > 0:\n"
        "        below += tree[i]\n"
        "        i -= i & -i\n"
        "    count += seen - below\n"
        "    i = x + OFFSET\n"
        "    while i < len(tree):\n"
        "        tree[i] += 1\n"
        "        i += i & -i\n"
        "print(count)\n",
    ),
    tests=("4\n3 1 2 1\n", "1\n0\n", "3\n1 2 3\n", "3\n2 2 2\n", "5\n5 4 3 2 1\n"),
    trivial_tests=("1\n0\n", "2\n1 2\n", "3\n1 1 2\n", "2\n-5 5\n", "3\n0 1 2\n"),
    topics=("sorting and searching", "recursion", "graphs"),
)

TOP_WORD = Problem(
    key="top_word",
    title="Most said",
    difficulty=0.3,
    tags=("strings", "counting"),
    statement=(
        "Most said. Given n words, print the word that occurs most often; among words that occur equally "
        "often, the one first in alphabetical order.\n\nInput: the first line holds n (1 <= n <= 100000), "
        "the second the n words, separated by spaces (each 1 to 10 lowercase letters).\nOutput: one line, "
        "the word.\n\nExample: for the input\n5\nb a b a c\nthe output is a."
    ),
    reference=(
        "from collections import Counter\n"
        "input()\n"
        "counts = Counter(input().split())\n"
        "print(min(counts, key=lambda w: (-counts[w], w)))\n"
    ),
    generator=(
        "import random\n"
        "size, seed = map(int, input().split())\n"
        "rng = random.Random(seed)\n"
        "vocabulary = [''.join(rng.choice('abcde') for _ in range(rng.randint(1, 3))) for _ in range(size // 3 + 2)]\n"
        "print(size)\n"
        "print(' '.join(rng.choice(vocabulary) for _ in range(size)))\n"
    ),
    validator=(
        "import sys\n"
        "lines = sys.stdin.read().split('\\n')\n"
        "n = int(lines[0])\n"
        "words = lines[1].split(' ')\n"
        "assert 1 <= n <= 100000 and len(words) == n and lines[0] == str(n)\n"
        "assert all(1 <= len(w) <= 10 and w.isalpha() and w.islower() for w in words)\n"
        "assert not any(line.strip() for line in lines[2:])\n"
    ),
    slow=(
        "input()\n"
        "words = input().split()\n"
        "best = None\n"
        "for w in sorted(words):\n"
        "    if best is None or words.count(w) > words.count(best):\n"
        "        best = w\n"
        "print(best)\n"
    ),
    wrong=(
        # breaks ties by first appearance
        "from collections import Counter\ninput()\nprint(Counter(input().split()).most_common(1)[0][0])\n",
    ),
    tests=("5\nb a b a c\n", "1\nzeta\n", "3\nq r s\n", "6\nyes no no yes yes ok\n", "4\nbb ab bb ab\n"),
    trivial_tests=("1\na\n", "2\na b\n", "3\nb a c\n", "2\na a\n", "3\nc b a\n"),
    topics=("strings", "parsing"),
)

PROBLEMS: tuple[Problem, ...] = (TOP_WORD, LONGEST_RISE, ZERO_PAIRS, MAX_SUBARRAY, INVERSIONS)
"""Every contest problem, easiest first."""


# -- the generator's side ----------------------------------------------------------------------------------


def pick(rng: random.Random, target: float, taken: set[str], focus: str | None) -> Problem | None:
    """The problem for a request on ``focus`` (one of the problem's ``topics``) not in ``taken``; with no
    focus, one near the target difficulty; None when the focus is no problem's or it is taken."""
    free = [p for p in PROBLEMS if p.key not in taken]
    if focus is not None:
        return next((p for p in free if focus in p.topics), None)
    if not free:
        return None
    return min(free, key=lambda p: (abs(p.difficulty - target) + 0.2 * rng.random(), p.key))


def task_json(problem: Problem) -> dict[str, Any]:
    """``problem`` as a generator writes a program task: statement, reference, tests, generator, validator."""
    return {
        "description": problem.statement,
        "entry_point": "",
        "reference_code": problem.reference,
        "input_generator": problem.generator,
        "input_validator": problem.validator,
        "tests": [{"input": t} for t in problem.tests],
        "difficulty": problem.difficulty,
        "tags": list(problem.tags),
    }


SPOILINGS = ("empty_output", "nondeterministic", "invalid_input", "bad_input", "weak_tests")
"""How the noisy profile spoils a problem, each named by the gate that must catch it."""


def spoil(problem: Problem, data: dict[str, Any], how: str) -> dict[str, Any]:
    """``data`` (:func:`task_json`) spoiled as a careless setter would, ``how`` one of :data:`SPOILINGS`."""
    if how == "empty_output":  # forgot to print
        return {**data, "reference_code": problem.reference.replace("print(", "str(")}
    if how == "nondeterministic":  # prints a line that hangs on the string hash seed
        return {**data, "reference_code": "print(hash('a tie') % 1000)\n" + problem.reference}
    if how == "invalid_input":  # a test beyond the stated constraints
        return {**data, "tests": [*data["tests"], {"input": "0\n\n"}]}
    if how == "bad_input":  # a test far over any input size a judge takes
        return {**data, "tests": [*data["tests"], {"input": "1\n" + "7 " * 600_000 + "\n"}]}
    # weak: no generator, and tests whose answers are all alike
    kept = {k: v for k, v in data.items() if k not in ("input_generator", "input_validator")}
    return kept | {"tests": [{"input": t} for t in problem.trivial_tests]}


# -- the solver's side -------------------------------------------------------------------------------------


def identify(text: str) -> Problem | None:
    """The problem whose statement the prompt shows (its title opens a line), or None."""
    for problem in PROBLEMS:
        if re.search(rf"(?m)^\s*{re.escape(problem.title)}\.", text):
            return problem
    return None


_SYMPTOM = re.compile(r"time ?out|timed out|time limit|too slow", re.I)


def solve(
    problem: Problem,
    rng: random.Random,
    p_solve: float,
    p_fix: Callable[[float, float], float],
    previous: str | None,
    feedback: str,
) -> str:
    """The program a solver of this skill writes: right with ``p_solve`` on a first turn, else one of
    the problem's mistakes; on a repair, a mistake is fixed with ``p_fix(p_solve, clarity)``, clarity
    1.0 when the feedback names its symptom (a timeout for the slow version; a wrong output for the
    others), 0.6 otherwise."""
    return choose(problem.reference, problem.slow, problem.mistakes, rng, p_solve, p_fix, previous, feedback)


def choose(
    right: str,
    slow: str,
    mistakes: tuple[str, ...],
    rng: random.Random,
    p_solve: float,
    p_fix: Callable[[float, float], float],
    previous: str | None,
    feedback: str,
) -> str:
    """:func:`solve`'s choice among programs in any language: ``right``, or one of ``mistakes`` (``slow``
    among them), given the ``previous`` answer (None on a first turn) and the ``feedback`` on it."""
    if previous is None:
        return right if rng.random() < p_solve else rng.choice(mistakes)
    if previous.strip() == right.strip():
        return right
    is_slow = previous.strip() == slow.strip()
    clarity = 1.0 if (bool(_SYMPTOM.search(feedback)) == is_slow and feedback) else 0.6
    if rng.random() < p_fix(p_solve, clarity):
        return right
    others = [m for m in mistakes if m.strip() != previous.strip()]
    return previous if not others or rng.random() < 0.5 else rng.choice(others)
