"""Outside the sandbox: read the harness's report, decode outputs, compare them with expected values.

Nothing here runs untrusted code; everything the sandbox sent is data, parsed strictly. A report
that breaks the protocol (no report line or several with the run's nonce, a malformed record,
records duplicated, missing in the middle or out of order, a record after the harness should have
stopped) makes the whole execution an ``error`` with ``[spade] harness protocol violated`` on
stderr, so no test of it can pass. In tests mode a run that completes has one record per input,
except one the harness stopped after ``max_timeouts`` timed-out calls (``Records.stopped``): its
records end with that timeout, and the inputs after it were not run.

Comparison rules (``matches``), between a decoded output and an ``expected`` JSON value:

* types are strict: ``True`` is not ``1``, ``1`` is not ``1.0``, ``"1"`` is not ``1``;
* floats compare with ``math.isclose(rel_tol=1e-9, abs_tol=1e-12)`` (a solution may sum in
  another order than the reference); NaN equals nothing, not even NaN;
* JSON has no tuples, so a tuple output equals a JSON list with matching items;
* a JSON object equals a dict whose keys are all ``str`` (a dict with other keys has no JSON
  form, see ``to_json``) and whose values match;
* sets, frozensets, bytes, complex numbers and ``Unsupported`` values (any other type, including
  subclasses of builtins) never equal a JSON value.

An imported benchmark's test may carry its own rule (``passes``): ``python_eq``, Python's ``==``
between the decoded output and the assert's literal, as the benchmark's harness judges (no float
tolerance, a tuple is not a list, ``3.0`` equals ``3``); ``as_bool``, the output's truth value;
``abs_tol``, a number within a tolerance; ``allclose_atol`` with ``python_eq``, EvalPlus's rule: ``==``,
or else numpy's ``allclose`` with its ``rtol`` (``all_close``). The output is still decoded here from
plain data, so an answer's own ``__eq__`` never runs.

``to_json`` turns a reference's output into the ``expected`` value written to a task file, and
raises ``UnsupportedOutput`` for outputs with no faithful JSON form (sets, bytes, complex, NaN and
infinities, dicts with non-``str`` keys, unsupported types), so such tasks can be rejected rather
than judged on a lossy copy.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import json.scanner
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..languages.pyast import python_literal
from .result import ExecStatus, ExecutionResult

if TYPE_CHECKING:
    from ..types import TestCase  # only read here: reading a report needs no pydantic

_Parsed = TypeVar("_Parsed")

MAX_DEPTH = 100
"""The harness's ``MAX_DEPTH`` (how deep it encodes a value; a test keeps the two equal): the host does
not import the harness, which it ships to the sandbox compiled (``common.harness_program``)."""

FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12
OUTPUT_REPR_CHARS = 1000
"""Longest ``TestResult.output`` (a repr shown to the solver)."""

CRASH_SIGNALS = frozenset({4, 6, 7, 8, 11})
"""SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV: the program crashed (``error``), it was not killed."""

SIGXCPU = 24
SIGKILL = 9
NOTE = "[spade] "

_HEX_INT = re.compile(r"-?0x[0-9a-f]+")

Mode = Literal["tests", "check", "main", "exec"]


class UnsupportedOutput(ValueError):
    """An output with no faithful JSON form (so it cannot become an ``expected`` value)."""


class ProtocolError(Exception):
    """The harness's report or records do not follow the protocol."""


@dataclass(frozen=True)
class Unsupported:
    """An output of a type the encoding does not carry (never equal to an expected value)."""

    type_name: str
    detail: str = ""

    def __repr__(self) -> str:
        return f"<unsupported {self.type_name}: {self.detail}>" if self.detail else f"<unsupported {self.type_name}>"


# -- values ------------------------------------------------------------------------------------


