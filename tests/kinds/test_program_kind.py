"""The ``program`` kind (issue 38): whole programs on stdin/stdout, from the gates to a solver's episode.

Programs here are benign (sums, loops, random prints); each runs in the test-wide sandbox fixture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import run_backend

from spade_llm.checking import CodeChecker
from spade_llm.config import SandboxConfig
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind, leaks, run_gates
from spade_llm.llm.base import LLMRequest
from spade_llm.sandbox.stdio import stand_in_passes
from spade_llm.solver import LLMSolver
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator

PROGRAM = get_kind("program")
SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
INPUTS = ["3\n1 2 3\n", "1\n7\n", "2\n-5 5\n", "4\n10 20 30 40\n", "2\n100 1\n"]


def program_task(code: str = SUM, inputs: list[str] = INPUTS, expected: list[str] | None = None, **kw: Any) -> Task:
    tests = [TestCase(input=i) if expected is None else TestCase(input=i, expected=e) for i, e in zip(
        inputs, expected or inputs, strict=True)]  # fmt: skip
    fields: dict[str, Any] = {
        "task_id": "p1",
        "kind": "program",
        "description": "Read n, then n integers on one line; print their sum.",
        "entry_point": "",
        "reference_code": code,
        "tests": tests,
        **kw,
    }
    return Task(**fields)


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def judge(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Judge(sandbox, config.limits(), config.test_timeout_s)


# -- gates ---------------------------------------------------------------------------------------------


def test_a_sound_program_task_passes_its_gates_with_expected_outputs_from_the_reference(validator):
    report = run_gates(validator, program_task())
    assert report.valid, report.detail
    assert report.task is not None
    assert [t.expected for t in report.task.tests] == ["6\n", "7\n", "0\n", "100\n", "101\n"]


TRAPS: dict[str, dict[str, Any]] = {
    "syntax_error": {"code": "print(int(input()) +\n"},
    "too_few_tests": {"inputs": INPUTS[:2]},
    "bad_input": {"inputs": [*INPUTS[:4], "1\n" + "9 " * 600_000]},
    "runtime_error": {"code": "n = int(input())\nxs = input().split()\nprint(int(xs[n]))\n"},
    "timeout": {"code": "n = int(input())\nwhile n != 7:\n    pass\nprint(n)\n"},
    "nondeterministic": {"code": "import random\ninput(); input()\nprint(random.random())\n"},
    "expected_mismatch": {"expected": ["6\n", "7\n", "0\n", "100\n", "999\n"]},
    "empty_output": {"code": "import sys\nsys.stdin.read()\n"},  # prints nothing on any input
    "weak_tests": {"code": "input()\ninput()\nprint('YES')\n"},  # the most common output passes every test
}


def test_tests_that_miss_a_mutant_of_the_reference_are_weak_and_a_strong_set_kills_every_one(validator):
    # the tests never reach the else branch: `n > 2` -> `n >= 2` and `n - 5` -> `n + 5` pass them all,
    # and a probe (a test's input moved by one: 3 -> 2) shows they print otherwise
    code = "n = int(input())\nprint(n * 3 if n > 2 else n - 5)\n"
    report = run_gates(validator, program_task(code=code, inputs=["3\n", "4\n", "5\n", "10\n", "7\n"]))
    assert (report.valid, report.reason) == (False, "weak_tests"), report.detail
    assert "mutants of the reference" in report.detail and report.mutation is not None
    assert report.mutation.survived >= 1 and report.mutation.kill_rate < 1
    strong = run_gates(validator, program_task(code=code, inputs=["3\n", "2\n", "1\n", "10\n", "-4\n"]))
    assert strong.valid and strong.mutation is not None, strong.detail
    assert strong.mutation.total >= 4 and strong.mutation.survived == 0


@pytest.mark.parametrize("reason", list(TRAPS))
def test_each_trap_is_rejected_for_its_own_reason(validator, reason):
    report = run_gates(validator, program_task(**TRAPS[reason]))
    assert (report.valid, report.reason) == (False, reason), report.detail


def test_trivial_programs_that_pass_every_test_make_the_tests_weak():
    def tests(pairs: list[tuple[str, str]]) -> list[TestCase]:
        return [TestCase(input=i, expected=o) for i, o in pairs]

    assert "prints nothing" in str(stand_in_passes(tests([("1\n", ""), ("2\n", "\n")])))
    assert "its input back" in str(stand_in_passes(tests([("1 2\n", "1 2"), ("3\n", "3  \n")])))
    assert "always prints 'YES'" in str(stand_in_passes(tests([("1\n", "YES\n"), ("2\n", "YES")])))
    assert stand_in_passes(tests([("1\n", "YES\n"), ("2\n", "NO\n")])) is None


def test_a_hidden_test_shown_with_its_output_in_the_description_is_a_leak(validator):
    shown = "Read n, then n integers; print their sum. For example, for\n4\n10 20 30 40\nthe answer is 100."
    leaky = program_task(description=shown, expected=["6\n", "7\n", "0\n", "100\n", "101\n"])
    found = leaks(leaky, public_tests=1)
    assert [leak.test for leak in found] == [3] and found[0].part == "description"
    assert run_gates(validator, leaky).reason == "leaks_hidden_test"
    # the public test's pair is shown on purpose; an input alone, or an output alone, is no leak
    alone = "For example 3 / 1 2 3 gives 6; 4 10 20 30 40 is another input, and 101 an output."
    assert leaks(program_task(description=alone, expected=["6\n", "7\n", "0\n", "100\n", "101\n"]), 1) == []


# -- judging -------------------------------------------------------------------------------------------


def test_answers_are_judged_by_their_stdout_on_each_input(validator, judge):
    task = run_gates(validator, program_task()).task
    assert task is not None
    right = PROGRAM.check_answer(judge, task, "input()\nprint(sum(int(x) for x in input().split()))   \n", None)
    assert final_status(right) == "passed"
    first_only = PROGRAM.check_answer(judge, task, "input()\nprint(input().split()[0])\n", None)
    assert [r.status for r in first_only.test_results or []] == ["failed", "passed", "failed", "failed", "failed"]
    crash = PROGRAM.check_answer(judge, task, "raise SystemExit(3)\n", [0, 2])
    assert [(r.index, r.status) for r in crash.test_results or []] == [(0, "error"), (2, "error")]


def test_the_tasks_time_limit_is_each_tests_cpu_budget(validator, judge):
    task = run_gates(validator, program_task()).task
    assert task is not None
    slow = "import time\nn = int(input())\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"
    slow += "print(sum(map(int, input().split()[:n])))\n"
    assert final_status(PROGRAM.check_answer(judge, task, slow, [0])) == "passed"  # 0.3 s of CPU < 1 s
    tight = task.model_copy(update={"time_limit_s": 0.1})
    assert final_status(PROGRAM.check_answer(judge, tight, slow, [0])) == "timeout"


# -- the solver ----------------------------------------------------------------------------------------


async def test_an_episode_shows_public_io_feeds_back_a_failing_test_and_never_a_hidden_one(sandbox, validator):
    task = run_gates(validator, program_task()).task
    assert task is not None
    prompts: list[str] = []

    def answer(request: LLMRequest) -> str:
        prompts.append(request.messages[-1].content)
        if len(prompts) == 1:
            return "```python\ninput()\nprint(max(map(int, input().split())))\n```"  # max, not sum
        return "```python\nn = int(input())\nprint(sum(map(int, input().split()[:n])))\n```"

    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1), concurrency=1)
    solver = LLMSolver(
        FunctionLLM(answer), Prompts(), checker.check_answer, seed=0, max_turns=3, public_tests=1,
        temperature=0.0, max_tokens=200,
    )  # fmt: skip
    trajectory = await solver.solve(task, epoch=0)
    assert [a.result.tests_passed for a in trajectory.attempts] == [0, 5] and trajectory.final_status == "passed"
    first, repair = prompts
    assert "complete Python program" in first and "1 2 3" in first and "\n6\n" in first
    assert "Your output:\n```\n3\n```" in repair and "Expected output:\n```\n6\n```" in repair
    for hidden in task.tests[1:]:
        for text in prompts:
            assert hidden.input.strip() not in text  # the hidden tests' inputs never reach a prompt


async def test_a_long_outputs_repair_prompt_names_its_first_differing_line(sandbox, validator):
    # print 1..n, one per line; the answer skips 57: clipped texts alone would hide where it went wrong
    code = "n = int(input())\nfor i in range(1, n + 1):\n    print(i)\n"
    task = run_gates(validator, program_task(code=code, inputs=["300\n", "1\n", "2\n", "5\n", "9\n"])).task
    assert task is not None
    prompts: list[str] = []

    def answer(request: LLMRequest) -> str:
        prompts.append(request.messages[-1].content)
        if len(prompts) == 1:
            return "```python\nn = int(input())\nfor i in range(1, n + 1):\n    print(i if i != 57 else 58)\n```"
        return f"```python\n{code}```"

    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1), concurrency=1)
    solver = LLMSolver(
        FunctionLLM(answer), Prompts(), checker.check_answer, seed=0, max_turns=2, public_tests=1,
        temperature=0.0, max_tokens=200,
    )  # fmt: skip
    trajectory = await solver.solve(task, epoch=0)
    assert trajectory.final_status == "passed"
    repair = prompts[1]
    assert "The first difference, line 57: expected '57', printed '58'." in repair
    assert "characters cut" in repair  # the outputs themselves are clipped


# -- the CLI -------------------------------------------------------------------------------------------


def test_evaluate_judges_program_tasks_and_their_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spade_llm.cli.app import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(program_task().dump()) + "\n")
    samples = tmp_path / "samples.jsonl"
    right = "import sys\nn, *xs = map(int, sys.stdin.read().split())\nprint(sum(xs[:n]))\n"
    rows = [{"task_id": "p1", "code": right}, {"task_id": "p1", "code": "print(0)\n"}]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["evaluate", str(tasks), "--sandbox", run_backend()]) == 0  # the reference fills and passes
    assert [json.loads(line)["passed"] for line in capsys.readouterr().out.splitlines()] == [True]
    assert main(["evaluate", str(tasks), "--samples", str(samples), "--sandbox", run_backend()]) == 0
    judged = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["passed"], r["tests_passed"]) for r in judged] == [(True, 5), (False, 1)]  # -5 + 5 is 0


def test_the_public_tests_leak_a_hidden_one_only_when_one_of_them_is_a_copy():
    outputs = ["[]\n", "[]\n", "[1]\n", "[2]\n", "[]\n"]
    inputs = ["[5]\n", "[29, 4]\n", "[1]\n", "[2]\n", "[]\n"]  # hidden test 4: "[]" -> "[]"
    listed = program_task(inputs=inputs, expected=outputs)
    # shown: "... output: [] input: [29, 4] output: []": "[]" then "[]" across two pairs is no leak
    assert leaks(listed, public_tests=2) == []
    copied = program_task(inputs=[*inputs[:4], "[5]\n"], expected=outputs)  # hidden test 4 copies public test 0
    assert [(leak.test, leak.part) for leak in leaks(copied, public_tests=2)] == [(4, "public tests")]


# -- self-play on the fake model -------------------------------------------------------------------------


def fake_program_run(tmp_path: Path, profile: str) -> Path:
    from spade_llm.cli.app import main

    out = tmp_path / profile
    argv = ["run", "--model", f"fake/{profile}", "--kinds", "program", "--epochs", "1", "--tasks-per-epoch", "8"]
    assert main([*argv, "--samples-per-task", "2", "--sandbox", run_backend(), "--out", str(out), "--quiet"]) == 0
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_fake_self_play_run_proposes_program_tasks_the_strong_solver_passes_and_the_weak_one_fails(
    tmp_path: Path,
) -> None:
    from spade_llm.rewards.code import compute_score

    strong, weak = fake_program_run(tmp_path, "strong-solver"), fake_program_run(tmp_path, "weak-solver")
    tasks = read_jsonl(strong / "tasks.jsonl")
    assert len(tasks) >= 6 and {t["kind"] for t in tasks} == {"program"}
    assert all(t["entry_point"] == "" and all(x["expected"].endswith("\n") for x in t["tests"]) for t in tasks)
    strong_runs = read_jsonl(strong / "trajectories.jsonl")
    assert strong_runs and {t["final_status"] for t in strong_runs} == {"passed"}
    weak_runs = read_jsonl(weak / "trajectories.jsonl")
    assert sum(t["final_status"] == "passed" for t in weak_runs) < len(weak_runs) / 2
    # contest problems (fake/contests.py) come with an input generator: hidden tests drawn from it at six
    # sizes, and the weak solver's quadratic version runs out of time on the large ones
    drawn = [t for t in tasks if t.get("input_generator")]
    assert drawn and all(len(t["tests"]) >= 9 and t["time_limit_s"] == 1.0 for t in drawn)
    assert "timeout" in {t["final_status"] for t in weak_runs}
    # the exports' ground truth judges a program as the loop did: the reference passes, a stand-in fails
    from spade_llm.cli.app import main

    grpo = tmp_path / "grpo.jsonl"
    assert main(["export", str(strong), "--format", "grpo", "-o", str(grpo)]) == 0
    row = read_jsonl(grpo)[0]
    task = next(t for t in tasks if t["task_id"] == row["task_id"])
    answer = f"```python\n{task['reference_code']}```"
    assert compute_score("spade", answer, row["ground_truth"])["score"] == 1.0
    assert compute_score("spade", "```python\nprint(0)\n```", row["ground_truth"])["score"] == 0.0


# -- time limits from the reference ---------------------------------------------------------------------

PAIRS = (
    "from collections import Counter\n"
    "input()\n"
    "seen, pairs = Counter(), 0\n"
    "for x in map(int, input().split()):\n"
    "    pairs += seen[-x]\n"
    "    seen[x] += 1\n"
    "print(pairs)\n"
)
PAIRS_QUADRATIC = (
    "input()\n"
    "xs = list(map(int, input().split()))\n"
    "print(sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[i] + xs[j] == 0))\n"
)


def test_a_correct_but_quadratic_solution_fails_the_large_test_as_timeout_where_the_reference_is_linear(
    validator, judge
):
    large = 30_000
    numbers = " ".join(str((i * 7919) % 2001 - 1000) for i in range(large))
    inputs = ["4\n1 -1 2 -2\n", "3\n0 0 0\n", "1\n5\n", "5\n3 -3 3 -3 1\n", f"{large}\n{numbers}\n"]
    report = run_gates(validator, program_task(code=PAIRS, inputs=inputs))
    assert report.valid and report.task is not None, report.detail
    assert report.task.time_limit_s == 1.0  # the linear reference takes a few hundredths of a second
    quadratic = PROGRAM.check_answer(judge, report.task, PAIRS_QUADRATIC, None)
    assert [r.status for r in quadratic.test_results or []] == ["passed"] * 4 + ["timeout"]
    assert final_status(quadratic) == "timeout"
    assert final_status(PROGRAM.check_answer(judge, report.task, PAIRS, None)) == "passed"


def test_a_reference_too_slow_for_the_last_time_limit_rung_is_rejected(validator):
    spin = "import time\nn = int(input())\nt = time.process_time()\nwhile n == 1 and time.process_time() - t < 2.2:\n"
    spin += "    pass\n"  # one slow test is enough: the slowest run sets the limit
    slow = program_task(code=spin + "input()\nprint(n)\n", time_limit_s=None)
    big = Validator(validator.sandbox, validator.limits.__class__(timeout_s=60, memory_mb=256), test_timeout_s=5)
    report = run_gates(big, slow.model_copy(update={"tests": slow.tests[:3]}))
    assert (report.valid, report.reason) == (False, "timeout") and "too slow" in report.detail


# -- the author's input generator and validator ------------------------------------------------------------

GENERATOR = (
    "import random\n"
    "size, seed = map(int, input().split())\n"
    "rng = random.Random(seed)\n"
    "print(size)\n"
    "print(' '.join(str(rng.randint(-1000, 1000)) for _ in range(size)))\n"
)
VALIDATOR = (
    "import sys\n"
    "lines = sys.stdin.read().split('\\n')\n"
    "n = int(lines[0])\n"
    "xs = [int(x) for x in lines[1].split()]\n"
    "assert 1 <= n <= 100000 and len(xs) >= n and all(-1000 <= x <= 1000 for x in xs)\n"
    "assert not any(line.strip() for line in lines[2:])\n"
)


def test_tests_are_drawn_from_the_authors_generator_at_several_sizes_the_same_each_time(validator):
    task = program_task(input_generator=GENERATOR, input_validator=VALIDATOR)
    first, again = run_gates(validator, task), run_gates(validator, task)
    assert first.valid and first.task is not None and again.task is not None, first.detail
    drawn = first.task.tests[len(INPUTS) :]
    assert [int(t.input.split("\n")[0]) for t in drawn] == [1, 2, 10, 100, 1000, 10000]
    assert [t.input for t in drawn] == [t.input for t in again.task.tests[len(INPUTS) :]]  # seeds from the task id
    assert all(t.expected == str(sum(map(int, t.input.split()[1:]))) + "\n" for t in drawn)
    other = run_gates(validator, task.model_copy(update={"task_id": "p2"})).task
    assert other is not None and other.tests[-1].input != drawn[-1].input


GENERATOR_TRAPS: dict[str, tuple[dict[str, Any], str]] = {
    "syntax_error": ({"input_generator": "print(\n"}, "the input generator"),
    "invalid_input": ({"input_validator": VALIDATOR.replace("1 <= n", "2 <= n")}, "test 1"),
    "weak_validator": ({"input_validator": "import sys\nsys.stdin.read()\n"}, "accepts every malformed"),
    "bad_generator": (
        {"input_generator": GENERATOR.replace("-1000, 1000", "-5000, 5000"), "input_validator": VALIDATOR},
        "validator rejects",
    ),
}


@pytest.mark.parametrize("reason", list(GENERATOR_TRAPS))
def test_a_generator_or_validator_that_cannot_be_trusted_is_rejected_for_its_own_reason(validator, reason):
    fields, said = GENERATOR_TRAPS[reason]
    report = run_gates(validator, program_task(**fields))
    assert (report.valid, report.reason) == (False, reason) and said in report.detail, report.detail
    silent = run_gates(validator, program_task(input_generator="pass\n"))
    assert silent.reason == "bad_generator" and "no input" in silent.detail


def test_probes_move_one_integer_either_way_and_leave_a_multi_line_inputs_sizes_alone():
    from spade_llm.kinds.program import _perturbed

    assert _perturbed("4\n10 20 30 40\n", 1) == ["4\n10 21 30 40\n", "4\n10 19 30 40\n"]  # n stays 4
    assert {p for k in range(8) for p in _perturbed("2\n1 -1\n", k)} == {
        "2\n2 -1\n",
        "2\n0 -1\n",
        "2\n1 0\n",
        "2\n1 -2\n",
    }
    assert _perturbed("5 7\n", 1) == ["5 8\n", "5 6\n"]  # one line: any of its integers
    assert _perturbed("3\nabc\n", 0) == ["4\nabc\n", "2\nabc\n"]  # no integer after the first line: the first's
    assert _perturbed("x 1.5\n", 0) == []  # a decimal is no integer to move
