"""``spade import evalplus``: HumanEval+ and MBPP+ (EvalPlus, Liu et al. 2023) as function tasks, judged as
EvalPlus's harness judges them.

A row, as EvalPlus publishes ``HumanEvalPlus.jsonl.gz`` and ``MbppPlus.jsonl.gz``, gives ``task_id``,
``prompt``, ``entry_point``, ``canonical_solution``, ``base_input`` and ``plus_input`` (lists of argument
lists) and ``atol``. EvalPlus's expected outputs are the canonical solution's own, run on each input
(``prompt + canonical_solution``, as it runs it); an answer passes when, on every input, base then plus,
its output is ``==`` that output or, where a tolerance applies, close to it (``verdict.all_close``).
Here each input becomes a test (its arguments as a call literal), and the expected outputs are computed
at import the way ``solve`` and ``evaluate`` fill missing ones (``expected.reference_values``): one
sandbox execution of the canonical solution per task, on all its inputs. Each test keeps the output as
``python_eq`` (Python's ``==`` decides, as ``assert out == exp`` does there) and, where EvalPlus would
use one, its tolerance as ``allclose_atol``: the row's ``atol`` when it is not 0, else ``1e-6`` from the
first input whose expected output is a float or a non-empty list or tuple of floats on (EvalPlus
raises a zero ``atol`` so, for the rest of that ``base_input`` or ``plus_input`` run).

EvalPlus reads MBPP+'s inputs back into tuples, sets and complex numbers for some problems (its
``mbpp_deserialize_inputs``, by problem number; JSON has none of them): ``_MBPP_ARGUMENTS`` does the same
before the inputs are written, so the canonical solution and an answer are called on the very values
EvalPlus calls them on. Which dataset a row is comes from its ``task_id`` (``Mbpp/N`` is MBPP+).

What stops the import (one error naming the row and the field, nothing written): a field missing or
mistyped, an input that is no argument list, a task id repeated, and a canonical solution that raises,
times out or does not load on some input: EvalPlus computes every expected output from it and stops there
too. What is left out, counted by reason: a problem EvalPlus judges by a special oracle of its own
(``_SPECIAL_ORACLES``), one with an input no call literal carries (a NaN; an input over spade's size or
depth limits), and one whose canonical output has no JSON form (a set, an infinity, an object).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..languages.python_asserts import docstring_examples
from ..sandbox.runner import parse_input
from ..sandbox.verdict import Unsupported, UnsupportedOutput, to_json
from ..types import Task, TestCase, python_literal
from .contests import Imported, write_all_or_nothing
from .expected import NoReferenceValue, reference_values
from .fields import LeftOut, bad, make_task, optional, text
from .importers import _json_type, publish_shown_tests
from .rows import Row, read_rows

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..judge import Judge
    from ..sandbox.base import Sandbox

__all__ = ["import_evalplus", "write_evalplus"]

FLOATS_ATOL = 1e-6
"""The ``atol`` EvalPlus compares float outputs with when the row's is 0."""

SPECIAL_ORACLE = "judged by a special oracle of EvalPlus's, not by the canonical solution's output"
NO_INPUT_LITERAL = "with an input no test can carry (a NaN, or over the input size or nesting limits)"
NO_JSON_OUTPUT = "with a canonical output that has no JSON form (a set, an infinity, an object...)"
OVER_LIMITS = (
    "whose canonical solution goes over the sandbox's limits on some input (time, memory or output size: "
    "a --config with a larger sandbox: section raises them)"
)

