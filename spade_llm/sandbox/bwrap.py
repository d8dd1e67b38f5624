"""The ``bwrap`` backend: a pool of warm bubblewrap sandboxes, each forking a fresh process per execution.

Isolation (each worker is one bwrap sandbox):

* user, pid, network, IPC, UTS (and cgroup, where available) namespaces; inside, an unprivileged
  uid (1000) with no capabilities, no further user namespaces (``--disable-userns``), no new
  privileges, its own session, and a seccomp deny-list (``seccomp.py``);
* a read-only root with only what the interpreter needs: ``/usr`` (and the ``/bin``, ``/lib*``
  links), the interpreter's installation prefix, ``ld.so.cache``, the timezone and generated
  ``/etc/passwd`` and ``/etc/group``; never ``/``, the user's home or the project's directory;
* writable only: a size-limited tmpfs ``/tmp`` holding each execution's scratch directory, a small
  tmpfs ``/dev/shm`` and the IPC namespace's ``/dev/mqueue``, all wiped after every execution;
* bwrap is started with an empty environment and ``--die-with-parent``; the program's environment
  is built from an allowlist (``common.base_env``);
* when spade runs as root, the launcher (``launcher.py``) puts the worker in its cgroups, makes the
  interpreter reachable if it lives under an unreadable directory, and drops to an unprivileged
  host uid (``common.host_uid``) before exec'ing bwrap: untrusted code is never host root;
* nothing of a sandbox outlives the spade process that started it, even a SIGKILLed one, at any
  moment of its start-up: every worker's launcher stays as bwrap's parent, a child subreaper
  watching a *lifeline* pipe whose write end only this process holds; at EOF (we closed it, or
  died) it kills bwrap and the sandbox's pid 1, which ends the whole pid namespace (see
  ``launcher.py`` for the start-up window ``--die-with-parent`` leaves open);
* no bwrap init inside (``--as-pid-1``): the sandbox's pid 1 is the fork server's worker, which is
  non-dumpable and has no signal handler, so no program can write its memory, take its descriptors
  or signal it (bwrap's init was dumpable: ``/proc/1/mem`` was writable from every program);
* a ``pids`` and a ``memory`` cgroup per worker (children of our own cgroups, v1 or v2) bound its
  processes/threads and memory, and tell afterwards whether the OOM killer fired. The memory cgroup's
  limit is exactly the execution's ``memory_mb``, no swap: the run's whole process tree, the files it
  writes in the tmpfs ``/tmp`` and ``/dev/shm``, and the sandbox's own processes (bwrap, the fork
  server's W and S, the next execution's pre-forked process: ``pool.OWN_MEMORY_MB``) all count
  inside it, so a program holds at most the limit less that. Without cgroups (not root) rlimits
  stand in, per process: ``RLIMIT_AS`` = the memory limit above what the forked interpreter has
  mapped, ``RLIMIT_NPROC``; a process tree or the scratch files are then not bounded together.
  Rlimits always apply: CPU time, address space, file size, open files, no core dumps.

Speed: starting an interpreter costs ~8 ms of CPU and a sandbox ~4 ms more, and on a virtual
machine every fork, exit and copy-on-write fault is dear; so each worker runs ``forkserver.py``: a
pristine interpreter with the harness and common solutions' modules already imported forks one
process per execution, ahead of time, and a long-lived supervisor beside it plays the harness's
trusted parent (see that module: one new process per execution, fresh scratch directory, limits,
everything killed afterwards, wipe, report). The host sends each job over a ``SOCK_SEQPACKET``
socket with fresh pipes attached: the program and its files go straight to the sandbox, and the
host reads stdout and stderr itself, with caps and a wall-clock deadline of its own. When the
program is the runner's harness stub for the very harness the worker preloaded, the supervisor
runs that harness's steps itself instead of a stub (``warm``).

Workers are keyed by what is fixed when one starts: memory and process limits, scratch size and
environment (``PYTHONHASHSEED`` is read at interpreter start, so there is a pool per hash seed).
A worker is retired (its whole sandbox killed) after ``jobs_per_worker`` executions, after any
execution that was killed or hit a limit, when something of an execution survived it, or when
the sandbox could not be wiped clean; a program that kills its worker gets a normal ``killed``
result and the next execution a fresh worker.

``run`` is thread-safe (one execution per worker at a time; the pool grows to the number of
concurrent callers). Any thread may start a worker: bwrap's parent, whose death
``--die-with-parent`` (``PR_SET_PDEATHSIG``) watches, is the launcher, not the starting thread.
``close()`` kills every worker and removes its cgroups; it is also registered to run at
interpreter exit.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import logging
import marshal
import os
import resource
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import SandboxUnavailable
from . import seccomp
from .base import Limits, Program
from .cgroups import Cgroup, CgroupManager
from .common import (
    THREAD_HEADROOM_BYTES,
    Ending,
    execution_rlimits,
    host_uid,
    shipped_code,
    shipped_source,
    user_tasks,
)
from .pool import (
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

SANDBOX_UID = 1000
"""The uid (and gid) programs have inside the sandbox."""
SHM_BYTES = 8 << 20
"""Size of the sandbox's ``/dev/shm`` (its pages, like the scratch's, count against the memory limit)."""
PIDS_OVERHEAD = 3
"""Tasks in a worker's pids cgroup besides the program's own: bwrap, the worker (pid 1 inside), its supervisor."""
PIPE_DEFAULT = 1 << 16
PIPE_MAX = 1 << 20
F_SETPIPE_SZ = 1031
LAUNCHER_SOURCE = shipped_source("launcher.py")
FORKSERVER_SOURCE = shipped_source("forkserver.py")
BYTECODE_STUB = """\
import marshal, posix, sys


