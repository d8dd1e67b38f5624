"""The solver's model in ``spade serve-env``: a broker between the run's solver and the clients.

Control is inverted at the solver's LLM. The run is an ordinary self-play run (the controller plans
each epoch, proposes and validates tasks, runs ``samples_per_task`` episodes per accepted task,
writes every record, moves the target difficulty, resumes), except that the solver's model is an
``EnvBroker``: its ``complete(request)`` calls no model. It publishes the request's messages (the
whole conversation so far: the solver's opening messages on turn 1, then the conversation with the
feedback the solver built from the public tests) as an episode turn for a client, and waits for the
client's reply, which the solver then extracts, judges and feeds back exactly as it does a model's::

    controller -> Episodes -> EnvSolver.solve -> LLMSolver.solve -> EnvBroker.complete (waits)
    client:  reset()   -> EnvBroker.take()        an episode waiting for a client, its opening messages
             step(a)   -> EnvBroker.reply(ep, a)  resolves the wait; then the next turn's messages, or
                                                  the end (the trajectory's verdict and reward)

Episodes are keyed by (epoch, task id, sample index), which the solver puts in each request's
``metadata``. The controller waits for all of an epoch's episodes, so at most one epoch of episodes
(``controller.concurrency`` of them at once) waits for clients: an idle trainer costs nothing, and an
episode nobody took never times out. Once a client holds an episode, each reply must come within
``env.episode_timeout_s``; a client that goes silent, closes its session or resets mid-episode
abandons it: the wait raises ``LLMCallError``, which the solver records as the episode's ``error``
(flagged ``abandoned``), so the episode is recorded, not lost, and the epoch still closes. A client
that leaves before it was shown the episode's first turn abandons nothing: the server gives the
episode back (``give_back``, ``withdraw``) and it goes to the next client, first in line, its reply
timer not started, so no phantom failure enters the records or the epoch's pass rate.

**Groups** (GRPO's ``G`` rollouts of one prompt): a ``take`` may name a group (``group``, ``group_size``).
The first take of a key binds the group to a task with ``group_size`` episodes not promised to anyone
(oldest first); the next ``group_size - 1`` takes of that key get episodes of the same task (fresh
episodes, their own sessions), and a key taken again after its group was handed out in full starts a
new group. A task's episodes promised to a group are not handed to anyone else, so the curriculum
measures the task on the group's episodes (its pass rate and learnability over them). ``group_size``
must divide ``solver.samples_per_task``, so every task splits into whole groups. A take without a
key gets any episode nobody was promised, as before.

Everything here runs on the controller's event loop; ``server.py`` calls the client verbs (``take``,
``reply``, ``abandon``) from the server's loop through ``Bridge``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from ...errors import LLMCallError
from ...evaluator import attempt_credit, outcome_reward
from ...llm.base import LLMRequest, LLMResponse
from ...solver import LLMSolver
from ...types import ABANDONED, Message, Task, Trajectory

__all__ = ["ENV_MODEL", "Bridge", "EnvBroker", "EnvSolver", "Episode", "EpisodeGone", "View"]

ENV_MODEL = "env"
"""The solver's model string in a serve-env run (``config.yaml``, the manifest) and the trajectories'
``solver_model`` when the client names none."""

SAY_WAIT_AFTER_S = 1.0
"""A reset that has waited this long for an episode says why in the server's log."""
SAY_WAIT_EVERY_S = 10.0
"""At most one such line in this many seconds."""

_T = TypeVar("_T")
EpisodeKey = tuple[int, str, int]
"""(epoch, task id, sample index)."""


class EpisodeGone(RuntimeError):
    """A client verb that cannot be served: no episode ready in time, the episode is over or was
    abandoned, a step without a reset, or the run is over. The server sends the message to the client
    (openenv-core's ``EXECUTION_ERROR``)."""


class _Abandoned(Exception):
    """Set on the answer the solver waits for when its client lets the episode go."""


