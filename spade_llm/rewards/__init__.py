"""Rewards a trainer calls, on the loop's own judge: the solver's (``code_reward`` for TRL,
``compute_score`` for verl: ``reward.custom_reward_function.path=pkg://spade_llm.rewards``) in
``code.py``, the generator's (``proposal_reward``, ``proposal_compute_score``) in ``proposal.py``, and
the ground truth both read (``groundtruth.py``; the field's shapes of it: ``field_formats.py``). The
generator's are imported on first use: they build a whole solver (models, templates) that judging an
answer never needs."""

from __future__ import annotations

from .._util.lazy import lazy_exports
from .code import *  # noqa: F403 (the solver's rewards are this package's public face)
from .code import __all__ as _code_all

_PROPOSAL = ("make_proposal_reward", "proposal_compute_score", "proposal_reward")
__all__ = [*_code_all, *_PROPOSAL]
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_PROPOSAL, f"{__name__}.proposal"), globals(), __all__)
