"""Stage 3: the solver model attempts a task over several turns, reading its own failures.

Each turn's code first runs against the task's *public* tests alone; only that execution's
failing cases, stdout/stderr tail and traceback may reach the next prompt. The *hidden* tests run
in a separate execution, when the public ones pass or on the last turn, and their output never
enters a prompt: it only decides the verdict and the reward. A task keeps at least
``MIN_HIDDEN_TESTS`` hidden tests (fewer are shown when it has few tests), so a solution that
prints or raises with its arguments cannot hand the hidden inputs to the model.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from ._util.seeding import derive_seed
from .config import RewardConfig
from .errors import LLMCallError
from .evaluator import attempt_credit, episode_reward
from .judge import final_status
from .kinds import get_kind
from .kinds.base import MIN_HIDDEN_TESTS, public_indices
from .kinds.induction import extract_code
from .kinds.mix import episode_language
from .languages import DEFAULT_ANSWER_LANGUAGE, get_toolchain
from .llm.base import LLM, TRUNCATED, LLMRequest
from .llm.stats import RoleStats
from .templates import Prompts
from .types import Attempt, ExecutionResult, Message, Task, TestCase, TestResult, TokenUsage, Trajectory

__all__ = [
    "MIN_HIDDEN_TESTS",
    "JudgeTests",
    "LLMSolver",
    "Solver",
    "extract_code",
    "first_messages",
    "public_cases",
    "split_tests",
]

FEEDBACK_VALUE_CHARS = 500
"""Longest text one value of a turn's feedback shows (a failing test's input, expected value, output or
error; one line of stderr): a longer one keeps its start and end, the middle replaced by how much was
cut. A program's output may be a megabyte, and the feedback is recorded and re-sent with every turn."""
FEEDBACK_STDERR_CHARS = 4000
"""Longest stderr tail (or load error) a turn's feedback shows: its end."""
FEEDBACK_FAILING = 10
"""Failing tests a turn's feedback lists at most (its counts still say how many failed)."""


class JudgeTests(Protocol):
    """Judges code on a task's tests (indices into ``task.tests``; None: all, or its ``check_code``), written
    in ``language`` (a name of ``languages.TOOLCHAINS``: the episode's answer language)."""

    async def __call__(
        self, task: Task, code: str, tests: Sequence[int] | None, /, *, language: str = ...
    ) -> ExecutionResult: ...


def language_variables(language: str = DEFAULT_ANSWER_LANGUAGE) -> dict[str, str]:
    """What the solver's templates are told of the answer language: ``language`` (its name in
    ``languages.TOOLCHAINS``), ``label`` (how a prompt names it: ``Python``, ``C++17``) and ``fence`` (the
    fence tag the answer is asked in: ``python``, ``cpp``). Python's render every template as before."""
    return get_toolchain(language).prompt_variables()


def split_tests(task: Task, public_tests: int) -> tuple[list[int], list[int]]:
    """Indices of the public and the hidden tests: at most ``public_tests`` shown, at least one,
    and at least ``MIN_HIDDEN_TESTS`` kept hidden whenever the task has enough tests for both.
    A task that shows its examples instead (an imported benchmark) has every test hidden; a task's
    own ``public_tests``, when set, takes the place of the run's. The rule is
    ``kinds.base.public_indices``, the one the leak gate reads: what is hidden here is what it guards."""
    public = public_indices(task, public_tests)
    return public, list(range(len(public), len(task.tests)))


def public_cases(task: Task, public_tests: int) -> list[TestCase]:
    """What the solver is shown and fed back on: the public tests, or an imported benchmark's examples."""
    if task.shows_examples:
        return list(task.examples)
    public_idx, _ = split_tests(task, public_tests)
    return [task.tests[i] for i in public_idx]


def examples_task(task: Task) -> Task:
    """An imported benchmark seen through its examples alone: judged like tests, its asserts left out."""
    return task.model_copy(
        update={"tests": list(task.examples), "check_code": None, "examples": [], "public_tests": None}
    )


def clip(text: str, limit: int = FEEDBACK_VALUE_CHARS) -> str:
    """``text`` if at most ``limit`` characters, else its first two thirds and last third of ``limit``
    around a note of how many characters were cut (deterministic: the same text, the same clip)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}...[{len(text) - head - tail} characters cut]...{text[len(text) - tail :]}"


def stderr_tail(stderr: str, lines: int) -> str:
    """The last ``lines`` non-blank lines of ``stderr``, each clipped, the whole at most
    ``FEEDBACK_STDERR_CHARS`` (its end kept)."""
    kept = [ln for ln in stderr.rstrip().splitlines() if ln.strip()][-lines:]
    tail = "\n".join(clip(ln) for ln in kept)
    if len(tail) > FEEDBACK_STDERR_CHARS:
        tail = "..." + tail[len(tail) - FEEDBACK_STDERR_CHARS :]
    return tail


def reward_difficulty(task: Task) -> float:
    """The difficulty a reward is paid at: the target the task was asked for (a generator's own
    label is a claim, and a generator that calls everything 1.0 must not inflate rewards), else the
    task's stated difficulty (imported benchmarks, user tasks)."""
    target = task.meta.get("target_difficulty")
    if isinstance(target, (int, float)) and not isinstance(target, bool) and 0.0 <= target <= 1.0:
        return float(target)
    return task.difficulty