@dataclass(frozen=True)
class View:
    """What a client is shown of its episode at one point: only what the solver's prompts may show
    (the conversation, public-test counts, the verdict and reward at the end), never a hidden test."""

    episode_id: str
    task_id: str
    kind: str
    epoch: int
    sample_index: int
    difficulty: float
    turn: int
    """The turn the client's next reply answers (at the end: the turns taken)."""
    messages: list[dict[str, str]]
    """The whole conversation so far as ``{role, content}`` dicts, ready to send as a chat request."""
    feedback: str | None = None
    """The solver's feedback on the last reply (the last message), from turn 2 on."""
    done: bool = False
    reward: float | None = None
    final_status: str | None = None
    public_passed: int | None = None
    public_total: int | None = None
    tests_passed: int | None = None
    """At the end: tests the last answer passed, all tests counted (a count: no test is shown)."""
    tests_total: int | None = None
    trajectory_id: str | None = None
    error: str | None = None
    """Why the episode ended without a judged reply (abandoned, its time budget ran out), at the end."""


def _dicts(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


class Episode:
    """One episode of the run as a client sees it; its fields belong to the controller's loop."""

    def __init__(self, task: Task, epoch: int, sample_index: int) -> None:
        self.task = task
        self.epoch = epoch
        self.sample_index = sample_index
        self.id = f"{task.task_id}/{sample_index}"
        self.messages: list[Message] = []
        self.turn = 0
        self.taken = asyncio.Event()
        """Set once a client's ``reset`` took the episode: from then on its replies are timed."""
        self.answer: asyncio.Future[LLMResponse] | None = None
        """The reply the solver waits for (while it waits)."""
        self.next: asyncio.Future[View] | None = None
        """What the client's ``step`` waits for: the next turn, or the end."""
        self.abandoned: str | None = None
        self.back: asyncio.Future[None] | None = None
        """Set when the client holding the episode left before it was shown the first turn (``give_back``)."""
        self.client_model: str | None = None
        self.trajectory: Trajectory | None = None
        self.group: _Group | None = None
        """The group it was handed to, if any."""

    @property
    def key(self) -> EpisodeKey:
        return self.epoch, self.task.task_id, self.sample_index

    def _view(self, **fields: Any) -> View:
        return View(
            episode_id=self.id,
            task_id=self.task.task_id,
            kind=self.task.kind,
            epoch=self.epoch,
            sample_index=self.sample_index,
            difficulty=self.task.difficulty,
            **fields,
        )

    def prompt(self) -> View:
        """The turn waiting for the client's reply."""
        feedback = self.messages[-1].content if self.turn > 1 and self.messages else None
        return self._view(turn=self.turn, messages=_dicts(self.messages), feedback=feedback)

    def end(self, trajectory: Trajectory, reward: str = "pass") -> View:
        """The episode's end: its verdict, and its reward as ``env.reward`` says (``reward``)."""
        last = trajectory.attempts[-1] if trajectory.attempts else None
        if reward == "shaped":
            paid = trajectory.reward
        else:  # the share partial credit pays is the one the trajectory's own reward was computed from
            credited = attempt_credit(self.task, last) if last else 0.0
            paid = outcome_reward(trajectory.final_status, credited, reward == "partial_credit")
        return self._view(
            turn=len(trajectory.attempts),
            messages=_dicts(trajectory.messages),
            done=True,
            reward=paid,
            final_status=trajectory.final_status,
            public_passed=last.public_passed if last else None,
            public_total=last.public_total if last else None,
            tests_passed=last.result.tests_passed if last else None,
            tests_total=last.result.tests_total if last else None,
            trajectory_id=trajectory.trajectory_id,
            error=trajectory.error,
        )


def _settle(future: asyncio.Future[_T] | None, value: _T | BaseException) -> None:
    if future is None or future.done():
        return
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)


@dataclass(eq=False)
class _Group:
    """Takes that share one task: ``size`` of them, ``handed`` so far."""

    key: Hashable
    task_id: str
    size: int
    handed: int = 0


@dataclass(eq=False)
class _Taker:
    """A client waiting in ``take``, with the group it asks for."""

    future: asyncio.Future[Episode]
    group: Hashable | None = None
    size: int = 1


@dataclass
class _TaskCount:
    """A task's episodes as the broker hands them: ``expected`` to run in this process (its samples not
    recorded when it was first seen), ``handed`` to clients, ``promised`` to groups not handed yet."""

    expected: int
    handed: int = 0
    promised: int = 0
    ended: int = 0

    @property
    def free(self) -> int:
        """Episodes of the task nobody has nor was promised (those not offered yet included)."""
        return self.expected - self.handed - self.promised


