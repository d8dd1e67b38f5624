"""The offline fakes: the deterministic model behind ``fake/<profile>`` and the scripted test models.

``FakeLLM`` (:mod:`spade_llm.fake.model`) plays generator and solver from a bank of exercises
(:mod:`spade_llm.fake.bank`) and answers the deduction and abduction kinds
(:mod:`spade_llm.fake.kinds`); ``ScriptedLLM`` and ``FunctionLLM`` (:mod:`spade_llm.fake.scripted`)
answer exactly what a test says. The provider layer (``spade_llm.llm``) names the fake by a dotted
path in ``llm.registry.BUILTIN_MODELS`` and never imports it: the fake sits above it, and reads the
domain (kinds, the sandbox's verdicts, mutation) to play its part.

The names are imported lazily, so importing a scripted model does not build the bank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_exports

_EXPORTS = {
    "PROFILES": "spade_llm.fake.model",
    "FakeLLM": "spade_llm.fake.model",
    "Profile": "spade_llm.fake.model",
    "estimate_tokens": "spade_llm.fake.model",
    "infer_role": "spade_llm.fake.model",
    "profile_for_model": "spade_llm.fake.model",
    "FunctionLLM": "spade_llm.fake.scripted",
    "ScriptExhausted": "spade_llm.fake.scripted",
    "ScriptedLLM": "spade_llm.fake.scripted",
}

__all__ = [
    "PROFILES",
    "FakeLLM",
    "FunctionLLM",
    "Profile",
    "ScriptExhausted",
    "ScriptedLLM",
    "estimate_tokens",
    "infer_role",
    "profile_for_model",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # pragma: no cover
    from .model import PROFILES, FakeLLM, Profile, estimate_tokens, infer_role, profile_for_model
    from .scripted import FunctionLLM, ScriptedLLM, ScriptExhausted
