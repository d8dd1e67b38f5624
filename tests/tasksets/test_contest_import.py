"""``spade import apps|taco|codecontests|lcb`` (issue 38): each format from a small file written in its
published shape (and SandboxFusion's samples), every row imported or counted; a malformed row is one
error naming the row and the field, and no tasks file is written.

Nothing here runs a program: judging the imported tasks is test_contest_judging.py.
"""

from __future__ import annotations

import json

import pytest
from contest_rows import (
    SUM,
    SUM_IO,
    apps_row,
    codecontests_row,
    io_set,
    lcb_cases,
    lcb_row,
    leetcode_row,
    packed,
    write_jsonl,
    write_parquet,
)

from spade_llm.cli.app import main
from spade_llm.cli.flags import IMPORT_FORMAT
from spade_llm.errors import UserError
from spade_llm.solver import first_messages
from spade_llm.tasksets.contests import FORMATS, import_file, write_file
from spade_llm.tasksets.livecodebench import PRELUDE
from spade_llm.templates import Prompts
from spade_llm.types import Task

# -- CodeContests ---------------------------------------------------------------------------------------

TEST_SETS = ("public_tests", "private_tests", "generated_tests")


def check_codecontests_task(task: Task) -> None:
    assert (task.kind, task.entry_point, task.source) == ("program", "", "codecontests")
    assert [(t.input, t.expected) for t in task.tests] == SUM_IO  # public first; the repeated one once
    assert task.public_tests == 1 and task.time_limit_s == 2.5
    assert task.reference_code == SUM  # the first Python 3 solution that compiles (not Python 2, not C++)
    meta = task.meta
    assert meta["reference_solution"] == 3 and meta["python3_solutions"] == 2
    assert meta["incorrect_solutions"] == ["print(0)", "print(input())"]  # Python 3 ones, known wrong
    assert meta["tests"] == {"public_tests": 1, "private_tests": 2, "generated_tests": 2, "repeated_dropped": 1}
    assert (meta["site"], meta["difficulty"], meta["cf_rating"]) == ("CODEFORCES", "A", 1100)
    assert 0 < task.difficulty < 0.5


@pytest.mark.parametrize("name", ["cc.jsonl", "cc.jsonl.gz", "cc.parquet"])
def test_codecontests_rows_become_program_tasks(tmp_path, name):
    rows = [codecontests_row(), codecontests_row("2_B. Same", solutions={"language": [2], "solution": ["x"]})]
    path = write_parquet(tmp_path / name, rows) if name.endswith("parquet") else write_jsonl(tmp_path / name, rows)
    tasks, imported = import_file("codecontests", path)
    assert [t.task_id for t in tasks] == ["codecontests/1_A. Sum", "codecontests/2_B. Same"]
    check_codecontests_task(tasks[0])
    assert tasks[1].judge_only and tasks[1].reference_code == ""  # no Python 3 solution: judge-only
    assert (imported.tasks, imported.judge_only, dict(imported.left_out)) == (2, 1, {})


def test_codecontests_as_the_repositorys_converter_writes_it(tmp_path):
    """convert_riegeli_to_json.py: a JSON array, lists of objects, the time limit as protobuf text."""
    native = codecontests_row()

    def objects(value: dict, keys: tuple[str, str]) -> list[dict]:
        return [dict(zip(keys, pair, strict=True)) for pair in zip(*(value[k] for k in keys), strict=True)]

    row = {
        **native,
        **{field: objects(native[field], ("input", "output")) for field in TEST_SETS},
        **{field: objects(native[field], ("language", "solution")) for field in ("solutions", "incorrect_solutions")},
        "time_limit": "seconds: 2\nnanos: 500000000\n",
    }
    path = tmp_path / "test.json"
    path.write_text("[\n" + json.dumps(row) + ",\n" + json.dumps({**row, "name": "2_B", "time_limit": ""}) + "\n]")
    (task, other), _ = import_file("codecontests", path)
    check_codecontests_task(task)
    assert other.time_limit_s is None
    bad_limit = tmp_path / "bad.json"
    bad_limit.write_text(json.dumps([{**row, "time_limit": "two seconds"}]))
    with pytest.raises(UserError, match=r"bad\.json row 0: time_limit: 'two seconds' is not a duration"):
        import_file("codecontests", bad_limit)


