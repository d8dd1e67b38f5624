"""What every spade server does against floods and tricks, whatever parses its HTTP.

``spade serve-sandbox`` and ``spade serve-fake`` run on ``httpbase`` (asyncio streams), ``spade
serve-env`` on uvicorn (openenv-core's app). The rules below are shared by both, so a server is not
weaker than its siblings for being built on another stack:

* **Framing** (``framing_error``, within ``head_error``): a request with two ``Content-Length``
  headers (equal or not), a list of lengths, a length that is not digits, both ``Content-Length``
  and ``Transfer-Encoding``, or a ``Transfer-Encoding`` other than one ``chunked`` is refused (400).
  Two parsers on one path (a proxy and this server) could otherwise read one request as two
  (request smuggling, RFC 9112 6.3); no honest client sends any of them. h11 (under uvicorn) merges
  equal lengths and lets ``Transfer-Encoding`` win over a length: stricter here.
* **Single fields** (``SINGLE_FIELDS``, within ``head_error``): two ``Host``, ``Content-Type``,
  ``Authorization`` or ``Origin`` headers are refused (400): the access rules read them, and a proxy
  that reads the first while a server's dict keeps the last would let one request pass as another.
* **Descriptors** (``raise_open_files_limit``, ``connection_cap``): the soft limit of open files is
  raised to the hard one at start, and connections are capped below it with room to spare for the
  work itself (sandbox pipes, run files, the model's connections), an explicit cap included. A
  server that runs out of descriptors fails in every part at once: it cannot accept, and the run
  cannot open its records. ``accept_batch`` bounds what asyncio accepts in one turn, before the cap
  sees any of it; ``AcceptErrors`` tells failed accepts once a minute instead of a traceback each.
* **Connection slots** (``ConnectionSlots``): past the cap, a new connection takes the slot of the
  oldest one that has not yet sent a whole request head (a slow or silent client: slowloris), which
  is closed; when every connection has sent one, the new one is refused (503 and closed). A flood
  of half-open connections therefore never locks out a client that sends its request at once.
  (``httpbase`` counts a connection as waiting until its whole request is in, body included: a
  body sent a byte at a time is the same attack one step later.)
* **JSON size** (``JSONMeter``, ``check_json_items``): the values a JSON body would build are
  counted from its bytes before it is parsed, as it arrives where the server reads it in pieces,
  and a body over the limit is refused (413): 2.4 M map entries fit in 24 MB of text and take
  330 MB and seconds once parsed. Every collection is bounded by the total. The count is a few
  C-speed passes over the bytes (no Python step per string or escape), and the event loop is given
  back between them: a thread would not help, as both the passes and ``json.loads`` hold the GIL;
  once the count is bounded, parsing is quick (the longest parse left is one body of plain text at
  the body cap: ~0.1 s of CPU for 32 MiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import resource
import socket
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

__all__ = [
    "DEFAULT_MAX_JSON_ITEMS",
    "FD_RESERVE",
    "LISTEN_BACKLOG",
    "SINGLE_FIELDS",
    "AcceptErrors",
    "ConnectionSlots",
    "JSONMeter",
    "JSONTooLarge",
    "accept_batch",
    "check_json_items",
    "connection_cap",
    "count_json_items",
    "deepen_backlog",
    "default_max_connections",
    "framing_error",
    "head_error",
    "open_files_limit",
    "raise_open_files_limit",
]

DEFAULT_MAX_JSON_ITEMS = 100_000
"""Values (object members and array elements, at any depth) a request's JSON may hold."""
FD_RESERVE = 256
"""Descriptors kept back from connections for the server's own work."""
LISTEN_BACKLOG = 2048
"""The kernel's queue of connections not yet accepted (``deepen_backlog``): a client opens a burst
at once, and the 5 of the standard library's servers stalls it."""
MAX_ACCEPT_BATCH = 512
"""The most connections asyncio accepts in one turn of its loop (``accept_batch``)."""
SINGLE_FIELDS = frozenset({"host", "content-type", "authorization", "origin"})
"""Headers a request may carry once (400 for two): the access rules read them, and a proxy that
reads the first while a server reads the last would let one request pass as another."""


