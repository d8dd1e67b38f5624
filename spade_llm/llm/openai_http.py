"""A direct OpenAI-compatible chat transport: ``openai/<name>`` on an ``api_base``, without litellm.

Why it exists: importing litellm costs seconds per process (it pulls in openai, pydantic models
for every provider, tokenizers' metadata...). Against a local OpenAI-compatible server (vLLM,
llama.cpp, Ollama's ``/v1``, LM Studio) that fixed cost dominates a short run, and litellm adds
nothing there: the wire format is plain ``POST {api_base}/chat/completions``. This module
speaks that format with one pooled ``httpx.AsyncClient`` and nothing else; every other provider
(OpenAI without an ``api_base``, ``anthropic/...``, ``ollama_chat/...``) keeps going through
:mod:`spade_llm.llm.litellm`.

Answers stream (server-sent events, ``stream: true``), because on a slow server (a small model on
a CPU writes ~30 tokens a second) a whole-answer timeout cannot tell slow from dead: a long answer
times out, and its retry, the identical request, is generated again just as slowly. Streaming
lets ``llm.timeout_s`` be the longest *silence* allowed (httpx's per-read timeout: no byte for that
long), while ``llm.answer_timeout_s`` caps a whole answer; an answer cut by the cap is returned as
it stands with ``finish_reason="answer_cap"`` (a truncation the caller judges), never re-sent.
Usage is read from the final chunk (``stream_options.include_usage``); a server that sends none
gets its completion tokens counted as content chunks (one token per chunk on llama.cpp and vLLM).
A server that answers a streaming request with a plain JSON body (some proxies) is understood too,
and so is an event stream sent under another content type.

Requests go through an :class:`~spade_llm.llm.endpoints.EndpointPool`: at most
``llm.max_inflight_per_endpoint`` per server URL, the least busy server of the ``api_base`` list
first. A server that refuses a parameter by name (4xx/5xx whose message names ``response_format``
or ``json_schema``, or ``stream_options``) gets the request again at once without it, and no later
request carries it: ``json_schema`` falls back to ``json_object``, once per run, recorded in
``LLMStats.fallbacks`` (and from there in ``manifest.json``).

It is hardened exactly as the litellm provider is: both are a :class:`~spade_llm.llm.transport.Transport`,
which owns a request's path (endpoint, attempt, fault kind, retry, stats), so the two behave the same:

* retries go through :func:`~spade_llm.llm.retry.call_with_retries` with the run's
  :class:`~spade_llm.llm.retry.RetryPolicy` (same budget, backoff, jitter and ``Retry-After``
  handling), and are counted in the same :class:`~spade_llm.llm.stats.LLMStats`: each attempt
  is a request, each retry and the final failure are counted by kind;
* faults get the same kinds (:func:`classify`): 429 is ``rate_limit``, 408 ``timeout``, 5xx
  ``server_error``, a transport timeout ``timeout``, a refused or dropped connection
  ``connection``, a 2xx body that is not JSON or has no usable ``choices`` ``bad_response``
  (all retried); any other 4xx (and 3xx, a misconfigured ``api_base``) is ``client_error``
  and fails at once with ``LLMCallError``;
* error text is passed through the shared ``scrub`` (no key ever in a message),
  several ``api_base`` values are used round robin (a retry goes to the next one), and a local
  server without ``OPENAI_API_KEY`` gets the same placeholder key.

The ``spade_llm.llm.litellm`` module imported here does not import litellm itself (that happens
lazily in ``import_litellm``), so importing this module costs httpx and nothing heavier.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
from typing import Any

import httpx

from ..config import LLMConfig, RoleConfig
from ..errors import LLMCallError, UserError
from ..types import TokenUsage
from .base import LLMRequest, LLMResponse
from .litellm import PLACEHOLDER_KEY, BadResponse, load_dotenv
from .retry import RetryPolicy
from .stats import LLMStats, RoleStats
from .transport import Transport, scrub

log = logging.getLogger("spade_llm.llm")

__all__ = ["OpenAIHTTP", "StatusError", "StreamEnded", "classify", "parse_completion", "parse_completion_body"]

KEEPALIVE_EXPIRY_S = 4.0
"""Idle pooled connections are dropped after this long. Under uvicorn's (vLLM's) 5 s keep-alive
timeout on purpose: reusing a connection the server is closing at that moment fails the request
with a dropped connection, a retry we would count for nothing."""

_TAIL_S = 1.0
"""How long the end of a stream may take once ``[DONE]`` arrived before the answer is taken as it is."""

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


class StreamEnded(BadResponse):
    """The event stream stopped before the answer finished (no ``finish_reason``, no ``[DONE]``): a
    dropped connection, retried as ``connection``."""


def classify(exc: BaseException) -> str:
    """Fault kind of an exception raised by one attempt (see the module docstring)."""
    if isinstance(exc, LLMCallError):
        return exc.kind
    if isinstance(exc, StreamEnded):
        return "connection"
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
    """An ``LLMResponse`` from a 2xx chat completion response (see :func:`parse_completion_body`)."""
    return parse_completion_body(response.content, response.headers.get("content-type", ""), model)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content)
    raise BadResponse(f"message content is a {type(content).__name__}, not text")


def parse_completion_body(content: bytes, content_type: str, model: str) -> LLMResponse:
    """An ``LLMResponse`` from a 2xx chat completion body; ``BadResponse`` when the body is unusable.

    Unusable: not JSON (an HTML page from a proxy, half a body), not an object, no ``choices``
    or an empty list, a choice without a ``message`` object, or content that is neither text,
    null nor a list of parts. A null content is empty text and ``finish_reason`` is passed
    through (``length`` for a truncated answer): judging the text is the caller's job.
    """
    try:
        data = json.loads(content)
    except ValueError:
        snippet = " ".join(content[:_SNIPPET].decode("utf-8", "replace").split()) or "(empty body)"
        raise BadResponse(f"answer is not JSON ({content_type or 'no content-type'}): {snippet}") from None
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
    text = _content_text(message.get("content"))
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens = TokenUsage(
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cost=None,
    )
    finish = choice.get("finish_reason")
    return LLMResponse(
        text=text,
        usage=tokens,
        finish_reason=str(finish or "stop"),
        model=model,
        served_model=_said(data.get("model")),
        system_fingerprint=_said(data.get("system_fingerprint")),
    )


def _said(value: Any) -> str:
    """A server's short identity string (``model``, ``system_fingerprint``), '' for anything else."""
    return value[:200] if isinstance(value, str) else ""


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class _StreamedAnswer:
    """An answer assembled from server-sent events as they arrive (kept when the answer cap cuts it)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.chunks = 0
        """Chunks that carried content: the completion-token estimate when the server sends no usage."""
        self.done = False
        self.served_model = ""
        self.system_fingerprint = ""
        self.saw_choice = False
        self.streaming = False
        """True once an event stream was recognised (a plain JSON body never sets it)."""
        self._data: list[str] = []

    def feed_line(self, line: str) -> None:
        """One line of the event stream (SSE: ``data:`` lines, a blank line ends an event)."""
        if not line.strip():
            self._dispatch()
        elif line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        elif line.startswith("error:"):  # llama.cpp before PR 16109 sent a failure as its own field
            self._dispatch()
            self._data.append(json.dumps({"error": _json_or_text(line[6:].strip())}))
            self._dispatch()
        # "event:", "id:", "retry:" and ":" comments (keep-alive pings) carry nothing we need

    def close(self) -> None:
        """The stream ended: the last event, then a check that the answer was finished."""
        self._dispatch()
        if not self.saw_choice:
            raise BadResponse("the event stream held no choices")
        if self.finish_reason is None:
            # a stream cut short: the connection dropped, or the server stopped it ([DONE] without a
            # finish_reason: llama-cpp-python interrupts a streaming answer when another request arrives)
            got = f" after {len(''.join(self.parts))} characters" if self.parts else ""
            how = "was stopped ([DONE] without a finish_reason)" if self.done else "ended"
            raise StreamEnded(f"the event stream {how} before the answer finished{got}")

    def _dispatch(self) -> None:
        if not self._data:
            return
        data, self._data = "\n".join(self._data), []
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            raise BadResponse(f"an event of the stream is not JSON: {' '.join(data[:_SNIPPET].split())}") from None
        if not isinstance(event, dict):
            raise BadResponse(f"an event of the stream is a JSON {type(event).__name__}, not an object")
        error = event.get("error")
        if error:  # vLLM and others report a failure met mid-answer as an event
            message = error.get("message") if isinstance(error, dict) else str(error)
            code = error.get("code") if isinstance(error, dict) else None
            code = int(code) if isinstance(code, str) and code.isdigit() else code
            if isinstance(code, int) and 500 <= code < 600:
                raise StatusError(code, str(message), httpx.Headers())
            if isinstance(code, int) and code == 429:
                raise StatusError(code, str(message), httpx.Headers())
            # a 4xx met mid-answer is about this answer, not the request or the key: a bad answer, retried
            raise BadResponse(f"the stream reported an error: {message}")
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        self.served_model = self.served_model or _said(event.get("model"))
        self.system_fingerprint = self.system_fingerprint or _said(event.get("system_fingerprint"))
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices:
            return  # the usage chunk has no choices
        choice = choices[0]
        if not isinstance(choice, dict):
            raise BadResponse("a choice of the stream is not an object")
        self.saw_choice = True
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message")  # a server sending whole messages as chunks
        if isinstance(delta, dict):
            text = _content_text(delta.get("content"))
            if text:
                self.parts.append(text)
                self.chunks += 1
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])

    def response(self, finish_reason: str | None = None) -> LLMResponse:
        usage = self.usage or {}
        completion = _int(usage.get("completion_tokens")) if "completion_tokens" in usage else self.chunks
        return LLMResponse(
            text="".join(self.parts),
            usage=TokenUsage(prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=completion, cost=None),
            finish_reason=finish_reason or self.finish_reason or "stop",
            model=self.model,
            served_model=self.served_model,
            system_fingerprint=self.system_fingerprint,
        )


_NAMES_STREAM_OPTIONS = re.compile(r"stream_options", re.I)


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


class OpenAIHTTP(Transport):
    """Chat completions over HTTP to an OpenAI-compatible server: streamed, pooled, counted retries.

    ``max_connections`` bounds the connection pool; keep it at least the run's concurrency, or
    requests queue for a connection (and a long queue ends in a pool timeout, counted as
    ``timeout``). One ``httpx.AsyncClient`` serves an event loop; calling from another loop
    (a second ``asyncio.run``) gets a fresh client. :meth:`aclose` closes the pool.
    """

    def __init__(
        self,
        role_config: RoleConfig,
        llm_config: LLMConfig,
        stats: LLMStats | RoleStats,
        policy: RetryPolicy | None = None,
        *,
        max_connections: int = 64,
        env_key: bool = True,
    ) -> None:
        super().__init__(role_config, llm_config, stats, policy)
        self.env_key = env_key
        """Whether requests carry ``OPENAI_API_KEY`` (False: an endpoint the user did not configure
        gets the placeholder, ``trainer.env_keys_allowed``)."""
        self.answer_timeout_s = float(llm_config.answer_timeout_s)
        self.stream = bool(llm_config.stream)
        self.max_connections = max(1, int(max_connections))
        self.wire_model = self.model.removeprefix("openai/")
        """The model name the server sees: the part after ``openai/``, as litellm sends it."""
        self.send_stream_options = True
        """False once a server refused ``stream_options`` by name: never sent again."""
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
        """The JSON body: what litellm sends for ``openai/`` (``role`` and ``metadata`` never leave us),
        streamed unless ``llm.stream`` is off, without what a server refused earlier."""
        body: dict[str, Any] = {
            "model": self.wire_model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        response_format = self.formats.param(request)
        if response_format is not None:
            body["response_format"] = response_format
        if self.stream:
            body["stream"] = True
            if self.send_stream_options:
                body["stream_options"] = {"include_usage": True}
        return body

    def servers(self, role_config: RoleConfig) -> dict[str, str | None]:
        return {base: base for base in _bases(role_config.api_base)}

    def classify(self, exc: BaseException) -> str:
        return classify(exc)

    def error_text(self, exc: BaseException) -> str:
        return _describe(exc)

    def prepare(self, request: LLMRequest, endpoint: str, timeout: float) -> dict[str, Any]:
        return self.payload(request)

    def refused(self, sent: dict[str, Any], exc: Exception) -> bool:
        """Whether ``exc`` refuses a parameter ``sent`` carried by name (``json_schema``, ``stream_options``);
        if so that parameter is never sent again."""
        if not isinstance(exc, StatusError):
            return False
        message = scrub(str(exc), 300)
        if self.formats.refused(sent.get("response_format"), exc.status_code, message):
            return True
        if exc.status_code < 400 or exc.status_code in (401, 403, 404, 408, 429):
            return False
        if "stream_options" in sent and _NAMES_STREAM_OPTIONS.search(message):
            self.send_stream_options = False
            self.stats.fallback("stream_options", {"dropped": "stream_options", "status": exc.status_code})
            return True
        return False

    async def send(self, endpoint: str, sent: dict[str, Any], timeout: float) -> LLMResponse:
        client = self._client_for_loop()
        url = f"{endpoint}/chat/completions"
        key = (os.environ.get("OPENAI_API_KEY") if self.env_key else None) or PLACEHOLDER_KEY
        headers = {"Authorization": f"Bearer {key}"}
        answer = _StreamedAnswer(self.model)
        plain: list[LLMResponse] = []

        async def exchange() -> None:
            # httpx's timeout bounds each connect/read/write/pool wait: with a stream, the longest silence
            async with client.stream("POST", url, json=sent, headers=headers, timeout=httpx.Timeout(timeout)) as r:
                if not 200 <= r.status_code < 300:
                    await r.aread()
                    raise StatusError(r.status_code, _error_message(r), r.headers)
                ctype = r.headers.get("content-type", "")
                if "text/event-stream" in ctype:
                    answer.streaming = True
                    lines = r.aiter_lines()
                    try:
                        while True:
                            # after [DONE] the body's end should follow at once: read it (so the connection
                            # goes back to the pool), but a server holding the stream open gets a second
                            wait = _TAIL_S if answer.done else None
                            try:
                                line = await asyncio.wait_for(lines.__anext__(), wait)
                            except StopAsyncIteration:
                                break
                            answer.feed_line(line)
                    except (httpx.TimeoutException, asyncio.TimeoutError):
                        if answer.finish_reason is None:
                            raise
                        # the answer had finished; only the stream's end never came: the answer stands
                    answer.close()
                    return
                content = await r.aread()
                if content.lstrip().startswith((b"data:", b":")):  # an event stream under another content type
                    answer.streaming = True
                    for line in content.decode("utf-8", "replace").splitlines():
                        answer.feed_line(line)
                    answer.close()
                    return
                plain.append(parse_completion_body(content, ctype, self.model))

        try:
            await asyncio.wait_for(exchange(), self.answer_timeout_s)
        except asyncio.TimeoutError:
            if answer.streaming and answer.finish_reason is not None:
                answer.close()  # it had finished; only the stream's end was late
                return answer.response()
            if not answer.streaming or not answer.chunks:
                # nothing to keep (a plain answer, or a stream that never said a word): the request timed out
                raise TimeoutError(f"no answer within llm.answer_timeout_s={self.answer_timeout_s:g}s") from None
            log.warning(
                "%s: answer cut after llm.answer_timeout_s=%gs (%d chunks): kept as truncated",
                self.model,
                self.answer_timeout_s,
                answer.chunks,
            )
            return answer.response(finish_reason="answer_cap")
        return plain[0] if plain else answer.response()

    async def aclose(self) -> None:
        """Close the pooled connections. Call it from the loop that made the requests; from another
        loop the client is only dropped (its connections cannot be closed from there)."""
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is not None and not client.is_closed and loop is asyncio.get_running_loop():
            await client.aclose()
