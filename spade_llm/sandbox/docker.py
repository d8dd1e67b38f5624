"""The ``docker`` backend: a pool of warm containers, each forking a fresh process per execution.

For users without bubblewrap (macOS and Windows through Docker Desktop, clusters that mandate
containers). Each worker is one long-lived ``docker run -i --rm`` of a slim Python image (default
``python:X.Y-slim`` for this interpreter's minor version, since the harness travels as bytecode;
``sandbox.docker_image`` / ``SPADE_DOCKER_IMAGE`` / ``image=`` override it; ``scripts/docker_image.sh``
builds one offline) with

* ``--network none``, hostname ``sandbox``, a read-only root, a size-limited ``/tmp`` tmpfs (the
  scratch), a small ``/dev/shm``; ``--cap-drop ALL``, ``no-new-privileges``, user ``nobody`` (65534),
  nothing of the caller's environment, nor of the engine's or the image's;
* ``--memory`` (no swap) of exactly the execution's memory limit, as a bwrap worker's cgroup: the
  relay, the fork server's processes (``pool.OWN_MEMORY_MB``) and the tmpfs pages count inside it;
  ``--pids-limit``: the program's limit plus the worker's own processes; ``--cpus`` per container;
* the bwrap backend's seccomp filter (``seccomp.py``), installed by the relay on top of the engine's
  own profile.

Inside, pid 1 is the relay (``forkserver.py``, ``--relay``; no init and no entrypoint in front of it,
which it checks): it forks the same fork server the bwrap backend runs and carries its protocol over
the container's stdin/stdout, the one channel every engine gives a container (local, remote, Docker
Desktop's VM), so no socket or file of the host is mounted in. Per execution, that is: one fresh
process forked from a pristine interpreter, a fresh scratch directory, the run's rlimits (CPU, file
size, open files, no core, address space), everything of the run killed and every writable place
wiped afterwards; the container's own cgroup counters (read inside) say whether the OOM killer or
the pids limit hit. The verdicts and limits are those of the bwrap backend (one conformance suite
runs on both). The relay's frames to the host are a fixed binary format checked on arrival, and a
job's payload (files, stdin) is streamed a chunk at a time, so a large stdin costs the program none
of its memory.

The host enforces the wall clock and the output caps. A container is retired (closed stdin: its pid 1
exits and the kernel kills the rest; ``--rm`` removes it) after ``jobs_per_worker`` executions or any
execution that timed out, overflowed, hit a limit, was killed, left something behind or did not read
all its stdin. A container that ends during a run by anything but its relay's own exit (the engine
died, someone removed it) raises ``SandboxUnavailable``: that is no verdict on the program. If spade
dies, however it dies, the ``docker run`` client sees its stdin close and so does the container.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from typing import Any

from ..errors import SandboxUnavailable
from . import seccomp
from .base import Limits, Program
from .common import THREAD_HEADROOM_BYTES, Ending, execution_rlimits, frame, shipped_source
from .forkserver import MESSAGE_BYTES, RELAY_CHUNK
from .pool import (
    OWN_MEMORY_MB,
    START_TIMEOUT_S,
    JobIO,
    Worker,
    WorkerGone,
    WorkerKey,
    WorkerPool,
    expect_message,
    make_job,
    preload_message,
    too_small,
)

logger = logging.getLogger("spade_llm.sandbox")

USER = "65534:65534"
SHM_MB = 8
"""Size of the container's ``/dev/shm`` (its pages, like the scratch's, count against the memory limit)."""
PIDS_OVERHEAD = 3
"""Tasks besides the program's own: the relay (pid 1), the fork server and its supervisor."""
STOP_S = 10.0
"""How long a retired container's ``docker run`` may take to end before it is killed."""
FORKSERVER_SOURCE = shipped_source("forkserver.py")
HOST_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
"""The image's Python must have this minor version: the harness travels as bytecode."""
FILTERS = ",".join(
    f"{machine}:{program.hex()}" for machine in seccomp.ARCHES if (program := seccomp.program(machine)) is not None
)
"""The bwrap backend's seccomp filter for each architecture it has a table for; the relay installs the
one of its own machine (an engine may run containers of another architecture than spade's)."""


def default_image() -> str:
    return os.environ.get("SPADE_DOCKER_IMAGE") or f"python:{HOST_PYTHON}-slim"


