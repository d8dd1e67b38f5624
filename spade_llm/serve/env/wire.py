"""serve-env's connections: uvicorn's own HTTP (h11) and WebSocket protocols, under the rules every
spade server keeps (``spade_llm.serve.netguard``), so serve-env is not weaker than serve-sandbox or
serve-fake for running on uvicorn. What uvicorn gives is used as it is (the size of a request head,
``ws_max_size``, the keep-alive timeout, WebSocket pings); these subclasses add what it lacks:

* **A connection cap with eviction** (``ConnectionSlots``): at most ``cap`` connections, counted from
  the moment one is accepted, before a byte of it is read. Past the cap the newcomer takes the slot
  of the oldest connection that has not sent a whole request head (a slow or silent client:
  slowloris), which is closed; when every connection has sent one (sessions, requests in flight), the
  newcomer gets a 503 and is closed (``abort``: an evicted client that reads nothing cannot keep
  its descriptor with an unsent answer). A flood of half-open connections, which needs no token, so
  never runs the process out of descriptors nor locks a client out; accept errors never fill the log
  (``netguard.AcceptErrors``, ``netguard.accept_batch``: the rules serve-sandbox and serve-fake keep).
* **Framing and single fields** (``netguard.head_error``, as serve-sandbox and serve-fake check
  theirs): a request head with two ``Content-Length`` headers (equal or not), a list of lengths, a
  length beside ``Transfer-Encoding``, or two ``Host``, ``Authorization``, ``Origin`` or
  ``Content-Type`` headers is answered 400 and the connection closed. h11 would merge equal lengths
  and let ``Transfer-Encoding`` win, and the access guard's dict would keep the last of two
  ``Authorization`` headers, so the raw head is checked before h11 reads it (the search for its end
  resumes where the last packet's stopped: a head sent a byte at a time costs linear work).
* **Who is on the other end** (``Peer``): one object per TCP connection, across its HTTP requests
  and its WebSocket upgrade, handed to the app in the ASGI scope's ``state`` (``PEER``): the
  sessions it made, whether it has gone, how many messages it was sent. ``sessions.py`` uses it
  to give sessions an owner and to tell a client that left from one that was shown its episode.
* **A log no client can fill** (``ClientNoise``, and ``netguard.AcceptErrors``): what a client causes
  at will (accept failures, malformed requests, text frames that are not UTF-8) is told once a minute.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import time
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..netguard import ConnectionSlots, head_error

__all__ = ["CLIENT_CAUSED", "PEER", "ClientNoise", "Peer", "Wire"]

PEER = "spade.peer"
"""The key of the connection's ``Peer`` in the ASGI scope's ``state``."""
_HEAD_END = re.compile(rb"\n\r?\n")
"""Where a request head ends: h11 takes a bare LF as a line end too."""
_HEAD_END_BYTES = 3
"""The longest match of ``_HEAD_END``: a search resumes this much less one before where it stopped."""
_MAX_HEAD = 16 * 1024
"""h11's own bound on an incomplete head, when uvicorn's ``h11_max_incomplete_event_size`` is unset."""


class Peer:
    """One client connection, from its accept to its close, across its requests and its upgrade."""

    def __init__(self, number: int, host: str) -> None:
        self.number = number
        """Unique in this server's life."""
        self.host = host
        """The client's address: the unit of ``env.max_sessions_per_client``."""
        self.sessions: set[str] = set()
        """openenv-core sessions this connection made (over ``/ws``, or ``/mcp`` when it is on)."""
        self.gone = asyncio.Event()
        """Set once the connection is closed, whoever closed it."""
        self.sent = 0
        """WebSocket messages sent to it so far (``SpadeEnvironment`` tells by it whether a turn went out)."""
        self.malformed: str | None = None
        """Why the last WebSocket message it sent held malformed text (a lone surrogate), else None."""
        self.closing: str | None = None
        """Why the server is closing the connection, when it is (an idle session)."""

    def __repr__(self) -> str:
        return f"Peer(#{self.number}, {self.host})"


