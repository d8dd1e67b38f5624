"""Which task details and trajectories the page embeds, and what of them (see the package docstring
for the rule): per task a repaired, a failing and a first-try episode, filled round by round in an
order hashed from the task ids, within ``max_trajectories`` and ``DETAIL_BUDGET`` bytes; every
text clipped."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..types import Attempt, Message, Task, TestCase, TestResult, Trajectory
from .common import MAX_TEST_ROWS, SHORT_LIMIT, TEXT_LIMIT, clip, embed_json, num
from .reading import CATEGORIES, PER_TASK, RunData

__all__ = [
    "CATEGORIES",
    "CATEGORY_LABELS",
    "DEFAULT_MAX_TRAJECTORIES",
    "DETAIL_BUDGET",
    "PER_TASK",
    "Beside",
    "Sample",
    "beside_answers",
    "sample_details",
    "slim_trajectory",
    "task_detail",
]

DEFAULT_MAX_TRAJECTORIES = 1500
"""Trajectories embedded in one page at most (see the package docstring for which)."""
DETAIL_BUDGET = 4_500_000
"""Bytes of embedded task details and trajectories at most, whatever ``max_trajectories`` allows."""
MIN_ITEM_BYTES = 1000
"""Below this much budget left, no trajectory fits: sampling stops looking."""

CATEGORY_LABELS = {"repaired": "repaired", "failing": "failing", "first_try": "passed first try"}


# -- a trajectory as the page shows it ---------------------------------------------------------------


def _told(messages: list[Message], index: int | None, turn: int) -> str:
    """The user message the solver answered with an attempt: the one before the attempt's answer
    (its ``message_index``), or the ``turn``-th user message in records without that index."""
    if isinstance(index, int) and 0 < index <= len(messages):
        for m in reversed(messages[:index]):
            if m.role == "user":
                return m.content
        return ""
    users = [m for m in messages if m.role == "user"]
    return users[turn - 1].content if turn - 1 < len(users) else ""


def code_diff(before: str, after: str) -> str:
    """A unified diff of two attempts' code without the file header lines, cut to ``TEXT_LIMIT``."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    return clip("\n".join(line for line in lines if not line.startswith(("---", "+++"))))


def _slim_test(test: TestResult) -> dict[str, Any]:
    return {
        "in": clip(test.input, SHORT_LIMIT),
        "st": test.status,
        "out": clip(test.output, SHORT_LIMIT) if test.output is not None else None,
        "err": clip(test.error, SHORT_LIMIT) if test.error else None,
    }


def _slim_attempt(attempt: Attempt, told: str, previous: str | None) -> dict[str, Any]:
    result = attempt.result
    tests = result.test_results or []
    public_total = attempt.public_total or len(tests)
    code = clip(attempt.code)
    return {
        "turn": attempt.turn,
        "code": code,
        "told": clip(told),
        "diff": None if previous is None else code_diff(previous, code),
        "tests": [_slim_test(t) for t in tests[: min(public_total, MAX_TEST_ROWS)]],
        "pp": attempt.public_passed,
        "pt": public_total,
        "hp": attempt.hidden_passed,
        "ht": attempt.hidden_total,
        "status": result.status,
        "load_error": clip(result.load_error, SHORT_LIMIT) or None,
        "stderr": clip(result.stderr[-TEXT_LIMIT:]) or None,
    }


def slim_trajectory(t: Trajectory, kind: str) -> dict[str, Any]:
    """The part of a trajectory the page shows, every text clipped: per attempt its code, what the
    solver was told, the diff from the previous attempt and the public tests' verdicts."""
    system = next((m.content for m in t.messages if m.role == "system"), "")
    slim: list[dict[str, Any]] = []
    previous: str | None = None
    for n, a in enumerate(t.attempts, 1):
        slim.append(_slim_attempt(a, _told(t.messages, a.message_index, n), previous))
        previous = slim[-1]["code"]
    reward = num(t.reward)
    return {
        "id": clip(t.trajectory_id, SHORT_LIMIT),
        "sample": t.sample_index,
        "cat": kind,
        "status": t.final_status,
        "reward": None if reward is None else round(reward, 4),
        "flags": [clip(f, SHORT_LIMIT) for f in t.flags],
        "error": clip(t.error, SHORT_LIMIT) or None,
        "system": clip(system),
        "prompt": "" if t.attempts else clip(_told(t.messages, None, 1)),
        "attempts": slim,
    }


def _shown_expected(test: TestCase) -> str:
    """A test's expected value as JSON, or as its Python literal when it has no JSON form (a set)."""
    return test.python_eq if test.literal_only and test.python_eq is not None else json.dumps(test.expected)