def _code():  # a shipped program's bytecode (common.shipped_code), on the descriptor named first
    fd = int(sys.argv.pop(1))
    parts = []
    while True:
        part = posix.read(fd, 1 << 20)
        if not part:
            break
        parts.append(part)
    posix.close(fd)
    data = b"".join(parts)
    if data[:4] != sys.modules["_frozen_importlib_external"].MAGIC_NUMBER:
        raise SystemExit("spade: %s holds bytecode for another Python" % sys.argv[0])
    return marshal.loads(data[4:])


exec(_code())
"""
"""What the launcher and the worker run as ``-c``: their program's bytecode read from a memfd, not its
source, which each compiled anew at every start (the worker ~14 ms before its first execution, the
launcher ~3: ``-c`` keeps no bytecode)."""
PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:spade sandbox:/tmp:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")


class _Worker(Worker):
    """Host side of one warm sandbox: its launcher (the watchdog), its lifeline, the control socket, the cgroup."""

    def __init__(
        self,
        key: WorkerKey,
        proc: subprocess.Popen[bytes],
        lifeline: int,
        ctrl: socket.socket,
        init: tuple[int, int],
        cgroup: Cgroup | None,
        ready: dict[str, Any],
    ) -> None:
        self.key = key
        self.proc = proc
        """The launcher, which runs bwrap and stays as the sandbox's watchdog (``launcher.py``)."""
        self.lifeline = lifeline
        """The write end of the launcher's lifeline: closing it (or our death) ends the whole sandbox."""
        self.ctrl = ctrl
        self.init_pid, self.init_pidfd = init
        """The sandbox's pid 1, the fork server's worker (host pid), and a pidfd of it (-1 if none)."""
        self.cgroup = cgroup
        self.ready = ready
        self.jobs = 0
        self.counters = (cgroup.oom_kills(), cgroup.pids_limit_hits()) if cgroup is not None else (0, 0)
        """The cgroup's OOM kills and refused forks so far."""
        self.dead = False
        self.last_used = time.monotonic()

    @property
    def pidns(self) -> str:
        """The worker's pid namespace (``pid:[inode]``), as the worker reported it."""
        return str(self.ready.get("pidns", ""))

    def host_pids(self) -> list[int]:
        """Host pids of every process of this sandbox (bwrap included, not its launcher), for diagnostics and tests."""
        if self.cgroup is not None:
            return self.cgroup.processes()
        pids: set[int] = set()
        frontier = [self.proc.pid]
        while frontier:
            pid = frontier.pop()
            with contextlib.suppress(OSError, ValueError):
                kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
                pids.update(kids)
                frontier.extend(kids)
        return sorted(pids)

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def kill(self) -> None:
        """End the whole sandbox: its pid 1 (the kernel then kills the namespace), bwrap, the cgroup."""
        self.signal()
        self.reap()

    def signal(self) -> None:
        """SIGKILL the sandbox's pid 1 and cut the lifeline, so the launcher kills the rest and exits
        (``reap`` waits for it): ``close`` signals all first."""
        self.dead = True
        if self.init_pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.init_pidfd, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(self.init_pidfd)
            self.init_pidfd = -1
        _cut(self)
        with contextlib.suppress(OSError):
            self.ctrl.close()

    def interrupt(self) -> None:
        """SIGKILL the sandbox's pid 1 (the kernel then ends its pid namespace), or, without a pidfd,
        cut the lifeline (the launcher kills the rest): ``Worker.interrupt``."""
        if self.init_pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.init_pidfd, signal.SIGKILL)
                return
        _cut(self)

    def reap(self) -> None:
        _wait_launcher(self.proc)
        if self.cgroup is not None:
            self.cgroup.kill()
            self.cgroup.remove()

    # -- one execution -------------------------------------------------------------------------

    def message(self, op: str) -> dict[str, Any]:
        self.ctrl.settimeout(START_TIMEOUT_S)
        try:
            data = self.ctrl.recv(1 << 16)
        except OSError as e:
            raise WorkerGone(f"no {op!r} from the worker: {e}") from e
        finally:
            self.ctrl.settimeout(None)
        return expect_message(data, op, "worker")

    def execute(
        self, program: Program, limits: Limits, env: dict[str, str], rlimits: list[tuple[int, int, int]], grace_s: float
    ) -> tuple[Ending, bool]:
        """Run one program; the result and whether this worker may run another."""
        job, payload, warm = make_job(program, rlimits)
        self.settle()
        pin_r, pin_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        if len(payload) > PIPE_DEFAULT:
            # room for the whole payload: one write, instead of a wake-up per 64 KiB both sides
            with contextlib.suppress(OSError):
                fcntl.fcntl(pin_w, F_SETPIPE_SZ, min(len(payload), PIPE_MAX))
        oom0, pids0 = self.counters  # as read after the last job (nothing runs in between)
        self.jobs += 1
        self.last_used = time.monotonic()
        t0 = time.monotonic()
        try:
            try:
                self.ctrl.sendmsg(
                    [marshal.dumps(job)],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pin_r, out_w, err_w]))],
                )
            except OSError as e:
                for fd in (pin_w, out_r, err_r):
                    os.close(fd)
                raise WorkerGone(str(e)) from e
        finally:
            for fd in (pin_r, out_w, err_w):
                os.close(fd)
        io = _Pump(self.ctrl, pin_w, out_r, err_r, payload, limits.output_limit_bytes, early=warm)
        try:
            io.run(t0 + limits.timeout_s + grace_s)
        finally:
            io.close()
        duration_ms = (time.monotonic() - t0) * 1000.0
        if self.cgroup is not None:
            self.counters = (self.cgroup.oom_kills(), self.cgroup.pids_limit_hits())
        oom = self.counters[0] > oom0
        pids_hit = self.counters[1] > pids0
        return io.outcome(self, memory=oom, pids_hit=pids_hit, duration_ms=duration_ms)