def decode_value(tagged: Any, depth: int = 0) -> Any:
    """The Python value of one tagged value (see ``harness``); ``ProtocolError`` if malformed."""
    if depth > MAX_DEPTH + 1:
        raise ProtocolError("value nested too deep")
    if type(tagged) is not list or not tagged or type(tagged[0]) is not str:
        raise ProtocolError(f"malformed value {str(tagged)[:80]}")
    tag, args = tagged[0], tagged[1:]
    try:
        if tag == "N" and not args:
            return None
        if tag == "b" and len(args) == 1 and type(args[0]) is bool:
            return args[0]
        if tag == "i" and len(args) == 1 and type(args[0]) is str and _HEX_INT.fullmatch(args[0]):
            return int(args[0], 16)
        if tag == "f" and len(args) == 1 and type(args[0]) is str:
            return float(args[0])
        if tag == "c" and len(args) == 2 and all(type(a) is str for a in args):
            return complex(float(args[0]), float(args[1]))
        if tag == "s" and len(args) == 1 and type(args[0]) is str:
            return args[0]
        if tag == "y" and len(args) == 1 and type(args[0]) is str:
            return bytes.fromhex(args[0])
        if tag in ("l", "t", "S", "F") and len(args) == 1 and type(args[0]) is list:
            items = [decode_value(item, depth + 1) for item in args[0]]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d" and len(args) == 1 and type(args[0]) is list:
            out = {}
            for pair in args[0]:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("malformed dict item")
                out[decode_value(pair[0], depth + 1)] = decode_value(pair[1], depth + 1)
            return out
        if tag == "u" and len(args) == 2 and all(type(a) is str for a in args):
            return Unsupported(args[0], args[1])
    except (ValueError, TypeError) as e:  # bad float text, unhashable key or set item
        raise ProtocolError(f"malformed value: {e}") from None
    raise ProtocolError(f"malformed value {str(tagged)[:80]}")


def matches(value: Any, expected: Any, abs_tol: float | None = None) -> bool:
    """Whether an output equals an expected JSON value, under the strict rules of this module.

    ``abs_tol`` (an imported benchmark's ``abs(f(x) - y) < eps``): a number, ``int`` or ``float`` but
    never ``bool``, passes when it is strictly within ``abs_tol`` of a numeric ``expected``.
    """
    if abs_tol is not None:
        if type(value) not in (int, float) or type(expected) not in (int, float):
            return False
        try:
            within: bool = abs(value - expected) < abs_tol  # NaN and infinities are never within
            return within
        except OverflowError:  # an int too large for a float is not near any float
            return False
    if expected is None:
        return value is None
    te, tv = type(expected), type(value)
    if te is bool or te is str:
        return tv is te and value == expected
    if te is int:
        return tv is int and value == expected
    if te is float:
        return tv is float and math.isclose(value, expected, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)
    if te is list:
        return (
            (tv is list or tv is tuple)
            and len(value) == len(expected)
            and all(matches(v, e) for v, e in zip(value, expected, strict=True))
        )
    if te is dict:
        return (
            tv is dict
            and all(type(k) is str for k in value)
            and value.keys() == expected.keys()
            and all(matches(value[k], e) for k, e in expected.items())
        )
    return False


def passes(value: Any, test: TestCase) -> bool:
    """Whether a decoded output passes ``test``, under the test's own rule: an imported benchmark's
    assert as its harness judges it (``python_eq``, ``as_bool``, ``abs_tol``), spade's ``matches`` else.

    ``value`` is what ``decode_value`` gave: plain builtins (or ``Unsupported``), never an object of
    the answer's, so no comparison here runs code the answer wrote.
    """
    if isinstance(value, Unsupported):
        return False
    if test.as_bool:
        value = bool(value)
    if test.as_tuple:
        value = _as_tuple(value)
        if value is None:
            return False
    if test.tuple_as_list and type(value) is tuple:
        value = list(value)
    if test.python_eq is not None:
        if python_equal(value, test.python_eq):
            return True
        return test.allclose_atol is not None and _all_close_to_literal(value, test.python_eq, test.allclose_atol)
    return matches(value, test.expected, test.abs_tol)


def python_equal(value: Any, literal: str) -> bool:
    """Python's ``value == <literal>``, as a benchmark's ``assert f(x) == VALUE`` computes it: a tuple is
    not a list, ``3.0`` is ``3``, ``True`` is ``1``, floats are equal only when they are.

    Safe on decoded outputs only (exact builtins): ``==`` on them is the interpreter's own. An
    ``Unsupported`` inside a container equals nothing the literal holds.
    """
    try:
        equal: bool = value == _shared_literal(literal)
    except (ValueError, RecursionError):  # a task file's broken literal passes nothing
        return False
    return equal


