"""An imported benchmark's asserts as ordinary tests, judged outside the sandbox like generated ones.

HumanEval-style benchmarks judge an answer with a ``check(candidate)`` function of asserts. Run in
the answer's own process, as OpenAI's harness does, those asserts can be reached by the answer: an
object whose ``__eq__`` always says yes, a trace hook that swaps ``check``'s code, a hunt through
``gc`` for the harness's reporter. So at import each assert of a known shape becomes a ``TestCase``
whose output is encoded inside the sandbox and compared outside it (``sandbox/verdict.py``):

* ``assert candidate(ARGS) == VALUE`` (either side), ``tuple(candidate(ARGS)) == tuple(VALUE)``
  (or ``list``): ``python_eq``;
* ``assert candidate(ARGS) is True`` / ``is False`` / ``is None``;
* ``assert abs(candidate(ARGS) - VALUE) < EPS`` (also ``math.fabs``, either order of the difference):
  ``abs_tol``;
* ``assert candidate(ARGS)`` / ``assert not candidate(ARGS)``: ``as_bool``;
* any of these inside ``for x in range(CONSTANTS):``, one test per turn (``x`` a constant in each);

where ARGS and VALUE are constant expressions (literals, arithmetic on them, ``tuple``/``list`` of
them), folded here under size bounds; nothing of the benchmark runs on this machine. ``assert True``,
a bare name or a docstring is dropped. What is left (loops, random inputs, helper calls, local
variables) stays a ``check`` script, made self-contained: the prompt's own helpers (imports and
functions other than the entry point) come first, so the check never calls a helper the answer
defined. That script runs in a process the answer cannot reach (see ``sandbox/harness.py``).
Benchmarks whose asserts call the function by its name (MBPP's ``test_list``) are first written as
such a check (``asserts_as_check``).

Each test is compared as the benchmark's own harness compares (``verdict.passes``), on the output
decoded outside the sandbox, never on an object of the answer's:

* ``== VALUE`` by Python's ``==`` between the output and ``VALUE`` as written, kept as a literal
  (``TestCase.python_eq``): a list is not the tuple ``(4, 6)``, ``21.0`` equals ``21``, ``True``
  equals ``1``, floats are equal only when they are. ``tuple(candidate(ARGS)) == tuple(VALUE)``
  (or ``list``) turns the output into a tuple first (``as_tuple``); written against the other
  sequence type it never holds, and stays in the check, which runs it as written;
* ``is True`` / ``is False`` / ``is None`` by ``verdict.matches``, which is exactly identity on these;
* ``abs(...) < EPS`` within the assert's own tolerance, and nothing else has one;
* ``assert candidate(ARGS)`` by the output's truth value.

The one deliberate difference: where the harness would call an ``__eq__`` of the answer's own (an
object of its class, a subclass of a builtin), the output has no faithful encoding and fails.
Generated tasks carry none of these rules: they keep ``verdict.matches`` (strict types, a relative
``1e-9`` on floats, a tuple equals a list).
"""

from __future__ import annotations

import ast
import copy
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..sandbox.runner import parse_input
from ..sandbox.verdict import UnsupportedOutput, to_json
from ..types import TestCase
from . import pyast

__all__ = ["AssertScript", "AssertsError", "SplitCheck", "asserts_as_check", "docstring_examples", "split_check"]

MAX_ITEMS = 100_000
"""Longest string, list or tuple a folded constant may be."""
MAX_INT_BITS = 4096
"""Largest folded integer, in bits."""


@dataclass(frozen=True)
class SplitCheck:
    """A benchmark's check split into tests and what stays a script."""

    tests: list[TestCase]
    """One per converted assert, in the order they appear."""
    residue: str | None
    """The check script without the converted asserts, with the prompt's helpers first; None when
    nothing is left to run."""


class _NotConstant(Exception):
    pass


_DROP = object()
"""A statement that checks nothing (``assert True``, a bare name, a docstring)."""


