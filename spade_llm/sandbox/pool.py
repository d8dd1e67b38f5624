"""A pool of warm workers, each running the fork server (``forkserver.py``) in a sandbox of its own.

Shared by the backends that keep sandboxes warm (``bwrap``: a bubblewrap sandbox per worker;
``docker``: a container per worker); each says how to start a worker (``_spawn``) and what rlimits an
execution gets (``_rlimits``), and its worker says how one job travels (``execute``). The rest is here:
workers keyed by what is fixed when one starts (memory and process limits, scratch size, environment:
``PYTHONHASHSEED`` is read at interpreter start), started ahead in the background, one execution per
worker at a time, retired after ``jobs_per_worker`` executions or any execution that was killed, hit
a limit or left something behind, and all killed by ``close()`` (also at interpreter exit).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import secrets
import threading
import weakref
from abc import abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SandboxUnavailable, UserError
from .base import CancelHook, Limits, Program, Sandbox
from .common import (
    HARNESS_MODULE,
    PROGRAM_FILE,
    Ending,
    base_env,
    check_file_names,
    ending_status,
    frame,
    harness_program,
    to_result,
)

if TYPE_CHECKING:
    from .result import ExecutionResult

logger = logging.getLogger("spade_llm.sandbox")

START_TIMEOUT_S = 30.0
"""How long a worker may take to start, or to say what it must between jobs."""
DRAIN_S = 0.5
"""After the worker reported, how long the run's output may take to reach EOF (everything of it is dead)."""
OWN_MEMORY_MB = 16
"""What spade's own processes in a warm sandbox hold *inside* the execution's memory limit, which is the
whole sandbox's memory cgroup (bwrap) or container (docker), no swap: the fork server's W and S, the
next execution's pre-forked process, bwrap's own process or docker's relay, and the pages the running
interpreter dirties. Measured (CPython 3.11, 2026-12-01): 11-12 MiB idle, 13-14 MiB with a program
running, plus its page tables (~2 MiB per GiB of heap). So a program under ``memory_mb`` holds about
``memory_mb - OWN_MEMORY_MB`` MiB, less what it writes into its scratch directory or ``/dev/shm``
(tmpfs: memory too); the tests hold the backends to that."""

_live: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for pool in list(_live):
        with contextlib.suppress(Exception):
            pool.close()


@dataclass(frozen=True)
class WorkerKey:
    """What a worker is started with (the rest of ``Limits`` applies per execution)."""

    memory_mb: int
    max_processes: int
    scratch_mb: int
    env: tuple[tuple[str, str], ...]


class WorkerGone(Exception):
    """The worker was dead before the job started (nothing ran): retry on a fresh one."""


class Worker:
    """Host side of one warm sandbox: what the pool needs of it."""

    key: WorkerKey
    jobs: int = 0
    last_used: float = 0.0
    pending_done: bool = False
    """The last job ended on the harness's output alone: the worker's "done" is still to be read."""
    pending_clean: bool = False
    """The worker's "clean" after the last job is still to be read."""

    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def signal(self) -> None:
        """Start ending the whole sandbox without waiting (``close`` signals all, then reaps each)."""

    @abstractmethod
    def reap(self) -> None:
        """Wait until the sandbox ``signal`` ended is gone."""

    def kill(self) -> None:
        self.signal()
        self.reap()

    @abstractmethod
    def interrupt(self) -> None:
        """Kill the sandbox, and so the run in progress, from another thread (a cancelled run),
        closing nothing the thread running the job uses: that thread sees the worker gone and the
        pool retires it."""

    @abstractmethod
    def message(self, op: str) -> dict[str, Any]:
        """The worker's next control message, which must be ``op`` (see ``expect_message``).

        Raises:
            WorkerGone: it died, did not answer in ``START_TIMEOUT_S``, or sent something else.
        """

    def settle(self) -> None:
        """Before the next job: read what the worker said after the last one (off the last job's critical
        path) — its report when the last run did not wait for it, then that its sandbox is clean.

        Raises:
            WorkerGone: something of the last run survived it, or the sandbox could not be cleaned, or
                the worker died. No job was sent: the caller retires it and tries another.
        """
        if self.pending_done:
            self.pending_done = False
            if not clean_report(self.message("done")):
                raise WorkerGone("the last run left something behind")
        if self.pending_clean:
            self.pending_clean = False
            self.message("clean")

    @abstractmethod
    def execute(
        self, program: Program, limits: Limits, env: dict[str, str], rlimits: list[tuple[int, int, int]], grace_s: float
    ) -> tuple[Ending, bool]:
        """Run one program; how it ended and whether this worker may run another.

        Raises:
            WorkerGone: the worker was gone before the job started.
        """