SHARED_TEXT_CHARS = 4096
"""Longest literal (or test input) whose parsed value is kept for the next judging of the same test: a
task's tests are judged for every answer, and parsing them again was a fifth of the judge's own CPU."""


def shared_parse(parse: Callable[[str], _Parsed]) -> Callable[[str], _Parsed]:
    """``parse``, one value for every call on the same text (the last 4096 texts of up to
    ``SHARED_TEXT_CHARS``; a longer one is parsed each time): for readers that never change the value."""
    kept = functools.lru_cache(maxsize=4096)(parse)

    def shared(text: str) -> _Parsed:
        return kept(text) if len(text) <= SHARED_TEXT_CHARS else parse(text)

    return shared


_shared_literal = shared_parse(python_literal)
"""``python_literal``, shared: its readers (``==``, ``all_close``) never change the value."""


def _all_close_to_literal(value: Any, literal: str, atol: float) -> bool:
    try:
        expected = _shared_literal(literal)
    except ValueError:  # a task file's broken literal passes nothing
        return False
    return all_close(value, expected, atol)


EVALPLUS_RTOL = 1e-07
"""EvalPlus's ``rtol`` (it sets numpy's ``assert_allclose`` default explicitly)."""
_INT64 = (-(1 << 63), (1 << 63) - 1)


def all_close(value: Any, expected: Any, atol: float) -> bool:
    """EvalPlus's tolerance, for an output that is not ``==`` the expected value (its harness's
    ``unsafe_execute``): the output is of ``expected``'s very type, of its length when a list or tuple,
    and ``numpy.allclose(value, expected, rtol=1e-07, atol=atol)`` holds; where numpy would raise
    (strings, None, dicts, ragged nesting) the output fails, as it does there.

    numpy's rule, computed here without numpy on decoded outputs: both sides are read as arrays of
    numbers (bool, int, float, complex; lists and tuples nest), broadcast together, and every pair must
    have ``|v - e| <= atol + rtol * |e|`` with ``e`` finite, or ``v == e`` (so an infinity matches only
    itself and NaN nothing). ``expected`` is read as floats (complex when it holds one), as numpy
    reads it. An int beyond 64 bits inside a list makes numpy's array one of objects, which it cannot
    compare when it is the expected one's: that fails here too; a lone one is read as a float, as numpy does.
    """
    if type(value) is not type(expected):
        return False
    if type(expected) in (list, tuple) and len(value) != len(expected):
        return False
    got, want = _array(value, wide_ints=True), _array(expected, wide_ints=False)
    if got is None or want is None:
        return False
    shape = _broadcast(got[0], want[0])
    if shape is None:
        return False
    try:
        return all(
            _close(_at(got, index), _at(want, index), atol) for index in itertools.product(*(range(n) for n in shape))
        )
    except (OverflowError, TypeError):  # an int too large for a float
        return False


def _close(v: Any, e: Any, atol: float) -> bool:
    e = e if type(e) is complex else float(e)
    finite = math.isfinite(e.real) and math.isfinite(e.imag) if type(e) is complex else math.isfinite(e)
    return bool((finite and abs(v - e) <= atol + EVALPLUS_RTOL * abs(e)) or v == e)


_Array = tuple[tuple[int, ...], list[Any]]
"""An array read from nested lists and tuples: its shape and its items, flat, in order."""


def _array(value: Any, *, wide_ints: bool) -> _Array | None:
    """``value`` as numpy would read it into an array of numbers; None where it would not compare it:
    an item that is no number, ragged nesting, and (unless ``wide_ints``: numpy subtracts the floats
    from the output's array of objects, but cannot test the expected one's for finiteness) an int
    beyond 64 bits inside a list."""
    if type(value) in (bool, int, float, complex):
        return (), [value]
    if type(value) not in (list, tuple):
        return None
    items = [_array(v, wide_ints=wide_ints) for v in value]
    if any(item is None for item in items) or (not wide_ints and any(type(v) is int and not _fits(v) for v in value)):
        return None
    shapes = {item[0] for item in items if item is not None}
    if len(shapes) > 1:
        return None
    inner = shapes.pop() if shapes else ()
    return (len(value), *inner), [x for item in items if item is not None for x in item[1]]


