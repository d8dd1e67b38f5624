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
import math
from collections.abc import Mapping
from typing import Any

from .errors import UserError
from .types import Task, TestCase

__all__ = [
    "GROUND_TRUTH_VERSION",
    "SANDBOX_FUSION_DATA_SOURCE",
    "ground_truth",
    "sandbox_fusion_ground_truth",
    "task_from_ground_truth",
]

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


# -- verl's built-in SandboxFusion judge ------------------------------------------------------------

SANDBOX_FUSION_DATA_SOURCE = "codecontests"
"""A data source verl's ``default_compute_score`` sends to its SandboxFusion judge (with
``reward_model.sandbox_fusion.url`` set; it routes ``codecontests``, ``apps``, ``codeforces``, ``taco``)."""


def _json_exact(value: Any) -> bool:
    """Whether ``json.loads(json.dumps(value))`` gives back ``value`` with its types (no tuple, set,
    bytes, non-string key, NaN or infinity): what verl's wrapper can hand the function."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    return False


def printed(value: Any) -> str:
    """What verl's ``fn_name`` wrapper prints for a return value: JSON for a dict, list, tuple, None
    or bool, ``str()`` for the rest."""
    if isinstance(value, (dict, list, tuple)) or value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def sandbox_fusion_ground_truth(task: Task) -> dict[str, Any] | None:
    """``task``'s tests in the form verl's SandboxFusion judge runs by function name, for an
    induction task; None when some test's arguments cannot travel as JSON (a tuple, a set, bytes).

    verl's ``sandbox_fusion`` reward (``check_correctness`` with ``fn_name``) wraps the answer in a
    program that reads one JSON argument per stdin line, calls the function and prints its result
    (``printed``), runs that through ``/run_code`` once per test, and compares stdout with
    ``outputs[i]`` *outside* the sandbox. So, as in our own verdicts, the expected values never enter
    the sandbox: an answer that exits early prints nothing and fails, and none can read what it
    should print. What is weaker than ``compute_score``: outputs are compared as printed text (a
    float must print the same digits as the reference's, a dict keep its key order, a string
    ``"[1, 2]"`` reads like a list), anything the answer prints fails the test, and verl scores the
    fraction of the first 10 tests passed (``continuous=True``). Prefer ``spade_llm.rewards.compute_score``.

    Raises:
        UserError: not an induction task, or a test without its expected value.
    """
    from .sandbox.runner import parse_input

    if task.kind != "induction" or task.check_code:
        raise UserError(f"task {task.task_id}: only induction tasks with tests can be judged by SandboxFusion")
    missing = [t.input for t in task.tests if not t.has_expected]
    if missing:
        raise UserError(f"task {task.task_id}: test {missing[0]} has no expected value; validate the task first")
    inputs = []
    for test in task.tests:
        args = parse_input(test.input)
        if isinstance(args, str) or not all(_json_exact(a) for a in args):
            return None
        inputs.append("\n".join(json.dumps(a) for a in args))
    return {"fn_name": task.entry_point, "inputs": inputs, "outputs": [printed(t.expected) for t in task.tests]}
