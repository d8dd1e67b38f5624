"""The ``subprocess`` backend: a plain child process under rlimits. NOT a security boundary.

What it does give: a fresh scratch directory as working directory, HOME and TMPDIR (removed after
the run), an environment built from an allowlist (none of the caller's variables, so no API keys),
rlimits on CPU time, address space, file size, open files, processes and core dumps, a process
group and session of its own that is killed at the end, a wall-clock backstop and capped output.
Run as root, it drops each program to an unprivileged uid of its own (just above
``common.host_uid``; the scratch directory is handed to it), so the program is not root,
``RLIMIT_NPROC`` bounds exactly its processes, and runs cannot signal each other; when such a uid
cannot run this interpreter (say, one under ``/root``), another interpreter of the same minor
version it can run is used, and failing that the program runs as root, with a warning.
What it does not: the program runs with the caller's network, filesystem and ``/proc`` (as the
caller's own user when not root), and a process that calls ``setsid`` leaves the run's session
and can outlive it (the scratch directory is removed by descriptors, never through a link such a
process swaps in: ``_remove_tree``). Use ``bwrap`` or ``docker`` for code you do not trust.

Rlimits are set without ``preexec_fn`` (not safe in a threaded parent, and the pipeline calls
``run`` from worker threads): through ``prlimit(1)`` when present (about a millisecond), else a
``python -c`` launcher that sets them in-process and runs the program file.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ..errors import SandboxUnavailable
from .base import CancelHook, Limits, Program, Sandbox
from .common import NOFILE, PATH, PROGRAM_FILE, Ending, base_env, check_file_names, host_uid, to_result, user_tasks
from .result import ExecutionResult

logger = logging.getLogger("spade_llm.sandbox")

READ_CHUNK = 1 << 16
UID_RANGE = 1 << 20
"""Per-run uids are drawn from ``host_uid() + 1 .. + UID_RANGE``."""
DRAIN_S = 0.1
"""After the program exits, how long leftovers still holding its pipes may keep us reading."""

# Sets the rlimits given as NAME:soft:hard arguments, then runs the program file as __main__.
LAUNCHER = """\
import resource as _r, sys as _s, posix as _p
for _a in _s.argv[1:-1]:
    _k, _lo, _hi = _a.split(":")
    _r.setrlimit(getattr(_r, "RLIMIT_" + _k), (int(_lo), int(_hi)))
_f = _s.argv[-1]
_s.argv[:] = [_f]
_s.path[0] = _p.getcwd()
with open(_f, "rb") as _h:
    _c = compile(_h.read(), _f, "exec")
