"""Which command wrote a run directory: ``run``, ``solve`` or ``serve-env``.

Each writes the same journals, so a directory does not say by its files alone whose it is, and each
means something else: a ``solve`` directory holds tasks the user gave (a benchmark, often), judged
but never proposed; a ``serve-env`` one was solved by clients. ``manifest.json`` records the
command (``command``); a directory written before it did is recognised from what it holds. Resume
(``check_written_by``) and the exports (``RunRecords.command``) ask here, so ``spade run --resume``
never plays self-play into a benchmark's directory, and a benchmark never becomes training rows.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ..errors import UserError
from .rundir import METRICS, PLANS, PROPOSALS, TASKS, RunDir

__all__ = ["COMMANDS", "SERVE_ENV_SOLVER", "check_written_by", "command_of", "run_command", "written_by"]

COMMANDS = ("run", "solve", "serve-env")
"""The commands that write a run directory."""
SERVE_ENV_SOLVER = "env"
"""The solver model of a ``serve-env`` run (``env.broker.ENV_MODEL``): its clients solve."""


def run_command(solver_model: str) -> str:
    """The command a self-play run with this solver model is: ``serve-env`` when the clients solve."""
    return "serve-env" if solver_model == SERVE_ENV_SOLVER else "run"


def command_of(config: dict[str, Any], manifest: dict[str, Any], *, played: bool, has_tasks: bool) -> str | None:
    """The command that wrote a run directory, from its config, its manifest, and whether it holds a
    plan, proposal or epoch (``played``) or tasks; None when nothing tells (a directory with no record).

    ``manifest.json``'s ``command`` says it; before that was recorded: a solver that is the clients
    (``serve-env``), else the command word of the manifest's ``argv`` (the CLI's), else the records:
    self-play leaves plans, a solve only tasks. Without a manifest (every command writes one first:
    the directory was made by hand or by another tool) only the first two tell.
    """
    command = manifest.get("command")
    if command in COMMANDS:
        return str(command)
    solver = config.get("solver")
    if isinstance(solver, dict) and solver.get("model") == SERVE_ENV_SOLVER:
        return "serve-env"
    if not manifest:
        return None
    argv = manifest.get("argv")
    words = [a for a in argv if isinstance(a, str) and not a.startswith("-")] if isinstance(argv, list) else []
    if words and words[0] in COMMANDS:
        return words[0]
    if played:
        return "run"
    return "solve" if has_tasks else None


def written_by(path: str | Path) -> str | None:
    """The command that wrote the run directory at ``path`` (``command_of``), read cheaply: no journal
    is parsed.

    Raises:
        UserError: ``config.yaml`` cannot be read.
    """
    run = RunDir(Path(path))
    config = run.read_yaml("config.yaml") if (run.path / "config.yaml").is_file() else None
    manifest = run.read_json("manifest.json")
    return command_of(
        config if isinstance(config, dict) else {},
        manifest if isinstance(manifest, dict) else {},
        played=any(_written(run.path / name) for name in (PLANS, PROPOSALS, METRICS)),
        has_tasks=_written(run.path / TASKS),
    )


def check_written_by(path: str | Path, command: str) -> None:
    """Refuse to go on with another command's run directory.

    Raises:
        UserError: one line naming the command that wrote ``path`` and how to continue it.
    """
    wrote = written_by(path)
    if wrote is not None and wrote != command:
        where = shlex.quote(str(path))
        raise UserError(
            f"{path} was written by spade {wrote}, not spade {command}: continue it with spade {wrote} --resume {where}"
        )


def _written(path: Path) -> bool:
    """Whether anything was written to a journal (a record, or part of one: either way it was begun)."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
