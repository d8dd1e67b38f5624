"""A direct OpenAI-compatible chat transport: ``openai/<name>`` on an ``api_base``, without litellm.

Why it exists: importing litellm costs seconds per process (it pulls in openai, pydantic models
for every provider, tokenizers' metadata...). Against a local OpenAI-compatible server (vLLM,
llama.cpp, Ollama's ``/v1``, LM Studio) that fixed cost dominates a short run, and litellm adds
nothing there: the wire format is plain ``POST {api_base}/chat/completions``. This module
speaks that format with one pooled ``httpx.AsyncClient`` and nothing else; every other provider
(OpenAI without an ``api_base``, ``anthropic/...``, ``ollama_chat/...``) keeps going through
:mod:`spade_llm.llm.litellm`.

It is hardened exactly as the litellm provider is, and shares its pieces so the two behave the same:

* retries go through :func:`~spade_llm.llm.retry.call_with_retries` with the run's
  :class:`~spade_llm.llm.retry.RetryPolicy` (same budget, backoff, jitter and ``Retry-After``
  handling), and are counted in the same :class:`~spade_llm.llm.stats.LLMStats`: each attempt
  is a request, each retry and the final failure are counted by kind;
* faults get the same kinds (:func:`classify`): 429 is ``rate_limit``, 408 ``timeout``, 5xx
  ``server_error``, a transport timeout ``timeout``, a refused or dropped connection
  ``connection``, a 2xx body that is not JSON or has no usable ``choices`` ``bad_response``
  (all retried); any other 4xx (and 3xx, a misconfigured ``api_base``) is ``client_error``
  and fails at once with ``LLMCallError``;
* error text is passed through the litellm provider's ``scrub`` (no key ever in a message),
  several ``api_base`` values are used round robin (a retry goes to the next one), and a local
  server without ``OPENAI_API_KEY`` gets the same placeholder key.

The ``spade_llm.llm.litellm`` module imported here does not import litellm itself (that happens
lazily in ``import_litellm``), so importing this module costs httpx and nothing heavier.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import socket
from typing import Any

import httpx

from ..config import LLMConfig, RoleConfig
from ..errors import LLMCallError, UserError
from ..types import TokenUsage
from . import litellm as _provider
from .base import LLMRequest, LLMResponse
from .litellm import PLACEHOLDER_KEY, BadResponse, load_dotenv, policy_from_config, scrub
from .retry import RetryPolicy, complete_with_retries
from .stats import LLMStats

log = logging.getLogger("spade_llm.llm")

__all__ = ["OpenAIHTTP", "StatusError", "classify", "parse_completion"]

_GRACE_S = 5.0
"""Slack on top of the per-attempt timeout before our own ``asyncio.wait_for`` gives up. httpx's
timeouts bound each connect/read/write step, not the whole exchange: a server trickling bytes
could otherwise hold an attempt far past ``timeout_s``."""

KEEPALIVE_EXPIRY_S = 4.0
"""Idle pooled connections are dropped after this long. Under uvicorn's (vLLM's) 5 s keep-alive
timeout on purpose: reusing a connection the server is closing at that moment fails the request
with a dropped connection, a retry we would count for nothing."""

_SNIPPET = 200
"""Characters of an unusable body quoted in an error message."""


class StatusError(Exception):
    """A non-2xx answer. Carries ``status_code`` and the response ``headers`` (an ``httpx.Headers``,
    case-insensitive), which is where :func:`~spade_llm.llm.retry.retry_after_seconds` looks for
    ``Retry-After`` / ``retry-after-ms``."""

    def __init__(self, status_code: int, message: str, headers: httpx.Headers) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.headers = headers


def classify(exc: BaseException) -> str:
    """Fault kind of an exception raised by one attempt (see the module docstring)."""
    if isinstance(exc, LLMCallError):
        return exc.kind
    if isinstance(exc, StatusError):
        status = exc.status_code
        if status == 429:
            return "rate_limit"
        if status == 408:
            return "timeout"
        if status >= 500:
            return "server_error"
        if status in (401, 403):
            return "auth"
        if status == 404:
            return "not_found"  # no such model, or the api_base lacks /v1
        return "client_error"  # other 4xx, and 3xx: httpx does not follow redirects, the base is wrong
    if isinstance(exc, BadResponse):
        return "bad_response"
    if isinstance(exc, httpx.TimeoutException | asyncio.TimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError | httpx.InvalidURL):
        return "client_error"  # our request or URL is malformed: sending it again will not help
    if isinstance(exc, httpx.ConnectError | ConnectionRefusedError | socket.gaierror):
        return "unreachable"  # refused, or no such host: nobody is there to answer
    if isinstance(exc, httpx.TransportError | OSError):
        return "connection"  # ConnectError, ReadError, WriteError, RemoteProtocolError (a dropped connection)...
    return "bad_response"  # anything else tripped over the answer: retried a few times, then the run goes on


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, httpx.TransportError) and type(exc).__name__ not in text:
        text = f"{type(exc).__name__}: {text}"
    return " ".join(text.split())


def _snippet(response: httpx.Response) -> str:
    return " ".join(response.text[:_SNIPPET].split()) or "(empty body)"


def _error_message(response: httpx.Response) -> str:
    """The server's own words: ``error.message`` of an OpenAI-style error body, else the body's start."""
    try:
        body = response.json()
    except ValueError:
        return _snippet(response)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        if body.get("detail"):  # FastAPI-style servers
            return str(body["detail"])
    return _snippet(response)


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def parse_completion(response: httpx.Response, model: str) -> LLMResponse:
    """An ``LLMResponse`` from a 2xx chat completion; ``BadResponse`` when the body is unusable.

    Unusable: not JSON (an HTML page from a proxy, half a body), not an object, no ``choices``
    or an empty list, a choice without a ``message`` object, or content that is neither text,
    null nor a list of parts. A null content is empty text and ``finish_reason`` is passed
    through (``length`` for a truncated answer): judging the text is the caller's job.
    """
    try:
        data = json.loads(response.content)
    except ValueError:
        ctype = response.headers.get("content-type", "no content-type")
        raise BadResponse(f"answer is not JSON ({ctype}): {_snippet(response)}") from None
    if not isinstance(data, dict):
        raise BadResponse(f"answer is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        detail = f": {error.get('message') if isinstance(error, dict) else error}" if error else ""
        raise BadResponse(f"no choices in the answer{detail}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BadResponse("the first choice has no message object")
    content = message.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content parts: keep the text ones
        text = "".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content)
    else:
        raise BadResponse(f"message content is a {type(content).__name__}, not text")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens = TokenUsage(
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cost=None,
    )
    finish = choice.get("finish_reason")
    return LLMResponse(text=text, usage=tokens, finish_reason=str(finish or "stop"), model=model)


def _bases(api_base: str | list[str] | None) -> list[str]:
    bases = api_base if isinstance(api_base, list) else [api_base]
    out = []
    for base in bases:
        if not base or not base.strip():
            raise UserError("api_base is empty: the direct OpenAI-compatible transport needs a server URL")
        base = base.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise UserError(f"api_base must start with http:// or https://, got {scrub(base, 100)!r}")
        out.append(base)
    return out


class OpenAIHTTP:
    """Chat completions over plain HTTP to an OpenAI-compatible server: pooled keep-alive, counted retries.

    ``max_connections`` bounds the connection pool; keep it at least the run's concurrency, or
    requests queue for a connection (and a long queue ends in a pool timeout, counted as
    ``timeout``). One ``httpx.AsyncClient`` serves an event loop; calling from another loop
    (a second ``asyncio.run``) gets a fresh client. :meth:`aclose` closes the pool.
    """

    def __init__(
        self,
        role_config: RoleConfig,
        llm_config: LLMConfig,
        stats: LLMStats,
        policy: RetryPolicy | None = None,
        *,
        max_connections: int = 64,
    ) -> None:
        self.model = role_config.model
        self.role_config = role_config
        self.llm_config = llm_config
        self.stats = stats
        self.policy = policy or policy_from_config(llm_config)
        self.timeout_s = float(llm_config.timeout_s)
        self.max_connections = max(1, int(max_connections))
        self.wire_model = self.model.removeprefix("openai/")
        """The model name the server sees: the part after ``openai/``, as litellm sends it."""
        self.bases = _bases(role_config.api_base)
        self._next_base = itertools.cycle(self.bases)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client_for_loop(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            # a client's pooled connections belong to the loop that opened them: a new loop needs a new
            # client (the old one's loop is gone, so it cannot be closed from here; its sockets go with it)
            load_dotenv()  # OPENAI_API_KEY from .env, as the litellm provider reads it
            self._client = httpx.AsyncClient(
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=self.max_connections,
                    keepalive_expiry=KEEPALIVE_EXPIRY_S,
                ),
                timeout=httpx.Timeout(self.timeout_s),
                follow_redirects=False,  # a redirect means a wrong api_base: a client_error, said at once
                headers={"User-Agent": "spade_llm"},
            )
            self._loop = loop
        return self._client

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body: what litellm sends for ``openai/`` (``role`` and ``metadata`` never leave us)."""
        body: dict[str, Any] = {
            "model": self.wire_model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def _attempt(self, body: dict[str, Any], timeout: float) -> LLMResponse:
        client = self._client_for_loop()
        url = f"{next(self._next_base)}/chat/completions"
        key = os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
        headers = {"Authorization": f"Bearer {key}"}
        response = await asyncio.wait_for(
            client.post(url, json=body, headers=headers, timeout=httpx.Timeout(timeout)), timeout + _GRACE_S
        )
        if not 200 <= response.status_code < 300:
            raise StatusError(response.status_code, _error_message(response), response.headers)
        return parse_completion(response, self.model)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One answer, after retries; raises ``LLMCallError(kind)`` when the endpoint fails for good."""
        if not _provider.ALLOW_MODEL_REQUESTS:
            raise RuntimeError(f"real model requests are blocked in tests (model {self.model})")
        body = self.payload(request)

        async def attempt(timeout: float) -> LLMResponse:
            return await self._attempt(body, timeout)

        return await complete_with_retries(
            self.model,
            attempt,
            self.policy,
            self.timeout_s,
            self.stats,
            classify=classify,
            describe=lambda exc, limit: scrub(_describe(exc), limit),
        )

    async def aclose(self) -> None:
        """Close the pooled connections. Call it from the loop that made the requests; from another
        loop the client is only dropped (its connections cannot be closed from there)."""
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is not None and not client.is_closed and loop is asyncio.get_running_loop():
            await client.aclose()