def _not_run(indices: Sequence[int], task: Task, why: str) -> list[TestResult]:
    return [TestResult(index=i, input=task.tests[i].input, status="error", error=why) for i in indices]


def merge_results(
    task: Task, public: ExecutionResult, hidden: ExecutionResult | None, hidden_idx: list[int]
) -> ExecutionResult:
    """One verdict over all tests from the public and hidden executions (streams: the public one's)."""
    if not hidden_idx:
        return public
    if hidden is None:
        hidden_results = _not_run(hidden_idx, task, "not run: the public tests failed")
        hidden_passed, status, ms = 0, public.status, public.duration_ms
    else:
        hidden_results = list(hidden.test_results or [])
        hidden_passed = hidden.tests_passed or 0
        status = public.status if public.status != "ok" else hidden.status
        ms = public.duration_ms + hidden.duration_ms
    results = [*(public.test_results or []), *hidden_results]
    return replace(
        public,
        status=status,
        duration_ms=round(ms, 3),
        tests_passed=(public.tests_passed or 0) + hidden_passed,
        tests_total=len(task.tests),
        test_results=results,
    )


LONG_OUTPUT_LINES = 5
"""A whole program's output of more lines than this (or one clipped) gets its first difference spelled out."""


def long_output_difference(expected: object, output: str | None) -> str | None:
    """For a whole program's long output (over ``LONG_OUTPUT_LINES`` lines, or clipped in the feedback),
    where it first departs from the expected text (``stdio.first_difference``); None otherwise, and
    for a function's value."""
    from .sandbox.stdio import first_difference

    if not isinstance(expected, str) or output is None:
        return None
    texts = (expected, output)
    if all(len(t) <= FEEDBACK_VALUE_CHARS and t.count("\n") <= LONG_OUTPUT_LINES for t in texts):
        return None
    return first_difference(expected, output)


def expected_text(test: TestCase) -> str:
    """A test's expected value as text: a string as it is (a whole program's stdout), else its ``repr``
    (templates take ``expected``, the ``repr`` or a benchmark's literal, or this)."""
    return test.expected if isinstance(test.expected, str) else test.expected_repr


def first_messages(
    prompts: Prompts, task: Task, public_tests: int, language: str = DEFAULT_ANSWER_LANGUAGE
) -> list[Message]:
    """The conversation's opening (system prompt, then the task as the solver sees it, asking for the answer
    in ``language``): what an episode starts from, and what exports hand a trainer as a task's prompt."""
    shown = [
        {"input": t.input, "expected": t.expected_repr, "expected_text": expected_text(t)}
        for t in public_cases(task, public_tests)
    ]
    task_view = {
        "description": task.description,
        "entry_point": task.entry_point,
        "difficulty": task.difficulty,
        "tags": task.tags,
    }
    kind = get_kind(task.kind)
    named = language_variables(kind.answer_language(language))
    return [
        Message(role="system", content=prompts.render("solver/system.j2", **named)),
        Message(
            role="user",
            content=prompts.render(kind.first_template, task=task_view, public_tests=shown, **named, **kind.view(task)),
        ),
    ]


@dataclass(frozen=True)
class TurnVerdict:
    """One attempt's judgement."""

    public: ExecutionResult
    """The execution of the public tests alone: the only one whose output may reach a prompt."""
    result: ExecutionResult
    """The verdict over all tests (see ``merge_results``)."""
    public_ok: bool
    """Every public test passed (for an imported benchmark: every assert passed)."""
    hidden_passed: int | None
    """Hidden tests passed, or None when they were not judged (the public tests failed first)."""


class Solver(Protocol):
    """Attempts one task; ``solve`` never raises for model or program failures."""

    async def solve(
        self, task: Task, epoch: int, sample_index: int = 0, deadline: float | None = None
    ) -> Trajectory: ...


