"""The nearest accepted task by code shape, at about the same cost at a million tasks as at a thousand.

What the duplicate gate (``dedup.py``) and the novelty metric ask: of the tasks added so far (of one kind,
or of any), which has the highest Jaccard similarity to this shape, and how high is it? A full scan
answers in time linear in the run, so a run's total cost would grow with its square. Here the last
``window`` entries are compared exactly, one by one; older ones are found through a MinHash LSH index
(``datasketch``'s MinHash, imported only once a run outgrows the window, cut into bands kept in a
compact table: :class:`BandTable`) and every candidate it returns is verified exactly. So:

- a similarity reported is always the exact Jaccard similarity, and a run of at most ``window`` tasks
  gets the answers of a full scan, the same decisions and the same metrics;
- past the window, only a miss is possible: an older entry at least as similar as the gate's threshold
  is missed with probability under :data:`MISS_AT_THRESHOLD` (the bands are chosen so,
  :func:`lsh_bands`); one at similarity ``s`` below the threshold with probability ``(1 - s**r)**b``
  (0.07 at 0.7 and 0.72 at 0.5 for the default threshold of 0.9), which can only make a novelty
  read higher than a full scan's. ``benchmarks/bench_dedup.py`` measures both against a full scan.
"""

from __future__ import annotations

import sys
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Shape = frozenset[int]
"""A code fingerprint with each shingle as a 64-bit hash (``dedup.shape``): sets of ints compare fast."""

WINDOW = 1000
"""How many of the latest entries are compared exactly; older ones are searched through the LSH index."""
NUM_PERM = 128
"""MinHash permutations per shape: the LSH bands are cut from them."""
MISS_AT_THRESHOLD = 1e-6
"""The highest chance that the LSH misses an older entry exactly as similar as the threshold."""
MINHASH_SEED = 1
"""The permutations' seed: fixed, so the same run asks the same questions of the same buckets."""
TAIL = 1 << 16
"""Band keys added to a :class:`BandTable` before they are merged into its sorted arrays."""