def split_check(check_source: str, entry_point: str, prompt: str = "") -> SplitCheck:
    """Split a benchmark's ``check(candidate)`` script into tests and a residual script.

    A script that does not parse, has no plain ``check(candidate)`` function, or rebinds its
    parameter is kept whole (as the residue, with the prompt's helpers).
    """
    try:
        module = ast.parse(check_source)
    except (SyntaxError, ValueError):
        return SplitCheck([], _self_contained(prompt, entry_point, check_source))
    check = _check_function(module)
    if check is None:
        return SplitCheck([], _self_contained(prompt, entry_point, check_source))
    param = check.args.args[0].arg
    tests: list[TestCase] = []
    kept: list[ast.stmt] = []
    for stmt in check.body:
        unrolled = _unrolled(stmt)
        converted_all = [_convert(s, param) for s in unrolled] if unrolled is not None else [_convert(stmt, param)]
        if any(c is None for c in converted_all):
            kept.append(stmt)  # a loop is kept whole unless every assert of every turn converts
        else:
            tests.extend(c for c in converted_all if isinstance(c, TestCase))
    if not kept:
        return SplitCheck(tests, None)
    check.body = kept
    return SplitCheck(tests, _self_contained(prompt, entry_point, ast.unparse(module)))


def _check_function(module: ast.Module) -> ast.FunctionDef | None:
    """The module's ``def check(candidate)``, when it is plain enough to convert asserts of."""
    found = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(found) != 1:
        return None
    check = found[0]
    args = check.args
    if check.decorator_list or len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    param = args.args[0].arg
    for node in ast.walk(check):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return None
        if isinstance(node, ast.Name) and node.id == param and not isinstance(node.ctx, ast.Load):
            return None  # the parameter is rebound: a later call may not be the candidate
        if isinstance(node, ast.arg) and node is not args.args[0] and node.arg == param:
            return None  # an inner function's parameter shadows it
    return check


def _self_contained(prompt: str, entry_point: str, script: str) -> str:
    """``script`` after the prompt's helpers: its imports, functions and constants, not the entry
    point's own stub (the check's ``candidate``, and the entry point's name, are the answer)."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return script
    tree.body = [
        n
        for n in tree.body
        if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == entry_point)
    ]
    helpers = ast.unparse(tree).strip()
    return f"{helpers}\n\n\n{script.strip()}\n" if helpers else f"{script.strip()}\n"


MAX_UNROLLED = 100
"""Most turns of a ``for x in range(...)`` loop of asserts turned into one test per turn."""


def _unrolled(stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statements of ``for NAME in range(CONSTANTS): ASSERTS`` turn by turn, ``NAME`` replaced by
    its value in each; None for any other statement, or a loop that is not that plain."""
    if not (
        isinstance(stmt, ast.For)
        and not stmt.orelse
        and isinstance(stmt.target, ast.Name)
        and isinstance(stmt.iter, ast.Call)
        and isinstance(stmt.iter.func, ast.Name)
        and stmt.iter.func.id == "range"
        and 1 <= len(stmt.iter.args) <= 3
        and not stmt.iter.keywords
        and all(isinstance(s, (ast.Assert, ast.Expr)) for s in stmt.body)
    ):
        return None
    try:
        bounds = [_fold(a) for a in stmt.iter.args]
    except _NotConstant:
        return None
    if any(type(b) is not int for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
        return None
    turns = range(*bounds)
    if len(turns) > MAX_UNROLLED:
        return None
    name = stmt.target.id
    return [_Substitute(name, value).visit(copy.deepcopy(s)) for value in turns for s in stmt.body]


class _Substitute(ast.NodeTransformer):
    """Every read of one name, as a constant."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Constant(self.value), node)
        return node


def _convert(stmt: ast.stmt, param: str) -> TestCase | object | None:
    """The test a statement amounts to, ``_DROP`` for one that checks nothing, None to keep it."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Constant, ast.Name)):
        return _DROP
    if not isinstance(stmt, ast.Assert):
        return None
    test = stmt.test
    try:
        if isinstance(test, ast.Constant):
            return _DROP if test.value else None
        if _is_call(test, param):
            return _case(test, param, True, as_bool=True)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_call(test.operand, param):
            return _case(test.operand, param, False, as_bool=True)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return _compare(test.left, test.ops[0], test.comparators[0], param)
    except (_NotConstant, UnsupportedOutput):
        return None
    return None


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr, param: str) -> TestCase | None:
    if isinstance(op, ast.Is):
        for call, other in ((left, right), (right, left)):
            if _is_call(call, param):
                value = _fold(other)
                if not (value is None or type(value) is bool):
                    return None  # `is` on other values is identity, not equality
                return _case(call, param, value)  # `matches` is strict on these: exactly `is`
        return None
    if isinstance(op, ast.Eq):
        for call, other in ((left, right), (right, left)):
            found = _unwrapped(call, param)
            if found is None:
                continue
            inner, wrapper = found
            value = _fold(other)
            if wrapper is not None and type(value) is not wrapper:
                return None  # `tuple(f(x)) == [...]` never holds: the check judges it as written
            if wrapper is not None:
                value = tuple(value)  # `list(out) == list(V)` exactly when `tuple(out) == tuple(V)`
            return _case(inner, param, to_json(value), python_eq=_literal(value), as_tuple=wrapper is not None)
        return None
    if isinstance(op, ast.Lt):
        diff = _abs_of(left)
        if diff is None or not isinstance(diff.op, ast.Sub):
            return None
        tol = _fold(right)
        if type(tol) not in (int, float) or not (0 < tol < math.inf):
            return None
        for call, other in ((diff.left, diff.right), (diff.right, diff.left)):
            if _is_call(call, param):
                value = _fold(other)
                if type(value) not in (int, float) or not math.isfinite(value):
                    return None
                return _case(call, param, value, abs_tol=float(tol))
    return None


