"""``spade_llm.verifiers``, the path the docs name: the environment lives in ``integrations/verifiers.py``
(verifiers itself imports it as ``spade_selfplay``)."""

from .integrations.verifiers import SpadeChatHarness, SpadeEnv, SpadeTaskset, load_environment

__all__ = ["SpadeChatHarness", "SpadeEnv", "SpadeTaskset", "load_environment"]
