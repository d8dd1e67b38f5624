"""Rewards and metrics: pure functions of executions and trajectories.

Nothing here touches a model, a sandbox or a file, so each function is tested in isolation.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .languages import DEFAULT_LANGUAGE, get_language
from .types import (
    ABANDONED,
    Attempt,
    EpochMetrics,
    FinalStatus,
    Rejection,
    Task,
    TaskStats,
    TokenUsage,
    Trajectory,
    decision_key,
)

if TYPE_CHECKING:  # the config models cost ~0.2 s to import; evaluate and verify do without them
    from .config import ControllerConfig, RewardConfig


def episode_reward(
    final_status: FinalStatus,
    turns: int,
    difficulty: float,
    pass_fraction: float,
    config: RewardConfig | None = None,
) -> float:
    """Reward of one solving episode.

    Passing earns more at higher difficulty and with fewer turns; failing earns a little partial
    credit, ``pass_fraction`` being what ``credited_fraction`` gives the last attempt (the hidden
    tests it passed: copying the shown ones earns nothing); timing out and crashing cost.

    >>> episode_reward("passed", 1, 0.5, 1.0)
    1.5
    >>> episode_reward("passed", 3, 0.5, 1.0)
    1.1
    >>> episode_reward("failed", 3, 0.5, 0.5)
    -0.05
    >>> episode_reward("timeout", 1, 0.9, 0.0)
    -0.5
    """
    if config is None:
        from .config import RewardConfig

        config = RewardConfig()
    c = config
    if final_status == "passed":
        reward = c.pass_base + c.difficulty_bonus * difficulty - c.turn_penalty * max(0, turns - 1)
        # a pass always beats any failure, however many turns it took
        return round(max(reward, c.partial_credit + 0.01, 0.01), 6)
    if final_status == "timeout":
        return c.timeout
    if final_status == "error":
        return c.error
    return round(c.fail + c.partial_credit * min(max(pass_fraction, 0.0), 1.0), 6)


def outcome_reward(final_status: str, credited: float, partial_credit: bool = False) -> float:
    """The reward a trainer gets for one answer or episode, the same on every path (serve-env's
    observations, ``SpadeLiveEnv``, ``SpadeCodingEnv``, the verifiers rubric, ``code_reward`` and
    ``compute_score``): 1.0 when it passed every test, else 0.0, or with ``partial_credit`` the
    ``credited`` share (``credited_fraction``: the hidden tests passed). The loop's own shaped reward
    (``episode_reward``: difficulty, turns, timeouts) is what trajectories record and serve-env's
    ``env.reward: shaped`` sends.

    >>> outcome_reward("passed", 1.0), outcome_reward("failed", 0.5), outcome_reward("failed", 0.5, True)
    (1.0, 0.0, 0.5)
    """
    if final_status == "passed":
        return 1.0
    return min(max(credited, 0.0), 1.0) if partial_credit else 0.0


def credited_fraction(passed: int, total: int, public_passed: int, public_total: int) -> float:
    """The share of tests partial credit pays for: the *hidden* ones an answer passed.

    The one rule of partial credit, for every reward path (the loop's ``episode_reward``, so ``run``
    and serve-env; ``rewards``' ``code_reward``/``compute_score``, TRL's environments, verifiers).
    ``passed``/``total`` count every test, the shown ones included; ``public_passed``/``public_total``
    the shown ones (the public tests, whose inputs and expected values the prompt showed and whose
    verdicts the feedback told). What was shown can be copied (a lookup table of the public tests
    passes them all and nothing else: the ``hardcoded_suspect`` signature) or learnt from feedback
    (a yes/no prediction told wrong is told its answer), so only tests never shown count: a copy of
    the shown tests earns nothing, and failing a shown test on purpose earns nothing either, so no
    shortcut pays more than solving. With no hidden test (everything shown) every test counts.

    >>> credited_fraction(3, 6, 3, 3)  # the public tests copied, no hidden one passed
    0.0
    >>> credited_fraction(4, 6, 2, 3)  # two of three hidden ones passed, whatever the public did
    0.6666666666666666
    >>> credited_fraction(1, 4, 0, 0)  # nothing shown: every test is hidden
    0.25
    """
    total = max(total, 0)
    public_total = min(max(public_total, 0), total)
    hidden_total = total - public_total
    if hidden_total == 0:
        return min(max(passed, 0), total) / total if total else 0.0
    hidden_passed = min(max(passed - min(max(public_passed, 0), public_total), 0), hidden_total)
    return hidden_passed / hidden_total


def shown_tests(kind: str, public_passed: int, public_total: int, *, after_feedback: bool) -> tuple[int, int]:
    """The public tests partial credit counts as *shown* for one answer to a task of ``kind``, as
    ``credited_fraction``'s last two arguments: the kind's rule (``TaskKind.shown_tests``: whether
    the solver had seen their expected values when it wrote that answer)."""
    from .kinds import get_kind

    return get_kind(kind).shown_tests(public_passed, public_total, after_feedback=after_feedback)


def attempt_credit(task: Task, attempt: Attempt) -> float:
    """``credited_fraction`` of an episode's last attempt at ``task``: the share of its tests partial
    credit pays for (an imported benchmark's examples are not in its result, so nothing counts as shown;
    otherwise the kind's rule, ``shown_tests``). The loop's trajectory reward and serve-env's
    ``partial_credit`` reward both read it."""
    total = attempt.result.tests_total or len(task.tests) or 1
    shown = (
        (0, 0)
        if task.shows_examples
        else shown_tests(task.kind, attempt.public_passed, attempt.public_total, after_feedback=attempt.turn > 1)
    )
    return credited_fraction(attempt.result.tests_passed or 0, total, *shown)


def next_difficulty(
    current: float,
    pass_rate: float | None,
    episodes: int,
    band: tuple[float, float],
    step: float,
    min_episodes: int = 4,
) -> float:
    """Target difficulty of the next epoch, steered by the last epoch's measured pass rate.

    It moves only when that pass rate is outside ``band`` (inclusive), and only when it rests on at
    least ``min_episodes`` episodes: an in-band epoch or one too small to measure leaves it where it
    is, so the target settles instead of drifting on noise. The move shrinks near the band's edge.

    >>> next_difficulty(0.3, 0.9, 8, (0.3, 0.7), 0.1)
    0.4
    >>> next_difficulty(0.3, 0.5, 8, (0.3, 0.7), 0.1)
    0.3
    >>> next_difficulty(0.3, 0.0, 2, (0.3, 0.7), 0.1)
    0.3
    >>> next_difficulty(0.05, 0.0, 8, (0.3, 0.7), 0.1)
    0.0
    """
    if pass_rate is None or episodes < min_episodes:
        return current
    lo, hi = band
    if pass_rate > hi:
        move = step * min(1.0, 0.5 + (pass_rate - hi) / max(1e-9, 1 - hi))
    elif pass_rate < lo:
        move = -step * min(1.0, 0.5 + (lo - pass_rate) / max(1e-9, lo))
    else:
        return current  # in band: exactly where it was
    return round(min(1.0, max(0.0, current + move)), 4)


def learnability(passed: int, samples: int) -> float:
    """Absolute Zero's learnability of a task: ``1 - p`` when ``0 < p < 1``, else 0 (always solved or
    never solved teaches nothing).

    >>> learnability(1, 4)
    0.75
    >>> learnability(4, 4), learnability(0, 4)
    (0.0, 0.0)
    """
    if samples <= 0 or passed <= 0 or passed >= samples:
        return 0.0
    return round(1.0 - passed / samples, 6)


def measured(trajectories: Iterable[Trajectory]) -> list[Trajectory]:
    """The episodes that measure the solver: all but those a ``serve-env`` client abandoned (``ABANDONED``),
    whose failure says where the client went, not what the policy can do."""
    return [t for t in trajectories if ABANDONED not in t.flags]


def task_stats(task_id: str, epoch: int, kind: str, trajectories: Sequence[Trajectory]) -> TaskStats:
    """A task's ``task_stats.jsonl`` row from its judged samples (at least one): every one counted as
    recorded (``samples``), the measured ones (not ``abandoned``) giving its pass rate and learnability."""
    played = measured(trajectories)
    passed = sum(t.final_status == "passed" for t in played)
    n = len(played)
    return TaskStats(
        task_id=task_id,
        epoch=epoch,
        kind=kind,
        samples=len(trajectories),
        passed=passed,
        pass_rate=round(passed / n, 6) if n else None,
        learnability=learnability(passed, n),
        mean_turns=round(sum(len(t.attempts) for t in played) / n, 4) if n else 0.0,
        abandoned=len(trajectories) - n,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al., 2021): n samples, c of them correct, the chance that
    at least one of k drawn without replacement passes, ``1 - C(n-c, k) / C(n, k)``, computed as a
    product (no huge binomials: exact to ~1e-15 at n = 1000).

    >>> pass_at_k(4, 1, 1)
    0.25
    >>> pass_at_k(4, 0, 2), pass_at_k(4, 3, 2)
    (0.0, 1.0)

    Raises:
        ValueError: k < 1, k > n (fewer samples than k: there is no unbiased estimate, and the
            formula would say 1.0 when n - c < k), or c outside 0..n.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n, and n = {n}")
    if not 0 <= c <= n:
        raise ValueError(f"{c} correct of {n} samples")
    if n - c < k:  # every draw of k holds a correct one
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


DEFAULT_KS = (1, 10, 100)
"""The k reported when none is asked for: those of these every task has the samples for."""


def default_ks(samples_per_task: Iterable[int]) -> tuple[int, ...]:
    """The ``DEFAULT_KS`` no larger than the fewest samples any task has (none without tasks).

    >>> default_ks([12, 40]), default_ks([3])
    ((1, 10), (1,))
    """
    fewest = min(samples_per_task, default=0)
    return tuple(k for k in DEFAULT_KS if k <= fewest)


def ks_with_all(samples_per_task: Iterable[int]) -> tuple[int, ...]:
    """``default_ks`` and the fewest samples any task has: pass@N of a solve's N episodes per task (was
    the task solved by any of them) is reported even when N is not one of 1, 10, 100.

    >>> ks_with_all([4, 4]), ks_with_all([10]), ks_with_all([])
    ((1, 4), (1, 10), ())
    """
    counts = list(samples_per_task)
    return tuple(sorted({*default_ks(counts), *([min(counts)] if counts else [])}))


def short_of_samples(samples_per_task: Mapping[str, int], k: int) -> dict[str, int]:
    """Task id -> its sample count, of the tasks with fewer than ``k`` samples (pass@k is not defined
    for them), in the mapping's order."""
    return {task_id: n for task_id, n in samples_per_task.items() if n < k}