def task_detail(task: Task | None) -> dict[str, Any]:
    """A task's description, reference and tests as the page shows them (empty for a task no record
    describes: a ``spade solve`` run's)."""
    if task is None:
        return {"desc": "", "entry": "", "ref": "", "tests": [], "ntests": 0, "traj": []}
    return {
        "desc": clip(task.description),
        "entry": clip(task.entry_point, SHORT_LIMIT),
        "ref": clip(task.reference_code),
        "tests": [
            {"in": clip(t.input, SHORT_LIMIT), "exp": clip(_shown_expected(t), SHORT_LIMIT)}
            for t in task.tests[:MAX_TEST_ROWS]
        ],
        "ntests": len(task.tests),
        "traj": [],
    }


# -- answers beside their task (a kind's ``beside_answer``) --------------------------------------------

MAX_BESIDE_ROWS = 60
"""Tasks whose answer the page shows beside the task (``beside_answers``) at most."""


@dataclass(frozen=True)
class Beside:
    """One task's answer beside it, as its kind shows it (``TaskKind.beside_answer``), every line clipped."""

    task_id: str
    kind: str
    status: str
    """The final status of the episode whose last answer is shown."""
    turns: int
    columns: list[tuple[str, list[str]]]


def beside_answers(run: RunData, limit: int = MAX_BESIDE_ROWS) -> tuple[list[Beside], int]:
    """For the tasks of kinds that show an answer beside the task (a bug fix: the buggy lines beside the fix),
    the last answer of one episode, a passing one when there is one (the fix), else the last played; at most
    ``limit`` tasks, in an order hashed from their ids (spread over the run); and how many had one."""
    from ..kinds import get_kind

    answers = run.episodes.answers
    found = [task for task in run.tasks if get_kind(task.kind).beside_answer is not None and task.task_id in answers]
    kept = []
    for brief in sorted(found, key=lambda t: _spread_key(t.task_id))[:limit]:  # only these are read again
        task = run.task(brief)
        view = get_kind(task.kind).beside_answer
        assert view is not None
        first_pass, last = answers[task.task_id]
        shown = run.trajectory(first_pass if first_pass is not None else last)
        columns = [
            (clip(label, SHORT_LIMIT), [clip(line, SHORT_LIMIT) for line in lines])
            for label, lines in view(task, shown.attempts[-1].code)
        ]
        kept.append(Beside(task.task_id, task.kind, shown.final_status, len(shown.attempts), columns))
    return kept, len(found)


# -- the sample ----------------------------------------------------------------------------------------


def _spread_key(task_id: str) -> str:
    """A deterministic, id-derived order that spreads a capped sample over the whole run."""
    return hashlib.sha1(task_id.encode("utf-8", "replace")).hexdigest()


def _size(value: Any) -> int:
    """Bytes ``value`` takes in the page."""
    return len(embed_json(value).encode("utf-8"))


@dataclass
class Sample:
    """The task details and trajectories embedded in the page, and how many were left out."""

    details: dict[str, dict[str, Any]]
    embedded: int
    total: int
    bytes: int
    budget: int
    """The byte budget it was picked within."""


def sample_details(run: RunData, max_trajectories: int, budget: int | None = None) -> Sample:
    """Pick the trajectories to embed by the rule of the package docstring, within both caps
    (``budget`` bytes, ``DETAIL_BUDGET`` by default)."""
    budget = DETAIL_BUDGET if budget is None else budget
    briefs = {t.task_id: t for t in run.tasks}

    def whole(task_id: str) -> Task | None:  # only an embedded task's record is read again
        brief = briefs.get(task_id)
        return run.task(brief) if brief is not None else None

    per_task = run.episodes.picks
    order = sorted(per_task, key=_spread_key)
    details: dict[str, dict[str, Any]] = {}
    used = embedded = 0
    for rank in range(PER_TASK):
        for task_id in order:
            if embedded >= max_trajectories or budget - used < MIN_ITEM_BYTES:
                break
            picks = per_task[task_id].ordered()
            if rank >= len(picks):
                continue
            offset, kind = picks[rank]
            cost = _embed(details, task_id, slim_trajectory(run.trajectory(offset), kind), whole, budget - used)
            if cost:
                used += cost
                embedded += 1
    return Sample(details=details, embedded=embedded, total=run.episodes.count, bytes=used, budget=budget)


def _embed(
    details: dict[str, dict[str, Any]],
    task_id: str,
    pick: dict[str, Any],
    task: Callable[[str], Task | None],
    room: int,
) -> int:
    """Add ``pick`` (with its task's details if it is the task's first: ``task`` reads it) when it fits in
    ``room`` bytes; the bytes it took, or 0."""
    detail = details.get(task_id)
    cost = _size(pick) + 1  # and a comma
    if detail is None:
        detail = task_detail(task(task_id))
        cost += _size(task_id) + _size(detail) + 1  # "id":{...},
    if cost > room:
        return 0
    detail["traj"].append(pick)
    details[task_id] = detail
    return cost
