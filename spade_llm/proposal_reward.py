"""``spade_llm.proposal_reward``, the path verl configs name (``pkg://spade_llm.proposal_reward``): the
generator's reward lives in ``rewards/proposal.py``."""

from .rewards.proposal import make_proposal_reward, proposal_compute_score, proposal_reward

__all__ = ["make_proposal_reward", "proposal_compute_score", "proposal_reward"]
