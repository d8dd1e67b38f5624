"""serve-env's sessions and what crosses a WebSocket: openenv-core's own server (``HTTPEnvServer``:
``/ws``, ``/mcp``, the HTTP routes), given an owner for every session and a gate on every message.

* **Owners and caps** (``SpadeEnvServer``): a session belongs to the connection that made it
  (``wire.Peer``), whichever way it came in (a ``/ws`` session, or ``openenv/session/create`` over
  ``/mcp``). One client address holds at most ``env.max_sessions_per_client`` sessions, all of them
  at most ``env.max_sessions``; a session made over HTTP ends with its connection (uvicorn closes a
  keep-alive connection after 5 s of silence), so no client can hold the capacity for good.
* **MCP off unless asked for** (``env.mcp``, ``--mcp``): openenv-core mounts ``/mcp`` (HTTP and
  WebSocket) and takes ``mcp`` messages on ``/ws``; its ``openenv/session/close`` closes any session
  by id, and spade's environment has no MCP tools to offer. Off, they are refused (404, or an error
  message on ``/ws``); on, a request naming a session its connection does not own is answered
  ``Unknown session_id``, as for a session that does not exist.
* **The gate** (``Gate``): every WebSocket message is read before openenv-core parses it, so that
  none ends a session: text that is not a JSON object, JSON nested past the parser's depth or with
  more than ``MAX_ITEMS`` values gets an ``INVALID_JSON`` error; a lone surrogate (a ``\\udXXX``
  escape no UTF-8 can carry, on which openenv-core's replies fail and the session ends) becomes
  U+FFFD and is noted on the connection, so a reply holding one gets an observation with an error
  (``SpadeEnvironment.step_async``). Errors going out never echo what the client sent (openenv-core
  puts pydantic's ``input`` in them: a 1 MiB field came back whole). A session with no message for
  ``env.session_idle_s`` is closed (1001), its episode let go. The size of a message is uvicorn's
  ``ws_max_size`` (``env.max_message_bytes``; past it the connection is closed with 1009), and of an
  ``/mcp`` body the same cap, read here (413).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..._util.text import clean_data
from ..netguard import count_json_items
from .access import ASGIApp, Message, Receive, Scope, Send, refuse
from .models import SpadeAction, SpadeObservation
from .openenv_server import (
    HTTPEnvServer,
    JsonRpcErrorCode,
    JsonRpcResponse,
    SessionCapacityError,
    WSErrorCode,
    WSErrorResponse,
    WSMCPResponse,
)
from .wire import PEER, Peer

__all__ = ["MAX_ITEMS", "MCP_OFF", "Gate", "SpadeEnvServer"]

MAX_ITEMS = 10_000
"""Values a WebSocket message or an ``/mcp`` body may hold (an action holds a handful)."""
MCP_OFF = (
    "MCP is off on this server: spade serve-env --mcp (env.mcp: true) serves openenv-core's /mcp and the 'mcp' "
    "messages of /ws; spade's environment itself has no MCP tools"
)
BODY_TIMEOUT_S = 30.0
"""Longest an ``/mcp`` body may take to arrive once its head has."""
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
"""How a lone surrogate gets into text decoded from UTF-8: a JSON escape (as ``text.json_loads`` finds it)."""
_ERROR_FRAME = '{"type":"error"'
"""How openenv-core's error frames start (pydantic dumps ``type`` first)."""


@dataclass(frozen=True)
class Caller:
    """Who a request or WebSocket came from, for ``SpadeEnvServer._create_session``."""

    peer: Peer
    websocket: bool


CALLER: ContextVar[Caller | None] = ContextVar("spade_serve_env_caller", default=None)
"""Set by the gate around the app: openenv-core's handlers create sessions within that context."""