def _fits(n: int) -> bool:
    return _INT64[0] <= n <= _INT64[1]


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcast of two shapes (aligned on the right; a 1 stretches), or None."""
    out = []
    for x, y in itertools.zip_longest(reversed(a), reversed(b), fillvalue=1):
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _at(array: _Array, index: tuple[int, ...]) -> Any:
    """The item of ``array`` at ``index`` of the broadcast shape."""
    shape, items = array
    flat = 0
    for n, i in zip(shape, index[len(index) - len(shape) :], strict=True):
        flat = flat * n + (0 if n == 1 else i)
    return items[flat]


def _as_tuple(value: Any) -> tuple[Any, ...] | None:
    """``tuple(value)`` for the decoded outputs whose order is the one they had in the answer's
    process (a set's is not: it is rebuilt here); None for anything else (``tuple(5)`` fails too)."""
    return tuple(value) if type(value) in (list, tuple, str, bytes, dict) else None


def json_exact(value: Any) -> bool:
    """Whether ``json.loads(json.dumps(value))`` gives back ``value`` with its types: plain JSON (no tuple,
    set, bytes, non-string key) with finite numbers only (no NaN or infinity). What an ``expected`` value
    may be, and what verl's wrapper can hand a reward function."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(json_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_exact(v) for k, v in value.items())
    return False


def to_json(value: Any) -> Any:
    """The JSON value an output is written as in a task file; ``UnsupportedOutput`` if it has none."""
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        if not math.isfinite(value):
            raise UnsupportedOutput(f"{value!r} has no JSON form")
        return value
    if t is list or t is tuple:
        return [to_json(v) for v in value]
    if t is dict:
        bad = next((k for k in value if type(k) is not str), None)
        if bad is not None:
            raise UnsupportedOutput(f"dict key {bad!r} ({type(bad).__name__}) has no JSON form")
        return {k: to_json(v) for k, v in value.items()}
    if t is Unsupported:
        raise UnsupportedOutput(f"output of unsupported type {value.type_name}")
    raise UnsupportedOutput(f"{t.__name__} output has no JSON form")


def show(value: Any) -> str:
    """The repr of an output for feedback, truncated (an int too long for ``repr`` is shown by size)."""
    try:
        text = repr(value)
    except ValueError:  # Python refuses to print an int of over 4300 digits
        text = (
            f"<an int of {value.bit_length()} bits>"
            if type(value) is int
            else f"<a {type(value).__name__} too long to print>"
        )
    return text if len(text) <= OUTPUT_REPR_CHARS else text[:OUTPUT_REPR_CHARS] + "..."


# -- report and records --------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """What the harness's parent process saw of the child."""

    return_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    results: str
    results_truncated: bool
    timed_out: bool
    cpu_exceeded: bool
    output_limit: bool
    marker: str | None
    cpu_s: float | None = None
    """CPU time the child and what it waited for used (user + system), when the report says."""
    files: dict[str, bytes] = field(default_factory=dict)
    """``exec`` mode: the scratch files the request asked to collect (``harness.collect_files``)."""
    files_error: str | None = None
    """Why they were not collected (larger than the request allowed)."""


_REPORT_FIELDS: dict[str, tuple[type, ...]] = {
    "rc": (int, type(None)),
    "sig": (int, type(None)),
    "out": (str,),
    "err": (str,),
    "out_trunc": (bool,),
    "err_trunc": (bool,),
    "res": (str,),
    "res_trunc": (bool,),
    "timed_out": (bool,),
    "cpu_exceeded": (bool,),
    "output_limit": (bool,),
}


def parse_report(stdout: str, nonce: str) -> Report:
    """The one report line carrying ``nonce``; lines with another nonce are not the report."""
    prefix = nonce + " "
    lines = [line for line in stdout.split("\n") if line.startswith(prefix)]
    if len(lines) != 1:
        raise ProtocolError(f"{len(lines)} report lines, expected 1")
    try:
        data = json.loads(lines[0][len(prefix) :])
    except ValueError as e:
        raise ProtocolError(f"report is not JSON: {e}") from None
    if type(data) is not dict:
        raise ProtocolError("report is not an object")
    if data.get("harness_error") is not None:
        raise ProtocolError(f"harness error: {data['harness_error']}")
    for key, types in _REPORT_FIELDS.items():
        if type(data.get(key)) not in types or key not in data:
            raise ProtocolError(f"report field {key!r} missing or mistyped")
    marker = data.get("marker")
    if marker is not None and type(marker) is not str:
        raise ProtocolError("report field 'marker' mistyped")
    cpu = data.get("cpu")
    cpu_s = float(cpu) if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) and cpu >= 0 else None
    files, files_error = _files(data.get("files"))
    return Report(
        return_code=data["rc"],
        signal=data["sig"],
        stdout=data["out"],
        stderr=data["err"],
        stdout_truncated=data["out_trunc"],
        stderr_truncated=data["err_trunc"],
        results=data["res"],
        results_truncated=data["res_trunc"],
        timed_out=data["timed_out"],
        cpu_exceeded=data["cpu_exceeded"],
        output_limit=data["output_limit"],
        marker=marker,
        cpu_s=cpu_s,
        files=files,
        files_error=files_error,
    )


