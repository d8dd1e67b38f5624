"""The fake model's play on ``deduction`` and ``abduction`` prompts (see ``spade_llm.kinds``).

Why apart from ``model.py``: the two kinds answer with values and inputs, not code, and need their
own reading of the prompt. ``FakeLLM._solve`` hands a request here first; :func:`answer_kind`
answers it when the conversation is one of these kinds, else returns None.

How a prompt is recognised: its first user message starts with the marker line of the kind's
templates (``Predict the output`` / ``Find an input``), and lists the queries one per line
(``f(args) == ?`` / ``f(?) == <output>``). The task is recognised by
:func:`bank.identify` from the description in the prompt; the true answers come from the
bank's own trusted reference run in-process (``run_in_process``), never from the program text in
the prompt, which is not executed here. A task the bank did not write gets plausible guesses.

Skill: the whole answer is right with the profile's ``p_first_try`` for the task's difficulty on
the first turn; on a repair turn a right answer stays right and a wrong one is fixed with
``p_fix`` (feedback clarity 0.6 for deduction, which is only told "wrong", 1.0 for abduction,
which is shown what its inputs gave). A wrong answer perturbs some predictions (deduction) or
proposes inputs that give another output (abduction). Every choice comes from a generator seeded
by the profile, the request's seed, the task and the turn: the same request, the same answer.
For abduction an input is searched among the variant's edge inputs and ``make_input`` draws (a
fixed list per task); an output none of them gives cannot be answered right.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, Protocol

from ..kinds.queries import read_items
from ..languages import pyast
from ..llm.base import LLMRequest
from ..sandbox.verdict import matches
from ..types import Message
from . import bank
from .perturb import perturb

__all__ = ["ABDUCTION_MARKER", "DEDUCTION_MARKER", "Student", "answer_kind", "detect_kind"]


class Student(Protocol):
    """What the kinds' answers need of the model: its skill curve and its generator per request.

    :class:`spade_llm.fake.model.FakeLLM` is one. Taken by protocol so that this module sits below
    the model, which hands its requests here first, instead of importing it back.
    """

    def p_first_try(self, difficulty: float, epoch: int = 0) -> float: ...

    def p_fix(self, p_first_try: float, clarity: float) -> float: ...

    def _rng(self, request: LLMRequest, role: str, *extra: Any, digest: bool = False) -> random.Random: ...


DEDUCTION_MARKER = "Predict the output"
ABDUCTION_MARKER = "Find an input"
_DEDUCTION_QUERY = re.compile(r"^[^\S\n]*(\w+\(.*\))[^\S\n]*==[^\S\n]*\?[^\S\n]*$", re.M)
_ABDUCTION_QUERY = re.compile(r"^[^\S\n]*\w+\(\?\)[^\S\n]*==[^\S\n]*(.+?)[^\S\n]*$", re.M)
SEARCH_DRAWS = 200
"""``make_input`` draws searched for an input giving an abduction output (besides the edge inputs)."""
RUN_LIMIT_S = 0.5
CLARITY = {"deduction": 0.6, "abduction": 1.0}


def _task_prompt(messages: Sequence[Message]) -> str:
    first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    return "\n\n".join(m.content for m in messages[:first_answer] if m.role == "user")


def detect_kind(messages: Sequence[Message]) -> str | None:
    """``deduction`` or ``abduction`` when the task prompt starts with that kind's marker, else None."""
    head = _task_prompt(messages).lstrip()
    if head.startswith(DEDUCTION_MARKER):
        return "deduction"
    if head.startswith(ABDUCTION_MARKER):
        return "abduction"
    return None


def _deduction_queries(prompt: str) -> list[tuple[Any, ...] | None]:
    """The arguments of each ``f(args) == ?`` line (None for one that does not read)."""
    out: list[tuple[Any, ...] | None] = []
    for m in _DEDUCTION_QUERY.finditer(prompt):
        items = read_items(m.group(1))
        out.append(items[0].args if len(items) == 1 else None)
    return out


def _abduction_queries(prompt: str) -> list[tuple[bool, Any]]:
    """Each ``f(?) == output`` line's output: (read, value)."""
    out: list[tuple[bool, Any]] = []
    for m in _ABDUCTION_QUERY.finditer(prompt):
        try:
            out.append((True, pyast.literal_eval(m.group(1))))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            out.append((False, None))
    return out


def _rng(llm: Student, request: LLMRequest, *parts: Any) -> random.Random:
    return llm._rng(request, "solver", *parts)


def _previous_right(answer: str, truth: list[str]) -> bool:
    """Whether an earlier answer gave every line of the right answer."""
    return all(line in answer for line in truth)


