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

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .errors import UserError
from .sandbox.verdict import FLOAT_ABS_TOL, FLOAT_REL_TOL
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

_MATCH = f"""\
def __spade_match(v, e):
    t, te = type(v), type(e)
    if e is None:
        return v is None
    if te is bool or te is str:
        return t is te and v == e
    if te is int:
        return t is int and v == e
    if te is float:
        return t is float and __import__("math").isclose(v, e, rel_tol={FLOAT_REL_TOL!r}, abs_tol={FLOAT_ABS_TOL!r})
    if te is list:
        return (t is list or t is tuple) and len(v) == len(e) and all(__spade_match(x, y) for x, y in zip(v, e))
    if te is dict:
        return (
            t is dict
            and all(type(k) is str for k in v)
            and v.keys() == e.keys()
            and all(__spade_match(v[k], y) for k, y in e.items())
        )
    return False
"""
"""Our verdicts' comparison, ``sandbox.verdict.matches``, rule for rule (the same float tolerances; exact
types, so a subclass with its own ``__eq__`` compares as nothing; NaN equals nothing)."""


def _marker(task: Task) -> str:
    """A line the program cannot know (it is not in any prompt): seen on stdout only if the asserts ran."""
    digest = hashlib.sha256(f"spade-sandbox-fusion:{task.task_id}:{task.reference_code}".encode()).hexdigest()
    return f"spade-ok-{digest[:24]}"


def sandbox_fusion_ground_truth(task: Task) -> dict[str, Any]:
    """``task``'s tests in the form verl's SandboxFusion judge runs (``assert_case``), for an
    induction task with expected values.

    verl runs ``answer + "\n\n" + assert_case`` through ``/run_code`` once per test and passes the
    test when the run succeeds and its stdout equals ``outputs[i]``. Each case here compares like our
    verdicts (``sandbox.verdict.matches``: a tuple is a list, floats within the same tolerances,
    ``True`` is not ``1``, NaN equals nothing), with what the call prints swallowed, then prints a
    marker the program cannot know: a program that exits early (``os._exit(0)``, ``sys.exit``) never
    prints it, so it cannot pass. Weaker than ``compute_score`` all the same: the answer shares the
    process with the check (see SPEC "check_code"; code that rebinds builtins can still fool an
    in-process check), and anything it prints at import time fails the test. Prefer
    ``spade_llm.rewards.compute_score``.

    Raises:
        UserError: not an induction task, or a test without its expected value.
    """
    if task.kind != "induction" or task.check_code:
        raise UserError(f"task {task.task_id}: only induction tasks with tests can be judged by SandboxFusion")
    missing = [t.input for t in task.tests if not t.has_expected]
    if missing:
        raise UserError(f"task {task.task_id}: test {missing[0]} has no expected value; validate the task first")
    marker = _marker(task)
    cases = []
    for test in task.tests:
        cases.append(
            _MATCH
            + "import contextlib as __spade_cl, io as __spade_io\n"
            + "with __spade_cl.redirect_stdout(__spade_io.StringIO()):\n"
            + f"    __spade_got = {task.entry_point}(*{test.input})\n"
            + f"__spade_want = __import__('json').loads({json.dumps(test.expected)!r})\n"
            # not an assert statement: ``python -O`` would drop it and print the marker for any answer
            + "if not __spade_match(__spade_got, __spade_want):\n"
            + "    raise AssertionError('wrong answer')\n"
            + f"print({marker!r})\n"
        )
    return {"inputs": [""] * len(cases), "outputs": [marker] * len(cases), "assert_case": cases}
