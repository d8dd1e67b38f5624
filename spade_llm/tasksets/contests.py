"""``spade import apps|taco|codecontests|lcb|cruxeval``: a published dataset file's rows as tasks, written
all or nothing.

Each format (``FORMATS``) is a module that turns one row into a task (or a few) or a ``LeftOut``:
``apps.py`` (APPS and TACO), ``codecontests.py``, ``livecodebench.py``, ``cruxeval.py`` (two tasks a row);
each also reads SandboxFusion's samples of its benchmark where there are some. The file is any of
``rows.SUFFIXES``. What each keeps and drops, and how its tasks are judged: docs/benchmarks.md.

All or nothing: the tasks go to a temporary file beside the output, renamed over it only once every row
has been read, so a malformed row (one ``UserError`` naming the row and the field) leaves no tasks file
and any earlier one as it was. Rows left out (a problem no kind judges faithfully, one without tests)
are counted by reason in the summary, never dropped unsaid. A task without a usable reference is
imported *judge-only* (``reference_code`` ``""``): ``spade solve`` and ``spade evaluate --samples`` judge
answers on its tests; ``spade verify`` says ``no_reference``, and ``spade evaluate`` without samples
leaves it out, saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..types import Task
from . import apps, codecontests, cruxeval, livecodebench
from .fields import LeftOut
from .rows import Row, read_rows

__all__ = ["FORMATS", "Imported", "import_file", "summary_line", "write_all_or_nothing", "write_file"]

Convert = Callable[[Row, str], "Task | list[Task] | LeftOut"]
"""A row -> its task (or tasks: a CRUXEval row is an output- and an input-prediction task), or why none."""


@dataclass(frozen=True)
class Format:
    """A dataset format: its row reader, and the dataset's name (each task's ``source`` and id prefix)."""

    convert: Convert
    source: str


FORMATS: dict[str, Format] = {
    "apps": Format(apps.task_of, "apps"),
    "taco": Format(apps.task_of, "taco"),
    "codecontests": Format(codecontests.task_of, "codecontests"),
    "lcb": Format(livecodebench.task_of, "livecodebench"),
    "cruxeval": Format(cruxeval.tasks_of, "cruxeval"),
}
"""Every contest format ``spade import`` takes, by the name typed."""


@dataclass
class Imported:
    """What an import made: tasks written, how many of them judge-only, rows left out by reason."""

    tasks: int = 0
    judge_only: int = 0
    left_out: Counter[str] = field(default_factory=Counter)


def tasks_of(fmt: str, file: str | Path, imported: Imported) -> Iterator[Task]:
    """The tasks of ``file`` in format ``fmt``, one per row that makes one, counted in ``imported``.

    Raises:
        UserError: an unknown format; the file cannot be read; a row is malformed or repeats a task id
            (named); or no row made a task.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    spec = FORMATS[fmt]
    seen: dict[str, str] = {}
    rows = 0
    for row in read_rows(file):
        rows += 1
        made = spec.convert(row, spec.source)
        if isinstance(made, LeftOut):
            imported.left_out[made.reason] += 1
            continue
        for task in made if isinstance(made, list) else [made]:
            if task.task_id in seen:
                raise UserError(f"{row.where}: task id {task.task_id!r} repeated (first at {seen[task.task_id]})")
            seen[task.task_id] = row.where
            imported.tasks += 1
            imported.judge_only += task.judge_only
            yield task
    if not imported.tasks:
        why = f": {_reasons(imported.left_out)}" if imported.left_out else ""
        raise UserError(f"{file}: no task made of its {rows} rows{why}")


def import_file(fmt: str, file: str | Path) -> tuple[list[Task], Imported]:
    """Every task of ``file`` in format ``fmt`` (in memory), and what the import made (``tasks_of``)."""
    imported = Imported()
    return list(tasks_of(fmt, file, imported)), imported


def write_file(fmt: str, file: str | Path, out: str | Path) -> Imported:
    """The tasks of ``file`` written to ``out`` as JSONL, all or nothing (the module docstring).

    Raises:
        UserError: as ``tasks_of``; ``out`` is a directory or cannot be written.
    """
    imported = Imported()
    write_all_or_nothing(Path(out), tasks_of(fmt, file, imported))
    return imported


def write_all_or_nothing(out: Path, tasks: Iterable[Task]) -> None:
    """``tasks`` written to ``out`` as JSONL through a temporary file beside it, renamed over it once the
    last is written: an error while they are made (a malformed row) leaves no file and any earlier one
    as it was (``spade import evalplus`` writes so too).

    Raises:
        UserError: ``out`` is a directory or cannot be written; what ``tasks`` raises, as it is.
    """
    if out.is_dir():
        raise UserError(f"{out} is a directory: name the tasks file to write")
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as f:
            for task in tasks:
                f.write(json.dumps(task.dump()) + "\n")
        os.replace(tmp, out)
    except OSError as e:
        raise UserError(f"cannot write {out}: {e.strerror or e}") from None
    finally:  # a row's error, an interrupt: the half-written file goes
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _reasons(left_out: Counter[str]) -> str:
    return "; ".join(f"{n} {reason}" for reason, n in left_out.most_common())


def summary_line(imported: Imported, out: str | Path) -> str:
    """What ``spade import`` says when done: tasks written, judge-only ones, rows left out and why."""
    line = f"imported {imported.tasks} tasks -> {out}"
    if imported.judge_only:
        line += (
            f" ({imported.judge_only} judge-only, without a usable reference: solve and evaluate --samples judge "
            "answers on their tests, verify says no_reference)"
        )
    if imported.left_out:
        n = sum(imported.left_out.values())
        line += f"; left out {n} row{'s' if n > 1 else ''}: {_reasons(imported.left_out)}"
    return line
