"""Turn public benchmarks into tasks (``spade import``)."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import UserError
from ..languages.python_asserts import AssertsError, asserts_as_check, docstring_examples, split_check
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


def _jsonl_objects(path: Path, data: bytes, problem: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line of a JSONL file with its number, a JSON object; a ``UserError`` naming
    ``FILE:LINE`` for a line that is not UTF-8, not JSON or not an object."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{path}:{n}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
        row = _json(line, f"{path}:{n}")
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: not {problem}: a JSON {type(row).__name__}, not an object")
        yield n, row


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        at = f"line {e.lineno}, column {e.colno}" if "\n" in text else f"column {e.colno}"
        raise UserError(f"{where}: not JSON: {e.msg} ({at})") from None
    except RecursionError:
        raise UserError(f"{where}: not JSON: nested too deeply") from None


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
    tasks = []
    seen: dict[str, int] = {}
    for n, row in _jsonl_objects(path, _read_bytes(path), "a HumanEval problem"):
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
            raise UserError(f"{path}:{n}: not a usable problem: {_first_error(e)}") from None
        tasks.append(publish_shown_tests(task))
    if not tasks:
        raise UserError(f"{path}: no problems found")
    return tasks


MBPP_STRING_FIELDS = ("text", "code", "test_setup_code")
MBPP_LIST_FIELDS = ("test_list", "challenge_test_list")
SANDBOX_FUSION_MBPP_FIELDS = ("id", "content", "canonical_solution", "test_list")
"""SandboxFusion's MBPP rows (its CommonOJ shape): MBPP's fields renamed, the rest under ``labels``."""


@dataclass(frozen=True)
class MbppImport:
    """An MBPP file's tasks, and the problems left out of them."""

    tasks: list[Task]
    left_out: dict[str, list[str]] = field(default_factory=dict)
    """Task id -> the names its asserts read that only the answer's own code would define (a class, a
    helper): MBPP's harness finds them in the answer's namespace, a check run apart cannot."""


def import_mbpp(file: str | Path) -> MbppImport:
    """MBPP problems (rows of ``task_id, text, code, test_list, test_setup_code, challenge_test_list``
    as Google published them, in ``.jsonl``, ``.jsonl.gz`` or a ``.json`` array) as tasks. A row in
    SandboxFusion's shape (``id, content, canonical_solution, test_list``, and ``labels``: an object,
    or its JSON text, holding ``test_setup_code`` and ``challenge_test_list``) is read as the same
    row (``_as_mbpp_row``) and judged the same way.

    Judged as MBPP's harness judges, which runs the row's ``test_setup_code`` and ``test_list``
    asserts against the answer: each assert of a known shape becomes a hidden test compared by
    Python's ``==`` (``python_asserts.split_check``), the rest a check script run apart
    (``check_code``). ``challenge_test_list`` does not decide, as in MBPP's own evaluation: it is kept
    in ``meta``. The statement is ``text`` with the first assert, which shows the function's name
    and how it is called (as bigcode's evaluation harness prompts); that assert is shown, so it is
    an example too (``publish_shown_tests``). Task ids are ``MBPP/<task_id>``.

    Raises:
        UserError: the file cannot be read, or a row is malformed (one error naming the row and the
            field: missing, mistyped, not Python, asserts calling no function of ``code``, a repeated
            ``task_id``), or it holds no problem. Nothing is returned then, so nothing is written.
    """
    path = Path(file)
    tasks: list[Task] = []
    left_out: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for where, published in _mbpp_rows(path):
        row = _as_mbpp_row(where, published)
        task_id = _checked_row_id(where, row)
        if task_id in seen:
            raise UserError(f"{where}: field task_id: {task_id!r} repeated (first at {seen[task_id]})")
        seen[task_id] = where
        task, answer_names = _mbpp_task(where, task_id, row)
        if answer_names:
            left_out[task_id] = answer_names
        else:
            tasks.append(publish_shown_tests(task))
    if not seen:
        raise UserError(f"{path}: no problems found")
    return MbppImport(tasks, left_out)


