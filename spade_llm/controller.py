"""Stage 5: the evolution loop. Each epoch proposes, validates, de-duplicates, solves and adapts.

The target difficulty follows the solver: when recent pass rates leave the band it moves, so
tasks stay at the edge of what the solver can do. Everything an epoch produces is appended to
the run directory as soon as it exists; a killed run resumes where it stopped without
duplicating or losing records (accepted tasks are written per epoch in one batch, trajectories
one by one).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .checking import CodeChecker
from .config import RunConfig
from .evaluator import (
    count_reasons,
    first_try_pass_rate,
    mean_reward,
    mean_turns,
    next_difficulty,
    novelty,
    pass_rate,
    similarity,
    task_fingerprint,
)
from .generator import Generator, Proposal, ProposalContext
from .llm.base import LLM, LLMRequest, LLMResponse
from .llm.stats import LLMStats
from .seeding import derive_seed
from .solver import Solver
from .store import METRICS, REJECTED, TASKS, TRAJECTORIES, RunDir
from .types import EpochMetrics, Rejection, Task, TokenUsage, Trajectory
from .validation import ValidationReport

TOPICS = (
    "strings",
    "lists",
    "arithmetic",
    "recursion",
    "dynamic programming",
    "parsing",
    "dictionaries",
    "sorting and searching",
    "bit manipulation",
    "matrices",
    "intervals",
    "simulation",
    "stacks",
    "graphs",
)
"""Focus topics handed round the concurrent proposal requests of an epoch: requests that cannot
see each other's answers would otherwise converge on the same few favourite exercises."""


def focus_topics(seed: int, epoch: int, n_requests: int, avoid: list[str]) -> list[str]:
    """One topic per request: a seeded rotation of ``TOPICS``, saturated ones last."""
    start = derive_seed(seed, "topics", epoch) % len(TOPICS)
    rotation = [TOPICS[(start + i) % len(TOPICS)] for i in range(len(TOPICS))]
    saturated = {a.replace("_", " ").lower() for a in avoid}
    fresh = [t for t in rotation if t not in saturated] or rotation
    return [fresh[i % len(fresh)] for i in range(n_requests)]


class LimitedLLM:
    """An LLM wrapper sharing one limit on requests in flight between generator and solver."""

    def __init__(self, llm: LLM, slots: asyncio.Semaphore) -> None:
        self.llm = llm
        self.model = llm.model
        self._slots = slots

    async def complete(self, request: LLMRequest) -> LLMResponse:
        async with self._slots:
            return await self.llm.complete(request)


@dataclass
class RunState:
    """What the run directory already holds (empty for a new run)."""

    tasks: list[Task] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    metrics: list[EpochMetrics] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    @classmethod
    def load(cls, run: RunDir) -> RunState:
        state = cls(
            tasks=[Task.model_validate(r) for r in run.read(TASKS)],
            trajectories=[Trajectory.model_validate(r) for r in run.read(TRAJECTORIES)],
            metrics=[EpochMetrics.model_validate(r) for r in run.read(METRICS)],
            rejected=[Rejection.model_validate(r) for r in run.read(REJECTED)],
        )
        # keep one trajectory per task if a crash ever wrote two
        unique: dict[str, Trajectory] = {}
        for t in state.trajectories:
            unique.setdefault(t.task_id, t)
        state.trajectories = list(unique.values())
        return state


def task_epoch(task: Task) -> int:
    return int(task.meta.get("epoch", -1))


