"""Stage 1: the generator model proposes tasks as JSON; this turns its answers into candidates.

A model's answer may be prose around JSON, fenced, truncated, a refusal or invalid: each bad
answer becomes a ``Proposal`` with a ``failure`` reason (the run goes on), after one repair
re-ask that quotes what was wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from .errors import LLMCallError
from .llm.base import LLM, LLMRequest
from .llm.stats import LLMStats
from .seeding import derive_seed
from .templates import Prompts
from .types import Message, Task

JSON_SHAPE = json.dumps(
    {
        "tasks": [
            {
                "description": "Statement of the task, with the function signature and one example.",
                "entry_point": "function_name",
                "reference_code": "def function_name(arg1, arg2):\n    ...",
                "tests": [{"input": "(arg1_value, arg2_value)"}, {"input": "(...)", "expected": "optional"}],
                "difficulty": 0.5,
                "tags": ["topic"],
            }
        ]
    },
    indent=2,
)

_REFUSAL = re.compile(
    r"^\s*(i('| a)m sorry|i can(no|')t|i cannot|i won'?t|i am unable|i'm unable|as an ai|sorry,? (but )?i)", re.I
)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.S)
_JSON_START = re.compile(r"(?=\{\s*[\"}]|\[\s*[-\[\]{\"0-9tfnNI])")
"""Where a JSON object or array may begin: ``{`` then a key or ``}``, ``[`` then a value or ``]``.
Prose such as ``{x}`` or ``[note]`` is skipped without a decode attempt."""

MAX_ANSWER_CHARS = 1_000_000
"""Longest answer ``extract_json`` reads; a longer one is rejected as ``too_long``."""
MAX_DECODE_ATTEMPTS = 64
"""Most places one answer is tried as JSON (each attempt may read to the end of the answer, so
this keeps adversarial text such as a megabyte of ``[1,`` linear)."""


class BadAnswer(Exception):
    """An answer with no usable JSON; ``reason`` is the rejection code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _json_candidates(text: str) -> Iterator[str]:
    """The fenced blocks of an answer, then the whole answer."""
    for m in _FENCE.finditer(text):
        yield m.group(1)
    yield text


def extract_json(text: str, finish_reason: str = "stop") -> Any:
    """The first JSON object or array in a model's answer.

    Survives code fences, prose before and after, and trailing text. Raises ``BadAnswer`` with
    reason ``empty``, ``too_long`` (over ``MAX_ANSWER_CHARS``), ``refusal``, ``truncated`` or
    ``bad_json``. Linear in the answer's length: at most ``MAX_DECODE_ATTEMPTS`` starts are tried.
    """
    if len(text) > MAX_ANSWER_CHARS:
        raise BadAnswer("too_long", f"the answer has {len(text)} characters, more than the {MAX_ANSWER_CHARS} read")
    if not text.strip():
        raise BadAnswer("empty", "the answer was empty")
    decoder = json.JSONDecoder()
    attempts = 0
    for chunk in _json_candidates(text):
        for m in _JSON_START.finditer(chunk):
            if attempts >= MAX_DECODE_ATTEMPTS:
                break
            attempts += 1
            try:
                value, _ = decoder.raw_decode(chunk, m.start())
            except (ValueError, RecursionError):  # JSONDecodeError, or nesting too deep to decode
                continue
            if isinstance(value, (dict, list)):
                return value
    if finish_reason == "length":
        raise BadAnswer("truncated", "the answer was cut off (max_tokens reached) before the JSON ended")
    if _REFUSAL.search(text):
        raise BadAnswer("refusal", f"the model refused: {text.strip()[:120]!r}")
    more = f" (gave up after {attempts} tries)" if attempts >= MAX_DECODE_ATTEMPTS else ""
    raise BadAnswer("bad_json", f"no JSON object found in the answer{more}: {text.strip()[:120]!r}")


def _task_items(value: Any) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("tasks"), list):
        return list(value["tasks"])
    if isinstance(value, dict) and "reference_code" in value:
        return [value]
    if isinstance(value, list):
        return value
    raise BadAnswer("bad_json", 'expected {"tasks": [...]} with one object per task')


@dataclass
class Candidate:
    """A proposed task (parsed), or the raw item and why it could not become a Task."""

    position: tuple[int, int]
    """(request index, index in the answer): the stable order candidates are judged in."""
    task: Task | None = None
    raw: Any = None
    reason: str | None = None
    detail: str = ""


