"""pass@k (issue 38): ``spade evaluate --k 1,5,10`` reports the unbiased estimator per task and over the
tasks, in its stderr table and in ``--json``; a k some task has too few samples for is refused naming
the task; and ``spade solve --samples-per-task N`` feeds it (``--samples RUN_DIR``, and its own summary).

Commands run in-process through ``cli.main``; the samples are benign programs of ours, the solve run's
answers the fake model's (deterministic, from its bank).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli.app import main
from spade_llm.evaluator import pass_at_k

GOOD = "def f(x):\n    return x * 2 + 1\n"
WRONG = "def f(x):\n    return x\n"
TESTS = [{"input": f"({i},)", "expected": i * 2 + 1} for i in (1, 2, 5, 7)]
CORRECT = {"a": 5, "b": 0, "c": 9}
"""Task id -> how many of its 10 samples are right."""


def exact(n: int, c: int, k: int) -> float:
    """The estimator's definition, as a fraction: 1 - C(n-c, k) / C(n, k)."""
    return float(1 - Fraction(comb(n - c, k), comb(n, k)))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tasks_file(path: Path, ids: list[str]) -> Path:
    return write_jsonl(
        path,
        [{"task_id": i, "description": "d", "entry_point": "f", "reference_code": GOOD, "tests": TESTS} for i in ids],
    )


def samples_file(path: Path, correct: dict[str, int], n: int = 10) -> Path:
    return write_jsonl(
        path, [{"task_id": t, "code": GOOD if i < c else WRONG} for t, c in correct.items() for i in range(n)]
    )


def evaluate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    code = main(["evaluate", *argv, "--sandbox", "subprocess", "--concurrency", "2"])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return code, rows, [line for line in err.splitlines() if line.strip() and "not a security boundary" not in line]


def test_evaluate_reports_the_estimator_per_task_and_overall_in_the_table_and_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", list(CORRECT))
    samples = samples_file(tmp_path / "s.jsonl", CORRECT)
    summary = tmp_path / "out" / "passk.json"
    code, rows, err = evaluate(capsys, str(tasks), "--samples", str(samples), "--k", "10,1,5", "--json", str(summary))
    assert code == 0
    # stdout: the per-sample rows as before, one per sample, nothing else
    assert len(rows) == 30 and Counter(r["task_id"] for r in rows if r["passed"]) == {"a": 5, "c": 9}
    assert set(rows[0]) == {"task_id", "language", "passed", "status", "exec_status", "tests_passed", "tests_total"}

    data = json.loads(summary.read_text())
    assert data["k"] == [1, 5, 10] and data["tasks"] == 3 and data["samples"] == 30 and data["passed"] == 14
    assert [(r["task_id"], r["n"], r["c"]) for r in data["per_task"]] == [("a", 10, 5), ("b", 10, 0), ("c", 10, 9)]
    for row in data["per_task"]:
        for k in (1, 5, 10):
            assert row[f"pass@{k}"] == pytest.approx(exact(10, row["c"], k), abs=1e-12)
            assert row[f"pass@{k}"] == pass_at_k(10, row["c"], k)
    a = data["per_task"][0]
    assert (a["pass@1"], a["pass@10"]) == (0.5, 1.0) and a["pass@5"] == pytest.approx(251 / 252)  # 1 - 1/C(10,5)
    for k in (1, 5, 10):  # overall: the mean over tasks
        mean = sum(exact(10, c, k) for c in CORRECT.values()) / 3
        assert data["overall"][f"pass@{k}"] == pytest.approx(mean, abs=1e-12)
    assert data["overall"]["pass@1"] == pytest.approx(14 / 30)

    # stderr: a row per task (n, c, each pass@k to 4 places), then the overall line
    assert err[-5].split() == ["task", "n", "c", "pass@1", "pass@5", "pass@10"]
    assert err[-4].split() == ["a", "10", "5", "0.5000", f"{251 / 252:.4f}", "1.0000"]
    assert err[-3].split() == ["b", "10", "0", "0.0000", "0.0000", "0.0000"]
    assert err[-2].split() == ["c", "10", "9", "0.9000", "1.0000", "1.0000"]
    overall = ", ".join(f"pass@{k} {data['overall'][f'pass@{k}']:.4f}" for k in (1, 5, 10))
    assert err[-1] == f"30 samples, 3 tasks: {overall}"
    assert overall == "pass@1 0.4667, pass@5 0.6653, pass@10 0.6667"


def test_without_k_the_defaults_are_those_of_1_10_100_every_task_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", list(CORRECT))
    samples = samples_file(tmp_path / "s.jsonl", CORRECT)
    summary = tmp_path / "passk.json"
    code, _, err = evaluate(capsys, str(tasks), "--samples", str(samples), "--json", str(summary))
    assert code == 0 and json.loads(summary.read_text())["k"] == [1, 10]  # 10 samples each: no pass@100
    assert err[-1] == "30 samples, 3 tasks: pass@1 0.4667, pass@10 0.6667"
    # the references alone: one sample a task, no per-task table, the line as it always was
    code, rows, err = evaluate(capsys, str(tasks))
    assert code == 0 and len(rows) == 3 and err == ["3 samples, 3 tasks: pass@1 1.0000"]