class SpadeEnvServer(HTTPEnvServer):  # type: ignore[misc]  # openenv-core ships no type information
    """openenv-core's ``HTTPEnvServer`` whose sessions have owners (see the module doc).

    ``factory`` makes one environment per session; an environment with a ``peer`` attribute is given
    its connection's ``Peer``.
    """

    def __init__(self, factory: Callable[[], Any], *, max_sessions: int, per_client: int | None) -> None:
        super().__init__(factory, SpadeAction, SpadeObservation, max_concurrent_envs=max_sessions)
        self.per_client = per_client or max_sessions
        self._owners: dict[str, Peer] = {}
        self._over_http: set[str] = set()
        """Sessions made by ``openenv/session/create`` over HTTP: no handler ends them, their connection does."""
        self._creating = asyncio.Lock()
        self._ending: set[asyncio.Task[None]] = set()

    def held_by(self, host: str) -> int:
        """Sessions the client address ``host`` holds now."""
        for session_id in [s for s in self._owners if s not in self._sessions]:  # closed by openenv-core itself
            self._forget(session_id)
        return sum(1 for peer in self._owners.values() if peer.host == host)

    async def _create_session(self) -> tuple[str, Any]:
        caller = CALLER.get()
        if caller is None:  # not through the gate (openenv-core's own uses): no owner
            return await super()._create_session()  # type: ignore[no-any-return]
        peer = caller.peer
        async with self._creating:  # the cap counted and the session made at once
            held = self.held_by(peer.host)
            if held >= self.per_client:
                raise SessionCapacityError(
                    held,
                    self.per_client,
                    f"Server at capacity for this client: {held}/{self.per_client} sessions of {peer.host} active "
                    "(env.max_sessions_per_client)",
                )
            session_id, env = await super()._create_session()
            self._owners[session_id] = peer
            peer.sessions.add(session_id)
            if not caller.websocket:
                self._over_http.add(session_id)
        if hasattr(env, "peer"):
            env.peer = peer
        if not caller.websocket and peer.gone.is_set():  # its connection closed meanwhile: it ends with it
            await self._destroy_session(session_id)
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        self._forget(session_id)
        await super()._destroy_session(session_id)

    def _forget(self, session_id: str) -> None:
        peer = self._owners.pop(session_id, None)
        if peer is not None:
            peer.sessions.discard(session_id)
        self._over_http.discard(session_id)

    def connection_lost(self, peer: Peer) -> None:
        """``peer``'s connection closed: the sessions it made over HTTP end (a ``/ws`` handler ends its own)."""
        for session_id in [s for s in peer.sessions if s in self._over_http]:
            task = asyncio.ensure_future(self._destroy_session(session_id))
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)


def foreign_session(params: Any, peer: Peer) -> str | None:
    """Why a JSON-RPC request's ``params`` may not be served for ``peer``: it names a session its
    connection does not own (told as openenv-core tells of one that does not exist), else None."""
    if not isinstance(params, dict):
        return None
    session_id = params.get("session_id")
    if not session_id or (isinstance(session_id, str) and session_id in peer.sessions):
        return None
    return f"Unknown session_id: {str(session_id)[:80]}"


def lone_surrogate(value: Any) -> str | None:
    """Where the first lone surrogate of JSON data is (``U+D800 at character 32 of data.answer``), or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as e:
                return f"U+{ord(item[e.start]):04X} at character {e.start} of {path or 'the message'}"
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                name = f"{path}.{key}" if path else str(key)
                stack.append((inner, name))
                stack.append((key, f"a key of {path or 'the message'}"))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in reversed(list(enumerate(item))))
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def _brief(error: Any) -> Any:
    """One of pydantic's errors without what the client sent (``input``, ``ctx``) and with short names."""
    if not isinstance(error, dict):
        return _clip(str(error), 200)
    loc = error.get("loc")
    return {
        "type": error.get("type"),
        "loc": [_clip(x, 80) if isinstance(x, str) else x for x in loc[:10]] if isinstance(loc, list) else [],
        "msg": _clip(str(error.get("msg", "")), 300),
    }


def trimmed(text: str) -> str:
    """An openenv-core error frame without the client's own input in it (any other frame as it is)."""
    if not text.startswith(_ERROR_FRAME):
        return text
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, dict):
        return text
    if isinstance(data.get("message"), str):
        data["message"] = _clip(data["message"], 1000)
    if isinstance(data.get("errors"), list):
        data["errors"] = [_brief(e) for e in data["errors"][:20]]
    return json.dumps(reply)


