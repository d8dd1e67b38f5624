"""verl 0.9.1's own ``prime_code`` judge and spade's ``compute_score`` on the same answers and ground truths.

verl's ``default_compute_score`` sends the ``codecontests``, ``apps``, ``taco`` and ``codeforces`` data
sources to ``verl.utils.reward_score.prime_code.compute_score(..., continuous=True)``: 1.0 when every
test passes, else the fraction of the first 10 tests passed. That judge runs the answer in the calling
process's children (a reliability guard, no sandbox), so it runs here in a subprocess of the test, on
the benign programs this module writes, once for all of them (importing verl takes seconds). Spade's
side is ``compute_score`` on the subprocess sandbox. Compared: the score, on ground truths of at most
10 tests, so the two fractions are the same thing (spade's ``pass_fraction``).

* Parity: correct, wrong, crashing (on some tests, on all), timing out (one case: prime_code's alarms
  are 5 s, then 10 s per test), and whitespace variants (trailing spaces, no final newline, trailing
  blank lines, CRLF, expected text with trailing spaces); a function called by ``fn_name``; and the
  rows ``spade export --format verl --verl-reward sandbox_fusion`` writes for a program task.
* Where the two rules differ (docs/training.md, "verl's prime_code"): one test pins each difference
  the docs state, both ways.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from trainer_kit import skip_unless_required

from spade_llm.cli.app import main
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder, compute_score
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task, TestCase

pytestmark = [pytest.mark.slow, pytest.mark.verl]

VERL_VERSION = "0.9.1"
PRIME_SOURCE = "codecontests"  # a data source verl's default_compute_score sends to prime_code

SCORE_IN_VERL = """
import json, sys
from verl.utils.reward_score import default_compute_score

jobs = json.loads(sys.stdin.read())
scores = {name: float(default_compute_score(source, answer, truth)) for name, (source, answer, truth) in jobs.items()}
with open(sys.argv[1], "w") as f:
    json.dump(scores, f)
"""
"""verl's own judge on each job, in a process of its own (it runs the answers in its children)."""


def verl_or_skip() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("verl")
    except PackageNotFoundError:
        skip_unless_required(f"verl is not installed: pip install 'spade-selfplay[verl]' (verl=={VERL_VERSION})")
    if installed != VERL_VERSION:
        skip_unless_required(f"verl {installed} installed; this parity is pinned to {VERL_VERSION}")
    if importlib.util.find_spec("numpy") is None:  # prime_code's float comparison
        skip_unless_required("numpy is not installed (verl's prime_code needs it)")


verl_or_skip()


def block(code: str) -> str:
    return f"Here is my program.\n```python\n{code}```\n"


def stdin_truth(cases: list[tuple[str, str]]) -> str:
    return json.dumps({"inputs": [i for i, _ in cases], "outputs": [o for _, o in cases]})


SUM_CASES = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n"), ("4\n10 20 30 40\n", "100\n")]
SUM = stdin_truth(SUM_CASES)
SUM_SPACED = stdin_truth([(i, o.rstrip("\n") + "  ") for i, o in SUM_CASES])  # expected: trailing spaces, no newline
TWO_LINES = stdin_truth([("2 3\n", "2 3\n5\n"), ("4 4\n", "4 4\n8\n")])
ONE_TEST = stdin_truth(SUM_CASES[:1])
ADD = json.dumps({"fn_name": "add", "inputs": ["1\n2", '"a"\n"b"', "-1\n1"], "outputs": ["3", '"ab"', "0"]})
ADD_SCALARS = json.dumps({"fn_name": "add", "inputs": ["1\n2", "-4\n4", "2.5\n0.5"], "outputs": ["3", "0", "3.0"]})

