"""Python, the language of every task today: the ``Language`` contract over ``ast`` and ``tokenize``.

Parsing goes through ``pyast`` (thread-safe ``ast.parse``/``literal_eval``: the pipeline parses in
worker threads and the event loop at once); mutants come from ``python_mutants``; the runner that
executes tests in the sandbox is ``spade_llm.sandbox.runner`` over the stdlib-only harness.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from collections.abc import Sequence
from typing import Any, Final

from . import pyast
from .base import Bug, Language, Mutant, Statement
from .toolchain import Toolchain

__all__ = ["PYTHON", "PYTHON_ANSWERS", "PythonLanguage"]

FENCE_TAGS: Final = ("python", "py", "python3")


class PythonLanguage(Language):
    name = "python"
    fence_tags = FENCE_TAGS
    runner = "spade_llm.sandbox.runner"

    def static_error(
        self, code: str, entry_point: str, banned: frozenset[str], entry_class: str | None = None
    ) -> tuple[str, str] | None:
        try:
            tree = pyast.parse(code)
            pyast.compile_tree(tree, "<reference>")
        except (SyntaxError, ValueError) as e:
            return "syntax_error", f"reference does not compile: {e}"
        found = banned_import(tree, banned)
        if found is not None:
            return "banned_import", found
        if entry_class is not None:
            if not defines_method(tree, entry_class, entry_point):
                return "missing_entry_point", f"reference does not define {entry_class}.{entry_point}"
        elif entry_point and not defines_name(tree, entry_point):  # "": a whole program, no name to define
            return "missing_entry_point", f"reference does not define {entry_point!r}"
        return None

    def literal(self, text: str) -> Any:
        return pyast.literal_eval(text)

    def statements(self, source: str) -> list[Statement] | None:
        try:
            body = pyast.parse(source).body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        return [s for s in map(_statement, body) if s is not None]

    def prose(self, code: str) -> str:
        return _prose(code)

    def code_tokens(self, code: str) -> list[str]:
        return _code_tokens(code)

    def mutants(self, code: str, max_mutants: int, key: str = "", *, whole_program: bool = False) -> Sequence[Mutant]:
        from .python_mutants import mutants

        return mutants(code, max_mutants, key, whole_program=whole_program)

    def bugs(
        self, code: str, count: int, max_edits: int, key: str = "", *, min_edits: int = 1, whole_program: bool = False
    ) -> Sequence[Bug]:
        from .python_bugs import bugs

        return bugs(code, count, max_edits, key, min_edits=min_edits, whole_program=whole_program)

    def edit_families(self, before: str, after: str) -> tuple[str, ...]:
        from .python_bugs import edit_families

        return edit_families(before, after)

    def renamed(self, *codes: str) -> tuple[str, ...] | None:
        try:
            trees = [pyast.parse(code) for code in codes]
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        bound: dict[str, str] = {}
        for tree in trees:
            for node in ast.walk(tree):
                name = _bound_name(node)
                if name is not None and name not in bound:
                    bound[name] = f"v{len(bound)}"
        out = []
        for tree in trees:
            for node in ast.walk(tree):
                _rename(node, bound)
            out.append(ast.unparse(tree))
        return tuple(out)

    def normalised(self, code: str) -> str | None:
        from .python_mutants import normalised

        return normalised(code)


PYTHON: Final = PythonLanguage()


def _bound_name(node: ast.AST) -> str | None:
    """The name ``node`` binds in its program (a parameter, an assigned variable, a function or class it
    defines), or None."""
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return node.id
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return None


def _rename(node: ast.AST, names: dict[str, str]) -> None:
    """``node`` with each name of ``names`` replaced in place (reads, bindings, definitions)."""
    if isinstance(node, ast.arg) and node.arg in names:
        node.arg = names[node.arg]
    elif isinstance(node, ast.Name) and node.id in names:
        node.id = names[node.id]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names:
        node.name = names[node.name]


# -- static gates -------------------------------------------------------------------------------------


def banned_import(tree: ast.Module, banned: frozenset[str]) -> str | None:
    """Where the code imports a module of ``banned`` (by its top-level name), or None.

    Sees ``import x.y``, ``from x import y``, and calls ``__import__("x")`` and
    ``importlib.import_module("x")`` with a literal name. This is a policy for determinism and
    portability, not security: the sandbox is the boundary, and computed names are not chased.
    """
    if not banned:
        return None
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in banned:
                return f"line {getattr(node, 'lineno', '?')}: imports {name!r}, which validation.banned_imports bans"
    return None


def defines_name(tree: ast.Module, name: str) -> bool:
    """Whether the module's top level binds ``name`` (def, class, assignment or import)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
        if isinstance(node, (ast.If, ast.Try, ast.With)) and defines_name(
            ast.Module(body=_children(node), type_ignores=[]), name
        ):
            return True
    return False