def _files(raw: Any) -> tuple[dict[str, bytes], str | None]:
    """The report's collected files, decoded (``harness.collect_files``)."""
    if raw is None:
        return {}, None
    if type(raw) is not dict or not all(type(k) is str and type(v) is str for k, v in raw.items()):
        raise ProtocolError("report field 'files' mistyped")
    if "!" in raw:
        return {}, raw["!"]
    try:
        return {name: base64.b64decode(text, validate=True) for name, text in raw.items()}, None
    except ValueError:
        raise ProtocolError("report field 'files' is not base64") from None


@dataclass(frozen=True)
class Output:
    """What one call of the entry point gave: a value (``ok``), an exception, or a timeout."""

    status: Literal["ok", "error", "timeout"]
    value: Any = None
    """The decoded return value (an ``Unsupported`` for types the encoding does not carry)."""
    error: str | None = None
    """``TypeName: message`` of the exception, or why there is no value."""
    duration_ms: float | None = None
    memory: bool = False
    """The call raised MemoryError (the memory limit)."""
    cpu_ms: float | None = None
    """CPU time the call used (tests mode; None where the record does not say: check mode)."""
    timer: Literal["cpu", "blocked", "wall"] | None = None
    """For a timeout, what ended the call: its CPU budget, or the block detector (the program's doing),
    or the wall backstop (a call that blocked, or one the deadline cut while it computed: ``cpu_ms``
    tells them apart). Never shown in records: the error text is the same for all."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Records:
    """The child's results channel, decoded."""

    started: bool = False
    outputs: list[Output] = field(default_factory=list)
    load_error: str | None = None
    memory: bool = False
    done: bool = False
    timeouts: int = 0
    """Test records of kind ``timeout``."""
    stopped: bool = False
    """``max_timeouts`` calls timed out: the harness calls no more (no record may follow)."""


def parse_records(results: str, n: int, *, cut: bool, max_timeouts: int | None = None) -> Records:
    """Decode the results channel strictly: ``<token> start`` first, then ``<token> <payload>`` lines.

    In tests mode (``n`` inputs) records must come one per call, indices 0, 1, ... in order, and
    none after the ``max_timeouts``-th timeout. ``cut`` says the child was stopped (deadline, cap):
    only then may the last line be incomplete.
    """
    rec = Records()
    if not results:
        return rec
    lines = results.split("\n")
    tail = lines.pop()
    if tail and not cut:
        raise ProtocolError("incomplete last record")
    if not lines:
        return rec
    first = lines[0]
    if not first.endswith(" start") or " " in first[: -len(" start")]:
        raise ProtocolError("results do not start with the start line")
    prefix = first[: -len("start")]
    rec.started = True
    for line in lines[1:]:
        if not line.startswith(prefix):
            raise ProtocolError("a results line without the run's token")
        payload = line[len(prefix) :]
        if rec.done or rec.load_error is not None or rec.stopped:
            raise ProtocolError("results after the last record")
        if payload == "mem":
            rec.memory = True
        elif payload == "done":
            rec.done = True
        else:
            _parse_record(payload, n, rec)
            if max_timeouts is not None and rec.timeouts >= max_timeouts:
                rec.stopped = True
    return rec


_DECODER: Any = json.JSONDecoder()  # what make_scanner reads off it (typeshed types it as a scanner)
_SCAN: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(_DECODER)
"""The C scanner behind ``json.loads``, called directly: a record is one JSON value and nothing else,
and a run has one record per test (``json.loads``'s own steps around it cost as much as the scan)."""


