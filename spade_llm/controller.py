"""Stage 5: the evolution loop. Epoch after epoch: plan -> propose -> validate -> de-duplicate ->
episodes -> records -> metrics -> hooks.

Every record is appended to the run directory as soon as it exists, and every record is a
function of the seed and of earlier records only (never of timing): the epoch's plan is computed
from earlier epochs and written first, each generator answer is kept in ``proposals.jsonl`` before
its candidates are judged, candidates are decided in (request, position) order, and episodes are
keyed by (task, sample). A run killed anywhere and resumed therefore writes exactly the records
the uninterrupted run writes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import RunConfig
from .curriculum import Curriculum, EpochPlan, History
from .evaluator import (
    calibration,
    count_reasons,
    difficulty_histogram,
    failure_class,
    first_try_pass_rate,
    funnel,
    mean_or_none,
    mean_reward,
    mean_turns,
    mutant_summary,
    novelty,
    pass_rate,
    percentile,
    similarity,
    task_fingerprint,
    task_stats,
    warning_signs,
    zero_spread_share,
)
from .executors import Checker, Executor, WorkItem
from .generator import Generator, Proposal, ProposalContext
from .hooks import EpochEnd, EpochHook, call_epoch_hooks
from .journals import candidate_rejection, load_run, request_rejection, task_epoch
from .journals import decision_key as _decision_key
from .llm.base import LLM, LLMRequest, LLMResponse
from .llm.stats import LLMStats
from .store import METRICS, PLANS, PROPOSALS, REJECTED, TASK_STATS, TASKS, TRAJECTORIES, RunDir
from .trainer import SolverSwitch, Trainer
from .types import EpochMetrics, Rejection, Task, TaskStats, TokenUsage, Trajectory
from .validation import ValidationReport


class LimitedLLM:
    """An LLM wrapper sharing one limit on requests in flight between generator and solver."""

    def __init__(self, llm: LLM, slots: asyncio.Semaphore) -> None:
        self.llm = llm
        self.model = llm.model
        self._slots = slots
        self.inflight = 0
        """Requests sent and not answered yet (what the progress block shows)."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        async with self._slots:
            self.inflight += 1
            try:
                return await self.llm.complete(request)
            finally:
                self.inflight -= 1


@dataclass
class RunState:
    """What the run directory holds (empty for a new run)."""

    tasks: list[Task] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    metrics: list[EpochMetrics] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    task_stats: dict[str, TaskStats] = field(default_factory=dict)
    """task id -> its ``task_stats.jsonl`` row."""
    by_task: dict[str, list[Trajectory]] = field(default_factory=dict)
    """task id -> its trajectories (an index of ``trajectories``: episodes end one by one, and each
    asks whether its task is complete; a scan of every trajectory each time grows with the run)."""
    plans: dict[int, EpochPlan] = field(default_factory=dict)
    proposals: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    """(epoch, request index) -> the ``proposals.jsonl`` row."""

    def add_trajectory(self, trajectory: Trajectory) -> None:
        self.trajectories.append(trajectory)
        self.by_task.setdefault(trajectory.task_id, []).append(trajectory)

    @classmethod
    def load(cls, run: RunDir) -> RunState:
        """What ``run`` holds, checked against itself first (``journals.load_run``): a line that is not
        a record, or records that disagree with what their epochs recorded, stop here with exit 2.

        Raises:
            UserError: the run directory is damaged (FILE:LINE), or was changed after it was written.
        """
        records = load_run(run)
        state = cls(tasks=records.tasks, metrics=records.metrics, rejected=records.rejected)
        state.task_stats = {row.task_id: row for row in records.task_stats}
        for trajectory in records.trajectories:
            state.add_trajectory(trajectory)
        state.plans = {plan.epoch: plan for plan in records.plans}
        state.proposals = {(int(row["epoch"]), int(row["request_index"])): row for row in records.proposals}
        return state


