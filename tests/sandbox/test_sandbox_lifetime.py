"""Nothing of a sandbox outlives the spade process that started it, even a SIGKILLed one.

``spade run --sandbox bwrap`` is SIGKILLed at many moments of its start-up, while its sandbox
workers are being started (launcher, bwrap, bwrap's pid 1, the fork server); after each kill, no
process of that run may be left after a short grace period.

The run's processes are told apart from everything else on the machine (other tests, other
runs) by a marker: the run finds ``bwrap`` on its ``PATH`` in a directory of its own, a copy of
the real binary, so bwrap and its pid 1 have that path as their executable and command line,
and the launcher has it in its command line; every process in the pid namespace of one of them
belongs to the run too, and so does every process in a cgroup named after the run's pid. Those
cgroups (spade makes them when it runs as root) must be gone too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from sandbox_backends import unavailable

from spade_llm.sandbox.cgroups import PREFIX, CgroupManager

REASON = unavailable("bwrap")
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"bwrap: {REASON}")

OFFSETS_S = (0.0, 0.004, 0.01, 0.02, 0.035, 0.05, 0.08, 0.12, 0.2, 0.35, 0.6, 1.0)
"""When to kill, counted from the moment the run's first sandbox process appears (about 0.7 s into
a run on a quiet machine): most of a run's workers start within the next second."""
GRACE_S = 2.0
FIRST_PROCESS_TIMEOUT_S = 30.0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                out += [int(p) for p in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    return out


def _run_processes(marker: str, spade_pid: int) -> dict[int, str]:
    """Live processes of the run marked by ``marker`` (started by ``spade_pid``): pid -> what it is."""
    own_ns = os.readlink("/proc/self/ns/pid")
    procs: dict[int, tuple[str, str]] = {}
    marked: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                continue  # dead, only not reaped yet
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ns = os.readlink(f"/proc/{pid}/ns/pid")
        except (OSError, IndexError):
            continue
        exe, cgroup = "", ""
        with contextlib.suppress(OSError):
            exe = os.readlink(f"/proc/{pid}/exe")
        with contextlib.suppress(OSError):
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        procs[pid] = (ns, cmdline)
        if marker in exe or marker in cmdline or f"/spade-{spade_pid}-" in cgroup:
            marked[pid] = cmdline
    namespaces = {procs[pid][0] for pid in marked} - {own_ns}
    for pid, (ns, cmdline) in procs.items():
        if ns in namespaces:
            marked.setdefault(pid, cmdline)
    return {pid: f"{cmdline[:100]} [{procs[pid][0]}]" for pid, cmdline in marked.items()}


def _run_cgroups(bases: list[Path], spade_pid: int) -> list[str]:
    """The worker cgroups the run made (children of our own cgroups: the run was in them)."""
    return [str(d) for base in bases for d in base.glob(f"{PREFIX}{spade_pid}-*")]


def _kill_leftovers(pids: list[int], marker: str, spade_pid: int) -> None:
    """End what a broken run left behind: those of ``pids`` that are, once pinned, still the run's."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            fds[pid] = os.pidfd_open(pid)
    still = _run_processes(marker, spade_pid)
    for pid, fd in fds.items():
        if pid in still:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        os.close(fd)


@pytest.mark.e2e
@pytest.mark.slow
def test_a_killed_run_leaves_no_sandbox_process(tmp_path):
    folder = tempfile.mkdtemp(prefix="spade-lifetime-")
    try:
        os.chmod(folder, 0o755)  # the launcher runs bwrap as the unprivileged sandbox uid
        real = shutil.which("bwrap") or "/usr/bin/bwrap"
        shutil.copy(os.path.realpath(real), os.path.join(folder, "bwrap"))
        os.chmod(os.path.join(folder, "bwrap"), 0o755)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["PATH"] = folder + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        cgroups = CgroupManager()
        bases = sorted(set(cgroups.bases.values())) if os.geteuid() == 0 else []
        failures: list[str] = []
        hits = 0
        for i, offset in enumerate(OFFSETS_S):
            argv = [sys.executable, "-m", "spade_llm.cli", "run", "--epochs", "1"]
            argv += ["--out", str(tmp_path / f"run{i}"), "--sandbox", "bwrap", "--quiet"]
            err = tmp_path / f"run{i}.err"
            with err.open("wb") as f:
                proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=f)
            try:
                deadline = time.monotonic() + FIRST_PROCESS_TIMEOUT_S
                while not _children(proc.pid):
                    assert proc.poll() is None, f"the run ended before it started a sandbox: {err.read_text()[-500:]}"
                    assert time.monotonic() < deadline, "the run started no sandbox process"
                    time.sleep(0.001)
                time.sleep(offset)
                if _run_processes(folder, proc.pid):
                    hits += 1
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            deadline = time.monotonic() + GRACE_S
            while True:
                left, groups = _run_processes(folder, proc.pid), _run_cgroups(bases, proc.pid)
                if not (left or groups) or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            if left:
                failures.append(f"killed {offset:g} s after its first sandbox process: {sorted(left.items())}")
                _kill_leftovers(list(left), folder, proc.pid)
            if groups:
                failures.append(f"killed {offset:g} s after its first sandbox process, left cgroups {groups}")
                cgroups.sweep_stale()
        assert not failures, "\n".join(failures)
        assert hits >= len(OFFSETS_S) // 2, f"only {hits} kills found the run's sandbox processes alive"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
