"""A task's ground truth: all a judge needs to score an answer, without the run directory.

Exports write it (verl's ``reward_model.ground_truth``, the GRPO rows' ``ground_truth`` column) and
``spade_llm.rewards`` and ``spade_llm.trl`` read it back, so a trainer's reward judges an answer
exactly as the loop did: the same tests (hidden ones included), the same kind, the same verdict code.

The shape, a JSON object (exports store it as a JSON string, as verl and ``datasets`` columns want):

* ``version``: 1;
* ``task_id``, ``kind``, ``entry_point``;
* ``tests``: every test, ``{"input": "<Python literal tuple>", "expected": <JSON value>}``;
* ``public``: how many of the tests, the first ones, the solver is shown and fed back on; the
  rest are hidden and count only in the final reward;
* ``reference_code``: for ``deduction`` and ``abduction`` only (the program is part of their
  question, and abduction's judge runs it); an induction task's reference is its answer and stays out;
* ``check_code`` and ``examples``: an imported benchmark's assert script and docstring examples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import UserError
from .types import Task, TestCase

__all__ = ["GROUND_TRUTH_VERSION", "ground_truth", "task_from_ground_truth"]

GROUND_TRUTH_VERSION = 1


def ground_truth(task: Task, public: int) -> dict[str, Any]:
    """``task``'s ground truth, its first ``public`` tests public (see ``solver.split_tests``).

    Every test must have its expected value (accepted tasks do: validation fills them from the
    reference), unless the task is judged by its ``check_code``.
    """
    if not task.check_code:
        missing = [t.input for t in task.tests if not t.has_expected]
        if missing:
            raise UserError(f"task {task.task_id}: test {missing[0]} has no expected value; validate the task first")
    gt: dict[str, Any] = {
        "version": GROUND_TRUTH_VERSION,
        "task_id": task.task_id,
        "kind": task.kind,
        "entry_point": task.entry_point,
        "tests": [t.dump() for t in task.tests],
        "public": public,
    }
    if task.kind != "induction":
        gt["reference_code"] = task.reference_code
    if task.check_code:
        gt["check_code"] = task.check_code
    if task.examples:
        gt["examples"] = [t.dump() for t in task.examples]
    return gt


def task_from_ground_truth(value: str | Mapping[str, Any]) -> tuple[Task, int]:
    """The task a ground truth describes (enough to judge, not to show) and its public test count.

    Raises:
        UserError: ``value`` is not JSON, not a ground truth, or of a newer version.
    """
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise UserError(f"ground truth is not JSON: {e}") from None
    if not isinstance(value, Mapping):
        raise UserError(f"ground truth must be a JSON object, got {type(value).__name__}")
    version = value.get("version", GROUND_TRUTH_VERSION)
    if version != GROUND_TRUTH_VERSION:
        raise UserError(f"ground truth version {version!r} is not one this spade_llm reads ({GROUND_TRUTH_VERSION})")
    try:
        tests = [TestCase.model_validate(t) for t in value["tests"]]
        examples = [TestCase.model_validate(t) for t in value.get("examples") or []]
        task = Task(
            task_id=str(value.get("task_id") or "task"),
            kind=value.get("kind") or "induction",
            description="",
            entry_point=value["entry_point"],
            reference_code=value.get("reference_code") or "",
            tests=tests,
            check_code=value.get("check_code"),
            examples=examples,
        )
        public = int(value.get("public", 1))
    except (KeyError, TypeError, ValueError) as e:
        why = f"missing {e}" if isinstance(e, KeyError) else str(e).splitlines()[0]
        raise UserError(f"not a spade_llm ground truth: {why}") from None
    if task.kind != "induction" and not task.reference_code:
        raise UserError(f"a {task.kind} ground truth needs its reference_code")
    return task, max(0, min(public, len(tests)))
