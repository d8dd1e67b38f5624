from spade_llm.config import RewardConfig
from spade_llm.evaluator import (
    code_tokens,
    episode_reward,
    next_difficulty,
    novelty,
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
    assert next_difficulty(0.5, [0.95], band, 0.1) > 0.5
    assert next_difficulty(0.5, [0.05], band, 0.1) < 0.5
    assert next_difficulty(0.5, [0.5], band, 0.1) == 0.5
    assert next_difficulty(0.98, [1.0], band, 0.1) == 1.0
    assert next_difficulty(0.02, [0.0], band, 0.1) == 0.0
    assert next_difficulty(0.5, [], band, 0.1) == 0.5


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
