"""``spade import mbpp``: MBPP problems as tasks, judged as MBPP's harness judges them.

MBPP's harness runs a row's ``code`` (or an answer), its ``test_setup_code`` and its ``test_list``
asserts in one program: the answer passes when that program ends normally. Here each verdict of
spade's (the asserts as tests compared by Python's ``==`` outside the sandbox, the rest as a check run
apart) is set against that program's, run in the sandbox (``run_program``), for the reference and
for other answers. The rows are written here in the published shape (CRLF and tabs in ``code``,
integer ``task_id``s), not copied from MBPP.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import unavailable

from spade_llm.cli.app import main
from spade_llm.errors import UserError
from spade_llm.judge import final_status, run_task_tests
from spade_llm.sandbox.base import Limits
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.runner import run_program
from spade_llm.tasksets.importers import import_mbpp
from spade_llm.types import Task

LIMITS = Limits(timeout_s=10.0)


def row(task_id: int, text: str, code: str, tests: list[str], setup: str = "", challenge: Any = ()) -> dict[str, Any]:
    return {
        "text": text,
        "code": code.replace("\n", "\r\n"),
        "task_id": task_id,
        "test_setup_code": setup,
        "test_list": tests,
        "challenge_test_list": list(challenge),
    }


ROWS = [
    row(
        1,
        "Write a function to find the smallest and the largest item of a list.",
        "def min_max(xs):\n\treturn (min(xs), max(xs))",
        ["assert min_max([3, 1, 2]) == (1, 3)", "assert min_max([5]) == (5, 5)", "assert min_max([-1, 9]) == (-1, 9)"],
    ),
    row(
        2,
        "Write a function to find the area of a rectangle.",
        "def rect_area(w, h):\n\treturn w * h",
        ["assert rect_area(2.5, 4) == 10.0", "assert rect_area(3, 3) == 9", "assert rect_area(0.5, 3) == 1.5"],
    ),
    row(
        3,
        "Write a function to find the circumference of a circle.",
        "import math\nimport re\ndef circumference(r):\n\treturn 2 * math.pi * r",
        ["assert math.isclose(circumference(1), 6.283, rel_tol=0.001)", "assert circumference(0) == 0"],
    ),
    row(
        4,
        "Write a function to cap a number at a limit.",
        "def clip(x, limit):\n\treturn min(x, limit)",
        ["assert clip(15, LIMIT) == 10", "assert clip(3, LIMIT) == 3"],
        setup="LIMIT = 10",
    ),
    row(
        5,
        "Write a python function to count the vowels of a string.",
        "def count_vowels(s):\n\treturn sum(c in 'aeiou' for c in s.lower())",
        ["assert count_vowels('Hello') == 2", "assert count_vowels('xyz') == 0"],
        challenge=["assert count_vowels('AEIOU' * 1000) == 5000"],
    ),
    row(
        6,
        "Write a function to pair up neighbouring items of a list.",
        "def neighbours(xs):\n\treturn [(a, b) for a, b in zip(xs, xs[1:])]",
        ["assert set(neighbours([1, 2, 3])) == set([(1, 2), (2, 3)])", "assert neighbours([]) == []"],
    ),
    row(
        7,
        "Write a function to halve a number.",  # a reference its own asserts fail: x // 2 is not 1.5
        "def half(x):\n\treturn x // 2",
        ["assert half(4) == 2", "assert half(3) == 1.5"],
    ),
    row(
        8,
        "Write a function to find the longest chain of pairs.",  # Pair is the answer's own class
        "class Pair:\n\tdef __init__(self, a, b):\n\t\tself.a, self.b = a, b\ndef longest(pairs):\n\treturn len(pairs)",
        ["assert longest([Pair(1, 2), Pair(3, 4)]) == 2"],
    ),
]

ANSWERS = {  # other answers, each judged by both harnesses
    "MBPP/1": [  # the assert's `==` wants the tuple
        "def min_max(xs):\n    return [min(xs), max(xs)]\n",
        "def min_max(xs):\n    return (min(xs), max(xs))\n",
    ],
    "MBPP/2": [  # 10 == 10.0; no tolerance where the assert has none
        "def rect_area(w, h):\n    return int(w * h) if w * h == int(w * h) else w * h\n",
        "def rect_area(w, h):\n    return w * h + 1e-12\n",
    ],
    "MBPP/3": [
        "import math\ndef circumference(r):\n    return 6.2832 * r\n",
        "def circumference(r):\n    return 6.3 * r\n",
    ],
    "MBPP/4": ["def clip(x, limit):\n    return min(x, 10)\n", "def clip(x, limit):\n    return x\n"],
    "MBPP/6": ["def neighbours(xs):\n    return list(zip(xs, xs[1:]))\n", "def neighbours(xs):\n    return [[1, 2]]\n"],
    "MBPP/7": ["def half(x):\n    return x / 2\n"],
}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Task]:
    path = write_jsonl(tmp_path_factory.mktemp("mbpp") / "mbpp.jsonl", ROWS)
    done = import_mbpp(path)
    assert done.left_out == {"MBPP/8": ["Pair"]}
    return {t.task_id: t for t in done.tasks}


def harness_passes(sandbox, task: Task, code: str, row: dict[str, Any]) -> bool:
    """MBPP's own verdict: the code, the setup and the asserts as one program, which must end normally."""
    program = "\n".join([code, row["test_setup_code"], *row["test_list"]]) + "\n"
    return run_program(sandbox, program, LIMITS).return_code == 0


