"""`spade evaluate` on imported HumanEval, this tree beside another checkout of spade_llm, side by side.

Each tree imports HumanEval with its own ``spade import`` and evaluates the same sample files
(canonical solutions, and ``return None`` bodies) with its own ``spade evaluate``; the runs
alternate, ``--rounds`` times each, so load on a shared machine falls on both alike. Reported per
tree and sample file: the best and median wall time of a whole command (interpreter start, sandbox
start, 164 samples), passes, and the ratio of the other tree's best time to this one's (above 1:
this tree is faster).

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_evaluate.json``).

    python benchmarks/bench_evaluate.py [--other DIR] [--rounds 5] [--sandbox bwrap]

``--other`` is a checkout of another version (for example ``git worktree add /tmp/base main``);
without it only this tree is measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"


def spade(tree: Path, *args: str, out: Path | None = None) -> float:
    """Run ``spade ARGS`` from ``tree``'s package; the wall time of the whole command."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    with open(out or os.devnull, "w") as stdout:
        subprocess.run(  # from the tree: ``-m`` puts the working directory first on the path, before PYTHONPATH
            [sys.executable, "-m", "spade_llm.cli", *args],
            cwd=tree,
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
            check=True,
        )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, help="another checkout of spade_llm to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_evaluate.json")
    args = parser.parse_args()
    trees = {"this": ROOT} | ({"other": args.other.resolve()} if args.other else {})
    with gzip.open(DATA, "rt") as lines:
        rows = [json.loads(line) for line in lines]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        samples = {
            "canonical": [{"task_id": r["task_id"], "completion": r["canonical_solution"]} for r in rows],
            "broken": [{"task_id": r["task_id"], "completion": "    return None\n"} for r in rows],
        }
        for name, items in samples.items():
            (work / f"{name}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in items))
        for label, tree in trees.items():
            spade(tree, "import", "humaneval", str(DATA), "-o", str(work / f"{label}.tasks.jsonl"))
        times: dict[tuple[str, str], list[float]] = {}
        passed: dict[tuple[str, str], int] = {}
        for _ in range(args.rounds):
            for name in samples:
                for label, tree in trees.items():
                    out = work / f"{label}.{name}.out"
                    tasks = str(work / f"{label}.tasks.jsonl")
                    cmd = ["evaluate", tasks, "--samples", str(work / f"{name}.jsonl"), "--sandbox", args.sandbox]
                    times.setdefault((label, name), []).append(spade(tree, *cmd, out=out))
                    passed[(label, name)] = sum(json.loads(line)["passed"] for line in out.read_text().splitlines())
    result: dict[str, Any] = {"sandbox": args.sandbox, "rounds": args.rounds, "samples": len(rows), "runs": []}
    print(f"{'tree':<6} {'samples':<10} {'best s':>8} {'median s':>9} {'passed':>7} {'other/this':>10}")
    for (label, name), walls in times.items():
        ratio = None
        if "other" in trees:
            ratio = min(times[("other", name)]) / min(times[("this", name)])
        row = {
            "tree": label,
            "samples": name,
            "best_s": round(min(walls), 3),
            "median_s": round(statistics.median(walls), 3),
            "passed": passed[(label, name)],
            "other_over_this": None if ratio is None else round(ratio, 3),
        }
        result["runs"].append(row)
        shown = "" if ratio is None else f"{ratio:.2f}x"
        print(
            f"{label:<6} {name:<10} {min(walls):>8.2f} {statistics.median(walls):>9.2f} {row['passed']:>7} {shown:>10}"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
