"""Same seed, same records across two checkouts: seeded fake runs of each kind and of the mix, with and
without a resume, on an old tree and a new one, compared for every field the old tree wrote (times
aside). A restructure must print "differ=none" on every line.

    git worktree add /tmp/old <commit>
    python scripts/same_records.py /tmp/old .

Each tree runs with its own ``spade_llm`` (``PYTHONPATH``) in this interpreter's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TIME = re.compile(r"(time|wall|duration|elapsed|latency|second)|(_s|_ms|_at)$|^(started|finished|created)")
FILES = [
    "plans.jsonl",
    "proposals.jsonl",
    "tasks.jsonl",
    "rejected.jsonl",
    "trajectories.jsonl",
    "task_stats.jsonl",
    "metrics.jsonl",
]
RUNS = [(3, "induction"), (5, "deduction"), (8, "abduction"), (13, "induction,deduction,abduction")]


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not TIME.search(k)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def project(new: Any, old: Any) -> Any:
    """``new`` restricted to the fields ``old`` has (a field added since is no difference)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: project(new.get(k), v) for k, v in old.items()}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [project(a, b) for a, b in zip(new, old, strict=True)]
    return new


def records(run: Path) -> dict[str, list[Any]]:
    out = {}
    for name in FILES:
        path = run / name
        rows = [strip(json.loads(x)) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
        if name in ("trajectories.jsonl", "task_stats.jsonl"):
            rows.sort(key=lambda r: (r["task_id"], r.get("sample_index", 0)))
        out[name] = rows
    return out


def spade(tree: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": tree}
    subprocess.run([sys.executable, "-m", "spade_llm.cli", *args, "--quiet"], env=env, check=True, capture_output=True)


def run(tree: str, out: Path, seed: int, kinds: str, resume: bool) -> dict[str, list[Any]]:
    config = out.parent / f"{out.name}.yaml"  # flags both trees take: the rest in a config
    config.write_text(
        json.dumps(
            {
                "seed": seed,
                "controller": {"tasks_per_epoch": 4, "concurrency": 4},
                "solver": {"samples_per_task": 2},
                "sandbox": {"backend": "subprocess"},
                "curriculum": {"kinds": kinds.split(",")},
            }
        )
    )
    if resume:
        spade(tree, "run", "--config", str(config), "--epochs", "1", "--out", str(out))
        spade(tree, "run", "--resume", str(out), "--epochs", "2")
    else:
        spade(tree, "run", "--config", str(config), "--epochs", "2", "--out", str(out))
    return records(out)


def main() -> None:
    old, new = sys.argv[1], sys.argv[2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed, kinds in RUNS:
            for resume in (False, True):
                a = run(old, Path(tmp) / f"old-{seed}-{resume}", seed, kinds, resume)
                b = run(new, Path(tmp) / f"new-{seed}-{resume}", seed, kinds, resume)
                differ = [
                    f
                    for f in FILES
                    if len(a[f]) != len(b[f]) or any(project(y, x) != x for x, y in zip(a[f], b[f], strict=False))
                ]
                n = sum(len(v) for v in a.values())
                rows.append({"seed": seed, "kinds": kinds, "resume": resume, "records": n, "differ": differ})
                line = f"seed {seed:>2} {kinds:<30} resume={resume!s:<5} records={n:>4} differ={differ or 'none'}"
                print(line, flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
