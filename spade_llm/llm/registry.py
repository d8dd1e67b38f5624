"""Model strings -> LLM instances, in one place, importing providers lazily.

``fake/<profile>`` is the built-in offline model; ``openai/<name>`` with an ``api_base`` (any
OpenAI-compatible server) goes through the small HTTP client in ``openai_http`` unless
``llm.transport`` is ``litellm``; anything else goes through litellm.

``BUILTIN_MODELS`` names the in-process models (the fake) by dotted path: they sit above this
layer (the fake reads the domain to play its part), so the provider layer imports them by name,
when a model string asks for one, and never from its own modules.

``missing_key`` tells, before a run starts, that a hosted provider's key is not set (the CLI makes
that exit 2 before a run directory exists, instead of an outage after the first request).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .._util.redact import MASK, masked_in, register_url_secrets
from ..config import LLMConfig, RoleConfig
from ..errors import UserError
from .base import LLM, LLMRequest, LLMResponse
from .stats import LLMStats, RoleStats

if TYPE_CHECKING:
    from .transport import Transport

BUILTIN_MODELS: dict[str, str] = {"fake": "spade_llm.fake:FakeLLM"}
"""Model-string prefixes served in-process -> the ``module:attr`` of their class, built as
``cls(profile=<the part after "/", else "default">, seed=<the run's seed>)``."""


def builtin_model(model: str) -> str | None:
    """The ``BUILTIN_MODELS`` name a model string selects (``fake`` for ``fake`` and ``fake/<profile>``),
    None for any other model."""
    name = model.split("/", 1)[0]
    return name if name in BUILTIN_MODELS else None


def _builtin_class(name: str) -> Callable[..., LLM]:
    module, _, attr = BUILTIN_MODELS[name].partition(":")
    return cast("Callable[..., LLM]", getattr(importlib.import_module(module), attr))


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
    env_keys: bool = True,
) -> LLM:
    """Build the model for one role.

    ``concurrency`` (the run's requests in flight) sizes the HTTP transport's connection pool
    (at least 64 connections). ``stats`` is where requests and faults are counted: a role's
    ``LLMStats.view`` in a run. ``env_keys`` False: no request carries a key from our environment
    (an endpoint the user did not configure, ``trainer.env_keys_allowed``): a placeholder goes instead.

    The credentials an ``api_base`` carries (user-info, a key in its query) are masked wherever this
    process writes from now on, records included (``redact.register_url_secrets``).

    Raises:
        UserError: the model string names no known provider or fake profile, ``env_keys`` is False
            for a provider whose credentials cannot be withheld (anything but ``openai/<name>``), or an
            ``api_base`` holds a credential a run recorded masked (``masked_endpoint``).
    """
    model = role_config.model.strip()
    if not model:
        raise UserError("model string is empty")
    builtin = builtin_model(model)
    if builtin is not None:
        profile = model.split("/", 1)[1] if "/" in model else "default"
        return CountingLLM(_builtin_class(builtin)(profile=profile, seed=seed), stats or LLMStats())
    masked = masked_endpoint(role_config)
    if masked is not None:
        raise UserError(masked)
    for base in role_config.api_base if isinstance(role_config.api_base, list) else [role_config.api_base]:
        register_url_secrets(base)
    if not env_keys and not model.startswith("openai/"):
        raise UserError(
            f"{model} on an endpoint the config does not name: spade sends it no key from the environment, "
            "which only an OpenAI-compatible model (openai/<name>) can be asked without; name the endpoint in "
            "the config, or pass the key to the training step (trainer.pass_env)"
        )
    direct = model.startswith("openai/") and bool(role_config.api_base)
    if llm_config.transport == "http" and not direct:
        raise UserError(f"llm.transport 'http' needs an openai/<name> model with an api_base, got '{model}'")
    llm: LLM
    if direct and llm_config.transport in ("auto", "http"):
        # an OpenAI-compatible server: plain HTTP, no litellm import (seconds per process)
        from .openai_http import OpenAIHTTP

        llm = OpenAIHTTP(
            role_config, llm_config, stats or LLMStats(), max_connections=max(64, concurrency), env_key=env_keys
        )
    else:
        from .litellm import LiteLLM, check_model_string

        check_model_string(model, role_config.api_base)
        llm = (LiteLLM if env_keys else _keyless_litellm())(role_config, llm_config, stats=stats or LLMStats())
    if llm_config.cache_dir:
        from .cache import CachedLLM

        llm = CachedLLM(llm, llm_config.cache_dir)
    return llm


