"""The solver's rewards for trainers: TRL's ``code_reward`` and verl's ``compute_score`` (``spade_llm.rewards``).

A trainer's reward must mean what the loop's verdict means, or the policy learns something else:
so an answer is judged here by the same code as in the loop (``Judge``, the task kind's ``check_answer``,
``final_status``), on *every* test of the task's ground truth, hidden ones included
(``spade_llm.rewards.groundtruth``: exports put it in the GRPO rows' ``ground_truth`` column and in verl's
``reward_model.ground_truth``), or on the tests of a ground truth in the field's formats (verl's
``prime_code`` shape, LiveCodeBench's, SandboxFusion's: ``spade_llm.rewards.field_formats``), so a
CodeContests or APPS dataset made for verl is judged here too.

Scoring (one rule for both trainers):

* **1.0** when the answer passes every test, else **0.0**. With partial credit
  (``make_code_reward(partial_credit=True)``, verl's ``reward_kwargs: {partial_credit: true}``) the
  fraction of the *hidden* tests passed instead (``evaluator.credited_fraction``, the loop's rule):
  the public ones were shown, so code that hard-codes them earns nothing. Binary is the default.
* **0.0** for an answer with nothing to judge: for ``induction`` tasks the code is the *last*
  fenced block tagged ``python``/``py``/``python3`` and there is no fallback (the loop's
  ``extract_code`` also takes untagged blocks and bare code; a trainer should teach the format it
  is asked for); for ``deduction`` and ``abduction`` the kind's own ``parse_answer``. A whole program
  asked in another language (the ground truth's ``language``, else the row's ``language`` column) is the
  last block tagged for that language (``languages.TOOLCHAINS``' ``fence_tags``), judged in it. Code that does
  not load, crashes, times out or runs out of memory scores what it passed: 0.0 when binary.
* **Errors raise**, they are never a silent 0.0 (which a trainer would read as a weak policy): a
  malformed ground truth raises one ``UserError`` before anything runs, as does a bad setting (an
  unknown backend); a sandbox that cannot run programs (``SandboxUnavailable``) is restarted once
  and retried, then raised. An unexpected exception while judging one answer (an answer our
  readers choke on) is logged as a warning and scores 0.0 with status ``error``.
* A TRL row whose ``ground_truth`` is None (a mixed dataset) gets None: TRL's "does not apply".

Use:

* TRL: ``GRPOTrainer(reward_funcs=[code_reward], train_dataset=<the GRPO export>)``, or
  ``code_reward_async``, or ``make_code_reward(partial_credit=True)``; multi-turn with tools:
  ``spade_llm.trl.SpadeCodingEnv``.
* verl (0.9's keys): ``reward.custom_reward_function.path=pkg://spade_llm.rewards``,
  ``reward.custom_reward_function.name=compute_score`` (or ``compute_score_async``). The dict's
  extra keys are the same for every answer and never None: verl's agent loop takes the first
  answer's keys for all, and its validation
  metrics take means of every key whose values are not strings (``status`` is a string, skipped
  there and kept in rollout dumps; ``status_code`` is its number). ``acc`` makes verl report the
  all-tests pass rate as its core validation metric.

Speed: the sandbox is created once and kept (bwrap keeps warm workers, which is what makes a call
cheap), and one call's completions are judged concurrently on a bounded thread pool. The module's
functions share a default ``Rewarder`` built on first use: backend from ``$SPADE_SANDBOX``
(default ``auto``), the default limits and per-test timeout, closed at interpreter exit. Build a
``Rewarder`` of your own for other settings. A ``Rewarder`` pickles (TRL's ``AsyncGRPOTrainer``
pickles reward functions into its rollout process; Ray ships verl's to workers): the copy starts
its own sandbox on first use, as does a forked child.

Importing this module costs no ``litellm``/``openai`` (trainer processes import it early).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..errors import SandboxUnavailable, UserError
from ..evaluator import credited_fraction, outcome_reward, shown_tests
from ..judge import DEFAULT_TEST_TIMEOUT_S, MAX_TEST_TIMEOUTS, Judge, final_status
from ..kinds import DEFAULT_KIND, get_kind
from ..kinds.base import strict_python_block
from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..sandbox.base import Limits, Sandbox
from ..sandbox.registry import AUTO
from ..types import ExecutionResult, Task
from .groundtruth import ground_truth_language, task_from_ground_truth

__all__ = [
    "STATUS_CODES",
    "CodeReward",
    "Rewarder",
    "Verdict",
    "code_reward",
    "code_reward_async",
    "completion_text",
    "compute_score",
    "compute_score_async",
    "default_rewarder",
    "extract_answer",
    "make_code_reward",
    "parse_ground_truth",
    "row_language",
    "row_task",
    "strict_python_block",
    "task_from_columns",
]

logger = logging.getLogger("spade_llm.rewards")

RewardStatus = Literal["passed", "failed", "timeout", "error", "no_code"]
STATUS_CODES: Final[dict[str, int]] = {"passed": 0, "failed": 1, "timeout": 2, "error": 3, "no_code": 4}
"""``status_code`` in ``compute_score``'s dict: a number for each status, for loggers that keep numbers only."""
ROW_TASK_COLUMNS: Final = ("reference_code", "public", "task_id", "checker")
"""The columns beside ``tests``, ``entry_point`` and ``kind`` a row's task is read from when it has them."""
ROW_COLUMNS: Final = ("ground_truth", "tests", "entry_point", "kind", "language", *ROW_TASK_COLUMNS)
"""The dataset columns a reward reads; TRL passes every column, and its own objects, as keywords."""
SANDBOX_ENV: Final = "SPADE_SANDBOX"
"""Environment variable naming the default rewarder's backend (``auto``, ``bwrap``, ``subprocess``, ``docker``)."""


