"""What a reference *does*, as a fingerprint: its outputs on a probe set shared by every task of the
same signature. Two tasks with the same fingerprint compute the same function on those inputs,
however different their code looks, so the run's duplicate gate rejects the second (the code-shape
gate, ``evaluator.task_fingerprint``, still catches near-copies whose behaviour differs a little).

Pure: validation runs the probes (one execution) and hands the outcomes to :func:`fingerprint`.
A signature is the arity and argument types of a task's first test input, read from the literal
(``int``, ``float``, ``str``, ``bool``, lists of those, lists of lists of ints); tasks whose
arguments are anything else get no fingerprint, and neither does a reference that raises on most
probes or returns fewer than four distinct values on them: too little evidence to call two tasks
the same.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Any

PROBES = 24
"""Probe inputs per signature: enough that two different functions rarely agree on all of them."""
PROBE_BUDGET_S = 0.25
"""CPU seconds a reference's call on a probe gets (never more than a test's budget). The probes are
small values: a reference that runs out of this on one loops there (a count of -4), and gets no
fingerprint either way; the whole test budget only burnt seconds for it (in a fake run of 32 tasks,
one such reference: 3 s, a quarter of the time its gates spent in the sandbox)."""

_VALUES: dict[str, list[Any]] = {
    "int": [0, 1, 2, 3, 5, 7, 10, 12, -1, -4, 100, 37, 4, 9, 6, 15, 8, 21, 64, 11, 13, 30, 99, 1000],
    "float": [0.0, 1.5, -2.25, 3.0, 0.1, 10.0, 2.5, -0.5, 7.75, 100.0, 4.2, 1.0],
    "bool": [True, False],
    "str": [
        "",
        "a",
        "ab",
        "abc",
        "aab",
        "hello world",
        "Racecar",
        "a1b2c3",
        "mississippi",
        "  padded  ",
        "The quick brown fox",
        "zzz",
        "abba",
        "x,y,z",
        "Hello, World!",
        "aaabbbccc",
        "OpenAI",
        "12345",
        "a b  c",
        "level",
        "1931",
        "90210",
        "a9b8c7",
        "zyx",
        "AbCdE",
        "007",
        " ",
        "x",
        "Never odd or even",
        "tab\there",
        "3 apples, 12 pears",
        "CamelCaseWord",
    ],
    "list[int]": [
        [],
        [1],
        [1, 2, 3],
        [3, 1, 2],
        [5, 5, 1],
        [-2, 0, 2],
        [10, 9, 8, 7],
        [1, 2, 2, 3, 3, 3],
        [4, -1, 6, 0, 2],
        [7, 7, 7],
        [1, 3, 5, 7, 9, 11],
        [2, 4, 1, 8, 5, 7, 3],
        [0],
        [100, -100, 50],
        [6, 1, 6, 2, 6],
        [9, 8, 1, 2, 7, 3, 6],
        [2, 2],
        [-5, -3, -8],
        [1, 2, 4, 8, 16],
        [0, 0, 1, 0],
        [12, 7, 30, 7, 1, 44, 2, 9],
    ],
    "list[str]": [
        [],
        ["a"],
        ["ab", "b"],
        ["apple", "banana", "cherry"],
        ["x", "x", "y"],
        ["Hello", "world"],
        ["", "a", ""],
        ["dog", "god", "odg", "cat"],
        ["one", "two", "three", "four"],
        ["zz", "a", "mm"],
    ],
    "list[float]": [[], [1.5], [0.5, 2.0], [3.0, -1.0, 2.5], [1.0, 1.0, 1.0], [10.0, 0.1, 5.5, 2.2]],
    "list[bool]": [[], [True], [False, True], [True, True, False]],
    "list[list[int]]": [
        [],
        [[1]],
        [[1, 2], [3, 4]],
        [[0, 1, 0], [1, 1, 1], [0, 1, 0]],
        [[5, 1], [2, 8], [3, 3]],
        [[1, 2, 3]],
        [[1], [2], [3]],
        [[0, 0], [0, 0]],
        [[2, 7, 4], [9, 1, 6], [3, 8, 5]],
    ],
}


def _type_name(value: Any) -> str | None:
    if type(value) in (int, float, str, bool):
        return type(value).__name__
    if type(value) is list:
        inner = {_type_name(v) for v in value}
        if len(inner) == 1:
            (name,) = inner
            if name is not None and not name.startswith("list[list"):
                return f"list[{name}]"
        if not value:
            return None  # an empty list says nothing about its elements
    return None


def signature(args: Sequence[Any]) -> str | None:
    """The task's signature (``"list[int],int"``), or None when an argument has no probe values."""
    names = [_type_name(a) for a in args]
    if not names or any(n is None or n not in _VALUES for n in names):
        return None
    return ",".join(n for n in names if n is not None)


def probes(sig: str) -> list[tuple[Any, ...]]:
    """The shared probe inputs of a signature: up to :data:`PROBES` distinct tuples, the same for
    every task, drawn from the product of its types' values by a generator seeded with the signature."""
    pools = [_VALUES[name] for name in sig.split(",")]
    room = math.prod(len(p) for p in pools)
    rng = random.Random(int(hashlib.sha256(sig.encode()).hexdigest()[:16], 16))
    chosen: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    while len(chosen) < min(PROBES, room):
        pick = tuple(rng.randrange(len(p)) for p in pools)
        if pick not in seen:
            seen.add(pick)
            chosen.append(pick)
    return [tuple(pool[i] for pool, i in zip(pools, pick, strict=True)) for pick in chosen]


MIN_DISTINCT = 4
"""Fewer distinct outputs than this on the probes (a near-constant function) give no fingerprint."""
MIN_PROBES = 8
"""Fewer probes than this (a signature of one ``bool``) give no fingerprint."""


def fingerprint(sig: str, outcomes: Sequence[tuple[bool, Any] | None]) -> str | None:
    """The behaviour fingerprint from the reference's (ok, output digest) on each probe, or None
    when there is too little evidence (most probes failed, or under four distinct outputs)."""
    if len(outcomes) < MIN_PROBES:
        return None
    ok = [o[1] for o in outcomes if o is not None and o[0]]
    if 2 * len(ok) < len(outcomes) or len(set(ok)) < MIN_DISTINCT:
        return None
    text = repr((sig, [(o[0], o[1]) if o is not None else None for o in outcomes]))
    return hashlib.sha256(text.encode()).hexdigest()[:20]
