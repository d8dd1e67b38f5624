"""Task files and sample files: JSONL, one record a line, each line parsed on its own.

``spade solve``, ``evaluate`` and ``verify`` read their input here, and so can Python: ``read_tasks``
gives the tasks of a file (one clear ``UserError`` naming ``FILE:LINE`` for a malformed line, or the
line skipped with ``skip_invalid``), ``read_samples`` the (task, code, language) triples of a samples
file or of a run directory's episodes, ``scan_tasks`` every line with its task or why it is none (``verify``
reports each).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util.files import read_input
from ..errors import UserError
from ..kinds import get_kind
from ..kinds.base import fenced_answer
from ..types import Task

__all__ = ["TaskLine", "read_samples", "read_tasks", "run_samples", "scan_tasks"]


def decode(data: bytes) -> str:
    """UTF-8 text, or ValueError('not UTF-8 (byte 0xNN at column C)')."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 (byte 0x{data[e.start]:02x} at column {e.start + 1})") from None


def jsonl_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line; split on bytes so one bad line sinks no other."""
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, as some editors write
        data = data[3:]
    return [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]


@dataclass
class TaskLine:
    """One non-blank line of a tasks file: its task, or why it is not one (``detail``)."""

    line: int
    task: Any = None
    task_id: str | None = None
    detail: str = ""


def scan_tasks(path: str | Path) -> list[TaskLine]:
    """Every non-blank line of a tasks file, each parsed on its own (a bad line is kept, with why)."""
    from pydantic import ValidationError

    rows = []
    for n, raw in jsonl_lines(read_input(path, "tasks file")):
        try:
            text = decode(raw)
        except ValueError as e:
            rows.append(TaskLine(n, detail=str(e)))
            continue
        try:
            task = Task.model_validate_json(text)
        except ValidationError as e:
            cleaned = _task_with_surrogates(text)
            if cleaned is None:
                rows.append(TaskLine(n, task_id=_readable_task_id(text), detail=_not_a_task(e)))
                continue
            task = cleaned
        rows.append(TaskLine(n, task=task, task_id=task.task_id))
    return rows


def _task_with_surrogates(text: str) -> Any:
    """The task of a line pydantic's JSON parser refused for a ``"\\ud800"`` escape (another tool's
    text), its lone surrogates made U+FFFD as records get them (``text.json_loads``); None otherwise."""
    from pydantic import ValidationError

    from .._util.text import json_loads

    if "\\u" not in text:
        return None
    try:
        return Task.model_validate(json_loads(text))
    except (ValueError, RecursionError, ValidationError):
        return None


def _readable_task_id(text: str) -> str | None:
    """The ``task_id`` of a line that is not a valid task, when it can be read."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    task_id = value.get("task_id") if isinstance(value, dict) else None
    return task_id if isinstance(task_id, str) else None


def _not_a_task(error: Any) -> str:
    """Why a line is not a task, in one line, from pydantic's first error."""
    err = error.errors()[0]
    msg = " ".join(str(err["msg"]).split())
    if err["type"] == "json_invalid":
        return f"not JSON: {msg.removeprefix('Invalid JSON: ')}"
    where = ".".join(str(x) for x in err["loc"])
    return f"not a task record: {where}: {msg}" if where else f"not a task record: {msg}"


def skipped_note(command: str, path: str, bad: list[tuple[int, str]], what: str = "line") -> None:
    """Say on stderr, in one line, what ``skip_invalid`` skipped (a skipped line must not pass unseen)."""
    n, detail = bad[0]
    plural = "s" if len(bad) > 1 else ""
    who = f"spade {command}" if command else "spade"
    print(
        f"{who}: skipped {len(bad)} malformed {what}{plural} of {path} (first: line {n}: {detail})",
        file=sys.stderr,
        flush=True,
    )


def read_tasks(path: str | Path, *, skip_invalid: bool = False, command: str = "") -> list[Task]:
    """The tasks of a JSONL file, for ``evaluate`` and ``solve``.

    Raises:
        UserError: the file cannot be read; a line is malformed (not UTF-8, not JSON, not a task: named
            ``FILE:LINE``) and ``skip_invalid`` is off; a ``task_id`` repeats; or every line was skipped.
    """
    rows = scan_tasks(path)
    bad = [(r.line, r.detail) for r in rows if r.task is None]
    if bad and not skip_invalid:
        n, detail = bad[0]
        raise UserError(f"{path}:{n}: {detail} (--skip-invalid skips malformed lines)")
    tasks = [r.task for r in rows if r.task is not None]
    if bad and not tasks:
        raise UserError(
            f"{path}: no tasks in the file, nothing to do: all {len(bad)} lines are malformed "
            f"(line {bad[0][0]}: {bad[0][1]})"
        )
    counts = Counter(t.task_id for t in tasks)
    dupes = sorted(i for i, k in counts.items() if k > 1)
    if dupes:
        raise UserError(f"{path}: task_id repeated: {', '.join(dupes[:3])}")
    if bad:
        skipped_note(command, str(path), bad)
    return tasks


