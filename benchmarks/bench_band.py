"""Does the controller keep the solver's pass rate inside the band? The fake profiles, measured.

For ``fake/default`` it runs ``--epochs 12 --tasks-per-epoch 16`` for each seed and counts the
epochs from the 5th on (1-based, i.e. 0-based epochs 4..11) whose pass rate lies inside the band,
and the difficulty changes that followed an in-band epoch (there must be none). For
``fake/strong-solver`` and ``fake/weak-solver`` it runs ``--epochs 10 --tasks-per-epoch 8`` and
reports how far the target difficulty moved. Prints a table per run and writes JSON
(``--json``, default ``runs/bench_band.json``).

    python benchmarks/bench_band.py [--seeds 1 2 3] [--sandbox auto] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run(profile: str, seed: int, epochs: int, tasks: int, sandbox: str, out: Path) -> list[dict[str, Any]]:
    cmd = [
        sys.executable, "-m", "spade_llm.cli", "run", "--model", f"fake/{profile}", "--seed", str(seed),
        "--epochs", str(epochs), "--tasks-per-epoch", str(tasks), "--sandbox", sandbox, "--out", str(out), "--quiet",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]


def band_of(out: Path) -> tuple[float, float]:
    import yaml

    lo, hi = yaml.safe_load((out / "config.yaml").read_text())["controller"]["band"]
    return float(lo), float(hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--json", default=str(ROOT / "runs" / "bench_band.json"))
    args = ap.parse_args()
    report: dict[str, Any] = {"default": [], "strong-solver": [], "weak-solver": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            started = time.monotonic()
            out = Path(tmp) / f"default-{seed}"
            rows = run("default", seed, 12, 16, args.sandbox, out)
            lo, hi = band_of(out)
            late = [r for r in rows if r["epoch"] >= 4]
            inside = [r for r in late if r["pass_rate"] is not None and lo <= r["pass_rate"] <= hi]
            moved_after_band = [
                b["epoch"]
                for a, b in itertools.pairwise(rows)
                if a["pass_rate"] is not None and lo <= a["pass_rate"] <= hi and b["difficulty"] != a["difficulty"]
            ]
            print(f"\nfake/default seed {seed} ({time.monotonic() - started:.1f} s)")
            print("epoch  difficulty  accepted  episodes   pass  in band")
            for r in rows:
                rate = r["pass_rate"]
                ok = rate is not None and lo <= rate <= hi
                shown = "  n/a" if rate is None else f"{rate:5.2f}"
                print(
                    f"{r['epoch']:>5}  {r['difficulty']:>10.2f}  {r['tasks_accepted']:>4}/{r['tasks_proposed']:<3}  "
                    f"{r['episodes']:>8}  {shown}  {'yes' if ok else 'no'}"
                )
            print(f"epochs 5-12 in band: {len(inside)}/{len(late)}; moves after an in-band epoch: {moved_after_band}")
            report["default"].append(
                {
                    "seed": seed,
                    "in_band_late": len(inside),
                    "late_epochs": len(late),
                    "moves_after_in_band": moved_after_band,
                    "accepted": sum(r["tasks_accepted"] for r in rows),
                    "proposed": sum(r["tasks_proposed"] for r in rows),
                    "rows": [{k: r[k] for k in ("epoch", "difficulty", "pass_rate", "episodes")} for r in rows],
                }
            )
        for profile in ("strong-solver", "weak-solver"):
            for seed in args.seeds:
                out = Path(tmp) / f"{profile}-{seed}"
                rows = run(profile, seed, 10, 8, args.sandbox, out)
                change = rows[-1]["next_difficulty"] - rows[0]["difficulty"]
                print(
                    f"fake/{profile} seed {seed}: difficulty {rows[0]['difficulty']:.2f} -> "
                    f"{rows[-1]['next_difficulty']:.2f} ({change:+.2f}) over 10 epochs x 8 tasks"
                )
                report[profile].append({"seed": seed, "change": round(change, 4)})
    total_in = sum(r["in_band_late"] for r in report["default"])
    total_late = sum(r["late_epochs"] for r in report["default"])
    report["summary"] = {
        "default_in_band_late": f"{total_in}/{total_late}",
        "default_each_seed_two_thirds": all(3 * r["in_band_late"] >= 2 * r["late_epochs"] for r in report["default"]),
        "no_move_after_in_band": all(not r["moves_after_in_band"] for r in report["default"]),
        "strong_climbs_0.3": all(r["change"] >= 0.3 for r in report["strong-solver"]),
        "weak_falls_0.1": all(r["change"] <= -0.1 for r in report["weak-solver"]),
    }
    print("\n" + json.dumps(report["summary"], indent=2))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
