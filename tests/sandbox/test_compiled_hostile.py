"""Hostile programs in every compiled answer language, on every isolating backend: each is contained
(its first line says how), the verdict is the program's own, and the sandbox judges the next answer right.

The compiler runs in the sandbox too, as untrusted as the answer: a source that includes a host file sees
the sandbox's files only, and a compile that would never end is cut at the compile's limits.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from languages_available import required
from polyglot_programs import RIGHT, sample_tests
from sandbox_backends import started

from spade_llm.errors import SandboxUnavailable
from spade_llm.languages import TOOLCHAINS, toolchain_for_file
from spade_llm.sandbox.base import Limits, Sandbox
from spade_llm.sandbox.compiled import Build, build, run_built
from spade_llm.sandbox.runner import run_program
from spade_llm.sandbox.stdio import run_stdio_tests
from spade_llm.types import ExecutionResult

HOSTILE = Path(__file__).parents[1] / "data" / "hostile" / "polyglot"
LIMITS = Limits(timeout_s=5.0, memory_mb=256, output_limit_bytes=1 << 16)
CPU_S = 1.0
COMPILE_TIMEOUT_S = 60.0
"""Generous: a loaded CI machine compiles slowly, and only the bomb is meant to meet a compile's limit."""
BOMB_COMPILE_TIMEOUT_S = 8.0


