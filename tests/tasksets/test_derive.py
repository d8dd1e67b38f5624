"""``spade import ... --derive bugfix --per-task K`` (``tasksets/derive.py``, ``kinds/bugfix.py``'s ``derive``):
bug-fix tasks made out of a benchmark's references, each bug proven caught by the benchmark's own tests.

The file is a few problems in HumanEval's published shape (``prompt``, ``canonical_solution``, ``test``,
``entry_point``). What must hold: every derived task is a bug-fix task whose buggy code fails some shown
example and passes some test; ``evaluate`` passes every reference and no buggy code, and the buggy code
judged as the *base* task (the benchmark's own, no unchanged-code rule) fails too, so the bug is caught by
the benchmark's asserts and not only by ``check_answer``'s rule; the same file and seed give the same file.
Everything runs on the subprocess sandbox: the programs are the rows' own and their procedural bugs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import run_backend

from spade_llm.cli.app import main
from spade_llm.judge import Judge
from spade_llm.kinds import get_kind
from spade_llm.sandbox.base import Limits
from spade_llm.solver import examples_task
from spade_llm.tasksets.derive import derive_tasks
from spade_llm.tasksets.importers import import_humaneval
from spade_llm.types import Task

KIND = "bugfix"


def row(n: int, entry: str, prompt: str, body: str, asserts: list[str]) -> dict[str, Any]:
    test = "\n\nMETADATA = {'author': 'test'}\n\n\ndef check(candidate):\n" + "".join(
        f"    assert {a}\n" for a in asserts
    )
    return {"task_id": f"Toy/{n}", "prompt": prompt, "canonical_solution": body, "test": test, "entry_point": entry}


SUM_POSITIVE = row(
    0,
    "sum_positive",
    'def sum_positive(xs: list) -> int:\n    """The sum of the positive numbers of xs.\n'
    '    >>> sum_positive([1, -2, 3])\n    4\n    >>> sum_positive([-1, -2])\n    0\n    """\n',
    "    total = 0\n    for x in xs:\n        if x > 0:\n            total += x\n    return total\n",
    [
        "candidate([1, -2, 3]) == 4",
        "candidate([-1, -2]) == 0",
        "candidate([]) == 0",
        "candidate([5]) == 5",
        "candidate([0, 0, 7, -7]) == 7",
        "candidate([2, 2, 2]) == 6",
    ],
)
COUNT_ABOVE = row(
    1,
    "count_above",
    'def count_above(xs: list, k: int) -> int:\n    """How many items of xs are larger than k.\n'
    '    >>> count_above([1, 5, 3], 2)\n    2\n    >>> count_above([], 0)\n    0\n    """\n',
    "    n = 0\n    for i in range(len(xs)):\n        if xs[i] > k:\n            n += 1\n    return n\n",
    [
        "candidate([1, 5, 3], 2) == 2",
        "candidate([], 0) == 0",
        "candidate([4, 4, 4], 4) == 0",
        "candidate([9, 1], 0) == 2",
        "candidate([3, 8, 2, 7], 5) == 2",
        "candidate([-3, -1], -2) == 1",
    ],
)
LAST_INDEX = row(
    2,
    "last_index",
    'def last_index(xs: list, x: int) -> int:\n    """The last index of x in xs, or -1.\n'
    '    >>> last_index([1, 2, 1], 1)\n    2\n    >>> last_index([3], 4)\n    -1\n    """\n',
    "    for i in range(len(xs) - 1, -1, -1):\n        if xs[i] == x:\n            return i\n    return -1\n",
    [
        "candidate([1, 2, 1], 1) == 2",
        "candidate([3], 4) == -1",
        "candidate([], 1) == -1",
        "candidate([7, 7, 7, 7], 7) == 3",
        "candidate([5, 6], 5) == 0",
        "candidate([0, 1, 2, 3], 3) == 3",
    ],
)
WRONG = row(  # its canonical solution fails its own asserts: its own gates turn it down, no bug is tried
    3,
    "double",
    'def double(x: int) -> int:\n    """Twice x.\n    >>> double(2)\n    4\n    """\n',
    "    return x + 2\n",
    ["candidate(2) == 4", "candidate(3) == 6", "candidate(0) == 0"],
)
PROBLEMS = [SUM_POSITIVE, COUNT_ABOVE, LAST_INDEX, WRONG]
GOOD = 3


