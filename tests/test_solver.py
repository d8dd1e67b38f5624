"""The multi-turn solver against scripted models and the real (subprocess) sandbox."""

import pytest

from spade_llm.checking import CodeChecker
from spade_llm.config import RewardConfig, SandboxConfig
from spade_llm.errors import LLMCallError
from spade_llm.fake.scripted import ScriptedLLM
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.solver import LLMSolver, extract_code
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase

TASK = Task(
    task_id="t-sum",
    description="Return the sum of the list `xs` (0 for an empty list).",
    entry_point="total",
    reference_code="def total(xs):\n    return sum(xs)\n",
    tests=[
        TestCase(input="([1, 2, 3],)", expected=6),
        TestCase(input="([],)", expected=0),
        TestCase(input="([5],)", expected=5),
        TestCase(input="([-1, 1, 10],)", expected=10),
    ],
    difficulty=0.4,
)
CRASHES = "Here is my answer.\n```python\ndef total(xs):\n    return xs[0] + total(xs[1:])\n```\n"
RIGHT = "Fixed: handle the empty list.\n```python\ndef total(xs):\n    return sum(xs)\n```"


@pytest.fixture
def checker():
    sandbox = get_sandbox("subprocess")
    yield CodeChecker(sandbox, SandboxConfig(backend="subprocess", timeout_s=5), concurrency=2)
    sandbox.close()


def make_solver(llm, checker, prompts=None, max_turns=3):
    return LLMSolver(
        llm,
        prompts or Prompts(),
        checker.check_answer,
        seed=1,
        max_turns=max_turns,
        public_tests=3,
        temperature=0.2,
        max_tokens=500,
    )


def test_extract_code_prefers_last_python_block():
    text = "```\nnot this\n```\nthen\n```python\ndef f():\n    return 1\n```\n"
    assert extract_code(text) == "def f():\n    return 1\n"
    assert extract_code("def g(x):\n    return x") == "def g(x):\n    return x\n"
    assert extract_code("I don't know.") == ""
    assert extract_code("```python\ndef h():\n    pass") == "def h():\n    pass\n"  # unterminated fence


