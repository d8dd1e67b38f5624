"""``spade export``: each format's rows, the split, the filters, and bad input, on one small run.

The run (fake model, mixed kinds, 4 samples per task) is made once per module; tests that need a
damaged or unfinished run work on a copy of it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli.app import main
from spade_llm.errors import UserError
from spade_llm.export import solver_rows as exports
from spade_llm.export.solver_rows import MAX_SAMPLE_PAIRS, ExportFilters, export_run, split_of, tier_of
from spade_llm.rewards.groundtruth import task_from_ground_truth
from spade_llm.sandbox.runner import parse_input
from spade_llm.solver import first_messages, split_tests
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase, Trajectory

FORMATS = ("sft", "dpo", "grpo", "verl")
KINDS_CONFIG = "seed: 3\ncurriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n"


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    config = base / "kinds.yaml"
    config.write_text(KINDS_CONFIG)
    out = base / "run"
    argv = ["run", "--config", str(config), "--epochs", "2", "--tasks-per-epoch", "4", "--samples-per-task", "4"]
    assert main([*argv, "--sandbox", "auto", "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def records(run: Path) -> dict[str, Any]:
    """The run's own records, to check the exports against."""
    tasks = [Task.model_validate(r) for r in read_rows(run / "tasks.jsonl")]
    trajs = [Trajectory.model_validate(r) for r in read_rows(run / "trajectories.jsonl")]
    stats = {r["task_id"]: r for r in read_rows(run / "task_stats.jsonl")}
    kinds = {t.kind for t in tasks}
    assert len(kinds) >= 2, f"the fixture run needs a kind mix, got {kinds}"
    assert all(s["samples"] >= 2 for s in stats.values())
    return {
        "tasks": {t.task_id: t for t in tasks},
        "trajs": {t.trajectory_id: t for t in trajs},
        "stats": stats,
    }


def export(run: Path, out: Path, fmt: str, *flags: str) -> list[dict[str, Any]]:
    """Export through the CLI and read the rows back (verl through pyarrow)."""
    assert main(["export", str(run), "--format", fmt, "-o", str(out), *flags]) == 0
    if fmt == "verl":
        pq = pytest.importorskip("pyarrow.parquet")
        return list(pq.read_table(out).to_pylist())
    return read_rows(out)


def task_of(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["task_id"] if "extra_info" in row else row["task_id"])


def split_col(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["split"] if "extra_info" in row else row["split"])


def measured(stats: dict[str, Any]) -> float:
    return round(1 - stats["passed"] / stats["samples"], 6)


def opening(traj: Trajectory) -> list[dict[str, str]]:
    first = next(i for i, m in enumerate(traj.messages) if m.role == "assistant")
    return [m.model_dump() for m in traj.messages[:first]]


# -- sft ------------------------------------------------------------------------------------------


def test_sft_rows_end_with_the_passing_answer(run: Path, records: dict[str, Any], tmp_path: Path) -> None:
    rows = export(run, tmp_path / "sft.jsonl", "sft")
    assert rows
    assert {r["repair"] for r in rows} == {True, False}, "the fixture run needs first-try and repaired passes"
    for row in rows:
        traj: Trajectory = records["trajs"][row["trajectory_id"]]
        passing = traj.attempts[-1]
        assert traj.final_status == "passed" and passing.result.all_passed
        assert passing.message_index is not None
        assert row["messages"] == [m.model_dump() for m in traj.messages[: passing.message_index + 1]]
        assert row["messages"][-1] == {"role": "assistant", "content": passing.raw}
        assert [m["role"] for m in row["messages"][:2]] == ["system", "user"]
        assert row["turns"] == len(traj.attempts) and row["repair"] == (len(traj.attempts) > 1)
        assert row["task_id"] == traj.task_id and row["kind"] == records["tasks"][traj.task_id].kind
        assert row["difficulty"] == measured(records["stats"][traj.task_id])
        assert row["split"] in ("train", "test")
    repaired = next(r for r in rows if r["repair"])
    roles = [m["role"] for m in repaired["messages"]]
    assert roles == ["system", "user", *["assistant", "user"] * (repaired["turns"] - 1), "assistant"]


def test_sft_final_only_keeps_the_first_prompt_and_the_passing_answer(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "sft.jsonl", "sft", "--final-only")
    assert rows and any(r["turns"] > 1 for r in rows)
    for row in rows:
        traj: Trajectory = records["trajs"][row["trajectory_id"]]
        assert row["messages"] == [*opening(traj), {"role": "assistant", "content": traj.attempts[-1].raw}]
        assert row["repair"] is False


