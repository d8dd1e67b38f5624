"""The small HTTP/1.1 server under ``spade serve-fake`` and ``spade serve-sandbox``.

Why it exists: both servers need the same plumbing (read a request, keep the connection alive,
answer errors, ``/health``, stop cleanly on SIGINT/SIGTERM) and neither is worth a dependency. The
standard library's asyncio streams serve any number of connections from one event loop; a
``ThreadingHTTPServer`` would spend a thread per connection, and aiohttp/uvicorn would be new
dependencies of a package that serves only tests, benchmarks and a local trainer.

Why its own parser, when h11 (the maintained one under uvicorn and httpx) is at hand: h11 merges
equal duplicate ``Content-Length`` headers and lets ``Transfer-Encoding`` win over a length, both
of which this server refuses (``netguard.framing_error``). The parser here is strict instead of
lenient wherever leniency lets two parsers on one path (a proxy and this server) read different
requests: a request line of exactly three parts and HTTP/1.0 or 1.1; header names that are
tokens, no space before the colon, no line folding, no control characters in values; framing and
one ``Host``, ``Content-Type``, ``Authorization``, ``Origin`` by ``netguard.head_error`` (the rule
serve-env's connections keep too); chunk sizes of hex digits only, each chunk ended by its line
end. Anything else is a 400, and the connection is closed.

What it does: HTTP/1.1 and 1.0 with keep-alive (clients such as httpx and requests pool
connections), ``Content-Length`` and chunked request bodies, ``Expect: 100-continue`` (curl sends
it for larger bodies), bounded request lines, headers and bodies, an idle timeout between requests,
a read timeout for a request head, a stall timeout for its body (``PIECE_TIMEOUT_S`` without a
byte), and a write timeout for a client that stops reading its answer; a bug
in a route answers 500 (logged) instead of dropping the connection unanswered. A subclass answers
its own routes (``route``) in its own error shape (``error_payload``); the base answers ``GET
/health`` and ``GET /stats`` (``HTTPStats``) for both.

Floods (the rules every spade server shares: ``netguard``):

* **Connections**: at most ``max_connections`` (``netguard.connection_cap``: the default, and any
  larger one asked for, below the open-files limit, which ``run_server`` raises first; failed
  accepts are told once a minute, ``netguard.AcceptErrors``). Past it a newcomer takes the
  slot of the oldest connection that has not sent a whole request yet (head and body: a silent
  or slow client), which is closed; when every connection has, the newcomer gets a 503 and is
  closed. Idle keep-alive connections count as not having sent one.
* **Bytes held**: ``max_held_bytes`` bounds the body bytes all requests in progress hold together,
  counted as they *arrive* (a declared ``Content-Length`` is a promise, not memory: counting it
  let a few slow clients lock everyone out), and a route may re-count a request as what it holds
  once parsed (``hold_bytes``), and an answer's bytes count while they wait for a client that
  does not read them (``drain``). The bytes of bodies still arriving are *reclaimable*: a
  request that would pass the budget first takes back those of unfinished bodies, the one longest
  without a new piece first, which then get a 503 (a client holding back its last byte is the
  attack: whatever it sent is reclaimed for whoever needs it; a body still coming in goes last),
  and only when what is left is held by requests already in (parsed,
  waiting, running, answered) is it refused: a 503 with ``Retry-After``, before the body is read
  when those spend the budget already, else as the piece that would pass it arrives. A body that
  makes no progress for ``PIECE_TIMEOUT_S`` is dropped, and a refused request lets go of its bytes
  before its answer (its client may take ``LINGER_S`` to leave). One body is at most
  ``max_body_bytes`` (413: from ``Content-Length`` before reading; a chunked body as its chunks
  arrive, its framing counted).
* **JSON**: the values a body would build are counted as it arrives (``netguard.JSONMeter``: a
  body known to hold too many is refused before the rest of it is read), and ``read_json`` ends
  the count (``netguard.check_json_items``, giving the event loop back between passes) and refuses
  more than ``max_json_items`` with a 413 before ``json.loads`` builds anything.

Refusing before the body, and without a reset: ``check_head`` (a subclass's access rules) runs
once the headers are in, before ``100 Continue`` and before any of the body is read. A refused
request is answered with ``Connection: close``, then the server half-closes (FIN after the
answer) and reads and discards what the client still sends, for at most ``LINGER_S``, before it
closes: closing a socket with unread data in its receive buffer sends a TCP reset, and a client
still sending its body would then lose the answer (``requests`` and curl report a reset instead
of the status).

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
import re
import signal
import sys
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

from .netguard import (
    DEFAULT_MAX_JSON_ITEMS,
    AcceptErrors,
    ConnectionSlots,
    JSONMeter,
    JSONTooLarge,
    accept_batch,
    check_json_items,
    connection_cap,
    deepen_backlog,
    head_error,
    open_files_limit,
    raise_open_files_limit,
)

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_HELD_BYTES = 256 * 1024 * 1024
"""The default budget of body bytes held by all requests in progress (``HTTPServer``)."""
BODY_PIECE = 256 * 1024
"""A body is read (and its bytes counted) this much at most at a time."""
IDLE_TIMEOUT_S = 75.0
"""A keep-alive connection with no new request for this long is closed (frees idle sockets)."""
READ_TIMEOUT_S = 30.0
"""Time allowed to send the rest of a request head once its first line arrived."""
PIECE_TIMEOUT_S = 5.0
"""Time a body (or a chunk's framing) may go without a new byte: a client that holds back the rest
of its body is dropped then, its bytes freed (a whole-body deadline would let it hold them longer)."""
WRITE_TIMEOUT_S = 60.0
"""Time allowed for a client to take (a piece of) an answer: one that stops reading is cut off, and
the answer buffered for it freed (else each such client would hold its answer's memory for good)."""
LINGER_S = 10.0
"""After a refusal, how long the rest of the request is read and thrown away before the socket is
closed (a reset before the client has sent its body would lose it the answer)."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""RFC 9110's ``token``: a method, a header name."""
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters no header value may hold (a tab may)."""
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;[^\r\n]*)?\r?\n")
"""A chunk-size line: hex digits only (no sign, ``0x`` or ``_``, which ``int(x, 16)`` takes), then extensions."""
_NOT_IN_TARGET = re.compile(rb"[\x00-\x20\x7f]")
"""Bytes a request target may not hold (whitespace and control characters)."""
_VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")

logger = logging.getLogger("spade_llm.serve.httpbase")


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
    """The most connections open at once."""
    connection_cap: int = 0
    """Connections allowed at once (``HTTPServer.max_connections``)."""
    evicted: int = 0
    """Connections closed to make room for a newcomer (none had sent a whole request)."""
    connections_refused: int = 0
    """Connections answered 503 and closed at once: the cap was reached and every one was busy."""
    held_bytes: int = 0
    """Body bytes of the requests in progress now (received so far, or what a route holds instead)."""
    unfinished_bytes: int = 0
    """Of ``held_bytes``, those of bodies still arriving: reclaimed before a request is refused."""
    max_held_bytes: int = 0
    reclaimed: int = 0
    """Unfinished bodies aborted to make room in the budget for another request."""
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
            "connection_cap": self.connection_cap,
            "evicted": self.evicted,
            "connections_refused": self.connections_refused,
            "held_bytes": self.held_bytes,
            "unfinished_bytes": self.unfinished_bytes,
            "max_held_bytes": self.max_held_bytes,
            "reclaimed": self.reclaimed,
            "refused": dict(self.refused),
            "uptime_s": round(time.time() - self.started, 3),
        }


@dataclass
class Request:
    """One parsed request. ``path`` is the decoded path without query or trailing ``/``, after the
    server's ``canonical_path``; ``headers`` have lower-case names (a repeated one joined with
    ``", "``). ``check_head`` sees it before the body is read (``body`` still empty)."""

    method: str
    target: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    gone: asyncio.Future[None] | None = None
    """Done once the client has closed its side of the connection (see the module doc)."""
    held: int = 0
    """Bytes counted against the server's ``max_held_bytes`` for this request (``hold_bytes``)."""
    meter: JSONMeter | None = None
    """The body's JSON values, counted as it arrived (``read_json`` takes it from there)."""
    connection: asyncio.WriteTransport | None = None
    """The connection it came on."""
    reading: bool = False
    """Whether its body is still arriving: what it holds then may be reclaimed (``HTTPServer._reclaim``)."""
    reclaimed: bool = False
    """Whether its body's bytes were taken back for another request (it is then answered 503)."""
    parts: list[bytes] = field(default_factory=list)
    """Its body's pieces so far, while it arrives (here, so a reclaim frees them at once)."""

    def take_body(self) -> bytes:
        """The body, no longer held here: a route that parses it and then waits frees its bytes."""
        body, self.body = self.body, b""
        return body


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
        self,
        host: str,
        port: int,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_held_bytes: int | None = MAX_HELD_BYTES,
        max_json_items: int = DEFAULT_MAX_JSON_ITEMS,
        max_connections: int | None = None,
    ) -> None:
        """``max_body_bytes``: one request's body (413 beyond it). ``max_held_bytes``: the body bytes
        all requests in progress (being read, waiting, running) may hold together, None for no bound
        (503 with ``Retry-After`` beyond it). ``max_json_items``: the values a JSON body may hold
        (``read_json``; 413 beyond). ``max_connections``: connections at once (None: from the
        open-files limit when started; never more than that, ``netguard.connection_cap``)."""
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self.host = host
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.max_held_bytes = max_held_bytes
        self.max_json_items = max_json_items
        self.max_connections = max_connections
        """Connections at once: as asked until ``start``, then the cap in force (``connection_cap``)."""
        self._asked_connections = max_connections
        self.stats: HTTPStats = HTTPStats()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._slots: ConnectionSlots | None = None
        self._unfinished: OrderedDict[asyncio.BaseTransport, Request] = OrderedDict()
        """Requests whose body is arriving and holds bytes, by connection, the longest without a new
        piece first: the bytes ``_reclaim`` may take back."""

    @property
    def origin(self) -> str:
        """``http://host:port`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        open_files = open_files_limit()
        asked = self._asked_connections
        self.max_connections = connection_cap(asked, open_files)
        if asked is not None and self.max_connections < asked:
            logger.warning(
                "%s: max_connections %d lowered to %d, below the open-files limit (%d) less the descriptors "
                "the work needs",
                self.server_name,
                asked,
                self.max_connections,
                open_files,
            )
        self._slots = ConnectionSlots(self.max_connections, self._evict)
        self.stats.connection_cap = self.max_connections

        def protocol() -> _Protocol:  # asyncio.start_server's, plus the connection's "gone" future
            gone: asyncio.Future[None] = loop.create_future()
            reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES, loop=loop)
            return _Protocol(reader, functools.partial(self._on_connection, gone=gone), gone, loop)

        per_turn = accept_batch(open_files, self.max_connections)
        self._server = await loop.create_server(protocol, self.host, self.port, backlog=per_turn)
        for listening in self._server.sockets:
            deepen_backlog(listening.fileno())
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

    def parse_json(self, body: bytes) -> Any:
        """``body`` as JSON (None when empty), once ``read_json`` has bounded its size; ``HTTPError(400)``
        when it is not JSON (a subclass answers in its clients' shape)."""
        try:
            return json.loads(body.decode("utf-8")) if body else None
        except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, too deep, an int too long
            raise HTTPError(400, f"the body is not JSON: {e}") from None

    # -- what routes use -------------------------------------------------------------------------

    async def read_json(self, request: Request) -> Any:
        """The body as JSON, taken from ``request`` (its bytes freed once parsed): its values counted
        first, the event loop given back meanwhile, and more than ``max_json_items`` refused (413)
        before any is built; then ``parse_json``."""
        body = request.take_body()
        try:
            await check_json_items(body, self.max_json_items, request.meter)
        except JSONTooLarge:
            raise self._too_many_values() from None
        return self.parse_json(body)

    def _too_many_values(self) -> HTTPError:
        return HTTPError(413, f"request body too large: its JSON holds more than {self.max_json_items} values")

    def hold_bytes(self, request: Request, size: int) -> None:
        """Count ``request`` as holding ``size`` bytes from now on (what it keeps once parsed, in place
        of its body's bytes) until it ends; an ``HTTPError`` 503 when that would take the bytes held by
        all requests past ``max_held_bytes``."""
        self._hold(request, size - request.held)

    def _hold(self, request: Request, change: int) -> None:
        """Count ``change`` more bytes for ``request``; past the budget, unfinished bodies are reclaimed
        first (``_reclaim``), and a 503 only when that is not enough. A body still arriving moves to
        the back of the reclaim order: it made progress."""
        if request.reclaimed:
            raise self._over_budget()
        stats = self.stats
        budget = self.max_held_bytes
        if change > 0 and budget is not None and stats.held_bytes + change > budget:
            self._reclaim(stats.held_bytes + change - budget, request)
            if stats.held_bytes + change > budget:
                raise self._over_budget()
        request.held += change
        stats.held_bytes += change
        stats.max_held_bytes = max(stats.max_held_bytes, stats.held_bytes)
        if request.reading:
            stats.unfinished_bytes += change
            conn = request.connection
            if conn is not None and request.held > 0:
                self._unfinished[conn] = request
                self._unfinished.move_to_end(conn)

    def _release(self, request: Request) -> None:
        """``request`` holds nothing from now on (ended, refused, or reclaimed)."""
        self._done_reading(request)
        self.stats.held_bytes -= request.held
        request.held = 0

    def _done_reading(self, request: Request) -> None:
        """``request``'s body is no longer arriving (whole, or given up): its bytes are not reclaimable."""
        if request.reading:
            request.reading = False
            self.stats.unfinished_bytes -= request.held
            if request.connection is not None:
                self._unfinished.pop(request.connection, None)

    def _reclaim(self, need: int, keep: Request) -> None:
        """Take back the bytes of unfinished bodies, the one longest without a new piece first, until
        ``need`` bytes are free or none is left (``keep``'s own body aside). A client that holds back
        the end of its body holds the budget for nobody: an honest body in progress gets new pieces,
        and so goes last. Its pieces are dropped at once; the request learns it when it next reads
        (a piece, the end of its framing) and is answered 503, without a reset, like any refusal, or
        its connection is dropped when it sends nothing more (``PIECE_TIMEOUT_S``)."""
        own = self._unfinished.pop(keep.connection, None) if keep.connection is not None else None
        try:
            while need > 0 and self._unfinished:
                _, victim = self._unfinished.popitem(last=False)
                need -= victim.held
                self._release(victim)
                victim.parts.clear()
                victim.reclaimed = True
                self.stats.reclaimed += 1
        finally:
            if own is not None and keep.connection is not None:
                self._unfinished[keep.connection] = own

    def _over_budget(self) -> HTTPError:
        return HTTPError(
            503,
            f"the server holds as many request bytes as it may ({self.max_held_bytes}): retry later",
            "overloaded",
            headers=(("Retry-After", str(self.retry_after_s)),),
        )

    # -- connection handling --------------------------------------------------------------------

    def _evict(self, conn: Hashable) -> None:
        """Close a connection that has not sent a whole request, for a newcomer (``ConnectionSlots``)."""
        if isinstance(conn, asyncio.WriteTransport):
            self.stats.evicted += 1
            conn.abort()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Future[None] | None = None
    ) -> None:
        task = asyncio.current_task()
        stats = self.stats
        slots = self._slots
        conn = writer.transport
        if slots is not None and not slots.admit(conn):
            stats.connections_refused += 1
            self._turn_away(writer)
            return
        if task is not None:
            self._connections.add(task)
        stats.connections += 1
        stats.max_connections = max(stats.max_connections, stats.connections)
        try:
            while await self._one_request(reader, writer, gone):
                if slots is not None:
                    slots.waiting(conn)  # idle between requests: evicted before a busy one
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # the client went away, or idled out: nothing to answer
        except asyncio.CancelledError:
            pass  # server shutting down
        finally:
            stats.connections -= 1
            if slots is not None:
                slots.release(conn)
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

    def _turn_away(self, writer: asyncio.StreamWriter) -> None:
        """A 503 for a connection past the cap, then close it (nothing of its request is read)."""
        error = HTTPError(503, "too many connections: retry later", "overloaded", headers=(("Retry-After", "1"),))
        with contextlib.suppress(Exception):
            payload = json.dumps(self.error_payload(error)).encode()
            fields = [("Content-Type", "application/json"), ("Content-Length", str(len(payload))), *error.headers]
            writer.write(self.head(503, fields, keep_alive=False) + payload)
        writer.transport.close()  # the answer goes as the socket takes it, then the descriptor

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Future[None] | None = None
    ) -> bool:
        """Read and answer one request; True when the connection stays open for another."""
        try:
            line = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
        except ValueError:  # line longer than the limit
            await self._refuse(reader, writer, HTTPError(431, "request line too long"))
            return False
        if not line.endswith(b"\n"):
            return False  # clean close between requests, or a line cut by the client's close
        if line in (b"\r\n", b"\n"):
            return True  # tolerated stray CRLF between requests (RFC 9112 2.2)
        request: Request | None = None
        try:
            try:
                method, target, version = _request_line(line)
                fields = await asyncio.wait_for(_read_fields(reader), READ_TIMEOUT_S)
                headers = _header_dict(fields, version)
                tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
                keep_alive = ("close" not in tokens) if version == "HTTP/1.1" else ("keep-alive" in tokens)
                try:
                    path = self.canonical_path(unquote(urlsplit(target).path).rstrip("/") or "/")
                except ValueError:  # urlsplit's: a bracketed host left open, say
                    raise HTTPError(400, "malformed request target") from None
                request = Request(method.upper(), target, path, headers, b"", keep_alive, gone)
                request.connection = writer.transport
                self.check_head(request)
                budget, stats = self.max_held_bytes, self.stats
                if budget is not None and stats.held_bytes - stats.unfinished_bytes >= budget:
                    raise self._over_budget()  # spent by requests already in: refused before reading
                request.body = await self._read_body(reader, writer, request)
            except HTTPError as e:
                if request is not None:
                    self._release(request)  # before the answer: the client decides how long it lingers
                await self._refuse(reader, writer, _bare(e))
                return False
            if self._slots is not None:
                self._slots.active(writer.transport)  # a whole request in: no longer evicted for a newcomer
            self.stats.requests += 1
            keep_alive = request.keep_alive
            try:
                await self._dispatch(request, writer)
            except HTTPError as e:
                self.stats.errors += 1
                self._release(request)  # its work is over: the answer's own bytes count while they wait
                await self.send_error(writer, _bare(e), keep_alive)
            except (ConnectionError, asyncio.TimeoutError, asyncio.CancelledError):
                raise
            except Exception:  # a bug costs this request a 500, not its connection an unanswered close
                logger.exception("%s %s failed", request.method, request.path)
                self.stats.errors += 1
                self._release(request)
                error = HTTPError(500, "Internal Server Error", "server_error")
                await self.send_error(writer, error, keep_alive=False)
                return False
            return keep_alive
        finally:
            if request is not None:
                self._release(request)

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

    async def _read_body(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: Request) -> bytes:
        """The body, its bytes counted as they arrive (``_hold``, reclaimable until it is whole); a 413
        before any is read when ``Content-Length`` passes ``max_body_bytes``; ``TimeoutError`` when
        ``PIECE_TIMEOUT_S`` pass without a byte of it."""
        headers = request.headers
        chunked = "transfer-encoding" in headers  # framing_error let only "chunked" through
        length = 0
        if not chunked:
            declared = headers.get("content-length", "0").strip()
            length = int(declared) if len(declared) <= 18 else self.max_body_bytes + 1  # a longer one is huge
            if length > self.max_body_bytes:
                raise HTTPError(413, f"request body too large (at most {self.max_body_bytes} bytes)")
        request.meter = JSONMeter(self.max_json_items)
        if (chunked or length) and headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits for it before a larger body
            await writer.drain()
        request.reading = True
        try:
            if chunked:
                await self._read_chunked(reader, request)
            else:
                await self._read_exactly(reader, request, length)
            if request.reclaimed:  # between its last piece and the end of its framing
                raise self._over_budget()
            parts, request.parts = request.parts, []
            return parts[0] if len(parts) == 1 else b"".join(parts)
        finally:
            self._done_reading(request)
            request.parts = []

    async def _read_exactly(self, reader: asyncio.StreamReader, request: Request, length: int) -> None:
        """``length`` bytes of body onto ``request.parts``, in pieces of at most ``BODY_PIECE``, each
        counted once it is here (bytes held, and JSON values: a 413 as soon as they are known to be
        too many)."""
        while length > 0:
            piece = await asyncio.wait_for(reader.read(min(length, BODY_PIECE)), PIECE_TIMEOUT_S)
            if not piece:
                raise asyncio.IncompleteReadError(b"", length)
            self._hold(request, len(piece))
            if request.meter is not None:
                try:
                    request.meter.feed(piece)
                except JSONTooLarge:
                    raise self._too_many_values() from None
            request.parts.append(piece)
            length -= len(piece)

    async def _read_chunked(self, reader: asyncio.StreamReader, request: Request) -> None:
        """A chunked body onto ``request.parts``. Its framing (size lines, line ends) counts toward
        ``max_body_bytes`` with its data, so a body of one-byte chunks costs no more reading than one
        of big chunks."""
        wire = 0
        too_large = HTTPError(413, f"request body too large (at most {self.max_body_bytes} bytes)")
        while True:
            line = await asyncio.wait_for(_read_line(reader, "chunk size"), PIECE_TIMEOUT_S)
            match = _CHUNK_SIZE.fullmatch(line)
            if match is None:
                raise HTTPError(400, "malformed chunk size")
            size = int(match.group(1), 16)
            wire += len(line) + size + 2
            if wire > self.max_body_bytes:
                raise too_large
            if size == 0:
                await asyncio.wait_for(_read_fields(reader), PIECE_TIMEOUT_S)  # trailers, bounded: dropped
                return
            await self._read_exactly(reader, request, size)
            end = await asyncio.wait_for(_read_line(reader, "chunk end"), PIECE_TIMEOUT_S)
            if end not in (b"\r\n", b"\n"):
                raise HTTPError(400, "a chunk is longer than its size says")

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
        (``ConnectionResetError``), its buffered answer dropped. Meanwhile the answer's bytes still
        buffered count as held (``max_held_bytes``): clients that do not read their answers make the
        server refuse new work instead of holding more answers."""
        stats = self.stats
        pending = writer.transport.get_write_buffer_size()
        stats.held_bytes += pending
        stats.max_held_bytes = max(stats.max_held_bytes, stats.held_bytes)
        try:
            await asyncio.wait_for(writer.drain(), self.write_timeout_s)
        except asyncio.TimeoutError:
            writer.transport.abort()
            raise ConnectionResetError("the client stopped reading its answer") from None
        finally:
            stats.held_bytes -= pending

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


def _bare(error: HTTPError) -> HTTPError:
    """``error`` without its traceback and context: their frames hold the locals of the code that
    raised it (a body's pieces), which would stay in memory while the answer is sent and the client
    lingers."""
    error.__traceback__ = None
    error.__context__ = None
    error.__cause__ = None
    return error


# -- the strict parser (see the module doc) ---------------------------------------------------------


def _request_line(line: bytes) -> tuple[str, str, str]:
    """Method, target and version of a request line (its line end included); 400 or 505 when it is
    not exactly ``METHOD SP target SP HTTP/1.x``."""
    parts = line.rstrip(b"\n").removesuffix(b"\r").split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1] or _NOT_IN_TARGET.search(parts[1]):
        raise HTTPError(400, "malformed request line")
    version = parts[2]
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        if _VERSION.fullmatch(version):
            raise HTTPError(505, f"HTTP version {version.decode('ascii')} not supported (HTTP/1.1 or 1.0)")
        raise HTTPError(400, "malformed request line")
    return parts[0].decode("ascii"), parts[1].decode("latin-1"), version.decode("ascii")


async def _read_line(reader: asyncio.StreamReader, what: str) -> bytes:
    """One line (its end included); 400 when longer than the reader's limit, ``IncompleteReadError``
    when the client closed before its end."""
    try:
        line = await reader.readline()
    except ValueError:
        raise HTTPError(400, f"{what} line too long") from None
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    return line


async def _read_fields(reader: asyncio.StreamReader) -> list[tuple[str, str]]:
    """The header fields up to the blank line, as (lower-case name, value) pairs, repetitions kept;
    431 past ``MAX_HEADER_BYTES``, 400 for a malformed line."""
    fields: list[tuple[str, str]] = []
    total = 0
    while True:
        try:
            line = await reader.readline()
        except ValueError:
            raise HTTPError(431, "header line too long") from None
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise HTTPError(431, "headers too large")
        if not line.endswith(b"\n"):
            raise asyncio.IncompleteReadError(line, None)
        text = line[:-1].removesuffix(b"\r")
        if not text:
            return fields
        if text[:1] in (b" ", b"\t"):
            raise HTTPError(400, "obsolete line folding in the headers")
        name, sep, value = text.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            raise HTTPError(400, "malformed header line")
        value = value.strip(b" \t")
        if _CONTROL.search(value):
            raise HTTPError(400, f"control character in header {name.decode('ascii')!r}")
        fields.append((name.decode("ascii").lower(), value.decode("latin-1")))


def _header_dict(fields: list[tuple[str, str]], version: str) -> dict[str, str]:
    """The fields as a dict (a repeated list-valued one joined with ``", "``); 400 for a head
    ``netguard.head_error`` refuses (framing, a repeated ``SINGLE_FIELDS`` one), or chunked HTTP/1.0."""
    problem = head_error(fields)
    if problem is not None:
        raise HTTPError(400, problem)
    headers: dict[str, str] = {}
    for name, value in fields:
        if name in headers:
            headers[name] = f"{headers[name]}, {value}"
        else:
            headers[name] = value
    if version == "HTTP/1.0" and "transfer-encoding" in headers:
        raise HTTPError(400, "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1: faulty framing)")
    return headers


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
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(AcceptErrors(functools.partial(_tell, server.server_name)))  # before the 1st accept
    try:
        await server.start()
    except (OSError, OverflowError, ValueError) as e:  # in use, not permitted, no such host; bad port or name
        raise CannotListen(getattr(e, "strerror", None) or str(e)) from None
    print(banner(), file=sys.stderr, flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def _tell(name: str, line: str) -> None:
    print(f"{name.replace('-', ' ', 1)}: {line}", file=sys.stderr, flush=True)  # "spade serve-fake: ..."


def run_server(server: HTTPServer, banner: Any, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM (``serve_until_stopped`` in a fresh event loop), as a command does,
    the soft limit of open files raised first (``netguard.raise_open_files_limit``).

    Raises:
        UserError: the address cannot be listened on.
    """
    from ..errors import UserError

    raise_open_files_limit()  # before the server derives its connection cap from it
    try:
        with contextlib.suppress(KeyboardInterrupt):  # where signal handlers are unavailable
            asyncio.run(serve_until_stopped(server, banner))
    except CannotListen as e:
        raise UserError(f"cannot listen on {host}:{port}: {e}") from None
