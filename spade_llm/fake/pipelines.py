"""Multi-step exercises: pipelines composed from the bank's building blocks (:data:`STEPS`).

The fixed variants are few; a long run proposes hundreds of tasks, and the run's duplicate gate
(token-shingle similarity of the references) rejects a task whose code has the same shape as an
earlier one. A *pipeline* exercise chains 1 to 4 steps (filters, maps, reorderings, aggregations,
parsers, graph and grid walks...), each a different code shape, so different chains are
structurally different programs. Its difficulty is computed from the chain (the steps' costs plus
a little per extra step), its statement lists the steps in order, and it is a regular
:class:`Variant` built on the fly (:func:`compose`), so everything that works on a variant (tests,
mistakes, identification) works on it.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import json
import keyword
import math
import random
import string
import textwrap
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .catalogue import STEPS
from .inputs import _WORDS, _matrix, _nested, _sentence, _size
from .mistakes import _GENERIC_REWRITES, _IDENT, _first_for, _generic_infinite_loop
from .running import Outcome, json_roundtrips, run_in_process, strict_equal
from .steps import Step
from .variant import Variant, stable_hash

_VAR = {
    "ints": "nums", "int": "value", "text": "text", "words": "words", "grid": "grid", "spans": "spans",
    "graph": "edges", "counts": "counts", "nested": "nested", "pairs": "pairs", "moves": "moves",
    "parens": "text", "keys": "keys", "csv": "line", "kv": "line", "times": "times", "expr": "expr",
    "romans": "numerals", "pexpr": "expr",
}  # fmt: skip
"""The variable holding a value of each type inside a pipeline's code."""

_ARG = {**_VAR, "int": "n"}
"""The parameter name of a pipeline whose input has this type."""

_NOUN = {
    "ints": "a list of integers `nums`",
    "int": "an integer `n`",
    "text": "a string `text`",
    "words": "a list of words `words` (lower- and upper-case letters)",
    "grid": "a rectangular grid of integers `grid` (a list of rows of equal length, possibly no rows)",
    "spans": "a list of closed intervals `spans`, each a list `[start, end]` with `start <= end`",
    "graph": (
        "an undirected graph as a list of edges `edges`, each a list `[u, v]` of two different nodes; the "
        "nodes are 0 to n - 1 where n is one more than the largest node in an edge (just node 0 when there "
        "are no edges)"
    ),
    "nested": "a list `nested` whose items are integers or lists nested the same way, to any depth",
    "moves": "a string `moves` of robot commands: `U`, `D`, `L`, `R` (any other character is ignored)",
    "parens": "a string `text` of letters and parentheses",
    "keys": "a string `keys` of typed characters, where `#` is a backspace",
    "csv": "a string `line` of integers separated by commas",
    "kv": "a string `line` of `key=value` pairs separated by semicolons, each value an integer",
    "times": "a list `times` of durations written as `h:mm` strings",
    "expr": "a string `expr` of integers joined by `+` and `-` signs, without spaces",
    "romans": "a list `numerals` of Roman numerals (upper case, standard subtractive form)",
    "pexpr": "a string `expr` of integers joined by `+` and `-` signs, with parentheses and without spaces",
}
"""How a statement introduces the input of each type."""

_OUTPUT_TYPES = frozenset({"ints", "int", "text", "words", "grid", "spans", "counts", "pairs", "nested"})
"""Types a pipeline may return: every value of them survives JSON unchanged."""


_STEP_BY_NAME: dict[str, Step] = {s.name: s for s in STEPS}
# --- inputs of pipelines ---------------------------------------------------------------------

_PIPE_WORDS = (
    *_WORDS, "level", "noon", "Anna", "racecar", "wow", "listen", "silent", "enlist", "stone", "notes", "tones",
)  # fmt: skip


def _roman(n: int) -> str:
    out = ""
    for value, letters in (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ):  # fmt: skip
        while n >= value:
            out += letters
            n -= value
    return out


