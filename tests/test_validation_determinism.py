"""A reference must be a function of its input beyond its tests too (issue 35, finding 14).

A proposal whose reference is deterministic on its own tests' inputs (matched by hash) and a coin flip
everywhere else passed every gate: determinism was checked on the tests alone. Abduction judges an answer
by running the reference on the answer's own inputs, so such a task paid answers by chance. Validation now
runs the reference twice more on probe inputs no test has (two hash seeds, opposite call orders), for
every kind, and abduction's judge runs a passing input a second time. The kinds tests proper are in
``test_kinds.py``; these are the nondeterminism category, one source at a time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm import validation
from spade_llm.cli import app as cli
from spade_llm.config import SandboxConfig
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind
from spade_llm.kinds.abduction import NOT_ITS_OWN
from spade_llm.languages.python_mutants import determinism_probes
from spade_llm.sandbox import runner
from spade_llm.types import Task, TestCase
from spade_llm.validation import Validator

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("test_validation_determinism")

INPUTS = [(3, [1, 2]), (5, [4]), (8, [2, 2, 2]), (1, []), (13, [7, 1])]
OWN = sorted(hashlib.sha256(repr(a).encode()).hexdigest() for a in INPUTS)
HONEST = "def honest(n, xs):\n    return n * 3 + sum(xs) * 2 - len(xs)\n"
NOISE = {
    "random": "import random\n\ndef noise(n, xs):\n    return random.randint(0, 1)\n",
    "time": "import time\n\ndef noise(n, xs):\n    return time.perf_counter_ns() % 3\n",
    "id": "def noise(n, xs):\n    return id(xs) % 7\n",
    "hash": "def noise(n, xs):\n    return hash(str(n)) % 5\n",
    "urandom": "import os\n\ndef noise(n, xs):\n    return os.urandom(1)[0] % 3\n",
    "set order": "def noise(n, xs):\n    return list({'a' + str(n), 'b', 'c' + str(xs)}).index('b')\n",
    "global counter": "_CALLS = [0]\n\ndef noise(n, xs):\n    _CALLS[0] += 1\n    return _CALLS[0]\n",
    # honest wherever it is not loaded as the judge loads it (the mutation gate's module names)
    "not the judge's module": (
        "import random\n\ndef noise(n, xs):\n    return random.randint(0, 1) if __name__ == 'solution' else 0\n"
    ),
    # honest unless the harness itself calls it (probes once went through the mutation gate's dispatcher)
    "called by the judge": (
        "import random, sys\n\n"
        "def noise(n, xs):\n"
        "    caller = sys._getframe(2).f_code.co_name\n"
        "    return random.randint(0, 1) if caller == 'tests' else 0\n"
    ),
    # burns more CPU than a short probe budget allows before it flips its coin (the judge allows the
    # whole test budget)
    "burns time first": (
        "import random, time\n\n"
        "def noise(n, xs):\n"
        "    t = time.process_time()\n"
        "    while time.process_time() - t < 0.12:\n"
        "        pass\n"
        "    return random.randint(0, 1)\n"
    ),
}
"""Sources of nondeterminism a reference can hide behind its tests, and ways to hide from the probes."""


def hiding(noise: str) -> str:
    """A reference that answers its own tests' inputs honestly (recognised by hash) and adds noise elsewhere."""
    return (
        f"import hashlib\n\n{HONEST}\n{NOISE[noise]}\n_OWN = {OWN!r}\n\n"
        "def f(n, xs):\n"
        "    if hashlib.sha256(repr((n, xs)).encode()).hexdigest() in _OWN:\n"
        "        return honest(n, xs)\n"
        "    return honest(n, xs) + noise(n, xs)\n"
    )


def task(kind: str, code: str, inputs: list[Any] = INPUTS, expected: list[Any] | None = None) -> Task:
    tests = [TestCase(input=repr(a)) for a in inputs]
    if expected is not None:
        tests = [TestCase(input=repr(a), expected=e) for a, e in zip(inputs, expected, strict=True)]
    return Task(
        task_id=f"t-{kind}",
        kind=kind,
        description="d",
        entry_point="f",
        reference_code=code,
        tests=tests,
    )