def write_rows(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def spade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    code = main([*argv, "--sandbox", run_backend(), "--concurrency", "2"])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return code, rows, [line for line in err.splitlines() if line.strip() and "security boundary" not in line]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The problems' file derived once with --per-task 2: (the tasks file, the summary on stderr)."""
    import contextlib
    import io

    where = tmp_path_factory.mktemp("derive")
    source = write_rows(where / "toy.jsonl", PROBLEMS)
    out = where / "bugs.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        argv = ["import", "humaneval", source, "-o", str(out), "--derive", KIND, "--per-task", "2"]
        code = main([*argv, "--sandbox", run_backend(), "--concurrency", "2"])
    assert code == 0, err.getvalue()
    return out, [line for line in err.getvalue().splitlines() if "security boundary" not in line]


@pytest.fixture(scope="module")
def judge() -> Any:
    from spade_llm.sandbox.registry import get_sandbox

    box = get_sandbox("subprocess")
    yield Judge(box, Limits(timeout_s=10.0))
    box.close()


def test_each_good_problem_gives_two_bug_fix_tasks_named_after_it(derived):
    out, err = derived
    tasks = read_jsonl(out)
    assert [t["task_id"] for t in tasks] == [f"Toy/{n}/bug{j}" for n in range(GOOD) for j in (1, 2)]
    bases = {r["task_id"]: r for r in PROBLEMS}
    for task in tasks:
        base = bases[task["meta"]["base_task"]]
        assert task["kind"] == KIND and task["source"] == "humaneval"
        assert task["reference_code"] == base["prompt"] + base["canonical_solution"]  # the reference, unbroken
        assert task["description"] == base["prompt"] and task["buggy_code"] != task["reference_code"]
        bug = task["meta"]["bug"]
        assert bug["maker"] == "procedural" and bug["edits"] and bug["diff"]
        assert 1 <= bug["changed_lines"] <= 3 and 1 <= bug["failed_tests"] < len(task["tests"])
    assert err[-1].startswith(f"derived 6 {KIND} tasks from 3 of 4 tasks -> {out}")
    assert "skipped 1: 1 runtime_error" in err[-1]  # the wrong canonical solution, named by its own gate


def test_each_buggy_code_fails_a_shown_example_and_passes_a_test(derived, judge):
    out, _ = derived
    for task in map(Task.model_validate, read_jsonl(out)):
        buggy = task.buggy_code or ""
        every = judge(task, buggy)
        assert 1 <= (every.tests_passed or 0) < (every.tests_total or 0), task.task_id  # caught, not broken
        shown = judge(examples_task(task), buggy)
        assert not shown.all_passed, task.task_id  # the solver sees a symptom in the docstring's examples
        assert [o["passed"] for o in task.meta["bug"]["shown"]] == [r.passed for r in shown.test_results or []]
        assert judge(task, task.reference_code).all_passed


def test_evaluate_passes_every_reference_and_no_buggy_code(derived, capsys, tmp_path):
    out, _ = derived
    code, rows, err = spade(capsys, "evaluate", str(out))
    assert code == 0 and len(rows) == 2 * GOOD and all(r["passed"] for r in rows), rows
    samples = tmp_path / "buggy.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t["task_id"], "code": t["buggy_code"]}) + "\n"
                               for t in read_jsonl(out)))  # fmt: skip
    code, rows, err = spade(capsys, "evaluate", str(out), "--samples", str(samples))
    assert len(rows) == 2 * GOOD and not any(r["passed"] for r in rows), rows
    assert "pass@1 0.0000" in err[-1]


def test_the_buggy_code_fails_the_benchmarks_own_tests_judged_as_the_base_task(derived, capsys, tmp_path):
    # check_answer gives an unchanged buggy code nothing by rule; judged as the base (the benchmark's own
    # task, of the default kind), the asserts alone must catch every bug
    out, _ = derived
    tasks = read_jsonl(out)
    as_base = tmp_path / "as_base.jsonl"
    as_base.write_text(
        "".join(json.dumps({k: v for k, v in t.items() if k not in ("kind", "buggy_code")}) + "\n" for t in tasks)
    )
    samples = tmp_path / "buggy.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t["task_id"], "code": t["buggy_code"]}) + "\n" for t in tasks))
    _, rows, _ = spade(capsys, "evaluate", str(as_base), "--samples", str(samples))
    assert len(rows) == 2 * GOOD
    assert all(not r["passed"] and r["status"] == "failed" and r["tests_passed"] >= 1 for r in rows), rows


def test_verify_finds_every_derived_task_valid(derived, capsys):
    out, _ = derived
    code, rows, _ = spade(capsys, "verify", str(out), "--check")
    assert code == 0 and len(rows) == 2 * GOOD and all(r["valid"] for r in rows), rows