@dataclass(frozen=True)
class TaskPassAtK:
    """One task's pass@k: ``n`` samples judged, ``c`` of them correct, ``scores`` k -> pass@k."""

    task_id: str
    n: int
    c: int
    scores: dict[int, float]

    def row(self) -> dict[str, Any]:
        """As JSON: ``{"task_id", "n", "c", "pass@1", ...}``."""
        return {"task_id": self.task_id, "n": self.n, "c": self.c, **{f"pass@{k}": v for k, v in self.scores.items()}}


@dataclass(frozen=True)
class PassAtK:
    """pass@k for each of ``ks``: per task, and over the tasks (``overall``: the mean of the tasks'
    estimates, every task weighing the same whatever its sample count)."""

    ks: tuple[int, ...]
    tasks: tuple[TaskPassAtK, ...]

    @property
    def samples(self) -> int:
        return sum(t.n for t in self.tasks)

    @property
    def overall(self) -> dict[int, float]:
        """k -> the mean over tasks of their pass@k (fsum: the same whatever the tasks' order)."""
        if not self.tasks:
            return {}
        return {k: math.fsum(t.scores[k] for t in self.tasks) / len(self.tasks) for k in self.ks}

    def scores(self) -> dict[str, float]:
        """``{"pass@1": overall, ...}``."""
        return {f"pass@{k}": v for k, v in self.overall.items()}

    def summary(self) -> dict[str, Any]:
        """As JSON (``spade evaluate --json``): the ks, the counts, ``overall`` and ``per_task`` rows."""
        return {
            "k": list(self.ks),
            "tasks": len(self.tasks),
            "samples": self.samples,
            "passed": sum(t.c for t in self.tasks),
            "overall": self.scores(),
            "per_task": [t.row() for t in self.tasks],
        }


