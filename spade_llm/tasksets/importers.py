"""Turn public benchmarks into tasks (``spade import``)."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import UserError
from ..languages.python_asserts import docstring_examples, split_check
from ..types import Task

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


def publish_shown_tests(task: Task) -> Task:
    """``task`` with every hidden assert its prompt shows, input with answer, among its ``examples``.

    A docstring carries tests in many forms (``>>> f(3)`` then ``9``, ``f(3) == 9``, ``f(3) ➞ 9``,
    ``Input: x = 3 Output: 9``: ``leaks.find_leaks`` reads them all); an assert shown so is public,
    whatever the split says, so it joins the examples (shown and fed back like the docstring's own)
    and ``meta["docstring_tests"]`` lists the asserts shown. Verdicts do not change: the asserts,
    all of them, still decide, and examples never do.
    """
    from ..kinds.base import same_case
    from ..leaks import Secret, find_leaks
    from ..sandbox.runner import parse_input

    secrets = []
    for i, test in enumerate(task.tests):
        args = parse_input(test.input)
        if test.has_expected and not isinstance(args, str):
            secrets.append(Secret(i, args, test.expected))
    shown = sorted(leak.test for leak in find_leaks({"docstring": task.description}, secrets))
    if not shown:
        return task
    examples = list(task.examples)
    for i in shown:
        if not any(same_case(task.tests[i], e) for e in examples):
            examples.append(task.tests[i])
    return task.model_copy(update={"examples": examples, "meta": {**task.meta, "docstring_tests": shown}})


def import_humaneval(file: str | Path) -> list[Task]:
    """HumanEval-format problems as tasks.

    Each keeps its source ``task_id``; the benchmark's ``test`` (a ``check(candidate)`` assert
    script) becomes hidden ``tests``, one per assert of a known shape, judged outside the sandbox,
    and ``check_code``, the asserts that cannot be (``languages.python_asserts.split_check``); the prompt is kept in
    ``meta.prompt`` so a sample's ``completion`` can be appended to it, as HumanEval does.
    ``reference_code`` is the prompt plus the canonical solution. The prompt's doctest examples
    become ``examples``: shown to a solver and fed back on every turn, they never decide a verdict
    (the hidden asserts do; ``public_tests`` is 0). An assert the prompt shows in any other form
    joins them (``publish_shown_tests``): nothing the prompt shows is counted hidden.

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
        split = split_check(row["test"], row["entry_point"], row["prompt"])
        try:
            task = Task(
                task_id=row["task_id"],
                description=row["prompt"],
                entry_point=row["entry_point"],
                reference_code=row["prompt"] + row["canonical_solution"],
                tests=split.tests,
                examples=docstring_examples(row["prompt"], row["entry_point"]),
                check_code=split.residue,
                public_tests=0,
                difficulty=0.5,
                tags=["humaneval"],
                source="humaneval",
                meta={"prompt": row["prompt"]},
            )
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise UserError(f"{path}:{n}: not a usable problem: {where}: {' '.join(str(err['msg']).split())}") from None
        tasks.append(publish_shown_tests(task))
    if not tasks:
        raise UserError(f"{path}: no problems found")
    return tasks
