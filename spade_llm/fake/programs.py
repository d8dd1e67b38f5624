"""The fake model's ``program`` tasks: the bank's exercises as whole programs on stdin and stdout.

Why from the bank: its exercises already have trusted references, realistic mistakes, edge-case tests
and statements the solver side recognises (:func:`bank.identify`). A program task is one of them with
an input format around it: the function's arguments, one per line, each as JSON, and the result
printed as one line of JSON (:func:`stdin_text`, :func:`stdout_text`). The reference is the function
followed by :data:`MAIN`, which reads the lines, calls it and prints; the fake solver's answers (right
or one of the bank's mistakes) get the same ``MAIN``, and :func:`unwrap` takes it off again to compare
an earlier answer with the bank's code. Only exercises whose arguments and results survive JSON
(``json_roundtrips``) become program tasks.

The request's kind is read from the prompts, as a real model would: the generator's program section
starts with :data:`GENERATOR_MARKER`, the solver's first prompt carries :data:`SOLVER_MARKER`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .running import json_roundtrips
from .tasks import BankTask

__all__ = [
    "GENERATOR_MARKER",
    "SOLVER_MARKER",
    "WRITING_MARKER",
    "as_program_task",
    "stdin_text",
    "stdout_text",
    "unwrap",
    "wrap",
]

GENERATOR_MARKER = "These are whole-program tasks"
"""How ``prompts/generator/propose.j2`` opens its sections for program tasks (to write, or to read)."""
WRITING_MARKER = "These are whole-program tasks, as in programming contests"
"""How it opens the section for tasks whose answer is the program itself (not a query over one): the
contest and checked problems (``contests.py``, ``checked_programs.py``) answer only these."""
SOLVER_MARKER = "Write a complete Python program that reads its input from standard input"
"""What ``prompts/solver/program_first.j2`` asks."""
MAIN = """

def main():
    import json
    import sys

    args = [json.loads(line) for line in sys.stdin.read().splitlines() if line.strip()]
    print(json.dumps({entry_point}(*args)))


main()
"""


def stdin_text(args: Sequence[Any]) -> str:
    """A program task's input: each argument on its own line, as JSON."""
    return "".join(json.dumps(a) + "\n" for a in args)


def stdout_text(value: Any) -> str:
    """What the program prints for a result: one line of JSON."""
    return json.dumps(value) + "\n"


def wrap(code: str, entry_point: str) -> str:
    """``code`` (a function) as a whole program: the function, then :data:`MAIN` calling it."""
    return code.rstrip("\n") + "\n" + MAIN.format(entry_point=entry_point)


def unwrap(code: str, entry_point: str) -> str:
    """``code`` without the :data:`MAIN` that :func:`wrap` added (as it is when there is none)."""
    tail = MAIN.format(entry_point=entry_point)
    stripped = code.rstrip("\n") + "\n"
    return stripped[: -len(tail)] + "\n" if stripped.endswith(tail) else code


def as_program_task(task: BankTask) -> dict[str, Any] | None:
    """``task`` as a generator writes a program task (``entry_point`` ""), or None when an argument or
    a result of its tests would not survive JSON."""
    values = [v for args in task.inputs for v in args] + list(task.outputs)
    if not all(json_roundtrips(v) for v in values):
        return None
    n = len(task.inputs[0]) if task.inputs else 0
    io = (
        f"\n\nInput: {n} line{'s' if n != 1 else ''}, the arguments of `{task.entry_point}` in order, each "
        "as JSON. Output: one line, the result as JSON."
    )
    tests: list[dict[str, Any]] = []
    for i, args in enumerate(task.inputs):
        test: dict[str, Any] = {"input": stdin_text(args)}
        if i in task.expected_at:
            test["expected"] = stdout_text(task.outputs[i])
        tests.append(test)
    return {
        "description": task.description + io,
        "entry_point": "",
        "reference_code": wrap(task.reference_code, task.entry_point),
        "tests": tests,
        "difficulty": task.difficulty,
        "tags": task.tags,
    }
