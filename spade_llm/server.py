"""``spade serve-fake``: an OpenAI-compatible HTTP server backed by the built-in fake model.

Why it exists: to exercise the real network path (litellm, retries, timeouts, concurrency, the
fault proxy in ``shared/tools``) offline, with answers as good as the fake's, and to measure
how many requests a run keeps in flight against a slow endpoint (``--latency``).

Why this server: the standard library's asyncio streams and a small HTTP/1.1 parser, no new
dependency. The fake model is async already, so one event loop serves any number of
connections: ``--latency`` is an ``asyncio.sleep``, and concurrent requests overlap instead of
queueing (a ThreadingHTTPServer would need a thread and an event loop per request for the same
effect; aiohttp/uvicorn would add dependencies to a package that only needs this for tests and
benchmarks). Keep-alive is supported, as clients (httpx, via litellm and openai) pool
connections; so is ``stream: true`` (server-sent events, one content chunk) for clients that ask.

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
import contextlib
import json
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

from .llm.base import LLMRequest, LLMResponse
from .types import Message

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
IDLE_TIMEOUT_S = 75.0
"""A keep-alive connection with no new request for this long is closed (frees idle sockets)."""
READ_TIMEOUT_S = 30.0
"""Time allowed to send the rest of a request once its first line arrived."""


class HTTPError(Exception):
    """An error answered to the client as an OpenAI-style error object."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


@dataclass
class ServerStats:
    """Counters kept by the server (``GET /stats``)."""

    requests: int = 0
    completions: int = 0
    inflight: int = 0
    max_inflight: int = 0
    errors: int = 0
    started: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "completions": self.completions,
            "inflight": self.inflight,
            "max_inflight": self.max_inflight,
            "errors": self.errors,
            "uptime_s": round(time.time() - self.started, 3),
        }


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


