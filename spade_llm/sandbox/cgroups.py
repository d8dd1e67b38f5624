"""Per-worker cgroups (v1 or v2) for the memory and process limits, created under our own cgroup.

Why cgroups and not rlimits: ``RLIMIT_NPROC`` is not enforced for root and counts a whole uid
(every sandbox at once); ``RLIMIT_AS`` starves threads long before memory runs out. A ``pids`` and a
``memory`` cgroup per worker bound exactly the processes of one sandbox, and the memory cgroup
says afterwards whether the kernel's OOM killer fired (so the run can be reported as ``memory``).

Each cgroup is a child of the cgroup this process is in *for that controller* (read from
``/proc/self/cgroup``), so whatever limits a cage, a container or a systemd slice puts around us
still apply to the sandboxes. On cgroup v2 the controllers must be enabled in our cgroup's
``cgroup.subtree_control``; when that is refused (our cgroup has processes and is not the root:
the "no internal processes" rule) or we are not allowed to create cgroups at all (not root, no
delegation), ``CgroupManager.available`` is False and the backend falls back to rlimits.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("spade_llm.sandbox")

CONTROLLERS = ("pids", "memory")
PREFIX = "spade-"
_counter = itertools.count()
"""Cgroup names are ``spade-<our pid>-<n>-<random>``: unique across sandboxes of this process."""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount, from /proc/self/mountinfo."""
    out: list[tuple[str, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[4].replace("\\040", " "), rfields[0], set(rfields[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """Controller (or "" for the v2 unified hierarchy) -> our cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            out[""] = path
        for c in controllers.split(","):
            out[c] = path
    return out


@dataclass
class Cgroup:
    """One worker's cgroups: a directory per controller (v1) or one directory (v2)."""

    version: int
    dirs: dict[str, Path]
    """Controller -> directory (v2: every controller maps to the same directory)."""
    removed: bool = field(default=False)
    _fds: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid into to join (once per directory)."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def _counter(self, controller: str, name: str, key: bytes) -> int:
        """A ``key value`` line of a cgroup file, read through a descriptor kept open (read twice a run)."""
        fd = self._fds.get(name)
        try:
            if fd is None:
                fd = self._fds[name] = os.open(self.dirs[controller] / name, os.O_RDONLY | os.O_CLOEXEC)
            data = os.pread(fd, 4096, 0)
        except OSError:
            return 0
        for line in data.splitlines():
            k, _, value = line.partition(b" ")
            if k == key:
                with contextlib.suppress(ValueError):
                    return int(value)
        return 0

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer has killed in this cgroup."""
        return self._counter("memory", "memory.oom_control" if self.version == 1 else "memory.events", b"oom_kill")

    def pids_limit_hits(self) -> int:
        """How many forks the pids limit has refused in this cgroup."""
        return self._counter("pids", "pids.events", b"max")

    def close_files(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def processes(self) -> list[int]:
        pids: set[int] = set()
        for d in set(self.dirs.values()):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        return sorted(pids)

    def kill(self) -> None:
        """SIGKILL everything in the cgroup (v2 ``cgroup.kill`` when present, else one by one)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs["pids"] / "cgroup.kill").write_text("1")
                return
        for pid in self.processes():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, wait_s: float = 5.0) -> bool:
        """Kill what is left and remove the directories; False if they could not be removed in time."""
        self.close_files()
        if self.removed:
            return True
        deadline = time.monotonic() + wait_s
        while True:
            left = []
            for d in set(self.dirs.values()):
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(d)
            if not left:
                self.removed = True
                return True
            if time.monotonic() >= deadline:
                logger.warning("could not remove sandbox cgroup(s) %s", ", ".join(map(str, left)))
                return False
            self.kill()
            time.sleep(0.01)


class CgroupManager:
    """Finds where we may create cgroups, and creates one per worker with its limits."""

    def __init__(self) -> None:
        self.version = 0
        self.bases: dict[str, Path] = {}
        self.reason = ""
        try:
            self._detect()
        except OSError as e:
            self.version, self.bases, self.reason = 0, {}, f"cgroups unusable: {e}"

    @property
    def available(self) -> bool:
        return self.version != 0

    def _detect(self) -> None:
        mounts, own = _mounts(), _own_paths()
        v1 = {}
        for ctrl in CONTROLLERS:
            for point, fstype, opts in mounts:
                if fstype == "cgroup" and ctrl in opts and ctrl in own:
                    v1[ctrl] = Path(point) / own[ctrl].lstrip("/")
                    break
        if len(v1) == len(CONTROLLERS) and all(os.access(p, os.W_OK) for p in v1.values()):
            self.version, self.bases = 1, v1
            return
        unified = next((Path(p) for p, fstype, _ in mounts if fstype == "cgroup2"), None)
        if unified is not None and "" in own:
            base = unified / own[""].lstrip("/")
            available = set((base / "cgroup.controllers").read_text().split()) if base.exists() else set()
            if set(CONTROLLERS) <= available and os.access(base, os.W_OK):
                enabled = set((base / "cgroup.subtree_control").read_text().split())
                missing = [c for c in CONTROLLERS if c not in enabled]
                if missing:
                    try:
                        (base / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))
                    except OSError as e:
                        self.reason = f"cannot enable {', '.join(missing)} for child cgroups of {base}: {e}"
                        return
                self.version, self.bases = 2, {c: base for c in CONTROLLERS}
                return
        self.reason = "no writable pids and memory cgroups (not root, or no delegation)"

    def sweep_stale(self) -> None:
        """Remove empty cgroups left by spade processes that died without cleaning up."""
        for base in set(self.bases.values()):
            with contextlib.suppress(OSError):
                for d in base.iterdir():
                    if not d.name.startswith(PREFIX) or not d.is_dir():
                        continue
                    pid = d.name[len(PREFIX) :].split("-")[0]
                    if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                        with contextlib.suppress(OSError):
                            d.rmdir()

    def plan(self) -> Cgroup:
        """A new cgroup's name and directories, not created yet (``make`` creates them).

        A worker's watchdog is told the directories before they exist, so that whatever moment we die
        at, either nothing was created or something that removes it is already running.

        Raises:
            OSError: cgroups are unavailable.
        """
        if not self.available:
            raise OSError(self.reason or "cgroups unavailable")
        name = f"{PREFIX}{os.getpid()}-{next(_counter)}-{secrets.token_hex(3)}"
        if self.version == 1:
            return Cgroup(self.version, {c: self.bases[c] / name for c in CONTROLLERS})
        return Cgroup(self.version, {c: self.bases["pids"] / name for c in CONTROLLERS})

    def create(self, memory_bytes: int, max_pids: int) -> Cgroup:
        """A new cgroup limited to ``memory_bytes`` (no swap) and ``max_pids`` tasks.

        Raises:
            OSError: it could not be created or limited (the caller falls back to rlimits).
        """
        group = self.plan()
        self.make(group, memory_bytes, max_pids)
        return group

    def make(self, group: Cgroup, memory_bytes: int, max_pids: int) -> None:
        """Create the planned ``group`` limited to ``memory_bytes`` (no swap) and ``max_pids`` tasks.

        Raises:
            OSError: it could not be created or limited (what was made is removed again).
        """
        dirs: dict[str, Path] = {}
        try:
            if self.version == 1:
                for ctrl in CONTROLLERS:
                    d = group.dirs[ctrl]
                    d.mkdir()
                    dirs[ctrl] = d
                (dirs["pids"] / "pids.max").write_text(str(max_pids))
                (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # absent without swap accounting
                    (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            else:
                d = group.dirs["pids"]
                d.mkdir()
                dirs = {c: d for c in CONTROLLERS}
                (d / "pids.max").write_text(str(max_pids))
                (d / "memory.max").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
        except OSError:
            Cgroup(self.version, dirs).remove(wait_s=0.5)
            raise