def _pexpr(rng: random.Random, depth: int) -> str:
    parts = []
    for i in range(rng.randint(1, 3)):
        nested = depth > 0 and rng.random() < 0.35
        term = f"({_pexpr(rng, depth - 1)})" if nested else str(rng.randint(0, 60))
        parts.append(term if i == 0 else rng.choice("+-") + term)
    head = "-" if rng.random() < 0.2 else ""
    return head + "".join(parts)


def _pipe_input(kind: str, rng: random.Random, scale: float) -> Any:
    """A random input of type ``kind`` (bigger on average as ``scale`` grows)."""
    n = _size(rng, 1, 12, scale)
    if kind == "ints":
        size = _size(rng, 2, 14, scale)
        return [rng.randint(-15, 40) if rng.random() < 0.6 else rng.randint(0, 9) for _ in range(size)]
    if kind == "int":
        return rng.randint(-300, 3000) if rng.random() < 0.7 else rng.randint(0, 40)
    if kind == "text":
        text = _sentence(rng, n)
        if rng.random() < 0.4:
            words = text.split(" ")
            words.insert(rng.randrange(len(words) + 1), str(rng.randint(0, 500)))
            text = " ".join(words)
        return text
    if kind == "words":
        cases = (str.lower, str.lower, str.capitalize, str.upper)
        return [rng.choice(cases)(rng.choice(_PIPE_WORDS)) for _ in range(n)]
    if kind == "grid":
        rows, cols = _size(rng, 1, 5, scale), rng.randint(1, 4)
        return _matrix(rng, rows, cols, -5, 20)
    if kind == "spans":
        return [[start, start + rng.randint(0, 6)] for start in (rng.randint(0, 25) for _ in range(n))]
    if kind == "graph":
        nodes = rng.randint(2, 8)
        edges = []
        for _ in range(rng.randint(1, nodes + 1)):
            u, v = rng.sample(range(nodes), 2)
            edges.append([u, v])
        return edges
    if kind == "nested":
        return _nested(rng, 0, 1 + round(2 * scale))
    if kind == "moves":
        return "".join(rng.choice("UUDDLLRRx") for _ in range(_size(rng, 2, 16, scale)))
    if kind == "parens":
        return "".join(rng.choice("((()))ab") for _ in range(_size(rng, 2, 16, scale)))
    if kind == "keys":
        return "".join(rng.choice("abcde##") for _ in range(_size(rng, 2, 14, scale)))
    if kind == "csv":
        fields = [str(rng.randint(-20, 99)) for _ in range(n)]
        if rng.random() < 0.4:
            fields.insert(rng.randrange(len(fields) + 1), "")
        return ",".join(rng.choice(("", " ")) + f + rng.choice(("", "", " ")) for f in fields)
    if kind == "kv":
        return ";".join(f"{rng.choice('abcxyz')}={rng.randint(-20, 50)}" for _ in range(n))
    if kind == "times":
        return [f"{rng.randint(0, 12)}:{rng.randint(0, 59):02d}" for _ in range(_size(rng, 1, 8, scale))]
    if kind == "expr":
        head = "-" if rng.random() < 0.2 else ""
        return head + "".join((rng.choice("+-") if i else "") + str(rng.randint(0, 99)) for i in range(n))
    if kind == "romans":
        return [_roman(rng.randint(1, 2500)) for _ in range(_size(rng, 1, 6, scale))]
    if kind == "pexpr":
        return _pexpr(rng, 1 + round(2 * scale))
    raise ValueError(f"no inputs of type {kind!r}")


