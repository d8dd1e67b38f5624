"""What the secret rule (``spade_llm._util.redact``) costs where text leaves the process: CPU seconds per MB.

Measured on a fake run's own records (code, hidden tests, prompts, answers: what ``RunDir.append``
masks at the run's rate, with our known secrets only: ``redact_record``; and with the whole rule, as
a log line holding them would be), on a training log (what the trainer step's output goes through, a
line at a time), and on the worst text for the rule (every line a key word, an assignment or a URL),
each with no known secret in the environment and with 6 (the usual few keys). Then the **worst
inputs**: one start of a pattern repeated (``"sk-" * n``, ``"key=" * n``, repeated ``-----BEGIN
PRIVATE KEY-----`` lines...), at two sizes (``--worst-kb``): linear cost keeps ms/MB the same at both
(issue 35's first round took 2.7 s for 0.15 MB of ``sk-`` and 43 s for 0.6 MB). Prints a
table and writes JSON (``--json``, default ``runs/bench_redact.json``). CPU time, best of
``--repeat``: the numbers do not follow the machine's load.

    python benchmarks/bench_redact.py [--repeat 5] [--worst-kb 150,600] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECRETS = [
    "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
    "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456",
    "AWSsecret/0123456789abcdefXYZ+abcdefghij",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "hunter2-a-long-database-password",
    "tok-SECRET-6d1f9a2b3c4d5e6f",
]


def fake_run(folder: Path) -> list[dict[str, Any]]:
    """The records of a small fake run of the three kinds (every journal)."""
    from spade_llm.cli.app import main

    config = folder / "kinds.yaml"
    config.write_text("curriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n")
    out = folder / "run"
    argv = ["run", "--config", str(config), "--epochs", "3", "--tasks-per-epoch", "8", "--samples-per-task", "2"]
    assert main([*argv, "--sandbox", "subprocess", "--out", str(out), "--quiet"]) == 0
    return [json.loads(line) for path in sorted(out.glob("*.jsonl")) for line in path.read_text().splitlines()]


def training_log(lines: int = 20000) -> str:
    rows = []
    for i in range(lines):
        rows.append(
            f"{{'loss': {0.5 / (i + 1):.4f}, 'grad_norm': 1.23, 'learning_rate': 2e-05, 'epoch': {i / lines:.2f}}}"
            if i % 3
            else f"[rank0] step {i}/{lines} tokens/s 1234.5 eos_token_id=151645 saving to out/checkpoint-{i}"
        )
    return "\n".join(rows) + "\n"


def worst_text(lines: int = 20000) -> str:
    return "".join(
        f"api_key_{i} = os.environ['KEY_{i}']; token={i}; url=https://h{i}.example/p?page={i}&key=abc Bearer x\n"
        for i in range(lines)
    )


WORST_UNITS = [
    "sk-",
    "sk-ant-",
    "xoxb-",
    "glpat-",
    "eyJ",
    "key=",
    "?token=",
    "api_key: ",
    "--api-key ",
    "Bearer ",
    "Basic ",
    "-----BEGIN PRIVATE KEY-----",
    "https://hooks.slack.com/services/",
]
"""One start of a pattern, repeated: what made a rule that tries every start match the rest of the text
from each (``worst_rows``)."""


def worst_rows(sizes_kb: list[int], repeat: int) -> list[dict[str, Any]]:
    """ms/MB of each ``WORST_UNITS`` text at each size, with the 6 known secrets (one repeat past 1 s)."""
    from spade_llm._util.redact import Redactor

    redactor = Redactor(SECRETS)
    rows = []
    for unit in WORST_UNITS:
        for kb in sizes_kb:
            text = unit * (kb * 1000 // len(unit))

            def once(t: str = text) -> None:
                redactor.text(t)

            seconds = cpu_best(once, 1)
            if seconds < 1.0:
                seconds = min(seconds, cpu_best(once, repeat - 1 or 1))
            mb = len(text) / 1e6
            rows.append(
                {
                    "text": f"worst: {unit.strip()!r} x {len(text) // len(unit)}",
                    "known_secrets": len(SECRETS),
                    "mb": round(mb, 3),
                    "cpu_s": round(seconds, 3),
                    "cpu_ms_per_mb": round(seconds / mb * 1000, 1),
                    "mb_per_cpu_s": round(mb / seconds, 1) if seconds else float("inf"),
                }
            )
    return rows


def cpu_best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "runs" / "bench_redact.json"))
    ap.add_argument("--worst-kb", default="150,600", help="sizes of the worst inputs, in KB (comma-separated)")
    args = ap.parse_args()
    from spade_llm._util.redact import Redactor, StreamRedactor

    with tempfile.TemporaryDirectory() as tmp:
        records = fake_run(Path(tmp))
    record_mb = sum(len(json.dumps(r, ensure_ascii=False)) for r in records) / 1e6
    log, worst = training_log(), worst_text()
    rows: list[dict[str, Any]] = []
    for known in (0, len(SECRETS)):
        redactor = Redactor(SECRETS[:known])

        def records_pass(r: Redactor = redactor) -> None:
            for record in records:
                r.data(record)

        def known_pass(r: Redactor = redactor) -> None:
            for record in records:
                r.data(record, patterns=False)

        def dumps_pass() -> None:
            for record in records:
                json.dumps(record, ensure_ascii=False)

        def log_pass(r: Redactor = redactor) -> None:
            stream = StreamRedactor(redactor=r)
            for line in log.splitlines(keepends=True):
                stream.feed(line)
            stream.close()

        def worst_pass(r: Redactor = redactor) -> None:
            r.text(worst)

        for what, fn, mb in [
            (f"records ({len(records)}), known only (journals)", known_pass, record_mb),
            (f"records ({len(records)}), whole rule", records_pass, record_mb),
            ("records, json.dumps alone (for scale)", dumps_pass, record_mb),
            ("training log, a line per read", log_pass, len(log) / 1e6),
            ("worst case: key words, URLs", worst_pass, len(worst) / 1e6),
        ]:
            seconds = cpu_best(fn, args.repeat)
            rows.append(
                {
                    "text": what,
                    "known_secrets": known,
                    "mb": round(mb, 3),
                    "cpu_ms_per_mb": round(seconds / mb * 1000, 1),
                    "mb_per_cpu_s": round(mb / seconds, 1),
                }
            )
    rows += worst_rows([int(kb) for kb in args.worst_kb.split(",") if kb.strip()], args.repeat)
    print(f"{'text':46s} {'known':>5s} {'MB':>7s} {'ms/MB':>9s} {'MB/s':>7s}")
    for row in rows:
        print(
            f"{row['text']:46s} {row['known_secrets']:>5d} {row['mb']:>7.3f}"
            f" {row['cpu_ms_per_mb']:>9.1f} {row['mb_per_cpu_s']:>7.1f}"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"rows": rows, "python": sys.version.split()[0]}, indent=1) + "\n")
    print(f"-> {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
