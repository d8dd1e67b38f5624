"""The public API, pinned: a name added to or dropped from ``spade_llm`` is a decision, made here."""

from __future__ import annotations

import ast
from pathlib import Path

import spade_llm

PUBLIC = [
    "LLM",
    "Attempt",
    "EpochMetrics",
    "Evaluation",
    "ExecutionResult",
    "Generator",
    "LLMCallError",
    "LLMRequest",
    "LLMResponse",
    "Limits",
    "Message",
    "ModelError",
    "RunConfig",
    "RunRecords",
    "Sandbox",
    "SandboxUnavailable",
    "Solver",
    "SpadeError",
    "Store",
    "Task",
    "TemplateError",
    "TestCase",
    "TestResult",
    "TokenUsage",
    "Trajectory",
    "UserError",
    "Validator",
    "episode_reward",
    "evaluate_samples",
    "get_llm",
    "get_sandbox",
    "load_config",
    "read_run",
    "read_samples",
    "read_tasks",
    "solve_tasks",
    "start_run",
    "verify_tasks",
]


def test_all_is_the_pinned_list():
    assert spade_llm.__all__ == PUBLIC


def test_every_public_name_resolves_lazily_and_for_type_checkers():
    # each name: in the lazy table, importable from where the table says, and in the TYPE_CHECKING block
    source = Path(spade_llm.__file__).read_text(encoding="utf-8")
    checked = {
        alias.asname or alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for stmt in node.body
        if isinstance(stmt, ast.ImportFrom)
        for alias in stmt.names
    }
    for name in PUBLIC:
        assert getattr(spade_llm, name) is not None, name
        assert name in checked, f"{name} is missing from the TYPE_CHECKING imports"
    assert set(spade_llm._EXPORTS) == set(PUBLIC)