FRAME_KINDS = {b"c": "ctrl", b"o": "out", b"e": "err", b"O": "eof-out", b"E": "eof-err", b"h": "hello"}
MAX_FRAME = 17 + max(RELAY_CHUNK, MESSAGE_BYTES)
"""Longest frame body the relay sends (kind, two counters, at most one chunk or packet)."""


class _Frames:
    """The relay's frames (``forkserver.relay_frame``), read off the ``docker run`` client's stdout
    (non-blocking), one at a time: what follows a run's end (the worker's next messages) stays queued
    for whoever reads next. A stream that breaks the format is treated as the container gone."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.queue: deque[tuple[str, bytes, tuple[int, int]]] = deque()
        self.eof = False
        self.corrupt = False
        os.set_blocking(fd, False)

    def pop(self) -> tuple[str, bytes, tuple[int, int]] | None:
        """The next frame, or None when none has arrived (``eof``: none ever will)."""
        if not self.queue and not self.eof:
            self._fill()
        return self.queue.popleft() if self.queue else None

    def _fill(self) -> None:
        try:
            chunk = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
        self.buf += chunk
        while len(self.buf) >= 4:
            size = int.from_bytes(self.buf[:4], "big")
            kind = FRAME_KINDS.get(bytes(self.buf[4:5])) if len(self.buf) > 4 else None
            if size < 17 or size > MAX_FRAME or (len(self.buf) > 4 and kind is None):
                self.corrupt = self.eof = True
                self.buf.clear()
                return
            if len(self.buf) < 4 + size:
                break
            body = bytes(self.buf[4 : 4 + size])
            del self.buf[: 4 + size]
            counters = (int.from_bytes(body[1:9], "big", signed=True), int.from_bytes(body[9:17], "big", signed=True))
            assert kind is not None
            self.queue.append((kind, body[17:], counters))

    def wait(self, timeout_s: float, writing: int | None = None, *, reading: bool = True) -> bool:
        """Until a frame may be read (unless not ``reading``) or ``writing`` takes bytes, or ``timeout_s``;
        whether ``writing`` is ready. (``poll``, not ``select``: descriptors past 1023 are common.)"""
        poller = select.poll()
        if reading:
            poller.register(self.fd, select.POLLIN)
        if writing is not None:
            poller.register(writing, select.POLLOUT)
        events = poller.poll(max(0.0, timeout_s) * 1000.0 + 1)
        return writing is not None and any(fd == writing for fd, _ in events)


class _Container(Worker):
    """Host side of one warm container: its ``docker run -i`` client and the relay's frames."""

    def __init__(self, key: WorkerKey, proc: subprocess.Popen[bytes], name: str, docker: str, log: Any) -> None:
        self.key = key
        self.proc = proc
        self.name = name
        self.docker = docker
        self.log = log
        """The ``docker run`` client's stderr (a temporary file: nothing to drain, and read on failure)."""
        assert proc.stdout is not None and proc.stdin is not None
        self.stdin = proc.stdin.fileno()
        os.set_blocking(self.stdin, False)
        self.frames = _Frames(proc.stdout.fileno())
        self.counters: tuple[int, int] | None = None
        """The container cgroup's (OOM kills, pids-limit hits) as last reported; None: not readable."""
        self.hello: dict[str, Any] = {}
        self.ready: dict[str, Any] = {}
        self.held: deque[bytes] = deque()
        """The worker's messages that arrived during a run, after its report (the relay forwards its
        descriptors in whatever order they become ready: "clean" may come before the run's last EOF)."""
        self.outgoing = memoryview(b"")
        """Bytes for the relay not yet written (a job's payload is fed while the run goes on)."""
        self.jobs = 0
        self.dead = False
        self.interrupted = False
        """``interrupt`` killed the container: its end mid-run is no sandbox failure."""
        self.last_used = time.monotonic()

    # -- the channel ---------------------------------------------------------------------------

    def count(self, counters: tuple[int, int]) -> None:
        if counters[0] >= 0 and counters[1] >= 0:
            self.counters = counters

    def write_some(self) -> None:
        """Write what the descriptor takes now of ``outgoing``.

        Raises:
            WorkerGone: the client's stdin is closed (the container is gone).
        """
        try:
            n = os.write(self.stdin, self.outgoing[: 1 << 20])
        except BlockingIOError:
            return
        except OSError as e:
            raise WorkerGone(f"the container's stdin is closed: {e}") from e
        self.outgoing = self.outgoing[n:]

    def send(self, msg: dict[str, Any], deadline: float) -> None:
        """Send one frame to the relay, whole, by ``deadline``.

        Raises:
            WorkerGone: the container is gone, or does not take it in time.
        """
        self.outgoing = memoryview(frame(msg))
        while self.outgoing:
            self.write_some()
            if not self.outgoing:
                break
            if time.monotonic() >= deadline:
                raise WorkerGone("the container does not read its stdin")
            self.frames.wait(deadline - time.monotonic(), writing=self.stdin, reading=False)

    def next_frame(self, deadline: float, want: str) -> bytes:
        """The data of the next ``want`` frame (``ctrl`` or ``hello``), skipping what is left of a run;
        ``b""`` when the container is gone."""
        if want == "ctrl" and self.held:
            return self.held.popleft()
        while True:
            got = self.frames.pop()
            if got is not None:
                kind, data, counters = got
                self.count(counters)
                if kind == want:
                    return data
                continue
            if self.frames.eof:
                return b""
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the container did not answer")
            self.frames.wait(remaining)

    def message(self, op: str, want: str = "ctrl") -> dict[str, Any]:
        """The worker's (or, ``want="hello"``, the relay's) next message, which must be ``op``."""
        try:
            data = self.next_frame(time.monotonic() + START_TIMEOUT_S, want)
        except TimeoutError as e:
            raise WorkerGone(f"no {op!r} from the container") from e
        return expect_message(data, op, "container")

    def stderr_tail(self) -> str:
        """The end of what the ``docker run`` client wrote to its stderr."""
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - 2000))
            return str(self.log.read().decode(errors="replace").strip())
        return ""

    def exit_code(self, within_s: float) -> int | None:
        """The ``docker run`` client's exit code once it has ended (None: still running after ``within_s``)."""
        try:
            return self.proc.wait(timeout=within_s)
        except subprocess.TimeoutExpired:
            return None

    # -- lifetime --------------------------------------------------------------------------------

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def signal(self) -> None:
        """Close the container's stdin: the relay (its pid 1) exits, and the kernel kills the rest."""
        self.dead = True
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def interrupt(self) -> None:
        """``docker kill`` the container, not waited for (``Worker.interrupt``): the thread running the
        job sees its stream end."""
        self.interrupted = True
        with contextlib.suppress(OSError):
            subprocess.Popen([self.docker, "kill", self.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def reap(self) -> None:
        try:
            self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            logger.warning("docker container %s did not stop in %g s; killing it", self.name, STOP_S)
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run([self.docker, "rm", "-f", self.name], capture_output=True, timeout=60, check=False)
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.log):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    # -- one execution -------------------------------------------------------------------------

    def execute(
        self, program: Program, limits: Limits, env: dict[str, str], rlimits: list[tuple[int, int, int]], grace_s: float
    ) -> tuple[Ending, bool]:
        job, payload, warm = make_job(program, rlimits)
        self.settle()
        before = self.counters
        self.jobs += 1
        self.last_used = t0 = time.monotonic()
        cap = limits.output_limit_bytes
        deadline = t0 + limits.timeout_s + grace_s
        self.send({"op": "run", "job": marshal.dumps(job), "cap": cap, "size": len(payload)}, deadline)
        self.outgoing = memoryview(payload)  # fed while the run goes on, as the program reads it
        io = _Run(self, cap, early=warm)
        io.run(deadline)
        payload_sent = not self.outgoing
        self.outgoing = memoryview(b"")
        if io.gone and io.reply is None and not self.frames.corrupt:
            self._gone_mid_run()
        after = self.counters
        oom = before is not None and after is not None and after[0] > before[0]
        pids_hit = before is not None and after is not None and after[1] > before[1]
        duration_ms = (time.monotonic() - t0) * 1000.0
        end, reusable = io.outcome(self, memory=oom, pids_hit=pids_hit, duration_ms=duration_ms)
        return end, reusable and payload_sent  # else the relay still waits for the rest of it

    def _gone_mid_run(self) -> None:
        """The container's stream ended during a run. When the program killed its worker (S gone), the
        relay ends the container normally and the run gets a ``killed`` result, as on bwrap; anything
        else (the engine died, the container was removed from outside) is no verdict on the program.

        Raises:
            SandboxUnavailable: the container ended otherwise than by its relay's own exit.
        """
        code = self.exit_code(within_s=STOP_S)
        if code == 0 or self.interrupted:
            return
        self.dead = True
        why = self.stderr_tail() or ("still running" if code is None else f"exit {code}")
        raise SandboxUnavailable(f"docker container {self.name} ended during a run: {why[-300:]}")


class _Run(JobIO):
    """One execution's frames: output (capped), EOFs and the worker's report, until the job is over
    (``JobIO.over``); the job's payload is written meanwhile, as the relay takes it."""

    def __init__(self, box: _Container, cap: int, *, early: bool) -> None:
        super().__init__(cap, early=early)
        self.box = box
        self.open = {"out", "err"}

    def streams_open(self) -> bool:
        return bool(self.open)

    def run(self, deadline: float) -> None:
        box = self.box
        frames = box.frames
        while not self.over(time.monotonic(), deadline):
            if box.outgoing and not self.gone:
                try:
                    box.write_some()
                except WorkerGone:  # the client is gone: so is the container, never to be reused
                    box.outgoing = memoryview(b"")
                    box.dead = True
            got = frames.pop()
            if got is not None:
                kind, data, counters = got
                box.count(counters)
                self.take(kind, data)
                continue
            if frames.eof:
                self.gone = True
                self.open.clear()
                continue
            writing = box.stdin if box.outgoing and not self.gone else None
            frames.wait(self.wait_until(deadline) - time.monotonic(), writing=writing)

    def take(self, kind: str, data: bytes) -> None:
        if kind == "ctrl" and self.reply is not None:
            self.box.held.append(data)
        elif kind == "ctrl":
            self.take_report(data)
        elif kind in ("eof-out", "eof-err"):
            self.open.discard(kind[4:])
        elif kind in self.data:
            self.keep(kind, data)


class DockerSandbox(WorkerPool):
    """Runs programs in warm, locked-down containers (see the module docstring).

    Args:
        docker: the docker CLI (default: ``docker`` on PATH).
        image: the image (default ``default_image()``); its ``python3`` must have this interpreter's
            minor version.
        cpus: ``--cpus`` per container (one execution runs in a container at a time).
        grace_s: how long past ``limits.timeout_s`` the host waits for a run before retiring its container.
        jobs_per_worker: executions a container runs before it is replaced.
        max_idle: idle containers kept across all keys.
        prewarm: containers to start in the background for the default limits (default: one per core, at
            most four; 0: none, the probe starts its own).
        one_run: the caller runs one program: no prewarm, and workers without ``SOLUTION_IMPORTS``
            (``Sandbox.pooled``).
        probe: False to skip checking the engine and image and starting containers (to build command
            lines without Docker).
        pull: pull the image when it is missing.

    Raises:
        SandboxUnavailable: no docker CLI, no engine answering, the image cannot be had or runs another
            Python, or a probe container cannot run a program.
    """

    name = "docker"
    isolating = True

    def __init__(
        self,
        *,
        docker: str | None = None,
        image: str | None = None,
        cpus: float = 1.0,
        grace_s: float = 2.0,
        jobs_per_worker: int = 256,
        max_idle: int | None = None,
        prewarm: int | None = None,
        one_run: bool = False,
        probe: bool = True,
        pull: bool = True,
    ) -> None:
        self.docker = docker or shutil.which("docker") or "docker"
        self.image = image or default_image()
        self.cpus = cpus
        self.host_pidns = os.readlink("/proc/self/ns/pid")
        self._warned_seccomp = False
        count = 0 if one_run else min(os.cpu_count() or 1, 4) if prewarm is None else prewarm
        if probe:
            self._check_engine(pull)
        self._start_pool(
            jobs_per_worker=jobs_per_worker,
            grace_s=grace_s,
            max_idle=max_idle,
            prewarm=count if probe else 0,
            one_run=one_run,
        )
        if probe:
            self._probe("docker")

    def _cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([self.docker, *args], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def _check_engine(self, pull: bool) -> None:
        if not shutil.which(self.docker):
            raise SandboxUnavailable(f"the docker CLI is not installed ({self.docker!r} not found)")
        try:
            info = self._cli("info", "--format", "{{json .ServerVersion}}", timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"docker info failed: {e}") from e
        if info.returncode != 0:
            why = (info.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise SandboxUnavailable(f"no Docker engine answers: {why[:200]}")
        if self._cli("image", "inspect", self.image).returncode != 0:
            pulled = self._cli("pull", self.image, timeout=900) if pull else None
            if pulled is None or pulled.returncode != 0:
                raise SandboxUnavailable(
                    f"docker image {self.image} is not available (docker pull {self.image}, or build it "
                    "offline with scripts/docker_image.sh)"
                )

    def command(self, name: str, key: WorkerKey) -> list[str]:
        """The ``docker run`` argv of one warm container (pure: no Docker needed)."""
        memory_mb = key.memory_mb  # the limit asked for, whole: the relay, W, S and the tmpfs pages count in it
        argv = [
            self.docker, "run", "-i", "--rm", "--name", name,
            # which containers are spade's, and whose: docker ps --filter label=spade.pid=PID
            "--label", "spade.sandbox=1", "--label", f"spade.pid={os.getpid()}",
            "--network", "none",
            "--hostname", "sandbox",
            "--read-only",
            # exec: a program may write a script or build a helper in its scratch and run it, as on bwrap
            "--tmpfs", f"/tmp:rw,exec,nosuid,nodev,size={key.scratch_mb}m,mode=1777",
            "--shm-size", f"{SHM_MB}m",
            "--memory", f"{memory_mb}m", "--memory-swap", f"{memory_mb}m",
            "--pids-limit", str(key.max_processes + PIDS_OVERHEAD),
            "--cpus", f"{self.cpus:g}",
            "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges",
            "--user", USER,
            "--workdir", "/tmp",
            "--ulimit", "core=0:0",
            "--log-driver", "none",
            # the relay must be pid 1 (see forkserver.relay): no init, no entrypoint of the image's
            "--init=false",
            "--entrypoint", "python3",
        ]  # fmt: skip
        for env_key, value in key.env:
            argv += ["--env", f"{env_key}={value}"]
        keep = ",".join(env_key for env_key, _ in key.env)
        argv += [self.image, "-s", "-S", "-B", "-c", FORKSERVER_SOURCE, "--relay", self.host_pidns, keep, FILTERS]
        return argv

    def _spawn(self, key: WorkerKey) -> _Container:
        name = f"spade-{secrets.token_hex(8)}"
        log = tempfile.TemporaryFile()  # noqa: SIM115 - the container's to close, when it is reaped
        try:
            proc = subprocess.Popen(
                self.command(name, key),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            log.close()
            raise SandboxUnavailable(f"cannot start docker: {e}") from e
        box = _Container(key, proc, name, self.docker, log)
        try:
            self._handshake(box)
        except BaseException:
            box.kill()
            raise
        return box

    def _handshake(self, box: _Container) -> None:
        """The relay's hello, the preload, the worker's ready; each checked.

        Raises:
            SandboxUnavailable: the container did not start, or started something spade cannot trust.
        """
        why = "it exited"
        hello: dict[str, Any] | None = None
        ready: dict[str, Any] | None = None
        try:
            hello = box.message("relay", want="hello")
            preload = marshal.dumps(preload_message(one_run=self.one_run))
            box.send({"op": "ctrl", "data": preload}, time.monotonic() + START_TIMEOUT_S)
            ready = box.message("ready")
        except WorkerGone as e:
            why = str(e)
        if ready is None:
            # docker's own words (a bad flag, a missing image, the relay refusing) are on the client's stderr
            box.signal()
            box.exit_code(within_s=STOP_S)
            detail = box.stderr_tail() or why
            if box.key.memory_mb < 2 * OWN_MEMORY_MB:
                # likely the OOM killer, in the relay or its worker; the container is gone with its
                # counters (--rm), so this cannot be told for sure, as bwrap's cgroup tells
                detail += f" (perhaps {too_small(box.key)})"
            raise SandboxUnavailable(f"docker sandbox container did not start: {detail[-500:]}")
        assert hello is not None
        box.hello, box.ready = hello, ready
        version = str(ready.get("version", ""))
        wanted = HOST_PYTHON
        if ".".join(version.split(".")[:2]) != wanted:
            raise SandboxUnavailable(
                f"docker image {self.image} runs Python {version}, spade needs {wanted} (the harness travels as "
                f"bytecode): use python:{wanted}-slim, or build one with scripts/docker_image.sh"
            )
        if ready.get("dumpable_off") is not True:
            raise SandboxUnavailable(f"docker image {self.image}: the sandbox's worker cannot make itself non-dumpable")
        if not hello.get("seccomp") and not self._warned_seccomp:
            self._warned_seccomp = True
            logger.warning(
                "docker sandbox: no seccomp filter of spade's own for %s containers (only the engine's own "
                "profile applies)",
                hello.get("machine"),
            )

    def _rlimits(self, limits: Limits, worker: Any) -> list[tuple[int, int, int]]:
        # the container's memory cgroup does the real limiting (see THREAD_HEADROOM_BYTES)
        return execution_rlimits(limits, (limits.memory_mb << 20) + THREAD_HEADROOM_BYTES)
