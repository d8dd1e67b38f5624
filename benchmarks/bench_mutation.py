"""What the mutation part of ``weak_tests`` costs and finds, on tasks from the fake model's bank.

Validates the same tasks (classic variants and composed exercises, at difficulties 0.2 to 0.9)
twice in one process on one sandbox, side by side: with mutants off (``min_kill_rate: 0``, the
stand-in check only) and on (the default). Prints a table and writes JSON: seconds per task each
way and their ratio, mutants per task, killed / equivalent / surviving per task, the gate's own
seconds per task (median and max), and how many tasks each way rejects.

    python benchmarks/bench_mutation.py [--tasks 60] [--sandbox auto] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.config import SandboxConfig  # noqa: E402
from spade_llm.fake import bank  # noqa: E402
from spade_llm.sandbox.registry import get_sandbox  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402
from spade_llm.validation import ValidationReport, Validator  # noqa: E402


def bank_tasks(n: int, seed: int) -> list[Task]:
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        target = rng.uniform(0.2, 0.9)
        variant = bank.random_pipeline(rng, target, None) if i % 2 else rng.choice(bank.VARIANTS)
        data = bank.build_task(variant, random.Random(i), target).to_json()
        tasks.append(
            Task(
                task_id=f"bank-{i}",
                description=data["description"],
                entry_point=data["entry_point"],
                reference_code=data["reference_code"],
                tests=[TestCase(**t) for t in data["tests"]],
            )
        )
    return tasks


def measure(validator: Validator, tasks: list[Task]) -> tuple[float, list[ValidationReport]]:
    started = time.perf_counter()
    reports = [validator.validate(t) for t in tasks]
    return time.perf_counter() - started, reports


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--json", default=str(ROOT / "runs" / "bench_mutation.json"))
    args = ap.parse_args()

    tasks = bank_tasks(args.tasks, args.seed)
    config = SandboxConfig()
    sandbox = get_sandbox(args.sandbox)
    try:
        off = Validator(sandbox, config.limits(), config.test_timeout_s, min_kill_rate=0)
        on = Validator(sandbox, config.limits(), config.test_timeout_s)
        measure(off, tasks[:3])  # warm the sandbox (a fork server's first start) before timing
        off_s, off_reports = measure(off, tasks)
        on_s, on_reports = measure(on, tasks)
    finally:
        sandbox.close()

    gates = [r.mutation for r in on_reports if r.mutation is not None]
    n = len(tasks)
    result: dict[str, Any] = {
        "backend": type(sandbox).__name__,
        "tasks": n,
        "seconds_per_task_without_mutants": round(off_s / n, 4),
        "seconds_per_task_with_mutants": round(on_s / n, 4),
        "ratio": round(on_s / off_s, 2) if off_s else None,
        "tasks_mutated": len(gates),
        "mutants_per_task": round(statistics.fmean(g.total for g in gates), 2) if gates else 0,
        "killed_per_task": round(statistics.fmean(g.killed for g in gates), 2) if gates else 0,
        "equivalent_per_task": round(statistics.fmean(g.equivalent for g in gates), 2) if gates else 0,
        "surviving_per_task": round(statistics.fmean(g.survived for g in gates), 2) if gates else 0,
        "gate_s_median": round(statistics.median(g.seconds for g in gates), 4) if gates else 0,
        "gate_s_max": round(max(g.seconds for g in gates), 4) if gates else 0,
        "rejected_without_mutants": sum(not r.valid for r in off_reports),
        "rejected_with_mutants": sum(not r.valid for r in on_reports),
    }
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