def _ws_error(code: WSErrorCode, message: str) -> str:
    return str(WSErrorResponse(data={"message": message, "code": code}).model_dump_json())


def _rpc_error(code: JsonRpcErrorCode, message: str, request: Any) -> JsonRpcResponse:
    rid = request.get("id") if isinstance(request, dict) else None
    rid = _clip(rid, 200) if isinstance(rid, str) else rid if isinstance(rid, int) else None
    return JsonRpcResponse.error_response(code, message, request_id=rid)


@dataclass
class _Socket:
    """One WebSocket as the gate sees it."""

    peer: Peer
    jsonrpc: bool
    """``/mcp``: JSON-RPC requests, not openenv-core's typed messages."""
    accepted: bool = False
    closed: bool = False
    """The gate closed it (idle): what the app sends after is dropped."""


class Gate:
    """ASGI middleware between the access guard and openenv-core's app (see the module doc)."""

    def __init__(
        self, app: ASGIApp, server: SpadeEnvServer, *, mcp: bool, idle_s: float, max_message_bytes: int
    ) -> None:
        self.app = app
        self.server = server
        self.mcp = mcp
        self.idle_s = idle_s
        self.max_message_bytes = max_message_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        peer = (scope.get("state") or {}).get(PEER)
        if not isinstance(peer, Peer):  # served without serve-env's protocols (a test client): one per scope
            client = scope.get("client")
            peer = Peer(0, str(client[0]) if client else "")
        mcp = str(scope.get("path", "")).rstrip("/") == "/mcp"
        if mcp and not self.mcp:
            await refuse(scope, send, 404, MCP_OFF)
            return
        token = CALLER.set(Caller(peer, websocket=kind == "websocket"))
        try:
            if kind == "websocket":
                await self._websocket(scope, receive, send, _Socket(peer, jsonrpc=mcp))
            elif mcp and scope.get("method") == "POST":
                await self._mcp_post(scope, receive, send, peer)
            else:
                await self.app(scope, receive, send)
        finally:
            CALLER.reset(token)

    # -- WebSockets -------------------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send, sock: _Socket) -> None:
        async def gated_send(message: Message) -> None:
            if sock.closed:
                return
            kind = message["type"]
            if kind == "websocket.accept":
                sock.accepted = True
            elif kind == "websocket.send" and isinstance(message.get("text"), str):
                message = {**message, "text": trimmed(message["text"])}
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the app learns it from its next receive,
                if kind not in ("websocket.send", "websocket.close"):  # not from a chain of failed
                    raise  # sends that openenv-core's handler would log as tracebacks
                return
            if kind == "websocket.send":
                sock.peer.sent += 1

        async def gated_receive() -> Message:
            while True:
                message = await self._next(receive, send, sock)
                if message["type"] != "websocket.receive":
                    return message
                reply, text = self._inspect(message, sock)
                if reply is None:
                    return {"type": "websocket.receive", "text": text}
                await gated_send({"type": "websocket.send", "text": reply})

        await self.app(scope, gated_receive, gated_send)

    async def _next(self, receive: Receive, send: Send, sock: _Socket) -> Message:
        """The next ASGI message; once the session is open, at most ``idle_s`` waited for (then the gate
        closes the WebSocket, 1001, and tells the app it is gone)."""
        if not sock.accepted or sock.closed:
            return await receive()
        getter = asyncio.ensure_future(receive())
        try:
            await asyncio.wait({getter}, timeout=self.idle_s)  # not wait_for: see broker.complete
        except asyncio.CancelledError:
            getter.cancel()
            raise
        if getter.done():
            return getter.result()
        getter.cancel()
        sock.peer.closing = f"the session was idle for {self.idle_s:g} s (env.session_idle_s)"
        sock.closed = True
        with contextlib.suppress(Exception):  # it went away meanwhile
            await send({"type": "websocket.close", "code": 1001, "reason": f"idle for {self.idle_s:g} s"})
        return {"type": "websocket.disconnect", "code": 1001}

    def _inspect(self, message: Message, sock: _Socket) -> tuple[str | None, str]:
        """(a reply to send instead of passing the message on, or None; the text to pass on)."""
        peer = sock.peer
        peer.malformed = None
        text = message.get("text")
        if not isinstance(text, str):
            why = "binary frames are not read: send each message as a text frame holding JSON"
            return self._refusal(sock, why, None), ""
        try:
            count_json_items(text.encode("utf-8"), MAX_ITEMS)
            value = json.loads(text)
        except RecursionError:
            return self._refusal(sock, "not JSON openenv-core can read: nested too deep", None), ""
        except ValueError as e:  # json.JSONDecodeError, JSONTooLarge
            return self._refusal(sock, f"not JSON openenv-core can read: {_clip(str(e), 200)}", None), ""
        if _ESCAPED_SURROGATE.search(text) is not None:
            where = lone_surrogate(value)
            if where is not None:  # openenv-core could not send any reply holding it: U+FFFD instead, noted
                peer.malformed = f"a lone surrogate ({where}), which is not text"
                value = clean_data(value)
                text = json.dumps(value, ensure_ascii=False)
        if sock.jsonrpc:
            if not isinstance(value, dict):
                return self._refusal(sock, "a JSON-RPC request is a JSON object", value), ""
            foreign = foreign_session(value.get("params"), peer)
            if foreign is not None:
                return _rpc_error(JsonRpcErrorCode.INVALID_PARAMS, foreign, value).model_dump_json(), ""
            return None, text
        if not isinstance(value, dict):
            return self._refusal(sock, 'a message is a JSON object: {"type": ..., "data": {...}}', None), ""
        if value.get("type") == "mcp":
            if not self.mcp:
                return _ws_error(WSErrorCode.UNKNOWN_TYPE, MCP_OFF), ""
            data = value.get("data")
            foreign = foreign_session(data.get("params") if isinstance(data, dict) else None, peer)
            if foreign is not None:
                response = _rpc_error(JsonRpcErrorCode.INVALID_PARAMS, foreign, data)
                return str(WSMCPResponse(data=response.model_dump()).model_dump_json()), ""
        return None, text

    @staticmethod
    def _refusal(sock: _Socket, why: str, request: Any) -> str:
        if sock.jsonrpc:
            return str(_rpc_error(JsonRpcErrorCode.PARSE_ERROR, why, request).model_dump_json())
        return _ws_error(WSErrorCode.INVALID_JSON, why)

    # -- /mcp over HTTP ---------------------------------------------------------------------------------

    async def _mcp_post(self, scope: Scope, receive: Receive, send: Send, peer: Peer) -> None:
        """openenv-core's ``POST /mcp``, its body read here first (bounded, in time too) and refused
        when it names a session this connection does not own."""
        body = bytearray()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BODY_TIMEOUT_S
        while True:
            getter = asyncio.ensure_future(receive())
            try:
                await asyncio.wait({getter}, timeout=max(0.0, deadline - loop.time()))
            except asyncio.CancelledError:
                getter.cancel()
                raise
            if not getter.done():
                getter.cancel()
                await refuse(scope, send, 408, f"the body did not arrive within {BODY_TIMEOUT_S:g} s")
                return
            message = getter.result()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_message_bytes:
                why = f"a body is at most {self.max_message_bytes} bytes (env.max_message_bytes)"
                await refuse(scope, send, 413, why)
                return
            if not message.get("more_body", False):
                break
        try:
            count_json_items(bytes(body), MAX_ITEMS)
            request = json.loads(body)
        except (ValueError, RecursionError):
            request = None
        if not isinstance(request, dict):
            reply: JsonRpcResponse | None = _rpc_error(JsonRpcErrorCode.PARSE_ERROR, "not a JSON-RPC request", None)
        else:
            foreign = foreign_session(request.get("params"), peer)
            reply = None if foreign is None else _rpc_error(JsonRpcErrorCode.INVALID_PARAMS, foreign, request)
        if reply is not None:
            payload = reply.model_dump_json().encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
