"""Recognising a task of the bank from a prompt (:func:`identify`) or from its key (:func:`find_variant`).

Because parameter choices are finite and statements are rendered from templates, the solver side
recognises a task from its statement alone: every (variant, params, entry point, template)
combination is rendered once and the statements are looked up in the prompt, and a composed
exercise's numbered steps are read back to compose it again. There is no in-process registry, so a
task written by another process, read from a file or sent over HTTP is recognised just the same.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from typing import Any

from ..languages import pyast
from .catalogue import STEPS, VARIANTS
from .pipelines import compose, parse_spec
from .running import run_in_process, strict_equal
from .variant import Args, Variant


@dataclass(frozen=True)
class Identification:
    """A task recognised in a prompt. ``exact``: its statement was found verbatim (modulo whitespace)."""

    variant: Variant
    params_index: int
    entry_point: str
    exact: bool

    def reference(self) -> str:
        code = self.variant.code_for(self.params_index, self.entry_point)
        assert code is not None
        return code

    @property
    def difficulty(self) -> float:
        return self.variant.difficulty_for(self.params_index)


def _normalize(text: str) -> str:
    text = html.unescape(text).replace("\\n", " ").replace("`", "").lower()
    return re.sub(r"\s+", " ", text).strip()


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[\w'*+-]+", text)
    return set(zip(words, words[1:], words[2:], strict=False))


@functools.lru_cache(maxsize=1)
def _statement_index() -> dict[str, list[tuple[str, Variant, int]]]:
    """entry point -> every normalized statement that names it, with its variant and params."""
    index: dict[str, list[tuple[str, Variant, int]]] = {}
    for variant in VARIANTS:
        for pi in range(len(variant.params)):
            for ep in variant.entry_points:
                for ti in range(len(variant.statements)):
                    index.setdefault(ep, []).append((_normalize(variant.statement(pi, ep, ti)), variant, pi))
    return index


@functools.lru_cache(maxsize=1)
def entry_point_index() -> dict[str, tuple[str, ...]]:
    """Entry-point name -> keys of the variants that may use it."""
    index: dict[str, tuple[str, ...]] = {}
    for variant in VARIANTS:
        for ep in variant.entry_points:
            index[ep] = (*index.get(ep, ()), variant.key)
    return index


_EXAMPLE_RE = r"`{ep}\(([^`\n]{{0,2000}}?)\)`\s*(?:returns|should return|gives|->|→|==)\s*`([^`]{{0,2000}})`"
"""An example in a statement: `` `f(args)` returns `value` ``. Args hold no backtick and both parts are
short (a statement's examples are), so scanning a long text stays linear."""
MAX_EXAMPLES = 8
"""Examples of one entry point read from a text (each is run through a candidate's reference)."""
EXAMPLE_TIME_LIMIT_S = 0.5
"""Longest a candidate's reference may take on one example (a text may hold a huge or slow input)."""
_CALL_TOKEN = re.compile(r"(?<!\w)(\w+)\s*\(")
"""A word followed by ``(``, matched from the word's first character only, so one long word costs one scan."""
_NAME_START = re.compile(r"[A-Za-z_]")


def _called_names(text: str) -> set[str]:
    """Every name written as a call (``name(``): what ``[A-Za-z_]\\w*\\s*\\(`` finds, in linear time.

    A word is scanned once from its start; the name is the word from its first ASCII letter or underscore
    on (``2sum(`` names ``sum``), as the leftmost match of that pattern in the word would be.
    """
    names = set()
    for word in set(_CALL_TOKEN.findall(text)):
        start = _NAME_START.search(word)
        if start is not None:
            names.add(word[start.start() :])
    return names


def _examples(text: str, entry_point: str) -> list[tuple[Args, Any]]:
    pairs: list[tuple[Args, Any]] = []
    for m in re.finditer(_EXAMPLE_RE.format(ep=re.escape(entry_point)), text):
        if len(pairs) >= MAX_EXAMPLES:
            break
        args_text, out_text = m.groups()
        try:
            args = pyast.literal_eval(f"({args_text},)") if args_text.strip() else ()
            pairs.append((tuple(args), pyast.literal_eval(out_text)))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return pairs


def _consistent(variant: Variant, params_index: int, entry_point: str, examples: list[tuple[Args, Any]]) -> bool:
    code = variant.code_for(params_index, entry_point)
    assert code is not None
    outcomes = run_in_process(code, entry_point, [a for a, _ in examples], EXAMPLE_TIME_LIMIT_S)
    return all(o.ok and strict_equal(o.value, out) for o, (_, out) in zip(outcomes, examples, strict=False))


def identify(text: str) -> Identification | None:
    """Recognise one of the bank's tasks in a prompt, from content alone.

    First an exact look-up: every statement the bank can render for an entry point named in the
    text (``name(`` anywhere) is searched in the normalized text (case, whitespace, backticks and
    HTML escapes ignored); the longest hit wins, since a statement with an extra note contains the
    one without. Then a pipeline exercise (:func:`compose`): its numbered steps are read back from
    the text (``1. phrase; 2. phrase.``, each phrase one a step renders) and the chain is composed
    again, exact when one of its statements is in the text. Failing that, a fuzzy match on word
    trigrams (>= 60% of the statement's trigrams
    present) among those entry points, narrowed by the examples the text shows
    (`` `f(args)` returns `value` ``), which are checked by running the candidates' references.
    Returns None for anything else (an imported benchmark problem, a user's own task).
    """
    index = _statement_index()
    called = _called_names(text)
    if not called:
        return None
    names = {n for n in called if n in index}
    norm = _normalize(text)
    best: tuple[int, Identification] | None = None
    for name in sorted(names):
        for statement, variant, pi in index[name]:
            if (best is None or len(statement) > best[0]) and statement in norm:
                best = (len(statement), Identification(variant, pi, name, exact=True))
    if best is not None:
        return best[1]
    pipeline = _identify_pipeline(text, norm, called)
    if pipeline is not None:
        return pipeline
    grams = _trigrams(norm)
    scored: list[tuple[float, str, Variant, int]] = []
    for name in sorted(names):
        for statement, variant, pi in index[name]:
            own = _trigrams(statement)
            if own:
                score = len(own & grams) / len(own)
                if score >= 0.6:
                    scored.append((score, name, variant, pi))
    if not scored:
        return None
    scored.sort(key=lambda s: -s[0])
    top = scored[0][0]
    seen: set[tuple[str, str, int]] = set()
    finalists = []
    for score, name, variant, pi in scored:
        if score >= top - 0.05 and (name, variant.key, pi) not in seen:
            seen.add((name, variant.key, pi))
            finalists.append((name, variant, pi))
    for name, variant, pi in finalists:
        examples = _examples(text, name)
        if examples and _consistent(variant, pi, name, examples):
            return Identification(variant, pi, name, exact=False)
    name, variant, pi = finalists[0]
    return Identification(variant, pi, name, exact=False)


def find_variant(key: str) -> Variant:
    """The variant named ``family/name`` (KeyError if none); ``family/pipeline:<chain>`` composes one."""
    for variant in VARIANTS:
        if variant.key == key:
            return variant
    _, _, name = key.partition("/")
    if name.startswith("pipeline:"):
        try:
            variant = compose(parse_spec(name.removeprefix("pipeline:")))
        except (KeyError, ValueError) as exc:
            raise KeyError(key) from exc
        if variant.key == key:
            return variant
    raise KeyError(key)


@functools.lru_cache(maxsize=1)
def _phrase_index() -> dict[str, tuple[str, int]]:
    """Normalized step phrase -> (step name, params index)."""
    index: dict[str, tuple[str, int]] = {}
    for step in STEPS:
        for pi in range(len(step.params)):
            phrase = _normalize(step.render_phrase(pi))
            assert phrase not in index, f"two steps read alike: {phrase}"
            index[phrase] = (step.name, pi)
    return index


def _identify_pipeline(text: str, norm: str, names: set[str]) -> Identification | None:
    """A pipeline exercise recognised from its numbered steps (``1. phrase; 2. phrase.``)."""
    index = _phrase_index()
    spec: list[tuple[str, int]] = []
    for k in range(1, 5):
        hits = [(len(p), key) for p, key in index.items() if f"{k}. {p};" in norm or f"{k}. {p}." in norm]
        if not hits:
            break
        spec.append(max(hits)[1])
    if not spec:
        return None
    try:
        variant = compose(tuple(spec))
    except ValueError:
        return None
    for name in sorted(names, key=lambda n: (-len(n), n)):
        for ti in range(len(variant.statements)):
            statement = _normalize(variant.statement(0, name, ti))
            if re.search(rf"(?<![\w.]){re.escape(statement)}", norm):
                return Identification(variant, 0, name, exact=True)
    for name in sorted(names, key=lambda n: (-len(n), n)):
        if re.search(rf"(?<![\w.])`{re.escape(name)}\(\s*{variant.args[0]}\s*\)`", text):
            return Identification(variant, 0, name, exact=False)
    return None
