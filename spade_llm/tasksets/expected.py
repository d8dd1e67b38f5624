"""Expected values filled from the reference, for ``solve`` and ``evaluate`` (docs/records.md: tasks
without expected values).

A task file may give a test's input alone (``{"input": "(1, 2)"}``): its expected value is what the
task's reference returns there. ``spade run`` fills them while validating; ``solve`` and ``evaluate``
judge tasks they did not validate, so they fill them here first: one sandbox execution of the
reference per task that lacks some, on those inputs only, through the same ``Judge.outputs`` and the
same JSON form (``to_json``) validation uses. Nothing else of validation runs (no second run, no
mutants): the user vouches for the task, we only read its reference.

A reference that cannot give a value (it is missing, does not load, raises, times out, is stopped,
or returns something with no JSON form) is the user's to fix: one ``UserError`` naming the task and
the test, before anything is judged. Tasks with ``check_code`` (imported benchmarks) are judged by
their own asserts and need no expected values: they are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from ..errors import UserError
from ..judge import Judge
from ..kinds import get_kind
from ..sandbox.verdict import UnsupportedOutput, to_json
from ..types import Task, TestCase

__all__ = ["fill_expected", "needs_filling"]


def needs_filling(task: Task) -> bool:
    """Whether some test of ``task`` has an input but no expected value (and no ``check_code`` judges it)."""
    return not task.check_code and any(not t.has_expected for t in task.tests)


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
    probe = task.model_copy(update={"tests": [task.tests[i] for i in missing]})
    outcome = judge.outputs(probe, task.reference_code)
    if outcome.load_error is not None:
        raise UserError(f"{name}: cannot fill expected values: the reference does not load: {outcome.load_error}")
    filled = list(task.tests)
    for n, i in enumerate(missing):
        test = task.tests[i]
        where = f"{name}: test {i} ({test.input[:60]})"
        out = outcome.outputs[n] if n < len(outcome.outputs) else None
        if out is None:
            why = outcome.result.status if outcome.result.status != "ok" else "ended early"
            raise UserError(f"{where}: cannot fill its expected value: the reference was stopped ({why})")
        if out.status == "timeout":
            raise UserError(f"{where}: cannot fill its expected value: the reference timed out")
        if not out.ok:
            raise UserError(f"{where}: cannot fill its expected value: the reference raised {out.error}")
        try:
            filled[i] = TestCase(input=test.input, expected=to_json(out.value))
        except UnsupportedOutput as e:
            raise UserError(f"{where}: cannot fill its expected value: {e}") from None
    return task.model_copy(update={"tests": filled})


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
