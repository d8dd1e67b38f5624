"""Ground truths in the field's formats, read as spade tasks: a user's CodeContests, APPS, TACO,
LiveCodeBench or SandboxFusion rows judged in spade's sandbox by the loop's own verdict code (the kind's
``check_answer``), not in a trainer's process.

``groundtruth.task_from_ground_truth`` hands over any ground truth that is not spade's own (no
``tests`` and ``entry_point``). The shapes read, as JSON text or parsed:

* **verl's ``prime_code``** (what verl's ``default_compute_score`` sends the ``codecontests``, ``apps``,
  ``taco`` and ``codeforces`` data sources to): ``{"inputs": [...], "outputs": [...], "fn_name"?: str}``.
  Without ``fn_name`` an input is a whole program's stdin and its output what the program prints (a list
  of lines is joined with newlines, as ``prime_code`` joins it): a task of the kind whose ``field_tests``
  is ``stdin``. With ``fn_name`` an input is the call's arguments, one JSON value a line, and an output
  the JSON of the value returned: a task of the kind whose ``field_tests`` is ``call``, ``fn_name`` its
  entry point, where that reading is exact (below). verl's SandboxFusion judge reads the stdin shape the
  same way.
* **LiveCodeBench's** test cases: a list of ``{"input", "output", "testtype"}``, or a row's
  ``public_test_cases`` and ``private_test_cases`` (JSON text or lists): the public ones first, counted
  as shown (partial credit pays the private ones).
* **SandboxFusion's** dataset tests: a list of ``{"input": {"stdin": ...}, "output": {"stdout": ...}}``,
  or a row holding it as ``test``.

No test of these shapes is counted as shown but LiveCodeBench's public ones, and none carries a time
limit: each test's run gets the rewarder's ``test_timeout_s`` of CPU.

Where a reading would not be exact the ground truth is refused, one ``UserError`` saying which test and
why, never judged on a guess (the rewards' rule: errors raise, never a silent 0.0):

* a ``fn_name`` output that is a non-empty list: ``prime_code`` also passes a function returning its
  first element (APPS wraps every output so), so which of the two is the answer is not said;
* a ``fn_name`` dict (the first argument or the output) whose keys all read as ints: ``prime_code`` makes
  them ints (and, for the argument, drops the other arguments);
* arguments that are not one JSON value a line (``prime_code`` cannot call those either), numbers JSON
  cannot carry (NaN, infinities), a ``fn_name`` that is no Python name;
* LiveCodeBench's ``functional`` tests without the row's ``metadata.func_name`` (a bare list of test
  cases): the method they call is not named. With it, a row's functional tests are judged as
  ``spade import lcb`` judges them (``Solution().func_name`` after LiveCodeBench's prelude, ``==`` with a
  tuple as a list: docs/benchmarks.md); a ``private_test_cases`` that is not
  JSON (LiveCodeBench ships it base64, zlib and pickle: decode it first; spade never unpickles a ground
  truth, pickle runs code).

The reading of an answer is the kind's, as for spade's own ground truths: the last fenced block tagged
``python``/``py``/``python3`` (``TaskKind.read_strict``); docs/training.md says where verl's
``prime_code`` reads and judges otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..errors import UserError
from ..kinds import kind_for_field_tests
from ..kinds.base import CALL_TESTS, STDIN_TESTS, FieldTests
from ..sandbox.verdict import json_exact
from ..types import Task, TestCase

__all__ = ["PRIME_CODE", "field_ground_truth", "read_field_ground_truth"]

PRIME_CODE: Final = "prime_code"
LIVECODEBENCH: Final = "livecodebench"
SANDBOX_FUSION: Final = "sandbox_fusion"
LCB_STDIN: Final = "stdin"
LCB_FUNCTIONAL: Final = "functional"


def read_field_ground_truth(value: Any) -> tuple[Task, int] | None:
    """The task (and its shown test count) a ground truth in one of the field's shapes describes, None
    when ``value`` (parsed JSON) is in none of them.

    Raises:
        UserError: the shape is one of them but its content cannot be judged exactly (module docstring).
    """
    if isinstance(value, Mapping):
        if "inputs" in value and "outputs" in value:
            return _read_prime_code(value)
        if "public_test_cases" in value or "private_test_cases" in value:
            return _read_livecodebench_row(value)
        if isinstance(value.get("test"), list):
            return _read_sandbox_fusion(value["test"], _name(value, SANDBOX_FUSION))
        return None
    if isinstance(value, list) and value and all(isinstance(case, Mapping) for case in value):
        if all("testtype" in case for case in value):
            return _program_task(LIVECODEBENCH, _livecodebench_tests(value, LIVECODEBENCH), 0)
        if all(isinstance(case.get("input"), Mapping) for case in value):
            return _read_sandbox_fusion(value, SANDBOX_FUSION)
    return None


def field_ground_truth(tests: Sequence[TestCase]) -> dict[str, list[str]]:
    """Stdin tests in ``prime_code``'s shape, which verl's SandboxFusion judge reads too: ``inputs``, and
    ``outputs`` written as the output rule sees them (each line without its trailing whitespace, no
    trailing blank line, one final newline), so a judge that compares text (SandboxFusion's, after
    ``rstrip("\\n")``) passes an answer printing the expected lines without trailing spaces.

    Raises:
        UserError: a test without its expected text.
    """
    from ..sandbox.stdio import output_lines

    outputs = []
    for i, test in enumerate(tests):
        if not (test.has_expected and isinstance(test.expected, str)):
            raise UserError(f"test {i} has no expected output text; validate the task first")
        lines = output_lines(test.expected)
        outputs.append("\n".join(lines) + "\n" if lines else "")
    return {"inputs": [t.input for t in tests], "outputs": outputs}


# -- the shapes ----------------------------------------------------------------------------------------


def _name(value: Mapping[str, Any], shape: str) -> str:
    """A task id for logs: the row's own id where it has one, else the shape's name."""
    for key in ("task_id", "question_id", "problem_id", "id"):
        if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
            return str(value[key])
    return shape


def _program_task(task_id: str, tests: list[TestCase], public: int) -> tuple[Task, int]:
    return _task(task_id, STDIN_TESTS, "", tests, public)


def _task(task_id: str, shape: FieldTests, entry_point: str, tests: list[TestCase], public: int) -> tuple[Task, int]:
    if not tests:
        raise UserError(f"{task_id}: a ground truth without tests")
    task = Task(
        task_id=task_id,
        kind=kind_for_field_tests(shape).name,
        description="",
        entry_point=entry_point,
        reference_code="",
        tests=tests,
        public_tests=0 if public <= 0 else None,  # 0: no test was shown (``code._with_split`` sets the rest)
    )
    return task, public


def _read_prime_code(value: Mapping[str, Any]) -> tuple[Task, int]:
    name = _name(value, PRIME_CODE)
    inputs, outputs = value["inputs"], value["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise UserError(f"{name}: `inputs` and `outputs` must be two lists of the same length")
    fn_name = value.get("fn_name")
    if fn_name is None:  # prime_code's test: no fn_name (or a null one) is a stdin program
        tests = [TestCase(input=_text(i, name, "input"), expected=_text(o, name, "output")) for i, o in zip(
            inputs, outputs, strict=True)]  # fmt: skip
        return _program_task(name, tests, 0)
    if not isinstance(fn_name, str) or not fn_name.isidentifier():
        raise UserError(f"{name}: fn_name {fn_name!r} is not a Python name")
    tests = [_call_test(i, o, f"{name}: test {n}") for n, (i, o) in enumerate(zip(inputs, outputs, strict=True))]
    return _task(name, CALL_TESTS, fn_name, tests, 0)


def _text(value: Any, name: str, what: str) -> str:
    """A stdin or stdout text; a list of lines is joined with newlines, as ``prime_code`` joins it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise UserError(f"{name}: a stdin program's {what} must be text, got {type(value).__name__}")


