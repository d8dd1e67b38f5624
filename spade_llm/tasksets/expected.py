"""Expected values filled from the reference, for ``solve`` and ``evaluate`` (docs/records.md: tasks
without expected values).

A task file may give a test's input alone (``{"input": "(1, 2)"}``): its expected value is what the
task's reference returns there. ``spade run`` fills them while validating; ``solve`` and ``evaluate``
judge tasks they did not validate, so they fill them here first: one sandbox execution of the
reference per task that lacks some, on those inputs only (another only where the execution's wall
limit cut it short: ``reference_values``), through the same ``Judge.outputs`` and the same JSON form
(``to_json``) validation uses; ``spade import evalplus`` takes its expected outputs the same way.
Nothing else of validation runs (no second run, no mutants): the user vouches for the task, we only
read its reference.

A reference that cannot give a value (it is missing, does not load, raises, times out, is stopped,
or returns something with no JSON form) is the user's to fix: one ``UserError`` naming the task and
the test, before anything is judged. Tasks with ``check_code`` (imported benchmarks) are judged by
their own asserts and need no expected values: they are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import UserError
from ..judge import Judge
from ..kinds import get_kind
from ..sandbox.verdict import UnsupportedOutput, to_json
from ..types import Task, TestCase

__all__ = ["NoReferenceValue", "fill_expected", "needs_filling", "reference_values"]


def needs_filling(task: Task) -> bool:
    """Whether some test of ``task`` has an input but no expected value (and no ``check_code`` judges it)."""
    return not task.check_code and any(not t.has_expected for t in task.tests)


class NoReferenceValue(UserError):
    """The reference gives no value for a test: ``index`` (into the task's tests; None when the
    reference does not even load), ``why`` (``the reference raised ValueError: ...``), and whether a
    limit of the sandbox's stopped it (``over_limits``: time, memory, output size) rather than the
    reference itself (an exception, a crash)."""

    def __init__(self, index: int | None, why: str, *, over_limits: bool = False) -> None:
        super().__init__(why)
        self.index = index
        self.why = why
        self.over_limits = over_limits


_LIMIT_STATUSES = frozenset({"timeout", "memory", "output_limit"})


def reference_values(judge: Judge, task: Task, indices: Sequence[int]) -> list[Any]:
    """What the task's reference returns on each test of ``indices`` (the decoded values, tuples and
    sets as they are: ``to_json`` makes them ``expected`` values), in order, from one sandbox
    execution. Another starts at the first call without a value only when the execution's deadline
    (``sandbox.timeout_s``) cut that call or ended the run after some calls gave values: a reference
    that is only slow over many inputs is not stopped, and each execution gets at least one value.

    Raises:
        NoReferenceValue: the reference does not load, or on some test raises, crashes, runs out of its
            CPU budget (``test_timeout_s``) or memory, or is cut by the deadline as its execution's
            first call.
    """
    values: list[Any] = []
    todo = list(indices)
    while todo:
        probe = task.model_copy(update={"tests": [task.tests[i] for i in todo]})
        outcome = judge.outputs(probe, task.reference_code)
        if outcome.load_error is not None:
            raise NoReferenceValue(None, f"the reference does not load: {outcome.load_error}")
        done = 0
        for i, out in zip(todo, outcome.outputs, strict=False):
            if out.status == "timeout" and out.timer == "wall" and done:
                break  # the execution's deadline, not this call's budget: the next execution starts here
            if out.status == "timeout":
                raise NoReferenceValue(i, "the reference timed out", over_limits=True)
            if not out.ok:
                raise NoReferenceValue(i, f"the reference raised {out.error}", over_limits=out.memory)
            values.append(out.value)
            done += 1
        status = outcome.result.status
        if done < len(todo) and done == len(outcome.outputs) and not (done and status == "timeout"):
            why = status if status != "ok" else "ended early"
            raise NoReferenceValue(
                todo[done], f"the reference was stopped ({why})", over_limits=status in _LIMIT_STATUSES
            )
        todo = todo[done:]
    return values


def _fill_one(judge: Judge, task: Task) -> Task:
    missing = [i for i, t in enumerate(task.tests) if not t.has_expected]
    name = f"task {task.task_id}"
    if not task.reference_code.strip():
        raise UserError(
            f"{name}: test {missing[0]} has no expected value and the task has no reference_code to take it from"
        )
    kind = get_kind(task.kind)
    if kind.fill_expected is not None:
        filled = list(task.tests)
        for i, test in zip(missing, kind.fill_expected(judge, task, missing), strict=True):
            filled[i] = test
        return task.model_copy(update={"tests": filled})
    try:
        values = reference_values(judge, task, missing)
    except NoReferenceValue as e:
        if e.index is None:
            raise UserError(f"{name}: cannot fill expected values: {e.why}") from None
        raise UserError(f"{_where(task, e.index)}: cannot fill its expected value: {e.why}") from None
    filled = list(task.tests)
    for i, value in zip(missing, values, strict=True):
        try:
            filled[i] = TestCase(input=task.tests[i].input, expected=to_json(value))
        except UnsupportedOutput as e:
            raise UserError(f"{_where(task, i)}: cannot fill its expected value: {e}") from None
    return task.model_copy(update={"tests": filled})


def _where(task: Task, i: int) -> str:
    return f"task {task.task_id}: test {i} ({task.tests[i].input[:60]})"


def fill_expected(judge: Judge, tasks: Sequence[Task], concurrency: int = 1) -> list[Task]:
    """``tasks`` with every missing expected value taken from the task's reference (the same list, in
    order; a task that needs nothing is returned as it is, without running anything).

    Raises:
        UserError: a task's reference cannot give some missing value (named: task, test, why).
    """
    out = list(tasks)
    todo = [i for i, t in enumerate(out) if needs_filling(t)]
    if not todo:
        return out
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo)))) as pool:
        # in file order: the first task that cannot be filled is the one named
        for i, filled in zip(todo, pool.map(lambda i: _fill_one(judge, out[i]), todo), strict=True):
            out[i] = filled
    return out
