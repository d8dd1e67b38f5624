"""``spade serve-env``: the curriculum as an OpenEnv environment, on openenv-core's own server.

openenv-core (``pip install 'spade-selfplay[env]'``) provides the protocol: ``create_app`` builds the
FastAPI app, whose WebSocket ``/ws`` gives each client session an environment instance of its own
(``SpadeEnvironment``, at most ``env.max_sessions`` at once, ``CAPACITY_REACHED`` beyond), and its
``EnvClient`` / ``GenericEnvClient`` are the clients (``reset()``, ``step(action)``, a ``StepResult``
with ``observation``, ``reward`` and ``done``). What happens behind an instance is the run's
(``running.py``, ``broker.py``): ``reset()`` takes the next episode waiting for a client and returns
its opening messages; ``step({"answer": reply})`` hands the reply to the solver, which extracts,
judges and feeds it back as it does a model's answer, and returns the next turn's messages or the
end (``done``, ``reward`` from the one judge on all tests, the verdict). Episodes land in the run
directory as trajectories (``source: env``), epochs close as their rollouts end, and ``--resume``
goes on after a stop.

openenv-core's HTTP ``/reset`` and ``/step`` build a fresh environment for each request and close it
after: they cannot hold a multi-turn episode, and a ``/reset`` would take an episode only to abandon
it, so here they answer 501 pointing at the WebSocket. ``/health``, ``/schema``, ``/metadata`` and
``/state`` are openenv-core's; its ``/mcp`` only with ``env.mcp``. Access is checked first
(``access.py``: loopback by default, a token beyond it), then every message (``sessions.py``: owners
and caps of sessions, malformed and oversized messages, idle sessions); uvicorn runs with serve-env's
protocols (``wire.py``: a connection cap below the descriptor limit, framing).

A client that leaves before it was shown an episode abandons nothing: a ``reset`` waiting for an
episode ends when its connection does (the broker withdraws it), and an episode whose first turn
never reached the client goes back to the next one (``EnvBroker.give_back``).

Threads: uvicorn serves on the thread that calls ``EnvServer.serve`` (the main thread for the CLI,
so Ctrl-C and SIGTERM reach it); the run has its own thread and loop, and the environment's async
methods reach the broker through ``Bridge``. A stop (a signal, ``stop()``) tells the broker first,
so the episodes clients are in are left unrecorded (``--resume`` runs them again), not recorded as
abandoned; then the run is cancelled and the server shut down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import socket
import threading
from collections.abc import Callable
from importlib import metadata
from types import FrameType
from typing import Any

import uvicorn

from ...config import EnvConfig
from ...errors import DISTRIBUTION
from ...store import RunDir
from ..netguard import AcceptErrors, accept_batch, connection_cap, deepen_backlog, raise_open_files_limit
from .access import Guard
from .broker import Bridge, EnvBroker, Episode, EpisodeGone, View
from .models import SpadeAction, SpadeState, observation
from .openenv_server import Environment, EnvironmentMetadata
from .running import EnvSession, RunThread, sigterm_interrupts
from .sessions import Gate, SpadeEnvServer
from .wire import ClientNoise, Peer, Wire

__all__ = ["EnvServer", "SpadeEnvironment", "build_app"]

NO_HTTP_EPISODES = (
    "serve-env episodes are multi-turn WebSocket sessions; openenv-core's HTTP /reset and /step make a fresh "
    "environment per request, which cannot hold one: connect an EnvClient (e.g. GenericEnvClient(base_url=...)), "
    "which talks to /ws"
)


class Hub:
    """What every environment instance shares: the broker and the bridge to its loop."""

    def __init__(self, broker: EnvBroker, bridge: Bridge) -> None:
        self.broker = broker
        self.bridge = bridge


class SpadeEnvironment(Environment):  # type: ignore[misc]  # openenv-core ships no type information
    """One client session's environment: at most one episode at a time, taken by ``reset``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: Hub) -> None:
        super().__init__()
        self._hub = hub
        self._episode: Episode | None = None
        """The episode this session holds and has not finished."""
        self._last: View | None = None
        self._steps = 0
        self.peer: Peer | None = None
        """The connection this session belongs to (``SpadeEnvServer`` sets it), when it came over one."""
        self._shown = 0
        """``peer.sent`` when ``reset`` returned the episode's first turn: more once it went out."""
        self._closed = False

    def _let_go(self, why: str) -> None:
        """This session lets go of its episode: abandoned (recorded so) once its client was shown it,
        else given back to the next client (its first turn never went out: the client left first)."""
        episode, self._episode = self._episode, None
        broker, bridge = self._hub.broker, self._hub.bridge
        if episode is None or broker.stopping is not None:
            return
        if self._steps == 0 and self.peer is not None and self.peer.sent <= self._shown:
            bridge.fire(broker.give_back, episode)
        else:
            bridge.fire(broker.abandon, episode, why)

    def _left(self) -> bool:
        return self._closed or (self.peer is not None and self.peer.gone.is_set())

    def _unclaimed(self, call: asyncio.Future[tuple[Episode, View]], ticket: object) -> None:
        """The client left while its ``reset`` waited: it takes nothing, and an episode already on
        its way to it goes back to the next client."""
        broker, bridge = self._hub.broker, self._hub.bridge
        bridge.fire(broker.withdraw, ticket)

        def back(done: asyncio.Future[tuple[Episode, View]]) -> None:
            if not done.cancelled() and done.exception() is None:
                bridge.fire(broker.give_back, done.result()[0])

        call.add_done_callback(back)

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        group_id: str | int | None = None,
        group_size: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """The next episode waiting for a client and its opening messages. ``seed`` and ``episode_id``
        are openenv's and ignored: the curriculum decides the task. ``group_id`` and ``group_size``: the
        GRPO group this rollout belongs to; the ``group_size`` resets naming one ``group_id`` get episodes
        of one task (``EnvBroker``'s groups). An unfinished episode of this session is abandoned
        (recorded so). A client that leaves while this waits takes nothing."""
        group, size = _group(group_id, group_size)
        self._let_go("the client reset() before the episode ended")
        ticket = object()
        take = self._hub.broker.take(ticket, group=group, group_size=size)
        call = asyncio.ensure_future(self._hub.bridge.call(take))
        waits: set[asyncio.Future[Any]] = {call}
        gone = asyncio.ensure_future(self.peer.gone.wait()) if self.peer is not None else None
        if gone is not None:
            waits.add(gone)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._unclaimed(call, ticket)
            raise
        finally:
            if gone is not None:
                gone.cancel()
        if not call.done() or self._left():
            self._unclaimed(call, ticket)
            raise EpisodeGone("the client left before an episode was handed to it")
        episode, view = call.result()  # EpisodeGone: none ready in time, or the run is over
        self._episode, self._last, self._steps = episode, view, 0
        self._shown = self.peer.sent if self.peer is not None else 0
        return observation(view)

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """The reply to the turn shown; returns the next turn, or the end (``done``, ``reward``). A
        reply holding malformed text (a lone surrogate, noted by the gate) is not judged: the same
        turn comes back with ``error`` (and ``feedback``) saying why, and the client replies again."""
        episode = self._episode
        if episode is None:
            raise EpisodeGone("no episode in this session: call reset() first")
        malformed = self.peer.malformed if self.peer is not None else None
        if malformed is not None and self._last is not None:
            why = f"your reply was not judged: it holds {malformed}; reply again"
            return observation(dataclasses.replace(self._last, error=why, feedback=why))
        if not isinstance(action, SpadeAction):
            action = SpadeAction.model_validate(action)
        view = await self._hub.bridge.call(self._hub.broker.reply(episode, action.text(), action.model))
        self._last, self._steps = view, self._steps + 1
        if view.done:
            self._episode = None
        return observation(view)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        return asyncio.run(self.reset_async(seed, episode_id, **kwargs))

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        return asyncio.run(self.step_async(action, timeout_s, **kwargs))

    @property
    def state(self) -> Any:
        view = self._last
        if view is None:
            return SpadeState()
        return SpadeState(
            episode_id=view.episode_id,
            step_count=self._steps,
            task_id=view.task_id,
            kind=view.kind,
            turn=view.turn,
            done=view.done,
        )

    def get_metadata(self) -> Any:
        return EnvironmentMetadata(
            name="spade",
            description="spade_llm's self-play curriculum: Python tasks validated in a sandbox, solved over turns "
            "with feedback from public tests, rewarded by the judge on all tests",
            version=_version(DISTRIBUTION),
        )

    def close(self) -> None:
        """The session ended (the client closed it or went away, or it sat idle): an unfinished episode
        is abandoned, or given back when its client was never shown it."""
        self._closed = True
        why = self.peer.closing if self.peer is not None else None
        self._let_go(why or "the client closed its session before the episode ended")