def too_small(key: WorkerKey) -> UserError:
    """The error for a worker the OOM killer stopped while it started: its limit cannot hold even the
    sandbox's own processes (entry points ask for 16 MiB or more, which does)."""
    return UserError(
        f"a memory limit of {key.memory_mb} MiB cannot hold the sandbox's own processes (about "
        f"{OWN_MEMORY_MB} MiB, counted in the limit); ask for more"
    )


def expect_message(data: bytes, op: str, who: str) -> dict[str, Any]:
    """A worker's JSON control message (``b""``: it is gone), which must be ``op``.

    Raises:
        WorkerGone: it is gone, or sent something else.
    """
    try:
        msg = json.loads(data) if data else None
    except ValueError:
        msg = None
    if not isinstance(msg, dict) or msg.get("op") != op:
        raise WorkerGone(f"the {who} did not say {op!r}")
    return msg


def clean_report(reply: dict[str, Any]) -> bool:
    """The worker's ``done``: its execution exited (no signal) and nothing of it had to be swept."""
    status = reply.get("status")
    return reply.get("clean") is True and reply.get("swept") == 0 and isinstance(status, int) and os.WIFEXITED(status)


class JobIO:
    """What one job's pump gathered (output capped, the worker's report) and when the job is over: the
    part the warm backends share; each pump feeds it from its own channel (bwrap's pipes and control
    socket, docker's relay frames) and says whether its output streams are still open."""

    def __init__(self, cap: int, *, early: bool) -> None:
        self.cap = cap
        self.allow_early = early
        self.early = False
        """Finished on the program's output alone (see ``over``)."""
        self.gone = self.overflow = self.timed_out = self.drained = False
        self.data = {"out": bytearray(), "err": bytearray()}
        self.truncated = {"out": False, "err": False}
        self.reply: dict[str, Any] | None = None
        self.drain_until = 0.0

    @abstractmethod
    def streams_open(self) -> bool:
        """Whether stdout or stderr has not reached EOF yet."""

    def over(self, now: float, deadline: float) -> bool:
        """Whether the job is over at ``now`` (its flags set to say how): the worker reported (or is
        gone) and the output reached EOF, or the drain time after that passed, or the deadline, or an
        overflow.

        With ``early`` (the spade harness), EOF on both streams with stdout ending in a whole line is
        enough: the harness's report is the last thing it writes, after its run ended, and it writes
        it once the worker has reaped and swept up after the run. The worker's own report is then
        read before the next job.
        """
        if self.overflow:
            return True
        open_ = self.streams_open()
        if self.allow_early and self.reply is None and not self.gone and not open_ and self.data["out"].endswith(b"\n"):
            self.early = self.drained = True
            return True
        if self.reply is not None or self.gone:
            if not open_:
                self.drained = True
                return True
            if not self.drain_until:
                self.drain_until = now + DRAIN_S
            return now >= self.drain_until
        if now >= deadline:
            self.timed_out = True
            return True
        return False

    def wait_until(self, deadline: float) -> float:
        """Until when the pump may wait for more: the drain time once the worker reported, else the deadline."""
        return self.drain_until if self.reply is not None or self.gone else deadline

    def keep(self, name: str, chunk: bytes) -> None:
        """Output of stream ``name``, kept up to the cap (past it: truncated, and the job is over)."""
        buf = self.data[name]
        room = self.cap - len(buf)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            self.truncated[name] = self.overflow = True
        else:
            buf += chunk

    def outcome(self, worker: Worker, *, memory: bool, pids_hit: bool, duration_ms: float) -> tuple[Ending, bool]:
        """How the job ended, and whether ``worker`` may run another; notes on the worker what it must
        still read before its next job.

        ``early``: the harness's whole report is out and the output closed, which the worker's
        supervisor does only once the run was reaped and swept up, so the run is over; its "done" is
        read later.
        """
        returncode: int | None = None
        if self.early:
            returncode = 0
            worker.pending_done = worker.pending_clean = True
        elif self.reply is not None:
            worker.pending_clean = True
            status = self.reply.get("status")
            if isinstance(status, int):
                returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        end = Ending(
            returncode=returncode,
            stdout=bytes(self.data["out"]),
            stderr=bytes(self.data["err"]),
            stdout_truncated=self.truncated["out"],
            stderr_truncated=self.truncated["err"],
            timed_out=self.timed_out,
            overflow=self.overflow,
            memory=memory,
            duration_ms=duration_ms,
        )
        reusable = (
            (self.early or (self.reply is not None and self.drained and clean_report(self.reply)))
            and not self.timed_out
            and not self.overflow
            and not memory
            and not pids_hit
        )
        return end, reusable

    def take_report(self, data: bytes) -> None:
        """The worker's message after the run: its ``done``, or anything else (EOF included): gone."""
        try:
            reply = json.loads(data) if data else None
        except ValueError:
            reply = None
        if isinstance(reply, dict) and reply.get("op") == "done":
            self.reply = reply
        else:
            self.gone = True


