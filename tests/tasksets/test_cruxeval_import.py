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


def test_an_output_with_no_json_form_is_left_out_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_set = {"code": "def f(x):\n    return {x}", "input": "1", "output": "{1}", "id": "sample_9"}
    tasks = tmp_path / "tasks.jsonl"
    assert main(["import", "cruxeval", str(write(tmp_path / "c.jsonl", [ROWS[1], with_set])), "-o", str(tasks)]) == 0
    assert "left out 1 row" in capsys.readouterr().err and len(tasks.read_text().splitlines()) == 2