def test_codecontests_problems_no_kind_can_judge_are_counted_not_dropped(tmp_path):
    rows = [
        codecontests_row(),
        codecontests_row("3_C. Files", input_file="input.txt", output_file="output.txt"),
        codecontests_row("4_D. Empty", public_tests=io_set([]), private_tests=None, generated_tests=io_set([])),
    ]
    tasks, imported = import_file("codecontests", write_jsonl(tmp_path / "cc.jsonl", rows))
    assert [t.task_id for t in tasks] == ["codecontests/1_A. Sum"]
    assert dict(imported.left_out) == {"reading or writing named files, not stdin and stdout": 1, "without tests": 1}


def test_sandbox_fusion_code_contests_samples_import(tmp_path):
    tests = [{"input": {"stdin": i}, "output": {"stdout": o}} for i, o in SUM_IO]
    row = {
        "id": 0,
        "content": "Read n, then n integers; print their sum.",
        "labels": json.dumps({"difficulty": "MEDIUM", "name": "a3", "source": "CODECHEF"}),
        "test": json.dumps(tests),
        "canonical_solution": {"python": [SUM]},
    }
    (task,), _ = import_file("codecontests", write_jsonl(tmp_path / "sf.jsonl", [row]))
    assert task.task_id == "codecontests/0" and task.kind == "program" and task.public_tests == 0
    assert [(t.input, t.expected) for t in task.tests] == SUM_IO and task.reference_code == SUM
    assert (task.meta["name"], task.meta["site"], task.difficulty) == ("a3", "CODECHEF", 0.5)


# -- LiveCodeBench --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lcb.jsonl", "lcb.json"])
def test_livecodebench_stdin_and_functional_problems_all_import(tmp_path, name):
    rows = [lcb_row(), lcb_row("abc300_b", private=json.dumps(lcb_cases(SUM_IO[2:]))), leetcode_row()]
    path = tmp_path / name
    path.write_text(json.dumps(rows) if name.endswith(".json") else "".join(json.dumps(r) + "\n" for r in rows))
    tasks, imported = import_file("lcb", path)
    first, second, leetcode = tasks
    assert (first.task_id, first.kind, first.source) == ("livecodebench/abc300_a", "program", "livecodebench")
    assert [(t.input, t.expected) for t in first.tests] == SUM_IO  # public, then the packed private ones
    assert first.public_tests == 1 and first.judge_only and first.time_limit_s is None
    assert first.entry_class is None and first.prelude is None and "entry_class" not in first.dump()
    assert first.meta["tests"] == {"public": 1, "private": 3, "repeated_dropped": 0}
    assert [(t.input, t.expected) for t in second.tests] == [SUM_IO[0], *SUM_IO[2:]]  # plain JSON private tests
    assert (imported.tasks, imported.judge_only) == (3, 3) and dict(imported.left_out) == {}
    check_leetcode_task(leetcode)
    assert leetcode.task_id == "livecodebench/2727" and leetcode.public_tests == 1
    assert leetcode.meta["tests"] == {"public": 1, "private": 1, "repeated_dropped": 0}


def check_leetcode_task(task: Task) -> None:
    """``leetcode_row``'s problem as LiveCodeBench's harness judges it: a judge-only call of
    ``Solution().isEmpty`` after its imports, each line of an input one argument's JSON."""
    assert (task.kind, task.entry_point, task.entry_class) == ("induction", "isEmpty", "Solution")
    assert task.judge_only and task.prelude == PRELUDE and "from typing import *" in PRELUDE
    assert (
        "Starter code:\n```python\nclass Solution:\n    def isEmpty(self, xs: List[int]) -> bool:" in task.description
    )
    assert [t.dump() for t in task.tests] == [
        {"input": "([],)", "expected": True, "python_eq": "True", "tuple_as_list": True},
        {"input": "([1, 2], 'a\\n')", "expected": [False, 2.5], "python_eq": "[False, 2.5]", "tuple_as_list": True},
    ]
    assert Task.model_validate_json(json.dumps(task.dump())) == task  # a task file carries it all


def test_a_leetcode_tasks_prompt_asks_for_the_class_and_a_functions_for_the_function(tmp_path):
    (task,), _ = import_file("lcb", write_jsonl(tmp_path / "lcb.jsonl", [leetcode_row()]))
    prompt = first_messages(Prompts(), task, 1)[-1].content
    assert "Write a Python class `Solution` with the method `isEmpty`" in prompt
    assert "Reply with the complete class" in prompt and "Python function" not in prompt
    function = task.model_copy(update={"entry_class": None})
    prompt = first_messages(Prompts(), function, 1)[-1].content
    assert "Write a Python function `isEmpty`.\nIt must pass" in prompt and "complete function" in prompt


