"""The built-in deterministic fake model, ``fake/<profile>``: offline self-play with no API key.

Why it exists: ``spade run`` must work on a fresh machine, and the pipeline's tests need a model
whose behaviour is known. The fake plays both roles. As the *generator* it writes a JSON object
``{"tasks": [...]}`` near the requested difficulty and on the requested topic: mostly multi-step
exercises composed from the bank's building blocks (:func:`spade_llm.fake.bank.random_pipeline`,
hundreds of structurally different programs per topic, so long runs are not eaten by the duplicate
gate), sometimes one of the bank's classic exercises (:data:`STATIC_SHARE`). As the *solver* it is
a learning student: it recognises the task in its prompt, answers correctly with a probability
that falls with the task's difficulty and rises slowly with the epoch, otherwise writes a
realistic mistake, and on repair turns fixes it more often when the feedback shows what went wrong.

Skill curve (what the difficulty controller steers by): a first answer is right with probability
``sigmoid(SHARPNESS * (skill - d))`` for a task of bank difficulty ``d``; a repair turn fixes a
wrong answer with probability ``min(0.97, repair * p * (0.35 + 0.55 * clarity) + 0.03)``. For
``default`` the episode pass rate (3 turns) is above 0.8 on easy tasks, below 0.2 on the hardest,
and crosses 0.5 between difficulty 0.45 and 0.6 over epochs 0-11 (skill grows 0.01 an epoch and
stops at ``skill_cap``), falling gently enough (pass rates 0.7 to 0.3 span about 0.27 of
difficulty) that one 0.1 step of the target cannot jump over the band [0.3, 0.7]. In a run the
curve sits a little lower, since a mistake that only hidden tests catch gets no repair.
``strong-solver`` passes nearly everything; ``weak-solver`` (skill below 0, half the repair
ability) fails most tasks even at difficulty 0.1. :meth:`FakeLLM.p_episode` gives the curve.

Profiles (``PROFILES``): ``default`` (balanced), ``strong-solver`` (solves nearly everything),
``weak-solver`` (fails most), ``collapse`` (the generator keeps proposing near-duplicates: one
family, nearly the same code), ``noisy`` (a fraction of answers are prose-wrapped or fenced JSON,
truncated or broken JSON, refusals, or tasks with a broken reference).

Determinism, and the same answers in-process and over HTTP: every random choice comes from
``random.Random(stable_hash(...))`` built for that one request from what an OpenAI-compatible
request carries on the wire: the profile, ``request.seed`` (which the pipeline derives from the run
seed, the epoch, the request index or task id, the turn...) and the messages. The generator reads
its target difficulty, task count and focus topic from the prompt text (``at difficulty 0.45``,
``Propose 4 ...``, ``Topic for this request: graphs``), falling back to ``request.metadata`` only
when the prompt does not say; the solver recognises the task from the prompt and takes the
difficulty from the bank, the turn from the conversation. The fake's own ``seed`` only matters for
requests without a ``seed``. So ``spade serve-fake`` answers the generator's requests of a run
exactly as the in-process model does, and the solver's at epoch 0. The one thing the wire cannot
carry is the epoch: the solver's skill grows with ``request.metadata["epoch"]``, which the
pipeline sets in-process, while a request over HTTP is answered with the epoch-0 skill (an honest
limit: nothing in a solver prompt tells the epoch; with growth of 0.01 an epoch the two rarely
differ). Nothing is drawn from a generator shared between requests, so concurrency and call order
never change an answer.

Role recognition: the pipeline sets ``request.role``. When the request is rebuilt from an HTTP
body (``spade serve-fake``) there is no role, and :func:`infer_role` reads it from the structure of
the conversation, never from a phrase of the prompt (users edit prompts):

1. JSON mode requested -> ``generator``;
2. a message that spells out the task schema (both ``reference_code`` and ``entry_point``) ->
   ``generator`` (a proposal prompt must describe the fields; a solver never sees a reference);
3. an earlier assistant turn that contains Python code (a ``python`` fence, a bare fence around
   code, or a ``def`` line; a ```` ```json ```` fence is not code) -> ``solver``;
4. a user message with a Python ``def name(`` signature or a backticked call such as
   ``` `name(args)` ``` naming the function to write -> ``solver``;
5. otherwise ``generator``.

Task identification (solver): from content only. The prompt always carries the task's
description verbatim and its entry point (public tests may be few or none);
:func:`spade_llm.fake.bank.identify` finds the bank statement in it (exactly, or for a composed
exercise by reading its numbered steps back, or failing that by word overlap checked against the
examples the prompt shows). A task the bank did not write (an imported benchmark problem) gets a
generic, plausible attempt that defines the entry point and returns ``None``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..languages import TOOLCHAINS
from ..llm.base import LLMRequest, LLMResponse, Role
from ..types import Message, TokenUsage
from . import bank, bugfix, contests, noisy, polyglot, programs
from .kinds import answer_kind

__all__ = ["PROFILES", "FakeLLM", "Profile", "estimate_tokens", "infer_role", "profile_for_model"]


@dataclass(frozen=True)
class Profile:
    """How one fake profile behaves.

    ``skill`` is the solver's ability at epoch 0 on the bank's 0..1 difficulty scale; it grows by
    ``skill_growth`` per epoch up to ``skill_cap``. A task of difficulty ``d`` is solved on the
    first try with probability ``p = sigmoid(SHARPNESS * (skill - d))``; a repair turn fixes a wrong
    answer with probability ``min(0.97, repair * p * (0.35 + 0.55 * clarity) + 0.03)``, ``clarity``
    being how plainly the feedback shows the failure (1.0, 0.6 or 0.0).
    """

    name: str
    summary: str
    skill: float
    skill_growth: float
    skill_cap: float
    collapse: bool = False
    noisy: bool = False
    repair: float = 1.0

    def skill_at(self, epoch: int) -> float:
        return min(self.skill_cap, self.skill + self.skill_growth * max(0, epoch))


PROFILES: Mapping[str, Profile] = {
    p.name: p
    for p in (
        Profile("default", "balanced: solves easy tasks, fails hard ones, improves slowly", 0.22, 0.01, 0.33),
        Profile("strong-solver", "solves nearly everything", 1.8, 0.0, 1.8),
        Profile("weak-solver", "fails most tasks, even after feedback", -0.25, 0.005, -0.2, repair=0.5),
        Profile("collapse", "the generator keeps proposing near-duplicates", 0.22, 0.01, 0.33, collapse=True),
        Profile(
            "noisy",
            "broken or wrapped JSON, broken references and refusals in a fraction of answers",
            0.22,
            0.01,
            0.33,
            noisy=True,
        ),
    )
}
"""Every fake profile by name, in the order they are listed to users."""

SHARPNESS = 5.5
"""How steeply the chance of solving falls once a task is harder than the solver's skill: gently
enough that the difficulties where a 3-turn episode passes 30% to 70% of the time span about 0.27,
well over the controller's 0.1 step."""

