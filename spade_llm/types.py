"""The data that flows through the pipeline, with SPEC's field names.

Every record written to a run directory is one of these models dumped as one JSON line.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TaskKind = Literal["induction", "deduction", "abduction"]
ExecStatus = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]
TestStatus = Literal["passed", "failed", "error", "timeout"]
FinalStatus = Literal["passed", "failed", "error", "timeout"]


class TestCase(BaseModel):
    """One test: positional arguments as a Python literal tuple, and the expected output.

    ``expected`` absent (not in ``model_fields_set``) means "take the reference's output";
    an explicit ``null`` means the function must return ``None``.
    """

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    input: str
    expected: Any = None

    @property
    def has_expected(self) -> bool:
        return "expected" in self.model_fields_set

    def dump(self) -> dict[str, Any]:
        return {"input": self.input, "expected": self.expected} if self.has_expected else {"input": self.input}


class Task(BaseModel):
    """A coding task: statement, reference solution and tests (SPEC "Task")."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    kind: TaskKind = "induction"
    description: str
    entry_point: str
    reference_code: str
    tests: list[TestCase]
    check_code: str | None = None
    difficulty: float = Field(default=0.5, ge=0.0, le=1.0)
    tags: list[str] = Field(default_factory=list)
    source: str = "generated"
    meta: dict[str, Any] = Field(default_factory=dict)

    def public_tests(self, n_public: int) -> list[TestCase]:
        """The tests the solver sees and gets feedback on; the rest are hidden."""
        return self.tests[: max(1, min(n_public, len(self.tests)))]

    def dump(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["tests"] = [t.dump() for t in self.tests]
        return data


class TestResult(BaseModel):
    """The verdict of one test, computed outside the sandbox from the encoded output."""

    __test__ = False

    index: int
    input: str
    status: TestStatus
    output: str | None = None
    """The program's output, shown as Python repr (for feedback), or None if none came back."""
    error: str | None = None
    """Exception type and message, or why the output could not be compared."""
    duration_ms: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class ExecutionResult(BaseModel):
    """What happened when a program ran in the sandbox (SPEC "ExecutionResult")."""

    status: ExecStatus
    return_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: float = 0.0
    tests_passed: int | None = None
    tests_total: int | None = None
    test_results: list[TestResult] | None = None

    @property
    def all_passed(self) -> bool:
        return self.tests_total is not None and self.tests_total > 0 and self.tests_passed == self.tests_total


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
        )


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Attempt(BaseModel):
    """One solver turn: the code it wrote and how that code did on all tests."""

    turn: int
    code: str
    result: ExecutionResult
    public_passed: int = 0
    public_total: int = 0


class Trajectory(BaseModel):
    """One solving episode of one task (SPEC "trajectories.jsonl")."""

    trajectory_id: str
    task_id: str
    epoch: int
    messages: list[Message]
    attempts: list[Attempt]
    final_status: FinalStatus
    reward: float
    usage: TokenUsage = Field(default_factory=TokenUsage)
    difficulty: float = 0.5
    solver_model: str = ""
    error: str | None = None
    """Why the episode ended without a judged attempt (e.g. the endpoint failed for good)."""


class Rejection(BaseModel):
    """A proposed task that did not make it, with the first gate it failed."""

    epoch: int
    reason: str
    detail: str = ""
    request_index: int | None = None
    """Which generator request of the epoch proposed it (resume skips decided requests)."""
    task_id: str | None = None
    task: dict[str, Any] | None = None


class EpochMetrics(BaseModel):
    """One row of ``metrics.jsonl``."""

    epoch: int
    difficulty: float
    pass_rate: float
    first_try_pass_rate: float
    mean_turns: float
    tasks_proposed: int
    tasks_accepted: int
    rejected_by_reason: dict[str, int]
    novelty: float
    mean_reward: float
    episodes: int = 0
    prompt_tokens: int = 0
    """Solver tokens of the epoch's episodes."""
    completion_tokens: int = 0
    generator_prompt_tokens: int = 0
    generator_completion_tokens: int = 0
    wall_s: float = 0.0
    next_difficulty: float = 0.5
