"""Judging throughput per answer language: compile time, run time and completions/s, against Python.

One problem (``tests/polyglot_programs.py``: count the pairs ``i < j`` with ``a[i] + a[j] == 0``), its
right answer in every language of ``TOOLCHAINS`` (Python's is written here, the same algorithm: one
pass with a hash map), judged on the same ``--tests`` stdin/stdout tests of ``--size`` integers each
(fixed seed), one answer at a time, in one sandbox. Each repeat takes the languages in turn (so the
machine's load falls on all alike) and, for each, a *fresh* answer text (the right answer plus a
comment naming the repeat, so the build cache, keyed by the answer's hash, cannot hide the compile):

* **compile**: ``compiled.build`` of that text, wall ms seen from the host (Python: none; its syntax
  check runs outside the sandbox and is part of the runs);
* **runs**: ``run_stdio_tests`` of the same text right after, so on the warm build: the tests' runs
  only, and their verdicts, which must all pass;
* **distinct/s**: completions judged per second when every answer is distinct, 1 / (compile + runs);
* **K=8/s**: completions per second when ``--k`` samples share one answer text (compiled once, judged
  ``--k`` times), K / (compile + K x runs), from the same repeat's two times.

Each figure is the median over ``--repeat`` repeats, and each language's beside Python's of the same run
(``x py``: its completions/s over Python's). A warm-up judgement per language (not counted) starts the
sandbox's workers and brings each compiler into the page cache first. A language whose toolchain the
sandbox does not have is a row saying so.

Measured on the 2-core VM (2026-12-06, load average 9 to 11 from others' test suites; ``--repeat 5``):
per distinct answer a compiled language judges 0.1x to 0.3x Python's completions/s (a compile costs
more than Python's whole judgement); with K=8 samples of one answer C++ matches Python, Rust and Go
reach 0.6x to 0.8x and 0.5x; Java and Node stay at 0.1x to 0.2x (a JVM's or V8's start on every
test). The table and its reading: docs/sandbox.md, "Answer languages: speed".

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_languages.json``).

    python benchmarks/bench_languages.py [--sandbox bwrap] [--repeat 3] [--tests 10] [--size 20000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade_llm.config import SandboxConfig  # noqa: E402
from spade_llm.errors import SandboxUnavailable  # noqa: E402
from spade_llm.languages import DEFAULT_ANSWER_LANGUAGE, TOOLCHAINS, get_toolchain  # noqa: E402
from spade_llm.sandbox.base import Limits, Sandbox  # noqa: E402
from spade_llm.sandbox.compiled import build  # noqa: E402
from spade_llm.sandbox.registry import get_sandbox  # noqa: E402
from spade_llm.sandbox.stdio import run_stdio_tests  # noqa: E402
from spade_llm.types import TestCase  # noqa: E402
from tests.polyglot_programs import RIGHT, case  # noqa: E402

PYTHON_RIGHT = """import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
seen = {}
pairs = 0
for x in map(int, data[1 : n + 1]):
    pairs += seen.get(-x, 0)
    seen[x] = seen.get(x, 0) + 1
print(pairs)
"""
"""The Python answer: the same one pass with a hash map as the other languages' ``RIGHT``."""

ANSWERS = {DEFAULT_ANSWER_LANGUAGE: PYTHON_RIGHT, **RIGHT}
COMMENT = {DEFAULT_ANSWER_LANGUAGE: "#"}
"""How a line comment starts, where not ``//``."""


def tests(count: int, size: int) -> list[TestCase]:
    """``count`` tests of ``size`` integers in -1000..1000, from a fixed seed."""
    rng = random.Random(40)
    return [case([rng.randint(-1000, 1000) for _ in range(size)]) for _ in range(count)]


def fresh(language: str, tag: str) -> str:
    """The language's right answer with a comment naming ``tag``: a text the build cache has not seen."""
    return f"{ANSWERS[language]}\n{COMMENT.get(language, '//')} bench {tag}\n"


