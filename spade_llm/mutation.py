"""Automatic mutants of a reference, and the probe inputs that tell a real survivor from an equivalent one.

Pure: nothing here runs code. Validation's ``weak_tests`` gate (``validation.py``) runs every mutant
on the task's tests in one sandbox execution through :func:`dispatcher_source`, and a mutant that
every test accepts *survives*: the tests cannot tell it from the reference. A survivor that agrees
with the reference on the probe inputs (:func:`probe_inputs`: the tests' inputs, and each with one
integer moved by one) is counted as equivalent and ignored, since no test could kill it cheaply.

One change per mutant (the classic mutation-testing operators, kept to those a weak test suite
most often misses): a relational operator swapped, an arithmetic operator swapped, an integer
literal moved by one (a literal, never a variable), ``and``/``or`` swapped, a ``not`` dropped, a
returned value replaced by a simple constant.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import pyast

MAX_MUTANTS = 40
"""Mutants run per task by default: enough to cover the usual sites of a task-sized function,
few enough to keep the gate's execution short. Chosen by a stable key when there are more."""
MAX_PROBES = 160
"""Probe inputs per task at most (the tests' inputs always included)."""

_RELATIONAL: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq),
    ast.LtE: (ast.Lt, ast.GtE, ast.Gt, ast.Eq, ast.NotEq),
    ast.Gt: (ast.GtE, ast.Lt, ast.LtE, ast.Eq, ast.NotEq),
    ast.GtE: (ast.Gt, ast.LtE, ast.Lt, ast.Eq, ast.NotEq),
    ast.Eq: (ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE),
    ast.NotEq: (ast.Eq, ast.Lt, ast.Gt, ast.LtE, ast.GtE),
}
"""Each relational operator and the ones it is swapped for, closest (the off-by-one boundary) first."""
_ARITHMETIC: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub, ast.Mult),
    ast.Sub: (ast.Add, ast.FloorDiv),
    ast.Mult: (ast.FloorDiv, ast.Add),
    ast.FloorDiv: (ast.Mult, ast.Mod),
    ast.Mod: (ast.FloorDiv, ast.Mult),
}
_CONSTANTS = ("None", "0", "[]", "''")
"""What a ``return`` is replaced with (a constant return already is one and is left alone)."""


@dataclass(frozen=True)
class Mutant:
    """One mutated copy of a reference: its source, and the change as a short diff for people."""

    source: str
    operator: str
    """``relational``, ``arithmetic``, ``literal``, ``boolean``, ``not``, ``constant_return``."""
    diff: str
    """``line N:`` then ``-`` the original line, ``+`` the mutated one."""
    line: int = 0
    """The line of the reference the change is on."""
    in_while: bool = False
    """The change is inside a ``while`` loop (its condition or body): the mutant may never stop."""


@dataclass(frozen=True)
class _Site:
    index: int
    """The node's position in ``ast.walk`` order of the parsed reference."""
    operator: str
    choice: Any


