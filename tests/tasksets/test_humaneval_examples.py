"""Imported benchmarks get public tests from their docstring examples: shown and fed back, never a verdict.

Before, every repair prompt on a HumanEval task said "it failed the task's hidden checks" and nothing
else. The examples are judged outside the verdict (HumanEval/47's docstring is wrong, and its
canonical solution still passes), the benchmark's asserts stay hidden, and ``evaluate`` still runs
one execution per sample.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spade_llm.checking import CodeChecker
from spade_llm.config import SandboxConfig
from spade_llm.fake.scripted import ScriptedLLM
from spade_llm.languages.python_asserts import docstring_examples
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.solver import LLMSolver, examples_task
from spade_llm.tasksets.importers import import_humaneval
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase, Trajectory

HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"


@pytest.fixture(scope="module")
def humaneval() -> dict[str, Task]:
    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    return {t.task_id: t for t in import_humaneval(HUMANEVAL)}


def test_doctest_examples_become_public_tests(humaneval):
    assert [(e.input, e.expected) for e in humaneval["HumanEval/0"].examples] == [
        ("([1.0, 2.0, 3.0], 0.5)", False),
        ("([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)", True),
    ]
    assert [(e.input, e.expected) for e in humaneval["HumanEval/47"].examples][1] == (
        "([-10, 4, 6, 1000, 10, 20],)",
        15.0,
    )
    assert sum(bool(t.examples) for t in humaneval.values()) >= 60  # 146 of 164 on this file (69 from doctests)
    # the asserts still decide, all hidden: as tests compared outside the sandbox, and what is left as a check
    assert all(t.shows_examples and t.public_tests == 0 for t in humaneval.values())
    assert all(t.tests or t.check_code for t in humaneval.values())


def test_a_benchmark_task_shows_its_examples_and_none_of_its_asserts(humaneval):
    from spade_llm.solver import first_messages, split_tests

    task = humaneval["HumanEval/0"]
    assert split_tests(task, 3) == ([], list(range(len(task.tests))))
    prompt = "\n".join(m.content for m in first_messages(Prompts(), task, 3))
    assert "([1.0, 2.0, 3.0], 0.5)" in prompt  # a docstring example
    hidden = [t.input for t in task.tests if t.input not in {e.input for e in task.examples}]
    assert hidden and not any(h in prompt for h in hidden)


def test_only_literal_calls_of_the_entry_point_with_a_one_line_result_are_taken():
    prompt = (
        'def f(x, y=0):\n    """Doc.\n'
        "    >>> f(1, 2)\n    3\n"  # taken
        "    >>> g(1)\n    4\n"  # another function
        "    >>> f(x=1)\n    1\n"  # keyword argument
        "    >>> f(len('ab'))\n    2\n"  # computed argument
        "    >>> f([1,\n"  # a call over two lines
        "    >>> f(())\n"  # no result line before the next example
        "    >>> f(5)\n    {1, 2}\n"  # a set has no JSON form
        "    >>> f(7)\n    (7,\n        0)\n"  # a result over two lines
        '    >>> f(-1)\n    -1\n    """\n'  # taken (negative literal)
    )
    assert [(e.input, e.expected) for e in docstring_examples(prompt, "f")] == [("(1, 2)", 3), ("(-1,)", -1)]


def test_canonical_solutions_pass_their_examples_but_for_humaneval_47(humaneval):
    sandbox = get_sandbox("subprocess")
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess"), concurrency=2)
    try:
        failing = [
            t.task_id
            for t in humaneval.values()
            if t.examples and not checker.check_answer_sync(examples_task(t), t.reference_code).all_passed
        ]
        # the wrong docstring changes no verdict: the check alone decides
        assert checker.check_answer_sync(humaneval["HumanEval/47"], humaneval["HumanEval/47"].reference_code).all_passed
    finally:
        sandbox.close()
    assert failing == ["HumanEval/47"]


CHECK_TASK = Task(
    task_id="bench/1",
    description='def double(n):\n    """Twice n.\n    >>> double(2)\n    4\n    """\n',
    entry_point="double",
    reference_code="def double(n):\n    return 2 * n\n",
    tests=[],
    examples=[TestCase(input="(2,)", expected=4), TestCase(input="(5,)", expected=10)],
    check_code="def check(candidate):\n    assert candidate(31337) == 62674, 'SECRET_ASSERT'\n",
    source="bench",
)


def solve(task: Task, answers: list[str]) -> tuple[Trajectory, ScriptedLLM]:
    sandbox = get_sandbox("subprocess")
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess"), concurrency=1)
    llm = ScriptedLLM(answers)
    solver = LLMSolver(
        llm,
        Prompts(),
        checker.check_answer,
        seed=0,
        max_turns=len(answers),
        public_tests=3,
        temperature=0.0,
        max_tokens=100,
    )
    try:
        return asyncio.run(solver.solve(task, 0)), llm
    finally:
        sandbox.close()


def test_a_repair_prompt_quotes_failing_examples_never_the_asserts():
    wrong = "```python\nimport sys\ndef double(n):\n    print('debug', n, file=sys.stderr)\n    return n + 2\n```"
    right = "```python\ndef double(n):\n    return 2 * n\n```"
    trajectory, llm = solve(CHECK_TASK, [wrong, right])
    assert trajectory.final_status == "passed" and len(trajectory.attempts) == 2
    first_prompt = llm.calls[0].messages[-1].content
    assert "double(5,) -> 10" in first_prompt  # the examples are shown as public tests
    repair = llm.calls[1].messages[-1].content
    assert "1/2 public tests passed" in repair and "double(5,): expected 10, got 7" in repair
    assert "debug 5" in repair  # stdout/stderr of the examples run is fair to show
    sent = "\n".join(m.content for call in llm.calls for m in call.messages)
    assert "31337" not in sent and "SECRET_ASSERT" not in sent  # the hidden asserts never reach a prompt
    first = trajectory.attempts[0]
    assert (first.public_passed, first.public_total) == (1, 2)


def test_passing_examples_but_failing_asserts_says_so():
    overfit = "```python\ndef double(n):\n    return {2: 4, 5: 10}.get(n, 0)\n```"
    trajectory, llm = solve(CHECK_TASK, [overfit, overfit])
    assert trajectory.final_status == "failed" and len(trajectory.attempts) == 2
    repair = llm.calls[1].messages[-1].content
    assert "passed the 2 public tests but failed the task's hidden checks" in repair
    assert "31337" not in repair


def test_a_benchmark_tasks_ground_truth_keeps_every_assert_hidden(humaneval):
    import json

    from spade_llm.rewards.groundtruth import ground_truth, task_from_ground_truth

    task = humaneval["HumanEval/2"]  # its tests include abs(candidate(x) - y) < 1e-6
    back, public = task_from_ground_truth(json.dumps(ground_truth(task, 0)))
    assert public == 0 and back.shows_examples  # a reward or environment shows the examples, never the asserts
    assert back.tests == task.tests and any(t.abs_tol for t in back.tests)