READ_SUM = "n = int(input())\nxs = list(map(int, input().split()))[:n]\n"
READ_ALL = "import sys\nn, *xs = map(int, sys.stdin.read().split())\n"
TWO_PRINTS = "a, b = map(int, input().split())\nprint(a, b, '')\nprint(a + b)\n"
PARITY: dict[str, tuple[str, str, float]] = {  # name: ground truth, answer, the score both give
    "correct": (SUM, READ_SUM + "print(sum(xs))\n", 1.0),
    "correct, reading all of stdin": (SUM, READ_ALL + "print(sum(xs))\n", 1.0),
    "wrong on three tests of four": (SUM, READ_SUM + "print(max(xs))\n", 0.25),
    "wrong everywhere": (SUM, READ_SUM + "print(sum(xs) + 1)\n", 0.0),
    "crashes on one test": (SUM, READ_SUM + "if n == 2:\n    raise ValueError('no')\nprint(sum(xs))\n", 0.75),
    "crashes on every test": (SUM, "raise RuntimeError('no')\n", 0.0),
    "syntax error": (SUM, "print(sum(\n", 0.0),
    "times out": (ONE_TEST, "while True:\n    pass\n", 0.0),
    "trailing spaces": (SUM, READ_SUM + "print(sum(xs), end='   \\n')\n", 1.0),
    "no final newline": (SUM, READ_SUM + "print(sum(xs), end='')\n", 1.0),
    "trailing blank lines": (SUM, READ_SUM + "print(sum(xs))\nprint()\nprint()\n", 1.0),
    "CRLF line ends": (SUM, READ_SUM + "import sys\nsys.stdout.write(f'{sum(xs)}\\r\\n')\n", 1.0),
    "expected text with trailing spaces": (SUM_SPACED, READ_SUM + "print(sum(xs))\n", 1.0),
    "a trailing space on an inner line": (TWO_LINES, TWO_PRINTS, 1.0),
    "fn_name: correct": (ADD, "def add(a, b):\n    return a + b\n", 1.0),
    "fn_name: wrong everywhere": (ADD_SCALARS, "def add(a, b):\n    return a * b\n", 0.0),
    "fn_name: raises": (ADD, "def add(a, b):\n    raise ValueError(a)\n", 0.0),
}


def one_test(expected: str) -> str:
    return stdin_truth([("x\n", expected)])


GLOBAL = "x = 0\ndef f():\n    global x\n    x += 1\nf()\nprint(x)\n"
SOLUTION = "class Solution:\n    def add(self, a, b):\n        return a + b\n"
BUFFER = "import sys\nprint(sys.stdin.buffer.read().decode().strip())\n"
DIFFERS: dict[str, tuple[str, str, float, float]] = {  # name: ground truth, completion, prime_code's score, spade's
    "a blank line between lines": (one_test("a\nb\n"), block("print('a')\nprint()\nprint('b')\n"), 1.0, 0.0),
    "leading whitespace": (one_test("YES\n"), block("print('  YES')\n"), 1.0, 0.0),
    "a float within allclose": (one_test("0.5\n"), block("print('0.5000001')\n"), 1.0, 0.0),
    "1.0 for 1": (one_test("1\n"), block("print(1.0)\n"), 1.0, 0.0),
    "the right output, then exit 1": (one_test("YES\n"), block("import sys\nprint('YES')\nsys.exit(1)\n"), 1.0, 0.0),
    "a name prime_code imports for it": (one_test("2.0\n"), block("print(sqrt(4))\n"), 1.0, 0.0),
    "tokens in another order (both fail)": (one_test("1 2\n"), block("print('2 1')\n"), 0.0, 0.0),
    "sys.stdin.buffer": (one_test("x\n"), block(BUFFER), 0.0, 1.0),
    "a global in a function": (one_test("1\n"), block(GLOBAL), 0.0, 1.0),
    "other trailing spaces on an inner line": (one_test("a \nb\n"), block("print('a  ')\nprint('b')\n"), 0.0, 1.0),
    "fn_name: 3 for 3.0": (ADD_SCALARS, block("def add(a, b):\n    return int(a + b)\n"), 1.0, 2 / 3),
    # prime_code reruns each test without fn_name after a failure: every test fails then (same verdict)
    "fn_name: wrong on one test of three": (ADD_SCALARS, block("def add(a, b):\n    return abs(a) + b\n"), 0.0, 2 / 3),
    "a program without a fence": (one_test("6\n"), "print(6)\n", 1.0, 0.0),  # prime_code runs the whole text
    "fn_name: a method of class Solution": (ADD, block(SOLUTION), 1.0, 0.0),
}
"""Each difference docs/training.md states, pinned both ways."""