def _read_livecodebench_row(value: Mapping[str, Any]) -> tuple[Task, int]:
    name = _name(value, LIVECODEBENCH)
    func_name = _func_name(value.get("metadata"), name)
    public = _livecodebench_tests(_cases(value.get("public_test_cases"), name, "public_test_cases"), name, func_name)
    private = _livecodebench_tests(_cases(value.get("private_test_cases"), name, "private_test_cases"), name, func_name)
    tests = public + private
    if func_name is None or not any(t.tuple_as_list for t in tests):
        return _program_task(name, tests, len(public))
    if not all(t.tuple_as_list for t in tests):
        raise UserError(f"{name}: stdin and functional tests mixed in one problem")
    from ..tasksets.livecodebench import ENTRY_CLASS, PRELUDE

    task, shown = _task(name, CALL_TESTS, func_name, tests, len(public))
    # judged as LiveCodeBench's harness and `spade import lcb` judge it: Solution().func_name, after its prelude
    return task.model_copy(update={"entry_class": ENTRY_CLASS, "prelude": PRELUDE}), shown


def _func_name(metadata: Any, name: str) -> str | None:
    """A LiveCodeBench row's ``metadata.func_name`` (JSON text or parsed), None when it names none."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata) if metadata.strip() else None
        except ValueError:
            raise UserError(f"{name}: metadata is not JSON") from None
    found = metadata.get("func_name") if isinstance(metadata, Mapping) else None
    if found is not None and (not isinstance(found, str) or not found.isidentifier()):
        raise UserError(f"{name}: metadata.func_name {found!r} is not a Python name")
    return found


def _cases(value: Any, name: str, column: str) -> list[Any]:
    """A LiveCodeBench column's test cases: a list, or its JSON text (absent: none)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise UserError(
                f"{name}: {column} is not JSON (LiveCodeBench ships its private tests base64, zlib and pickle "
                "encoded: decode them into a JSON list first; spade does not unpickle a ground truth)"
            ) from None
    if not isinstance(value, list):
        raise UserError(f"{name}: {column} must be a list of test cases, got {type(value).__name__}")
    return value


