"""``spade run --kinds program`` with ``curriculum.languages: {cpp: 1, python: 1}`` on the fake model, end to
end (issue 40): episodes asked in both languages, recorded so, exported with the language in every row, judged
again by ``spade evaluate`` in their language, and scored by the trainers' reward in the row's language."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import run_backend

from spade_llm.cli.app import main
from spade_llm.export.solver_rows import ExportFilters, export_run
from spade_llm.rewards.code import CodeReward, Rewarder
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.store import read_run
from spade_llm.types import Task, TestCase

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = [
    pytest.mark.xdist_group("e2e.test_answer_languages_run"),
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (the cpp toolchain)"),
]

SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
SUM_CPP = (
    '#include <cstdio>\nint main() { int n; long long s = 0, x; scanf("%d", &n);\n'
    '  for (int i = 0; i < n; i++) { scanf("%lld", &x); s += x; }\n  printf("%lld\\n", s); }\n'
)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("languages")
    config = root / "config.yaml"
    config.write_text("curriculum:\n  kinds: [program]\n  languages: {cpp: 1, python: 1}\n")
    out = root / "run"
    # seed 1: the fake proposes two of the problems its polyglot module answers in C++ (fake/polyglot.py)
    code = main(
        ["run", "--config", str(config), "--model", "fake/default", "--epochs", "1", "--tasks-per-epoch", "8",
         "--samples-per-task", "2", "--sandbox", run_backend(), "--seed", "1", "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0
    return out


@pytest.mark.slow  # the fake run
def test_the_run_records_episodes_and_attempts_in_both_languages(run_dir: Path) -> None:
    records = read_run(run_dir)
    assert records.tasks and all(t.kind == "program" for t in records.tasks)
    by_task: dict[str, list[str]] = {}
    for trajectory in records.trajectories:
        by_task.setdefault(trajectory.task_id, []).append(trajectory.language)
        assert trajectory.attempts and {a.language for a in trajectory.attempts} == {trajectory.language}
        asked = trajectory.messages[1].content
        label = "C++17" if trajectory.language == "cpp" else "Python"
        assert f"Write a complete {label} program that reads its input from standard input" in asked
    assert all(sorted(langs) == ["cpp", "python"] for langs in by_task.values())  # two samples: one of each
    cpp = [t for t in records.trajectories if t.language == "cpp"]
    assert any(t.final_status == "passed" for t in cpp)  # the fake answers C++ when asked (fake/polyglot.py)
    broken = [a for t in cpp for a in t.attempts if a.result.load_error]
    # a compile error is a failed attempt whose stderr names the line (the repair prompt shows it)
    assert broken and all(re.search(r"main\.cpp:\d+", a.result.stderr) and a.result.tests_passed == 0 for a in broken)


@pytest.mark.slow  # the fake run
@pytest.mark.parametrize("fmt", ["sft", "dpo", "grpo", "verl"])
def test_every_exported_row_carries_its_language(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    if fmt == "verl":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"{fmt}.out"
    export_run(run_dir, fmt, out, ExportFilters())
    if fmt == "verl":
        import pyarrow.parquet as pq

        exported = [{**r, **r["extra_info"]} for r in pq.read_table(str(out)).to_pylist()]
    else:
        exported = rows(out)
    assert all(r["language"] in ("cpp", "python") for r in exported), exported[:1]
    if fmt in ("grpo", "verl"):  # one row per task and language, each asking in it, its truth carrying it
        assert {r["language"] for r in exported} == {"cpp", "python"}
        for r in exported:
            truth = json.loads(r["ground_truth"] if fmt == "grpo" else r["reward_model"]["ground_truth"])
            assert truth.get("language") == (None if r["language"] == "python" else "cpp")
            label = "C++17" if r["language"] == "cpp" else "Python"
            assert f"Write a complete {label} program" in r["prompt"][1]["content"]
    if fmt == "sft":
        assert {r["language"] for r in exported} == {"cpp", "python"}


@pytest.mark.slow  # the fake run
def test_sandbox_fusion_rows_leave_the_other_languages_out(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    result = export_run(run_dir, "verl", tmp_path / "sf.parquet", ExportFilters(), verl_reward="sandbox_fusion")
    assert "asked in another language than Python" in result.describe()


@pytest.mark.slow  # the fake run
def test_evaluate_judges_a_runs_episodes_in_their_language(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate", str(run_dir / "tasks.jsonl"), "--samples", str(run_dir), "--sandbox", run_backend()])
    assert code == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    recorded = {(t.task_id, t.language): t.final_status == "passed" for t in read_run(run_dir).trajectories}
    assert {(r["task_id"], r["language"]) for r in printed} == set(recorded)
    for r in printed:  # the same verdict as the run's
        assert r["passed"] == recorded[r["task_id"], r["language"]]


def sum_task() -> Task:
    cases = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n"), ("4\n10 20 30 40\n", "100\n")]
    return Task(
        task_id="sum", kind="program", description="Sum n integers.", entry_point="", reference_code=SUM,
        tests=[TestCase(input=i, expected=o) for i, o in cases], time_limit_s=2.0,
    )  # fmt: skip


def test_evaluate_reads_a_samples_language_from_the_line_or_the_completions_fence(tmp_path: Path) -> None:
    from spade_llm.tasksets.judging import evaluate_samples
    from spade_llm.tasksets.taskfile import read_samples

    samples = tmp_path / "samples.jsonl"
    lines = [
        {"task_id": "sum", "code": SUM_CPP, "language": "cpp"},
        {"task_id": "sum", "completion": f"My answer:\n```cpp\n{SUM_CPP}```"},
        {"task_id": "sum", "code": SUM},
        {"task_id": "sum", "code": SUM, "language": "cpp"},  # Python handed in as C++: it does not compile
    ]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    read = read_samples(samples, {"sum": sum_task()})
    assert [(code, language) for _, code, language in read] == [
        (SUM_CPP, "cpp"), (SUM_CPP, "cpp"), (SUM, "python"), (SUM, "cpp")
    ]  # fmt: skip
    result = evaluate_samples([sum_task()], read, sandbox="subprocess", concurrency=2, ks=(1,))
    assert [(r["language"], r["passed"]) for r in result.rows] == [
        ("cpp", True), ("cpp", True), ("python", True), ("cpp", False)
    ]  # fmt: skip
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "sum", "code": SUM, "language": "pascal"}) + "\n")
    from spade_llm.errors import UserError

    with pytest.raises(UserError, match=r"bad.jsonl:1: unknown answer language 'pascal'; known: python, cpp"):
        read_samples(bad, {"sum": sum_task()})


def test_the_trainers_reward_judges_in_the_rows_language(sandbox: Any) -> None:
    truth = json.dumps(ground_truth(sum_task(), 1, "cpp"))
    with Rewarder(sandbox=sandbox) as rewarder:
        assert rewarder.score(f"```cpp\n{SUM_CPP}```", truth).status == "passed"
        assert rewarder.score(f"```python\n{SUM}```", truth).status == "no_code"  # not the asked-for block
        python_truth = json.dumps(ground_truth(sum_task(), 1))
        assert rewarder.score(f"```python\n{SUM}```", python_truth).status == "passed"
        # TRL: a row's `language` column names it when its ground truth (an older export's) does not
        reward = CodeReward(rewarder)
        assert reward(completions=[f"```cpp\n{SUM_CPP}```"], ground_truth=[python_truth], language=["cpp"]) == [1.0]
        assert reward(completions=[f"```cpp\n{SUM_CPP}```"], ground_truth=[truth]) == [1.0]