def _cut(worker: _Worker) -> None:
    """Close the worker's lifeline: its launcher kills whatever is left of the sandbox, then exits."""
    if worker.lifeline >= 0:
        with contextlib.suppress(OSError):
            os.close(worker.lifeline)
        worker.lifeline = -1


def _wait_launcher(proc: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """Wait for a launcher whose lifeline was cut (it exits once every process of its sandbox is gone)."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        logger.warning("bwrap launcher %d did not end its sandbox in %g s; killing it", proc.pid, timeout_s)
        proc.kill()
        proc.wait()
    if proc.stderr is not None:
        with contextlib.suppress(OSError):
            proc.stderr.close()


class _Pump(JobIO):
    """Feeds the payload pipe and reads stdout/stderr (capped) and the worker's reply until the job is
    over (``JobIO.over``).

    A plain ``poll`` on raw descriptors: this runs once per execution, on the critical path.
    """

    def __init__(
        self, ctrl: socket.socket, pin_w: int, out_r: int, err_r: int, payload: bytes, cap: int, *, early: bool = False
    ) -> None:
        super().__init__(cap, early=early)
        self.ctrl = ctrl
        self.ctrl_fd = ctrl.fileno()
        self.poller = select.poll()
        self.fds = {"in": pin_w, "out": out_r, "err": err_r}
        self.names = {pin_w: "in", out_r: "out", err_r: "err", self.ctrl_fd: "ctrl"}
        self.readers = {out_r, err_r}
        self.pending = memoryview(payload)
        os.set_blocking(pin_w, False)
        self.poller.register(pin_w, select.POLLOUT)
        for fd in (out_r, err_r, self.ctrl_fd):
            self.poller.register(fd, select.POLLIN)

    def streams_open(self) -> bool:
        return bool(self.readers)

    def run(self, deadline: float) -> None:
        while not self.over(now := time.monotonic(), deadline):
            for fd, _ in self.poller.poll(max(0.0, self.wait_until(deadline) - now) * 1000.0 + 1):
                name = self.names.get(fd)
                if name == "in":
                    self._write()
                elif name == "ctrl":
                    self._reply()
                elif name is not None:
                    self._read(name)

    def _write(self) -> None:
        fd = self.fds["in"]
        try:
            n = os.write(fd, self.pending[: 1 << 16])
        except BlockingIOError:
            return
        except OSError:  # the program closed its stdin or is gone
            n = len(self.pending)
        self.pending = self.pending[n:]
        if not self.pending:
            self.poller.unregister(fd)
            del self.names[fd]
            os.close(fd)
            self.fds["in"] = -1

    def _reply(self) -> None:
        try:
            data = self.ctrl.recv(1 << 16)
        except OSError:
            data = b""
        self.poller.unregister(self.ctrl_fd)
        del self.names[self.ctrl_fd]
        self.take_report(data)

    def _read(self, name: str) -> None:
        fd = self.fds[name]
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self.poller.unregister(fd)
            del self.names[fd]
            self.readers.discard(fd)
            return
        self.keep(name, chunk)

    def close(self) -> None:
        for name, fd in self.fds.items():
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                self.fds[name] = -1


# -- where the interpreter lives, and what the sandbox binds -----------------------------------------


def _read_rest(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> bytes:
    """What is left on a failed start's stderr, once the process has ended (or after ``timeout_s``)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout_s)
    out = b""
    if proc.stderr is not None:
        fd = proc.stderr.fileno()
        os.set_blocking(fd, False)
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 4096):
                out += chunk
    return out[-4000:]


