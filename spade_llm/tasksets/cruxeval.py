"""CRUXEval's rows (``code``, ``input``, ``output``, ``id``: Gu et al. 2024, as published and as SandboxFusion's
samples hold them) as two tasks each, judged as CRUXEval's harness judges them.

* ``cruxeval/<id>/output``, output prediction: the solver reads ``f`` and the call ``f(<input>)`` and
  writes its value (the ``deduction`` kind);
* ``cruxeval/<id>/input``, input prediction: it reads ``f`` and the output and writes arguments that give
  it (the ``abduction`` kind: the program runs on the proposed arguments in the sandbox).

CRUXEval's ``input`` is ``f``'s argument list as Python source (``"[1, 2], 3"``) and its ``output`` a
Python literal; its harness executes ``assert f(<input>) == <output>``, so the one test of each task
carries the output as ``python_eq``: Python's ``==`` decides (a tuple is not a list, ``1.0`` is ``1``),
on plain decoded values, never an object of the answer's. An output with no JSON form (a set, bytes, a
frozenset, a complex number, a dict with int keys) is kept the same way: its test has no JSON
``expected`` in the task file, ``python_eq`` alone carries the value (``TestCase.literal_only``), and
the sandbox's encoding brings such outputs back as what they are (a set is a set, never a list), so
``{1, 2}`` passes against ``{2, 1}`` and ``[1, 2]`` fails. An export that cannot express Python's
``==`` on such a value leaves the task out, counted (harbor; verl's SandboxFusion form takes no query
kind). Nothing of the row runs at import. A row whose input is no argument list or whose output is no
literal stops the import, named.
"""

from __future__ import annotations

from ..kinds.abduction import KIND as INPUT_PREDICTION
from ..kinds.deduction import KIND as OUTPUT_PREDICTION
from ..sandbox.runner import parse_input
from ..sandbox.verdict import UnsupportedOutput, to_json
from ..types import Task, TestCase, python_literal
from .fields import LeftOut, bad, text
from .rows import Row

__all__ = ["tasks_of"]


def tasks_of(row: Row, source: str) -> list[Task] | LeftOut:
    """The output-prediction and the input-prediction task of one CRUXEval row."""
    code, given, wanted = text(row, "code"), text(row, "input"), text(row, "output")
    ident = text(row, "id", default=f"sample_{row.index}")
    call = f"({given},)"
    if isinstance(parse_input(call), str):
        raise bad(row, "input", f"not an argument list of Python literals: {given[:80]!r}")
    try:
        value = python_literal(wanted)
    except ValueError:
        raise bad(row, "output", f"not a Python literal: {wanted[:80]!r}") from None
    try:
        test = TestCase(input=call, expected=to_json(value), python_eq=wanted)
    except UnsupportedOutput:  # no JSON form: python_eq alone gives the value (TestCase.literal_only)
        test = TestCase(input=call, python_eq=wanted)
    reference = code if code.endswith("\n") else code + "\n"

    def task(kind: str, side: str, question: str) -> Task:
        return Task(
            task_id=f"{source}/{ident}/{side}",
            kind=kind,
            description=f"CRUXEval {ident}: {question}",
            entry_point="f",
            reference_code=reference,
            tests=[test],
            source=source,
            meta={"cruxeval_id": ident},
        )

    return [
        task(OUTPUT_PREDICTION.name, "output", "what does the call return?"),
        task(INPUT_PREDICTION.name, "input", "which arguments give this output?"),
    ]
