"""What cleaning text of lone surrogates costs where it runs on every answer and every record line.

``clean_text`` runs on every ``LLMResponse`` and every prompt message; ``json_loads`` on every JSONL line
the store and the report read. Measured per call, on the text a run has: ASCII, accented Latin, other
BMP text, emoji, and text holding lone surrogates (the only case that does work); and a trajectory line
read with ``json.loads`` against ``json_loads``, without and with an escaped lone surrogate. Prints a
table and writes JSON (``--json``, default ``runs/bench_text_clean.json``).

    python benchmarks/bench_text_clean.py [--size 4000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import timeit
from pathlib import Path
from typing import Any

from spade_llm._util.text import clean_text, json_loads


def per_call_us(*fns: Any, rounds: int = 15, budget_s: float = 0.02) -> list[float]:
    """Microseconds per call of each of ``fns``: the best of ``rounds`` interleaved rounds, so a busy
    machine slows every contender alike."""
    timers = [timeit.Timer(fn) for fn in fns]
    numbers = [max(1, int(budget_s / max(t.timeit(1), 1e-7))) for t in timers]
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (timer, number) in enumerate(zip(timers, numbers, strict=True)):
            best[i] = min(best[i], timer.timeit(number) / number)
    return [b * 1e6 for b in best]


def trajectory_line(size: int, lone: bool) -> bytes:
    code = "def f(xs):\n    return sorted(set(xs))\n" * max(1, size // 200)
    message = {"role": "assistant", "content": "Here is the function:\n```python\n" + code + "```\n"}
    if lone:
        message["content"] += "\ud800"
    record = {
        "trajectory_id": "e0-abc-0",
        "task_id": "e0-abc",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Sort it. " * 20},
            message,
        ],
        "attempts": [
            {"turn": 1, "code": code, "result": {"status": "ok", "stdout": "", "stderr": "", "tests": [1] * 8}}
        ],
        "final_status": "passed",
        "reward": 1.0,
    }
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) if not lone else json.dumps(record)).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4000, help="characters of text per call")
    parser.add_argument("--json", type=Path, default=Path("runs/bench_text_clean.json"))
    args = parser.parse_args()
    n = args.size
    texts = {
        "ascii": "x = 1  # a comment\n" * (n // 19),
        "latin (é)": ("café déjà " * (n // 10)),
        "bmp (€, 中)": ("价格 €5 " * (n // 6)),
        "emoji": ("ok 😀 " * (n // 5)),
        "lone surrogates": ("x\ud800 " * (n // 3)),
    }
    rows: list[dict[str, Any]] = []
    for name, text in texts.items():
        (us,) = per_call_us(lambda t=text: clean_text(t))
        rows.append({"what": f"clean_text {name}", "chars": len(text), "us": us})
    for lone in (False, True):
        line = trajectory_line(n, lone)
        label = "with a lone surrogate" if lone else "plain"
        base, ours = per_call_us(lambda b=line: json.loads(b), lambda b=line: json_loads(b))
        rows.append({"what": f"json.loads line ({label})", "chars": len(line), "us": base})
        rows.append(
            {"what": f"json_loads line ({label})", "chars": len(line), "us": ours, "vs_json_loads": ours / base}
        )
    print(f"{'what':44} {'chars':>8} {'us/call':>10} {'x json.loads':>13}")
    for r in rows:
        ratio = f"{r['vs_json_loads']:.2f}" if "vs_json_loads" in r else ""
        print(f"{r['what']:44} {r['chars']:>8} {r['us']:>10.2f} {ratio:>13}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"size": n, "rows": rows}, indent=2) + "\n")
    print(f"-> {args.json}")


if __name__ == "__main__":
    main()
