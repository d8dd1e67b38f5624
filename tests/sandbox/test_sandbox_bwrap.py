"""The bwrap backend's own machinery: how it starts sandboxes, recycles workers, limits and cleans up.

What every backend must do is in ``test_sandbox_conformance.py``; this file checks the parts that
make bwrap fast and safe (the fork server, its pool, the launcher's uid drop and cgroups), and the
pieces that need no sandbox at all (the command line, the mount plan, the seccomp program).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from sandbox_backends import unavailable

from spade_llm.errors import SandboxUnavailable
from spade_llm.sandbox import bwrap as bw
from spade_llm.sandbox import seccomp
from spade_llm.sandbox.base import Limits, Program
from spade_llm.sandbox.pool import WorkerKey, is_warm_harness
from spade_llm.sandbox.runner import harness_program, run_check, run_program, run_tests
from spade_llm.types import ExecutionResult, TestCase

REASON = unavailable("bwrap")
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bwrap: {REASON}")
LIMITS = Limits(timeout_s=3.0, memory_mb=256)


@pytest.fixture(scope="module")
def box():
    if REASON is not None:
        pytest.skip(f"bwrap: {REASON}")
    sandbox = bw.BwrapSandbox()
    yield sandbox
    sandbox.close()


WHICH_WORKER = (
    "import os\n"
    "start = open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19]\n"
    "print(os.readlink('/proc/self/ns/pid'), start)\n"
)


def pidns(box: bw.BwrapSandbox) -> str:
    """Which worker (sandbox) runs the next execution: its pid namespace and when its pid 1 started
    (the kernel reuses a namespace's number as soon as it is freed)."""
    r = box.run(Program(source=WHICH_WORKER), LIMITS)
    assert r.status == "ok", r.stderr
    return r.stdout.strip()


# -- the command line and mount plan (no sandbox needed) ---------------------------------------


def _args(box: bw.BwrapSandbox) -> list[str]:
    key = WorkerKey(512, 64, 64, (("PYTHONHASHSEED", "0"),))
    return box._bwrap_args(key, info_fd=5, ctrl_fd=6, data_fds={"passwd": 7, "group": 8, "seccomp": 9})


@needs_bwrap
def test_command_line_isolates(box):
    args = _args(box)
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session", "--disable-userns", "--as-pid-1"):  # fmt: skip
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert args[args.index("--uid") + 1] == str(bw.SANDBOX_UID) != "0"
    assert args[args.index("--seccomp") + 1] == "9"
    assert args[args.index("--remount-ro") + 1] == "/dev" and args.count("--remount-ro") == 2
    tmp = args.index("/tmp", args.index("--tmpfs"))
    assert args[tmp - 3 : tmp - 1] == ["--size", str(64 << 20)]  # the scratch space is a bounded tmpfs
    binds = [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a in ("--bind", "--ro-bind", "--dev-bind")]
    assert not any(a == "--bind" or a == "--dev-bind" for a in args)  # nothing writable from the host
    sources = [src for src, _ in binds]
    assert "/" not in sources and os.path.realpath(Path.home()) not in sources
    project = str(Path(__file__).resolve().parents[2])
    assert not any(project == s or project.startswith(s.rstrip("/") + "/") for s in sources if s != "/usr")
    assert args[args.index("--setenv") + 1 : args.index("--setenv") + 3] == ["PYTHONHASHSEED", "0"]


def test_unreachable_ancestor_is_found():
    root = Path(tempfile.mkdtemp(prefix="spade-test-"))
    os.chmod(root, 0o755)
    locked = root / "home"
    prefix = locked / ".pyenv" / "versions" / "3.x"
    prefix.mkdir(parents=True)
    os.chmod(locked, 0o700)
    if bw._unreachable_top(str(root), 2_000_000_001, 2_000_000_001) is not None:
        shutil.rmtree(root)
        pytest.skip("the temporary directory itself is not reachable by other users")
    uid = 2_000_000_001
    assert bw._unreachable_top(str(prefix), uid, uid) == str(locked)
    os.chmod(locked, 0o711)
    assert bw._unreachable_top(str(prefix), uid, uid) is None
    assert bw._may(os.stat(prefix), uid, uid, 5)
    shutil.rmtree(root)


def test_seccomp_program_denies_the_listed_calls():
    for machine in seccomp.ARCHES:
        prog = seccomp.program(machine)
        assert prog is not None and len(prog) % 8 == 0
        ins = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
        arch, table = seccomp.ARCHES[machine]
        assert ins[0] == (0x20, 0, 0, 4) and ins[1] == (0x15, 1, 0, arch)  # a foreign ABI is denied
        assert ins[-2][3] == 0x7FFF0000 and ins[-1][3] == 0x00050001  # allow, then EPERM
        denied = {k for code, jt, jf, k in ins if code == 0x15 and k != arch}
        assert {table["keyctl"], table["ptrace"], table["bpf"]} <= denied
        for i, (code, jt, _jf, k) in enumerate(ins):
            if code == 0x15 and k != arch:
                assert i + 1 + jt == len(ins) - 1, "every listed call jumps to the EPERM return"
    assert seccomp.program("sparc") is None


@needs_bwrap
def test_unavailable_without_a_working_bwrap(tmp_path):
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        bw.BwrapSandbox(bwrap=str(tmp_path / "no-bwrap-here"))
    folder = Path(tempfile.mkdtemp(prefix="spade-test-"))
    try:
        os.chmod(folder, 0o755)  # the sandbox uid must be able to run it
        fake = folder / "bwrap"
        fake.write_text("#!/bin/sh\necho 'bwrap: no permission to create a user namespace' >&2\nexit 1\n")
        fake.chmod(0o755)
        with pytest.raises(SandboxUnavailable, match="no permission to create a user namespace"):
            bw.BwrapSandbox(bwrap=str(fake))
    finally:
        shutil.rmtree(folder)


def _launch(script: str) -> tuple[subprocess.Popen[str], int]:
    """The launcher, as spade starts it (no root steps), running ``sh -c script`` in place of bwrap;
    the launcher and the write end of its lifeline."""
    life_r, life_w = os.pipe2(os.O_CLOEXEC)
    config = marshal.dumps({"lifeline": life_r}).hex()
    argv = [sys.executable, "-I", "-S", "-c", bw.LAUNCHER_SOURCE, config, "/bin/sh", "-c", script]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, pass_fds=[life_r], start_new_session=True)
    os.close(life_r)
    return proc, life_w