# -- reading answers ---------------------------------------------------------------------------------


def extract_answer(task: Task, text: str, language: str = DEFAULT_ANSWER_LANGUAGE) -> str:
    """What gets judged in a model's answer ``text``, as the task's kind reads a whole completion
    (``TaskKind.read_strict``: the strict python block for ``induction``, the kind's
    ``parse_answer`` for the others, the last block tagged for ``language`` for a whole program in
    another); '' when there is nothing to judge."""
    return get_kind(task.kind).read_strict(text, language)


def completion_text(completion: Any) -> str:
    """A TRL completion's text: a string as is; for a conversational one (a list of message dicts),
    the content of the last assistant message (multi-turn tool use interleaves tool messages);
    content given as parts keeps their text. '' when there is no assistant text (or the completion is
    of no shape this reads: a reward must not fail a whole batch on one odd row)."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content"))
    if not isinstance(completion, Iterable) or isinstance(completion, (bytes, bytearray)):
        return ""
    for message in reversed(list(completion)):
        if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):  # one part on its own
        content = [content]
    if not isinstance(content, Iterable) or isinstance(content, (bytes, bytearray)):
        return ""
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "".join(parts)


# -- ground truths ------------------------------------------------------------------------------------


def _with_split(found: tuple[Task, int]) -> tuple[Task, int]:
    """A ground truth's task keeping its ``public`` count as its ``public_tests``: partial credit needs to
    know which tests were shown (``verdict_of``), and the solver's split of the task is then the same."""
    task, public = found
    if public > 0 and not task.shows_examples:
        task = task.model_copy(update={"public_tests": public})
    return task, public


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> tuple[Task, int]:
    """GRPO batches repeat each row's ground truth once per generation: parse each string once."""
    return _with_split(task_from_ground_truth(text))


def parse_ground_truth(value: Any) -> tuple[Task, int]:
    """The task and public test count a ground truth (JSON string or mapping) describes.

    Raises:
        UserError: not a spade_llm ground truth.
    """
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        return _parse_cached(value)
    if isinstance(value, Mapping):
        return _with_split(task_from_ground_truth(value))
    raise UserError(f"a ground truth is a JSON string or object, got {type(value).__name__}")


