"""Rows in the published shapes of the contest benchmarks, for the import and judging tests: each
builder writes what the dataset's own files hold (its Hugging Face columns, JSON text where it
publishes JSON text, LiveCodeBench's private tests packed)."""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest

SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
SUM_IO = [("2\n1 2\n", "3\n"), ("3\n1 2 3\n", "6\n"), ("1\n5\n", "5\n"), ("2\n10 20\n", "30\n")]


def io_set(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    return {"input": [i for i, _ in pairs], "output": [o for _, o in pairs]}


def codecontests_row(name: str = "1_A. Sum", **over: Any) -> dict[str, Any]:
    """A row as deepmind/code_contests publishes it (its Hugging Face files' columns)."""
    row = {
        "name": name,
        "description": "Read n, then n integers; print their sum.",
        "public_tests": io_set(SUM_IO[:1]),
        "private_tests": io_set(SUM_IO[1:3]),
        "generated_tests": io_set([SUM_IO[3], SUM_IO[0]]),  # a generated copy of the public test
        "source": 2,
        "difficulty": 7,
        "solutions": {"language": [2, 1, 3, 3], "solution": ["int main() {}", "print 1", "print(int(\n", SUM]},
        "incorrect_solutions": {"language": [3, 2, 3], "solution": ["print(0)", "int main() {}", "print(input())"]},
        "cf_contest_id": 1,
        "cf_index": "A",
        "cf_points": 500.0,
        "cf_rating": 1100,
        "cf_tags": ["math"],
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": 2, "nanos": 500_000_000},
        "memory_limit_bytes": 256_000_000,
        "input_file": "",
        "output_file": "",
    }
    return {**row, **over}


def packed(value: Any) -> str:
    """``value`` as LiveCodeBench packs its private tests: base64 of zlib of a pickle."""
    return base64.b64encode(zlib.compress(pickle.dumps(value))).decode()


def lcb_cases(pairs: list[tuple[str, str]], kind: str = "stdin") -> list[dict[str, str]]:
    return [{"input": i, "output": o, "testtype": kind} for i, o in pairs]


def lcb_row(question_id: str = "abc300_a", private: Any = None, **over: Any) -> dict[str, Any]:
    """A row as livecodebench/code_generation_lite publishes it (private tests packed)."""
    row = {
        "question_title": "Sum",
        "question_content": "Read n, then n integers; print their sum.",
        "platform": "atcoder",
        "question_id": question_id,
        "contest_id": "abc300",
        "contest_date": "2023-04-29T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(lcb_cases(SUM_IO[:1])),
        "private_test_cases": packed(json.dumps(lcb_cases(SUM_IO[1:]))) if private is None else private,
        "metadata": "{}",
    }
    return {**row, **over}


def leetcode_row() -> dict[str, Any]:
    return lcb_row(
        "2727",
        platform="leetcode",
        starter_code="class Solution:\n    def isEmpty(self, xs: List[int]) -> bool:\n        ",
        public_test_cases=json.dumps(lcb_cases([("[]", "true")], "functional")),
        private=packed(json.dumps(lcb_cases([('[1, 2]\n"a\\n"', "[false, 2.5]")], "functional"))),
        metadata=json.dumps({"func_name": "isEmpty"}),
    )


def apps_row(problem_id: int, io: Any, solutions: Any, starter: str = "", **over: Any) -> dict[str, Any]:
    """A row as codeparrot/apps publishes it (``solutions`` and ``input_output`` as JSON text)."""
    row = {
        "problem_id": problem_id,
        "question": "Read n, then n integers; print their sum.",
        "solutions": json.dumps(solutions) if solutions is not None else "",
        "input_output": json.dumps(io) if io is not None else "",
        "difficulty": "interview",
        "url": f"https://codeforces.com/problemset/problem/{problem_id}/A",
        "starter_code": starter,
    }
    return {**row, **over}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
