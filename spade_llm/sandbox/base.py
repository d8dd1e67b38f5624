"""The Sandbox contract: run one Python program under limits, return what happened.

Backends implement ``run`` only. Test harnessing (calling the entry point on each input,
encoding outputs, judging them) is backend-independent and lives in ``harness.py`` and
``verdict.py``; it sends the harness program through ``run`` like any other program.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .result import ExecutionResult


class CancelHook(Protocol):
    """How a caller stops, from another thread, a run it started (``spade serve-sandbox`` when the
    client leaves: ``serve.sandbox.RunCancel``). A backend whose ``run`` takes ``cancel`` registers
    how to kill its run in progress; a cancelled run ends ``killed``, or does not start."""

    cancelled: bool

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call ``hook`` when the run is cancelled (at once if it already was); returns its undo,
        after which no call of ``hook`` is still running."""
        ...


@dataclass(frozen=True)
class Limits:
    """Per-execution limits (the defaults: docs/sandbox.md).

    ``memory_mb`` is all the memory an execution may hold at once, on the isolating backends (bwrap
    with cgroups, docker): its processes and threads together, the files it writes into its scratch
    directory and ``/dev/shm`` (tmpfs), and spade's own processes in the sandbox (``pool.OWN_MEMORY_MB``,
    ~16 MiB), so a program holds about ``memory_mb - 16``. A limit too small for spade's own processes
    raises ``UserError`` (bwrap) or ``SandboxUnavailable`` saying so (docker). Without cgroups, and on
    the subprocess backend, rlimits bound each process's address space on its own instead.
    """

    timeout_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 64
    scratch_mb: int = 64
    output_limit_bytes: int = 1 << 20
    address_space_mb: int | None = None
    """Where no memory cgroup bounds an execution (the subprocess backend, bwrap without cgroups), the
    address space each of its processes may map (None: ``memory_mb``). Runtimes that reserve far more
    address space than they use (a JVM, Go's, V8) need more to start at all (``Toolchain.address_space_mb``);
    their memory is then bounded by this, and by their own heap flags, not by ``memory_mb``."""


@dataclass(frozen=True)
class Program:
    """A Python program to run: its source, what it reads on stdin, and extra files.

    ``files`` are written into the scratch directory (the working directory) before the run.
    """

    source: str
    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables (e.g. PYTHONHASHSEED); nothing of the caller's leaks in."""


class Sandbox(ABC):
    """Runs untrusted Python under limits.

    A program that fails, hangs, floods output or is killed is reported in the returned
    ``ExecutionResult``; ``SandboxUnavailable`` is raised only when the backend itself cannot
    run anything. ``run`` is blocking and thread-safe: callers run it in a worker thread.
    """

    name: str = "base"
    isolating: bool = False
    """True when the backend is a security boundary (namespaces/containers)."""
    pooled: bool = False
    """True when the backend keeps warm workers and its constructor takes ``prewarm`` (0: start only the one
    its probe needs) and ``one_run`` (the caller runs one program: start one worker, without the
    imports a worker makes once for the many executions it forks)."""

    @abstractmethod
    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        """Run ``program`` to completion or limit and report what happened.

        A backend may also take ``cancel: CancelHook | None = None`` (the built-in ones do): callers
        that can stop a run (serve-sandbox) look for that parameter and pass it.
        """

    def close(self) -> None:  # noqa: B027 (a hook with a do-nothing default, not abstract)
        """Release backend resources (worker pools, containers). Safe to call twice."""