def defines_method(tree: ast.Module, cls: str, name: str) -> bool:
    """Whether a top-level ``class cls`` binds ``name`` in its body (LeetCode's ``class Solution``)."""
    return any(
        isinstance(node, ast.ClassDef)
        and node.name == cls
        and defines_name(ast.Module(body=node.body, type_ignores=[]), name)
        for node in tree.body
    )


def _children(node: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for attr in ("body", "orelse", "finalbody"):
        out.extend(getattr(node, attr, []) or [])
    for handler in getattr(node, "handlers", []) or []:
        out.extend(handler.body)
    return out


# -- answers: calls and values ------------------------------------------------------------------------


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _call_args(node: ast.expr) -> tuple[Any, ...] | None:
    """The literal positional arguments of ``name(...)``, or None when ``node`` is not such a call."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        return None
    values = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            return None
        ok, value = _literal(arg)
        if not ok:
            return None
        values.append(value)
    return tuple(values)


def _statement(stmt: ast.stmt) -> Statement | None:
    node = stmt.value if isinstance(stmt, ast.Expr) else stmt.test if isinstance(stmt, ast.Assert) else None
    if node is None:
        return None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        args = _call_args(node.left)
        if args is None:
            return None
        ok, value = _literal(node.comparators[0])
        return Statement(args, value, ok, None if ok else "the value after == is not a Python literal")
    args = _call_args(node)
    if args is not None:
        return Statement(args)
    ok, value = _literal(node)
    return Statement(value=value, has_value=True) if ok else None


# -- text the leak and duplicate gates read ------------------------------------------------------------


def _prose(code: str) -> str:
    """The comments and string literals of ``code``, one a line ('' when it does not tokenize: the
    syntax gate rejects it first)."""
    pieces: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING):
                pieces.append(token.string)
    except (tokenize.TokenError, SyntaxError):
        return ""
    return "\n".join(pieces)


_STRING_OR_NUMBER = {tokenize.STRING, tokenize.NUMBER}


def _code_tokens(source: str) -> list[str]:
    """Tokens of Python source with names, strings and numbers abstracted.

    Two functions that differ only by renaming or constants get the same tokens, which is
    what "near-duplicate" means for a task bank. Falls back to a regex split on broken code.
    """
    out: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME:
                out.append(tok.string if keyword.iskeyword(tok.string) or tok.string in _BUILTINS else "N")
            elif tok.type in _STRING_OR_NUMBER:
                out.append("S" if tok.type == tokenize.STRING else "0")
            elif tok.type == tokenize.OP:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = re.findall(r"\w+|[^\w\s]", source)
    return out


_BUILTINS = frozenset(dir(builtins))


PYTHON_ANSWERS: Final = Toolchain(
    name="python",
    label="Python 3",
    fence_tags=FENCE_TAGS,
    source_file="main.py",
    extensions=(".py",),
    run=("python3", "{source}"),
    in_harness=True,
    prompt_name="Python",
)
"""Python answers run by the harness's own interpreter as ``__main__`` (``sandbox.runner.run_program``)."""