PROGRAM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
EXPORTED_ANSWERS: dict[str, tuple[str, float]] = {
    "the reference": (PROGRAM, 1.0),
    "no final newline": ("n = int(input())\nprint(sum(map(int, input().split()[:n])), end='')\n", 1.0),
    "the first number": ("input()\nprint(input().split()[0])\n", 0.25),
    "raises": ("raise ValueError('no')\n", 0.0),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The verl row ``spade export --verl-reward sandbox_fusion`` writes for a program task."""
    pq = pytest.importorskip("pyarrow.parquet")
    run = tmp_path_factory.mktemp("export") / "run"
    run.mkdir()
    tests = [TestCase(input=i, expected=o) for i, o in SUM_CASES]
    task = Task(task_id="p1", kind="program", description="d", entry_point="", reference_code=PROGRAM, tests=tests)
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "tasks.jsonl").write_text(json.dumps(task.dump()) + "\n")
    out = run.parent / "sf.parquet"
    assert main(["export", str(run), "--format", "verl", "--verl-reward", "sandbox_fusion", "-o", str(out)]) == 0
    (row,) = pq.read_table(out).to_pylist()
    assert row["data_source"] == PRIME_SOURCE
    return dict(row)


@pytest.fixture(scope="module")
def verl_scores(exported: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """verl's own scores of every job of the module, from one subprocess."""
    jobs = {name: (PRIME_SOURCE, block(answer), truth) for name, (truth, answer, _) in PARITY.items()}
    jobs |= {f"differs: {name}": (PRIME_SOURCE, text, truth) for name, (truth, text, *_) in DIFFERS.items()}
    truth = exported["reward_model"]["ground_truth"]
    jobs |= {f"export: {name}": (exported["data_source"], block(a), truth) for name, (a, _) in EXPORTED_ANSWERS.items()}
    out = tmp_path_factory.mktemp("verl") / "scores.json"
    done = subprocess.run(
        [sys.executable, "-c", SCORE_IN_VERL, str(out)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=900,
        cwd=out.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scores: dict[str, float] = json.loads(out.read_text())
    return scores


@pytest.fixture(scope="module", autouse=True)
def default_rewarder() -> Iterator[Rewarder]:
    """compute_score's rewarder on the subprocess sandbox, a 1 s CPU budget per test."""
    rewarder = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, rewarder
    yield rewarder
    rewards._default = saved
    rewarder.close()


def spade_fraction(source: str, completion: str, truth: str) -> float:
    """spade's verdict as verl's number: 1.0 when every test passed, else the fraction passed."""
    verdict = compute_score(source, completion, truth)
    return 1.0 if verdict["acc"] == 1.0 else float(verdict["pass_fraction"])


@pytest.mark.parametrize("name", list(PARITY))
def test_verls_prime_code_and_spade_give_the_same_verdict(name: str, verl_scores: dict[str, float]) -> None:
    truth, answer, want = PARITY[name]
    assert verl_scores[name] == pytest.approx(want)
    assert spade_fraction(PRIME_SOURCE, block(answer), truth) == pytest.approx(want)


@pytest.mark.parametrize("name", list(DIFFERS))
def test_where_the_output_rules_differ_as_the_docs_say(name: str, verl_scores: dict[str, float]) -> None:
    truth, completion, in_verl, in_spade = DIFFERS[name]
    assert verl_scores[f"differs: {name}"] == pytest.approx(in_verl)
    assert spade_fraction(PRIME_SOURCE, completion, truth) == pytest.approx(in_spade)


@pytest.mark.parametrize("name", list(EXPORTED_ANSWERS))
def test_the_exported_program_row_is_scored_alike_by_verl_and_spade(
    name: str, exported: dict[str, Any], verl_scores: dict[str, float]
) -> None:
    answer, want = EXPORTED_ANSWERS[name]
    truth = exported["reward_model"]["ground_truth"]
    assert verl_scores[f"export: {name}"] == pytest.approx(want)
    assert spade_fraction(exported["data_source"], block(answer), truth) == pytest.approx(want)
