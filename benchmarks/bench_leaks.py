"""The leak detector's speed and reach: ``spade_llm.leaks.find_leaks`` on honest tasks and on texts built to be slow.

Measured, for this tree's detector and (``--against FILE``) another ``leaks.py`` side by side:

* **typical**: milliseconds per task, over the fake generator's tasks (``--fake``, default 40 of each
  kind, every test but the first a secret) and HumanEval's 164 docstrings (every assert a secret),
  with how many of them are flagged (the fake's must be 0; HumanEval's are the asserts its docstrings
  show, which ``spade import`` makes public);
* **adversarial**: milliseconds for about 100 kB of text repeating a connector, a value and the
  arguments' digits so that every form is tried everywhere (what a hostile proposal can make the gate
  read), with 11 secrets; the answer each text should get is checked;
* **phrasings**: how many of the test table's phrasings (``tests/test_leaks.py``: ``PHRASED``) each
  detector finds.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_leaks.json``).

    python benchmarks/bench_leaks.py [--against OLD/leaks.py] [--fake 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from spade_llm import leaks  # noqa: E402
from spade_llm.sandbox.runner import parse_input  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"
Case = tuple[dict[str, str], list[tuple[int, Any, Any]]]
"""Shown texts, and the secrets as (index, args, expected)."""

ADVERSARIAL: dict[str, tuple[str, bool]] = {
    # name: (text, whether a secret shows)
    "arrows": ("0 -> 0 " * 20_000, False),
    "calls": ("g(2) returns 0 " * 10_000, True),
    "calls-miss": ("g(12) returns 0 " * 9_000, False),
    "table": ("| 2 | 1 " * 20_000, False),
    "doctests": (">>> g(3)\n0\n" * 10_000, False),
    "blanks": ("f(2)" + " " * 100_000 + "-> 0", True),
    "brackets": ("[" * 5_000 + "0" + "]" * 5_000, False),
    "last-of-many": ("2 " * 50_000 + "2 -> 0", True),
    "near-values": ("f(3) -> 0, 2 " * 8_000, False),
    "noun": ("the value for 12 is 0 " * 5_000, False),
    "keyed": ("a=12: b=2 2: 0: " * 6_000, False),
    "chain": ("f(12) = 1 + 1 = 0 " * 6_000, False),
    "after": ("returns 0 for 12 or 2x " * 5_000, False),
    "op": ("2 + 12 = 0 " * 9_000, False),
    "io": ("Input: 12 Output: 0 for 2x " * 3_500, False),
    "maps": ("maps 12 to 0 and 2x " * 5_000, False),
    "near-parted": ("[4, 1, 3] 5 0 " * 7_000, False),
    "near-far": (("[4, 1, 3]" + " x" * 31 + " [1, 3, 4] ") * 1_300, False),
}


def load(path: str | None) -> ModuleType:
    if path is None:
        return leaks
    spec = importlib.util.spec_from_file_location("leaks_against", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["leaks_against"] = module
    spec.loader.exec_module(module)
    return module


def secrets(module: ModuleType, raw: list[tuple[int, Any, Any]]) -> list[Any]:
    return [module.Secret(i, args, exp) for i, args, exp in raw]


def fake_cases(per_kind: int) -> list[Case]:
    """The fake generator's tasks, every expected value filled by running the reference in-process."""
    from spade_llm.fake.model import FakeLLM
    from spade_llm.fake.running import run_in_process
    from spade_llm.generator import LLMGenerator, ProposalContext
    from spade_llm.sandbox.verdict import to_json
    from spade_llm.templates import Prompts

    generator = LLMGenerator(FakeLLM("default"), Prompts(), temperature=1.0, max_tokens=4096)
    cases: list[Case] = []
    for kind in ("induction", "deduction", "abduction"):
        made, r = 0, 0
        while made < per_kind:
            ctx = ProposalContext(
                epoch=r // 8, request_index=r % 8, n=4, difficulty=[0.2, 0.4, 0.6, 0.8][r % 4], capability=0.5,
                examples=[], avoid_tags=[], seed=1000 + r, kind=kind, run_seed=7,
            )  # fmt: skip
            r += 1
            for c in asyncio.run(generator.propose(ctx)).candidates:
                if c.task is None or made >= per_kind:
                    continue
                args = [parse_input(t.input) for t in c.task.tests]
                calls = run_in_process(
                    c.task.reference_code, c.task.entry_point, [a for a in args if isinstance(a, tuple)]
                )
                raw = [
                    (i, a, t.expected if t.has_expected else to_json(o.value))
                    for i, (t, a, o) in enumerate(zip(c.task.tests, args, calls, strict=True))
                    if i > 0 and isinstance(a, tuple)
                ]
                cases.append(({"description": c.task.description}, raw))
                made += 1
    return cases


