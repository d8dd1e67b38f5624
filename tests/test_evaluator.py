import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_llm.config import RewardConfig
from spade_llm.evaluator import (
    default_ks,
    episode_reward,
    ks_with_all,
    learnability,
    next_difficulty,
    novelty,
    pass_at_k,
    pass_at_k_table,
    short_of_samples,
    similarity,
    task_fingerprint,
)
from spade_llm.languages import PYTHON

code_tokens = PYTHON.code_tokens


def test_pass_pays_more_when_harder_and_faster():
    assert episode_reward("passed", 1, 0.8, 1.0) > episode_reward("passed", 1, 0.2, 1.0)
    assert (
        episode_reward("passed", 1, 0.5, 1.0)
        > episode_reward("passed", 2, 0.5, 1.0)
        > episode_reward("passed", 3, 0.5, 1.0)
    )


def test_any_pass_beats_any_failure():
    worst_pass = episode_reward("passed", 20, 0.0, 1.0)
    best_fail = episode_reward("failed", 1, 1.0, 0.99)
    assert worst_pass > best_fail


def test_failing_and_timing_out_cost():
    c = RewardConfig()
    assert episode_reward("failed", 3, 0.5, 0.0) == c.fail < 0
    assert episode_reward("timeout", 1, 0.5, 0.0) == c.timeout < c.fail
    assert episode_reward("error", 1, 0.5, 0.0) == c.error < 0
    assert episode_reward("failed", 3, 0.5, 0.5) > episode_reward("failed", 3, 0.5, 0.0)


def test_difficulty_moves_out_of_band_only():
    band = (0.3, 0.7)
    assert next_difficulty(0.5, 0.95, 8, band, 0.1) > 0.5
    assert next_difficulty(0.5, 0.05, 8, band, 0.1) < 0.5
    assert next_difficulty(0.5, 0.5, 8, band, 0.1) == 0.5
    assert next_difficulty(0.98, 1.0, 8, band, 0.1) == 1.0
    assert next_difficulty(0.02, 0.0, 8, band, 0.1) == 0.0
    assert next_difficulty(0.5, None, 0, band, 0.1) == 0.5  # nothing measured: stay


@given(
    current=st.floats(0.0, 1.0),
    rate=st.floats(0.0, 1.0),
    episodes=st.integers(0, 64),
    lo=st.floats(0.0, 0.9),
    width=st.floats(0.05, 0.5),
    step=st.floats(0.01, 0.5),
    min_episodes=st.integers(1, 8),
)
def test_difficulty_never_moves_after_an_in_band_or_unmeasured_epoch(
    current, rate, episodes, lo, width, step, min_episodes
):
    band = (lo, min(1.0, lo + width))
    new = next_difficulty(current, rate, episodes, band, step, min_episodes)
    assert 0.0 <= new <= 1.0
    if episodes < min_episodes or band[0] <= rate <= band[1]:
        assert new == current
    elif rate > band[1]:
        assert new >= current and new - current <= step + 1e-4  # too easy: harder, by at most a step
    else:
        assert new <= current and current - new <= step + 1e-4


def test_learnability_and_pass_at_k():
    assert learnability(0, 4) == learnability(4, 4) == learnability(0, 0) == 0.0
    assert learnability(1, 4) == 0.75 and learnability(3, 4) == 0.25
    assert abs(pass_at_k(10, 3, 1) - 0.3) < 1e-12 and pass_at_k(5, 5, 2) == 1.0 and pass_at_k(5, 0, 1) == 0.0


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(4, 1, 1, 0.25), (4, 0, 1, 0.0), (4, 0, 4, 0.0), (4, 3, 2, 1.0), (4, 4, 4, 1.0), (10, 5, 3, 11 / 12)],
)
def test_pass_at_k_on_known_counts(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-15)


