"""Which kind each of an epoch's generator requests asks for, and which language each whole-program
episode answers in, from weighted mixes.

``curriculum.kinds`` is a mix such as ``{induction: 0.6, deduction: 0.2, abduction: 0.2}`` (the
old list form, e.g. ``[induction, deduction]``, means equal weights; a repeated name counts
twice). ``allocate_kinds`` turns it into one kind per request, a pure function of its arguments so
that a resumed run plans the same epoch again:

* counts by largest remainder (16 requests at 0.6/0.2/0.2 give 10/3/3), so each count is within
  one of its share whenever every share is at least one request;
* every kind with a positive weight gets at least one request when there are at least as many
  requests as such kinds (taken from the kind furthest above its share): a small weight is a
  request to see that kind, not a rounding error;
* ties between equal remainders are broken by a hash of (seed, epoch, kind), so with fewer
  requests than kinds the epochs take turns rather than always dropping the same kind;
* the requests of each kind are spread evenly over the list (10/3/3 interleaves), the order a
  pure function of the counts and the mix's order.

``curriculum.languages`` is a mix of the same shape (``{cpp: 1, python: 1}``, or a list), read by the same
``normalize_mix``. An episode's answer language (``episode_language``) is drawn per episode rather than per
request, from the episode's own key, so it never depends on which episode ran or finished first:

* a task's ``samples`` episodes (``solver.samples_per_task``) are a systematic sample of the mix: one
  point in each of ``samples`` equal slices of [0, 1), all shifted by a hash of (seed, epoch, task id),
  each point naming the language whose share of [0, 1) holds it; so with K samples a language of weight
  share ``w`` gets ``floor(K w)`` or ``ceil(K w)`` of them, and over tasks exactly its share on average
  (one sample a task: each task draws by the hash alone);
* sample indices past ``samples`` start another such block with a shift of its own;
* the languages' slices are laid out in name order, so writing the mix in another order changes nothing.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping

__all__ = ["allocate_kinds", "episode_language", "normalize_mix"]


def normalize_mix(kinds: Mapping[str, float] | Iterable[str], what: str = "kind") -> dict[str, float]:
    """The mix as ``{name: weight}`` in its given order; a list of names gives each name one
    weight per mention. ValueError for a negative or non-finite weight, or no positive weight
    (``what`` names the mix's members in the message: ``kind``, ``language``)."""
    mix: dict[str, float] = {}
    if isinstance(kinds, Mapping):
        for name, weight in kinds.items():
            mix[str(name)] = float(weight)
    else:
        for name in kinds:
            mix[str(name)] = mix.get(str(name), 0.0) + 1.0
    for name, weight in mix.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{what} {name!r}: weight must be a finite number >= 0, got {weight}")
    if not any(w > 0 for w in mix.values()):
        raise ValueError(f"the {what} mix needs at least one {what} with a positive weight")
    top = max(mix.values())
    return {name: weight / top for name, weight in mix.items()}  # 1e308 + 1e308 must not overflow


def _tie_break(seed: int, epoch: int, kind: str) -> int:
    digest = hashlib.sha256(f"{seed}:{epoch}:{kind}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _counts(mix: dict[str, float], n: int, epoch: int, seed: int) -> dict[str, int]:
    total = sum(mix.values())
    live = [k for k, w in mix.items() if w > 0]
    quota = {k: mix[k] * n / total for k in live}
    counts = {k: math.floor(quota[k]) for k in live}
    left = n - sum(counts.values())
    by_remainder = sorted(live, key=lambda k: (-(quota[k] - counts[k]), _tie_break(seed, epoch, k)))
    for k in by_remainder[:left]:
        counts[k] += 1
    if n >= len(live):
        for k in live:
            if counts[k] == 0:
                donors = [d for d in live if counts[d] >= 2]  # one exists: n >= len(live) and k has none
                donor = max(donors, key=lambda d: (counts[d] - quota[d], counts[d], -_tie_break(seed, epoch, d)))
                counts[donor] -= 1
                counts[k] = 1
    return counts


def allocate_kinds(mix: Mapping[str, float] | Iterable[str], n: int, epoch: int, seed: int) -> list[str]:
    """One kind for each of ``n`` requests (see the module docstring); deterministic."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    weights = normalize_mix(mix)
    if n == 0:
        return []
    counts = _counts(weights, n, epoch, seed)
    order = {k: i for i, k in enumerate(weights)}
    slots = [((i + 0.5) / c, order[k], k) for k, c in counts.items() for i in range(c)]
    return [k for _, _, k in sorted(slots)]


def _unit(*key: object) -> float:
    """A number in [0, 1) from the key's sha256: the same key, the same number, in every process."""
    digest = hashlib.sha256(":".join(map(str, key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def episode_language(
    mix: Mapping[str, float] | Iterable[str],
    *,
    seed: int,
    epoch: int,
    task_id: str,
    sample_index: int,
    samples: int = 1,
) -> str:
    """The answer language of one episode, from its key alone (the module docstring); deterministic.

    ``samples``: the task's episodes (``solver.samples_per_task``), over which the languages are spread."""
    weights = normalize_mix(mix, "language")
    live = sorted(name for name, weight in weights.items() if weight > 0)
    if len(live) == 1:
        return live[0]
    block, slot = divmod(max(0, sample_index), max(1, samples))
    point = (slot + _unit(seed, epoch, task_id, block)) / max(1, samples)
    total = sum(weights[name] for name in live)
    edge = 0.0
    for name in live:
        edge += weights[name] / total
        if point < edge:
            return name
    return live[-1]  # a rounding short of 1.0 at the last edge