def _go(life_w: int) -> None:
    """spade's go-ahead: the cgroup it planned for the launcher is made (none here)."""
    os.write(life_w, b"1")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.parametrize("how", ["lifeline cut", "bwrap exits first"])
def test_the_launcher_ends_everything_it_started(how):
    # bwrap's pid 1 waits on an eventfd for bwrap during start-up: if bwrap dies first (with spade), it
    # is an orphan for ever unless the launcher, a child subreaper, ends it
    body = "/bin/sleep 60 & echo $$ $!; exec 1>&-; " + ("/bin/sleep 60" if how == "lifeline cut" else "exit 3")
    proc, life_w = _launch(body)
    _go(life_w)
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        if how == "lifeline cut":
            time.sleep(0.1)
            assert proc.poll() is None and all(_alive(p) for p in pids)
            os.close(life_w)
            life_w = -1
        proc.wait(timeout=10)
        assert not any(_alive(p) for p in pids), pids
        assert proc.returncode == (3 if how == "bwrap exits first" else 0)
    finally:
        if life_w >= 0:
            os.close(life_w)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_launcher_gives_up_at_once_when_spade_is_already_gone():
    proc, life_w = _launch("echo started; exec /bin/sleep 60")
    os.close(life_w)  # as if spade died before it made the launcher's cgroup
    proc.wait(timeout=10)
    assert proc.returncode == 0


