"""A run that never stops: per-epoch wall time and memory against the epoch number.

One ``spade run`` of the fake model for ``--epochs`` epochs (default 200), in its own process, watched from
outside: each epoch's time is the gap between two ``metrics.jsonl`` rows appearing (so it holds everything
the loop does between epochs: metrics, summary, plan, hooks, not only ``wall_s``), and the process's
resident memory is read from ``/proc`` at each row. A per-epoch cost that grows with the run (a scan of
every task or trajectory so far) shows as the last epochs' time above the first ones'; issue 41's bar is
the mean of the last 20 within 1.5x of the first 20's.

    python benchmarks/bench_long_run.py [--epochs 200] [--tasks-per-epoch 8] [--seed 1] [--json PATH]
"""

from __future__ import annotations

import argparse
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


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def watch(epochs: int, tasks_per_epoch: int, seed: int, samples: int, out: Path) -> list[dict[str, Any]]:
    """Run and return one row per epoch: its wall time as seen from outside, ``wall_s``, RSS, accepted tasks."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    cmd = [
        sys.executable, "-m", "spade_llm.cli", "run", "--model", "fake/default", "--seed", str(seed),
        "--epochs", str(epochs), "--tasks-per-epoch", str(tasks_per_epoch), "--samples-per-task", str(samples),
        "--out", str(out), "--quiet",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    metrics = out / "metrics.jsonl"
    rows: list[dict[str, Any]] = []
    seen, last = 0, time.monotonic()
    while True:
        done = proc.poll() is not None
        lines = metrics.read_text().splitlines() if metrics.exists() else []
        complete = [line for line in lines if line.endswith("}")]
        now = time.monotonic()
        for line in complete[seen:]:
            row = json.loads(line)
            rows.append(
                {
                    "epoch": row["epoch"],
                    "seconds": round(now - last, 3),
                    "wall_s": row.get("wall_s"),
                    "rss_mb": rss_mb(proc.pid),
                    "accepted": row.get("tasks_accepted"),
                    "episodes": row.get("episodes"),
                }
            )
            last = now
        seen = len(complete)
        if done:
            break
        time.sleep(0.05)
    if proc.returncode != 0:
        raise SystemExit(f"spade run failed ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
    return rows


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--tasks-per-epoch", type=int, default=8)
    parser.add_argument("--samples-per-task", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=20, help="epochs averaged at each end")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        rows = watch(args.epochs, args.tasks_per_epoch, args.seed, args.samples_per_task, Path(tmp) / "run")
        total = time.monotonic() - started
        size = sum(f.stat().st_size for f in (Path(tmp) / "run").iterdir() if f.is_file())
    w = args.window
    # the first row's gap includes the process starting: it is left out of the first window
    first, last = rows[1 : w + 1], rows[-w:]
    ratio = mean([r["seconds"] for r in last]) / mean([r["seconds"] for r in first])
    # an epoch whose episodes run tests to their time limit takes several times the others: the median
    # says whether the typical epoch slows down, the mean whether the slow ones grew more frequent
    median_ratio = median([r["seconds"] for r in last]) / median([r["seconds"] for r in first])
    print(f"{'epochs':>12} {'s/epoch':>9} {'wall_s':>8} {'RSS MB':>8} {'accepted':>9}")
    for name, part in (
        (f"{first[0]['epoch']}-{first[-1]['epoch']}", first),
        (f"{last[0]['epoch']}-{last[-1]['epoch']}", last),
    ):
        rss = [r["rss_mb"] for r in part if r["rss_mb"] is not None]
        print(
            f"{name:>12} {mean([r['seconds'] for r in part]):>9.3f} {mean([r['wall_s'] or 0.0 for r in part]):>8.3f}"
            f" {max(rss) if rss else float('nan'):>8.1f} {sum(r['accepted'] or 0 for r in part):>9}"
        )
    print(f"last {w} / first {w} epochs' time: mean {ratio:.2f}x, median {median_ratio:.2f}x (bar: 1.5x); "
          f"{len(rows)} epochs in {total:.0f} s; run directory {size / 1e6:.1f} MB")  # fmt: skip
    result = {
        "epochs": len(rows),
        "tasks_per_epoch": args.tasks_per_epoch,
        "samples_per_task": args.samples_per_task,
        "seed": args.seed,
        "total_s": round(total, 1),
        "ratio_last_to_first": round(ratio, 3),
        "median_ratio_last_to_first": round(median_ratio, 3),
        "run_bytes": size,
        "rows": rows,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