_SPECIAL_ORACLES = {
    "humaneval": frozenset({"find_zero"}),  # any root of the polynomial passes
    "mbpp": frozenset(
        {
            # any output passes; the canonical output or 0; within atol of another formula's result too;
            # or equal to another formula's result
            *("are_equivalent", "sum_div", "surface_Area", "digit_distance_nums"),
            # compared as sets
            *("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly", "larg_nnum"),
            *("intersection_array", "find_dissimilar", "Diff"),
            # only whether the output is None (the canonical solution returns a re.Match)
            *("check_str", "text_match_three", "text_starta_endb"),
        }
    ),
}
"""Entry points EvalPlus judges by a rule of their own (its ``_special_oracle.py`` and the branches of
``unsafe_execute`` that read it), by dataset: no test rule here reproduces them, so they are left out."""


# -- MBPP+'s inputs, as EvalPlus reads them -----------------------------------------------------------------


def _each_tuple(args: list[Any]) -> list[Any]:
    return [tuple(a) for a in args]


def _each_list_of_tuples(args: list[Any]) -> list[Any]:
    return [[tuple(x) for x in a] for a in args]


def _each_tuple_of_tuples(args: list[Any]) -> list[Any]:
    return [tuple(tuple(x) for x in a) for a in args]


def _all_tuples(value: Any) -> Any:
    return tuple(_all_tuples(v) for v in value) if isinstance(value, list) else value


_MBPP_SHAPES: tuple[tuple[tuple[int, ...], Callable[[list[Any]], Any]], ...] = (
    ((2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616), _each_tuple),
    ((630, 726, 740, 744, 809), _each_tuple),
    ((63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780), _each_list_of_tuples),
    ((75, 413, 444, 753), lambda a: [[tuple(x) for x in a[0]], a[1]]),
    ((106, 750), lambda a: [a[0], tuple(a[1])]),
    ((115,), lambda a: [[set(x) if isinstance(x, list) and x else {} for x in a[0]]]),
    ((124,), lambda a: [float(a[0]), complex(a[1])]),
    ((250, 405, 446, 617, 720, 763, 808), lambda a: [tuple(a[0]), a[1]]),
    ((259, 401, 445), _each_tuple_of_tuples),
    ((278,), lambda a: [tuple(tuple(x) if isinstance(x, list) else x for x in a[0])]),
    ((307,), lambda a: [tuple(a[0]), a[1], a[2]]),
    ((722,), lambda a: [{k: tuple(v) for k, v in a[0].items()}, *a[1:]]),
    ((252,), lambda a: [complex(a[0])]),
    ((580, 615, 791), _all_tuples),
)  # fmt: skip
_MBPP_ARGUMENTS: dict[int, Callable[[list[Any]], Any]] = {n: shape for ns, shape in _MBPP_SHAPES for n in ns}
"""MBPP+ problem number -> how EvalPlus turns a published argument list into the arguments it calls with
(JSON lists into tuples, sets, complex numbers), as ``evalplus.data.mbpp.mbpp_deserialize_inputs`` does."""


# -- a row, read --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A row read and checked, before anything runs: its inputs as call literals, base ones first."""

    row: Row
    task_id: str
    dataset: str
    """``humaneval`` or ``mbpp``: which of EvalPlus's datasets (the special oracles and input shapes differ)."""
    prompt: str
    entry_point: str
    reference: str
    inputs: list[str]
    fields: list[str]
    """Where each input is in the row (``base_input[3]``, ``plus_input[0]``), for errors to name."""
    base: int
    atol: float
    contract: str | None