def test_fork_server_refuses_to_run_in_the_callers_pid_namespace():
    # kill(-1) is only ever safe in a pid namespace of the worker's own
    import socket

    from spade_llm.sandbox import forkserver

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with pytest.raises(SystemExit, match="refusing"):
            forkserver.Worker(os.dup(a.fileno()), os.readlink("/proc/self/ns/pid"))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("relayed", [False, True])
def test_fork_server_refuses_to_run_unless_pid_1_is_its_own(relayed):
    # every program can name pid 1 and the sweeps spare it: under bwrap the worker must be it (no
    # bwrap init, which was dumpable); under docker the relay is, and the worker is not
    import socket

    from spade_llm.sandbox import forkserver

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        if relayed:  # this test process plays a worker forked by the relay: its pid is not 1, as it must be
            forkserver.Worker(os.dup(a.fileno()), "pid:[0]", relayed=True)
        else:
            with pytest.raises(SystemExit, match="pid 1 must be this worker"):
                forkserver.Worker(os.dup(a.fileno()), "pid:[0]")
    finally:
        a.close()
        b.close()


# -- the sandbox at work ------------------------------------------------------------------------


@needs_bwrap
def test_untrusted_code_is_not_host_root(box):
    r = box.run(Program(source="import os, time\nprint(os.getuid())\n"), LIMITS)
    assert r.stdout == f"{bw.SANDBOX_UID}\n"
    for worker in box.workers():
        for pid in worker.host_pids():
            try:
                uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
            except (OSError, IndexError):
                continue
            assert uid == box.uid
            if os.geteuid() == 0:
                assert uid != 0


@needs_bwrap
def test_worker_cgroups_carry_the_limits_and_go_away(box):
    if box.cgroups is None or not box.cgroups.available or os.geteuid() != 0:
        pytest.skip("no cgroups here")
    limits = Limits(timeout_s=3.0, memory_mb=200, max_processes=20)
    assert box.run(Program(source="pass"), limits).status == "ok"
    worker = next(w for w in box.workers() if w.key.memory_mb == 200)
    cg = worker.cgroup
    assert cg is not None
    pids_max = int((cg.dirs["pids"] / "pids.max").read_text())
    assert pids_max == 20 + bw.PIDS_OVERHEAD
    memory_file = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
    memory = int((cg.dirs["memory"] / memory_file).read_text())
    assert memory == 200 << 20  # the limit asked for, whole: the worker's own processes count inside it
    own = Path("/proc/self/cgroup").read_text()
    for ctrl, d in cg.dirs.items():
        assert d.exists() and d.name.startswith("spade-")
        if cg.version == 1:  # a child of the cgroup we are in
            line = next(ln for ln in own.splitlines() if ctrl in ln.split(":")[1].split(","))
            assert str(d.parent).endswith(line.split(":", 2)[2].rstrip("/")) or line.endswith(":/")
    worker.kill()
    assert not any(d.exists() for d in cg.dirs.values())


@needs_bwrap
def test_workers_are_reused_and_recycled_after_n_jobs():
    box = bw.BwrapSandbox(jobs_per_worker=3)
    try:
        seen = [pidns(box) for _ in range(7)]
    finally:
        box.close()
    assert seen[0] == seen[1] == seen[2] != seen[3] == seen[4] == seen[5] != seen[6]


@needs_bwrap
def test_a_limit_event_retires_the_worker(box):
    before = pidns(box)
    assert pidns(box) == before  # clean runs reuse it
    r = box.run(Program(source="while True:\n    pass\n"), Limits(timeout_s=0.5, memory_mb=LIMITS.memory_mb))
    assert r.status == "timeout"
    assert pidns(box) != before


@needs_bwrap
def test_killing_the_worker_gives_a_normal_result_and_a_fresh_worker(box):
    before = pidns(box)
    guard = f"import os\nassert os.readlink('/proc/self/ns/pid') != {os.readlink('/proc/self/ns/pid')!r}\n"
    r = box.run(Program(source=guard + "import signal\nos.kill(-1, signal.SIGKILL)\n"), LIMITS)
    assert (r.status, r.signal) == ("killed", 9)
    assert pidns(box) != before
    judged = run_check(box, guard + "os.kill(-1, 9)\n", "def check(c):\n    pass\n", "f", LIMITS)
    assert judged.tests_passed == 0 and judged.status == "killed"


