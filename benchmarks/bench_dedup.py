"""What the duplicate gate and the novelty metric cost per question as a run grows: ms at 1k .. 1M accepted tasks.

Synthetic reference programs (random functions from a small grammar: nested loops, branches,
arithmetic, list and dict work) are accepted into a gate until it holds N tasks; then ``--queries``
candidates are asked of it, half of them near copies of an accepted task (one statement changed: what a
collapsing generator proposes) and half new. Per size it reports:

- **duplicate check per candidate**: ``Deduper.duplicate`` (the candidate's shape included, its
  tokenizing not: that costs the same either way);
- **novelty per accepted task**: what the epoch's metrics pay for one new task;
- **build per task**: what a resumed run pays to reload one task into the gate (tokenizing included);
- for this tree, against a full scan of the same tasks: the decisions that differ (out of the queries)
  and how far the novelty reads differ (the index can only read higher: it can miss, never invent).

``--baseline DIR`` runs the same measurement on another source tree (``git archive a685e31 spade_llm |
tar -x -C DIR``: the linear scan) in its own process, side by side: the ratios are what to quote. Sizes
past ``--baseline-max`` are measured on this tree only (the scan would take hours). The peak RSS of each
worker is printed too (it holds the whole gate).

    python benchmarks/bench_dedup.py [--sizes 1000,10000,50000] [--queries 200] [--baseline DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_NAMES = ["a", "b", "n", "xs", "ys", "d", "s", "i", "j", "k", "acc", "best"]


def _expr(rng: random.Random, depth: int = 0) -> str:
    """A random expression: names and numbers joined by operators, calls and subscripts."""
    roll = rng.random()
    if depth > 2 or roll < 0.3:
        return rng.choice(_NAMES) if rng.random() < 0.7 else str(rng.randint(0, 9))
    if roll < 0.55:
        return f"({_expr(rng, depth + 1)} {rng.choice('+-*%')} {_expr(rng, depth + 1)})"
    if roll < 0.7:
        return f"{rng.choice(['len', 'abs', 'min', 'max', 'sum', 'sorted'])}({_expr(rng, depth + 1)})"
    if roll < 0.8:
        return f"{rng.choice(_NAMES)}[{_expr(rng, depth + 1)}]"
    if roll < 0.9:
        return f"[{_expr(rng, depth + 1)} for i in range({_expr(rng, depth + 1)})]"
    return f"{rng.choice(_NAMES)}.get({_expr(rng, depth + 1)}, {rng.randint(0, 3)})"


def _block(rng: random.Random, indent: int, depth: int = 0) -> list[str]:
    """Random statements at ``indent``: assignments, appends, loops, branches (nested up to 3 deep)."""
    pad = "    " * indent
    lines: list[str] = []
    for _ in range(rng.randint(1, 4 if depth else 6)):
        roll = rng.random()
        if depth < 3 and roll < 0.2:
            lines.append(f"{pad}for {rng.choice('ijk')} in range({_expr(rng)}):")
            lines.extend(_block(rng, indent + 1, depth + 1))
        elif depth < 3 and roll < 0.35:
            lines.append(f"{pad}if {_expr(rng)} {rng.choice(['<', '>', '==', '!='])} {_expr(rng)}:")
            lines.extend(_block(rng, indent + 1, depth + 1))
            if rng.random() < 0.5:
                lines.append(f"{pad}else:")
                lines.extend(_block(rng, indent + 1, depth + 1))
        elif depth < 3 and roll < 0.42:
            lines.append(f"{pad}while {rng.choice(_NAMES)} > {_expr(rng)}:")
            lines.extend(_block(rng, indent + 1, depth + 1))
        elif roll < 0.55:
            lines.append(f"{pad}{rng.choice(_NAMES)}.append({_expr(rng)})")
        elif roll < 0.62:
            lines.append(f"{pad}{rng.choice(_NAMES)}[{_expr(rng)}] = {_expr(rng)}")
        else:
            lines.append(f"{pad}{rng.choice(_NAMES)} {rng.choice(['=', '+=', '-=', '*='])} {_expr(rng)}")
    return lines


def program(rng: random.Random) -> str:
    """One synthetic reference: a function of a few arguments with a random body."""
    return "\n".join(
        ["def f(a, b, n):", "    xs, ys, d, acc, best = [], [], {}, 0, 0", *_block(rng, 1), "    return acc"]
    )


def near_copy(code: str, rng: random.Random) -> str:
    """``code`` with one simple statement rewritten: a collapsing generator's next proposal."""
    lines = code.split("\n")
    simple = [i for i, line in enumerate(lines[2:-1], 2) if not line.rstrip().endswith(":")]
    if not simple:
        return code
    i = rng.choice(simple)
    pad = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = f"{pad}{rng.choice(_NAMES)} = {_expr(rng)}"
    return "\n".join(lines)


def _programs(count: int, seed: int) -> Iterator[str]:
    for i in range(count):
        yield program(random.Random(f"{seed}:{i}"))