def _livecodebench_tests(cases: Sequence[Any], name: str, func_name: str | None = None) -> list[TestCase]:
    tests = []
    for n, case in enumerate(cases):
        if not isinstance(case, Mapping) or not isinstance(case.get("input"), str):
            raise UserError(f"{name}: test {n} is not a LiveCodeBench test case ({{input, output, testtype}})")
        if case.get("testtype") == LCB_FUNCTIONAL:
            if func_name is None:
                raise UserError(
                    f"{name}: test {n} is a functional test, a method of LeetCode's `class Solution`, and no "
                    "metadata.func_name names it: give the whole row (public_test_cases, metadata...)"
                )
            tests.append(_lcb_functional_test(case["input"], case.get("output"), f"{name}: test {n}"))
            continue
        if case.get("testtype") != LCB_STDIN or not isinstance(case.get("output"), str):
            raise UserError(f"{name}: test {n} has testtype {case.get('testtype')!r} (read: stdin) or no output text")
        tests.append(TestCase(input=case["input"], expected=case["output"]))
    return tests


def _read_sandbox_fusion(cases: Sequence[Any], name: str) -> tuple[Task, int]:
    tests = []
    for n, case in enumerate(cases):
        given = case.get("input") if isinstance(case, Mapping) else None
        wanted = case.get("output") if isinstance(case, Mapping) else None
        stdin = given.get("stdin") if isinstance(given, Mapping) else None
        stdout = wanted.get("stdout") if isinstance(wanted, Mapping) else None
        if not isinstance(stdin, str) or not isinstance(stdout, str):
            shape = "{input: {stdin}, output: {stdout}}"
            raise UserError(f"{name}: test {n} is not a SandboxFusion stdin test ({shape})")
        tests.append(TestCase(input=stdin, expected=stdout))
    return _program_task(name, tests, 0)


# -- call-based tests ----------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON a test can carry")


_STRICT_JSON = json.JSONDecoder(parse_constant=_no_constant)


def _json(text: Any, where: str, what: str) -> Any:
    if not isinstance(text, str):
        raise UserError(f"{where}: the {what} must be JSON text, got {type(text).__name__}")
    try:
        value = _STRICT_JSON.decode(text)
    except ValueError as e:
        raise UserError(f"{where}: the {what} is not one JSON value ({e})") from None
    if not json_exact(value):  # decoded JSON: only a number too large for a float can fail
        raise UserError(f"{where}: the {what} holds a number JSON cannot carry (too large for a float)")
    return value


def _int_keyed(value: Any) -> bool:
    """Whether ``prime_code`` would turn this dict's keys into ints (it does when every key reads as one)."""
    if not isinstance(value, dict) or not value:
        return False
    try:
        for key in value:
            int(key)
    except ValueError:
        return False
    return True


def _lcb_functional_test(inputs: str, output: Any, where: str) -> TestCase:
    """One LiveCodeBench functional test: one JSON argument a line, the result compared by ``==`` after a
    tuple becomes a list (``tasksets.livecodebench``, which imports the same tests)."""
    from ..sandbox.runner import parse_input

    args = [_json(line, where, "argument line") for line in inputs.split("\n")]
    expected = _json(output, where, "output")
    parsed = parse_input(repr(tuple(args)))
    if isinstance(parsed, str):
        raise UserError(f"{where}: {parsed}")
    return TestCase(input=repr(tuple(args)), expected=expected, python_eq=repr(expected), tuple_as_list=True)


def _call_test(inputs: Any, output: Any, where: str) -> TestCase:
    """One ``fn_name`` test as a call of the function kind: the arguments as a literal tuple, the
    returned value as the expected JSON value; refused where that is not what ``prime_code`` means."""
    from ..sandbox.runner import parse_input

    if not isinstance(inputs, str):
        raise UserError(f"{where}: the arguments must be text, one JSON value a line, got {type(inputs).__name__}")
    args = [_json(line, where, "argument line") for line in inputs.split("\n")]
    expected = _json(output, where, "output")
    if _int_keyed(args[0]) or _int_keyed(expected):
        raise UserError(f"{where}: prime_code turns this dict's keys into ints; spade compares JSON's string keys")
    if isinstance(expected, list) and expected:
        raise UserError(
            f"{where}: the output is a list, which prime_code also compares with the returned value's first "
            "element (APPS wraps outputs so): whether the function returns the list or its item is not said"
        )
    try:
        literal = repr(tuple(args))
    except ValueError:  # an int past Python's 4300 digits
        raise UserError(f"{where}: an argument is too long to pass") from None
    parsed = parse_input(literal)
    if isinstance(parsed, str):
        raise UserError(f"{where}: {parsed}")
    return TestCase(input=literal, expected=expected)
