from hypothesis import given
from hypothesis import strategies as st

from spade_llm.config import RewardConfig
from spade_llm.evaluator import (
    code_tokens,
    episode_reward,
    learnability,
    next_difficulty,
    novelty,
    pass_at_k,
    similarity,
    task_fingerprint,
)


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


def test_renamed_copy_is_similar_and_different_code_is_not():
    a = "def add(a, b):\n    return a + b\n"
    b = "def plus(x, y):\n    return x + y\n"
    c = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    assert similarity(task_fingerprint(a), task_fingerprint(b)) == 1.0
    assert similarity(task_fingerprint(a), task_fingerprint(c)) < 0.3
    assert code_tokens("def f(:\n  ((") != []  # broken code still tokenizes


def test_novelty_zero_for_copies_high_for_new():
    a = task_fingerprint("def add(a, b):\n    return a + b\n")
    c = task_fingerprint(
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    )
    assert novelty([a], [a]) == 0.0
    assert novelty([c], [a]) > 0.7
    assert novelty([], [a]) == 0.0
