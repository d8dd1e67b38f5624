"""Code a user plugs into the loop: ``hooks.on_epoch_end: ["module:function", ...]``.

Each function is called with one ``EpochEnd`` after the epoch's metrics row is on disk; exports,
reports and a trainer step hang here. Hooks are resolved before the run directory exists, so a
typo fails at once; a hook that raises stops the run with its message (the records stay).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UserError

if TYPE_CHECKING:
    from .config import RunConfig
    from .types import EpochMetrics


@dataclass(frozen=True)
class EpochEnd:
    """What an ``on_epoch_end`` hook is given."""

    run_dir: Path
    epoch: int
    metrics: EpochMetrics
    config: RunConfig


EpochHook = Callable[[EpochEnd], object]


class HookError(UserError):
    """A user's hook raised: the run stops, its records so far are kept (``--resume`` goes on)."""


def load_hook(entry: str) -> EpochHook:
    """The function named by ``module:function`` (``package.module:function`` too)."""
    module_name, sep, attr = entry.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"hook {entry!r}: write it as module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UserError(f"hook {entry!r}: cannot import {module_name}: {e}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UserError(f"hook {entry!r}: {module_name} has no function {attr}")
    hook: EpochHook = fn  # a user's function: its signature is the user's promise, not checked here
    return hook


def load_hooks(entries: list[str]) -> list[tuple[str, EpochHook]]:
    return [(entry, load_hook(entry)) for entry in entries]


def call_epoch_hooks(hooks: list[tuple[str, EpochHook]], event: EpochEnd) -> None:
    for entry, hook in hooks:
        try:
            hook(event)
        except Exception as e:  # a user's code: report it as theirs, in one line
            raise HookError(
                f"on_epoch_end hook {entry} failed after epoch {event.epoch}: {type(e).__name__}: {e}"
            ) from e
