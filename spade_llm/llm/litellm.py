"""Any litellm-supported endpoint (vLLM, llama.cpp, Ollama, LM Studio, OpenAI, ...), hardened.

Real endpoints throttle, time out, drop connections, answer 5xx or an HTML error page, and
models answer with prose, broken JSON, nothing, or get cut off. None of that may crash a run:

* every call has an explicit timeout (litellm's default is 6000 s) and goes through
  :func:`~spade_llm.llm.retry.call_with_retries` (tenacity: exponential backoff with jitter,
  ``Retry-After`` honoured, bounded by attempts and by a time budget). litellm's own retries and
  the openai client's are switched off (``num_retries=0``, ``max_retries=0``) so nothing retries
  out of sight of ``LLMStats``;
* each exception is sorted into a fault kind (:func:`classify`): ``rate_limit``,
  ``server_error``, ``timeout``, ``connection`` and ``bad_response`` are retried,
  ``client_error`` (any other 4xx) is not. A request that fails for good raises
  ``LLMCallError(kind)``, which the generator and solver record as a failed proposal or episode;
* a 200 answer without choices is a ``bad_response`` (retried); a missing ``content`` is empty
  text, ``finish_reason`` (``length`` for truncation) is passed through, and refusals are plain
  text: judging the answer is the caller's job.

litellm is imported here only, lazily, the first time a real model is built: commands that call
no model (``--help``, ``exec``, ``verify``, ``evaluate``) never pay for its import (nor openai's).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import Any

from ..config import RoleConfig
from ..errors import LLMCallError, UserError, pip_install
from ..types import TokenUsage
from .base import LLMRequest, LLMResponse
from .transport import Transport, scrub

log = logging.getLogger("spade_llm.llm")

_litellm: Any = None

_GRACE_S = 5.0
"""Slack on top of the per-attempt timeout before our own ``asyncio.wait_for`` gives up: a guard
against a transport that ignores the timeout it was given, never the usual way a timeout ends."""

PLACEHOLDER_KEY = "sk-no-key-required"
"""Sent to an ``openai/`` model on a custom ``api_base`` when no key is set: local servers
(llama.cpp, vLLM, Ollama) need none, but the openai client refuses to start without one."""


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
    """litellm, imported once and configured to be quiet, offline at import and single-transport."""
    global _litellm
    if _litellm is None:
        load_dotenv()
        # Before the first import: otherwise litellm fetches its model price map over the network.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        try:
            import litellm
        except ImportError as e:  # pragma: no cover - litellm is a core dependency
            raise UserError(f"litellm is not installed: {pip_install()}") from e
        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner per exception
        litellm.set_verbose = False  # type: ignore[attr-defined]  # a module global litellm does not re-export
        litellm.num_retries = 0  # we retry (counted, budgeted); litellm must not retry underneath
        # One transport (httpx) in production and in the respx tests: the aiohttp transport
        # bypasses httpx, so faults tested through respx would not be the faults users hit.
        litellm.disable_aiohttp_transport = True
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx", "openai"):
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


class BadResponse(Exception):
    """A 200 answer we cannot use (no choices): retried as ``bad_response``."""


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
    "AuthenticationError": "auth",
    "PermissionDeniedError": "auth",
    "NotFoundError": "not_found",
    "ContextWindowExceededError": "client_error",
    "ContentPolicyViolationError": "client_error",
    "UnprocessableEntityError": "client_error",
    "UnsupportedParamsError": "client_error",
}

_MISSING_KEY = re.compile(
    r"api_key client option must be set|missing credentials|no api key|missing api key|api key not (found|set)", re.I
)
_REFUSED = re.compile(r"connection refused|name or service not known|nodename nor servname|failed to resolve", re.I)

# anywhere in the cause chain: the transport-level reason beats litellm's wrapper class, which
# reports a refused connection or an unparsable body as a generic InternalServerError (500)
_TIMEOUT_NAMES = {"Timeout", "APITimeoutError", "TimeoutException", "TimeoutError", "ServerTimeoutError"}
_CONNECTION_NAMES = {
    "APIConnectionError",
    "ConnectError",
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "NetworkError",
    "ClientConnectionError",
    "ServerDisconnectedError",
    "ConnectionError",
}
_BAD_BODY = re.compile(
    r"empty or invalid response|invalid json|jsondecodeerror|expecting value|unterminated string"
    r"|extra data|is not valid json|unexpected content type|<html",
    re.I,
)


def _chain(exc: BaseException, depth: int = 8) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < depth and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def classify(exc: BaseException) -> str:
    """Fault kind of an exception raised by a completion call (see the module docstring)."""
    if isinstance(exc, LLMCallError):
        return exc.kind
    if isinstance(exc, BadResponse):
        return "bad_response"
    chain = _chain(exc)
    # a 4xx/429 status on the outer exception is the server's word: trust it over its causes
    status = getattr(exc, "status_code", None)
    top = _names(exc)
    if "RateLimitError" in top or status == 429:
        return "rate_limit"
    if status in (401, 403) or any(_MISSING_KEY.search(str(e)) for e in chain):
        return "auth"
    if status == 404:
        return "not_found"
    if isinstance(status, int) and 400 <= status < 500 and status != 408 and not top & _TIMEOUT_NAMES:
        return _KINDS.get(next((c.__name__ for c in type(exc).__mro__ if c.__name__ in _KINDS), ""), "client_error")
    if any(_names(e) & _TIMEOUT_NAMES for e in chain):
        return "timeout"
    if any("ConnectError" in _names(e) or _REFUSED.search(str(e)) for e in chain):
        return "unreachable"  # refused, or no such host: nobody is there to answer
    if any(_names(e) & _CONNECTION_NAMES for e in chain):
        return "connection"
    if any(isinstance(e, ValueError) and type(e).__name__ == "JSONDecodeError" for e in chain) or any(
        _BAD_BODY.search(str(e)) for e in chain
    ):
        return "bad_response"
    for cls in type(exc).__mro__:
        if cls.__name__ in _KINDS:
            return _KINDS[cls.__name__]
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if isinstance(exc, OSError):
        return "connection"
    # anything else (an odd body tripping litellm's parser, say) is treated as a bad answer:
    # retried a few times, then the request fails and the run goes on
    return "bad_response"


_scrub = scrub  # the name older callers used


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    # litellm repeats the class: "litellm.RateLimitError: RateLimitError: OpenAIException - slow down"
    text = re.sub(r"^litellm\.\w+:\s*\w+:\s*", "", text)
    return " ".join(text.split())


class LiteLLM(Transport):
    """Chat completions through ``litellm.acompletion``: timeouts, counted retries, fault kinds.

    Several ``api_base`` values spread requests over the servers (the least busy first, at most
    ``llm.max_inflight_per_endpoint`` each); a retry goes to another one when one has room, so one
    dead replica costs a retry, not a request. Answers are not streamed here: ``timeout_s`` bounds
    each whole attempt. A server refusing ``json_schema`` by name gets ``json_object`` from then on.
    """

    def servers(self, role_config: RoleConfig) -> dict[str, str | None]:
        bases = role_config.api_base if isinstance(role_config.api_base, list) else [role_config.api_base]
        # a pool needs names: the provider's default endpoint (no api_base) is named after the model
        return {(b.rstrip("/") if b else f"default:{role_config.model}"): b for b in bases}

    def _params(self, request: LLMRequest, timeout: float, base: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": timeout,
            "max_retries": 0,  # the openai client's own retries
            "num_retries": 0,  # litellm's retry wrapper
        }
        if base:
            params["api_base"] = base
            if self.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
                params["api_key"] = PLACEHOLDER_KEY
        if not self.model.startswith("openai/"):
            # providers litellm knows to lack seed/response_format: drop them instead of failing.
            # Not for openai/: there litellm assumes every param is supported anyway, and with
            # drop_params it re-sends a request answered 422 (out of our sight) and, if that is
            # answered 422 again, returns None instead of raising.
            params["drop_params"] = True
        if request.seed is not None:
            params["seed"] = request.seed
        response_format = self.formats.param(request)
        if response_format is not None:
            params["response_format"] = response_format
        return params

    def classify(self, exc: BaseException) -> str:
        return classify(exc)

    def error_text(self, exc: BaseException) -> str:
        return _describe(exc)

    def ready(self) -> None:
        import_litellm()  # the first import, outside the retries: a missing litellm is no fault to retry

    def prepare(self, request: LLMRequest, endpoint: str, timeout: float) -> dict[str, Any]:
        return self._params(request, timeout, self.urls[endpoint])

    async def send(self, endpoint: str, sent: dict[str, Any], timeout: float) -> LLMResponse:
        litellm = import_litellm()
        response = await asyncio.wait_for(litellm.acompletion(**sent), timeout + _GRACE_S)
        return self._to_response(response, litellm)

    def refused(self, sent: dict[str, Any], exc: Exception) -> bool:
        status = getattr(exc, "status_code", None)
        said = scrub(_describe(exc), 300)
        return self.formats.refused(sent.get("response_format"), status if isinstance(status, int) else None, said)

    def _to_response(self, response: Any, litellm: Any) -> LLMResponse:
        if response is None:
            raise BadResponse("the client returned no response object")
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise BadResponse("no choices in the answer")
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        text = content if isinstance(content, str) else ""
        usage = getattr(response, "usage", None)
        tokens = TokenUsage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=self._cost(response, litellm),
        )
        finish = getattr(choice, "finish_reason", None)
        served, fingerprint = getattr(response, "model", None), getattr(response, "system_fingerprint", None)
        return LLMResponse(
            text=text,
            usage=tokens,
            finish_reason=str(finish or "stop"),
            model=self.model,
            served_model=served[:200] if isinstance(served, str) else "",
            system_fingerprint=fingerprint[:200] if isinstance(fingerprint, str) else "",
        )

    def _cost(self, response: Any, litellm: Any) -> float | None:
        """USD cost when litellm's (local) price map knows the model, else None: never guessed."""
        try:
            cost = litellm.completion_cost(completion_response=response, model=self.model)
        except Exception:
            return None
        try:
            return float(cost) if cost is not None else None
        except (TypeError, ValueError):
            return None