class Controller:
    """Wires generator -> validation -> solver -> evaluator -> store, epoch after epoch."""

    def __init__(
        self,
        config: RunConfig,
        run: RunDir,
        generator: Generator,
        solver: Solver,
        checker: CodeChecker,
        stats: LLMStats,
        *,
        log: Callable[[str], None] = print,
    ) -> None:
        self.config = config
        self.run = run
        self.generator = generator
        self.solver = solver
        self.checker = checker
        self.stats = stats
        self.log = log
        self.state = RunState.load(run)
        previous = run.read_json("summary.json")
        if isinstance(previous, dict) and isinstance(previous.get("llm"), dict):
            stats.carry(previous["llm"])
        self.fingerprints = [task_fingerprint(t.reference_code) for t in self.state.tasks]
        self.usage = sum((t.usage for t in self.state.trajectories), TokenUsage())
        self._episodes = asyncio.Semaphore(config.controller.concurrency)
        self.generator_usage: dict[int, TokenUsage] = {}
        """Tokens of each epoch's proposals (in memory: an epoch resumed after proposing counts none)."""

    # -- the loop ------------------------------------------------------------------------------

    async def run_all(self) -> list[EpochMetrics]:
        c = self.config.controller
        start = len(self.state.metrics)
        for epoch in range(start, c.epochs):
            row = await self.run_epoch(epoch, self.difficulty_for(epoch))
            self.log(
                f"epoch {epoch}: difficulty {row.difficulty:.2f}  accepted {row.tasks_accepted}/{row.tasks_proposed}"
                f"  pass {row.pass_rate:.0%} (first try {row.first_try_pass_rate:.0%})  turns {row.mean_turns:.2f}"
                f"  reward {row.mean_reward:+.2f}  novelty {row.novelty:.2f}"
            )
        self.write_summary(done=True)
        return self.state.metrics

    def difficulty_for(self, epoch: int) -> float:
        c = self.config.controller
        if epoch == 0 or not self.state.metrics:
            return c.initial_difficulty
        return self.state.metrics[epoch - 1].next_difficulty

    async def run_epoch(self, epoch: int, difficulty: float) -> EpochMetrics:
        """Propose, validate, de-duplicate and solve one epoch as a stream.

        Each proposal is validated as soon as it arrives and each accepted task is solved as soon
        as it is accepted, so the model never waits on a whole epoch's sandbox work. Acceptance
        itself is decided in (request, position) order, whatever the order answers arrive in, so
        the duplicate gate, and with it the run, does not depend on timing.
        """
        started = time.monotonic()
        solving: list[asyncio.Task[None]] = []
        done = {t.task_id for t in self.state.trajectories}
        for task in self.state.tasks:  # resume: accepted before the kill, not yet solved
            if task_epoch(task) == epoch and task.task_id not in done:
                solving.append(asyncio.create_task(self.solve_one(task, epoch)))
        await self.propose_and_validate(epoch, difficulty, solving)
        await asyncio.gather(*solving)
        tasks = [t for t in self.state.tasks if task_epoch(t) == epoch]
        row = self.epoch_metrics(epoch, difficulty, tasks, time.monotonic() - started)
        self.run.append(METRICS, [row.model_dump(mode="json")])
        self.state.metrics.append(row)
        self.write_summary(done=False)
        return row

    def decided_requests(self, epoch: int) -> set[int]:
        """Requests of ``epoch`` with a decision on disk: a resumed epoch does not ask them again."""
        tasks = {
            int(t.meta["request_index"])
            for t in self.state.tasks
            if task_epoch(t) == epoch and isinstance(t.meta.get("request_index"), int)
        }
        rejected = {r.request_index for r in self.state.rejected if r.epoch == epoch and r.request_index is not None}
        return tasks | rejected

    async def propose_and_validate(self, epoch: int, difficulty: float, solving: list[asyncio.Task[None]]) -> None:
        c = self.config.controller
        n_requests = math.ceil(c.tasks_per_epoch / c.proposals_per_request)
        examples = (
            self.state.tasks[-self.config.generator.examples_shown :] if self.config.generator.examples_shown else []
        )
        avoid = self.saturated_tags()
        topics = focus_topics(self.config.seed, epoch, n_requests, avoid)
        skip = self.decided_requests(epoch)
        contexts = [
            ProposalContext(
                epoch=epoch,
                request_index=i,
                focus=topics[i],
                n=min(c.proposals_per_request, c.tasks_per_epoch - i * c.proposals_per_request),
                difficulty=difficulty,
                capability=self.recent_pass_rate(),
                examples=examples,
                avoid_tags=avoid,
                seed=self.config.seed,
            )
            for i in range(n_requests)
            if i not in skip
        ]

        async def propose(ctx: ProposalContext) -> tuple[Proposal, list[asyncio.Task[ValidationReport] | None]]:
            proposal = await self.generator.propose(ctx)
            checks = [
                asyncio.create_task(self.checker.validate(cand.task)) if cand.task is not None else None
                for cand in proposal.candidates
            ]
            return proposal, checks

        pending = [asyncio.create_task(propose(ctx)) for ctx in contexts]
        usage = self.generator_usage.setdefault(epoch, TokenUsage())
        for ctx, future in zip(contexts, pending, strict=True):  # decisions in request order
            proposal, checks = await future
            usage = usage + TokenUsage(prompt_tokens=proposal.usage_prompt, completion_tokens=proposal.usage_completion)
            self.generator_usage[epoch] = usage
            if proposal.failure:
                self.reject(
                    Rejection(
                        epoch=epoch, request_index=ctx.request_index, reason=proposal.failure, detail=proposal.detail
                    )
                )
            for cand, check in zip(proposal.candidates, checks, strict=True):
                if cand.task is None or check is None:
                    raw = cand.raw if isinstance(cand.raw, dict) else {"value": cand.raw}
                    self.reject(
                        Rejection(
                            epoch=epoch,
                            request_index=ctx.request_index,
                            reason=cand.reason or "invalid_task",
                            detail=cand.detail,
                            task=raw,
                        )
                    )
                    continue
                accepted = self.decide(cand.task, await check, ctx.request_index)
                if accepted is not None:
                    solving.append(asyncio.create_task(self.solve_one(accepted, epoch)))

    def decide(self, task: Task, report: ValidationReport, request_index: int) -> Task | None:
        """Accept a validated candidate unless it failed a gate or nearly copies an accepted task."""
        epoch = task_epoch(task)
        if not report.valid or report.task is None:
            self.reject(
                Rejection(
                    epoch=epoch,
                    request_index=request_index,
                    reason=report.reason or "invalid",
                    detail=report.detail,
                    task_id=task.task_id,
                    task=task.dump(),
                )
            )
            return None
        fp = task_fingerprint(report.task.reference_code)
        twin = max(((similarity(fp, other), i) for i, other in enumerate(self.fingerprints)), default=(0.0, -1))
        if twin[0] >= self.config.controller.novelty_threshold:
            self.reject(
                Rejection(
                    epoch=epoch,
                    request_index=request_index,
                    reason="duplicate",
                    task_id=task.task_id,
                    task=task.dump(),
                    detail=f"{twin[0]:.0%} similar to {self.state.tasks[twin[1]].task_id}",
                )
            )
            return None
        accepted = report.task.model_copy(update={"meta": {**report.task.meta, "request_index": request_index}})
        self.fingerprints.append(fp)
        self.state.tasks.append(accepted)
        self.run.append(TASKS, [accepted.dump()])  # before any trajectory of it can exist
        return accepted

    def reject(self, rejection: Rejection) -> None:
        self.state.rejected.append(rejection)
        self.run.append(REJECTED, [rejection.model_dump(mode="json")])

    async def solve_one(self, task: Task, epoch: int) -> None:
        async with self._episodes:
            trajectory = await self.solver.solve(task, epoch)
        self.run.append(TRAJECTORIES, [trajectory.model_dump(mode="json")])
        self.state.trajectories.append(trajectory)
        self.usage = self.usage + trajectory.usage

    # -- steering ------------------------------------------------------------------------------

    def recent_pass_rate(self) -> float:
        rates = [m.pass_rate for m in self.state.metrics[-self.config.controller.history_epochs :]]
        return sum(rates) / len(rates) if rates else 0.5

    def saturated_tags(self, share: float = 0.3) -> list[str]:
        """Tags on more than ``share`` of accepted tasks: the generator is asked to go elsewhere."""
        if len(self.state.tasks) < 6:
            return []
        counts = Counter(tag for t in self.state.tasks for tag in set(t.tags))
        return sorted(tag for tag, n in counts.items() if n / len(self.state.tasks) > share)

    def epoch_metrics(self, epoch: int, difficulty: float, tasks: list[Task], wall_s: float) -> EpochMetrics:
        ids = {t.task_id for t in tasks}
        trajs = [t for t in self.state.trajectories if t.task_id in ids]
        rejected = [r for r in self.state.rejected if r.epoch == epoch]
        earlier = [task_fingerprint(t.reference_code) for t in self.state.tasks if task_epoch(t) < epoch]
        rate = pass_rate(trajs)
        history = [m.pass_rate for m in self.state.metrics[-(self.config.controller.history_epochs - 1) :]]
        history = history if self.config.controller.history_epochs > 1 else []
        c = self.config.controller
        usage = sum((t.usage for t in trajs), TokenUsage())
        return EpochMetrics(
            epoch=epoch,
            difficulty=difficulty,
            pass_rate=rate,
            first_try_pass_rate=first_try_pass_rate(trajs),
            mean_turns=mean_turns(trajs),
            tasks_proposed=len(tasks) + len(rejected),
            tasks_accepted=len(tasks),
            rejected_by_reason=count_reasons(r.reason for r in rejected),
            novelty=novelty([task_fingerprint(t.reference_code) for t in tasks], earlier),
            mean_reward=mean_reward(trajs),
            episodes=len(trajs),
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            generator_prompt_tokens=self.generator_usage.get(epoch, TokenUsage()).prompt_tokens,
            generator_completion_tokens=self.generator_usage.get(epoch, TokenUsage()).completion_tokens,
            wall_s=round(wall_s, 3),
            next_difficulty=next_difficulty(
                difficulty, [*history, rate] if trajs else history, c.band, c.difficulty_step
            ),
        )

    def write_summary(self, *, done: bool) -> None:
        trajs = self.state.trajectories
        statuses = Counter(t.final_status for t in trajs)
        summary: dict[str, Any] = {
            "complete": done,
            "epochs": len(self.state.metrics),
            "tasks_accepted": len(self.state.tasks),
            "tasks_rejected": len(self.state.rejected),
            "rejected_by_reason": count_reasons(r.reason for r in self.state.rejected),
            "trajectories": len(trajs),
            "final_status": dict(sorted(statuses.items())),
            "pass_rate": pass_rate(trajs),
            "mean_reward": mean_reward(trajs),
            "difficulty": [m.difficulty for m in self.state.metrics],
            "usage": {
                "solver": self.usage.model_dump(),
                "generator": {
                    "prompt_tokens": sum(m.generator_prompt_tokens for m in self.state.metrics),
                    "completion_tokens": sum(m.generator_completion_tokens for m in self.state.metrics),
                },
            },
            "llm": self.stats.summary(),
        }
        self.run.write_json("summary.json", summary)