def mutants(code: str, max_mutants: int = MAX_MUTANTS, key: str = "") -> list[Mutant]:
    """Up to ``max_mutants`` distinct one-change mutants of ``code`` (no mutant equals the reference).

    When there are more sites than that, a spread chosen by ``key`` (the task's own text) is kept,
    so the same task always gets the same mutants. Code that does not parse has none.

    Each mutant is the reference's text with one node's source replaced (an expression in
    parentheses, so precedence holds): no copy of the tree, and only the changed line differs.
    """
    try:
        tree = pyast.parse(code)
    except (SyntaxError, ValueError):
        return []
    nodes = list(ast.walk(tree))
    bare_ok = _bare_ok(nodes)
    in_while = {id(child) for n in nodes if isinstance(n, ast.While) for child in ast.walk(n)}
    sites = list(_sites(nodes))
    if len(sites) > max_mutants:
        sites = sorted(sites, key=lambda s: _stable(key, s.index, s.operator, repr(s.choice)))[: 2 * max_mutants]
    encoded = code.encode("utf-8", "surrogatepass")
    line_starts = [0]
    for line in encoded.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    out: list[Mutant] = []
    seen: set[bytes] = set()
    for site in sites:
        if len(out) >= max_mutants:
            break
        node = nodes[site.index]
        span = _span(node, line_starts)
        if span is None:
            continue
        replacement = _replacement(node, site, id(node) in bare_ok)
        if replacement is None:
            continue
        start, end = span
        source = encoded[:start] + replacement.encode("utf-8", "surrogatepass") + encoded[end:]
        if source in seen or source == encoded:
            continue
        seen.add(source)
        text = source.decode("utf-8", "surrogatepass")
        try:
            compile(text, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        out.append(Mutant(text, site.operator, _diff(code, text), getattr(node, "lineno", 0), id(node) in in_while))
    return out


def _span(node: ast.AST, line_starts: list[int]) -> tuple[int, int] | None:
    """Byte offsets of ``node``'s source in the UTF-8 text (the AST's columns are byte offsets)."""
    lineno, end_lineno = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if lineno is None or end_lineno is None or col is None or end_col is None or end_lineno >= len(line_starts):
        return None
    return line_starts[lineno - 1] + col, line_starts[end_lineno - 1] + end_col


_NO_PARENS_UNDER = (ast.stmt, ast.comprehension, ast.keyword, ast.Call, ast.List, ast.Tuple, ast.Set, ast.Subscript)
"""Parents under which an expression needs no parentheses of its own (a call's function and a
subscript's value aside, which ``_bare_ok`` leaves out)."""


def _bare_ok(nodes: list[ast.AST]) -> set[int]:
    """Nodes whose replacement may go in without parentheses: precedence cannot change there."""
    bare: set[int] = set()
    for parent in nodes:
        if not isinstance(parent, _NO_PARENS_UNDER):
            continue
        for child in ast.iter_child_nodes(parent):
            if isinstance(parent, ast.Call) and child is parent.func:
                continue
            if isinstance(parent, ast.Subscript) and child is parent.value:
                continue
            bare.add(id(child))
    return bare


def _replacement(node: ast.AST, site: _Site, bare_ok: bool) -> str | None:
    """The changed node's source; the tree is changed only for the moment it takes to unparse it."""
    saved_class, saved = node.__class__, dict(node.__dict__)
    try:
        _apply(node, site)
        text = ast.unparse(node)
    except Exception:  # a node unparse cannot show: no mutant here
        return None
    finally:
        node.__class__ = saved_class
        node.__dict__.clear()
        node.__dict__.update(saved)
    if bare_ok or isinstance(node, ast.stmt) or (isinstance(node, ast.Constant) and not text.startswith("-")):
        return text
    return f"({text})"


def _stable(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _sites(nodes: list[ast.AST]) -> Iterator[_Site]:
    """Every place one operator applies, in ``ast.walk`` order. Only code inside functions is mutated:
    a module-level constant table is data, and a changed one is rarely a behaviour a test should pin."""
    inside: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and id(node) not in inside:
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    for index, node in enumerate(nodes):
        if id(node) not in inside:
            continue
        if isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                for cmp in _RELATIONAL.get(type(op), ()):
                    yield _Site(index, "relational", (position, cmp))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            for arith in _ARITHMETIC.get(type(node.op), ()):
                yield _Site(index, "arithmetic", arith)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield _Site(index, "literal", 1)
            yield _Site(index, "literal", -1)
        elif isinstance(node, ast.BoolOp):
            yield _Site(index, "boolean", ast.Or if isinstance(node.op, ast.And) else ast.And)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield _Site(index, "not", None)
        elif isinstance(node, ast.Return) and node.value is not None and not isinstance(node.value, ast.Constant):
            for constant in _CONSTANTS:
                yield _Site(index, "constant_return", constant)


def _apply(node: ast.AST, site: _Site) -> None:
    """Change ``node`` in place as ``site`` says (``_replacement`` restores it)."""
    if site.operator == "relational":
        assert isinstance(node, ast.Compare)
        position, new = site.choice
        node.ops = [*node.ops[:position], new(), *node.ops[position + 1 :]]
    elif site.operator == "arithmetic":
        assert isinstance(node, (ast.BinOp, ast.AugAssign))
        node.op = site.choice()
    elif site.operator == "literal":
        assert isinstance(node, ast.Constant)
        node.value = node.value + site.choice
    elif site.operator == "boolean":
        assert isinstance(node, ast.BoolOp)
        node.op = site.choice()
    elif site.operator == "not":
        assert isinstance(node, ast.UnaryOp)
        # the operand takes the UnaryOp's place: swap the node's class and fields in place
        operand = node.operand
        node.__class__ = operand.__class__  # type: ignore[assignment]
        node.__dict__.update(operand.__dict__)
    elif site.operator == "constant_return":
        assert isinstance(node, ast.Return)
        node.value = ast.parse(site.choice, mode="eval").body


def _diff(before: str, after: str) -> str:
    """The changed lines as ``line N:`` then the unified diff's -/+ lines."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))[2:]
    if lines and lines[0].startswith("@@"):
        where = lines[0].split()[1].lstrip("-").split(",")[0]
        lines[0] = f"line {where}:"
    return "\n".join(lines)


def probe_inputs(args_list: Sequence[tuple[Any, ...]], limit: int = MAX_PROBES) -> list[tuple[Any, ...]]:
    """The tests' inputs, then each with one integer argument, or one integer element of a list
    argument, moved by one (both ways); distinct, at most ``limit``, in a stable order."""
    out: list[tuple[Any, ...]] = []
    seen: set[str] = set()

    def add(args: tuple[Any, ...]) -> None:
        try:
            text = repr(args)
        except ValueError:  # an int too long for repr: not a probe anyone could write
            return
        if text not in seen and len(out) < limit:
            seen.add(text)
            out.append(args)

    for args in args_list:
        add(args)
    for args in args_list:
        for position, value in enumerate(args):
            if type(value) is int:
                for step in (1, -1):
                    add((*args[:position], value + step, *args[position + 1 :]))
            elif type(value) is list:
                for element, item in enumerate(value):
                    if type(item) is int:
                        for step in (1, -1):
                            changed = [*value[:element], item + step, *value[element + 1 :]]
                            add((*args[:position], changed, *args[position + 1 :]))
    return out


DISPATCHER = "__spade_mutant__"
"""The entry point of the gate's execution: ``DISPATCHER(k, i, *args)`` calls version ``k`` (0: the
reference, 1..: the mutants) on input number ``i``, ``args``, and returns a digest of its output."""
DEAD = "dead"
"""What :data:`DISPATCHER` returns for a mutant already told apart from the reference."""


def dispatcher_source(entry_point: str, versions: Sequence[str], budget_s: float, load_s: float) -> str:
    """A program whose :data:`DISPATCHER` runs version ``k`` of the code on input ``i``.

    Calls come reference first: each version-0 call records its digest for input ``i``. A mutant
    whose output differs from that digest, or that raises or times out where the reference did not,
    is dead from then on: its later calls return :data:`DEAD` at once, so a mutant costs about one
    call once it is told apart, and a mutant that loops costs one short budget. The comparison
    that decides is still made outside, on the digests that come back.

    Each version is loaded once, on its first call, as a module of its own registered in
    ``sys.modules`` (so dataclasses and ``sys.modules[__name__]`` work as in a real import), under
    a timer of its own (``load_s``, a test's budget): module-level work is not a call's cost, and
    the call's timer (``budget_s``) is re-armed after it.
    Outputs come back as digests of a canonical form that follows the judge's ``matches``
    (a tuple is a list, dict order does not count, floats to 9 significant digits, -0.0 is 0.0,
    ints of any size), so thousands of calls stay a small report; what versions print is discarded.
    """
    return _DISPATCHER_TEMPLATE.format(
        sources=repr(list(versions)),
        entry=repr(entry_point),
        name=DISPATCHER,
        dead=repr(DEAD),
        budget=repr(float(budget_s)),
        load=repr(float(load_s)),
    )


_DISPATCHER_TEMPLATE = """\
import hashlib as _hashlib
import signal as _signal
import sys as _sys
import types as _types

_SOURCES = {sources}
_LOADED = {{}}
_BASE = {{}}
_DEAD = set()


class _Discard:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


def _canon(value, depth=0):
    if depth > 40:
        return ("deep",)
    t = type(value)
    if value is None or t is bool or t is str:
        return (t.__name__, value)
    if t is int:
        return ("int", hex(value))
    if t is float:
        if value != value:
            return ("nan",)
        return ("float", float("%.9g" % value) + 0.0)
    if t is list or t is tuple:
        return ("list", [_canon(v, depth + 1) for v in value])
    if t is dict:
        items = [(repr(_canon(k, depth + 1)), _canon(v, depth + 1)) for k, v in value.items()]
        return ("dict", sorted(items, key=lambda kv: kv[0]))
    if t is set or t is frozenset:
        return (t.__name__, sorted(repr(_canon(v, depth + 1)) for v in value))
    return ("object", t.__name__)


def _digest(value):
    text = repr(_canon(value))
    return _hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _load(k):
    name = "__spade_version_%d__" % k
    module = _types.ModuleType(name)
    _sys.modules[name] = module
    armed = _signal.setitimer(_signal.ITIMER_REAL, {load})[0]
    try:
        exec(compile(_SOURCES[k], "<version %d>" % k, "exec"), module.__dict__)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, {budget} if armed else 0)
    return getattr(module, {entry})


def {name}(k, i, *args):
    if k in _DEAD:
        return {dead}
    out, err = _sys.stdout, _sys.stderr
    _sys.stdout = _sys.stderr = _Discard()
    try:
        fn = _LOADED.get(k)
        if fn is None:
            fn = _LOADED[k] = _load(k)
        digest = _digest(fn(*args))
    except BaseException:
        # a mutant that fails where the reference answered is told apart; where the reference
        # failed too, nothing is learnt
        if k == 0:
            _BASE[i] = None
        elif _BASE.get(i) is not None:
            _DEAD.add(k)
        raise
    finally:
        _sys.stdout, _sys.stderr = out, err
    if k == 0:
        _BASE[i] = digest
    elif _BASE.get(i) not in (None, digest):
        _DEAD.add(k)
    return digest
"""