def problem_of(row: Row) -> Problem | LeftOut:
    """The row as a problem, or why it is left out (a special oracle, an input with no call literal).

    Raises:
        UserError: a field missing or mistyped (named), an input that is no argument list.
    """
    task_id = text(row, "task_id").strip()
    if not task_id:
        raise bad(row, "task_id", "empty")
    prompt = text(row, "prompt")
    entry_point = text(row, "entry_point")
    if not entry_point.isidentifier():
        raise bad(row, "entry_point", f"not a function name: {entry_point[:40]!r}")
    # a copy that names the canonical solution ``code`` is read too; the error names EvalPlus's field
    canonical = text(
        row, "code" if "code" in row.data and "canonical_solution" not in row.data else "canonical_solution"
    )
    if "atol" not in row.data:
        raise bad(row, "atol", "missing")
    atol = row.data["atol"]
    if type(atol) not in (int, float) or not (0 <= atol < math.inf):
        raise bad(row, "atol", f"not a number >= 0: {str(atol)[:40]}")
    contract = optional(row, "contract")
    if contract is not None and not isinstance(contract, str):
        raise bad(row, "contract", f"a {type(contract).__name__}, not a string")
    dataset = "mbpp" if task_id.startswith("Mbpp/") else "humaneval"
    number = task_id.rsplit("/", 1)[-1]
    shape = _MBPP_ARGUMENTS.get(int(number)) if dataset == "mbpp" and number.isdigit() else None
    base = _argument_lists(row, "base_input")
    plus = _argument_lists(row, "plus_input")
    if entry_point in _SPECIAL_ORACLES[dataset]:
        return LeftOut(SPECIAL_ORACLE)
    inputs: list[str] = []
    fields: list[str] = []
    for name, given in (("base_input", base), ("plus_input", plus)):
        for i, args in enumerate(given):
            field = f"{name}[{i}]"
            if shape is not None:
                try:
                    args = shape(args)
                except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
                    raise bad(row, field, f"not the arguments {task_id} takes ({type(e).__name__}: {e})") from None
            literal = call_literal(tuple(args))
            if literal is None:
                return LeftOut(NO_INPUT_LITERAL)
            inputs.append(literal)
            fields.append(field)
    if not inputs:
        raise bad(row, "base_input", "empty (and no plus_input): nothing would judge an answer")
    return Problem(
        row, task_id, dataset, prompt, entry_point, prompt + canonical, inputs, fields, len(base), float(atol),
        contract or None,
    )  # fmt: skip


def _argument_lists(row: Row, field: str) -> list[list[Any]]:
    """A list of argument lists. MBPP+ publishes one problem's ``plus_input`` as ``{}`` (Mbpp/793): an
    empty object is no inputs, as EvalPlus's loop over it finds none."""
    if field not in row.data:
        raise bad(row, field, "missing")
    value = row.data[field]
    if value == {}:
        return []
    if not isinstance(value, list):
        raise bad(row, field, f"{_json_type(value)}, not a list of argument lists")
    for i, args in enumerate(value):
        if not isinstance(args, list):
            raise bad(row, f"{field}[{i}]", f"{_json_type(args)}, not a list of arguments")
    return value


# -- call literals ------------------------------------------------------------------------------------------


def call_literal(args: tuple[Any, ...]) -> str | None:
    """``args`` as the text of a test input (a Python literal tuple ``parse_input`` reads back as exactly
    these values: an infinity is written ``1e999``), or None when there is none: a NaN, a frozenset, an
    object; an input over ``parse_input``'s size or nesting limits."""
    text = _literal(args)
    if text is None:
        return None
    parsed = parse_input(text)
    return text if not isinstance(parsed, str) and _identical(parsed, args) else None


def value_literal(value: Any) -> str | None:
    """``value`` as a Python literal that reads back as exactly it (a test's ``python_eq``), or None."""
    text = _literal(value)
    if text is None:
        return None
    try:
        return text if _identical(python_literal(text), value) else None
    except ValueError:
        return None


def _literal(value: Any) -> str | None:
    t = type(value)
    if value is None or t in (bool, int, str, bytes):
        try:
            return repr(value)
        except ValueError:  # an int over Python's 4300 digits
            return None
    if t is float:
        if math.isnan(value):
            return None
        return repr(value) if math.isfinite(value) else ("1e999" if value > 0 else "-1e999")
    if t is complex:  # (re+imj), the sign of each part kept but a negative zero imaginary one (read back)
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            return None
        sign = "-" if math.copysign(1, value.imag) < 0 else "+"
        return f"({value.real!r}{sign}{abs(value.imag)!r}j)"
    if t in (list, tuple, set):
        found = [_literal(v) for v in value]
        items = [item for item in found if item is not None]
        if len(items) < len(found):
            return None
        if t is list:
            return "[" + ", ".join(items) + "]"
        if t is set:
            return "{" + ", ".join(items) + "}" if items else "set()"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if t is dict:
        pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    return None


