"""Random input helpers shared by the bank's families and its pipeline exercises."""

from __future__ import annotations

import random
from typing import Any


def _size(rng: random.Random, lo: int, hi: int, scale: float) -> int:
    return rng.randint(lo, max(lo, lo + round((hi - lo) * scale)))


def _ints(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


_WORDS = (
    "apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "quiet", "zebra",
    "light", "sugar", "eagle", "index", "orbit", "umbra", "yield", "rhythm", "crypt", "banana",
    "island", "echo", "under", "violet", "garden", "lemon", "north", "pixel", "arrow", "honey",
)  # fmt: skip


def _sentence(rng: random.Random, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        word = rng.choice(_WORDS)
        if rng.random() < 0.3:
            word = word.capitalize()
        if rng.random() < 0.15:
            word = word.upper()
        words.append(word + (rng.choice(",.!?") if rng.random() < 0.2 else ""))
    return " ".join(words)


def _nested(rng: random.Random, depth: int, max_depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(rng.randint(1 if depth == 0 else 0, 4)):
        if depth < max_depth and rng.random() < 0.4:
            out.append(_nested(rng, depth + 1, max_depth))
        else:
            out.append(rng.randint(0, 99))
    return out


def _matrix(rng: random.Random, rows: int, cols: int, lo: int, hi: int) -> list[list[int]]:
    return [_ints(rng, cols, lo, hi) for _ in range(rows)]
