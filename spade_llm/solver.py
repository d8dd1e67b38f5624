"""Stage 3: the solver model attempts a task over several turns, reading its own failures.

Each turn's code runs against all of the task's tests in one sandbox execution; the repair
prompt shows only the public tests' failures and the tail of stderr, so hidden tests stay
hidden. The episode stops at the first attempt that passes every public test.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Protocol

from .config import RewardConfig
from .errors import LLMCallError
from .evaluator import episode_reward
from .llm.base import LLM, LLMRequest
from .seeding import derive_seed
from .templates import Prompts
from .types import Attempt, ExecutionResult, FinalStatus, Message, Task, TestResult, TokenUsage, Trajectory

_CODE_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)

RunTests = Callable[[str, Task], Awaitable[ExecutionResult]]
"""Runs code against all of a task's tests in the sandbox (injected by the controller)."""


def extract_code(text: str) -> str:
    """The code in a model's answer: the last python-tagged fenced block, else the last fenced
    block, else the whole answer when it looks like code, else ''."""
    blocks = [(lang.lower(), body) for lang, body in _CODE_BLOCK.findall(text)]
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    if python:
        return python[-1].strip("\n") + "\n"
    if blocks:
        return blocks[-1][1].strip("\n") + "\n"
    if re.search(r"^\s*(def|class|import|from)\s", text, re.M):
        return text.strip("\n") + "\n"
    return ""


def _final_status(result: ExecutionResult) -> FinalStatus:
    if result.all_passed:
        return "passed"
    if result.status == "timeout" or any(r.status == "timeout" for r in result.test_results or []):
        return "timeout"
    if result.status == "error" and not result.test_results:
        return "error"
    return "failed"


def stderr_tail(stderr: str, lines: int) -> str:
    kept = [ln for ln in stderr.rstrip().splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


class Solver(Protocol):
    """Attempts one task; ``solve`` never raises for model or program failures."""

    async def solve(self, task: Task, epoch: int) -> Trajectory: ...


class LLMSolver:
    """A multi-turn solver backed by a chat model and the ``solver/*.j2`` templates."""

    def __init__(
        self,
        llm: LLM,
        prompts: Prompts,
        run_tests: RunTests,
        *,
        seed: int,
        max_turns: int,
        public_tests: int,
        temperature: float,
        max_tokens: int,
        stderr_lines: int = 15,
        reward: RewardConfig | None = None,
    ) -> None:
        self.llm = llm
        self.prompts = prompts
        self.run_tests = run_tests
        self.seed = seed
        self.max_turns = max_turns
        self.public_tests = public_tests
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.stderr_lines = stderr_lines
        self.reward = reward or RewardConfig()

    def first_messages(self, task: Task) -> list[Message]:
        shown = [{"input": t.input, "expected": repr(t.expected)} for t in task.public_tests(self.public_tests)]
        task_view = {
            "description": task.description,
            "entry_point": task.entry_point,
            "difficulty": task.difficulty,
            "tags": task.tags,
        }
        return [
            Message(role="system", content=self.prompts.render("solver/system.j2")),
            Message(role="user", content=self.prompts.render("solver/first.j2", task=task_view, public_tests=shown)),
        ]

    def repair_message(self, task: Task, attempt: Attempt) -> Message:
        n_public = len(task.public_tests(self.public_tests))
        public: list[TestResult] = (attempt.result.test_results or [])[:n_public]
        failing = [
            {"input": r.input, "expected": repr(task.tests[r.index].expected), "output": r.output, "error": r.error}
            for r in public
            if not r.passed
        ]
        if not attempt.code.strip():
            tail = "No code found: put the function in a ```python code block."
        else:
            tail = stderr_tail(attempt.result.stderr, self.stderr_lines)
        content = self.prompts.render(
            "solver/repair.j2",
            entry_point=task.entry_point,
            turn=attempt.turn + 1,
            code=attempt.code,
            status=attempt.result.status,
            passed=sum(r.passed for r in public),
            total=n_public,
            failing=failing,
            stderr_tail=tail,
        )
        return Message(role="user", content=content)

    async def solve(self, task: Task, epoch: int) -> Trajectory:
        messages = self.first_messages(task)
        attempts: list[Attempt] = []
        usage = TokenUsage()
        error: str | None = None
        n_public = len(task.public_tests(self.public_tests))
        for turn in range(1, self.max_turns + 1):
            request = LLMRequest(
                messages=list(messages),
                role="solver",
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=derive_seed(self.seed, "solve", epoch, task.task_id, turn),
                metadata={"epoch": epoch, "task_id": task.task_id, "turn": turn, "difficulty": task.difficulty},
            )
            try:
                response = await self.llm.complete(request)
            except LLMCallError as e:
                error = str(e)
                break
            usage = usage + response.usage
            messages.append(Message(role="assistant", content=response.text))
            code = extract_code(response.text)
            if code:
                result = await self.run_tests(code, task)
            else:
                why = "the answer was cut off" if response.finish_reason == "length" else "no code in the answer"
                result = ExecutionResult(status="error", stderr=f"{why}\n", tests_passed=0, tests_total=len(task.tests))
            public = (result.test_results or [])[:n_public]
            attempt = Attempt(
                turn=turn, code=code, result=result, public_passed=sum(r.passed for r in public), public_total=n_public
            )
            attempts.append(attempt)
            if result.all_passed or (public and all(r.passed for r in public)) or turn == self.max_turns:
                break
            messages.append(self.repair_message(task, attempt))
        if attempts:
            last = attempts[-1].result
            status = _final_status(last)
            fraction = (last.tests_passed or 0) / max(1, last.tests_total or len(task.tests))
        else:
            status, fraction = "error", 0.0
        reward = episode_reward(status, len(attempts), task.difficulty, fraction, self.reward)
        tid = hashlib.sha256(f"{self.seed}:{epoch}:{task.task_id}".encode()).hexdigest()[:12]
        return Trajectory(
            trajectory_id=f"{task.task_id}-{tid}",
            task_id=task.task_id,
            epoch=epoch,
            messages=messages,
            attempts=attempts,
            final_status=status,
            reward=reward,
            usage=usage,
            difficulty=task.difficulty,
            solver_model=self.llm.model,
            error=error,
        )


async def gather_limited(limit: int, coros: list[Awaitable[object]]) -> list[object]:
    sem = asyncio.Semaphore(limit)

    async def one(c: Awaitable[object]) -> object:
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))