__file__ = _f
del _r, _s, _p, _a, _k, _lo, _hi, _f, _h
exec(_c)
"""

_warned = False
_warn_lock = threading.Lock()


def _warn_once() -> None:
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    logger.warning(
        "the subprocess sandbox is not a security boundary: programs run with this machine's network and "
        "files (as this user, or an unprivileged uid when run as root); use --sandbox bwrap or docker for "
        "untrusted code"
    )


class SubprocessSandbox(Sandbox):
    """Runs each program as ``python -s -S -B program.py`` in a fresh scratch directory.

    Args:
        python: the interpreter (default: this one).
        rlimits_via: ``prlimit`` (the util-linux tool), ``launcher`` (a ``python -c`` wrapper) or
            ``auto`` (prlimit when on PATH).
        grace_s: how long past ``limits.timeout_s`` the backstop waits before killing the run
            (programs that time themselves, like the harness, report first).

    Raises:
        SandboxUnavailable: the interpreter (or a requested prlimit) is missing.
    """

    name = "subprocess"
    isolating = False

    def __init__(
        self,
        *,
        python: str | None = None,
        rlimits_via: Literal["auto", "prlimit", "launcher"] = "auto",
        grace_s: float = 2.0,
        warn: bool = True,
        drop_root: bool = True,
    ) -> None:
        self.python = python or sys.executable
        if not self.python or not os.access(self.python, os.X_OK):
            raise SandboxUnavailable(f"no Python interpreter at {self.python!r}")
        prlimit = shutil.which("prlimit") if rlimits_via != "launcher" else None
        if rlimits_via == "prlimit" and prlimit is None:
            raise SandboxUnavailable("prlimit(1) not found on PATH")
        self.prlimit = prlimit
        self.grace_s = grace_s
        self.uid: int | None = None
        """As root: the base of the unprivileged uids programs run as (each run gets its own above it)."""
        self._uid_lock = threading.Lock()
        self._uids_in_use: set[int] = set()
        if drop_root and os.geteuid() == 0:
            self._choose_unprivileged()
        if warn:
            _warn_once()

    def _choose_unprivileged(self) -> None:
        """As root: run programs as ``host_uid()``, with an interpreter that uid can execute."""
        uid = host_uid()
        candidates = [self.python]
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        for folder in ("/usr/local/bin", "/usr/bin"):
            path = os.path.join(folder, version)
            if os.access(path, os.X_OK) and os.path.realpath(path) not in map(os.path.realpath, candidates):
                candidates.append(path)
        for python in candidates:
            try:
                probe = subprocess.run(
                    [python, "-s", "-S", "-B", "-c", "import posix; print(posix.getuid())"],
                    user=uid, group=uid, extra_groups=[], cwd="/", env={"PATH": PATH},
                    capture_output=True, timeout=30,
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError):
                continue
            if probe.returncode == 0 and probe.stdout.strip() == str(uid).encode():
                self.python, self.uid = python, uid
                return
        logger.warning(
            "subprocess sandbox: uid %d cannot run %s (or another python%d.%d); programs will run as ROOT",
            uid, self.python, *sys.version_info[:2],
        )  # fmt: skip

    # -- the command line ------------------------------------------------------------------

    def _run_uid(self) -> int | None:
        """The uid for one run: as root, a fresh one per run (next to ``host_uid()``), so that
        ``RLIMIT_NPROC`` counts this run's processes alone and concurrent runs cannot signal each other."""
        if self.uid is None:
            return None
        with self._uid_lock:
            while True:
                uid = self.uid + 1 + secrets.randbelow(UID_RANGE)
                if uid not in self._uids_in_use:
                    self._uids_in_use.add(uid)
                    return uid

    def _rlimits(self, limits: Limits, run_uid: int | None = None) -> list[tuple[str, int, int]]:
        cpu = math.ceil(limits.timeout_s) + 1
        mem = max(limits.memory_mb, limits.address_space_mb or 0) << 20
        fsize = limits.scratch_mb << 20
        out = [
            ("CPU", cpu, cpu + 1),
            ("AS", mem, mem),
            ("FSIZE", fsize, fsize),
            ("NOFILE", NOFILE, NOFILE),
            ("CORE", 0, 0),
        ]
        if run_uid is not None:  # a uid of this run's own: it has no other task
            out.append(("NPROC", limits.max_processes, limits.max_processes))
        elif os.geteuid() != 0:  # RLIMIT_NPROC counts all the user's tasks, and root ignores it
            nproc = user_tasks(os.geteuid()) + limits.max_processes
            out.append(("NPROC", nproc, nproc))
        return out

    def command(self, limits: Limits, run_uid: int | None = None) -> list[str]:
        """The argv that runs ``program.py`` (in the working directory) under ``limits``."""
        python = [self.python, "-s", "-S", "-B"]  # not -I: it would ignore PYTHONHASHSEED
        rlimits = self._rlimits(limits, run_uid)
        if self.prlimit:
            flags = [f"--{name.lower()}={soft}:{hard}" for name, soft, hard in rlimits]
            return [self.prlimit, *flags, "--", *python, PROGRAM_FILE]
        return [*python, "-c", LAUNCHER, *(f"{n}:{s}:{h}" for n, s, h in rlimits), PROGRAM_FILE]

    # -- one run ------------------------------------------------------------------------------

    def run(self, program: Program, limits: Limits, cancel: CancelHook | None = None) -> ExecutionResult:
        """``cancel``: cancelling the run kills its process group (it then ends ``killed``)."""
        check_file_names(program)
        run_uid = self._run_uid()
        scratch = tempfile.mkdtemp(prefix="spade-")
        try:
            _write_files(Path(scratch), program, run_uid)
            env = {**base_env(scratch), **program.env}
            return self._run(self.command(limits, run_uid), scratch, env, program.stdin, limits, run_uid, cancel)
        finally:
            _remove_tree(scratch)
            if run_uid is not None:
                with self._uid_lock:
                    self._uids_in_use.discard(run_uid)

    def _run(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        stdin: bytes,
        limits: Limits,
        run_uid: int | None = None,
        cancel: CancelHook | None = None,
    ) -> ExecutionResult:
        t0 = time.monotonic()
        drop: dict[str, Any] = {}
        if run_uid is not None:  # set in the child before exec, by subprocess's C code (no preexec_fn)
            drop = {"user": run_uid, "group": run_uid, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                **drop,
            )
        except OSError as e:
            raise SandboxUnavailable(f"cannot start {argv[0]}: {e}") from e
        io = Pipes(proc, stdin, limits.output_limit_bytes)
        # the group may be signalled from another thread until it is reaped below (its id is not reused before)
        undo = cancel.on_cancel(functools.partial(_killpg, proc.pid)) if cancel is not None else None
        try:
            io.pump(t0 + limits.timeout_s + self.grace_s)
        finally:
            if undo is not None:
                undo()
            # The group, then anything else left in the session, before reaping: while the leader is
            # an unreaped zombie its pid (= the group and session id) cannot be reused.
            _killpg(proc.pid)
            if io.timed_out or io.overflow or _abnormal(proc.pid):
                _kill_session(proc.pid)
            proc.wait()
            io.close()
        return _result(proc.returncode, io, (time.monotonic() - t0) * 1000.0)


