"""Input files read with one clear error: what every command that takes a file says when it cannot."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError


def read_input(path: str | Path, what: str) -> bytes:
    """The bytes of an input file: one clear ``UserError`` line when it is missing, a folder or unreadable."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{what} {p} is a directory, not a file")
    if not p.exists():
        raise UserError(f"{what} not found: {p}")
    try:
        return p.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {what} {p}: {e.strerror or e}") from None
