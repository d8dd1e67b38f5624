"""Imported contest problems judged (issue 38): on CodeContests and LiveCodeBench a program printing the
expected output passes, also with trailing spaces and without the final newline; one with a wrong line,
a non-zero exit or nothing printed fails. A judge-only task (no usable reference) is solved and
evaluated on its samples; ``verify`` says ``no_reference`` and ``evaluate`` without samples leaves it out.

Programs run in the subprocess sandbox (``--sandbox subprocess``, the ``sandbox`` fixture); all are benign.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from contest_rows import codecontests_row, io_set, lcb_cases, lcb_row, leetcode_row, packed, write_jsonl

from spade_llm.checking import CodeChecker
from spade_llm.cli.app import main
from spade_llm.config import SandboxConfig
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.judge import Judge
from spade_llm.llm.base import LLMRequest
from spade_llm.sandbox.base import Limits
from spade_llm.solver import LLMSolver
from spade_llm.tasksets.contests import import_file
from spade_llm.templates import Prompts

# the problem: n, then n integers; print their sum, then their largest, one per line
PAIRS = [("2\n1 2\n", "3\n2\n"), ("3\n1 2 3\n", "6\n3\n"), ("1\n5\n", "5\n5\n"), ("2\n10 -20\n", "-10\n10\n")]
READ = "n = int(input())\nxs = list(map(int, input().split()))[:n]\n"
SAMPLES = {
    "right": READ + "print(sum(xs))\nprint(max(xs))\n",
    "trailing spaces, no final newline": READ + "import sys\nsys.stdout.write(f'{sum(xs)}   \\n{max(xs)}\\t ')\n",
    "a wrong line": READ + "print(sum(xs))\nprint(min(xs))\n",
    "a non-zero exit": READ + "print(sum(xs))\nprint(max(xs))\nraise SystemExit(3)\n",
    "nothing printed": READ,
}
PASSES = {"right": True, "trailing spaces, no final newline": True}
REFERENCE = SAMPLES["right"]


def rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cc = codecontests_row(
        "1_A. Sum and max",
        public_tests=io_set(PAIRS[:1]),
        private_tests=io_set(PAIRS[1:3]),
        generated_tests=io_set(PAIRS[3:]),
        solutions={"language": [3], "solution": [REFERENCE]},
        incorrect_solutions={"language": [3, 3], "solution": [SAMPLES["a wrong line"], SAMPLES["nothing printed"]]},
        time_limit={"seconds": 1, "nanos": 0},
    )
    lcb = lcb_row(
        "abc301_a",
        public_test_cases=json.dumps(lcb_cases(PAIRS[:1])),
        private=packed(json.dumps(lcb_cases(PAIRS[1:]))),
    )
    return [cc], [lcb]


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    """Both benchmarks imported by the command into one tasks file."""
    cc, lcb = rows()
    out = tmp_path / "tasks.jsonl"
    lines = []
    for fmt, rows_of in (("codecontests", cc), ("lcb", lcb)):
        assert main(["import", fmt, str(write_jsonl(tmp_path / f"{fmt}.jsonl", rows_of)), "-o", str(out)]) == 0
        lines.append(out.read_text())
    out.write_text("".join(lines))
    return out


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    code = main([*argv, "--sandbox", "subprocess", "--concurrency", "2"])
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if line.strip() and "not a security boundary" not in line]
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")], said


def test_a_program_printing_the_expected_output_passes_and_wrong_ones_fail(imported, tmp_path, capsys):
    ids = ["codecontests/1_A. Sum and max", "livecodebench/abc301_a"]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": i, "code": c}) + "\n" for i in ids for c in SAMPLES.values()))
    code, judged, _ = run(capsys, "evaluate", str(imported), "--samples", str(samples))
    assert code == 0
    asked = [(task_id, name) for task_id in ids for name in SAMPLES]
    verdicts = dict(zip(asked, judged, strict=True))
    for task_id in ids:
        for name in SAMPLES:
            row = verdicts[(task_id, name)]
            assert row["task_id"] == task_id
            assert row["passed"] is PASSES.get(name, False), (task_id, name, row)
            assert row["tests_total"] == 4
        assert verdicts[(task_id, "a non-zero exit")]["tests_passed"] == 0  # every output right, every exit not
        assert verdicts[(task_id, "a wrong line")]["tests_passed"] == 1  # where the min is the max
        assert verdicts[(task_id, "nothing printed")]["tests_passed"] == 0


def test_the_known_wrong_answers_a_row_keeps_fail_its_tests(imported, tmp_path, capsys):
    (cc,), _ = import_file("codecontests", write_jsonl(tmp_path / "cc.jsonl", rows()[0]))
    wrong = cc.meta["incorrect_solutions"]
    samples = tmp_path / "wrong.jsonl"
    samples.write_text("".join(json.dumps({"task_id": cc.task_id, "code": c}) + "\n" for c in wrong))
    _, judged, _ = run(capsys, "evaluate", str(imported), "--samples", str(samples))
    assert [r["passed"] for r in judged] == [False, False]


def test_evaluate_judges_the_references_and_leaves_judge_only_tasks_out_saying_so(imported, capsys):
    code, judged, said = run(capsys, "evaluate", str(imported))
    assert code == 0 and [(r["task_id"], r["passed"]) for r in judged] == [("codecontests/1_A. Sum and max", True)]
    assert any("1 of 2 tasks are judge-only" in line and "livecodebench/abc301_a" in line for line in said)


def test_evaluate_of_judge_only_tasks_alone_asks_for_samples(tmp_path, capsys):
    source = write_jsonl(tmp_path / "lcb.jsonl", rows()[1])
    out = tmp_path / "tasks.jsonl"
    assert main(["import", "lcb", str(source), "-o", str(out)]) == 0
    capsys.readouterr()
    code, judged, said = run(capsys, "evaluate", str(out))
    assert code == 2 and judged == []
    assert len(said) == 1 and "judge-only" in said[0] and "--samples" in said[0]


def test_verify_proves_a_reference_and_says_no_reference_for_a_judge_only_task(imported, capsys):
    code, reports, _ = run(capsys, "verify", str(imported))
    assert code == 0
    assert [(r["task_id"], r["valid"], r["reason"]) for r in reports] == [
        ("codecontests/1_A. Sum and max", True, None),
        ("livecodebench/abc301_a", False, "no_reference"),
    ]
    assert "judge-only" in reports[1]["detail"]


async def test_a_solver_solves_a_judge_only_task_on_its_tests(sandbox, tmp_path):
    (task,), _ = import_file("lcb", write_jsonl(tmp_path / "lcb.jsonl", rows()[1]))
    assert task.judge_only
    answers = iter([f"```python\n{SAMPLES['a wrong line']}```", f"```python\n{REFERENCE}```"])

    def answer(request: LLMRequest) -> str:
        return next(answers)

    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    checker = CodeChecker(sandbox, config, concurrency=1)
    solver = LLMSolver(
        FunctionLLM(answer), Prompts(), checker.check_answer, seed=0, max_turns=2, public_tests=3,
        temperature=0.0, max_tokens=200,
    )  # fmt: skip
    trajectory = await solver.solve(task, epoch=0)
    assert [a.result.tests_passed for a in trajectory.attempts] == [0, 4] and trajectory.final_status == "passed"


# -- LiveCodeBench's functional (LeetCode) problems -------------------------------------------------------

# leetcode_row's tests: isEmpty([]) is True; isEmpty([1, 2], "a\n") is [False, 2.5]
METHOD = "class Solution:\n    def isEmpty(self, xs: List[int], s: Optional[str] = None) -> Any:\n"
LEETCODE_SAMPLES = {
    # List, Optional and Any come from LiveCodeBench's prelude, as its harness gives them; a tuple is a list
    "right": METHOD + "        return True if not xs else (False, len(xs) + len(s) / 4)\n",
    "right by ==": METHOD + "        return 1 if not xs else [0, 2.5]\n",  # LiveCodeBench's ==: 1 is True
    "a wrong value": METHOD + "        return True if not xs else [False, 2.0]\n",
    "a set": METHOD + "        return True if not xs else {False, 2.5}\n",  # == a list never
    "no class": "def isEmpty(xs, s=None):\n    return True if not xs else [False, 2.5]\n",
    "no method": "class Solution:\n    def is_empty(self, xs, s=None):\n        return True\n",
}
LEETCODE_PASSES = {"right": True, "right by ==": True}


def test_a_leetcode_answer_is_judged_as_livecodebench_judges_it(tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    assert main(["import", "lcb", str(write_jsonl(tmp_path / "lcb.jsonl", [leetcode_row()])), "-o", str(out)]) == 0
    samples = tmp_path / "samples.jsonl"
    rows = [{"task_id": "livecodebench/2727", "code": code} for code in LEETCODE_SAMPLES.values()]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, judged, _ = run(capsys, "evaluate", str(out), "--samples", str(samples))
    assert code == 0
    verdicts = dict(zip(LEETCODE_SAMPLES, judged, strict=True))
    for name, row in verdicts.items():
        assert row["passed"] is LEETCODE_PASSES.get(name, False), (name, row)
    assert verdicts["a wrong value"]["tests_passed"] == 1 and verdicts["a wrong value"]["status"] == "failed"
    for name in ("no class", "no method"):
        assert verdicts[name]["status"] == "error" and verdicts[name]["tests_passed"] == 0


@pytest.mark.parametrize(
    ("name", "fragment"), [("no class", "class 'Solution' is not defined"), ("no method", "has no method 'isEmpty'")]
)
def test_an_answer_without_the_class_or_its_method_says_so(sandbox, tmp_path, name, fragment):
    (task,), _ = import_file("lcb", write_jsonl(tmp_path / "lcb.jsonl", [leetcode_row()]))
    result = Judge(sandbox, Limits(timeout_s=5.0, memory_mb=512, output_limit_bytes=1 << 16))(
        task, LEETCODE_SAMPLES[name]
    )
    assert result.status == "error" and fragment in (result.load_error or "")
    assert all(r.status == "error" for r in result.test_results or [])