def is_warm_harness(program: Program) -> bool:
    """Whether ``program`` is exactly the runner's harness stub, which the worker plays itself (``warm``)."""
    stub, files = harness_program()
    return program.source == stub and program.files.get("harness.bin") == files["harness.bin"]


def preload_message(*, one_run: bool = False) -> dict[str, Any]:
    """The first message a fork server gets: the modules it runs once before any fork (the harness),
    and whether it imports what solutions import most (``forkserver.SOLUTION_IMPORTS``): not for a
    ``one_run`` sandbox, whose one execution would wait for them."""
    modules = {HARNESS_MODULE: harness_program()[1]["harness.bin"]}
    return {"op": "preload", "modules": modules, "solution_imports": not one_run}


def make_job(program: Program, rlimits: list[tuple[int, int, int]]) -> tuple[dict[str, Any], bytes, bool]:
    """The fork server's ``run`` message for ``program``, its payload (files, then stdin), and whether
    the worker plays the harness itself."""
    scratch = f"/tmp/spade-{secrets.token_hex(8)}"
    job: dict[str, Any] = {
        "op": "run",
        "scratch": scratch,
        "argv0": PROGRAM_FILE,
        "env": {"HOME": scratch, "TMPDIR": scratch},
        "rlimits": rlimits,
    }
    files = dict(program.files)
    warm = is_warm_harness(program)
    if warm:
        # the runner's harness stub, which would load the very harness the worker preloaded: the
        # worker's supervisor plays that harness's parent itself (same code; no stub, no files)
        job["warm"] = HARNESS_MODULE
        files.pop("harness.py", None)
        files.pop("harness.bin", None)
    payload = frame({"source": program.source.encode("utf-8", "surrogatepass"), "files": files}) + program.stdin
    return job, payload, warm