@pytest.fixture(scope="module", params=["bwrap", "docker"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    yield from started(request.param)


def _build(
    box: Sandbox, name: str, replace: dict[str, str] | None = None, compile_timeout_s: float = COMPILE_TIMEOUT_S
) -> Build:
    toolchain = toolchain_for_file(name)
    code = (HOSTILE / name).read_text()
    for old, new in (replace or {}).items():
        code = code.replace(old, new)
    try:
        return build(box, toolchain, code, LIMITS, compile_timeout_s)
    except SandboxUnavailable as e:
        if toolchain.name in required():  # installed by CI: the sandbox must have it
            raise
        pytest.skip(str(e))


def _run(box: Sandbox, name: str, replace: dict[str, str] | None = None) -> tuple[ExecutionResult, float]:
    built = _build(box, name, replace)
    assert built.ok, built.result and built.result.stderr[-2000:]
    start = time.monotonic()
    result = run_built(box, built, LIMITS, cpu_s=CPU_S).result
    return result, time.monotonic() - start


def _still_judges(box: Sandbox) -> None:
    """The sandbox judges a right answer right after the hostile one."""
    for language in ("cpp", "java"):
        if TOOLCHAINS[language].missing():
            continue
        result = run_stdio_tests(box, RIGHT[language], sample_tests(large=1000), Limits(timeout_s=20), CPU_S,
                                 language=language)  # fmt: skip
        assert result.tests_passed == 3, result.stderr[-2000:]


def test_every_hostile_program_is_in_the_table() -> None:
    assert sorted(p.name for p in HOSTILE.iterdir()) == sorted(CONTAINED)


def _processes(box: Sandbox) -> int:
    """How many processes a program sees in its sandbox (its own included)."""
    seen = run_program(box, "import os\nprint(sum(p.isdigit() for p in os.listdir('/proc')))\n", LIMITS)
    assert seen.status == "ok", seen
    return int(seen.stdout)


def _fork_bomb(box: Sandbox, tmp_path: Path) -> None:
    before = _processes(box)
    result, took = _run(box, "fork_bomb.cpp")
    assert took < LIMITS.timeout_s + 5
    assert result.status in ("ok", "timeout", "killed", "error", "memory")
    assert _processes(box) <= before  # not one of its forks is left to the next run


def _kill_everything(box: Sandbox, tmp_path: Path) -> None:
    result, _ = _run(box, "kill_everything.cpp")
    # its signals reach the sandbox's processes only: killing its parent ends its own run as "killed"
    # (never a pass), or the run is its own to the end; either way the next run is judged as before
    assert result.status in ("killed", "ok"), result
    assert result.status == "killed" or result.stdout == "still here\n", result


def _include_shadow(box: Sandbox, tmp_path: Path) -> None:
    built = _build(box, "include_shadow.cpp")
    assert not built.ok and built.result is not None
    secrets = [line for line in Path("/etc/shadow").read_text().splitlines() if line.strip()]
    assert secrets and not any(line in built.result.stderr for line in secrets)


def _compile_bomb(box: Sandbox, tmp_path: Path) -> None:
    start = time.monotonic()
    built = _build(box, "compile_bomb.cpp", compile_timeout_s=BOMB_COMPILE_TIMEOUT_S)
    assert time.monotonic() - start < BOMB_COMPILE_TIMEOUT_S + 10
    assert not built.ok and built.result is not None
    assert built.result.status in ("timeout", "memory", "killed", "error", "output_limit")


def _memory_bomb_java(box: Sandbox, tmp_path: Path) -> None:
    result, took = _run(box, "MemoryBomb.java")
    assert result.status in ("error", "memory", "killed") and took < LIMITS.timeout_s + 5, result


def _thread_storm(box: Sandbox, tmp_path: Path) -> None:
    before = _processes(box)
    result, took = _run(box, "ThreadStorm.java")
    assert took < LIMITS.timeout_s + 5
    assert result.status in ("ok", "error", "timeout", "killed", "memory")
    assert _processes(box) <= before


def _network_out(box: Sandbox, tmp_path: Path) -> None:
    with socket.socket() as listener:  # a service on the host's loopback the program must not reach
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        result, _ = _run(box, "network_out.go", {"PORT": port})
    assert result.stdout.split("\n")[:3] == ["blocked"] * 3, result


def _memory_bomb_go(box: Sandbox, tmp_path: Path) -> None:
    result, took = _run(box, "memory_bomb.go")
    assert result.status in ("memory", "killed", "error") and took < LIMITS.timeout_s + 5, result


def _write_outside(box: Sandbox, tmp_path: Path) -> None:
    result, _ = _run(box, "write_outside.rs", {"CANARY_DIR": str(tmp_path)})
    assert result.stdout.split() == ["refused"] * 5, result
    assert not (tmp_path / "spade_canary").exists()
    for path in ("/etc/spade_canary", "/usr/spade_canary", "/root/spade_canary", "/var/tmp/spade_canary"):
        assert not os.path.exists(path)


def _ignore_sigterm(box: Sandbox, tmp_path: Path) -> None:
    result, took = _run(box, "ignore_sigterm.js")
    assert result.status == "timeout" and took < LIMITS.timeout_s + 5, result


def _env_secrets(box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch | None = None) -> None:
    os.environ["SPADE_CANARY_SECRET"] = "do-not-leak"
    try:
        result, _ = _run(box, "env_secrets.js")
    finally:
        del os.environ["SPADE_CANARY_SECRET"]
    assert result.stdout == "clean\n", result


CONTAINED = {
    "fork_bomb.cpp": _fork_bomb,
    "kill_everything.cpp": _kill_everything,
    "include_shadow.cpp": _include_shadow,
    "compile_bomb.cpp": _compile_bomb,
    "MemoryBomb.java": _memory_bomb_java,
    "ThreadStorm.java": _thread_storm,
    "network_out.go": _network_out,
    "memory_bomb.go": _memory_bomb_go,
    "write_outside.rs": _write_outside,
    "ignore_sigterm.js": _ignore_sigterm,
    "env_secrets.js": _env_secrets,
}


@pytest.mark.parametrize("name", sorted(CONTAINED))
def test_a_hostile_program_is_contained_and_the_sandbox_goes_on(box: Sandbox, name: str, tmp_path: Path) -> None:
    CONTAINED[name](box, tmp_path)
    _still_judges(box)
