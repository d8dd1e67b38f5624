"""Pieces every backend shares: the environment a program gets, file-name checks, the harness as a
program, the mapping from how a process ended to an ``ExecutionResult``, the unprivileged uid used
when we are root, and the user's task count that ``RLIMIT_NPROC`` is measured against.

Nothing here starts a process. Importing it (and a backend) costs no ``pydantic`` (the results are
dataclasses: ``result.py``): the CLI starts a sandbox while it is still importing the rest
(``registry.start_sandbox``).
"""

from __future__ import annotations

import contextlib
import marshal
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from functools import cache
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

from .._util.cache import digest, load_bytes, store_bytes
from .base import Limits, Program
from .result import ExecStatus, ExecutionResult

PATH = "/usr/local/bin:/usr/bin:/bin"
NOFILE = 1024
PROGRAM_FILE = "program.py"
CRASH_SIGNALS = frozenset({signal.SIGILL, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGSEGV})

DEFAULT_HOST_UID = 2_147_479_552
"""Host uid (and gid) untrusted code runs as when spade runs as root: unprivileged, owning no file and in
no group, so that a process that escaped the sandbox is nobody in particular (not ``nobody``, whose
processes it could signal). ``SPADE_SANDBOX_UID`` overrides it."""

THREAD_HEADROOM_BYTES = 2 << 30
"""``RLIMIT_AS`` above the memory limit where a memory cgroup does the real limiting: every thread
reserves a stack and a malloc arena (~72 MiB of address space), so an address-space limit equal to
the memory limit starves threaded programs long before they use that memory."""


def host_uid() -> int:
    """The unprivileged host uid/gid for untrusted code when running as root (see ``DEFAULT_HOST_UID``)."""
    raw = os.environ.get("SPADE_SANDBOX_UID", "")
    try:
        uid = int(raw) if raw else DEFAULT_HOST_UID
    except ValueError:
        uid = DEFAULT_HOST_UID
    return uid if uid > 0 else DEFAULT_HOST_UID


def base_env(home: str, hash_seed: str = "0") -> dict[str, str]:
    """The whole environment of a program (nothing of the caller's): ``Program.env`` is laid over it."""
    return {
        "PATH": PATH,
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "PYTHONHASHSEED": hash_seed,
        "PYTHONDONTWRITEBYTECODE": "1",
        # what a program printed before it was stopped reaches the pipe (a Python it starts, too)
        "PYTHONUNBUFFERED": "1",
    }


def check_file_names(program: Program) -> None:
    """Raise ``ValueError`` for a file name that would land outside the scratch directory."""
    for name in program.files:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if name.startswith("/") or ".." in parts or not parts or parts == [PROGRAM_FILE] or "\0" in name:
            raise ValueError(f"bad program file name {name!r}")


def frame(obj: Any) -> bytes:
    """A ``%010d\\n``-length-prefixed marshal message (what the in-sandbox readers expect)."""
    data = marshal.dumps(obj, 4)
    return b"%010d\n" % len(data) + data


HARNESS_STUB = """\
# Runs the spade harness: its bytecode when it was compiled for this interpreter, else its source.
import marshal, posix, sys


def _elsewhere(path):  # the working (scratch) directory must not shadow modules the harness imports
    try:
        a, b = posix.stat(path or "."), posix.stat(".")
    except OSError:
        return True
    return (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino)


def _regular(name):  # a harness file, never a FIFO, device, socket or link put in its place
    fd = posix.open(name, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_CLOEXEC)
    if posix.fstat(fd).st_mode & 0o170000 != 0o100000:
        posix.close(fd)
        raise OSError("%s is not a regular file" % name)
    return open(fd, "rb")


sys.path[:] = [p for p in sys.path if _elsewhere(p)]
_ext = sys.modules.get("_frozen_importlib_external")
with _regular("harness.bin") as _f:
    _data = _f.read()
if _ext is not None and _data[:4] == getattr(_ext, "MAGIC_NUMBER", None):
    _code = marshal.loads(_data[4:])
else:
    with _regular("harness.py") as _f:
        _code = compile(_f.read(), "harness.py", "exec")
del _ext, _data, _f, _elsewhere, _regular
exec(_code)
"""

HARNESS_MODULE = "spade_harness"
"""The name under which a fork-server backend may preload the harness (``harness_program()[1]["harness.bin"]``)
and play its part itself for a program that is exactly ``harness_program()``, instead of running this stub."""


@cache
def shipped_source(name: str) -> str:
    """The source of ``name`` (``forkserver.py``, ``launcher.py``, ``harness.py``) as it is shipped:
    ``libc.py``'s in front of it, since it runs where this package cannot be imported."""
    here = Path(__file__).parent
    return (here / "libc.py").read_text() + "\n\n" + (here / name).read_text()


BYTECODE_CACHE = "bytecode"
"""The user cache's namespace (``_util/cache.py``) of the shipped programs' bytecode (``shipped_code``)."""