def task_from_columns(tests: Any, entry_point: Any, kind: Any = None, **extra: Any) -> tuple[Task, int]:
    """The task behind a GRPO row without a ``ground_truth`` column, from its ``tests`` (JSON string
    or list), ``entry_point`` and ``kind`` columns (``reference_code``, ``public``, ``task_id`` and
    ``checker`` when the row has them: deduction and abduction need the reference, a program task
    whose outputs may differ its checker).

    Raises:
        UserError: the columns do not describe a task.
    """
    if isinstance(tests, (str, bytes)):
        try:
            tests = json.loads(tests)
        except ValueError as e:
            raise UserError(f"the tests column is not JSON: {e}") from None
    kind = kind or DEFAULT_KIND
    found = get_kind(str(kind))
    if found.needs_reference and not extra.get("reference_code"):
        raise UserError(f"a {kind} task needs its program: use the `ground_truth` column (the `tests` column lacks it)")
    if found.judge_fields:  # a bug fix's buggy code: without it an unchanged answer would be paid
        names = ", ".join(sorted(found.judge_fields))
        raise UserError(f"a {kind} task is judged with its {names}: use the `ground_truth` column (no column has it)")
    value: dict[str, Any] = {"tests": tests, "entry_point": entry_point, "kind": kind}
    for key in ROW_TASK_COLUMNS:
        if extra.get(key) is not None:
            value[key] = extra[key]
    if "public" not in value:
        value["public"] = 1
    return _with_split(task_from_ground_truth(value))


def row_task(row: Mapping[str, Any]) -> tuple[Task, int] | None:
    """A dataset row's task: from its ``ground_truth``, else its ``tests``/``entry_point``/``kind``
    columns; None when the row has neither (TRL's sign that a reward does not apply to a row).

    Raises:
        UserError: the row's ground truth is malformed.
    """
    if row.get("ground_truth") is not None:
        return parse_ground_truth(row["ground_truth"])
    if row.get("tests") is not None and row.get("entry_point") is not None:
        extra = {k: row.get(k) for k in ROW_TASK_COLUMNS}
        return task_from_columns(row["tests"], row["entry_point"], row.get("kind"), **extra)
    return None


@functools.lru_cache(maxsize=4096)
def _language_cached(text: str) -> str:
    return ground_truth_language(text)


def row_language(row: Mapping[str, Any], task: Task | None = None) -> str:
    """The language a row's answer is judged in: its ground truth's ``language``, else its ``language``
    column (an export's rows carry both), else Python.

    Raises:
        UserError: an unknown language, or another than Python for a kind whose answers are Python.
    """
    truth = row.get("ground_truth")
    if isinstance(truth, bytes):
        truth = truth.decode()
    found = _language_cached(truth) if isinstance(truth, str) else ground_truth_language(truth) if truth else None
    if found is not None and found != DEFAULT_ANSWER_LANGUAGE:
        return found
    column = row.get("language")
    if column is None:
        return DEFAULT_ANSWER_LANGUAGE
    kind = get_kind(task.kind if task is not None else str(row.get("kind") or DEFAULT_KIND))
    return kind.answer_language(str(column))


def given_columns(columns: Mapping[str, Any]) -> str:
    """The columns a reward was handed, for the error that says which it lacks (TRL's private ones left out)."""
    return ", ".join(sorted(k for k in columns if not k.startswith("_"))) or "none"


def column_rows(n: int, columns: Mapping[str, Any], keys: Sequence[str]) -> list[dict[str, Any]]:
    """TRL hands each dataset column as a list, one value per completion: one dict per completion
    with the ``keys`` a reward reads, those present (trainer objects such as ``trainer_state`` are
    left alone). The reader of both rewards' columns: ``code_reward``'s and ``proposal_reward``'s.

    Raises:
        UserError: a column does not hold one value per completion.
    """
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for key in keys:
        if key not in columns:
            continue
        values = columns[key]
        if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
            raise UserError(f"column {key!r} must hold one value per completion (a list), got {type(values).__name__}")
        values = list(values)  # a list from TRL; an array or a datasets column from a caller of one's own
        if len(values) != n:
            raise UserError(f"column {key!r} has {len(values)} values for {n} completions")
        for row, value in zip(rows, values, strict=True):
            row[key] = value
    return rows