_PIPE_EDGES: dict[str, tuple[Any, ...]] = {
    "ints": ([], [-3, 7, 0, 12, 7, -3, 5, 2], [4, 1, 9, 16, 25, 8, 3]),
    "int": (0, -120, 97, 360),
    "text": ("", "Hello,  World!! Level up", "aa bb  Abba noon x7"),
    "words": ([], ["apple", "Level", "apple", "kiwi", "noon", "Banana", "kiwi", "apple"], ["a", "BB", "ccc"]),
    "grid": ([], [[1, -2, 3], [4, 5, -6]], [[7]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]]),
    "spans": ([], [[1, 3], [2, 6], [8, 10], [10, 12]], [[5, 5], [0, 2], [1, 4]]),
    "graph": ([], [[0, 1], [1, 2], [3, 4]], [[0, 2], [2, 4], [4, 0], [1, 3], [5, 6]]),
    "nested": ([], [1, [2, [3, [4]]], 5], [[[]], [7, [8]], 9]),
    "moves": ("", "UURDDLLx", "RRRUUULLLDDD"),
    "parens": ("", "(a(b)c)(d)", "((x)((y)))"),
    "keys": ("", "ab#c##d", "#a##bc#"),
    "csv": ("", "3, -1, 4,,7", "10,20 , 30"),
    "kv": ("", "a=1;b=2;a=5", "x=-3;y=10"),
    "times": ([], ["1:30", "0:05", "12:00"], ["0:00", "2:59"]),
    "expr": ("", "12+3-40", "-5+5-10+100"),
    "romans": ([], ["IV", "MCMXCIV", "XL"], ["III", "LVIII", "CDXLIV"]),
    "pexpr": ("", "12-(3+4)", "-(5-(6+1))+10"),
}
"""Fixed inputs every pipeline reading this type is tested on: empty inputs, repeats, signs, edges."""

_PIPE_PROBES: dict[str, tuple[Any, ...]] = {
    "ints": ([-5, -1, -8], [2, 2, 2, 2], [0], [7], list(range(1, 12)), [5, 5, 10, 0, 0, -10]),
    "int": (1, 7, -7, 1024, 2, 10),
    "text": ("a", "AAaa bbb", "Noon  racecar Z9z", "x y"),
    "words": (["Noon"], ["stone", "notes", "Tones"], ["abc", "abd", "ab"], ["ab", "ab"]),
    "grid": ([[5, 1], [1, 5]], [[1, 2, 3, 4]], [[1], [2], [3]], [[-1, -2], [-3, -4]]),
    "spans": ([[1, 2], [2, 3]], [[0, 10], [2, 3], [5, 8]], [[4, 4]]),
    "graph": ([[0, 1]], [[1, 2]], [[0, 1], [0, 2], [0, 3]], [[2, 3], [3, 4], [4, 2]]),
    "nested": ([5], [[1, 2], [3, [4, 5]]], [[], []]),
    "moves": ("U", "LLLL", "UDUD"),
    "parens": ("(", ")(", "(()"),
    "keys": ("a#", "abc", "##"),
    "csv": ("5", " 1 ,2", ",,"),
    "kv": ("a=1", "b=2;b=3;a=0", ";a=4;"),
    "times": (["0:59"], ["10:10", "1:01"]),
    "expr": ("7", "-3", "1-1+1"),
    "romans": (["II"], ["IX", "XIX"]),
    "pexpr": ("(1)", "-(2)", "3-(4-(5-6))"),
}
"""Further inputs tried first when a mistake slips through the fixed ones."""

_INPUT_TYPES = frozenset(_PIPE_EDGES)


# --- composing --------------------------------------------------------------------------------

_PIPELINE_STATEMENTS = (
    "Write a function `$sig` that takes {noun} and returns the result of these steps, applied in order: {steps}",
    "Implement `$sig`. Starting from {noun}, apply the following steps one after another and return what the "
    "last step produces: {steps}",
    "`$sig` receives {noun}. It returns the outcome of this procedure: {steps}",
)

_GENERIC_NAMES = {
    "ints": "process_numbers", "int": "process_number", "text": "process_text", "words": "process_words",
    "grid": "process_grid", "spans": "process_intervals", "graph": "process_graph", "nested": "process_nested",
    "moves": "run_robot", "parens": "process_parentheses", "keys": "process_keys", "csv": "process_line",
    "kv": "process_settings", "times": "process_times", "expr": "process_expression", "romans": "process_numerals",
    "pexpr": "process_formula",
}  # fmt: skip

Spec = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PipelineVariant(Variant):
    """A :class:`Variant` composed from :data:`STEPS` (see :func:`compose`)."""

    spec: Spec = ()
    informative: bool = True
    """False when the chain's outputs hardly vary (a poor exercise: the generator skips it)."""


