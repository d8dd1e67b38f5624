"""The fake model's play on the query kinds' prompts: ``deduction`` and ``abduction``, and the same two
over whole programs, ``program_deduction`` and ``program_abduction`` (see ``spade_llm.kinds``).

Why apart from ``model.py``: these kinds answer with values and inputs, not code, and need their
own reading of the prompt. ``FakeLLM._solve`` hands a request here first; :func:`answer_kind`
answers it when the conversation is one of these kinds, else returns None.

How a prompt is recognised: its first user message starts with the marker line of the kind's
templates (``Predict the output`` / ``Find an input``; ``Predict the program's output`` / ``Find inputs
for the program``), and lists the queries one per line (``f(args) == ?`` / ``f(?) == <output>``), or
one numbered fenced block each (```` ```input N ```` / ```` ```output N ````). The task is recognised by
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

Over programs: the fake's program tasks are the bank's exercises behind a JSON-lines ``main``
(:mod:`spade_llm.fake.programs`), so a query's stdin is read back into the function's arguments, the
bank's reference is called on them in-process, and what the program prints is ``stdout_text`` of the
value; an abduction input is ``stdin_text`` of arguments found as above. The same skill decides, and a
wrong answer holds, for some queries, a perturbed value (deduction; or the value printed as Python
writes it, ``True`` or ``'a'``, where JSON differs) or another candidate's input (abduction).
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from ..kinds.queries import read_items
from ..languages import pyast
from ..llm.base import LLMRequest
from ..sandbox.stdio import same_output
from ..sandbox.verdict import matches
from ..types import Message
from . import bank
from .perturb import perturb
from .programs import stdin_text, stdout_text

__all__ = [
    "ABDUCTION_MARKER",
    "DEDUCTION_MARKER",
    "PROGRAM_ABDUCTION_MARKER",
    "PROGRAM_DEDUCTION_MARKER",
    "Student",
    "answer_kind",
    "detect_kind",
]


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
PROGRAM_DEDUCTION_MARKER = "Predict the program's output"
PROGRAM_ABDUCTION_MARKER = "Find inputs for the program"
MARKERS = (
    ("deduction", DEDUCTION_MARKER),
    ("abduction", ABDUCTION_MARKER),
    ("program_deduction", PROGRAM_DEDUCTION_MARKER),
    ("program_abduction", PROGRAM_ABDUCTION_MARKER),
)
"""Each query kind's first-prompt marker (``prompts/solver/<kind>_first.j2``'s first words)."""
_DEDUCTION_QUERY = re.compile(r"^[^\S\n]*(\w+\(.*\))[^\S\n]*==[^\S\n]*\?[^\S\n]*$", re.M)
_ABDUCTION_QUERY = re.compile(r"^[^\S\n]*\w+\(\?\)[^\S\n]*==[^\S\n]*(.+?)[^\S\n]*$", re.M)
SEARCH_DRAWS = 200
"""``make_input`` draws searched for an input giving an abduction output (besides the edge inputs)."""
PROGRAM_SEARCH_DRAWS = 1000
"""The same for a program's abduction (its answers are whole inputs: a longer search, as a model that
works harder on a harder kind)."""
RUN_LIMIT_S = 0.5
CLARITY = {"deduction": 0.6, "abduction": 1.0, "program_deduction": 0.6, "program_abduction": 1.0}
_BLOCK = re.compile(r"^```[ \t]*(input|output)[ \t]+(\d+)[ \t]*\n(.*?)^```", re.M | re.S)


def _task_prompt(messages: Sequence[Message]) -> str:
    first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    return "\n\n".join(m.content for m in messages[:first_answer] if m.role == "user")


def detect_kind(messages: Sequence[Message]) -> str | None:
    """The query kind whose marker the task prompt starts with (``MARKERS``), else None."""
    head = _task_prompt(messages).lstrip()
    return next((kind for kind, marker in MARKERS if head.startswith(marker)), None)


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


def _candidates(ident: bank.Identification, draws: int = SEARCH_DRAWS) -> list[tuple[tuple[Any, ...], Any]]:
    """(input, output) pairs of the task's reference over a fixed list of inputs (edges, then ``draws``
    draws: a longer list begins with a shorter one's)."""
    params = ident.variant.params[ident.params_index]
    rng = random.Random(bank.stable_hash("abduction-search", ident.variant.key, ident.params_index))
    inputs: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    tried = [tuple(a) for a in ident.variant.edges(params)]
    tried += [tuple(ident.variant.make_input(rng, params, (k % 5) / 4)) for k in range(draws)]
    for args in tried:
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


# -- over whole programs -------------------------------------------------------------------------------


def _program_queries(prompt: str, tag: str) -> list[str]:
    """The bodies of the prompt's ```` ```<tag> N ```` blocks, by number (a number left out reads as '')."""
    found = {int(m.group(2)): m.group(3) for m in _BLOCK.finditer(prompt) if m.group(1) == tag}
    return [found.get(n, "") for n in range(1, max(found, default=0) + 1)]


def _arguments(stdin: str) -> tuple[Any, ...] | None:
    """The arguments a program task's stdin holds (one JSON value a line, as its ``main`` reads them)."""
    try:
        return tuple(json.loads(line) for line in stdin.splitlines() if line.strip())
    except ValueError:
        return None