def masked_endpoint(role_config: RoleConfig) -> str | None:
    """One line telling that an ``api_base`` of ``role_config`` holds ``***`` where its credential was
    (``config.yaml`` and ``manifest.json`` record none: a resumed run reads them masked), None when none
    does: sending ``***`` as the key would only fail at the endpoint."""
    bases = role_config.api_base if isinstance(role_config.api_base, list) else [role_config.api_base]
    for base in bases:
        if masked_in(base):
            return (
                f"the api_base {base} holds {MASK} where its credential was (a run records none): pass the "
                "endpoint again with --api-base, or give the key in the environment (OPENAI_API_KEY) instead "
                "of the URL"
            )
    return None


def _keyless_litellm() -> type[Transport]:
    """``LiteLLM`` that sends the placeholder key instead of the one litellm reads from the environment."""
    from .litellm import PLACEHOLDER_KEY, LiteLLM

    class KeylessLiteLLM(LiteLLM):
        def prepare(self, request: LLMRequest, endpoint: str, timeout: float) -> dict[str, Any]:
            return {**super().prepare(request, endpoint, timeout), "api_key": PLACEHOLDER_KEY}

    return KeylessLiteLLM


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


KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""The commonest hosted providers' key variables (any one will do), as litellm reads them: a missing key
for these is told in a second, before litellm's import (seconds) would tell it. Every other provider
asks litellm's own table."""


def missing_key(role_config: RoleConfig) -> str | None:
    """The environment variable the role's model needs and that is not set (``OPENAI_API_KEY``; ``A or
    B`` when either will do), None when nothing is missing or we cannot tell. A ``.env`` file in the
    working directory counts, as it does for the requests; so does an empty value (none: a ``.env``
    template's ``OPENAI_API_KEY=`` is no key).

    No key is asked for a fake model or when the role has an ``api_base``: a local server (vLLM,
    llama.cpp, Ollama behind ``openai/<name>``) needs none, and a proxy decides for itself. The
    providers of ``KEY_VARIABLES`` are answered from it; any other from litellm's
    ``validate_environment`` (a dict lookup once litellm is imported, which building the model does
    anyway right after). There only providers whose every missing variable is an ``*_API_KEY``
    count: those that also sign in another way (AWS profiles and roles for bedrock, Azure AD,
    Vertex's application credentials) or need no key at all (Ollama's base URL) are left to the
    request.
    """
    model = role_config.model.strip()
    if not model or builtin_model(model) is not None or role_config.api_base:
        return None
    from .litellm import import_litellm, load_dotenv

    load_dotenv()
    prefix = model.split("/", 1)[0] if "/" in model else ""
    known = KEY_VARIABLES.get(prefix)
    if known is not None:
        return None if any(os.environ.get(name, "").strip() for name in known) else " or ".join(known)
    litellm = import_litellm()
    try:
        missing = list(litellm.validate_environment(model=model).get("missing_keys") or [])
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception:  # an unknown model: check_model_string says so when the model is built
        return None
    if not missing and provider in KEY_VARIABLES:  # a bare name (gpt-4o-mini): litellm counts an empty key
        known = KEY_VARIABLES[provider]
        return None if any(os.environ.get(name, "").strip() for name in known) else " or ".join(known)
    if not missing or not all(name.endswith("_API_KEY") for name in missing):
        return None
    return " or ".join(missing)
