"""Model strings -> LLM instances, in one place, importing providers lazily.

``fake/<profile>`` is the built-in offline model; anything else goes through litellm
(``openai/<name>`` with an ``api_base`` reaches any OpenAI-compatible server).
"""

from __future__ import annotations

from ..config import LLMConfig, RoleConfig
from ..errors import UserError
from .base import LLM, LLMRequest, LLMResponse
from .stats import LLMStats


class CountingLLM:
    """Counts each request of an in-process model (the litellm provider counts its own attempts)."""

    def __init__(self, llm: LLM, stats: LLMStats) -> None:
        self.llm = llm
        self.model = llm.model
        self.stats = stats

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.stats.request()
        return await self.llm.complete(request)


def get_llm(role_config: RoleConfig, llm_config: LLMConfig, *, seed: int = 0, stats: LLMStats | None = None) -> LLM:
    """Build the model for one role.

    Raises:
        UserError: the model string names no known provider or fake profile.
    """
    model = role_config.model.strip()
    if not model:
        raise UserError("model string is empty")
    if model.startswith("fake/") or model == "fake":
        from .fake import FakeLLM

        profile = model.split("/", 1)[1] if "/" in model else "default"
        return CountingLLM(FakeLLM(profile=profile, seed=seed), stats or LLMStats())
    from .litellm import LiteLLM, check_model_string

    check_model_string(model, role_config.api_base)
    llm: LLM = LiteLLM(role_config, llm_config, stats=stats or LLMStats())
    if llm_config.cache_dir:
        from .cache import CachedLLM

        llm = CachedLLM(llm, llm_config.cache_dir)
    return llm