def pass_at_k_table(outcomes: Mapping[str, Sequence[bool]], ks: Sequence[int]) -> PassAtK:
    """pass@k of each task of ``outcomes`` (task id -> its samples' verdicts, in the order to report
    them) for each k of ``ks``.

    Raises:
        ValueError: a task has fewer samples than some k (``short_of_samples`` finds them first).
    """
    tasks = tuple(
        TaskPassAtK(task_id, len(verdicts), sum(verdicts), {k: pass_at_k(len(verdicts), sum(verdicts), k) for k in ks})
        for task_id, verdicts in outcomes.items()
    )
    return PassAtK(tuple(ks), tasks)


def episodes_pass_at_k(trajectories: Iterable[Trajectory]) -> dict[str, float]:
    """``{"pass@1": ..., "pass@N": ...}`` over the tasks of ``trajectories`` (grouped by task in the order
    they appear), an episode passing when its final status is ``passed``, for every k that each task has
    the episodes for (``ks_with_all``): a solve's ``pass_at_k``, in its summary and on its report page."""
    counts: dict[str, list[int]] = {}
    for t in trajectories:
        seen = counts.setdefault(t.task_id, [0, 0])
        seen[0] += 1
        seen[1] += t.final_status == "passed"
    return counted_pass_at_k({task_id: (n, c) for task_id, (n, c) in counts.items()})