@dataclass
class Proposal:
    """The outcome of one generator request."""

    request_index: int
    candidates: list[Candidate] = field(default_factory=list)
    failure: str | None = None
    detail: str = ""
    usage_prompt: int = 0
    usage_completion: int = 0
    usage_cost: float | None = None
    text: str = ""
    """The model's last answer, as it came (kept so a rejection can be understood)."""
    finish_reason: str | None = None

    def record(self, epoch: int, n: int) -> dict[str, Any]:
        """This proposal as a ``proposals.jsonl`` row (``from_record`` reads it back)."""
        return {
            "epoch": epoch,
            "request_index": self.request_index,
            "n": n,
            "failure": self.failure,
            "detail": self.detail,
            "candidates": [
                {
                    "position": c.position[1],
                    "task": c.task.dump() if c.task is not None else None,
                    "raw": c.raw if c.task is None else None,
                    "reason": c.reason,
                    "detail": c.detail,
                }
                for c in self.candidates
            ],
            "prompt_tokens": self.usage_prompt,
            "completion_tokens": self.usage_completion,
            "cost": self.usage_cost,
            "text": self.text,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_record(cls, row: dict[str, Any]) -> Proposal:
        index = int(row["request_index"])
        return cls(
            request_index=index,
            candidates=[
                Candidate(
                    (index, int(c["position"])),
                    task=Task.model_validate(c["task"]) if c.get("task") is not None else None,
                    raw=c.get("task") if c.get("task") is not None else c.get("raw"),
                    reason=c.get("reason"),
                    detail=c.get("detail") or "",
                )
                for c in row.get("candidates") or []
            ],
            failure=row.get("failure"),
            detail=row.get("detail") or "",
            usage_prompt=int(row.get("prompt_tokens") or 0),
            usage_completion=int(row.get("completion_tokens") or 0),
            usage_cost=row.get("cost"),
            text=row.get("text") or "",
            finish_reason=row.get("finish_reason"),
        )


@dataclass(frozen=True)
class ProposalContext:
    """What one generator request is about."""

    epoch: int
    request_index: int
    n: int
    difficulty: float
    capability: float | None
    """The solver's last measured pass rate, or None before anything was measured."""
    examples: list[Task]
    avoid_tags: list[str]
    seed: int
    """This request's own seed (the epoch plan derives it from the run's seed, the epoch and the index)."""
    focus: str | None = None
    """A topic this request should be about (the controller spreads topics over requests)."""
    goal: str | None = None
    """The capability the tasks should train (``curriculum.goal``)."""
    kind: str = "induction"
    run_seed: int = 0
    """The run's seed: task ids derive from it, so they do not depend on how request seeds are made."""


class Generator(Protocol):
    """Proposes tasks. ``propose`` never raises for model misbehaviour: it returns a failed Proposal."""

    async def propose(self, context: ProposalContext) -> Proposal: ...


def make_task_id(seed: int, epoch: int, position: tuple[int, int], item: dict[str, Any]) -> str:
    """Deterministic for a seed: the same proposal at the same place gets the same id."""
    content = json.dumps(
        [seed, epoch, *position, item.get("entry_point"), item.get("reference_code")], sort_keys=True, default=str
    )
    return f"e{epoch}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"


def parse_task(item: Any, *, task_id: str, epoch: int, target: float) -> Task:
    """A Task from one proposed JSON object (pydantic-validated)."""
    if not isinstance(item, dict):
        raise ValueError(f"a task must be a JSON object, got {type(item).__name__}")
    data = dict(item)
    tests = data.get("tests")
    if isinstance(tests, list):
        # models often write inputs as lists or bare values: keep them as literal text to judge later
        data["tests"] = [
            t if isinstance(t, dict) and isinstance(t.get("input"), str) else _coerce_test(t) for t in tests
        ]
    data.setdefault("difficulty", target)
    try:
        data["difficulty"] = min(1.0, max(0.0, float(data["difficulty"])))
    except (TypeError, ValueError):
        data["difficulty"] = target
    data["task_id"] = task_id
    data["source"] = "generated"
    meta: dict[str, Any] = data["meta"] if isinstance(data.get("meta"), dict) else {}
    data["meta"] = {**meta, "epoch": epoch, "target_difficulty": target}
    return Task.model_validate(data)


def _coerce_test(t: Any) -> dict[str, Any]:
    if isinstance(t, dict) and "input" in t:
        raw = t["input"]
        out = {"input": repr(tuple(raw)) if isinstance(raw, list) else repr(raw)}
        if "expected" in t:
            out["expected"] = t["expected"]
        return out
    return {"input": repr(t)}


class LLMGenerator:
    """A generator backed by a chat model and the ``generator/*.j2`` templates."""

    def __init__(
        self,
        llm: LLM,
        prompts: Prompts,
        *,
        temperature: float,
        max_tokens: int,
        json_mode: bool,
        stats: LLMStats | None = None,
    ) -> None:
        self.llm = llm
        self.prompts = prompts
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.stats = stats or LLMStats()

    def messages(self, ctx: ProposalContext) -> list[Message]:
        examples = [
            {
                "entry_point": t.entry_point,
                "difficulty": t.difficulty,
                "description": t.description,
                "reference_code": t.reference_code,
                "tests": [x.dump() for x in t.tests],
                "tags": t.tags,
            }
            for t in ctx.examples
        ]
        user = self.prompts.render(
            "generator/propose.j2",
            n=ctx.n,
            difficulty=ctx.difficulty,
            capability=ctx.capability,
            avoid_tags=ctx.avoid_tags,
            examples=examples,
            focus=ctx.focus,
            goal=ctx.goal,
            json_shape=JSON_SHAPE,
        )
        return [
            Message(role="system", content=self.prompts.render("generator/system.j2")),
            Message(role="user", content=user),
        ]

    async def propose(self, ctx: ProposalContext) -> Proposal:
        proposal = Proposal(request_index=ctx.request_index)
        messages = self.messages(ctx)
        metadata = {
            "epoch": ctx.epoch,
            "difficulty": ctx.difficulty,
            "n": ctx.n,
            "request_index": ctx.request_index,
            "focus": ctx.focus,
            "kind": ctx.kind,
        }
        value = None
        for ask in range(2):  # the answer, then at most one repair re-ask
            request = LLMRequest(
                messages=messages,
                role="generator",
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=derive_seed(ctx.seed, "ask", ask),
                json_mode=self.json_mode,
                metadata={**metadata, "ask": ask},
            )
            try:
                response = await self.llm.complete(request)
            except LLMCallError as e:
                proposal.failure, proposal.detail = f"llm_{e.kind}", str(e)
                return proposal
            proposal.usage_prompt += response.usage.prompt_tokens
            proposal.usage_completion += response.usage.completion_tokens
            if response.usage.cost is not None:
                proposal.usage_cost = (proposal.usage_cost or 0.0) + response.usage.cost
            proposal.text, proposal.finish_reason = response.text, response.finish_reason
            try:
                items = _task_items(extract_json(response.text, response.finish_reason))
                if not items:
                    raise BadAnswer("no_tasks", "the answer held no task")
                value = items
                break
            except BadAnswer as e:
                self.stats.fault(e.reason)
                proposal.failure, proposal.detail = e.reason, e.detail
                if e.reason == "refusal":
                    return proposal
                messages = [
                    *messages,
                    Message(role="assistant", content=response.text),
                    Message(
                        role="user",
                        content=f"That answer could not be used: {e.detail}\n"
                        f"Reply with only the JSON object, in this shape:\n{JSON_SHAPE}",
                    ),
                ]
        if value is None:
            return proposal
        proposal.failure, proposal.detail = None, ""
        for i, item in enumerate(value[: ctx.n]):  # a request yields at most the n it asked for
            position = (ctx.request_index, i)
            item_dict = item if isinstance(item, dict) else {}
            task_id = make_task_id(ctx.run_seed, ctx.epoch, position, item_dict)
            try:
                task = parse_task(item, task_id=task_id, epoch=ctx.epoch, target=ctx.difficulty)
            except (ValidationError, ValueError) as e:
                detail = _first_error(e)
                proposal.candidates.append(Candidate(position, raw=item, reason="invalid_task", detail=detail))
                continue
            proposal.candidates.append(Candidate(position, task=task, raw=item))
        return proposal


def _first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(e)