def spade_passes(sandbox, task: Task, code: str) -> bool:
    return final_status(run_task_tests(sandbox, task, code, LIMITS)) == "passed"


@pytest.mark.parametrize("source", [r for r in ROWS if r["task_id"] != 8], ids=lambda r: f"MBPP/{r['task_id']}")
def test_verdicts_are_the_harness_verdicts(imported, sandbox, source):
    task = imported[f"MBPP/{source['task_id']}"]
    answers = [source["code"], *ANSWERS.get(task.task_id, [])]
    ours = [spade_passes(sandbox, task, code) for code in answers]
    assert ours == [harness_passes(sandbox, task, code, source) for code in answers]
    assert ours[0] is (task.task_id != "MBPP/7")  # every reference passes its asserts but the broken one


def test_a_row_becomes_a_task(imported):
    task = imported["MBPP/1"]
    assert (task.entry_point, task.source, task.public_tests, task.check_code) == ("min_max", "mbpp", 0, None)
    assert [(t.input, t.python_eq) for t in task.tests] == [
        ("([3, 1, 2],)", "(1, 3)"),
        ("([5],)", "(5, 5)"),
        ("([-1, 9],)", "(-1, 9)"),
    ]
    assert task.description == (
        "Write a function to find the smallest and the largest item of a list.\n\n"
        "Your code should pass this test:\n\nassert min_max([3, 1, 2]) == (1, 3)\n"
    )
    assert [e.input for e in task.examples] == ["([3, 1, 2],)"]  # the assert the statement shows is an example too
    assert imported["MBPP/3"].check_code == (
        "import math\n\ndef check(candidate):\n    assert math.isclose(candidate(1), 6.283, rel_tol=0.001)\n"
    )  # the asserts' own module from the reference's imports, and only that one
    assert imported["MBPP/4"].check_code is not None and "LIMIT = 10" in imported["MBPP/4"].check_code
    assert imported["MBPP/5"].meta["challenge_test_list"] == ["assert count_vowels('AEIOU' * 1000) == 5000"]
    assert "challenge_test_list" not in imported["MBPP/2"].meta


def test_the_known_difference_an_asserts_module_comes_from_the_references_imports(imported, sandbox):
    """MBPP's harness runs ``math.isclose(...)`` in the answer's namespace, so an answer that never
    imports ``math`` fails there with a NameError; the check here runs apart and has the reference's
    ``import math``. A namespace accident, not a wrong answer: the one verdict that differs."""
    task = imported["MBPP/3"]
    right_without_the_import = "def circumference(r):\n    return 6.2832 * r\n"
    assert spade_passes(sandbox, task, right_without_the_import)
    assert not harness_passes(sandbox, task, right_without_the_import, ROWS[2])


