"""``spade import evalplus``: HumanEval+ and MBPP+ rows as function tasks, judged as EvalPlus's harness judges.

EvalPlus's ``unsafe_execute`` passes an output on an input when it is ``==`` the canonical solution's
output there, or, where ``atol`` is not 0 (the row's, or ``1e-6`` from the first float output of the
run on), of the same type and length and ``numpy.allclose(out, exp, rtol=1e-07, atol=atol)``. Each
answer below is listed with the verdict that rule gives (worked out by hand, in the comments); spade's
must be the same. The rows are written here in EvalPlus's published shapes (``HumanEvalPlus.jsonl.gz``:
a HumanEval prompt and its canonical body; ``MbppPlus.jsonl.gz``: a docstring prompt, a whole canonical
function, ``Mbpp/N`` ids), not copied from it. The programs are benign: the subprocess sandbox runs them.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from spade_llm.cli.app import main
from spade_llm.cli.flags import IMPORT_FORMAT
from spade_llm.errors import UserError
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.verdict import all_close, passes
from spade_llm.tasksets.evalplus import (
    NO_INPUT_LITERAL,
    NO_JSON_OUTPUT,
    OVER_LIMITS,
    SPECIAL_ORACLE,
    call_literal,
    import_evalplus,
)
from spade_llm.types import TestCase

# -- rows in EvalPlus's shapes --------------------------------------------------------------------------------


def humaneval_row(n: int, prompt: str, body: str, base: list[Any], plus: Any, atol: float = 0, **over: Any) -> dict:
    entry = prompt.split("def ", 1)[1].split("(", 1)[0]
    row = {
        "task_id": f"HumanEval/{n}",
        "prompt": prompt,
        "entry_point": entry,
        "canonical_solution": body,
        "contract": "",
        "base_input": base,
        "plus_input": plus,
        "atol": atol,
        "test": f"\n\nMETADATA = {{}}\n\ndef check(candidate):\n    assert candidate(*{base[0]!r}) is not None\n",
    }
    return {**row, **over}


def mbpp_row(n: int, text: str, code: str, base: list[Any], plus: Any, atol: float = 0, **over: Any) -> dict:
    entry = code.split("def ", 1)[1].split("(", 1)[0]
    row = {
        "task_id": f"Mbpp/{n}",
        "prompt": f'"""\n{text}\n"""\n',
        "entry_point": entry,
        "canonical_solution": "\n" + code,
        "base_input": base,
        "atol": atol,
        "plus_input": plus,
        "contract": "",
        "assertion": f"\nassert {entry}(*{base[0]!r})\n",
    }
    return {**row, **over}


ADD = humaneval_row(
    0,
    'def add(x: int, y: int) -> int:\n    """Add two numbers x and y\n    >>> add(2, 3)\n    5\n    >>> add(5, 7)\n'
    '    12\n    """\n',
    "    return x + y\n",
    [[0, 1], [1, 0], [5, 7], [7, 5]],
    [[-3, 3], [10**20, 1], [2**31, 2**31]],
)
MIN_MAX = humaneval_row(
    1,
    'def min_max(numbers: list) -> tuple:\n    """The smallest and the largest number, as a tuple.\n'
    '    >>> min_max([3, 1, 2])\n    (1, 3)\n    """\n',
    "    return (min(numbers), max(numbers))\n",
    [[[3, 1, 2]], [[5]]],
    [[[-1, 9, 4]], [[0, 0, 0, 7]]],
    contract='\n    assert isinstance(numbers, list), "invalid inputs" # $_CONTRACT_$\n',
)
MEAN = humaneval_row(
    2,
    'def mean(numbers: list) -> float:\n    """The arithmetic mean of the numbers.\n    >>> mean([1.0, 2.0, 3.0])\n'
    '    2.0\n    """\n',
    "    return sum(numbers) / len(numbers)\n",
    [[[1.0, 2.0, 3.0]], [[0.1, 0.2]]],
    [[[1e6, 2e6]], [[-5.5]]],
    atol=1e-4,
)
HALF = humaneval_row(
    3,
    'def half(n: int):\n    """n halved: an int when n is even, a float when it is odd.\n'
    '    >>> half(3)\n    1.5\n    """\n',
    "    return n // 2 if n % 2 == 0 else n / 2\n",
    [[4], [3], [6]],
    [[3], [200000000]],
)
HUMANEVAL_ROWS = [ADD, MIN_MAX, MEAN, HALF]

