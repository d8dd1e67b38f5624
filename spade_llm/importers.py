"""Turn public benchmarks into tasks (``spade import``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from .errors import UserError
from .types import Task

HUMANEVAL_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


def _open_text(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        return path.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def import_humaneval(file: str | Path) -> list[Task]:
    """HumanEval-format problems as tasks.

    Each keeps its source ``task_id``; the benchmark's ``test`` (a ``check(candidate)`` assert
    script) becomes ``check_code``; the prompt is kept in ``meta.prompt`` so a sample's
    ``completion`` can be appended to it, as HumanEval does. ``reference_code`` is the prompt
    plus the canonical solution.
    """
    path = Path(file)
    if not path.is_file():
        raise UserError(f"file not found: {path}")
    tasks = []
    for n, line in enumerate(_open_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: not JSON: {e.msg}") from None
        missing = [k for k in HUMANEVAL_FIELDS if not isinstance(row.get(k), str)]
        if missing:
            raise UserError(f"{path}:{n}: not a HumanEval problem, missing {', '.join(missing)}")
        tasks.append(
            Task(
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
        )
    if not tasks:
        raise UserError(f"{path}: no problems found")
    return tasks
