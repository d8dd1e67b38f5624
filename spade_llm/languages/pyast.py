"""``ast.parse`` and ``ast.literal_eval`` that survive other threads parsing at the same time.

CPython before 3.11.9 / 3.12.1 keeps the AST converter's recursion counter in shared state, so two
threads building ASTs at once can fail with ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905). The pipeline parses in worker threads (validation) and in the
event loop (the fake model) at the same time, and Python 3.11's traceback formatting parses too.
Every parse in the package goes through here: one lock among ours, and a retry when a parser we do
not control (a traceback being printed) got in the way.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_LOCK = threading.Lock()
_ATTEMPTS = 5
T = TypeVar("T")


def _guarded(fn: Callable[[], T]) -> T:
    for attempt in range(_ATTEMPTS):
        with _LOCK:
            try:
                return fn()
            except SystemError as e:
                if "recursion depth mismatch" not in str(e) or attempt == _ATTEMPTS - 1:
                    raise
    raise AssertionError("unreachable")


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    return _guarded(lambda: ast.parse(source, filename))


def compile_tree(tree: ast.Module, filename: str) -> Any:
    return _guarded(lambda: compile(tree, filename, "exec"))


def literal_eval(text: str) -> Any:
    return _guarded(lambda: ast.literal_eval(text))


def python_literal(text: str) -> Any:
    """The value of a Python literal (``TestCase.python_eq``); ``ValueError`` when ``text`` is not one."""
    try:
        return literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise ValueError(f"not a Python literal: {text[:60]!r} ({type(e).__name__})") from None