class EnvBroker:
    """The solver's ``LLM`` in serve-env: each ``complete`` is one turn answered by a client.

    ``episode_timeout_s``: longest wait for a reply once a client holds the episode; ``reset_timeout_s``:
    longest wait of a client's ``take`` for an episode to be ready.
    """

    model = ENV_MODEL

    def __init__(
        self,
        *,
        episode_timeout_s: float,
        reset_timeout_s: float,
        samples_per_task: int = 1,
        samples_left: Callable[[str], int] | None = None,
    ) -> None:
        """``samples_per_task``: the run's (a group's size must divide it); ``samples_left``: task id ->
        its samples with no trajectory yet, asked when its first episode opens (default: all of them)."""
        self.episode_timeout_s = episode_timeout_s
        self.reset_timeout_s = reset_timeout_s
        self.samples_per_task = samples_per_task
        self.reward = "pass"
        """``env.reward``: what the last observation's ``reward`` pays (``Episode.end``)."""
        self.samples_left = samples_left or (lambda task_id: self.samples_per_task)
        self._episodes: dict[EpisodeKey, Episode] = {}
        self._pool: deque[Episode] = deque()
        """Episodes waiting for a client, in the order their first turn came."""
        self._takers: deque[_Taker] = deque()
        """Clients waiting in ``take`` for an episode, first come first served (among those it can serve)."""
        self._groups: dict[Hashable, _Group] = {}
        """Groups still to be handed out in full, by key."""
        self._counts: dict[str, _TaskCount] = {}
        """Per task with an episode open: what was handed and promised (see ``_TaskCount``)."""
        self._tickets: dict[Hashable, asyncio.Future[Episode]] = {}
        """The waiting clients by the ticket they took with, so the server can withdraw one that left."""
        self.given_back = 0
        """Episodes handed to a client that left before seeing them, and so handed again."""
        self._over: str | None = None
        self.stopping: str | None = None
        """Why the server is stopping, when it is (set before the run is cancelled)."""
        self.ended = 0
        self.abandoned = 0
        self.log: Callable[[str], None] = lambda _message: None
        """Where a reset that waits says why (the server's log)."""
        self._said_waiting = -math.inf

    # -- the solver's side ---------------------------------------------------------------------------

    def open(self, task: Task, epoch: int, sample_index: int) -> Episode:
        """A new episode, before its solver starts (``EnvSolver``)."""
        episode = Episode(task, epoch, sample_index)
        self._episodes[episode.key] = episode
        if task.task_id not in self._counts:
            self._counts[task.task_id] = _TaskCount(expected=max(1, self.samples_left(task.task_id)))
        return episode

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Offer the turn to a client and wait for its reply (``LLM.complete``).

        Raises:
            LLMCallError: the client let the episode go (went silent past ``episode_timeout_s``,
                closed its session, reset): the solver records the episode with this error.
        """
        meta = request.metadata
        episode = self._episodes.get((int(meta["epoch"]), str(meta["task_id"]), int(meta.get("sample_index", 0))))
        if episode is None:
            raise LLMCallError("serve-env: a solver request of no open episode", kind="bad_response")
        if episode.abandoned is not None:  # left between two turns (while its reply was judged)
            raise LLMCallError(episode.abandoned, kind="connection")
        episode.messages = list(request.messages)
        episode.turn = int(meta.get("turn", episode.turn + 1))
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[LLMResponse] = loop.create_future()
        episode.answer = answer
        try:
            if episode.taken.is_set():
                _settle(episode.next, episode.prompt())  # the client's step returns this turn
            else:
                self._offer(episode)
            while True:
                await episode.taken.wait()  # untimed: nobody holds the episode yet
                if not episode.taken.is_set():  # given back before this woke up
                    continue
                back: asyncio.Future[None] = loop.create_future()
                episode.back = back
                # asyncio.wait, not wait_for: on 3.10-3.11 wait_for returns a result that is ready when its
                # task is cancelled, swallowing the cancellation of a stopping run
                either: set[asyncio.Future[Any]] = {answer, back}
                await asyncio.wait(either, timeout=self.episode_timeout_s, return_when=asyncio.FIRST_COMPLETED)
                if answer.done():
                    return answer.result()
                if not back.done():
                    break
                # given back unseen (give_back has offered it again): wait for the next client, untimed
            answer.cancel()
            episode.abandoned = f"abandoned: no reply within env.episode_timeout_s ({self.episode_timeout_s:g} s)"
            raise LLMCallError(episode.abandoned, kind="timeout")
        except _Abandoned as e:
            raise LLMCallError(str(e), kind="connection") from None
        finally:
            episode.answer = None
            episode.back = None

    def finish(self, episode: Episode, trajectory: Trajectory) -> Trajectory:
        """The episode's record as serve-env writes it (``source: env``, the client's model, the
        ``abandoned`` flag), and its end told to the client once that record is in the run directory."""
        self._forget(episode)
        flags = [*trajectory.flags, ABANDONED] if episode.abandoned is not None else trajectory.flags
        trajectory = trajectory.model_copy(
            update={"source": "env", "solver_model": episode.client_model or ENV_MODEL, "flags": flags}
        )
        episode.trajectory = trajectory
        self.ended += 1
        self.abandoned += episode.abandoned is not None
        # Episodes appends the trajectory as soon as solve returns, before its task yields again; a
        # callback runs after that, so a client told "done" can count on the record being written
        asyncio.get_running_loop().call_soon(_settle, episode.next, episode.end(trajectory, self.reward))
        return trajectory

    def discard(self, episode: Episode, why: str) -> None:
        """The episode ended without a record (the run is stopping): its client is told why."""
        self._forget(episode)
        _settle(episode.next, EpisodeGone(why))

    def _forget(self, episode: Episode) -> None:
        self._episodes.pop(episode.key, None)
        self._unpool(episode)
        count = self._counts.get(episode.task.task_id)
        if count is not None:
            count.ended += 1
            if count.ended >= count.expected:  # every episode of the task has ended
                del self._counts[episode.task.task_id]

    async def aclose(self) -> None:
        """The run's loop is ending (``aclose_llm`` at the end of ``Session.run``): no more episodes."""
        self.close(self.stopping or "the run is over: its epochs are done")

    def close(self, why: str) -> None:
        """No episode will come any more: every waiting client is told why."""
        self._over = why
        while self._takers:
            _settle(self._takers.popleft().future, EpisodeGone(why))
        for episode in list(self._episodes.values()):
            _settle(episode.next, EpisodeGone(why))

    # -- the clients' side ---------------------------------------------------------------------------

    def _offer(self, episode: Episode, *, first: bool = False) -> None:
        """Pool ``episode`` (``first``: at the head) and hand out what the waiting clients can take."""
        if first:
            self._pool.appendleft(episode)
        else:
            self._pool.append(episode)
        self._match()

    def _match(self) -> None:
        """Each waiting client, longest waiting first, gets the pooled episode it may take, if any."""
        for taker in list(self._takers):
            if taker.future.done():
                self._takers.remove(taker)
                continue
            episode = self._pick(taker.group, taker.size)
            if episode is not None:
                self._takers.remove(taker)
                taker.future.set_result(episode)
            if not self._pool:
                return

    def _pick(self, key: Hashable | None, size: int) -> Episode | None:
        """The oldest pooled episode a take may have (see the module doc: groups), handed to it; None
        when none is pooled yet."""
        group = self._groups.get(key) if key is not None else None
        if group is not None:  # a member of a bound group: its task's episodes are promised to it
            chosen = next((e for e in self._pool if e.task.task_id == group.task_id), None)
            if chosen is not None:
                self._counts[group.task_id].promised -= 1
        elif key is None or size <= 1:
            # a task already started first (the oldest such), so takes without a group leave whole
            # tasks for the groups to come
            chosen = min((e for e in self._pool if self._free(e) > 0), key=self._started_first, default=None)
        else:  # the group's first member: a task whose free episodes make a whole group
            chosen = next((e for e in self._pool if self._free(e) >= size), None)
            if chosen is not None:
                group = _Group(key, chosen.task.task_id, size)
                self._groups[key] = group
                self._counts[group.task_id].promised += size - 1
        if chosen is None:
            return None
        self._pool.remove(chosen)
        self._counts[chosen.task.task_id].handed += 1
        if group is not None:
            chosen.group = group
            group.handed += 1
            if group.handed >= group.size:  # handed out in full: the key starts a new group next time
                self._groups.pop(group.key, None)
        return chosen

    def _started_first(self, episode: Episode) -> int:
        count = self._counts.get(episode.task.task_id)
        return 0 if count is not None and count.handed + count.promised > 0 else 1

    def _free(self, episode: Episode) -> int:
        count = self._counts.get(episode.task.task_id)
        return count.free if count is not None else 1

    def _unpool(self, episode: Episode) -> None:
        if episode in self._pool:
            self._pool.remove(episode)

    async def take(
        self, ticket: Hashable | None = None, *, group: Hashable | None = None, group_size: int | None = None
    ) -> tuple[Episode, View]:
        """The next episode waiting for a client, bound to the caller, and its opening messages; waits
        up to ``reset_timeout_s`` while the epoch's tasks are proposed and validated. ``ticket``: what
        ``withdraw`` names this wait by; ``group``, ``group_size``: the group the caller belongs to
        (see the module doc), whose members share a task.

        Raises:
            EpisodeGone: none was ready in time, the caller was withdrawn, the run is over, or the group
                size does not divide ``samples_per_task``.
        """
        size = 1 if group_size is None else int(group_size)
        if group is not None and (size < 1 or self.samples_per_task % size):
            raise EpisodeGone(
                f"group_size {size} must divide the server's solver.samples_per_task ({self.samples_per_task}), "
                f"so each task's episodes make whole groups: start spade serve-env with --samples-per-task {size} "
                "(or a multiple of it)"
            )
        key = None if group is None or size <= 1 else group
        episode_now = self._pick(key, size) if not self._takers else None  # nobody waits longer for it
        if episode_now is not None:
            episode = episode_now
        elif self._over is not None:
            raise EpisodeGone(self._over)
        else:
            future: asyncio.Future[Episode] = asyncio.get_running_loop().create_future()
            taker = _Taker(future, key, size)
            self._takers.append(taker)
            self._match()  # others waiting longer may not take what is pooled: this one may
            if ticket is not None:
                self._tickets[ticket] = future
            try:
                said = min(SAY_WAIT_AFTER_S, self.reset_timeout_s)
                await asyncio.wait({future}, timeout=said)  # not wait_for: see complete()
                if not future.done():
                    self._say_waiting(key)
                    await asyncio.wait({future}, timeout=self.reset_timeout_s - said)
            except asyncio.CancelledError:  # the client left: an episode handed to it goes back first in line
                if taker in self._takers:
                    self._takers.remove(taker)
                if future.done() and not future.cancelled() and future.exception() is None:
                    self._return(future.result())
                future.cancel()
                raise
            finally:
                if ticket is not None:
                    self._tickets.pop(ticket, None)
            if taker in self._takers:
                self._takers.remove(taker)
            if not future.done():
                future.cancel()
                raise EpisodeGone(
                    f"no episode ready within env.reset_timeout_s ({self.reset_timeout_s:g} s): "
                    f"{self._waiting_why(key)}; reset() again"
                )
            episode = future.result()  # EpisodeGone when the run is over
        episode.taken.set()
        return episode, episode.prompt()

    def withdraw(self, ticket: Hashable) -> None:
        """The client waiting in ``take`` with ``ticket`` left: it takes nothing (its ``take`` raises
        ``EpisodeGone``). One already handed an episode gets it; the server then gives it back."""
        future = self._tickets.pop(ticket, None)
        if future is not None and not future.done():
            self._takers = deque(t for t in self._takers if t.future is not future)
            future.set_exception(EpisodeGone("the client left while it waited for an episode"))

    def give_back(self, episode: Episode) -> None:
        """The client that took ``episode`` left before it was shown its first turn: the episode goes to
        the next client, first in line, and its reply timer starts anew with that client. Nothing when
        the episode has moved on meanwhile (answered, over, abandoned, or the run is stopping)."""
        answer = episode.answer
        if (
            episode.trajectory is not None
            or episode.abandoned is not None
            or not episode.taken.is_set()
            or episode.turn != 1
            or answer is None
            or answer.done()
            or self.stopping is not None
        ):
            return
        episode.taken.clear()
        self.given_back += 1
        self._return(episode)
        _settle(episode.back, None)

    def _return(self, episode: Episode) -> None:
        """``episode`` was handed to a client that never saw it: back first in line, promised to its group
        again (the key's next take gets it) unless the key has started a new group meanwhile."""
        count = self._counts.get(episode.task.task_id)
        if count is not None:
            count.handed -= 1
        group, episode.group = episode.group, None
        if group is not None and self._groups.setdefault(group.key, group) is group:  # whole again: reopened
            group.handed -= 1
            if count is not None:
                count.promised += 1
        self._offer(episode, first=True)

    def _say_waiting(self, key: Hashable | None) -> None:
        """Tell the server's log why a reset waits (at most once every ``SAY_WAIT_EVERY_S``: a batch of
        resets waits for one reason)."""
        now = time.monotonic()
        if now - self._said_waiting >= SAY_WAIT_EVERY_S:
            self._said_waiting = now
            self.log(f"a reset waits for an episode: {self._waiting_why(key)}")

    def _waiting_why(self, key: Hashable | None) -> str:
        """Why a take found nothing to take, for its client and the server's log."""
        group = self._groups.get(key) if key is not None else None
        if group is not None:
            return f"this group's task {group.task_id} has no episode waiting (the others of the group are held)"
        if self._pool:
            return (
                f"{len(self._pool)} episodes wait, each promised to a group or, for a new group, too few of one "
                "task left to make it whole"
            )
        return (
            "the next tasks are still being proposed and validated, or every episode of the epoch is held by a "
            "client (size the pool to the trainer's batch: --pool)"
        )

    async def reply(self, episode: Episode, text: str, model: str | None = None) -> View:
        """The client's reply to the turn it was shown; returns the next turn or the end.

        Raises:
            EpisodeGone: the episode is over or was abandoned, or waits for no reply (one step at a time).
        """
        if episode.abandoned is not None:
            raise EpisodeGone(f"episode {episode.id} was {episode.abandoned}; reset() for the next one")
        if episode.trajectory is not None:
            raise EpisodeGone(f"episode {episode.id} is over: reset() for the next one")
        answer = episode.answer
        if answer is None or answer.done():
            raise EpisodeGone(f"episode {episode.id} is not waiting for a reply: step() once per observation")
        episode.client_model = model or episode.client_model
        following: asyncio.Future[View] = asyncio.get_running_loop().create_future()
        episode.next = following
        answer.set_result(LLMResponse(text=text, model=model or ENV_MODEL))
        return await following

    def abandon(self, episode: Episode, why: str) -> None:
        """The client let go of the episode before its end (closed its session, or reset)."""
        if episode.trajectory is not None or episode.abandoned is not None or self.stopping is not None:
            return  # a stop leaves the episode unrecorded (resume runs it again), not abandoned
        episode.abandoned = f"abandoned: {why}"
        _settle(episode.answer, _Abandoned(episode.abandoned))


