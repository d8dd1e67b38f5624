"""``spade evaluate`` on a whole-program task with samples in every compiled answer language, on every isolating
backend: right answers pass, wrong ones fail, quadratic ones time out on the large test, ones that do not
compile fail every test; each row names its language, and both backends give the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from languages_available import require
from polyglot_programs import BROKEN, RIGHT, SLOW, WRONG, sample_tests
from sandbox_backends import unavailable

from spade_llm.cli import main

REFERENCE = (
    "import sys\nfrom collections import Counter\n"
    "data = sys.stdin.read().split()\nn = int(data[0])\nseen = Counter()\npairs = 0\n"
    "for x in map(int, data[1 : n + 1]):\n    pairs += seen[-x]\n    seen[x] += 1\nprint(pairs)\n"
)
FLAVOURS = {"right": ("passed", 3), "wrong": ("failed", 0), "slow": ("timeout", 2), "broken": ("error", 0)}


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_evaluate_judges_samples_in_every_language(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = unavailable(backend)
    if reason is not None:
        pytest.skip(f"{backend}: {reason}")
    for language in RIGHT:
        require(language)
    task = {
        "task_id": "zero_sum_pairs", "kind": "program", "entry_point": "", "reference_code": REFERENCE,
        "description": "Read n, then n integers; print how many pairs i < j have a[i] + a[j] == 0.",
        "tests": [t.model_dump() for t in sample_tests()], "time_limit_s": 1.0,
    }  # fmt: skip
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    asked = [
        (language, flavour, {"right": RIGHT, "wrong": WRONG, "slow": SLOW}[flavour][language])
        if flavour != "broken"
        else (language, flavour, BROKEN[language][0])
        for language in RIGHT
        for flavour in FLAVOURS
    ]
    lines = [json.dumps({"task_id": "zero_sum_pairs", "code": code, "language": lang}) for lang, _, code in asked]
    (tmp_path / "samples.jsonl").write_text("\n".join(lines) + "\n")
    code = main([
        "evaluate", str(tmp_path / "tasks.jsonl"), "--samples", str(tmp_path / "samples.jsonl"),
        "--sandbox", backend,
    ])  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(r["language"], r["status"], r["tests_passed"]) for r in rows] == [
        (language, *FLAVOURS[flavour]) for language, flavour, _ in asked
    ]


def test_the_configs_compile_timeout_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sandbox.compile_timeout_s`` is the compile's wall limit: past it the answer fails every test."""
    reason = unavailable("bwrap")
    if reason is not None:
        pytest.skip(f"bwrap: {reason}")
    require("cpp")
    task = {
        "task_id": "zero_sum_pairs", "kind": "program", "entry_point": "", "reference_code": REFERENCE,
        "description": "Read n, then n integers; print how many pairs i < j have a[i] + a[j] == 0.",
        "tests": [t.model_dump() for t in sample_tests(large=10)],
    }  # fmt: skip
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    sample = {"task_id": "zero_sum_pairs", "code": RIGHT["cpp"] + "// timed\n", "language": "cpp"}
    (tmp_path / "samples.jsonl").write_text(json.dumps(sample) + "\n")
    (tmp_path / "run.yaml").write_text("sandbox:\n  compile_timeout_s: 0.05\n")
    args = [
        "evaluate",
        str(tmp_path / "tasks.jsonl"),
        "--samples",
        str(tmp_path / "samples.jsonl"),
        "--sandbox",
        "bwrap",
    ]
    assert main([*args, "--config", str(tmp_path / "run.yaml")]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert (row["status"], row["tests_passed"]) == ("error", 0)
    assert main(args) == 0  # the default limit: the same answer compiles, not held back by the cut compile
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert (row["status"], row["tests_passed"]) == ("passed", 3)