def _response(status: str, detail: str, extra: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response that closes the connection, written straight to the transport."""
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


class Wire:
    """What the connections of one server share: the slots, the peers, who to tell of a lost one.

    ``cap``: connections at once (``env.max_connections``, by default below the descriptor limit).
    ``on_lost``: called with each connection's ``Peer`` once it is closed (on the server's loop).
    """

    def __init__(self, cap: int, on_lost: Callable[[Peer], None] = lambda _peer: None) -> None:
        self.slots = ConnectionSlots(cap, self._evict)
        self.on_lost = on_lost
        self._numbers = itertools.count(1)
        self.framing_refused = 0
        """Requests answered 400 for their framing headers, in all."""
        self.busy = _response(
            "503 Service Unavailable",
            f"every one of the {cap} connections this server takes at once is in use (env.max_connections); "
            "retry shortly",
            b"retry-after: 1\r\n",
        )

    @staticmethod
    def _evict(transport: Hashable) -> None:
        """Close a connection for a newcomer at once: ``abort``, not ``close``, which would wait for an
        unsent answer to drain to a client that may never read it, its descriptor held meanwhile."""
        assert isinstance(transport, asyncio.BaseTransport)
        if isinstance(transport, asyncio.WriteTransport):
            transport.abort()
        else:
            transport.close()

    def peer(self, client: tuple[str, int] | None) -> Peer:
        """A new connection's ``Peer``."""
        return Peer(next(self._numbers), client[0] if client else "")

    def lost(self, transport: asyncio.BaseTransport, peer: Peer | None) -> None:
        """The connection on ``transport`` is closed: its slot is free, its peer gone."""
        self.slots.release(transport)
        if peer is not None and not peer.gone.is_set():
            peer.gone.set()
            self.on_lost(peer)

    def protocols(self) -> tuple[type[asyncio.Protocol], type[asyncio.Protocol]]:
        """uvicorn's ``http`` and ``ws`` protocol classes, bound to this wire (``uvicorn.Config(http=, ws=)``)."""
        http = type("SpadeH11Protocol", (_GuardedH11,), {"wire": self})
        ws = type("SpadeWebSocketProtocol", (_GuardedWebSocket,), {"wire": self})
        return http, ws


CLIENT_CAUSED = frozenset(
    {"Invalid HTTP request received.", "Unsupported upgrade request.", "Invalid UTF-8 sequence received from client."}
)
"""uvicorn's log lines that any client causes at will (the last with a traceback)."""


