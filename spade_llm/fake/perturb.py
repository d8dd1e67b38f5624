"""One plausible wrong value, for the fake's deliberate mistakes in values (not in code)."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["perturb"]


def perturb(value: Any, rng: random.Random, *, vary_text: bool) -> Any:
    """A plausible wrong value of the same shape as ``value``.

    A number moves (an int by one either way, a float by 0.5), a bool flips, a list or tuple loses its
    last item (an empty one becomes ``[0]``), a dict empties (an empty one becomes ``{"x": 1}``),
    None becomes 0 and anything else None. A string gets one more ``"x"`` when ``vary_text`` is false;
    when true it loses its last character or gains one of ``a``, `` ``, ``x``, at random.

    ``vary_text`` is the one way the two callers differ, kept so that their answers stay what they
    were: the noisy generator's broken ``expected`` values (:mod:`spade_llm.fake.noisy`, false) draw
    nothing from ``rng`` for a string, the deduction answers' wrong predictions
    (:mod:`spade_llm.fake.kinds`, true) draw once or twice, and one draw more or less would change
    every later choice of the same request. (The rest agrees on what each caller receives: the
    generator's values survive JSON, so it never meets a tuple or a type outside JSON's.)
    """
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((-1, 1))
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        if not vary_text:
            return value + "x"
        return value[:-1] if value and rng.random() < 0.5 else value + rng.choice("ax ")
    if isinstance(value, (list, tuple)):
        return list(value[:-1]) if value else [0]
    if isinstance(value, dict):
        return {} if value else {"x": 1}
    return 0 if value is None else None
