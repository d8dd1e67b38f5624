"""Records at scale: resume, ``export --format sft`` and ``report`` of runs of 10,000 to 1,000,000
trajectories, their wall time and peak RSS.

Each size is a synthetic run (``synthetic_run.py``: a real fake run copied as later epochs, so strict reading
and resume's integrity checks pass), made once under ``--cache`` and reused. Each command runs in its own
process; its peak RSS is the kernel's (``wait4``'s ``ru_maxrss``). Resume is ``spade run --resume`` of a run
whose epochs are all done: it reads and checks the records, rebuilds the duplicate gate and stops.
Issue 41's bar: each under 1 GB at 1,000,000 trajectories.

    python benchmarks/bench_records.py [--sizes 10000,100000] [--cache /tmp/spade-records] [--json PATH]
        [--baseline DIR]   # DIR holds another tree's package: git archive REV spade_llm prompts configs |
                           # tar -x -C DIR, then prompts/ and configs/ moved into DIR/spade_llm/
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPADE = [sys.executable, "-m", "spade_llm.cli"]


def measured(cmd: list[str], tree: Path | None = None) -> dict[str, Any]:
    """Run ``cmd`` (with ``tree``'s ``spade_llm`` first on the path, when given); its wall seconds and peak
    RSS (MB), or its error."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    if tree is not None:
        # an editable install's import hook would find this tree's package first: without site (-S) only
        # the path is searched, the other tree first (it is the working folder too: ``-m`` puts that
        # first), then the installed dependencies
        site_packages = [p for p in sys.path if p.endswith("site-packages")]
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *site_packages])
        cmd = [cmd[0], "-S", *cmd[1:]]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tree or ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    row: dict[str, Any] = {"seconds": round(seconds, 2), "rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if proc.returncode != 0:
        row["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
    return row


def synthetic(cache: Path, size: int) -> Path:
    run = cache / f"run-{size}"
    if not (run / "summary.json").exists():
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "synthetic_run.py"), str(run), "--trajectories", str(size)],
            check=True,
        )
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="trajectories, comma-separated")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/spade-records"), help="where the runs are kept")
    parser.add_argument("--only", default="resume,export,report", help="which commands, comma-separated")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--baseline", type=Path, help="a folder holding another tree's spade_llm, run side by side")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    results = []
    print(f"{'trajectories':>12} {'command':>8} {'tree':>9} {'seconds':>9} {'peak RSS MB':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        run = synthetic(args.cache, size)
        out = args.cache / f"out-{size}"
        out.mkdir(exist_ok=True)
        commands = {
            "resume": [*SPADE, "run", "--resume", str(run), "--quiet"],
            "export": [*SPADE, "export", str(run), "--format", "sft", "-o", str(out / "sft.jsonl")],
            "report": [*SPADE, "report", str(run), "-o", str(out / "report.html")],
        }
        for name, cmd in commands.items():
            if name not in only:
                continue
            for tree in (None, args.baseline) if args.baseline else (None,):
                label = "this" if tree is None else "baseline"
                row = {"trajectories": size, "command": name, "tree": label, **measured(cmd, tree)}
                results.append(row)
                note = f"  ({row['error']})" if "error" in row else ""
                print(
                    f"{size:>12,} {name:>8} {label:>9} {row['seconds']:>9.1f} {row['rss_mb']:>12.0f}{note}", flush=True
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