def humaneval_cases() -> list[Case]:
    from spade_llm.tasksets.importers import import_humaneval

    if not DATA.exists():
        return []
    cases: list[Case] = []
    for task in import_humaneval(DATA):
        raw = [(i, parse_input(t.input), t.expected) for i, t in enumerate(task.tests) if t.has_expected]
        cases.append(({"docstring": task.description}, [(i, a, e) for i, a, e in raw if isinstance(a, tuple)]))
    return cases


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def measure(module: ModuleType, fake: list[Case], humaneval: list[Case], repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, cases in (("fake", fake), ("humaneval", humaneval)):
        prepared = [(shown, secrets(module, raw)) for shown, raw in cases]
        flagged = [module.find_leaks(shown, s) for shown, s in prepared]
        ms = best_ms(lambda p=prepared: [module.find_leaks(shown, s) for shown, s in p], repeat)  # type: ignore[misc]
        out[f"{name}_tasks"] = len(prepared)
        out[f"{name}_flagged_tasks"] = sum(bool(f) for f in flagged)
        out[f"{name}_flagged_tests"] = sum(len(f) for f in flagged)
        out[f"{name}_ms_per_task"] = round(ms / max(1, len(prepared)), 3)
    raw = [(i, (2,), 0) for i in range(8)] + [(8, ([4, 1, 3],), [1, 3, 4]), (9, ([4, 1, 3],), 0), (10, (2, 2), 0)]
    hostile = secrets(module, raw)
    out["adversarial_ms"] = {}
    out["adversarial_wrong"] = []
    for name, (text, shows) in ADVERSARIAL.items():
        if bool(module.find_leaks({"description": text}, hostile)) is not shows:
            out["adversarial_wrong"].append(name)
        out["adversarial_ms"][name] = round(best_ms(lambda t=text: module.find_leaks({"d": t}, hostile), repeat), 1)  # type: ignore[misc]
    out["adversarial_ms_max"] = max(out["adversarial_ms"].values())
    try:
        from test_leaks import PHRASED
    except ImportError:
        PHRASED = []
    found = sum(bool(module.find_leaks({"d": text}, [module.Secret(0, *case)])) for text, case, _form in PHRASED)
    out["phrasings_found"] = f"{found}/{len(PHRASED)}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", help="another leaks.py to measure beside this tree's")
    parser.add_argument("--fake", type=int, default=40, help="fake tasks of each kind")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measure (the best is kept)")
    parser.add_argument("--json", default=str(ROOT / "runs" / "bench_leaks.json"))
    args = parser.parse_args()
    fake, humaneval = fake_cases(args.fake), humaneval_cases()
    results = {"this": measure(leaks, fake, humaneval, args.repeat)}
    if args.against:
        results["against"] = measure(load(args.against), fake, humaneval, args.repeat)
    names = list(results)
    rows = [k for k in results["this"] if k != "adversarial_ms"]
    print(f"{'figure':28}" + "".join(f"{n:>14}" for n in names))
    for key in rows:
        print(f"{key:28}" + "".join(f"{results[n][key]!s:>14}" for n in names))
    for key in results["this"]["adversarial_ms"]:
        print(f"  ms {key:23}" + "".join(f"{results[n]['adversarial_ms'][key]:>14}" for n in names))
    line = json.dumps(results)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(line + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()
