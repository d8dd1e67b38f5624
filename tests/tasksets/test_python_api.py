"""``verify``, ``evaluate`` and task-file reading as Python (issue 36): the CLI calls these, so a script
gets the same verdicts without a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_task

from spade_llm import UserError, evaluate_samples, read_samples, read_tasks, verify_tasks

GOOD = make_task()
BROKEN = make_task("broken", "def add(a, b):\n    return a - b\n")


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_read_tasks_names_the_bad_line_or_skips_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "t.jsonl", [GOOD.model_dump_json(), "{not json"])
    with pytest.raises(UserError, match=r"t\.jsonl:2: not JSON"):
        read_tasks(path)
    assert [t.task_id for t in read_tasks(path, skip_invalid=True)] == ["add"]
    assert "skipped 1 malformed line" in capsys.readouterr().err


def test_verify_tasks_reports_each_gate_in_order() -> None:
    reports = list(verify_tasks([GOOD, BROKEN], sandbox="subprocess", concurrency=2))
    assert [(r.task_id, r.valid) for r in reports] == [("add", True), ("broken", False)]
    assert reports[1].reason == "expected_mismatch"  # the reference disagrees with its tests
    assert list(verify_tasks([], sandbox="subprocess")) == []


def test_evaluate_samples_judges_answers_and_reports_pass_at_k(tmp_path: Path) -> None:
    samples_file = write(
        tmp_path / "s.jsonl",
        [json.dumps({"task_id": "add", "code": code}) for code in (GOOD.reference_code, BROKEN.reference_code)],
    )
    samples = read_samples(samples_file, {"add": GOOD})
    seen: list[dict[str, object]] = []
    result = evaluate_samples([GOOD], samples, sandbox="subprocess", on_row=seen.append)
    assert [r["passed"] for r in result.rows] == [True, False] and seen == result.rows
    assert result.scores == {"pass@1": 0.5}
    by_reference = evaluate_samples([GOOD], sandbox="subprocess")
    assert [r["status"] for r in by_reference.rows] == ["passed"] and by_reference.scores == {"pass@1": 1.0}


def test_evaluate_samples_gives_pass_at_k_for_the_ks_asked_and_refuses_too_few_samples(tmp_path: Path) -> None:
    codes = [GOOD.reference_code, BROKEN.reference_code, BROKEN.reference_code]
    samples = read_samples(
        write(tmp_path / "s.jsonl", [json.dumps({"task_id": "add", "code": c}) for c in codes]), {"add": GOOD}
    )
    result = evaluate_samples([GOOD], samples, sandbox="subprocess", ks=(2, 1))
    [add] = result.pass_at_k.tasks
    assert (add.task_id, add.n, add.c) == ("add", 3, 1)
    assert add.scores == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}  # 1 - C(2,2)/C(3,2)
    assert result.scores == {"pass@1": pytest.approx(1 / 3), "pass@2": pytest.approx(2 / 3)}
    with pytest.raises(UserError, match=r"pass@4 needs 4 samples of every task; 1 of 1 tasks has fewer: add \(3\)"):
        evaluate_samples([GOOD], samples, sandbox="subprocess", ks=(1, 4))


def test_a_function_tasks_completion_reads_as_it_always_did_whatever_its_fences(tmp_path: Path) -> None:
    """Only a whole-program task's completion is read by its fence: a function task's, even one ending with an
    illustrative block in another language, is the prompt plus the completion, as HumanEval's are."""
    task = GOOD.model_copy(update={"meta": {"prompt": "def add(a, b):\n"}})
    completion = "    return a + b\n\nx = '''\n```js\nconst add = (a, b) => a + b;\n```\n'''\n"
    samples = read_samples(write(tmp_path / "s.jsonl", [json.dumps({"task_id": "add", "completion": completion})]),
                           {"add": task})  # fmt: skip
    [(_task, code, language)] = samples
    assert language == "python" and code == "def add(a, b):\n" + completion
    assert evaluate_samples([task], samples, sandbox="subprocess").scores == {"pass@1": 1.0}