def _parse_record(payload: str, n: int, rec: Records) -> None:
    try:
        data, end = _SCAN(payload, 0)
    except StopIteration:
        raise ProtocolError("record is not JSON") from None
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"record is not JSON: {str(e)[:80]}") from None
    if end != len(payload):
        raise ProtocolError("record is not JSON: extra data after the record")
    if type(data) is not dict:
        raise ProtocolError("record is not an object")
    if set(data) == {"load_error"} and type(data["load_error"]) is str:
        if rec.outputs:
            raise ProtocolError("load error after test records")
        rec.load_error = data["load_error"]
        return
    i, raw_ms, ok = data.get("i"), data.get("ms"), data.get("ok")
    if type(i) is not int or i != len(rec.outputs):
        raise ProtocolError(f"record index {i!r}, expected {len(rec.outputs)}")
    if i >= n:
        raise ProtocolError(f"record index {i} beyond the {n} inputs")
    if not isinstance(raw_ms, (int, float)) or isinstance(raw_ms, bool) or type(ok) is not bool:
        raise ProtocolError("record fields mistyped")
    ms = float(raw_ms)
    raw_cpu = data.pop("c", None)  # optional: the call's CPU time (tests mode)
    if raw_cpu is not None and (not isinstance(raw_cpu, (int, float)) or isinstance(raw_cpu, bool)):
        raise ProtocolError("record fields mistyped")
    cpu_ms = None if raw_cpu is None else float(raw_cpu)
    if ok:
        if set(data) != {"i", "ms", "ok", "v"}:
            raise ProtocolError("unexpected record fields")
        rec.outputs.append(Output("ok", decode_value(data["v"]), None, ms, cpu_ms=cpu_ms))
        return
    by = data.pop("by", None)  # optional: which timer ended a timed-out call
    kind, error = data.get("kind"), data.get("error")
    if set(data) != {"i", "ms", "ok", "kind", "error"} or type(error) is not str:
        raise ProtocolError("unexpected record fields")
    if by is not None and (kind != "timeout" or by not in ("cpu", "blocked", "wall")):
        raise ProtocolError("unexpected record fields")
    if kind == "timeout":
        rec.outputs.append(Output("timeout", None, error, ms, cpu_ms=cpu_ms, timer=by))
        rec.timeouts += 1
    elif kind in ("exception", "memory"):
        rec.outputs.append(Output("error", None, error, ms, memory=kind == "memory", cpu_ms=cpu_ms))
        rec.memory = rec.memory or kind == "memory"
    else:
        raise ProtocolError(f"unknown record kind {kind!r}")


# -- putting it together -----------------------------------------------------------------------


@dataclass
class Interpretation:
    """An execution as the runner returns it: the result (no verdicts yet) and the outputs."""

    result: ExecutionResult
    outputs: list[Output] = field(default_factory=list)
    load_error: str | None = None
    check_passed: bool = False
    stopped: bool = False
    """Tests mode: the harness stopped after ``max_timeouts`` timed-out calls (see ``Records``)."""
    cpu_s: float | None = None
    """CPU time the program's process used (``main`` mode's time limits), when the report says."""
    files: dict[str, bytes] = field(default_factory=dict)
    """``exec`` mode: the files collected from the scratch directory after the run."""
    files_error: str | None = None


def _note(stderr: str, message: str) -> str:
    sep = "" if not stderr or stderr.endswith("\n") else "\n"
    return f"{stderr}{sep}{NOTE}{message}\n"