def judge_once(
    box: Sandbox, language: str, code: str, cases: list[TestCase], limits: Limits, cpu_s: float
) -> dict[str, float]:
    """One answer judged: its compile (cold: ``code`` is new) then its runs on the warm build, in ms."""
    toolchain = get_toolchain(language)
    started = time.perf_counter()
    if not toolchain.in_harness:
        made = build(box, toolchain, code, limits)
        if not made.ok:
            raise RuntimeError(f"{language}: the right answer did not compile: {made.error}")
    compiled = time.perf_counter()
    result = run_stdio_tests(box, code, cases, limits, cpu_s, language=language)
    ran = time.perf_counter()
    if result.tests_passed != len(cases):
        failing = next(r for r in result.test_results or [] if not r.passed)
        raise RuntimeError(f"{language}: the right answer failed test {failing.index}: {failing.error}")
    return {"compile_ms": (compiled - started) * 1000, "runs_ms": (ran - compiled) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandbox", default="bwrap", help="bwrap, docker or subprocess")
    ap.add_argument("--languages", default=",".join(TOOLCHAINS), help="comma-separated (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tests", type=int, default=10)
    ap.add_argument("--size", type=int, default=20_000, help="integers per test")
    ap.add_argument("--k", type=int, default=8, help="samples sharing one answer text")
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_languages.json")
    args = ap.parse_args()
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    if DEFAULT_ANSWER_LANGUAGE not in languages:
        languages.insert(0, DEFAULT_ANSWER_LANGUAGE)  # the yardstick
    config = SandboxConfig(backend=args.sandbox)
    limits, cpu_s = config.limits(), config.test_timeout_s
    cases = tests(args.tests, args.size)
    box = get_sandbox(args.sandbox)
    times: dict[str, list[dict[str, float]]] = {name: [] for name in languages}
    missing: dict[str, str] = {}
    started = time.perf_counter()
    try:
        for name in languages:  # warm-up, not counted
            try:
                judge_once(box, name, fresh(name, "warm-up"), cases, limits, cpu_s)
            except SandboxUnavailable as e:
                missing[name] = str(e)
        for n in range(args.repeat):
            for name in languages:
                if name not in missing:
                    times[name].append(judge_once(box, name, fresh(name, f"{n}"), cases, limits, cpu_s))
    finally:
        box.close()
    elapsed = time.perf_counter() - started
    k = args.k
    rows: list[dict[str, Any]] = []
    for name in languages:
        if name in missing:
            rows.append({"language": name, "unavailable": missing[name]})
            continue
        seen = times[name]
        compile_ms = statistics.median(t["compile_ms"] for t in seen)
        runs_ms = statistics.median(t["runs_ms"] for t in seen)
        distinct = statistics.median(1000 / (t["compile_ms"] + t["runs_ms"]) for t in seen)
        shared = statistics.median(1000 * k / (t["compile_ms"] + k * t["runs_ms"]) for t in seen)
        rows.append({
            "language": name,
            "compile_ms": round(compile_ms, 1),
            "runs_ms": round(runs_ms, 1),
            "ms_per_test": round(runs_ms / len(cases), 2),
            "distinct_per_s": round(distinct, 3),
            f"k{k}_per_s": round(shared, 3),
        })  # fmt: skip
    python = next(r for r in rows if r["language"] == DEFAULT_ANSWER_LANGUAGE and "unavailable" not in r)
    for r in rows:
        if "unavailable" not in r:
            r["runs_x_py"] = round(r["runs_ms"] / python["runs_ms"], 2)
            r["distinct_x_py"] = round(r["distinct_per_s"] / python["distinct_per_s"], 3)
            r[f"k{k}_x_py"] = round(r[f"k{k}_per_s"] / python[f"k{k}_per_s"], 3)
    print(
        f"{'language':9} {'compile ms':>10} {'runs ms':>8} {'ms/test':>8} {'x py':>6} "
        f"{'distinct/s':>10} {'x py':>6} {f'K={k}/s':>8} {'x py':>6}"
    )
    for r in rows:
        if "unavailable" in r:
            print(f"{r['language']:9} unavailable: {r['unavailable'][:100]}")
            continue
        compile_text = "-" if get_toolchain(r["language"]).in_harness else f"{r['compile_ms']:.0f}"
        print(
            f"{r['language']:9} {compile_text:>10} {r['runs_ms']:>8.0f} {r['ms_per_test']:>8.1f} "
            f"{r['runs_x_py']:>6.2f} "
            f"{r['distinct_per_s']:>10.2f} {r['distinct_x_py']:>6.2f} {r[f'k{k}_per_s']:>8.2f} {r[f'k{k}_x_py']:>6.2f}"
        )
    result = {
        "sandbox": args.sandbox,
        "repeat": args.repeat,
        "tests": len(cases),
        "size": args.size,
        "k": k,
        "seconds": round(elapsed, 1),
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