class WorkerPool(Sandbox):
    """A sandbox backend made of warm workers (see the module docstring); subclasses start them."""

    pooled = True

    jobs_per_worker: int
    grace_s: float
    max_idle: int

    def _start_pool(
        self, *, jobs_per_worker: int, grace_s: float, max_idle: int | None, prewarm: int, one_run: bool = False
    ) -> None:
        """Set the pool up and start ``prewarm`` workers for the default limits in the background
        (``one_run``: see ``Sandbox.pooled``)."""
        self.one_run = one_run
        self.jobs_per_worker = max(1, jobs_per_worker)
        self.grace_s = grace_s
        self.max_idle = max_idle if max_idle is not None else max(16, 4 * (os.cpu_count() or 2))
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        """Notified when a background start of a worker ends."""
        self._starting: dict[WorkerKey, int] = {}
        """Workers being started in the background, per key."""
        self._idle: dict[WorkerKey, list[Worker]] = {}
        self._busy: set[Worker] = set()
        self._closed = False
        self._prewarming: list[threading.Thread] = []
        _live.add(self)
        key = self._key(Program(source=""), Limits())
        for _ in range(prewarm):
            with self._lock:
                self._starting[key] = self._starting.get(key, 0) + 1
            thread = threading.Thread(target=self._prewarm, args=(key,), daemon=True)
            self._prewarming.append(thread)
            thread.start()

    @abstractmethod
    def _spawn(self, key: WorkerKey) -> Worker:
        """Start one worker (blocking).

        Raises:
            SandboxUnavailable: it could not start.
        """

    @abstractmethod
    def _rlimits(self, limits: Limits, worker: Any) -> list[tuple[int, int, int]]:
        """The rlimits an execution on ``worker`` gets."""

    def _probe(self, backend: str) -> None:
        """Run one program; close the pool and raise ``SandboxUnavailable`` unless it prints ``ok``. Read
        from its ``Ending``: a backend's start builds no record (no pydantic: see ``registry``)."""
        try:
            end = self._run_ending(Program(source="print('ok')"), Limits(timeout_s=10.0))
        except SandboxUnavailable:
            self.close()
            raise
        stderr = end.stderr.decode("utf-8", "replace")
        status, _ = ending_status(end, stderr)
        if status != "ok" or end.stdout != b"ok\n":
            self.close()
            raise SandboxUnavailable(f"{backend} probe run failed: {status}: {stderr.strip()[-300:]}")

    def _prewarm(self, key: WorkerKey) -> None:
        """Start one worker for ``key`` in the background (``_starting`` was counted up for it)."""
        worker = None
        try:
            with self._lock:
                closed = self._closed
            if not closed:
                worker = self._spawn(key)
        except Exception as e:  # whoever needs a worker spawns (and reports) for itself
            logger.debug("%s prewarm failed: %s", self.name, e)
        finally:
            with self._ready:
                self._starting[key] -= 1
                if worker is not None and not self._closed:
                    self._idle.setdefault(key, []).append(worker)
                    worker = None
                self._ready.notify_all()
            if worker is not None:
                worker.kill()

    def _acquire(self, key: WorkerKey) -> Worker:
        with self._ready:
            self._closed = False
            stale: list[Worker] = []
            worker = None
            while worker is None:
                idle = self._idle.get(key, [])
                while idle:
                    candidate = idle.pop()
                    if candidate.alive():
                        worker = candidate
                        break
                    stale.append(candidate)
                if worker is not None or not self._starting.get(key):
                    break
                self._ready.wait(START_TIMEOUT_S)  # one is being started for this key: cheaper to wait
            if worker is not None:
                self._busy.add(worker)
        for w in stale:
            w.kill()
        if worker is not None:
            return worker
        worker = self._spawn(key)
        with self._lock:
            self._busy.add(worker)
        return worker

    def _release(self, worker: Worker, reusable: bool) -> None:
        retire: list[Worker] = []
        with self._lock:
            self._busy.discard(worker)
            if reusable and not self._closed and worker.jobs < self.jobs_per_worker and worker.alive():
                self._idle.setdefault(worker.key, []).append(worker)
                # beyond max_idle, retire the least recently used idle workers, other keys' first
                everyone = sorted(
                    (w for ws in self._idle.values() for w in ws), key=lambda w: (w.key == worker.key, w.last_used)
                )
                for extra in everyone[: max(0, len(everyone) - self.max_idle)]:
                    self._idle[extra.key].remove(extra)
                    retire.append(extra)
            else:
                retire.append(worker)
        for w in retire:
            w.kill()

    def workers(self) -> list[Any]:
        """Every live worker (idle and busy), for diagnostics and tests."""
        with self._lock:
            return [*self._busy, *(w for ws in self._idle.values() for w in ws)]

    def _key(self, program: Program, limits: Limits) -> WorkerKey:
        env = {**base_env("/tmp"), **program.env}
        return WorkerKey(limits.memory_mb, limits.max_processes, limits.scratch_mb, tuple(sorted(env.items())))

    def run(self, program: Program, limits: Limits, cancel: CancelHook | None = None) -> ExecutionResult:
        """``cancel``: while the job runs, cancelling it kills its worker (``Worker.interrupt``); the
        run then ends ``killed``, and a run cancelled before it started does not start."""
        return to_result(self._run_ending(program, limits, cancel))

    def _run_ending(self, program: Program, limits: Limits, cancel: CancelHook | None = None) -> Ending:
        """``run``, up to how the program ended (``to_result`` makes that the record)."""
        check_file_names(program)
        key = self._key(program, limits)
        env = dict(key.env)
        for attempt in range(3):
            if cancel is not None and cancel.cancelled:
                return Ending(returncode=None, stdout=b"", stderr=b"")  # killed before it started
            worker = self._acquire(key)
            reusable = False
            undo = cancel.on_cancel(worker.interrupt) if cancel is not None else None
            try:
                rlimits = self._rlimits(limits, worker)
                end, reusable = worker.execute(program, limits, env, rlimits, self.grace_s)
                return end
            except WorkerGone:
                if attempt == 2 and not (cancel is not None and cancel.cancelled):
                    raise SandboxUnavailable(f"{self.name} workers keep dying before they run anything") from None
            finally:
                if undo is not None:
                    undo()
                if cancel is not None and cancel.cancelled:
                    reusable = False  # its hook may have killed the worker just as the job ended
                self._release(worker, reusable)
        return Ending(returncode=None, stdout=b"", stderr=b"")  # cancelled while a worker died

    def close(self) -> None:
        with self._lock:
            self._closed = True
        for thread in self._prewarming:
            thread.join(timeout=START_TIMEOUT_S)  # a worker it was starting is killed by it, or below
        self._prewarming = []
        with self._lock:
            workers = [*self._busy, *(w for ws in self._idle.values() for w in ws)]
            self._idle.clear()
            self._busy.clear()
        for w in workers:  # all at once, then wait for each: they die in parallel
            w.signal()
        for w in workers:
            w.reap()
