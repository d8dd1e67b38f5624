"""The layout the package promises a newcomer (docs/layout.md), checked from the source itself.

Every import counts, wherever it stands (module level, inside a function, under ``TYPE_CHECKING``):
a lazy import that closes a cycle is still a cycle, it only fails later.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from spade_llm.sandbox.registry import BACKEND_NAMES

PACKAGE = Path(__file__).resolve().parents[2] / "spade_llm"


@cache
def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str) -> str | None:
    """The package module ``name`` is (or is inside): ``a.b.C`` -> ``a.b`` when ``a.b`` is a module."""
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports_by_name(node: ast.AST) -> bool:
    """``import_module("spade_llm...")`` with a literal name (a name built at run time is a registry's)."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    first = node.args[0]
    return called == "import_module" and isinstance(first, ast.Constant) and str(first.value).startswith("spade_llm")


@cache
def imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports, anywhere in its source."""
    graph: dict[str, set[str]] = {}
    for module, path in modules().items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # `from . import x` imports the module x; `from .m import f` imports m
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
            elif _imports_by_name(node):  # importlib.import_module("spade_llm.x"): an import all the same
                names = [node.args[0].value]  # type: ignore[attr-defined]
            else:
                continue
            found.update(m for m in map(_resolve, names) if m is not None and m != module)
        graph[module] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_by_literal_name_is_an_import():
    tree = ast.parse('import importlib\nimportlib.import_module("spade_llm.x")\nimport_module(f"{p}.y")')
    found = [n for n in ast.walk(tree) if _imports_by_name(n)]
    assert len(found) == 1


def test_no_import_cycle_in_the_package():
    assert _cycles(imports()) == []


def test_the_provider_layer_imports_no_domain_module():
    domain = ("spade_llm.kinds", "spade_llm.sandbox", "spade_llm.languages", "spade_llm.validation", "spade_llm.fake")
    bad = {
        (module, target)
        for module, targets in imports().items()
        if module.startswith("spade_llm.llm")
        for target in targets
        if target.startswith(domain)
    }
    assert bad == set()


def test_the_controller_only_orchestrates():
    lines = (PACKAGE / "controller.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"controller.py has {lines} lines"


def _code_strings(path: Path) -> list[str]:
    """The string constants of a module's code: help texts, messages, choices, defaults (docstrings,
    bare string statements, describe and are left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
    ]


def test_no_backend_name_is_written_in_the_cli_or_the_config():
    names = [n for n in BACKEND_NAMES if n != "auto"]  # "auto" also names Ray's address lookup
    word = re.compile(rf"\b({'|'.join(map(re.escape, names))})\b(?![_-])")
    for module in ("cli/app.py", "cli/flags.py", "config.py"):
        said = [s for s in _code_strings(PACKAGE / module) if word.search(s)]
        assert said == [], f"{module} names a backend: {said[:3]}"


def test_read_run_is_the_only_reader_of_a_run_directory():
    readers = {"read_jsonl", "read_numbered", "numbered", "Lines"}
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert "load_run" not in defined, f"{module} defines load_run"
        if module.startswith("spade_llm.store"):
            continue
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not (used & readers), f"{module} reads journals itself: {sorted(used & readers)}"
