"""``spade import codecontests``: CodeContests (deepmind/code_contests) problems as ``program`` tasks, from
its own rows or from SandboxFusion's ``code_contests`` samples.

A CodeContests row (``contest_problem.proto``, as the Hugging Face files hold it): ``name``,
``description``, ``public_tests``, ``private_tests`` and ``generated_tests`` (each ``{"input": [...],
"output": [...]}``), ``solutions`` and ``incorrect_solutions`` (each ``{"language": [...], "solution":
[...]}``, language 1 Python 2, 2 C++, 3 Python 3, 4 Java), ``time_limit`` (``{"seconds", "nanos"}``),
``memory_limit_bytes``, ``source``, ``difficulty``, ``cf_*``, ``input_file`` and ``output_file``. The
repository's ``convert_riegeli_to_json.py`` writes the same problems as a JSON array with lists of
objects instead (``[{"input", "output"}]``, ``[{"language", "solution"}]``) and ``time_limit`` as text
(``"seconds: 2\n"``): both are read.

The tests are the public ones (shown: ``public_tests`` counts them), then the private and the generated
ones (hidden), each (input, output) pair once. The reference is the first Python 3 solution that
compiles; a problem with none is judge-only. The first ``KEPT_WRONG`` Python 3 incorrect solutions are
kept in ``meta.incorrect_solutions``: answers known wrong, to see whether the tests catch them. A
problem that reads or writes named files (``input_file``/``output_file``) is left out.

SandboxFusion's sample (its CommonOJ shape): ``id``, ``content`` (the statement), ``labels`` (JSON text:
``name``, ``source``, ``difficulty``), ``test`` (JSON text: ``[{"input": {"stdin": ...}, "output":
{"stdout": ...}}]``, no split: every test hidden) and maybe ``canonical_solution`` (``{"python": [...]}``).
"""

from __future__ import annotations

import re
from typing import Any

from ..kinds.program import KIND as PROGRAM
from ..types import Task, TestCase
from .fields import (
    NO_TESTS,
    NOT_JUDGEABLE_FILES,
    LeftOut,
    bad,
    decoded,
    first_compiling,
    make_task,
    optional,
    required,
    stdio_test,
    stdio_tests,
    text,
    unique_tests,
)
from .rows import Row

__all__ = ["task_of"]

PYTHON3 = 3
"""``Solution.Language.PYTHON3`` (1 is Python 2, whose programs Python 3 does not run)."""
KEPT_WRONG = 5
"""Python 3 incorrect solutions kept per problem (a problem may have hundreds)."""
SOURCES = {0: "UNKNOWN_SOURCE", 1: "CODECHEF", 2: "CODEFORCES", 3: "HACKEREARTH", 4: "CODEJAM", 6: "ATCODER", 7: "AIZU"}
DIFFICULTIES = {0: "UNKNOWN_DIFFICULTY", 1: "EASY", 2: "MEDIUM", 3: "HARD", 4: "HARDER", 5: "HARDEST", 6: "EXTERNAL"}
LEVEL = {"EASY": 0.25, "MEDIUM": 0.5, "HARD": 0.75, "HARDER": 0.85, "HARDEST": 0.95}
"""A named difficulty as 0..1 when there is no Codeforces rating (the letters A..V some sources use
name a problem's place in its contest, and are 0.5 like any other)."""
CF_RATINGS = (800, 3500)
"""Codeforces' rating range, mapped onto 0..1 (a rating is the better measure where there is one)."""
TEST_SETS = ("public_tests", "private_tests", "generated_tests")
_DURATION_FIELD = re.compile(r"\b(seconds|nanos)\s*:\s*(\d+)")
META_AS_IS = ("cf_contest_id", "cf_index", "cf_points", "cf_rating", "cf_tags", "memory_limit_bytes")


def task_of(row: Row, source: str) -> Task | LeftOut:
    """The row (CodeContests' own, or SandboxFusion's sample) as a task, or why it is left out."""
    if "content" in row.data and "test" in row.data:
        return _sandbox_fusion_task(row, source)
    return _native_task(row, source)


