"""The fake model's program tasks with several right outputs (``fake/checked_programs.py``): each problem
passes its gates with its checker, its other right answer passes only by the checker, its wrong ones
fail, and the model proposes and answers them through its one hook.

Every program here is the module's own (benign parsing and loops), run in ``run_sandbox`` (bwrap where it works).
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
from collections.abc import Callable

import pytest

from spade_llm.config import SandboxConfig
from spade_llm.fake.checked_programs import PROBLEMS, CheckedProblem, identify, task_json
from spade_llm.fake.model import FakeLLM
from spade_llm.fake.programs import GENERATOR_MARKER
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind, run_gates
from spade_llm.llm.base import LLMRequest
from spade_llm.solver import first_messages
from spade_llm.templates import Prompts
from spade_llm.types import Message, Task
from spade_llm.validation import Validator

PROGRAM = get_kind("program")


@pytest.fixture(scope="module")
def judged(run_sandbox) -> Callable[[CheckedProblem], Task]:
    """Each problem's task as the fake proposes it, through the program kind's gates (once a problem)."""
    config = SandboxConfig(backend="subprocess", timeout_s=20, test_timeout_s=1)
    validator = Validator(run_sandbox, config.limits(), config.test_timeout_s)

    @functools.cache
    def gated(problem: CheckedProblem) -> Task:
        data = task_json(problem, random.Random(7))
        report = run_gates(validator, Task.model_validate({**data, "task_id": problem.key, "kind": "program"}))
        assert report.valid and report.task is not None, (problem.key, report.reason, report.detail)
        return report.task

    return gated


@pytest.fixture(scope="module")
def judge(run_sandbox) -> Judge:
    config = SandboxConfig(backend="subprocess", timeout_s=20, test_timeout_s=1)
    return Judge(run_sandbox, config.limits(), config.test_timeout_s)


@pytest.mark.parametrize(
    "problem", [pytest.param(p, id=p.key, marks=[pytest.mark.slow] if i else []) for i, p in enumerate(PROBLEMS)]
)  # the first in the fast lane: each judges a dozen answers' runs, checker runs included
def test_the_other_right_answer_passes_by_the_checker_alone_and_the_wrong_ones_fail(
    problem: CheckedProblem, judged: Callable[[CheckedProblem], Task], judge: Judge
) -> None:
    task = judged(problem)
    assert task.checker == problem.checker and identify(task.description) is problem
    assert final_status(PROGRAM.check_answer(judge, task, problem.other_right, None)) == "passed"
    # its outputs are not the reference's: by the output rule alone it fails
    plain = task.model_copy(update={"checker": None})
    assert final_status(PROGRAM.check_answer(judge, plain, problem.other_right, None)) != "passed"
    for wrong in problem.wrong:
        assert final_status(PROGRAM.check_answer(judge, task, wrong, None)) != "passed", wrong


def _proposal(topic: str, seed: int) -> LLMRequest:
    text = Prompts().render(
        "generator/propose.j2", n=1, difficulty=0.3, capability=None, avoid_tags=[], focus=topic, goal=None,
        examples=[], json_shape='{"tasks": [...]}', kind="program",
    )  # fmt: skip
    assert GENERATOR_MARKER in text
    return LLMRequest(messages=[Message(role="user", content=text)], role="generator", seed=seed)


def test_the_generator_proposes_them_on_their_topics_only() -> None:
    model = FakeLLM("default")

    def checked(topic: str, seed: int) -> list[str]:
        answer = asyncio.run(model.complete(_proposal(topic, seed))).text
        return [t["description"] for t in json.loads(answer)["tasks"] if "checker" in t]

    on_topic = [checked("lists", seed) for seed in range(12)]
    assert 0 < sum(map(len, on_topic)) < 12  # some requests, not all
    assert all(identify(d) is not None for found in on_topic for d in found)
    assert not any(checked("graphs", seed) for seed in range(12))
    assert checked("lists", 3) == checked("lists", 3)  # the same request, the same answer


def test_a_strong_solver_answers_with_another_right_output_and_a_weak_one_mostly_does_not() -> None:
    for problem in PROBLEMS:
        task = Task.model_validate({**task_json(problem, random.Random(7)), "task_id": problem.key, "kind": "program"})
        messages = first_messages(Prompts(), task, 1)
        strong = asyncio.run(FakeLLM("strong-solver").complete(LLMRequest(messages=messages, role="solver", seed=1)))
        assert f"```python\n{problem.other_right}```" in strong.text
        weak = [
            asyncio.run(FakeLLM("weak-solver").complete(LLMRequest(messages=messages, role="solver", seed=s))).text
            for s in range(10)
        ]
        assert sum(f"```python\n{problem.other_right}```" in text for text in weak) < 5
