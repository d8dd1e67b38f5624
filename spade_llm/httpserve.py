"""The small HTTP/1.1 server under ``spade serve-fake`` and ``spade serve-sandbox``.

Why it exists: both servers need the same plumbing (read a request, keep the connection alive,
answer errors, ``/health``, stop cleanly on SIGINT/SIGTERM) and neither is worth a dependency. The
standard library's asyncio streams serve any number of connections from one event loop; a
``ThreadingHTTPServer`` would spend a thread per connection, and aiohttp/uvicorn would be new
dependencies of a package that serves only tests, benchmarks and a local trainer.

What it does: HTTP/1.1 and 1.0 with keep-alive (clients such as httpx and requests pool
connections), ``Content-Length`` and chunked request bodies, ``Expect: 100-continue`` (curl sends
it for larger bodies), bounded request lines, headers and bodies, an idle timeout between requests,
a read timeout within one, and a write timeout for a client that stops reading its answer; a bug
in a route answers 500 (logged) instead of dropping the connection unanswered. A subclass answers
its own routes (``route``) in its own error shape (``error_payload``); the base answers ``GET
/health`` and ``GET /stats`` (``HTTPStats``) for both.

Refusing before the body, and without a reset: ``check_head`` (a subclass's access rules) runs
once the headers are in, before ``100 Continue`` and before any of the body is read; a body over
``max_body_bytes`` is a 413 and one that would take the body bytes held by requests in progress
over ``max_held_bytes`` (when set) a 503 with ``Retry-After``, both decided from
``Content-Length`` before reading (a chunked body: as its chunks arrive). A refused request is
answered with ``Connection: close``, then the server half-closes (FIN after the answer) and reads
and discards what the client still sends, for at most ``LINGER_S``, before it closes: closing a
socket with unread data in its receive buffer sends a TCP reset, and a client still sending its
body would then lose the answer (``requests`` and curl report a reset instead of the status).

A client that goes away: each connection has a ``gone`` future, done when the peer closes (FIN
or reset) and handed to the route on ``Request.gone``, so a route that waits (serve-sandbox's queue
and its running programs) can drop the work of a client nobody will answer. A half-close counts
as gone, as nginx treats it (no HTTP client this serves half-closes and then reads).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import signal
import sys
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
IDLE_TIMEOUT_S = 75.0
"""A keep-alive connection with no new request for this long is closed (frees idle sockets)."""
READ_TIMEOUT_S = 30.0
"""Time allowed to send the rest of a request once its first line arrived."""
WRITE_TIMEOUT_S = 60.0
"""Time allowed for a client to take (a piece of) an answer: one that stops reading is cut off, and
the answer buffered for it freed (else each such client would hold its answer's memory for good)."""
BACKLOG = 512
"""Listen backlog: a client opens a burst of connections at once (the stdlib HTTP servers' 5 stalls bursts)."""
LINGER_S = 10.0
"""After a refusal, how long the rest of the request is read and thrown away before the socket is
closed (a reset before the client has sent its body would lose it the answer)."""

logger = logging.getLogger("spade_llm.httpserve")


class HTTPError(Exception):
    """An error answered to the client: ``status``, a one-line ``message`` and a ``kind``.

    ``payload``, when given, is sent as the body as it is (a server whose clients expect a
    particular error document, FastAPI's validation ``detail`` list say); otherwise the server's
    ``error_payload`` shapes it.
    """

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        payload: Any = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.payload = payload
        self.headers = headers
        """Extra headers of the answer (``Retry-After``, ``WWW-Authenticate``)."""


@dataclass
class HTTPStats:
    """Counters every server keeps (``GET /stats``); ``inflight`` is the subclass's unit of work."""

    requests: int = 0
    inflight: int = 0
    max_inflight: int = 0
    errors: int = 0
    connections: int = 0
    """Connections open now."""
    max_connections: int = 0
    held_bytes: int = 0
    """Body bytes of the requests in progress now (read so far, or declared by ``Content-Length``)."""
    max_held_bytes: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    """Requests refused before their body was read, by status (``"413"``, ``"503"``...)."""
    started: float = field(default_factory=time.time)

    def enter(self) -> None:
        """One more unit of work in flight."""
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)

    def leave(self) -> None:
        self.inflight -= 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "inflight": self.inflight,
            "max_inflight": self.max_inflight,
            "errors": self.errors,
            "connections": self.connections,
            "max_connections": self.max_connections,
            "held_bytes": self.held_bytes,
            "max_held_bytes": self.max_held_bytes,
            "refused": dict(self.refused),
            "uptime_s": round(time.time() - self.started, 3),
        }


