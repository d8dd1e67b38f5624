"""Reward throughput: rewards per second of ``spade_llm.rewards.code`` on a batch of completions, cold and warm.

The batch (``--n``, default 256) mixes passing and failing completions, half each:

* ``humaneval`` (default when ``shared/data/HumanEval.jsonl.gz`` is there): canonical solutions
  and broken ones (the body replaced by ``return None``), each in a ```python block, judged on the
  problem's ``check_code`` through its ground truth as exports write it;
* ``run``: the answers of a run directory's trajectories (``--run DIR``; a fake run of every
  kind is made in a temporary folder when none is given), passing and failing ones.

For each backend (``--sandbox``, default ``bwrap,subprocess`` where they work) it measures one TRL
call of ``code_reward`` on the whole batch with a fresh ``Rewarder`` (**cold**: the sandbox's start
included) and again on the same one (**warm**), the sync form and the async twin, plus verl's
``compute_score`` called once per completion in a loop (as verl's ``naive`` reward manager does),
warm. Scores are checked against what each completion should get.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_rewards.json``).

    python benchmarks/bench_rewards.py [--source humaneval|run] [--run DIR] [--n 256] [--sandbox bwrap] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.errors import SandboxUnavailable  # noqa: E402
from spade_llm.rewards.code import CodeReward, Rewarder, compute_score, strict_python_block  # noqa: E402
from spade_llm.rewards.groundtruth import ground_truth  # noqa: E402
from spade_llm.solver import split_tests  # noqa: E402
from spade_llm.tasksets.importers import import_humaneval  # noqa: E402
from spade_llm.types import Task, Trajectory  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"
Batch = tuple[list[str], list[str], list[float]]
"""Completions, their ground truths (JSON strings), and the score each should get."""


def fenced(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code.strip()}\n```\n"


def humaneval_batch(n: int) -> Batch:
    tasks = import_humaneval(DATA)
    completions, truths, want = [], [], []
    for i in range(n):
        task = tasks[(i // 2) % len(tasks)]
        gt = json.dumps(ground_truth(task, 0))
        if i % 2 == 0:
            completions.append(fenced(task.reference_code))
            want.append(1.0)
        else:
            body = task.meta["prompt"].rstrip() + "\n    return None\n"
            completions.append(fenced(body))
            want.append(0.0)
        truths.append(gt)
    return completions, truths, want


def make_run(folder: Path) -> Path:
    config = folder / "kinds.yaml"
    config.write_text("curriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n")
    out = folder / "run"
    args = ["run", "--epochs", "2", "--samples-per-task", "4", "--tasks-per-epoch", "8", "--out", str(out)]
    subprocess.run([sys.executable, "-m", "spade_llm.cli", *args, "--quiet", "--config", str(config)], check=True)
    return out


def run_batch(run: Path, n: int) -> Batch:
    tasks = {t.task_id: t for t in (Task.model_validate_json(x) for x in (run / "tasks.jsonl").open())}
    good: list[tuple[str, str]] = []
    bad: list[tuple[str, str]] = []
    for line in (run / "trajectories.jsonl").open():
        tr = Trajectory.model_validate_json(line)
        task = tasks[tr.task_id]
        gt = json.dumps(ground_truth(task, len(split_tests(task, 3)[0])))
        for a in tr.attempts:
            if task.kind == "induction" and not strict_python_block(a.raw):
                continue
            if any(r.status == "timeout" for r in a.result.test_results or []):
                continue  # a hanging answer costs its test timeouts, whatever the reward code does
            passed = a.result.tests_passed == a.result.tests_total == len(task.tests)
            (good if passed else bad).append((a.raw, gt))
    if not good or not bad:
        raise SystemExit(f"{run}: needs both passing and failing answers")
    completions, truths, want = [], [], []
    for i in range(n):
        pool, score = (good, 1.0) if i % 2 == 0 else (bad, 0.0)
        text, gt = pool[(i // 2) % len(pool)]
        completions.append(text)
        truths.append(gt)
        want.append(score)
    return completions, truths, want


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def bench_backend(backend: str, batch: Batch, workers: int | None) -> dict[str, Any]:
    completions, truths, want = batch
    n = len(completions)
    row: dict[str, Any] = {"backend": backend}
    probe = Rewarder(backend)
    try:
        row["start_s"], _ = timed(probe.start)  # what "cold" pays once: the sandbox's start
    except SandboxUnavailable as e:
        return {"backend": backend, "available": False, "reason": str(e)}
    finally:
        probe.close()

    def call(rewarder: Rewarder, asynchronous: bool) -> list[float | None]:
        reward = CodeReward(rewarder)
        if asynchronous:
            return asyncio.run(reward.call_async(completions=completions, ground_truth=truths))
        return reward(completions=completions, ground_truth=truths)

    for mode in ("sync", "async"):
        try:
            rewarder = Rewarder(backend, max_workers=workers)
            cold_s, cold = timed(lambda: call(rewarder, mode == "async"))  # noqa: B023 (called at once)
        except SandboxUnavailable as e:
            return {"backend": backend, "available": False, "reason": str(e)}
        warm_s, warm = timed(lambda: call(rewarder, mode == "async"))  # noqa: B023
        row[f"{mode}_cold_per_s"] = n / cold_s
        row[f"{mode}_warm_per_s"] = n / warm_s
        row[f"{mode}_correct"] = sum(a == b for a, b in zip(warm, want, strict=True)) == n and cold == warm
        row["workers"] = rewarder.max_workers
        if mode == "sync":
            import spade_llm.rewards.code as rewards

            saved, rewards._default = rewards._default, rewarder
            try:
                seq_s, scores = timed(
                    lambda: [compute_score("spade_llm", c, g) for c, g in zip(completions, truths, strict=True)]
                )
            finally:
                rewards._default = saved
            row["verl_sequential_per_s"] = n / seq_s
            row["verl_correct"] = [s["score"] for s in scores] == want
        rewarder.close()
    row["available"] = True
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=["humaneval", "run"], default="humaneval" if DATA.exists() else "run")
    ap.add_argument("--run", help="a run directory (source run); default: a fake run made for the benchmark")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--sandbox", default="bwrap,subprocess", help="comma-separated backends")
    ap.add_argument("--workers", type=int, default=None, help="answers judged at once (default: twice the CPU count)")
    ap.add_argument("--json", default=str(ROOT / "runs" / "bench_rewards.json"))
    args = ap.parse_args()

    if args.source == "humaneval":
        batch = humaneval_batch(args.n)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            batch = run_batch(Path(args.run) if args.run else make_run(Path(tmp)), args.n)
    rows = [bench_backend(b.strip(), batch, args.workers) for b in args.sandbox.split(",") if b.strip()]

    header = [
        "backend",
        "workers",
        "start s",
        "sync cold/s",
        "sync warm/s",
        "async cold/s",
        "async warm/s",
        "verl seq/s",
        "ok",
    ]
    print(f"{args.n} completions ({args.source}, half passing); rewards per second")
    print("  ".join(f"{h:>12}" for h in header))
    for r in rows:
        if not r["available"]:
            print(f"{r['backend']:>12}  unavailable: {r['reason']}")
            continue
        ok = r["sync_correct"] and r["async_correct"] and r["verl_correct"]
        cells = [r["backend"], r["workers"], f"{r['start_s']:.2f}"] + [
            f"{r[k]:.1f}"
            for k in (
                "sync_cold_per_s",
                "sync_warm_per_s",
                "async_cold_per_s",
                "async_warm_per_s",
                "verl_sequential_per_s",
            )
        ]
        print("  ".join(f"{c:>12}" for c in [*cells, "yes" if ok else "NO"]))
    result = {"bench": "rewards", "source": args.source, "n": args.n, "rows": rows}
    line = json.dumps(result)
    print(line)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(line + "\n")
    return 0 if all(not r["available"] or (r["sync_correct"] and r["verl_correct"]) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
