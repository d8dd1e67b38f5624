"""Builders the tests share: a task, a small config, a fake run, and a run's records without their times.

Plain functions, importable from any test folder (``from builders import make_task``: the tests
folder is on ``sys.path`` through its ``conftest.py``); ``conftest.py`` also offers the first three
as fixtures of the same names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spade_llm.config import RunConfig, load_config
from spade_llm.types import Task, TestCase

ADD = "def add(a, b):\n    return a + b\n"

TIME_FIELD = re.compile(r"(time|wall|duration|elapsed|latency|second)|(_s|_ms|_at)$|^(started|finished|created)")
"""Record fields that hold a time: two runs of the same records differ there and nowhere else."""
COMPLETION_ORDER = ("trajectories.jsonl", "task_stats.jsonl")
"""Record files written in the order episodes end, which concurrency may change: compared sorted."""


def make_task(
    task_id: str = "add",
    code: str = ADD,
    cases: Iterable[tuple[Sequence[Any], Any]] = (((1, 2), 3), ((5, -3), 2), ((0, 0), 0), ((10, 20), 30), ((7, 8), 15)),
    *,
    entry_point: str = "add",
    **fields: Any,
) -> Task:
    """A valid task (by default ``add`` with five tests), or one changed by ``code``, ``cases``
    (arguments, expected value) and any other ``Task`` field."""
    tests = [TestCase(input=repr(tuple(args)), expected=expected) for args, expected in cases]
    base: dict[str, Any] = {"description": f"Return what {entry_point} computes.", "difficulty": 0.5}
    return Task(task_id=task_id, entry_point=entry_point, reference_code=code, tests=tests, **{**base, **fields})


ARGMAX = "n = int(input())\nxs = list(map(int, input().split()))[:n]\nprint(xs.index(max(xs)) + 1)\n"
"""A ``program`` task's reference where several outputs are right: the first position of a largest value."""
ARGMAX_LAST = "n = int(input())\nxs = list(map(int, input().split()))[:n]\nprint(n - xs[::-1].index(max(xs)))\n"
"""Another right answer: the last position of a largest value."""
ARGMIN = "n = int(input())\nxs = list(map(int, input().split()))[:n]\nprint(xs.index(min(xs)) + 1)\n"
"""A wrong answer: a smallest value's position (right only where every value is the same)."""
ARGMAX_CHECKER = (
    "import json, sys\n"
    "data = json.load(sys.stdin)\n"
    "lines = data['input'].split('\\n')\n"
    "n = int(lines[0])\n"
    "xs = list(map(int, lines[1].split()))[:n]\n"
    "tokens = data['actual'].split()\n"
    "assert len(tokens) == 1, 'print one position'\n"
    "i = int(tokens[0])\n"
    "assert 1 <= i <= n and xs[i - 1] == max(xs), f'position {i} does not hold a largest value'\n"
)
"""The argmax task's checker: one position, 1-based, that holds a largest value."""
ARGMAX_CASES = (("3\n1 3 3\n", "2\n"), ("1\n7\n", "1\n"), ("4\n5 5 5 5\n", "1\n"), ("5\n1 2 9 2 9\n", "3\n"),
                ("2\n-5 -1\n", "2\n"))  # fmt: skip
"""The argmax task's tests: each input with the reference's output (one right output of several)."""


def argmax_task(*, filled: bool = False, **fields: Any) -> Task:
    """A ``program`` task judged by a checker (``ARGMAX_CHECKER``): print the 1-based position of any
    largest of n integers. ``filled``: each test with the reference's output as its ``expected``."""
    tests = [TestCase(input=i, expected=o) if filled else TestCase(input=i) for i, o in ARGMAX_CASES]
    base: dict[str, Any] = {
        "task_id": "argmax",
        "kind": "program",
        "description": "Read n, then n integers on one line; print the position (1-based) of any largest one.",
        "entry_point": "",
        "reference_code": ARGMAX,
        "tests": tests,
        "checker": ARGMAX_CHECKER,
    }
    return Task.model_validate({**base, **fields})


TOTAL_UPTO = "def total_upto(n):\n    s = 0\n    for i in range(1, n + 1):\n        s += i\n    return s\n"
"""A ``bugfix`` task's reference: 1 + 2 + ... + n."""
TOTAL_UPTO_BUG = TOTAL_UPTO.replace("range(1, n + 1)", "range(1, n)")
"""Its off-by-one: the last term left out (wrong for every n >= 1, right for 0)."""


def bugfix_task(task_id: str = "total_upto", buggy_code: str = TOTAL_UPTO_BUG, **fields: Any) -> Task:
    """A valid ``bugfix`` task (``total_upto`` and its off-by-one, six tests, the first shown in the
    description's example), or one changed by ``buggy_code`` and any other ``Task`` field."""
    base: dict[str, Any] = {
        "task_id": task_id,
        "kind": "bugfix",
        "description": "Return 1 + 2 + ... + n for n >= 0. Example: total_upto(3) == 6.",
        "entry_point": "total_upto",
        "reference_code": TOTAL_UPTO,
        "tests": [TestCase(input=f"({n},)") for n in (3, 0, 1, 5, 10, 7)],
        "buggy_code": buggy_code,
    }
    return Task.model_validate({**base, **fields})


def small_config(seed: int = 0, backend: str | None = None, **sections: Any) -> RunConfig:
    """A run config on the fake model small enough for a test (one epoch of three tasks, one sample
    each; ``backend`` default: ``sandbox_backends.run_backend()``), with ``sections`` merged over it
    (``controller={"epochs": 2}``)."""
    from sandbox_backends import run_backend

    overrides: dict[str, Any] = {
        "seed": seed,
        "controller": {"epochs": 1, "tasks_per_epoch": 3, "concurrency": 4},
        "solver": {"samples_per_task": 1},
        "sandbox": {"backend": backend or run_backend()},
    }
    for name, value in sections.items():
        overrides[name] = {**overrides.get(name, {}), **value} if isinstance(value, dict) else value
    return load_config(None, overrides)


def run_fake(out: Path, config: RunConfig | None = None) -> Path:
    """A whole run of ``config`` (default ``small_config()``) on the fake model, in this process, into
    ``out`` (created); returns ``out``."""
    from spade_llm.session import start_run
    from spade_llm.store import RunDir

    start_run(config or small_config(), RunDir.create(out), log=lambda _line: None)
    return out


def strip_times(value: Any) -> Any:
    """``value`` (a record, decoded) without the fields ``TIME_FIELD`` names, at any depth."""
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if not TIME_FIELD.search(k)}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def run_records(path: Path, names: Iterable[str]) -> dict[str, list[Any]]:
    """The reproducible content of the record files ``names`` of a run: times dropped, the files
    written in completion order sorted; a file not there reads as no rows."""
    out: dict[str, list[Any]] = {}
    for name in names:
        file = path / name
        lines = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
        rows = [strip_times(json.loads(x)) for x in lines if x.strip()]
        if name in COMPLETION_ORDER:
            rows.sort(key=lambda r: (r["task_id"], r.get("sample_index", 0)))
        out[name] = rows
    return out


def grown_run(template: Path, out: Path, copies: int) -> Path:
    """``template`` (a finished run) copied ``copies`` times as later epochs into ``out``, by
    ``benchmarks/synthetic_run.py`` (resume's integrity checks pass; each copy's texts marked as its own)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "synthetic_run", Path(__file__).resolve().parents[1] / "benchmarks" / "synthetic_run.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    per_copy = len((template / "trajectories.jsonl").read_text().splitlines())
    module.grow(template, out, copies * per_copy)
    return out