def read_samples(
    path: str | Path, tasks: Mapping[str, Task], *, skip_invalid: bool = False, command: str = "evaluate"
) -> list[tuple[Task, str, str]]:
    """(task, code, language) of each sample line: ``{"task_id", "code"}`` (or ``"solution"``, EvalPlus's name
    for it), or ``{"task_id", "completion"}``: for a whole-program task a model's reply, whose last block fenced
    for an answer language (``languages.TOOLCHAINS``' ``fence_tags``) is the code and tells its language; else
    (and for every other kind) appended to the task's ``meta.prompt`` (HumanEval's way). A line's ``language``
    (a name of ``TOOLCHAINS``) says which language the code is in (a completion's block is then the last one
    fenced for it); without one, Python or what the completion's fence tells. ``path`` a directory: a run's
    episodes (``run_samples``), each in its language.

    Raises:
        UserError: the file cannot be read, or a line is malformed (not UTF-8, not JSON, not an object, an
            unknown ``task_id``, neither ``code`` nor ``completion``, an unknown ``language`` or one the task's
            kind is not answered in), named ``FILE:LINE``, and ``skip_invalid`` is off.
    """
    if Path(path).is_dir():
        return run_samples(path, tasks, skip_invalid=skip_invalid, command=command)
    samples = []
    bad: list[tuple[int, str]] = []
    for n, raw in jsonl_lines(read_input(path, "samples file")):
        try:
            samples.append(_sample(decode(raw), tasks))
        except ValueError as e:
            if not skip_invalid:
                raise UserError(f"{path}:{n}: {e} (--skip-invalid skips malformed lines)") from None
            bad.append((n, str(e)))
    if bad and not samples:
        raise UserError(
            f"{path}: no samples in the file, nothing to judge: all {len(bad)} lines are malformed "
            f"(line {bad[0][0]}: {bad[0][1]})"
        )
    if bad:
        skipped_note(command, str(path), bad, "sample line")
    return samples


def run_samples(
    path: str | Path, tasks: Mapping[str, Task], *, skip_invalid: bool = False, command: str = "evaluate"
) -> list[tuple[Task, str, str]]:
    """(task, answer, language) of each episode a run directory (``spade solve --samples-per-task N``, or ``spade
    run``) recorded, in file order: its last attempt's answer (``""`` for an episode that ended without
    one: it fails), so judging them gives pass@k over the run's N episodes per task. Episodes a
    ``serve-env`` client abandoned measure nothing and are left out, as the run's own pass rate does.

    Raises:
        UserError: ``path`` is not a run directory or a record is malformed (``read_run``); an episode's
            task is not in ``tasks`` and ``skip_invalid`` is off (with it, its episodes are skipped and
            counted on stderr).
    """
    from ..evaluator import measured
    from ..store import read_run

    episodes = measured(read_run(path).trajectories)
    unknown = [t for t in episodes if t.task_id not in tasks]
    if unknown and not skip_invalid:
        raise UserError(
            f"{path}: {len(unknown)} episodes are of tasks not in the tasks file (first: {unknown[0].task_id}); "
            f"give {Path(path) / 'tasks.jsonl'} as the tasks, or --skip-invalid to leave them out"
        )
    if unknown:
        print(
            f"spade {command}: skipped {len(unknown)} episodes of {path} whose task is not in the tasks file "
            f"(first: {unknown[0].task_id})",
            file=sys.stderr,
            flush=True,
        )
    return [
        (tasks[t.task_id], t.attempts[-1].code if t.attempts else "", t.language)
        for t in episodes
        if t.task_id in tasks
    ]


def _sample(text: str, tasks: Mapping[str, Task]) -> tuple[Task, str, str]:
    """One sample line as (task, code, language); ValueError says why it is not one."""
    try:
        row = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None
    if not isinstance(row, dict):
        raise ValueError(f'not a sample: expected a JSON object with "task_id", got {type(row).__name__}')
    task_id = row.get("task_id")
    readable = isinstance(task_id, (str, int)) and not isinstance(task_id, bool)
    task = tasks.get(str(task_id)) if readable else None
    if task is None:
        shown = repr(row.get("task_id"))
        raise ValueError(f"unknown task_id {shown[:80]}" if "task_id" in row else 'not a sample: no "task_id"')
    given = row.get("language")
    if given is not None and not isinstance(given, str):
        raise ValueError(f'"language" must be a language\'s name, got {type(given).__name__}')
    try:
        code, language = _code(row, task, given)
        return task, code, get_kind(task.kind).answer_language(language)
    except UserError as e:
        raise ValueError(str(e)) from None


def _code(row: dict[str, Any], task: Task, language: str | None) -> tuple[str, str | None]:
    """A sample line's code and its language (None: the default), as ``read_samples`` reads them."""
    if isinstance(row.get("code"), str):
        return row["code"], language
    if isinstance(row.get("solution"), str):  # EvalPlus's samples: the whole code, as "code"
        return row["solution"], language
    if isinstance(row.get("completion"), str):
        # a whole-program kind's reply: its fenced block is the answer, its tag the language; other kinds'
        # completions are read as they always were (an illustration in another fence changes nothing)
        polyglot = get_kind(task.kind).answer_languages
        fenced = fenced_answer(row["completion"], language) if polyglot else None
        if fenced is not None:
            return fenced
        return str(task.meta.get("prompt", "")) + row["completion"], language
    raise ValueError('not a sample: it needs "completion" or "code" (a string)')