CONCAT = mbpp_row(  # Mbpp/2's arguments are tuples in EvalPlus (its input shapes): the sum is a tuple
    2,
    "Write a function to join two tuples.\nassert concat((1, 2), (3,)) == (1, 2, 3)",
    "def concat(a, b):\n    return a + b\n",
    [[[1, 2], [3]], [[], [4, 5]]],
    [[["a"], ["b", "c"]]],
)
VOLUME = mbpp_row(
    14,
    "Write a python function to find the volume of a triangular prism.",
    "def find_volume(l, b, h):\n    return (l * b * h) / 2\n",
    [[10, 8, 6], [3, 2, 2]],
    [[1, 2, 1], [0.5, 0.25, 3]],
    atol=0.0001,
)
CLIP = mbpp_row(  # an infinity in an input: written 1e999
    404,
    "Write a function to clip a number to [-10, 10].",
    "def clip(x):\n    return max(-10, min(10, x))\n",
    [[float("inf")], [-3]],
    [[float("-inf")], [2.5]],
)
LAST = mbpp_row(  # MBPP+ publishes this problem's plus_input as {}: no plus inputs
    793,
    "Write a python function to find the last position of an element in a sorted array.",
    "def last(arr, x):\n    return len(arr) - 1 - arr[::-1].index(x)\n",
    [[[1, 2, 3], 1], [[1, 1, 1, 2, 3, 4], 1]],
    {},
)
SPECIAL = mbpp_row(  # EvalPlus compares this one's outputs as sets: left out
    7,
    "Write a function to find all words which are at least 4 characters long in a string.",
    "import re\ndef find_char_long(text):\n    return re.findall(r'\\b\\w{4,}\\b', text)\n",
    [["Please move back to stream"]],
    [],
)
NAN_INPUT = mbpp_row(
    90, "Write a function to double a number.", "def double(x):\n    return 2 * x\n", [[1], [float("nan")]], []
)
SET_OUTPUT = mbpp_row(
    91, "Write a function to find the distinct items.", "def distinct(xs):\n    return set(xs)\n", [[[1, 1, 2]]], []
)
MBPP_ROWS = [CONCAT, VOLUME, CLIP, LAST, SPECIAL, NAN_INPUT, SET_OUTPUT]
MBPP_LEFT_OUT = {SPECIAL_ORACLE: 1, NO_INPUT_LITERAL: 1, NO_JSON_OUTPUT: 1}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".parquet":
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()  # json.dumps writes Infinity and NaN, as Python's does
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def imported(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> tuple[Path, list[dict[str, Any]], str]:
    source, tasks = write(tmp_path / name, rows), tmp_path / "tasks.jsonl"
    assert main(["import", "evalplus", str(source), "-o", str(tasks), "--sandbox", "subprocess"]) == 0
    return tasks, [json.loads(line) for line in tasks.read_text().splitlines()], ""


def judged(
    tmp_path: Path, tasks: Path, samples: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> list[bool]:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    capsys.readouterr()
    args = ["evaluate", str(tasks), "--sandbox", "subprocess", "--timeout", "60"]
    assert main([*args, "--samples", str(path)] if samples else args) == 0
    return [json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines()]


# -- every row imports, and is judged as EvalPlus judges -----------------------------------------------------


@pytest.mark.parametrize("name", ["HumanEvalPlus.jsonl", "HumanEvalPlus.jsonl.gz"])
def test_humaneval_plus_rows_import_and_their_canonical_solutions_pass(tmp_path, capsys, name):
    tasks, made, _ = imported(tmp_path, name, HUMANEVAL_ROWS)
    assert "imported 4 tasks" in capsys.readouterr().err
    assert [t["task_id"] for t in made] == [r["task_id"] for r in HUMANEVAL_ROWS]  # EvalPlus's own ids
    for task, row in zip(made, HUMANEVAL_ROWS, strict=True):
        inputs = [*row["base_input"], *row["plus_input"]]
        assert [t["input"] for t in task["tests"]] == [repr(tuple(i)) for i in inputs]  # base, then plus
        assert task["reference_code"] == row["prompt"] + row["canonical_solution"]  # as EvalPlus runs it
        assert task["meta"]["prompt"] == row["prompt"] and task["public_tests"] == 0
        assert task["meta"]["tests"] == {"base_input": len(row["base_input"]), "plus_input": len(row["plus_input"])}
        assert (task["source"], task["tags"]) == ("humanevalplus", ["humanevalplus", "evalplus"])
    add = made[0]
    assert [t["expected"] for t in add["tests"]] == [1, 1, 12, 12, 0, 10**20 + 1, 2**32]
    assert [e["input"] for e in add["examples"]] == ["(2, 3)", "(5, 7)"]  # the docstring's, shown
    assert add["meta"]["docstring_tests"] == [2]  # add(5, 7) is a base input the docstring shows
    assert "test" not in add["meta"] and "contract" not in add["meta"]
    assert made[1]["meta"]["contract"] == MIN_MAX["contract"]
    assert made[1]["tests"][0] == {"input": "([3, 1, 2],)", "expected": [1, 3], "python_eq": "(1, 3)"}
    assert judged(tmp_path, tasks, [], capsys) == [True] * 4  # every canonical solution passes every test


HUMANEVAL_ANSWERS = [  # (task, completion, EvalPlus's verdict)
    ("HumanEval/0", "    return x + y\n", True),
    ("HumanEval/0", "    return x + y if x < 10**9 else x + y - 1\n", False),  # ints: == only (atol 0)
    ("HumanEval/0", "    return float(x + y) if x < 10**9 else x + y\n", True),  # 12.0 == 12 in Python
    ("HumanEval/1", "    return (min(numbers), max(numbers))\n", True),
    ("HumanEval/1", "    return [min(numbers), max(numbers)]\n", False),  # a list is not the tuple
    ("HumanEval/2", "    return sum(numbers) / len(numbers) + 5e-5\n", True),  # within atol 1e-4
    ("HumanEval/2", "    return sum(numbers) / len(numbers) + 5e-4\n", False),  # outside it
    ("HumanEval/2", "    return sum(numbers) / len(numbers) * (1 + 5e-8)\n", True),  # 1.5e6 is off by 0.075: rtol
    ("HumanEval/2", "    return round(sum(numbers) / len(numbers))\n", False),  # 2 == 2.0, but 0 is no float
    # atol 0 and a float output: EvalPlus compares it within 1e-6 (and every output after it in the run)
    ("HumanEval/3", "    return n / 2\n", True),  # 2.0 == 2
    ("HumanEval/3", "    return n // 2 if n % 2 == 0 else n / 2 + 5e-7\n", True),
    ("HumanEval/3", "    return n // 2 if n % 2 == 0 else n / 2 + 5e-6\n", False),
    # 100000001 for 100000000 is not ==, but the float output of plus_input[0] switched the tolerance on for
    # the rest of that run, and ints of the same type within 1e-6 + 1e-7 * 1e8 = 10 pass numpy's allclose
    ("HumanEval/3", "    return n // 2 + 1 if n > 10 else n / 2\n", True),
    ("HumanEval/3", "    return n // 2 + 11 if n > 10 else n / 2\n", False),
    ("HumanEval/3", "    return n / 2 + 1 if n > 10 else n / 2\n", False),  # a float for the int: types differ
]


def test_humaneval_plus_answers_get_evalplus_verdicts(tmp_path, capsys):
    tasks, made, _ = imported(tmp_path, "HumanEvalPlus.jsonl", HUMANEVAL_ROWS)
    half = next(t for t in made if t["task_id"] == "HumanEval/3")
    # the tolerance each test is judged with: off until the first float output of its run, then 1e-6
    assert [t.get("allclose_atol") for t in half["tests"]] == [None, 1e-6, 1e-6, 1e-6, 1e-6]
    mean = next(t for t in made if t["task_id"] == "HumanEval/2")
    assert {t.get("allclose_atol") for t in mean["tests"]} == {1e-4}  # the row's atol, everywhere
    assert all("allclose_atol" not in t for t in made[0]["tests"] + made[1]["tests"])  # ints: == only
    samples = [{"task_id": t, "completion": c} for t, c, _ in HUMANEVAL_ANSWERS]
    assert judged(tmp_path, tasks, samples, capsys) == [want for *_, want in HUMANEVAL_ANSWERS]


MBPP_ANSWERS = [  # (task, solution, EvalPlus's verdict)
    ("Mbpp/2", "def concat(a, b):\n    return a + b\n", True),
    ("Mbpp/2", "def concat(a, b):\n    return list(a) + list(b)\n", False),  # called with tuples, a tuple wanted
    ("Mbpp/14", "def find_volume(l, b, h):\n    return l * b * h / 2 + 5e-5\n", True),  # atol 1e-4
    ("Mbpp/14", "def find_volume(l, b, h):\n    return l * b * h / 2 + 2e-4\n", False),
    ("Mbpp/14", "def find_volume(l, b, h):\n    return l * b * h // 2\n", False),  # 120.0 for 120.0, 0.0 for 0.1875
    ("Mbpp/404", "def clip(x):\n    return max(-10, min(10, x))\n", True),
    ("Mbpp/404", "def clip(x):\n    return x\n", False),  # inf is not 10
    ("Mbpp/793", "def last(arr, x):\n    return max(i for i, v in enumerate(arr) if v == x)\n", True),
    ("Mbpp/793", "def last(arr, x):\n    return arr.index(x)\n", False),
]


@pytest.mark.parametrize("name", ["MbppPlus.jsonl", "MbppPlus.jsonl.gz"])
def test_mbpp_plus_rows_import_judged_as_evalplus_judges(tmp_path, capsys, name):
    tasks, made, _ = imported(tmp_path, name, MBPP_ROWS)
    err = capsys.readouterr().err
    assert "imported 4 tasks" in err and "left out 3 rows" in err
    assert all(f"1 {reason}" in err for reason in MBPP_LEFT_OUT)
    by_id = {t["task_id"]: t for t in made}
    assert list(by_id) == ["Mbpp/2", "Mbpp/14", "Mbpp/404", "Mbpp/793"]
    concat = by_id["Mbpp/2"]
    assert [t["input"] for t in concat["tests"]] == ["((1, 2), (3,))", "((), (4, 5))", "(('a',), ('b', 'c'))"]
    assert [t["python_eq"] for t in concat["tests"]] == ["(1, 2, 3)", "(4, 5)", "('a', 'b', 'c')"]
    assert concat["meta"]["docstring_tests"] == [0]  # MBPP+'s prompt shows its first assert: an example
    assert concat["source"] == "mbppplus" and "assertion" not in concat["meta"]
    assert [t["input"] for t in by_id["Mbpp/404"]["tests"]] == ["(1e999,)", "(-3,)", "(-1e999,)", "(2.5,)"]
    assert by_id["Mbpp/793"]["meta"]["tests"] == {"base_input": 2, "plus_input": 0}
    assert judged(tmp_path, tasks, [], capsys) == [True] * 4
    samples = [{"task_id": t, "solution": s} for t, s, _ in MBPP_ANSWERS]  # EvalPlus's samples name code so
    assert judged(tmp_path, tasks, samples, capsys) == [want for *_, want in MBPP_ANSWERS]


def test_a_parquet_file_imports_as_jsonl_does(tmp_path):
    rows = [ADD, humaneval_row(5, "def neg(x: int) -> int:\n", "    return -x\n", [[1], [2]], [[3]])]
    for row in rows:  # parquet keeps one type a column: ints in every input list, floats for atol
        row["plus_input"] = [i for i in row["plus_input"] if all(abs(a) < 2**62 for a in i)]
        row["atol"] = float(row["atol"])
    from_jsonl, _ = import_evalplus(write(tmp_path / "he.jsonl", rows), sandbox="subprocess")
    from_parquet, _ = import_evalplus(write(tmp_path / "he.parquet", rows), sandbox="subprocess")
    assert [t.dump() for t in from_parquet] == [t.dump() for t in from_jsonl] and len(from_jsonl) == 2


class CountingSandbox:
    """The subprocess sandbox, counting its executions."""

    def __init__(self) -> None:
        self.box, self.runs = get_sandbox("subprocess"), 0

    def run(self, program: Any, limits: Any) -> Any:
        self.runs += 1
        return self.box.run(program, limits)


def test_expected_outputs_take_one_execution_per_task(tmp_path):
    many = humaneval_row(
        9, "def sq(x: int) -> int:\n", "    return x * x\n", [[i] for i in range(300)], [[-i] for i in range(700)]
    )
    counting = CountingSandbox()
    try:
        tasks, done = import_evalplus(write(tmp_path / "he.jsonl", [ADD, many]), sandbox=counting, concurrency=2)  # type: ignore[arg-type]
    finally:
        counting.box.close()
    assert counting.runs == 2 and done.tasks == 2
    assert [t.expected for t in tasks[1].tests] == [i * i for i in range(300)] + [i * i for i in range(700)]


def test_a_canonical_solution_too_slow_for_the_limits_is_left_out(tmp_path, capsys):
    slow = humaneval_row(7, "def spin(n: int) -> int:\n", "    while n:\n        pass\n    return 0\n", [[0]], [[1]])
    config = tmp_path / "limits.yaml"
    config.write_text("sandbox:\n  test_timeout_s: 0.3\n")
    source, out = write(tmp_path / "he.jsonl", [ADD, slow]), tmp_path / "tasks.jsonl"
    assert (
        main(["import", "evalplus", str(source), "-o", str(out), "--config", str(config), "--sandbox", "subprocess"])
        == 0
    )
    assert f"left out 1 row: 1 {OVER_LIMITS}" in capsys.readouterr().err
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == ["HumanEval/0"]


# -- what stops the import ------------------------------------------------------------------------------------


def mangled(row: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = {**row, **changes}
    return {k: v for k, v in out.items() if v is not None}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (mangled(MEAN, entry_point=None), "he.jsonl:2: entry_point: missing"),
        (mangled(MEAN, base_input="[[1.0]]"), "he.jsonl:2: base_input: a string, not a list of argument lists"),
        (mangled(MEAN, base_input=[[[1.0]], 3]), "he.jsonl:2: base_input[1]: a number, not a list of arguments"),
        (mangled(MEAN, plus_input=None), "he.jsonl:2: plus_input: missing"),
        (mangled(MEAN, plus_input={"a": 1}), "he.jsonl:2: plus_input: an object, not a list of argument lists"),
        (mangled(MEAN, canonical_solution=None), "he.jsonl:2: canonical_solution: missing"),
        (mangled(MEAN, atol=None), "he.jsonl:2: atol: missing"),
        (mangled(MEAN, atol=-1), "he.jsonl:2: atol: not a number >= 0"),
        (mangled(MEAN, atol="1e-6"), "he.jsonl:2: atol: not a number >= 0"),
        (mangled(MEAN, base_input=[], plus_input=[]), "he.jsonl:2: base_input: empty"),
        (mangled(MEAN, task_id="HumanEval/0"), "he.jsonl:2: task_id: 'HumanEval/0' repeated (first at"),
        # EvalPlus takes every expected output from the canonical solution: one that raises stops it
        (
            mangled(MEAN, plus_input=[[[]]]),
            "he.jsonl:2: plus_input[0]: the canonical solution raised ZeroDivisionError",
        ),
        (
            mangled(MEAN, canonical_solution="    return (\n"),
            "he.jsonl:2: canonical_solution: the canonical solution does not load",
        ),
        (
            mangled(CONCAT, task_id="Mbpp/106", base_input=[[[1]]]),
            "he.jsonl:2: base_input[0]: not the arguments Mbpp/106 takes",
        ),
    ],
)
def test_a_malformed_row_stops_the_import_naming_row_and_field(tmp_path, capsys, bad, says):
    source = write(tmp_path / "he.jsonl", [ADD, bad, MIN_MAX])
    out = tmp_path / "tasks.jsonl"
    out.write_text("precious\n")
    assert main(["import", "evalplus", str(source), "-o", str(out), "--sandbox", "subprocess"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert out.read_text() == "precious\n"  # nothing half-written
    assert not (tmp_path / ".tasks.jsonl.tmp").exists()


def test_a_file_of_no_task_is_an_error(tmp_path):
    with pytest.raises(UserError, match=r"no task made of its 1 rows: 1 judged by a special oracle"):
        import_evalplus(write(tmp_path / "m.jsonl", [SPECIAL]), sandbox="subprocess")


def test_the_cli_offers_the_format():
    assert "evalplus" in IMPORT_FORMAT.kw["choices"]


# -- the pieces: call literals, the tolerance rule ------------------------------------------------------------


def test_inputs_are_written_as_literals_that_read_back_exactly():
    assert call_literal((float("inf"), float("-inf"), -0.0)) == "(1e999, -1e999, -0.0)"
    assert call_literal(({1, 2}, set(), {"b": 1, "a": (2,)})) == "({1, 2}, set(), {'b': 1, 'a': (2,)})"
    assert call_literal((complex(-0.0, -1.0), 1e-100j)) == "((-0.0-1.0j), (0.0+1e-100j))"
    assert call_literal((float("nan"),)) is None  # no literal reads back as NaN
    assert call_literal((frozenset({1}),)) is None
    assert call_literal((complex(1.0, -0.0),)) is None  # a negative zero imaginary part neither
    assert call_literal((["x" * 60_000, "y" * 60_000],)) is None  # over the input size limit


def test_the_rule_is_written_only_with_python_eq():
    ruled = TestCase(input="(1,)", expected=0.5, python_eq="0.5", allclose_atol=1e-6)
    assert ruled.dump() == {"input": "(1,)", "expected": 0.5, "python_eq": "0.5", "allclose_atol": 1e-6}
    assert TestCase.model_validate_json(json.dumps(ruled.dump())) == ruled
    for fields in (
        {"expected": 0.5, "allclose_atol": 1e-6},  # needs python_eq
        {"expected": [1.0], "python_eq": "(1.0,)", "as_tuple": True, "allclose_atol": 1e-6},
        {"expected": 0.5, "python_eq": "0.5", "allclose_atol": 0},
    ):
        with pytest.raises(ValidationError):
            TestCase(input="(1,)", **fields)
    assert passes(0.5000004, ruled) and not passes(0.500002, ruled) and not passes(1, ruled)
    assert passes(1, TestCase(input="(1,)", expected=1.0, python_eq="1.0", allclose_atol=1e-6))  # 1 == 1.0


def evalplus_close(out: Any, exp: Any, atol: float) -> bool:
    """EvalPlus's test once ``==`` failed, with numpy: the same type, the same length, numpy.allclose."""
    np = pytest.importorskip("numpy")
    if type(out) is not type(exp) or (isinstance(exp, (list, tuple)) and len(out) != len(exp)):
        return False
    try:
        return bool(np.allclose(out, exp, rtol=1e-07, atol=atol))
    except Exception:  # what numpy cannot compare fails the assert there
        return False


CASES = [
    (1.0, 1.0000001), (1.0, 1.00001), (1e8, 1e8 + 5), (10**8, 10**8 + 5), (2**70, 2**70 + 1), ([2**70], [2**70]),
    ([1.0, 2.0], (1.0, 2.0)), ([1.0, 2.0], [1.0]), ([[1.0], [2.0]], [[1.0, 1.0], [2.0, 2.0]]),
    ([1.0, [2.0]], [1.0, [2.0]]), (math.inf, math.inf), (math.nan, math.nan), ([math.inf, 1.0], [math.inf, 1.0000001]),
    (1.0, math.inf), ([True, 2.0], [1.0, 2.0]), (True, False), ("a", "a"), (None, None), ({"a": 1.0}, {"a": 1.0}),
    ([1.0, "x"], [1.0, "x"]), (1 + 1j, 1 + 1.0000001j), ([], []), ([[]], [[1.0]]), (10**400, 10**400),
    (0.1 + 0.2, 0.3), (-0.0, 0.0),
]  # fmt: skip


def test_all_close_is_numpys_allclose_as_evalplus_calls_it():
    def value(rng: random.Random, depth: int = 0) -> Any:
        if depth < 2 and rng.random() < 0.3:
            return rng.choice([list, tuple])(value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return rng.choice([0, 1, -1, 2**65, True, 1.0, 1.0000001, 1e-7, math.inf, math.nan, 0.5, 3, 1 + 0j, "s", None])

    rng = random.Random(7)
    cases = list(CASES)
    for _ in range(3000):
        a = value(rng)
        b = a if rng.random() < 0.3 else value(rng)
        if isinstance(a, (list, tuple)) and rng.random() < 0.5:
            b = type(a)(x * (1 + rng.choice([0, 1e-8, 1e-6])) if type(x) is float else x for x in a)
        cases.append((a, b))
    for atol in (1e-6, 1e-4, 1.0):
        differ = [(a, b) for a, b in cases if all_close(a, b, atol) != evalplus_close(a, b, atol)]
        assert differ == [], (atol, differ[:5])
