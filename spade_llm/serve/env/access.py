"""Who may use a ``spade serve-env``: the same rules as ``spade serve-sandbox`` (see its module doc),
checked from the headers of every HTTP request and WebSocket handshake before the app sees it.

* **Host**: bound to loopback (the default 127.0.0.1), a ``Host`` that is not a loopback name is a
  403 (DNS rebinding).
* **Origin**: a non-loopback ``Origin`` is a 403. Browsers open WebSockets to any site without
  asking, so this is what stops a web page from driving the environment; Python clients send none.
* **Token**: with a token (``SPADE_ENV_TOKEN``, or ``--token-file``), every path but ``/health``
  needs ``Authorization: Bearer <token>``, or ``Basic`` with the token as the password, which is
  what a WebSocket client sends for ``http://spade:<token>@host:port`` (openenv-core's
  ``EnvClient`` takes a URL and no headers); else a 401. Listening beyond loopback *requires* a
  token: anyone reaching the port could otherwise run code in the sandbox and write the run's
  training data.

A refused WebSocket handshake gets the status an HTTP request would (401 without the token, 403
for a foreign Host or Origin), through ASGI's ``websocket.http.response``. Two ``Host``,
``Origin`` or ``Authorization`` headers are a 400 (``netguard.head_error``): serve-env's
connections refuse them before h11 reads the head (``wire.py``), and the guard again, whatever
server runs the app, so no rule here reads one of two.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import UserError
from ..netguard import head_error
from ..sandbox import host_name, is_loopback, load_token, loopback_origin, token_matches
from . import TOKEN_ENV

__all__ = ["TOKEN_ENV", "Guard", "check_exposure", "load_env_token", "refuse"]

OPEN_PATHS = frozenset({"/health"})
"""Served without the token: the readiness probe, which tells nothing."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def load_env_token(token_file: str | Path | None, environ: MutableMapping[str, str] | None = None) -> str | None:
    """The bearer token: ``token_file``'s content, else ``SPADE_ENV_TOKEN``, else None (serve-sandbox's
    ``load_token``, reading serve-env's variable).

    Raises:
        UserError: the file cannot be read, or the token is empty or not printable ASCII without spaces.
    """
    return load_token(token_file, environ, TOKEN_ENV)


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token.

    Raises:
        UserError: ``host`` is not a loopback address and there is no token.
    """
    if token is None and not is_loopback(host):
        shown = host or "every address"
        raise UserError(
            f"listening on {shown} needs a token: anyone reaching the port could run code in the sandbox and "
            f"write the run's training data; set {TOKEN_ENV} or --token-file (clients then send "
            "'Authorization: Bearer <token>', or use the URL http://spade:<token>@HOST:PORT)"
        )


async def refuse(
    scope: Scope, send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer an HTTP request, or refuse a WebSocket handshake, with ``status`` and ``{"detail": ...}``.

    A handshake gets the same HTTP answer as a request would (ASGI's ``websocket.http.response``,
    which uvicorn offers); a server without it can only close, which clients see as a 403."""
    body = json.dumps({"detail": detail}).encode()
    out = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if scope["type"] == "websocket":
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
            return
        await send({"type": "websocket.http.response.start", "status": status, "headers": out})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware refusing requests and WebSocket handshakes the rules above do not allow."""

    def __init__(self, app: ASGIApp, *, host: str, token: str | None) -> None:
        self.app = app
        self.token = token
        self.loopback_only = is_loopback(host)

    def refusal(self, path: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, why) for a request that may not pass, else None."""
        host = headers.get("host")
        if self.loopback_only and host is not None and not is_loopback(host_name(host)):
            return 403, (
                f"Host {host!r} refused: this server listens on loopback and answers only requests addressed to it"
            )
        origin = headers.get("origin")
        if origin is not None and not loopback_origin(origin):
            return 403, f"Origin {origin!r} refused: no web page may drive this environment"
        token = self.token
        if token is not None and path not in OPEN_PATHS and not token_matches(headers.get("authorization", ""), token):
            return 401, f"Not authenticated: send 'Authorization: Bearer <token>' (the token of {TOKEN_ENV})"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        fields = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers") or []]
        problem = head_error(fields)
        if problem is not None:
            await refuse(scope, send, 400, problem)
            return
        headers = dict(fields)
        refused = self.refusal(str(scope.get("path", "")), headers)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, why = refused
        await refuse(scope, send, status, why, [(b"www-authenticate", b"Bearer")] if status == 401 else ())