def chain_difficulty(steps: Sequence[Step]) -> float:
    """A chain's difficulty: what its steps cost, plus a little for every step after the first."""
    return round(min(0.97, 0.02 + sum(s.cost for s in steps) + 0.025 * (len(steps) - 1)), 2)


def _core(steps: Sequence[Step]) -> Step:
    """The chain's hardest step (the first of the costliest): it names the family and topic."""
    top = max(s.cost for s in steps)
    return next(s for s in steps if s.cost == top)


def spec_text(spec: Spec) -> str:
    return ">".join(f"{name}#{pi}" for name, pi in spec)


def parse_spec(text: str) -> Spec:
    out = []
    for part in text.split(">"):
        name, _, pi = part.partition("#")
        out.append((name, int(pi or 0)))
    return tuple(out)


def _indent_edit(text: str, first: bool) -> str:
    lines = text.split("\n")
    return "\n".join("    " + line if line and (i > 0 or first) else line for i, line in enumerate(lines))


def _main_thread_limit(seconds: float) -> float | None:
    return seconds if threading.current_thread() is threading.main_thread() else None


@functools.lru_cache(maxsize=4096)
def compose(spec: Spec) -> PipelineVariant:
    """The exercise that chains these ``(step name, params index)`` steps; ValueError if they do not fit.

    Pure and cached: the generator and the solver (which parses the chain back from the statement,
    see :func:`identify`) get the same variant. Mistakes are the steps' own edits (the hardest
    step's first) and the generic loop rewrites; each is kept only when some fixed input shows it,
    a few probe inputs being added to the fixed ones where needed.
    """
    if not 1 <= len(spec) <= 4 or len(set(name for name, _ in spec)) != len(spec):
        raise ValueError(f"a chain has 1 to 4 different steps: {spec!r}")
    steps = [(_STEP_BY_NAME[name], pi) for name, pi in spec]
    if any(not 0 <= pi < len(step.params) for step, pi in steps):
        raise ValueError(f"no such parameter choice in {spec!r}")
    source = steps[0][0].takes
    if source not in _INPUT_TYPES or steps[-1][0].gives not in _OUTPUT_TYPES:
        raise ValueError(f"a chain must read an input type and return a JSON type: {spec!r}")
    for (a, _), (b, _) in itertools.pairwise(steps):
        if a.gives != b.takes:
            raise ValueError(f"{a.name} gives {a.gives}, {b.name} takes {b.takes}")
        if b.first_only:
            raise ValueError(f"{b.name} must read the function's argument")
    arg = _ARG[source]
    current = arg
    blocks: list[str] = []
    edit_candidates: dict[str, list[tuple[str, str]]] = {}
    ranked = sorted(range(len(steps)), key=lambda i: -steps[i][0].cost)
    rendered: list[tuple[Step, int, str, str, str]] = []
    for step, pi in steps:
        dst = _VAR[step.gives]
        code = step.render_code(pi, current, dst)
        rendered.append((step, pi, current, dst, code))
        blocks.append(textwrap.indent(code, "    "))
        current = dst
    template = f"def $ep({arg}):\n" + "".join(blocks) + f"    return {current}\n"
    for i in ranked:
        step, pi, src, dst, code = rendered[i]
        values = {**step.values(pi), "IN": src, "OUT": dst}
        for kind, edits in step.bugs.items():
            for old, new in edits:
                old_r = string.Template(old).substitute(values)
                new_r = string.Template(new).substitute(values)
                first = ("\n" + old_r) in ("\n" + code)
                edit_candidates.setdefault(kind, []).append((_indent_edit(old_r, first), _indent_edit(new_r, first)))

    core = _core([s for s, _ in steps])
    slugs = [s.slug for s, _ in steps]
    names = ["_".join(slugs[-3:]) if len(slugs) > 1 else f"{slugs[0]}_of_{arg}", f"{slugs[-1]}_from_{arg}",
             _GENERIC_NAMES[source]]  # fmt: skip
    reserved = set(_IDENT.findall(template)) | set(dir(builtins))
    usable = (n for n in names if n.isidentifier() and n not in reserved and not keyword.iskeyword(n))
    entry_points = tuple(dict.fromkeys(usable))
    if not entry_points:
        entry_points = ("solve_pipeline",)
    ep0 = entry_points[0]
    phrases = "; ".join(f"{i}. {step.render_phrase(pi)}" for i, (step, pi) in enumerate(steps, 1)) + "."
    statements = tuple(t.format(noun=_NOUN[source], steps=phrases) for t in _PIPELINE_STATEMENTS)

    def code_with(tpl: str) -> str:
        return string.Template(tpl).substitute(ep=ep0)

    reference = code_with(template)
    limit = _main_thread_limit(0.5)
    edges: list[Any] = list(_PIPE_EDGES[source])
    pool_rng = random.Random(stable_hash("pipeline-probes", spec_text(spec)))
    pool = list(_PIPE_PROBES[source]) + [_pipe_input(source, pool_rng, (i % 4) / 3) for i in range(12)]

    def run(code: str, inputs: Sequence[Any]) -> list[Outcome]:
        return run_in_process(code, ep0, [(x,) for x in inputs], time_limit_s=limit)

    ref_edges = run(reference, edges)
    if not all(o.ok and json_roundtrips(o.value) for o in ref_edges):
        raise ValueError(f"the chain fails on its fixed inputs: {spec_text(spec)}")
    ref_pool_all = run(reference, pool)
    pool = [x for x, o in zip(pool, ref_pool_all, strict=True) if o.ok and json_roundtrips(o.value)]
    ref_pool = [o for o in ref_pool_all if o.ok and json_roundtrips(o.value)]
    extra: list[Any] = []
    ref_extra: list[Outcome] = []

    def shown(code: str) -> bool:
        """Whether some fixed input (adding a probe input if one is needed and room is left) tells
        ``code`` from the reference."""
        got = run(code, edges + extra)
        if any(not (g.ok and strict_equal(g.value, r.value)) for g, r in zip(got, ref_edges + ref_extra, strict=True)):
            return True
        if len(extra) >= 3:
            return False
        for x, g, r in zip(pool, run(code, pool), ref_pool, strict=True):
            if not (g.ok and strict_equal(g.value, r.value)):
                extra.append(x)
                ref_extra.append(r)
                return True
        return False

    bugs: dict[str, tuple[tuple[str, str], ...]] = {}
    for kind in ("edge_case", "logic", "off_by_one", "exception"):
        for old, new in edit_candidates.get(kind, []):
            wrong = template.replace(old, new)
            if old in template and wrong != template and shown(code_with(wrong)):
                bugs[kind] = ((old, new),)
                break
    generic = set()
    for kind in ("off_by_one", "exception"):
        rewritten = _GENERIC_REWRITES[kind](reference)
        if kind not in bugs and rewritten is not None and shown(rewritten):
            generic.add(kind)
    first_for = _first_for(reference)
    if first_for is not None and "infinite_loop" not in bugs:
        _, _, match = first_for
        first_block = rendered[0][4]
        if (_generic_infinite_loop(reference) is not None and match["expr"].strip() == arg
                and "break" not in first_block and match.group(0).strip() in first_block):  # fmt: skip
            generic.add("infinite_loop")

    distinct = {json.dumps(o.value, sort_keys=True) for o in ref_edges + ref_pool}
    identity = all(strict_equal(o.value, x) for o, x in zip(ref_edges + ref_pool, edges + pool, strict=True))
    all_edges = tuple(edges + extra)
    return PipelineVariant(
        family=core.family,
        name=f"pipeline:{spec_text(spec)}",
        topic=core.topic,
        difficulty=chain_difficulty([s for s, _ in steps]),
        entry_points=entry_points,
        args=(arg,),
        statements=statements,
        code=template,
        make_input=lambda rng, p, scale: (_pipe_input(source, rng, scale),),
        edges=lambda p: [(x,) for x in all_edges],
        bugs=bugs,
        generic=frozenset(generic),
        spec=spec,
        informative=len(distinct) >= 4 and not identity,
    )