def test_sft_cuts_a_conversation_that_goes_on_after_the_passing_answer(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    lines = (copy / "trajectories.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    target = next(r for r in records if r["final_status"] == "passed")
    target["messages"].append({"role": "user", "content": "thanks, and one more thing"})
    (copy / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = export(copy, tmp_path / "sft.jsonl", "sft")
    row = next(r for r in rows if r["trajectory_id"] == target["trajectory_id"])
    assert row["messages"][-1]["role"] == "assistant"
    assert row["messages"] == target["messages"][: target["attempts"][-1]["message_index"] + 1]


# -- dpo ------------------------------------------------------------------------------------------


def test_dpo_chosen_passes_and_rejected_fails(run: Path, records: dict[str, Any], tmp_path: Path) -> None:
    rows = export(run, tmp_path / "dpo.jsonl", "dpo")
    assert {r["pair_type"] for r in rows} == {"samples", "repair"}
    for row in rows:
        good: Trajectory = records["trajs"][row["chosen_trajectory_id"]]
        bad: Trajectory = records["trajs"][row["rejected_trajectory_id"]]
        assert good.final_status == "passed" and good.attempts[-1].result.all_passed
        assert row["chosen"] == [{"role": "assistant", "content": good.attempts[-1].raw}]
        assert len(row["rejected"]) == 1 and row["rejected"][0]["role"] == "assistant"
        assert row["chosen"] != row["rejected"]
        assert row["task_id"] == good.task_id == bad.task_id
        failed = next(a for a in bad.attempts if a.message_index == len(row["prompt"]))
        assert row["rejected"] == [{"role": "assistant", "content": failed.raw}]
        assert not failed.result.all_passed
        assert row["prompt"] == [m.model_dump() for m in bad.messages[: len(row["prompt"])]]
        if row["pair_type"] == "samples":
            assert bad.final_status != "passed" and failed is bad.attempts[0]
            assert row["prompt"] == opening(good)
        else:
            assert good.trajectory_id == bad.trajectory_id
    per_task = Counter(r["task_id"] for r in rows if r["pair_type"] == "samples")
    assert max(per_task.values()) <= MAX_SAMPLE_PAIRS


def test_dpo_samples_pairs_come_from_tasks_with_both_outcomes_and_are_bounded(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "dpo.jsonl", "dpo")
    for task_id in records["tasks"]:
        samples = [t for t in records["trajs"].values() if t.task_id == task_id and t.attempts]
        passing = sum(t.final_status == "passed" for t in samples)
        failing = len(samples) - passing
        pairs = [r for r in rows if r["task_id"] == task_id and r["pair_type"] == "samples"]
        assert len(pairs) <= min(max(passing, failing), MAX_SAMPLE_PAIRS), task_id
        assert bool(pairs) == bool(passing and failing), task_id
        repairs = [r for r in rows if r["task_id"] == task_id and r["pair_type"] == "repair"]
        assert len(repairs) <= sum(len(t.attempts) - 1 for t in samples if t.final_status == "passed")


# -- grpo and verl ----------------------------------------------------------------------------------


def test_grpo_one_row_per_task_with_a_ground_truth_that_round_trips(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "grpo.jsonl", "grpo")
    assert [r["task_id"] for r in rows] == list(records["tasks"])  # every task once, epoch order
    for row in rows:
        task: Task = records["tasks"][row["task_id"]]
        assert set(row) == {
            "prompt", "task_id", "kind", "language", "entry_point", "tests", "ground_truth", "split", "difficulty"
        }  # fmt: skip
        assert row["language"] == "python"  # a function's answer: Python, the ground truth saying nothing more
        assert row["kind"] == task.kind and row["entry_point"] == task.entry_point
        assert json.loads(row["tests"]) == [t.dump() for t in task.tests]
        judged, public = task_from_ground_truth(row["ground_truth"])
        assert public == len(split_tests(task, 3)[0])
        assert [t.dump() for t in judged.tests] == [t.dump() for t in task.tests]
        assert (judged.kind, judged.entry_point, judged.task_id) == (task.kind, task.entry_point, task.task_id)
        first = next(t for t in records["trajs"].values() if t.task_id == task.task_id and t.sample_index == 0)
        assert row["prompt"] == opening(first)
        assert row["difficulty"] == measured(records["stats"][task.task_id])


def test_verl_parquet_has_the_nested_fields(run: Path, records: dict[str, Any], tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = export(run, tmp_path / "verl.parquet", "verl")
    grpo = {r["task_id"]: r for r in export(run, tmp_path / "grpo.jsonl", "grpo")}
    schema = pq.read_schema(tmp_path / "verl.parquet")
    assert schema.field("reward_model").type == pa.struct([("style", pa.string()), ("ground_truth", pa.string())])
    assert [f.name for f in schema.field("extra_info").type] == [
        "split", "index", "task_id", "kind", "language", "difficulty"
    ]  # fmt: skip
    assert len(rows) == len(records["tasks"])
    for index, row in enumerate(rows):
        extra, task_id = row["extra_info"], row["extra_info"]["task_id"]
        assert row["data_source"] == "spade_llm" and row["ability"] == "code"
        assert row["reward_model"] == {"style": "rule", "ground_truth": grpo[task_id]["ground_truth"]}
        assert row["prompt"] == grpo[task_id]["prompt"]
        assert extra == {
            "split": grpo[task_id]["split"],
            "index": index,
            "task_id": task_id,
            "kind": records["tasks"][task_id].kind,
            "language": "python",
            "difficulty": measured(records["stats"][task_id]),
        }


def test_verl_for_sandbox_fusion_writes_function_cases_for_induction_tasks(
    run: Path, records: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    pytest.importorskip("pyarrow")
    from spade_llm.rewards.groundtruth import printed

    rows = export(run, tmp_path / "sf.parquet", "verl", "--verl-reward", "sandbox_fusion")
    induction = {i for i, t in records["tasks"].items() if t.kind == "induction"}
    assert rows and {r["extra_info"]["task_id"] for r in rows} <= induction
    for row in rows:
        task = records["tasks"][row["extra_info"]["task_id"]]
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert row["data_source"] == "codecontests"  # a source verl's default_compute_score sends to SandboxFusion
        assert truth["fn_name"] == task.entry_point and 0 < len(truth["inputs"]) == len(truth["outputs"])
        cases = iter(task.tests)  # the kept tests are some of the task's, in its order
        for line, output in zip(truth["inputs"], truth["outputs"], strict=True):
            args = [json.loads(a) for a in line.split("\n")] if line else []
            test = next(t for t in cases if repr(tuple(args)) == repr(parse_input(t.input)))
            assert output == printed(test.expected) and isinstance(output, str) and output.rstrip("\n")
    assert main(["export", str(run), "--format", "grpo", "--verl-reward", "sandbox_fusion"]) == 2
    assert "--verl-reward is for --format verl" in capsys.readouterr().err


def test_sandbox_fusion_leaves_out_tasks_json_cannot_call() -> None:
    from spade_llm.rewards.groundtruth import sandbox_fusion_ground_truth
    from spade_llm.types import TestCase

    def task(*inputs: str) -> Task:
        tests = [TestCase(input=i, expected=1) for i in inputs]
        return Task(
            task_id="t", description="", entry_point="f", reference_code="def f(*a):\n    return 1\n", tests=tests
        )

    assert sandbox_fusion_ground_truth(task("([1, 2], 'a', None, {'k': 1.5})", "()")) == {
        "fn_name": "f",
        "inputs": ['[1, 2]\n"a"\nnull\n{"k": 1.5}', ""],
        "outputs": ["1", "1"],
    }
    for bad in ("((1, 2),)", "({1},)", "(b'x',)", "({1: 2},)", "(float('nan'),)"):
        assert sandbox_fusion_ground_truth(task("(1,)", bad)) is None, bad


def fusion_task(*tests: tuple[str, Any], task_id: str = "t", **fields: Any) -> Task:
    from spade_llm.types import TestCase

    cases = [TestCase(input=i, expected=e) for i, e in tests]
    code = "def f(*a):\n    return 1\n"
    return Task(task_id=task_id, description="", entry_point="f", reference_code=code, tests=cases, **fields)


def test_sandbox_fusion_leaves_out_tests_a_crash_or_a_trivial_answer_would_pass() -> None:
    """verl's fn_name wrapper prints nothing when the answer raises or exits, and verl compares
    stdout as text after rstrip("\\n"): those tests would pay a crash, or a stand-in spade fails."""
    from spade_llm.rewards.groundtruth import sandbox_fusion_ground_truth
    from spade_llm.types import TestCase

    task = fusion_task(
        ("('a',)", ""),  # what a crash prints
        ("('b',)", "\n\n"),  # empty once verl strips the newlines
        ("('c',)", " "),  # whitespace is not stripped: a crash does not match it
        ("('d',)", "null"),  # a function returning None prints null
        ("('e',)", "0"),  # ... returning 0 prints 0
        ("('5',)", 5),  # ... returning its first argument prints 5
        ("('f',)", None),  # returning None passes here in spade's verdict too: kept
        ("('g',)", "gg"),
        ("('h',)", 10**5000),  # no str() for it, in the wrapper either: not even the reference passes
        ("('i',)", "\ud800x"),  # a lone surrogate cannot be printed
    )
    truth = {"fn_name": "f", "inputs": ['"c"', '"f"', '"g"'], "outputs": [" ", "null", "gg"]}
    assert sandbox_fusion_ground_truth(task) == truth
    from spade_llm.rewards.groundtruth import sandbox_fusion_form

    task.tests.append(TestCase(input="('j',)", expected=0.5, abs_tol=1e-6))  # text cannot compare within a tolerance
    task.tests.append(TestCase(input="('k',)", expected=True, as_bool=True))  # ... nor by truth value
    form = sandbox_fusion_form(task)
    assert (form.truth, form.reason) == (truth, None)
    assert form.tests_left_out == {
        "output prints empty, as a crash does": 2,
        "output prints as a wrong trivial answer's": 3,
        "output cannot be printed": 2,
        "compared within a tolerance or by truth value": 2,
    }


def test_sandbox_fusion_leaves_out_what_a_benchmarks_harness_compares_with_a_tuple() -> None:
    """An imported HumanEval assert is judged by Python's ``==`` (``python_eq``): a list is not the
    tuple it wants, but both print the same, so verl's text comparison would pay the list."""
    from spade_llm.rewards.groundtruth import sandbox_fusion_form
    from spade_llm.types import TestCase

    task = fusion_task(("('g',)", "gg"))
    task.tests += [
        TestCase(input="(12,)", expected=[4, 6], python_eq="(4, 6)"),  # left out: [4, 6] prints as (4, 6) does
        TestCase(input="(13,)", expected={"a": [1]}, python_eq="{'a': (1,)}"),  # ... inside too
        TestCase(input="(14,)", expected=[4, 6], python_eq="[4, 6]"),  # kept: a tuple prints as the list
        TestCase(input="(15,)", expected=[4, 6], python_eq="(4, 6)", as_tuple=True),  # kept: tuple(list) passes
        TestCase(input="(16,)", expected=[], python_eq="[]"),  # the stand-in `[]` passes it in spade too: kept
    ]
    form = sandbox_fusion_form(task)
    assert form.truth is not None and form.truth["inputs"] == ['"g"', "14", "15", "16"]
    assert form.tests_left_out == {"compared with a tuple, which prints as a list does": 2}


def test_sandbox_fusion_leaves_out_a_task_left_without_tests_or_passed_by_a_stand_in() -> None:
    from spade_llm.rewards.groundtruth import sandbox_fusion_ground_truth

    everyone = fusion_task(("(1,)", ""), ("(2,)", ""), ("(3,)", "\n"))  # a crash passes them all
    nobody = fusion_task(("('ab',)", "ab"), ("('',)", ""), ("('c',)", "c"))  # the identity passes what is left
    assert sandbox_fusion_ground_truth(everyone) is None and sandbox_fusion_ground_truth(nobody) is None
    from spade_llm.rewards.groundtruth import SANDBOX_FUSION_SCORED_TESTS, sandbox_fusion_form

    empty = sandbox_fusion_form(everyone)
    assert (empty.truth, empty.reason) == (None, "no test left")
    assert empty.tests_left_out == {"output prints empty, as a crash does": 3}
    # verl's default scores the first 10 tests only: a stand-in passing those passes in full
    n = SANDBOX_FUSION_SCORED_TESTS
    nones = [(f"({i},)", None) for i in range(n)]
    passed = sandbox_fusion_form(fusion_task(*nones, ("(99,)", 1)))
    assert (passed.truth, passed.reason) == (None, "a function returning None passes every scored test")
    assert sandbox_fusion_form(fusion_task(*nones[:-1], ("(99,)", 1))).truth is not None
    # the identity passes once the test a crash would pass is gone; judged by what it prints
    identity = sandbox_fusion_form(nobody)
    assert identity.reason == "a function returning the first argument passes every scored test"
    for value, stand_in in (([], "[]"), ({}, "{}"), (0, "0")):
        form = sandbox_fusion_form(fusion_task(("(1,)", value), ("(2,)", value), ("(3,)", value)))
        assert form.reason == f"a function returning {stand_in} passes every scored test"
    assert sandbox_fusion_form(fusion_task(("(1,)", 1), task_id="d", kind="deduction")).reason == (
        "its answer is not a program"
    )
    assert sandbox_fusion_form(fusion_task(("(1,)", 1), check_code="def check(c):\n    pass\n")).reason == (
        "judged by its own check code"
    )
    assert sandbox_fusion_form(fusion_task(("((1, 2),)", 1))).reason == "arguments JSON cannot carry"


def program_task(task_id: str, cases: list[tuple[str, str]], **fields: Any) -> Task:
    tests = [TestCase(input=i, expected=o) for i, o in cases]
    fields = {"kind": "program", "description": "", "entry_point": "", "reference_code": "print(input())\n", **fields}
    return Task(task_id=task_id, tests=tests, **fields)


def test_program_tasks_are_written_as_stdin_and_stdout_texts_for_verls_judges() -> None:
    """The shape verl's SandboxFusion judge and its prime_code both read: no test a crash passes (both
    fail an answer that raises), the expected lines written without trailing whitespace (SandboxFusion
    compares text); a task whose scored tests a trivial program passes is left out."""
    from spade_llm.rewards.groundtruth import SANDBOX_FUSION_SCORED_TESTS, sandbox_fusion_form

    task = program_task("p", [("1 2\n", "3  \n\n"), ("5 5\n", "10"), ("0 0\n", "")])
    assert sandbox_fusion_form(task).truth == {"inputs": ["1 2\n", "5 5\n", "0 0\n"], "outputs": ["3\n", "10\n", ""]}
    constant = [(f"{i}\n", "YES\n") for i in range(SANDBOX_FUSION_SCORED_TESTS)]
    assert sandbox_fusion_form(program_task("c", constant)).reason == "a trivial program passes every scored test"
    # a test past the ones verl scores does not save it: verl would pay the constant in full
    assert sandbox_fusion_form(program_task("c", [*constant, ("x\n", "NO\n")])).truth is None
    assert sandbox_fusion_form(program_task("c", [*constant[:-1], ("x\n", "NO\n")])).truth is not None
    echo = sandbox_fusion_form(program_task("e", [("1\n", "1\n"), ("2 3\n", "2 3")]))
    assert echo.reason == "a trivial program passes every scored test"
    with pytest.raises(UserError, match="task p: test 1 has no expected output text"):
        sandbox_fusion_form(task.model_copy(update={"tests": [task.tests[0], TestCase(input="1\n")]}))


def test_the_crash_that_scored_0875_on_main_keeps_only_its_real_test() -> None:
    """Task e0-00a643fc44 of ``spade run --seed 2``: 7 of its 8 tests expect the empty string, so
    verl scored an answer that raises, or exits at import, 0.875."""
    from spade_llm.rewards.groundtruth import sandbox_fusion_ground_truth

    words = ["['yield', 'OCEAN', 'cloud', 'racecar']", "['north', 'LEVEL', 'stone', 'noon']", "['a', 'BB', 'ccc']"]
    tests = [(f"({w},)", "") for w in words] + [("(['crypt'],)", "crypt"), ("([],)", "")]
    assert sandbox_fusion_ground_truth(fusion_task(*tests)) == {
        "fn_name": "f",
        "inputs": ['["crypt"]'],
        "outputs": ["crypt"],
    }


def test_the_export_says_what_it_left_out_and_why(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("pyarrow")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    tasks = [
        fusion_task(("('x',)", ""), ("('y',)", ""), ("(['crypt'],)", "crypt"), task_id="crash"),
        fusion_task(("(1,)", ""), ("(2,)", ""), task_id="empty"),
        fusion_task(("(1,)", None), ("(2,)", None), task_id="nones"),
        fusion_task(("(1,)", 2), ("(2,)", 3), task_id="good"),
        fusion_task(("((1,),)", 1), task_id="tuple"),
        fusion_task(("(1,)", 1), task_id="deduce", kind="deduction"),
        program_task("yes", [("1\n", "YES\n"), ("2\n", "YES")]),
    ]
    (run / "tasks.jsonl").write_text("".join(json.dumps(t.dump()) + "\n" for t in tasks))
    rows = export(run, tmp_path / "sf.parquet", "verl", "--verl-reward", "sandbox_fusion")
    assert [r["extra_info"]["task_id"] for r in rows] == ["crash", "good"]
    assert json.loads(rows[0]["reward_model"]["ground_truth"])["outputs"] == ["crypt"]
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("2 verl rows (") and err[1] == "left out for verl's SandboxFusion judge:"
    assert err[2:] == [
        "  1 task (no test left): empty",
        "  1 task (a function returning None passes every scored test): nones",
        "  1 task (arguments JSON cannot carry): tuple",
        "  1 task (its answer is not a program): deduce",
        "  1 task (a trivial program passes every scored test): yes",
        "  2 tests of 1 kept task (output prints empty, as a crash does): crash (2)",
    ]
    # an export of one split reports what it left out of that split only
    splits = {t.task_id: split_of(t.task_id, 0.5) for t in tasks}
    for split in ("train", "test"):
        result = export_run(
            run,
            "verl",
            tmp_path / f"{split}.parquet",
            ExportFilters(split=split),
            test_fraction=0.5,
            verl_reward="sandbox_fusion",
        )
        reported = {t for ids in result.left_out.tasks.values() for t in ids} | {
            t for counts in result.left_out.tests.values() for t in counts
        }
        assert reported == {t for t, s in splits.items() if s == split and t != "good"}, split


def test_a_long_list_of_left_out_tasks_is_cut_in_the_summary(tmp_path: Path) -> None:
    from spade_llm.export.solver_rows import SHOWN_TASK_IDS, ExportResult, LeftOut

    left = LeftOut()
    for i in range(SHOWN_TASK_IDS + 3):
        left.add(f"t{i}", "no test left", {"output prints empty, as a crash does": 2})
    left.add("kept", None, {"output prints empty, as a crash does": 1})
    line = ExportResult(tmp_path / "x", "verl", 0, 0, 0, 0, left).describe().splitlines()[2]
    assert line.startswith(f"  {SHOWN_TASK_IDS + 3} tasks (no test left): t0, t1, ")
    assert line.endswith(f"t{SHOWN_TASK_IDS - 1} and 3 more")
    assert left.tasks["no test left"] == [f"t{i}" for i in range(SHOWN_TASK_IDS + 3)]  # all kept in the result
    assert left.tests == {"output prints empty, as a crash does": {"kept": 1}}  # a left-out task's tests went with it


def test_a_task_without_trajectories_gets_the_prompt_the_solver_would_see(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    original = {r["task_id"]: r for r in export(run, tmp_path / "before.jsonl", "grpo")}
    task_id = next(iter(original))
    for name in ("trajectories.jsonl", "task_stats.jsonl"):
        kept = [line for line in (copy / name).read_text().splitlines(True) if json.loads(line)["task_id"] != task_id]
        (copy / name).write_text("".join(kept))
    rows = {r["task_id"]: r for r in export(copy, tmp_path / "after.jsonl", "grpo")}
    assert rows[task_id]["prompt"] == original[task_id]["prompt"]  # rendered from the templates: the same
    assert rows[task_id]["difficulty"] is None
    rendered = first_messages(Prompts(), records["tasks"][task_id], 3)
    assert rows[task_id]["prompt"] == [m.model_dump() for m in rendered]
    assert task_id not in {r["task_id"] for r in export(copy, tmp_path / "m.jsonl", "grpo", "--min-difficulty", "0")}


# -- split ----------------------------------------------------------------------------------------


def test_split_is_a_sha256_of_the_task_id_and_the_same_in_every_format(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    h = int(hashlib.sha256(b"e0-abc").hexdigest()[:16], 16) / 2**64
    assert split_of("e0-abc", h + 1e-9) == "test" and split_of("e0-abc", h - 1e-9) == "train"
    expected = {t: split_of(t, 0.5) for t in records["tasks"]}
    assert set(expected.values()) == {"train", "test"}, "the fixture needs tasks in both splits at 0.5"
    for fmt in FORMATS:
        out = tmp_path / f"{fmt}.out"
        rows = export(run, out, fmt, "--test-fraction", "0.5")
        assert rows
        assert all(split_col(r) == expected[task_of(r)] for r in rows), fmt
        kept = export(run, out, fmt, "--test-fraction", "0.5", "--split", "test")
        assert kept and {split_col(r) for r in kept} == {"test"}, fmt
        assert kept == [r for r in rows if split_col(r) == "test"] or fmt == "verl", fmt
    default = export(run, tmp_path / "grpo.jsonl", "grpo")
    assert all(r["split"] == split_of(r["task_id"], 0.1) for r in default)


# -- filters --------------------------------------------------------------------------------------


def test_kinds_filter_keeps_exactly_those_kinds(run: Path, records: dict[str, Any], tmp_path: Path) -> None:
    kind = Counter(t.kind for t in records["tasks"].values()).most_common()[-1][0]
    wanted = [t for t, task in records["tasks"].items() if task.kind == kind]
    rows = export(run, tmp_path / "grpo.jsonl", "grpo", "--kinds", kind)
    assert [r["task_id"] for r in rows] == wanted
    sft = export(run, tmp_path / "sft.jsonl", "sft", "--kinds", f"{kind}, induction")
    assert {r["kind"] for r in sft} <= {kind, "induction"} and kind in {r["kind"] for r in sft}


def test_difficulty_and_tier_filters_use_the_measured_pass_rate(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    stats = records["stats"]
    tiers = {t: tier_of(s["passed"], s["samples"]) for t, s in stats.items()}
    assert set(tiers.values()) == {"easy", "medium", "hard"}, "the fixture needs every tier"
    for tier in ("easy", "medium", "hard"):
        rows = export(run, tmp_path / "grpo.jsonl", "grpo", "--tier", tier)
        assert {r["task_id"] for r in rows} == {t for t, v in tiers.items() if v == tier}, tier
    rows = export(run, tmp_path / "grpo.jsonl", "grpo", "--min-difficulty", "0.25", "--max-difficulty", "0.5")
    assert {r["task_id"] for r in rows} == {t for t, s in stats.items() if 0.25 <= measured(s) <= 0.5}
    assert all(0.25 <= r["difficulty"] <= 0.5 for r in rows)
    sft = export(run, tmp_path / "sft.jsonl", "sft", "--max-difficulty", "0.25")
    assert sft and {r["task_id"] for r in sft} <= {t for t, s in stats.items() if measured(s) <= 0.25}


def test_tiers_have_strict_bounds() -> None:
    assert [tier_of(k, 3) for k in range(4)] == ["hard", "medium", "medium", "easy"]
    assert [tier_of(k, 4) for k in range(5)] == ["hard", "hard", "medium", "easy", "easy"]


def test_status_keeps_tasks_with_a_sample_that_ended_so(run: Path, records: dict[str, Any], tmp_path: Path) -> None:
    failed = {t.task_id for t in records["trajs"].values() if t.final_status == "failed" and t.attempts}
    assert failed and failed != set(records["tasks"])
    rows = export(run, tmp_path / "verl.parquet", "verl", "--status", "failed")
    assert {task_of(r) for r in rows} == failed
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    assert export(run, tmp_path / "sft.jsonl", "sft", "--status", "passed") == export(
        run, tmp_path / "sft2.jsonl", "sft"
    )


def test_filters_that_leave_nothing_write_an_empty_file(run: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "grpo.jsonl"
    assert export(run, out, "grpo", "--status", "timeout", "--tier", "easy") == []
    assert out.is_file() and out.read_bytes() == b""
    assert "0 grpo rows" in capsys.readouterr().err


# -- identical rows, stable bytes, unfinished runs --------------------------------------------------


def test_identical_rows_are_written_once(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    before = {fmt: export(run, tmp_path / f"{fmt}.jsonl", fmt) for fmt in ("sft", "dpo", "grpo")}
    trajs = [json.loads(line) for line in (copy / "trajectories.jsonl").read_text().splitlines()]
    twin = next(t for t in trajs if t["final_status"] == "passed" and len(t["attempts"]) > 1)
    twin.update(trajectory_id=twin["trajectory_id"] + "-twin", sample_index=99)
    task = json.loads((copy / "tasks.jsonl").read_text().splitlines()[0])
    task.update(task_id=task["task_id"] + "-twin")  # no trajectory: its prompt is rendered, the same text
    with (copy / "trajectories.jsonl").open("a") as f:
        f.write(json.dumps(twin) + "\n")
    with (copy / "tasks.jsonl").open("a") as f:
        f.write(json.dumps(task) + "\n")
    after = {fmt: export(copy, tmp_path / f"{fmt}-twin.jsonl", fmt) for fmt in before}
    assert after["sft"] == before["sft"]
    assert after["grpo"] == before["grpo"]

    def repairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if r["pair_type"] == "repair"]

    assert repairs(after["dpo"]) == repairs(before["dpo"])  # the twin's pairs are the original's
    for fmt, rows in after.items():
        keys = [json.dumps([r.get("messages"), r.get("prompt"), r.get("chosen"), r.get("rejected")]) for r in rows]
        assert len(keys) == len(set(keys)), fmt


def _twin_in_the_other_split(run: Path, copy: Path, fraction: float) -> str:
    """Copy ``run`` to ``copy`` with a twin of a task that has a passing trajectory: another id, in the
    other split at ``fraction``, its tasks and trajectories the same otherwise. Returns its id."""
    shutil.copytree(run, copy)
    trajs = read_rows(copy / "trajectories.jsonl")
    original = next(t["task_id"] for t in trajs if t["final_status"] == "passed")
    ids = (f"{original}-twin{n}" for n in range(100))
    twin_id = next(i for i in ids if split_of(i, fraction) != split_of(original, fraction))
    task = next(t for t in read_rows(copy / "tasks.jsonl") if t["task_id"] == original)
    twins = [
        {**t, "task_id": twin_id, "trajectory_id": t["trajectory_id"].replace(original, twin_id)}
        for t in trajs
        if t["task_id"] == original
    ]
    with (copy / "tasks.jsonl").open("a") as f:
        f.write(json.dumps({**task, "task_id": twin_id}) + "\n")
    with (copy / "trajectories.jsonl").open("a") as f:
        f.writelines(json.dumps(t) + "\n" for t in twins)
    return twin_id


def test_each_split_exported_alone_never_holds_an_example_of_the_other(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    _twin_in_the_other_split(run, copy, 0.5)

    def key(row: dict[str, Any]) -> str:
        return json.dumps([row.get("messages"), row.get("prompt"), row.get("chosen"), row.get("rejected")])

    for fmt in ("sft", "dpo", "grpo"):
        whole = export(copy, tmp_path / f"{fmt}.jsonl", fmt, "--test-fraction", "0.5")
        alone = {
            split: export(copy, tmp_path / f"{fmt}-{split}.jsonl", fmt, "--test-fraction", "0.5", "--split", split)
            for split in ("train", "test")
        }
        assert not {key(r) for r in alone["train"]} & {key(r) for r in alone["test"]}, fmt
        for split, rows in alone.items():
            assert rows == [r for r in whole if r["split"] == split], (fmt, split)


def test_identical_twins_merge_in_the_sandbox_fusion_form_too(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    copy = tmp_path / "run"
    twin = _twin_in_the_other_split(run, copy, 0.1)
    before = export(run, tmp_path / "before.parquet", "verl", "--verl-reward", "sandbox_fusion")
    after = export(copy, tmp_path / "after.parquet", "verl", "--verl-reward", "sandbox_fusion")
    if twin.split("-twin")[0] in {r["extra_info"]["task_id"] for r in before}:  # an induction task
        assert after == before
    else:
        assert len(after) == len(before)


def test_imported_tasks_that_differ_only_in_check_code_are_not_merged(tmp_path: Path) -> None:
    """HumanEval and HumanEval+ share each problem's prompt; their asserts differ, and so do their rewards."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    task: dict[str, Any] = {
        "task_id": "HumanEval/0",
        "description": 'def add(a, b):\n    """Add two numbers."""\n',
        "entry_point": "add",
        "reference_code": "def add(a, b):\n    return a + b\n",
        "tests": [],
        "check_code": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "source": "humaneval",
    }
    stronger = task["check_code"] + "    assert candidate(-1, 1) == 0\n"
    plus = {**task, "task_id": "HumanEvalPlus/0", "check_code": stronger}
    same = {**task, "task_id": "HumanEval/0-again"}
    (run / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in (task, plus, same)))
    rows = export(run, tmp_path / "grpo.jsonl", "grpo")
    assert [r["task_id"] for r in rows] == ["HumanEval/0", "HumanEvalPlus/0"]
    assert rows[0]["prompt"] == rows[1]["prompt"]
    assert [task_from_ground_truth(r["ground_truth"])[0].check_code for r in rows] == [
        task["check_code"],
        plus["check_code"],
    ]


def test_dpo_never_rejects_code_that_passed_in_another_attempt(
    run: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    """A flaky verdict (the same code passing once and timing out under load once) is no preference."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    trajs = read_rows(copy / "trajectories.jsonl")
    by_task: dict[str, list[dict[str, Any]]] = {}
    for t in trajs:
        by_task.setdefault(t["task_id"], []).append(t)
    task_id, samples = next(
        (tid, ts)
        for tid, ts in by_task.items()
        if records["tasks"][tid].kind == "induction"
        and sum(t["final_status"] == "passed" for t in ts) >= 2
        and any(t["final_status"] != "passed" and t["attempts"] for t in ts)
    )
    passing, other = [t for t in samples if t["final_status"] == "passed"][:2]
    failing = next(t for t in samples if t["final_status"] != "passed" and t["attempts"])
    code = passing["attempts"][-1]["code"]
    last = other["attempts"][-1]  # another passing answer, other code: a pair with the failing sample
    last["code"] = code + "# checked\n"
    other["messages"][last["message_index"]]["content"] = f"```python\n{last['code']}```\n"
    first = failing["attempts"][0]
    first["code"] = code  # the passing code, judged a failure this time, in other words
    failing["messages"][first["message_index"]]["content"] = f"Same idea, written out:\n```python\n{code}```\n"
    (copy / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajs))

    rows = export(copy, tmp_path / "dpo.jsonl", "dpo")
    trajectories = {t["trajectory_id"]: Trajectory.model_validate(t) for t in trajs}
    passed_codes: dict[str, set[str]] = {}
    for judged in trajectories.values():
        passed_codes.setdefault(judged.task_id, set()).update(a.code for a in judged.attempts if a.result.all_passed)
    assert rows
    for row in rows:
        bad = trajectories[row["rejected_trajectory_id"]]
        rejected = next(a for a in bad.attempts if a.message_index == len(row["prompt"]))
        assert rejected.code not in passed_codes[row["task_id"]], row["task_id"]
    assert failing["trajectory_id"] not in {r["rejected_trajectory_id"] for r in rows if r["task_id"] == task_id}


def test_same_run_gives_byte_identical_files(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    for fmt in FORMATS:
        a, b = tmp_path / f"a-{fmt}", tmp_path / f"b-{fmt}"
        export(run, a, fmt)
        export(run, b, fmt)
        assert a.read_bytes() == b.read_bytes(), fmt


def test_a_run_still_being_written_exports_its_whole_lines(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    for name in ("tasks.jsonl", "trajectories.jsonl", "task_stats.jsonl"):
        with (copy / name).open("a") as f:
            f.write('{"task_id": "e9-torn", "kin')
    for fmt in ("sft", "grpo"):
        assert export(copy, tmp_path / f"{fmt}-torn.jsonl", fmt) == export(run, tmp_path / f"{fmt}.jsonl", fmt)


def test_default_output_is_in_the_run_directory(run: Path, tmp_path: Path, capsys: Any) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    assert main(["export", str(copy), "--format", "sft"]) == 0
    out = copy / "exports" / "sft.jsonl"
    rows = read_rows(out)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{len(rows)} sft rows" in err and str(out) in err


def test_a_tier_or_a_split_gets_a_file_of_its_own_beside_the_whole_export(run: Path, tmp_path: Path) -> None:
    # before: --tier medium wrote exports/grpo.jsonl over the whole export, as docs/training.md wrote both
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    assert main(["export", str(copy), "--format", "grpo"]) == 0
    whole = (copy / "exports" / "grpo.jsonl").read_bytes()
    assert main(["export", str(copy), "--format", "grpo", "--tier", "medium"]) == 0
    assert main(["export", str(copy), "--format", "grpo", "--split", "test"]) == 0
    assert (copy / "exports" / "grpo.jsonl").read_bytes() == whole  # untouched
    medium, test = read_rows(copy / "exports" / "grpo-medium.jsonl"), read_rows(copy / "exports" / "grpo-test.jsonl")
    assert len(medium) < len(read_rows(copy / "exports" / "grpo.jsonl"))
    assert {r["split"] for r in test} <= {"test"}


def test_a_failed_write_keeps_the_earlier_file(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "sft.jsonl"
    export(run, out, "sft")
    earlier = out.read_bytes()

    def broken(rows: Any) -> Any:
        def write(path: Path) -> None:
            path.write_text('{"messages": [')
            raise OSError(28, "No space left on device")

        return write

    monkeypatch.setattr(exports, "write_jsonl", broken)
    with pytest.raises(UserError, match="No space left"):
        export_run(run, "sft", out, ExportFilters())
    assert out.read_bytes() == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft.jsonl"]  # no temporary file left


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{missing}", "--format", "sft"], "not found"),
        (["{tmp}", "--format", "sft"], "not a run directory"),
        (["{run}", "--format", "sft", "--kinds", "induction,poetry"], "unknown task kind 'poetry'"),
        (["{run}", "--format", "sft", "--kinds", ","], "names no kind"),
        (["{run}", "--format", "dpo", "--status", "passed"], "does not apply to dpo"),
        (["{run}", "--format", "sft", "--status", "failed"], "can never match"),
        (["{run}", "--format", "grpo", "--final-only"], "sft only"),
        (["{run}", "--format", "sft", "--min-difficulty", "0.8", "--max-difficulty", "0.2"], "no task can match"),
        (["{run}", "--format", "grpo", "--tier", "easy", "--min-difficulty", "0.5"], "can never both hold"),
        (["{run}", "--format", "grpo", "--split", "test", "--test-fraction", "0"], "test split is empty"),
        (["{run}", "--format", "sft", "-o", "{run}/tasks.jsonl"], "run's own records"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run: Path, tmp_path: Path, capsys: Any, args: list[str], says: str) -> None:
    before = (run / "tasks.jsonl").read_bytes()
    argv = [a.format(run=run, tmp=tmp_path, missing=tmp_path / "nope") for a in args]
    assert main(["export", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err
    assert (run / "tasks.jsonl").read_bytes() == before
    assert not (run / "exports").exists() or not any((run / "exports").glob(".*.tmp"))


def test_verl_without_pyarrow_says_what_to_install(
    run: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert main(["export", str(run), "--format", "verl", "-o", str(tmp_path / "v.parquet")]) == 2
    err = capsys.readouterr().err
    assert "pyarrow" in err and "spade-selfplay[parquet]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "v.parquet").exists()


# -- datasets reads each ----------------------------------------------------------------------------


def test_datasets_loads_every_format(run: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("pyarrow")
    for fmt in FORMATS:
        out = tmp_path / ("verl.parquet" if fmt == "verl" else f"{fmt}.jsonl")
        rows = export(run, out, fmt)
        loader = "parquet" if fmt == "verl" else "json"
        data = datasets.load_dataset(loader, data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
        assert len(data) == len(rows), fmt
        first = data[0]
        key = "messages" if fmt == "sft" else "prompt"
        assert first[key] == rows[0][key], fmt
        if fmt == "verl":
            assert first["reward_model"]["style"] == "rule" and first["extra_info"]["index"] == 0