def counted_pass_at_k(counts: Mapping[str, tuple[int, int]]) -> dict[str, float]:
    """``episodes_pass_at_k`` from each task's (episodes, passed): all pass@k depends on, so a reader that
    streams the episodes keeps two numbers a task."""
    outcomes = {task_id: [True] * c + [False] * (n - c) for task_id, (n, c) in counts.items()}
    return pass_at_k_table(outcomes, ks_with_all(len(v) for v in outcomes.values())).scores()


def shingles(tokens: Sequence[str], k: int = 4) -> frozenset[tuple[str, ...]]:
    if len(tokens) < k:
        return frozenset({tuple(tokens)})
    return frozenset(tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1))


def similarity(a: frozenset[Any], b: frozenset[Any]) -> float:
    """Jaccard similarity of two shingle sets (1.0 = same structure); sealed ones too (``dedup.seal``)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def task_fingerprint(
    reference_code: str, description: str = "", language: str = DEFAULT_LANGUAGE
) -> frozenset[tuple[str, ...]]:
    """What near-duplicate detection compares: the reference's abstracted token shingles (its
    language's ``code_tokens``)."""
    return shingles(get_language(language).code_tokens(reference_code))


def novelty(nearest: Sequence[float | None]) -> float:
    """Mean over new tasks of 1 - (highest similarity to any earlier task, or to a new one before it):
    ``nearest`` holds that similarity for each (``Deduper.nearest_similarity``).

    1.0 means every task is structurally unlike everything before it; 0.0 means copies. A new task
    without a similarity (None: a kind whose tasks share references is told apart by its
    ``duplicate_key``, which the duplicate gate proved new) counts 1.0.
    """
    if not nearest:
        return 0.0
    scores = [1.0 if s is None else 1.0 - s for s in nearest]
    return round(math.fsum(scores) / len(scores), 4)


def pass_rate(trajectories: Iterable[Trajectory]) -> float | None:
    """Share of episodes that passed; None when there is none (nothing was measured)."""
    trs = list(trajectories)
    return round(sum(t.final_status == "passed" for t in trs) / len(trs), 4) if trs else None


def first_try_pass_rate(trajectories: Iterable[Trajectory]) -> float | None:
    trs = list(trajectories)
    if not trs:
        return None
    first = sum(1 for t in trs if t.attempts and t.attempts[0].result.all_passed)
    return round(first / len(trs), 4)


def mean_turns(trajectories: Iterable[Trajectory]) -> float | None:
    trs = list(trajectories)
    return round(sum(len(t.attempts) for t in trs) / len(trs), 4) if trs else None


def mean_reward(trajectories: Iterable[Trajectory]) -> float | None:
    trs = list(trajectories)
    # fsum: exact, so the mean cannot depend on the order episodes finished in
    return round(math.fsum(t.reward for t in trs) / len(trs), 4) if trs else None


def count_reasons(reasons: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(reasons).items()))


