"""Partial credit pays no shortcut (issue 35, finding 18).

A lookup table of the public tests earned 0.45 on average from ``SpadeLiveEnv(partial_credit=True)``
against 0 for an honest wrong attempt, and -0.02 to -0.09 from the loop's reward (serve-env's) against
-0.2. One rule now, ``evaluator.credited_fraction``: partial credit counts the hidden tests alone. Every
reward path is checked here on the same answers: ``code_reward``/``compute_score`` (``rewards``), TRL's
``SpadeCodingEnv`` and ``SpadeLiveEnv``, and the loop's episode reward (``run``, serve-env).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_llm.checking import CodeChecker
from spade_llm.config import RewardConfig, SandboxConfig
from spade_llm.evaluator import credited_fraction, shown_tests
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.integrations.trl import SpadeCodingEnv, SpadeLiveEnv
from spade_llm.kinds import KIND_NAMES, get_kind
from spade_llm.rewards.code import Rewarder, compute_score, extract_answer, make_code_reward, parse_ground_truth
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.serve.env.broker import Episode
from spade_llm.solver import LLMSolver
from spade_llm.templates import Prompts
from spade_llm.types import Task, TestCase

# -- the rule ------------------------------------------------------------------------------------


@given(st.integers(0, 8), st.integers(1, 8), st.integers(1, 8), st.data())
def test_only_hidden_tests_earn_credit(public_total: int, hidden_total: int, hidden_passed: int, data: Any) -> None:
    hidden_passed = min(hidden_passed, hidden_total)
    public_passed = data.draw(st.integers(0, public_total))
    total = public_total + hidden_total
    credit = credited_fraction(public_passed + hidden_passed, total, public_passed, public_total)
    assert credit == hidden_passed / hidden_total
    # the public tests change nothing: copying them earns nothing, failing one on purpose earns nothing
    assert credit == credited_fraction(hidden_passed, total, 0, public_total)
    assert credited_fraction(public_passed, total, public_passed, public_total) == 0.0
    # more hidden tests passed never earn less
    if hidden_passed < hidden_total:
        assert credited_fraction(public_passed + hidden_passed + 1, total, public_passed, public_total) > credit


def test_with_nothing_hidden_every_test_counts() -> None:
    assert credited_fraction(2, 4, 0, 0) == 0.5
    assert credited_fraction(0, 0, 0, 0) == 0.0


# -- every reward path ---------------------------------------------------------------------------

TRIPLE = Task(
    task_id="triple",
    description="Return three times `x`.",
    entry_point="f",
    reference_code="def f(x):\n    return 3 * x\n",
    tests=[TestCase(input=f"({x},)", expected=3 * x) for x in (1, 2, 3, 7, 8, 9)],
)
PUBLIC = 3  # the solver's split of six tests at solver.public_tests 3: three shown, three hidden
TABLE = "def f(x):\n    return {1: 3, 2: 6, 3: 9}.get(x)\n"
"""A lookup table of the shown tests."""
WRONG = "def f(x):\n    return None\n"
"""An honest wrong attempt."""
PARTLY = "def f(x):\n    return 3 * x if x > 7 else x\n"
"""Right on two hidden tests of three, on no public one."""
CODE = {"table": TABLE, "wrong": WRONG, "partly": PARTLY}


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


@pytest.fixture(scope="module")
def rewarder(sandbox: Any) -> Rewarder:
    return Rewarder(sandbox=sandbox)


@pytest.fixture(scope="module")
def row() -> dict[str, Any]:
    return {"ground_truth": json.dumps(ground_truth(TRIPLE, PUBLIC))}


def trl_credit(rewarder: Rewarder, row: dict[str, Any], code: str) -> float:
    reward = make_code_reward(partial_credit=True, rewarder=rewarder)
    (score,) = reward(completions=[fenced(code)], **{k: [v] for k, v in row.items()})
    return float(score)


def verl_credit(rewarder: Rewarder, row: dict[str, Any], code: str) -> float:
    return float(rewarder.score(fenced(code), row["ground_truth"], partial_credit=True).score)


def env_credit(rewarder: Rewarder, row: dict[str, Any], code: str) -> float:
    env = SpadeCodingEnv(rewarder, partial_credit=True)
    env.reset(**row)
    env.run_tests(code)
    return env.get_reward()


def episode(sandbox: Any, code: str) -> Any:
    """The loop's episode (``spade run``, serve-env) on a model that answers ``code`` every turn."""
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess", test_timeout_s=1), 2)
    solver = LLMSolver(
        FunctionLLM(lambda _request: fenced(code)),
        Prompts(),
        checker.check_answer,
        seed=0,
        max_turns=2,
        public_tests=PUBLIC,
        temperature=0.0,
        max_tokens=100,
        reward=RewardConfig(),
    )
    return asyncio.run(solver.solve(TRIPLE, 0, 0))


