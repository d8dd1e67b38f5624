"""The fake model's play on bug-fix tasks (``spade_llm.kinds.bugfix``): the injector and the fixer.

As the *injector* (a generator request whose prompt opens the bugfix section, :data:`INJECTOR_MARKER`):
the task to break is the base the prompt shows (its reference read from the prompt's code block), or,
when it shows none, a bank exercise written as usual; the bugs are the language's procedural ones
(``Language.bugs``: SWE-smith's edit families and the mutant operators), chosen so that their
difficulty (:func:`bug_difficulty`) is closest to the target: one blatant edit when the target is low,
up to three subtle ones when it is high. So the band steers edits per bug and edit family.

As the *fixer* (a solver prompt that opens with :data:`FIXER_MARKER`): the task is recognised from its
description (``bank.identify``), its trusted reference taken from the bank, the buggy code read from the
prompt, and what the bug changed read back (``Language.edit_families``). A first answer is the reference
with the profile's ``p_first_try`` at the bug's difficulty; otherwise it fixes only some of the changed
places (when there are several), hands the buggy code back unchanged, or writes one of the bank's own
mistakes. A repair turn fixes the rest with ``p_fix`` (the failing tests are shown: clarity 0.8). A task
the bank did not write gets the buggy code back: this fake cannot debug what it does not know.

Every choice comes from the request's own generator (``Student._rng``): the same request, the same answer.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from typing import Any

from ..languages import PYTHON
from ..llm.base import LLMRequest
from . import bank
from .kinds import Student, _task_prompt

__all__ = ["FIXER_MARKER", "INJECTOR_MARKER", "bug_difficulty", "fix", "inject", "is_fix_request"]

INJECTOR_MARKER = "These are debugging tasks"
"""How ``prompts/generator/propose.j2`` opens its bugfix section."""
FIXER_MARKER = "Fix the bug"
"""How ``prompts/solver/bugfix_first.j2`` opens."""
SUBTLETY = {
    "constant_return": 0.1,
    "removed_return": 0.3,
    "not": 0.35,
    "swapped_branch": 0.35,
    "dropped_branch": 0.4,
    "arithmetic": 0.4,
    "wrong_variable": 0.5,
    "relational": 0.5,
    "boolean": 0.5,
    "swapped_arguments": 0.55,
    "literal": 0.6,
    "off_by_one": 0.7,
    "inverted_boundary": 0.8,
}
"""How hard an edit of each family is to find, 0 (the function returns a constant) to 1."""
CRUDE = frozenset({"constant_return"})
"""Edits the injector never makes: a function that returns a constant fails nearly every test, which is no
bug to hunt (the gates would reject it as ``bug_breaks_all``)."""
MAX_EDITS = 3
CANDIDATES = 24
"""Procedural bugs drawn per edit count before the closest to the target are kept."""
FIX_CLARITY = 0.8
NEAR = 0.1
"""How far from the target a bug's difficulty may be for the injector to choose it."""
_CODE_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.S)
_REFERENCE = re.compile(r"Reference \(`(\w+)`\):\s*```python[ \t]*\n(.*?)```", re.S)


def bug_difficulty(base_difficulty: float, families: tuple[str, ...] | list[str]) -> float:
    """A bug's difficulty for the fake fixer: more edits and subtler ones are harder; the exercise's
    own difficulty counts a little."""
    if not families:
        return min(1.0, 0.2 * base_difficulty + 0.3)
    subtle = sum(SUBTLETY.get(f, 0.5) for f in families) / len(families)
    return max(0.0, min(1.0, 0.2 * base_difficulty + 0.55 * subtle + 0.15 * (len(families) - 1)))


# -- the injector --------------------------------------------------------------------------------


def _pick_bugs(
    reference: str, base_difficulty: float, target: float, n: int, rng: random.Random
) -> list[dict[str, Any]]:
    """``n`` different bugs of ``reference`` whose difficulty is near ``target``: drawn among those
    within ``NEAR`` of it (the closest ``3 n`` when fewer are), so that requests on one base differ."""
    key = f"{rng.random()}"
    drawn = [
        bug
        for edits in range(1, MAX_EDITS + 1)
        for bug in PYTHON.bugs(reference, CANDIDATES, edits, key, min_edits=edits)
        if not set(bug.edits) & CRUDE
    ]
    ranked = sorted(drawn, key=lambda b: (abs(bug_difficulty(base_difficulty, b.edits) - target), b.source))
    near = [b for b in ranked if abs(bug_difficulty(base_difficulty, b.edits) - target) <= NEAR] or ranked[: 3 * n]
    chosen = rng.sample(near, min(n, len(near)))
    return [{"buggy_code": b.source, "difficulty": round(bug_difficulty(base_difficulty, b.edits), 3)} for b in chosen]


