"""The fake model's contest problems (``fake/contests.py``): each is a sound program task whose hidden
tests come from its own input generator, and each of its weak solver's versions fails them the way
it is meant to (the slow one as ``timeout`` on the large inputs, the wrong ones on some output)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from spade_llm.config import SandboxConfig
from spade_llm.fake import contests
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind, run_gates
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator

PROGRAM = get_kind("program")


def as_task(data: dict[str, Any], task_id: str) -> Task:
    tests = [TestCase(input=t["input"]) for t in data["tests"]]
    fields = {k: v for k, v in data.items() if k not in ("tests", "difficulty", "tags")}
    return Task(task_id=task_id, kind=PROGRAM.name, tests=tests, **fields)


@pytest.fixture(scope="module")
def validator(run_sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=10, test_timeout_s=1)
    return Validator(run_sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def judge(run_sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=10, test_timeout_s=1)
    return Judge(run_sandbox, config.limits(), config.test_timeout_s)


@pytest.mark.slow
@pytest.mark.parametrize("problem", contests.PROBLEMS, ids=lambda p: p.key)
def test_each_problem_passes_the_gates_and_its_weak_versions_fail_as_meant(validator, judge, problem):
    report = run_gates(validator, as_task(contests.task_json(problem), f"c-{problem.key}"))
    assert report.valid and report.task is not None, report.detail
    task = report.task
    # the author's, then one drawn per generator size (less a draw that repeats one of them)
    assert len(problem.tests) + 4 <= len(task.tests) <= len(problem.tests) + 6
    assert len({t.input for t in task.tests}) == len(task.tests)
    assert task.time_limit_s == 1.0  # the reference is fast on 10000 numbers
    assert final_status(PROGRAM.check_answer(judge, task, problem.reference, None)) == "passed"
    slow = PROGRAM.check_answer(judge, task, problem.slow, None)
    statuses = [r.status for r in slow.test_results or []]
    assert final_status(slow) == "timeout" and statuses[: len(problem.tests)] == ["passed"] * len(problem.tests)
    for wrong in problem.wrong:
        results = PROGRAM.check_answer(judge, task, wrong, None).test_results or []
        assert any(r.status == "failed" for r in results), wrong  # a wrong output, not a crash


@pytest.mark.parametrize("how", contests.SPOILINGS)
def test_each_spoiling_is_caught_by_its_own_gate(validator, how):
    problem = contests.ZERO_PAIRS
    spoiled = contests.spoil(problem, contests.task_json(problem), how)
    report = run_gates(validator, as_task(spoiled, f"s-{how}"))
    assert (report.valid, report.reason) == (False, how), report.detail


def test_the_solver_recognises_a_problem_by_its_title_and_repairs_a_timeout_more_surely():
    for problem in contests.PROBLEMS:
        assert contests.identify("Solve this.\n\n" + problem.statement) is problem
    assert contests.identify("Zero-sum pairs are fun") is None

    def fixes(feedback: str) -> float:
        p = contests.ZERO_PAIRS
        runs = [
            contests.solve(p, random.Random(i), 0.5, lambda p_solve, clarity: clarity / 2, p.slow, feedback)
            for i in range(400)
        ]
        return sum(r == p.reference for r in runs) / len(runs)

    assert fixes("test 7: timeout (time limit 1 s)") > fixes("test 7: expected 3, printed 4") + 0.1


def test_a_topic_is_one_problems_at_most_so_concurrent_requests_propose_different_ones():
    topics = [t for p in contests.PROBLEMS for t in p.topics]
    assert len(topics) == len(set(topics))
    rng = random.Random(0)
    assert contests.pick(rng, 0.5, set(), "strings") is contests.TOP_WORD
    assert contests.pick(rng, 0.5, {"top_word"}, "strings") is None  # shown already: no duplicate
    assert contests.pick(rng, 0.5, set(), "no such topic") is None
    assert contests.pick(rng, 0.7, set(), None) in contests.PROBLEMS
