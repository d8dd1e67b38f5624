"""What the program kind's gates cost, with and without the mutant gate, on the fake model's program problems.

Each problem of ``fake/contests.py`` (input generator and validator, six drawn hidden tests) and of
``fake/checked_programs.py`` (judged by a checker) is validated ``--repeat`` times by the ``program``
kind's gates with the mutant gate off (``min_kill_rate`` 0) and on (the default, 1.0), interleaved so
the machine's load falls on both alike. It reports the median seconds of each, their ratio, and what the
mutant gate found (mutants run, killed, equivalent, survived), and checks every problem is accepted.

Measured on the 2-core VM (2026-12-06, others' tests running beside it, subprocess backend, 1 repeat):
16.6 s of gates without the mutant gate, 41.7 s with it (2.5x); per problem 1.4x to 3.3x, and 5.9x for
``divisor``, whose checker (run on every mutant's output) loops to the square root of n. Every problem
accepted, every non-equivalent mutant killed (docs/self-play.md).

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_program_gates.json``).

    python benchmarks/bench_program_gates.py [--sandbox subprocess] [--repeat 3]
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
from spade_llm.fake import checked_programs, contests  # noqa: E402
from spade_llm.kinds import get_kind, run_gates  # noqa: E402
from spade_llm.sandbox.registry import get_sandbox  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402
from spade_llm.validation import Validator  # noqa: E402

PROGRAM = get_kind("program").name


def problems() -> list[tuple[str, Task]]:
    """Every fake program problem as the generator proposes it (tests without expected outputs)."""
    out = []
    datas = [(p.key, contests.task_json(p)) for p in contests.PROBLEMS]
    datas += [(p.key, checked_programs.task_json(p, random.Random(0))) for p in checked_programs.PROBLEMS]
    for key, data in datas:
        tests = [TestCase(input=t["input"]) for t in data["tests"]]
        fields = {k: v for k, v in data.items() if k not in ("tests", "difficulty", "tags")}
        out.append((key, Task(task_id=f"bench-{key}", kind=PROGRAM, tests=tests, **fields)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandbox", default="subprocess")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_program_gates.json")
    args = ap.parse_args()
    config = SandboxConfig(backend=args.sandbox, timeout_s=10, test_timeout_s=1)
    box = get_sandbox(args.sandbox)
    off = Validator(box, config.limits(), config.test_timeout_s, min_kill_rate=0)
    on = Validator(box, config.limits(), config.test_timeout_s)
    rows: list[dict[str, Any]] = []
    try:
        for key, task in problems():
            times: dict[str, list[float]] = {"off": [], "on": []}
            stats = None
            for _ in range(args.repeat):
                for name, validator in (("off", off), ("on", on)):
                    started = time.perf_counter()
                    report = run_gates(validator, task)
                    times[name].append(time.perf_counter() - started)
                    if not report.valid:
                        raise SystemExit(f"{key}: rejected with mutants {name}: {report.reason}: {report.detail}")
                    if name == "on":
                        stats = report.mutation
            off_s, on_s = statistics.median(times["off"]), statistics.median(times["on"])
            rows.append(
                {
                    "problem": key,
                    "gates_s": round(off_s, 3),
                    "with_mutants_s": round(on_s, 3),
                    "ratio": round(on_s / off_s, 2),
                    "mutants": stats.row() if stats is not None else None,
                }
            )
    finally:
        box.close()
    print(f"{'problem':<16}{'gates s':>9}{'+mutants s':>12}{'ratio':>7}  mutants (run/killed/equivalent/survived)")
    for r in rows:
        m = r["mutants"]
        found = f"{m['total']}/{m['killed']}/{m['equivalent']}/{m['survived']}" if m else "none"
        print(f"{r['problem']:<16}{r['gates_s']:>9.2f}{r['with_mutants_s']:>12.2f}{r['ratio']:>7.2f}  {found}")
    total_off = sum(r["gates_s"] for r in rows)
    total_on = sum(r["with_mutants_s"] for r in rows)
    summary = {
        "sandbox": args.sandbox,
        "repeat": args.repeat,
        "rows": rows,
        "ratio_total": round(total_on / total_off, 2),
    }
    print(f"all problems: {total_off:.2f} s -> {total_on:.2f} s ({summary['ratio_total']}x)")
    line = json.dumps(summary)
    print(line)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(line + "\n")


if __name__ == "__main__":
    main()