def _identical(a: Any, b: Any) -> bool:
    """The same value of the same types all the way down (``-0.0`` is not ``0.0``, ``1`` not ``True``),
    dicts in the same order."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)
    if type(a) is complex:
        return _identical(a.real, b.real) and _identical(a.imag, b.imag)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return len(a) == len(b) and all(
            _identical(ka, kb) and _identical(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    return bool(a == b)


# -- the tasks ----------------------------------------------------------------------------------------------


def _is_floats(value: Any) -> bool:
    """EvalPlus's ``is_floats``: a float, or a non-empty list or tuple of floats only."""
    if type(value) is float:
        return True
    return type(value) in (list, tuple) and bool(value) and all(type(v) is float for v in value)


def _tolerances(problem: Problem, values: Sequence[Any]) -> list[float | None]:
    """Each test's ``allclose_atol``: what ``atol`` is when EvalPlus's loop reaches the input (None for 0).
    ``base_input`` and ``plus_input`` are judged in two runs, each starting from the row's ``atol``."""
    out: list[float | None] = []
    for start, stop in ((0, problem.base), (problem.base, len(values))):
        atol = problem.atol
        for value in values[start:stop]:
            if atol == 0 and _is_floats(value):
                atol = FLOATS_ATOL  # and it stays so for the rest of the run, as EvalPlus's loop keeps it
            out.append(atol or None)
    return out


def task_of(problem: Problem, values: Sequence[Any]) -> Task | LeftOut:
    """The problem's task, its tests' expected outputs ``values`` (the canonical solution's, decoded)."""
    tests = []
    for literal, value, atol in zip(problem.inputs, values, _tolerances(problem, values), strict=True):
        if isinstance(value, Unsupported) and value.detail in ("<too large>", "<too deep>"):
            return LeftOut(OVER_LIMITS)
        try:
            expected = to_json(value)
        except UnsupportedOutput:
            return LeftOut(NO_JSON_OUTPUT)
        eq = value_literal(value)
        if eq is None:  # an int too long to write
            return LeftOut(NO_JSON_OUTPUT)
        tests.append(TestCase(input=literal, expected=expected, python_eq=eq, allclose_atol=atol))
    source = "mbppplus" if problem.dataset == "mbpp" else "humanevalplus"
    meta: dict[str, Any] = {
        "prompt": problem.prompt,
        "atol": problem.atol,
        "tests": {"base_input": problem.base, "plus_input": len(problem.inputs) - problem.base},
    }
    if problem.contract:
        meta["contract"] = problem.contract
    task = make_task(
        problem.row,
        task_id=problem.task_id,
        description=problem.prompt,
        entry_point=problem.entry_point,
        reference_code=problem.reference,
        tests=tests,
        examples=docstring_examples(problem.prompt, problem.entry_point),
        public_tests=0,
        tags=[source, "evalplus"],
        source=source,
        meta=meta,
    )
    return publish_shown_tests(task)


def _values(judge: Judge, problem: Problem) -> list[Any] | LeftOut:
    """The canonical solution's output on each input (``reference_values``: one execution for all), or
    ``OVER_LIMITS`` when the sandbox's limits stop it on one (EvalPlus runs it without them).

    Raises:
        UserError: it does not load, or raises or crashes on an input (named by its field).
    """
    probe = Task(
        task_id=problem.task_id,
        description="",
        entry_point=problem.entry_point,
        reference_code=problem.reference,
        tests=[TestCase(input=i) for i in problem.inputs],
    )
    try:
        return reference_values(judge, probe, range(len(problem.inputs)))
    except NoReferenceValue as e:
        if e.over_limits:
            return LeftOut(OVER_LIMITS)
        field = "canonical_solution" if e.index is None else problem.fields[e.index]
        why = e.why.replace("the reference", "the canonical solution", 1)
        raise bad(problem.row, field, f"{why} (EvalPlus takes every expected output from it)") from None


