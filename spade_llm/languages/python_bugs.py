"""Procedural bugs of a Python reference: the small edits people make, singly and combined.

Pure: nothing here runs code. The ``bugfix`` kind's gates (``kinds/bugfix.py``) decide whether the tests
catch a bug; this module only writes candidates. The edit families are the ones SWE-smith's procedural
modifications and bug-fix datasets find most in human bugs, next to the mutation engine's operators
(``python_mutants``), which count as families of their own:

* ``off_by_one``: a ``range`` bound, a slice bound or an index moved by one (``+ 1`` dropped or added);
* ``inverted_boundary``: a comparison's boundary flipped (``<`` for ``<=``, ``>=`` for ``>``);
* ``dropped_branch``: an ``else``/``elif`` part dropped, or an ``if`` without one removed;
* ``swapped_branch``: an ``if``'s condition negated, so its branches trade places;
* ``wrong_variable``: a local variable read where another of the same function was meant;
* ``swapped_arguments``: a call's first two arguments, or a non-commutative operation's operands, swapped;
* ``removed_return``: an early ``return``, a ``break`` or a ``continue`` turned into ``pass``.

Each edit replaces one span of the text (an expression, or whole lines), so the rest of the program keeps
its layout and comments; a bug of several edits combines edits whose spans do not overlap (SWE-smith's
"combine"). Choices come from a key (the task's own text): the same code, the same bugs.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from . import pyast
from .base import Bug
from .python_mutants import _bare_ok, _diff, _replacement, _sites, _span, _stable, normalised

__all__ = ["FAMILIES", "bugs", "edit_families"]

FAMILIES = (
    "off_by_one",
    "inverted_boundary",
    "dropped_branch",
    "swapped_branch",
    "wrong_variable",
    "swapped_arguments",
    "removed_return",
)
"""The edit families people's bugs come in (the module docstring), before the mutant operators."""
_MUTANT_FAMILIES = ("relational", "arithmetic", "literal", "boolean", "not", "constant_return")
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_ATTEMPTS_PER_BUG = 8


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str
    family: str


def bugs(
    code: str, count: int, max_edits: int, key: str = "", *, min_edits: int = 1, whole_program: bool = False
) -> list[Bug]:
    """Up to ``count`` distinct bugs of ``code``, each of ``min_edits`` to ``max_edits`` edits (cycling
    through the sizes, the families spread over the bugs), chosen by ``key``; none when ``code`` does not
    parse. Every bug compiles and differs from ``code`` once layout and comments are left out."""
    try:
        tree = pyast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    base = normalised(code)
    encoded = code.encode("utf-8", "surrogatepass")
    edits = _edits(tree, code, encoded, whole_program)
    if not edits or count <= 0:
        return []
    rng = random.Random(int(_stable(key, "bugs", len(encoded)), 16))
    by_family: dict[str, list[_Edit]] = {}
    for edit in sorted(edits, key=lambda e: _stable(key, e.start, e.end, e.text)):
        by_family.setdefault(edit.family, []).append(edit)
    families = sorted(by_family, key=lambda f: _stable(key, f))
    low, high = max(1, min_edits), max(max(1, min_edits), max_edits)
    out: list[Bug] = []
    seen = {base}
    for attempt in range(count * _ATTEMPTS_PER_BUG):
        if len(out) >= count:
            break
        size = low + attempt % (high - low + 1)
        chosen = _combine(by_family, families, size, len(out) + attempt, rng)
        if len(chosen) != size:
            continue
        source = _apply(encoded, chosen)
        normal = normalised(source)
        if normal is None or normal in seen:
            continue
        seen.add(normal)
        ordered = sorted(chosen, key=lambda e: e.start)
        out.append(Bug(source, tuple(e.family for e in ordered), _diff(code, source)))
    return out


def _combine(
    by_family: dict[str, list[_Edit]], families: list[str], size: int, turn: int, rng: random.Random
) -> list[_Edit]:
    """``size`` edits with disjoint spans, the first from the family whose turn it is, the rest drawn."""
    order = families[turn % len(families) :] + families[: turn % len(families)]
    chosen: list[_Edit] = []
    first = order[0]
    pool = [e for f in order for e in by_family[f]]
    candidates = [rng.choice(by_family[first]), *rng.sample(pool, min(len(pool), 4 * size))]
    for edit in candidates:
        if len(chosen) == size:
            break
        if all(edit.end <= other.start or other.end <= edit.start for other in chosen):
            chosen.append(edit)
    return chosen


