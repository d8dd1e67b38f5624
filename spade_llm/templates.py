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

KIND_VARIABLE = "kind"
"""A template rendered with this variable (the proposal and tool templates) is checked once per kind."""


def _template_variables() -> dict[str, dict[str, Any]]:
    """What each template is rendered with: `spade prompts check` renders a user's override with
    these sample values, so a template that uses an undefined variable fails there, not mid-run. Each
    kind's first and repair templates take the samples its ``TaskKind`` gives."""
    from .kinds import DEFAULT_KIND, KIND_NAMES, get_kind
    from .languages import DEFAULT_ANSWER_LANGUAGE, get_toolchain

    kinds = [get_kind(name) for name in KIND_NAMES]
    named = get_toolchain(DEFAULT_ANSWER_LANGUAGE).prompt_variables()  # the solver's are told the answer's language
    return {
        "generator/system.j2": {},
        "generator/propose.j2": {
            "n": 4,
            "difficulty": 0.5,
            "capability": 0.5,
            "avoid_tags": ["strings"],
            "repeated": [{"entry_point": "f", "description": "d"}],
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
            "base": {
                "description": "d",
                "entry_point": "f",
                "reference_code": "def f(x):\n    return x\n",
                "tests": [{"input": "(1,)", "expected": 1}],
                "tags": [],
            },
            KIND_VARIABLE: DEFAULT_KIND,
        },
        "solver/system.j2": dict(named),
        "solver/tools.j2": {KIND_VARIABLE: DEFAULT_KIND, "public": 3},
        **{kind.first_template: {**named, **kind.sample_first} for kind in kinds},
        **{kind.repair_template: {**named, **kind.sample_repair} for kind in kinds},
    }


TEMPLATE_VARIABLES: dict[str, dict[str, Any]] = _template_variables()


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
            for each in _per_kind(variables):
                try:
                    self.render(name, **each)
                except TemplateError as e:
                    problems.append(str(e))
                    break
        if self.user_dir is not None:
            known = set(sample)
            for path in sorted(self.user_dir.rglob("*.j2")):
                rel = path.relative_to(self.user_dir).as_posix()
                if rel not in known:
                    problems.append(f"{path}: not a template spade uses (known: {', '.join(sorted(known))})")
        return problems


def _per_kind(variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``variables``, once for each kind when they hold a ``kind`` (each kind's branch is rendered)."""
    if KIND_VARIABLE not in variables:
        return [dict(variables)]
    from .kinds import KIND_NAMES

    return [{**variables, KIND_VARIABLE: name} for name in KIND_NAMES]


def list_templates() -> list[str]:
    return sorted(TEMPLATE_VARIABLES)
