"""Sandbox backends by name, imported lazily.

``BACKENDS`` maps a name to ``"module:Class"``; adding a backend is adding an entry (and its
module). A backend's constructor probes the machine and raises ``SandboxUnavailable`` when it
cannot run programs here, which is how ``auto`` picks: the first of ``AUTO_ORDER`` that
constructs, else ``subprocess`` with a warning that it is not a security boundary.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from ..errors import SandboxUnavailable, UserError
from .base import Sandbox

logger = logging.getLogger("spade_llm.sandbox")

BACKENDS: dict[str, str] = {
    "subprocess": "spade_llm.sandbox.subprocess:SubprocessSandbox",
    "bwrap": "spade_llm.sandbox.bwrap:BwrapSandbox",
    "docker": "spade_llm.sandbox.docker:DockerSandbox",
}
AUTO_ORDER: tuple[str, ...] = ("bwrap",)
"""Isolating backends ``auto`` tries, in order (docker only when asked for: it is slow to start)."""


def _load(name: str) -> type[Sandbox]:
    try:
        target = BACKENDS[name]
    except KeyError:
        choices = ", ".join(["auto", *BACKENDS])
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


def get_sandbox(name: str, *, docker_image: str | None = None) -> Sandbox:
    """A ready sandbox backend by name: ``auto``, or a key of ``BACKENDS``.

    ``docker_image`` is the docker backend's image (config ``sandbox.docker_image``); None: its default.

    Raises:
        UserError: unknown name.
        SandboxUnavailable: the backend cannot run programs on this machine.
    """
    if name == "docker" and docker_image:
        cls: Any = _load(name)
        sandbox: Sandbox = cls(image=docker_image)
        return sandbox
    if name != "auto":
        return _load(name)()
    reasons = []
    for candidate in AUTO_ORDER:
        try:
            return _load(candidate)()
        except SandboxUnavailable as e:
            reasons.append(f"{candidate}: {e}")
    from .subprocess import SubprocessSandbox

    logger.warning(
        "sandbox auto: no isolating backend works here (%s); falling back to subprocess, which is NOT a "
        "security boundary (generated code runs as this user, with its network and files)",
        "; ".join(reasons),
    )
    return SubprocessSandbox(warn=False)


def backend_availability() -> dict[str, str | None]:
    """Each backend name with None when it works here, else why not (for tests and diagnostics)."""
    out: dict[str, str | None] = {}
    for name in BACKENDS:
        try:
            sandbox = _load(name)()
        except SandboxUnavailable as e:
            out[name] = str(e)
        else:
            sandbox.close()
            out[name] = None
    return out
