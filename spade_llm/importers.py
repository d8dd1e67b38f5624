"""Turn public benchmarks into tasks (``spade import``)."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import UserError
from .types import Task

HUMANEVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (a ``.gz`` decompressed); a one-line ``UserError`` when it cannot be read."""
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a file")
    if not path.exists():
        raise UserError(f"file not found: {path}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as e:  # unreadable, not gzip, truncated or corrupt gzip
        raise UserError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None


def import_humaneval(file: str | Path) -> list[Task]:
    """HumanEval-format problems as tasks.

    Each keeps its source ``task_id``; the benchmark's ``test`` (a ``check(candidate)`` assert
    script) becomes ``check_code``; the prompt is kept in ``meta.prompt`` so a sample's
    ``completion`` can be appended to it, as HumanEval does. ``reference_code`` is the prompt
    plus the canonical solution.

    Raises:
        UserError: the file cannot be read, or a line is not a HumanEval problem (named ``FILE:LINE``:
            not UTF-8, not JSON, a field missing, a repeated ``task_id``), or it holds no problem.
    """
    path = Path(file)
    data = _read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    tasks = []
    seen: dict[str, int] = {}
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{path}:{n}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
        try:
            row: Any = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: not JSON: {e.msg} (column {e.colno})") from None
        except RecursionError:
            raise UserError(f"{path}:{n}: not JSON: nested too deeply") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: not a HumanEval problem: a JSON {type(row).__name__}, not an object")
        missing = [k for k in HUMANEVAL_FIELDS if not isinstance(row.get(k), str)]
        if missing:
            raise UserError(f"{path}:{n}: not a HumanEval problem, missing {', '.join(missing)}")
        if row["task_id"] in seen:
            raise UserError(f"{path}:{n}: task_id {row['task_id']!r} repeated (first on line {seen[row['task_id']]})")
        seen[row["task_id"]] = n
        try:
            task = Task(
                task_id=row["task_id"],
                description=row["prompt"],
                entry_point=row["entry_point"],
                reference_code=row["prompt"] + row["canonical_solution"],
                tests=[],
                check_code=row["test"],
                difficulty=0.5,
                tags=["humaneval"],
                source="humaneval",
                meta={"prompt": row["prompt"]},
            )
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise UserError(f"{path}:{n}: not a usable problem: {where}: {' '.join(str(err['msg']).split())}") from None
        tasks.append(task)
    if not tasks:
        raise UserError(f"{path}: no problems found")
    return tasks