def inject(student: Student, request: LLMRequest, prompt: str, target: float, n: int, focus: str | None) -> str | None:
    """The injector's answer (``{"tasks": [...]}``) to a bugfix proposal prompt, or None when ``prompt``
    is none. Each task is made on the base the prompt shows, else on a bank exercise near the target."""
    if INJECTOR_MARKER not in prompt:
        return None
    rng = student._rng(request, "generator", "bugfix", digest=True)
    shown = _REFERENCE.search(prompt)
    if shown is not None:
        reference = shown.group(2).rstrip("\n") + "\n"  # the template's own newline before the fence
        ident = bank.identify(prompt)
        base_difficulty = ident.difficulty if ident is not None else 0.5
        bugs = _pick_bugs(reference, base_difficulty, target, n, rng)
        tasks = [{**bug, "tags": ["debugging"]} for bug in bugs]
        return json.dumps({"tasks": tasks}, indent=2)
    tasks = []
    for i in range(n):
        task_rng = random.Random(bank.stable_hash(rng.random(), i))
        variant = bank.random_pipeline(task_rng, max(0.05, target - 0.2), focus) or rng.choice(bank.VARIANTS)
        built = bank.build_task(variant, task_rng, max(0.05, target - 0.2))
        data = built.to_json()
        bugs = _pick_bugs(built.reference_code, built.difficulty, target, 1, task_rng)
        if bugs:
            tasks.append({**data, **bugs[0]})
    return json.dumps({"tasks": tasks}, indent=2)


# -- the fixer -----------------------------------------------------------------------------------


def is_fix_request(request: LLMRequest) -> bool:
    return _task_prompt(request.messages).lstrip().startswith(FIXER_MARKER)


def _buggy_code(prompt: str) -> str | None:
    blocks = _CODE_BLOCK.findall(prompt)
    return blocks[0] if blocks else None


def _partial(buggy: str, reference: str, rng: random.Random) -> str | None:
    """``buggy`` with some, not all, of the places it differs from ``reference`` put right (None: it
    differs in one place only)."""
    old, new = buggy.splitlines(keepends=True), reference.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(blocks) < 2:
        return None
    fixed = set(rng.sample(range(len(blocks)), rng.randint(1, len(blocks) - 1)))
    out: list[str] = []
    cursor = 0
    for index, (_, i1, i2, j1, j2) in enumerate(blocks):
        out.extend(old[cursor:i1])
        out.extend(new[j1:j2] if index in fixed else old[i1:i2])
        cursor = i2
    out.extend(old[cursor:])
    return "".join(out)


def _wrong(student: Student, ident: bank.Identification, buggy: str, reference: str, rng: random.Random) -> str:
    """A wrong answer: part of the bug fixed, the bug handed back, or another mistake."""
    partial = _partial(buggy, reference, rng)
    if partial is not None and rng.random() < 0.6:
        return partial
    if rng.random() < 0.5:
        return buggy
    kinds = [
        k for k in bank.mistake_kinds(ident.variant, ident.params_index) if k not in ("syntax_error", "wrong_name")
    ]
    if kinds:
        mistake = bank.mistake_code(ident.variant, ident.params_index, ident.entry_point, rng.choice(kinds), rng)
        if mistake is not None:
            return mistake
    return buggy


def fix(student: Student, request: LLMRequest, epoch: int, rng: random.Random) -> str:
    """The fixer's code for a bug-fix conversation (see the module docstring)."""
    prompt = _task_prompt(request.messages)
    buggy = _buggy_code(prompt) or ""
    ident = bank.identify(prompt)
    if ident is None or not buggy:
        return buggy
    reference = ident.reference()
    difficulty = bug_difficulty(ident.difficulty, list(PYTHON.edit_families(reference, buggy)))
    p = student.p_first_try(difficulty, epoch)
    answers = [m.content for m in request.messages if m.role == "assistant"]
    previous = _last_code(answers[-1]) if answers else None
    if previous is None:
        return reference if rng.random() < p else _wrong(student, ident, buggy, reference, rng)
    if PYTHON.normalised(previous) == PYTHON.normalised(reference):
        return reference
    if rng.random() < student.p_fix(p, FIX_CLARITY):
        return reference
    return _partial(previous, reference, rng) or previous


def _last_code(text: str) -> str | None:
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1] if blocks else None
