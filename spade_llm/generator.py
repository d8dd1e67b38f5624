"""Stage 1: the generator model proposes tasks as JSON; this turns its answers into candidates.

A model's answer may be prose around JSON, fenced, truncated, a refusal or invalid: each bad
answer becomes a ``Proposal`` with a ``failure`` reason (the run goes on), after one repair
re-ask that quotes what was wrong.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError, create_model

from ._util.seeding import derive_seed
from ._util.text import clean_data
from .errors import LLMCallError
from .kinds.names import DEFAULT_KIND
from .llm.base import LLM, TRUNCATED, LLMRequest, ResponseFormat
from .llm.stats import LLMStats, RoleStats
from .templates import Prompts
from .types import BASE_TASK, Message, Task

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

ANSWER_KEPT_CHARS = 16_384
"""Characters of a bad answer a rejection keeps (the head and the tail; ``proposals.jsonl`` has it whole)."""

MAX_ANSWER_CHARS = 1_000_000
"""Longest answer ``extract_json`` reads; a longer one is rejected as ``too_long``."""
MAX_DECODE_ATTEMPTS = 64
"""Most places one answer is tried as JSON (each attempt may read to the end of the answer, so
this keeps adversarial text such as a megabyte of ``[1,`` linear)."""


class BadAnswer(Exception):
    """An answer with no usable JSON; ``reason`` is the rejection code, ``where`` the place JSON
    parsing got furthest before it failed (``line``, ``column``, ``offset``, ``message``), if any."""

    def __init__(self, reason: str, detail: str, where: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.where = where


def kept_answer(text: str, limit: int = ANSWER_KEPT_CHARS) -> str:
    """``text`` cut to about ``limit`` characters: its head and its tail, where broken JSON usually breaks."""
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut ...]\n{text[-tail:]}"


@functools.lru_cache(maxsize=64)
def task_answer_schema(
    n: int, own_fields: tuple[str, ...] = (), on_base: bool = False, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """OpenAI's ``json_schema`` response format for an answer of 1 to ``n`` tasks: ``{"tasks": [...]}``.

    Each task's schema comes from the ``Task`` model's own fields (the ones a generator writes, and the
    kind's ``own_fields``), so it cannot drift from what ``parse_task`` accepts. ``on_base``: the request
    shows a base task whose statement, reference and tests the answer keeps (``TaskKind.on_base``), so
    none of them is required. References are inlined and titles dropped: grammar compilers (llama.cpp,
    Ollama) handle a flat schema best. Cached: do not mutate the result.
    """
    names = (*PROPOSED_FIELDS, *own_fields)
    fields = {name: (Task.model_fields[name].annotation, Task.model_fields[name]) for name in names}
    model = create_model("ProposedTask", **fields)  # type: ignore[call-overload]
    task_schema = _flatten(model.model_json_schema())
    if on_base:
        task_schema.pop("required", None)
    if required:
        task_schema["required"] = sorted({*task_schema.get("required", []), *required})
    test_fields = task_schema["properties"]["tests"]["items"]["properties"]
    for name in IMPORTED_ONLY_TEST_FIELDS:
        test_fields.pop(name, None)
    return {
        "name": "tasks",
        "strict": False,  # optional fields (expected, difficulty, tags) are not allowed in strict mode
        "schema": {
            "type": "object",
            "properties": {"tasks": {"type": "array", "items": task_schema, "minItems": 1, "maxItems": max(1, n)}},
            "required": ["tasks"],
        },
    }


PROPOSED_FIELDS = ("description", "entry_point", "reference_code", "tests", "difficulty", "tags")
"""The ``Task`` fields a generator writes; the rest (id, source, meta...) are ours."""


def _flatten(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            out = {}
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):  # field names: kept, whatever they are
                    out[key] = {name: walk(field) for name, field in value.items()}
                elif key not in ("$defs", "title", "description", "default"):  # keywords: noise for a grammar
                    out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    flat: dict[str, Any] = walk(schema)
    return flat


def _is_task(value: Any) -> bool:
    return isinstance(value, dict) and (
        "reference_code" in value or {"entry_point", "description"} <= value.keys() or bool(KIND_FIELDS & value.keys())
    )


def is_task_answer(value: Any) -> bool:
    """Whether a JSON value is an answer's task list: ``{"tasks": [...]}``, one task object, or a list of
    objects at least one of which is a task. A nested list of tests is not (its items have no task fields)."""
    if isinstance(value, dict):
        return isinstance(value.get("tasks"), list) or _is_task(value)
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, dict) for v in value) and any(_is_task(v) for v in value)
    return False


def _json_candidates(text: str) -> Iterator[str]:
    """The fenced blocks of an answer, then the whole answer."""
    for m in _FENCE.finditer(text):
        yield m.group(1)
    yield text


def extract_json(text: str, finish_reason: str = "stop", accept: Callable[[Any], bool] | None = None) -> Any:
    """The first JSON object or array in a model's answer that ``accept`` takes (any, by default).

    Survives code fences, prose before and after, and trailing text. Raises ``BadAnswer`` with
    reason ``empty``, ``too_long`` (over ``MAX_ANSWER_CHARS``), ``refusal``, ``truncated`` or
    ``bad_json`` (with ``where``: the furthest point a decode reached before failing).
    Linear in the answer's length: at most ``MAX_DECODE_ATTEMPTS`` starts are tried.
    """
    if len(text) > MAX_ANSWER_CHARS:
        raise BadAnswer("too_long", f"the answer has {len(text)} characters, more than the {MAX_ANSWER_CHARS} read")
    if not text.strip():
        raise BadAnswer("empty", "the answer was empty")
    decoder = json.JSONDecoder()
    attempts = 0
    furthest: json.JSONDecodeError | None = None
    furthest_in = ""
    declined: Any = None
    for chunk in _json_candidates(text):
        for m in _JSON_START.finditer(chunk):
            if attempts >= MAX_DECODE_ATTEMPTS:
                break
            attempts += 1
            try:
                value, _ = decoder.raw_decode(chunk, m.start())
            except json.JSONDecodeError as e:
                if furthest is None or e.pos > furthest.pos:
                    furthest, furthest_in = e, chunk
                continue
            except (ValueError, RecursionError):  # nesting too deep to decode
                continue
            if isinstance(value, (dict, list)):
                if accept is None or accept(value):
                    return clean_data(value)  # a "\ud800" escape decodes to a lone surrogate: U+FFFD
                declined = declined if declined is not None else value
    where = _where(furthest, furthest_in, text) if furthest is not None else None
    if finish_reason in TRUNCATED:
        why = "max_tokens reached" if finish_reason == "length" else "llm.answer_timeout_s ran out"
        raise BadAnswer("truncated", f"the answer was cut off ({why}) before the JSON ended", where)
    if _REFUSAL.search(text):
        raise BadAnswer("refusal", f"the model refused: {text.strip()[:120]!r}")
    more = f" (gave up after {attempts} tries)" if attempts >= MAX_DECODE_ATTEMPTS else ""
    at = f" (JSON broke at line {where['line']} column {where['column']}: {where['message']})" if where else ""
    if declined is not None:
        shape = f"a list of {len(declined)}" if isinstance(declined, list) else "an object with keys"
        keys = sorted(declined.keys())[:5] if isinstance(declined, dict) else ""
        raise BadAnswer(
            "bad_json", f"no task list in the answer{at}; the only JSON found was {shape} {keys}".rstrip(), where
        )
    raise BadAnswer("bad_json", f"no JSON object found in the answer{more}{at}: {text.strip()[:120]!r}", where)


def _where(error: json.JSONDecodeError, chunk: str, text: str) -> dict[str, Any]:
    """Where a decode failed, as a place in the whole answer (a fenced block is found in it again)."""
    base = text.find(chunk) if chunk is not text else 0
    offset = max(0, base) + error.pos
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return {"line": line, "column": column, "offset": offset, "message": error.msg}


def _task_items(value: Any) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("tasks"), list):
        return list(value["tasks"])
    if isinstance(value, dict) and _is_task(value):
        return [value]
    if isinstance(value, list) and is_task_answer(value):
        return value
    raise BadAnswer("bad_json", 'expected {"tasks": [...]} with one object per task')


def answer_items(text: str, finish_reason: str = "stop") -> list[Any]:
    """The task objects of one generator answer, as ``LLMGenerator.propose`` reads them (the generator's
    reward, ``proposal_reward``, reads completions with it too).

    Raises:
        BadAnswer: no usable task list (``extract_json``'s reasons, or ``no_tasks`` for an empty one).
    """
    items = _task_items(extract_json(text, finish_reason, accept=is_task_answer))
    if not items:
        raise BadAnswer("no_tasks", "the answer held no task")
    return items


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
    parse_error: dict[str, Any] | None = None
    """Where parsing the last answer as JSON failed (``line``, ``column``, ``offset``, ``message``)."""
    generator_model: str | None = None
    """The model that wrote the answer: the model string as configured, or as a training step switched it."""
    prompt: list[dict[str, str]] = field(default_factory=list)
    """The messages of the first ask, exactly as sent (a repair re-ask adds to them): the generator's
    training prompt."""
    prompt_index: int | None = None
    """Which of the epoch's prompts this answers (``generator.samples_per_request`` answers each)."""
    sample: int = 0

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
            "parse_error": self.parse_error,
            "generator_model": self.generator_model,
            "prompt_index": self.request_index if self.prompt_index is None else self.prompt_index,
            "sample": self.sample,
            "prompt": self.prompt,
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
            parse_error=row.get("parse_error"),
            generator_model=row.get("generator_model"),
            prompt=list(row.get("prompt") or []),
            prompt_index=row.get("prompt_index"),
            sample=int(row.get("sample") or 0),
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
    kind: str = DEFAULT_KIND
    run_seed: int = 0
    """The run's seed: task ids derive from it, so they do not depend on how request seeds are made."""
    example_rates: dict[str, float] = field(default_factory=dict)
    """Measured pass rates of the examples that have one (see ``curriculum.frontier_examples``)."""
    band: tuple[float, float] = (0.3, 0.7)
    """The pass-rate band the run keeps to: an example inside it was at the edge of the solver's ability."""
    prompt_index: int | None = None
    """Which of the epoch's prompts this request answers (None: its request index)."""
    sample: int = 0
    """Which answer to that prompt (``generator.samples_per_request``); only the seed differs."""
    base: Task | None = None
    """The run's accepted task this request's tasks are made from (a kind with ``on_base``: the prompt
    shows it, and each answer keeps its statement, reference and tests); None: written from scratch."""
    repeated: list[Task] = field(default_factory=list)
    """Accepted tasks the last epoch's proposals kept copying (``EpochPlan.repeated``): the prompt asks
    for tasks unlike them."""


class Generator(Protocol):
    """Proposes tasks. ``propose`` never raises for model misbehaviour: it returns a failed Proposal."""

    async def propose(self, context: ProposalContext) -> Proposal: ...


def make_task_id(seed: int, epoch: int, position: tuple[int, int], item: dict[str, Any]) -> str:
    """Deterministic for a seed: the same proposal at the same place gets the same id."""
    content = json.dumps(
        [seed, epoch, *position, item.get("entry_point"), item.get("reference_code")], sort_keys=True, default=str
    )
    return f"e{epoch}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"


def parse_task(
    item: Any, *, task_id: str, epoch: int, target: float, kind: str = DEFAULT_KIND, base: Task | None = None
) -> Task:
    """A Task from one proposed JSON object (pydantic-validated); made on ``base`` (``TaskKind.on_base``),
    it keeps the base's statement, reference and tests whatever the object says of them."""
    if not isinstance(item, dict):
        raise ValueError(f"a task must be a JSON object, got {type(item).__name__}")
    from .kinds import get_kind

    # what only an importer may set: a generator's task is judged by its tests under every gate; and a
    # kind's own fields (a whole program's input generator, a bug fix's buggy code...) on another kind
    dropped = IMPORTED_ONLY_FIELDS | (KIND_FIELDS - get_kind(kind).own_fields)
    data = {k: v for k, v in item.items() if k not in dropped}
    if base is not None:
        kept = base.dump()
        data.update({k: kept[k] for k in BASE_FIELDS if k in kept})
        data.setdefault("tags", list(base.tags))
    tests = data.get("tests")
    if isinstance(tests, list):
        # models often write inputs as lists or bare values: keep them as literal text to judge later
        data["tests"] = [
            _proposed_test(t) if isinstance(t, dict) and isinstance(t.get("input"), str) else _coerce_test(t)
            for t in tests
        ]
    data.setdefault("difficulty", target)
    try:
        data["difficulty"] = min(1.0, max(0.0, float(data["difficulty"])))
    except (TypeError, ValueError):
        data["difficulty"] = target
    data["task_id"] = task_id
    data["kind"] = kind  # the request's kind, whatever the model wrote
    data["source"] = "generated"
    meta: dict[str, Any] = data["meta"] if isinstance(data.get("meta"), dict) else {}
    data["meta"] = {**meta, "epoch": epoch, "target_difficulty": target}
    if base is not None:
        data["meta"][BASE_TASK] = base.task_id
    return Task.model_validate(data)


BASE_FIELDS = ("description", "entry_point", "reference_code", "tests", "time_limit_s")
"""What a task made on a base keeps of it (``parse_task``): the problem as validated, never rewritten."""
IMPORTED_ONLY_FIELDS = frozenset({"check_code", "examples", "public_tests", "entry_class", "prelude"})
"""``Task`` fields an imported benchmark carries and a generator's answer may not: a check script,
examples instead of public tests, or no public test at all would skip validation's gates; a class
method or a prelude is for judge-only tasks (``Task.entry_class``)."""
KIND_FIELDS = frozenset({"input_generator", "input_validator", "checker", "buggy_code", "symptom"})
"""``Task`` fields of one kind's tasks (a whole program's, a bug fix's): kept only on a kind that names them
(``TaskKind.own_fields``)."""
IMPORTED_ONLY_TEST_FIELDS = frozenset({"abs_tol", "as_bool", "python_eq", "as_tuple", "allclose_atol", "tuple_as_list"})
"""``TestCase`` fields only an importer sets (a benchmark's asserts compared as its harness compares them)."""


def _proposed_test(t: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in t.items() if k not in IMPORTED_ONLY_TEST_FIELDS}


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
        response_format: ResponseFormat = "json_schema",
        stats: LLMStats | RoleStats | None = None,
        model: str | None = None,
    ) -> None:
        self.llm = llm
        self.model = model
        """The model string ``llm`` serves (recorded with each answer; a training step may switch it)."""
        self.prompts = prompts
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.response_format: ResponseFormat = response_format
        self.stats = stats or LLMStats().view("generator")

    def messages(self, ctx: ProposalContext) -> list[Message]:
        examples = [
            {
                "entry_point": t.entry_point,
                "difficulty": t.difficulty,
                "description": t.description,
                "reference_code": t.reference_code,
                "tests": [x.dump() for x in t.tests],
                "tags": t.tags,
                "pass_rate": ctx.example_rates.get(t.task_id),
                "edge": _edge(ctx.example_rates.get(t.task_id), ctx.band),
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
            kind=ctx.kind,
            base=_base_view(ctx.base),
            repeated=[{"entry_point": t.entry_point, "description": t.description} for t in ctx.repeated],
        )
        return [
            Message(role="system", content=self.prompts.render("generator/system.j2")),
            Message(role="user", content=user),
        ]

    async def propose(self, ctx: ProposalContext) -> Proposal:
        messages = self.messages(ctx)
        proposal = Proposal(
            request_index=ctx.request_index,
            generator_model=self.model,
            prompt=[m.model_dump() for m in messages],
            prompt_index=ctx.request_index if ctx.prompt_index is None else ctx.prompt_index,
            sample=ctx.sample,
        )
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
                response_format=self.response_format,
                json_schema=_schema(ctx) if self.response_format == "json_schema" else None,
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
                value = answer_items(response.text, response.finish_reason)
                break
            except BadAnswer as e:
                self.stats.fault(e.reason)
                proposal.failure, proposal.detail, proposal.parse_error = e.reason, e.detail, e.where
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
        proposal.failure, proposal.detail, proposal.parse_error = None, "", None
        proposal.candidates = candidates(
            value,
            n=ctx.n,
            request_index=ctx.request_index,
            run_seed=ctx.run_seed,
            epoch=ctx.epoch,
            difficulty=ctx.difficulty,
            kind=ctx.kind,
            base=ctx.base,
        )
        return proposal


def _schema(ctx: ProposalContext) -> dict[str, Any]:
    from .kinds import get_kind

    kind = get_kind(ctx.kind)
    own, required = tuple(sorted(kind.own_fields)), tuple(sorted(kind.required_fields))
    return task_answer_schema(ctx.n, own, ctx.base is not None, required)


def _base_view(base: Task | None) -> dict[str, Any] | None:
    """What a proposal prompt shows of its base task: the whole problem, reference and tests included
    (the generator is no solver: it breaks code it is given)."""
    if base is None:
        return None
    return {
        "description": base.description,
        "entry_point": base.entry_point,
        "reference_code": base.reference_code,
        "tests": [t.dump() for t in base.tests],
        "tags": base.tags,
    }


def candidates(
    items: list[Any],
    *,
    n: int,
    request_index: int,
    run_seed: int,
    epoch: int,
    difficulty: float,
    kind: str,
    base: Task | None = None,
) -> list[Candidate]:
    """The first ``n`` items of an answer as candidates (a request yields at most the n it asked for),
    with the run's task ids; an item that is not a valid task keeps its reason (``invalid_task``)."""
    out = []
    for i, item in enumerate(items[:n]):
        position = (request_index, i)
        item_dict = item if isinstance(item, dict) else {}
        if base is not None:
            item_dict = {**item_dict, "entry_point": base.entry_point, "reference_code": base.reference_code}
        task_id = make_task_id(run_seed, epoch, position, item_dict)
        try:
            task = parse_task(item, task_id=task_id, epoch=epoch, target=difficulty, kind=kind, base=base)
        except (ValidationError, ValueError) as e:
            out.append(Candidate(position, raw=item, reason="invalid_task", detail=first_error(e)))
            continue
        out.append(Candidate(position, task=task, raw=item))
    return out


def _edge(rate: float | None, band: tuple[float, float]) -> str | None:
    """Where a measured example sat against the band: ``edge``, ``too_easy``, ``too_hard`` (None: unmeasured)."""
    if rate is None:
        return None
    return "too_easy" if rate > band[1] else "too_hard" if rate < band[0] else "edge"


def first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(e)
