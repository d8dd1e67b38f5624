"""The docker backend: its command line without an engine, its warm containers against a real one.

Verdicts and limits are checked by ``test_sandbox_conformance.py`` on every backend; here is what is
Docker's own: how a container is locked down, that containers are reused and replaced as promised,
and that none outlives spade, however spade ends.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from sandbox_backends import needs, unavailable

from spade_llm.errors import SandboxUnavailable
from spade_llm.sandbox import docker as dk
from spade_llm.sandbox import seccomp
from spade_llm.sandbox.base import Limits, Program
from spade_llm.sandbox.common import base_env
from spade_llm.sandbox.pool import WorkerKey
from spade_llm.sandbox.runner import run_program

KEY = WorkerKey(memory_mb=300, max_processes=32, scratch_mb=16, env=(("PYTHONHASHSEED", "0"), ("LANG", "C.UTF-8")))
LIMITS = Limits(timeout_s=2.0, memory_mb=256)


def command(key: WorkerKey = KEY) -> list[str]:
    box = dk.DockerSandbox(docker="docker", image="python:3.11-slim", probe=False)
    try:
        return box.command("spade-test", key)
    finally:
        box.close()


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


# -- the command line (no engine needed) ---------------------------------------------------------


def test_command_locks_the_container_down():
    argv = command()
    assert argv[:4] == ["docker", "run", "-i", "--rm"]
    assert values(argv, "--label") == ["spade.sandbox=1", f"spade.pid={os.getpid()}"]
    assert value(argv, "--network") == "none" and "--read-only" in argv
    assert value(argv, "--cap-drop") == "ALL" and value(argv, "--security-opt") == "no-new-privileges"
    assert value(argv, "--user") == "65534:65534"
    # one cgroup for the worker, of the limit asked for (its tmpfs and own processes count inside); no swap
    assert value(argv, "--memory") == value(argv, "--memory-swap") == "300m"
    assert int(value(argv, "--pids-limit")) == 32 + dk.PIDS_OVERHEAD
    assert float(value(argv, "--cpus")) > 0
    assert value(argv, "--tmpfs").startswith("/tmp:") and "size=16m" in value(argv, "--tmpfs")
    assert values(argv, "--ulimit") == ["core=0:0"]
    for flag in ("-v", "--volume", "--mount", "--privileged", "--pid", "--ipc", "--cap-add", "--device"):
        assert flag not in argv, flag


def test_command_passes_only_the_given_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    argv = command()
    assert values(argv, "--env") == ["PYTHONHASHSEED=0", "LANG=C.UTF-8"]
    assert "sk-secret" not in " ".join(argv) and "--env-file" not in argv
    image = argv.index("python:3.11-slim")
    # the relay runs as pid 1 (no init, not behind the image's entrypoint), told which variables to keep
    assert value(argv, "--entrypoint") == "python3" and "--init=false" in argv[:image]
    tail = argv[image + 1 :]
    assert tail[:4] == ["-s", "-S", "-B", "-c"] and tail[4] == dk.FORKSERVER_SOURCE
    assert tail[5:8] == ["--relay", os.readlink("/proc/self/ns/pid"), "PYTHONHASHSEED,LANG"]
    filters = dict(item.split(":") for item in tail[8].split(","))
    assert bytes.fromhex(filters["x86_64"]) == seccomp.program("x86_64")
    compile(dk.FORKSERVER_SOURCE, "forkserver", "exec")


def test_default_image_follows_this_interpreter(monkeypatch):
    monkeypatch.delenv("SPADE_DOCKER_IMAGE", raising=False)
    assert dk.default_image() == f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"
    monkeypatch.setenv("SPADE_DOCKER_IMAGE", "registry.local/py:custom")
    assert dk.default_image() == "registry.local/py:custom"


def test_unavailable_without_the_cli_says_why(tmp_path):
    with pytest.raises(SandboxUnavailable, match="docker CLI is not installed"):
        dk.DockerSandbox(docker=str(tmp_path / "no-docker"))


def _fake_docker(tmp_path, script: str) -> str:
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return str(fake)


def test_unavailable_without_an_engine(tmp_path):
    message = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"
    fake = _fake_docker(tmp_path, f"echo '{message}' >&2\nexit 1\n")
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers: Cannot connect"):
        dk.DockerSandbox(docker=fake)


def test_a_missing_image_names_the_offline_build_script(tmp_path):
    # the engine answers, the image is not there and cannot be pulled (no registry reachable)
    fake = _fake_docker(
        tmp_path,
        'case "$1" in info) echo \'"20.10.24"\';; image) echo "No such image" >&2; exit 1;;'
        ' pull) echo "dial tcp: lookup registry-1.docker.io: no such host" >&2; exit 1;; esac\n',
    )
    with pytest.raises(SandboxUnavailable, match=r"python:3\.11-slim is not available.*scripts/docker_image\.sh"):
        dk.DockerSandbox(docker=fake, image="python:3.11-slim")


def test_the_offline_image_script_is_shipped_and_says_how_to_use_it():
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "docker_image.sh")
    assert os.access(script, os.X_OK)
    out = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "docker import" in out.stdout and "sandbox.docker_image" in out.stdout


# -- against a real engine -----------------------------------------------------------------------

needs_engine = needs("docker")


def _containers(label: str = "spade.sandbox=1") -> set[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={label}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(out.stdout.split())


def _gone(names: set[str], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not names & _containers():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def box():
    sandbox = dk.DockerSandbox(prewarm=1)
    yield sandbox
    sandbox.close()


def _container(sandbox: dk.DockerSandbox, limits: Limits = LIMITS) -> str:
    """Which container ran the program: the engine's folder for it, where its /etc/hostname comes from
    (a pid namespace's number is reused as soon as its container is gone)."""
    source = "print([line.split()[3] for line in open('/proc/self/mountinfo') if ' /etc/hostname ' in line])\n"
    r = run_program(sandbox, source, limits)
    assert r.status == "ok", r
    return r.stdout.strip()


@needs_engine
def test_a_container_serves_many_executions(box):
    seen = {_container(box) for _ in range(5)}
    assert len(seen) == 1, "one warm container, not one per execution"
    names = {w.name for w in box.workers()}
    assert names <= _containers() and len(names) >= 1


@needs_engine
def test_code_runs_as_nobody_without_network_or_a_writable_root(box):
    r = run_program(
        box,
        textwrap.dedent(
            """
            import os, socket
            print(os.getuid(), os.getgid())
            for path in ("/usr/evil", "/etc/evil"):
                try:
                    open(path, "w")
                    print("wrote", path)
                except OSError as e:
                    print("denied", e.errno)
            s = socket.socket()
            s.settimeout(2)
            try:
                s.connect(("1.1.1.1", 80))
                print("connected")
            except OSError as e:
                print("offline", e.errno)
            """
        ),
        LIMITS,
    )
    lines = r.stdout.split("\n")
    assert lines[0] == "65534 65534"
    assert all(line.startswith("denied") for line in lines[1:3]), r.stdout
    assert lines[3].startswith("offline"), r.stdout


@needs_engine
def test_what_a_run_leaves_is_gone_before_the_next(box):
    first = run_program(
        box, "open('/tmp/left', 'w').write('x')\nimport os\nprint(sorted(os.listdir('/tmp')))\n", LIMITS
    )
    assert first.status == "ok"
    second = run_program(box, "import os\nprint(os.path.exists('/tmp/left'), os.getcwd())\n", LIMITS)
    assert second.stdout.split()[0] == "False", second.stdout


@needs_engine
def test_a_timed_out_container_is_replaced_and_removed(box):
    before = _container(box)
    names = {w.name for w in box.workers() if w.key.memory_mb == LIMITS.memory_mb}  # the one that ran it
    assert len(names) == 1
    # a bare program (no harness inside to end it at its deadline): the host's deadline ends it
    r = box.run(Program(source="import time\ntime.sleep(30)\n"), Limits(timeout_s=1.0, memory_mb=256))
    assert r.status == "timeout"
    after = _container(box)
    assert after != before, "the container that timed out must not serve again"
    assert _gone(names, within_s=15), "the retired container must be removed"


@needs_engine
def test_close_leaves_no_container():
    sandbox = dk.DockerSandbox(prewarm=2)
    _container(sandbox)
    names = {w.name for w in sandbox.workers()}
    assert names and names <= _containers()
    sandbox.close()
    assert _gone(names, within_s=15)


@needs_engine
def test_a_killed_spade_leaves_no_container():
    child = textwrap.dedent(
        """
        import sys
        from spade_llm.sandbox.docker import DockerSandbox
        from spade_llm.sandbox.base import Limits
        from spade_llm.sandbox.runner import run_program
        box = DockerSandbox(prewarm=2)
        r = run_program(box, "import time\\nprint('up', flush=True)\\ntime.sleep(60)\\n", Limits(timeout_s=60))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        mine: set[str] = set()
        while time.monotonic() < deadline and len(mine) < 2:
            mine = _containers(f"spade.pid={proc.pid}")  # not those of tests running beside this one
            time.sleep(0.3)
        assert len(mine) >= 2, "the child's containers never started"
        time.sleep(1.0)  # the sleeping program is running in one of them
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _gone(mine, within_s=20), f"containers outlived spade: {mine & _containers()}"


@needs_engine
def test_an_image_with_another_python_is_refused_with_the_fix(monkeypatch):
    image = dk.default_image()  # a real image, whose Python is this one's, not the 3.99 spade now wants
    monkeypatch.setattr(dk, "HOST_PYTHON", "3.99")
    started: set[str] = set()
    command = dk.DockerSandbox.command

    def recorded(self, name, key):
        started.add(name)
        return command(self, name, key)

    monkeypatch.setattr(dk.DockerSandbox, "command", recorded)
    with pytest.raises(SandboxUnavailable, match=r"runs Python 3\.\d+.*spade needs 3\.99.*docker_image\.sh"):
        dk.DockerSandbox(image=image, prewarm=0)
    assert started and _gone(started, within_s=15), "the refused container must be removed"


# -- what the review of the warm containers found: each held by a test -----------------------------


def _run(box: dk.DockerSandbox, source: str, limits: Limits = LIMITS, stdin: bytes = b""):
    return box.run(Program(source=textwrap.dedent(source), stdin=stdin), limits)


@needs_engine
def test_the_relay_is_pid_1_and_cannot_be_interrupted(box):
    # a signal with a handler reaches even pid 1: Python's SIGINT handler used to end the relay
    r = _run(box, "import os, signal, time\nos.kill(1, signal.SIGINT)\ntime.sleep(0.2)\nprint('alive')\n")
    assert (r.status, r.stdout) == ("ok", "alive\n")
    r = _run(box, "import os\nprint(open('/proc/1/cmdline', 'rb').read().split(b'\\0')[-5])\n")
    assert r.stdout.strip() == "b'--relay'", r.stdout


@needs_engine
def test_a_relay_that_is_not_pid_1_refuses_to_run(monkeypatch):
    # an init in front of the relay (--init, a daemon's "init": true) would leave it killable by programs
    command = dk.DockerSandbox.command

    def with_init(self, name, key):
        argv = command(self, name, key)
        argv[argv.index("--init=false")] = "--init"
        return argv

    monkeypatch.setattr(dk.DockerSandbox, "command", with_init)
    with pytest.raises(SandboxUnavailable, match="not pid 1 of the container"):
        dk.DockerSandbox(prewarm=0)


@needs_engine
def test_the_environment_is_the_programs_alone(box):
    # not the engine's HOSTNAME nor the image's own ENV (python:X.Y-slim sets GPG_KEY, PYTHON_VERSION...)
    r = _run(box, "import os, socket\nprint(sorted(os.environ), socket.gethostname())\n")
    names = sorted(base_env("/tmp"))  # what spade sets, exactly as on bwrap: HOME, LANG, PATH, PYTHON*, TMPDIR
    assert {"HOME", "LANG", "PATH", "PYTHONHASHSEED", "TMPDIR"} <= set(names)
    assert r.stdout.strip() == f"{names} sandbox"


@needs_engine
def test_seccomp_denies_what_bwrap_denies(box):
    r = _run(
        box,
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        print(open('/proc/self/status').read().split('Seccomp:')[1].split()[0])
        # add_key(2), keyctl(250): the kernel keyring, shared by every container of the same uid
        print(libc.syscall(248, b"user", b"k", b"v", 1, -3), ctypes.get_errno())
        print(libc.syscall(101, 0, 0, 0, 0), ctypes.get_errno())  # ptrace
        """,
    )
    if box.workers()[0].hello.get("machine") != "x86_64":
        pytest.skip("the syscall numbers here are x86_64's")
    assert r.stdout.split("\n")[:3] == ["2", "-1 1", "-1 1"], r.stdout  # EPERM, spade's filter


@needs_engine
def test_a_large_stdin_costs_the_program_no_memory(box):
    # the relay streams the payload a chunk at a time: 80 MB through a 64 MB program is fine, as on bwrap
    src = """
        import sys
        n = 0
        while chunk := sys.stdin.buffer.read(1 << 16):
            n += len(chunk)
        print(n)
    """
    r = _run(box, src, Limits(timeout_s=20, memory_mb=64), stdin=b"z" * (80 << 20))
    assert (r.status, r.stdout) == ("ok", f"{80 << 20}\n"), r


@needs_engine
def test_stdin_the_program_never_reads_retires_its_container(box):
    before = _container(box)
    r = _run(box, "import sys\nsys.stdin.close()\nprint('done')\n", stdin=b"y" * (8 << 20))
    assert (r.status, r.stdout) == ("ok", "done\n")
    assert _container(box) != before  # the relay still expected the rest of that payload
    assert _run(box, "print(input())\n", stdin=b"hello\n").stdout == "hello\n"


@needs_engine
def test_the_scratch_can_run_what_a_program_writes(box):
    r = _run(
        box,
        """
        import os, subprocess
        open('run.sh', 'w').write('#!/bin/sh\\necho from-script\\n')
        os.chmod('run.sh', 0o755)
        print(subprocess.run(['./run.sh'], capture_output=True, text=True).stdout, end='')
        """,
    )
    assert (r.status, r.stdout) == ("ok", "from-script\n"), r


@needs_engine
def test_many_open_descriptors_in_spade_do_not_matter():
    # select() cannot watch a descriptor past 1023; a trainer process easily holds that many
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may not open more than {hard} descriptors")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 4096, hard))
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        sandbox = dk.DockerSandbox(prewarm=0)
        try:
            assert _run(sandbox, "print('ok')\n").stdout == "ok\n"
        finally:
            sandbox.close()
    finally:
        for fd in held:
            os.close(fd)


@needs_engine
def test_dockers_own_error_reaches_the_user():
    with pytest.raises(SandboxUnavailable, match=r"(?i)range of cpus|cpus"):
        dk.DockerSandbox(prewarm=0, cpus=100000)


@needs_engine
def test_a_container_removed_from_outside_is_no_verdict_on_the_program(box):
    # the engine (or an operator) ending a container mid-run says nothing of the program: an error, not
    # a `killed` result that would be recorded as the model's failure
    _container(box)
    (worker,) = [w for w in box.workers() if w.key.memory_mb == LIMITS.memory_mb]
    killer = subprocess.Popen(["sh", "-c", f"sleep 1; docker rm -f {worker.name}"], stdout=subprocess.DEVNULL)
    try:
        with pytest.raises(SandboxUnavailable, match="ended during a run"):
            _run(box, "import time\ntime.sleep(20)\n", Limits(timeout_s=15, memory_mb=LIMITS.memory_mb))
    finally:
        killer.wait()
    assert _run(box, "print('next')\n").stdout == "next\n"  # and the next run gets a fresh container


def test_a_broken_stream_from_the_container_is_the_container_gone():
    # only the relay writes this stream, but the host must not trust it to be well formed
    from spade_llm.sandbox.forkserver import relay_frame

    r, w = os.pipe()
    try:
        frames = dk._Frames(r)
        os.write(w, relay_frame(b"o", b"out") + (10**9).to_bytes(4, "big") + b"o" + bytes(16))
        assert frames.pop() == ("out", b"out", (-1, -1))
        assert frames.pop() is None and frames.eof and frames.corrupt
        frames = dk._Frames(r)
        os.write(w, (20).to_bytes(4, "big") + b"?" + bytes(19))
        assert frames.pop() is None and frames.corrupt
    finally:
        os.close(r)
        os.close(w)


@needs_engine
@pytest.mark.skipif(unavailable("bwrap") is not None, reason="compares with bwrap, which does not work here")
def test_a_run_on_docker_writes_what_a_run_on_bwrap_writes(tmp_path):
    # the fake solver makes every kind of mistake (exceptions, loops, syntax errors, wrong answers):
    # two epochs of it judged on each backend must give the same tasks, verdicts, rewards and metrics
    from run_kit import records

    from spade_llm.config import load_config
    from spade_llm.session import Session
    from spade_llm.store import RunDir

    out = {}
    for backend in ("bwrap", "docker"):
        config = load_config(
            None,
            {
                "seed": 2,  # its solver's attempts include passes, failures, errors and timed-out tests
                "controller": {"epochs": 2, "tasks_per_epoch": 6, "concurrency": 3},
                "sandbox": {"backend": backend, "test_timeout_s": 0.3},
            },
        )
        path = tmp_path / backend
        path.mkdir()
        with Session(config) as session:
            session.run(RunDir(path), log=lambda _m: None)
        out[backend] = records(path)
    assert out["docker"]["trajectories.jsonl"], "the run judged nothing"
    assert out["docker"] == out["bwrap"]
