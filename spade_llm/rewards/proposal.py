"""The generator's reward: a proposal is paid the learnability of the tasks it proposes.

The solver's rewards (``spade_llm.rewards``) teach a model to solve tasks; this one teaches the
*generator* to propose tasks worth solving, as Absolute Zero pays its proposer: a task the solver
always solves, or never solves, teaches it nothing, so each proposed task is measured by sampling
a solver on it, and only tasks at the edge of its ability pay. A proposal is judged by the same code
as in the loop, in the same order: the generator's parser (``generator.extract_json``,
``parse_task``, the same task ids), the validation gates (``CodeChecker.validate``: the reference
runs, determinism under another hash seed, weak tests caught by stand-ins and mutants, banned
imports...), the duplicate gate (``Deduper``), then the solver's multi-turn episodes (public tests
and repair turns, judged on every test), all built by ``SolverSession.build_solver`` from a
``RunConfig`` (defaults unless given), as a run builds them.

Payment (one rule for TRL and verl): for a completion answering a request for ``n`` tasks,

* each of the first ``n`` proposed tasks that passes every gate and is no duplicate (of the row's
  ``known_tasks``, or of an earlier task of the same answer) is solved ``samples`` times; with
  ``passed`` of them passing it pays ``evaluator.learnability(passed, samples)``: ``1 - p`` when
  ``0 < p < 1``, else 0;
* a task rejected by a gate, a duplicate, an item that is not a task, and a task missing (an answer
  with fewer than ``n``) pay 0; items past the ``n``-th are ignored, as the loop ignores them;
* the completion's reward is the **mean over the n asked**: an answer with fewer valid tasks pays
  less, so proposing one good task and nothing else is not a way to be paid in full;
* an answer with no usable task list (empty, no JSON, JSON that is not a task list, a refusal,
  over ``MAX_ANSWER_CHARS``, an empty list) gets ``invalid_penalty`` (at most 0, default 0): never
  more than a valid answer, whose reward is at least 0. Unlike the loop there is no repair re-ask:
  the completion is judged as it stands.

So a reward lies in ``[invalid_penalty, 1 - 1/samples]``; ``samples`` sets its resolution.

Repetition (``repetition_weight``, default 0.0: off): R-Zero's penalty against a generator that asks
the same question again and again, each accepted task paying ``max(0, learnability - penalty)``. The
penalty is the weight times the share of the *other* accepted tasks of the same call (every answer of a
TRL batch together, so a GRPO group's answers to one prompt are weighed against each other) that fall
in its cluster: tasks of one kind whose code shapes are at least ``repetition_similarity`` (0.5) alike,
chained (``dedup.repetition_penalties``). A task unlike the rest of its batch keeps its whole pay; at
weight 1.0 (R-Zero's) a batch of one repeated task pays nothing. A verl ``compute_score`` call judges
one answer, a batch of one: the penalty applies within that answer's own tasks only. The duplicate gate
is separate and unchanged: a near copy (``controller.novelty_threshold``, 0.9) of a known task or of
an earlier one of the same answer is rejected and pays 0.

Seeds: the loop's. Task ids are ``make_task_id(row seed, epoch, (request_index, position), item)``,
functions of the task's code and of its place in the request, and the solver seeds each turn from
(the reward's ``seed``, epoch, task id, sample index, turn) with ``seeding.derive_seed``. Nothing is
drawn from a shared generator and nothing depends on a completion's row index, so rewards are the
same whatever the batch order and the concurrency, identical proposals are paid identically, and
with ``seed`` = the run's seed the first ``solver.samples_per_task`` samples of a recorded proposal
are the run's own episodes (its ``task_stats`` pass rate, when ``samples`` equals it).

Cost of one call, per completion asking ``n`` tasks (defaults in brackets):

* validation, per proposed task that parses: about 5 sandbox executions: the reference on every
  test, again under another hash seed (determinism), its mutants (at most
  ``validation.max_mutants`` [40]) on every test in one execution, the surviving mutants on probe
  inputs in one more, and the reference on the behaviour probes of the duplicate gate (deduction and
  abduction run no mutants; abduction runs its queries instead). The calls inside grow as
  (1 + mutants) x tests: validating is sandbox CPU, no LLM call;
* solving, per accepted task: ``samples`` [8] episodes of up to ``max_turns`` [3] solver LLM calls,
  each answer run on the public tests, then on the hidden ones (up to 2 executions a turn). So at
  most ``n x samples x max_turns`` LLM calls (n = 4: 96) and about
  ``n x (5 + 2 x samples x max_turns)`` sandbox executions; a rejected task costs its validation
  only, an unparseable answer nothing. A TRL batch multiplies this by its completions
  (``num_generations`` per prompt).
* bounding it: ``samples`` (fewer samples, a coarser learnability: 4 tells 0.25 apart, 8 tells 0.125),
  ``max_turns`` (1: one answer per episode, cheapest, but the loop's pass rate counts repairs),
  ``concurrency`` (LLM requests in flight and sandbox executions at once, as the loop's
  ``controller.concurrency``), a cheap solver (a small local model behind ``openai/<name>`` with
  ``api_base``; ``fake/*`` costs no model at all), and ``config.validation.max_mutants``. Identical
  proposals within one call (a GRPO group's repeats) are validated and solved once.

Use:

* TRL: ``GRPOTrainer(reward_funcs=[proposal_reward], train_dataset=<the generator's GRPO export>)``,
  or ``make_proposal_reward(solver_model="openai/<name>", api_base=URL, samples=8)``. Rows carry
  ``n`` (required: the tasks the prompt asked for), ``kind`` (default ``induction``), ``difficulty``
  (the request's target; default the config's ``controller.initial_difficulty``), ``known_tasks`` (a
  JSON list of ``Task`` dumps, or a list: the run's accepted tasks, for the duplicate gate; missing or
  '': no check against earlier tasks; a task of the solver's test split comes *sealed*
  (``dedup.sealed_entry``: fingerprints, no code, test or text), and a proposal copying it is a
  ``duplicate`` paying 0, so no reward teaches the generator to re-create held-out tasks), ``base_task``
  (for a kind whose tasks are made on another, ``TaskKind.on_base``: the ``Task`` dump, as JSON, the prompt
  showed; each proposed task keeps its statement, reference and tests, as the loop's did; missing or None:
  written from scratch), ``epoch``
  and ``request_index`` (default 0) and ``seed`` (the run's, which task ids derive from; default the
  reward's ``seed``): the generator's GRPO export
  (``spade export RUN --role generator --format grpo``) writes them. A row whose ``n`` is None gets
  None (TRL's "does not apply", in a mixed dataset).
* verl: ``reward.custom_reward_function.path=pkg://spade_llm.proposal_reward`` (or
  ``spade_llm.rewards``), ``name=proposal_compute_score``; ``ground_truth`` is the row's columns as
  JSON; ``reward_kwargs`` may set ``solver_model``, ``api_base``, ``samples`` and the other settings
  of ``make_proposal_reward``.

Errors raise, as in ``rewards``: a malformed row is a ``UserError`` before anything runs, as is a
bad setting; a sandbox that cannot run programs raises ``SandboxUnavailable``, an unusable solver
endpoint ``EndpointDown``. A proposal our own code chokes on while validating is logged and
rejected with reason ``error``. The sandbox is chosen as ``rewards.Rewarder`` chooses it
(``$SPADE_SANDBOX``, default ``auto``, which refuses to fall back to no isolation: proposals are
model-written code), started once and kept. One reward object scores one call at a time (calls
from several threads take turns); the work inside a call runs concurrently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import math
import operator
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from ..config import RunConfig, config_from_dict, deep_merge
from ..dedup import REPETITION_SIMILARITY, SEALED_KEY, Deduper, decide, repetition_penalties, task_shape
from ..errors import SpadeError, UserError
from ..evaluator import learnability
from ..generator import BadAnswer, answer_items, candidates, first_error
from ..kinds import DEFAULT_KIND, get_kind
from ..llm.registry import aclose_llm
from ..sandbox.base import Sandbox
from ..solver_session import SolverSession
from ..types import Task
from ..validation import ValidationReport
from .code import Rewarder, column_rows, completion_text, given_columns

__all__ = [
    "PROPOSAL_COLUMNS",
    "ProposalReward",
    "ProposalVerdict",
    "TaskOutcome",
    "default_proposal_reward",
    "make_proposal_reward",
    "proposal_compute_score",
    "proposal_reward",
    "proposal_reward_async",
]

logger = logging.getLogger("spade_llm.proposal_reward")

PROPOSAL_COLUMNS: Final = ("n", "kind", "difficulty", "known_tasks", "base_task", "epoch", "request_index", "seed")
"""The dataset columns the proposal reward reads (the generator's GRPO export); ``n`` is required."""

_SETTINGS: Final = frozenset(
    {
        "solver_model",
        "api_base",
        "samples",
        "invalid_penalty",
        "temperature",
        "max_tokens",
        "max_turns",
        "sandbox",
        "allow_unsafe",
        "concurrency",
        "seed",
        "banned_imports",
        "repetition_weight",
        "repetition_similarity",
    }
)
"""``make_proposal_reward``'s settings that verl's ``reward_kwargs`` may pass to ``proposal_compute_score``."""


# -- verdicts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskOutcome:
    """What became of one proposed task."""

    position: int
    task_id: str | None
    """None for an item that never became a task."""
    reason: str | None
    """None when accepted; else the rejection reason, as the loop writes it (``invalid_task``, a gate's
    reason such as ``runtime_error`` or ``weak_tests``, ``duplicate``, ``error``)."""
    detail: str = ""
    passed: int = 0
    samples: int = 0
    """Episodes run on it (0 when it was rejected)."""
    pay: float = 0.0
    """Its learnability less its ``repetition``, at least 0."""
    repetition: float = 0.0
    """The repetition penalty taken off its learnability (``repetition_weight`` times the share of the
    call's other accepted tasks in its cluster, ``dedup.repetition_penalties``); 0.0 when the weight is."""

    @property
    def accepted(self) -> bool:
        return self.reason is None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.samples if self.samples else None


@dataclass(frozen=True)
class ProposalVerdict:
    """One completion's judgement: its reward and why."""

    score: float
    n: int
    """Tasks the request asked for."""
    tasks: tuple[TaskOutcome, ...] = ()
    failure: str | None = None
    """Why the answer has no usable task list (``bad_json``, ``refusal``, ``empty``, ``no_tasks``,
    ``too_long``), None when it has one."""
    detail: str = ""

    @property
    def accepted(self) -> int:
        return sum(t.accepted for t in self.tasks)

    @property
    def rejected(self) -> int:
        return len(self.tasks) - self.accepted

    @property
    def duplicates(self) -> int:
        return sum(t.reason == "duplicate" for t in self.tasks)

    @property
    def learnable(self) -> int:
        """Accepted tasks the solver passed sometimes but not always (the ones that pay)."""
        return sum(t.pay > 0 for t in self.tasks)

    @property
    def reasons(self) -> list[str]:
        """Each rejected task's reason, in position order."""
        return [t.reason for t in self.tasks if t.reason is not None]

    @property
    def mean_repetition(self) -> float:
        """The mean repetition penalty over the accepted tasks (0.0 when none was accepted)."""
        taken = [t.repetition for t in self.tasks if t.accepted]
        return round(sum(taken) / len(taken), 6) if taken else 0.0

    @property
    def mean_pass_rate(self) -> float:
        """The solver's mean pass rate over the accepted tasks (0.0 when none was accepted)."""
        rates = [t.pass_rate for t in self.tasks if t.pass_rate is not None]
        return round(sum(rates) / len(rates), 6) if rates else 0.0

    def outcome(self) -> str:
        """One line for a completions table: the failure, or accepted/asked, the rejections and the
        repetition penalty when one was taken."""
        if self.failure is not None:
            return self.failure
        rejected = f" ({', '.join(self.reasons)})" if self.reasons else ""
        repeated = f", repetition {self.mean_repetition:g}" if self.mean_repetition else ""
        return f"{self.accepted}/{self.n} accepted, {self.learnable} learnable{rejected}{repeated}"

    def as_verl(self) -> dict[str, float | int | str]:
        """verl's ``compute_score`` dict: ``score`` plus keys that are the same for every answer and
        never None (verl's agent loop takes the first answer's keys for all; its metrics take means of
        the non-string ones). ``failure`` and ``reasons`` are strings ('' when there is none): kept in
        rollout dumps, skipped by the means."""
        return {
            "score": self.score,
            "valid": 0.0 if self.failure is not None else 1.0,
            "tasks_asked": self.n,
            "tasks_proposed": len(self.tasks),
            "accepted": self.accepted,
            "rejected": self.rejected,
            "duplicates": self.duplicates,
            "learnable": self.learnable,
            "pass_rate": self.mean_pass_rate,
            "repetition": self.mean_repetition,
            "failure": self.failure or "",
            "reasons": ",".join(self.reasons),
        }


# -- rows ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """One row's request, read and checked before anything runs."""

    n: int
    kind: str
    difficulty: float
    epoch: int
    request_index: int
    seed: int
    known: Deduper | None
    """The duplicate gate over the row's ``known_tasks`` (shared, never written to), None without them."""
    base: Task | None = None
    """The task the answer's tasks are made on (``base_task``: a kind with ``on_base``), None: from scratch."""


def _integer(value: Any, name: str, minimum: int) -> int:
    """An int column (numpy ints, integral floats from a parquet column with gaps, digit strings)."""
    if isinstance(value, bool):
        raise UserError(f"column {name!r} must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        integral = isinstance(value, float) and value.is_integer()
        if integral or (isinstance(value, str) and value.strip().lstrip("-").isdigit()):
            out = int(value)
        else:
            raise UserError(f"column {name!r} must be an integer, got {value!r}") from None
    if out < minimum:
        raise UserError(f"column {name!r} must be at least {minimum}, got {out}")
    return out


@functools.lru_cache(maxsize=16)
def _known_gate(threshold: float, known: str) -> tuple[Deduper, int]:
    """The duplicate gate over a ``known_tasks`` JSON value (cached: a GRPO batch repeats each row's
    value once per generation, and building the gate fingerprints every known task)."""
    try:
        items = json.loads(known)
    except ValueError as e:
        raise UserError(f"column 'known_tasks' is not JSON: {e}") from None
    if not isinstance(items, list):
        raise UserError(f"column 'known_tasks' must be a list of tasks, got {type(items).__name__}")
    gate = Deduper(threshold)
    for i, item in enumerate(items):
        try:
            if isinstance(item, dict) and item.get(SEALED_KEY):  # a task of the solver's test split, unshown
                gate.accept_sealed(item)
                continue
            task = Task.model_validate(item)
        except ValueError as e:
            raise UserError(f"column 'known_tasks': item {i} is not a task: {first_error(e)}") from None
        behaviour = task.meta.get("behaviour")
        fp = task_shape(task)
        gate.accept(task, fp, task.kind, behaviour if isinstance(behaviour, str) else None)
    return gate, len(items)


def _known_text(value: Any) -> str:
    """A ``known_tasks`` value (a JSON string, or a list of task dumps or Tasks) as one JSON string."""
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        return value.strip() or "[]"
    if isinstance(value, Sequence) or hasattr(value, "tolist"):  # a list, or an array from a parquet column
        items = value.tolist() if hasattr(value, "tolist") else list(value)
        return json.dumps([t.dump() if isinstance(t, Task) else t for t in items], sort_keys=True, default=str)
    raise UserError(f"column 'known_tasks' must be a JSON string or a list of tasks, got {type(value).__name__}")


def _read_row(row: Mapping[str, Any], config: RunConfig) -> _Row | None:
    """A row's request (None when its ``n`` is None: the reward does not apply to it)."""
    if row.get("n") is None:
        return None
    kind = row.get("kind") or DEFAULT_KIND
    get_kind(str(kind))  # an unknown kind: a UserError naming the known ones
    difficulty = row.get("difficulty")
    if difficulty is None:
        difficulty = config.controller.initial_difficulty
    try:
        target = float(difficulty)
    except (TypeError, ValueError):
        raise UserError(f"column 'difficulty' must be a number, got {difficulty!r}") from None
    if not 0.0 <= target <= 1.0:
        raise UserError(f"column 'difficulty' must be within 0..1, got {target}")
    known = row.get("known_tasks")
    gate = None if known is None else _known_gate(config.controller.novelty_threshold, _known_text(known))[0]
    base = _base_task(row.get("base_task"), str(kind))
    seed = row.get("seed")
    return _Row(
        n=_integer(row["n"], "n", 1),
        kind=str(kind),
        difficulty=target,
        epoch=0 if row.get("epoch") is None else _integer(row["epoch"], "epoch", 0),
        request_index=0 if row.get("request_index") is None else _integer(row["request_index"], "request_index", 0),
        seed=config.seed if seed is None else _integer(seed, "seed", -(2**63)),
        known=gate,
        base=base,
    )


def _base_task(value: Any, kind: str) -> Task | None:
    """A ``base_task`` value (a ``Task`` dump as JSON or a mapping, or a Task; None or '': none) as the task
    the answer's tasks are made on, as the loop made them (``generator.parse_task``)."""
    if value is None or (isinstance(value, (str, bytes)) and not value.strip()):
        return None
    if get_kind(kind).on_base is None:
        raise UserError(f"column 'base_task' is for a kind whose tasks are made on another; {kind} tasks are not")
    if isinstance(value, Task):
        return value
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise UserError(f"column 'base_task' is not JSON: {e}") from None
    try:
        return Task.model_validate(value)
    except ValueError as e:
        raise UserError(f"column 'base_task' is not a task: {first_error(e)}") from None


def _columns_rows(count: int, columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """TRL hands each column as a list, one value per completion: one dict per completion with the
    columns this reward reads (TRL's own objects, ``trainer_state`` and the like, are left alone)."""
    if "n" not in columns:
        raise UserError(
            "proposal_reward needs the generator's GRPO export (`spade export RUN --role generator`): its `n` "
            f"column (with `kind`, `difficulty`, `known_tasks`); the columns given: {given_columns(columns)}"
        )
    return column_rows(count, columns, PROPOSAL_COLUMNS)


def _ground_truth_row(ground_truth: Any) -> dict[str, Any]:
    """verl's ``ground_truth``: the row's columns as a JSON string (or already a mapping)."""
    if isinstance(ground_truth, bytes):
        ground_truth = ground_truth.decode()
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as e:
            raise UserError(f"a proposal's ground truth is not JSON: {e}") from None
    if not isinstance(ground_truth, Mapping) or ground_truth.get("n") is None:
        raise UserError("a proposal's ground truth is the generator row's columns as a JSON object, with `n`")
    return dict(ground_truth)


# -- the reward ---------------------------------------------------------------------------------------


@dataclass
class _Candidate:
    position: int
    task: Task | None
    reason: str | None = None
    detail: str = ""


def _candidates(text: str, row: _Row) -> list[_Candidate] | BadAnswer:
    """The answer's first ``n`` task candidates, parsed exactly as ``LLMGenerator.propose`` parses
    them (same ids, same targets), or why it has none."""
    try:
        items = answer_items(text)
    except BadAnswer as e:
        return e
    parsed = candidates(
        items,
        n=row.n,
        request_index=row.request_index,
        run_seed=row.seed,
        epoch=row.epoch,
        difficulty=row.difficulty,
        kind=row.kind,
        base=row.base,
    )
    return [_Candidate(c.position[1], c.task, c.reason, c.detail) for c in parsed]


class _Call:
    """One call's machinery, on one event loop: the checker and solver (their semaphores belong to the
    loop), and memos so that identical proposals are validated and solved once."""

    def __init__(self, session: SolverSession, samples: int) -> None:
        self.samples = samples
        self.slots = asyncio.Semaphore(session.config.controller.concurrency)
        self.checker, self.solver = session.build_solver(self.slots)
        self.threshold = session.config.controller.novelty_threshold
        self._validations: dict[str, asyncio.Task[ValidationReport | tuple[str, str]]] = {}
        self._episodes: dict[tuple[str, int, int], asyncio.Task[bool]] = {}
        self.accepted: dict[str, Task] = {}
        """The call's accepted tasks by id, for the repetition penalty across its answers."""

    async def close(self) -> None:
        """Cancel what is still running (after a failure): nothing of this call outlives its loop."""
        pending = [*self._validations.values(), *self._episodes.values()]
        for job in pending:
            job.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _validate(self, task: Task) -> ValidationReport | tuple[str, str]:
        try:
            return await self.checker.validate(task)
        except SpadeError:  # the sandbox or the setup failed, not the proposal
            raise
        except Exception as e:
            logger.warning("validating %s raised %s: %s; rejecting it", task.task_id, type(e).__name__, e)
            return ("error", f"validation raised {type(e).__name__}: {e}")

    def validate(self, task: Task) -> asyncio.Task[ValidationReport | tuple[str, str]]:
        key = json.dumps(task.dump(), sort_keys=True, default=str)
        if key not in self._validations:
            self._validations[key] = asyncio.create_task(self._validate(task))
        return self._validations[key]

    async def _episode(self, task: Task, epoch: int, sample: int) -> bool:
        trajectory = await self.solver.solve(task, epoch, sample)
        return trajectory.final_status == "passed"

    async def passed(self, task: Task, epoch: int) -> int:
        """How many of ``samples`` episodes pass, each keyed by (task, epoch, sample) as in the loop."""
        key = json.dumps(task.dump(), sort_keys=True, default=str)
        runs = []
        for k in range(self.samples):
            if (key, epoch, k) not in self._episodes:
                self._episodes[key, epoch, k] = asyncio.create_task(self._episode(task, epoch, k))
            runs.append(self._episodes[key, epoch, k])
        return sum(await asyncio.gather(*runs))

    async def score(self, text: str, row: _Row, invalid_penalty: float) -> ProposalVerdict:
        parsed = _candidates(text, row)
        if isinstance(parsed, BadAnswer):
            return ProposalVerdict(invalid_penalty, row.n, failure=parsed.reason, detail=parsed.detail)
        checks = [self.validate(c.task) if c.task is not None else None for c in parsed]
        own = Deduper(self.threshold)  # this answer's accepted tasks, for its duplicates of itself
        decided: list[TaskOutcome | tuple[Task, asyncio.Task[int]]] = []
        for cand, check in zip(parsed, checks, strict=True):  # decided in position order, as the loop does
            if cand.task is None or check is None:
                decided.append(TaskOutcome(cand.position, None, cand.reason, cand.detail))
                continue
            report = await check
            if isinstance(report, tuple):  # validation raised: the task is rejected, the reason kept
                decided.append(TaskOutcome(cand.position, cand.task.task_id, *report))
                continue
            decision = decide(report, row.request_index, cand.position, own, row.known)  # the loop's rule
            accepted = decision.accepted
            if accepted is None:
                decided.append(TaskOutcome(cand.position, cand.task.task_id, decision.reason, decision.detail))
                continue
            self.accepted[accepted.task_id] = accepted
            decided.append((accepted, asyncio.create_task(self.passed(accepted, row.epoch))))  # solving starts now
        outcomes = []
        for cand, item in zip(parsed, decided, strict=True):
            if isinstance(item, TaskOutcome):
                outcomes.append(item)
                continue
            task, running = item
            passed = await running
            pay = learnability(passed, self.samples)
            outcomes.append(TaskOutcome(cand.position, task.task_id, None, "", passed, self.samples, pay))
        score = round(sum(t.pay for t in outcomes) / row.n, 6)
        return ProposalVerdict(score, row.n, tuple(outcomes))


class ProposalReward:
    """A TRL reward function for the generator: ``(prompts, completions, **columns) -> list[float]``.

    Built by ``make_proposal_reward`` (see the module docstring for what it pays and what it costs).
    ``__name__`` is what TRL logs it under (``rewards/<name>/mean``); with TRL's ``log_extra`` each
    completion's outcome (``ProposalVerdict.outcome``) goes to the completions table as column
    ``<name>_outcome``. Picklable: a copy starts its own sandbox and models on first use.
    """

    def __init__(
        self,
        config: RunConfig,
        samples: int,
        *,
        invalid_penalty: float = 0.0,
        sandbox: str | Sandbox | None = None,
        allow_unsafe: bool = False,
        name: str = "proposal_reward",
        repetition_weight: float = 0.0,
        repetition_similarity: float = REPETITION_SIMILARITY,
    ) -> None:
        self.config = config
        self.samples = samples
        self.invalid_penalty = invalid_penalty
        self.repetition_weight = repetition_weight
        self.repetition_similarity = repetition_similarity
        self.__name__ = name
        if isinstance(sandbox, str) or sandbox is None:
            self.rewarder = Rewarder(sandbox, limits=config.sandbox.limits(), allow_unsafe=allow_unsafe)
        else:
            self.rewarder = Rewarder(sandbox=sandbox, limits=config.sandbox.limits())
        self._init_state()

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        """One call at a time: a call's models and semaphores live on that call's event loop."""
        self._session: SolverSession | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "samples": self.samples,
            "invalid_penalty": self.invalid_penalty,
            "repetition_weight": self.repetition_weight,
            "repetition_similarity": self.repetition_similarity,
            "__name__": self.__name__,
            "rewarder": self.rewarder,  # a Rewarder pickles its settings, never its sandbox
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_state()

    def __repr__(self) -> str:
        return (
            f"ProposalReward(name={self.__name__!r}, solver_model={self.config.solver.model!r}, "
            f"samples={self.samples}, invalid_penalty={self.invalid_penalty}, "
            f"repetition_weight={self.repetition_weight})"
        )

    @property
    def session(self) -> SolverSession:
        """The solver's side (templates, model, sandbox), built on first use.

        Raises:
            UserError: a broken prompt template or an unknown model string.
        """
        if self._session is None:  # its sandbox is the rewarder's: chosen, started and restarted as the rewards' is
            rewarder = self.rewarder
            self._session = SolverSession(self.config, sandbox=lambda: rewarder.sandbox)
        return self._session

    def close(self) -> None:
        """End the sandbox this reward started (a sandbox it was given stays the caller's). A later
        call starts another."""
        self.rewarder.close()

    # -- scoring --

    def score_rows(self, texts: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[ProposalVerdict | None]:
        """The verdict on each completion text against its row's columns (None where ``n`` is None).

        Raises:
            UserError: a malformed row (all rows are read before anything runs), a bad setting.
            SandboxUnavailable: the sandbox cannot run programs.
            EndpointDown: the solver's endpoint is unusable.
        """
        if len(texts) != len(rows):
            raise UserError(f"{len(texts)} completions for {len(rows)} rows")
        requests = []
        for i, row in enumerate(rows):
            try:
                requests.append(_read_row(row, self.config))
            except UserError as e:
                raise UserError(f"row {i}: {e}") from None
        with self._lock:
            session = self.session

            async def main() -> list[ProposalVerdict | None]:
                call = _Call(session, self.samples)
                try:
                    jobs = [
                        call.score(text, request, self.invalid_penalty)
                        for text, request in zip(texts, requests, strict=True)
                        if request is not None
                    ]
                    done = iter(self._repetition(await asyncio.gather(*jobs), call.accepted))
                finally:
                    await call.close()
                    await aclose_llm(session.sol_llm)  # pooled connections die with this loop: close them on it
                return [None if request is None else next(done) for request in requests]

            return _run(main)

    def _repetition(self, verdicts: list[ProposalVerdict], accepted: Mapping[str, Task]) -> list[ProposalVerdict]:
        """``verdicts`` with each accepted task's pay less its repetition penalty across the call (R-Zero's
        batch: every answer scored together, ``dedup.repetition_penalties``), the scores recomputed."""
        if self.repetition_weight == 0.0:
            return verdicts
        places = [(v, i) for v, verdict in enumerate(verdicts) for i, t in enumerate(verdict.tasks) if t.accepted]
        tasks = [accepted[str(verdicts[v].tasks[i].task_id)] for v, i in places]
        penalties = repetition_penalties(tasks, self.repetition_weight, self.repetition_similarity)
        outcomes = [list(verdict.tasks) for verdict in verdicts]
        for (v, i), penalty in zip(places, penalties, strict=True):
            paid = learnability(outcomes[v][i].passed, outcomes[v][i].samples)
            outcomes[v][i] = dataclasses.replace(
                outcomes[v][i], repetition=penalty, pay=round(max(0.0, paid - penalty), 6)
            )
        return [
            verdict
            if verdict.failure is not None
            else dataclasses.replace(verdict, tasks=tuple(tasks), score=round(sum(t.pay for t in tasks) / verdict.n, 6))
            for verdict, tasks in zip(verdicts, outcomes, strict=True)
        ]

    def score(self, text: str, /, **columns: Any) -> ProposalVerdict:
        """The verdict on one completion ``text`` for one row's ``columns`` (``n``, ``kind``...)."""
        if columns.get("n") is None:
            raise UserError("a proposal is scored against its request: `n` is needed")
        verdict = self.score_rows([text], [columns])[0]
        assert verdict is not None
        return verdict

    def _finish(self, verdicts: list[ProposalVerdict | None], columns: Mapping[str, Any]) -> list[float | None]:
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra(f"{self.__name__}_outcome", [v.outcome() if v else "n/a" for v in verdicts])
        return [None if v is None else v.score for v in verdicts]

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        texts = [completion_text(c) for c in completions or []]
        verdicts = self.score_rows(texts, _columns_rows(len(texts), kwargs))
        return self._finish(verdicts, kwargs)

    async def call_async(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        """``__call__``, awaitable: the call runs on its own event loop in a worker thread, the caller's free."""
        return await asyncio.to_thread(self.__call__, prompts, completions, **kwargs)


_T = TypeVar("_T")


def _run(main: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """``asyncio.run(main())``, in a worker thread when this thread already runs an event loop (a
    notebook, an async trainer calling a sync reward): a loop cannot be nested."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(1, thread_name_prefix="spade-proposal-reward") as pool:
        return pool.submit(lambda: asyncio.run(main())).result()


def make_proposal_reward(
    solver_model: str = "fake/default",
    api_base: str | list[str] | None = None,
    samples: int = 8,
    *,
    invalid_penalty: float = 0.0,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_turns: int | None = None,
    sandbox: str | Sandbox | None = None,
    allow_unsafe: bool = False,
    concurrency: int | None = None,
    seed: int = 0,
    banned_imports: Sequence[str] | None = None,
    config: RunConfig | None = None,
    name: str | None = None,
    asynchronous: bool = False,
    repetition_weight: float = 0.0,
    repetition_similarity: float = REPETITION_SIMILARITY,
) -> Any:
    """A generator reward with its own settings (the module docstring says what it pays and costs).

    ``solver_model``: any model string the run takes (``fake/<profile>`` offline; ``openai/<name>`` with
    ``api_base`` for an OpenAI-compatible server; any litellm string); ``samples``: episodes per accepted
    task; ``invalid_penalty``: the reward of an answer with no usable task list, at most 0.
    ``temperature``, ``max_tokens``, ``max_turns``: the solver's (default: the run's, 0.2, 2048, 3);
    ``concurrency``: LLM requests and sandbox executions in flight (default the run's, 4); ``seed``:
    the solver's seed (the run's seed reproduces its episodes), and task ids' when a row has no ``seed``;
    ``banned_imports``: the ``banned_import`` gate's modules (default none, as a run). ``config``: a
    ``RunConfig`` to start from (validation, sandbox limits, prompts), the arguments above laid over it.
    ``sandbox``: a backend name (default ``$SPADE_SANDBOX``, else ``auto``; ``auto`` without an isolating
    backend is refused unless ``allow_unsafe``), or a started ``Sandbox`` (left for the caller to close).
    ``name``: what TRL logs it under (default ``proposal_reward``). ``asynchronous``: a
    ``functools.partial`` of ``proposal_reward_async`` (a coroutine function to TRL).
    ``repetition_weight``: R-Zero's repetition penalty (module docstring, "Repetition"): 0.0, the default,
    pays learnability alone; R-Zero's own weight is 1.0. ``repetition_similarity``: the code-shape similarity
    at which two tasks are one question asked again (default ``dedup.REPETITION_SIMILARITY``, 0.5).

    Raises:
        UserError: ``invalid_penalty`` above 0, ``samples`` below 1, ``repetition_weight`` below 0,
            ``repetition_similarity`` outside (0, 1], or a setting the config refuses.
    """
    if not (isinstance(invalid_penalty, (int, float)) and math.isfinite(invalid_penalty) and invalid_penalty <= 0):
        raise UserError(
            f"invalid_penalty must be a number at most 0 (an invalid answer never earns more than a valid one, "
            f"which earns at least 0), got {invalid_penalty!r}"
        )
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise UserError(f"samples must be an integer of at least 1, got {samples!r}")
    weight = repetition_weight
    if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
        raise UserError(f"repetition_weight must be a number of at least 0 (0: no penalty), got {repetition_weight!r}")
    if not (isinstance(repetition_similarity, (int, float)) and 0 < repetition_similarity <= 1):
        raise UserError(f"repetition_similarity must be within (0, 1], got {repetition_similarity!r}")
    solver: dict[str, Any] = {"model": solver_model, "api_base": api_base}
    for key, value in (("temperature", temperature), ("max_tokens", max_tokens), ("max_turns", max_turns)):
        if value is not None:
            solver[key] = value
    overrides: dict[str, Any] = {"seed": seed, "solver": solver}
    if concurrency is not None:
        overrides["controller"] = {"concurrency": concurrency}
    if banned_imports is not None:
        overrides["validation"] = {"banned_imports": list(banned_imports)}
    base = (config or RunConfig()).model_dump(mode="json")
    merged = config_from_dict(deep_merge(base, overrides), "make_proposal_reward")
    reward = ProposalReward(
        merged,
        samples,
        invalid_penalty=float(invalid_penalty),
        sandbox=sandbox,
        allow_unsafe=allow_unsafe,
        name=name or "proposal_reward",
        repetition_weight=float(repetition_weight),
        repetition_similarity=float(repetition_similarity),
    )
    if asynchronous:
        return functools.partial(proposal_reward_async, _reward=reward)
    return reward


_default: ProposalReward | None = None
_by_settings: dict[str, ProposalReward] = {}
_default_lock = threading.Lock()


def default_proposal_reward() -> ProposalReward:
    """The reward ``proposal_reward`` uses, built on first use: solver ``fake/default``, 8 samples,
    the sandbox from ``$SPADE_SANDBOX`` (default ``auto``)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = make_proposal_reward()
        assert _default is not None
        return _default


def _reward_for(settings: Mapping[str, Any]) -> ProposalReward:
    """The default reward, or one per distinct ``settings`` (verl's ``reward_kwargs``), kept for reuse."""
    chosen = {k: v for k, v in settings.items() if k in _SETTINGS}
    if not chosen:
        return default_proposal_reward()
    key = json.dumps(chosen, sort_keys=True, default=str)
    with _default_lock:
        reward = _by_settings.get(key)
        if reward is None:
            reward = _by_settings[key] = make_proposal_reward(**chosen)
        return reward


def proposal_reward(
    prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """TRL reward for the generator: each completion's mean learnability over the ``n`` tasks its row
    asked for, measured with solver ``fake/default`` and 8 samples (see the module docstring;
    ``make_proposal_reward`` for other settings).

    Raises:
        UserError: no ``n`` column, or a malformed row.
        SandboxUnavailable: the sandbox cannot run programs.
    """
    return default_proposal_reward()(prompts, completions, **kwargs)


async def proposal_reward_async(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[Any] | None = None,
    *,
    _reward: ProposalReward | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """``proposal_reward`` as a coroutine function (TRL awaits ``async def`` rewards alongside the
    others). ``_reward``: the ``ProposalReward`` to run (``make_proposal_reward(asynchronous=True)``)."""
    return await (_reward or default_proposal_reward()).call_async(prompts, completions, **kwargs)


def proposal_compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    **kwargs: Any,
) -> dict[str, float | int | str]:
    """verl's ``custom_reward_function`` for the generator (``name: proposal_compute_score``):
    ``{"score", "valid", "tasks_asked", "tasks_proposed", "accepted", "rejected", "duplicates",
    "learnable", "pass_rate", "repetition", "failure", "reasons"}`` (``ProposalVerdict.as_verl``). ``ground_truth``
    is the row's columns as JSON (``n``, ``kind``, ``difficulty``, ``known_tasks``...). Keywords naming
    a setting of ``make_proposal_reward`` (verl's ``reward_kwargs``: ``solver_model``, ``api_base``,
    ``samples``...) select a reward with those settings, built once; other keywords verl adds are ignored.

    Raises:
        UserError: a malformed ground truth, a bad setting.
        SandboxUnavailable: the sandbox cannot run programs.
    """
    row = _ground_truth_row(ground_truth)
    return _reward_for(kwargs).score(solution_str or "", **row).as_verl()
