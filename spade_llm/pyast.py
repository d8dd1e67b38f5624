"""``ast.parse`` and ``ast.literal_eval`` behind one process-wide lock.

CPython before 3.11.9 / 3.12.1 keeps the AST converter's recursion counter in shared state, so
two threads parsing at once can fail with ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905). The pipeline parses in worker threads (validation) and in the event loop
(the fake model) at the same time, so every parse in the package goes through here.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)


def compile_tree(tree: ast.Module, filename: str) -> Any:
    with _LOCK:
        return compile(tree, filename, "exec")


def literal_eval(text: str) -> Any:
    with _LOCK:
        return ast.literal_eval(text)