class Pipes:
    """Feeds stdin and reads stdout/stderr with caps until the process exits or the deadline."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes, cap: int) -> None:
        self.proc = proc
        self.cap = cap
        self.data = {"out": bytearray(), "err": bytearray()}
        self.truncated = {"out": False, "err": False}
        self.overflow = self.timed_out = self.exited = False
        self.drain_until = 0.0
        self.sel = selectors.DefaultSelector()
        assert proc.stdin and proc.stdout and proc.stderr
        self.pending = memoryview(stdin)
        os.set_blocking(proc.stdin.fileno(), False)
        if stdin:
            self.sel.register(proc.stdin, selectors.EVENT_WRITE, "in")
        else:
            proc.stdin.close()
        self.sel.register(proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(proc.stderr, selectors.EVENT_READ, "err")
        self.pidfd = -1
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(proc.pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")

    def readers(self) -> int:
        return sum(key.data in ("out", "err") for key in self.sel.get_map().values())

    def pump(self, deadline: float) -> None:
        while not self.overflow:
            now = time.monotonic()
            if self.exited:
                if not self.readers():
                    return
                if not self.drain_until:
                    self.drain_until = now + DRAIN_S
                deadline = min(deadline, self.drain_until)
            if now >= deadline:
                self.timed_out = not self.exited
                return
            wait = deadline - now if self.pidfd >= 0 else min(deadline - now, 0.02)
            for key, _ in self.sel.select(wait):
                if key.data == "exit":
                    self.exited = True
                    self.sel.unregister(key.fileobj)
                elif key.data == "in":
                    self._write(key)
                else:
                    self._read(key)
            if self.pidfd < 0 and not self.exited:
                self.exited = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def _write(self, key: selectors.SelectorKey) -> None:
        stream = key.fileobj
        try:
            n = os.write(key.fd, self.pending[: 1 << 16])
        except BlockingIOError:
            return
        except OSError:  # the program closed its stdin
            n = len(self.pending)
        self.pending = self.pending[n:]
        if not self.pending:
            self.sel.unregister(stream)
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]

    def _read(self, key: selectors.SelectorKey) -> None:
        try:
            chunk = os.read(key.fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.sel.unregister(key.fileobj)
            return
        buf = self.data[key.data]
        room = self.cap - len(buf)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            self.truncated[key.data] = True
            self.overflow = True
        else:
            buf += chunk

    def close(self) -> None:
        self.sel.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _result(returncode: int, io: Pipes, duration_ms: float) -> ExecutionResult:
    return to_result(
        Ending(
            returncode=returncode,
            stdout=bytes(io.data["out"]),
            stderr=bytes(io.data["err"]),
            stdout_truncated=io.truncated["out"],
            stderr_truncated=io.truncated["err"],
            timed_out=io.timed_out,
            overflow=io.overflow,
            duration_ms=duration_ms,
        )
    )


# -- process and file hygiene --------------------------------------------------------------


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _abnormal(pid: int) -> bool:
    """Whether the (unreaped) process ended other than by exiting 0."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is None or info.si_code != os.CLD_EXITED or info.si_status != 0