def test_sandbox_fusion_livecodebench_samples_import(tmp_path):
    io = {"inputs": [i for i, _ in SUM_IO], "outputs": [o for _, o in SUM_IO], "fn_name": None}
    prompt = "You are an expert.\n### Question:\nRead n, then n integers; print their sum.\n\n### Format: Read stdin."
    row = {
        "id": 1,
        "content": prompt,
        "canonical_solution": "import sys; sys.exit(0)",
        "test": packed({"input_output": json.dumps(io)}),
        "labels": json.dumps({"task_id": "codeforces/1873_A", "category": "codeforces", "difficulty": "easy"}),
    }
    functional = {"inputs": ["[]", '[1, 2]\n"a\\n"'], "outputs": ["true", "[false, 2.5]"], "fn_name": "isEmpty"}
    starter = "class Solution:\n    def isEmpty(self, xs: List[int]) -> bool:\n        \n"
    leetcode = {
        **row,
        "id": 10,
        "content": prompt.replace("Read stdin.", f"Use the starter code.\n```python\n{starter}```\n\n### Answer:"),
        "test": packed({"input_output": json.dumps(functional)}),
        "labels": json.dumps({"task_id": "leetcode/2727", "category": "leetcode", "difficulty": "easy"}),
    }
    tasks, imported = import_file("lcb", write_jsonl(tmp_path / "sf.jsonl", [row, leetcode]))
    task, method = tasks
    assert task.task_id == "livecodebench/codeforces/1873_A" and task.judge_only and task.public_tests == 0
    assert task.description == "Read n, then n integers; print their sum."
    assert [(t.input, t.expected) for t in task.tests] == SUM_IO
    assert method.task_id == "livecodebench/leetcode/2727" and method.public_tests == 0
    check_leetcode_task(method)
    assert dict(imported.left_out) == {} and imported.tasks == 2


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"metadata": "{}"}, "metadata.func_name: a functional problem names its method"),
        (
            {"public_test_cases": json.dumps(lcb_cases([("[1, 2", "true")], "functional"))},
            r"public_test_cases\[0\]: not JSON lines",
        ),
        ({"public_test_cases": json.dumps(lcb_cases([("NaN", "true")], "functional"))}, "not finite"),
        ({"private": json.dumps(lcb_cases(SUM_IO[:1]))}, "stdin and functional tests mixed"),
    ],
)
def test_a_malformed_functional_row_is_one_error_naming_its_field(tmp_path, over, message):
    row = {**leetcode_row(), **over}
    if "private" in over:
        row["private_test_cases"] = row.pop("private")
    with pytest.raises(UserError, match=message):
        import_file("lcb", write_jsonl(tmp_path / "lcb.jsonl", [row]))


# -- APPS and TACO --------------------------------------------------------------------------------------


def test_apps_stdin_and_function_problems(tmp_path):
    stdin_io = {"inputs": ["2\n1 2\n", ["3", "1 2 3"]], "outputs": ["3\n", ["6"]]}  # lines lists joined
    fn_io = {"fn_name": "add", "inputs": [[1, 2], [[1], {"a": 2}]], "outputs": [[3], [[1, 2]]]}
    rows = [
        apps_row(1, stdin_io, ["print 1", SUM]),
        apps_row(2, fn_io, ["def add(a, b):\n    return a + b\n"], starter="def add(a, b):\n"),
        apps_row(3, {"fn_name": "f", "inputs": [[1]], "outputs": [[1]]}, None, starter="class Solution:\n    def f"),
        apps_row(4, None, None),  # APPS's train split has rows without tests
    ]
    tasks, imported = import_file("apps", write_jsonl(tmp_path / "apps.jsonl", rows))
    program, function = tasks
    assert (program.task_id, program.kind, program.public_tests) == ("apps/1", "program", 0)
    assert [(t.input, t.expected) for t in program.tests] == [("2\n1 2\n", "3\n"), ("3\n1 2 3", "6")]
    assert program.reference_code == SUM and program.meta["reference_solution"] == 1
    assert (function.kind, function.entry_point, function.public_tests) == ("induction", "add", 0)
    assert [(t.input, t.expected) for t in function.tests] == [("(1, 2)", 3), ("([1], {'a': 2})", [1, 2])]
    assert "Starter code:\n```python\ndef add(a, b):" in function.description
    assert dict(imported.left_out) == {
        "LeetCode-style (a method of class Solution, which APPS's harness calls its own way)": 1,
        "without tests": 1,
    }


