"""Tests given without an expected value: ``solve`` and ``evaluate`` take it from the task's reference
(SPEC "Additions": tasks without expected values), or stop with one error naming the task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spade_llm.cli.app import main
from spade_llm.sandbox.runner import CallsOutcome
from spade_llm.sandbox.verdict import Output
from spade_llm.tasksets.expected import NoReferenceValue, reference_values
from spade_llm.types import ExecutionResult, Task, TestCase


def _task(task_id: str, code: str, inputs: list[str], **extra: Any) -> dict[str, Any]:
    entry = code.split("def ", 1)[1].split("(", 1)[0]
    return {
        "task_id": task_id,
        "description": f"{task_id}: see the tests.",
        "entry_point": entry,
        "reference_code": code,
        "tests": [{"input": i} for i in inputs],
        **extra,
    }


ADD = _task("add", "def add(a, b):\n    return a + b\n", ["(1, 2)", "(3, 4)", "(-1, 1)"])
REV = _task("rev", "def rev(s):\n    return s[::-1]\n", ["('ab',)", "('',)"])
REV["tests"].append({"input": "('xyz',)", "expected": "zyx"})  # one given, the others filled
PAIRS = _task("pairs", "def pairs(n):\n    return [(i, i * i) for i in range(n)]\n", ["(0,)", "(2,)", "(3,)"])
DOUBLE = _task("dbl", "def dbl(x):\n    return 2 * x\n", ["(1,)", "(5,)", "(0,)"], kind="deduction")


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_evaluate_fills_expected_values_from_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = _write(tmp_path / "t.jsonl", [ADD, REV, PAIRS, DOUBLE])
    assert main(["evaluate", str(tasks), "--sandbox", "auto"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert [(r["task_id"], r["status"], r["tests_passed"]) for r in rows] == [
        ("add", "passed", 3),
        ("rev", "passed", 3),
        ("pairs", "passed", 3),
        ("dbl", "passed", 3),
    ]
    # a wrong answer still fails against the filled values
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "add", "code": "def add(a, b):\n    return a - b\n"}) + "\n")
    assert main(["evaluate", str(tasks), "--samples", str(samples), "--sandbox", "auto"]) == 0
    [row] = _rows(capsys.readouterr().out)
    assert row["status"] == "failed" and row["tests_passed"] == 0


@pytest.fixture(scope="module")
def bank_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Tasks the fake solver knows (from a fake run), their expected values taken out."""
    out = tmp_path_factory.mktemp("gen") / "run"
    argv = ["run", "--quiet", "--sandbox", "auto", "--epochs", "1", "--tasks-per-epoch", "3", "--out", str(out)]
    assert main(argv) == 0
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    for t in tasks:
        t["tests"] = [{"input": c["input"]} for c in t["tests"]]
    return tasks


def test_solve_judges_against_values_filled_from_the_reference(tmp_path: Path, bank_tasks: list[dict]) -> None:
    tasks = _write(tmp_path / "t.jsonl", bank_tasks)
    out = tmp_path / "solved"
    argv = ["solve", str(tasks), "--model", "fake/strong-solver", "--sandbox", "auto", "--out", str(out)]
    assert main(argv) == 0
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajectories) == len(bank_tasks)
    for t in trajectories:
        errors = {r["error"] for a in t["attempts"] for r in (a["result"]["test_results"] or [])}
        assert "no expected value" not in errors
    assert sum(t["final_status"] == "passed" for t in trajectories) == len(bank_tasks)  # strong-solver
    written = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert all("expected" in c for t in written for c in t["tests"])  # the values judged on are recorded


@pytest.mark.parametrize(
    ("task", "says"),
    [
        (_task("boom", "def f(x):\n    return 10 // x\n", ["(1,)", "(0,)", "(2,)"]), "task boom: test 1 ((0,)):"),
        ({**ADD, "task_id": "noref", "reference_code": ""}, "task noref: test 0 has no expected value"),
        (_task("noload", "import nosuchmodule_xyz\ndef f(x):\n    return x\n", ["(1,)"]), "task noload:"),
        (_task("obj", "def f(x):\n    return object()\n", ["(1,)"]), "task obj: test 0 ((1,)):"),
    ],
    ids=["raises", "no-reference", "does-not-load", "no-json-form"],
)
@pytest.mark.parametrize("command", ["evaluate", "solve"])
def test_a_reference_that_cannot_fill_is_one_error_naming_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], task: dict, says: str, command: str
) -> None:
    tasks = _write(tmp_path / "t.jsonl", [ADD, task])
    out = tmp_path / "out"
    argv = [command, str(tasks), "--sandbox", "auto"]
    argv += ["--model", "fake/default", "--out", str(out)] if command == "solve" else []
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert "expected value" in err[0]
    assert not out.exists()  # solve: refused before its directory is made