def _session_members(sid: int) -> list[int]:
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rfind(b")") + 2 :].split()
            if int(fields[3]) == sid and fields[0] not in (b"Z", b"X"):  # zombies are already dead
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _kill_session(sid: int) -> None:
    """Kill every process still in the run's session (other process groups included)."""
    for _ in range(20):
        members = [pid for pid in _session_members(sid) if pid != sid]
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _write_files(scratch: Path, program: Program, owner: int | None = None) -> None:
    """The program and its files in the scratch directory, all handed to ``owner`` when given."""
    (scratch / PROGRAM_FILE).write_text(program.source, encoding="utf-8", errors="surrogatepass")
    for name, data in program.files.items():
        path = scratch.joinpath(*PurePosixPath(name).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if owner is not None:
        os.chown(scratch, owner, owner)
        for root, dirs, files in os.walk(scratch):
            for name in dirs + files:
                os.chown(os.path.join(root, name), owner, owner, follow_symlinks=False)


REMOVE_ATTEMPTS = 5
"""Tries to remove a scratch directory that something still changes (a process the run left behind)."""
_DIR_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _remove_tree(path: str) -> None:
    """Remove the scratch directory, even after the program took permissions away.

    By descriptors only, each name looked up in the directory opened before it, never through a
    link: a process the run left behind (one that called ``setsid``) may still be changing the tree,
    and a path followed through a link it swapped in would reach a host file (as root: change its
    permissions, or remove it). Nothing above the scratch directory is touched.
    """
    parent, name = os.path.split(os.path.abspath(path))
    error: BaseException | None = None
    for _ in range(REMOVE_ATTEMPTS):
        try:
            top = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as e:
            error = e
            break
        try:
            _remove_at(top, name)
            return
        except (OSError, RecursionError) as e:  # something changed it meanwhile: again, from the top
            error = e
        finally:
            os.close(top)
    logger.warning("could not remove sandbox scratch dir %s: %s", path, error)


def _remove_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` of the directory open at ``dir_fd``, and all under it, giving back the permissions
    a program took away; a link is removed, never followed. Raises ``OSError`` if it cannot."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return
    here = os.open(name, _DIR_PATH, dir_fd=dir_fd)  # a link swapped in since the stat: ENOTDIR, tried again
    try:
        if stat.S_IMODE(os.fstat(here).st_mode) & 0o700 != 0o700:
            os.chmod(f"/proc/self/fd/{here}", 0o700)  # the directory just opened, wherever it is now
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=here)
    finally:
        os.close(here)
    try:
        for child in os.listdir(fd):
            _remove_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)