def _is_call(node: ast.expr, param: str) -> bool:
    """``candidate(...)`` with positional arguments only."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == param
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
    )


def _unwrapped(node: ast.expr, param: str) -> tuple[ast.expr, type[tuple[Any, ...]] | type[list[Any]] | None] | None:
    """The candidate call itself, or inside ``tuple(...)``/``list(...)``, with that wrapper's type."""
    if _is_call(node, param):
        return node, None
    inner = _sequence_of(node)
    if inner is None or not _is_call(inner, param):
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return inner, tuple if node.func.id == "tuple" else list


def _literal(value: Any) -> str:
    """``value`` as the Python literal a test's ``python_eq`` keeps; ``_NotConstant`` unless it reads
    back as exactly this value."""
    text = repr(value)
    try:
        same = repr(pyast.literal_eval(text)) == text
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        same = False
    if not same:
        raise _NotConstant(text[:60])
    return text


def _sequence_of(node: ast.expr) -> ast.expr | None:
    """``X`` of ``tuple(X)`` or ``list(X)``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("tuple", "list")
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def _abs_of(node: ast.expr) -> ast.BinOp | None:
    """``X`` of ``abs(X)`` or ``math.fabs(X)``, when it is a binary operation."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    func = node.func
    named = isinstance(func, ast.Name) and func.id == "abs"
    fabs = (
        isinstance(func, ast.Attribute)
        and func.attr == "fabs"
        and isinstance(func.value, ast.Name)
        and func.value.id == "math"
    )
    arg = node.args[0]
    return arg if (named or fabs) and isinstance(arg, ast.BinOp) else None


def _case(
    call: ast.expr,
    param: str,
    expected: Any,
    *,
    abs_tol: float | None = None,
    as_bool: bool = False,
    python_eq: str | None = None,
    as_tuple: bool = False,
) -> TestCase:
    assert isinstance(call, ast.Call)
    args = tuple(_fold(a) for a in call.args)
    text = repr(args)
    parsed = parse_input(text)
    if isinstance(parsed, str) or repr(parsed) != text:  # the input must read back as exactly these arguments
        raise _NotConstant(text[:60])
    return TestCase(
        input=text, expected=expected, abs_tol=abs_tol, as_bool=as_bool, python_eq=python_eq, as_tuple=as_tuple
    )


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CONSTANT_TYPES = (int, float, complex, str, bytes, bool, type(None))