def test_a_reference_that_times_out_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = _task("slow", "def f(x):\n    while x:\n        pass\n    return x\n", ["(0,)", "(1,)"])
    tasks = _write(tmp_path / "t.jsonl", [slow])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"sandbox": {"test_timeout_s": 0.3}}))
    assert main(["evaluate", str(tasks), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "task slow: test 1 ((1,)): cannot fill its expected value: the reference timed out" in err


def test_check_code_tasks_need_no_expected_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Imported benchmarks are judged by their own asserts: nothing is filled, nothing is refused."""
    bench = _task(
        "bench",
        "def f(x):\n    return x + 1\n",
        [],
        check_code="def check(candidate):\n    assert candidate(1) == 2\n",
        source="humaneval",
    )
    tasks = _write(tmp_path / "t.jsonl", [bench])
    assert main(["evaluate", str(tasks), "--sandbox", "auto"]) == 0
    [row] = _rows(capsys.readouterr().out)
    assert row["status"] == "passed"


# -- reference_values: one execution, another only past a deadline's cut ---------------------------------


class ScriptedJudge:
    """A judge whose executions give the outcomes scripted, one a call, and note which inputs each got."""

    def __init__(self, *outcomes: tuple[str, list[Output]]) -> None:
        self.outcomes = list(outcomes)
        self.asked: list[list[str]] = []

    def outputs(self, task: Task, code: str) -> CallsOutcome:
        self.asked.append([t.input for t in task.tests])
        status, outputs = self.outcomes.pop(0)
        return CallsOutcome(ExecutionResult(status=status), outputs)  # type: ignore[arg-type]


def ok(value: Any) -> Output:
    return Output("ok", value)


WALL = Output("timeout", error="timed out after 3 s", timer="wall")
TASK = Task(
    task_id="t", description="", entry_point="f", reference_code="def f(x):\n    return x\n",
    tests=[TestCase(input=f"({i},)") for i in range(5)],
)  # fmt: skip


@pytest.mark.parametrize(
    "first",
    [
        ("ok", [ok(0), ok(1), WALL]),  # the deadline came during the third call: the harness timed it out
        ("timeout", [ok(0), ok(1)]),  # or between calls: the run ended without the third's record
    ],
)
def test_a_reference_cut_by_its_executions_deadline_goes_on_where_it_was_cut(first: Any) -> None:
    judge = ScriptedJudge(first, ("ok", [ok(2), ok(3), ok(4)]))
    assert reference_values(judge, TASK, range(5)) == [0, 1, 2, 3, 4]  # type: ignore[arg-type]
    assert judge.asked == [[f"({i},)" for i in range(5)], ["(2,)", "(3,)", "(4,)"]]


@pytest.mark.parametrize(
    ("outcome", "index", "over_limits"),
    [
        (("ok", [ok(0), Output("timeout", error="timed out", timer="cpu")]), 1, True),  # its own CPU budget
        (("ok", [WALL]), 0, True),  # cut as the first call of its execution: no execution would get further
        (("timeout", []), 0, True),
        (("ok", [ok(0), Output("error", error="ValueError: no")]), 1, False),  # the reference's own doing
        (("ok", [ok(0), Output("error", error="MemoryError", memory=True)]), 1, True),
        (("error", [ok(0)]), 1, False),  # it crashed after one call
    ],
)
def test_a_reference_that_gives_no_value_says_where_and_whether_a_limit_stopped_it(
    outcome: Any, index: int, over_limits: bool
) -> None:
    with pytest.raises(NoReferenceValue) as stopped:
        reference_values(ScriptedJudge(outcome), TASK, range(5))  # type: ignore[arg-type]
    assert (stopped.value.index, stopped.value.over_limits) == (index, over_limits)