@given(st.integers(1, 300), st.data())
def test_pass_at_k_is_one_minus_the_binomial_ratio_even_at_large_n(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert abs(pass_at_k(n, c, k) - float(exact)) < 1e-12


def test_pass_at_k_at_n_200_matches_the_exact_fraction():
    for c, k in [(1, 1), (1, 100), (7, 10), (100, 50), (199, 200), (0, 200)]:
        exact = 1 - Fraction(math.comb(200 - c, k), math.comb(200, k))
        assert pass_at_k(200, c, k) == pytest.approx(float(exact), abs=1e-14)


@pytest.mark.parametrize(("n", "c", "k"), [(2, 0, 5), (2, 2, 3), (4, 1, 0), (4, 5, 1), (4, -1, 1), (0, 0, 1)])
def test_pass_at_k_refuses_what_has_no_unbiased_estimate(n, c, k):
    # k > n used to say 1.0 for any c (n - c < k): a task with 2 wrong samples had "pass@5 = 1"
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_pass_at_k_table_per_task_and_overall():
    outcomes = {"a": [True, False, False, False], "b": [False] * 4, "c": [True, True, True, False]}
    table = pass_at_k_table(outcomes, (1, 2))
    assert [(t.task_id, t.n, t.c) for t in table.tasks] == [("a", 4, 1), ("b", 4, 0), ("c", 4, 3)]
    assert [t.scores for t in table.tasks] == [{1: 0.25, 2: pytest.approx(0.5)}, {1: 0.0, 2: 0.0}, {1: 0.75, 2: 1.0}]
    assert table.overall == {1: pytest.approx((0.25 + 0 + 0.75) / 3), 2: pytest.approx((0.5 + 0 + 1) / 3)}
    summary = table.summary()
    assert summary["k"] == [1, 2] and summary["tasks"] == 3 and summary["samples"] == 12 and summary["passed"] == 4
    assert summary["per_task"][0] == {"task_id": "a", "n": 4, "c": 1, "pass@1": 0.25, "pass@2": pytest.approx(0.5)}
    assert summary["overall"] == {"pass@1": pytest.approx(1 / 3), "pass@2": pytest.approx(0.5)}
    assert pass_at_k_table({}, (1,)).overall == {}


def test_default_ks_and_the_tasks_short_of_samples():
    assert default_ks([12, 40]) == (1, 10) and default_ks([100, 100]) == (1, 10, 100) and default_ks([]) == ()
    assert short_of_samples({"a": 4, "b": 10, "c": 2}, 5) == {"a": 4, "c": 2}
    assert ks_with_all([4, 4]) == (1, 4) and ks_with_all([64, 70]) == (1, 10, 64) and ks_with_all([10]) == (1, 10)
    assert ks_with_all([]) == ()


def test_renamed_copy_is_similar_and_different_code_is_not():
    a = "def add(a, b):\n    return a + b\n"
    b = "def plus(x, y):\n    return x + y\n"
    c = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    assert similarity(task_fingerprint(a), task_fingerprint(b)) == 1.0
    assert similarity(task_fingerprint(a), task_fingerprint(c)) < 0.3
    assert code_tokens("def f(:\n  ((") != []  # broken code still tokenizes


def test_novelty_is_one_minus_each_new_tasks_nearest_similarity():
    assert novelty([1.0]) == 0.0
    assert novelty([0.2, 0.4]) == 0.7
    assert novelty([]) == 0.0
    # a keyed kind's task (bugs of one reference) has no similarity: new by its key
    assert novelty([None, 1.0]) == 0.5
    assert novelty([None, 0.0]) == 1.0


# -- metrics that warn ------------------------------------------------------------------------------

from spade_llm.evaluator import (  # noqa: E402
    calibration,
    difficulty_histogram,
    failure_class,
    funnel,
    percentile,
    warning_signs,
    zero_spread_share,
)
from spade_llm.types import (  # noqa: E402
    Attempt,
    EpochMetrics,
    ExecutionResult,
    TaskStats,
    TestResult,
    Trajectory,
)


def _traj(status, result=None, code="def f(): pass"):
    attempts = [] if result is None else [Attempt(turn=1, code=code, result=result)]
    return Trajectory(
        trajectory_id="x", task_id="t", epoch=0, messages=[], attempts=attempts, final_status=status, reward=0.0
    )


def test_the_funnel_loses_proposals_where_they_were_lost():
    reasons = ["bad_json", "llm_timeout", "weak_tests", "runtime_error", "duplicate"]
    assert funnel(10, 8, reasons, 5) == {"proposed": 10, "parsed": 8, "valid": 6, "novel": 5, "accepted": 5}


def test_failure_classes_name_what_went_wrong():
    def run(**kw):
        return ExecutionResult(status="ok", tests_passed=0, tests_total=1, **kw)

    failed = TestResult(index=0, input="(1,)", status="error", error="IndexError: list index out of range")
    assert failure_class(_traj("failed", run(test_results=[failed]))) == "IndexError"
    wrong = TestResult(index=0, input="(1,)", status="failed", output="2")
    assert failure_class(_traj("failed", run(test_results=[wrong]))) == "wrong_answer"
    assert failure_class(_traj("timeout", ExecutionResult(status="timeout"))) == "timeout"
    assert failure_class(_traj("error", run(load_error="SyntaxError: invalid syntax (line 1)"))) == "SyntaxError"
    assert failure_class(_traj("error", run(load_error="no code in the answer"), code="")) == "no_code"
    assert failure_class(_traj("error")) == "no_attempt"
    assert failure_class(_traj("passed", run())) is None


def test_percentiles_histograms_spread_and_calibration_are_plain_arithmetic():
    assert percentile([], 0.9) is None and percentile([5.0], 0.9) == 5.0
    assert percentile([float(i) for i in range(1, 11)], 0.9) == 9.0
    assert difficulty_histogram([0.0, 0.19, 0.2, 0.99, 1.0]) == {
        "0.0-0.2": 2, "0.2-0.4": 1, "0.4-0.6": 0, "0.6-0.8": 0, "0.8-1.0": 2,
    }  # fmt: skip
    stats = [
        TaskStats(task_id=str(p), epoch=0, samples=4, passed=int(4 * p), pass_rate=p, learnability=0.0, mean_turns=1.0)
        for p in (0.0, 0.5, 1.0, 1.0)
    ]
    assert zero_spread_share(stats) == 0.75 and zero_spread_share([]) is None
    assert calibration([0.8, 0.2], [0.0, 1.0]) == {"claimed": 0.5, "measured": 0.5, "mean_abs_gap": 0.2}
    assert calibration([], []) is None


def _row(epoch, pass_rate, difficulty=0.5, novelty=0.9, proposed=8, accepted=8, rejected=None):
    return EpochMetrics(
        epoch=epoch, difficulty=difficulty, pass_rate=pass_rate, first_try_pass_rate=None, mean_turns=None,
        tasks_proposed=proposed, tasks_accepted=accepted, rejected_by_reason=rejected or {}, novelty=novelty,
        mean_reward=None,
    )  # fmt: skip


def test_warning_signs_of_a_run_going_wrong():
    band = (0.3, 0.7)
    assert warning_signs([_row(0, 1.0), _row(1, 0.97)], band) == []  # two epochs are not a trend
    easy = warning_signs([_row(0, 1.0, 0.3), _row(1, 0.96, 0.4), _row(2, 1.0, 0.5)], band)
    assert easy == ["pass rate stuck near 1 for 3 epochs: the tasks are too easy to learn from"]
    stuck = warning_signs([_row(0, 0.0, 0.2), _row(1, 0.04, 0.2), _row(2, 0.0, 0.2)], band)
    assert any("near 0" in w for w in stuck) and any("difficulty has not moved" in w for w in stuck)
    assert warning_signs([_row(0, 0.5, 0.5), _row(1, 0.5, 0.5), _row(2, 0.5, 0.5)], band) == []  # in band: fine
    assert any("novelty collapsing" in w for w in warning_signs([_row(0, 0.5, novelty=0.1)], band))
    assert any("validity collapsing" in w for w in warning_signs([_row(0, 0.5, proposed=10, accepted=1)], band))


def test_novelty_falling_epoch_after_epoch_is_a_sign_before_it_collapses():
    """The issue's run: novelty 0.90 -> 0.45 over epochs with no warning (the collapse sign waits for 0.3)."""
    band = (0.3, 0.7)
    falling = [_row(e, 0.5, novelty=n) for e, n in enumerate([0.9, 0.8, 0.62, 0.45])]
    assert warning_signs(falling, band) == ["novelty falling for 3 epochs: 0.80 -> 0.62 -> 0.45"]
    wobbling = [_row(e, 0.5, novelty=n) for e, n in enumerate([0.9, 0.7, 0.75, 0.6])]
    assert warning_signs(wobbling, band) == []
    gently = [_row(e, 0.5, novelty=n) for e, n in enumerate([0.9, 0.88, 0.86, 0.84])]
    assert warning_signs(gently, band) == []  # a run's novelty eases as it grows: only a real fall is a sign
    empty = [_row(0, 0.5, novelty=0.9), _row(1, 0.5, novelty=0.0, accepted=0), _row(2, 0.5, novelty=0.5)]
    assert warning_signs(empty, band) == []  # an epoch that accepted nothing measured no novelty


def test_a_generator_repeating_itself_is_told_apart_from_one_writing_invalid_tasks():
    """fake/collapse's epochs: valid proposals, nearly all refused as duplicates. The accepted few are new (the
    gate made sure), so novelty cannot show it: the duplicates sign does, and validity is not blamed."""
    band = (0.3, 0.7)
    repeating = warning_signs([_row(0, 0.5, proposed=10, accepted=1, rejected={"duplicate": 9})], band)
    assert repeating == ["duplicates rising: 9 of 10 valid proposals near-copy accepted tasks"]
    invalid = warning_signs([_row(0, 0.5, proposed=10, accepted=1, rejected={"no_tests": 8, "duplicate": 1})], band)
    assert invalid == ["validity collapsing: 2 of 10 proposals valid"]
    both = warning_signs([_row(0, 0.5, proposed=40, accepted=2, rejected={"no_tests": 32, "duplicate": 6})], band)
    assert both == ["duplicates rising: 6 of 8 valid proposals near-copy accepted tasks", both[1]]
    assert both[1] == "validity collapsing: 8 of 40 proposals valid"
    assert warning_signs([_row(0, 0.5, proposed=10, accepted=6, rejected={"duplicate": 4})], band) == []


# -- counts by facet (a bug fix's maker and edit families) ---------------------------------------------

from spade_llm.evaluator import facet_counts, proposed_tasks  # noqa: E402
from spade_llm.types import ABANDONED, Task, TestCase  # noqa: E402


def _bug(task_id: str, maker: str | None, edits: list[str] | None) -> Task:
    meta = {} if maker is None else {"bug": {"maker": maker, "edits": edits or []}}
    return Task(
        task_id=task_id, kind="bugfix", description="d", entry_point="f", reference_code="def f(x):\n    return x\n",
        tests=[TestCase(input="(1,)", expected=1)], buggy_code="def f(x):\n    return x + 1\n", meta=meta,
    )  # fmt: skip


def _played(task_id: str, *statuses: str) -> list[Trajectory]:
    """Episodes ending so (``abandoned``: an ``error`` a serve-env client left)."""
    return [
        Trajectory.model_validate({
            "trajectory_id": f"{task_id}-{i}", "task_id": task_id, "epoch": 0, "messages": [], "attempts": [],
            "final_status": "error" if s == "abandoned" else s, "reward": 0.0,
            "flags": [ABANDONED] if s == "abandoned" else [],
        })
        for i, s in enumerate(statuses)
    ]  # fmt: skip


def test_bugs_are_counted_made_kept_and_fixed_by_maker_and_edit_family():
    procedural = _bug("p", "procedural", ["off_by_one", "wrong_variable"])
    modelled = _bug("g", "generator", ["off_by_one"])
    unjudged = _bug("c", None, None)  # a candidate as proposed: its maker the generator, its family read from its diff
    induction = Task(task_id="i", description="d", entry_point="f", reference_code="def f(x):\n    return x\n",
                     tests=[TestCase(input="(1,)", expected=1)])  # fmt: skip
    trajectories = {
        "p": _played("p", "passed", "failed", "abandoned"),  # an abandoned episode measures nothing
        "g": _played("g", "passed", "passed"),
        "i": _played("i", "passed"),
    }
    counts = facet_counts([procedural, modelled, unjudged, induction], [procedural, modelled, induction], trajectories)
    assert list(counts) == ["bugfix"]  # a kind without facets is counted by kind alone
    assert counts["bugfix"]["maker"] == {
        "generator": {"proposed": 2, "accepted": 1, "episodes": 2, "passed": 2},
        "procedural": {"proposed": 1, "accepted": 1, "episodes": 2, "passed": 1},
    }
    assert counts["bugfix"]["edit"] == {  # a bug of two families counts under each
        "off_by_one": {"proposed": 3, "accepted": 2, "episodes": 4, "passed": 3},  # x + 1 for x: an off-by-one
        "wrong_variable": {"proposed": 1, "accepted": 1, "episodes": 2, "passed": 1},
    }
    assert facet_counts([induction], [induction], trajectories) == {}


def test_the_proposed_tasks_are_the_candidates_that_parsed():
    rows: list[dict[str, Any]] = [
        {"candidates": [{"task": _bug("a", None, None).dump()}, {"task": None, "raw": "x", "reason": "invalid_task"}]},
        {"failure": "bad_json", "candidates": []},
        {"candidates": [{"task": {"not": "a task"}}]},  # a row no reader takes: not counted
    ]
    assert [t.task_id for t in proposed_tasks(rows)] == ["a"]
