"""Answers in other languages than Python: compiled once in the sandbox, then run on each test.

A ``Toolchain`` (``languages/toolchain.py``) says how. The compile is one execution of its compiler
in the sandbox, as untrusted as the answer itself (a hostile ``#include "/etc/shadow"`` sees the
sandbox's files only; a compile-time bomb meets the compile's limits), under ``compile_limits``: its
own wall limit (``compile_timeout_s``) and room for a compiler's memory. What it leaves (a binary,
class files) comes back to the host (``runner.run_command``'s ``collect``) and is written into each
test's run, which is one more execution under the test's own limits. ``build`` keeps every build by
the answer's hash, so K samples of one answer, or one answer judged on public and then hidden tests,
compile once; a compiler's rejection is kept too (it rejects it the same way again), but not a compile cut
by a limit, which a quieter moment may let through.

A failed compile is data: ``Build.ok`` false and its ``result`` the compiler's (``status`` ``error``,
its stderr naming the file and line: the solver's repair prompt shows it). A toolchain missing from
the machine (or from the docker image) is ``SandboxUnavailable`` naming the package to install.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from ..errors import SandboxUnavailable
from ..languages.toolchain import Toolchain
from .base import Limits, Sandbox
from .result import ExecutionResult
from .runner import CommandRun, run_command

__all__ = [
    "BUILDS_KEPT",
    "DEFAULT_COMPILE_TIMEOUT_S",
    "Build",
    "build",
    "compile_error_line",
    "compile_limits",
    "run_built",
    "run_limits",
]

DEFAULT_COMPILE_TIMEOUT_S = 30.0
"""Wall seconds a compile may take: g++ on ``<bits/stdc++.h>`` alone takes ~4 s on a quiet core."""
COMPILE_MEMORY_MB = 1024
"""Memory a compile may hold at least (rustc and javac need several hundred MiB)."""
COMPILE_SCRATCH_MB = 256
"""Scratch room a compile may write (intermediate files, Go's build cache, the binary)."""
ARTIFACT_BYTES = 16 << 20
"""Most a compile may leave for the runs (a Go binary is ~2 MiB, a stripped Rust one less): a larger build
(a 60 MiB static array) fails, rather than fill the host's memory and every test's scratch."""
BUILDS_KEPT = 256
"""Builds kept in memory (least recently used ones go first)..."""
BUILD_BYTES_KEPT = 256 << 20
"""... and at most this many bytes of their files in all."""
CANNOT_RUN = "spade: cannot run "
"""How the harness says a command could not be started (``harness._Child.exec_command``)."""


@dataclass(frozen=True)
class Build:
    """One answer's compile: whether it succeeded, what the compiler said, and what the runs need."""

    toolchain: Toolchain
    code: str
    ok: bool
    result: ExecutionResult | None = None
    """The compile's execution (None: nothing to compile)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """The files each run gets: the compile's artifacts, or the source itself for an interpreted language."""
    compile_ms: float = 0.0

    @property
    def error(self) -> str:
        """The compile's failure in a line: the first error line of the compiler's stderr."""
        if self.ok or self.result is None:
            return ""
        if self.result.status == "timeout":
            return "compile time limit exceeded"
        return compile_error_line(self.result.stderr, self.toolchain.source_for(self.code))


def compile_error_line(stderr: str, source: str) -> str:
    """A compiler's complaint in one line, naming the source's line: g++, javac and Go write
    ``main.cpp:4:3: error: ...``; rustc and Node name the place on a line of its own, added here.

    >>> compile_error_line("error[E0308]: mismatched types\\n --> main.rs:2:16\\n", "main.rs")
    'compile error: error[E0308]: mismatched types (main.rs:2:16)'
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    place = re.compile(rf"(?:^|[\s/]){re.escape(source)}:(\d+)(?::(\d+))?")
    located = next((line for line in lines if place.search(line)), None)
    message = next((line for line in lines if "error" in line.lower() and not line.startswith("#")), None)
    if located is not None:
        found = place.search(located)
        assert found is not None
        where = found.group(0).strip().lstrip("./")
        rest = located[found.end() :].lstrip(": ").strip()
        if rest and (message is None or "error" in rest.lower() or message == located):
            return f"compile error: {where}: {rest}"
        if message is not None:
            return f"compile error: {message} ({where})"
        return f"compile error: {where}"
    return f"compile error: {message or (lines[0] if lines else 'the compiler failed')}"


_BUILDS: OrderedDict[tuple[str, ...], Build] = OrderedDict()
_LOCK = threading.Lock()
_BUILDING: dict[tuple[str, ...], threading.Lock] = {}


def compile_limits(limits: Limits, compile_timeout_s: float, max_memory_mb: int | None = None) -> Limits:
    """The limits of a compile: its own wall limit, at least ``COMPILE_MEMORY_MB`` and
    ``COMPILE_SCRATCH_MB`` (whatever the tests' are) but never more memory than ``max_memory_mb`` (a
    server's ceiling), room for a compiler's address-space reservations, and the process limit and output
    cap of ``limits``."""
    memory_mb = max(limits.memory_mb, COMPILE_MEMORY_MB)
    if max_memory_mb is not None:
        memory_mb = min(memory_mb, max(max_memory_mb, limits.memory_mb))
    return replace(
        limits,
        timeout_s=float(compile_timeout_s),
        memory_mb=memory_mb,
        scratch_mb=max(limits.scratch_mb, COMPILE_SCRATCH_MB),
        address_space_mb=2 * memory_mb,
    )


def run_limits(toolchain: Toolchain, limits: Limits) -> Limits:
    """``limits`` for a run of a build: the address space its runtime needs (``Toolchain.address_space_mb``)."""
    if toolchain.address_space_mb is None:
        return limits
    return replace(limits, address_space_mb=max(limits.address_space_mb or 0, toolchain.address_space_mb))


def build(
    sandbox: Sandbox,
    toolchain: Toolchain,
    code: str,
    limits: Limits,
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
    *,
    max_memory_mb: int | None = None,
) -> Build:
    """``code`` compiled by ``toolchain`` in ``sandbox`` (once per answer: later calls get the kept
    build; concurrent ones wait for the first); ``max_memory_mb`` caps the compile's memory
    (``compile_limits``).

    Raises:
        SandboxUnavailable: the toolchain is not on this machine or in the sandbox.
    """
    source = code.encode("utf-8", "surrogatepass")
    if toolchain.compile is None:
        return Build(toolchain, code, ok=True, files={toolchain.source_for(code): source})
    box_limits = compile_limits(limits, compile_timeout_s, max_memory_mb)
    digest = hashlib.sha256(source).hexdigest()
    key = (sandbox.name, str(id(sandbox)), toolchain.name, repr(box_limits), digest)
    with _LOCK:
        kept = _BUILDS.get(key)
        if kept is not None:
            _BUILDS.move_to_end(key)
            return kept
        lock = _BUILDING.setdefault(key, threading.Lock())
    with lock:
        with _LOCK:
            kept = _BUILDS.get(key)
        if kept is not None:
            return kept
        made: Build | None = None
        try:
            made = _compile(sandbox, toolchain, code, source, box_limits)
        finally:
            with _LOCK:
                if made is not None and _settled(made):
                    _keep(key, made)
                _BUILDING.pop(key, None)
    return made


def _settled(made: Build) -> bool:
    """Whether a build says something about the answer alone: it compiled, or its compiler rejected it.
    A compile cut by a limit (time, memory, a sandbox's trouble) may go otherwise on a quieter machine: it
    is not kept, so a load spike does not fail the answer for good."""
    return made.ok or (made.result is not None and made.result.status == "ok" and made.result.return_code != 0)


def _keep(key: tuple[str, ...], made: Build) -> None:
    """Keep ``made``; drop the least recently used builds past ``BUILDS_KEPT`` or ``BUILD_BYTES_KEPT``."""
    _BUILDS[key] = made
    total = sum(_size(b) for b in _BUILDS.values())
    while len(_BUILDS) > 1 and (len(_BUILDS) > BUILDS_KEPT or total > BUILD_BYTES_KEPT):
        _, dropped = _BUILDS.popitem(last=False)
        total -= _size(dropped)


def _size(made: Build) -> int:
    return sum(len(data) for data in made.files.values())


def _compile(sandbox: Sandbox, toolchain: Toolchain, code: str, source: bytes, limits: Limits) -> Build:
    assert toolchain.compile is not None
    name = toolchain.source_for(code)
    seen: CommandRun = run_command(
        sandbox,
        toolchain.argv(toolchain.compile, code),
        {name: source},
        limits,
        env=toolchain.env,
        collect=toolchain.artifacts,
        collect_limit=ARTIFACT_BYTES,
    )
    result = seen.result
    if result.return_code == 127 and result.stderr.startswith(CANNOT_RUN):
        _require(toolchain, [toolchain.compile[0]], result.stderr.splitlines()[0])
    ok = result.status == "ok" and result.return_code == 0
    if ok and seen.files_error is not None:
        ok = False
        result = replace(result, status="error", stderr=f"{result.stderr}{seen.files_error}\n")
    elif ok and toolchain.artifacts and not seen.files:
        ok = False
        result = replace(result, status="error", stderr=f"{result.stderr}the compile left nothing to run\n")
    files = dict(seen.files) if toolchain.artifacts else {}
    if not toolchain.artifacts:  # a check only (node --check): the runs run the source
        files[name] = source
    return Build(toolchain, code, ok, result, files, result.duration_ms or 0.0)


def _require(toolchain: Toolchain, missing: list[str], detail: str = "") -> None:
    if not missing:
        return
    packages = " ".join(toolchain.packages)
    why = f" ({detail})" if detail else ""
    raise SandboxUnavailable(
        f"{toolchain.label} answers need {', '.join(missing)}, which this sandbox does not have{why}: "
        f"install it (apt-get install {packages}; for the docker backend, rebuild its image with "
        "scripts/docker_image.sh)"
    )


def run_built(
    sandbox: Sandbox,
    built: Build,
    limits: Limits,
    *,
    stdin: str | None = None,
    cpu_s: float | None = None,
) -> CommandRun:
    """One run of a successful build on ``stdin`` under ``limits`` and a CPU budget of ``cpu_s`` (plus
    the toolchain's start-up allowance)."""
    toolchain = built.toolchain
    budget = None if cpu_s is None else cpu_s + toolchain.startup_cpu_s
    return run_command(
        sandbox,
        toolchain.argv(toolchain.run, built.code, limits.memory_mb),
        built.files,
        run_limits(toolchain, limits),
        stdin=stdin,
        cpu_s=budget,
        env=toolchain.env,
        executables=tuple(n for n in toolchain.executables if n in built.files),
    )