class FakeServer:
    """The fake model behind HTTP/1.1 on asyncio streams. ``start()``, then ``url``; ``close()`` to stop."""

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
    ) -> None:
        """``backend`` is a module-like object with ``FakeLLM``, ``PROFILES`` and ``infer_role``:
        ``spade_llm.llm.fake`` unless a test puts a stand-in there.

        Pacing, to play a slow model: ``tokens_per_s`` streams an answer a token (~4 characters) at
        a time at that rate; ``answer_s`` instead makes every answer take that long, one chunk every
        ``chunk_s``. A request that does not stream waits the whole time in silence, then gets the
        answer. ``refuse`` plays servers lacking a feature: ``json_schema`` answers 500 naming
        ``response_format`` (as llama-cpp-python does), ``stream_options`` answers 400 naming it.
        """
        if backend is None:
            from .llm import fake

            backend = fake
        self.host = host
        self.port = port
        self.latency = max(0.0, float(latency))
        self.tokens_per_s = max(0.0, float(tokens_per_s))
        self.answer_s = max(0.0, float(answer_s))
        self.chunk_s = max(0.001, float(chunk_s))
        self.refuse = frozenset(refuse)
        self.seed = seed
        self.stats = ServerStats()
        self._fake_module = backend
        self._profiles = backend.PROFILES
        self._models: dict[str, Any] = {}
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (``.../v1``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def model_for(self, profile: str) -> Any:
        if profile not in self._models:
            self._models[profile] = self._fake_module.FakeLLM(profile=profile, seed=self.seed)
        return self._models[profile]

    async def start(self) -> None:
        # a deep backlog: a run opens a burst of connections at once (the default of 100 is
        # fine; the stdlib HTTP servers' 5 is what stalls bursts)
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, backlog=512, limit=MAX_HEADER_BYTES
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    # -- connection handling --------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                keep_alive = await self._one_request(reader, writer)
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # the client went away, or idled out: nothing to answer
        except asyncio.CancelledError:
            pass  # server shutting down
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read and answer one request; True when the connection stays open for another."""
        try:
            line = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
        except ValueError:  # line longer than the limit
            await self._send_error(writer, HTTPError(431, "request line too long"), keep_alive=False)
            return False
        if not line:
            return False  # clean close between requests
        if line in (b"\r\n", b"\n"):
            return True  # tolerated stray CRLF between requests (RFC 9112 2.2)
        try:
            method, target, version = line.decode("latin-1").strip().split(" ", 2)
        except ValueError:
            await self._send_error(writer, HTTPError(400, "malformed request line"), keep_alive=False)
            return False
        try:
            headers = await asyncio.wait_for(self._read_headers(reader), READ_TIMEOUT_S)
        except HTTPError as e:
            await self._send_error(writer, e, keep_alive=False)
            return False
        conn = headers.get("connection", "").lower()
        keep_alive = ("close" not in conn) if version == "HTTP/1.1" else ("keep-alive" in conn)
        try:
            body = await asyncio.wait_for(self._read_body(reader, writer, headers), READ_TIMEOUT_S)
        except HTTPError as e:
            await self._send_error(writer, e, keep_alive=False)
            return False
        path = unquote(urlsplit(target).path).rstrip("/") or "/"
        self.stats.requests += 1
        try:
            return await self._route(method.upper(), path, body, writer, keep_alive)
        except HTTPError as e:
            self.stats.errors += 1
            await self._send_error(writer, e, keep_alive)
            return keep_alive

    async def _read_headers(self, reader: asyncio.StreamReader) -> dict[str, str]:
        headers: dict[str, str] = {}
        total = 0
        while True:
            try:
                line = await reader.readline()
            except ValueError:
                raise HTTPError(431, "header line too long") from None
            total += len(line)
            if total > MAX_HEADER_BYTES:
                raise HTTPError(431, "headers too large")
            if not line:
                raise asyncio.IncompleteReadError(b"", None)
            if line in (b"\r\n", b"\n"):
                return headers
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise HTTPError(400, "malformed header line")
            headers[name.strip().lower()] = value.strip()

    async def _read_body(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: dict[str, str]
    ) -> bytes:
        if headers.get("expect", "").lower() == "100-continue":  # curl does this for larger bodies
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            size_total = 0
            while True:
                size_line = await reader.readline()
                try:
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    raise HTTPError(400, "malformed chunk size") from None
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                size_total += size
                if size_total > MAX_BODY_BYTES:
                    raise HTTPError(413, "request body too large")
                parts.append(await reader.readexactly(size))
                await reader.readline()
        length_text = headers.get("content-length", "0") or "0"
        try:
            length = int(length_text)
        except ValueError:
            raise HTTPError(400, "bad Content-Length") from None
        if length < 0:
            raise HTTPError(400, "bad Content-Length")
        if length > MAX_BODY_BYTES:
            raise HTTPError(413, "request body too large")
        return await reader.readexactly(length) if length else b""

    async def _route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter, keep_alive: bool) -> bool:
        if path.startswith("/v1/"):
            path = path[3:]
        if path == "/chat/completions":
            if method != "POST":
                raise HTTPError(405, "use POST for /v1/chat/completions")
            return await self._chat(body, writer, keep_alive)
        if method != "GET":
            raise HTTPError(405 if path in ("/models", "/health", "/stats") else 404, f"{method} {path} not supported")
        if path == "/models":
            names = ["default", *(p for p in self._profiles if p != "default")]
            data = [{"id": n, "object": "model", "created": 0, "owned_by": "spade-fake"} for n in names]
            await self._send_json(writer, 200, {"object": "list", "data": data}, keep_alive)
        elif path.startswith("/models/"):
            name = path[len("/models/") :]
            await self._send_json(
                writer, 200, {"id": name, "object": "model", "created": 0, "owned_by": "spade-fake"}, keep_alive
            )
        elif path == "/health":
            await self._send_json(writer, 200, {"status": "ok"}, keep_alive)
        elif path == "/stats":
            await self._send_json(writer, 200, self.stats.as_dict(), keep_alive)
        else:
            raise HTTPError(404, f"no route for {path}", "not_found_error")
        return keep_alive

    async def _chat(self, raw: bytes, writer: asyncio.StreamWriter, keep_alive: bool) -> bool:
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise HTTPError(400, f"the body is not JSON: {e}") from None
        refuse_unsupported(body, self.refuse)
        request = to_llm_request(body, self._fake_module.infer_role)
        assert isinstance(body, dict)  # to_llm_request refuses anything else
        model_name = str(body.get("model") or "default")
        llm = self.model_for(profile_for(model_name, self._profiles))
        stats = self.stats
        stats.inflight += 1
        stats.max_inflight = max(stats.max_inflight, stats.inflight)
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
                await self._send_json(writer, 200, payload, keep_alive)
        finally:
            stats.inflight -= 1  # a streamed answer keeps its slot until its last chunk
        return keep_alive

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

    @staticmethod
    def _head(status: int, headers: list[tuple[str, str]], keep_alive: bool) -> bytes:
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Unknown"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            *(f"{k}: {v}" for k, v in headers),
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            "Server: spade-serve-fake",
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, payload: Any, keep_alive: bool) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        head = self._head(
            status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))], keep_alive
        )
        writer.write(head + data)
        await writer.drain()

    async def _send_error(self, writer: asyncio.StreamWriter, error: HTTPError, keep_alive: bool) -> None:
        payload = {"error": {"message": error.message, "type": error.kind, "param": None, "code": None}}
        with contextlib.suppress(ConnectionError):
            await self._send_json(writer, error.status, payload, keep_alive)

    async def _send_stream(
        self, writer: asyncio.StreamWriter, chunks: list[dict[str, Any]], keep_alive: bool, gap: float = 0.0
    ) -> None:
        head = self._head(
            200,
            [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")],
            keep_alive,
        )
        events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
        framed = [f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events]
        if not gap:
            writer.write(b"".join([head, *framed, b"0\r\n\r\n"]))
            await writer.drain()
            return
        writer.write(head + framed[0])  # the role chunk goes out at once, as real servers send it
        await writer.drain()
        for i, frame in enumerate(framed[1:], start=1):
            if i >= 2 and i < len(chunks) and chunks[i]["choices"]:  # content after the first, and the finish
                await asyncio.sleep(gap)
            writer.write(frame)
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


class _CannotListen(Exception):
    """The server could not bind its address (carries the one-line reason)."""


async def _serve_until_stopped(server: FakeServer) -> None:
    try:
        await server.start()
    except (OSError, OverflowError, ValueError) as e:  # in use, not permitted, no such host; bad port or name
        raise _CannotListen(getattr(e, "strerror", None) or str(e)) from None
    print(
        f"spade serve-fake: listening on {server.url} (latency {server.latency:g}s, seed {server.seed}); "
        "Ctrl-C to stop",
        file=sys.stderr,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def serve(host: str, port: int, latency: float, seed: int = 0, tokens_per_s: float = 0.0) -> None:
    """Run the server until Ctrl-C or SIGTERM (blocking); prints the listening URL on stderr.

    ``port`` 0 picks a free port (the printed URL tells which).

    Raises:
        UserError: a negative latency, or the address cannot be listened on (port in use, say).
    """
    from .errors import UserError

    if not latency >= 0 or latency == float("inf"):
        raise UserError(f"--latency must be a finite number >= 0, got {latency}")
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0 (any free port) to 65535, got {port}")
    if not tokens_per_s >= 0 or tokens_per_s == float("inf"):
        raise UserError(f"--tokens-per-s must be a finite number >= 0, got {tokens_per_s}")
    server = FakeServer(host, port, latency, seed, tokens_per_s=tokens_per_s)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # where signal handlers are unavailable
            asyncio.run(_serve_until_stopped(server))
    except _CannotListen as e:
        raise UserError(f"cannot listen on {host}:{port}: {e}") from None
    print("spade serve-fake: stopped", file=sys.stderr, flush=True)