def _native_task(row: Row, source: str) -> Task | LeftOut:
    name, description = text(row, "name"), text(row, "description")
    if text(row, "input_file", default="").strip() or text(row, "output_file", default="").strip():
        return LeftOut(NOT_JUDGEABLE_FILES)
    sets = {field: _tests(row, field) for field in TEST_SETS}
    tests, repeats = unique_tests([t for field in TEST_SETS for t in sets[field]])
    if not tests:
        return LeftOut(NO_TESTS)
    shown = len(unique_tests(sets["public_tests"])[0])  # the public tests come first: their copies stay
    right = _solutions(row, "solutions")
    python3 = [(i, code) for i, (language, code) in enumerate(right) if language == PYTHON3]
    chosen = first_compiling([code for _, code in python3])
    wrong = [code for language, code in _solutions(row, "incorrect_solutions") if language == PYTHON3]
    named = _named(row)
    meta: dict[str, Any] = {
        "name": name,
        "site": _site(optional(row, "source")),
        "difficulty": named,
        "tests": {**{field: len(sets[field]) for field in TEST_SETS}, "repeated_dropped": repeats},
        "python3_solutions": len(python3),
        "reference_solution": None if chosen is None else python3[chosen][0],
        "incorrect_solutions": wrong[:KEPT_WRONG],
        "incorrect_python3_solutions": len(wrong),
        **{k: row.data[k] for k in META_AS_IS if row.data.get(k) not in (None, "", [], 0)},
    }
    return make_task(
        row,
        task_id=f"{source}/{name}",
        kind=PROGRAM.name,
        description=description,
        entry_point="",
        reference_code="" if chosen is None else python3[chosen][1],
        tests=tests,
        public_tests=shown,
        time_limit_s=_time_limit(row),
        difficulty=_difficulty(optional(row, "cf_rating"), named),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _tests(row: Row, field: str) -> list[TestCase]:
    """One test set: ``{"input": [...], "output": [...]}`` (the Hugging Face files), or a list of
    ``{"input", "output"}`` (the repository's ``convert_riegeli_to_json.py``); absent or null: none."""
    value = optional(row, field)
    if value is None:
        return []
    if isinstance(value, list):
        items = [_item(row, f"{field}[{i}]", item, ("input", "output")) for i, item in enumerate(value)]
        return [stdio_test(row, where, given, wanted) for where, given, wanted in items]
    if not isinstance(value, dict):
        raise bad(row, field, f"a {type(value).__name__}, not an object with input and output lists")
    return stdio_tests(row, field, value.get("input", []), value.get("output", []))


def _solutions(row: Row, field: str) -> list[tuple[int, str]]:
    """(language, code) of a solution set: ``{"language": [...], "solution": [...]}``, or a list of
    ``{"language", "solution"}``; absent or null: none."""
    value = optional(row, field)
    if value is None:
        return []
    if isinstance(value, list):
        items = [_item(row, f"{field}[{i}]", item, ("language", "solution")) for i, item in enumerate(value)]
        return [_solution(row, f"{where}.language", f"{where}.solution", lang, code) for where, lang, code in items]
    if not isinstance(value, dict):
        raise bad(row, field, f"a {type(value).__name__}, not an object with language and solution lists")
    languages, codes = value.get("language", []), value.get("solution", [])
    for key, listed in (("language", languages), ("solution", codes)):
        if not isinstance(listed, list):
            raise bad(row, f"{field}.{key}", "not a list")
    if len(languages) != len(codes):
        raise bad(row, f"{field}.solution", f"{len(codes)} solutions for {len(languages)} languages")
    return [
        _solution(row, f"{field}.language[{i}]", f"{field}.solution[{i}]", language, code)
        for i, (language, code) in enumerate(zip(languages, codes, strict=True))
    ]


def _item(row: Row, where: str, item: Any, keys: tuple[str, str]) -> tuple[str, Any, Any]:
    """(where, first, second) of one ``{keys[0], keys[1]}`` object of a list."""
    if not isinstance(item, dict):
        raise bad(row, where, f"not an object with {keys[0]} and {keys[1]}")
    return where, item.get(keys[0]), item.get(keys[1])


def _solution(row: Row, language_field: str, code_field: str, language: Any, code: Any) -> tuple[int, str]:
    if not isinstance(language, int) or isinstance(language, bool):
        raise bad(row, language_field, "not a language code")
    if not isinstance(code, str):
        raise bad(row, code_field, "not a program")
    return language, code


def _site(value: Any) -> Any:
    """The source's name (``CODEFORCES``...) from its code; a name given as such is kept."""
    return SOURCES.get(value, value) if isinstance(value, int) and not isinstance(value, bool) else value


def _time_limit(row: Row) -> float | None:
    """``time_limit`` in seconds: ``{"seconds", "nanos"}`` (the Hugging Face files) or the text the
    repository's converter writes (``"seconds: 2\nnanos: 500000000\n"``); None when absent or zero."""
    value = optional(row, "time_limit")
    if isinstance(value, str):
        value = _duration_text(row, value)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad(row, "time_limit", "not an object with seconds and nanos")
    parts = []
    for key in ("seconds", "nanos"):
        part = value.get(key) or 0
        if not isinstance(part, int) or isinstance(part, bool) or part < 0:
            raise bad(row, f"time_limit.{key}", "not a whole number >= 0")
        parts.append(part)
    seconds = parts[0] + parts[1] / 1e9
    return seconds if seconds > 0 else None


def _duration_text(row: Row, value: str) -> dict[str, int] | None:
    """A protobuf ``Duration`` in text format (``seconds: 2`` and ``nanos: N`` lines; blank: none)."""
    if not value.strip():
        return None
    fields = dict(_DURATION_FIELD.findall(value))
    if not fields or _DURATION_FIELD.sub("", value).strip():
        raise bad(row, "time_limit", f"{value[:60]!r} is not a duration (seconds: N, nanos: N)")
    return {key: int(number) for key, number in fields.items()}


def _named(row: Row) -> str | None:
    """The difficulty's name (``EASY``, ``B``...), from its code; None when absent."""
    value = optional(row, "difficulty")
    if isinstance(value, int) and not isinstance(value, bool):
        letters = {7 + i: chr(ord("A") + i) for i in range(11)}  # A..K: 7..17
        letters |= {19 + i: chr(ord("L") + i) for i in range(11)}  # L..V: 19..29 (18 is reserved)
        return DIFFICULTIES.get(value) or letters.get(value) or str(value)
    return value if isinstance(value, str) else None


def _difficulty(rating: Any, named: str | None) -> float:
    if isinstance(rating, int) and not isinstance(rating, bool) and rating > 0:
        low, high = CF_RATINGS
        return min(1.0, max(0.0, (rating - low) / (high - low)))
    return LEVEL.get(named or "", 0.5)


# -- SandboxFusion's samples ----------------------------------------------------------------------------


def _sandbox_fusion_task(row: Row, source: str) -> Task | LeftOut:
    native_id = required(row, "id")
    if not isinstance(native_id, (int, str)) or isinstance(native_id, bool):
        raise bad(row, "id", "not a number or a string")
    labels = decoded(row, "labels", optional(row, "labels")) or {}
    if not isinstance(labels, dict):
        raise bad(row, "labels", "not an object")
    cases = decoded(row, "test", required(row, "test"))
    if not isinstance(cases, list):
        raise bad(row, "test", "not a list of tests")
    tests = []
    for i, case in enumerate(cases):
        given = case.get("input") if isinstance(case, dict) else None
        wanted = case.get("output") if isinstance(case, dict) else None
        if not isinstance(given, dict) or not isinstance(wanted, dict):
            raise bad(row, f"test[{i}]", 'not {"input": {...}, "output": {...}}')
        if set(given) != {"stdin"} or set(wanted) != {"stdout"}:
            return LeftOut(NOT_JUDGEABLE_FILES)
        tests.append(stdio_test(row, f"test[{i}]", given["stdin"], wanted["stdout"]))
    tests, repeats = unique_tests(tests)
    if not tests:
        return LeftOut(NO_TESTS)
    solutions = _canonical_python(row)
    chosen = first_compiling(solutions)
    named = labels.get("difficulty") if isinstance(labels.get("difficulty"), str) else None
    meta = {
        "sandbox_fusion_id": native_id,
        "name": labels.get("name"),
        "site": labels.get("source"),
        "difficulty": named,
        "tests": {"total": len(cases), "repeated_dropped": repeats},
        "reference_solution": chosen,
    }
    return make_task(
        row,
        task_id=f"{source}/{native_id}",
        kind=PROGRAM.name,
        description=text(row, "content"),
        entry_point="",
        reference_code="" if chosen is None else solutions[chosen],
        tests=tests,
        public_tests=0,
        difficulty=LEVEL.get(named or "", 0.5),
        tags=[source],
        source=source,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _canonical_python(row: Row) -> list[str]:
    """SandboxFusion's ``canonical_solution``'s Python programs (``{"python": [...]}``, or one program as
    a string), if any."""
    value = optional(row, "canonical_solution")
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return [value]
    value = decoded(row, "canonical_solution", value)
    if value is None:
        return []
    codes = value.get("python", []) if isinstance(value, dict) else None
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        raise bad(row, "canonical_solution", 'not {"python": [programs], ...}')
    return codes
