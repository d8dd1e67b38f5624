"""The run behind ``spade serve-env``: an ordinary ``Session.run`` in a thread of its own, whose solver's
model is the broker.

``EnvSession`` is a ``Session`` given two parts of its own: the solver's model is the ``EnvBroker`` (not
behind the circuit breaker: a client that leaves is not an endpoint outage, and not behind the
shared request slots: a client's thinking time holds no model slot, ``controller.concurrency``
bounds the episodes in flight), and the solver is wrapped in ``EnvSolver``. Everything else, the
controller, the curriculum, validation, the records and resume, is the run's own, unchanged.

``RunThread`` runs ``Session.run`` on an event loop of its own, so the server's loop and the run's
never block each other, and stops it on request by cancelling its main task, as Ctrl-C stops a
``spade run``: the records stay consistent and ``--resume`` goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

from ..._util.redact import redact_text
from ...config import RunConfig
from ...errors import UserError
from ...executors import start_ray_sandbox
from ...session import Session
from ...solver import LLMSolver
from ...store import RunDir
from ...types import EpochMetrics
from .broker import ENV_MODEL, Bridge, EnvBroker, EnvSolver

__all__ = ["UNTIL_STOPPED", "EnvSession", "RunThread", "env_run_config", "sigterm_interrupts"]

UNTIL_STOPPED = 1_000_000
"""``controller.epochs`` of a serve-env run started without ``--epochs``: it runs until stopped."""


def env_run_config(config: RunConfig) -> RunConfig:
    """``config`` as serve-env runs it: the solver is the clients (``solver.model: env``),
    ``env.episodes_per_epoch``, when set, sizes each epoch (``tasks_per_epoch``), and ``env.overlap``
    makes the next epoch's tasks while this one is played (``controller.overlap``).

    ``executor: ray`` becomes ``local`` here: the episodes are conversations held in this process, and
    ``EnvSession`` sends what they run to the cluster instead (``executors.ray_sandbox``).
    """
    controller = config.controller
    n = config.env.episodes_per_epoch
    if n is not None:
        controller = controller.model_copy(update={"tasks_per_epoch": math.ceil(n / config.solver.samples_per_task)})
    # a training step between epochs keeps them one after another
    overlap = config.env.overlap and config.trainer.command is None
    controller = controller.model_copy(update={"overlap": overlap})
    solver = config.solver.model_copy(update={"model": ENV_MODEL, "api_base": None})
    return config.model_copy(update={"controller": controller, "solver": solver, "executor": "local"})


class EnvSession:
    """A run whose solver's model is ``broker`` (see the module doc): a ``Session`` given the broker as
    the solver's model, ``EnvSolver`` around each episode's solver, and a call once its loop runs."""

    def __init__(self, config: RunConfig, broker: EnvBroker) -> None:
        """With ``executor: ray`` every program the run judges (replies, validation) runs on the cluster's
        sandbox hosts; the records are the local sandbox's.

        Raises:
            UserError: a bad template or model string, a sandbox that cannot start, a Ray cluster that
                cannot be reached.
        """
        self.broker = broker
        remote = start_ray_sandbox(config) if config.executor == "ray" else None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.main: asyncio.Task[Any] | None = None
        self.bridge: Bridge | None = None
        """The way to the broker from other threads, once the run's loop runs."""
        self.started = threading.Event()
        """Set once the run's loop is running (``loop``, ``main`` and ``bridge`` are set)."""
        try:
            self.session = Session(
                env_run_config(config),
                solver_model=broker,
                episode_solver=self._episode_solver,
                on_start=self._started,
                episode_slots=config.env.pool or config.env.max_sessions,
                sandbox=remote,
            )
        except BaseException:
            if remote is not None:  # the cluster's hosts end with the session that failed to build
                remote.close()
            raise
        # a group's size must divide a task's samples; a resumed task runs only its samples not recorded
        broker.samples_per_task = self.session.config.solver.samples_per_task
        broker.samples_left = self._samples_left
        broker.reward = config.env.reward

    def _samples_left(self, task_id: str) -> int:
        state = self.session.state
        recorded = state.recorded(task_id) if state is not None else 0
        return self.session.config.solver.samples_per_task - recorded

    @property
    def config(self) -> RunConfig:
        return self.session.config

    def run(self, run: RunDir, *, resumed: bool = False, log: Callable[[str], None] = print) -> Sequence[EpochMetrics]:
        return self.session.run(run, resumed=resumed, log=log)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> EnvSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _started(self) -> None:
        """In the run's loop, first thing of its main task: what stopping needs, and a stop that came
        while the run directory was read."""
        self.loop = asyncio.get_running_loop()
        self.main = asyncio.current_task()
        self.bridge = Bridge(self.loop)
        self.started.set()
        if self.broker.stopping is not None and self.main is not None:
            self.main.cancel()

    def _episode_solver(self, solver: LLMSolver) -> EnvSolver:
        solver.llm = self.broker  # not behind the shared request slots: a client's thinking holds none
        return EnvSolver(solver, self.broker)


class RunThread:
    """``session.run(run)`` in a thread with its own event loop; ``on_end`` is called when it ends."""

    def __init__(
        self,
        session: EnvSession,
        run: RunDir,
        *,
        resumed: bool,
        log: Callable[[str], None],
        on_end: Callable[[], None] = lambda: None,
    ) -> None:
        self.session = session
        self.run = run
        self.resumed = resumed
        self.log = log
        self.on_end = on_end
        self.metrics: Sequence[EpochMetrics] | None = None
        """The metrics rows, once every epoch ran."""
        self.error: BaseException | None = None
        """What stopped the run other than ``stop`` (the generator's endpoint down, a full disk...)."""
        self._thread = threading.Thread(target=self._main, name="spade-serve-env-run", daemon=True)

    def start(self) -> Bridge:
        """Start the run; returns the bridge to its loop once that runs (after the run directory is read
        and checked, which takes a while for a large one on resume).

        Raises:
            SpadeError: the run failed before its loop started (a damaged run directory...).
        """
        self._thread.start()
        while not self.session.started.wait(0.05):
            if not self._thread.is_alive():
                raise self.error or UserError("the run ended before it started")
        assert self.session.bridge is not None
        return self.session.bridge

    def _main(self) -> None:
        try:
            self.metrics = self.session.run(self.run, resumed=self.resumed, log=self.log)
        except asyncio.CancelledError:  # stop(): the records stay as a Ctrl-C leaves them
            pass
        except BaseException as e:  # told to the caller, who raises it in the main thread
            self.error = e
        finally:
            if self.session.bridge is not None:
                # what clients still waiting are told: why the run ended, if not by a stop or its last epoch
                ended = f"the run stopped: {redact_text(str(self.error))}" if self.error is not None else None
                self.session.bridge.end(self.session.broker.stopping or ended or "the run is over: its epochs are done")
            self.on_end()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, why: str, timeout: float = 30.0) -> None:
        """Cancel the run (its episodes not recorded, resumable) and wait for its thread."""
        broker, loop, main = self.session.broker, self.session.loop, self.session.main
        if broker.stopping is None:
            broker.stopping = why
        if self._thread.ident is None:  # never started
            return
        if loop is not None and main is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # its loop has just closed
                loop.call_soon_threadsafe(main.cancel)
        self._thread.join(timeout)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt as Ctrl-C does (on the main thread), so either stops serve-env
    cleanly, wherever it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(sig: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