def live_credit(sandbox: Any, code: str) -> float:
    """``SpadeLiveEnv``'s partial credit on serve-env's end observation of that episode."""
    trajectory = episode(sandbox, code)
    client = SpadeLiveEnv("http://127.0.0.1:9", partial_credit=True)
    client._started = True
    client._take(SimpleNamespace(observation=asdict(Episode(TRIPLE, 0, 0).end(trajectory)), done=True))
    return client.get_reward()


@pytest.mark.parametrize("path", ["trl", "verl", "env"])
def test_a_lookup_table_of_the_shown_tests_earns_what_an_honest_wrong_attempt_earns(
    rewarder: Rewarder, row: dict[str, Any], path: str
) -> None:
    credit = {"trl": trl_credit, "verl": verl_credit, "env": env_credit}[path]
    table, wrong, partly = (credit(rewarder, row, CODE[name]) for name in ("table", "wrong", "partly"))
    assert table == wrong == 0.0
    assert partly == pytest.approx(2 / 3, abs=1e-6)  # the hidden tests it got right still pay


def test_the_loop_and_serve_env_pay_a_lookup_table_no_partial_credit(sandbox: Any) -> None:
    config = RewardConfig()
    table, wrong, partly = (episode(sandbox, CODE[name]) for name in ("table", "wrong", "partly"))
    assert "hardcoded_suspect" in table.flags  # the solver sees the signature...
    assert table.reward == wrong.reward == config.fail  # ...and the reward pays it nothing
    assert partly.reward == pytest.approx(config.fail + config.partial_credit * 2 / 3, abs=1e-6)


def test_spade_live_env_pays_the_same_rule_from_the_end_observation(sandbox: Any) -> None:
    assert live_credit(sandbox, TABLE) == live_credit(sandbox, WRONG) == 0.0
    assert live_credit(sandbox, PARTLY) == pytest.approx(2 / 3, abs=1e-6)
    assert live_credit(sandbox, TRIPLE.reference_code) == 1.0


def test_compute_score_keeps_its_metrics_whole(row: dict[str, Any]) -> None:
    # the metrics still count every test: only the score follows the rule
    score = compute_score("spade_llm", fenced(TABLE), row["ground_truth"], partial_credit=True)
    assert (score["score"], score["tests_passed"], score["tests_total"], score["pass_fraction"]) == (0.0, 3, 6, 0.5)


# -- which public tests count as shown is the kind's rule ------------------------------------------


def test_which_public_tests_count_as_shown_is_each_kinds_own_rule() -> None:
    for name in KIND_NAMES:
        kind = get_kind(name)
        # an answer written after feedback on the public tests has seen them, whatever the kind
        assert shown_tests(name, 2, 3, after_feedback=True) == (2, 3)
        # a first answer has seen them only where the first prompt shows their answers
        assert shown_tests(name, 2, 3, after_feedback=False) == ((2, 3) if kind.public_answers_in_prompt else (0, 0))
    assert get_kind("induction").public_answers_in_prompt  # it lists its public tests with their answers
    assert not get_kind("deduction").public_answers_in_prompt  # the queries' answers are what it asks for
    assert not get_kind("abduction").public_answers_in_prompt


QUERIES = Task(
    task_id="queries",
    kind="deduction",
    description="Predict what `f` returns.",
    entry_point="f",
    reference_code="def f(x):\n    return 3 * x + 1\n",
    tests=[TestCase(input=f"({x},)", expected=3 * x + 1) for x in (1, 2, 5, 7, 9)],
)
"""Five queries; the solver's split of them at public 2: two public, three hidden."""


def predictions(right: set[int]) -> str:
    """A deduction answer right on the queries ``right`` (by index) and wrong elsewhere."""
    lines = [f"f{t.input} == {t.expected if i in right else -1}" for i, t in enumerate(QUERIES.tests)]
    return "```python\n" + "\n".join(lines) + "\n```\n"


def test_a_first_answer_to_a_query_task_is_paid_on_every_query_it_gets_right(rewarder: Rewarder) -> None:
    # before: the first two queries counted as "shown" though no prompt had shown their answers, so a
    # one-shot answer right on 3 of 5 queries (both public ones among them) was paid 1/3, not 3/5
    truth = json.dumps(ground_truth(QUERIES, 2))
    text = predictions({0, 1, 4})
    assert rewarder.score(text, truth, partial_credit=True).score == pytest.approx(3 / 5)
    assert compute_score("spade_llm", text, truth, partial_credit=True)["score"] == pytest.approx(3 / 5)
    # after feedback told the public queries' verdicts, they count as shown: the hidden ones are paid
    task, _ = parse_ground_truth(truth)
    later = rewarder.judge_answer(task, extract_answer(task, text), partial_credit=True, after_feedback=True)
    assert later.score == pytest.approx(1 / 3)
    # and induction's lookup table of its shown tests still earns nothing on a first answer
    assert verl_credit(rewarder, {"ground_truth": json.dumps(ground_truth(TRIPLE, PUBLIC))}, TABLE) == 0.0
