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
``/state`` are openenv-core's. Access is checked first (``access.py``: loopback by default, a token
beyond it).

Threads: uvicorn serves on the thread that calls ``EnvServer.serve`` (the main thread for the CLI,
so Ctrl-C and SIGTERM reach it); the run has its own thread and loop, and the environment's async
methods reach the broker through ``Bridge``. A stop (a signal, ``stop()``) tells the broker first,
so the episodes clients are in are left unrecorded (``--resume`` runs them again), not recorded as
abandoned; then the run is cancelled and the server shut down.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import threading
from collections.abc import Callable
from importlib import metadata
from types import FrameType
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from ..errors import DISTRIBUTION
from ..store import RunDir
from .access import Guard
from .broker import Bridge, EnvBroker, Episode, EpisodeGone, View
from .models import SpadeAction, SpadeObservation, SpadeState, observation
from .running import EnvSession, RunThread, sigterm_interrupts

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

    def _let_go(self, why: str) -> None:
        episode, self._episode = self._episode, None
        if episode is not None and self._hub.broker.stopping is None:
            self._hub.bridge.fire(self._hub.broker.abandon, episode, why)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        """The next episode waiting for a client and its opening messages. ``seed`` and ``episode_id``
        are openenv's and ignored: the curriculum decides the task. An unfinished episode of this
        session is abandoned (recorded so)."""
        self._let_go("the client reset() before the episode ended")
        episode, view = await self._hub.bridge.call(self._hub.broker.take())
        self._episode, self._last, self._steps = episode, view, 0
        return observation(view)

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """The reply to the turn shown; returns the next turn, or the end (``done``, ``reward``)."""
        episode = self._episode
        if episode is None:
            raise EpisodeGone("no episode in this session: call reset() first")
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
        """The session ended (the client closed it or went away): an unfinished episode is abandoned."""
        self._let_go("the client closed its session before the episode ended")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def build_app(hub: Hub, *, max_sessions: int, host: str, token: str | None) -> Any:
    """openenv-core's app for ``SpadeEnvironment`` behind the access guard (an ASGI app)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    app = create_app(
        functools.partial(SpadeEnvironment, hub),
        SpadeAction,
        SpadeObservation,
        env_name="spade",
        max_concurrent_envs=max_sessions,
    )
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) not in ("/reset", "/step")]

    async def no_http_episodes(request: Request) -> JSONResponse:
        return JSONResponse({"detail": NO_HTTP_EPISODES}, status_code=501)

    for path in ("/reset", "/step"):
        app.add_route(path, no_http_episodes, methods=["POST"], include_in_schema=False)
    return Guard(_quiet_disconnects(app), host=host, token=token)


def _quiet_disconnects(app: Any) -> Any:
    """``app``, where a WebSocket session ending on a client that already hung up is no error: openenv-core's
    handler closes its side after the client's "close" message and raises when the client has gone."""
    from starlette.websockets import WebSocketDisconnect

    async def quiet(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except WebSocketDisconnect:
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
        self.runner = RunThread(session, run, resumed=resumed, log=log, on_end=self._run_ended)
        self._port = port
        self._sock: socket.socket | None = None
        self._uvicorn: _Uvicorn | None = None
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
        app = build_app(
            Hub(self.broker, bridge),
            max_sessions=self.session.config.env.max_sessions,
            host=self.host,
            token=self.token,
        )
        self._sock = _listen(self.host, self._port)
        self.url = _url(self._sock)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
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
        task = asyncio.create_task(uv.serve(sockets=[self._sock]))
        while not uv.started and not task.done():
            await asyncio.sleep(0.02)
        if uv.started:
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
        if self.runner.error is not None:
            raise self.runner.error