@needs_bwrap
def test_memory_cgroup_oom_is_reported_as_memory(box):
    r = run_tests(
        box,
        "def f(x):\n    chunks = []\n    while True:\n        chunks.append(bytearray(64 << 20))\n",
        "f",
        [TestCase(input="(1,)", expected=1)],
        LIMITS,
        3.0,
    )
    assert r.status == "memory" and r.tests_passed == 0


@needs_bwrap
def test_threads_are_not_starved_by_the_address_space_limit(box):
    # a memory cgroup does the limiting: RLIMIT_AS leaves room for thread stacks and arenas
    r = run_program(
        box,
        "import threading\nts = [threading.Thread(target=sum, args=([1] * 1000,)) for _ in range(40)]\n"
        "for t in ts: t.start()\nfor t in ts: t.join()\nprint('ok')\n",
        Limits(timeout_s=5.0, memory_mb=128),
    )
    if box.cgroups is None or not box.cgroups.available:
        pytest.skip("without cgroups the address-space limit is the memory limit")
    assert (r.status, r.stdout) == ("ok", "ok\n"), r.stderr


@needs_bwrap
def test_warm_harness_gives_the_same_verdicts_as_the_shipped_one(box, monkeypatch):
    code, check = "def add(a, b):\n    return a + b\n", "def check(c):\n    assert c(1, 2) == 3\n"
    warm = run_check(box, code, check, "add", LIMITS)
    stub, files = harness_program()
    assert is_warm_harness(Program(source=stub, files=files))
    cold_files = {**files, "harness.bin": files["harness.bin"] + b"\n"}  # not the preloaded bytes any more
    monkeypatch.setattr("spade_llm.sandbox.runner.harness_program", lambda: (stub, cold_files))
    assert not is_warm_harness(Program(source=stub, files=cold_files))
    cold = run_check(box, code, check, "add", LIMITS)
    assert (warm.status, warm.tests_passed) == (cold.status, cold.tests_passed) == ("ok", 1)
    bad = run_check(box, "def add(a, b):\n    return 0\n", check, "add", LIMITS)
    assert bad.tests_passed == 0


@needs_bwrap
def test_concurrent_runs_with_hash_seeds_from_many_threads():
    box = bw.BwrapSandbox()
    results: dict[tuple[int, int], tuple[int, ExecutionResult]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(6):
                seed = (i + j) % 2
                program = Program(source=f"print({i} * 100 + {j}, hash('spade'))\n", env={"PYTHONHASHSEED": str(seed)})
                results[(i, j)] = (seed, box.run(program, LIMITS))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        hashes: dict[int, set[str]] = {0: set(), 1: set()}
        for (i, j), (seed, r) in results.items():
            number, value = r.stdout.split()
            assert r.status == "ok" and int(number) == i * 100 + j
            hashes[seed].add(value)
        assert len(hashes[0]) == len(hashes[1]) == 1 and hashes[0] != hashes[1]
        assert len(box.workers()) <= box.max_idle + 8
        keys = {w.key.env for w in box.workers()}
        assert len(keys) == 2  # a pool per hash seed
    finally:
        box.close()


@needs_bwrap
def test_close_leaves_no_process_and_no_cgroup():
    box = bw.BwrapSandbox()
    box.run(Program(source="pass"), LIMITS)
    workers = box.workers()
    pids = [pid for w in workers for pid in w.host_pids()]
    groups = [d for w in workers if w.cgroup for d in w.cgroup.dirs.values()]
    assert pids
    box.close()
    time.sleep(0.05)
    alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text()[:60]]
    assert alive == [] and not any(d.exists() for d in groups)
    assert box.workers() == []
    box.close()  # twice is fine