def test_a_k_larger_than_a_tasks_samples_is_refused_naming_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", ["a", "b", "c"])
    rows = [{"task_id": "a", "code": GOOD}] * 10 + [{"task_id": "b", "code": GOOD}] * 4
    rows += [{"task_id": "c", "code": WRONG}] * 2  # c: two samples, both wrong (the formula alone says pass@5 = 1)
    samples = write_jsonl(tmp_path / "s.jsonl", rows)
    summary = tmp_path / "passk.json"
    code, judged, err = evaluate(capsys, str(tasks), "--samples", str(samples), "--k", "1,5", "--json", str(summary))
    assert code == 2 and judged == [] and not summary.exists()  # refused before anything was judged
    assert len(err) == 1
    assert "pass@5 needs 5 samples of every task; 2 of 3 tasks have fewer: b (4), c (2)" in err[0]
    assert "the fewest is 2" in err[0]
    # within every task's samples, the same file is judged
    code, judged, err = evaluate(capsys, str(tasks), "--samples", str(samples), "--k", "1,2")
    assert code == 0 and len(judged) == 16 and err[-1] == "16 samples, 3 tasks: pass@1 0.6667, pass@2 0.6667"


@pytest.mark.parametrize("given", ["0", "1,x", ",", "-3"])
def test_a_k_that_is_not_a_positive_whole_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", ["a"])
    with pytest.raises(SystemExit) as stopped:
        main(["evaluate", str(tasks), f"--k={given}"])
    assert stopped.value.code == 2 and "--k" in capsys.readouterr().err


def test_tasks_without_a_sample_are_named_and_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", ["a", "b", "lonely"])
    samples = samples_file(tmp_path / "s.jsonl", {"a": 1, "b": 2}, n=2)
    code, _, err = evaluate(capsys, str(tasks), "--samples", str(samples), "--k", "2")
    assert code == 0
    assert any("1 of 3 tasks have no sample" in line and "lonely" in line for line in err)
    assert err[-1] == "4 samples, 2 tasks: pass@2 1.0000"


# -- spade solve --samples-per-task N feeds it -------------------------------------------------------


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A fake run's tasks (the fake solver knows them), solved 4 times each by ``fake/default`` in one
    turn: (tasks file, solve run directory, solve's last stdout line)."""
    root = tmp_path_factory.mktemp("passk")
    gen = root / "gen"
    assert (
        main(["run", "--quiet", "--sandbox", "auto", "--epochs", "1", "--tasks-per-epoch", "4", "--out", str(gen)]) == 0
    )
    run = root / "solved"
    argv = ["solve", str(gen / "tasks.jsonl"), "--model", "fake/default", "--samples-per-task", "4"]
    argv += ["--max-turns", "1", "--sandbox", "auto", "--out", str(run)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return gen / "tasks.jsonl", run, out.getvalue().strip().splitlines()[-1]


def recorded_counts(run: Path) -> dict[str, tuple[int, int]]:
    """Task id -> (episodes, passed) as the solve recorded them."""
    n: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for line in (run / "trajectories.jsonl").read_text().splitlines():
        t = json.loads(line)
        n[t["task_id"]] += 1
        c[t["task_id"]] += t["final_status"] == "passed"
    return {task_id: (n[task_id], c[task_id]) for task_id in n}


def test_a_solve_run_directory_is_the_samples_each_episodes_final_answer_judged_again(
    solved: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, run, _ = solved
    counts = recorded_counts(run)
    assert len(counts) == 4 and {n for n, _ in counts.values()} == {4}
    assert any(0 < c < n for n, c in counts.values())  # some task partly solved: pass@1 and pass@4 differ
    summary = tmp_path / "passk.json"
    code = main(
        ["evaluate", str(tasks), "--samples", str(run), "--k", "1,2,4", "--json", str(summary), "--sandbox", "auto"]
    )
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 16
    data = json.loads(summary.read_text())
    assert {r["task_id"]: (r["n"], r["c"]) for r in data["per_task"]} == counts  # the sandbox agrees with the run
    for row in data["per_task"]:
        assert [row[f"pass@{k}"] for k in (1, 2, 4)] == [pytest.approx(exact(4, row["c"], k)) for k in (1, 2, 4)]
    for k in (1, 2, 4):
        assert data["overall"][f"pass@{k}"] == pytest.approx(sum(exact(n, c, k) for n, c in counts.values()) / 4)


def test_solve_reports_pass_at_k_over_its_own_episodes(solved: tuple[Path, Path, str]) -> None:
    _, run, last_line = solved
    counts = recorded_counts(run)
    summary = json.loads((run / "summary.json").read_text())
    expected = {f"pass@{k}": sum(exact(n, c, k) for n, c in counts.values()) / 4 for k in (1, 4)}
    assert summary["pass_at_k"] == pytest.approx(expected)  # pass@1 and pass@N, N = --samples-per-task
    assert f"pass@1 {expected['pass@1']:.4f}, pass@4 {expected['pass@4']:.4f} -> {run}" in last_line


def test_a_run_directorys_episode_of_a_task_not_given_is_an_error(
    solved: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, run, _ = solved
    first = tasks.read_text().splitlines()[0]
    fewer = tmp_path / "one.jsonl"
    fewer.write_text(first + "\n")
    code, rows, err = evaluate(capsys, str(fewer), "--samples", str(run))
    assert code == 2 and rows == [] and len(err) == 1
    assert "12 episodes are of tasks not in the tasks file" in err[0] and "tasks.jsonl" in err[0]
    code, rows, err = evaluate(capsys, str(fewer), "--samples", str(run), "--skip-invalid")
    assert code == 0 and len(rows) == 4 and any("skipped 12 episodes" in line for line in err)