class EnvSolver:
    """The run's solver in serve-env: ``LLMSolver`` over the broker, each episode opened before it
    starts and finished (recorded as ``source: env``) when it returns."""

    def __init__(self, solver: LLMSolver, broker: EnvBroker) -> None:
        self.solver = solver
        self.broker = broker

    async def solve(self, task: Task, epoch: int, sample_index: int = 0, deadline: float | None = None) -> Trajectory:
        episode = self.broker.open(task, epoch, sample_index)
        try:
            trajectory = await self.solver.solve(task, epoch, sample_index, deadline)
        except BaseException:
            self.broker.discard(episode, self.broker.stopping or "the episode was stopped before its end")
            raise
        return self.broker.finish(episode, trajectory)


class Bridge:
    """Runs the broker's coroutines on the controller's loop from another thread's loop (the server's),
    and fails what is still waiting once that loop is gone, so no client waits forever."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._why: str | None = None
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[Any]] = set()

    async def call(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """``coro``'s result, run on the controller's loop; awaitable from any other loop.

        Raises:
            EpisodeGone: the run is over, or is stopping.
        """
        return await asyncio.wrap_future(self._submit(coro))

    def fire(self, fn: Callable[..., object], *args: Any) -> None:
        """``fn(*args)`` soon on the controller's loop, not waited for (nothing once it is gone)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over, nothing to tell it
            self.loop.call_soon_threadsafe(fn, *args)

    def _submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        async def guarded() -> _T:
            try:
                return await coro
            except asyncio.CancelledError:  # the run's loop is shutting down under it
                raise EpisodeGone(self._why or "the server is stopping") from None

        with self._lock:
            if self._why is not None:
                coro.close()
                raise EpisodeGone(self._why)
            wrapped = guarded()
            try:
                future = asyncio.run_coroutine_threadsafe(wrapped, self.loop)
            except RuntimeError:  # the loop is closed
                wrapped.close()
                coro.close()
                raise EpisodeGone("the run is over") from None
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def end(self, why: str) -> None:
        """The controller's loop has ended: calls still waiting get ``EpisodeGone(why)``, later ones too."""
        with self._lock:
            self._why = why
            pending, self._pending = self._pending, set()
        for future in pending:
            if not future.done():
                with contextlib.suppress(concurrent.futures.InvalidStateError):  # it ended meanwhile
                    future.set_exception(EpisodeGone(why))