def _decide(llm: Student, request: LLMRequest, kind: str, ident: bank.Identification, truth: list[str]) -> bool:
    epoch = request.metadata.get("epoch", 0)
    epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0
    answers = [m.content for m in request.messages if m.role == "assistant"]
    p = llm.p_first_try(ident.difficulty, epoch)
    rng = _rng(llm, request, kind, ident.variant.key, ident.params_index, ident.entry_point, len(answers) + 1)
    if not answers:
        return rng.random() < p
    if _previous_right(answers[-1], truth):
        return True
    return rng.random() < llm.p_fix(p, CLARITY[kind])


def _block(lines: list[str], repair: bool) -> str:
    lead = "Let me trace it again." if repair else "Tracing the program by hand:"
    return f"{lead}\n\n```python\n" + "\n".join(lines) + "\n```\n"


def _call(entry_point: str, args: Sequence[Any]) -> str:
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def _deduce(llm: Student, request: LLMRequest, prompt: str, ident: bank.Identification | None) -> str:
    queries = _deduction_queries(prompt)
    repair = any(m.role == "assistant" for m in request.messages)
    name = ident.entry_point if ident else "f"
    calls = [args if args is not None else () for args in queries]
    if ident is None:
        return _block([f"{_call(name, a)} == None" for a in calls], repair)
    outcomes = bank.run_in_process(ident.reference(), ident.entry_point, calls, RUN_LIMIT_S)
    values = [o.value if o.ok else None for o in outcomes]
    truth = [f"{_call(name, a)} == {v!r}" for a, v in zip(calls, values, strict=True)]
    if _decide(llm, request, "deduction", ident, truth) or not truth:
        return _block(truth, repair)
    rng = _rng(llm, request, "deduction-mistake", ident.variant.key, len(request.messages))
    wrong = {rng.randrange(len(values))} | {i for i in range(len(values)) if rng.random() < 0.7}
    lines = [
        f"{_call(name, a)} == {(perturb(v, rng, vary_text=True) if i in wrong else v)!r}"
        for i, (a, v) in enumerate(zip(calls, values, strict=True))
    ]
    return _block(lines, repair)


def _candidates(ident: bank.Identification) -> list[tuple[tuple[Any, ...], Any]]:
    """(input, output) pairs of the task's reference over a fixed list of inputs (edges, then draws)."""
    params = ident.variant.params[ident.params_index]
    rng = random.Random(bank.stable_hash("abduction-search", ident.variant.key, ident.params_index))
    inputs: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    draws = [tuple(a) for a in ident.variant.edges(params)]
    draws += [tuple(ident.variant.make_input(rng, params, (k % 5) / 4)) for k in range(SEARCH_DRAWS)]
    for args in draws:
        key = repr(args)
        if key not in seen:
            seen.add(key)
            inputs.append(args)
    outcomes = bank.run_in_process(ident.reference(), ident.entry_point, inputs, RUN_LIMIT_S)
    return [(a, o.value) for a, o in zip(inputs, outcomes, strict=True) if o.ok]


def _abduce(llm: Student, request: LLMRequest, prompt: str, ident: bank.Identification | None) -> str:
    targets = _abduction_queries(prompt)
    repair = any(m.role == "assistant" for m in request.messages)
    if ident is None:
        return _block([f"f(0) == {v!r}" for _, v in targets], repair)
    name = ident.entry_point
    pairs = _candidates(ident)
    found = [next((a for a, out in pairs if ok and matches(out, v)), None) for ok, v in targets]
    truth = [f"{_call(name, a)} == {v!r}" for a, (_, v) in zip(found, targets, strict=True) if a is not None]
    right = _decide(llm, request, "abduction", ident, truth)
    rng = _rng(llm, request, "abduction-mistake", ident.variant.key, len(request.messages))
    first_wrong = rng.randrange(len(targets)) if targets else 0
    lines = []
    for i, (args, (_, target)) in enumerate(zip(found, targets, strict=True)):
        if args is None or (not right and (i == first_wrong or rng.random() < 0.7)):
            others = [a for a, out in pairs if not matches(out, target)]
            args = rng.choice(others) if others else (0,)
        lines.append(f"{_call(name, args)} == {target!r}")
    return _block(lines, repair)


def answer_kind(llm: Student, request: LLMRequest, kind: str | None = None) -> str | None:
    """The fake's answer to a deduction or abduction conversation; None for any other prompt.

    ``kind`` forces the kind (None: read it from the prompt's marker line).
    """
    kind = kind or detect_kind(request.messages)
    if kind not in ("deduction", "abduction"):
        return None
    prompt = _task_prompt(request.messages)
    ident = bank.identify(prompt)
    if kind == "deduction":
        return _deduce(llm, request, prompt, ident)
    return _abduce(llm, request, prompt, ident)