class LLMSolver:
    """A multi-turn solver backed by a chat model and its task kind's templates."""

    def __init__(
        self,
        llm: LLM,
        prompts: Prompts,
        judge_tests: JudgeTests,
        *,
        seed: int,
        max_turns: int,
        public_tests: int,
        temperature: float,
        max_tokens: int,
        stderr_lines: int = 15,
        reward: RewardConfig | None = None,
        stats: RoleStats | None = None,
        languages: Mapping[str, float] | Iterable[str] | None = None,
        samples_per_task: int = 1,
    ) -> None:
        """``stats``, when given, counts the content faults of answers (``truncated``, ``no_code``).
        ``languages``: the run's ``curriculum.languages`` (default: Python alone), from which an episode of a
        kind with ``answer_languages`` gets its language by its key, spread over ``samples_per_task``
        (``kinds.mix.episode_language``)."""
        self.stats = stats
        self.languages: Mapping[str, float] | list[str] = (
            [DEFAULT_ANSWER_LANGUAGE]
            if languages is None
            else languages
            if isinstance(languages, Mapping)
            else list(languages)
        )
        self.samples_per_task = samples_per_task
        self.llm = llm
        self.prompts = prompts
        self.judge_tests = judge_tests
        self.seed = seed
        self.max_turns = max_turns
        self.public_tests = public_tests
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.stderr_lines = stderr_lines
        self.reward = reward or RewardConfig()

    def first_messages(self, task: Task, language: str = DEFAULT_ANSWER_LANGUAGE) -> list[Message]:
        return first_messages(self.prompts, task, self.public_tests, language)

    def language_of(self, task: Task, epoch: int, sample_index: int) -> str:
        """The episode's answer language: from the run's mix by its key for a kind with ``answer_languages``
        (``kinds.mix.episode_language``), else Python."""
        if not get_kind(task.kind).answer_languages:
            return DEFAULT_ANSWER_LANGUAGE
        return episode_language(
            self.languages,
            seed=self.seed,
            epoch=epoch,
            task_id=task.task_id,
            sample_index=sample_index,
            samples=self.samples_per_task,
        )

    def repair_message(self, task: Task, attempt: Attempt, public_result: ExecutionResult) -> Message:
        """The next prompt, built from the public execution alone (for an imported benchmark: the run
        of its docstring examples, never of its asserts)."""
        cases = public_cases(task, self.public_tests)
        asserts_only = task.shows_examples and not task.examples  # the execution ran the hidden asserts
        public: list[TestResult] = [] if asserts_only else list(public_result.test_results or [])
        failing = [  # each value clipped: one turn's feedback is bounded whatever the program printed
            {
                "input": clip(r.input),
                "expected": clip(cases[r.index].expected_repr),
                "expected_text": clip(expected_text(cases[r.index])),
                "output": None if r.output is None else clip(r.output),
                "error": None if r.error is None else clip(r.error),
                "difference": long_output_difference(cases[r.index].expected, r.output),
            }
            for r in public
            if not r.passed and r.index < len(cases)
        ][:FEEDBACK_FAILING]
        if not attempt.code.strip():
            tail = _no_code_note(attempt.language)
        elif asserts_only:
            # the benchmark's asserts are its hidden tests: their traceback would quote them
            tail = clip(public_result.load_error or "", FEEDBACK_STDERR_CHARS)
        else:
            tail = stderr_tail(public_result.stderr, self.stderr_lines)
        kind = get_kind(task.kind)
        content = self.prompts.render(
            kind.repair_template,
            entry_point=task.entry_point,
            turn=attempt.turn + 1,
            code=attempt.code,
            status=public_result.status,
            passed=sum(r.passed for r in public),
            total=len(public),
            failing=failing,
            stderr_tail=tail,
            **language_variables(attempt.language),
            **kind.view(task),
        )
        return Message(role="user", content=content)

    async def _judge_turn(
        self,
        task: Task,
        code: str,
        public_idx: list[int],
        hidden_idx: list[int],
        last: bool,
        language: str = DEFAULT_ANSWER_LANGUAGE,
    ) -> TurnVerdict:
        """How one attempt's code (in ``language``) did: on the public tests alone, then (when needed) on the
        hidden ones."""
        if task.shows_examples:  # an imported benchmark: its asserts are all hidden, and decide
            result = await self.judge_tests(task, code, None, language=language)
            public = result
            if task.examples:  # its docstring examples are the public tests: fed back, never a verdict
                public = await self.judge_tests(examples_task(task), code, None, language=language)
            return TurnVerdict(public=public, result=result, public_ok=result.all_passed, hidden_passed=None)
        public = await self.judge_tests(task, code, public_idx, language=language)
        public_ok = bool(public.test_results) and all(r.passed for r in public.test_results or [])
        hidden: ExecutionResult | None = None
        timed_out = public.status == "timeout" or any(r.status == "timeout" for r in public.test_results or [])
        # on the last turn the hidden tests still run for partial credit, unless the code hangs anyway
        if hidden_idx and (public_ok or (last and not timed_out)):
            if public.load_error is not None:  # the code never loads: no second execution needed
                hidden = ExecutionResult(
                    status=public.status,
                    tests_passed=0,
                    tests_total=len(hidden_idx),
                    test_results=_not_run(hidden_idx, task, public.load_error),
                    load_error=public.load_error,
                )
            else:
                hidden = await self.judge_tests(task, code, hidden_idx, language=language)
        return TurnVerdict(
            public=public,
            result=merge_results(task, public, hidden, hidden_idx),
            public_ok=public_ok,
            hidden_passed=None if hidden is None else hidden.tests_passed or 0,
        )

    async def solve(self, task: Task, epoch: int, sample_index: int = 0, deadline: float | None = None) -> Trajectory:
        started = time.monotonic()
        kind = get_kind(task.kind)
        language = self.language_of(task, epoch, sample_index)
        messages = self.first_messages(task, language)
        attempts: list[Attempt] = []
        usage = TokenUsage()
        error: str | None = None
        flags: list[str] = []
        public_idx, hidden_idx = split_tests(task, self.public_tests)
        n_public = len(public_cases(task, self.public_tests))
        for turn in range(1, self.max_turns + 1):
            if deadline is not None and time.time() >= deadline:
                flags.append("budget_exhausted")
                error = error or "the task's time budget ran out"
                break
            request = LLMRequest(
                messages=list(messages),
                role="solver",
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=derive_seed(self.seed, "solve", epoch, task.task_id, sample_index, turn),
                metadata={
                    "epoch": epoch,
                    "task_id": task.task_id,
                    "sample_index": sample_index,
                    "turn": turn,
                    "difficulty": task.difficulty,
                },
            )
            try:
                response = await self.llm.complete(request)
            except LLMCallError as e:
                error = str(e)
                break
            usage = usage + response.usage
            messages.append(Message(role="assistant", content=response.text))
            code = kind.read_answer(response.text, language)
            last = turn == self.max_turns
            cut = response.finish_reason in TRUNCATED
            if self.stats is not None and (cut or not code):
                self.stats.fault("truncated" if cut else "no_code")
            if code:
                verdict = await self._judge_turn(task, code, public_idx, hidden_idx, last, language)
            else:
                why = "the answer was cut off" if cut else "no code in the answer"
                failed = ExecutionResult(
                    status="error",
                    stderr=f"{why}\n",
                    tests_passed=0,
                    tests_total=max(1, len(task.tests)),
                    load_error=why,
                )
                verdict = TurnVerdict(public=failed, result=failed, public_ok=False, hidden_passed=None)
            public_results = [] if task.shows_examples and not task.examples else verdict.public.test_results or []
            attempt = Attempt(
                turn=turn,
                code=code,
                result=verdict.result,
                public_passed=sum(r.passed for r in public_results if r.index < n_public),
                public_total=n_public,
                hidden_passed=verdict.hidden_passed,
                hidden_total=len(hidden_idx),
                raw=response.text,
                finish_reason=response.finish_reason,
                message_index=len(messages) - 1,
                language=language,
            )
            attempts.append(attempt)
            if verdict.result.all_passed or verdict.public_ok or last:
                break
            messages.append(self.repair_message(task, attempt, verdict.public))
        if attempts:
            last_attempt = attempts[-1]
            status = final_status(last_attempt.result)
            fraction = attempt_credit(task, last_attempt)  # partial credit pays the tests never shown alone
            if (  # the kind says whether passing the public tests and failing a hidden one suggests hardcoding
                get_kind(task.kind).flags_hardcoding
                and status != "passed"
                and last_attempt.public_total
                and last_attempt.public_passed == last_attempt.public_total
                and last_attempt.hidden_passed is not None
            ):
                flags.append("hardcoded_suspect")
        else:
            status, fraction = "error", 0.0
        difficulty = reward_difficulty(task)
        reward = episode_reward(status, len(attempts), difficulty, fraction, self.reward)
        tid = hashlib.sha256(f"{self.seed}:{epoch}:{task.task_id}:{sample_index}".encode()).hexdigest()[:10]
        return Trajectory(
            trajectory_id=f"{task.task_id}-{sample_index}-{tid}",
            task_id=task.task_id,
            epoch=epoch,
            sample_index=sample_index,
            kind=task.kind,
            language=language,
            messages=messages,
            attempts=attempts,
            final_status=status,
            reward=reward,
            usage=usage,
            difficulty=difficulty,
            solver_model=self.llm.model,
            flags=flags,
            error=error,
            wall_s=round(time.monotonic() - started, 3),
        )


def _no_code_note(language: str) -> str:
    """A repair prompt's note when a reply held no code: where to put it (Python's words as they always were)."""
    if language == DEFAULT_ANSWER_LANGUAGE:
        return "No code found: put the function in a ```python code block."
    return f"No code found: put the complete program in a ```{get_toolchain(language).fence} code block."