def _fits_after(a: Step, b: Step) -> bool:
    """Whether ``b`` may follow ``a``: types match, and no reordering that the next step undoes or ignores."""
    return a.gives == b.takes and not b.first_only and not (a.reorders and (b.reorders or b.order_free))


_STEPS_TAKING: dict[str, tuple[Step, ...]] = {}
_STEPS_GIVING: dict[str, tuple[Step, ...]] = {}
for _s in STEPS:
    _STEPS_TAKING[_s.takes] = (*_STEPS_TAKING.get(_s.takes, ()), _s)
    _STEPS_GIVING[_s.gives] = (*_STEPS_GIVING.get(_s.gives, ()), _s)
del _s


def random_chain(rng: random.Random, target: float, family: str | None = None) -> Spec | None:
    """One random chain near ``target`` whose hardest step belongs to ``family`` (None or a family
    without steps: any step may be the hardest)."""
    cores = [s for s in STEPS if s.family == family] or list(STEPS)
    mean_length = 1.2 + 2.8 * min(1.0, max(0.0, target))
    length = rng.choices((1, 2, 3, 4), [math.exp(-(((k - mean_length) / 0.9) ** 2)) for k in (1, 2, 3, 4)])[0]
    budget = target - 0.02 - 0.025 * (length - 1)
    want = max(0.02, budget if length == 1 else budget * 0.45)
    core = rng.choices(cores, [math.exp(-(((s.cost - want) / 0.08) ** 2)) + 0.02 for s in cores])[0]
    chain = [core]

    def allowed(s: Step) -> bool:
        return (s.family == core.family or s.cost < core.cost) and all(s is not c for c in chain)

    def pick(options: list[Step]) -> Step | None:
        if not options:
            return None
        left = max(0.0, target - chain_difficulty(chain) - 0.03)
        per_step = left / max(1, length - len(chain))
        return rng.choices(options, [math.exp(-(((s.cost - per_step) / 0.1) ** 2)) + 0.05 for s in options])[0]

    before = rng.randrange(length)
    for _ in range(before):
        step = pick([s for s in _STEPS_GIVING.get(chain[0].takes, ()) if allowed(s) and _fits_after(s, chain[0])])
        if step is None:
            break
        chain.insert(0, step)
    while len(chain) < length:
        step = pick([s for s in _STEPS_TAKING.get(chain[-1].gives, ()) if allowed(s) and _fits_after(chain[-1], s)])
        if step is None:
            break
        chain.append(step)
    while chain[0].takes not in _INPUT_TYPES and len(chain) < 4:
        step = pick([s for s in _STEPS_GIVING.get(chain[0].takes, ()) if allowed(s) and _fits_after(s, chain[0])])
        if step is None:
            return None
        chain.insert(0, step)
    while chain[-1].gives not in _OUTPUT_TYPES and len(chain) < 4:
        step = pick([s for s in _STEPS_TAKING.get(chain[-1].gives, ()) if allowed(s) and _fits_after(chain[-1], s)])
        if step is None:
            return None
        chain.append(step)
    if chain[0].takes not in _INPUT_TYPES or chain[-1].gives not in _OUTPUT_TYPES:
        return None
    return tuple((s.name, rng.randrange(len(s.params))) for s in chain)


def random_pipeline(rng: random.Random, target: float, family: str | None = None) -> PipelineVariant | None:
    """A composed exercise near ``target`` in ``family``: one of a few random chains, drawn with a
    preference for those whose difficulty is nearest the target. None when no chain fits."""
    chains = [c for c in (random_chain(rng, target, family) for _ in range(16)) if c is not None]
    gaps = [abs(chain_difficulty([_STEP_BY_NAME[n] for n, _ in c]) - target) for c in chains]
    nearest = min(gaps, default=0.0)
    spread = 0.05 + max(0.0, 0.15 - target) / 2  # easy exercises come in fewer shapes: accept a wider spread
    weights = [math.exp(-(((gap - nearest) / spread) ** 2)) + 1e-6 for gap in gaps]
    while chains:
        i = rng.choices(range(len(chains)), weights)[0]
        spec = chains.pop(i)
        weights.pop(i)
        try:
            variant = compose(spec)
        except ValueError:
            continue
        if variant.informative:
            return variant
    return None
