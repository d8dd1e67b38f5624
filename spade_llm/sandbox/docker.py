"""The ``docker`` backend: one throw-away container per execution (only when asked for: it is slow to start).

Each run is ``docker run`` of a slim Python image (default ``python:X.Y-slim`` for this interpreter's
minor version, so the harness's bytecode loads; ``SPADE_DOCKER_IMAGE`` or ``image=`` override it) with
``--network none``, a read-only root and a size-limited tmpfs ``/tmp``, ``--memory`` (no swap),
``--pids-limit``, ``--cpus``, ``--cap-drop ALL``, ``--security-opt no-new-privileges``, a non-root
user, ``--ulimit`` for CPU time, file size, open files and core dumps, ``--init`` as pid 1 and
nothing of the caller's environment. The program and its files travel on the container's stdin: a
few lines of bootstrap read one framed message (the files), write them into a fresh scratch
directory under ``/tmp`` and ``exec`` the program, whose stdin is what follows.

The wall clock is enforced from outside (``docker kill`` at the deadline); an OOM kill is read
from ``docker inspect`` before the container is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time

from ..errors import SandboxUnavailable
from ..types import ExecutionResult
from .base import Limits, Program, Sandbox
from .common import NOFILE, PROGRAM_FILE, Ending, base_env, check_file_names, cpu_seconds, frame, to_result
from .subprocess import Pipes

USER = "65534:65534"
SHM_MB = 8
PIDS_OVERHEAD = 2
"""Tasks besides the program's own: the init process and the bootstrap's exec'd interpreter."""
DOCKER_ERRORS = (125, 126, 127)
"""``docker run`` exit codes that mean the container did not run the program."""

BOOTSTRAP = """\
import marshal, posix, sys
def _read(n):
    out = b""
    while len(out) < n:
        chunk = posix.read(0, n - len(out))
        if not chunk:
            raise SystemExit("spade bootstrap: input ended early")
        out += chunk
    return out
_msg = marshal.loads(_read(int(_read(11))))
_dir = _msg["scratch"]
posix.mkdir(_dir, 0o700)
for _name, _data in _msg["files"].items():
    _path = _dir
    for _part in _name.split("/")[:-1]:
        _path += "/" + _part
        try:
            posix.mkdir(_path, 0o755)
        except FileExistsError:
            pass
    with open(_dir + "/" + _name, "wb") as _f:
        _f.write(_data)
posix.chdir(_dir)
posix.environ[b"HOME"] = posix.environ[b"TMPDIR"] = _dir.encode()
posix.execve(sys.executable, [sys.executable, "-s", "-S", "-B", _msg["argv0"]], posix.environ)
"""


def default_image() -> str:
    return os.environ.get("SPADE_DOCKER_IMAGE") or f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"


class DockerSandbox(Sandbox):
    """Runs each program in a fresh, locked-down container.

    Args:
        docker: the docker CLI (default: ``docker`` on PATH).
        image: the image (default ``default_image()``); it must have ``python3`` on PATH.
        cpus: ``--cpus`` per container.
        grace_s: how long past ``limits.timeout_s`` (container start-up included) before ``docker kill``.
        probe: False to skip checking the engine and image (to build commands without Docker).
        pull: pull the image when it is missing (at construction).

    Raises:
        SandboxUnavailable: no docker CLI, no engine answering, or the image cannot be had.
    """

    name = "docker"
    isolating = True

    def __init__(
        self,
        *,
        docker: str | None = None,
        image: str | None = None,
        cpus: float = 1.0,
        grace_s: float = 10.0,
        probe: bool = True,
        pull: bool = True,
    ) -> None:
        self.docker = docker or shutil.which("docker") or "docker"
        self.image = image or default_image()
        self.cpus = cpus
        self.grace_s = grace_s
        if probe:
            self._probe(pull)

    def _cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([self.docker, *args], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def _probe(self, pull: bool) -> None:
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
                raise SandboxUnavailable(f"docker image {self.image} is not available (docker pull {self.image})")

    def command(self, name: str, limits: Limits, env: dict[str, str]) -> list[str]:
        """The ``docker run`` argv for one execution (pure: no Docker needed)."""
        cpu = cpu_seconds(limits)
        fsize = limits.scratch_mb << 20
        argv = [
            self.docker, "run", "-i", "--name", name, "--label", "spade.sandbox=1",
            "--network", "none",
            "--read-only",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.scratch_mb}m,mode=1777",
            "--shm-size", f"{SHM_MB}m",
            "--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m",
            "--pids-limit", str(limits.max_processes + PIDS_OVERHEAD),
            "--cpus", f"{self.cpus:g}",
            "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges",
            "--user", USER,
            "--workdir", "/tmp",
            "--ulimit", f"cpu={cpu}:{cpu + 1}",
            "--ulimit", f"fsize={fsize}:{fsize}",
            "--ulimit", f"nofile={NOFILE}:{NOFILE}",
            "--ulimit", "core=0:0",
            "--init",
            "--log-driver", "none",
        ]  # fmt: skip
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        argv += [self.image, "python3", "-s", "-S", "-B", "-c", BOOTSTRAP]
        return argv

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        check_file_names(program)
        name = f"spade-{secrets.token_hex(8)}"
        scratch = f"/tmp/spade-{secrets.token_hex(8)}"
        env = {**base_env("/tmp"), **program.env}
        files = {**program.files, PROGRAM_FILE: program.source.encode("utf-8", "surrogatepass")}
        payload = frame({"scratch": scratch, "argv0": PROGRAM_FILE, "files": files}) + program.stdin
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                self.command(name, limits, env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            raise SandboxUnavailable(f"cannot start docker: {e}") from e
        io = Pipes(proc, payload, limits.output_limit_bytes)
        try:
            io.pump(t0 + limits.timeout_s + self.grace_s)
            if io.timed_out or io.overflow:
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    self._cli("kill", name, timeout=30)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        finally:
            io.close()
            oom = self._oom_killed(name) if proc.returncode == 128 + 9 else False
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self._cli("rm", "-f", name, timeout=60)
        rc = proc.returncode
        if rc in DOCKER_ERRORS and not io.timed_out:
            why = bytes(io.data["err"]).decode(errors="replace").strip()[-300:]
            raise SandboxUnavailable(f"docker could not run the container (exit {rc}): {why}")
        returncode = -(rc - 128) if 128 < rc < 128 + 65 else rc
        end = Ending(
            returncode=returncode,
            stdout=bytes(io.data["out"]),
            stderr=bytes(io.data["err"]),
            stdout_truncated=io.truncated["out"],
            stderr_truncated=io.truncated["err"],
            timed_out=io.timed_out,
            overflow=io.overflow,
            memory=oom,
            duration_ms=(time.monotonic() - t0) * 1000.0,
        )
        return to_result(end)

    def _oom_killed(self, name: str) -> bool:
        try:
            out = self._cli("inspect", "--format", "{{json .State.OOMKilled}}", name, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        with contextlib.suppress(ValueError):
            return out.returncode == 0 and json.loads(out.stdout) is True
        return False