@dataclass
class Request:
    """One parsed request. ``path`` is the decoded path without query or trailing ``/``, after the
    server's ``canonical_path``; ``headers`` have lower-case names. ``check_head`` sees it before
    the body is read (``body`` still empty)."""

    method: str
    target: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    gone: asyncio.Future[None] | None = None
    """Done once the client has closed its side of the connection (see the module doc)."""

    def take_body(self) -> bytes:
        """The body, no longer held here: a route that parses it and then waits frees its bytes."""
        body, self.body = self.body, b""
        return body

    def json(self) -> Any:
        """The body as JSON (None when empty); ``HTTPError(400)`` when it is not JSON."""
        try:
            return json.loads(self.body.decode("utf-8")) if self.body else None
        except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, too deep, an int too long
            raise HTTPError(400, f"the body is not JSON: {e}") from None


class HTTPServer:
    """HTTP/1.1 on asyncio streams. Subclasses set ``server_name`` and implement ``route``.

    ``start()``, then ``port`` holds the real port (0 asks for any free one); ``close()`` stops
    listening and cancels every connection.
    """

    server_name = "spade"
    """Sent as the ``Server`` header (``spade-serve-fake``...)."""
    write_timeout_s = WRITE_TIMEOUT_S

    retry_after_s = 1
    """The ``Retry-After`` of a 503 for the held-bytes budget."""

    def __init__(
        self, host: str, port: int, *, max_body_bytes: int = MAX_BODY_BYTES, max_held_bytes: int | None = None
    ) -> None:
        """``max_body_bytes``: one request's body (413 beyond it). ``max_held_bytes``: the body bytes
        all requests in progress (being read, waiting, running) may hold together, None for no bound
        (503 with ``Retry-After`` beyond it)."""
        self.host = host
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.max_held_bytes = max_held_bytes
        self.stats: HTTPStats = HTTPStats()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def origin(self) -> str:
        """``http://host:port`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def protocol() -> _Protocol:  # asyncio.start_server's, plus the connection's "gone" future
            gone: asyncio.Future[None] = loop.create_future()
            reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES, loop=loop)
            return _Protocol(reader, functools.partial(self._on_connection, gone=gone), gone, loop)

        self._server = await loop.create_server(protocol, self.host, self.port, backlog=BACKLOG)
        self.port = self._server.sockets[0].getsockname()[1]

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

    # -- what subclasses provide ---------------------------------------------------------------

    def canonical_path(self, path: str) -> str:
        """The path routes are matched on (serve-fake drops a ``/v1`` prefix)."""
        return path

    async def route(self, request: Request, writer: asyncio.StreamWriter) -> None:
        """Answer ``request`` on ``writer``; raise ``HTTPError`` for an error answer."""
        raise HTTPError(404, f"no route for {request.path}", "not_found_error")

    def check_head(self, request: Request) -> None:
        """Refuse ``request`` from its method, path and headers alone, before its body is read, by
        raising ``HTTPError`` (answered, the body discarded, the connection closed). Accepts all."""

    def error_payload(self, error: HTTPError) -> Any:
        """The JSON body of an error answer (FastAPI's shape by default)."""
        return {"detail": error.message}

    def health_payload(self) -> Any:
        """The body of ``GET /health``."""
        return {"status": "ok"}

    # -- connection handling --------------------------------------------------------------------

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Future[None] | None = None
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        stats = self.stats
        stats.connections += 1
        stats.max_connections = max(stats.max_connections, stats.connections)
        try:
            while await self._one_request(reader, writer, gone):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # the client went away, or idled out: nothing to answer
        except asyncio.CancelledError:
            pass  # server shutting down
        finally:
            stats.connections -= 1
            if task is not None:
                self._connections.discard(task)
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 1.0)
            except asyncio.CancelledError:
                writer.transport.abort()
                raise
            except Exception:
                # a close waits for the answer buffered for the client to be sent: one that does not
                # read would hold the socket and the buffer for good
                writer.transport.abort()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Future[None] | None = None
    ) -> bool:
        """Read and answer one request; True when the connection stays open for another."""
        try:
            line = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
        except ValueError:  # line longer than the limit
            await self._refuse(reader, writer, HTTPError(431, "request line too long"))
            return False
        if not line:
            return False  # clean close between requests
        if line in (b"\r\n", b"\n"):
            return True  # tolerated stray CRLF between requests (RFC 9112 2.2)
        try:
            method, target, version = line.decode("latin-1").strip().split(" ", 2)
        except ValueError:
            await self._refuse(reader, writer, HTTPError(400, "malformed request line"))
            return False
        held = [0]
        try:
            try:
                headers = await asyncio.wait_for(self._read_headers(reader), READ_TIMEOUT_S)
                conn = headers.get("connection", "").lower()
                keep_alive = ("close" not in conn) if version == "HTTP/1.1" else ("keep-alive" in conn)
                path = self.canonical_path(unquote(urlsplit(target).path).rstrip("/") or "/")
                request = Request(method.upper(), target, path, headers, b"", keep_alive, gone)
                self.check_head(request)
                request.body = await asyncio.wait_for(self._read_body(reader, writer, headers, held), READ_TIMEOUT_S)
            except HTTPError as e:
                await self._refuse(reader, writer, e)
                return False
            self.stats.requests += 1
            try:
                await self._dispatch(request, writer)
            except HTTPError as e:
                self.stats.errors += 1
                await self.send_error(writer, e, keep_alive)
            except (ConnectionError, asyncio.TimeoutError, asyncio.CancelledError):
                raise
            except Exception:  # a bug costs this request a 500, not its connection an unanswered close
                logger.exception("%s %s failed", request.method, request.path)
                self.stats.errors += 1
                error = HTTPError(500, "Internal Server Error", "server_error")
                await self.send_error(writer, error, keep_alive=False)
                return False
            return keep_alive
        finally:
            self.stats.held_bytes -= held[0]

    def _hold(self, held: list[int], size: int) -> None:
        """Count ``size`` more body bytes as held by the request whose count is ``held``; 413 past the
        body cap, 503 past the budget of bytes held by all requests in progress."""
        if held[0] + size > self.max_body_bytes:
            raise HTTPError(413, f"request body too large (at most {self.max_body_bytes} bytes)")
        stats = self.stats
        if self.max_held_bytes is not None and stats.held_bytes + size > self.max_held_bytes:
            raise HTTPError(
                503,
                f"the server holds as many request bytes as it may ({self.max_held_bytes}): retry later",
                "overloaded",
                headers=(("Retry-After", str(self.retry_after_s)),),
            )
        held[0] += size
        stats.held_bytes += size
        stats.max_held_bytes = max(stats.max_held_bytes, stats.held_bytes)

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, error: HTTPError) -> None:
        """Answer ``error`` and close, without a reset: half-close after the answer, then read and drop
        what the client still sends (its body) until it closes, for at most ``LINGER_S``."""
        self.stats.requests += 1
        self.stats.errors += 1
        self.stats.refused[str(error.status)] = self.stats.refused.get(str(error.status), 0) + 1
        await self.send_error(writer, error, keep_alive=False)
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + LINGER_S
            while (left := deadline - loop.time()) > 0:
                if not await asyncio.wait_for(reader.read(1 << 16), left):
                    break

    async def _dispatch(self, request: Request, writer: asyncio.StreamWriter) -> None:
        if request.path in ("/health", "/stats"):
            if request.method != "GET":
                raise HTTPError(405, f"use GET for {request.path}")
            payload = self.health_payload() if request.path == "/health" else self.stats.as_dict()
            await self.send_json(writer, 200, payload, request.keep_alive)
            return
        await self.route(request, writer)

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
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: dict[str, str], held: list[int]
    ) -> bytes:
        """The body; 413 or 503 (``_hold``) before any of it is read when ``Content-Length`` says."""
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = 0
        if not chunked:
            try:
                length = int(headers.get("content-length", "0") or "0")
            except ValueError:
                raise HTTPError(400, "bad Content-Length") from None
            if length < 0:
                raise HTTPError(400, "bad Content-Length")
            self._hold(held, length)
        if headers.get("expect", "").lower() == "100-continue":  # curl does this for larger bodies
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if chunked:
            return await self._read_chunked(reader, held)
        return await reader.readexactly(length) if length else b""

    async def _read_chunked(self, reader: asyncio.StreamReader, held: list[int]) -> bytes:
        parts: list[bytes] = []
        while True:
            size_line = await reader.readline()
            try:
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
            except ValueError:
                raise HTTPError(400, "malformed chunk size") from None
            if size < 0:
                raise HTTPError(400, "malformed chunk size")
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            self._hold(held, size)
            parts.append(await reader.readexactly(size))
            await reader.readline()

    # -- writing ----------------------------------------------------------------------------------

    def head(self, status: int, headers: list[tuple[str, str]], keep_alive: bool) -> bytes:
        """The status line and headers of an answer, ``Connection`` and ``Server`` included."""
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Unknown"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            *(f"{k}: {v}" for k, v in headers),
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            f"Server: {self.server_name}",
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def drain(self, writer: asyncio.StreamWriter) -> None:
        """``writer.drain()``, for at most ``write_timeout_s``: a client that stops reading is cut off
        (``ConnectionResetError``), its buffered answer dropped."""
        try:
            await asyncio.wait_for(writer.drain(), self.write_timeout_s)
        except asyncio.TimeoutError:
            writer.transport.abort()
            raise ConnectionResetError("the client stopped reading its answer") from None

    async def send_json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        keep_alive: bool,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        try:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a client's own "\ud800" escape, sent back): escaped
            data = json.dumps(payload).encode("ascii")
        fields = [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers]
        writer.write(self.head(status, fields, keep_alive) + data)
        await self.drain(writer)

    async def send_error(self, writer: asyncio.StreamWriter, error: HTTPError, keep_alive: bool) -> None:
        payload = error.payload if error.payload is not None else self.error_payload(error)
        with contextlib.suppress(ConnectionError):
            await self.send_json(writer, error.status, payload, keep_alive, error.headers)