@pytest.fixture(scope="module")
def validator(sandbox: Any) -> Validator:
    config = SandboxConfig(backend="subprocess", test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


@pytest.mark.parametrize("kind", ["induction", "deduction", "abduction"])
@pytest.mark.parametrize("noise", sorted(NOISE))
def test_a_reference_deterministic_on_its_tests_alone_is_nondeterministic(
    validator: Validator, kind: str, noise: str
) -> None:
    report = get_kind(kind).gates(validator, task(kind, hiding(noise)))
    assert report.reason == "nondeterministic", report.detail
    assert "no test has" in report.detail


@pytest.mark.parametrize("kind", ["induction", "deduction", "abduction"])
def test_its_deterministic_twin_is_valid(validator: Validator, kind: str) -> None:
    report = get_kind(kind).gates(validator, task(kind, HONEST.replace("honest", "f")))
    assert report.valid, report.detail


def test_an_order_dependent_reference_is_caught_on_its_own_tests(validator: Validator) -> None:
    # the second run calls the tests in reverse order: a counter that moves the answers shows there
    counter = "_N = [0]\n\ndef f(n, xs):\n    _N[0] += 1\n    return n + _N[0]\n"
    report = validator.validate(task("induction", counter))
    assert report.reason == "nondeterministic" and "reverse order" in report.detail, report.detail


def test_a_memo_across_calls_is_no_nondeterminism(validator: Validator) -> None:
    memo = (
        "_SEEN = {}\n\n"
        "def f(n, xs):\n"
        "    key = (n, tuple(xs))\n"
        "    _SEEN[key] = _SEEN.get(key) or n * 3 + sum(xs)\n"
        "    return _SEEN[key]\n"
    )
    report = get_kind("abduction").gates(validator, task("abduction", memo))
    assert report.valid, report.detail


def test_spade_verify_rejects_the_coin_flip_every_time(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "coin.jsonl"
    coin = task("abduction", hiding("random"))
    path.write_text(json.dumps(coin.dump()) + "\n")
    verdicts = []
    for _ in range(5):
        cli.main(["verify", str(path), "--sandbox", "subprocess"])
        verdicts.append(json.loads(capsys.readouterr().out.splitlines()[0])["reason"])
    assert verdicts == ["nondeterministic"] * 5


# -- the probes (pure) ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-50, 50), st.lists(st.integers(-9, 9), max_size=5), st.text("abc", max_size=4)),
        min_size=1,
        max_size=6,
    ),
    st.text(max_size=20),
)
def test_probes_are_beyond_the_tests_of_their_shape_and_stable_for_a_key(
    tests: list[tuple[int, list[int], str]], key: str
) -> None:
    probes = determinism_probes(tests, key)
    assert probes == determinism_probes(tests, key)
    assert not set(map(repr, probes)) & set(map(repr, tests))
    assert len(set(map(repr, probes))) == len(probes) <= 48
    for p in probes:
        assert [type(v) for v in p] == [int, list, str]
        assert all(type(x) is int for x in p[1])


def test_probes_depend_on_the_key_so_no_proposal_can_tell_them_ahead() -> None:
    tests = [(3, [1, 2], "ab"), (5, [4], "c")]
    assert determinism_probes(tests, "one") != determinism_probes(tests, "two")


# -- abduction: the judge is the reference, which must agree with itself --------------------------

HALVES = "def f(n):\n    return n // 2\n"


