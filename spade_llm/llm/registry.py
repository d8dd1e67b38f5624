"""Model strings -> LLM instances, in one place, importing providers lazily.

``fake/<profile>`` is the built-in offline model; ``openai/<name>`` with an ``api_base`` (any
OpenAI-compatible server) goes through the small HTTP client in ``openai_http`` unless
``llm.transport`` is ``litellm``; anything else goes through litellm.
"""

from __future__ import annotations

from ..config import LLMConfig, RoleConfig
from ..errors import UserError
from .base import LLM, LLMRequest, LLMResponse
from .stats import LLMStats, RoleStats


class CountingLLM:
    """Counts each request of an in-process model (the litellm provider counts its own attempts)."""

    def __init__(self, llm: LLM, stats: LLMStats | RoleStats) -> None:
        self.llm = llm
        self.model = llm.model
        self.stats = stats

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.stats.request()
        return await self.llm.complete(request)


def get_llm(
    role_config: RoleConfig,
    llm_config: LLMConfig,
    *,
    seed: int = 0,
    stats: LLMStats | RoleStats | None = None,
    concurrency: int = 0,
) -> LLM:
    """Build the model for one role.

    ``concurrency`` (the run's requests in flight) sizes the HTTP transport's connection pool
    (at least 64 connections). ``stats`` is where requests and faults are counted: a role's
    ``LLMStats.view`` in a run.

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
    direct = model.startswith("openai/") and bool(role_config.api_base)
    if llm_config.transport == "http" and not direct:
        raise UserError(f"llm.transport 'http' needs an openai/<name> model with an api_base, got '{model}'")
    llm: LLM
    if direct and llm_config.transport in ("auto", "http"):
        # an OpenAI-compatible server: plain HTTP, no litellm import (seconds per process)
        from .openai_http import OpenAIHTTP

        llm = OpenAIHTTP(role_config, llm_config, stats or LLMStats(), max_connections=max(64, concurrency))
    else:
        from .litellm import LiteLLM, check_model_string

        check_model_string(model, role_config.api_base)
        llm = LiteLLM(role_config, llm_config, stats=stats or LLMStats())
    if llm_config.cache_dir:
        from .cache import CachedLLM

        llm = CachedLLM(llm, llm_config.cache_dir)
    return llm


async def aclose_llm(llm: object) -> None:
    """Close the pooled connections of ``llm`` or of the model it wraps (``CachedLLM.inner``,
    ``CountingLLM.llm``, ``LimitedLLM.llm``); a model without a pool is left alone. Call it from the
    loop that made the requests, before ``asyncio.run`` returns: otherwise the sockets die with the loop."""
    seen: set[int] = set()
    while llm is not None and id(llm) not in seen:
        seen.add(id(llm))
        close = getattr(llm, "aclose", None)
        if close is not None:
            await close()
            return
        llm = getattr(llm, "inner", None) or getattr(llm, "llm", None)