FacetCounts = dict[str, dict[str, dict[str, dict[str, int]]]]
"""kind -> facet -> label -> ``proposed``, ``accepted``, ``episodes``, ``passed`` (``facet_counts``)."""


def proposed_tasks(proposals: Iterable[Mapping[str, Any]]) -> list[Task]:
    """Every candidate of ``proposals.jsonl`` rows that parsed into a task (its ``task``), in row order."""
    out = []
    for row in proposals:
        for cand in row.get("candidates") or []:
            if isinstance(cand, Mapping) and isinstance(cand.get("task"), Mapping):
                try:
                    out.append(Task.model_validate(cand["task"]))
                except ValueError:  # a row an older spade wrote: not counted
                    continue
    return out


def facet_counts(
    proposed: Iterable[Task], accepted: Iterable[Task], trajectories: Mapping[str, Sequence[Trajectory]]
) -> FacetCounts:
    """Tasks of the kinds with ``TaskKind.facets`` counted under each label they carry (a bug fix: by its bug's
    maker and edit families): how many were ``proposed`` (candidates that parsed), ``accepted``, and of the
    accepted ones' measured episodes, how many were played (``episodes``) and ``passed``. So a bug-fix run
    says which makers' bugs and which kinds of bug are made, kept and fixed. Empty when no task has a facet."""
    out: FacetCounts = {}
    for task in proposed:
        count_facets(out, task, "proposed")
    for task in accepted:
        played = measured(trajectories.get(task.task_id, ()))
        count_facets(out, task, "accepted")
        count_facets(out, task, "episodes", len(played))
        count_facets(out, task, "passed", sum(t.final_status == "passed" for t in played))
    return sorted_facets(out)


class Tagged(Protocol):
    """Anything with a task's tags (a ``Task``, or what a run keeps of one: ``curriculum.KnownTask``)."""

    @property
    def tags(self) -> Sequence[str]: ...


def count_facets(out: FacetCounts, task: Task, key: str, n: int = 1) -> None:
    """Add ``n`` to ``key`` under each label ``task`` carries (``facet_counts``; a reader that counts as
    records pass calls it for each)."""
    from .kinds import get_kind

    labelled = get_kind(task.kind).facets
    if labelled is not None:
        count_labels(out, task.kind, labelled(task).items(), key, n)


def count_labels(
    out: FacetCounts, kind: str, labelled: Iterable[tuple[str, Sequence[str]]], key: str, n: int = 1
) -> None:
    """``count_facets`` of a task known by its kind and its labels (``KnownTask.facets``)."""
    by_facet = out.setdefault(kind, {})
    for facet, labels in labelled:
        for label in labels:
            by_facet.setdefault(facet, {}).setdefault(label, dict.fromkeys(FACET_KEYS, 0))[key] += n


def sorted_facets(out: FacetCounts) -> FacetCounts:
    """``out`` with kinds, facets and labels in order, as ``facet_counts`` returns them."""
    return {
        kind: {facet: dict(sorted(labels.items())) for facet, labels in sorted(by_facet.items())}
        for kind, by_facet in sorted(out.items())
    }


FACET_KEYS = ("proposed", "accepted", "episodes", "passed")
""":func:`facet_counts`' counts per label, in this order."""


# -- metrics that warn ------------------------------------------------------------------------------

ANSWER_REASONS = frozenset(
    {"bad_json", "truncated", "refusal", "empty", "too_long", "no_tasks", "invalid_task", "malformed"}
)
"""Rejections of the model's answer itself (nothing parsed into a task), as opposed to a task that failed a gate."""


def funnel(proposed: int, parsed: int, rejected_reasons: Iterable[str], accepted: int) -> dict[str, int]:
    """Where an epoch's proposals were lost: proposed -> parsed -> valid -> novel -> accepted.

    ``parsed`` counts candidates that became tasks; a gate's rejection (any reason but an answer-level
    one, ``llm_*`` or ``duplicate``) takes one from ``valid``, a ``duplicate`` one from ``novel``."""
    reasons = list(rejected_reasons)
    gate = sum(1 for r in reasons if r not in ANSWER_REASONS and not r.startswith("llm_") and r != "duplicate")
    duplicates = sum(1 for r in reasons if r == "duplicate")
    valid = max(0, parsed - gate)
    return {"proposed": proposed, "parsed": parsed, "valid": valid, "novel": max(0, valid - duplicates),
            "accepted": accepted}  # fmt: skip


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))\b")


