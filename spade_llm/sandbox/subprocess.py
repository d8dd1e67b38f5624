"""The ``subprocess`` backend: a plain child process under rlimits. NOT a security boundary.

What it does give: a fresh scratch directory as working directory, HOME and TMPDIR (removed after
the run), an environment built from an allowlist (none of the caller's variables, so no API keys),
rlimits on CPU time, address space, file size, open files and core dumps, a process group and
session of its own that is killed at the end, a wall-clock backstop and capped output.
What it does not: the program runs as the caller's user, with the caller's network, filesystem
and ``/proc``; as root ``RLIMIT_NPROC`` is ignored (fork bombs are not contained), and a process
that calls ``setsid`` leaves the run's session and can outlive it. Use ``bwrap`` or ``docker``
for code you do not trust.

Rlimits are set without ``preexec_fn`` (not safe in a threaded parent, and the pipeline calls
``run`` from worker threads): through ``prlimit(1)`` when present (about a millisecond), else a
``python -c`` launcher that sets them in-process and runs the program file.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Literal

from ..errors import SandboxUnavailable
from ..types import ExecStatus, ExecutionResult
from .base import Limits, Program, Sandbox

logger = logging.getLogger("spade_llm.sandbox")

PROGRAM_FILE = "program.py"
PATH = "/usr/local/bin:/usr/bin:/bin"
NOFILE = 1024
CRASH_SIGNALS = frozenset({signal.SIGILL, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGSEGV})
READ_CHUNK = 1 << 16
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
        "the subprocess sandbox is not a security boundary: programs run as this user, with its network "
        "and files; use --sandbox bwrap or docker for untrusted code"
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
    ) -> None:
        self.python = python or sys.executable
        if not self.python or not os.access(self.python, os.X_OK):
            raise SandboxUnavailable(f"no Python interpreter at {self.python!r}")
        prlimit = shutil.which("prlimit") if rlimits_via != "launcher" else None
        if rlimits_via == "prlimit" and prlimit is None:
            raise SandboxUnavailable("prlimit(1) not found on PATH")
        self.prlimit = prlimit
        self.grace_s = grace_s
        if warn:
            _warn_once()

    # -- the command line ------------------------------------------------------------------

    def _rlimits(self, limits: Limits) -> list[tuple[str, int, int]]:
        cpu = math.ceil(limits.timeout_s) + 1
        mem = limits.memory_mb << 20
        fsize = limits.scratch_mb << 20
        out = [
            ("CPU", cpu, cpu + 1),
            ("AS", mem, mem),
            ("FSIZE", fsize, fsize),
            ("NOFILE", NOFILE, NOFILE),
            ("CORE", 0, 0),
        ]
        if os.geteuid() != 0:  # RLIMIT_NPROC counts all the user's tasks, and root ignores it
            nproc = _user_tasks() + limits.max_processes
            out.append(("NPROC", nproc, nproc))
        return out

    def command(self, limits: Limits) -> list[str]:
        """The argv that runs ``program.py`` (in the working directory) under ``limits``."""
        python = [self.python, "-s", "-S", "-B"]  # not -I: it would ignore PYTHONHASHSEED
        rlimits = self._rlimits(limits)
        if self.prlimit:
            flags = [f"--{name.lower()}={soft}:{hard}" for name, soft, hard in rlimits]
            return [self.prlimit, *flags, "--", *python, PROGRAM_FILE]
        return [*python, "-c", LAUNCHER, *(f"{n}:{s}:{h}" for n, s, h in rlimits), PROGRAM_FILE]

    # -- one run ------------------------------------------------------------------------------

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        scratch = tempfile.mkdtemp(prefix="spade-")
        try:
            _write_files(Path(scratch), program)
            env = {
                "PATH": PATH,
                "LANG": "C.UTF-8",
                "HOME": scratch,
                "TMPDIR": scratch,
                "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                **program.env,
            }
            return self._run(self.command(limits), scratch, env, program.stdin, limits)
        finally:
            _remove_tree(scratch)

    def _run(self, argv: list[str], cwd: str, env: dict[str, str], stdin: bytes, limits: Limits) -> ExecutionResult:
        t0 = time.monotonic()
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
            )
        except OSError as e:
            raise SandboxUnavailable(f"cannot start {argv[0]}: {e}") from e
        io = _Pipes(proc, stdin, limits.output_limit_bytes)
        try:
            io.pump(t0 + limits.timeout_s + self.grace_s)
        finally:
            # The group, then anything else left in the session, before reaping: while the leader is
            # an unreaped zombie its pid (= the group and session id) cannot be reused.
            _killpg(proc.pid)
            if io.timed_out or io.overflow or _abnormal(proc.pid):
                _kill_session(proc.pid)
            proc.wait()
            io.close()
        return _result(proc.returncode, io, (time.monotonic() - t0) * 1000.0)


class _Pipes:
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


def _result(returncode: int, io: _Pipes, duration_ms: float) -> ExecutionResult:
    stdout = io.data["out"].decode("utf-8", "replace")
    stderr = io.data["err"].decode("utf-8", "replace")
    sig = -returncode if returncode < 0 else None
    status: ExecStatus
    if io.timed_out or sig == signal.SIGXCPU:
        status = "timeout"
    elif io.overflow:
        status = "output_limit"
    elif sig is not None:
        status = "error" if sig in CRASH_SIGNALS else "killed"
    elif returncode == 0:
        status = "ok"
    else:
        last = (stderr.strip().splitlines() or [""])[-1]
        status = "memory" if last.startswith("MemoryError") else "error"
    return ExecutionResult(
        status=status,
        return_code=returncode if sig is None else None,
        signal=sig,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=io.truncated["out"],
        stderr_truncated=io.truncated["err"],
        duration_ms=duration_ms,
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


_tasks_cache: tuple[float, int] = (0.0, 0)


def _user_tasks() -> int:
    """Tasks (threads included) of this user now: RLIMIT_NPROC counts them all. Cached 2 s."""
    global _tasks_cache
    stamp, count = _tasks_cache
    if time.monotonic() - stamp < 2.0:
        return count
    uid, count = os.getuid(), 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        with open(f"/proc/{name}/stat", "rb") as f:
                            data = f.read()
                        count += int(data[data.rfind(b")") + 2 :].split()[17])
    _tasks_cache = (time.monotonic(), count)
    return count


def _write_files(scratch: Path, program: Program) -> None:
    (scratch / PROGRAM_FILE).write_text(program.source, encoding="utf-8", errors="surrogatepass")
    for name, data in program.files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or str(rel) == PROGRAM_FILE:
            raise ValueError(f"bad program file name {name!r}")
        path = scratch.joinpath(*rel.parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _remove_tree(path: str) -> None:
    """Remove the scratch directory, even after the program took permissions away."""

    def fix(func: object, target: str, exc: object) -> None:
        parent = os.path.dirname(target)
        with contextlib.suppress(OSError):
            os.chmod(parent, 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)

    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=fix)
        else:
            shutil.rmtree(path, onerror=fix)
    except OSError as e:
        if e.errno != errno.ENOENT:
            logger.warning("could not remove sandbox scratch dir %s: %s", path, e)
