"""What a run in the sandbox returns: ``ExecutionResult`` and its ``TestResult`` per test.

Plain dataclasses, not pydantic models: the sandbox and the verdicts build them without importing
pydantic (~100 ms of every command's start), so ``spade exec`` of a program costs less than its
data models would. The records that hold them (``types.Attempt``) are pydantic models, which
validate and dump a dataclass field like a model's: the JSON of a run directory is the same
(``docs/records.md``), unknown fields are ignored on reading, and a wrong type is an error there.
``dump_json`` writes one on its own, as ``spade exec`` prints it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Literal

ExecStatus = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]
TestStatus = Literal["passed", "failed", "error", "timeout"]


@dataclass
class TestResult:
    """The verdict of one test, computed outside the sandbox from the encoded output."""

    __test__ = False  # not a pytest class

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


@dataclass
class ExecutionResult:
    """What happened when a program ran in the sandbox (docs/records.md, "ExecutionResult")."""

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
    load_error: str | None = None
    """Why the code never reached a test: it does not compile, raises on import, or lacks the entry point."""

    @property
    def all_passed(self) -> bool:
        return self.tests_total is not None and self.tests_total > 0 and self.tests_passed == self.tests_total


def dump_json(result: ExecutionResult) -> str:
    """``result`` as one line of JSON, the shape a record holds it in (every field, in order)."""
    return json.dumps(dataclasses.asdict(result), ensure_ascii=False, separators=(",", ":"))