def failure_class(trajectory: Trajectory) -> str | None:
    """Why an episode's last attempt failed, in one word: ``timeout``, an exception type (``IndexError``),
    ``wrong_answer``, ``no_code`` or ``no_attempt``; None when it passed."""
    if trajectory.final_status == "passed":
        return None
    if not trajectory.attempts:
        return "no_attempt"
    result = trajectory.attempts[-1].result
    tests = result.test_results or []
    if result.status == "timeout" or any(t.status == "timeout" for t in tests):
        return "timeout"
    if not trajectory.attempts[-1].code.strip():
        return "no_code"
    for text in [result.load_error or "", *(t.error or "" for t in tests if not t.passed)]:
        match = _EXCEPTION.match(text.strip())
        if match:
            return match.group(1).rsplit(".", 1)[-1]
    return "wrong_answer"


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank rule; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def entropy_bits(counts: Iterable[int]) -> float:
    """Shannon entropy, in bits, of a distribution given by its counts (0.0 for one value or none)."""
    values = [c for c in counts if c > 0]
    total = sum(values)
    if not total:
        return 0.0
    return round(max(0.0, -math.fsum(c / total * math.log2(c / total) for c in values)), 4)


def diversity(tasks: Sequence[Task], nearest: Sequence[float | None]) -> dict[str, float]:
    """``metrics.jsonl``'s ``diversity`` of an epoch's accepted ``tasks`` (``nearest``: each one's similarity
    to its nearest earlier task, None for a keyed kind's): {} when there is none."""
    if not tasks:
        return {}
    near = [s for s in nearest if s is not None]
    behaviours = [b for t in tasks if isinstance(b := t.meta.get("behaviour"), str)]
    out: dict[str, float] = {
        "tag_entropy": entropy_bits(Counter(tag for t in tasks for tag in set(t.tags)).values()),
        "kind_entropy": entropy_bits(Counter(t.kind for t in tasks).values()),
    }
    p50, p90 = percentile(near, 0.5), percentile(near, 0.9)
    if p50 is not None and p90 is not None:
        out |= {"nearest_p50": p50, "nearest_p90": p90, "nearest_max": max(near)}
    if behaviours:
        out["distinct_behaviours"] = len(set(behaviours)) / len(behaviours)
    return {k: round(v, 4) for k, v in sorted(out.items())}


def mean_or_none(values: Sequence[float], digits: int = 4) -> float | None:
    """The rounded mean, or None for no values."""
    return round(math.fsum(values) / len(values), digits) if values else None


def mutant_summary(rows: Sequence[Any]) -> dict[str, int | float] | None:
    """The mutation gate over tasks (each ``meta["mutants"]``, the mutants it ran; None where it did
    not run): ``tasks`` it ran on and mutants ``per_task``."""
    ran = [r for r in rows if type(r) is int]
    if not ran:
        return None
    return {"tasks": len(ran), "per_task": round(math.fsum(ran) / len(ran), 2)}


def difficulty_histogram(difficulties: Iterable[float], bins: int = 5) -> dict[str, int]:
    """Counts of difficulties in ``bins`` equal bins of [0, 1], keyed ``"0.0-0.2"``..."""
    counts = [0] * bins
    for d in difficulties:
        counts[min(bins - 1, max(0, int(d * bins)))] += 1
    return {f"{i / bins:.1f}-{(i + 1) / bins:.1f}": n for i, n in enumerate(counts)}


def zero_spread_share(stats: Sequence[TaskStats]) -> float | None:
    """Share of tasks whose samples all passed or all failed (TRL's ``frac_reward_zero_std``): a GRPO
    group learns nothing from them. None without tasks."""
    if not stats:
        return None
    return round(sum(1 for s in stats if s.pass_rate in (0.0, 1.0)) / len(stats), 4)