@cache
def shipped_code(name: str) -> bytes:
    """``shipped_source(name)`` compiled for this interpreter: ``MAGIC_NUMBER`` and the marshal'd code.

    Compiling costs a process that ships it milliseconds at every start (the harness ~16, the fork
    server ~14), and a worker that compiled its own source paid them before its first execution. So
    the bytes are kept in the user's cache, keyed by the source and this interpreter's version: an
    entry that does not load is compiled again (and replaced), never shipped.
    """
    source = shipped_source(name)
    key = digest(sys.version, MAGIC_NUMBER, name, source)
    kept = load_bytes(BYTECODE_CACHE, key)
    if kept is not None and kept[:4] == MAGIC_NUMBER:
        try:
            marshal.loads(kept[4:])
            return kept
        except (ValueError, EOFError, TypeError):
            pass
    data = MAGIC_NUMBER + marshal.dumps(compile(source, name, "exec", dont_inherit=True))
    store_bytes(BYTECODE_CACHE, key, data)
    return data


@cache
def harness_program() -> tuple[str, dict[str, bytes]]:
    """The harness (``harness.py``) as a program: a stub source and the files it loads (its bytecode:
    ``shipped_code``; a backend whose interpreter has another bytecode version falls back to the
    source). The host never imports the harness as a module."""
    source = shipped_source("harness.py").encode()
    return HARNESS_STUB, {"harness.py": source, "harness.bin": shipped_code("harness.py")}


def cpu_seconds(limits: Limits) -> int:
    """The CPU-time rlimit for a run: the wall limit rounded up plus one second."""
    return math.ceil(limits.timeout_s) + 1


def execution_rlimits(limits: Limits, address_bytes: int) -> list[tuple[int, int, int]]:
    """The rlimits of one execution in a warm worker: CPU time (``cpu_seconds``), file size (the scratch
    size), open files, no core dumps, and ``address_bytes`` of address space."""
    import resource

    cpu = cpu_seconds(limits)
    fsize = limits.scratch_mb << 20
    return [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_FSIZE, fsize, fsize),
        (resource.RLIMIT_NOFILE, NOFILE, NOFILE),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_AS, address_bytes, address_bytes),
    ]


@dataclass
class Ending:
    """How an execution ended, as a backend saw it from outside (before any harness report is read)."""

    returncode: int | None
    """Exit code, or ``-signal``; None when the process's status is unknown (its sandbox died)."""
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    overflow: bool = False
    memory: bool = False
    """The sandbox saw the memory limit enforced (a cgroup OOM kill) during the run."""
    duration_ms: float = 0.0


def ending_status(end: Ending, stderr: str) -> tuple[ExecStatus, int | None]:
    """The ``ExecutionResult`` status of a process ending and the signal that ended it (``to_result``'s,
    without the record: a backend's start-up probe reads it without importing the data models)."""
    rc = end.returncode
    sig = -rc if rc is not None and rc < 0 else None
    if rc is None:
        sig = signal.SIGKILL
    status: ExecStatus
    if end.timed_out or sig == signal.SIGXCPU:
        status = "timeout"
    elif end.overflow:
        status = "output_limit"
    elif end.memory:
        status = "memory"
    elif sig is not None:
        status = "error" if sig in CRASH_SIGNALS else "killed"
    elif rc == 0:
        status = "ok"
    else:
        last = (stderr.strip().splitlines() or [""])[-1]
        status = "memory" if last.startswith("MemoryError") else "error"
    return status, sig


def to_result(end: Ending) -> ExecutionResult:
    """The backend-level ``ExecutionResult`` of a process ending (``interpret`` reads the harness's part).

    A run that hit the memory cgroup is ``memory`` even when its top process exited normally: the
    harness's parent always exits 0, and ``interpret`` needs to know the child it reports as killed
    was killed for memory.
    """
    stdout = end.stdout.decode("utf-8", "replace")
    stderr = end.stderr.decode("utf-8", "replace")
    status, sig = ending_status(end, stderr)
    return ExecutionResult(
        status=status,
        return_code=end.returncode if sig is None else None,
        signal=sig,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=end.stdout_truncated,
        stderr_truncated=end.stderr_truncated,
        duration_ms=end.duration_ms,
    )


_tasks_lock = threading.Lock()
_tasks_cache: dict[int, tuple[float, int]] = {}


def user_tasks(uid: int) -> int:
    """Tasks (threads included) ``uid`` has now: ``RLIMIT_NPROC`` counts them all. Cached 2 s."""
    with _tasks_lock:
        stamp, count = _tasks_cache.get(uid, (0.0, 0))
        if time.monotonic() - stamp < 2.0:
            return count
    count = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        with open(f"/proc/{name}/stat", "rb") as f:
                            data = f.read()
                        count += int(data[data.rfind(b")") + 2 :].split()[17])
    with _tasks_lock:
        _tasks_cache[uid] = (time.monotonic(), count)
    return count