PROGRAM_RETRIES = 4
"""Exercises tried, per proposal of a program task, for one whose values survive JSON (its input format)."""

CONTEST_SHARE = 0.4
"""The fraction of program-task proposals that are one of :mod:`contests`' problems (with an input
generator and validator) rather than one of the bank's exercises in a JSON input format."""

STATIC_SHARE = 0.1
"""The fraction of proposals that are one of the bank's classic exercises rather than a composed
multi-step one (classics are few, so a long run mostly needs the composed ones)."""

_MISTAKE_WEIGHTS = {
    "off_by_one": 3.0,
    "edge_case": 3.0,
    "logic": 2.0,
    "exception": 2.0,
    "infinite_loop": 0.4,  # rare: each one costs a full sandbox time limit
    "syntax_error": 0.6,
    "wrong_name": 0.4,
}

_REFUSALS = (
    "I can't help with that.",
    "I'm sorry, but I can't help with that request.",
    "I'm not able to generate that content.",
)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token), enough for usage accounting."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def profile_for_model(name: str) -> str:
    """The profile a model name selects: ``fake/strong-solver`` or ``strong-solver`` pick that
    profile; anything else (``openai/default``, ``gpt-4o``) gets ``default``. For ``serve-fake``,
    which answers any model name."""
    tail = name.rsplit("/", 1)[-1]
    return tail if tail in PROFILES else "default"