def calibration(claimed: Sequence[float], measured_pass: Sequence[float]) -> dict[str, float] | None:
    """How the difficulty tasks claimed compares with the difficulty measured (``1 - pass rate``):
    their means and the mean absolute gap, over tasks with both. None without such tasks."""
    pairs = list(zip(claimed, measured_pass, strict=True))
    if not pairs:
        return None
    measured = [1.0 - p for _, p in pairs]
    return {
        "claimed": round(math.fsum(c for c, _ in pairs) / len(pairs), 4),
        "measured": round(math.fsum(measured) / len(pairs), 4),
        "mean_abs_gap": round(math.fsum(abs(c - m) for (c, _), m in zip(pairs, measured, strict=True)) / len(pairs), 4),
    }


def valid_duplicates(row: EpochMetrics) -> tuple[int, int]:
    """An epoch's proposals refused as duplicates, and its valid ones (accepted, or refused as duplicates: a
    duplicate passed every validity gate, so a generator repeating itself is not one writing broken tasks)."""
    duplicates = row.rejected_by_reason.get("duplicate", 0)
    return duplicates, row.tasks_accepted + duplicates


def warning_signs(rows: Sequence[Any], band: tuple[float, float], window: int = 3) -> list[str]:
    """The warning signs of a run going wrong, read off its metrics rows (the last one is the epoch
    just finished): a pass rate stuck near 0 or 1, a difficulty that does not move while the pass
    rate is out of the band, novelty falling (epoch after epoch, by 0.2 or more) or collapsing, duplicates
    rising (most valid proposals refused as near copies: the accepted few are new, so novelty alone cannot
    show it), validity collapsing (few proposals pass the gates). Each sign is one stable string."""
    signs: list[str] = []
    recent = list(rows[-window:])
    measured = [r.pass_rate for r in recent if r.pass_rate is not None]
    if len(recent) == window and len(measured) == window:
        if all(p >= 0.95 for p in measured):
            signs.append(f"pass rate stuck near 1 for {window} epochs: the tasks are too easy to learn from")
        elif all(p <= 0.05 for p in measured):
            signs.append(f"pass rate stuck near 0 for {window} epochs: the tasks are too hard to learn from")
        lo, hi = band
        if len({r.difficulty for r in recent}) == 1 and all(not lo <= p <= hi for p in measured):
            signs.append(f"difficulty has not moved for {window} epochs while the pass rate is outside the band")
    last = rows[-1] if rows else None
    novelties = [r.novelty for r in recent if r.tasks_accepted]
    falling = len(novelties) == window and all(a > b for a, b in itertools.pairwise(novelties))
    if falling and novelties[0] - novelties[-1] >= 0.2:  # a run's novelty eases as it grows: only a fall is a sign
        signs.append(f"novelty falling for {window} epochs: {' -> '.join(f'{n:.2f}' for n in novelties)}")
    if last is not None and last.tasks_accepted and last.novelty < 0.3:
        signs.append(f"novelty collapsing: {last.novelty:.2f} of this epoch's tasks are new")
    if last is not None and last.tasks_proposed >= 4:
        duplicates, valid = valid_duplicates(last)
        if valid >= 4 and duplicates / valid >= 0.5:
            signs.append(f"duplicates rising: {duplicates} of {valid} valid proposals near-copy accepted tasks")
        if valid / last.tasks_proposed <= 0.2:
            signs.append(f"validity collapsing: {valid} of {last.tasks_proposed} proposals valid")
    return signs