def _printed(outcome: bank.Outcome) -> str:
    """What the program prints for a call's outcome ('' when it raised: it crashes, printing nothing)."""
    return stdout_text(outcome.value) if outcome.ok else ""


def _program_block(tag: str, number: int, body: str) -> str:
    return f"```{tag} {number}\n{body if body.endswith(chr(10)) or not body else body + chr(10)}```"


def _program_answer(tag: str, bodies: list[str], repair: bool) -> str:
    lead = "Let me go through the program again." if repair else "Going through the program by hand:"
    return lead + "\n\n" + "\n\n".join(_program_block(tag, k + 1, b) for k, b in enumerate(bodies)) + "\n"


def _misprinted(value: Any, rng: random.Random) -> str:
    """A wrong stdout for ``value``: printed as Python writes it where JSON differs (``True``, ``'a'``,
    ``None``), else a perturbed value's JSON."""
    slip = repr(value) + "\n"
    if rng.random() < 0.5 and not same_output(slip, stdout_text(value)):
        return slip
    return stdout_text(perturb(value, rng, vary_text=True))


def _deduce_program(llm: Student, request: LLMRequest, prompt: str, ident: bank.Identification | None) -> str:
    stdins = _program_queries(prompt, "input")
    repair = any(m.role == "assistant" for m in request.messages)
    if ident is None:
        return _program_answer("output", ["0\n" for _ in stdins], repair)
    calls = [_arguments(s) for s in stdins]
    outcomes = bank.run_in_process(ident.reference(), ident.entry_point, [c or () for c in calls], RUN_LIMIT_S)
    truth = [_printed(o) if c is not None else "" for c, o in zip(calls, outcomes, strict=True)]
    lines = [_program_block("output", k + 1, t) for k, t in enumerate(truth)]
    if _decide(llm, request, "program_deduction", ident, lines) or not truth:
        return _program_answer("output", truth, repair)
    rng = _rng(llm, request, "program-deduction-mistake", ident.variant.key, len(request.messages))
    wrong = {rng.randrange(len(truth))} | {i for i in range(len(truth)) if rng.random() < 0.7}
    said = [
        _misprinted(o.value, rng) if i in wrong and o.ok else ("1\n" if i in wrong else t)
        for i, (o, t) in enumerate(zip(outcomes, truth, strict=True))
    ]
    return _program_answer("output", said, repair)


_PRINTED: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], str]]] = {}
"""``_printed_candidates`` by task, the last ``PRINTED_CACHE`` of them (a task's samples and turns search alike)."""
PRINTED_CACHE = 64
_PRINTED_LOCK = threading.Lock()


def _printed_candidates(ident: bank.Identification) -> list[tuple[tuple[Any, ...], str]]:
    """(input, what the program prints) over ``_candidates``' inputs that survive JSON (the program's
    input and output format), computed once per task."""
    key = (ident.variant.key, ident.params_index, ident.entry_point)
    with _PRINTED_LOCK:
        pairs = _PRINTED.get(key)
    if pairs is None:
        found = _candidates(ident, PROGRAM_SEARCH_DRAWS)
        pairs = [(a, stdout_text(out)) for a, out in found if all(map(bank.json_roundtrips, (*a, out)))]
        with _PRINTED_LOCK:
            _PRINTED[key] = pairs
            while len(_PRINTED) > PRINTED_CACHE:
                _PRINTED.pop(next(iter(_PRINTED)))
    return pairs


def _abduce_program(llm: Student, request: LLMRequest, prompt: str, ident: bank.Identification | None) -> str:
    targets = _program_queries(prompt, "output")
    repair = any(m.role == "assistant" for m in request.messages)
    if ident is None:
        return _program_answer("input", ["0\n" for _ in targets], repair)
    pairs = _printed_candidates(ident)
    found = [next((a for a, text in pairs if same_output(target, text)), None) for target in targets]
    truth = [_program_block("input", k + 1, stdin_text(a)) for k, a in enumerate(found) if a is not None]
    right = _decide(llm, request, "program_abduction", ident, truth)
    rng = _rng(llm, request, "program-abduction-mistake", ident.variant.key, len(request.messages))
    first_wrong = rng.randrange(len(targets)) if targets else 0
    bodies = []
    for i, (args, target) in enumerate(zip(found, targets, strict=True)):
        if args is None or (not right and (i == first_wrong or rng.random() < 0.7)):
            others = [a for a, text in pairs if not same_output(target, text)]
            args = rng.choice(others) if others else None
        bodies.append(stdin_text(args) if args is not None else "0\n")
    return _program_answer("input", bodies, repair)


def answer_kind(llm: Student, request: LLMRequest, kind: str | None = None) -> str | None:
    """The fake's answer to a query kind's conversation (``MARKERS``); None for any other prompt.

    ``kind`` forces the kind (None: read it from the prompt's marker line).
    """
    kind = kind or detect_kind(request.messages)
    play = {
        "deduction": _deduce,
        "abduction": _abduce,
        "program_deduction": _deduce_program,
        "program_abduction": _abduce_program,
    }.get(kind or "")
    if play is None:
        return None
    prompt = _task_prompt(request.messages)
    return play(llm, request, prompt, bank.identify(prompt))
