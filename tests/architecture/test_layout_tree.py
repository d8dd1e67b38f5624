"""The tree shows the pipeline (issue 36): docs/layout.md names every module of the package and no
module that is not there; the top of ``spade_llm/`` holds only the vocabulary, the loop's stages
and thin re-exports; only ``languages/`` parses code with ``ast`` or ``tokenize``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "spade_llm"
LAYOUT = ROOT / "docs" / "layout.md"

VOCABULARY = {"__init__.py", "types.py", "errors.py", "config.py", "templates.py"}
STAGES = {
    "curriculum.py", "generator.py", "validation.py", "leaks.py", "behaviour.py", "dedup.py", "nearest.py",
    "checking.py", "solver.py", "judge.py", "evaluator.py", "episodes.py", "controller.py", "empty_epochs.py",
    "hooks.py", "train_step.py", "progress.py", "solver_session.py", "session.py",
}  # fmt: skip
REEXPORTS = {"trl.py", "verifiers.py", "verl.py", "proposal_reward.py"}
MAIN_GUARD = "if __name__ == '__main__':\n    raise SystemExit(main())"
MAX_REEXPORT_LINES = 25


def package_modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def layout_modules() -> set[str]:
    """The modules docs/layout.md's tree names: each line's first word, nested by its indent."""
    text = LAYOUT.read_text(encoding="utf-8")
    block = text[text.index("spade_llm/\n") : text.index("```", text.index("spade_llm/\n"))]
    found: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in block.splitlines()[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        name = line.split()[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = "".join(d for _, d in stack)
        if name.endswith("/"):
            stack.append((indent, name))
        else:
            found.add(prefix + name)
    return found


def test_the_layout_names_every_module_and_only_modules_that_exist() -> None:
    named, present = layout_modules(), package_modules()
    assert sorted(present - named) == [], "modules docs/layout.md does not name"
    assert sorted(named - present) == [], "modules docs/layout.md names that do not exist"


def test_the_top_holds_the_vocabulary_the_stages_and_thin_reexports() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert sorted(top - VOCABULARY - STAGES - REEXPORTS) == [], "a module at the top that is no stage"
    for name in REEXPORTS:
        lines = (PACKAGE / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) <= MAX_REEXPORT_LINES, f"{name} is a re-export: {len(lines)} lines"
        tree = ast.parse("\n".join(lines))
        # a runnable path (``python -m spade_llm.verl``) may hand over to the implementation's main, no more
        body = [node for node in tree.body if ast.unparse(node) != MAIN_GUARD]
        kinds = {type(node).__name__ for node in body}
        assert kinds <= {"Expr", "ImportFrom", "Import", "Assign"}, f"{name} defines code: {kinds}"


def test_only_languages_parse_code() -> None:
    parsing = re.compile(r"^\s*(import (ast|tokenize)\b|from (ast|tokenize) import)", re.M)
    found = [
        path
        for path in sorted(package_modules())
        if not path.startswith("languages/") and parsing.search((PACKAGE / path).read_text(encoding="utf-8"))
    ]
    assert found == [], "ask the task's Language (spade_llm.languages) instead of parsing code here"


def test_the_scan_would_see_a_module_and_an_import() -> None:
    # the two scans above are not vacuous: the tree has the deep modules, the pattern the imports
    named = layout_modules()
    assert {"serve/env/broker.py", "fake/families/graphs.py", "types.py", "languages/python.py"} <= named
    assert re.search(r"^\s*(import (ast|tokenize)\b)", (PACKAGE / "languages" / "python.py").read_text(), re.M)


def test_the_tests_mirror_the_packages() -> None:
    # a package's tests in the folder of its name; the loop's stages at the top, as in spade_llm/;
    # end-to-end runs of the command and the architecture checks in folders of their own
    tests = ROOT / "tests"
    folders = {
        p.name for p in tests.iterdir() if p.is_dir() and p.name not in {"data", "__pycache__"} and p.name[0] != "."
    }
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert sorted(folders - packages - {"e2e", "architecture"}) == [], "a test folder no package is named after"
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    top = [p.stem.removeprefix("test_") for p in tests.glob("test_*.py")]  # test_<module>[_<aspect>].py
    stray = [t for t in top if not any(t == m or t.startswith(f"{m}_") for m in modules)]
    assert stray == [], "a top-level test of no top-level module"
    names = [p.name for p in tests.rglob("test_*.py")]
    assert len(names) == len(set(names)), "two test files of one name (pytest imports them by basename)"