def epoch_metrics(
    epoch: int,
    target_difficulty: float,
    *,
    tasks: Sequence[Task],
    earlier_tasks: Iterable[Tagged],
    nearest: Callable[[str], float | None],
    trajectories: Mapping[str, Sequence[Trajectory]],
    rejected: Sequence[Rejection],
    proposals: Sequence[Mapping[str, Any]],
    task_stats: Mapping[str, TaskStats],
    earlier_metrics: Sequence[EpochMetrics],
    controller: ControllerConfig,
    warnings: Sequence[str] = (),
    mutation_s: Sequence[float] = (),
    wall_s: float = 0.0,
) -> EpochMetrics:
    """One epoch's ``metrics.jsonl`` row (``next_difficulty`` left for the curriculum to set).

    ``tasks``: the epoch's accepted tasks in file order; ``earlier_tasks``: those of earlier epochs;
    ``nearest``: task id -> its similarity to the most similar task accepted before it, None for a keyed
    kind's (``Deduper.nearest_similarity``); ``trajectories``: task id
    -> its episodes; ``rejected``, ``proposals`` (``proposals.jsonl`` rows in request order): the
    epoch's; ``task_stats``: task id -> stats row; ``earlier_metrics``: the rows before this one;
    ``warnings``: what only timing could cause (budgets), said first.
    """
    ids = {t.task_id for t in tasks}
    recorded = [t for task_id in sorted(ids) for t in trajectories.get(task_id, [])]
    trajs = measured(recorded)  # abandoned episodes measure nothing: the rates and the target ignore them
    stats = [task_stats[i] for i in sorted(ids) if i in task_stats and task_stats[i].pass_rate is not None]
    generator = sum(
        (TokenUsage(prompt_tokens=p["prompt_tokens"], completion_tokens=p["completion_tokens"]) for p in proposals),
        TokenUsage(),
    )
    usage = sum((t.usage for t in recorded), TokenUsage())
    said = list(warnings)
    left = len(recorded) - len(trajs)
    if left:
        said.append(f"{left} episodes abandoned by their clients: recorded, not measured")
    if not trajs:
        said.append("no episode ran: pass rate unmeasured, difficulty kept")
    elif len(trajs) < controller.min_episodes:
        said.append(f"only {len(trajs)} episodes (< min_episodes {controller.min_episodes}): difficulty kept")
    suspects = sum("hardcoded_suspect" in t.flags for t in trajs)
    if suspects:
        said.append(f"{suspects} episodes passed the public tests but failed hidden ones (hardcoded_suspect)")
    ordered = sorted(tasks, key=lambda t: decision_key(t.meta.get("request_index"), t.meta.get("position")))
    similarities = [nearest(t.task_id) for t in ordered]
    parsed = sum(1 for p in proposals for cand in p.get("candidates") or [] if cand.get("task") is not None)
    proposed = sum(p["n"] if p.get("failure") else len(p.get("candidates") or []) for p in proposals)
    earlier_tags = {tag for t in earlier_tasks for tag in t.tags}
    tags_now = earlier_tags | {tag for t in tasks for tag in t.tags}
    by_id = {t.task_id: t for t in tasks}
    claimed = [
        (by_id[s.task_id].difficulty, rate) for s in stats if s.task_id in by_id and (rate := s.pass_rate) is not None
    ]
    row = EpochMetrics(
        epoch=epoch,
        difficulty=target_difficulty,
        pass_rate=pass_rate(trajs),
        first_try_pass_rate=first_try_pass_rate(trajs),
        mean_turns=mean_turns(trajs),
        tasks_proposed=proposed,
        tasks_accepted=len(tasks),
        rejected_by_reason=count_reasons(r.reason for r in rejected),
        novelty=novelty(similarities),
        mean_reward=mean_reward(trajs),
        episodes=len(trajs),
        abandoned=left,
        mean_learnability=round(math.fsum(s.learnability for s in stats) / len(stats), 4) if stats else None,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        generator_prompt_tokens=generator.prompt_tokens,
        generator_completion_tokens=generator.completion_tokens,
        wall_s=round(wall_s, 3),
        warnings=said,
        funnel=funnel(proposed, parsed, (r.reason for r in rejected), len(tasks)),
        failure_classes=count_reasons(c for c in map(failure_class, trajs) if c is not None),
        p90_solve_s=percentile([t.wall_s for t in trajs], 0.9),
        difficulty_histogram=difficulty_histogram(t.difficulty for t in tasks),
        zero_spread_share=zero_spread_share(stats),
        calibration=calibration([d for d, _ in claimed], [p for _, p in claimed]),
        tags_seen=len(tags_now),
        new_tags=len(tags_now - earlier_tags),
        kinds=count_reasons(t.kind for t in tasks),
        mutants=mutant_summary([t.meta.get("mutants") for t in tasks]),
        mutation_s=mean_or_none(list(mutation_s)),
        facets=facet_counts(proposed_tasks(proposals), tasks, trajectories),
        diversity=diversity(ordered, similarities),
    )
    signs = warning_signs([*earlier_metrics, row], controller.band)
    return row.model_copy(update={"warnings": [*said, *signs]})