def tasks_of(file: str | Path, judge: Judge, imported: Imported, concurrency: int = 4) -> Iterable[Task]:
    """The tasks of an EvalPlus file, in file order, counted in ``imported``. Every row is read and
    checked before anything runs; then each problem's canonical solution runs once (``concurrency``
    problems at a time).

    Raises:
        UserError: the file cannot be read, a row is malformed or repeats a task id, a canonical
            solution gives no output on some input (each named), or no row made a task.
    """
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    rows = 0
    for row in read_rows(file):
        rows += 1
        made = problem_of(row)
        if isinstance(made, LeftOut):
            imported.left_out[made.reason] += 1
            continue
        if made.task_id in seen:
            raise bad(row, "task_id", f"{made.task_id!r} repeated (first at {seen[made.task_id]})")
        seen[made.task_id] = row.where
        problems.append(made)
    pool = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(problems) or 1)))
    try:
        # in file order: the first problem that fails is the one named
        for problem, values in zip(problems, pool.map(lambda p: _values(judge, p), problems), strict=True):
            task = values if isinstance(values, LeftOut) else task_of(problem, values)
            if isinstance(task, LeftOut):
                imported.left_out[task.reason] += 1
                continue
            imported.tasks += 1
            yield task
    finally:  # an error stops the import: the problems not yet started never run
        pool.shutdown(wait=True, cancel_futures=True)
    if not imported.tasks:
        why = "; ".join(f"{n} {reason}" for reason, n in imported.left_out.most_common())
        raise UserError(f"{file}: no task made of its {rows} rows" + (f": {why}" if why else ""))


def import_evalplus(
    file: str | Path,
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
) -> tuple[list[Task], Imported]:
    """Every task of an EvalPlus file (in memory), and what the import made. The canonical solutions
    run in ``sandbox`` (a backend name, default ``auto``, or a started ``Sandbox``, then left open)
    under the limits of ``config``'s ``sandbox:`` section (the defaults without one).

    Raises:
        UserError: as ``tasks_of``; SandboxUnavailable: the sandbox cannot start.
    """
    imported = Imported()
    with _judge(config, sandbox, timeout) as judge:
        return list(tasks_of(file, judge, imported, concurrency)), imported


def write_evalplus(
    file: str | Path,
    out: str | Path,
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
) -> Imported:
    """The tasks of an EvalPlus file written to ``out`` as JSONL, all or nothing (``import_evalplus``).

    Raises:
        UserError: as ``tasks_of``; ``out`` is a directory or cannot be written.
    """
    imported = Imported()
    with _judge(config, sandbox, timeout) as judge:
        write_all_or_nothing(Path(out), tasks_of(file, judge, imported, concurrency))
    return imported


@contextlib.contextmanager
def _judge(
    config: str | Path | RunConfig | None, sandbox: str | Sandbox | None, timeout: float | None
) -> Iterator[Judge]:
    """A ``Judge`` in ``sandbox`` under ``config``'s limits (``tasksets.judging``'s), the sandbox closed after
    when it was started here. One timed-out call ends an execution: the import stops at it anyway."""
    from ..judge import Judge
    from .judging import _open, _settings, load_run_config

    settings = _settings(load_run_config(config), timeout, sandbox)
    box, ours = _open(settings, sandbox)
    try:
        yield Judge(box, settings.limits, settings.test_timeout_s, max_timeouts=1)
    finally:
        if ours:
            box.close()
