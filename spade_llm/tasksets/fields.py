"""A published row's fields read strictly, and the pieces of a task every contest importer builds.

A field that is missing, of another type or unreadable stops the import with one ``UserError``:
``WHERE: FIELD: why`` (``rows.Row.where`` names the row, ``FIELD`` the path into it:
``private_tests.output``, ``input_output.inputs[3]``). A row the importer can read but not turn into a
task it can judge faithfully becomes a ``LeftOut`` with its reason, which the import's summary counts.

Nothing here runs code. A reference is chosen among a row's solutions by whether it compiles (the
language parses it), and proven later, by ``spade verify`` and ``spade evaluate``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import UserError
from ..languages import PYTHON
from ..types import Task, TestCase
from .rows import Row

__all__ = [
    "LeftOut",
    "bad",
    "decoded",
    "first_compiling",
    "make_task",
    "optional",
    "stdio_test",
    "stdio_tests",
    "text",
    "unique_tests",
]

NOT_JUDGEABLE_FILES = "reading or writing named files, not stdin and stdout"
"""Why a problem whose tests name files is left out: the ``program`` kind feeds stdin and reads stdout."""
CLASS_SOLUTION = "LeetCode-style (a method of class Solution, which APPS's harness calls its own way)"
"""Why an APPS or TACO function problem written as ``class Solution`` is left out (docs/benchmarks.md):
LiveCodeBench's are imported, judged as its harness judges them; APPS's harness is not followed yet."""
NO_TESTS = "without tests"
"""Why a problem without a single test is left out (there is nothing to judge an answer on)."""


@dataclass(frozen=True)
class LeftOut:
    """A row read but imported as no task, and why: a phrase the summary puts after a count ("2 without
    tests")."""

    reason: str


def bad(row: Row, field: str, why: str) -> UserError:
    """The error of a malformed row: where it is, which field, why; one line."""
    return UserError(f"{row.where}: {field}: {' '.join(why.split())}")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def text(row: Row, field: str, default: str | None = None) -> str:
    """A string field; absent or null gives ``default`` when there is one, else it is an error."""
    value = row.data.get(field)
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise bad(row, field, "missing" if field not in row.data else f"a {_type_name(value)}, not a string")
    return value


def required(row: Row, field: str) -> Any:
    """A field that must be present (its value may still be null or blank)."""
    if field not in row.data:
        raise bad(row, field, "missing")
    return row.data[field]


def optional(row: Row, field: str) -> Any:
    """A field that may be absent or null (None then), taken as it is (meta keeps it)."""
    return row.data.get(field)


def decoded(row: Row, field: str, value: Any) -> Any:
    """A field published as JSON text, parsed (a value a mirror already parsed is taken as it is; a blank
    text is None)."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise bad(row, field, f"not JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise bad(row, field, "not JSON: nested too deeply") from None


def string_list(row: Row, field: str, value: Any) -> list[str]:
    """A list of strings (each element checked, the first wrong one named)."""
    if not isinstance(value, list):
        raise bad(row, field, f"a {_type_name(value)}, not a list")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise bad(row, f"{field}[{i}]", f"a {_type_name(item)}, not a string")
    return value


def stdio_tests(
    row: Row, field: str, inputs: Any, outputs: Any, keys: tuple[str, str] = ("input", "output")
) -> list[TestCase]:
    """(stdin, expected stdout) tests from two parallel lists of strings, ``field.input`` and
    ``field.output`` (``keys``: their names)."""
    given = string_list(row, f"{field}.{keys[0]}", inputs)
    wanted = string_list(row, f"{field}.{keys[1]}", outputs)
    if len(given) != len(wanted):
        raise bad(row, f"{field}.{keys[1]}", f"{len(wanted)} outputs for {len(given)} inputs")
    return [TestCase(input=i, expected=o) for i, o in zip(given, wanted, strict=True)]


def stdio_test(row: Row, field: str, given: Any, wanted: Any) -> TestCase:
    """One (stdin, expected stdout) test: ``field.input`` and ``field.output``, both strings."""
    for key, value in (("input", given), ("output", wanted)):
        if not isinstance(value, str):
            raise bad(row, f"{field}.{key}", "missing" if value is None else f"a {_type_name(value)}, not a string")
    return TestCase(input=given, expected=wanted)


def unique_tests(tests: Sequence[TestCase]) -> tuple[list[TestCase], int]:
    """``tests`` with each (input, expected) pair kept once, at its first place, and how many repeats
    were dropped. A repeat changes no verdict (its first copy decides the same), and a hidden copy of
    a shown test would only read as a leak."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for test in tests:
        key = (test.input, json.dumps(test.expected, sort_keys=True))
        if key not in seen:
            seen.add(key)
            kept.append(test)
    return kept, len(tests) - len(kept)


def first_compiling(codes: Sequence[str], entry_point: str = "") -> int | None:
    """The index of the first of ``codes`` that compiles as Python 3 (and defines ``entry_point`` at
    top level, when given), or None. Parsed, never run."""
    for i, code in enumerate(codes):
        if not code.strip():
            continue
        try:
            found = PYTHON.static_error(code, entry_point, frozenset())
        except (RecursionError, MemoryError):  # nested beyond the parser: not a reference to trust
            continue
        if found is None:
            return i
    return None


def make_task(row: Row, **fields: Any) -> Task:
    """The task, or the error of the row it came from (naming the field pydantic refused)."""
    try:
        return Task(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise bad(row, where or "task", f"not a usable task: {err['msg']}") from None