def _mbpp_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each row with where it is (``FILE:LINE``, or ``FILE: row N`` of a ``.json`` array)."""
    data = _read_bytes(path)
    if path.suffix != ".json":
        for n, row in _jsonl_objects(path, data, "an MBPP problem"):
            yield f"{path}:{n}", row
        return
    try:
        rows = _json(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"), str(path))
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    if not isinstance(rows, list):
        raise UserError(f"{path}: not an MBPP file: a JSON {type(rows).__name__}, not an array of problems")
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise UserError(f"{path}: row {n}: not an MBPP problem: a JSON {type(row).__name__}, not an object")
        yield f"{path}: row {n}", row


def _as_mbpp_row(where: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row in SandboxFusion's shape (one with ``content`` and no ``task_id``) as the row MBPP
    published (``id`` is ``task_id``, ``content`` ``text``, ``canonical_solution`` ``code``; ``labels``
    brings the setup and the challenge asserts, an absent one meaning none), its own fields' types
    checked under their own names; any other row as it is."""
    if "task_id" in row or "content" not in row:
        return row
    missing = [k for k in SANDBOX_FUSION_MBPP_FIELDS if k not in row]
    if missing:
        raise UserError(f"{where}: not an MBPP problem in SandboxFusion's shape, missing {', '.join(missing)}")
    raw = row["id"]
    if not ((type(raw) is int and raw >= 0) or (type(raw) is str and raw.strip())):
        raise UserError(f"{where}: field id: a number expected, got {json.dumps(raw)[:40]}")
    for name in ("content", "canonical_solution"):
        if type(row[name]) is not str:
            raise UserError(f"{where}: field {name}: a string expected, got {_json_type(row[name])}")
    labels = row.get("labels")
    if type(labels) is str:
        labels = _json(labels, f"{where}: field labels") if labels.strip() else None
    if labels is None:
        labels = {}
    if type(labels) is not dict:
        raise UserError(f"{where}: field labels: an object expected, got {_json_type(labels)}")
    setup, challenge = labels.get("test_setup_code", ""), labels.get("challenge_test_list", [])
    if type(setup) is not str:
        raise UserError(f"{where}: field labels.test_setup_code: a string expected, got {_json_type(setup)}")
    if type(challenge) is not list or not all(type(a) is str for a in challenge):
        raise UserError(f"{where}: field labels.challenge_test_list: a list of strings expected")
    return {
        "task_id": row["id"],
        "text": row["content"],
        "code": row["canonical_solution"],
        "test_list": row["test_list"],
        "test_setup_code": setup,
        "challenge_test_list": challenge,
    }


def _checked_row_id(where: str, row: dict[str, Any]) -> str:
    """The row's task id, ``MBPP/<task_id>``, once every field is checked for its published type."""
    missing = [k for k in ("task_id", *MBPP_STRING_FIELDS, *MBPP_LIST_FIELDS) if k not in row]
    if missing:
        raise UserError(f"{where}: not an MBPP problem, missing {', '.join(missing)}")
    raw = row["task_id"]
    if not ((type(raw) is int and raw >= 0) or (type(raw) is str and raw.strip())):
        raise UserError(f"{where}: field task_id: a number expected, got {json.dumps(raw)[:40]}")
    for name in MBPP_STRING_FIELDS:
        if type(row[name]) is not str:
            raise UserError(f"{where}: field {name}: a string expected, got {_json_type(row[name])}")
    for name in MBPP_LIST_FIELDS:
        items = row[name]
        if type(items) is not list:
            raise UserError(f"{where}: field {name}: a list of strings expected, got {_json_type(items)}")
        odd = next((i for i, item in enumerate(items) if type(item) is not str), None)
        if odd is not None:
            raise UserError(f"{where}: field {name}[{odd}]: a string expected, got {_json_type(items[odd])}")
    if not row["test_list"]:
        raise UserError(f"{where}: field test_list: empty, so nothing would judge an answer")
    return f"MBPP/{raw}"


def _json_type(value: Any) -> str:
    """What a JSON value is, as an error says it."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _mbpp_task(where: str, task_id: str, row: dict[str, Any]) -> tuple[Task, list[str]]:
    """The row's task, and the names its asserts read that only the answer would define."""
    try:
        script = asserts_as_check(row["test_list"], row["code"], row["test_setup_code"])
    except AssertsError as e:
        raise UserError(f"{where}: field {e}") from None
    split = split_check(script.check_source, script.entry_point)
    if not split.tests and split.residue is None:
        raise UserError(f"{where}: field test_list: its asserts check nothing")
    shown = row["test_list"][0].strip()
    try:
        task = Task(
            task_id=task_id,
            description=f"{row['text'].strip()}\n\nYour code should pass this test:\n\n{shown}\n",
            entry_point=script.entry_point,
            reference_code=row["code"],
            tests=split.tests,
            check_code=split.residue,
            public_tests=0,
            tags=["mbpp"],
            source="mbpp",
            meta={"challenge_test_list": row["challenge_test_list"]} if row["challenge_test_list"] else {},
        )
    except ValidationError as e:
        raise UserError(f"{where}: not a usable problem: {_first_error(e)}") from None
    return task, script.answer_names


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"])
    return f"{where}: {' '.join(str(err['msg']).split())}"