def lsh_bands(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(bands, rows) for an LSH over ``num_perm`` permutations: the most rows per band (the fewest
    dissimilar candidates to verify) for which an entry as similar as ``threshold`` is missed with
    probability at most :data:`MISS_AT_THRESHOLD` (it is missed when no band matches whole)."""
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if (1.0 - threshold**rows) ** bands <= MISS_AT_THRESHOLD:
            best = (bands, rows)
    return best


def jaccard(a: Shape, b: Shape | array[int]) -> float:
    """Jaccard similarity of two shapes (1.0 for two empty ones), the same float a full scan computes."""
    common = len(a.intersection(b))
    union = len(a) + len(b) - common
    return common / union if union else 1.0


@dataclass(frozen=True)
class Nearest:
    """The nearest entry found: its key and its exact similarity (ties go to the latest added)."""

    key: str
    similarity: float


class BandTable:
    """LSH buckets: each entry's band keys (one 64-bit key per band), asked for the entries sharing any.

    ``datasketch``'s ``MinHashLSH`` keeps a Python dict entry, bytes and a set per band and entry, some
    5 KB an entry: 5 GB at a million tasks. Here the keys of the first entries are two sorted numpy
    arrays (key, entry), 12 bytes a band and entry, searched with ``searchsorted``; the latest ones wait
    in a small dict until :data:`TAIL` keys have come, then are merged in (a linear merge, so a million
    entries cost a few seconds of merging in all)."""

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self._keys: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)
        self._entries: NDArray[np.uint32] = np.empty(0, dtype=np.uint32)
        self._tail: dict[int, list[int]] = {}
        self._tail_size = 0

    def add(self, keys: list[int], entry: int) -> None:
        for key in keys:
            self._tail.setdefault(key, []).append(entry)
        self._tail_size += len(keys)
        if self._tail_size >= TAIL:
            self._merge()

    def query(self, keys: list[int]) -> set[int]:
        """Every entry with at least one of ``keys``."""
        np = self._np
        found: set[int] = set()
        if len(self._keys):
            wanted = np.array(keys, dtype=np.uint64)
            lo = np.searchsorted(self._keys, wanted, side="left")
            hi = np.searchsorted(self._keys, wanted, side="right")
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
                if b > a:
                    found.update(self._entries[a:b].tolist())
        for key in keys:
            found.update(self._tail.get(key, ()))
        return found

    def _merge(self) -> None:
        np = self._np
        pairs = sorted((key, entry) for key, entries in self._tail.items() for entry in entries)
        keys = np.fromiter((k for k, _ in pairs), dtype=np.uint64, count=len(pairs))
        entries = np.fromiter((e for _, e in pairs), dtype=np.uint32, count=len(pairs))
        at = np.searchsorted(self._keys, keys, side="right")
        self._keys = np.insert(self._keys, at, keys)
        self._entries = np.insert(self._entries, at, entries)
        self._tail, self._tail_size = {}, 0


class ShapeIndex:
    """Shapes added in order, each with a key and a kind, searched for the most similar one."""

    def __init__(self, threshold: float, window: int = WINDOW) -> None:
        """``threshold``: the similarity the gate calls a duplicate, which the LSH must not miss;
        ``window``: how many of the latest entries are compared exactly."""
        if window < 1:
            raise ValueError("the exact window holds at least one entry")
        self.threshold = threshold
        self.window = window
        self._keys: list[str] = []
        self._kinds: list[str] = []
        self._counted: list[bool] = []
        self._recent: deque[tuple[int, Shape]] = deque()
        """(sequence number, shape) of the latest ``window`` entries, oldest first."""
        self._older = array("Q")
        """The shapes of the entries past the window (entries leave it in order), one after the other, as
        sorted 64-bit ints: no object per entry."""
        self._starts = array("Q", [0])
        """Where each older entry's shape starts in ``_older`` (and, last, where the next one will)."""
        self._buckets: BandTable | None = None
        self._permutations: Any = None
        self._fold: Any = None
        self._bands = lsh_bands(threshold)

    def add(self, key: str, kind: str, shape: Shape, *, counted: bool = True) -> int:
        """Add an entry and return its sequence number; ``counted=False`` keeps it out of :meth:`nearest`
        with ``counted_only`` (a held-out task the gate must see, which the run's own novelty does not
        count)."""
        seq = len(self._keys)
        self._keys.append(sys.intern(key))  # one string per id and kind, shared with what the run keeps
        self._kinds.append(sys.intern(kind))
        self._counted.append(counted)
        self._recent.append((seq, shape))
        if len(self._recent) > self.window:
            old_seq, old_shape = self._recent.popleft()
            self._retire(old_seq, old_shape)
        return seq

    def shape(self, seq: int) -> Shape:
        """The shape of entry ``seq``."""
        if seq < len(self._starts) - 1:
            return frozenset(self._older_shape(seq))
        first = self._recent[0][0]
        return self._recent[seq - first][1]

    def nearest(
        self,
        shape: Shape,
        *,
        kind: str | None = None,
        before: int | None = None,
        counted_only: bool = False,
        at_least: float = 0.0,
    ) -> Nearest | None:
        """The most similar entry (of ``kind``, when given; among the first ``before`` entries, when
        given; only counted ones with ``counted_only``), or None when there is none to compare. With
        ``at_least``, entries that cannot be that similar are skipped unread (the gate's question: a
        set ``n`` times the size of another is at most ``1/n`` similar to it), so None or a nearer
        entry below it may come back instead of the true nearest."""
        limit = len(self._keys) if before is None else before
        size = len(shape)
        best: tuple[float, int] | None = None
        for seq, other in self._candidates(shape):
            if seq >= limit or (kind is not None and self._kinds[seq] != kind):
                continue
            if counted_only and not self._counted[seq]:
                continue
            if at_least and min(size, len(other)) < at_least * max(size, len(other)):
                continue
            score = jaccard(shape, other)
            if best is None or (score, seq) > best:
                best = (score, seq)
        return Nearest(self._keys[best[1]], best[0]) if best is not None else None

    def _candidates(self, shape: Shape) -> Iterator[tuple[int, Shape | array[int]]]:
        """Every entry in the window, then the LSH's candidates among older ones, each with its shape."""
        yield from self._recent
        if self._buckets is not None and shape:
            for seq in self._buckets.query(self._band_keys(shape)):
                yield seq, self._older_shape(seq)

    def _older_shape(self, seq: int) -> array[int]:
        return self._older[self._starts[seq] : self._starts[seq + 1]]

    def _retire(self, seq: int, shape: Shape) -> None:
        """Move an entry out of the exact window: into the LSH buckets, its shape kept compact for verifying."""
        self._older.extend(sorted(shape))
        self._starts.append(len(self._older))
        if not shape:  # nothing to hash: an empty shape is only similar to another empty one, rare enough to miss
            return
        if self._buckets is None:
            self._buckets = BandTable()
        self._buckets.add(self._band_keys(shape), seq)

    def _band_keys(self, shape: Shape) -> list[int]:
        """The shape's MinHash cut into bands, each band's rows folded into one 64-bit key (two equal bands
        give equal keys; unequal ones collide with chance ~2**-64, and a collision is only one more
        candidate verified)."""
        from datasketch import MinHash

        if self._permutations is None:
            self._permutations = MinHash(
                num_perm=NUM_PERM, seed=MINHASH_SEED, hashfunc=int, scheme="affine64"
            ).permutations
        sketch = MinHash(num_perm=NUM_PERM, hashfunc=int, scheme="affine64", permutations=self._permutations)
        sketch.update_batch(sorted(shape))
        import numpy as np

        bands, rows = self._bands
        if self._fold is None:  # odd multipliers for a band's rows, a salt per band: fixed, as the seed
            constants = np.random.default_rng(MINHASH_SEED).integers(0, 2**63, size=(2, NUM_PERM), dtype=np.uint64)
            self._fold = constants * np.uint64(2) + np.uint64(1)
        values = sketch.hashvalues[: bands * rows].astype(np.uint64).reshape(bands, rows)
        with np.errstate(over="ignore"):  # the fold wraps around 2**64, as it should
            folded = (values * self._fold[0, :rows]).sum(axis=1, dtype=np.uint64) ^ self._fold[1, :bands]
        return [int(key) for key in folded.tolist()]
