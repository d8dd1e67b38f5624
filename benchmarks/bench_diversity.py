"""Diversity steered, not only policed: the share of novel tasks a collapsing generator gets accepted, with
the run's steering (``curriculum.name_repeats``: the prompts name the tasks its duplicates copied) and
without it, on the same seeds.

The generator is the fake ``collapse`` profile (it proposes one exercise again nine times in ten; named
in its prompt as one its proposals keep coming back to, four times in ten, as a model heeding its prompt
would). Per seed and setting, a run of ``--epochs`` epochs: the share of valid proposals that were new
(accepted / (accepted + refused as duplicates)), the tasks accepted, the mean of ``metrics.jsonl``'s
novelty, and the epochs that accepted nothing. This measures the loop's side (the plan names the repeats,
the prompt carries them); how much a real model heeds such a prompt is for a real model to show.

    python benchmarks/bench_diversity.py [--seeds 1,2,3] [--epochs 20] [--tasks-per-epoch 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_once(seed: int, epochs: int, tasks_per_epoch: int, name_repeats: int, folder: Path) -> dict[str, Any]:
    from spade_llm.config import load_config
    from spade_llm.session import start_run
    from spade_llm.store import RunDir

    config = load_config(
        None,
        {
            "seed": seed,
            "generator": {"model": "fake/collapse"},
            "controller": {"epochs": epochs, "tasks_per_epoch": tasks_per_epoch, "max_empty_epochs": None},
            "curriculum": {"name_repeats": name_repeats},
            "solver": {"samples_per_task": 1},
            "sandbox": {"backend": "subprocess"},
        },
    )
    out = folder / f"seed{seed}-repeats{name_repeats}"
    start_run(config, RunDir.create(out), log=lambda _line: None)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    accepted = sum(r["tasks_accepted"] for r in rows)
    duplicates = sum(r["rejected_by_reason"].get("duplicate", 0) for r in rows)
    novelty = [r["novelty"] for r in rows if r["tasks_accepted"]]
    return {
        "seed": seed,
        "name_repeats": name_repeats,
        "accepted": accepted,
        "duplicates": duplicates,
        "novel_share": round(accepted / (accepted + duplicates), 4) if accepted + duplicates else None,
        "mean_novelty": round(sum(novelty) / len(novelty), 4) if novelty else None,
        "empty_epochs": sum(1 for r in rows if not r["tasks_accepted"]),
        "steered_epochs": sum(1 for line in (out / "plans.jsonl").read_text().splitlines() if '"repeated"' in line),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--tasks-per-epoch", type=int, default=5)
    parser.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_diversity.json")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    print(f"{'seed':>4} {'steering':>9} {'accepted':>8} {'dups':>5} {'novel share':>11} {'novelty':>8} {'empty':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            for repeats in (0, 3):
                row = run_once(seed, args.epochs, args.tasks_per_epoch, repeats, Path(tmp))
                rows.append(row)
                print(
                    f"{seed:>4} {'on' if repeats else 'off':>9} {row['accepted']:>8} {row['duplicates']:>5}"
                    f" {row['novel_share']!s:>11} {row['mean_novelty']!s:>8} {row['empty_epochs']:>5}",
                    flush=True,
                )
    for repeats in (0, 3):
        mine = [r for r in rows if r["name_repeats"] == repeats]
        accepted, dups = sum(r["accepted"] for r in mine), sum(r["duplicates"] for r in mine)
        print(f"steering {'on' if repeats else 'off'}: {accepted} accepted, {dups} duplicates, "
              f"novel share {accepted / max(1, accepted + dups):.3f}")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"epochs": args.epochs, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
