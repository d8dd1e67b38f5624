"""Sandbox backends by name, imported lazily.

``BACKENDS`` maps a name to ``"module:Class"``; adding a backend is adding an entry (and its
module). A backend's constructor probes the machine and raises ``SandboxUnavailable`` when it
cannot run programs here, which is how ``auto`` picks: the first of ``AUTO_ORDER`` that
constructs, else ``FALLBACK`` (``subprocess``) with a warning that it is not a security boundary.
``BACKEND_NAMES`` (``auto`` and every key of ``BACKENDS``) is the one list of names: the CLI's
``--sandbox`` choices and the config's ``sandbox.backend`` are built from it. This module is light
(no pydantic, no backend), so ``spade --help`` may import it.

``start_sandbox`` does ``get_sandbox``'s work in a background thread, for a caller with other work
meanwhile: a backend's start (the probe, its first workers) is mostly other processes starting,
which need not wait for the caller's own imports.
"""

from __future__ import annotations

import atexit
import importlib
import threading
from typing import Any, cast

from ..errors import SandboxUnavailable, UserError
from .base import Sandbox

BACKENDS: dict[str, str] = {
    "subprocess": "spade_llm.sandbox.subprocess:SubprocessSandbox",
    "bwrap": "spade_llm.sandbox.bwrap:BwrapSandbox",
    "docker": "spade_llm.sandbox.docker:DockerSandbox",
}
AUTO = "auto"
"""The name that picks a backend: the first of ``AUTO_ORDER`` that works here, else ``FALLBACK``."""
AUTO_ORDER: tuple[str, ...] = ("bwrap",)
"""Isolating backends ``auto`` tries, in order (docker only when asked for: it is slow to start)."""
FALLBACK = "subprocess"
"""The backend ``auto`` falls back to: always available, and no security boundary."""
DOCKER = "docker"
"""The backend that takes an image (``sandbox.docker_image``)."""
BACKEND_NAMES: tuple[str, ...] = (AUTO, *BACKENDS)
"""Every name ``get_sandbox`` accepts, in the order help texts and errors list them."""


def _load(name: str) -> type[Sandbox]:
    try:
        target = BACKENDS[name]
    except KeyError:
        choices = ", ".join([AUTO, *BACKENDS])
        raise UserError(f"unknown sandbox backend {name!r} (choose one of {choices})") from None
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise SandboxUnavailable(f"the {name} sandbox is not available yet") from None
    cls: type[Sandbox] = getattr(module, class_name)
    return cls


def is_isolating(name: str) -> bool:
    """Whether the backend called ``name`` is a security boundary, known before starting it."""
    return bool(_load(name).isolating)


def get_sandbox(name: str, *, docker_image: str | None = None, one_run: bool = False) -> Sandbox:
    """A ready sandbox backend by name: ``auto``, or a key of ``BACKENDS``.

    ``docker_image`` is the docker backend's image (config ``sandbox.docker_image``); None: its default.
    ``one_run``: the caller runs one program (``spade exec``): a pooled backend starts one worker, not
    one per core (which would only compete with the caller for the CPU), and without the modules its
    workers import for later executions (``Sandbox.pooled``).

    Raises:
        UserError: unknown name.
        SandboxUnavailable: the backend cannot run programs on this machine.
    """
    if name != AUTO:
        return _construct(_load(name), docker_image if name == DOCKER else None, one_run)
    reasons = []
    for candidate in AUTO_ORDER:
        try:
            return _construct(_load(candidate), None, one_run)
        except SandboxUnavailable as e:
            reasons.append(f"{candidate}: {e}")
    import logging  # here: the only use, and ``spade --help`` imports this module

    logging.getLogger("spade_llm.sandbox").warning(
        "sandbox auto: no isolating backend works here (%s); falling back to %s, which is NOT a "
        "security boundary (generated code runs as this user, with its network and files)",
        "; ".join(reasons),
        FALLBACK,
    )
    fallback: Any = _load(FALLBACK)  # its constructor takes ``warn`` (the warning is given above)
    chosen: Sandbox = fallback(warn=False)
    return chosen


def _construct(cls: type[Sandbox], docker_image: str | None, one_run: bool) -> Sandbox:
    kwargs: dict[str, Any] = {"image": docker_image} if docker_image else {}
    if one_run and cls.pooled:
        kwargs["one_run"] = True
    sandbox: Sandbox = cast(Any, cls)(**kwargs)  # a backend's own keywords: not Sandbox's
    return sandbox


def backend_availability(names: list[str] | None = None) -> dict[str, str | None]:
    """Each backend name (``names``, default all) with None when it works here, else why not (for tests
    and diagnostics). Each is started and closed: docker's containers take a fraction of a second."""
    out: dict[str, str | None] = {}
    for name in BACKENDS if names is None else names:
        try:
            sandbox = _load(name)()
        except SandboxUnavailable as e:
            out[name] = str(e)
        else:
            sandbox.close()
            out[name] = None
    return out


class SandboxStart:
    """``get_sandbox(name)`` under way in a background thread (see ``start_sandbox``).

    ``result()`` waits for it and hands the sandbox over (the caller closes it), or raises what
    ``get_sandbox`` raised. One never handed over is closed by ``close()``, which also runs at
    interpreter exit: the thread is not a daemon, so the start has finished by then, and nothing of
    the sandbox outlives the process.
    """

    def __init__(self, name: str, *, docker_image: str | None = None, one_run: bool = False) -> None:
        self._sandbox: Sandbox | None = None
        self._error: BaseException | None = None
        self._taken = False
        self._thread = threading.Thread(
            target=self._start, args=(name, docker_image, one_run), name=f"sandbox-start-{name}"
        )
        atexit.register(self.close)
        self._thread.start()

    def _start(self, name: str, docker_image: str | None, one_run: bool) -> None:
        try:
            self._sandbox = get_sandbox(name, docker_image=docker_image, one_run=one_run)
        except BaseException as e:  # handed to whoever asks for the result
            self._error = e

    def result(self) -> Sandbox:
        """The started sandbox, now the caller's to close.

        Raises:
            UserError: unknown name.
            SandboxUnavailable: the backend cannot run programs on this machine.
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._sandbox is not None and not self._taken, "result() hands the sandbox over once"
        self._taken = True
        atexit.unregister(self.close)
        return self._sandbox

    def close(self) -> None:
        """Wait for the start to finish and close the sandbox unless it was handed over. Safe to call twice."""
        self._thread.join()
        if not self._taken and self._sandbox is not None:
            sandbox, self._sandbox = self._sandbox, None
            sandbox.close()


def start_sandbox(name: str, *, docker_image: str | None = None, one_run: bool = False) -> SandboxStart:
    """Start ``get_sandbox(name, docker_image=..., one_run=...)`` in a background thread and return at once.

    Importing this module and a backend costs no ``pydantic`` and little else, so a command that
    calls this first gets its sandbox's workers started while it imports its own modules and reads
    its input (``spade evaluate`` hides most of the backend's start-up that way)."""
    return SandboxStart(name, docker_image=docker_image, one_run=one_run)