def test_the_same_file_and_seed_give_the_same_tasks(derived, capsys, tmp_path):
    out, _ = derived
    source = write_rows(tmp_path / "toy.jsonl", PROBLEMS)
    again, other = tmp_path / "again.jsonl", tmp_path / "other.jsonl"
    assert spade(capsys, "import", "humaneval", source, "-o", str(again), "--derive", KIND, "--per-task", "2")[0] == 0
    assert again.read_bytes() == out.read_bytes()
    argv = ["import", "humaneval", source, "-o", str(other), "--derive", KIND, "--per-task", "2", "--seed", "7"]
    assert spade(capsys, *argv)[0] == 0
    assert [t["buggy_code"] for t in read_jsonl(other)] != [t["buggy_code"] for t in read_jsonl(out)]


def test_one_per_task_by_default(capsys, tmp_path):
    source = write_rows(tmp_path / "toy.jsonl", [SUM_POSITIVE])
    out = tmp_path / "one.jsonl"
    code, _, err = spade(capsys, "import", "humaneval", source, "-o", str(out), "--derive", KIND)
    assert code == 0 and [t["task_id"] for t in read_jsonl(out)] == ["Toy/0/bug1"]
    assert err == [f"derived 1 {KIND} tasks from 1 of 1 tasks -> {out}" + err[0].split(str(out), 1)[1]]


# -- what is refused, and what is skipped ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--derive", KIND, "--per-task", "0"], "argument --per-task: must be >= 1, got 0"),
        (["--per-task", "2"], "--per-task goes with --derive KIND"),
        (["--seed", "3"], "--seed goes with --derive KIND"),
        (["--derive", "induction"], "argument --derive: invalid choice: 'induction' (choose from 'bugfix')"),
    ],
)
def test_a_bad_derive_flag_is_one_line_and_writes_nothing(capsys, tmp_path, argv, says):
    source = write_rows(tmp_path / "toy.jsonl", [SUM_POSITIVE])
    out = tmp_path / "out.jsonl"
    code: int | str | None
    try:
        code = main(["import", "humaneval", source, "-o", str(out), *argv])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert not out.exists()


def test_nothing_derived_is_an_error_naming_why_and_writes_nothing(capsys, tmp_path):
    source = write_rows(tmp_path / "wrong.jsonl", [WRONG])
    out = tmp_path / "out.jsonl"
    code, _, err = spade(capsys, "import", "humaneval", source, "-o", str(out), "--derive", KIND)
    assert code == 2 and len(err) == 1 and not out.exists()
    assert "no bugfix task derived from its 1 tasks: 1 runtime_error" in err[0]


def test_a_base_without_a_reference_or_not_a_function_is_skipped_and_counted(tmp_path):
    good = import_humaneval(write_rows(tmp_path / "toy.jsonl", [SUM_POSITIVE]))[0]
    judge_only = good.model_copy(update={"task_id": "judge-only", "reference_code": ""})
    query = good.model_copy(update={"task_id": "query", "kind": "deduction"})
    made = derive_tasks([judge_only, good, query], KIND, 1, sandbox="subprocess", concurrency=2)
    assert [t.task_id for t in made.tasks] == ["Toy/0/bug1"]
    assert made.bases == made.done == 3
    assert made.skipped == {"no_reference": 1, "not_a_function": 1}
    assert made.yields == {0: 2, 1: 1}


def test_a_benchmark_judged_by_one_check_script_gives_no_bug(tmp_path):
    # asserts on computed values stay a check script (one test, as HumanEval/32's): a bug it catches fails
    # every test there is, so nothing is left to debug but a rewrite
    script = (
        "def check(candidate):\n    import random\n    rng = random.Random(0)\n    for _ in range(5):\n"
        "        xs = [rng.randint(-5, 5) for _ in range(4)]\n"
        "        assert candidate(xs) == sum(x for x in xs if x > 0)\n"
    )
    looped = dict(SUM_POSITIVE, test=script)
    task = import_humaneval(write_rows(tmp_path / "looped.jsonl", [looped]))[0]
    assert task.check_code is not None and not task.tests
    made = derive_tasks([task], KIND, 2, sandbox="subprocess", concurrency=2)
    assert made.tasks == [] and made.skipped == {"no_bug_kept": 1}
    assert made.rejected["bug_breaks_all"] >= 1


def test_only_kinds_with_a_derive_are_derived(tmp_path):
    from spade_llm.errors import UserError
    from spade_llm.kinds import DEFAULT_KIND
    from spade_llm.tasksets.derive import derivable_kinds

    assert derivable_kinds() == (KIND,)
    assert get_kind(KIND).derive is not None
    with pytest.raises(UserError, match="not derived from others; --derive takes bugfix"):
        derive_tasks([], DEFAULT_KIND)
    with pytest.raises(UserError, match="--per-task must be at least 1, got 0"):
        derive_tasks([], KIND, 0)