# --------------------------------------------------------------------------------------------
# Role inference
# --------------------------------------------------------------------------------------------

_OTHER_FENCES = "|".join(re.escape(tag) for t in TOOLCHAINS.values() if t.name != "python" for tag in t.fence_tags)
_CODE_IN_ANSWER = re.compile(
    r"```(?:python|py)\b|```[ \t]*\n\s*(?:def|import|from|class)\b|^[^\S\n]*def \w+\s*\("
    rf"|```(?:{_OTHER_FENCES})[ \t]*\n",  # a program answer in another language (``polyglot``) is code too
    re.M,
)  # [^\S\n]*: leading blanks within one line, so a megabyte of newlines is scanned once, not once per line
_DEF_SIGNATURE = re.compile(r"\bdef\s+[A-Za-z_]\w*\s*\(")
_BACKTICKED_CALL = re.compile(r"`[A-Za-z_]\w*\([^`\n]*\)`")


def _role_and_content(message: Message | Mapping[str, Any]) -> tuple[str, str]:
    if isinstance(message, Message):
        return message.role, message.content
    content = message.get("content") or ""
    if isinstance(content, list):  # OpenAI content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return str(message.get("role", "")), str(content)


def infer_role(messages: Sequence[Message | Mapping[str, Any]], json_mode: bool = False) -> Role:
    """Which role a chat request plays, read from its structure (see the module docstring).

    Accepts :class:`Message` objects or OpenAI-style dicts, as an HTTP body carries them.
    """
    if json_mode:
        return "generator"
    pairs = [_role_and_content(m) for m in messages]
    if any("reference_code" in content and "entry_point" in content for _, content in pairs):
        return "generator"
    if any(role == "assistant" and _CODE_IN_ANSWER.search(content) for role, content in pairs):
        return "solver"
    if any(
        role == "user" and (_DEF_SIGNATURE.search(content) or _BACKTICKED_CALL.search(content))
        for role, content in pairs
    ):
        return "solver"
    return "generator"


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class FakeLLM:
    """The deterministic offline model behind ``fake/<profile>`` (see the module docstring)."""

    def __init__(self, profile: str = "default", seed: int = 0) -> None:
        if profile not in PROFILES:
            raise UserError(f"unknown fake profile {profile!r}; choose one of: {', '.join(PROFILES)}")
        self.profile = PROFILES[profile]
        self.seed = seed
        self.model = f"fake/{profile}"

    def __repr__(self) -> str:
        return f"FakeLLM(profile={self.profile.name!r}, seed={self.seed})"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request; never raises for a well-formed request, whatever its content."""
        await asyncio.sleep(0)  # a real model yields; so does the fake, so tests see interleaving
        role: Role = request.role if request.role in ("generator", "solver") else infer_role(request.messages)
        from .checked_programs import play  # program tasks with several right outputs, and their checkers

        played = play(self, request, role)
        if played is not None:
            text, finish = played
        elif role == "generator":
            text, finish = self._propose(request)
        else:
            text, finish = self._solve(request)
        prompt_tokens = sum(estimate_tokens(m.content) + 4 for m in request.messages)
        usage = TokenUsage(prompt_tokens=prompt_tokens, completion_tokens=estimate_tokens(text))
        return LLMResponse(text=text, usage=usage, finish_reason=finish, model=self.model)

    # -- randomness ---------------------------------------------------------------------------

    def _rng(self, request: LLMRequest, role: str, *extra: Any, digest: bool = False) -> random.Random:
        """A generator private to this request, seeded from what goes over the wire, never call order.

        ``request.seed`` when there is one (else the fake's own seed and a digest of the messages);
        ``digest`` adds the messages' digest in any case.
        """
        parts: list[Any] = [self.profile.name, role, *extra]
        if request.seed is not None:
            parts.append(request.seed)
        else:
            parts.append(self.seed)
            digest = True
        if digest:
            parts.append(_digest(request.messages))
        return random.Random(bank.stable_hash(*parts))

    # -- generator ----------------------------------------------------------------------------

    def _propose(self, request: LLMRequest) -> tuple[str, str]:
        meta = request.metadata
        prompt = "\n".join(m.content for m in request.messages)
        target = _clamp(_number(_difficulty_from_text(prompt), None, _number(meta.get("difficulty"), None, 0.5)))
        n = int(_number(_count_from_text(prompt), None, _number(meta.get("n"), None, 4)))
        n = max(1, min(16, n))
        focus = _focus_family(_focus_from_text(prompt)) or _focus_family(meta.get("focus"))
        rng = self._rng(request, "generator", digest=True)

        if self.profile.noisy and rng.random() < 0.07:
            return rng.choice(_REFUSALS), "stop"

        injected = bugfix.inject(self, request, prompt, target, n, focus)
        if injected is not None:  # a bug-fix request: bugs hidden in a task's reference
            return injected, "stop"
        variants = self._pick_variants(prompt, focus, rng, target, n)
        as_programs = programs.GENERATOR_MARKER in prompt  # the request asks for whole programs
        as_contest = programs.WRITING_MARKER in prompt  # ... that the solver writes (not reads)
        tasks = []
        contest_keys = {p.key for p in contests.PROBLEMS if p.title + "." in prompt}  # shown: taken
        for i, variant in enumerate(variants):
            task_rng = random.Random(bank.stable_hash(rng.random(), i))
            problem = contests.pick(task_rng, target, contest_keys, _focus_from_text(prompt)) if as_contest else None
            if problem is not None and task_rng.random() < CONTEST_SHARE:
                contest_keys.add(problem.key)
                data = contests.task_json(problem)
                if self.profile.noisy and task_rng.random() < 0.25:
                    data = contests.spoil(problem, data, task_rng.choice(contests.SPOILINGS))
                tasks.append(data)
                continue
            task = bank.build_task(variant, task_rng, target)
            data = task.to_json()
            for _ in range(PROGRAM_RETRIES if as_programs else 0):
                program = programs.as_program_task(task)
                if program is not None:
                    data = program
                    break
                # its values do not survive JSON: another exercise near the target
                task = bank.build_task(bank.random_pipeline(task_rng, target, focus) or variant, task_rng, target)
                data = task.to_json()
            if self.profile.noisy and task_rng.random() < 0.25:
                data = noisy.break_task(task, data, task_rng)
            tasks.append(data)
        text = json.dumps({"tasks": tasks}, indent=2)
        if not self.profile.noisy:
            return text, "stop"
        return noisy.noisy_wrapping(text, n, rng)

    def _collapse_variant(self) -> bank.Variant:
        """The one exercise a ``collapse`` generator keeps coming back to (fixed for the profile, so
        that it is the same whichever process answers)."""
        return bank.find_variant("lists/sum_multiples")

    def _pick_variants(
        self, prompt: str, focus: str | None, rng: random.Random, target: float, n: int
    ) -> list[bank.Variant]:
        """``n`` different exercises near the target difficulty, on the focus family when there is one
        (below difficulty 0.2 the focus is dropped now and then: few very easy exercises exist per topic).

        Mostly a composed multi-step exercise (:func:`bank.random_pipeline`: its space is large, so
        independent requests rarely meet); with probability :data:`STATIC_SHARE` when the family
        has a classic within 0.1 of the target (or when no chain fits), a classic variant drawn near
        the target, avoiding those the prompt already shows (their entry points appear in it, as in
        a list of accepted tasks).
        """
        shown = _shown_variants(prompt)
        if focus is not None and rng.random() < min(0.6, 4 * (0.2 - target)):
            focus = None  # trivial exercises on graphs or recursion come in few shapes: any topic will do
        near = [v for v in bank.VARIANTS if abs(v.difficulty - target) <= 0.1 and focus in (None, v.family)]
        chosen: list[bank.Variant] = []
        for _ in range(n):
            variant: bank.Variant | None = None
            if rng.random() >= STATIC_SHARE or not near:
                for _attempt in range(3):
                    candidate = bank.random_pipeline(rng, target, focus)
                    if candidate is not None and all(candidate.key != c.key for c in chosen):
                        variant = candidate
                        break
            if variant is None:
                weights = [
                    (math.exp(-(((v.difficulty - target) / 0.12) ** 2)) + 1e-3)
                    * (0.1 if v.key in shown else 1.0)
                    * (1e-4 if focus and v.family != focus else 1.0)
                    * (0.05 if any(v.key == c.key for c in chosen) else 1.0)
                    for v in bank.VARIANTS
                ]
                variant = rng.choices(bank.VARIANTS, weights)[0]
            chosen.append(variant)
        if not self.profile.collapse:
            return chosen
        collapse = self._collapse_variant()
        # told that its proposals keep coming back to that exercise, it strays from it more often, as a
        # model heeding its prompt would (without the run's steering, it never hears it)
        told = collapse.key in _shown_variants(_repeated_block(prompt))
        return [collapse if rng.random() < (COLLAPSE_TOLD if told else COLLAPSE) else v for v in chosen]

    # -- solver -------------------------------------------------------------------------------

    def _solve(self, request: LLMRequest) -> tuple[str, str]:
        kind_answer = answer_kind(self, request)
        if kind_answer is not None:  # a deduction or abduction prompt: values or inputs, not code
            return kind_answer, "stop"
        messages = request.messages
        if bugfix.is_fix_request(request):  # buggy code to fix: the fixer reads the bug, not a statement alone
            turn = sum(m.role == "assistant" for m in messages) + 1
            rng = self._rng(request, "solver", "bugfix", turn)
            code = bugfix.fix(self, request, int(_number(request.metadata.get("epoch"), None, 0)), rng)
            return _answer(rng, code, repair=turn > 1, bare=False), "stop"
        first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
        task_prompt = "\n\n".join(m.content for m in messages[:first_answer] if m.role != "assistant")
        whole = "\n\n".join(m.content for m in messages)
        ident = bank.identify(task_prompt) or (bank.identify(whole) if whole != task_prompt else None)
        answers = [m.content for m in messages if m.role == "assistant"]
        turn = len(answers) + 1
        epoch = int(_number(request.metadata.get("epoch"), None, 0))  # not on the wire: see the docstring
        language = polyglot.asked_language(task_prompt)  # None: not a whole-program task
        problem = contests.identify(task_prompt) if language is not None else None
        task_key = (
            f"contest|{problem.key}"
            if problem
            else ident and f"{ident.variant.key}|{ident.params_index}|{ident.entry_point}"
        )
        if task_key and language not in (None, "python"):  # Python's keys stay as they were before languages
            task_key = f"{task_key}|{language}"
        rng = self._rng(request, "solver", task_key, turn)

        if self.profile.noisy:
            r = rng.random()
            if r < 0.04:
                return rng.choice(_REFUSALS), "stop"
            bare = r < 0.08
        else:
            bare = False

        if problem is not None:
            p_contest = self.p_first_try(problem.difficulty, epoch)
            feedback = next((m.content for m in reversed(messages) if m.role == "user"), "")
            written = polyglot.programs_for(problem, language) if language is not None else None
            if written is not None and language is not None:  # else Python: see polyglot's docstring
                previous = polyglot.extract(answers[-1], language) if answers else None
                code = polyglot.solve(written, rng, p_contest, self.p_fix, previous, feedback if answers else "")
                tag = TOOLCHAINS[language].fence_tags[0]
                return _answer(rng, code, repair=previous is not None, bare=bare, tag=tag), "stop"
            previous = _extract_code(answers[-1]) if answers else None
            code = contests.solve(problem, rng, p_contest, self.p_fix, previous, feedback if answers else "")
            return _answer(rng, code, repair=previous is not None, bare=bare), "stop"

        if ident is None:
            code = _generic_attempt(task_prompt or "\n".join(m.content for m in messages))
            return _answer(rng, code, repair=bool(answers), bare=bare), "stop"

        as_program = language is not None  # a whole program around the function (in Python whatever is asked)
        p_solve = self.p_first_try(ident.difficulty, epoch)
        reference = ident.reference()
        previous = _extract_code(answers[-1]) if answers else None
        if previous is not None and as_program:
            previous = programs.unwrap(previous, ident.entry_point)
        code = self._solve_code(ident, rng, reference, previous, p_solve, messages)
        if as_program:
            code = programs.wrap(code, ident.entry_point)
        return _answer(rng, code, repair=previous is not None, bare=bare), "stop"

    def _solve_code(
        self,
        ident: bank.Identification,
        rng: random.Random,
        reference: str,
        previous: str | None,
        p_solve: float,
        messages: Sequence[Message],
    ) -> str:
        """The function the answer holds: the reference or one of the bank's mistakes (see ``_solve``)."""

        if previous is None:
            correct = rng.random() < p_solve
            return reference if correct else self._mistake(ident, rng, exclude=None) or reference
        if _same_code(previous, reference):
            return reference
        previous_kind = _classify(ident, previous)
        feedback = next((m.content for m in reversed(messages) if m.role == "user"), "")
        clarity = _feedback_clarity(previous_kind, feedback, ident.entry_point)
        if rng.random() < self.p_fix(p_solve, clarity):
            return reference
        if previous_kind is not None and rng.random() < 0.5:
            return previous
        return self._mistake(ident, rng, exclude=previous_kind) or previous

    # -- the skill model (also what tools measuring the curve read) ---------------------------

    def p_first_try(self, difficulty: float, epoch: int = 0) -> float:
        """The chance that a first answer to a bank task of this difficulty is right."""
        return _sigmoid(SHARPNESS * (self.profile.skill_at(epoch) - difficulty))

    def p_fix(self, p_first_try: float, clarity: float) -> float:
        """The chance that a repair turn fixes a wrong answer, given feedback of this clarity."""
        return min(0.97, self.profile.repair * p_first_try * (0.35 + 0.55 * clarity) + 0.03)

    def p_episode(self, difficulty: float, epoch: int = 0, turns: int = 3, clarity: float = 1.0) -> float:
        """The model's chance that an episode of ``turns`` turns ends passed, when every wrong answer
        gets feedback of this clarity (in a run, a mistake that only hidden tests catch gets none)."""
        p = self.p_first_try(difficulty, epoch)
        return 1.0 - (1.0 - p) * (1.0 - self.p_fix(p, clarity)) ** max(0, turns - 1)

    def _mistake(self, ident: bank.Identification, rng: random.Random, exclude: str | None) -> str | None:
        kinds = [k for k in bank.mistake_kinds(ident.variant, ident.params_index) if k != exclude]
        if not kinds:
            return None
        kind = rng.choices(kinds, [_MISTAKE_WEIGHTS[k] for k in kinds])[0]
        return bank.mistake_code(ident.variant, ident.params_index, ident.entry_point, kind, rng)


# --------------------------------------------------------------------------------------------
# Helpers: metadata, answers, feedback
# --------------------------------------------------------------------------------------------


def _digest(messages: Sequence[Message]) -> str:
    return hashlib.sha256("\x1e".join(f"{m.role}\x1f{m.content}" for m in messages).encode()).hexdigest()


def _number(value: Any, fallback: float | None, default: float) -> float:
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return default if fallback is None else fallback


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


_NAMED = re.compile(r"\b([A-Za-z]\w*_\w*)|([A-Za-z_]\w*)\s*\(|`([A-Za-z_]\w*)`|^\s*[-*]\s*([A-Za-z_]\w*)\b", re.M)


COLLAPSE = 0.9
"""How often a ``collapse`` generator proposes its one exercise again."""
COLLAPSE_TOLD = 0.4
"""How often it still does once the prompt names that exercise among those proposals keep coming back to."""
_REPEATED = re.compile(r"^Proposals keep coming back to these accepted tasks.*?\n((?:- .*\n)+)", re.M)


def _repeated_block(prompt: str) -> str:
    """The list of tasks the prompt says proposals keep coming back to (``propose.j2``), or ''."""
    match = _REPEATED.search(prompt)
    return match.group(1) if match else ""


def _shown_variants(text: str) -> set[str]:
    """Keys of the bank variants whose entry points the text names (e.g. tasks listed as examples).

    A name counts when it reads as code: it has an underscore, is called, is in backticks, or
    starts a list item; a plain English word such as "rotate" in a sentence does not.
    """
    index = bank.entry_point_index()
    names = {name for match in _NAMED.findall(text) for name in match if name}
    return {key for name in names for key in index.get(name, ())}


_TOPIC_FAMILIES = {
    "dictionaries": "dicts",
    "dicts": "dicts",
    "sorting and searching": "sorting_searching",
    "bit manipulation": "bits",
    "bit tricks": "bits",
    "dynamic programming": "dynamic_programming",
}


def _focus_from_text(text: str) -> str | None:
    """The focus topic a prompt names on a ``Topic ...: name`` line (None: it names none)."""
    m = re.search(r"\btopic\b[^:\n]{0,40}:\s*([a-z][a-z _-]{1,40})", text, re.I)
    return m.group(1) if m else None


def _focus_family(focus: object) -> str | None:
    """The bank family a focus topic names; None when there is none or it names no family."""
    if not isinstance(focus, str) or not focus:
        return None
    name = focus.strip().strip(".").lower()
    family = _TOPIC_FAMILIES.get(name, name.replace(" ", "_"))
    return family if family in bank.FAMILIES else None


def _difficulty_from_text(text: str) -> float | None:
    """The target a prompt asks for: the first ``difficulty ... 0.45`` in it (None: none)."""
    m = re.search(r"difficulty\D{0,24}?(0?\.\d+|[01](?:\.0+)?)\b", text, re.I)
    return float(m.group(1)) if m else None


def _count_from_text(text: str) -> float | None:
    """How many tasks a prompt asks for: ``propose 4 tasks`` and the like (None: it does not say)."""
    m = re.search(r"\b(\d{1,2})\s+(?:\w+\s+){0,3}?(?:tasks?|problems?|exercises?)\b", text, re.I)
    return float(m.group(1)) if m else None


_SENTENCES_FIRST = (
    "Here is my solution.",
    "This implementation should do it:",
    "Here's a straightforward approach.",
    "Below is the function.",
)
_SENTENCES_REPAIR = (
    "Thanks for the feedback; here is a corrected version.",
    "I see the issue. Updated code below.",
    "Let me fix that.",
    "Revised solution:",
)


def _answer(rng: random.Random, code: str, *, repair: bool, bare: bool, tag: str = "python") -> str:
    sentence = rng.choice(_SENTENCES_REPAIR if repair else _SENTENCES_FIRST)
    if bare:
        return f"{sentence}\n\n{code}"
    return f"{sentence}\n\n```{tag}\n{code}```"


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def _extract_code(text: str) -> str | None:
    blocks: list[str] = _FENCE.findall(text)
    if blocks:
        return max(blocks, key=len)
    return text if re.search(r"^[^\S\n]*def \w+\s*\(", text, re.M) else None


def _same_code(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def _classify(ident: bank.Identification, code: str) -> str | None:
    """Which of our own mistakes ``code`` is (None: not one we recognise)."""
    try:
        compile(code, "<answer>", "exec")
    except SyntaxError:
        return "syntax_error"
    if not re.search(rf"\bdef\s+{re.escape(ident.entry_point)}\s*\(", code):
        return "wrong_name"
    for kind in bank.mistake_kinds(ident.variant, ident.params_index):
        if kind in ("syntax_error", "wrong_name"):
            continue
        candidate = bank.mistake_code(ident.variant, ident.params_index, ident.entry_point, kind, random.Random(0))
        if candidate is not None and _same_code(candidate, code):
            return kind
    return None


_SYMPTOMS = {
    "exception": r"\b\w+(?:Error|Exception)\b|Traceback",
    "syntax_error": r"SyntaxError|invalid syntax|expected ':'|never closed|unmatched",
    "infinite_loop": r"time ?out|timed out|time limit|TimeoutError|took too long",
    "wrong_name": r"NameError|not defined|missing|not found|no function|entry point",
}
_VALUE_SYMPTOM = r"\b(?:expected|got|returned|output|instead|should (?:be|return))\b"
_FAILURE_WORDS = r"\b(?:fail\w*|error|wrong|incorrect|mismatch|timeout|timed out|did not pass)\b|\b\d+\s*/\s*\d+\b"


def _feedback_clarity(kind: str | None, feedback: str, entry_point: str) -> float:
    """How clearly the feedback shows the failure: 1.0 names this mistake's symptom, 0.6 shows some
    failure, 0.0 shows nothing useful (e.g. just "try again")."""
    symptom = _SYMPTOMS.get(kind or "", _VALUE_SYMPTOM)
    if kind == "wrong_name":
        name = rf"\b{re.escape(entry_point)}\b"  # tempered: each scan stops at the name's next mention (linear)
        symptom += rf"|{name}(?:(?!{name}).)*?\b(?:undefined|absent)\b"
    if kind in (None, "off_by_one", "edge_case", "logic"):
        if re.search(_VALUE_SYMPTOM, feedback, re.I) and re.search(r"[\(\[\d'\"]", feedback):
            return 1.0
    elif re.search(symptom, feedback, re.I):
        return 1.0
    return 0.6 if re.search(_FAILURE_WORDS, feedback, re.I) else 0.0


def _parameter_names(params: str) -> str:
    names = []
    for part in bank.split_top_level(params):
        name = part.split("=", 1)[0].split(":", 1)[0].strip()
        if name == "/" or name == "*" or re.fullmatch(r"\*{0,2}[A-Za-z_]\w*", name):
            names.append(name)
    return ", ".join(names) if names else "*args"


def _generic_attempt(text: str) -> str:
    """For a task the bank did not write: define the entry point, return a neutral value."""
    m = re.search(r"\bdef\s+([A-Za-z_]\w*)\s*\(", text)
    close = text.find(")", m.end()) if m else -1  # no ")" after the first "def f(": none after any later one
    if m and close >= 0:
        name, params = m.group(1), _parameter_names(text[m.end() : close])
    else:
        m = re.search(r"`([A-Za-z_]\w*)\(([^`\n]*)\)`", text)
        name, params = (m.group(1), _parameter_names(m.group(2))) if m else ("solution", "*args")
    return f"def {name}({params}):\n    # I could not work out the rule; returning a neutral value.\n    return None\n"