def interpret(
    raw: ExecutionResult,
    nonce: str,
    mode: Mode,
    n: int = 0,
    marker: str | None = None,
    max_timeouts: int | None = None,
) -> Interpretation:
    """Turn the backend's result of a harness run into the program's ``ExecutionResult``.

    ``raw.stdout`` holds the harness's report; the program's own streams are inside it. ``n`` and
    ``max_timeouts`` are what the tests-mode request asked for (inputs, timeouts before stopping).
    """
    duration_ms = raw.duration_ms
    try:
        report = parse_report(raw.stdout, nonce)
    except ProtocolError as e:
        if raw.status == "timeout":
            status: ExecStatus = "timeout"
            why = "the sandbox ended the run at its time limit before the harness reported"
        elif raw.status == "memory":
            status = "memory"
            why = "the harness itself ran out of memory (is the memory limit too small?)"
        elif raw.status == "output_limit":
            status = "error"
            why = "harness protocol violated: the harness wrote more than its report may hold"
        elif raw.signal is not None:
            status = "killed"
            why = f"the harness was killed by signal {raw.signal} before it reported (did the program kill its parent?)"
        else:
            status = "error"
            why = f"harness protocol violated: {e}"
        stderr = _note(raw.stderr[-4000:], why)
        return Interpretation(ExecutionResult(status=status, signal=raw.signal, stderr=stderr, duration_ms=duration_ms))
    cut = report.timed_out or report.output_limit or report.signal is not None
    stderr = report.stderr
    try:
        records = parse_records(report.results, n, cut=cut or report.results_truncated, max_timeouts=max_timeouts)
        if mode in ("main", "exec") and (records.outputs or records.load_error is not None):
            raise ProtocolError("test records in main mode")
        if mode == "tests" and records.done:
            raise ProtocolError("done line in tests mode")
        if mode == "check" and records.done and len(records.outputs) < n:
            raise ProtocolError("done line before every test's record")
    except ProtocolError as e:
        result = ExecutionResult(
            status="error",
            return_code=report.return_code,
            signal=report.signal,
            stdout=report.stdout,
            stderr=_note(stderr, f"harness protocol violated: {e}"),
            stdout_truncated=report.stdout_truncated,
            stderr_truncated=report.stderr_truncated,
            duration_ms=duration_ms,
        )
        return Interpretation(result)

    status, why = _status(report, records, mode, n, marker)
    if raw.status == "memory" and status == "killed" and report.signal == SIGKILL:
        # the backend saw its memory cgroup's OOM killer fire during the run: that was the kill
        status, why = "memory", "memory limit exceeded; the program was killed"
    if why:
        stderr = _note(stderr, why)
    result = ExecutionResult(
        status=status,
        return_code=report.return_code,
        signal=report.signal,
        stdout=report.stdout,
        stderr=stderr,
        stdout_truncated=report.stdout_truncated,
        stderr_truncated=report.stderr_truncated,
        duration_ms=duration_ms,
    )
    check_passed = mode == "check" and marker is not None and report.marker == marker and records.done
    # check mode stops before its script too, so a stop after the last test still left something unrun
    stopped = records.stopped and (len(records.outputs) < n or mode == "check")
    return Interpretation(
        result, records.outputs, records.load_error, check_passed, stopped, report.cpu_s, report.files,
        report.files_error,
    )  # fmt: skip


def _status(report: Report, records: Records, mode: Mode, n: int, marker: str | None) -> tuple[ExecStatus, str]:
    """The program-level status and, for abnormal endings, a note for stderr."""
    sig = report.signal
    if report.timed_out or report.cpu_exceeded or sig == SIGXCPU:
        what = "CPU time" if report.cpu_exceeded or sig == SIGXCPU else "time"
        return "timeout", f"{what} limit exceeded; the program was stopped"
    if report.output_limit:
        return "output_limit", "output limit exceeded; the program was stopped and its output truncated"
    if records.memory:
        return "memory", "memory limit exceeded (MemoryError)"
    if sig is not None:
        if sig in CRASH_SIGNALS:
            return "error", f"the program crashed (signal {sig})"
        return "killed", f"the program was killed by signal {sig}"
    if mode == "tests":
        if records.load_error is not None:
            return "error", ""
        if records.stopped and len(records.outputs) < n and report.return_code == 0:
            return "ok", f"{records.timeouts} tests timed out; the remaining {n - len(records.outputs)} were not run"
        if len(records.outputs) < n:
            return "error", (
                f"the program ended (exit code {report.return_code}) after {len(records.outputs)} of {n} tests"
            )
        return ("ok", "") if report.return_code == 0 else ("error", "")
    if mode == "check":
        if records.load_error is not None:
            return "error", ""
        if marker is not None and report.marker == marker and records.done:
            return "ok", ""
        if records.stopped and report.return_code == 0:
            return "ok", f"{records.timeouts} tests timed out; the rest and the check were not run"
        if report.return_code == 0:
            return "error", "the program ended (exit code 0) before the check completed"
        return "error", ""
    return ("ok", "") if report.return_code == 0 else ("error", "")
