"""Prompt templates: Jinja files rendered with StrictUndefined.

A user folder (``--prompts DIR`` / ``prompts_dir``) overrides any packaged template by its
relative file name (e.g. ``solver/repair.j2``); the rest come from the package.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from .errors import TemplateError, UserError

PACKAGED_DIR = Path(str(resources.files("spade_llm.prompts")))

# What each template is rendered with: `spade prompts check` renders a user's override with
# these sample values, so a template that uses an undefined variable fails there, not mid-run.
TEMPLATE_VARIABLES: dict[str, dict[str, Any]] = {
    "generator/system.j2": {},
    "generator/propose.j2": {
        "n": 4,
        "difficulty": 0.5,
        "capability": 0.5,
        "avoid_tags": ["strings"],
        "focus": "graphs",
        "goal": "dynamic programming on strings",
        "examples": [
            {
                "entry_point": "f",
                "difficulty": 0.4,
                "description": "d",
                "reference_code": "def f(x):\n    return x\n",
                "tests": [{"input": "(1,)", "expected": 1}],
                "tags": ["t"],
                "pass_rate": 0.5,
                "edge": "edge",
            },
            {
                "entry_point": "g",
                "difficulty": 0.2,
                "description": "e",
                "reference_code": "def g(x):\n    return x\n",
                "tests": [{"input": "(1,)", "expected": 1}],
                "tags": [],
                "pass_rate": None,
                "edge": None,
            },
        ],
        "json_shape": '{"tasks": [...]}',
        "kind": "deduction",
    },
    "solver/system.j2": {},
    "solver/tools.j2": {"kind": "induction", "public": 3},
    "solver/first.j2": {
        "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "(1,)", "expected": "1"}],
    },
    "solver/deduction_first.j2": {
        "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "(1,)", "expected": "1"}],
        "program": "def f(x):\n    return x + 1",
        "queries": [{"call": "f(1)"}],
    },
    "solver/abduction_first.j2": {
        "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "(1,)", "expected": "2"}],
        "program": "def f(x):\n    return x + 1",
        "queries": [{"output": "2"}],
    },
    "solver/deduction_repair.j2": {
        "entry_point": "f",
        "turn": 2,
        "code": "f(1) == 3",
        "status": "ok",
        "passed": 0,
        "total": 1,
        "failing": [{"input": "(1,)", "expected": "2", "output": "3", "error": None}],
        "stderr_tail": "",
        "program": "def f(x):\n    return x + 1",
        "queries": [{"call": "f(1)"}],
    },
    "solver/abduction_repair.j2": {
        "entry_point": "f",
        "turn": 2,
        "code": "f(5) == 2",
        "status": "ok",
        "passed": 0,
        "total": 1,
        "failing": [{"input": "(5,)", "expected": "2", "output": "6", "error": None}],
        "stderr_tail": "",
        "program": "def f(x):\n    return x + 1",
        "queries": [{"output": "2"}],
    },
    "solver/repair.j2": {
        "entry_point": "f",
        "turn": 2,
        "code": "def f(x):\n    return x\n",
        "status": "error",
        "passed": 0,
        "total": 3,
        "failing": [{"input": "(1,)", "expected": "2", "output": "1", "error": None}],
        "stderr_tail": "Traceback ...\nValueError: bad",
    },
}


class Prompts:
    """Renders the templates of one run, user folder first."""

    def __init__(self, user_dir: str | Path | None = None) -> None:
        self.user_dir = Path(user_dir) if user_dir else None
        if self.user_dir is not None and not self.user_dir.is_dir():
            raise UserError(f"prompts folder not found: {self.user_dir}")
        search = [str(self.user_dir)] if self.user_dir else []
        search.append(str(PACKAGED_DIR))
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(search),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )

    def source_path(self, name: str) -> Path:
        if self.user_dir is not None and (self.user_dir / name).is_file():
            return self.user_dir / name
        return PACKAGED_DIR / name

    def render(self, name: str, /, **variables: Any) -> str:
        """Render template ``name`` (e.g. ``solver/first.j2``).

        Raises:
            TemplateError: the template is missing, does not parse, or uses an undefined name.
        """
        where = self.source_path(name)
        try:
            return self.env.get_template(name).render(**variables).strip() + "\n"
        except jinja2.TemplateNotFound:
            raise TemplateError(f"prompt template not found: {name}") from None
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(f"prompt template {where}: syntax error at line {e.lineno}: {e.message}") from None
        except jinja2.UndefinedError as e:
            raise TemplateError(f"prompt template {where}: {e.message}") from None
        except Exception as e:  # a filter or expression that fails on real values
            raise TemplateError(f"prompt template {where}: {type(e).__name__}: {e}") from None

    @cached_property
    def hashes(self) -> dict[str, str]:
        """sha256 of each template in use, for the run manifest."""
        return {
            name: hashlib.sha256(self.source_path(name).read_bytes()).hexdigest()[:16] for name in TEMPLATE_VARIABLES
        }

    def check_all(self, sample: Mapping[str, Mapping[str, Any]] = TEMPLATE_VARIABLES) -> list[str]:
        """Render every template with sample values; return one problem line per failure."""
        problems = []
        for name, variables in sample.items():
            try:
                self.render(name, **variables)
            except TemplateError as e:
                problems.append(str(e))
        if self.user_dir is not None:
            known = set(sample)
            for path in sorted(self.user_dir.rglob("*.j2")):
                rel = path.relative_to(self.user_dir).as_posix()
                if rel not in known:
                    problems.append(f"{path}: not a template spade uses (known: {', '.join(sorted(known))})")
        return problems


def list_templates() -> list[str]:
    return sorted(TEMPLATE_VARIABLES)