@pytest.mark.parametrize(
    "second_opinion",
    [
        # another hash seed on the second run
        "import os\n\ndef f(n):\n    return n // 2 + (os.environ.get('PYTHONHASHSEED') == '1')\n",
        # honest while called in increasing order: the second run goes in reverse order
        "_LAST = [None]\n\n"
        "def f(n):\n"
        "    rising = _LAST[0] is None or n > _LAST[0]\n"
        "    _LAST[0] = n\n"
        "    return n // 2 if rising else -1\n",
    ],
)
def test_an_abduction_answer_passes_only_where_the_reference_agrees_with_itself(
    sandbox: Any, second_opinion: str
) -> None:
    judge = Judge(sandbox, SandboxConfig(backend="subprocess").limits(), 1.0)
    kind = get_kind("abduction")
    honest = task("abduction", HALVES, [(4,), (6,), (10,)], [2, 3, 5])
    answer = "```python\nf(5) == 2\nf(7) == 3\nf(11) == 5\n```"  # not the tests' inputs: right for the honest one
    assert final_status(kind.check_answer(judge, honest, answer, None)) == "passed"
    flaky = honest.model_copy(update={"reference_code": second_opinion})
    verdicts = [kind.check_answer(judge, flaky, answer, None) for _ in range(4)]
    assert all(final_status(v) == "failed" for v in verdicts)
    assert len({json.dumps([(r.status, r.error) for r in v.test_results or []]) for v in verdicts}) == 1
    assert any(r.error == NOT_ITS_OWN for r in verdicts[0].test_results or [])


# -- no evidence is no pass: the quorum of probes, and what it costs -----------------------------


def stalling(stall: str) -> str:
    """A reference honest on its own tests that gives no answer anywhere else (it stalls there)."""
    return (
        f"import hashlib, time\n\n{HONEST}\n_OWN = {OWN!r}\n\n"
        "def f(n, xs):\n"
        "    if hashlib.sha256(repr((n, xs)).encode()).hexdigest() not in _OWN:\n"
        f"        {stall}\n"
        "    return honest(n, xs)\n"
    )


@pytest.mark.parametrize("stall", ["time.sleep(100)", "while True: pass"])
def test_a_reference_that_answers_no_input_beyond_its_tests_is_undecided(
    validator: Validator, stall: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: probes that ran out of time told nothing, and nothing told was a pass; now at least
    # DETERMINISM_QUORUM probes must be answered in both runs, and what a stall costs is bounded
    executions: list[str] = []
    real = runner.execute_calls

    def counted(*args: Any, **kwargs: Any) -> Any:
        executions.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(validation, "execute_calls", counted)
    report = get_kind("abduction").gates(validator, task("abduction", stalling(stall)))
    assert report.reason == "undecided", report.detail
    assert "beyond its tests" in report.detail and "cannot be decided" in report.detail
    assert len(executions) <= 8, executions


def test_an_abduction_answer_judged_again_gets_the_same_verdict(sandbox: Any) -> None:
    # the judge runs the reference; one that is a coin flip off its tests (never validated here) must
    # not pay an answer by chance: before, re-judging one answer gave 0 or 1 passed queries at random
    judge = Judge(sandbox, SandboxConfig(backend="subprocess").limits(), 1.0)
    honest = [n * 3 + sum(xs) * 2 - len(xs) for n, xs in INPUTS]  # HONEST's outputs
    coin = task("abduction", hiding("random"), expected=honest)
    # inputs no test has, right for the honest function: f(n, [k]) == n * 3 + 2 * k - 1
    answer = []
    for out in honest:
        k = next(k for k in range(3) if (out - 2 * k + 1) % 3 == 0)
        assert ((out - 2 * k + 1) // 3, [k]) not in INPUTS
        answer.append(f"f({(out - 2 * k + 1) // 3}, [{k}]) == {out}")
    text = "```python\n" + "\n".join(answer) + "\n```"
    verdicts = [get_kind("abduction").check_answer(judge, coin, text, None) for _ in range(16)]
    assert [v.tests_passed for v in verdicts] == [0] * 16
    flaky = [r for v in verdicts for r in v.test_results or [] if r.error == NOT_ITS_OWN]
    assert flaky, "the judge never saw the reference disagree with itself"