def _group(group_id: Any, group_size: Any) -> tuple[str | None, int | None]:
    """A reset's group key and size, checked (a client's values, as JSON gave them).

    Raises:
        EpisodeGone: a malformed key or size (the client's error, told to it).
    """
    if group_id is None:
        return None, None
    if isinstance(group_id, bool) or not isinstance(group_id, (str, int)) or len(str(group_id)) > 200:
        raise EpisodeGone("group_id must be a string or an integer (at most 200 characters)")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or not 1 <= group_size <= 4096:
        raise EpisodeGone("a reset with a group_id needs group_size: an integer from 1 to 4096")
    return f"{type(group_id).__name__}:{group_id}", group_size


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def build_app(hub: Hub, env: EnvConfig, *, host: str, token: str | None) -> tuple[Any, SpadeEnvServer]:
    """openenv-core's app for ``SpadeEnvironment`` behind the access guard and the gate (an ASGI
    app), and the openenv-core server holding its sessions.

    Built as openenv-core's ``create_app`` builds it (a FastAPI app, ``HTTPEnvServer``'s routes),
    without the web interface its ``ENABLE_WEB_INTERFACE`` would mount."""
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    app = FastAPI(title="spade serve-env", version=_version(DISTRIBUTION) or "0", description=__doc__)
    sessions = SpadeEnvServer(
        functools.partial(SpadeEnvironment, hub), max_sessions=env.max_sessions, per_client=env.max_sessions_per_client
    )
    sessions.register_routes(app)
    dropped = {"/reset", "/step"} | (set() if env.mcp else {"/mcp"})
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) not in dropped]

    async def no_http_episodes(request: Request) -> JSONResponse:
        return JSONResponse({"detail": NO_HTTP_EPISODES}, status_code=501)

    for path in ("/reset", "/step"):
        app.add_route(path, no_http_episodes, methods=["POST"], include_in_schema=False)
    gate = Gate(
        _quiet_disconnects(app),
        sessions,
        mcp=env.mcp,
        idle_s=env.session_idle_s,
        max_message_bytes=env.max_message_bytes,
    )
    return Guard(gate, host=host, token=token), sessions