def test_json_and_gzip_files_import_as_jsonl_does(imported, tmp_path):
    as_json = tmp_path / "mbpp.json"
    as_json.write_text(json.dumps(ROWS, indent=1))
    as_gz = tmp_path / "mbpp.jsonl.gz"
    as_gz.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in ROWS).encode()))
    for path in (as_json, as_gz):
        assert [t.dump() for t in import_mbpp(path).tasks] == [t.dump() for t in imported.values()]


def mangled(**changes: Any) -> dict[str, Any]:
    bad = {**ROWS[1], **changes}
    return {k: v for k, v in bad.items() if v is not None}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (mangled(test_list=None), ":2: not an MBPP problem, missing test_list"),
        (mangled(test_list="assert rect_area(1, 1) == 1"), ":2: field test_list: a list of strings expected, got a s"),
        (mangled(test_list=["assert rect_area(1, 1) == 2", 7]), ":2: field test_list[1]: a string expected, got a num"),
        (mangled(test_list=[]), ":2: field test_list: empty"),
        (mangled(challenge_test_list=None), ":2: not an MBPP problem, missing challenge_test_list"),
        (mangled(test_setup_code=["x = 1"]), ":2: field test_setup_code: a string expected, got a list"),
        (mangled(task_id=True), ":2: field task_id: a number expected"),
        (mangled(code="def rect_area(w, h:\n\treturn 1"), ":2: field code: not Python"),
        (mangled(test_list=["assert rect_area(1, 1) = 1"]), ":2: field test_list[0]: not Python"),
        (mangled(test_list=["assert area(1, 1) == 1"]), ":2: field test_list: calls no function that code defines"),
        (mangled(task_id=1), ":2: field task_id: 'MBPP/1' repeated"),
        ([1, 2], ":2: not an MBPP problem: a JSON list, not an object"),
    ],
)
def test_a_malformed_row_stops_the_import_naming_row_and_field(tmp_path, capsys, bad, says):
    source = write_jsonl(tmp_path / "mbpp.jsonl", [ROWS[0], bad, ROWS[2]])
    out = tmp_path / "tasks.jsonl"
    out.write_text("precious\n")
    assert main(["import", "mbpp", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert out.read_text() == "precious\n"  # nothing half-written


def test_a_json_file_is_an_array_of_rows(tmp_path):
    path = tmp_path / "mbpp.json"
    path.write_text(json.dumps({"rows": ROWS}))
    with pytest.raises(UserError, match="not an MBPP file: a JSON dict, not an array"):
        import_mbpp(path)
    path.write_text(json.dumps([ROWS[0], "x"]))
    with pytest.raises(UserError, match=r"mbpp.json: row 2: not an MBPP problem"):
        import_mbpp(path)


def test_the_cli_writes_the_tasks_and_names_what_it_left_out(tmp_path, capsys):
    source = write_jsonl(tmp_path / "mbpp.jsonl", ROWS)
    out = tmp_path / "tasks.jsonl"
    assert main(["import", "mbpp", str(source), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "imported 7 tasks" in err and "left out 1 problems" in err and "MBPP/8" in err
    written = [Task.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [t.task_id for t in written] == [f"MBPP/{n}" for n in range(1, 8)]


BWRAP = unavailable("bwrap")
ALWAYS_EQUAL = """
class _Yes(tuple):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __bool__(self): return True
def {ep}(*args, **kwargs):
    return _Yes()
"""


@pytest.mark.bwrap
@pytest.mark.skipif(BWRAP is not None, reason=f"hostile answers run only in bwrap: {BWRAP}")
def test_an_answer_equal_to_everything_passes_no_mbpp_task(imported):
    box = get_sandbox("bwrap")
    try:
        passed = [t.task_id for t in imported.values() if spade_passes(box, t, ALWAYS_EQUAL.format(ep=t.entry_point))]
    finally:
        box.close()
    assert passed == []


def sandbox_fusion_row(source: dict[str, Any], labels_as_text: bool = False) -> dict[str, Any]:
    """A row of ours in SandboxFusion's shape: MBPP's fields renamed, the setup and the challenge
    asserts under ``labels`` (an object, or its JSON text)."""
    labels = {"challenge_test_list": source["challenge_test_list"], "test_setup_code": source["test_setup_code"]}
    return {
        "content": source["text"],
        "id": source["task_id"],
        "labels": json.dumps(labels) if labels_as_text else labels,
        "canonical_solution": source["code"],
        "test_list": source["test_list"],
    }


SF_ROWS = [sandbox_fusion_row(r, labels_as_text=r["task_id"] % 2 == 0) for r in ROWS]


def test_sandbox_fusion_rows_import_as_the_same_rows_in_mbpps_shape(imported, tmp_path):
    done = import_mbpp(write_jsonl(tmp_path / "mbpp.jsonl", SF_ROWS))
    assert done.left_out == {"MBPP/8": ["Pair"]}
    assert [t.dump() for t in done.tasks] == [t.dump() for t in imported.values()]
    assert done.tasks[3].check_code is not None and "LIMIT = 10" in done.tasks[3].check_code  # labels' setup
    assert done.tasks[4].meta["challenge_test_list"] == ["assert count_vowels('AEIOU' * 1000) == 5000"]


@pytest.mark.parametrize("source", [r for r in SF_ROWS if r["id"] != 8], ids=lambda r: f"MBPP/{r['id']}")
def test_sandbox_fusion_verdicts_are_the_harness_verdicts(tmp_path, sandbox, source):
    """The reference and the other answers, judged on the task imported from SandboxFusion's row,
    as MBPP's harness judges them under that row's own setup and asserts."""
    (task,) = import_mbpp(write_jsonl(tmp_path / "mbpp.jsonl", [source])).tasks
    labels = source["labels"] if isinstance(source["labels"], dict) else json.loads(source["labels"])
    as_published = {"test_setup_code": labels["test_setup_code"], "test_list": source["test_list"]}
    answers = [source["canonical_solution"], *ANSWERS.get(task.task_id, [])]
    ours = [spade_passes(sandbox, task, code) for code in answers]
    assert ours == [harness_passes(sandbox, task, code, as_published) for code in answers]
    assert ours[0] is (task.task_id != "MBPP/7")


def test_sandbox_fusion_labels_may_be_absent_or_blank(tmp_path):
    bare = {k: v for k, v in SF_ROWS[0].items() if k != "labels"}
    blank = {**SF_ROWS[1], "labels": ""}
    tasks = import_mbpp(write_jsonl(tmp_path / "mbpp.jsonl", [bare, blank])).tasks
    assert [t.task_id for t in tasks] == ["MBPP/1", "MBPP/2"]
    assert all(t.check_code is None and "challenge_test_list" not in t.meta for t in tasks)


def sf_mangled(**changes: Any) -> dict[str, Any]:
    bad = {**SF_ROWS[1], **changes}
    return {k: v for k, v in bad.items() if v is not None}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (sf_mangled(canonical_solution=None), ":2: not an MBPP problem in SandboxFusion's shape, missing canonical_so"),
        (sf_mangled(content=["Write"]), ":2: field content: a string expected, got a list"),
        (sf_mangled(id=-2), ":2: field id: a number expected"),
        (sf_mangled(labels="{"), ":2: field labels: not JSON"),
        (sf_mangled(labels="[]"), ":2: field labels: an object expected, got a list"),
        (sf_mangled(labels={"test_setup_code": 3}), ":2: field labels.test_setup_code: a string expected"),
        (sf_mangled(labels={"challenge_test_list": "assert x"}), ":2: field labels.challenge_test_list: a list"),
        (sf_mangled(test_list=[]), ":2: field test_list: empty"),
        (sf_mangled(id=1), ":2: field task_id: 'MBPP/1' repeated"),
    ],
)
def test_a_malformed_sandbox_fusion_row_stops_the_import_naming_row_and_field(tmp_path, capsys, bad, says):
    source = write_jsonl(tmp_path / "mbpp.jsonl", [SF_ROWS[0], bad])
    assert main(["import", "mbpp", str(source), "-o", str(tmp_path / "tasks.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
