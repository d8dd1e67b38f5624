"""What a bug-fix task's gates cost beside its function's own, on the fake model's exercises.

``--tasks`` exercises of the fake's bank (near difficulties spread over 0.2..0.8) are each validated as a
function task (``induction``'s gates: the reference's runs, determinism, the stand-ins and up to 40
mutants) and, interleaved so the machine's load falls on both alike, as a bug-fix task with one of its
procedural bugs (the same gates, then the bug's: its static checks, one run of the buggy code on every
test, and the probes when it passes them all). It reports the median seconds of each, their ratio, and
what became of the bugs (accepted, or each rejection reason).

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_bugfix_gates.json``).

    python benchmarks/bench_bugfix_gates.py [--sandbox subprocess] [--tasks 12] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.config import SandboxConfig  # noqa: E402
from spade_llm.fake import bank  # noqa: E402
from spade_llm.kinds import get_kind, run_gates  # noqa: E402
from spade_llm.languages import PYTHON  # noqa: E402
from spade_llm.sandbox.registry import get_sandbox  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402
from spade_llm.validation import Validator  # noqa: E402

BUGFIX, INDUCTION = get_kind("bugfix").name, get_kind("induction").name


def pairs(count: int) -> list[tuple[str, Task, Task]]:
    """``count`` bank exercises, each as a function task and as a bug-fix task with its first bug."""
    out: list[tuple[str, Task, Task]] = []
    rng = random.Random(7)
    while len(out) < count:
        target = 0.2 + 0.6 * len(out) / max(1, count - 1)
        variant = bank.random_pipeline(rng, target, None) or rng.choice(bank.VARIANTS)
        built = bank.build_task(variant, rng, target)
        bugs = PYTHON.bugs(built.reference_code, 1, 1, key=built.entry_point)
        if not bugs:
            continue
        data = built.to_json()
        tests = [TestCase(input=t["input"]) for t in data["tests"]]
        common = {"description": data["description"], "entry_point": data["entry_point"], "tests": tests}
        plain = Task(task_id=f"f{len(out)}", kind=INDUCTION, reference_code=built.reference_code, **common)
        broken = plain.model_copy(update={"task_id": f"b{len(out)}", "kind": BUGFIX, "buggy_code": bugs[0].source})
        out.append((built.entry_point, plain, broken))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandbox", default="subprocess")
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_bugfix_gates.json")
    args = ap.parse_args()
    config = SandboxConfig(backend=args.sandbox)
    box = get_sandbox(args.sandbox)
    validator = Validator(box, config.limits(), config.test_timeout_s)
    rows: list[dict[str, Any]] = []
    outcomes: Counter[str] = Counter()
    try:
        for name, plain, broken in pairs(args.tasks):
            times: dict[str, list[float]] = {"function": [], "bugfix": []}
            outcome = "?"
            for _ in range(args.repeat):
                for label, task in (("function", plain), ("bugfix", broken)):
                    started = time.perf_counter()
                    report = run_gates(validator, task)
                    times[label].append(time.perf_counter() - started)
                    if label == "bugfix":
                        outcome = "accepted" if report.valid else str(report.reason)
            outcomes[outcome] += 1
            f, b = statistics.median(times["function"]), statistics.median(times["bugfix"])
            rows.append({"task": name, "function_s": round(f, 3), "bugfix_s": round(b, 3), "bug": outcome})
    finally:
        box.close()
    total_f, total_b = sum(r["function_s"] for r in rows), sum(r["bugfix_s"] for r in rows)
    print(f"{'task':32} {'function s':>10} {'bugfix s':>9} {'ratio':>6}  bug")
    for r in rows:
        ratio = r["bugfix_s"] / r["function_s"] if r["function_s"] else float("nan")
        print(f"{r['task'][:32]:32} {r['function_s']:>10.2f} {r['bugfix_s']:>9.2f} {ratio:>6.2f}  {r['bug']}")
    print(f"{'total':32} {total_f:>10.2f} {total_b:>9.2f} {total_b / total_f:>6.2f}")
    result = {
        "sandbox": args.sandbox,
        "tasks": len(rows),
        "function_s": round(total_f, 3),
        "bugfix_s": round(total_b, 3),
        "ratio": round(total_b / total_f, 3),
        "bugs": dict(outcomes),
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))


if __name__ == "__main__":
    main()