def test_taco_rows_take_their_index_as_id_and_their_time_limit(tmp_path):
    io = {"inputs": ["1\n5\n"], "outputs": ["5\n"]}
    taco = {k: v for k, v in apps_row(0, io, [SUM]).items() if k not in ("problem_id",)}
    rows = [
        {**taco, "difficulty": "MEDIUM_HARD", "time_limit": "2.5 seconds", "source": "codeforces", "tags": "['Math']"},
        {**taco, "difficulty": "UNKNOWN_DIFFICULTY", "time_limit": "None", "solutions": "[]"},
    ]
    first, second = import_file("taco", write_jsonl(tmp_path / "taco.jsonl", rows))[0]
    assert (first.task_id, first.source, first.time_limit_s, first.difficulty) == ("taco/0", "taco", 2.5, 0.5)
    assert (first.meta["site"], first.meta["tags"]) == ("codeforces", "['Math']")
    assert (second.task_id, second.time_limit_s, second.difficulty, second.judge_only) == ("taco/1", None, 0.5, True)


# -- malformed rows: one error, nothing written ---------------------------------------------------------

MALFORMED = {
    "codecontests": (
        [codecontests_row(), codecontests_row("2_B", private_tests={"input": ["1\n", "2\n"], "output": ["1\n"]})],
        ":2: private_tests.output: 1 outputs for 2 inputs",
    ),
    "lcb": ([lcb_row(), lcb_row("abc300_b", private="eJzLSM3JyQcABiwCFQ==!")], ":2: private_test_cases: neither JSON"),
    "apps": (
        [apps_row(1, {"inputs": [], "outputs": []}, []), apps_row(2, None, None, input_output="{x")],
        ":2: input_output: not JSON",
    ),
    "taco": ([apps_row(1, {"inputs": ["1"], "outputs": [1]}, [])], ":1: input_output.outputs[0]: neither a string nor"),
}


@pytest.mark.parametrize("fmt", list(MALFORMED))
def test_a_malformed_row_is_one_error_naming_row_and_field_and_nothing_is_written(tmp_path, fmt):
    rows, says = MALFORMED[fmt]
    source, out = write_jsonl(tmp_path / "rows.jsonl", rows), tmp_path / "tasks.jsonl"
    with pytest.raises(UserError) as e:
        write_file(fmt, source, out)
    assert str(e.value).startswith(str(source)) and says in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
    assert not out.exists() and list(tmp_path.iterdir()) == [source]  # no tasks file, no temporary left


def test_a_malformed_parquet_row_is_named_by_its_row_and_an_earlier_tasks_file_stays(tmp_path, capsys):
    rows = [codecontests_row(), codecontests_row("2_B", time_limit={"seconds": -1, "nanos": 0})]
    source, out = write_parquet(tmp_path / "cc.parquet", rows), tmp_path / "tasks.jsonl"
    out.write_text("earlier\n")
    assert main(["import", "codecontests", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"spade import: error: {source} row 1: time_limit.seconds: not a whole number >= 0"]
    assert out.read_text() == "earlier\n"


def test_a_repeated_task_id_names_both_rows(tmp_path):
    source = write_jsonl(tmp_path / "cc.jsonl", [codecontests_row(), codecontests_row()])
    with pytest.raises(UserError, match=r"cc\.jsonl:2: task id 'codecontests/1_A\. Sum' repeated \(first at .*:1\)"):
        import_file("codecontests", source)


def test_a_file_whose_every_row_is_left_out_is_an_error(tmp_path):
    row = lcb_row(public_test_cases="[]", private="[]")
    with pytest.raises(UserError, match="no task made of its 1 rows: 1 without tests"):
        import_file("lcb", write_jsonl(tmp_path / "lcb.jsonl", [row]))


# -- the command ------------------------------------------------------------------------------------------


def test_the_command_writes_the_tasks_and_says_what_it_left_out(tmp_path, capsys):
    source = write_jsonl(tmp_path / "lcb.jsonl", [lcb_row(), lcb_row(public_test_cases="[]", private="[]")])
    out = tmp_path / "tasks.jsonl"
    assert main(["import", "lcb", str(source), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"imported 1 tasks -> {out} (1 judge-only" in err and "left out 1 row: 1 without tests" in err
    (written,) = [Task.model_validate_json(line) for line in out.read_text().splitlines()]
    assert written.task_id == "livecodebench/abc300_a" and len(written.tests) == 4


def test_every_contest_format_is_a_choice_of_the_command():
    assert set(FORMATS) <= set(IMPORT_FORMAT.kw["choices"])
