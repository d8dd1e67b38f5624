"""spade_llm: self-play data generation for code LLMs in executable environments.

The public API is imported lazily so that ``spade --help`` and other light commands start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    # data
    "Task": "spade_llm.types",
    "TestCase": "spade_llm.types",
    "ExecutionResult": "spade_llm.types",
    "TestResult": "spade_llm.types",
    "Attempt": "spade_llm.types",
    "Trajectory": "spade_llm.types",
    "EpochMetrics": "spade_llm.types",
    "Message": "spade_llm.types",
    "TokenUsage": "spade_llm.types",
    # config and errors
    "RunConfig": "spade_llm.config",
    "load_config": "spade_llm.config",
    "SpadeError": "spade_llm.errors",
    "UserError": "spade_llm.errors",
    "TemplateError": "spade_llm.errors",
    "ModelError": "spade_llm.errors",
    "LLMCallError": "spade_llm.errors",
    "SandboxUnavailable": "spade_llm.errors",
    # roles
    "LLM": "spade_llm.llm.base",
    "LLMRequest": "spade_llm.llm.base",
    "LLMResponse": "spade_llm.llm.base",
    "get_llm": "spade_llm.llm.registry",
    "Sandbox": "spade_llm.sandbox.base",
    "Limits": "spade_llm.sandbox.base",
    "get_sandbox": "spade_llm.sandbox.registry",
    "Generator": "spade_llm.generator",
    "Solver": "spade_llm.solver",
    "Store": "spade_llm.store",
    "read_run": "spade_llm.store",
    "RunRecords": "spade_llm.store",
    # running things
    "start_run": "spade_llm.session",
    "solve_tasks": "spade_llm.session",
    "read_tasks": "spade_llm.tasksets.taskfile",
    "read_samples": "spade_llm.tasksets.taskfile",
    "verify_tasks": "spade_llm.tasksets.judging",
    "evaluate_samples": "spade_llm.tasksets.judging",
    "Evaluation": "spade_llm.tasksets.judging",
    "Validator": "spade_llm.validation",
    "episode_reward": "spade_llm.evaluator",
}

__all__ = [
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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # pragma: no cover
    from .config import RunConfig, load_config
    from .errors import LLMCallError, ModelError, SandboxUnavailable, SpadeError, TemplateError, UserError
    from .evaluator import episode_reward
    from .generator import Generator
    from .llm.base import LLM, LLMRequest, LLMResponse
    from .llm.registry import get_llm
    from .sandbox.base import Limits, Sandbox
    from .sandbox.registry import get_sandbox
    from .session import solve_tasks, start_run
    from .solver import Solver
    from .store import RunRecords, Store, read_run
    from .tasksets.judging import Evaluation, evaluate_samples, verify_tasks
    from .tasksets.taskfile import read_samples, read_tasks
    from .types import (
        Attempt,
        EpochMetrics,
        ExecutionResult,
        Message,
        Task,
        TestCase,
        TestResult,
        TokenUsage,
        Trajectory,
    )
    from .validation import Validator