def _fold(node: ast.expr) -> Any:
    """The value of a constant expression: literals, ``+ - * / // % **`` and unary signs on them,
    containers of them, ``tuple``/``list`` of one, ``str`` of a scalar; ``_NotConstant`` for
    anything else or too large."""
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, _CONSTANT_TYPES):
            raise _NotConstant("constant")
        return _bounded(node.value)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_fold(e) for e in node.elts]
        try:
            return _bounded({ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items))
        except TypeError:  # an unhashable set item
            raise _NotConstant("set") from None
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotConstant("dict unpacking")
        try:
            return _bounded({_fold(k): _fold(v) for k, v in zip(node.keys, node.values, strict=True)})  # type: ignore[arg-type]
        except TypeError:
            raise _NotConstant("dict key") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _fold(node.operand)
        if type(value) not in (int, float, complex):
            raise _NotConstant("sign")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        a, b = _fold(node.left), _fold(node.right)
        if isinstance(node.op, ast.Pow) and not _small_power(a, b):
            raise _NotConstant("power")
        if isinstance(node.op, ast.Mult) and not _small_repeat(a, b):
            raise _NotConstant("repeat")
        if isinstance(node.op, ast.Mod) and isinstance(a, (str, bytes)):
            raise _NotConstant("formatting")
        try:
            return _bounded(_BINARY[type(node.op)](a, b))
        except (ArithmeticError, TypeError, ValueError):
            raise _NotConstant("arithmetic") from None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
        and not node.keywords
    ):
        value = _fold(node.args[0])
        if type(value) not in (int, float, bool, str, type(None)):
            raise _NotConstant("str")
        return str(value)
    inner = _sequence_of(node)
    if inner is not None:
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        value = _fold(inner)
        if type(value) not in (tuple, list, str):
            raise _NotConstant("conversion")
        return tuple(value) if node.func.id == "tuple" else list(value)
    raise _NotConstant(type(node).__name__)


def _small_power(base: Any, exp: Any) -> bool:
    numeric = (int, float)
    return type(base) in numeric and type(exp) in numeric and abs(exp) <= 64 and abs(base) <= 1 << 64


def _small_repeat(a: Any, b: Any) -> bool:
    """``a * b`` stays within the bounds (a sequence repeated, or numbers)."""
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, bytes, list, tuple)):
            return type(n) is int and len(seq) * max(n, 0) <= MAX_ITEMS
    return True


def _bounded(value: Any) -> Any:
    if type(value) is int and value.bit_length() > MAX_INT_BITS:
        raise _NotConstant("int too large")
    if isinstance(value, (str, bytes, list, tuple, set, dict)) and len(value) > MAX_ITEMS:
        raise _NotConstant("too long")
    return value


# -- a prompt's doctest examples ------------------------------------------------------------------


def docstring_examples(prompt: str, entry_point: str) -> list[TestCase]:
    """The doctest examples of a prompt that call ``entry_point`` with literal arguments and show a
    literal result on the next line (``>>> f(1, [2])`` then ``3``), as tests (input and expected).

    Anything else is skipped: a call of another function, keyword or computed arguments, a result
    spread over several lines, a value with no JSON form. These are examples, not verdicts: some are
    wrong (HumanEval/47's docstring says ``15.0`` where its canonical solution returns ``8.0``).
    """
    from ..sandbox.verdict import UnsupportedOutput, to_json

    lines = prompt.splitlines()
    examples: list[TestCase] = []
    for i, line in enumerate(lines[:-1]):
        text = line.strip()
        if not text.startswith(">>> "):
            continue
        shown = lines[i + 1].strip()
        if not shown or shown.startswith(">>>") or (i + 2 < len(lines) and _continues(lines[i + 2])):
            continue
        try:
            call = ast.parse(text[4:], mode="eval").body
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == entry_point):
                continue
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
                continue
            args = tuple(ast.literal_eval(a) for a in call.args)
            expected = to_json(ast.literal_eval(shown))
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, UnsupportedOutput):
            continue
        inputs = ast.unparse(ast.Tuple(elts=call.args, ctx=ast.Load()))
        inputs = inputs if inputs.startswith("(") else f"({inputs})"  # unparse may leave a tuple bare
        if ast.literal_eval(inputs) != args:  # the literal must read back as these arguments
            continue
        examples.append(TestCase(input=inputs, expected=expected))
    return examples


