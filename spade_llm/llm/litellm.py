"""Any litellm-supported endpoint (vLLM, llama.cpp, Ollama, LM Studio, OpenAI, ...).

litellm is imported here only, lazily, the first time a real model is built: commands that call
no model (``exec``, ``verify``, ``evaluate``) never pay for its import.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from typing import Any

from ..config import LLMConfig, RoleConfig
from ..errors import LLMCallError, UserError
from ..types import TokenUsage
from .base import LLMRequest, LLMResponse
from .stats import LLMStats

log = logging.getLogger("spade_llm.llm")

_litellm: Any = None

ALLOW_MODEL_REQUESTS = True
"""Tests set this to False (tests/conftest.py) so no test reaches a real model by accident."""


def load_dotenv(path: str = ".env") -> None:
    """Read KEY=VALUE lines of a ``.env`` file into the environment (set variables win)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(key.strip(), value)


def import_litellm() -> Any:
    global _litellm
    if _litellm is None:
        load_dotenv()
        # Without this litellm fetches a price map over the network at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError as e:  # pragma: no cover - litellm is a core dependency
            raise UserError("litellm is not installed: pip install spade_llm") from e
        litellm.suppress_debug_info = True
        litellm.drop_params = True  # servers that lack seed/response_format just ignore them
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _litellm = litellm
    return _litellm


def check_model_string(model: str, api_base: str | list[str] | None) -> None:
    """Raise UserError unless litellm knows how to reach ``model``."""
    litellm = import_litellm()
    base = api_base[0] if isinstance(api_base, list) else api_base
    try:
        litellm.get_llm_provider(model=model, api_base=base)
    except Exception:
        raise UserError(
            f"unknown model '{model}': use openai/<name> with --api-base for an OpenAI-compatible server, "
            "fake/<profile> for the offline model, or any litellm provider/model string"
        ) from None


# exception class name (litellm maps every provider's errors onto openai-style classes) -> fault kind
_KINDS = {
    "RateLimitError": "rate_limit",
    "Timeout": "timeout",
    "APITimeoutError": "timeout",
    "APIConnectionError": "connection",
    "ServiceUnavailableError": "server_error",
    "InternalServerError": "server_error",
    "BadGatewayError": "server_error",
    "APIError": "server_error",
    "JSONSchemaValidationError": "bad_response",
    "APIResponseValidationError": "bad_response",
    "BadRequestError": "client_error",
    "AuthenticationError": "client_error",
    "PermissionDeniedError": "client_error",
    "NotFoundError": "client_error",
    "ContextWindowExceededError": "client_error",
    "ContentPolicyViolationError": "client_error",
    "UnprocessableEntityError": "client_error",
}
RETRYABLE = {"rate_limit", "timeout", "connection", "server_error", "bad_response"}


def classify(exc: BaseException) -> str:
    """Fault kind of an exception raised by a completion call."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _KINDS:
            return _KINDS[cls.__name__]
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limit"
        if status >= 500:
            return "server_error"
        if 400 <= status < 500:
            return "client_error"
    if isinstance(exc, (TimeoutError,)):
        return "timeout"
    if isinstance(exc, (ConnectionError, OSError)):
        return "connection"
    return "bad_response"


def _scrub(text: str) -> str:
    """Error text without anything that looks like a credential."""
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LITELLM_API_KEY"):
        secret = os.environ.get(key)
        if secret:
            text = text.replace(secret, "***")
    return text[:300]


class LiteLLM:
    """Chat completions through ``litellm.acompletion`` with bounded, jittered retries."""

    def __init__(self, role_config: RoleConfig, llm_config: LLMConfig, stats: LLMStats) -> None:
        self.model = role_config.model
        self.role_config = role_config
        self.llm_config = llm_config
        self.stats = stats
        bases = role_config.api_base if isinstance(role_config.api_base, list) else [role_config.api_base]
        self._bases = itertools.cycle(bases)

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.llm_config.timeout_s,
        }
        base = next(self._bases)
        if base:
            params["api_base"] = base
        if request.seed is not None:
            params["seed"] = request.seed
        if request.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    async def complete(self, request: LLMRequest) -> LLMResponse:
        import asyncio

        if not ALLOW_MODEL_REQUESTS:
            raise RuntimeError(f"real model requests are blocked in tests (model {self.model})")
        litellm = import_litellm()
        attempts = self.llm_config.max_retries + 1
        for attempt in range(attempts):
            self.stats.request()
            try:
                response = await litellm.acompletion(**self._params(request))
                return self._to_response(response)
            except Exception as exc:
                kind = classify(exc)
                if kind not in RETRYABLE or attempt == attempts - 1:
                    self.stats.failure(kind)
                    raise LLMCallError(f"{self.model}: {kind}: {_scrub(str(exc))}", kind=kind) from None
                self.stats.retry(kind)
                delay = min(30.0, self.llm_config.backoff_s * 2**attempt) * (0.5 + random.random() / 2)
                log.info("retrying %s after %s (%.1fs)", self.model, kind, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _to_response(self, response: Any) -> LLMResponse:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMCallError(f"{self.model}: bad_response: no choices in the answer", kind="bad_response")
        choice = choices[0]
        text = getattr(choice.message, "content", None) or ""
        usage = getattr(response, "usage", None)
        tokens = TokenUsage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )
        return LLMResponse(text=text, usage=tokens, finish_reason=str(choice.finish_reason or "stop"), model=self.model)