def _quiet_disconnects(app: Any) -> Any:
    """``app``, where a WebSocket session ending on a client that already hung up is no error: openenv-core's
    handler closes its side after the client's "close" message and raises when the client has gone
    (starlette's ``WebSocketDisconnect``, then ``WebSocketDisconnected`` for each later send)."""
    from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

    async def quiet(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except (WebSocketDisconnect, WebSocketDisconnected):
            if scope.get("type") != "websocket":
                raise

    return quiet


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port), so the URL is known (port 0: a free one) before serving.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _Uvicorn(uvicorn.Server):  # type: ignore[misc,unused-ignore]  # Any where uvicorn (openenv-core's) is absent
    """uvicorn's server, telling serve-env of a stop signal before it starts closing connections."""

    def __init__(self, config: Any, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)


class EnvServer:
    """One ``spade serve-env``: the run in its thread, openenv-core's app on a socket.

    ``start()`` starts the run and binds the socket (``url`` is then known); ``serve()`` blocks until a
    signal, ``stop()`` (from any thread) or the run's end, then stops the run cleanly.
    """

    def __init__(
        self,
        session: EnvSession,
        run: RunDir,
        *,
        resumed: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.session = session
        self.run = run
        self.host = host
        self.token = token
        self.log = log
        self.broker = session.broker
        self.broker.log = log
        self.runner = RunThread(session, run, resumed=resumed, log=log, on_end=self._run_ended)
        self._port = port
        self._sock: socket.socket | None = None
        self._uvicorn: _Uvicorn | None = None
        self.wire: Wire | None = None
        """The connections' shared state (slots, counts), once started."""
        self._noise = ClientNoise()
        self.url = ""
        self.ready = threading.Event()
        """Set once the server accepts connections."""
        self.stopped_because: str | None = None

    def start(self) -> None:
        """Start the run (it proposes and validates while the app is built) and bind the socket.

        Raises:
            SpadeError: the run could not start. OSError: the address cannot be bound.
        """
        bridge = self.runner.start()
        env = self.session.config.env
        app, sessions = build_app(Hub(self.broker, bridge), env, host=self.host, token=self.token)
        self._sock = _listen(self.host, self._port)
        self.url = _url(self._sock)
        # connections are capped below the descriptor limit, so the run always has descriptors left
        open_files = raise_open_files_limit()
        cap = connection_cap(env.max_connections, open_files)
        if env.max_connections is not None and cap < env.max_connections:
            self.log(
                f"spade serve-env: env.max_connections {env.max_connections} lowered to {cap}, below the open-files "
                f"limit ({open_files}) less the descriptors the run needs"
            )
        self.wire = Wire(cap, on_lost=sessions.connection_lost)
        http, ws = self.wire.protocols()
        config = uvicorn.Config(
            app,
            http=http,
            ws=ws,
            backlog=accept_batch(open_files, cap),
            ws_max_size=env.max_message_bytes,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        logging.getLogger("uvicorn.error").addFilter(self._noise)  # after uvicorn.Config set its logging up
        self._uvicorn = _Uvicorn(config, on_exit=lambda: self._stop_run("stopped by a signal"))

    def _stop_run(self, why: str) -> None:
        """Tell the broker (first: the episodes clients are in stay unrecorded) and cancel the run."""
        if self.stopped_because is None:
            self.stopped_because = why
        self.runner.stop(why, timeout=0)

    def _run_ended(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    def stop(self, why: str = "stopped") -> None:
        """Stop serving and the run (from any thread); ``serve`` returns."""
        self._stop_run(why)
        self._run_ended()

    async def _serve(self, on_ready: Callable[[], None]) -> None:
        assert self._uvicorn is not None and self._sock is not None
        uv = self._uvicorn
        if not self.runner.alive:  # the run failed while the app was built
            return
        asyncio.get_running_loop().set_exception_handler(AcceptErrors(self.log))
        task = asyncio.create_task(uv.serve(sockets=[self._sock]))
        while not uv.started and not task.done():
            await asyncio.sleep(0.02)
        if uv.started:
            deepen_backlog(self._sock)  # asyncio listened with its accept batch; a burst waits in the kernel
            self.ready.set()
            on_ready()
        await task

    def serve(self, on_ready: Callable[[], None] = lambda: None) -> None:
        """Serve until stopped (blocking; ``start()`` first if it was not called); then stop the run and
        wait for it. ``on_ready`` is called once connections are accepted. Ctrl-C and SIGTERM stop it
        when this runs on the main thread, also while it starts.

        Raises:
            SpadeError: what stopped the run besides a stop (``EndpointDown`` of the generator...), or
                kept it from starting. OSError: the address cannot be bound.
        """
        with sigterm_interrupts():
            try:
                if self._uvicorn is None:
                    self.start()
                asyncio.run(self._serve(on_ready))
            except KeyboardInterrupt:  # a signal outside uvicorn's own handling, or re-raised after it
                self._stop_run("stopped by a signal")
            finally:
                if self.runner.alive:
                    self._stop_run(self.stopped_because or "the server stopped")
                self.runner.stop(self.stopped_because or "the server stopped")
                if self._sock is not None:
                    self._sock.close()
                logging.getLogger("uvicorn.error").removeFilter(self._noise)
        if self.runner.error is not None:
            raise self.runner.error