# -- framing --------------------------------------------------------------------------------------


def framing_error(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request's framing headers are refused (see the module doc), or None when they are sound.

    ``headers``: (name, value) pairs as received, every repetition kept; names in any case."""
    lengths = 0
    encodings = 0
    for name, value in headers:
        lower = name.strip().lower()
        if lower == "content-length":
            lengths += 1
            if not value.strip().isdigit() or not value.strip().isascii():
                return f"bad Content-Length {value[:40]!r}: one decimal number is expected"
        elif lower == "transfer-encoding":
            encodings += 1
            if value.strip().lower() != "chunked":
                return f"Transfer-Encoding {value[:40]!r} is not supported (only chunked)"
    if lengths > 1:
        return "more than one Content-Length header"
    if encodings > 1:
        return "more than one Transfer-Encoding header"
    if lengths and encodings:
        return "both Content-Length and Transfer-Encoding: a request has one framing"
    return None


def head_error(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request head's fields are refused (400), or None: its framing (``framing_error``), or a
    ``SINGLE_FIELDS`` header given more than once. Every server checks a head with this, whatever
    parses it, before its access rules read a header.

    ``headers``: (name, value) pairs as received, every repetition kept; names in any case."""
    fields = list(headers)
    problem = framing_error(fields)
    if problem is not None:
        return problem
    seen: set[str] = set()
    for name, _ in fields:
        lower = name.strip().lower()
        if lower in SINGLE_FIELDS:
            if lower in seen:
                return f"more than one {lower!r} header"
            seen.add(lower)
    return None


# -- descriptors and connections --------------------------------------------------------------------


def raise_open_files_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit; returns the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    elif hard == resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY:
        target = max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return int(soft)


def open_files_limit() -> int:
    """This process's soft limit of open files (an unlimited one as 2^20)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def default_max_connections(open_files: int | None = None) -> int:
    """The connection cap for a process allowed ``open_files`` descriptors (default: its soft limit
    now): what is left after ``FD_RESERVE`` for the server's own work, at least 16, and at most 3/4
    of the limit (a small limit keeps a quarter for the work)."""
    if open_files is None:
        open_files = open_files_limit()
    return max(16, min(open_files - FD_RESERVE, open_files * 3 // 4))


def connection_cap(requested: int | None, open_files: int | None = None) -> int:
    """The connections a server takes at once: ``requested`` (``--max-connections``; None for the
    default), never more than ``default_max_connections(open_files)``. A cap past the descriptors
    is no cap: the process runs out of them first and stops accepting (the issue's finding 5), so
    an explicit one is lowered too, by the one rule every server uses.

    Raises:
        ValueError: ``requested`` is below 1."""
    if requested is not None and requested < 1:
        raise ValueError(f"the connection cap must be at least 1, got {requested}")
    room = default_max_connections(open_files)
    return room if requested is None else min(requested, room)


def accept_batch(open_files: int, cap: int) -> int:
    """The ``backlog`` to give asyncio's ``create_server`` (uvicorn's ``backlog``) for a server of
    ``cap`` connections allowed ``open_files`` descriptors.

    asyncio accepts up to ``backlog`` connections in one turn of its loop before any of them reaches
    the code that counts it against the cap, so a flood holds ``cap`` plus a batch at once: a batch
    takes at most a quarter of the descriptors kept back from the cap (at least 8, at most
    ``MAX_ACCEPT_BATCH``). The kernel's queue is then deepened apart (``deepen_backlog``)."""
    return max(8, min(MAX_ACCEPT_BATCH, (open_files - cap) // 4))


def deepen_backlog(sock: socket.socket | int, depth: int = LISTEN_BACKLOG) -> None:
    """``listen(depth)`` on a listening socket (or its descriptor), already listening with asyncio's
    batch as its backlog: a second ``listen`` only deepens the kernel's queue, so a burst waits
    there instead of being refused, while asyncio still accepts ``accept_batch`` a turn."""
    fd = sock if isinstance(sock, int) else sock.fileno()
    with contextlib.suppress(OSError):
        listening = socket.socket(fileno=fd)
        try:
            listening.listen(depth)
        finally:
            listening.detach()


class AcceptErrors:
    """An event loop's exception handler (``loop.set_exception_handler``), with asyncio's accept
    failures (out of descriptors) told in one line a minute through ``log``: asyncio logs a
    traceback for each failed ``accept`` of a batch, which a flood turns into tens of megabytes of
    log. Anything else goes to the default handler."""

    MESSAGE = "socket.accept() out of system resource"
    """asyncio's message for a failed accept (``selector_events``)."""

    def __init__(self, log: Callable[[str], None], every_s: float = 60.0) -> None:
        self.log = log
        self.every_s = every_s
        self.count = 0
        """Failed accepts, in all."""
        self._told = 0
        self._last = -every_s

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != self.MESSAGE:
            loop.default_exception_handler(context)
            return
        self.count += 1
        now = loop.time()
        if now - self._last >= self.every_s:
            self.log(
                f"accepting connections failed {self.count - self._told} time(s): {context.get('exception')} "
                "(the open-files limit: see --max-connections)"
            )
            self._last, self._told = now, self.count


class ConnectionSlots:
    """At most ``cap`` connections; past it, the oldest connection that has not sent a whole request
    head yet is evicted for the newcomer (``admit``). Single-threaded (one event loop).

    A connection is any hashable handle; ``evict`` is called with the handle of a connection to close.
    """

    def __init__(self, cap: int, evict: Callable[[Hashable], None]) -> None:
        if cap < 1:
            raise ValueError(f"the connection cap must be at least 1, got {cap}")
        self.cap = cap
        self._evict = evict
        self._waiting: OrderedDict[Hashable, None] = OrderedDict()
        """Connections without a whole request head yet, oldest first: the ones that may be evicted."""
        self._busy: set[Hashable] = set()
        self.evicted = 0
        """Connections closed to make room, in all."""
        self.refused = 0
        """Connections refused because every slot held a connection that had sent a request."""

    def __len__(self) -> int:
        return len(self._waiting) + len(self._busy)

    def admit(self, conn: Hashable) -> bool:
        """Count ``conn`` in, as waiting for its first request head; False when there is no room
        (the caller answers 503 and closes it; it is not counted)."""
        if len(self) >= self.cap:
            if not self._waiting:
                self.refused += 1
                return False
            oldest, _ = self._waiting.popitem(last=False)
            self.evicted += 1
            self._evict(oldest)
        self._waiting[conn] = None
        return True

    def waiting(self, conn: Hashable) -> None:
        """``conn`` is between requests again (keep-alive idle): it may be evicted like a new one."""
        if conn in self._busy:
            self._busy.discard(conn)
            self._waiting[conn] = None
            self._waiting.move_to_end(conn)

    def active(self, conn: Hashable) -> None:
        """``conn`` has sent a whole request head (or upgraded to a WebSocket): no longer evicted."""
        if self._waiting.pop(conn, 0) is None:
            self._busy.add(conn)

    def release(self, conn: Hashable) -> None:
        """``conn`` is closed: its slot is free."""
        self._waiting.pop(conn, None)
        self._busy.discard(conn)


# -- JSON size --------------------------------------------------------------------------------------


class JSONTooLarge(ValueError):
    """A JSON text holds more values than allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the JSON holds more than {limit} values")
        self.limit = limit


_STRING = re.compile(rb'"[^"]*"')
"""A JSON string once its escaped backslashes and quotes are gone (``_unescaped``): quote to quote."""


def _structure(data: bytes) -> int:
    """Commas and opening brackets in ``data``: one per member or element, one per empty container."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


def _unescaped(data: bytes) -> bytes:
    """``data`` without its ``\\\\`` and ``\\"`` escapes: every quote left opens or closes a string.

    In JSON a backslash occurs only in a string, where it starts a two-character escape (``\\uXXXX``'s
    hex digits hold no quote); removing the escaped backslashes left to right pairs them as a parser
    does, and a backslash left escapes the character after it."""
    if b"\\" not in data:
        return data
    return data.replace(b"\\\\", b"").replace(b'\\"', b"")


def _most_quotes(limit: int) -> int:
    """The most quotes (unescaped) a JSON text of ``limit`` values holds: each string is a value or a
    member's name, so at most ``2 * limit + 1`` strings (``+ 1``: a string at the top)."""
    return 2 * (2 * limit + 1)


def _too_many_strings(data: bytes, limit: int) -> bool:
    """Whether ``data`` (unescaped) has more strings than a JSON text of ``limit`` values can."""
    return data.count(b'"') > _most_quotes(limit)


def count_json_items(data: bytes, limit: int) -> int:
    """The values of the JSON text ``data`` at any depth (members and elements, an empty container
    counting one; the top-level value aside), or a bound above it: ``JSONTooLarge`` exactly when
    they are more than ``limit``.

    The bound is the commas and opening brackets in the whole text when they are ``limit`` or fewer
    (those in strings only add); past it, those outside strings are counted exactly. For well-formed
    JSON (a text that is not JSON may be refused as too large: the parser would refuse it anyway).
    C-speed passes over the bytes only, a few per body whatever it holds (no Python step per string
    or per escape: a body of 10 M escaped quotes would make that seconds long)."""
    quick = _structure(data)
    if quick <= limit:  # commas and brackets inside strings only add: the bound holds
        return quick
    data = _unescaped(data)
    if _too_many_strings(data, limit):
        raise JSONTooLarge(limit)
    count = _structure(_STRING.sub(b"", data))
    if count > limit:
        raise JSONTooLarge(limit)
    return count


class JSONMeter:
    """The first passes of ``check_json_items``, made on a body a piece at a time as it arrives
    (``feed``): the work is spread over the reading instead of one pass over the whole body at its
    end, and a body whose count is already known to pass the limit is refused before the rest of it
    is read (``JSONTooLarge`` from ``feed``): one whose strings hold no escapes and that has more
    strings than ``limit`` values allow (2.4 M map entries: after its first ~2 MB)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.structure = 0
        """Commas and opening brackets so far, strings' included (``_structure``)."""
        self.quotes = 0
        self.escapes = False
        """Whether a backslash came: then quotes may be escaped ones, and only the full count tells."""
        self.size = 0
        """Bytes fed."""

    def feed(self, piece: bytes) -> None:
        """Count ``piece``, the body's next bytes.

        Raises:
            JSONTooLarge: the body holds more than ``limit`` values, whatever follows.
        """
        self.size += len(piece)
        self.structure += _structure(piece)
        self.quotes += piece.count(b'"')
        self.escapes = self.escapes or b"\\" in piece
        if self.structure > self.limit and not self.escapes and self.quotes > _most_quotes(self.limit):
            raise JSONTooLarge(self.limit)


async def check_json_items(data: bytes, limit: int, meter: JSONMeter | None = None) -> None:
    """``count_json_items``, giving the event loop back between its passes over the bytes (each one
    C-speed pass: ~10-60 ms for 32 MiB; a thread would not help, as the passes hold the GIL).
    ``meter``: the same limit's ``JSONMeter``, fed all of ``data`` as it arrived: its passes are not
    made again (most bodies need none more).

    Raises:
        JSONTooLarge: ``data`` holds more than ``limit`` values.
    """
    if meter is not None and (meter.limit != limit or meter.size != len(data)):
        meter = None  # not this body's, or not all of it: count afresh
    if (meter.structure if meter is not None else _structure(data)) <= limit:
        return
    if meter is None or meter.escapes:
        await asyncio.sleep(0)
        data = _unescaped(data)
        await asyncio.sleep(0)
        if _too_many_strings(data, limit):
            raise JSONTooLarge(limit)
    elif meter.quotes > _most_quotes(limit):  # ``feed`` raised this already, unless called so
        raise JSONTooLarge(limit)
    await asyncio.sleep(0)
    outside = _STRING.sub(b"", data)
    del data
    await asyncio.sleep(0)
    if _structure(outside) > limit:
        raise JSONTooLarge(limit)