def _rows(n: int, columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``column_rows`` of the solver's columns (``ROW_COLUMNS``), which must name a task."""
    if "ground_truth" not in columns and not ("tests" in columns and "entry_point" in columns):
        raise UserError(
            "code_reward needs the GRPO export's `ground_truth` column (or its `tests` and `entry_point` "
            f"columns); the columns given: {given_columns(columns)}"
        )
    return column_rows(n, columns, ROW_COLUMNS)


def _tasks(rows: Sequence[Mapping[str, Any]]) -> list[tuple[Task, int, str] | None]:
    """Every row's task and answer language, parsed before anything runs: a bad row is one clear error,
    not a batch half-judged."""
    out: list[tuple[Task, int, str] | None] = []
    for i, row in enumerate(rows):
        try:
            found = row_task(row)
            out.append(None if found is None else (*found, row_language(row, found[0])))
        except UserError as e:
            raise UserError(f"row {i}: {e}") from None
    return out


# -- verdicts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One answer's judgement: its score and why."""

    score: float
    status: RewardStatus
    tests_passed: int
    tests_total: int
    result: ExecutionResult | None = None
    """The execution over all tests (None when there was nothing to run)."""

    @property
    def pass_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0

    def as_verl(self) -> dict[str, float | int | str]:
        """verl's ``compute_score`` dict: ``score`` plus extra keys, the same keys for every answer
        (verl's agent loop reads the first answer's keys from all) and never None (its metrics
        take means). ``acc`` (1.0 when every test passed) is the key verl's validation reports
        as its core metric; ``status`` is a string, which verl's validation metrics skip and its
        rollout dumps keep; ``status_code`` is the same as a number (``STATUS_CODES``)."""
        return {
            "score": self.score,
            "acc": 1.0 if self.status == "passed" else 0.0,
            "pass_fraction": self.pass_fraction,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
            "status": self.status,
            "status_code": STATUS_CODES[self.status],
        }


def shown_count(task: Task) -> int:
    """How many of ``task``'s tests, the first ones, its solver was shown: the ground truth's ``public``
    (``parse_ground_truth`` keeps it as the task's ``public_tests``); 0 for an imported benchmark (its
    examples are no test) and for a task that does not say (then every test counts as hidden)."""
    if task.shows_examples or task.public_tests is None:
        return 0
    return min(task.public_tests, len(task.tests))


def verdict_of(task: Task, result: ExecutionResult, partial_credit: bool, *, after_feedback: bool = False) -> Verdict:
    """The score of an execution over all of a task's tests; partial credit is
    ``evaluator.credited_fraction``: the tests never shown passed, so a copy of the shown ones earns
    nothing. Which public tests count as shown is the kind's rule (``evaluator.shown_tests``):
    ``after_feedback`` says the answer was written after feedback on them (a tool's run, a repair turn);
    a one-shot completion (``code_reward``, ``compute_score``) was not."""
    status = final_status(result)
    total = result.tests_total or len(task.tests) or 1
    passed = min(result.tests_passed or 0, total)
    shown = shown_count(task)
    shown_passed = sum(1 for r in result.test_results or [] if r.index < shown and r.passed)
    counted = shown_tests(task.kind, shown_passed, shown, after_feedback=after_feedback)
    score = outcome_reward(status, credited_fraction(passed, total, *counted), partial_credit)
    return Verdict(score, status, passed, total, result)


def no_code(task: Task) -> Verdict:
    return Verdict(0.0, "no_code", 0, max(1, len(task.tests)))


class Rewarder:
    """Judges answers against ground truths in one long-lived sandbox.

    ``backend``: a sandbox backend name (default ``$SPADE_SANDBOX``, else ``auto``), or pass a
    started ``sandbox`` (the rewarder then does not close it). ``auto`` that finds no isolating
    backend is refused unless ``allow_unsafe`` (completions are untrusted code); a backend named
    explicitly, ``subprocess`` included, is taken as the user's choice. ``limits`` and ``test_timeout_s``
    default to the sandbox's defaults (as ``spade verify``), ``max_timeouts`` to the loop's (tests that may time out
    before an execution stops calling the entry point). ``max_workers`` bounds how many answers of one call are
    judged at once (default: twice the CPU count, at most 32: an execution waits on
    its sandbox's process part of the time; on 2 cores 4 judged 1.4x as fast as 2).

    Thread-safe. The sandbox starts on first use (or ``start()``); ``close()`` ends it, and the
    next use starts another. A pickled or forked copy starts its own.
    """

    def __init__(
        self,
        backend: str | None = None,
        *,
        limits: Limits | None = None,
        test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
        max_timeouts: int | None = MAX_TEST_TIMEOUTS,
        max_workers: int | None = None,
        sandbox: Sandbox | None = None,
        allow_unsafe: bool = False,
    ) -> None:
        self.backend = backend or (sandbox.name if sandbox is not None else os.environ.get(SANDBOX_ENV) or AUTO)
        self.allow_unsafe = allow_unsafe
        self.limits = limits or Limits()
        self.test_timeout_s = test_timeout_s
        self.max_timeouts = max_timeouts
        self.max_workers = max_workers or min(32, 2 * (os.cpu_count() or 2))
        self._owns_sandbox = sandbox is None
        self._init_state(sandbox)

    def _init_state(self, sandbox: Sandbox | None = None) -> None:
        self._lock = threading.Lock()
        self._sandbox = sandbox
        self._judge: Judge | None = self._judge_over(sandbox) if sandbox else None
        self._generation = 0
        self._users: dict[int, int] = {}
        """Runs in flight on each generation's sandbox."""
        self._retired: dict[int, Sandbox] = {}
        """Sandboxes replaced by a restart while runs were still in flight on them: closed by the last one."""
        self._unproven: set[int] = set()
        """Generations started by a restart that no run has finished on yet: a failure there is not retried."""
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    # -- pickling and forks: sandboxes and threads never cross a process boundary --

    def __getstate__(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "limits": self.limits,
            "test_timeout_s": self.test_timeout_s,
            "max_timeouts": self.max_timeouts,
            "max_workers": self.max_workers,
            "allow_unsafe": self.allow_unsafe,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"allow_unsafe": False, **state})
        self._owns_sandbox = True
        self._init_state()

    def _check_process(self) -> None:
        """A forked child inherits the parent's sandbox handles and pool, but not their threads and
        workers: it starts its own (and leaves the parent's alone)."""
        if self._pid != os.getpid():
            self._owns_sandbox = True
            self._init_state()

    # -- the sandbox --

    def start(self) -> Judge:
        """Start the sandbox now (else it starts on first use) and return the judge over it.

        Raises:
            UserError: unknown backend.
            SandboxUnavailable: the backend cannot run programs here.
        """
        self._check_process()
        with self._lock:
            return self._start_locked()

    def _start_locked(self) -> Judge:
        if self._judge is None:
            from ..sandbox.registry import get_sandbox

            sandbox = get_sandbox(self.backend)
            if self.backend == AUTO and not sandbox.isolating and not self.allow_unsafe:
                # a policy's completions are untrusted code: ``auto`` falling back to no isolation is refused
                # here, as ``spade serve-sandbox`` refuses it (naming a backend is a choice, and is kept)
                sandbox.close()
                raise UserError(
                    "rewards: no isolating sandbox works here (bwrap, see spade exec's warning); completions are "
                    f"untrusted code. Install bubblewrap, or set {SANDBOX_ENV}=subprocess (or Rewarder("
                    "allow_unsafe=True)) to judge them without isolation"
                )
            self._sandbox = sandbox
            self._judge = self._judge_over(self._sandbox)
            _LIVE.add(self)
        return self._judge

    def _lease(self) -> tuple[Judge, int]:
        """The judge to run on and its generation, counted in flight until ``_unlease``."""
        self._check_process()
        with self._lock:
            judge = self._start_locked()
            generation = self._generation
            self._users[generation] = self._users.get(generation, 0) + 1
            return judge, generation

    def _unlease(self, generation: int) -> None:
        with self._lock:
            left = self._users.get(generation, 0) - 1
            if left > 0:
                self._users[generation] = left
                return
            self._users.pop(generation, None)
            retired = self._retired.pop(generation, None)
        if retired is not None:
            self._close_quietly(retired)

    def _judge_over(self, sandbox: Sandbox) -> Judge:
        return Judge(sandbox, self.limits, self.test_timeout_s, self.max_timeouts)

    @property
    def sandbox(self) -> Sandbox:
        return self.start().sandbox

    def _restart(self, generation: int) -> None:
        """Replace a sandbox that failed (once per failure, however many threads saw it). The failed
        one is closed once the runs still in flight on it end: closing it now would kill them, and
        their answers, judged fine so far, would score 0 as killed."""
        with self._lock:
            if generation != self._generation or not self._owns_sandbox:
                return
            self._generation += 1
            self._unproven.add(self._generation)
            old, self._sandbox, self._judge = self._sandbox, None, None
            if old is not None and self._users.get(generation):
                self._retired[generation], old = old, None
        if old is not None:
            self._close_quietly(old)

    @staticmethod
    def _close_quietly(sandbox: Sandbox) -> None:
        try:
            sandbox.close()
        except Exception:  # a broken sandbox may fail to close; the new one is what matters
            logger.debug("closing the failed sandbox raised", exc_info=True)

    def close(self) -> None:
        """End the thread pool and the sandbox when this rewarder started it (a sandbox it was
        given stays, the caller's to close). Safe to call twice; a later use starts them anew.
        Runs still in flight are ended with the sandbox: close once the calls have returned."""
        with self._lock:
            pool, self._pool = self._pool, None
            sandbox = None
            retired = list(self._retired.values())
            self._retired.clear()
            if self._owns_sandbox:
                sandbox, self._sandbox, self._judge = self._sandbox, None, None
                self._generation += 1
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if self._pid == os.getpid():
            for old in retired:
                self._close_quietly(old)
            if sandbox is not None:
                sandbox.close()
        _LIVE.discard(self)

    def __enter__(self) -> Rewarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _executor(self) -> ThreadPoolExecutor:
        self._check_process()
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="spade-reward")
            return self._pool

    # -- judging --

    def run(
        self, task: Task, answer: str, tests: Sequence[int] | None = None, *, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> ExecutionResult:
        """The kind's ``check_answer`` on ``answer`` (already extracted, written in ``language``) over ``tests``
        (default all), in the sandbox; a sandbox failure is retried once on a fresh sandbox, then raised (at
        once when the sandbox that failed is itself a replacement no run has finished on: another thread's restart
        did not help, and a broken backend must not be restarted once per answer).

        Raises:
            SandboxUnavailable: the sandbox failed twice.
        """
        kind = get_kind(task.kind)
        for retry in (True, False):
            judge, generation = self._lease()
            try:
                result = kind.check_answer(judge, task, answer, tests, language=language)
                if self._unproven:
                    with self._lock:
                        self._unproven.discard(generation)
                return result
            except SandboxUnavailable as e:
                with self._lock:
                    fresh_failed = generation in self._unproven
                if not retry or fresh_failed:  # a replacement that never ran anything: restarting again won't help
                    raise SandboxUnavailable(f"the {self.backend} sandbox failed again after a restart: {e}") from e
                logger.warning("sandbox failed while judging %s (%s); restarting it and retrying once", task.task_id, e)
                self._restart(generation)
            finally:
                self._unlease(generation)
        raise AssertionError("unreachable")

    def judge_answer(
        self,
        task: Task,
        answer: str,
        *,
        partial_credit: bool = False,
        after_feedback: bool = False,
        language: str = DEFAULT_ANSWER_LANGUAGE,
    ) -> Verdict:
        """The verdict on an extracted answer (in ``language``) over all the task's tests (no answer:
        ``no_code``); ``after_feedback``: the answer was written after feedback on the public tests
        (``verdict_of``)."""
        if not answer.strip():
            return no_code(task)
        try:
            result = self.run(task, answer, language=language)
        except (SandboxUnavailable, UserError):  # the setup's fault, not the answer's
            raise
        except Exception as e:  # an answer our readers choke on scores 0, loudly
            logger.warning("judging an answer to %s raised %s: %s; scoring it 0", task.task_id, type(e).__name__, e)
            return Verdict(0.0, "error", 0, max(1, len(task.tests)))
        return verdict_of(task, result, partial_credit, after_feedback=after_feedback)

    def judge_text(
        self, task: Task, text: str, *, partial_credit: bool = False, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> Verdict:
        """The verdict on a model's whole answer ``text``, asked in ``language`` (see ``extract_answer``)."""
        answer = extract_answer(task, text, language)
        return self.judge_answer(task, answer, partial_credit=partial_credit, language=language)

    def score(self, text: str, ground_truth: Any, *, partial_credit: bool = False) -> Verdict:
        """The verdict on ``text`` for the task ``ground_truth`` describes.

        Raises:
            UserError: malformed ground truth.
            SandboxUnavailable: the sandbox failed twice.
        """
        task, _ = parse_ground_truth(ground_truth)
        return self.judge_text(task, text, partial_credit=partial_credit, language=_truth_language(ground_truth))

    def judge_many(
        self,
        texts: Sequence[str],
        tasks: Sequence[Task | None],
        *,
        partial_credit: bool = False,
        languages: Sequence[str] | None = None,
    ) -> list[Verdict | None]:
        """Verdicts on each text against its task (None where the task is), each in its answer language
        (``languages``; default all Python), concurrently."""
        langs = languages if languages is not None else [DEFAULT_ANSWER_LANGUAGE] * len(tasks)
        jobs = [(t, task, lang) for t, task, lang in zip(texts, tasks, langs, strict=True) if task is not None]
        if len(jobs) <= 1:
            done = iter(
                [self.judge_text(task, t, partial_credit=partial_credit, language=lang) for t, task, lang in jobs]
            )
        else:
            pool = self._executor()
            futures = [
                pool.submit(self.judge_text, task, t, partial_credit=partial_credit, language=lang)
                for t, task, lang in jobs
            ]
            try:
                done = iter([f.result() for f in futures])
            except BaseException:  # a failed sandbox: the answers not judged yet are not started
                for f in futures:
                    f.cancel()
                raise
        return [None if task is None else next(done) for task in tasks]

    async def judge_many_async(
        self,
        texts: Sequence[str],
        tasks: Sequence[Task | None],
        *,
        partial_credit: bool = False,
        languages: Sequence[str] | None = None,
    ) -> list[Verdict | None]:
        """``judge_many`` without blocking the event loop: the same pool, awaited."""
        loop = asyncio.get_running_loop()
        pool = self._executor()
        langs = languages if languages is not None else [DEFAULT_ANSWER_LANGUAGE] * len(tasks)
        futures = [
            loop.run_in_executor(
                pool, functools.partial(self.judge_text, task, text, partial_credit=partial_credit, language=lang)
            )
            for text, task, lang in zip(texts, tasks, langs, strict=True)
            if task is not None
        ]
        try:
            done = iter(await asyncio.gather(*futures))
        except BaseException:  # as judge_many: the answers not judged yet are not started
            for f in futures:
                f.cancel()
            raise
        return [None if task is None else next(done) for task in tasks]


_LIVE: set[Rewarder] = set()
"""Rewarders with a started sandbox, closed at interpreter exit."""


@atexit.register
def _close_all() -> None:
    for rewarder in list(_LIVE):
        rewarder.close()


_default: Rewarder | None = None
_default_lock = threading.Lock()


def default_rewarder() -> Rewarder:
    """The rewarder the module's functions use, built on first use (``$SPADE_SANDBOX``, default ``auto``)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Rewarder()
        return _default


# -- TRL -----------------------------------------------------------------------------------------------


class CodeReward:
    """A TRL reward function (``reward_funcs=[...]``): ``(prompts, completions, **columns) -> list[float]``.

    Reads each completion's text (see ``completion_text``) and its row's ``ground_truth`` column
    (else ``tests``/``entry_point``/``kind``); every other keyword TRL passes (``completion_ids``,
    ``trainer_state``, ``environments``...) is ignored. A row whose ground truth is None gets None:
    TRL's way of saying a reward does not apply to a row (a mixed dataset).

    ``__name__`` is what TRL logs the reward under (``rewards/<name>/mean``). When TRL passes its
    ``log_extra`` callable, each completion's status goes to the completions table as column
    ``<name>_status``. Picklable (TRL's ``AsyncGRPOTrainer`` pickles reward functions).
    """

    def __init__(self, rewarder: Rewarder | None = None, *, partial_credit: bool = False, name: str | None = None):
        self.rewarder = rewarder
        self.partial_credit = partial_credit
        self.__name__ = name or ("code_reward_partial" if partial_credit else "code_reward")

    def _rewarder(self) -> Rewarder:
        return self.rewarder or default_rewarder()

    def _inputs(
        self, completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> tuple[list[str], list[Task | None], list[str]]:
        texts = [completion_text(c) for c in completions]
        rows = _rows(len(texts), columns)
        found = _tasks(rows)
        tasks = [None if t is None else t[0] for t in found]
        languages = [DEFAULT_ANSWER_LANGUAGE if t is None else t[2] for t in found]
        return texts, tasks, languages

    def _finish(self, verdicts: list[Verdict | None], columns: Mapping[str, Any]) -> list[float | None]:
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra(f"{self.__name__}_status", [v.status if v else "n/a" for v in verdicts])
        return [None if v is None else v.score for v in verdicts]

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        texts, tasks, languages = self._inputs(completions or [], kwargs)
        verdicts = self._rewarder().judge_many(texts, tasks, partial_credit=self.partial_credit, languages=languages)
        return self._finish(verdicts, kwargs)

    async def call_async(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        """``__call__``, awaitable: answers judged on the rewarder's pool, the event loop free."""
        texts, tasks, languages = self._inputs(completions or [], kwargs)
        verdicts = await self._rewarder().judge_many_async(
            texts, tasks, partial_credit=self.partial_credit, languages=languages
        )
        return self._finish(verdicts, kwargs)

    def __repr__(self) -> str:
        return f"CodeReward(name={self.__name__!r}, partial_credit={self.partial_credit})"


_CODE_REWARD = CodeReward()


def code_reward(
    prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """TRL reward: 1.0 for a completion whose last ```python block passes every test of its row's
    ground truth (hidden ones included), else 0.0 (see the module docstring; ``CodeReward``).

    Raises:
        UserError: no ``ground_truth`` (or ``tests``/``entry_point``) column, or a malformed one.
        SandboxUnavailable: the sandbox failed, and again after a restart.
    """
    return _CODE_REWARD(prompts, completions, **kwargs)


async def code_reward_async(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[Any] | None = None,
    *,
    _reward: CodeReward | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """``code_reward`` as a coroutine function (TRL awaits ``async def`` rewards concurrently with
    the others). ``_reward``: the ``CodeReward`` to run (``make_code_reward(asynchronous=True)`` binds it)."""
    return await (_reward or _CODE_REWARD).call_async(prompts, completions, **kwargs)


def make_code_reward(
    *,
    partial_credit: bool = False,
    rewarder: Rewarder | None = None,
    name: str | None = None,
    asynchronous: bool = False,
) -> Any:
    """A TRL reward with its own settings: ``partial_credit`` (the fraction of tests passed instead
    of all-or-nothing), a ``rewarder`` (backend, limits), a ``name`` for TRL's logs.

    ``asynchronous``: a ``functools.partial`` of ``code_reward_async`` (TRL recognises it as a
    coroutine function on every Python; it logs under ``code_reward_async`` whatever ``name``).
    Both forms pickle.
    """
    reward = CodeReward(rewarder, partial_credit=partial_credit, name=name)
    if asynchronous:
        return functools.partial(code_reward_async, _reward=reward)
    return reward


# -- verl ----------------------------------------------------------------------------------------------


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    *,
    partial_credit: bool = False,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl's ``custom_reward_function`` (``path: pkg://spade_llm.rewards``, ``name: compute_score``):
    ``{"score": ..., "acc", "pass_fraction", "tests_passed", "tests_total", "status", "status_code"}``
    (see ``Verdict.as_verl``). ``data_source`` and ``extra_info`` are not needed (the ground truth,
    spade's or one of the field's, says everything); ``partial_credit`` comes from
    ``reward.custom_reward_function.reward_kwargs``; other keywords verl may add are ignored.

    Raises:
        UserError: malformed ground truth.
        SandboxUnavailable: the sandbox failed, and again after a restart.
    """
    return default_rewarder().score(solution_str or "", ground_truth, partial_credit=partial_credit).as_verl()


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    *,
    partial_credit: bool = False,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """``compute_score`` as a coroutine function (verl's reward loop awaits ``async def`` scores
    instead of running them on its default executor)."""
    rewarder = default_rewarder()
    task, _ = parse_ground_truth(ground_truth)
    loop = asyncio.get_running_loop()
    language = _truth_language(ground_truth)
    call = functools.partial(
        rewarder.judge_text, task, solution_str or "", partial_credit=partial_credit, language=language
    )
    verdict = await loop.run_in_executor(rewarder._executor(), call)
    return verdict.as_verl()


def _truth_language(ground_truth: Any) -> str:
    """``ground_truth_language`` of a ground truth as a reward is handed it (text, bytes or a mapping)."""
    if isinstance(ground_truth, bytes):
        ground_truth = ground_truth.decode()
    return _language_cached(ground_truth) if isinstance(ground_truth, str) else ground_truth_language(ground_truth)