class Controller:
    """Wires curriculum -> generator -> validation -> executor -> evaluator -> store, epoch after epoch."""

    def __init__(
        self,
        config: RunConfig,
        run: RunDir,
        generator: Generator,
        executor: Executor,
        checker: Checker,
        stats: LLMStats,
        *,
        curriculum: Curriculum | None = None,
        hooks: list[tuple[str, EpochHook]] | None = None,
        trainer: Trainer | None = None,
        switch_solver: Callable[[SolverSwitch], None] | None = None,
        log: Callable[[str], None] = print,
        state: RunState | None = None,
    ) -> None:
        """``checker`` validates proposals (the local ``CodeChecker``, or the executor's workers);
        ``trainer`` runs the training step between epochs; ``switch_solver`` points the solver at the
        model a step hands back (and updates ``config.solver``); ``state``: what ``run`` holds, when
        the caller loaded it already (``RunState.load``, which checks it)."""
        self.config = config
        self.run = run
        self.generator = generator
        self.executor = executor
        self.checker = checker
        self.stats = stats
        self.curriculum = curriculum or Curriculum(config)
        self.hooks = hooks or []
        self.trainer = trainer
        self.switch_solver = switch_solver
        self.log = log
        self.state = state if state is not None else RunState.load(run)
        previous = run.read_json("summary.json")
        if isinstance(previous, dict) and isinstance(previous.get("llm"), dict):
            stats.carry(previous["llm"])
        self.fingerprints = [task_fingerprint(t.reference_code) for t in self.state.tasks]
        self.behaviours: dict[str, str] = {}
        """Behaviour fingerprint -> the accepted task that has it (``behaviour.py``)."""
        for t in self.state.tasks:
            if isinstance(t.meta.get("behaviour"), str):
                self.behaviours.setdefault(f"{t.kind}:{t.meta['behaviour']}", t.task_id)
        self._mutation_s: dict[int, list[float]] = defaultdict(list)
        self._episode_slots = asyncio.Semaphore(executor.slots)
        self._task_clock: dict[str, float] = {}
        self._warnings: dict[int, list[str]] = defaultdict(list)
        """Warnings of the running epoch that only timing can cause (budgets)."""
        self._printed: set[str] = {w for m in self.state.metrics for w in m.warnings}
        """Warnings already on the terminal: a sign that persists epoch after epoch is said once."""

    # -- the loop ------------------------------------------------------------------------------

    def progress(self, inflight: int = 0) -> list[str]:
        """The running epoch as a few lines for the terminal (``progress.LiveBlock`` draws them), with
        ``inflight`` model requests under way; called from another thread, so it only reads."""
        from .progress import bar, requests_line

        epochs = self.config.controller.epochs
        epoch = min(len(self.state.metrics), max(0, epochs - 1))
        plan = self.state.plans.get(epoch)
        asked = len(plan.requests) if plan is not None else 0
        answered = sum(1 for e, _ in list(self.state.proposals) if e == epoch)
        accepted = sum(1 for t in list(self.state.tasks) if task_epoch(t) == epoch)
        rejected = sum(1 for r in list(self.state.rejected) if r.epoch == epoch)
        episodes = [t for t in list(self.state.trajectories) if t.epoch == epoch]
        expected = accepted * self.config.solver.samples_per_task
        passed = sum(t.final_status == "passed" for t in episodes)
        rate = f"{passed / len(episodes):.0%}" if episodes else "n/a"
        target = f"{plan.target_difficulty:.2f}" if plan is not None else "..."
        return [
            f"epoch {epoch}  difficulty {target}   epochs done {len(self.state.metrics)}/{epochs}"
            f" {bar(len(self.state.metrics), epochs, 12)}",
            f"  proposals {answered}/{asked} answered   validated {accepted + rejected}   accepted {accepted}"
            f"   rejected {rejected}",
            f"  episodes {len(episodes)}/{expected} {bar(len(episodes), expected)}  pass rate so far {rate}",
            requests_line(self.stats, inflight),
        ]

    async def run_all(self) -> list[EpochMetrics]:
        finished = len(self.state.metrics)
        if finished:  # resume: a training step killed (or failed) after its epoch runs before the next
            await self.train_after(finished - 1)
        for epoch in range(finished, self.config.controller.epochs):
            row = await self.run_epoch(epoch)
            self.log(describe_epoch(row, said=self._printed))
            self._printed.update(row.warnings)
            await self.train_after(epoch)  # after the epoch's line: a training step may take hours
        self.write_summary(done=True)
        return self.state.metrics

    def history(self, epoch: int) -> History:
        """A frozen snapshot of the epochs before ``epoch``: all an epoch's plan may depend on."""
        earlier = [t for t in self.state.tasks if task_epoch(t) < epoch]
        earlier.sort(key=lambda t: (task_epoch(t), *_decision_key(t.meta.get("request_index"), t.meta.get("position"))))
        rates = {task_id: row.pass_rate for task_id, row in self.state.task_stats.items() if row.epoch < epoch}
        return History(tasks=earlier, metrics=[m for m in self.state.metrics if m.epoch < epoch], pass_rates=rates)

    def plan_for(self, epoch: int) -> EpochPlan:
        plan = self.state.plans.get(epoch)
        if plan is None:
            plan = self.curriculum.plan(epoch, self.history(epoch))
            self.run.append(PLANS, [plan.model_dump(mode="json")])  # before the first request
            self.state.plans[epoch] = plan
        return plan

    async def run_epoch(self, epoch: int) -> EpochMetrics:
        """Propose, validate, de-duplicate and solve one epoch as a stream.

        Each proposal is validated as soon as it arrives and each accepted task's samples start as
        soon as it is accepted; acceptance itself is decided in (request, position) order, whatever
        the order answers arrive in, so the duplicate gate, and with it the run, does not depend on
        timing.
        """
        started = time.monotonic()
        budget = self.config.controller.epoch_budget_s
        deadline = time.time() + budget if budget is not None else None
        plan = self.plan_for(epoch)
        episodes: list[asyncio.Task[None]] = []
        for task in self.state.tasks:  # resume: accepted before the kill, samples still to run
            if task_epoch(task) == epoch:
                episodes.extend(self.start_samples(task, epoch, deadline))
        try:
            await self.propose_and_decide(epoch, plan, deadline, episodes)
            await asyncio.gather(*episodes)
        except BaseException:
            # one failure (a full disk, a kill, Ctrl-C) stops the epoch: end the other episodes
            # here, so none writes after it and no error is left unretrieved
            for episode in episodes:
                episode.cancel()
            await asyncio.gather(*episodes, return_exceptions=True)
            raise
        for task in self.state.tasks:  # a kill between an episode and its stats row leaves it to write
            if task_epoch(task) == epoch:
                self.maybe_write_stats(task, force=True)
        row = self.epoch_metrics(epoch, plan, time.monotonic() - started)
        self.run.append(METRICS, [row.model_dump(mode="json")])
        self.state.metrics.append(row)
        self.write_summary(done=False)
        call_epoch_hooks(self.hooks, EpochEnd(self.run.path, epoch, row, self.config))
        return row

    async def train_after(self, epoch: int) -> None:
        """The training step due after ``epoch``, unless it already ran; a model it hands back solves
        the later epochs."""
        trainer = self.trainer
        if trainer is None or not trainer.due(epoch) or trainer.done(epoch):
            return
        try:
            outcome = await asyncio.to_thread(trainer.step, epoch, self.config.solver.model)
        except BaseException:  # Ctrl-C or a kill of the loop: the command (its own process group) ends too
            trainer.stop()
            raise
        if outcome.switch is not None and self.switch_solver is not None:
            self.switch_solver(outcome.switch)  # a model that cannot be used stops here, the step unrecorded
        trainer.record(outcome)

    # -- proposals and decisions -----------------------------------------------------------------

    def decided(self, epoch: int) -> set[tuple[int, int]]:
        """(request, position) pairs of ``epoch`` with a decision on disk."""
        keys = {
            _decision_key(t.meta.get("request_index"), t.meta.get("position"))
            for t in self.state.tasks
            if task_epoch(t) == epoch
        }
        keys |= {_decision_key(r.request_index, r.position) for r in self.state.rejected if r.epoch == epoch}
        return keys

    async def propose_and_decide(
        self, epoch: int, plan: EpochPlan, deadline: float | None, episodes: list[asyncio.Task[None]]
    ) -> None:
        by_id = {t.task_id: t for t in self.state.tasks}
        examples = [by_id[i] for i in plan.example_ids if i in by_id]
        decided = self.decided(epoch)
        # every validation started: those an epoch budget leaves undecided are cancelled with the
        # epoch, so nothing of it runs on into the training step or the next epoch
        validations: list[asyncio.Task[ValidationReport]] = []

        async def answer(ctx: ProposalContext) -> Proposal:
            kept = self.state.proposals.get((epoch, ctx.request_index))
            if kept is not None:  # answered before a kill: judged again, not asked again
                return Proposal.from_record(kept)
            proposal = await self.generator.propose(ctx)
            row = proposal.record(epoch, ctx.n)
            self.run.append(PROPOSALS, [row])  # before any of its candidates is decided
            self.state.proposals[(epoch, ctx.request_index)] = row
            return proposal

        async def propose(ctx: ProposalContext) -> tuple[Proposal, list[asyncio.Task[ValidationReport] | None]]:
            proposal = await answer(ctx)
            checks = [
                asyncio.create_task(self.checker.validate(c.task))
                if c.task is not None and _decision_key(ctx.request_index, c.position[1]) not in decided
                else None
                for c in proposal.candidates
            ]
            validations.extend(c for c in checks if c is not None)
            return proposal, checks

        contexts = [
            ProposalContext(
                epoch=epoch,
                request_index=r.request_index,
                n=r.n,
                difficulty=plan.target_difficulty,
                capability=plan.capability,
                examples=examples,
                example_rates=plan.example_rates,
                band=self.config.controller.band,
                avoid_tags=plan.avoid_tags,
                seed=r.seed,
                focus=r.focus,
                goal=plan.goal,
                kind=r.kind,
                run_seed=self.config.seed,
            )
            for r in plan.requests
        ]
        pending = [asyncio.create_task(propose(ctx)) for ctx in contexts]
        try:
            for ctx, future in zip(contexts, pending, strict=True):  # decisions in request order
                outcome = await self._until(deadline, future)
                if outcome is None:
                    self._warnings[epoch].append(
                        f"epoch budget of {self.config.controller.epoch_budget_s:g} s ran out: requests "
                        f"{ctx.request_index}..{len(contexts) - 1} not decided"
                    )
                    return
                proposal, checks = outcome
                if proposal.failure and _decision_key(ctx.request_index, None) not in decided:
                    self.reject(request_rejection(epoch, ctx.request_index, proposal))
                for cand, check in zip(proposal.candidates, checks, strict=True):
                    position = cand.position[1]
                    if _decision_key(ctx.request_index, position) in decided:
                        continue
                    if cand.task is None or check is None:
                        self.reject(candidate_rejection(epoch, ctx.request_index, proposal, cand))
                        continue
                    report = await self._until(deadline, check)
                    if report is None:
                        self._warnings[epoch].append(
                            f"epoch budget of {self.config.controller.epoch_budget_s:g} s ran out during validation"
                        )
                        return
                    accepted = self.decide(cand.task, report, ctx.request_index, position)
                    if accepted is not None:
                        episodes.extend(self.start_samples(accepted, epoch, deadline))
        finally:
            for future in pending:
                future.cancel()
            for validation in validations:
                validation.cancel()
            await asyncio.gather(*pending, *validations, return_exceptions=True)

    @staticmethod
    async def _until(deadline: float | None, future: asyncio.Future[Any]) -> Any:
        """The future's result, or None when ``deadline`` (wall clock) passes first."""
        if deadline is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout=max(0.0, deadline - time.time()))
        except asyncio.TimeoutError:
            return None

    def decide(self, task: Task, report: ValidationReport, request_index: int, position: int) -> Task | None:
        """Accept a validated candidate unless it failed a gate or nearly copies an accepted task."""
        epoch = task_epoch(task)
        if report.mutation is not None:
            self._mutation_s[epoch].append(report.mutation.seconds)
        if not report.valid or report.task is None:
            self.reject(
                Rejection(
                    epoch=epoch,
                    request_index=request_index,
                    position=position,
                    reason=report.reason or "invalid",
                    detail=report.detail,
                    task_id=task.task_id,
                    task=task.dump(),
                )
            )
            return None
        fp = task_fingerprint(report.task.reference_code)
        # a program may come back as another kind (predict its output rather than write it): only
        # tasks of the same kind are compared
        twin = max(
            (
                (similarity(fp, other), i)
                for i, other in enumerate(self.fingerprints)
                if self.state.tasks[i].kind == task.kind
            ),
            default=(0.0, -1),
        )
        behaviour = f"{task.kind}:{report.behaviour}" if report.behaviour else None
        same = self.behaviours.get(behaviour) if behaviour else None
        twin_detail = None
        if twin[0] >= self.config.controller.novelty_threshold:
            twin_detail = f"{twin[0]:.0%} similar to {self.state.tasks[twin[1]].task_id}"
        elif same is not None:
            twin_detail = f"computes what {same} computes: the same outputs on every shared probe input"
        if twin_detail is not None:
            self.reject(
                Rejection(
                    epoch=epoch,
                    request_index=request_index,
                    position=position,
                    reason="duplicate",
                    task_id=task.task_id,
                    task=task.dump(),
                    detail=twin_detail,
                )
            )
            return None
        meta: dict[str, Any] = {**report.task.meta, "request_index": request_index, "position": position}
        if behaviour:
            meta["behaviour"] = report.behaviour
            self.behaviours[behaviour] = task.task_id
        if report.mutation is not None:
            # only what the code fixes: how many mutants were killed or equivalent can hang on timing
            meta["mutants"] = report.mutation.total
        accepted = report.task.model_copy(update={"meta": meta})
        self.fingerprints.append(fp)
        self.state.tasks.append(accepted)
        self.run.append(TASKS, [accepted.dump()])  # before any trajectory of it can exist
        return accepted

    def reject(self, rejection: Rejection) -> None:
        self.state.rejected.append(rejection)
        self.run.append(REJECTED, [rejection.model_dump(mode="json")])

    # -- episodes ----------------------------------------------------------------------------------

    def start_samples(self, task: Task, epoch: int, deadline: float | None) -> list[asyncio.Task[None]]:
        """One episode per sample of ``task`` that has no trajectory yet."""
        done = {t.sample_index for t in self.state.by_task.get(task.task_id, [])}
        return [
            asyncio.create_task(self.run_episode(task, epoch, k, deadline))
            for k in range(self.config.solver.samples_per_task)
            if k not in done
        ]

    async def run_episode(self, task: Task, epoch: int, sample_index: int, epoch_deadline: float | None) -> None:
        async with self._episode_slots:
            now = time.time()
            if epoch_deadline is not None and now >= epoch_deadline:
                self._warnings[epoch].append(f"epoch budget ran out: {task.task_id} sample {sample_index} not run")
                return
            budget = self.config.solver.task_budget_s
            task_deadline = self._task_clock.setdefault(task.task_id, now) + budget if budget is not None else None
            deadlines = [d for d in (epoch_deadline, task_deadline) if d is not None]
            item = WorkItem(task, epoch, sample_index, min(deadlines) if deadlines else None)
            trajectory = await self.executor.run(item)
        self.run.append(TRAJECTORIES, [trajectory.model_dump(mode="json")])
        self.state.add_trajectory(trajectory)
        self.maybe_write_stats(task)

    def maybe_write_stats(self, task: Task, *, force: bool = False) -> None:
        """Append the task's ``task_stats`` row once all its samples are judged (``force``: once the
        epoch is over, with the samples it has, if a budget left some unrun)."""
        if task.task_id in self.state.task_stats:
            return
        trajs = self.state.by_task.get(task.task_id, [])
        if not trajs or (len(trajs) < self.config.solver.samples_per_task and not force):
            return
        stats = task_stats(task.task_id, task_epoch(task), task.kind, trajs)
        self.state.task_stats[task.task_id] = stats
        self.run.append(TASK_STATS, [stats.model_dump(mode="json")])

    # -- metrics -------------------------------------------------------------------------------------

    def epoch_metrics(self, epoch: int, plan: EpochPlan, wall_s: float) -> EpochMetrics:
        tasks = [t for t in self.state.tasks if task_epoch(t) == epoch]
        ids = {t.task_id for t in tasks}
        trajs = [t for task_id in sorted(ids) for t in self.state.by_task.get(task_id, [])]
        rejected = [r for r in self.state.rejected if r.epoch == epoch]
        proposals = [row for (e, _), row in sorted(self.state.proposals.items()) if e == epoch]
        fingerprint = dict(zip((t.task_id for t in self.state.tasks), self.fingerprints, strict=True))
        earlier = [fingerprint[t.task_id] for t in self.state.tasks if task_epoch(t) < epoch]
        stats = [self.state.task_stats[i] for i in sorted(ids) if i in self.state.task_stats]
        generator = sum(
            (TokenUsage(prompt_tokens=p["prompt_tokens"], completion_tokens=p["completion_tokens"]) for p in proposals),
            TokenUsage(),
        )
        usage = sum((t.usage for t in trajs), TokenUsage())
        c = self.config.controller
        warnings = list(self._warnings.pop(epoch, []))
        if not trajs:
            warnings.append("no episode ran: pass rate unmeasured, difficulty kept")
        elif len(trajs) < c.min_episodes:
            warnings.append(f"only {len(trajs)} episodes (< min_episodes {c.min_episodes}): difficulty kept")
        suspects = sum("hardcoded_suspect" in t.flags for t in trajs)
        if suspects:
            warnings.append(f"{suspects} episodes passed the public tests but failed hidden ones (hardcoded_suspect)")
        ordered = sorted(tasks, key=lambda t: _decision_key(t.meta.get("request_index"), t.meta.get("position")))
        parsed = sum(1 for p in proposals for cand in p.get("candidates") or [] if cand.get("task") is not None)
        proposed = sum(p["n"] if p.get("failure") else len(p.get("candidates") or []) for p in proposals)
        earlier_tags = {tag for t in self.state.tasks if task_epoch(t) < epoch for tag in t.tags}
        tags_now = earlier_tags | {tag for t in tasks for tag in t.tags}
        by_id = {t.task_id: t for t in tasks}
        measured = [(by_id[s.task_id].difficulty, s.pass_rate) for s in stats if s.task_id in by_id]
        row = EpochMetrics(
            epoch=epoch,
            difficulty=plan.target_difficulty,
            pass_rate=pass_rate(trajs),
            first_try_pass_rate=first_try_pass_rate(trajs),
            mean_turns=mean_turns(trajs),
            tasks_proposed=proposed,
            tasks_accepted=len(tasks),
            rejected_by_reason=count_reasons(r.reason for r in rejected),
            novelty=novelty([fingerprint[t.task_id] for t in ordered], earlier),
            mean_reward=mean_reward(trajs),
            episodes=len(trajs),
            mean_learnability=round(math.fsum(s.learnability for s in stats) / len(stats), 4) if stats else None,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            generator_prompt_tokens=generator.prompt_tokens,
            generator_completion_tokens=generator.completion_tokens,
            wall_s=round(wall_s, 3),
            warnings=warnings,
            funnel=funnel(proposed, parsed, (r.reason for r in rejected), len(tasks)),
            failure_classes=count_reasons(c for c in map(failure_class, trajs) if c is not None),
            p90_solve_s=percentile([t.wall_s for t in trajs], 0.9),
            difficulty_histogram=difficulty_histogram(t.difficulty for t in tasks),
            zero_spread_share=zero_spread_share(stats),
            calibration=calibration([d for d, _ in measured], [p for _, p in measured]),
            tags_seen=len(tags_now),
            new_tags=len(tags_now - earlier_tags),
            kinds=count_reasons(t.kind for t in tasks),
            mutants=mutant_summary([t.meta.get("mutants") for t in tasks]),
            mutation_s=mean_or_none(self._mutation_s.get(epoch, [])),
        )
        signs = warning_signs([*[m for m in self.state.metrics if m.epoch < epoch], row], c.band)
        row = row.model_copy(update={"warnings": [*warnings, *signs]})
        return row.model_copy(update={"next_difficulty": self.curriculum.next_target(row)})

    def write_summary(self, *, done: bool, stopped_because: str | None = None) -> None:
        trajs = self.state.trajectories
        statuses = Counter(t.final_status for t in trajs)
        solver_usage = sum((t.usage for t in trajs), TokenUsage())
        rows = list(self.state.proposals.values())
        costs = [r["cost"] for r in rows if r.get("cost") is not None]
        summary: dict[str, Any] = {
            "complete": done,
            **({"stopped_because": stopped_because} if stopped_because else {}),
            "epochs": len(self.state.metrics),
            "tasks_accepted": len(self.state.tasks),
            "tasks_rejected": len(self.state.rejected),
            "rejected_by_reason": count_reasons(r.reason for r in self.state.rejected),
            "trajectories": len(trajs),
            "samples_per_task": self.config.solver.samples_per_task,
            "final_status": dict(sorted(statuses.items())),
            "pass_rate": pass_rate(trajs),
            "mean_reward": mean_reward(trajs),
            "difficulty": [m.difficulty for m in self.state.metrics],
            "usage": {
                "solver": solver_usage.model_dump(),
                "generator": {
                    "prompt_tokens": sum(int(r["prompt_tokens"]) for r in rows),
                    "completion_tokens": sum(int(r["completion_tokens"]) for r in rows),
                    "cost": sum(costs) if costs else None,
                },
            },
            "llm": self.stats.summary(),
        }
        self.run.write_json("summary.json", summary)
        self.run.note_llm_fallbacks(self.stats.fallbacks)


def _percent(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:>4.0%}"


def describe_epoch(row: EpochMetrics, said: set[str] | frozenset[str] = frozenset()) -> str:
    """One log line per epoch, then its warnings but those in ``said`` (printed before)."""
    turns = "n/a" if row.mean_turns is None else f"{row.mean_turns:.2f}"
    reward = "n/a" if row.mean_reward is None else f"{row.mean_reward:+.2f}"
    line = (
        f"epoch {row.epoch}: difficulty {row.difficulty:.2f}  accepted {row.tasks_accepted}/{row.tasks_proposed}"
        f"  pass {_percent(row.pass_rate).strip()} (first try {_percent(row.first_try_pass_rate).strip()})"
        f" on {row.episodes} episodes  turns {turns}  reward {reward}  novelty {row.novelty:.2f}"
        f"  -> next {row.next_difficulty:.2f}"
    )
    return line + "".join(f"\n  warning: {w}" for w in row.warnings if w not in said)