class _Protocol(asyncio.StreamReaderProtocol):
    """``asyncio.start_server``'s protocol, completing the connection's ``gone`` future when the peer
    closes its side (EOF) or the connection is lost."""

    def __init__(
        self, reader: asyncio.StreamReader, callback: Any, gone: asyncio.Future[None], loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(reader, callback, loop=loop)
        self._gone = gone

    def _left(self) -> None:
        if not self._gone.done():
            self._gone.set_result(None)

    def eof_received(self) -> bool:
        self._left()
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self._left()
        super().connection_lost(exc)


# -- running one until Ctrl-C ---------------------------------------------------------------------


class CannotListen(Exception):
    """The server could not bind its address (carries the one-line reason)."""


async def serve_until_stopped(server: HTTPServer, banner: Any) -> None:
    """Start ``server``, print ``banner()`` (a line, once the port is known) on stderr, serve until
    SIGINT or SIGTERM, then close it.

    Raises:
        CannotListen: the address cannot be listened on (in use, not permitted, no such host, bad port).
    """
    try:
        await server.start()
    except (OSError, OverflowError, ValueError) as e:  # in use, not permitted, no such host; bad port or name
        raise CannotListen(getattr(e, "strerror", None) or str(e)) from None
    print(banner(), file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def run_server(server: HTTPServer, banner: Any, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM (``serve_until_stopped`` in a fresh event loop), as a command does.

    Raises:
        UserError: the address cannot be listened on.
    """
    from .errors import UserError

    try:
        with contextlib.suppress(KeyboardInterrupt):  # where signal handlers are unavailable
            asyncio.run(serve_until_stopped(server, banner))
    except CannotListen as e:
        raise UserError(f"cannot listen on {host}:{port}: {e}") from None