async def test_repair_turn_carries_the_error_and_the_fix_passes(checker):
    llm = ScriptedLLM([CRASHES, RIGHT])
    traj = await make_solver(llm, checker).solve(TASK, epoch=0)
    llm.assert_complete()
    assert [m.role for m in traj.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert traj.messages[2].content == CRASHES
    first = traj.attempts[0]
    assert first.result.tests_passed < first.result.tests_total
    repair = traj.messages[3].content
    assert "IndexError" in repair  # the stderr tail of the crash
    assert "total([],)" in repair  # the failing public test
    assert "([-1, 1, 10],)" not in repair  # the hidden test stays hidden
    assert traj.final_status == "passed" and len(traj.attempts) == 2
    assert traj.attempts[1].result.tests_passed == 4
    # the hidden tests were judged only once the public ones passed
    assert traj.attempts[0].hidden_passed is None and traj.attempts[1].hidden_passed == 2
    assert 0 < traj.reward < 2
    assert llm.calls[1].metadata["turn"] == 2 and llm.calls[0].seed != llm.calls[1].seed


async def test_gives_up_after_max_turns_with_failure_reward(checker):
    wrong = "```python\ndef total(xs):\n    return len(xs)\n```"
    traj = await make_solver(ScriptedLLM([wrong, wrong]), checker, max_turns=2).solve(TASK, epoch=0)
    assert traj.final_status == "failed" and len(traj.attempts) == 2 and traj.reward < 0


async def test_answer_without_code_and_endpoint_failure_are_recorded(checker):
    llm = ScriptedLLM(["I think you should use sum().", LLMCallError("down", kind="server_error")])
    traj = await make_solver(llm, checker).solve(TASK, epoch=0)
    assert traj.attempts[0].result.status == "error" and "no code" in traj.attempts[0].result.stderr
    assert "No code found" in traj.messages[3].content
    assert traj.error and "down" in traj.error and traj.final_status == "error"


async def test_user_template_changes_what_the_model_receives(tmp_path, checker):
    (tmp_path / "solver").mkdir()
    (tmp_path / "solver" / "first.j2").write_text("CUSTOM PROMPT for {{ task.entry_point }}: {{ task.description }}")
    (tmp_path / "solver" / "repair.j2").write_text("TRY AGAIN {{ entry_point }}; stderr: {{ stderr_tail }}")
    llm = ScriptedLLM([CRASHES, RIGHT])
    await make_solver(llm, checker, prompts=Prompts(tmp_path)).solve(TASK, epoch=0)
    assert llm.calls[0].messages[1].content.startswith("CUSTOM PROMPT for total: Return the sum")
    assert llm.calls[1].messages[3].content.startswith("TRY AGAIN total; stderr:")
    assert "IndexError" in llm.calls[1].messages[3].content


@pytest.mark.parametrize(
    "answer",
    [
        "```python\ndef total(xs)\n    return sum(xs)\n```",  # SyntaxError
        "```python\nimport no_such_module_xyz\ndef total(xs):\n    return sum(xs)\n```",  # import-time exception
        "```python\ndef summe(xs):\n    return sum(xs)\n```",  # the entry point is missing
    ],
)
async def test_code_that_never_loads_ends_in_error(checker, answer):
    traj = await make_solver(ScriptedLLM([answer]), checker, max_turns=1).solve(TASK, epoch=0)
    assert traj.final_status == "error" and traj.attempts[0].result.load_error
    assert traj.reward == RewardConfig().error


async def test_reward_uses_the_target_difficulty_not_the_claim(checker):
    claimed = TASK.model_copy(update={"difficulty": 1.0, "meta": {"target_difficulty": 0.2}})
    traj = await make_solver(ScriptedLLM([RIGHT]), checker).solve(claimed, epoch=0)
    honest = await make_solver(ScriptedLLM([RIGHT]), checker).solve(
        TASK.model_copy(update={"difficulty": 0.2}), epoch=0
    )
    assert traj.difficulty == 0.2 and traj.reward == honest.reward


async def test_samples_differ_in_seed_and_id(checker):
    llm = ScriptedLLM([RIGHT, RIGHT])
    solver = make_solver(llm, checker)
    a, b = await solver.solve(TASK, 0, 0), await solver.solve(TASK, 0, 1)
    assert (a.sample_index, b.sample_index) == (0, 1) and a.trajectory_id != b.trajectory_id
    assert llm.calls[0].seed != llm.calls[1].seed and llm.calls[1].metadata["sample_index"] == 1
    assert a.attempts[0].raw == RIGHT and a.attempts[0].message_index == 2 and a.attempts[0].finish_reason == "stop"


async def test_an_exhausted_task_budget_stops_before_the_next_turn(checker):
    import time

    llm = ScriptedLLM([CRASHES, RIGHT])
    traj = await make_solver(llm, checker).solve(TASK, 0, 0, deadline=time.time() - 1)
    assert not traj.attempts and "budget_exhausted" in traj.flags and traj.final_status == "error"


def test_the_split_is_the_kinds_one_rule(monkeypatch):
    """One split rule (fix round, finding 2): ``solver.split_tests`` is ``kinds.base.public_indices``,
    the rule the leak gate reads, so what the solver hides is what the gate guards. A change to the
    rule moves both (at the first round's tree, the solver kept its own copy and did not move)."""
    import spade_llm.kinds.base as base
    from spade_llm import solver

    task = TASK.model_copy(update={"tests": [TestCase(input=f"([{i}],)", expected=i) for i in range(6)]})
    assert solver.split_tests(task, 3) == ([0, 1, 2], [3, 4, 5])
    assert solver.MIN_HIDDEN_TESTS == base.MIN_HIDDEN_TESTS
    monkeypatch.setattr(base, "MIN_HIDDEN_TESTS", 4)
    assert base.public_indices(task, 3) == [0, 1]
    assert solver.split_tests(task, 3) == ([0, 1], [2, 3, 4, 5])
    own = task.model_copy(update={"public_tests": 5})  # a task's own count, within the same rule
    assert solver.split_tests(own, 3) == ([0, 1], [2, 3, 4, 5])
