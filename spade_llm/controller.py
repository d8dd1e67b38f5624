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
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ._util.aio import wait_unless_failed
from .config import RunConfig
from .curriculum import Curriculum, EpochPlan, History
from .dedup import Deduper, decide
from .empty_epochs import EmptyEpochGuard
from .episodes import Episodes, RunState
from .evaluator import epoch_metrics
from .executors import Checker, Executor
from .generator import Generator, Proposal, ProposalContext
from .hooks import EpochEnd, EpochHook, call_epoch_hooks
from .llm.stats import LLMStats
from .progress import describe_epoch, epoch_lines, run_summary
from .store import METRICS, PLANS, PROPOSALS, REJECTED, TASKS, RunDir
from .store.integrity import candidate_rejection, request_rejection
from .train_step import Switch, Trainer
from .types import EpochMetrics, Rejection, Task, decision_key, task_epoch
from .validation import ValidationReport


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
        switch_models: Callable[[Switch], None] | None = None,
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
        self.switch_models = switch_models
        self.log = log
        self.state = state if state is not None else RunState.load(run)
        previous = run.read_json("summary.json")
        if isinstance(previous, dict) and isinstance(previous.get("llm"), dict):
            stats.carry(previous["llm"])
        self.deduper = Deduper(config.controller.novelty_threshold, self.state.each_task())
        self.empty = EmptyEpochGuard(config.controller, run, log)
        self._mutation_s: dict[int, list[float]] = defaultdict(list)
        self._warnings: dict[int, list[str]] = defaultdict(list)
        """Warnings of the running epoch that only timing can cause (budgets)."""
        self.episodes = Episodes(
            run,
            self.state,
            executor,
            config.solver.samples_per_task,
            task_budget_s=config.solver.task_budget_s,
            warnings=self._warnings,
        )
        self._printed: set[str] = set(self.state.metrics[-1].warnings) if self.state.metrics else set()
        """The last epoch's warnings: the same words again are said as persisting (``describe_epoch``)."""

    # -- the loop ------------------------------------------------------------------------------

    def progress(self, inflight: int = 0) -> list[str]:
        """The running epoch as a few lines for the terminal (``progress.LiveBlock`` draws them)."""
        c = self.config
        return epoch_lines(self.state, c.controller.epochs, c.solver.samples_per_task, self.stats, inflight)

    async def run_all(self) -> Sequence[EpochMetrics]:
        finished = len(self.state.metrics)
        if finished:  # resume: a training step killed (or failed) after its epoch runs before the next
            self.empty.stop_if_due(self.state.metrics, resuming=True)
            await self.train_after(finished - 1)
        if self.config.controller.overlap:
            await self._run_overlapped(finished)
        else:
            for epoch in range(finished, self.config.controller.epochs):
                await self.empty.pause(self.state.metrics)
                self.ended(await self.run_epoch(epoch))
                await self.train_after(epoch)  # after the epoch's line: a training step may take hours
        self.write_summary(done=True)
        return self.state.metrics

    def ended(self, row: EpochMetrics) -> None:
        """An epoch's row is written: say it, and stop the run when too many epochs in a row were empty."""
        self.log(describe_epoch(row, said=self._printed))
        self._printed = set(row.warnings)
        self.empty.stop_if_due(self.state.metrics, resuming=False)

    async def _run_overlapped(self, first: int) -> None:
        """``controller.overlap``: epoch N+1 is proposed, validated and played while epoch N's episodes are
        still played. It starts once N has decided all its tasks (so its duplicate gate sees all of them)
        and N-1 has finished (so at most two epochs run); its rows wait for N's (metrics in epoch order)."""
        running: list[tuple[asyncio.Task[EpochMetrics], asyncio.Event]] = []
        try:
            for epoch in range(first, self.config.controller.epochs):
                if running:
                    await wait_unless_failed(running[-1][1].wait(), running[-1][0])
                if len(running) == 2:
                    self.ended(await running.pop(0)[0])
                await self.empty.pause(self.state.metrics)
                after, decided = running[-1][0] if running else None, asyncio.Event()
                running.append((asyncio.create_task(self.run_epoch(epoch, after=after, decided=decided)), decided))
            while running:
                self.ended(await running.pop(0)[0])
        finally:  # a failure (or Ctrl-C) in one epoch ends the other
            for epoch_task, _ in running:
                epoch_task.cancel()
            await asyncio.gather(*(t for t, _ in running), return_exceptions=True)

    def history(self, epoch: int) -> History:
        """A frozen snapshot of the epochs before ``epoch``: all an epoch's plan may depend on."""
        earlier = sorted((t for t in self.state.tasks if t.epoch < epoch), key=lambda t: (t.epoch, *t.order))
        stats = self.state.measured.items()  # a row whose every sample was abandoned measured nothing
        rates = {i: row.pass_rate for i, row in stats if row.epoch < epoch and row.pass_rate is not None}
        metrics = self.state.metrics_before(epoch)
        rejected = [r for r in self.state.rejected if r.epoch == epoch - 1]  # what its duplicates copied
        return History(tasks=earlier, metrics=metrics, pass_rates=rates, rejected=rejected)

    def plan_for(self, epoch: int) -> EpochPlan:
        plan = self.state.plans.get(epoch)
        if plan is None:
            if self.config.controller.overlap and epoch > 0:
                # the epoch before this one still runs: the plan reads those before it, and moves its target
                before = self.state.plans[epoch - 1].target_difficulty
                plan = self.curriculum.plan(epoch, self.history(epoch - 1), previous_target=before)
            else:
                plan = self.curriculum.plan(epoch, self.history(epoch))
            self.run.append(PLANS, [plan.model_dump(mode="json")])  # before the first request
            self.state.plans[epoch] = plan
        return plan

    async def run_epoch(
        self,
        epoch: int,
        *,
        after: asyncio.Task[EpochMetrics] | None = None,
        decided: asyncio.Event | None = None,
    ) -> EpochMetrics:
        """Propose, validate, de-duplicate and solve one epoch as a stream.

        Each proposal is validated as soon as it arrives and each accepted task's samples start as
        soon as it is accepted; acceptance itself is decided in (request, position) order, whatever
        the order answers arrive in, so the duplicate gate, and with it the run, does not depend on
        timing. ``decided`` is set once every task of the epoch is decided; the epoch's rows are
        written only after ``after`` (the epoch before, overlapped) has written its own.
        """
        started = time.monotonic()
        budget = self.config.controller.epoch_budget_s
        deadline = time.time() + budget if budget is not None else None
        plan = self.plan_for(epoch)
        episodes: list[asyncio.Task[None]] = []
        for task in self.state.tasks_of(epoch):  # resume: accepted before the kill, samples still to run
            episodes.extend(self.episodes.start(task, epoch, deadline))
        try:
            await self.propose_and_decide(epoch, plan, deadline, episodes)
            if decided is not None:
                decided.set()
            await asyncio.gather(*episodes)
            if after is not None:
                await asyncio.shield(after)  # its failure is the loop's to raise, not ours to cancel
        except BaseException:
            # one failure (a full disk, a kill, Ctrl-C) stops the epoch: end the other episodes
            # here, so none writes after it and no error is left unretrieved
            for episode in episodes:
                episode.cancel()
            await asyncio.gather(*episodes, return_exceptions=True)
            raise
        for task in self.state.tasks_of(epoch):  # a kill between an episode and its stats row leaves it to write
            self.episodes.write_stats(task, epoch, force=True)
        row = self.epoch_metrics(epoch, plan, time.monotonic() - started)
        offset = self.run.append_record(METRICS, row.model_dump(mode="json"))
        self.state.end_epoch(row, offset)  # its tasks, episodes and answers are counted, and let go
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
            models = (self.config.solver.model, self.config.generator.model)
            outcome = await asyncio.to_thread(trainer.step, epoch, *models)
        except BaseException:  # Ctrl-C or a kill of the loop: the command (its own process group) ends too
            trainer.stop()
            raise
        if outcome.switch is not None and self.switch_models is not None:
            self.switch_models(outcome.switch)  # a model that cannot be used stops here, the step unrecorded
        trainer.record(outcome)

    # -- proposals and decisions -----------------------------------------------------------------

    def decided(self, epoch: int) -> set[tuple[int, int]]:
        """(request, position) pairs of ``epoch`` with a decision on disk."""
        keys = {decision_key(t.meta.get("request_index"), t.meta.get("position")) for t in self.state.tasks_of(epoch)}
        keys |= {decision_key(r.request_index, r.position) for r in self.state.rejected if r.epoch == epoch}
        return keys

    async def propose_and_decide(
        self, epoch: int, plan: EpochPlan, deadline: float | None, episodes: list[asyncio.Task[None]]
    ) -> None:
        by_id = self.state.whole([*plan.example_ids, *plan.repeated, *(r.base_id for r in plan.requests if r.base_id)])
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
            self.state.add_proposal(epoch, ctx.request_index, row)
            return proposal

        async def propose(ctx: ProposalContext) -> tuple[Proposal, list[asyncio.Task[ValidationReport] | None]]:
            proposal = await answer(ctx)
            checks = [
                asyncio.create_task(self.checker.validate(c.task))
                if c.task is not None and decision_key(ctx.request_index, c.position[1]) not in decided
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
                base=by_id.get(r.base_id) if r.base_id else None,
                repeated=[by_id[i] for i in plan.repeated if i in by_id],
                run_seed=self.config.seed,
                prompt_index=r.prompt,
                sample=r.sample,
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
                if proposal.failure and decision_key(ctx.request_index, None) not in decided:
                    self.reject(request_rejection(epoch, ctx.request_index, proposal))
                for cand, check in zip(proposal.candidates, checks, strict=True):
                    position = cand.position[1]
                    if decision_key(ctx.request_index, position) in decided:
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
                        episodes.extend(self.episodes.start(accepted, epoch, deadline))
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
        decision = decide(report, request_index, position, self.deduper)
        accepted = decision.accepted
        if accepted is None:
            self.reject(
                Rejection(
                    epoch=epoch,
                    request_index=request_index,
                    position=position,
                    reason=decision.reason or "invalid",
                    detail=decision.detail,
                    task_id=task.task_id,
                    task=task.dump(),
                )
            )
            return None
        offset = self.run.append_record(TASKS, accepted.dump())  # before any trajectory of it can exist
        self.state.add_task(accepted, offset)
        return accepted

    def reject(self, rejection: Rejection) -> None:
        self.state.add_rejection(rejection)
        self.run.append(REJECTED, [rejection.model_dump(mode="json")])

    # -- metrics -------------------------------------------------------------------------------------

    def epoch_metrics(self, epoch: int, plan: EpochPlan, wall_s: float) -> EpochMetrics:
        row = epoch_metrics(
            epoch,
            plan.target_difficulty,
            tasks=self.state.tasks_of(epoch),
            earlier_tasks=[t for t in self.state.tasks if t.epoch < epoch],
            nearest=self.deduper.nearest_similarity,
            trajectories=self.state.by_task,
            rejected=[r for r in self.state.rejected if r.epoch == epoch],
            proposals=[row for (e, _), row in sorted(self.state.proposals.items()) if e == epoch],
            task_stats=self.state.task_stats,
            earlier_metrics=self.state.metrics_before(epoch),
            controller=self.config.controller,
            warnings=self._warnings.pop(epoch, []),
            mutation_s=self._mutation_s.get(epoch, []),
            wall_s=wall_s,
        )
        warned = [*row.warnings, *self.empty.last_epoch_warning(self.state.metrics, row)]
        return row.model_copy(update={"next_difficulty": self.curriculum.next_target(row), "warnings": warned})

    def write_summary(self, *, done: bool, stopped_because: str | None = None) -> None:
        summary = run_summary(
            self.state,
            self.config.solver.samples_per_task,
            self.stats.summary(),
            done=done,
            stopped_because=stopped_because,
        )
        self.run.write_json("summary.json", summary)
        self.run.note_llm(self.stats.fallbacks, self.stats.servers)
