"""``spade_llm.trl``, the path TRL users type: the environments live in ``integrations/trl.py``."""

from .integrations.trl import AsyncSpadeCodingEnv, SpadeCodingEnv, SpadeLiveEnv, live_dataset, live_rows

__all__ = ["AsyncSpadeCodingEnv", "SpadeCodingEnv", "SpadeLiveEnv", "live_dataset", "live_rows"]