@needs_bwrap
def test_without_cgroups_rlimits_still_bound_a_fork_bomb():
    box = bw.BwrapSandbox(use_cgroups=False)
    try:
        guard = f"import os\nassert os.readlink('/proc/self/ns/pid') != {os.readlink('/proc/self/ns/pid')!r}\n"
        t0 = time.monotonic()
        r = run_program(box, guard + "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
                        Limits(timeout_s=2.0))  # fmt: skip
        assert r.status != "ok" and time.monotonic() - t0 < 8
        r = run_program(box, "x = bytearray(400 << 20)\n", Limits(timeout_s=3.0, memory_mb=128))
        assert r.status == "memory"
    finally:
        box.close()


def test_sandbox_files_are_shipped_with_the_package():
    here = Path(bw.__file__).parent
    for name in ("forkserver.py", "launcher.py"):
        assert (here / name).is_file()
        compile((here / name).read_text(), name, "exec")
    assert stat.S_ISREG(os.stat(sys.executable).st_mode) or os.path.islink(sys.executable)


@needs_bwrap
def test_long_lived_processes_do_not_leak_descriptors(box):
    """The worker's processes live for hundreds of runs: each run's descriptors must all be closed."""
    programs = [
        lambda: run_check(box, "def f(x):\n    return x\n", "def check(c):\n    assert c(1) == 1\n", "f", LIMITS),
        lambda: run_check(box, "def f(x)\n", "def check(c):\n    pass\n", "f", LIMITS),  # syntax error
        lambda: run_program(box, "import sys\nsys.stderr.write('x' * 100000)\n", LIMITS),
        lambda: box.run(Program(source="print(input())", stdin=b"hi\n"), LIMITS),
    ]

    def descriptors() -> int:
        """Open descriptors of the worker W and the supervisor S, once both wait for the next job."""
        worker = next(w for w in box.workers() if w.key.memory_mb == LIMITS.memory_mb)
        deadline = time.monotonic() + 5
        while True:
            procs = {}
            for pid in worker.host_pids():
                with contextlib.suppress(OSError):
                    ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    procs[pid] = (ppid, len(os.listdir(f"/proc/{pid}/fd")))
            w = worker.init_pid  # the sandbox's pid 1 is the worker (bwrap --as-pid-1)
            kids = sorted(pid for pid, (ppid, _) in procs.items() if ppid == w)
            s, cs = kids[0], kids[1:]
            if cs and all(procs[c][1] == 4 for c in cs):  # the next C is forked and waiting: all settled
                return procs[w][1] + procs[s][1]
            assert time.monotonic() < deadline, procs
            time.sleep(0.01)

    for job in programs:
        job()
    before = descriptors()
    for _ in range(10):
        for job in programs:
            job()
    # one descriptor of slack: S may not have taken the next C's socket yet; a leak would add 40
    assert descriptors() <= before + 1


@needs_bwrap
@pytest.mark.parametrize("memfds", [True, False])
def test_the_launcher_and_worker_start_from_bytecode_or_without_memfds_from_source(monkeypatch, memfds):
    """Each compiled its ``-c`` source at every start (the worker ~14 ms before its first execution):
    they now read their bytecode from a memfd; where none can be made, the source still works."""
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def recorded(argv, *args, **kwargs):
        started.append(list(argv))
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(bw.subprocess, "Popen", recorded)
    if not memfds:

        def refused(*args, **kwargs):
            raise OSError("memfd_create: not here")

        monkeypatch.setattr(bw.os, "memfd_create", refused)
    sandbox = bw.BwrapSandbox(prewarm=0, use_cgroups=False)
    try:
        r = sandbox.run(Program(source="import sys\nprint(sys.argv, 6 * 7)"), LIMITS)
    finally:
        sandbox.close()
    assert r.status == "ok", r.stderr
    assert r.stdout == "['program.py'] 42\n"
    launcher_code = started[0][4]
    worker_code = started[0][started[0].index("-c", 5) + 1]
    if memfds:
        assert launcher_code == worker_code == bw.BYTECODE_STUB
    else:
        assert (launcher_code, worker_code) == (bw.LAUNCHER_SOURCE, bw.FORKSERVER_SOURCE)
