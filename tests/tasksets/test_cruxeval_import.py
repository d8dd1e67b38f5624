"""``spade import cruxeval`` (issue 38): each CRUXEval row as an output- and an input-prediction task, judged
by ``assert f(input) == output`` as CRUXEval's harness does (Python's ``==`` on decoded values): the true
output and the true input pass, wrong ones fail. The programs (the rows' ``f``) are benign and run in the
subprocess sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli.app import main
from spade_llm.kinds import leaks
from spade_llm.kinds.base import same_case
from spade_llm.kinds.deduction import KIND as OUTPUT_PREDICTION
from spade_llm.types import Task, TestCase

ROWS = [
    {
        "code": "def f(nums):\n    output = []\n    for n in nums:\n        output.append((nums.count(n), n))\n"
        "    output.sort(reverse=True)\n    return output",
        "input": "[1, 1, 3, 1, 3, 1]",
        "output": "[(4, 1), (4, 1), (4, 1), (4, 1), (2, 3), (2, 3)]",
        "id": "sample_0",
    },
    {"code": "def f(a, b):\n    return a * b / 2", "input": "4, 3", "output": "6.0", "id": "sample_1"},
]
TRUE_OUTPUT = "f([1, 1, 3, 1, 3, 1]) == [(4, 1), (4, 1), (4, 1), (4, 1), (2, 3), (2, 3)]"
SAMPLES = [  # (task, prediction, CRUXEval's verdict)
    ("sample_0/output", TRUE_OUTPUT, True),
    ("sample_0/output", "f([1, 1, 3, 1, 3, 1]) == [[4, 1], [4, 1], [4, 1], [4, 1], [2, 3], [2, 3]]", False),  # lists
    ("sample_1/output", "f(4, 3) == 6", True),  # 6 == 6.0 in Python
    ("sample_1/output", "f(4, 3) == 7.0", False),
    ("sample_0/input", TRUE_OUTPUT, True),
    ("sample_0/input", "f([1, 3]) == [(4, 1), (4, 1), (4, 1), (4, 1), (2, 3), (2, 3)]", False),
    ("sample_1/input", "f(6, 2) == 6.0", True),  # another input that gives the output
    ("sample_1/input", "f(1, 1) == 6.0", False),
]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("name", ["cruxeval.jsonl", "cruxeval.parquet"])
def test_every_row_is_an_output_and_an_input_prediction_judged_as_cruxeval_judges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    source, tasks = write(tmp_path / name, ROWS), tmp_path / "tasks.jsonl"
    assert main(["import", "cruxeval", str(source), "-o", str(tasks)]) == 0
    made = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert [t["task_id"] for t in made] == [f"cruxeval/{r['id']}/{side}" for r in ROWS for side in ("output", "input")]
    assert all(t["tests"][0]["python_eq"] == ROWS[i // 2]["output"] for i, t in enumerate(made))
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"cruxeval/{t}", "completion": c}) + "\n" for t, c, _ in SAMPLES))
    capsys.readouterr()
    assert main(["evaluate", str(tasks), "--samples", str(samples), "--sandbox", "subprocess"]) == 0
    verdicts = [json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines()]
    assert verdicts == [want for _, _, want in SAMPLES]
    # the references' own answers pass: the true output predicted, the true input proposed
    assert main(["evaluate", str(tasks), "--sandbox", "subprocess"]) == 0
    assert all(json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [("input", "[1, 2", "not an argument list"), ("output", "f(3)", "not a Python literal"), ("code", None, "missing")],
)
def test_a_malformed_row_stops_the_import_naming_row_and_field_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any, said: str
) -> None:
    broken = dict(ROWS[1])
    if value is None:
        del broken[field]
    else:
        broken[field] = value
    tasks = tmp_path / "tasks.jsonl"
    assert main(["import", "cruxeval", str(write(tmp_path / "c.jsonl", [ROWS[0], broken])), "-o", str(tasks)]) == 2
    err = capsys.readouterr().err
    assert f"c.jsonl:2: {field}:" in err and said in err and not tasks.exists()


NO_JSON_ROWS = [  # outputs JSON cannot write: each test keeps its literal alone (TestCase.literal_only)
    {
        "code": "def f(xs):\n    return set(x % 3 for x in xs)",
        "input": "[1, 4, 5, 9]",
        "output": "{0, 1, 2}",
        "id": "s",
    },
    {"code": "def f(s):\n    return s.encode('ascii')[::-1]", "input": "'abc'", "output": "b'cba'", "id": "b"},
    {"code": "def f(a, b):\n    return complex(a, b)", "input": "1, 2", "output": "(1+2j)", "id": "c"},
    {
        "code": "def f(xs):\n    return {x: len(str(x)) for x in xs}",
        "input": "[5, 10]",
        "output": "{5: 1, 10: 2}",
        "id": "d",
    },
    {
        "code": "def f(n, frozen):\n    return frozenset(range(n)) if frozen else set(range(n))",
        "input": "3, True",
        "output": "{0, 1, 2}",
        "id": "fs",
    },
]
NO_JSON_SAMPLES = [  # (task, prediction or proposed input, CRUXEval's verdict: Python's ==)
    ("s/output", "f([1, 4, 5, 9]) == {2, 1, 0}", True),
    ("s/output", "f([1, 4, 5, 9]) == [0, 1, 2]", False),  # a list is not the set
    ("s/output", "f([1, 4, 5, 9]) == {0, 1}", False),
    ("s/input", "f([1, 4, 5, 9]) == {0, 1, 2}", True),
    ("s/input", "f([3, 7, 8]) == {0, 1, 2}", True),  # another input giving the set
    ("s/input", "f([1, 4]) == {0, 1, 2}", False),  # gives {1}
    ("b/output", "f('abc') == b'cba'", True),
    ("b/output", "f('abc') == 'cba'", False),  # a str is not the bytes
    ("b/input", "f('abc') == b'cba'", True),
    ("b/input", "f('xyz') == b'cba'", False),
    ("c/output", "f(1, 2) == (1+2j)", True),
    ("c/output", "f(1, 2) == [1, 2]", False),
    ("c/input", "f(1.0, 2.0) == (1+2j)", True),
    ("c/input", "f(2, 1) == (1+2j)", False),
    ("d/output", "f([5, 10]) == {5: 1, 10: 2}", True),
    ("d/output", "f([5, 10]) == {'5': 1, '10': 2}", False),  # JSON's str keys are not the int keys
    ("d/input", "f([10, 5]) == {5: 1, 10: 2}", True),
    ("d/input", "f(['5', '10']) == {5: 1, 10: 2}", False),
    ("fs/input", "f(3, True) == {0, 1, 2}", True),  # a frozenset == the set literal, in Python and here
    ("fs/input", "f(3, False) == {0, 1, 2}", True),
    ("fs/input", "f(2, True) == {0, 1, 2}", False),
]


def test_outputs_with_no_json_form_import_as_both_tasks_and_are_judged_by_pythons_eq(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    source = write(tmp_path / "c.jsonl", [ROWS[1], *NO_JSON_ROWS])
    assert main(["import", "cruxeval", str(source), "-o", str(tasks)]) == 0
    assert "imported 12 tasks" in capsys.readouterr().err
    lines = tasks.read_text().splitlines()
    made = [json.loads(line) for line in lines]
    assert [t["task_id"] for t in made][2:] == [
        f"cruxeval/{r['id']}/{s}" for r in NO_JSON_ROWS for s in ("output", "input")
    ]
    for row, written in zip([r for r in NO_JSON_ROWS for _ in "oi"], made[2:], strict=True):
        assert written["tests"] == [{"input": f"({row['input']},)", "python_eq": row["output"]}]  # no JSON stand-in
    # the task file round-trips: read back, each test's expected is the literal's own value, written the same
    read = [Task.model_validate_json(line) for line in lines]
    assert [json.dumps(t.dump()) for t in read] == [json.dumps(t) for t in made]
    assert read[2].tests[0].expected == {0, 1, 2} and read[4].tests[0].expected == b"cba"
    assert read[8].tests[0].expected == {5: 1, 10: 2} and all(t.tests[0].literal_only for t in read[2:])
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(json.dumps({"task_id": f"cruxeval/{t}", "completion": c}) + "\n" for t, c, _ in NO_JSON_SAMPLES)
    )
    capsys.readouterr()
    assert main(["evaluate", str(tasks), "--samples", str(samples), "--sandbox", "subprocess"]) == 0
    verdicts = [json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines()]
    assert verdicts == [want for _, _, want in NO_JSON_SAMPLES]
    assert main(["evaluate", str(tasks), "--sandbox", "subprocess"]) == 0  # every reference's own answer passes
    assert all(json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(
    ("given", "literal", "description"),
    [
        ("([1, 4, 5, 9],)", "{0, 1, 2}", "Note: f([1, 4, 5, 9]) == {0, 1, 2}."),
        ("('abc',)", "b'cba'", "Hint: f('abc') returns b'cba'"),
        ("([5, 10],)", "{5: 1, 10: 2}", "For example f([5, 10]) -> {5: 1, 10: 2}"),
    ],
)
def test_a_literal_only_output_shown_in_the_text_is_a_leak(given: str, literal: str, description: str) -> None:
    """The leak search reads a literal-only test's value (a set, bytes, int keys) as Python writes it."""
    test = TestCase(input=given, python_eq=literal)
    kind = OUTPUT_PREDICTION.name
    task = Task(task_id="t", kind=kind, description=description, entry_point="f", reference_code="", tests=[test])
    assert [leak.test for leak in leaks(task, 1)] == [0]
    assert leaks(task.model_copy(update={"description": "What does f return?"}), 1) == []


def test_literal_only_tests_are_one_case_when_their_values_are_equal() -> None:
    """``same_case`` (an example already among the tests is not added twice) by the literals' values."""
    a_set = TestCase(input="(1,)", python_eq="{1, 2}")
    assert same_case(a_set, TestCase(input="(1,)", python_eq="{2, 1}"))
    assert not same_case(a_set, TestCase(input="(1,)", expected=[1, 2]))  # a list is not the set
    assert not same_case(a_set, TestCase(input="(1,)", python_eq="{1, 3}"))
    assert not same_case(TestCase(input="(1,)", python_eq="b'ab'"), TestCase(input="(1,)", expected="ab"))