class ClientNoise(logging.Filter):
    """A filter for uvicorn's ``uvicorn.error`` logger: each of ``CLIENT_CAUSED`` told at most once a
    minute, with how many there were, and without its traceback, so a client cannot fill the log;
    every other line passes."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._since: dict[str, int] = {}
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        if message not in CLIENT_CAUSED:
            return True
        self._since[message] = self._since.get(message, 0) + 1
        now = time.monotonic()
        last = self._last.get(message)
        if last is not None and now - last < self.every_s:
            return False
        count, self._since[message] = self._since[message], 0
        self._last[message] = now
        record.exc_info, record.exc_text = None, None
        if count > 1:
            record.msg, record.args = f"{message} ({count} times since it was last told)", ()
        return True


def _header_fields(head: bytes) -> list[tuple[str, str]]:
    """The (name, value) fields of a raw request head, every repetition kept, folded lines joined."""
    fields: list[tuple[str, str]] = []
    for raw in head.split(b"\n")[1:]:
        line = raw.rstrip(b"\r")
        if line[:1] in (b" ", b"\t") and fields:  # obs-fold: the previous field goes on (h11 joins them too)
            name, value = fields[-1]
            fields[-1] = (name, f"{value} {line.strip().decode('latin-1')}")
            continue
        key, colon, rest = line.partition(b":")
        if colon:
            fields.append((key.decode("latin-1"), rest.decode("latin-1")))
    return fields


class _FramedConnection(h11.Connection):
    """h11's server side, with each request head checked (``netguard.head_error``) on the raw bytes
    before h11 parses (and normalises) it; a refused head is never parsed, and the connection reads
    no more.

    The bytes of a head not yet whole are kept here too (``_head``: h11 offers its buffer only as a
    copy, ``trailing_data``, taken once per head), and the search for its end resumes where the last
    one stopped, so a head sent a byte at a time costs linear work, not a copy and a search of the
    whole buffer per packet."""

    def __init__(self, max_head: int, refuse: Callable[[str], None], whole_head: Callable[[], None]) -> None:
        super().__init__(h11.SERVER, max_head)
        self._refuse = refuse
        self._whole_head = whole_head
        self._checked = False
        self._head: bytearray | None = None
        """The next request's bytes received so far, from its first, while its head is not whole."""
        self._searched = 0
        """How much of ``_head`` holds no head end (the search goes on from there)."""
        self.refused = False

    def receive_data(self, data: bytes) -> None:
        super().receive_data(data)
        if self._head is not None:  # h11 takes nothing from its buffer until the head is whole: the same bytes
            self._head += data

    def next_event(self) -> Any:
        if self.refused:
            return h11.PAUSED
        if not self._checked and self.their_state is h11.IDLE:
            if self._head is None:
                self._head = bytearray(self.trailing_data[0])  # the next request's bytes, from its first
                self._searched = 0
            head = self._head
            end = _HEAD_END.search(head, max(0, self._searched - (_HEAD_END_BYTES - 1)))
            if end is None:
                self._searched = len(head)
            else:
                self._checked, self._head = True, None
                why = head_error(_header_fields(bytes(head[: end.start()])))
                if why is not None:
                    self.refused = True
                    self._refuse(why)
                    return h11.PAUSED  # uvicorn stops reading; the transport is closing
        event = super().next_event()
        if isinstance(event, h11.Request):
            self._checked = False  # the next head, on this keep-alive connection, is checked in turn
            self._whole_head()
        return event


class _GuardedH11(H11Protocol):  # type: ignore[misc,unused-ignore]  # Any where uvicorn (openenv-core's) is absent
    """uvicorn's h11 protocol: admitted through the wire's slots, its heads' framing checked."""

    wire: ClassVar[Wire]
    app_state: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        max_head = self.config.h11_max_incomplete_event_size or _MAX_HEAD
        self.conn = _FramedConnection(max_head, self._bad_framing, self._whole_head)
        self.peer: Peer | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override,unused-ignore]
        super().connection_made(transport)
        if not self.wire.slots.admit(transport):
            transport.write(self.wire.busy)
            transport.close()
            return
        self.peer = self.wire.peer(self.client)
        # each request's scope gets a copy of this state: the peer travels with it, and to the
        # WebSocket protocol on an upgrade (uvicorn hands it this app_state)
        self.app_state = {**self.app_state, PEER: self.peer}

    def _whole_head(self) -> None:
        self.wire.slots.active(self.transport)

    def _bad_framing(self, why: str) -> None:
        self.wire.framing_refused += 1
        self.transport.write(_response("400 Bad Request", why))
        self.transport.close()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():  # keep-alive: idle until its next head, evictable again
            self.wire.slots.waiting(self.transport)
        super().on_response_complete()  # may read a pipelined head at once, which makes it active again

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.wire.lost(self.transport, self.peer)


class _GuardedWebSocket(WebSocketsSansIOProtocol):  # type: ignore[misc,unused-ignore]  # see _GuardedH11
    """uvicorn's WebSocket protocol after an upgrade: the slot and peer of the HTTP connection it was."""

    wire: ClassVar[Wire]
    app_state: dict[str, Any]

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        peer = self.app_state.get(PEER)
        self.wire.lost(self.transport, peer if isinstance(peer, Peer) else None)