def _continues(line: str) -> bool:
    """Whether a line after an example's result is more of that result (not blank, prose, or the next example)."""
    text = line.strip()
    return bool(text) and not text.startswith(">>>") and not text.startswith('"""') and line.startswith(" " * 8)


# -- bare asserts (MBPP's test_list) ----------------------------------------------------------------


class AssertsError(ValueError):
    """A benchmark's code or asserts that cannot be read; ``field`` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class AssertScript:
    """A benchmark's bare asserts (MBPP's ``test_list``), which call the function by its name, as a
    ``check(candidate)`` script ``split_check`` takes."""

    entry_point: str
    """The first function the asserts call that the reference code defines."""
    check_source: str
    """The reference's imports, the setup code, then ``def check(candidate):`` with the asserts, each
    call of the entry point a call of ``candidate``."""
    answer_names: list[str]
    """Other names the asserts read that only the answer's own code would define (a class, a helper, a
    constant): the benchmark's harness finds them in the answer's namespace; a check run apart from
    the answer cannot."""


def asserts_as_check(asserts: list[str], code: str, setup: str = "") -> AssertScript:
    """``asserts`` (each a line of Python) as a ``check(candidate)`` script for the function of
    ``code`` they call; ``AssertsError`` naming the field that does not parse, or ``test_list`` when no
    assert calls a function ``code`` defines.

    The check gets the reference's top-level imports of the names the asserts read (an assert's
    ``math.isclose``): MBPP's harness runs the asserts in the answer's namespace, where the answer's
    own imports would be.
    """
    code_tree = _parsed(code, "code")
    setup_tree = _parsed(setup, "test_setup_code")
    assert_trees = [_parsed(text, f"test_list[{i}]") for i, text in enumerate(asserts)]
    functions = {n.name for n in code_tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    entry_point = next((name for tree in assert_trees for name in _called_names(tree) if name in functions), None)
    if entry_point is None:
        raise AssertsError("test_list", "calls no function that code defines")
    read = {n.id for tree in assert_trees for n in ast.walk(tree) if isinstance(n, ast.Name)}
    imports = [n for n in code_tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and _bound_names([n]) & read]
    param = "candidate" if "candidate" not in read else "candidate_"
    known = _bound_names([*imports, *setup_tree.body]) | {entry_point}
    answer_names = read & (_bound_names(code_tree.body) - known)
    body = [_Rename(entry_point, param).visit(s) for tree in assert_trees for s in tree.body]
    check = ast.FunctionDef(
        name="check",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(param)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body or [ast.Pass()],
        decorator_list=[],
    )
    module = ast.Module(body=[*imports, *setup_tree.body, check], type_ignores=[])
    source = ast.unparse(ast.fix_missing_locations(module)) + "\n"
    return AssertScript(entry_point, source, sorted(answer_names))


def _parsed(text: str, field: str) -> ast.Module:
    try:
        return pyast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise AssertsError(field, f"not Python: {type(e).__name__}: {str(e)[:80]}") from None


def _called_names(tree: ast.AST) -> list[str]:
    """The names of the functions called, outermost calls first (``f(g(x))``: ``f``, then ``g``)."""
    return [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    """The names top-level statements bind: functions, classes, assignments, imports."""
    names: set[str] = set()
    for stmt in statements:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
                targets = [stmt.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


class _Rename(ast.NodeTransformer):
    """Every use of one name, as another (the entry point's, as the check's parameter)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id == self.old:
            return ast.copy_location(ast.Name(self.new, node.ctx), node)
        return node
