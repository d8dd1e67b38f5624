"""verifiers' name for spade_llm's environment: the id ``spade-selfplay`` (``vf-eval spade-selfplay``,
``vf.load_environment``) is imported as this module, whose ``__all__`` names the taskset, the env and the
harness (``spade_llm.verifiers``, ``pip install 'spade-selfplay[verifiers]'``)."""

from spade_llm.integrations.verifiers import SpadeChatHarness, SpadeEnv, SpadeTaskset, load_environment

__all__ = ["SpadeChatHarness", "SpadeEnv", "SpadeTaskset", "load_environment"]