def _run_shipped(source: str, code_fd: int | None) -> list[str]:
    """The ``-c`` arguments that run a shipped program: its bytecode on ``code_fd`` (``_code_fd``) through
    ``BYTECODE_STUB``, or its ``source`` where no memfd could be made."""
    return ["-c", source] if code_fd is None else ["-c", BYTECODE_STUB, str(code_fd)]


def _code_fd(name: str) -> int | None:
    """A memfd holding shipped program ``name``'s bytecode, at offset 0, for ``BYTECODE_STUB`` to read;
    None where memfds cannot be made (the program's source is shipped instead)."""
    try:
        fd = os.memfd_create(f"spade-{name}", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    try:
        data = shipped_code(name)
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        return None
    return fd


def _base_python() -> str:
    """The real interpreter binary behind ``sys.executable`` (a venv's python is a link to it)."""
    candidates = [getattr(sys, "_base_executable", ""), sys.executable]
    for exe in candidates:
        if exe and os.access(exe, os.X_OK):
            return os.path.realpath(exe)
    raise SandboxUnavailable("no Python interpreter found")


def _may(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    if st.st_uid == uid:
        return (st.st_mode >> 6) & bits == bits
    if st.st_gid == gid:
        return (st.st_mode >> 3) & bits == bits
    return st.st_mode & bits == bits


def _unreachable_top(path: str, uid: int, gid: int) -> str | None:
    """The topmost ancestor directory of ``path`` that ``uid`` cannot enter, or None."""
    parts = Path(path).parts
    current = Path("/")
    for part in parts[1:]:
        if not _may(os.stat(current), uid, gid, 1):
            return str(current)
        current = current / part
    return None


def _covered(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


class BwrapSandbox(WorkerPool):
    """Runs programs in warm bubblewrap sandboxes (see the module docstring).

    Args:
        bwrap: the bwrap binary (default: ``bwrap`` on PATH, else ``/usr/bin/bwrap``).
        jobs_per_worker: executions a worker runs before it is replaced.
        grace_s: how long past ``limits.timeout_s`` the host waits for a worker before killing it.
        max_idle: idle workers kept across all keys (beyond it, the least recently used are retired,
            other keys' first); at least the concurrency callers use, or workers are re-spawned.
        use_cgroups: False to rely on rlimits only (tests; machines where cgroups misbehave).
        prewarm: workers to start in the background for the default limits besides the one the probe
            uses (default: one per core beyond the first, at most three; 0: none, the probe starts its own).
        one_run: the caller runs one program: no prewarm, and workers without ``SOLUTION_IMPORTS``
            (``Sandbox.pooled``).

    Raises:
        SandboxUnavailable: bwrap is missing or a probe sandbox cannot run a program here.
    """

    name = "bwrap"
    isolating = True

    def __init__(
        self,
        *,
        bwrap: str | None = None,
        jobs_per_worker: int = 256,
        grace_s: float = 2.0,
        max_idle: int | None = None,
        use_cgroups: bool = True,
        prewarm: int | None = None,
        one_run: bool = False,
    ) -> None:
        found = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        if not os.access(found, os.X_OK):
            raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed ({found} not found)")
        self.bwrap = os.path.realpath(found)
        self.python = _base_python()
        self.root = os.geteuid() == 0
        self.uid = host_uid() if self.root else os.getuid()
        self.gid = self.uid if self.root else os.getgid()
        self.host_pidns = os.readlink("/proc/self/ns/pid")
        self.cgroups: CgroupManager | None = None
        self._cgroup_warned = False
        if use_cgroups:
            self.cgroups = CgroupManager()
            if self.cgroups.available:
                self.cgroups.sweep_stale()
            else:
                logger.debug("bwrap sandbox without cgroups (%s): rlimits only", self.cgroups.reason)
        self.mounts, self.shadow = self._plan_mounts()
        self.seccomp = seccomp.program()
        # Callers usually run one execution per core at once: start those workers now, side by side in
        # the background (the probe below takes whichever is ready first) rather than one at a time
        # on their first runs.
        extra = 0 if one_run else min(os.cpu_count() or 1, 4) - 1 if prewarm is None else prewarm
        self._start_pool(
            jobs_per_worker=jobs_per_worker,
            grace_s=grace_s,
            max_idle=max_idle,
            prewarm=extra + 1 if extra > 0 else 0,
            one_run=one_run,
        )
        self._probe("bwrap")

    # -- mounts ----------------------------------------------------------------------------------

    def _plan_mounts(self) -> tuple[list[str], list[list[Any]]]:
        """bwrap arguments for the read-only binds, and the launcher's plan for unreachable sources."""
        args: list[str] = []
        binds: list[str] = []
        if not os.path.isdir("/usr"):
            raise SandboxUnavailable("no /usr to bind")
        args += ["--ro-bind", "/usr", "/usr"]
        binds.append("/usr")
        for link in ROOT_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
                binds.append(link)
        prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
        prefixes.add(os.path.dirname(os.path.dirname(self.python)))
        for prefix in sorted(prefixes, key=len):
            if prefix == "/" or _covered(prefix, binds) or not os.path.isdir(prefix):
                continue
            args += ["--ro-bind", prefix, prefix]
            binds.append(prefix)
        for path in ETC_FILES:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        from ..languages import TOOLCHAINS
        from ..languages.toolchain import host_paths

        for path in host_paths(TOOLCHAINS.values()):  # what answer languages' commands read outside /usr
            args += ["--ro-bind", path, path]
        shadow: dict[str, list[str]] = {}
        if self.root:
            for src in binds:
                top = _unreachable_top(src, self.uid, self.gid)
                if top is None:
                    continue
                if top == "/":
                    raise SandboxUnavailable(f"{src} is not reachable by the sandbox uid {self.uid}")
                shadow.setdefault(top, []).append(src)
            # nested tops: the outer one's tmpfs must also hold the inner sources
            for top in sorted(shadow, key=len):
                for other in list(shadow):
                    if other != top and _covered(other, [top]):
                        shadow[top].extend(shadow.pop(other))
            for src in binds:
                mode = os.stat(src).st_mode
                bits = 5 if stat.S_ISDIR(mode) else 4
                if not _may(os.stat(src), self.uid, self.gid, bits):
                    raise SandboxUnavailable(f"{src} is not readable by the sandbox uid {self.uid}")
        return args, [[top, sorted(set(srcs))] for top, srcs in sorted(shadow.items())]

    def _bwrap_args(
        self, key: WorkerKey, *, info_fd: int, ctrl_fd: int, data_fds: dict[str, int], code_fd: int | None = None
    ) -> list[str]:
        args = [
            self.bwrap,
            "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            # no bwrap init in the sandbox: the worker is its pid 1, closed to the programs (forkserver.py)
            "--as-pid-1",
            "--hostname", "sandbox",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--disable-userns",
            *self.mounts,
            "--ro-bind-data", str(data_fds["passwd"]), "/etc/passwd",
            "--ro-bind-data", str(data_fds["group"]), "/etc/group",
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
            "--mqueue", "/dev/mqueue",
            "--remount-ro", "/dev",
            "--size", str(key.scratch_mb << 20), "--tmpfs", "/tmp",
            "--remount-ro", "/",
            "--chdir", "/tmp",
            "--info-fd", str(info_fd),
        ]  # fmt: skip
        if "seccomp" in data_fds:
            args += ["--seccomp", str(data_fds["seccomp"])]
        for name, value in key.env:
            args += ["--setenv", name, value]
        args += ["--", self.python, "-s", "-S", "-B", *_run_shipped(FORKSERVER_SOURCE, code_fd)]
        return [*args, str(ctrl_fd), self.host_pidns]

    # -- workers ---------------------------------------------------------------------------------

    def _spawn(self, key: WorkerKey) -> _Worker:
        # the cgroup is only planned here and made once the launcher runs (see ``_make_cgroup``)
        planned = None
        if self.cgroups is not None and self.cgroups.available and self.root:
            with contextlib.suppress(OSError):
                planned = self.cgroups.plan()
        cgroup = None
        host_sock, worker_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_r, info_w = os.pipe2(os.O_CLOEXEC)
        data = {"passwd": PASSWD.encode(), "group": GROUP.encode()}
        if self.seccomp is not None:
            data["seccomp"] = self.seccomp
        data_fds: dict[str, int] = {}
        # the lifeline: we alone hold its write end (close-on-exec), so it reaches EOF when we close
        # it or die, however we die; the launcher then ends the whole sandbox, whatever stage it is at
        life_r, life_w = os.pipe2(os.O_CLOEXEC)
        child_fds = [worker_sock.fileno(), info_w, life_r]
        launcher_fd, worker_fd = _code_fd("launcher.py"), _code_fd("forkserver.py")
        code_fds = [fd for fd in (launcher_fd, worker_fd) if fd is not None]
        child_fds += code_fds
        proc: subprocess.Popen[bytes] | None = None
        try:
            for name, blob in data.items():
                r, w = os.pipe2(os.O_CLOEXEC)
                os.write(w, blob)  # small: fits in the pipe buffer
                os.close(w)
                data_fds[name] = r
                child_fds.append(r)
            argv = self._bwrap_args(
                key, info_fd=info_w, ctrl_fd=worker_sock.fileno(), data_fds=data_fds, code_fd=worker_fd
            )
            config: dict[str, Any] = {"lifeline": life_r, "spade": os.getpid()}
            if self.root:
                config.update(
                    uid=self.uid,
                    gid=self.gid,
                    cgroup_procs=planned.procs_files if planned else [],
                    shadow=self.shadow,
                )
            launcher = _run_shipped(LAUNCHER_SOURCE, launcher_fd)
            argv = [self.python, "-I", "-S", *launcher, marshal.dumps(config).hex(), *argv]
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={},
                    close_fds=True,
                    pass_fds=child_fds,
                    start_new_session=True,
                )
            except OSError as e:
                raise SandboxUnavailable(f"cannot start bwrap: {e}") from e
            cgroup = self._make_cgroup(planned, key)
            # the go-ahead: the launcher joins the cgroup (b"1") or not (b"0") and starts bwrap; had we
            # died first, it would have seen EOF instead and removed whatever of the cgroup we made
            os.write(life_w, b"1" if cgroup is not None else b"0")
        except BaseException:
            host_sock.close()
            os.close(life_w)
            if proc is not None:  # (not after a failed Popen)
                _wait_launcher(proc)
            if cgroup is not None:
                cgroup.remove(wait_s=1)
            raise
        finally:
            worker_sock.close()
            for fd in [info_w, life_r, *data_fds.values(), *code_fds]:
                os.close(fd)
        try:
            init, ready = self._handshake(proc, host_sock, info_r)
        except BaseException as e:
            host_sock.close()
            os.close(life_w)
            _wait_launcher(proc)
            starved = cgroup is not None and cgroup.oom_kills() > 0
            if cgroup is not None:
                cgroup.remove(wait_s=2)
            if starved and isinstance(e, SandboxUnavailable):
                raise too_small(key) from e
            raise
        finally:
            os.close(info_r)
        return _Worker(key, proc, life_w, host_sock, init, cgroup, ready)

    def _make_cgroup(self, planned: Cgroup | None, key: WorkerKey) -> Cgroup | None:
        """Create the worker's planned cgroup; None (the worker relies on rlimits) when that fails."""
        if planned is None or self.cgroups is None:
            return None
        # the limit asked for, whole: spade's own processes in the sandbox and its tmpfs pages count in it
        memory = key.memory_mb << 20
        try:
            self.cgroups.make(planned, memory, key.max_processes + PIDS_OVERHEAD)
        except OSError as e:
            if not self._cgroup_warned:
                self._cgroup_warned = True
                logger.warning("bwrap sandbox: cannot create cgroups (%s); this worker relies on rlimits", e)
            return None
        return planned

    def _handshake(
        self, proc: subprocess.Popen[bytes], ctrl: socket.socket, info_r: int
    ) -> tuple[tuple[int, int], dict[str, Any]]:
        """Send the preload message, then wait for bwrap's info (its pid 1) and the worker's ready message.

        Returns:
            (the sandbox's pid 1 and a pidfd of it, or -1), the ready message.
        """
        deadline = time.monotonic() + START_TIMEOUT_S
        preload = preload_message(one_run=self.one_run)
        with contextlib.suppress(OSError):  # a worker that died already is reported below, with bwrap's stderr
            ctrl.send(marshal.dumps(preload))
        sel = selectors.DefaultSelector()
        sel.register(info_r, selectors.EVENT_READ, "info")
        sel.register(ctrl, selectors.EVENT_READ, "ctrl")
        assert proc.stderr is not None
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        info_buf, err_buf = b"", b""
        child_pid: int | None = None
        ready: dict[str, Any] | None = None
        try:
            while ready is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SandboxUnavailable(f"bwrap worker did not start in {START_TIMEOUT_S:g} s")
                for key, _ in sel.select(remaining):
                    if key.data == "info":
                        chunk = os.read(info_r, 4096)
                        if not chunk:
                            sel.unregister(info_r)
                        info_buf += chunk
                        if child_pid is None and b"}" in info_buf:
                            with contextlib.suppress(ValueError, KeyError, TypeError):
                                child_pid = int(json.loads(info_buf[: info_buf.index(b"}") + 1])["child-pid"])
                    elif key.data == "err":
                        chunk = os.read(proc.stderr.fileno(), 4096)
                        if not chunk:
                            sel.unregister(proc.stderr)
                        err_buf = (err_buf + chunk)[-4000:]
                    else:
                        try:
                            data = ctrl.recv(1 << 16)
                        except OSError:
                            data = b""
                        if not data:
                            err_buf += _read_rest(proc)
                            why = err_buf.decode(errors="replace").strip() or f"exit status {proc.returncode}"
                            raise SandboxUnavailable(f"bwrap worker failed to start: {why[-500:]}")
                        msg = json.loads(data)
                        if msg.get("op") != "ready":
                            raise SandboxUnavailable(f"bwrap worker sent {msg!r} instead of ready")
                        ready = msg
        finally:
            sel.close()
        if child_pid is None:
            raise SandboxUnavailable("bwrap did not report its sandbox pid")
        if ready.get("pidns") == self.host_pidns:
            raise SandboxUnavailable("bwrap worker is not in a pid namespace of its own")
        try:
            pidfd = os.pidfd_open(child_pid)
        except (AttributeError, OSError):
            pidfd = -1  # an old kernel: the launcher still ends the sandbox when we cut its lifeline
        return (child_pid, pidfd), ready

    # -- the Sandbox API -------------------------------------------------------------------------

    def _rlimits(self, limits: Limits, worker: _Worker) -> list[tuple[int, int, int]]:
        if worker.cgroup is not None:
            return execution_rlimits(limits, (limits.memory_mb << 20) + THREAD_HEADROOM_BYTES)
        # no memory cgroup: the address-space limit is the memory limit, on top of what the forked
        # interpreter has mapped already; and the user's task count bounds processes
        address = (max(limits.memory_mb, limits.address_space_mb or 0) << 20) + int(
            worker.ready.get("vm_kb") or 0
        ) * 1024
        nproc = user_tasks(self.uid) + limits.max_processes
        return [*execution_rlimits(limits, address), (resource.RLIMIT_NPROC, nproc, nproc)]
