"""serve-env's action, observation and state, as openenv-core types (imports openenv-core).

The observation is ``broker.View`` field for field, plus openenv's ``done`` and ``reward``: only what
the solver's own prompts may show. openenv-core's wire format puts ``done`` and ``reward`` beside the
observation (``{"observation": {...}, "reward": r, "done": d}``) and drops ``metadata``, so everything
a client needs is a field of its own.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from ...kinds.names import DEFAULT_KIND
from ...types import TaskKind
from .broker import View
from .openenv_server import Action, Observation, State

__all__ = ["MAX_REPLY_CHARS", "SpadeAction", "SpadeObservation", "SpadeState", "observation"]

MAX_REPLY_CHARS = 1 << 20
"""Longest reply taken (characters): a reply is a chat answer, recorded whole in the trajectory."""


class SpadeAction(Action):  # type: ignore[misc]  # openenv-core ships no type information: its bases are Any
    """The policy's reply to the turn it was shown: ``answer`` (the assistant message, the code
    extracted from it as the solver does: the last ```python block, else the last fenced block, else
    the whole text when it looks like code), or ``code`` alone (sent as one ```python block)."""

    answer: str | None = Field(default=None, max_length=MAX_REPLY_CHARS, description="the assistant's whole reply")
    code: str | None = Field(default=None, max_length=MAX_REPLY_CHARS, description="the code (or predictions) alone")
    model: str | None = Field(
        default=None, max_length=200, description="the policy's model name, recorded as the trajectory's solver_model"
    )

    @model_validator(mode="after")
    def _one_reply(self) -> SpadeAction:
        if (self.answer is None) == (self.code is None):
            # not a ValueError: openenv-core sends pydantic's errors back as JSON, and a ValueError in them
            # does not serialize (the session would end instead of hearing why)
            raise PydanticCustomError("one_reply", 'an action is {"answer": str} or {"code": str}: exactly one')
        return self

    def text(self) -> str:
        """The assistant message this action stands for."""
        if self.answer is not None:
            return self.answer
        code = self.code or ""
        return code if "```" in code else f"```python\n{code.rstrip()}\n```"


class SpadeObservation(Observation):  # type: ignore[misc]  # see SpadeAction
    """One turn of an episode, or its end (``done``, with ``reward`` and the verdict)."""

    messages: list[dict[str, str]] = Field(
        default_factory=list, description="the whole conversation so far, {role, content} dicts"
    )
    episode_id: str = Field(default="", description="the episode (task id / sample index)")
    task_id: str = ""
    kind: TaskKind = DEFAULT_KIND
    epoch: int = 0
    sample_index: int = 0
    difficulty: float | None = Field(default=None, description="the task's difficulty (0 to 1)")
    turn: int = Field(default=0, description="the turn the next reply answers; at the end, the turns taken")
    feedback: str | None = Field(default=None, description="the feedback on the last reply (turn 2 on)")
    final_status: str | None = Field(default=None, description="at the end: passed, failed, error or timeout")
    public_passed: int | None = None
    public_total: int | None = None
    tests_passed: int | None = Field(default=None, description="at the end: tests passed, hidden ones counted")
    tests_total: int | None = None
    trajectory_id: str | None = Field(default=None, description="at the end: the record in trajectories.jsonl")
    error: str | None = Field(default=None, description="at the end: why no reply was judged, if so")


class SpadeState(State):  # type: ignore[misc]  # see SpadeAction
    """The session's episode: openenv's ``episode_id`` and ``step_count``, and where it stands."""

    task_id: str | None = None
    kind: str | None = None
    turn: int = 0
    done: bool = False


def observation(view: View) -> SpadeObservation:
    """The openenv observation of what the broker shows."""
    return SpadeObservation(**dataclasses.asdict(view))
