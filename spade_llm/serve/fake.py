"""``spade serve-fake``: an OpenAI-compatible HTTP server backed by the built-in fake model.

Why it exists: to exercise the real network path (litellm, retries, timeouts, concurrency, the
fault proxy in ``shared/tools``) offline, with answers as good as the fake's, and to measure
how many requests a run keeps in flight against a slow endpoint (``--latency``).

Why this server: the standard library's asyncio streams and a small HTTP/1.1 parser
(``httpbase.py``, shared with ``spade serve-sandbox``), no new dependency. The fake model is
async already, so one event loop serves any number of connections: ``--latency`` is an
``asyncio.sleep``, and concurrent requests overlap instead of queueing (a ThreadingHTTPServer
would need a thread and an event loop per request for the same effect; aiohttp/uvicorn would add
dependencies to a package that only needs this for tests and benchmarks). Keep-alive is
supported, as clients (httpx, via litellm and openai) pool connections; so is ``stream: true``
(server-sent events, one content chunk) for clients that ask. The base's flood rules hold here
too (``httpbase``'s module doc): strict framing, a connection cap (``--max-connections``), a
budget of body bytes counted as they arrive, and JSON bodies' values counted before parsing.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /v1/models/{id}`` (also
without the ``/v1`` prefix), ``GET /health``, and ``GET /stats`` (requests served, in flight
now, most in flight at once: what a benchmark wants to know).

The model name picks the fake profile: a profile name (``noisy``, or ``fake/noisy``) selects
that profile, anything else gets ``default``. The request maps onto ``LLMRequest``: messages,
temperature, max_tokens (or max_completion_tokens), seed, and ``response_format`` of type
``json_object``/``json_schema`` as json_mode; the role (generator or solver) comes from the
fake's own ``infer_role`` rule. A ``metadata`` object in the body, if any, is passed through
(our litellm provider sends none; the fake has defaults).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..llm.base import LLMRequest, LLMResponse
from ..types import Message
from .httpbase import HTTPError, HTTPServer, HTTPStats, Request, run_server

__all__ = ["FakeServer", "HTTPError", "ServerStats", "serve", "to_llm_request"]


@dataclass
class ServerStats(HTTPStats):
    """Counters kept by the server (``GET /stats``): ``inflight`` counts completions being answered."""

    completions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "completions": self.completions}


# -- mapping between the OpenAI wire format and LLMRequest/LLMResponse ------------------------

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise HTTPError(400, "messages[].content must be a string or a list of content parts")


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise HTTPError(400, f"'{name}' must be a number between {lo} and {hi}")
    return float(value)


def _integer(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise HTTPError(400, f"'{name}' must be an integer")
    return value


def profile_for(model: str, profiles: Any) -> str:
    """The fake profile a model name selects: its last ``/`` part when that names a profile
    (``noisy``, ``fake/noisy``, ``openai/noisy``), else ``default``."""
    name = model.strip().rsplit("/", 1)[-1]
    return name if name in profiles else "default"


def to_llm_request(body: Any, infer_role: Any) -> LLMRequest:
    """The ``LLMRequest`` for an OpenAI chat completion body; ``HTTPError(400)`` when it is not one."""
    if not isinstance(body, dict):
        raise HTTPError(400, "the request body must be a JSON object")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise HTTPError(400, "'messages' must be a non-empty list")
    messages = []
    for m in raw:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise HTTPError(400, "each message must be an object with a 'role'")
        messages.append(Message(role=_ROLES.get(m["role"], "user"), content=_text_of(m.get("content"))))  # type: ignore[arg-type]
    fmt = body.get("response_format")
    form = fmt.get("type") if isinstance(fmt, dict) else None
    json_mode = form in ("json_object", "json_schema")
    max_tokens = _integer(body, "max_completion_tokens") or _integer(body, "max_tokens") or 2048
    if max_tokens <= 0:
        raise HTTPError(400, "'max_tokens' must be positive")
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return LLMRequest(
        messages=messages,
        role=infer_role(messages, json_mode),
        temperature=_number(body, "temperature", 0.7, 0.0, 2.0),
        max_tokens=max_tokens,
        seed=_integer(body, "seed"),
        response_format=form if form in ("json_object", "json_schema") else "text",
        json_schema=fmt.get("json_schema")
        if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict)
        else None,
        metadata=dict(metadata or {}),
    )


def completion_body(model: str, response: LLMResponse, completion_id: str, created: int) -> dict[str, Any]:
    """The OpenAI ``chat.completion`` object for one answer."""
    usage = response.usage
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": "spade-fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": response.text},
                "logprobs": None,
                "finish_reason": response.finish_reason or "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }


def refuse_unsupported(body: Any, refuse: frozenset[str]) -> None:
    """``HTTPError`` for a request using a feature the server plays to lack (see ``FakeServer``)."""
    if not isinstance(body, dict):
        return
    fmt = body.get("response_format")
    if "json_schema" in refuse and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        raise HTTPError(500, "response_format: unsupported type 'json_schema'", "server_error")
    if "stream_options" in refuse and "stream_options" in body:
        raise HTTPError(400, "Extra inputs are not permitted: stream_options")


def stream_chunks(
    model: str,
    response: LLMResponse,
    completion_id: str,
    created: int,
    include_usage: bool,
    pieces: list[str] | None = None,
) -> list[dict[str, Any]]:
    """``chat.completion.chunk`` objects for a streamed answer: role, content (in ``pieces``, default
    one chunk), finish (and usage)."""
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "spade-fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    chunks = [
        chunk({"role": "assistant", "content": ""}, None),
        *(chunk({"content": piece}, None) for piece in (pieces if pieces is not None else [response.text])),
        chunk({}, response.finish_reason or "stop"),
    ]
    if include_usage:
        usage = completion_body(model, response, completion_id, created)["usage"]
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


# -- the server -------------------------------------------------------------------------------


class FakeServer(HTTPServer):
    """The fake model behind HTTP/1.1 (``httpbase``). ``start()``, then ``url``; ``close()`` to stop."""

    server_name = "spade-serve-fake"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        latency: float = 0.0,
        seed: int = 0,
        backend: Any = None,
        *,
        tokens_per_s: float = 0.0,
        answer_s: float = 0.0,
        chunk_s: float = 0.5,
        refuse: frozenset[str] = frozenset(),
        max_connections: int | None = None,
    ) -> None:
        """``backend`` is a module-like object with ``FakeLLM``, ``PROFILES`` and ``infer_role``:
        ``spade_llm.fake`` unless a test puts a stand-in there.

        Pacing, to play a slow model: ``tokens_per_s`` streams an answer a token (~4 characters) at
        a time at that rate; ``answer_s`` instead makes every answer take that long, one chunk every
        ``chunk_s``. A request that does not stream waits the whole time in silence, then gets the
        answer. ``refuse`` plays servers lacking a feature: ``json_schema`` answers 500 naming
        ``response_format`` (as llama-cpp-python does), ``stream_options`` answers 400 naming it.

        ``max_connections``: connections at once (None: from the open-files limit); the other
        flood limits (bytes held, body size, JSON values) are ``httpbase``'s defaults.
        """
        if backend is None:
            from .. import fake

            backend = fake
        super().__init__(host, port, max_connections=max_connections)
        self.latency = max(0.0, float(latency))
        self.tokens_per_s = max(0.0, float(tokens_per_s))
        self.answer_s = max(0.0, float(answer_s))
        self.chunk_s = max(0.001, float(chunk_s))
        self.refuse = frozenset(refuse)
        self.seed = seed
        self.stats: ServerStats = ServerStats()
        self._fake_module = backend
        self._profiles = backend.PROFILES
        self._models: dict[str, Any] = {}

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (``.../v1``)."""
        return f"{self.origin}/v1"

    def model_for(self, profile: str) -> Any:
        if profile not in self._models:
            self._models[profile] = self._fake_module.FakeLLM(profile=profile, seed=self.seed)
        return self._models[profile]

    def canonical_path(self, path: str) -> str:
        return path[3:] if path.startswith("/v1/") else path

    def error_payload(self, error: HTTPError) -> Any:
        """An OpenAI-style error object."""
        return {"error": {"message": error.message, "type": error.kind, "param": None, "code": None}}

    async def route(self, request: Request, writer: asyncio.StreamWriter) -> None:
        method, path, keep_alive = request.method, request.path, request.keep_alive
        if path == "/chat/completions":
            if method != "POST":
                raise HTTPError(405, "use POST for /v1/chat/completions")
            await self._chat(request, writer)
            return
        if method != "GET":
            raise HTTPError(405 if path == "/models" else 404, f"{method} {path} not supported")
        if path == "/models":
            names = ["default", *(p for p in self._profiles if p != "default")]
            data = [{"id": n, "object": "model", "created": 0, "owned_by": "spade-fake"} for n in names]
            await self.send_json(writer, 200, {"object": "list", "data": data}, keep_alive)
        elif path.startswith("/models/"):
            name = path[len("/models/") :]
            await self.send_json(
                writer, 200, {"id": name, "object": "model", "created": 0, "owned_by": "spade-fake"}, keep_alive
            )
        else:
            raise HTTPError(404, f"no route for {path}", "not_found_error")

    async def _chat(self, http_request: Request, writer: asyncio.StreamWriter) -> None:
        keep_alive = http_request.keep_alive
        body = await self.read_json(http_request)  # its size bounded before it is parsed (413)
        refuse_unsupported(body, self.refuse)
        request = to_llm_request(body, self._fake_module.infer_role)
        assert isinstance(body, dict)  # to_llm_request refuses anything else
        model_name = str(body.get("model") or "default")
        llm = self.model_for(profile_for(model_name, self._profiles))
        stats = self.stats
        stats.enter()
        try:
            # the wait and the fake's own work overlap: an answer takes max(latency, work)
            waited = asyncio.ensure_future(asyncio.sleep(self.latency)) if self.latency else None
            try:
                response: LLMResponse = await llm.complete(request)
            except Exception as e:  # the fake must not take the server down with it
                if waited is not None:
                    waited.cancel()
                raise HTTPError(500, f"fake model failed: {type(e).__name__}: {e}", "server_error") from None
            if waited is not None:
                await waited
            stats.completions += 1
            completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            created = int(time.time())
            pieces, gap = self._pace(response)
            if body.get("stream"):
                options = body.get("stream_options")
                include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                chunks = stream_chunks(model_name, response, completion_id, created, include_usage, pieces)
                await self._send_stream(writer, chunks, keep_alive, gap)
            else:
                if gap:
                    await asyncio.sleep(gap * len(pieces))  # a plain server is silent until the answer is whole
                payload = completion_body(model_name, response, completion_id, created)
                await self.send_json(writer, 200, payload, keep_alive)
        finally:
            stats.leave()  # a streamed answer keeps its slot until its last chunk

    def _pace(self, response: LLMResponse) -> tuple[list[str], float]:
        """The answer's text in the pieces it streams in, and the gap between two (0: all at once)."""
        text = response.text
        if self.answer_s > 0:
            n = max(1, round(self.answer_s / self.chunk_s))
            size = max(1, -(-len(text) // n))
            pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
            pieces += [""] * (n - len(pieces))  # a short answer still takes answer_s
            return pieces, self.answer_s / n
        if self.tokens_per_s > 0:
            pieces = [text[i : i + 4] for i in range(0, len(text), 4)] or [""]
            return pieces, 1.0 / self.tokens_per_s
        return [text], 0.0

    # -- writing ----------------------------------------------------------------------------------

    async def _send_stream(
        self, writer: asyncio.StreamWriter, chunks: list[dict[str, Any]], keep_alive: bool, gap: float = 0.0
    ) -> None:
        head = self.head(
            200,
            [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")],
            keep_alive,
        )
        events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
        framed = [f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events]
        if not gap:
            writer.write(b"".join([head, *framed, b"0\r\n\r\n"]))
            await self.drain(writer)
            return
        writer.write(head + framed[0])  # the role chunk goes out at once, as real servers send it
        await self.drain(writer)
        for i, frame in enumerate(framed[1:], start=1):
            if i >= 2 and i < len(chunks) and chunks[i]["choices"]:  # content after the first, and the finish
                await asyncio.sleep(gap)
            writer.write(frame)
            await self.drain(writer)
        writer.write(b"0\r\n\r\n")
        await self.drain(writer)


def serve(
    host: str,
    port: int,
    latency: float,
    seed: int = 0,
    tokens_per_s: float = 0.0,
    max_connections: int | None = None,
) -> None:
    """Run the server until Ctrl-C or SIGTERM (blocking); prints the listening URL on stderr.

    ``port`` 0 picks a free port (the printed URL tells which). ``max_connections``: connections at
    once, past which a newcomer evicts a silent one or gets a 503 (None: from the open-files limit).

    Raises:
        UserError: a negative latency or a cap below 1, or the address cannot be listened on (port in
            use, say).
    """
    from ..errors import UserError

    if not latency >= 0 or latency == float("inf"):
        raise UserError(f"--latency must be a finite number >= 0, got {latency}")
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0 (any free port) to 65535, got {port}")
    if not tokens_per_s >= 0 or tokens_per_s == float("inf"):
        raise UserError(f"--tokens-per-s must be a finite number >= 0, got {tokens_per_s}")
    if max_connections is not None and max_connections < 1:
        raise UserError(f"--max-connections must be at least 1, got {max_connections}")
    server = FakeServer(host, port, latency, seed, tokens_per_s=tokens_per_s, max_connections=max_connections)

    def banner() -> str:
        return (
            f"spade serve-fake: listening on {server.url} (latency {server.latency:g}s, seed {server.seed}); "
            "Ctrl-C to stop"
        )

    run_server(server, banner, host, port)
    print("spade serve-fake: stopped", file=sys.stderr, flush=True)
