"""Judging throughput: completions per second for function tasks and for the same exercises as whole programs.

The fake bank's exercises (``--tasks``, default 40, drawn with a fixed seed) are judged twice:

* as ``induction`` tasks: the function called on each test's arguments, all tests in one sandbox
  execution, outputs compared outside (``Judge.__call__``);
* as ``program`` tasks (``fake/programs.py``: the arguments one JSON line each on stdin, the result
  printed as JSON): one sandbox run per test, stdout compared by the output rule (``Judge.stdio``).

Each task is judged on its reference (passes) and on one of the bank's mistakes (fails somewhere), so
half the completions pass. For each backend (``--sandbox``, default ``bwrap,subprocess`` where they
work) it reports completions/s and tests/s, one completion at a time and ``--workers`` at once (default:
the CPU count), and checks every verdict against what it should be.

Measured on the 2-core VM (2026-12-06, others' tests running beside it; 40 completions, 296 tests):
bwrap 261 / 345 completions/s as functions (1 / 2 workers), 18 / 26 as programs: a program pays one
sandbox run per test (~7 ms on bwrap) where a function's tests share one execution, ~13x; subprocess
41 / 66 against 4.7 / 8.8. Every verdict was right. A harness mode that forks one process per test
inside a single execution would close most of the gap (not built yet).

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_program_judging.json``).

    python benchmarks/bench_program_judging.py [--tasks 40] [--sandbox bwrap,subprocess] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.errors import SandboxUnavailable  # noqa: E402
from spade_llm.fake import bank  # noqa: E402
from spade_llm.fake.programs import as_program_task, wrap  # noqa: E402
from spade_llm.judge import Judge, final_status  # noqa: E402
from spade_llm.kinds import get_kind  # noqa: E402
from spade_llm.sandbox.base import Limits  # noqa: E402
from spade_llm.sandbox.registry import get_sandbox  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402

Case = tuple[Task, str, bool]
"""A task, a completion's code, and whether it should pass."""


def cases(n: int) -> tuple[list[Case], list[Case]]:
    """``n`` bank exercises as (function cases, program cases): each task's reference and one mistake."""
    rng = random.Random(0)
    functions: list[Case] = []
    programs: list[Case] = []
    while len(functions) < 2 * n:
        target = rng.uniform(0.1, 0.8)
        variant = bank.random_pipeline(rng, target, None) or rng.choice(bank.VARIANTS)
        built = bank.build_task(variant, random.Random(rng.random()), target)
        program = as_program_task(built)
        kinds = [k for k in bank.mistake_kinds(variant, built.params_index) if k not in ("syntax_error", "wrong_name")]
        if program is None or not kinds:
            continue
        mistake = bank.mistake_code(variant, built.params_index, built.entry_point, kinds[0], random.Random(1))
        if mistake is None:
            continue
        tid = f"t{len(functions) // 2}"
        fn_tests = [
            TestCase(input=t["input"], expected=out) for t, out in zip(built.tests(), built.outputs, strict=True)
        ]
        fn_task = Task(task_id=tid, description=built.description, entry_point=built.entry_point,
                       reference_code=built.reference_code, tests=fn_tests)  # fmt: skip
        pg_tests = [TestCase(input=t["input"], expected=json.dumps(out) + "\n")
                    for t, out in zip(program["tests"], built.outputs, strict=True)]  # fmt: skip
        pg_task = Task(task_id=tid, kind="program", description=program["description"], entry_point="",
                       reference_code=program["reference_code"], tests=pg_tests)  # fmt: skip
        functions += [(fn_task, built.reference_code, True), (fn_task, mistake, False)]
        programs += [(pg_task, pg_task.reference_code, True), (pg_task, wrap(mistake, built.entry_point), False)]
    return functions, programs


def judge_all(judge: Judge, batch: list[Case], workers: int) -> tuple[float, int, int]:
    """(seconds, tests judged, verdicts that differ from what they should be)."""

    def one(case: Case) -> tuple[int, bool]:
        task, code, should_pass = case
        result = get_kind(task.kind).check_answer(judge, task, code, None)
        return result.tests_total or 0, (final_status(result) == "passed") != should_pass

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(one, batch))
    return time.perf_counter() - started, sum(n for n, _ in done), sum(bad for _, bad in done)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--sandbox", default="bwrap,subprocess")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_program_judging.json")
    args = ap.parse_args()
    functions, programs = cases(args.tasks)
    rows: list[dict[str, Any]] = []
    for backend in args.sandbox.split(","):
        try:
            box = get_sandbox(backend)
        except SandboxUnavailable as e:
            print(f"{backend}: unavailable ({e})", file=sys.stderr)
            continue
        try:
            judge = Judge(box, Limits(timeout_s=10.0, memory_mb=512), test_timeout_s=2.0)
            judge_all(judge, functions[:4] + programs[:4], 1)  # warm the pool
            for label, batch in (("function", functions), ("program", programs)):
                for workers in (1, args.workers):
                    seconds, tests, wrong = judge_all(judge, batch, workers)
                    rows.append({
                        "sandbox": backend, "tasks": label, "workers": workers, "completions": len(batch),
                        "tests": tests, "seconds": round(seconds, 3),
                        "completions_per_s": round(len(batch) / seconds, 1), "tests_per_s": round(tests / seconds, 1),
                        "wrong_verdicts": wrong,
                    })  # fmt: skip
        finally:
            box.close()
    print(f"\njudging {len(functions)} completions of {args.tasks} bank exercises, as functions and as programs")
    print(f"{'sandbox':>10}{'tasks':>10}{'workers':>8}{'compl/s':>9}{'tests/s':>9}{'seconds':>9}{'wrong':>7}")
    for r in rows:
        print(
            f"{r['sandbox']:>10}{r['tasks']:>10}{r['workers']:>8}{r['completions_per_s']:>9.1f}"
            f"{r['tests_per_s']:>9.1f}{r['seconds']:>9.2f}{r['wrong_verdicts']:>7}"
        )
    report = {"bench": "program_judging", "cpus": os.cpu_count(), "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
