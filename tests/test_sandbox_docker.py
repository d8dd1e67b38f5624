"""The docker backend's command line, checked without a Docker engine (none runs in CI here).

When ``docker info`` answers, ``test_sandbox_conformance.py`` runs the whole suite on it as well.
"""

from __future__ import annotations

import sys

import pytest

from spade_llm.errors import SandboxUnavailable
from spade_llm.sandbox.base import Limits
from spade_llm.sandbox.docker import BOOTSTRAP, DockerSandbox, default_image


def command(limits: Limits | None = None, env: dict[str, str] | None = None) -> list[str]:
    box = DockerSandbox(docker="docker", image="python:3.11-slim", probe=False)
    return box.command("spade-test", limits or Limits(), env or {"PYTHONHASHSEED": "0", "PATH": "/usr/bin"})


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_command_locks_the_container_down():
    argv = command(Limits(timeout_s=10, memory_mb=300, max_processes=32, scratch_mb=16))
    assert argv[:2] == ["docker", "run"]
    assert value(argv, "--network") == "none" and "--read-only" in argv
    assert value(argv, "--cap-drop") == "ALL" and value(argv, "--security-opt") == "no-new-privileges"
    assert value(argv, "--user") != "0" and not value(argv, "--user").startswith("root")
    assert value(argv, "--memory") == value(argv, "--memory-swap") == "300m"  # no swap on top
    assert int(value(argv, "--pids-limit")) == 32 + 2
    assert float(value(argv, "--cpus")) > 0
    assert value(argv, "--tmpfs").startswith("/tmp:") and "size=16m" in value(argv, "--tmpfs")
    ulimits = dict(u.split("=", 1) for u in values(argv, "--ulimit"))
    assert ulimits["cpu"] == "11:12" and ulimits["core"] == "0:0" and ulimits["fsize"] == f"{16 << 20}:{16 << 20}"
    assert "nofile" in ulimits and "--init" in argv
    assert "-v" not in argv and "--volume" not in argv and "--mount" not in argv and "--privileged" not in argv


def test_command_passes_only_the_given_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    argv = command(env={"PYTHONHASHSEED": "1", "LANG": "C.UTF-8"})
    assert values(argv, "--env") == ["PYTHONHASHSEED=1", "LANG=C.UTF-8"]
    assert "sk-secret" not in " ".join(argv) and "--env-file" not in argv
    image = argv.index("python:3.11-slim")
    assert argv[image + 1 :] == ["python3", "-s", "-S", "-B", "-c", BOOTSTRAP]
    compile(BOOTSTRAP, "bootstrap", "exec")


def test_default_image_follows_this_interpreter(monkeypatch):
    monkeypatch.delenv("SPADE_DOCKER_IMAGE", raising=False)
    assert default_image() == f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"
    monkeypatch.setenv("SPADE_DOCKER_IMAGE", "registry.local/py:custom")
    assert default_image() == "registry.local/py:custom"


def test_unavailable_without_the_cli_says_why(tmp_path):
    with pytest.raises(SandboxUnavailable, match="docker CLI is not installed"):
        DockerSandbox(docker=str(tmp_path / "no-docker"))


def test_unavailable_without_an_engine(tmp_path):
    fake = tmp_path / "docker"
    message = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"
    fake.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers: Cannot connect"):
        DockerSandbox(docker=str(fake))
