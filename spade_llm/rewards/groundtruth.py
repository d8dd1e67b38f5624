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
* ``reference_code``: for the query kinds only (``TaskKind.needs_reference``: the program is part of
  their question, and an abduction judge runs it); an induction task's reference is its answer and stays out;
* ``input_validator``: for those kinds, when the task has one (a program abduction's judge accepts only an
  input it accepts);
* the kind's ``judge_fields`` (``TaskKind.judge_fields``: a bug fix's ``buggy_code``, so an answer that
  hands it back unchanged scores nothing, as in the loop);
* ``check_code`` and ``examples``: an imported benchmark's assert script and docstring examples;
* ``checker``: a ``program`` task's checker, when several outputs are right (``Task.checker``): the
  reward judges each test by it, as the loop does;
* ``time_limit_s``: the CPU seconds each test's run may take, when the task sets them (a ``program``
  task's contest limit); absent, the rewarder's ``test_timeout_s``, as the loop's default;
* ``entry_class`` and ``prelude``: when the task sets them (LiveCodeBench's LeetCode problems), the
  class whose method the entry point is, and the code run before the answer (``Task``);
* ``language``: the language the answer is asked in and judged in (a name of ``languages.TOOLCHAINS``),
  when not Python (a whole program's row in another language: ``TaskKind.answer_languages``); absent, Python.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..kinds import DEFAULT_KIND, get_kind
from ..kinds.base import STDIN_TESTS
from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..sandbox.verdict import json_exact
from ..types import Task, TestCase, python_literal
from .field_formats import field_ground_truth, read_field_ground_truth

__all__ = [
    "GROUND_TRUTH_VERSION",
    "SANDBOX_FUSION_DATA_SOURCE",
    "SANDBOX_FUSION_SCORED_TESTS",
    "SandboxFusionForm",
    "ground_truth",
    "ground_truth_language",
    "sandbox_fusion_form",
    "sandbox_fusion_ground_truth",
    "task_from_ground_truth",
]

GROUND_TRUTH_VERSION = 1


def ground_truth(task: Task, public: int, language: str = DEFAULT_ANSWER_LANGUAGE) -> dict[str, Any]:
    """``task``'s ground truth, its first ``public`` tests public (see ``solver.split_tests``), its answer in
    ``language``.

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
    kind = get_kind(task.kind)
    if kind.needs_reference:
        gt["reference_code"] = task.reference_code
        if task.input_validator is not None:  # a judge that runs the reference on an answer's input checks it first
            gt["input_validator"] = task.input_validator
    for name in sorted(kind.judge_fields):  # what the kind's check_answer reads beside the tests
        value = getattr(task, name)
        if not value:
            raise UserError(f"task {task.task_id}: a {task.kind} task is judged with its {name}, and it has none")
        gt[name] = value
    if task.check_code:
        gt["check_code"] = task.check_code
    if task.examples:
        gt["examples"] = [t.dump() for t in task.examples]
    if task.checker is not None:  # the loop judged by it: so does the reward
        gt["checker"] = task.checker
    if task.time_limit_s is not None:  # the loop judged under it: so does the reward
        gt["time_limit_s"] = task.time_limit_s
    if task.entry_class is not None:  # the loop called a method of one instance: so does the reward
        gt["entry_class"] = task.entry_class
    if task.prelude:  # the loop ran the answer after it: so does the reward
        gt["prelude"] = task.prelude
    if kind.answer_language(language) != DEFAULT_ANSWER_LANGUAGE:  # the loop judged it in this language
        gt["language"] = language
    return gt


def ground_truth_language(value: str | Mapping[str, Any]) -> str:
    """The answer language a ground truth asks for: its ``language``, Python when it has none (an older
    export's, or one of the field's shapes).

    Raises:
        UserError: not JSON, an unknown language, or another than Python for a kind whose answers are Python.
    """
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise UserError(f"ground truth is not JSON: {e}") from None
    if not isinstance(value, Mapping) or value.get("language") is None:
        return DEFAULT_ANSWER_LANGUAGE
    language = value["language"]
    if not isinstance(language, str):
        raise UserError(f"a ground truth's language is a name, got {type(language).__name__}")
    return get_kind(str(value.get("kind") or DEFAULT_KIND)).answer_language(language)


def task_from_ground_truth(value: str | Mapping[str, Any]) -> tuple[Task, int]:
    """The task a ground truth describes (enough to judge, not to show) and its public test count: spade's
    own, or one in the field's shapes (verl's ``prime_code``, LiveCodeBench's, SandboxFusion's:
    ``field_formats``).

    Raises:
        UserError: ``value`` is not JSON, not a ground truth, of a newer version, or of the field's shapes
            but not judged exactly (``field_formats`` says which).
    """
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise UserError(f"ground truth is not JSON: {e}") from None
    if not (isinstance(value, Mapping) and "tests" in value):  # not ours: maybe one of the field's shapes
        found = read_field_ground_truth(value)
        if found is not None:
            return found
    if not isinstance(value, Mapping):
        raise UserError(
            f"ground truth must be a JSON object (spade's, or verl's prime_code {{inputs, outputs}}) or a list of "
            f"LiveCodeBench or SandboxFusion test cases, got {type(value).__name__}"
        )
    version = value.get("version", GROUND_TRUTH_VERSION)
    if version != GROUND_TRUTH_VERSION:
        raise UserError(f"ground truth version {version!r} is not one this spade_llm reads ({GROUND_TRUTH_VERSION})")
    try:
        tests = [TestCase.model_validate(t) for t in value["tests"]]
        examples = [TestCase.model_validate(t) for t in value.get("examples") or []]
        public = int(value.get("public", 1))
        task = Task(
            task_id=str(value.get("task_id") or "task"),
            kind=value.get("kind") or DEFAULT_KIND,
            description="",
            entry_point=value["entry_point"],
            reference_code=value.get("reference_code") or "",
            tests=tests,
            check_code=value.get("check_code"),
            checker=value.get("checker"),
            examples=examples,
            public_tests=0 if public <= 0 else None,  # no test shown: an imported benchmark's, seen by its examples
            time_limit_s=value.get("time_limit_s"),
            input_validator=value.get("input_validator"),
            entry_class=value.get("entry_class"),
            prelude=value.get("prelude"),
        )
    except (KeyError, TypeError, ValueError) as e:
        why = f"missing {e}" if isinstance(e, KeyError) else str(e).splitlines()[0]
        raise UserError(f"not a spade_llm ground truth: {why}") from None
    kind = get_kind(task.kind)
    if kind.needs_reference and not task.reference_code:
        raise UserError(f"a {task.kind} ground truth needs its reference_code")
    fields = {name: value.get(name) for name in sorted(kind.judge_fields)}
    for name, text in fields.items():
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"a {task.kind} ground truth needs its {name} (its judge reads it)")
    if fields:
        task = task.model_copy(update=fields)
    return task, max(0, min(public, len(tests)))


# -- verl's built-in SandboxFusion judge ------------------------------------------------------------

SANDBOX_FUSION_DATA_SOURCE = "codecontests"
"""A data source verl's ``default_compute_score`` sends to its SandboxFusion judge (with
``reward.sandbox_fusion.url`` set; it routes ``codecontests``, ``apps``, ``codeforces``, ``taco``)."""


def printed(value: Any) -> str:
    """What verl's ``fn_name`` wrapper prints for a return value: JSON for a dict, list, tuple, None
    or bool, ``str()`` for the rest.

    Raises:
        ValueError: ``value`` holds an int too long for ``str`` (Python's 4300-digit limit): the
            wrapper's ``print`` fails on it the same way, so no answer can print it.
    """
    if isinstance(value, (dict, list, tuple)) or value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


SANDBOX_FUSION_SCORED_TESTS = 10
"""verl's ``compute_score(..., continuous=True)``, what ``default_compute_score`` calls, scores the
fraction passed of the first this many tests only."""

LEFT_OUT_NOT_CODE = "its answer is not a program"
LEFT_OUT_LANGUAGE = "asked in another language than Python, which verl's built-in judges run every answer as"
LEFT_OUT_JUDGED_WITH_MORE = "judged with more than its tests (a bug fix: its buggy code handed back scores nothing)"
LEFT_OUT_TRIVIAL_PROGRAM = "a trivial program passes every scored test"
LEFT_OUT_CHECK_CODE = "judged by its own check code"
LEFT_OUT_CHECKER = "judged by its own checker (several outputs are right)"
LEFT_OUT_ARGUMENTS = "arguments JSON cannot carry"
LEFT_OUT_NO_TESTS = "no test left"
LEFT_OUT_METHOD = "a method of a class, or an answer run after a prelude (LiveCodeBench's LeetCode problems)"
TEST_PRINTS_EMPTY = "output prints empty, as a crash does"
TEST_PRINTS_AS_STAND_IN = "output prints as a wrong trivial answer's"
TEST_UNPRINTABLE = "output cannot be printed"
TEST_NOT_BY_TEXT = "compared within a tolerance or by truth value"
TEST_TUPLE_PRINTS_AS_LIST = "compared with a tuple, which prints as a list does"
TEST_NO_JSON_FORM = "compared with a value JSON cannot write (a set, bytes), which text cannot judge"


def _holds_a_tuple(value: Any) -> bool:
    """Whether a literal's value is, or holds, a tuple (iteratively: no recursion limit to hit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            return True
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            stack.extend(item.values())
    return False


def _stand_in_passes(name: str) -> str:
    return f"a function returning {name} passes every scored test"


@dataclass(frozen=True)
class SandboxFusionForm:
    """A task in the form verl's SandboxFusion judge runs, or why it is left out (``reason``), and
    which of its tests were left out of ``truth`` (``tests_left_out``: how many, by reason)."""

    truth: dict[str, Any] | None
    reason: str | None = None
    tests_left_out: dict[str, int] = field(default_factory=dict)


def _as_verl_sees(value: Any) -> str | None:
    """The stdout verl compares for an answer returning ``value`` (``printed``, then verl's
    ``rstrip("\\n")``), None when the wrapper cannot print it (an over-long int, a lone surrogate)."""
    try:
        text = printed(value)
        text.encode("utf-8")
    except (ValueError, UnicodeError):
        return None
    return text.rstrip("\n")


def sandbox_fusion_form(task: Task) -> SandboxFusionForm:
    """``task`` for verl's SandboxFusion judge (``sandbox_fusion_ground_truth``), with the tests and
    tasks left out that would let that judge pass an answer spade's judge fails. A whole program's task
    (``field_tests`` ``stdin``) is written in the stdin shape (``_stdin_form``); a function's as follows.

    verl compares the wrapper's stdout with ``outputs[i]`` as text, both ``rstrip("\\n")``-ed, and
    its wrapper prints *nothing* when the answer raises, exits (``sys.exit(0)`` at import included)
    or is not defined, and the run still counts as finished. So:

    * a test whose expected value prints as nothing (``""``, or a string of newlines) is left out:
      a crash would pass it;
    * a test a trivial stand-in (validation's: returning None, 0, [], '', {} or the first
      argument) passes as text but fails in spade's own verdict (the string ``"null"`` against
      None, ``"0"`` against 0, a first argument ``5`` against ``"5"``) is left out;
    * a test whose output the wrapper cannot print (an int over Python's 4300 digits, a lone
      surrogate in a string) is left out: not even the reference could pass it; so is an imported
      benchmark's test compared within ``abs_tol`` or ``allclose_atol`` or by truth value (``as_bool``),
      which text cannot be, one whose harness compares with a tuple (``python_eq``), which a list would
      pass as text, and one whose value has no JSON form (``TestCase.literal_only``: a set, bytes),
      whose printed text Python's ``==`` does not follow;
    * the task is left out when no test is left, or when a stand-in passes every test verl scores
      (the first ``SANDBOX_FUSION_SCORED_TESTS`` kept; all kept ones if verl scores them all);
    * a task judged by its own ``checker`` (several outputs are right) is left out: verl's judges
      compare text, and would fail every right output but the reference's;
    * a task whose answer is a method of a class or runs after a ``prelude`` (LiveCodeBench's LeetCode
      problems) is left out: the wrapper calls a module-level function of the answer as it stands;
    * a task of a kind judged with more than its tests (``TaskKind.judge_fields``: a bug fix, whose buggy
      code handed back unchanged scores nothing in spade, but passes the tests the bug leaves passing) is
      left out: verl's judges read the tests alone.

    The stand-ins are judged by their printed form, computed here, outside any sandbox (constants
    and the test's own first argument; nothing runs). No output is ever ``null`` (verl passes a
    ``None`` output unseen) or empty.

    Raises:
        UserError: a test without its expected value.
    """
    from ..sandbox.runner import parse_input
    from ..sandbox.verdict import passes
    from ..validation import STAND_INS

    kind = get_kind(task.kind)
    shape = kind.field_tests
    if shape is None:
        return SandboxFusionForm(None, LEFT_OUT_NOT_CODE)
    if kind.judge_fields:  # verl's judges read the tests alone: they would pay what spade's judge refuses
        return SandboxFusionForm(None, LEFT_OUT_JUDGED_WITH_MORE)
    if task.check_code:
        return SandboxFusionForm(None, LEFT_OUT_CHECK_CODE)
    if task.checker is not None:  # verl's judges compare text: they would fail another right output
        return SandboxFusionForm(None, LEFT_OUT_CHECKER)
    if task.entry_class is not None or task.prelude:  # its wrapper calls a module's function, with no prelude
        return SandboxFusionForm(None, LEFT_OUT_METHOD)
    if shape == STDIN_TESTS:
        return _stdin_form(task)
    missing = [t.input for t in task.tests if not t.has_expected]
    if missing:
        raise UserError(f"task {task.task_id}: test {missing[0]} has no expected value; validate the task first")
    cases: list[tuple[tuple[Any, ...], str]] = []  # the kept tests: arguments, printed output
    dropped: Counter[str] = Counter()
    for test in task.tests:
        args = parse_input(test.input)
        if isinstance(args, str) or not all(json_exact(a) for a in args):
            return SandboxFusionForm(None, LEFT_OUT_ARGUMENTS)
        seen = None if test.literal_only else _as_verl_sees(test.expected)  # a dict keyed by tuples: no JSON
        stand_ins = [*(value for _, value in STAND_INS), args[0] if args else None]
        if test.abs_tol is not None or test.as_bool or test.allclose_atol is not None:
            dropped[TEST_NOT_BY_TEXT] += 1
        elif test.literal_only:  # a set prints in its hash order, a frozenset equal to it prints otherwise
            dropped[TEST_NO_JSON_FORM] += 1
        elif test.python_eq is not None and not test.as_tuple and _holds_a_tuple(python_literal(test.python_eq)):
            dropped[TEST_TUPLE_PRINTS_AS_LIST] += 1
        elif seen is None:
            dropped[TEST_UNPRINTABLE] += 1
        elif not seen:
            dropped[TEST_PRINTS_EMPTY] += 1
        elif any(_as_verl_sees(s) == seen and not passes(s, test) for s in stand_ins):
            dropped[TEST_PRINTS_AS_STAND_IN] += 1
        else:
            cases.append((args, printed(test.expected)))
    if not cases:
        return SandboxFusionForm(None, LEFT_OUT_NO_TESTS, dict(dropped))
    scored = cases[:SANDBOX_FUSION_SCORED_TESTS]
    for name, constant in [*STAND_INS, ("the first argument", None)]:
        first = name == "the first argument"  # validation's: None for a function of no argument
        returned = [(args[0] if args else None) if first else constant for args, _ in scored]
        if all(_as_verl_sees(r) == output.rstrip("\n") for r, (_, output) in zip(returned, scored, strict=True)):
            return SandboxFusionForm(None, _stand_in_passes(name), dict(dropped))
    truth = {
        "fn_name": task.entry_point,
        "inputs": ["\n".join(json.dumps(a) for a in args) for args, _ in cases],
        "outputs": [output for _, output in cases],
    }
    return SandboxFusionForm(truth, None, dict(dropped))


def sandbox_fusion_ground_truth(task: Task) -> dict[str, Any] | None:
    """``task``'s tests in the form verl's SandboxFusion judge runs: by function name for a function's
    task, as stdin and stdout texts for a whole program's (``_stdin_form``, which verl's ``prime_code``
    reads too); None when the task is left out (``sandbox_fusion_form`` says why: arguments JSON
    cannot carry, such as a tuple, a set or bytes; no test left; a stand-in passes; judged by a checker).

    verl's ``sandbox_fusion`` reward (``check_correctness`` with ``fn_name``) wraps the answer in a
    program that reads one JSON argument per stdin line, calls the function and prints its result
    (``printed``), runs that through ``/run_code`` once per test, and compares stdout with
    ``outputs[i]`` *outside* the sandbox. So, as in our own verdicts, the expected values never enter
    the sandbox and none can read what it should print; what a crash prints (nothing) and what the
    trivial stand-ins print is never an expected output here (``sandbox_fusion_form``). What is
    weaker than ``compute_score``: outputs are compared as printed text (a float must print the same
    digits as the reference's, a dict keep its key order, a string ``"[1, 2]"`` reads like a list),
    anything the answer prints fails the test, and verl scores the fraction of the first 10 tests
    passed (``continuous=True``). Prefer ``spade_llm.rewards.compute_score``.

    Raises:
        UserError: a task whose answer is not a program, or a test without its expected value.
    """
    if not get_kind(task.kind).sandbox_fusion or task.check_code:
        raise UserError(
            f"task {task.task_id}: only tasks whose answer is a program run on its tests alone can be judged by verl"
        )
    return sandbox_fusion_form(task).truth


def _stdin_form(task: Task) -> SandboxFusionForm:
    """A whole program's task in ``prime_code``'s stdin shape (``field_formats.field_ground_truth``), which
    verl's SandboxFusion judge reads too; left out when a trivial program (prints nothing, echoes its
    input, prints one constant) passes every test verl scores (the first ``SANDBOX_FUSION_SCORED_TESTS``):
    verl would pay it in full.

    No test is left out: the program's own stdout is compared (no wrapper prints for it), and an answer
    that raises fails the test in both verl judges (SandboxFusion checks the exit code, ``prime_code``
    catches the exception). SandboxFusion compares the text, after ``rstrip("\\n")``, with the expected
    lines written without trailing whitespace, so an answer it passes spade passes too (the reverse
    fails on an answer's trailing spaces); ``prime_code`` is more lenient (docs/training.md).

    Raises:
        UserError: a test without its expected text.
    """
    from ..sandbox.stdio import stand_in_passes

    try:
        truth = field_ground_truth(task.tests)
    except UserError as e:
        raise UserError(f"task {task.task_id}: {e}") from None
    if stand_in_passes(task.tests[:SANDBOX_FUSION_SCORED_TESTS]) is not None:
        return SandboxFusionForm(None, LEFT_OUT_TRIVIAL_PROGRAM)
    return SandboxFusionForm(truth)
