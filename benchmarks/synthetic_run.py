"""A synthetic run directory of any size, for the scaling benchmarks (``bench_records.py``).

A small real fake run (``--template-epochs`` epochs, made here with ``spade run``) is copied again and again
as later epochs: copy ``k`` shifts every ``"epoch"`` by ``k`` times the template's epochs and gives every task
id (and so every trajectory id, every plan's example and every rejection naming a task) a suffix of its own.
So the copy is a run spade could have written: strict reading and resume's integrity checks pass, every
journal keeps its order, and only the records' volume grows. Lines are rewritten as text (no JSON parsing),
so a million trajectories (about 7 GB) take a few minutes of disk writing.

    python benchmarks/synthetic_run.py OUT --trajectories 100000 [--template-epochs 3] [--seed 5]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from spade_llm.store import JOURNALS

EPOCH = re.compile(r'"epoch":(\d+)')
TASK_ID = re.compile(r"\be(\d+)-([0-9a-f]{10})\b")
"""A task id as the generator makes them (``make_task_id``): ``e<epoch>-<10 hex digits>``."""
TEXT = re.compile(r'"description":"|"role":"user","content":"')
"""Where a task's text starts: its description, and the user messages of its episodes."""


def make_template(folder: Path, epochs: int, seed: int) -> Path:
    """A real seeded fake run of ``epochs`` epochs (8 tasks each, 4 samples per task)."""
    out = folder / "template"
    cmd = [
        sys.executable, "-m", "spade_llm.cli", "run", "--model", "fake/default", "--seed", str(seed),
        "--epochs", str(epochs), "--tasks-per-epoch", "8", "--samples-per-task", "4", "--out", str(out), "--quiet",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def copy_line(line: str, copy: int, epochs: int) -> str:
    """``line`` as copy ``copy`` of the template holds it (epochs shifted, task ids suffixed, and each task
    description and user message marked with the copy, so no export takes two copies for one example)."""
    if copy == 0:
        return line
    shift = copy * epochs
    line = EPOCH.sub(lambda m: f'"epoch":{int(m.group(1)) + shift}', line)
    line = TEXT.sub(lambda m: f"{m.group(0)}(copy {copy}) ", line)
    return TASK_ID.sub(lambda m: f"e{int(m.group(1)) + shift}-{m.group(2)}c{copy}", line)


def grow(template: Path, out: Path, trajectories: int) -> dict[str, int]:
    """Write into ``out`` as many copies of ``template`` as make at least ``trajectories`` trajectories."""
    lines = {name: (template / name).read_text(encoding="utf-8").splitlines(keepends=True) for name in JOURNALS}
    per_copy = len(lines["trajectories.jsonl"])
    epochs = len(lines["metrics.jsonl"])
    copies = max(1, math.ceil(trajectories / per_copy))
    out.mkdir(parents=True)
    for name in ("manifest.json", "summary.json"):
        shutil.copy(template / name, out / name)
    config = yaml.safe_load((template / "config.yaml").read_text(encoding="utf-8"))
    config["controller"]["epochs"] = copies * epochs
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for name, template_lines in lines.items():
        with (out / name).open("w", encoding="utf-8", newline="\n") as f:
            for copy in range(copies):
                f.writelines(copy_line(line, copy, epochs) for line in template_lines)
    summary = json.loads((out / "summary.json").read_text())
    summary.update({"epochs": copies * epochs, "trajectories": copies * per_copy})
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return {"copies": copies, "epochs": copies * epochs, "trajectories": copies * per_copy}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the run directory to write (must not exist)")
    parser.add_argument("--trajectories", type=int, default=100_000)
    parser.add_argument("--template-epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--template", type=Path, help="a run directory to copy instead of making one")
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists")
    with tempfile.TemporaryDirectory() as tmp:
        template = args.template or make_template(Path(tmp), args.template_epochs, args.seed)
        made = grow(template, args.out, args.trajectories)
    size = sum(f.stat().st_size for f in args.out.iterdir())
    print(json.dumps({**made, "bytes": size, "path": str(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