def _apply(encoded: bytes, edits: Sequence[_Edit]) -> str:
    out = encoded
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text.encode("utf-8", "surrogatepass") + out[edit.end :]
    return out.decode("utf-8", "surrogatepass")


# -- where edits apply ---------------------------------------------------------------------------


def _edits(tree: ast.Module, code: str, encoded: bytes, whole_program: bool) -> list[_Edit]:
    line_starts = [0]
    for line in encoded.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    # the lines the offsets count (the byte text's line ends), not str.splitlines's, which also breaks
    # at form feeds and Unicode separators inside strings
    lines = [line.decode("utf-8", "surrogatepass") for line in encoded.splitlines()]
    nodes = list(ast.walk(tree))
    bare = _bare_ok(nodes)
    inside = _inside_functions(nodes)
    typing = _annotations(nodes)
    out: list[_Edit] = []
    for node in nodes:
        if (not whole_program and id(node) not in inside) or id(node) in typing:
            continue
        out.extend(_expression_edits(node, line_starts, id(node) in bare))
    for function in (n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        out.extend(_wrong_variables(function, line_starts))
        out.extend(_statement_edits(function, lines, line_starts))
    if whole_program:
        out.extend(_statement_edits(tree, lines, line_starts))
    for site in _sites(nodes, whole_program):  # the mutation engine's operators, as families of their own
        node = nodes[site.index]
        if id(node) in typing:
            continue
        span = _span(node, line_starts)
        text = _replacement(node, site, id(node) in bare)
        if span is not None and text is not None:
            out.append(_Edit(span[0], span[1], text, site.operator))
    changed = [e for e in out if encoded[e.start : e.end].decode("utf-8", "surrogatepass") != e.text]
    return [_bare(encoded, e) for e in changed]


def _bare(encoded: bytes, edit: _Edit) -> _Edit:
    """``edit`` without the parentheses put around its expression, when the program means the same
    without them: parentheses nobody wrote would point at the change."""
    if not (edit.text.startswith("(") and edit.text.endswith(")")):
        return edit
    bare = _Edit(edit.start, edit.end, edit.text[1:-1], edit.family)
    try:
        same = ast.dump(pyast.parse(_apply(encoded, [bare]))) == ast.dump(pyast.parse(_apply(encoded, [edit])))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return edit
    return bare if same else edit


def _inside_functions(nodes: list[ast.AST]) -> set[int]:
    inside: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    return inside


def _annotations(nodes: list[ast.AST]) -> set[int]:
    """The nodes of type annotations (``-> List[str]``, ``x: int | None``): Python never evaluates them to
    run the code, so an edit there (``List[str + 1]``) is no bug, and it changes the signature the
    statement shows, which gives the change away."""
    found: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots = [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.arg):
            roots = [node.annotation] if node.annotation is not None else []
        elif isinstance(node, ast.AnnAssign):
            roots = [node.annotation]
        else:
            continue
        for root in roots:
            found.update(id(child) for child in ast.walk(root))
    return found


def _undoes(expr: ast.expr, step: int) -> bool:
    """Whether ``expr`` is ``x + 1`` and the step takes one off (or ``x - 1`` and it adds one)."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.right, ast.Constant) and expr.right.value == 1):
        return False
    return (isinstance(expr.op, ast.Add) and step < 0) or (isinstance(expr.op, ast.Sub) and step > 0)


def _moved(expr: ast.expr, step: int) -> str:
    """``expr`` moved by ``step``: ``n + 1`` loses its ``+ 1``, a literal changes, anything else gains one."""
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return str(expr.value + step)
    if _undoes(expr, step) and isinstance(expr, ast.BinOp):
        return ast.unparse(expr.left) if not isinstance(expr.left, ast.BinOp) else f"({ast.unparse(expr.left)})"
    inner = ast.unparse(expr)
    if not isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)):
        inner = f"({inner})"
    return f"{inner} {'+' if step > 0 else '-'} {abs(step)}"


def _expression_edits(node: ast.AST, line_starts: list[int], bare_ok: bool) -> Iterator[_Edit]:
    bounds: list[ast.expr] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if not any(isinstance(a, ast.Starred) for a in node.args) and 1 <= len(node.args) <= 3:
            bounds.extend(node.args[:2])
    elif isinstance(node, ast.Slice):
        bounds.extend(b for b in (node.lower, node.upper) if b is not None)
    elif isinstance(node, ast.Subscript) and _index_like(node.slice):
        bounds.append(node.slice)
    for bound in bounds:
        span = _span(bound, line_starts)
        if span is not None:
            for step in (1, -1):
                yield _Edit(span[0], span[1], _moved(bound, step), "off_by_one")
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _BOUNDARY:
        span = _span(node, line_starts)
        flipped = ast.Compare(left=node.left, ops=[_BOUNDARY[type(node.ops[0])]()], comparators=node.comparators)
        if span is not None:
            text = ast.unparse(flipped)
            yield _Edit(span[0], span[1], text if bare_ok else f"({text})", "inverted_boundary")
    if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        first, second = _span(node.args[0], line_starts), _span(node.args[1], line_starts)
        a, b = ast.unparse(node.args[0]), ast.unparse(node.args[1])
        if first is not None and second is not None and a != b:
            # one edit over both arguments' span: the text between them (", ") kept as it is
            yield _Edit(first[0], second[1], f"{b}, {a}", "swapped_arguments")
    if isinstance(node, ast.BinOp) and isinstance(node.op, _NON_COMMUTATIVE):
        span = _span(node, line_starts)
        left, right = ast.unparse(node.left), ast.unparse(node.right)
        if span is not None and left != right:
            swapped = ast.BinOp(left=node.right, op=node.op, right=node.left)
            text = ast.unparse(swapped)
            yield _Edit(span[0], span[1], text if bare_ok else f"({text})", "swapped_arguments")
    if isinstance(node, ast.If) and node.orelse:
        span = _span(node.test, line_starts)
        if span is not None:
            yield _Edit(span[0], span[1], f"not ({ast.unparse(node.test)})", "swapped_branch")


def _index_like(index: ast.expr) -> bool:
    """An index that an off-by-one can move: a variable, arithmetic, or an integer literal."""
    return isinstance(index, (ast.Name, ast.BinOp)) or (isinstance(index, ast.Constant) and type(index.value) is int)


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The function's parameters and the names it assigns, in order of first appearance."""
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
    return names


def _wrong_variables(function: ast.FunctionDef | ast.AsyncFunctionDef, line_starts: list[int]) -> Iterator[_Edit]:
    names = _locals(function)
    if len(names) < 2:
        return
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            span = _span(node, line_starts)
            if span is None:
                continue
            position = names.index(node.id)
            for other in (names[(position + 1) % len(names)], names[position - 1]):
                if other != node.id:
                    yield _Edit(span[0], span[1], other, "wrong_variable")


def _statement_edits(scope: ast.AST, lines: list[str], line_starts: list[int]) -> Iterator[_Edit]:
    """Line edits inside ``scope``'s blocks: branches dropped, early exits turned into ``pass``."""
    for block in _blocks(scope):
        for position, stmt in enumerate(block):
            alone = len(block) == 1
            if isinstance(stmt, ast.If):
                dropped = _drop_else(stmt, lines, line_starts)
                if dropped is not None:
                    yield dropped
                elif not alone:
                    yield _lines_edit(stmt.lineno, stmt.end_lineno or stmt.lineno, "", line_starts, "dropped_branch")
            last_of_function = position == len(block) - 1 and block is getattr(scope, "body", None)
            one_line = isinstance(stmt, (ast.Return, ast.Break, ast.Continue)) and stmt.lineno == stmt.end_lineno
            line = lines[stmt.lineno - 1] if one_line else ""
            if one_line and not last_of_function and line.strip().startswith(_EXITS):  # a line of its own
                indent = line[: len(line) - len(line.lstrip())]
                yield _lines_edit(stmt.lineno, stmt.lineno, f"{indent}pass\n", line_starts, "removed_return")


def _blocks(scope: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(scope):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and all(isinstance(s, ast.stmt) for s in block):
                if node is not scope and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue  # a nested function's blocks are its own scope's
                yield block


def _drop_else(stmt: ast.If, lines: list[str], line_starts: list[int]) -> _Edit | None:
    """The ``else:``/``elif`` part of ``stmt`` removed, when it starts on a line of its own."""
    if not stmt.orelse:
        return None
    first, last = stmt.orelse[0].lineno, stmt.orelse[-1].end_lineno or stmt.orelse[-1].lineno
    if lines[first - 1].strip().startswith("elif"):
        return _lines_edit(first, last, "", line_starts, "dropped_branch")
    body_end = stmt.body[-1].end_lineno or stmt.body[-1].lineno
    for ln in range(first - 1, body_end, -1):
        if re.fullmatch(r"\s*else\s*:\s*(#.*)?", lines[ln - 1]):
            return _lines_edit(ln, last, "", line_starts, "dropped_branch")
    return None


def _lines_edit(first: int, last: int, text: str, line_starts: list[int], family: str) -> _Edit:
    end = line_starts[last] if last < len(line_starts) else line_starts[-1]
    return _Edit(line_starts[first - 1], end, text, family)


# -- telling a bug's edits -----------------------------------------------------------------------

_TOKEN = re.compile(r"\d+|\w+|<=|>=|==|!=|//|\*\*|\S")
_BOUNDARY_PAIRS = {("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")}
_RELATIONS = {"<", "<=", ">", ">=", "==", "!="}
_ARITH = {"+", "-", "*", "/", "//", "%", "**"}
_EXITS = ("return", "break", "continue")


def edit_families(before: str, after: str) -> tuple[str, ...]:
    """The families of the edits that turn ``before`` into ``after`` (normalised first), one per changed
    block of lines; ``other`` for a change none describes; ``()`` when either does not parse."""
    a, b = normalised(before), normalised(after)
    if a is None or b is None:
        return ()
    old, new = a.splitlines(), b.splitlines()
    found: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "delete":
            removed = [line.strip() for line in old[i1:i2]]
            if removed and removed[0].startswith(("if ", "elif ", "else")):
                found.append("dropped_branch")
            elif removed and all(line.startswith(_EXITS) for line in removed):
                found.append("removed_return")
            else:
                found.append("other")
        elif op == "insert":
            found.append("other")
        else:
            pairs = list(zip(old[i1:i2], new[j1:j2], strict=False))
            for x, y in pairs:
                found.extend(_pair_family(x.strip(), y.strip()))
            if i2 - i1 > j2 - j1 and old[i1 + len(pairs)].strip().startswith(("if ", "elif ", "else")):
                found.append("dropped_branch")
    return tuple(found)


def _pair_family(old: str, new: str) -> list[str]:
    """The families of the edits that turn line ``old`` into line ``new``: one per changed run of tokens."""
    if old == new:
        return []
    if new == "pass" and old.startswith(_EXITS):
        return ["removed_return"]
    x, y = _TOKEN.findall(old), _TOKEN.findall(new)
    if x != y and sorted(x) == sorted(y) and len(x) == len(y):
        moved = [i for i, (p, q) in enumerate(zip(x, y, strict=True)) if p != q]
        if not any(x[i] in _RELATIONS | _ARITH for i in moved):
            return ["swapped_arguments"]
    runs = [op for op in difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes() if op[0] != "equal"]
    changes = [(x[i1:i2], y[j1:j2]) for _, i1, i2, j1, j2 in runs]
    out: list[str] = []
    for i, (a, b) in enumerate(changes):
        if i and changes[i - 1] == (b, a):  # this run and the one before trade places: swapped operands
            out[-1] = "swapped_arguments"
            continue
        out.append(_run_family(a, b, old))
    if old.startswith("return") and new.startswith("return") and "other" in out:
        return ["constant_return"]
    return out


def _run_family(a: list[str], b: list[str], line: str) -> str:
    """The family of one changed run of tokens (``a`` became ``b``) on ``line``."""
    pair = (a[0], b[0]) if len(a) == len(b) == 1 else None
    if pair is not None:
        p, q = pair
        if pair in _BOUNDARY_PAIRS:
            return "inverted_boundary"
        if p in _RELATIONS and q in _RELATIONS:
            return "relational"
        if {p, q} == {"+", "-"}:
            return "off_by_one"
        if p in _ARITH and q in _ARITH:
            return "arithmetic"
        if p.isdigit() and q.isdigit():
            return "off_by_one" if abs(int(p) - int(q)) == 1 else "literal"
        if {p, q} == {"and", "or"}:
            return "boolean"
        if p.isidentifier() and q.isidentifier():
            return "wrong_variable"
    shift = [*a, *b]
    if sorted(shift) in (["+", "1"], ["-", "1"]) and (not a or not b):
        return "off_by_one"  # a "+ 1" added or dropped
    if _number(a) is not None and _number(b) is not None:
        return "off_by_one" if abs(_number(a) - _number(b)) == 1 else "literal"  # type: ignore[operator]
    if "not" in shift and all(t in ("not", "(", ")") for t in shift):
        return "swapped_branch" if line.startswith(("if ", "elif ")) else "not"
    if a and b and all(t.isidentifier() or t in "[]." for t in shift):
        return "wrong_variable"  # one variable read (or a subscript of one) for another
    return "other"


def _number(tokens: list[str]) -> int | None:
    text = "".join(tokens)
    return int(text) if re.fullmatch(r"-?\d+", text) else None