def worker(src: str, size: int, queries: int, seed: int, exact_check: bool) -> dict[str, Any]:
    """Measure one tree at one size, in this process (``src`` first on the path)."""
    sys.path.insert(0, src)
    import spade_llm.dedup as dedup
    from spade_llm import evaluator

    shaped = hasattr(dedup, "shape")  # this tree's gate compares shapes; the old one fingerprints

    def prepare(code: str) -> Any:
        fp = evaluator.task_fingerprint(code)
        return dedup.shape(fp) if shaped else fp

    def task(i: int) -> Any:
        return SimpleNamespace(task_id=f"t{i}", kind="induction", meta={})

    gate = dedup.Deduper(0.9)
    kept: list[str] = []  # a sample of the accepted programs, to copy near
    sample_every = max(1, size // 2000)
    fps_old: list[Any] = []
    started = time.process_time()
    for i, code in enumerate(_programs(size, seed)):
        fp = evaluator.task_fingerprint(code)
        gate.accept(task(i), dedup.shape(fp) if shaped else fp, "induction", None)
        if not shaped:
            fps_old.append(fp)
        if i % sample_every == 0:
            kept.append(code)
    build_ms = (time.process_time() - started) * 1000 / size

    rng = random.Random(f"{seed}:queries")
    candidates = [near_copy(rng.choice(kept), rng) if q % 2 else program(rng) for q in range(queries)]
    prepared = [prepare(code) for code in candidates]
    started = time.process_time()
    verdicts = [gate.duplicate("induction", fp, None) for fp in prepared]
    check_ms = (time.process_time() - started) * 1000 / queries

    new = [fp for fp, verdict in zip(prepared, verdicts, strict=True) if verdict is None]
    started = time.process_time()
    reads: list[float] = []
    for q, fp in enumerate(new):
        if shaped:
            gate.accept(task(size + q), fp, "induction", None)
            reads.append(1.0 - (gate.nearest_similarity(f"t{size + q}") or 0.0))
        else:
            reads.append(evaluator.novelty([fp], fps_old))
            fps_old.append(fp)
    novelty_ms = (time.process_time() - started) * 1000 / max(1, len(new))

    row: dict[str, Any] = {
        "size": size,
        "build_ms_per_task": round(build_ms, 3),
        "check_ms": round(check_ms, 3),
        "novelty_ms": round(novelty_ms, 3),
        "duplicates": sum(v is not None for v in verdicts),
        "queries": queries,
        "mean_novelty": round(sum(reads) / len(reads), 4) if reads else None,
    }
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # before the scan
    if shaped and exact_check:  # the same questions of a full scan: what the index's misses cost
        from spade_llm.nearest import ShapeIndex

        full = ShapeIndex(0.9, window=size + queries + 1)
        for i, code in enumerate(_programs(size, seed)):
            full.add(f"t{i}", "induction", prepare(code))
        differ = 0
        exact_reads: list[float] = []
        for fp, verdict in zip(prepared, verdicts, strict=True):
            near = full.nearest(fp, kind="induction")
            exact = f"{near.similarity:.0%} similar to {near.key}" if near and near.similarity >= 0.9 else None
            differ += exact != verdict
            if verdict is None:
                exact_reads.append(1.0 - (near.similarity if near else 0.0))
                full.add(f"t{size + len(exact_reads) - 1}", "induction", fp)
        gaps = [r - e for r, e in zip(reads, exact_reads, strict=True)]
        row["decisions_differing"] = differ
        row["novelty_gap_mean"] = round(sum(gaps) / len(gaps), 4) if gaps else 0.0
        row["novelty_gap_max"] = round(max(gaps), 4) if gaps else 0.0
        row["novelty_gap_min"] = round(min(gaps), 4) if gaps else 0.0
    return row


def _measure(src: Path, size: int, args: argparse.Namespace, exact_check: bool) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--worker", str(src), "--sizes", str(size), "--queries", str(args.queries)]
    argv += ["--seed", str(args.seed)] + (["--exact-check"] if exact_check else [])
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", type=Path, help="another source tree (holding spade_llm/) to measure beside")
    parser.add_argument("--baseline-max", type=int, default=50000, help="the largest size the baseline is asked")
    parser.add_argument("--exact-max", type=int, default=100000, help="the largest size checked against a full scan")
    parser.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_dedup.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--exact-check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        print(json.dumps(worker(args.worker, sizes[0], args.queries, args.seed, args.exact_check)))
        return 0
    rows: list[dict[str, Any]] = []
    header = f"{'tree':>9} {'accepted':>9} {'check ms':>9} {'novelty ms':>10} {'build ms':>9} {'dups':>5} "
    print(header + f"{'differ':>7} {'nov gap':>8} {'RSS MB':>7}")
    for size in sizes:
        trees = [("this", ROOT)] + (
            [("baseline", args.baseline)] if args.baseline and size <= args.baseline_max else []
        )
        for name, src in trees:
            row = {"tree": name, **_measure(src, size, args, name == "this" and size <= args.exact_max)}
            rows.append(row)
            differ = row.get("decisions_differing", "")
            gap = row.get("novelty_gap_mean", "")
            print(
                f"{name:>9} {size:>9,} {row['check_ms']:>9.3f} {row['novelty_ms']:>10.3f}"
                f" {row['build_ms_per_task']:>9.3f} {row['duplicates']:>5} {differ!s:>7} {gap!s:>8}"
                f" {row['peak_rss_mb']:>7.0f}",
                flush=True,
            )
    by = {(r["tree"], r["size"]): r for r in rows}
    first = sizes[0]
    for size in sizes[1:]:
        for name in ("this", "baseline"):
            if (name, size) in by and (name, first) in by:
                ratio = by[name, size]["check_ms"] / by[name, first]["check_ms"]
                print(f"{name}: check at {size:,} / at {first:,} = {ratio:.2f}x")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"queries": args.queries, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
