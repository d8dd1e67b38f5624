"""The task bank behind the fake model: families of Python exercises with trusted references.

Why a bank: ``fake/<profile>`` must propose tasks that read like what a real generator model
writes (a real statement, a correct reference, tests with edge cases), offline and
deterministically, so that ``spade run`` works on a fresh machine and tests can be exact.

Structure: a *family* (strings, dynamic programming, graphs, ...) holds *variants*. A variant is
one kind of exercise with an intrinsic difficulty, a few entry-point synonyms, several statement
templates, a small finite list of parameter choices, a random input generator, fixed edge-case
inputs, and a catalogue of realistic mistakes expressed as edits of the reference source.

Everything about a task is a pure function of (variant, params, rng): the same seed gives
byte-identical tasks. Because parameter choices are finite and statements are rendered from
templates, the solver side recognises a task from its statement alone (:func:`identify`): it
renders every (variant, params, entry point, template) combination once and looks the statements
up in the prompt. There is no in-process registry, so a task written by another process, read
from a file or sent over HTTP is recognised just the same.

The references are our own code, so running them in-process (:func:`run_in_process`) is fine;
it is how expected values, examples and the test suite's checks are computed.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import html
import json
import math
import random
import re
import signal
import string
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FAMILIES",
    "MISTAKE_KINDS",
    "VARIANTS",
    "BankTask",
    "Identification",
    "Outcome",
    "Variant",
    "break_syntax",
    "build_task",
    "entry_point_index",
    "find_variant",
    "identify",
    "json_roundtrips",
    "load_function",
    "mistake_code",
    "mistake_kinds",
    "rename_function",
    "run_in_process",
    "same_value",
    "split_top_level",
    "stable_hash",
    "stand_ins",
]

Params = Mapping[str, Any]
Args = tuple[Any, ...]
InputGen = Callable[[random.Random, Params, float], Args]
EdgeGen = Callable[[Params], list[Args]]

MISTAKE_KINDS: tuple[str, ...] = (
    "off_by_one",
    "edge_case",
    "logic",
    "exception",
    "infinite_loop",
    "syntax_error",
    "wrong_name",
)
"""Every kind of wrong answer the fake solver writes. The first five come from per-variant edits
or generic loop rewrites; ``syntax_error`` and ``wrong_name`` apply to any code."""

_GENERIC = frozenset({"off_by_one", "exception", "infinite_loop"})


def stable_hash(*parts: Any) -> int:
    """A 64-bit hash of ``parts`` that is the same in every process and Python version.

    ``hash()`` is salted per process (PYTHONHASHSEED), so it cannot seed reproducible runs.
    """
    blob = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")


# --------------------------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One exercise type of a family.

    ``code`` and ``statements`` are :class:`string.Template` texts. Their placeholders are
    ``$ep`` (entry point), ``$sig`` (call signature), every parameter ``$name`` (its ``str``) and
    ``$name_r`` (its ``repr``, for code). Parameters whose name starts with ``_`` are not
    rendered (``_bump`` raises the difficulty of a harder parameter choice). A line of ``code``
    that is a lone placeholder rendering to nothing is dropped.

    ``bugs`` maps a mistake kind to edits ``(old, new)`` applied to the code template before
    rendering (every occurrence is replaced); ``generic`` lists which generic loop rewrites may
    stand in for kinds that have no explicit edit.
    """

    family: str
    name: str
    topic: str
    difficulty: float
    entry_points: tuple[str, ...]
    args: tuple[str, ...]
    statements: tuple[str, ...]
    code: str
    make_input: InputGen
    edges: EdgeGen
    params: tuple[Params, ...] = ({},)
    bugs: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    generic: frozenset[str] = _GENERIC

    @property
    def key(self) -> str:
        return f"{self.family}/{self.name}"

    def signature(self, entry_point: str) -> str:
        return f"{entry_point}({', '.join(self.args)})"

    def mapping(self, params_index: int, entry_point: str) -> dict[str, str]:
        values: dict[str, str] = {"ep": entry_point, "sig": self.signature(entry_point)}
        for name, value in self.params[params_index].items():
            if name.startswith("_"):
                continue
            values[name] = value if isinstance(value, str) else str(value)
            values[name + "_r"] = repr(value)
        return values

    def statement(self, params_index: int, entry_point: str, template_index: int) -> str:
        text = string.Template(self.statements[template_index]).substitute(self.mapping(params_index, entry_point))
        return re.sub(r"[ \t]+", " ", text).strip()

    def code_for(self, params_index: int, entry_point: str, bug: str | None = None) -> str | None:
        """The reference source, or the variant's explicit ``bug`` edit of it (None: no such edit)."""
        template = self.code
        if bug is not None:
            edits = self.bugs.get(bug)
            if not edits:
                return None
            for old, new in edits:
                if old not in template:
                    return None
                template = template.replace(old, new)
        return _render_code(template, self.mapping(params_index, entry_point))

    def difficulty_for(self, params_index: int) -> float:
        return self.difficulty + float(self.params[params_index].get("_bump", 0.0))


def _render_code(template: str, values: Mapping[str, str]) -> str:
    lines = []
    for line in template.splitlines():
        rendered = string.Template(line).substitute(values)
        if not rendered.strip() and re.fullmatch(r"\s*\$\w+\s*", line):
            continue
        lines.append(rendered.rstrip())
    return "\n".join(lines).strip("\n") + "\n"


def _code(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _edit(old: str, new: str) -> tuple[tuple[str, str], ...]:
    return ((old, new),)


# --------------------------------------------------------------------------------------------
# Running trusted code in-process
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one call of a function did: returned ``value``, raised ``error``, or ran out of time."""

    status: Literal["ok", "error", "timeout"]
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _TimeLimit(BaseException):
    """Raised by the alarm handler; a BaseException so that ``except Exception`` cannot eat it."""


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread on Unix only; elsewhere no limit)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, float(seconds or 0.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def load_function(code: str, entry_point: str) -> Callable[..., Any]:
    """Exec ``code`` in a fresh namespace and return its ``entry_point`` (KeyError if missing)."""
    namespace: dict[str, Any] = {"__name__": "fake_task"}
    exec(compile(code, f"<task {entry_point}>", "exec"), namespace)
    function = namespace[entry_point]
    if not callable(function):
        raise TypeError(f"{entry_point} is not callable")
    return function


def run_in_process(
    code: str, entry_point: str, inputs: Sequence[Args], time_limit_s: float | None = None
) -> list[Outcome]:
    """Call ``entry_point`` of ``code`` on each input (deep-copied), in this process.

    Only for code we trust not to harm the process (our references and their mistakes): it is
    how the bank computes expected values and how tests check mistakes. ``time_limit_s`` bounds
    each call where an interval timer is usable, so a deliberate infinite loop ends as ``timeout``.
    """
    try:
        function = load_function(code, entry_point)
    except BaseException as exc:  # SyntaxError, missing entry point, anything at import
        return [Outcome("error", error=f"{type(exc).__name__}: {exc}") for _ in inputs]
    outcomes = []
    for args in inputs:
        try:
            with _alarm(time_limit_s):
                value = function(*copy.deepcopy(args))
            outcomes.append(Outcome("ok", value=value))
        except _TimeLimit:
            outcomes.append(Outcome("timeout", error="timed out"))
        except RecursionError as exc:
            outcomes.append(Outcome("error", error=f"RecursionError: {exc}"))
        except Exception as exc:
            outcomes.append(Outcome("error", error=f"{type(exc).__name__}: {exc}"))
    return outcomes


def same_value(a: Any, b: Any) -> bool:
    """Strict, type-preserving equality, as SPEC's verdicts use: ``True`` is not ``1``, NaN equals nothing."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return not math.isnan(a) and a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def stand_ins(args: Args) -> list[Any]:
    """The trivial answers a task's tests must reject: None, 0, the first argument, [], "", {}."""
    return [None, 0, args[0] if args else None, [], "", {}]


def json_roundtrips(value: Any) -> bool:
    try:
        return same_value(json.loads(json.dumps(value)), value)
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------------
# Generic mistakes: rewrites of the first ``for`` loop, a syntax slip, a misnamed function
# --------------------------------------------------------------------------------------------

_FOR_LINE = re.compile(r"^(?P<indent>[ \t]*)for (?P<target>.+?) in (?P<expr>.+):[ \t]*$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_ALLOCATING = ("append(", "extend(", "insert(", "+= [", "+= ch", "+= \"", "+= token", ".add(")


def _first_for(code: str) -> tuple[list[str], int, re.Match[str]] | None:
    lines = code.splitlines()
    for i, line in enumerate(lines):
        match = _FOR_LINE.match(line)
        if match:
            return lines, i, match
    return None


def _block_end(lines: list[str], start: int, indent: int) -> int:
    j = start + 1
    while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
        j += 1
    return j


def _fresh(code: str, *names: str) -> str:
    for name in names:
        if not re.search(rf"\b{name}\b", code):
            return name
    return names[-1] + "_"


def split_top_level(args: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return [p for p in parts if p]


def _generic_off_by_one(code: str) -> str | None:
    """Skip the first element (``xs`` -> ``xs[1:]``) or stop one early (``range(n)`` -> ``range(n - 1)``)."""
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    expr = m["expr"].strip()
    if _IDENT.fullmatch(expr):
        new_expr = f"{expr}[1:]"
    elif expr.startswith("range(") and expr.endswith(")"):
        args = split_top_level(expr[6:-1])
        if len(args) not in (1, 2):
            return None
        stop = args[-1]
        stop = stop[: -len(" + 1")] if stop.endswith(" + 1") else f"{stop} - 1"
        new_expr = f"range({', '.join([*args[:-1], stop])})"
    else:
        return None
    lines[i] = f"{m['indent']}for {m['target']} in {new_expr}:"
    return "\n".join(lines) + "\n"


def _generic_exception(code: str) -> str | None:
    """Index one past the end: ``for x in xs`` -> ``for i in range(len(xs) + 1): x = xs[i]`` (IndexError)."""
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    expr = m["expr"].strip()
    if not _IDENT.fullmatch(expr):
        return None
    indent = m["indent"]
    idx = _fresh(code, "i", "idx", "pos")
    lines[i : i + 1] = [f"{indent}for {idx} in range(len({expr}) + 1):", f"{indent}    {m['target']} = {expr}[{idx}]"]
    return "\n".join(lines) + "\n"


def _generic_infinite_loop(code: str) -> str | None:
    """Turn the first ``for`` into a ``while`` that never advances its index.

    Refused when the loop body allocates on every pass (appends, string growth): such a loop
    would end on the memory limit, and this mistake is meant to end on the time limit.
    """
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    indent, target, expr = m["indent"], m["target"].strip(), m["expr"].strip()
    end = _block_end(lines, i, len(indent))
    body = lines[i + 1 : end]
    if any(token in line for line in body for token in _ALLOCATING):
        return None
    inner = indent + "    "
    if expr.startswith("range(") and expr.endswith(")") and _IDENT.fullmatch(target):
        args = split_top_level(expr[6:-1])
        if len(args) not in (1, 2):
            return None
        start, stop = (args[0], args[1]) if len(args) == 2 else ("0", args[0])
        var = target if target != "_" else _fresh(code, "step", "count")
        head = [f"{indent}{var} = {start}", f"{indent}while {var} < {stop}:"]
    else:
        idx = _fresh(code, "idx", "pos", "cursor")
        if _IDENT.fullmatch(expr):
            seq, head = expr, []
        else:
            seq = _fresh(code, "items", "values", "elements")
            head = [f"{indent}{seq} = list({expr})"]
        head += [f"{indent}{idx} = 0", f"{indent}while {idx} < len({seq}):", f"{inner}{target} = {seq}[{idx}]"]
    lines[i : i + 1] = head
    return "\n".join(lines) + "\n"


_GENERIC_REWRITES: dict[str, Callable[[str], str | None]] = {
    "off_by_one": _generic_off_by_one,
    "exception": _generic_exception,
    "infinite_loop": _generic_infinite_loop,
}


def break_syntax(code: str, entry_point: str, rng: random.Random) -> str:
    """A typo that stops the code from compiling: a missing colon, ``=`` for ``==``, a lost parenthesis."""
    options: list[Callable[[str], str]] = []
    lines = code.splitlines()
    def_line = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(f"def {entry_point}(")), None)
    if def_line is not None:

        def drop_colon(src: str, at: int = def_line) -> str:
            out = src.splitlines()
            out[at] = out[at].rstrip().removesuffix(":")
            return "\n".join(out) + "\n"

        options.append(drop_colon)
    eq_line = next((i for i, ln in enumerate(lines) if re.match(r"\s*(if|elif|while) .* == .*:$", ln)), None)
    if eq_line is not None:

        def single_equals(src: str, at: int = eq_line) -> str:
            out = src.splitlines()
            out[at] = out[at].replace(" == ", " = ", 1)
            return "\n".join(out) + "\n"

        options.append(single_equals)
    paren_line = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("return ") and ln.endswith(")")), None)
    if paren_line is not None:

        def lost_paren(src: str, at: int = paren_line) -> str:
            out = src.splitlines()
            out[at] = out[at][:-1]
            return "\n".join(out) + "\n"

        options.append(lost_paren)
    if not options:
        return code.replace("def ", "def def ", 1)
    return rng.choice(options)(code)


def rename_function(code: str, entry_point: str, alternatives: Sequence[str], rng: random.Random) -> str:
    """Define the function under another plausible name (a synonym, camelCase, ``solution``)."""
    parts = entry_point.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    names = [n for n in (*alternatives, camel, "solution", f"{entry_point}_solution") if n != entry_point]
    other = rng.choice(names)
    return re.sub(rf"\b{re.escape(entry_point)}\b(?=\s*\()", other, code)


def mistake_kinds(variant: Variant, params_index: int) -> list[str]:
    """The mistake kinds available for this variant and parameter choice, in ``MISTAKE_KINDS`` order."""
    reference = variant.code_for(params_index, variant.entry_points[0])
    assert reference is not None
    kinds = []
    for kind in MISTAKE_KINDS:
        universal = kind in ("syntax_error", "wrong_name")
        explicit = variant.code_for(params_index, variant.entry_points[0], kind) is not None
        rewrite = _GENERIC_REWRITES.get(kind) if kind in variant.generic else None
        if universal or explicit or (rewrite is not None and rewrite(reference) is not None):
            kinds.append(kind)
    return kinds


def mistake_code(variant: Variant, params_index: int, entry_point: str, kind: str, rng: random.Random) -> str | None:
    """The wrong code of ``kind`` for this task (None when the kind does not apply to it).

    Explicit per-variant edits win over the generic loop rewrites. Every mistake is built to fail
    at least one of the task's tests (the fixed edge-case inputs are chosen for that); the test
    suite checks it for every variant.
    """
    reference = variant.code_for(params_index, entry_point)
    assert reference is not None
    if kind == "syntax_error":
        return break_syntax(reference, entry_point, rng)
    if kind == "wrong_name":
        return rename_function(reference, entry_point, variant.entry_points, rng)
    explicit = variant.code_for(params_index, entry_point, kind)
    if explicit is not None:
        return explicit
    if kind in variant.generic and kind in _GENERIC_REWRITES:
        return _GENERIC_REWRITES[kind](reference)
    return None


# --------------------------------------------------------------------------------------------
# Building a task
# --------------------------------------------------------------------------------------------

_EXAMPLE_TEMPLATES = (
    "For example, `{call}` returns `{out}`.",
    "Example: `{call}` should return `{out}`.",
    "E.g. `{call}` returns `{out}`.",
    "For instance, `{call}` gives `{out}`.",
)


@dataclass(frozen=True)
class BankTask:
    """A generated task with the bookkeeping the fake needs (variant, params, reference outputs)."""

    variant: Variant
    params_index: int
    entry_point: str
    statement: str
    description: str
    reference_code: str
    inputs: list[Args]
    outputs: list[Any]
    expected_at: frozenset[int]
    difficulty: float
    tags: list[str]

    def tests(self) -> list[dict[str, Any]]:
        tests: list[dict[str, Any]] = []
        for i, args in enumerate(self.inputs):
            test: dict[str, Any] = {"input": _input_literal(args)}
            if i in self.expected_at:
                test["expected"] = self.outputs[i]
            tests.append(test)
        return tests

    def to_json(self) -> dict[str, Any]:
        """The task as a generator model would write it (no task id: the pipeline assigns it)."""
        return {
            "description": self.description,
            "entry_point": self.entry_point,
            "reference_code": self.reference_code,
            "tests": self.tests(),
            "difficulty": self.difficulty,
            "tags": self.tags,
        }


def _input_literal(args: Args) -> str:
    return repr(tuple(args))


def _call_text(entry_point: str, args: Args) -> str:
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def build_task(
    variant: Variant,
    rng: random.Random,
    target: float,
    *,
    params_index: int | None = None,
    entry_point: str | None = None,
) -> BankTask:
    """Render one task of ``variant`` near difficulty ``target``, all choices drawn from ``rng``.

    Tests are the variant's fixed edge cases plus random inputs (5 to 8 in all), shuffled; the
    reference's outputs are computed in-process, more random tests are added while a trivial
    stand-in (None, 0, first argument, [], "", {}) would still pass them all, and a few tests carry
    an explicit ``expected`` when it survives JSON unchanged.
    """
    pi = rng.randrange(len(variant.params)) if params_index is None else params_index
    ep = rng.choice(variant.entry_points) if entry_point is None else entry_point
    template_index = rng.randrange(len(variant.statements))
    params = variant.params[pi]
    scale = min(1.0, max(0.0, target))
    code = variant.code_for(pi, ep)
    assert code is not None
    function = load_function(code, ep)

    inputs: list[Args] = []
    seen: set[str] = set()

    def add(args: Args) -> bool:
        key = _input_literal(args)
        if key in seen:
            return False
        seen.add(key)
        inputs.append(args)
        return True

    edge_inputs = list(variant.edges(params))
    for args in edge_inputs:
        add(args)
    n_edges = len(inputs)
    total = min(8, max(n_edges + 2, rng.randint(5, 8)))
    attempts = 0
    while len(inputs) < total and attempts < 60:
        attempts += 1
        add(variant.make_input(rng, params, scale))
    randoms = inputs[n_edges:]

    outputs = [function(*copy.deepcopy(a)) for a in inputs]
    attempts = 0
    while len(inputs) < 8 and attempts < 60 and not _rejects_stand_ins(inputs, outputs):
        attempts += 1
        if add(variant.make_input(rng, params, scale)):
            outputs.append(function(*copy.deepcopy(inputs[-1])))
            randoms.append(inputs[-1])

    order = list(range(len(inputs)))
    rng.shuffle(order)
    inputs = [inputs[i] for i in order]
    outputs = [outputs[i] for i in order]

    candidates = [i for i, out in enumerate(outputs) if json_roundtrips(out)]
    n_expected = min(len(candidates), rng.choice((0, 1, 1, 2)))
    expected_at = frozenset(rng.sample(candidates, n_expected))

    short = [
        i
        for i, a in enumerate(inputs)
        if a in randoms and len(_call_text(ep, a)) <= 60 and len(repr(outputs[i])) <= 60
    ]
    telling = [i for i in short if not any(same_value(s, outputs[i]) for s in stand_ins(inputs[i]))]
    by_length = sorted(range(len(inputs)), key=lambda i: len(_call_text(ep, inputs[i])) + len(repr(outputs[i])))
    pool = telling or short or by_length[:1]
    ex = rng.choice(pool)
    example = rng.choice(_EXAMPLE_TEMPLATES).format(call=_call_text(ep, inputs[ex]), out=repr(outputs[ex]))
    statement = variant.statement(pi, ep, template_index)
    difficulty = variant.difficulty_for(pi) + 0.05 * (scale - 0.5) + rng.uniform(-0.03, 0.03)
    return BankTask(
        variant=variant,
        params_index=pi,
        entry_point=ep,
        statement=statement,
        description=f"{statement}\n\n{example}",
        reference_code=code,
        inputs=inputs,
        outputs=outputs,
        expected_at=expected_at,
        difficulty=round(min(0.99, max(0.01, difficulty)), 2),
        tags=[variant.family, variant.topic],
    )


def _rejects_stand_ins(inputs: Sequence[Args], outputs: Sequence[Any]) -> bool:
    for position in range(6):
        if all(same_value(stand_ins(args)[position], out) for args, out in zip(inputs, outputs, strict=False)):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Recognising a task from a prompt
# --------------------------------------------------------------------------------------------


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
    return {tuple(words[i : i + 3]) for i in range(max(0, len(words) - 2))}


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


_EXAMPLE_RE = r"`{ep}\((.*?)\)`\s*(?:returns|should return|gives|->|→|==)\s*`([^`]*)`"


def _examples(text: str, entry_point: str) -> list[tuple[Args, Any]]:
    pairs = []
    for args_text, out_text in re.findall(_EXAMPLE_RE.format(ep=re.escape(entry_point)), text):
        try:
            args = ast.literal_eval(f"({args_text},)") if args_text.strip() else ()
            pairs.append((tuple(args), ast.literal_eval(out_text)))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return pairs


def _consistent(variant: Variant, params_index: int, entry_point: str, examples: list[tuple[Args, Any]]) -> bool:
    code = variant.code_for(params_index, entry_point)
    assert code is not None
    outcomes = run_in_process(code, entry_point, [a for a, _ in examples])
    return all(o.ok and same_value(o.value, out) for o, (_, out) in zip(outcomes, examples, strict=False))


def identify(text: str) -> Identification | None:
    """Recognise one of the bank's tasks in a prompt, from content alone.

    First an exact look-up: every statement the bank can render for an entry point named in the
    text (``name(`` anywhere) is searched in the normalized text (case, whitespace, backticks and
    HTML escapes ignored); the longest hit wins, since a statement with an extra note contains the
    one without. Failing that, a fuzzy match on word trigrams (>= 60% of the statement's trigrams
    present) among those entry points, narrowed by the examples the text shows
    (`` `f(args)` returns `value` ``), which are checked by running the candidates' references.
    Returns None for anything else (an imported benchmark problem, a user's own task).
    """
    index = _statement_index()
    names = {n for n in re.findall(r"([A-Za-z_]\w*)\s*\(", text) if n in index}
    if not names:
        return None
    norm = _normalize(text)
    best: tuple[int, Identification] | None = None
    for name in sorted(names):
        for statement, variant, pi in index[name]:
            if (best is None or len(statement) > best[0]) and statement in norm:
                best = (len(statement), Identification(variant, pi, name, exact=True))
    if best is not None:
        return best[1]
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
    """The variant named ``family/name`` (KeyError if none)."""
    for variant in VARIANTS:
        if variant.key == key:
            return variant
    raise KeyError(key)


# --------------------------------------------------------------------------------------------
# Random input helpers
# --------------------------------------------------------------------------------------------


def _size(rng: random.Random, lo: int, hi: int, scale: float) -> int:
    return rng.randint(lo, max(lo, lo + round((hi - lo) * scale)))


def _ints(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


_WORDS = (
    "apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "quiet", "zebra",
    "light", "sugar", "eagle", "index", "orbit", "umbra", "yield", "rhythm", "crypt", "banana",
    "island", "echo", "under", "violet", "garden", "lemon", "north", "pixel", "arrow", "honey",
)  # fmt: skip


# ============================================================================================
# The families
# ============================================================================================

# --- strings ---------------------------------------------------------------------------------


def _sentence(rng: random.Random, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        word = rng.choice(_WORDS)
        if rng.random() < 0.3:
            word = word.capitalize()
        if rng.random() < 0.15:
            word = word.upper()
        words.append(word + (rng.choice(",.!?") if rng.random() < 0.2 else ""))
    return " ".join(words)


_VOWEL_COUNT = Variant(
    family="strings",
    name="vowel_count",
    topic="counting characters",
    difficulty=0.1,
    entry_points=("count_vowels", "vowel_count", "num_vowels"),
    args=("s",),
    statements=(
        "Write a function `$sig` that returns the number of vowels in the string `s`. Vowels are counted "
        "case-insensitively, so `'A'` and `'a'` both count.$y_note",
        "Implement `$sig`: count how many characters of `s` are vowels (a, e, i, o, u), ignoring case.$y_note "
        "Any other character, including digits and punctuation, is ignored.",
        "Given a piece of text `s`, `$sig` should return how many vowels it contains, treating upper- and "
        "lower-case letters alike.$y_note An empty string contains no vowels.",
    ),
    code=_code(
        """
        def $ep(s):
            count = 0
            for ch in s.lower():
                if ch in $vowels_r:
                    count += 1
            return count
        """
    ),
    params=(
        {"vowels": "aeiou", "y_note": ""},
        {"vowels": "aeiouy", "y_note": " For this exercise the letter `y` counts as a vowel too.", "_bump": 0.04},
    ),
    make_input=lambda rng, p, scale: (_sentence(rng, _size(rng, 1, 12, scale)),),
    edges=lambda p: [("",), ("Apple pie",), ("rhythm",), ("AEIOU and sometimes Y",)],
    bugs={
        "edge_case": _edit("for ch in s.lower():", "for ch in s:"),
        "exception": _edit(
            "    for ch in s.lower():\n", "    for i in range(len(s) + 1):\n        ch = s[i].lower()\n"
        ),
        "off_by_one": _edit("for ch in s.lower():", "for ch in s.lower()[1:]:"),
    },
)


def _runs(rng: random.Random, scale: float) -> str:
    letters = "abcxyzAB"
    out: list[str] = []
    for _ in range(_size(rng, 1, 7, scale)):
        ch = rng.choice(letters)
        while out and out[-1][0] == ch:
            ch = rng.choice(letters)
        out.append(ch * _size(rng, 1, 12, scale))
    return "".join(out)


_RUN_LENGTH = Variant(
    family="strings",
    name="run_length",
    topic="run-length encoding",
    difficulty=0.32,
    entry_points=("run_length_encode", "rle_encode", "compress"),
    args=("s",),
    statements=(
        "Write `$sig`, which compresses a string with run-length encoding: every maximal run of the same "
        "character becomes that character followed by the length of the run. $ones_note The empty string "
        "encodes to the empty string.",
        "Implement `$sig` that returns the run-length encoding of `s`: scan the string from left to right and "
        "replace each maximal block of identical characters by the character followed by the block's length. "
        "$ones_note Case matters: `'a'` and `'A'` are different characters.",
        "`$sig` takes a string and returns its run-length encoded form. Consecutive equal characters are "
        "collapsed into the character plus how many times it repeats. $ones_note An empty input gives an "
        "empty output.",
    ),
    code=_code(
        """
        def $ep(s):
            if not s:
                return ""
            parts = []
            current = s[0]
            run = 1
            for ch in s[1:]:
                if ch == current:
                    run += 1
                else:
                    parts.append(current + $fmt)
                    current = ch
                    run = 1
            parts.append(current + $fmt)
            return "".join(parts)
        """
    ),
    params=(
        {"fmt": "str(run)", "ones_note": "Every run is written with its count, even a count of 1."},
        {
            "fmt": '(str(run) if run > 1 else "")',
            "ones_note": "A run of length 1 is written as the bare character, without a count.",
            "_bump": 0.05,
        },
    ),
    make_input=lambda rng, p, scale: (_runs(rng, scale),),
    edges=lambda p: [("",), ("aaabccdddd",), ("abc",), ("zzzzzzzzzzzz",)],
    bugs={
        "exception": _edit('    if not s:\n        return ""\n', ""),
        "edge_case": _edit("            run = 1\n    parts.append(current + $fmt)\n", "            run = 1\n"),
        "off_by_one": _edit(
            "            current = ch\n            run = 1", "            current = ch\n            run = 0"
        ),
        "infinite_loop": _edit(
            "    for ch in s[1:]:\n        if ch == current:\n            run += 1\n",
            "    i = 1\n    while i < len(s):\n        ch = s[i]\n        if ch == current:\n            run += 1\n",
        ),
    },
)


def _palindrome_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 2, 12, scale)
    half = "".join(rng.choice("abcdeklmnorst") for _ in range(n))
    core = half + (rng.choice("xyz") if rng.random() < 0.5 else "") + half[::-1]
    if rng.random() < 0.4:
        i = rng.randrange(len(core))
        core = core[:i] + rng.choice("qwv") + core[i + 1 :]
    out = []
    for ch in core:
        out.append(ch.upper() if rng.random() < 0.3 else ch)
        if rng.random() < 0.2:
            out.append(rng.choice(" ,.!'-" + ("7" if p["pred"] == "isalpha" else " ")))
    return ("".join(out),)


_PALINDROME = Variant(
    family="strings",
    name="palindrome",
    topic="two pointers",
    difficulty=0.24,
    entry_points=("is_palindrome", "is_palindromic_phrase", "reads_same_both_ways"),
    args=("s",),
    statements=(
        "Write `$sig` that returns `True` if `s` is a palindrome when only its $kept are considered and case "
        "is ignored, and `False` otherwise. Spaces and punctuation do not matter; the empty string is a "
        "palindrome.",
        "A phrase is a palindrome if, after dropping every character that is not one of its $kept and "
        "lower-casing the rest, it reads the same forwards and backwards. Implement `$sig` to test this for "
        "the string `s`.",
        "Implement `$sig`. Return whether `s` reads the same in both directions, looking only at $kept and "
        "ignoring upper/lower case (so `'No lemon, no melon'` qualifies).",
    ),
    code=_code(
        """
        def $ep(s):
            chars = [ch.lower() for ch in s if ch.$pred()]
            left, right = 0, len(chars) - 1
            while left < right:
                if chars[left] != chars[right]:
                    return False
                left += 1
                right -= 1
            return True
        """
    ),
    params=(
        {"pred": "isalnum", "kept": "letters and digits"},
        {"pred": "isalpha", "kept": "letters", "_bump": 0.02},
    ),
    make_input=_palindrome_input,
    edges=lambda p: [
        ("",),
        ("A man, a plan, a canal: Panama",),
        ("Racecar",),
        ("hello",),
        ("race 1 car",),
    ],
    bugs={
        "edge_case": _edit("ch.lower() for ch in s", "ch for ch in s"),
        "off_by_one": _edit("len(chars) - 1", "len(chars) - 2"),
        "exception": _edit("len(chars) - 1", "len(s) - 1"),
        "infinite_loop": _edit(
            "            return False\n        left += 1\n        right -= 1\n", "            return False\n"
        ),
    },
)


_LONGEST_UNIQUE = Variant(
    family="strings",
    name="longest_unique",
    topic="sliding window",
    difficulty=0.5,
    entry_points=("longest_unique_substring", "longest_distinct_run", "max_unique_window"),
    args=("s",),
    statements=(
        "Write `$sig` that returns the length of the longest substring of `s` (a contiguous run of "
        "characters) in which no character appears twice. The empty string gives 0.",
        "Implement `$sig`. Among all contiguous substrings of `s` whose characters are all distinct, find the "
        "longest one and return its length.",
        "`$sig` should return the size of the longest window of consecutive characters of `s` that contains "
        "no repeated character. Characters are compared exactly, so `'a'` and `'A'` differ.",
    ),
    code=_code(
        """
        def $ep(s):
            last_seen = {}
            start = 0
            best = 0
            for i, ch in enumerate(s):
                if ch in last_seen and last_seen[ch] >= start:
                    start = last_seen[ch] + 1
                last_seen[ch] = i
                if i - start + 1 > best:
                    best = i - start + 1
            return best
        """
    ),
    make_input=lambda rng, p, scale: (
        "".join(rng.choice("abcdefghijklmnop"[: _size(rng, 3, 14, scale)]) for _ in range(_size(rng, 5, 50, scale))),
    ),
    edges=lambda p: [("",), ("abcabcbb",), ("bbbbb",), ("abba",), ("pwwkew",)],
    bugs={
        "off_by_one": _edit("start = last_seen[ch] + 1", "start = last_seen[ch]"),
        "edge_case": _edit("if ch in last_seen and last_seen[ch] >= start:", "if ch in last_seen:"),
        "exception": _edit("if ch in last_seen and last_seen[ch] >= start:", "if last_seen[ch] >= start:"),
    },
)


# --- lists -----------------------------------------------------------------------------------

_SUM_MULTIPLES = Variant(
    family="lists",
    name="sum_multiples",
    topic="filtering",
    difficulty=0.08,
    entry_points=("sum_multiples", "sum_divisible", "total_of_multiples"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the sum of all elements of the integer list `nums` that are divisible by "
        "$k. Negative numbers count too; an empty list sums to 0.",
        "Implement `$sig`: add up every number in `nums` that is a multiple of $k (including negative "
        "multiples and zero) and return the total.",
        "Given a list of integers `nums`, `$sig` returns the total of those values that leave no remainder "
        "when divided by $k.",
    ),
    code=_code(
        """
        def $ep(nums):
            total = 0
            for x in nums:
                if x % $k == 0:
                    total += x
            return total
        """
    ),
    params=({"k": 2}, {"k": 3}, {"k": 4}, {"k": 5}, {"k": 7}),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 25, scale), -30, 60),),
    edges=lambda p: [([],), ([3 * p["k"], 1, -2 * p["k"], p["k"] + 1],), ([p["k"], p["k"], p["k"]],)],
    bugs={"edge_case": _edit("if x % $k == 0:", "if x % $k == 0 and x > 0:")},
)

_ROTATE = Variant(
    family="lists",
    name="rotate",
    topic="slicing",
    difficulty=0.2,
    entry_points=("rotate", "rotate_list", "shift_items"),
    args=("items", "k"),
    statements=(
        "Write `$sig` that returns a new list with the elements of `items` rotated $dir by `k` positions. "
        "`k` may be larger than the length of the list, and an empty list stays empty. Do not modify the input.",
        "Implement `$sig`: shift every element of `items` `k` places to the $dir, wrapping around the end, "
        "and return the result as a new list. Rotating by a multiple of the length gives the list back unchanged.",
        "Rotate a list: `$sig` moves each element `k` steps to the $dir (elements that fall off one end "
        "re-enter at the other) and returns the rotated list. `k` is a non-negative integer that can exceed "
        "`len(items)`.",
    ),
    code=_code(
        """
        def $ep(items, k):
            if not items:
                return []
            k %= len(items)
            return $ret
        """
    ),
    params=(
        {"dir": "right", "ret": "items[-k:] + items[:-k]", "ret_obo": "items[-k + 1:] + items[:-k + 1]"},
        {"dir": "left", "ret": "items[k:] + items[:k]", "ret_obo": "items[k + 1:] + items[:k + 1]"},
    ),
    make_input=lambda rng, p, scale: (
        (items := _ints(rng, _size(rng, 2, 20, scale), -9, 99)),
        rng.randint(1, 2 * len(items) + 3),
    ),
    edges=lambda p: [([], 3), ([1, 2, 3, 4, 5], 2), ([1, 2, 3, 4, 5], 7), (["a", "b", "c"], 0)],
    bugs={
        "exception": _edit("    if not items:\n        return []\n", ""),
        "edge_case": _edit("    k %= len(items)\n", ""),
        "off_by_one": _edit("$ret", "$ret_obo"),
    },
    generic=frozenset(),
)

_KTH_LARGEST = Variant(
    family="lists",
    name="kth_largest",
    topic="distinct values",
    difficulty=0.3,
    entry_points=("kth_largest_distinct", "nth_biggest", "runner_up"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the $kth largest distinct value in the list `nums`, or `None` when `nums` "
        "has fewer than $k distinct values. Repeated values count once.",
        "Implement `$sig`. Ignoring duplicates, find the $kth largest number in `nums` and return it; if "
        "there are not enough different numbers, return `None`.",
        "`$sig` looks at the distinct values of the integer list `nums` and returns the $kth biggest of them. "
        "Return `None` if that value does not exist (for example for an empty list).",
    ),
    code=_code(
        """
        def $ep(nums):
            distinct = sorted(set(nums), reverse=True)
            if len(distinct) < $k:
                return None
            return distinct[$idx]
        """
    ),
    params=({"k": 2, "kth": "second", "idx": 1}, {"k": 3, "kth": "third", "idx": 2, "_bump": 0.04}),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 25, scale), -20, 20 + round(30 * scale)),),
    edges=lambda p: [([],), ([7, 7, 7],), (list(range(4, 4 + 5 * p["k"], 5)),), ([9, 9, 4, 9, 1, 4, 12],)],
    bugs={
        "edge_case": _edit("sorted(set(nums), reverse=True)", "sorted(nums, reverse=True)"),
        "exception": _edit("    if len(distinct) < $k:\n        return None\n", ""),
        "off_by_one": _edit("if len(distinct) < $k:", "if len(distinct) <= $k:"),
    },
    generic=frozenset(),
)


def _window_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = _ints(rng, _size(rng, 2, 35, scale), -20, 30)
    return nums, rng.randint(1, len(nums) + (1 if rng.random() < 0.15 else 0))


_MAX_WINDOW = Variant(
    family="lists",
    name="max_window",
    topic="sliding window",
    difficulty=0.42,
    entry_points=("max_window_sum", "best_k_run", "max_consecutive_sum"),
    args=("nums", "k"),
    statements=(
        "Write `$sig` that returns the largest sum of `k` consecutive elements of `nums`. If `k` is not "
        "positive or `nums` has fewer than `k` elements, return `None`. The numbers may be negative.",
        "Implement `$sig`: slide a window of width `k` over the integer list `nums` and return the maximum "
        "window sum (`None` when no full window fits or `k <= 0`).",
        "Given integers `nums` and a window size `k`, `$sig` returns the best total of any `k` adjacent "
        "values. Return `None` when `k < 1` or `k > len(nums)`.",
    ),
    code=_code(
        """
        def $ep(nums, k):
            if k <= 0 or len(nums) < k:
                return None
            window = sum(nums[:k])
            best = window
            for i in range(k, len(nums)):
                window += nums[i] - nums[i - k]
                best = max(best, window)
            return best
        """
    ),
    make_input=_window_input,
    edges=lambda p: [([1, 2, 3, 10], 2), ([5, 1], 3), ([4, -1, 2], 0), ([-3, -1, -2], 1)],
    bugs={
        "off_by_one": _edit("range(k, len(nums))", "range(k, len(nums) - 1)"),
        "edge_case": _edit("    if k <= 0 or len(nums) < k:\n        return None\n", ""),
        "exception": _edit("window += nums[i] - nums[i - k]", "window += nums[i + 1] - nums[i + 1 - k]"),
    },
)


# --- arithmetic ------------------------------------------------------------------------------

_DIGIT_SUM = Variant(
    family="arithmetic",
    name="digit_sum",
    topic="digits",
    difficulty=0.08,
    entry_points=("digit_sum", "sum_of_digits", "digits_total"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the sum of the digits of the integer `n` written in $base_words. The sign "
        "is ignored, so a negative number has the same digit sum as its absolute value.",
        "Implement `$sig`: express `abs(n)` in $base_words notation and add up its digits. For `n = 0` the "
        "answer is 0.",
        "`$sig` should compute the digit sum of `n` in $base_words, treating negative inputs like their "
        "absolute value.",
    ),
    code=_code(
        """
        def $ep(n):
            n = abs(n)
            total = 0
            while n > 0:
                total += n % $base
                n //= $base
            return total
        """
    ),
    params=(
        {"base": 10, "base_words": "decimal"},
        {"base": 8, "base_words": "octal (base 8)", "_bump": 0.05},
        {"base": 2, "base_words": "binary", "_bump": 0.04},
    ),
    make_input=lambda rng, p, scale: (rng.randint(-(10 ** (2 + round(5 * scale))), 10 ** (3 + round(8 * scale))),),
    edges=lambda p: [(0,), (-4071,), (987654,), (7,)],
    bugs={
        "edge_case": _edit("    n = abs(n)\n", ""),
        "infinite_loop": _edit("        n //= $base\n", ""),
        "off_by_one": _edit("while n > 0:", "while n >= $base:"),
        "exception": _edit(
            "    n = abs(n)\n    total = 0\n    while n > 0:\n        total += n % $base\n        n //= $base\n"
            "    return total\n",
            "    return sum(int(d) for d in str(n))\n",
        ),
    },
)

_COUNT_PRIMES = Variant(
    family="arithmetic",
    name="count_primes",
    topic="sieve of Eratosthenes",
    difficulty=0.26,
    entry_points=("count_primes", "prime_count", "primes_below"),
    args=("n",),
    statements=(
        "Write `$sig` that returns how many prime numbers are $range_words. Remember that 1 is not prime and "
        "that the answer is 0 when `n` is small or negative.",
        "Implement `$sig`: count the primes $range_words. Use an efficient method: `n` can be as large as "
        "20000.",
        "`$sig` counts the prime numbers $range_words (a prime has exactly two divisors, 1 and itself).",
    ),
    code=_code(
        """
        def $ep(n):
            limit = $limit
            if limit < 2:
                return 0
            sieve = [True] * limit
            sieve[0] = sieve[1] = False
            for i in range(2, int(limit ** 0.5) + 1):
                if sieve[i]:
                    for j in range(i * i, limit, i):
                        sieve[j] = False
            return sum(sieve)
        """
    ),
    params=(
        {"limit": "n", "range_words": "strictly less than `n`"},
        {"limit": "n + 1", "range_words": "less than or equal to `n`"},
    ),
    make_input=lambda rng, p, scale: (rng.randint(3, 60 + round(20000 * scale)),),
    edges=lambda p: [(0,), (1,), (2,), (10,), (100,)],
    bugs={
        "off_by_one": _edit("int(limit ** 0.5) + 1", "int(limit ** 0.5)"),
        "edge_case": _edit("sieve[0] = sieve[1] = False", "sieve[0] = False"),
        "exception": _edit("    if limit < 2:\n        return 0\n", ""),
    },
)

_LCM = Variant(
    family="arithmetic",
    name="lcm",
    topic="gcd and lcm",
    difficulty=0.3,
    entry_points=("lcm_of_list", "least_common_multiple", "lcm_all"),
    args=("nums",),
    statements=(
        "Write `$sig` that returns the least common multiple of all the positive integers in `nums`. The LCM "
        "of an empty list is 1.",
        "Implement `$sig`: find the smallest positive integer that every number in `nums` divides evenly. "
        "`nums` contains positive integers; for an empty list return 1.",
        "`$sig` computes the least common multiple of a list of positive integers (Euclid's algorithm for "
        "the greatest common divisor helps). Return 1 when the list is empty.",
    ),
    code=_code(
        """
        def $ep(nums):
            result = 1
            for x in nums:
                a, b = result, x
                while b:
                    a, b = b, a % b
                result = result * x // a
            return result
        """
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 2, 6, scale), 1, 12 + round(30 * scale)),),
    edges=lambda p: [([],), ([4, 6],), ([7],), ([2, 3, 4, 5, 6],)],
    bugs={
        "exception": _edit("    result = 1\n    for x in nums:\n", "    result = nums[0]\n    for x in nums[1:]:\n"),
        "edge_case": _edit("result = result * x // a", "result = result * x"),
    },
)

_ROMAN_CODE = _code(
    """
    def $ep(n):
        values = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                  (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        parts = []
        for value, symbol in values:
            while n >= value:
                parts.append(symbol)
                n -= value
        return $ret
    """
)
_ROMAN_VALUES = _ROMAN_CODE[_ROMAN_CODE.index("[") : _ROMAN_CODE.index("]\n") + 1]

_TO_ROMAN = Variant(
    family="arithmetic",
    name="to_roman",
    topic="number formatting",
    difficulty=0.4,
    entry_points=("to_roman", "int_to_roman", "roman_numeral"),
    args=("n",),
    statements=(
        "Write `$sig` that converts an integer `n` between 1 and 3999 into a Roman numeral written in $case "
        "letters, using the subtractive forms (IV, IX, XL, XC, CD, CM) wherever they apply.",
        "Implement `$sig`: return the standard Roman numeral for `n` (1 <= n <= 3999) as a $case string, "
        "choosing subtractive pairs where needed, so 4 is written with the symbols I and V and 1994 with "
        "M, CM, XC and IV.",
        "`$sig` turns a positive integer below 4000 into Roman numerals ($case). Use the usual symbols I, V, "
        "X, L, C, D, M and subtractive pairs such as IX for 9.",
    ),
    code=_ROMAN_CODE,
    params=(
        {"case": "upper-case", "ret": '"".join(parts)'},
        {"case": "lower-case", "ret": '"".join(parts).lower()', "_bump": 0.02},
    ),
    make_input=lambda rng, p, scale: (rng.randint(1, 50 + round(3949 * scale)),),
    edges=lambda p: [(4,), (1994,), (3999,), (9,), (40,)],
    bugs={
        "edge_case": _edit(
            _ROMAN_VALUES,
            '[(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]',
        ),
        "off_by_one": _edit("while n >= value:", "while n > value:"),
    },
)


# --- recursion -------------------------------------------------------------------------------


def _nested(rng: random.Random, depth: int, max_depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(rng.randint(1 if depth == 0 else 0, 4)):
        if depth < max_depth and rng.random() < 0.4:
            out.append(_nested(rng, depth + 1, max_depth))
        else:
            out.append(rng.randint(0, 99))
    return out


_FLATTEN = Variant(
    family="recursion",
    name="flatten",
    topic="nested lists",
    difficulty=0.25,
    entry_points=("flatten", "flatten_nested", "deep_flatten"),
    args=("items",),
    statements=(
        "Write `$sig` that takes a list whose elements are either integers or (possibly nested) lists, and "
        "returns a flat list of all the integers in left-to-right order. Empty sublists contribute nothing.",
        "Implement `$sig`: flatten an arbitrarily nested list structure `items` into a single list, keeping "
        "the original order of the values.",
        "Nested lists can hide values several levels deep. `$sig` should collect every non-list item of "
        "`items`, at any depth, into one flat list (left to right).",
    ),
    code=_code(
        """
        def $ep(items):
            flat = []
            for item in items:
                if isinstance(item, list):
                    flat.extend($ep(item))
                else:
                    flat.append(item)
            return flat
        """
    ),
    make_input=lambda rng, p, scale: (_nested(rng, 0, 1 + round(3 * scale)),),
    edges=lambda p: [([],), ([1, [2, [3, [4]]], 5],), ([[], [[]], 7],), ([[1, 2], [3, [4, 5]]],)],
    bugs={
        "edge_case": _edit("flat.extend($ep(item))", "flat.extend(item)"),
        "exception": _edit("flat.extend($ep(item))", "flat.extend($ep(items))"),
    },
)

_SUBSETS = Variant(
    family="recursion",
    name="subsets",
    topic="power set",
    difficulty=0.45,
    entry_points=("subsets", "power_set", "all_subsets"),
    args=("items",),
    statements=(
        "Write `$sig` that returns all subsets of the list `items`, whose elements are distinct integers. "
        "Each subset keeps the elements in the same relative order as in `items`, and the list of subsets "
        "is sorted by length first and then lexicographically. The empty subset is always included.",
        "Implement `$sig`: generate the power set of `items` as a list of lists. Inside a subset the elements "
        "appear in input order; order the subsets by size, breaking ties by comparing the lists "
        "lexicographically.",
        "`$sig` should list every subset of `items` (2**len(items) of them, including `[]` and `items` "
        "itself). Sort the result by `(len(subset), subset)`; each subset preserves input order.",
    ),
    code=_code(
        """
        def $ep(items):
            if not items:
                return [[]]
            rest = $ep(items[1:])
            with_first = [[items[0]] + subset for subset in rest]
            return sorted(rest + with_first, key=lambda subset: (len(subset), subset))
        """
    ),
    make_input=lambda rng, p, scale: (rng.sample(range(-5, 30), _size(rng, 1, 6, scale)),),
    edges=lambda p: [([],), ([3, 1, 2],), ([5],)],
    bugs={
        "edge_case": _edit("return [[]]", "return []"),
        "exception": _edit("    if not items:\n        return [[]]\n", ""),
        "off_by_one": _edit("$ep(items[1:])", "$ep(items[2:])"),
    },
    generic=frozenset(),
)

_HANOI = Variant(
    family="recursion",
    name="hanoi",
    topic="divide and conquer",
    difficulty=0.38,
    entry_points=("hanoi_moves", "solve_hanoi", "tower_moves"),
    args=("n",),
    statements=(
        "Tower of Hanoi: `n` disks start on peg '$src' and must move to peg '$dst', using peg '$via' as a "
        "spare, one disk at a time and never placing a larger disk on a smaller one. Write `$sig` that returns "
        "the optimal sequence of moves as a list of strings of the form `'X->Y'` (from peg, arrow, to peg).",
        "Implement `$sig` for the Tower of Hanoi puzzle with pegs named '$src' (start), '$via' (spare) and "
        "'$dst' (target). Return the moves of the shortest solution for `n` disks, each written as "
        "`'<from>-><to>'`; for `n = 0` the list is empty.",
        "`$sig` solves the Towers of Hanoi with `n` disks moved from '$src' to '$dst' via '$via'. Produce the "
        "standard minimal move sequence (2**n - 1 moves) as strings such as `'$src->$dst'`.",
    ),
    code=_code(
        """
        def $ep(n):
            moves = []

            def move(count, source, target, spare):
                if count == 0:
                    return
                move(count - 1, source, spare, target)
                moves.append(source + "->" + target)
                move(count - 1, spare, target, source)

            move(n, $src_r, $dst_r, $via_r)
            return moves
        """
    ),
    params=(
        {"src": "A", "via": "B", "dst": "C"},
        {"src": "L", "via": "M", "dst": "R"},
        {"src": "1", "via": "2", "dst": "3"},
    ),
    make_input=lambda rng, p, scale: (rng.randint(2, 5 + round(3 * scale)),),
    edges=lambda p: [(0,), (1,), (3,)],
    bugs={
        "exception": _edit(
            "        if count == 0:\n            return\n",
            '        if count == 1:\n            moves.append(source + "->" + target)\n            return\n',
        ),
        "edge_case": _edit("move(count - 1, source, spare, target)", "move(count - 1, source, target, spare)"),
        "off_by_one": _edit("move(n, ", "move(n - 1, "),
    },
    generic=frozenset(),
)


# --- dynamic programming ---------------------------------------------------------------------

_CLIMB_STAIRS = Variant(
    family="dynamic_programming",
    name="climb_stairs",
    topic="counting paths",
    difficulty=0.3,
    entry_points=("count_ways", "climb_stairs", "stair_paths"),
    args=("n",),
    statements=(
        "You are climbing a staircase with `n` steps and each move climbs $steps_words. Write `$sig` that "
        "returns the number of distinct sequences of moves that reach exactly the top. There is one way to "
        "climb zero steps (do nothing).",
        "Implement `$sig`: count the ways to reach step `n` from the ground if every move advances "
        "$steps_words. Different orders of the same moves count as different ways. For `n = 0` return 1.",
        "`$sig` returns how many different ways there are to climb `n` stairs when a single stride covers "
        "$steps_words. Overshooting the top is not allowed.",
    ),
    code=_code(
        """
        def $ep(n):
            ways = [0] * (n + 1)
            ways[0] = 1
            for i in range(1, n + 1):
                for step in $steps_r:
                    if step <= i:
                        ways[i] += ways[i - step]
            return ways[n]
        """
    ),
    params=(
        {"steps": (1, 2), "steps_words": "1 or 2 steps"},
        {"steps": (1, 2, 3), "steps_words": "1, 2 or 3 steps", "_bump": 0.03},
        {"steps": (1, 3), "steps_words": "1 or 3 steps", "_bump": 0.02},
        {"steps": (2, 3), "steps_words": "2 or 3 steps", "_bump": 0.05},
    ),
    make_input=lambda rng, p, scale: (_size(rng, 2, 40, scale),),
    edges=lambda p: [(0,), (1,), (5,), (10,)],
    bugs={
        "exception": _edit("[0] * (n + 1)", "[0] * n"),
        "edge_case": _edit("if step <= i:", "if step < i:"),
    },
)


def _coins_input(rng: random.Random, p: Params, scale: float) -> Args:
    coins = sorted(rng.sample(range(1, 13 + round(20 * scale)), _size(rng, 2, 4, scale)))
    return coins, rng.randint(0, 20 + round(80 * scale))


_MIN_COINS = Variant(
    family="dynamic_programming",
    name="min_coins",
    topic="change making",
    difficulty=0.5,
    entry_points=("min_coins", "fewest_coins", "coin_change"),
    args=("coins", "amount"),
    statements=(
        "Write `$sig` that returns the minimum number of coins needed to make exactly `amount` using the "
        "denominations in `coins` (each available in unlimited supply). If the amount cannot be formed, "
        "return `$missing_words`. Making 0 needs 0 coins.",
        "Implement `$sig`: given coin values `coins` and a target `amount`, find the fewest coins that add "
        "up to `amount`, or return `$missing_words` when no combination works. Taking the largest coin "
        "first is not always optimal.",
        "`$sig` solves the change-making problem: the smallest count of coins from `coins` (any number of "
        "each) summing to `amount`; `$missing_words` if that is impossible.",
    ),
    code=_code(
        """
        def $ep(coins, amount):
            best = [0] + [None] * amount
            for total in range(1, amount + 1):
                for coin in coins:
                    if coin <= total and best[total - coin] is not None:
                        candidate = best[total - coin] + 1
                        if best[total] is None or candidate < best[total]:
                            best[total] = candidate
            return $missing_r if best[amount] is None else best[amount]
        """
    ),
    params=({"missing": -1, "missing_words": "-1"}, {"missing": None, "missing_words": "None"}),
    make_input=_coins_input,
    edges=lambda p: [([1, 3, 4], 6), ([2], 3), ([5, 10], 0), ([7, 3], 20)],
    bugs={
        "edge_case": _edit(
            "    best = [0] + [None] * amount\n"
            "    for total in range(1, amount + 1):\n"
            "        for coin in coins:\n"
            "            if coin <= total and best[total - coin] is not None:\n"
            "                candidate = best[total - coin] + 1\n"
            "                if best[total] is None or candidate < best[total]:\n"
            "                    best[total] = candidate\n"
            "    return $missing_r if best[amount] is None else best[amount]\n",
            "    count = 0\n"
            "    for coin in sorted(coins, reverse=True):\n"
            "        count += amount // coin\n"
            "        amount %= coin\n"
            "    return count if amount == 0 else $missing_r\n",
        ),
        "exception": _edit("if coin <= total and best[total - coin] is not None:", "if coin <= total:"),
    },
)


def _letters(rng: random.Random, alphabet: str, lo: int, hi: int, scale: float) -> str:
    return "".join(rng.choice(alphabet) for _ in range(_size(rng, lo, hi, scale)))


_LCS = Variant(
    family="dynamic_programming",
    name="lcs",
    topic="longest common subsequence",
    difficulty=0.6,
    entry_points=("lcs_length", "longest_common_subsequence", "common_subsequence_len"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the length of the longest common subsequence of the strings `a` and `b`. "
        "A subsequence keeps the order of characters but need not be contiguous.",
        "Implement `$sig`: find how long the longest sequence of characters is that appears, in order (not "
        "necessarily adjacent), in both `a` and `b`.",
        "`$sig` computes the LCS length of two strings; for example the longest common subsequence of "
        "`'ABCBDAB'` and `'BDCABA'` has length 4. Either string may be empty.",
    ),
    code=_code(
        """
        def $ep(a, b):
            rows, cols = len(a), len(b)
            table = [[0] * (cols + 1) for _ in range(rows + 1)]
            for i in range(1, rows + 1):
                for j in range(1, cols + 1):
                    if a[i - 1] == b[j - 1]:
                        table[i][j] = table[i - 1][j - 1] + 1
                    else:
                        table[i][j] = max(table[i - 1][j], table[i][j - 1])
            return table[rows][cols]
        """
    ),
    make_input=lambda rng, p, scale: (_letters(rng, "ACGT", 0, 25, scale), _letters(rng, "ACGT", 1, 25, scale)),
    edges=lambda p: [("", "abc"), ("abcde", "ace"), ("xyz", "xyzw"), ("AGGTAB", "GXTXAYB")],
    bugs={
        "edge_case": _edit("max(table[i - 1][j], table[i][j - 1])", "table[i - 1][j]"),
        "exception": _edit("[[0] * (cols + 1) for _ in range(rows + 1)]", "[[0] * cols for _ in range(rows + 1)]"),
    },
)

_HOUSE_ROBBER = Variant(
    family="dynamic_programming",
    name="non_adjacent_sum",
    topic="take or skip",
    difficulty=0.45,
    entry_points=("max_non_adjacent_sum", "rob_houses", "best_loot"),
    args=("values",),
    statements=(
        "A row of houses holds the amounts of money in `values` (non-negative integers). Write `$sig` that "
        "returns the largest total you can collect without ever taking from two adjacent houses.",
        "Implement `$sig`: choose a subset of positions of `values` with no two consecutive positions and "
        "return the maximum possible sum of the chosen values (0 for an empty list).",
        "`$sig` returns the maximum sum of non-adjacent elements of `values`. All values are non-negative; "
        "choosing nothing gives 0.",
    ),
    code=_code(
        """
        def $ep(values):
            take, skip = 0, 0
            for v in values:
                take, skip = skip + v, max(take, skip)
            return max(take, skip)
        """
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 3, 35, scale), 0, 20 + round(80 * scale)),),
    edges=lambda p: [([],), ([5, 1, 1, 5],), ([2, 1, 1, 2],), ([7],)],
    bugs={"edge_case": _edit("take, skip = skip + v, max(take, skip)", "take, skip = skip + v, take")},
)

_EDIT_DISTANCE = Variant(
    family="dynamic_programming",
    name="edit_distance",
    topic="string alignment",
    difficulty=0.72,
    entry_points=("edit_distance", "levenshtein", "min_edits"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the edit distance between strings `a` and `b`: the minimum total cost of "
        "insertions, deletions and replacements of single characters that turn `a` into `b`. $cost_note",
        "Implement `$sig`. You may insert a character, delete a character or replace one character by "
        "another. $cost_note Return the cheapest total cost of transforming `a` into `b`.",
        "`$sig` computes a Levenshtein-style distance between `a` and `b`. $cost_note Either string may be "
        "empty.",
    ),
    code=_code(
        """
        def $ep(a, b):
            previous = list(range(len(b) + 1))
            for i in range(1, len(a) + 1):
                current = [i] + [0] * len(b)
                for j in range(1, len(b) + 1):
                    if a[i - 1] == b[j - 1]:
                        current[j] = previous[j - 1]
                    else:
                        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + $sub)
                previous = current
            return previous[len(b)]
        """
    ),
    params=(
        {"sub": 1, "cost_note": "Each of the three operations costs 1."},
        {"sub": 2, "cost_note": "Insertions and deletions cost 1, but a replacement costs 2.", "_bump": 0.06},
    ),
    make_input=lambda rng, p, scale: (
        _letters(rng, "abcdeh", 0, 18, scale),
        _letters(rng, "abcdeh", 1, 18, scale),
    ),
    edges=lambda p: [("", "abc"), ("kitten", "sitting"), ("abc", "abc"), ("flaw", "lawn"), ("abc", "")],
    bugs={
        "edge_case": _edit("previous = list(range(len(b) + 1))", "previous = [0] * (len(b) + 1)"),
        "exception": _edit("current = [i] + [0] * len(b)", "current = [i] + [0] * (len(b) - 1)"),
    },
)


# --- parsing ---------------------------------------------------------------------------------


def _kv_input(rng: random.Random, p: Params, scale: float) -> Args:
    sep = p["sep"]
    keys = rng.sample(_WORDS, _size(rng, 1, 9, scale))
    if len(keys) > 2 and rng.random() < 0.3:
        keys.append(keys[0])
    pieces = []
    for key in keys:
        value = str(rng.randint(-50, 500))
        pad = rng.choice(("", "", " ", "  "))
        pieces.append(f"{pad}{key}{rng.choice(('', ' '))}={rng.choice(('', ' '))}{value}{pad}")
        if rng.random() < 0.15:
            pieces.append("")
    return (sep.join(pieces),)


_KEY_VALUES = Variant(
    family="parsing",
    name="key_values",
    topic="splitting strings",
    difficulty=0.22,
    entry_points=("parse_pairs", "parse_settings", "parse_kv"),
    args=("text",),
    statements=(
        "Write `$sig` that parses a string of `key=value` pairs separated by `'$sep'` into a dictionary "
        "mapping each key to its integer value. Whitespace around keys and values is ignored, empty segments "
        "are skipped, and when a key repeats the last value wins.",
        "Implement `$sig`: `text` looks like `'a=1$sep b = -2'`. Split it on `'$sep'`, ignore blank pieces, "
        "strip spaces and return a dict from key (string) to value (int); a repeated key keeps its last value.",
        "`$sig` turns a configuration string such as `'width=10$sep height=4'` into a dict of integers keyed "
        "by name. Pairs are separated by `'$sep'` and may carry extra spaces, a later duplicate key overrides "
        "an earlier one, and empty pieces are ignored.",
    ),
    code=_code(
        """
        def $ep(text):
            result = {}
            for part in text.split($sep_r):
                part = part.strip()
                if not part:
                    continue
                key, value = part.split("=")
                result[key.strip()] = int(value)
            return result
        """
    ),
    params=({"sep": ";"}, {"sep": ","}, {"sep": "&"}, {"sep": "|"}),
    make_input=_kv_input,
    edges=lambda p: [
        ("",),
        (f"a=1{p['sep']}b=2",),
        (f" x = 5 {p['sep']}{p['sep']} y=-3{p['sep']}",),
        (f"k=1{p['sep']}k=2",),
    ],
    bugs={
        "off_by_one": _edit("text.split($sep_r)", "text.split($sep_r)[1:]"),
        "exception": _edit("        if not part:\n            continue\n", ""),
        "edge_case": _edit("result[key.strip()]", "result[key]"),
    },
)


def _duration_input(rng: random.Random, p: Params, scale: float) -> Args:
    units = list(p["factors"])
    chosen = rng.sample(units, _size(rng, 1, len(units), scale))
    text = "".join(f"{rng.randint(0, 99)}{unit}" for unit in chosen)
    if rng.random() < 0.3:
        text += str(rng.randint(1, 59))
    return (text,)


_DURATION = Variant(
    family="parsing",
    name="duration",
    topic="tokenizing",
    difficulty=0.36,
    entry_points=("parse_duration", "duration_seconds", "to_seconds"),
    args=("text",),
    statements=(
        "Write `$sig` that converts a compact duration such as `'1h30m'` into a number of seconds. The string "
        "is a sequence of integers, each followed by a unit letter: $unit_words. A trailing number without a "
        "unit counts as seconds, and the empty string means 0.",
        "Implement `$sig`: `text` is made of number-and-unit chunks like `'2h5m10s'`, where the units are "
        "$unit_words. Units may appear in any order and more than once (their amounts add up). A number at "
        "the very end with no unit is a count of seconds. Return the total duration in seconds.",
        "`$sig` parses durations written like `'45m'` or `'3h0m20s'` and returns the total in seconds. "
        "Recognised units: $unit_words. A final bare number is seconds; `''` is 0 seconds.",
    ),
    code=_code(
        """
        def $ep(text):
            factors = $factors_r
            total = 0
            number = ""
            for ch in text:
                if ch.isdigit():
                    number += ch
                else:
                    total += int(number) * factors[ch]
                    number = ""
            if number:
                total += int(number)
            return total
        """
    ),
    params=(
        {"factors": {"h": 3600, "m": 60, "s": 1}, "unit_words": "`h` (hours), `m` (minutes) and `s` (seconds)"},
        {
            "factors": {"d": 86400, "h": 3600, "m": 60, "s": 1},
            "unit_words": "`d` (days), `h` (hours), `m` (minutes) and `s` (seconds)",
            "_bump": 0.03,
        },
    ),
    make_input=_duration_input,
    edges=lambda p: [("",), ("1h30m",), ("90",), ("2m5",), ("10s10s",)],
    bugs={"edge_case": _edit("    if number:\n        total += int(number)\n", "")},
)


def _expression(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        atom = str(rng.randint(0, 99 if rng.random() < 0.5 else 9))
    else:
        parts = [_expression(rng, depth - 1) for _ in range(rng.randint(2, 3))]
        inner = parts[0]
        for part in parts[1:]:
            inner += rng.choice((" + ", " - ", " * ", "+", "-", "*")) + part
        atom = f"({inner})" if rng.random() < 0.5 else inner
    if rng.random() < 0.1:
        atom = "-" + (atom if atom.isdigit() or (atom.startswith("(") and atom.endswith(")")) else f"({atom})")
    return atom


_EXPRESSION = Variant(
    family="parsing",
    name="expression",
    topic="recursive descent",
    difficulty=0.66,
    entry_points=("evaluate", "eval_expression", "calculate"),
    args=("expr",),
    statements=(
        "Write `$sig` that evaluates an arithmetic expression given as a string. It contains non-negative "
        "integer literals, the binary operators `+`, `-` and `*`, unary minus, parentheses and spaces. `*` "
        "binds tighter than `+` and `-`, operators of equal precedence associate to the left, and the result "
        "is an integer. Do not use `eval`.",
        "Implement `$sig`: compute the value of `expr`, an integer expression built from numbers, `+`, `-`, "
        "`*`, parentheses and optional spaces (a `-` may also negate the value that follows it). Standard "
        "precedence rules apply.",
        "`$sig` is a tiny calculator: parse `expr` (for example `'2 * (3 + 4) - 5'`) and return its integer "
        "value, honouring parentheses, unary minus and the usual precedence of `*` over `+` and `-`.",
    ),
    code=_code(
        """
        def $ep(expr):
            tokens = []
            i = 0
            while i < len(expr):
                ch = expr[i]
                if ch.isdigit():
                    j = i
                    while j < len(expr) and expr[j].isdigit():
                        j += 1
                    tokens.append(int(expr[i:j]))
                    i = j
                else:
                    if not ch.isspace():
                        tokens.append(ch)
                    i += 1
            pos = 0

            def peek():
                return tokens[pos] if pos < len(tokens) else None

            def parse_sum():
                nonlocal pos
                value = parse_product()
                while peek() in ("+", "-"):
                    op = tokens[pos]
                    pos += 1
                    rhs = parse_product()
                    value = value + rhs if op == "+" else value - rhs
                return value

            def parse_product():
                nonlocal pos
                value = parse_atom()
                while peek() == "*":
                    pos += 1
                    value *= parse_atom()
                return value

            def parse_atom():
                nonlocal pos
                token = tokens[pos]
                pos += 1
                if token == "(":
                    value = parse_sum()
                    pos += 1
                    return value
                if token == "-":
                    return -parse_atom()
                return token

            return parse_sum()
        """
    ),
    make_input=lambda rng, p, scale: (_expression(rng, 1 + round(2 * scale)),),
    edges=lambda p: [("42",), ("2 + 3 * 4",), ("(1 + 2) * 3",), ("10 - 4 - 3",), ("-3 + 5",), ("2 * -(3 + 1)",)],
    bugs={
        "edge_case": _edit(
            "            j = i\n            while j < len(expr) and expr[j].isdigit():\n                j += 1\n",
            "            j = i + 1\n",
        ),
        "exception": _edit("return tokens[pos] if pos < len(tokens) else None", "return tokens[pos]"),
        "infinite_loop": _edit("                j += 1\n", "                i += 1\n"),
        "logic": _edit("            pos += 1\n            return value\n", "            return value\n"),
    },
)


def _regex_input(rng: random.Random, p: Params, scale: float) -> Args:
    any_char = p["any"]
    text = "".join(rng.choice("ab") for _ in range(rng.randint(0, 4 + round(8 * scale))))
    if rng.random() < 0.4 and text:
        pattern = ""
        i = 0
        while i < len(text):
            ch = text[i]
            run = 1
            while i + run < len(text) and text[i + run] == ch:
                run += 1
            pattern += rng.choice((ch * run, ch + "*", any_char + "*", ch * (run - 1) + any_char))
            i += run
    else:
        tokens = ("a", "b", any_char, "a*", "b*", any_char + "*")
        pattern = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 2 + round(4 * scale))))
    return text, pattern


_REGEX = Variant(
    family="parsing",
    name="regex_match",
    topic="pattern matching",
    difficulty=0.84,
    entry_points=("is_match", "regex_match", "matches_pattern"),
    args=("text", "pattern"),
    statements=(
        "Write `$sig` that returns whether the whole string `text` matches `pattern`, a simplified regular "
        "expression in which `'$any'` matches any single character and `'*'` matches zero or more copies of "
        "the element right before it. Every other character matches itself, and the match must cover all of "
        "`text`, not just a part of it.",
        "Implement `$sig`: decide if `pattern` matches the entire `text`. In the pattern, `$any` stands for "
        "exactly one arbitrary character, and a `*` after a character (or after `$any`) lets that element "
        "repeat any number of times, including zero. No other metacharacters exist.",
        "`$sig` is a tiny regular-expression matcher supporting literal characters, the wildcard `'$any'` (one "
        "character) and the postfix `'*'` (zero or more of the preceding element). Return `True` only if the "
        "pattern matches all of `text`; patterns never start with `*`.",
    ),
    code=_code(
        """
        def $ep(text, pattern):
            memo = {}

            def match(i, j):
                if (i, j) in memo:
                    return memo[(i, j)]
                if j == len(pattern):
                    result = i == len(text)
                else:
                    first = i < len(text) and pattern[j] in (text[i], $any_r)
                    if j + 1 < len(pattern) and pattern[j + 1] == "*":
                        result = match(i, j + 2) or (first and match(i + 1, j))
                    else:
                        result = first and match(i + 1, j + 1)
                memo[(i, j)] = result
                return result

            return match(0, 0)
        """
    ),
    params=({"any": "."}, {"any": "?", "_bump": 0.01}),
    make_input=_regex_input,
    edges=lambda p: [
        ("aa", "a"),
        ("aa", "a*"),
        ("ab", p["any"] + "*"),
        ("aab", "c*a*b"),
        ("", "a*b*"),
        ("mississippi", "mis*is*p*" + p["any"]),
    ],
    bugs={
        "edge_case": _edit("result = i == len(text)", "result = True"),
        "off_by_one": _edit("if j + 1 < len(pattern) and", "if j + 1 < len(pattern) - 1 and"),
        "exception": _edit("first = i < len(text) and pattern[j]", "first = pattern[j]"),
        "logic": _edit("(first and match(i + 1, j))", "(first and match(i + 1, j + 2))"),
    },
)


# --- dictionaries ----------------------------------------------------------------------------

_WORD_FREQ = Variant(
    family="dicts",
    name="word_frequencies",
    topic="counting",
    difficulty=0.14,
    entry_points=("word_counts", "word_frequencies", "count_words"),
    args=("text",),
    statements=(
        "Write `$sig` that returns a dictionary mapping each word of `text` to the number of times it occurs. "
        "$punct_note Keys are lower-case.",
        "Implement `$sig`: build a word-count table for `text`. $punct_note The result maps each lower-cased "
        "word to its count.",
        "`$sig` counts word occurrences in `text` and returns them as a dict keyed by the lower-cased word. "
        "$punct_note An empty text gives an empty dict.",
    ),
    code=_code(
        """
        def $ep(text):
            counts = {}
            for word in text.split():
                word = word.lower()$strip
                if word:
                    counts[word] = counts.get(word, 0) + 1
            return counts
        """
    ),
    params=(
        {"strip": "", "punct_note": "Words are separated by whitespace and compared case-insensitively."},
        {
            "strip": '.strip(".,!?;:")',
            "punct_note": "Words are separated by whitespace and compared case-insensitively; punctuation "
            "(`.,!?;:`) at either end of a word is removed first, and a word that becomes empty is skipped.",
            "_bump": 0.05,
        },
    ),
    make_input=lambda rng, p, scale: (_sentence(rng, _size(rng, 2, 25, scale)),),
    edges=lambda p: [("",), ("The cat and the hat",), ("Go, go, GO!",), ("a b a",)],
    bugs={
        "edge_case": _edit("word = word.lower()", "word = word"),
        "exception": _edit("counts.get(word, 0) + 1", "counts[word] + 1"),
        "off_by_one": _edit("text.split()", "text.split()[1:]"),
    },
)


def _anagram_input(rng: random.Random, p: Params, scale: float) -> Args:
    words = []
    for base in rng.sample(_WORDS, _size(rng, 1, 5, scale)):
        for _ in range(rng.randint(1, 3)):
            letters = list(base)
            rng.shuffle(letters)
            word = "".join(letters)
            words.append(word.capitalize() if p["key"] != "word" and rng.random() < 0.3 else word)
    rng.shuffle(words)
    if words and rng.random() < 0.3:
        words.append(rng.choice(words))
    return (words,)


_ANAGRAMS = Variant(
    family="dicts",
    name="anagram_groups",
    topic="grouping by key",
    difficulty=0.35,
    entry_points=("group_anagrams", "anagram_classes", "bucket_anagrams"),
    args=("words",),
    statements=(
        "Write `$sig` that groups the strings in `words` into anagram classes (words made of exactly the same "
        "letters). Return a list of groups; each group lists its words in their original order, and the groups "
        "are ordered by the position of their first word. Duplicates are kept. $case_note",
        "Implement `$sig`: partition `words` so that two words share a group exactly when one is a "
        "rearrangement of the other's letters. $case_note Keep words in input order inside each group, keep "
        "repeated words, and order the groups by first appearance.",
        "`$sig` collects anagrams together: return a list of lists where every inner list holds the words of "
        "`words` that are anagrams of one another, in input order (repeats included); groups appear in the "
        "order their first member appears. $case_note",
    ),
    code=_code(
        """
        def $ep(words):
            groups = {}
            for word in words:
                key = "".join(sorted($key))
                groups.setdefault(key, []).append(word)
            return list(groups.values())
        """
    ),
    params=(
        {"key": "word", "case_note": "Letters are compared exactly, so upper- and lower-case differ."},
        {
            "key": "word.lower()",
            "case_note": "Letter case is ignored when deciding whether two words are anagrams (the words "
            "themselves are returned unchanged).",
            "_bump": 0.03,
        },
    ),
    make_input=_anagram_input,
    edges=lambda p: [
        ([],),
        (["eat", "tea", "tan", "ate", "nat", "bat"],),
        (["abc", "cab", "abc"],),
        (["Listen", "Silent", "enlist"],),
    ],
    bugs={
        "edge_case": _edit(
            "        groups.setdefault(key, []).append(word)\n",
            "        if word not in groups.get(key, []):\n            groups.setdefault(key, []).append(word)\n",
        ),
        "exception": _edit("groups.setdefault(key, []).append(word)", "groups[key].append(word)"),
    },
)

_GROUPS = ("red", "blue", "green", "amber", "teal", "violet")

_INVERT = Variant(
    family="dicts",
    name="invert",
    topic="inverting a mapping",
    difficulty=0.24,
    entry_points=("invert_mapping", "invert_dict", "group_keys_by_value"),
    args=("mapping",),
    statements=(
        "Write `$sig` that inverts the dictionary `mapping`, whose keys and values are strings: the result maps "
        "every value that occurs in `mapping` to the alphabetically sorted list of keys that had that value.",
        "Implement `$sig`: several keys of the string-to-string dictionary `mapping` may share a value. Return a "
        "new dict whose keys are the original values and whose values are sorted lists of the original keys.",
        "`$sig` turns a `{name: group}` dictionary around into `{group: [names...]}`, with each list of names "
        "sorted alphabetically. An empty mapping gives an empty dict.",
    ),
    code=_code(
        """
        def $ep(mapping):
            inverted = {}
            for key, value in mapping.items():
                inverted.setdefault(value, []).append(key)
            for keys in inverted.values():
                keys.sort()
            return inverted
        """
    ),
    make_input=lambda rng, p, scale: (
        {w: rng.choice(_GROUPS[: 2 + round(4 * scale)]) for w in rng.sample(_WORDS, _size(rng, 2, 12, scale))},
    ),
    edges=lambda p: [({},), ({"bob": "red", "ann": "red", "cy": "blue"},), ({"x": "solo"},)],
    bugs={
        "edge_case": _edit("inverted.setdefault(value, []).append(key)", "inverted[value] = [key]"),
        "exception": _edit("inverted.setdefault(value, []).append(key)", "inverted[value].append(key)"),
        "logic": _edit("    for keys in inverted.values():\n        keys.sort()\n", ""),
    },
)


def _top_k_input(rng: random.Random, p: Params, scale: float) -> Args:
    return _ints(rng, _size(rng, 3, 40, scale), 0, 5 + round(10 * scale)), rng.randint(1, 4)


_TOP_K = Variant(
    family="dicts",
    name="top_k",
    topic="frequency ranking",
    difficulty=0.48,
    entry_points=("top_k_frequent", "most_common_values", "k_most_frequent"),
    args=("nums", "k"),
    statements=(
        "Write `$sig` that returns the `k` most frequent values in `nums`, most frequent first. Values with "
        "equal frequency are ordered from smallest to largest. If there are fewer than `k` distinct values, "
        "return all of them.",
        "Implement `$sig`: count how often each number appears in `nums` and return a list of the `k` numbers "
        "with the highest counts, sorted by decreasing count and, for ties, increasing value.",
        "`$sig` finds the top-`k` most common elements of `nums` (ties broken by the smaller value first) and "
        "returns them in order of decreasing frequency; with fewer than `k` distinct values it returns them all.",
    ),
    code=_code(
        """
        def $ep(nums, k):
            counts = {}
            for x in nums:
                counts[x] = counts.get(x, 0) + 1
            ranked = sorted(counts, key=lambda x: (-counts[x], x))
            return ranked[:k]
        """
    ),
    make_input=_top_k_input,
    edges=lambda p: [([3, 3, 1, 1, 2], 2), ([4, 4, 4, 6], 1), ([], 3), ([5, 7, 5, 7, 9], 5)],
    bugs={
        "edge_case": _edit("key=lambda x: (-counts[x], x)", "key=lambda x: -counts[x]"),
        "off_by_one": _edit("ranked[:k]", "ranked[:k - 1]"),
        "exception": _edit("counts.get(x, 0) + 1", "counts[x] + 1"),
    },
)


# --- sorting and searching -------------------------------------------------------------------


def _search_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = sorted(rng.sample(range(-50, 60 + round(200 * scale)), _size(rng, 1, 45, scale)))
    target = rng.choice(nums) if rng.random() < 0.6 else rng.randint(-60, 70 + round(200 * scale))
    return nums, target


_BINARY_SEARCH = Variant(
    family="sorting_searching",
    name="binary_search",
    topic="binary search",
    difficulty=0.22,
    entry_points=("binary_search", "find_index", "search_sorted"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns the index of `target` in the sorted list `nums` (strictly increasing "
        "integers), or `$missing_words` if it is absent. Your solution should run in logarithmic time.",
        "Implement binary search: `$sig` looks for `target` in the ascending list `nums` of distinct integers "
        "and returns its position, or `$missing_words` when it does not occur.",
        "`$sig` should locate `target` in `nums`, which is sorted in increasing order without duplicates, by "
        "repeatedly halving the search range. Return the index, or `$missing_words` if `target` is not present.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            lo, hi = 0, len(nums) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if nums[mid] == target:
                    return mid
                if nums[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid - 1
            return $missing_r
        """
    ),
    params=({"missing": -1, "missing_words": "-1"}, {"missing": None, "missing_words": "None"}),
    make_input=_search_input,
    edges=lambda p: [([], 3), ([5], 5), ([1, 3], 3), ([1, 2, 3], 10), ([2, 4, 6, 8], 1)],
    bugs={
        "edge_case": _edit("    return $missing_r", "    return lo"),
        "infinite_loop": _edit("lo = mid + 1", "lo = mid"),
        "off_by_one": _edit("while lo <= hi:", "while lo < hi:"),
        "exception": _edit("lo, hi = 0, len(nums) - 1", "lo, hi = 0, len(nums)"),
    },
)


def _bisect_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = sorted(_ints(rng, _size(rng, 1, 45, scale), -20, 20 + round(60 * scale)))
    target = rng.choice(nums) if rng.random() < 0.6 else rng.randint(-25, 25 + round(60 * scale))
    return nums, target


_INSERTION_POINT = Variant(
    family="sorting_searching",
    name="insertion_point",
    topic="lower bound",
    difficulty=0.34,
    entry_points=("insertion_index", "lower_bound", "bisect_position"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns the index at which `target` should be inserted into the sorted list `nums` "
        "to keep it sorted. If `target` is already present (possibly several times), return the index of its "
        "leftmost occurrence.",
        "Implement `$sig` to behave like `bisect.bisect_left`: return the number of elements of the "
        "non-decreasing list `nums` that are strictly smaller than `target`, found in O(log n) time.",
        "`$sig` finds the leftmost position where `target` could be placed in the ascending list `nums` "
        "(duplicates allowed) without breaking the order.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            lo, hi = 0, len(nums)
            while lo < hi:
                mid = (lo + hi) // 2
                if nums[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        """
    ),
    make_input=_bisect_input,
    edges=lambda p: [([], 4), ([1, 2, 2, 2, 3], 2), ([1, 3], 3), ([1, 2, 3], 10), ([5, 6], 0)],
    bugs={
        "edge_case": _edit("if nums[mid] < target:", "if nums[mid] <= target:"),
        "off_by_one": _edit("lo, hi = 0, len(nums)\n", "lo, hi = 0, len(nums) - 1\n"),
        "infinite_loop": _edit("lo = mid + 1", "lo = mid"),
        "exception": _edit("lo, hi = 0, len(nums)\n", "lo, hi = 0, len(nums) + 1\n"),
    },
)


def _two_sum_input(rng: random.Random, p: Params, scale: float) -> Args:
    nums = _ints(rng, _size(rng, 2, 35, scale), -20, 40)
    target = sum(rng.sample(nums, 2)) if rng.random() < 0.7 else rng.randint(-40, 80)
    return nums, target


_TWO_SUM = Variant(
    family="sorting_searching",
    name="two_sum",
    topic="hash lookups",
    difficulty=0.36,
    entry_points=("two_sum", "pair_with_sum", "find_pair"),
    args=("nums", "target"),
    statements=(
        "Write `$sig` that returns `[i, j]` with `i < j` and `nums[i] + nums[j] == target`, or `None` if no "
        "such pair exists. When several pairs work, choose the one with the smallest `j`, and for that `j` the "
        "smallest `i`.",
        "Implement `$sig`: find two different positions in `nums` whose values add up to `target` and return "
        "them as a list `[i, j]` (i < j). Prefer the pair that is completed earliest (smallest `j`), then the "
        "smallest `i`. Return `None` when there is none.",
        "`$sig` scans `nums` once and reports the first pair of indices `[i, j]`, `i < j`, whose elements sum "
        "to `target`, where first means smallest `j`, ties broken by smallest `i`. If no pair exists return "
        "`None`.",
    ),
    code=_code(
        """
        def $ep(nums, target):
            seen = {}
            for j, x in enumerate(nums):
                if target - x in seen:
                    return [seen[target - x], j]
                if x not in seen:
                    seen[x] = j
            return None
        """
    ),
    make_input=_two_sum_input,
    edges=lambda p: [([2, 7, 11, 15], 9), ([3, 4], 6), ([2, 2, 5], 7), ([], 1), ([1, 5, 5, 1], 10)],
    bugs={
        "edge_case": _edit("        if x not in seen:\n            seen[x] = j\n", "        seen[x] = j\n"),
        "off_by_one": _edit(
            "        if target - x in seen:\n            return [seen[target - x], j]\n"
            "        if x not in seen:\n            seen[x] = j\n",
            "        if x not in seen:\n            seen[x] = j\n"
            "        if target - x in seen:\n            return [seen[target - x], j]\n",
        ),
    },
)

_INVERSIONS = Variant(
    family="sorting_searching",
    name="inversions",
    topic="merge sort",
    difficulty=0.6,
    entry_points=("count_inversions", "inversion_count", "disorder_pairs"),
    args=("nums",),
    statements=(
        "Write `$sig` that counts the pairs of positions `i < j` in `nums` with $rel. The list can hold a few "
        "thousand numbers, so an O(n log n) method such as a modified merge sort is expected.",
        "Implement `$sig`: return the number of index pairs `(i, j)` where `i < j` and $rel. Aim for better "
        "than quadratic time.",
        "`$sig` should return how many pairs `i < j` of the list `nums` satisfy $rel (0 for an empty or "
        "one-element list).",
    ),
    code=_code(
        """
        def $ep(nums):
            def sort_count(items):
                if len(items) <= 1:
                    return items, 0
                mid = len(items) // 2
                left, a = sort_count(items[:mid])
                right, b = sort_count(items[mid:])
                merged = []
                count = a + b
                i = j = 0
                while i < len(left) and j < len(right):
                    if left[i] $cmp right[j]:
                        merged.append(left[i])
                        i += 1
                    else:
                        merged.append(right[j])
                        j += 1
                        count += len(left) - i
                merged.extend(left[i:])
                merged.extend(right[j:])
                return merged, count

            return sort_count(list(nums))[1]
        """
    ),
    params=(
        {"cmp": "<=", "cmp_bug": "<", "rel": "`nums[i] > nums[j]`"},
        {"cmp": "<", "cmp_bug": "<=", "rel": "`nums[i] >= nums[j]`", "_bump": 0.03},
    ),
    make_input=lambda rng, p, scale: (_ints(rng, _size(rng, 2, 500, scale), 0, 10 + round(100 * scale)),),
    edges=lambda p: [([],), ([2, 2, 1],), ([3, 1, 2],), ([1, 2, 3, 4],), ([5, 4, 3, 2, 1],)],
    bugs={
        "edge_case": _edit("left[i] $cmp right[j]", "left[i] $cmp_bug right[j]"),
        "off_by_one": _edit("count += len(left) - i", "count += len(left) - i - 1"),
        "exception": _edit("        if len(items) <= 1:", "        if len(items) == 1:"),
    },
)


# --- bit manipulation ------------------------------------------------------------------------

_POPCOUNT = Variant(
    family="bits",
    name="popcount",
    topic="counting bits",
    difficulty=0.12,
    entry_points=("count_set_bits", "popcount", "hamming_weight"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the number of 1 bits in the binary representation of the non-negative "
        "integer `n`.",
        "Implement `$sig`: count how many bits are set when `n` (n >= 0) is written in base 2; 13 is `0b1101`, "
        "which has three set bits.",
        "`$sig` computes the population count (Hamming weight) of the non-negative integer `n`, that is the "
        "number of ones in its binary form.",
    ),
    code=_code(
        """
        def $ep(n):
            count = 0
            while n:
                count += n & 1
                n >>= 1
            return count
        """
    ),
    make_input=lambda rng, p, scale: (rng.randint(0, 2 ** (8 + round(40 * scale))),),
    edges=lambda p: [(0,), (1,), (255,), (1024,)],
    bugs={
        "infinite_loop": _edit("        n >>= 1\n", ""),
        "off_by_one": _edit("while n:", "while n > 1:"),
        "logic": _edit("count += n & 1", "count += 1"),
    },
)


def _pow2_input(rng: random.Random, p: Params, scale: float) -> Args:
    if rng.random() < 0.3:
        return (2 ** rng.randint(0, 10 + round(30 * scale)),)
    return (rng.randint(-3, 2 ** (4 + round(30 * scale))),)


_NEXT_POW2 = Variant(
    family="bits",
    name="next_power_of_two",
    topic="powers of two",
    difficulty=0.18,
    entry_points=("next_power_of_two", "round_up_pow2", "ceil_pow2"),
    args=("n",),
    statements=(
        "Write `$sig` that returns the smallest power of two that is greater than or equal to `n`. For "
        "`n <= 1` the answer is 1.",
        "Implement `$sig`: round `n` up to the next power of two (a number of the form `2**k` with k >= 0). If "
        "`n` is already a power of two, return it unchanged; any `n` below 1 gives 1.",
        "`$sig` should return the least `2**k` (k >= 0) that is at least `n`.",
    ),
    code=_code(
        """
        def $ep(n):
            power = 1
            while power < n:
                power <<= 1
            return power
        """
    ),
    make_input=_pow2_input,
    edges=lambda p: [(0,), (1,), (16,), (17,), (-5,)],
    bugs={
        "off_by_one": _edit("while power < n:", "while power <= n:"),
        "infinite_loop": _edit("    power = 1\n", "    power = 0\n"),
        "edge_case": _edit("    power = 1\n", "    power = 2\n"),
    },
)

_REVERSE_BITS = Variant(
    family="bits",
    name="reverse_bits",
    topic="bit shifting",
    difficulty=0.34,
    entry_points=("reverse_bits", "mirror_bits", "bit_reverse"),
    args=("n",),
    statements=(
        "Write `$sig` that reverses the order of the lowest $width bits of `n` (0 <= n < 2**$width) and "
        "returns the resulting integer. Leading zeros count: with $width bits, 1 becomes $top.",
        "Implement `$sig`: treat `n` as a $width-bit unsigned integer, mirror its bit pattern (bit 0 swaps "
        "with bit $hi, bit 1 with bit $hi2, and so on) and return the value.",
        "`$sig` returns the integer whose $width-bit binary representation is the reverse of that of `n` "
        "(padded with leading zeros to $width bits).",
    ),
    code=_code(
        """
        def $ep(n):
            result = 0
            for _ in range($width):
                result = (result << 1) | (n & 1)
                n >>= 1
            return result
        """
    ),
    params=(
        {"width": 8, "top": 128, "hi": 7, "hi2": 6},
        {"width": 16, "top": 32768, "hi": 15, "hi2": 14},
        {"width": 32, "top": 2147483648, "hi": 31, "hi2": 30, "_bump": 0.02},
    ),
    make_input=lambda rng, p, scale: (rng.randint(2, 2 ** p["width"] - 2),),
    edges=lambda p: [(0,), (1,), (2 ** p["width"] - 1,), (6,)],
)


def _single_input(rng: random.Random, p: Params, scale: float) -> Args:
    k = p["k"]
    others = rng.sample(range(-1000, 1000), _size(rng, 1, 7, scale))
    unique = rng.choice([v for v in range(-200, 200) if v not in others and v != 0])
    if rng.random() < scale:
        unique = rng.randint(-(2**31), 2**31 - 1)
        while unique == 0 or unique in others:
            unique = rng.randint(-(2**31), 2**31 - 1)
    nums = others * k + [unique]
    rng.shuffle(nums)
    return (nums,)


_SINGLE_NUMBER = Variant(
    family="bits",
    name="single_number",
    topic="xor and bit counts",
    difficulty=0.42,
    entry_points=("single_number", "find_unique", "lonely_value"),
    args=("nums",),
    statements=(
        "Every value in the integer list `nums` appears exactly $times, except for one value that appears "
        "only once. Write `$sig` that returns that lonely value. Values may be negative and fit in a signed "
        "32-bit integer.",
        "Implement `$sig`: in `nums`, each number occurs $times except a single number that occurs once; find "
        "it (bit manipulation allows constant extra space). Numbers are 32-bit signed integers.",
        "`$sig` receives a list where all elements come in groups of $k equal values, apart from one element "
        "that is unique, and returns the unique element. Elements are between -2**31 and 2**31 - 1.",
    ),
    code=_code(
        """
        def $ep(nums):
            result = 0
            for bit in range(32):
                total = 0
                for x in nums:
                    total += (x >> bit) & 1
                if total % $k:
                    result |= 1 << bit
            if result >= 1 << 31:
                result -= 1 << 32
            return result
        """
    ),
    params=({"k": 2, "times": "twice"}, {"k": 3, "times": "three times", "_bump": 0.08}),
    make_input=_single_input,
    edges=lambda p: [([7],), ([4, 1] + [4] * (p["k"] - 1),), ([5] * (p["k"] - 1) + [-3, 5],)],
    bugs={"edge_case": _edit("    if result >= 1 << 31:\n        result -= 1 << 32\n", "")},
)


# --- matrices --------------------------------------------------------------------------------


def _matrix(rng: random.Random, rows: int, cols: int, lo: int, hi: int) -> list[list[int]]:
    return [_ints(rng, cols, lo, hi) for _ in range(rows)]


_TRANSPOSE = Variant(
    family="matrices",
    name="transpose",
    topic="rows and columns",
    difficulty=0.15,
    entry_points=("transpose", "transpose_matrix", "swap_axes"),
    args=("matrix",),
    statements=(
        "Write `$sig` that returns the transpose of `matrix`, a list of equally long rows: row `i` of the "
        "result is column `i` of the input. The matrix need not be square, and an empty matrix transposes "
        "to `[]`.",
        "Implement `$sig`: turn the rows of the rectangular matrix `matrix` into columns, returning a new list "
        "of lists. `matrix` is never ragged, but it may be empty.",
        "`$sig` should flip `matrix` over its main diagonal, so an `r x c` matrix becomes a `c x r` one "
        "(an empty matrix stays empty).",
    ),
    code=_code(
        """
        def $ep(matrix):
            if not matrix:
                return []
            return [[row[c] for row in matrix] for c in range(len(matrix[0]))]
        """
    ),
    make_input=lambda rng, p, scale: (
        _matrix(rng, _size(rng, 1, 6, scale), _size(rng, 2, 6, scale), 0, 9),
    ),
    edges=lambda p: [([],), ([[1, 2, 3]],), ([[1, 2], [3, 4], [5, 6]],)],
    bugs={
        "exception": _edit("    if not matrix:\n        return []\n", ""),
        "off_by_one": _edit("range(len(matrix[0]))", "range(len(matrix[0]) - 1)"),
        "edge_case": _edit("range(len(matrix[0]))", "range(len(matrix))"),
    },
)


def _multiply_input(rng: random.Random, p: Params, scale: float) -> Args:
    n, m, q = (_size(rng, 1, 5, scale) for _ in range(3))
    return _matrix(rng, n, m, -5, 9), _matrix(rng, m, q, -5, 9)


_MULTIPLY = Variant(
    family="matrices",
    name="multiply",
    topic="matrix product",
    difficulty=0.34,
    entry_points=("matmul", "multiply_matrices", "matrix_product"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the matrix product of `a` (an `n x m` matrix) and `b` (an `m x p` matrix) "
        "as a new `n x p` list of lists. Entry `[i][j]` is the sum over `k` of `a[i][k] * b[k][j]`.",
        "Implement `$sig`: multiply two integer matrices given as lists of rows. The number of columns of `a` "
        "equals the number of rows of `b`; the result has as many rows as `a` and as many columns as `b`.",
        "`$sig` computes `a @ b` for matrices stored as nested lists (no NumPy). Dimensions always match, and "
        "every matrix has at least one row and one column.",
    ),
    code=_code(
        """
        def $ep(a, b):
            rows, inner, cols = len(a), len(b), len(b[0])
            result = [[0] * cols for _ in range(rows)]
            for i in range(rows):
                for j in range(cols):
                    total = 0
                    for k in range(inner):
                        total += a[i][k] * b[k][j]
                    result[i][j] = total
            return result
        """
    ),
    make_input=_multiply_input,
    edges=lambda p: [
        ([[1, 2], [3, 4]], [[5, 6], [7, 8]]),
        ([[1, 2, 3]], [[4], [5], [6]]),
        ([[2]], [[3]]),
    ],
    bugs={
        "exception": _edit("for k in range(inner):", "for k in range(inner + 1):"),
        "logic": _edit("a[i][k] * b[k][j]", "a[i][k] * b[j][k]"),
    },
)

_SPIRAL = Variant(
    family="matrices",
    name="spiral",
    topic="boundary walking",
    difficulty=0.55,
    entry_points=("spiral_order", "spiral_walk", "read_spiral"),
    args=("matrix",),
    statements=(
        "Write `$sig` that returns the elements of `matrix` in clockwise spiral order, starting at the top-left "
        "corner and moving right along the first row. The matrix is rectangular (not necessarily square) and "
        "may be empty.",
        "Implement `$sig`: walk around `matrix` layer by layer (along the top row, down the right column, back "
        "along the bottom row and up the left column) and return the visited values as a flat list, visiting "
        "each element exactly once.",
        "`$sig` reads a rectangular grid in a clockwise spiral from the top-left corner inwards and returns the "
        "values in that order; an empty grid gives `[]`.",
    ),
    code=_code(
        """
        def $ep(matrix):
            result = []
            if not matrix:
                return result
            top, bottom = 0, len(matrix) - 1
            left, right = 0, len(matrix[0]) - 1
            while top <= bottom and left <= right:
                for c in range(left, right + 1):
                    result.append(matrix[top][c])
                top += 1
                for r in range(top, bottom + 1):
                    result.append(matrix[r][right])
                right -= 1
                if top <= bottom:
                    for c in range(right, left - 1, -1):
                        result.append(matrix[bottom][c])
                    bottom -= 1
                if left <= right:
                    for r in range(bottom, top - 1, -1):
                        result.append(matrix[r][left])
                    left += 1
            return result
        """
    ),
    make_input=lambda rng, p, scale: (
        _matrix(rng, _size(rng, 2, 7, scale), _size(rng, 2, 7, scale), 0, 99),
    ),
    edges=lambda p: [
        ([],),
        ([[1, 2, 3]],),
        ([[1], [2], [3]],),
        ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],),
        ([[1, 2, 3, 4], [5, 6, 7, 8]],),
    ],
    bugs={
        "exception": _edit("    if not matrix:\n        return result\n", ""),
        "edge_case": _edit(
            "        if top <= bottom:\n"
            "            for c in range(right, left - 1, -1):\n"
            "                result.append(matrix[bottom][c])\n"
            "            bottom -= 1\n",
            "        for c in range(right, left - 1, -1):\n"
            "            result.append(matrix[bottom][c])\n"
            "        bottom -= 1\n",
        ),
    },
)


# --- intervals -------------------------------------------------------------------------------


def _intervals(rng: random.Random, scale: float, min_len: int) -> list[list[int]]:
    out = []
    for _ in range(_size(rng, 2, 12, scale)):
        start = rng.randint(0, 50)
        out.append([start, start + rng.randint(min_len, 10)])
    return out


_MERGE_INTERVALS = Variant(
    family="intervals",
    name="merge",
    topic="sorting by start",
    difficulty=0.42,
    entry_points=("merge_intervals", "merge_ranges", "union_intervals"),
    args=("intervals",),
    statements=(
        "Write `$sig` that merges overlapping intervals. `intervals` is a list of `[start, end]` pairs with "
        "`start <= end`, in any order; return the merged intervals sorted by start. $touch_note",
        "Implement `$sig`: combine every group of overlapping closed intervals in `intervals` into one interval "
        "spanning the group, and return the resulting disjoint intervals in increasing order as a list of "
        "`[start, end]` lists. $touch_note",
        "`$sig` takes unsorted `[start, end]` intervals and returns their union as a sorted list of "
        "non-overlapping intervals. $touch_note An empty input gives `[]`.",
    ),
    code=_code(
        """
        def $ep(intervals):
            merged = []
            for start, end in sorted(intervals):
                if merged and start $cmp merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
            return merged
        """
    ),
    params=(
        {
            "cmp": "<=",
            "cmp_bug": "<",
            "touch_note": "Intervals that merely touch, such as `[1, 3]` and `[3, 5]`, are merged too.",
        },
        {
            "cmp": "<",
            "cmp_bug": "<=",
            "touch_note": "Intervals that only touch at an endpoint, such as `[1, 3]` and `[3, 5]`, stay separate.",
            "_bump": 0.02,
        },
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 0),),
    edges=lambda p: [([],), ([[1, 3], [3, 5]],), ([[1, 10], [2, 3]],), ([[8, 9], [1, 2], [2, 4]],)],
    bugs={
        "off_by_one": _edit("start $cmp merged[-1][1]", "start $cmp_bug merged[-1][1]"),
        "edge_case": _edit("max(merged[-1][1], end)", "end"),
        "exception": _edit("if merged and start", "if start"),
    },
)

_COVERED = Variant(
    family="intervals",
    name="covered_length",
    topic="interval union",
    difficulty=0.36,
    entry_points=("covered_length", "total_coverage", "union_length"),
    args=("intervals",),
    statements=(
        "Write `$sig` that returns the total length covered by the union of the half-open intervals "
        "`[start, end)` in `intervals`. Overlapping parts are counted once; the intervals may come in any order.",
        "Implement `$sig`: several time ranges `[start, end)` (start < end) may overlap. Return how many time "
        "units are covered by at least one of them.",
        "`$sig` measures the union of the intervals in `intervals` (each `[start, end)` with `start < end`): "
        "the answer is the total length of the points covered by any interval. Return 0 for an empty list.",
    ),
    code=_code(
        """
        def $ep(intervals):
            total = 0
            current_start = current_end = None
            for start, end in sorted(intervals):
                if current_end is None or start > current_end:
                    if current_end is not None:
                        total += current_end - current_start
                    current_start, current_end = start, end
                else:
                    current_end = max(current_end, end)
            if current_end is not None:
                total += current_end - current_start
            return total
        """
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 1),),
    edges=lambda p: [([],), ([[1, 4], [2, 6]],), ([[0, 2], [2, 3]],), ([[5, 8], [1, 2]],)],
    bugs={
        "edge_case": _edit("    if current_end is not None:\n        total += current_end - current_start\n", ""),
        "off_by_one": _edit("current_end - current_start", "current_end - current_start + 1"),
        "exception": _edit("if current_end is None or start > current_end:", "if start > current_end:"),
    },
)

_ROOMS = Variant(
    family="intervals",
    name="meeting_rooms",
    topic="sweep line",
    difficulty=0.58,
    entry_points=("min_rooms", "rooms_needed", "max_overlap"),
    args=("meetings",),
    statements=(
        "Write `$sig` that returns the minimum number of rooms needed to hold all the meetings in `meetings`, "
        "where each meeting is `[start, end)` with `start < end`. A meeting that ends at time `t` frees its "
        "room for another that starts at `t`.",
        "Implement `$sig`: given half-open meeting intervals, compute the largest number of meetings that are "
        "running at the same moment, which is the number of rooms required. Back-to-back meetings "
        "(`[1, 3)` then `[3, 5)`) can share a room.",
        "`$sig` schedules meetings `[start, end)` into as few rooms as possible and returns that number "
        "(0 when there are no meetings); a room freed at time `t` can be reused by a meeting starting at `t`.",
    ),
    code=_code(
        """
        def $ep(meetings):
            events = []
            for start, end in meetings:
                events.append((start, 1))
                events.append((end, -1))
            events.sort(key=lambda e: (e[0], e[1]))
            rooms = best = 0
            for _, delta in events:
                rooms += delta
                best = max(best, rooms)
            return best
        """
    ),
    make_input=lambda rng, p, scale: (_intervals(rng, scale, 1),),
    edges=lambda p: [([],), ([[1, 3], [3, 5]],), ([[0, 30], [5, 10], [15, 20]],), ([[1, 5], [2, 6], [3, 7]],)],
    bugs={"edge_case": _edit("key=lambda e: (e[0], e[1])", "key=lambda e: (e[0], -e[1])")},
)


# --- simulation ------------------------------------------------------------------------------

_ROBOT = Variant(
    family="simulation",
    name="robot",
    topic="grid walking",
    difficulty=0.24,
    entry_points=("final_position", "run_robot", "walk"),
    args=("commands",),
    statements=(
        "A robot starts at `(0, 0)` facing north (the positive y direction). Write `$sig` that executes the "
        "command string `commands` and returns its final position as `[x, y]`. `'F'` moves one step forward, "
        "`'L'` and `'R'` turn 90 degrees left or right on the spot.$b_note",
        "Implement `$sig`: simulate a robot on a grid that begins at the origin looking north. Each character "
        "of `commands` is one of $cmds: F steps forward, L turns left, R turns right.$b_note Return the final "
        "coordinates as a list `[x, y]` (east is +x, north is +y).",
        "`$sig` follows turtle-style instructions ($cmds) from the origin, initially heading north (+y), and "
        "reports where the robot ends up as `[x, y]`.$b_note Turning does not change the position.",
    ),
    code=_code(
        """
        def $ep(commands):
            dx, dy = 0, 1
            x = y = 0
            for command in commands:
                if command == "F":
                    x, y = x + dx, y + dy
                elif command == "B":
                    x, y = x - dx, y - dy
                elif command == "L":
                    dx, dy = -dy, dx
                elif command == "R":
                    dx, dy = dy, -dx
            return [x, y]
        """
    ),
    params=(
        {"cmds": "F, L and R", "b_note": "", "letters": "FFFLR"},
        {
            "cmds": "F, B, L and R",
            "b_note": " `'B'` moves one step backwards without turning.",
            "letters": "FFBLR",
            "_bump": 0.03,
        },
    ),
    make_input=lambda rng, p, scale: ("".join(rng.choice(p["letters"]) for _ in range(_size(rng, 3, 35, scale))),),
    edges=lambda p: [("",), ("FFRFF",), ("LFLF",), ("FRFRFRF",)],
    bugs={
        "logic": _edit(
            '        elif command == "L":\n            dx, dy = -dy, dx\n'
            '        elif command == "R":\n            dx, dy = dy, -dx\n',
            '        elif command == "L":\n            dx, dy = dy, -dx\n'
            '        elif command == "R":\n            dx, dy = -dy, dx\n',
        ),
        "edge_case": _edit("dx, dy = 0, 1", "dx, dy = 1, 0"),
    },
)


def _bank_input(rng: random.Random, p: Params, scale: float) -> Args:
    ops = []
    for _ in range(_size(rng, 2, 18, scale)):
        ops.append([rng.choice(("deposit", "withdraw", "withdraw")), rng.randint(1, 80)])
    return (ops,)


_BANK = Variant(
    family="simulation",
    name="bank_account",
    topic="state machines",
    difficulty=0.28,
    entry_points=("apply_transactions", "simulate_account", "process_ledger"),
    args=("operations",),
    statements=(
        "A bank account starts with a balance of $start. Write `$sig` that applies `operations`, a list of "
        "`[kind, amount]` pairs where `kind` is `'deposit'` or `'withdraw'`, in order. A withdrawal larger "
        "than the current balance is rejected and leaves the balance unchanged. Return "
        "`[final_balance, number_of_rejected_withdrawals]`.",
        "Implement `$sig`: starting from a balance of $start, process each `[kind, amount]` operation "
        "(`'deposit'` adds, `'withdraw'` subtracts). Withdrawals that would make the balance negative are "
        "refused. Return a two-element list: the final balance and how many withdrawals were refused.",
        "`$sig` simulates an account opened with $start units: deposits always succeed, and a withdrawal "
        "succeeds only if the balance covers it (an exact match is fine). Return `[balance, refused]` after "
        "all operations in `operations` (each `[kind, amount]`).",
    ),
    code=_code(
        """
        def $ep(operations):
            balance = $start
            rejected = 0
            for kind, amount in operations:
                if kind == "deposit":
                    balance += amount
                elif amount <= balance:
                    balance -= amount
                else:
                    rejected += 1
            return [balance, rejected]
        """
    ),
    params=({"start": 0}, {"start": 100}),
    make_input=_bank_input,
    edges=lambda p: [
        ([],),
        ([["deposit", 50], ["withdraw", 50 + p["start"]]],),
        ([["withdraw", p["start"] + 10], ["deposit", 5]],),
    ],
    bugs={
        "off_by_one": _edit("elif amount <= balance:", "elif amount < balance:"),
        "edge_case": _edit(
            "        elif amount <= balance:\n            balance -= amount\n"
            "        else:\n            rejected += 1\n",
            "        else:\n            balance -= amount\n",
        ),
    },
)

_JOSEPHUS = Variant(
    family="simulation",
    name="josephus",
    topic="circular elimination",
    difficulty=0.44,
    entry_points=("josephus", "elimination_order", "circle_game"),
    args=("n", "k"),
    statements=(
        "`n` people numbered 1 to `n` stand in a circle. Starting from person 1, count `k` people around the "
        "circle (the starting person counts as 1); the `k`-th person leaves and counting restarts from the "
        "next person. Write `$sig` that returns $ret_words.",
        "Implement `$sig` for the Josephus game: people `1..n` in a circle, every `k`-th person is eliminated "
        "(the count starts at person 1 and continues from the person after each elimination) until nobody is "
        "left. Return $ret_words.",
        "`$sig` simulates eliminating every `k`-th person from a circle of `n` people labelled 1 through `n`, "
        "counting from person 1, and returns $ret_words. `n` and `k` are at least 1.",
    ),
    code=_code(
        """
        def $ep(n, k):
            people = list(range(1, n + 1))
            order = []
            index = 0
            while people:
                index = (index + k - 1) % len(people)
                order.append(people.pop(index))
            return $ret
        """
    ),
    params=(
        {"ret": "order", "ret_words": "the list of people in the order they leave the circle"},
        {"ret": "order[-1]", "ret_words": "the number of the last person remaining", "_bump": -0.04},
    ),
    make_input=lambda rng, p, scale: (_size(rng, 2, 30, scale), rng.randint(2, 2 + round(8 * scale))),
    edges=lambda p: [(7, 3), (1, 1), (5, 2), (6, 1)],
    bugs={
        "off_by_one": _edit("index + k - 1", "index + k"),
        "exception": _edit("(index + k - 1) % len(people)", "index + k - 1"),
        "edge_case": _edit("list(range(1, n + 1))", "list(range(n))"),
    },
)

_LIFE = Variant(
    family="simulation",
    name="life_step",
    topic="cellular automata",
    difficulty=0.54,
    entry_points=("life_step", "next_generation", "evolve"),
    args=("grid",),
    statements=(
        "Write `$sig` that advances the cellular automaton `grid` (a rectangular list of rows of 0s and 1s) by "
        "one generation and returns the new grid. Each cell has up to eight neighbours; cells outside the grid "
        "count as dead. A live cell survives with two or three live neighbours, otherwise it dies; $rule_words.",
        "Implement `$sig`: compute one step of the Game of Life on a finite board (no wrap-around). Live cells "
        "with 2 or 3 live neighbours stay alive, all other live cells die, and $rule_words. Return a new grid; "
        "do not modify the input.",
        "`$sig` returns the next generation of the 0/1 grid `grid` under these rules: neighbours are the 8 "
        "surrounding cells inside the board; survival needs 2 or 3 live neighbours; $rule_words.",
    ),
    code=_code(
        """
        def $ep(grid):
            rows = len(grid)
            cols = len(grid[0]) if rows else 0
            result = []
            for r in range(rows):
                row = []
                for c in range(cols):
                    alive = 0
                    for dr in (-1, 0, 1):
                        for dc in (-1, 0, 1):
                            if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols:
                                alive += grid[r + dr][c + dc]
                    if grid[r][c]:
                        row.append(1 if alive in (2, 3) else 0)
                    else:
                        row.append(1 if alive in $born_r else 0)
                result.append(row)
            return result
        """
    ),
    params=(
        {"born": (3,), "rule_words": "a dead cell with exactly three live neighbours becomes alive"},
        {
            "born": (3, 6),
            "rule_words": "a dead cell with exactly three or exactly six live neighbours becomes alive "
            "(the HighLife rule)",
            "_bump": 0.03,
        },
    ),
    make_input=lambda rng, p, scale: (
        [[1 if rng.random() < 0.4 else 0 for _ in range(cols)] for _ in range(_size(rng, 2, 7, scale))]
        if (cols := _size(rng, 2, 7, scale))
        else [],
    ),
    edges=lambda p: [([[0, 1, 0], [0, 1, 0], [0, 1, 0]],), ([[1]],), ([[1, 1], [1, 1]],)],
    bugs={
        "edge_case": _edit("if (dr or dc) and 0 <= r + dr", "if 0 <= r + dr"),
        "exception": _edit(
            "if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols:",
            "if dr or dc:",
        ),
    },
)


# --- stacks ----------------------------------------------------------------------------------


def _brackets_input(rng: random.Random, p: Params, scale: float) -> Args:
    opener_to_closer = {v: k for k, v in p["pairs"].items()}
    opens = p["opens"]
    closes = "".join(opener_to_closer[o] for o in opens)
    out: list[str] = []
    stack: list[str] = []
    for _ in range(_size(rng, 2, 30, scale)):
        r = rng.random()
        if r < 0.4 or not stack:
            i = rng.randrange(len(opens))
            out.append(opens[i])
            stack.append(closes[i])
        elif r < 0.8:
            out.append(stack.pop())
        else:
            out.append(rng.choice("abxy "))
    out.extend(reversed(stack))
    text = "".join(out)
    if rng.random() < 0.5 and text:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(opens + closes) + text[i + 1 :]
    return (text,)


_BALANCED = Variant(
    family="stacks",
    name="balanced_brackets",
    topic="matching brackets",
    difficulty=0.25,
    entry_points=("is_balanced", "brackets_match", "valid_brackets"),
    args=("text",),
    statements=(
        "Write `$sig` that returns `True` if the brackets in `text` are balanced and properly nested, and "
        "`False` otherwise. The bracket pairs are $kinds; every other character is ignored.",
        "Implement `$sig`: check that every opening bracket in `text` is closed by the matching bracket type "
        "in the right order. Bracket types: $kinds. Characters that are not brackets do not matter, and an "
        "empty string is balanced.",
        "`$sig` validates bracket nesting in a string: with the pairs $kinds, return whether each closer "
        "matches the most recent unmatched opener and nothing is left open at the end.",
    ),
    code=_code(
        """
        def $ep(text):
            pairs = $pairs_r
            stack = []
            for ch in text:
                if ch in $opens_r:
                    stack.append(ch)
                elif ch in pairs:
                    if not stack or stack.pop() != pairs[ch]:
                        return False
            return not stack
        """
    ),
    params=(
        {"opens": "([{", "pairs": {")": "(", "]": "[", "}": "{"}, "kinds": "`()`, `[]` and `{}`"},
        {
            "opens": "([{<",
            "pairs": {")": "(", "]": "[", "}": "{", ">": "<"},
            "kinds": "`()`, `[]`, `{}` and `<>`",
            "_bump": 0.02,
        },
    ),
    make_input=_brackets_input,
    edges=lambda p: [("",), ("(a[b]{c})",), ("([)]",), ("((",), (")(",)],
    bugs={
        "edge_case": _edit("    return not stack", "    return True"),
        "exception": _edit("if not stack or stack.pop() != pairs[ch]:", "if stack.pop() != pairs[ch]:"),
    },
)


def _rpn_tokens(rng: random.Random, depth: int) -> tuple[list[str], int]:
    if depth <= 0 or rng.random() < 0.3:
        value = rng.randint(-9, 20)
        return [str(value)], value
    left, lv = _rpn_tokens(rng, depth - 1)
    right, rv = _rpn_tokens(rng, depth - 1)
    ops = ["+", "-", "*"] + (["/"] if rv != 0 else [])
    op = rng.choice(ops)
    if op == "+":
        value = lv + rv
    elif op == "-":
        value = lv - rv
    elif op == "*":
        value = lv * rv
    else:
        quotient = abs(lv) // abs(rv)
        value = quotient if (lv < 0) == (rv < 0) else -quotient
    return [*left, *right, op], value


_RPN = Variant(
    family="stacks",
    name="rpn",
    topic="postfix evaluation",
    difficulty=0.4,
    entry_points=("eval_rpn", "evaluate_postfix", "rpn_value"),
    args=("tokens",),
    statements=(
        "Write `$sig` that evaluates an expression in reverse Polish notation. `tokens` is a list of strings, "
        "each either an integer (possibly negative, like `'-4'`) or one of the operators `'+'`, `'-'`, `'*'`, "
        "`'/'`. Division truncates toward zero, as in `int(a / b)`. The expression is always valid and never "
        "divides by zero.",
        "Implement `$sig`: process the postfix token list `tokens` with a stack; numbers are pushed, and an "
        "operator pops the right operand, then the left operand, and pushes the result. `/` is integer "
        "division rounding toward zero. Return the single value left at the end.",
        "`$sig` computes the value of a postfix (RPN) expression such as `['2', '1', '+', '3', '*']`, which is "
        "9. Operators are `+ - * /`; `/` truncates toward zero.",
    ),
    code=_code(
        """
        def $ep(tokens):
            stack = []
            for token in tokens:
                if token in ("+", "-", "*", "/"):
                    right = stack.pop()
                    left = stack.pop()
                    if token == "+":
                        stack.append(left + right)
                    elif token == "-":
                        stack.append(left - right)
                    elif token == "*":
                        stack.append(left * right)
                    else:
                        quotient = abs(left) // abs(right)
                        stack.append(quotient if (left < 0) == (right < 0) else -quotient)
                else:
                    stack.append(int(token))
            return stack[-1]
        """
    ),
    make_input=lambda rng, p, scale: (_rpn_tokens(rng, 1 + round(3 * scale))[0],),
    edges=lambda p: [
        (["2", "1", "+", "3", "*"],),
        (["7", "-2", "/"],),
        (["4", "13", "5", "/", "+"],),
        (["5", "8", "-"],),
        (["42"],),
    ],
    bugs={
        "edge_case": _edit(
            "                quotient = abs(left) // abs(right)\n"
            "                stack.append(quotient if (left < 0) == (right < 0) else -quotient)\n",
            "                stack.append(left // right)\n",
        ),
        "exception": _edit('if token in ("+", "-", "*", "/"):', 'if token in ("+", "*", "/"):'),
        "logic": _edit(
            "            right = stack.pop()\n            left = stack.pop()\n",
            "            left = stack.pop()\n            right = stack.pop()\n",
        ),
    },
)


def _encoded(rng: random.Random, depth: int, scale: float) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        if depth > 0 and rng.random() < 0.6:
            parts.append(f"{rng.randint(1, 3 + round(9 * scale))}[{_encoded(rng, depth - 1, scale)}]")
        else:
            parts.append("".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 3))))
    return "".join(parts)


_DECODE = Variant(
    family="stacks",
    name="decode_string",
    topic="nested repetition",
    difficulty=0.6,
    entry_points=("decode_string", "expand_repeats", "decode"),
    args=("s",),
    statements=(
        "Write `$sig` that decodes a string in which `k[...]` means the bracketed part repeated `k` times; "
        "brackets can be nested and `k` can have several digits, so `'3[a]2[bc]'` decodes to `'aaabcbc'` and "
        "`'2[a2[c]]'` to `'accacc'`. Letters outside brackets are copied as they are.",
        "Implement `$sig`: expand the notation `count[body]` in `s`, where `body` may itself contain encoded "
        "parts and `count` is a positive integer (possibly with several digits). Return the fully expanded "
        "string.",
        "`$sig` expands nested repetition markers: every `n[x]` is replaced by `x` written `n` times, innermost "
        "first, so `'3[a2[c]]'` becomes `'accaccacc'`. Plain letters stay as they are.",
    ),
    code=_code(
        """
        def $ep(s):
            stack = []
            current = ""
            number = 0
            for ch in s:
                if ch.isdigit():
                    number = number * 10 + int(ch)
                elif ch == "[":
                    stack.append((current, number))
                    current, number = "", 0
                elif ch == "]":
                    previous, repeat = stack.pop()
                    current = previous + current * repeat
                else:
                    current += ch
            return current
        """
    ),
    make_input=lambda rng, p, scale: (_encoded(rng, 1 + round(2 * scale), scale),),
    edges=lambda p: [("",), ("3[a]2[bc]",), ("2[a2[c]]",), ("10[x]",), ("ab2[c]d",)],
    bugs={
        "edge_case": _edit("number = number * 10 + int(ch)", "number = int(ch)"),
        "off_by_one": _edit("current = previous + current * repeat", "current = previous + current * (repeat - 1)"),
    },
)


# --- graphs ----------------------------------------------------------------------------------

_DIRS4 = ((1, 0), (-1, 0), (0, 1), (0, -1))
_DIRS8 = (*_DIRS4, (1, 1), (1, -1), (-1, 1), (-1, -1))

_ISLANDS = Variant(
    family="graphs",
    name="islands",
    topic="flood fill",
    difficulty=0.46,
    entry_points=("count_islands", "island_count", "num_islands"),
    args=("grid",),
    statements=(
        "`grid` is a list of equal-length strings made of `'#'` (land) and `'.'` (water). Write `$sig` that "
        "returns the number of islands: maximal groups of land cells connected $adj.",
        "Implement `$sig`: count the connected components of `'#'` cells in the character grid `grid`, where "
        "two land cells are connected when they are adjacent $adj. An empty grid has no islands.",
        "`$sig` scans a map given as rows of `'#'` and `'.'` and returns how many separate islands of `'#'` it "
        "contains; cells belong to the same island when linked through neighbours adjacent $adj.",
    ),
    code=_code(
        """
        def $ep(grid):
            rows = len(grid)
            cols = len(grid[0]) if rows else 0
            seen = set()
            islands = 0
            for r in range(rows):
                for c in range(cols):
                    if grid[r][c] == "#" and (r, c) not in seen:
                        islands += 1
                        stack = [(r, c)]
                        seen.add((r, c))
                        while stack:
                            cr, cc = stack.pop()
                            for dr, dc in $dirs_r:
                                nr, nc = cr + dr, cc + dc
                                inside = 0 <= nr < rows and 0 <= nc < cols
                                if inside and grid[nr][nc] == "#" and (nr, nc) not in seen:
                                    seen.add((nr, nc))
                                    stack.append((nr, nc))
            return islands
        """
    ),
    params=(
        {"dirs": _DIRS4, "adj": "horizontally or vertically (not diagonally)"},
        {"dirs": _DIRS8, "adj": "horizontally, vertically or diagonally", "_bump": 0.03},
    ),
    make_input=lambda rng, p, scale: (
        [
            "".join("#" if rng.random() < 0.45 else "." for _ in range(cols))
            for _ in range(_size(rng, 2, 9, scale))
        ]
        if (cols := _size(rng, 2, 11, scale))
        else [],
    ),
    edges=lambda p: [([],), (["#..", "...", "..#"],), (["##.", ".#.", "..#"],), (["...", "..."],)],
    bugs={
        "exception": _edit("inside = 0 <= nr < rows and 0 <= nc < cols", "inside = True"),
        "edge_case": _edit("cols = len(grid[0]) if rows else 0", "cols = len(grid[0])"),
    },
)


def _graph_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 18, scale)
    edges = [sorted(rng.sample(range(n), 2)) for _ in range(rng.randint(n // 2, n + n // 2))]
    edges = [e if rng.random() < 0.5 else e[::-1] for e in edges]
    return n, edges, rng.randrange(n), rng.randrange(n)


_SHORTEST_PATH = Variant(
    family="graphs",
    name="shortest_path",
    topic="breadth-first search",
    difficulty=0.55,
    entry_points=("shortest_path_length", "min_hops", "bfs_distance"),
    args=("n", "edges", "start", "goal"),
    statements=(
        "Write `$sig` that returns the length (number of edges) of a shortest path from `start` to `goal` in a "
        "$kind_words graph with nodes `0` to `n - 1`. `edges` is a list of pairs `[a, b]`; each pair "
        "$edge_words. Return `-1` if `goal` cannot be reached; the distance from a node to itself is 0.",
        "Implement `$sig`: breadth-first search on a $kind_words graph. There are `n` nodes numbered from 0, "
        "and every `[a, b]` in `edges` $edge_words. Return the fewest edges on a path from `start` to `goal`, "
        "or `-1` when no path exists.",
        "`$sig` finds the minimum number of hops between `start` and `goal` in the $kind_words graph given by "
        "`n` nodes and the edge list `edges` (an edge `[a, b]` $edge_words). Unreachable goals give `-1`.",
    ),
    code=_code(
        """
        def $ep(n, edges, start, goal):
            neighbours = [[] for _ in range(n)]
            for a, b in edges:
                neighbours[a].append(b)
                $back
            dist = [-1] * n
            dist[start] = 0
            queue = [start]
            head = 0
            while head < len(queue):
                node = queue[head]
                head += 1
                for nxt in neighbours[node]:
                    if dist[nxt] == -1:
                        dist[nxt] = dist[node] + 1
                        queue.append(nxt)
            return dist[goal]
        """
    ),
    params=(
        {
            "back": "neighbours[b].append(a)",
            "back_bug": "",
            "kind_words": "undirected",
            "edge_words": "connects `a` and `b` in both directions",
        },
        {
            "back": "",
            "back_bug": "neighbours[b].append(a)",
            "kind_words": "directed",
            "edge_words": "goes from `a` to `b` only",
            "_bump": 0.02,
        },
    ),
    make_input=_graph_input,
    edges=lambda p: [
        (1, [], 0, 0),
        (4, [[0, 1], [1, 2], [2, 3]], 0, 3),
        (4, [[0, 1], [2, 3]], 0, 3),
        (3, [[2, 0], [1, 2]], 0, 1),
        (5, [[0, 4], [4, 3], [0, 1], [1, 2], [2, 3]], 0, 3),
    ],
    bugs={
        "edge_case": _edit("$back\n", "$back_bug\n"),
        "off_by_one": _edit("dist[start] = 0", "dist[start] = 1"),
        "exception": _edit("[[] for _ in range(n)]", "[[] for _ in range(n - 1)]"),
        "infinite_loop": _edit("        head += 1\n", ""),
    },
)


def _dag_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 12, scale)
    order = list(range(n))
    rng.shuffle(order)
    deps = []
    for _ in range(rng.randint(1, n + 2)):
        i, j = sorted(rng.sample(range(n), 2))
        deps.append([order[i], order[j]])
    if rng.random() < 0.2:
        a, b = rng.choice(deps)
        deps.append([b, a])
    return n, deps


_TOPO_ORDER = Variant(
    family="graphs",
    name="topological_order",
    topic="topological sort",
    difficulty=0.72,
    entry_points=("task_order", "topological_order", "schedule_tasks"),
    args=("n", "deps"),
    statements=(
        "There are `n` tasks numbered `0` to `n - 1`, and each pair `[a, b]` in `deps` says task `a` must be "
        "done before task `b`. Write `$sig` that returns the lexicographically smallest order in which all "
        "tasks can be done, or an empty list if the dependencies contain a cycle.",
        "Implement `$sig`: produce a topological ordering of the nodes `0..n-1` of the directed graph whose "
        "edges are the `[before, after]` pairs in `deps`. Whenever several tasks are available, take the "
        "smallest number first. If no valid order exists (a cycle), return `[]`.",
        "`$sig` schedules `n` jobs subject to precedence constraints `deps` (pairs `[first, then]`), always "
        "picking the lowest-numbered job that is ready. Return the full schedule as a list, or `[]` when the "
        "constraints are cyclic.",
    ),
    code=_code(
        """
        import heapq


        def $ep(n, deps):
            indegree = [0] * n
            after = [[] for _ in range(n)]
            for a, b in deps:
                after[a].append(b)
                indegree[b] += 1
            ready = [node for node in range(n) if indegree[node] == 0]
            heapq.heapify(ready)
            order = []
            while ready:
                node = heapq.heappop(ready)
                order.append(node)
                for nxt in after[node]:
                    indegree[nxt] -= 1
                    if indegree[nxt] == 0:
                        heapq.heappush(ready, nxt)
            return order if len(order) == n else []
        """
    ),
    make_input=_dag_input,
    edges=lambda p: [(3, []), (3, [[0, 1], [1, 2], [2, 1]]), (4, [[3, 1], [0, 2]]), (5, [[4, 0], [3, 0], [0, 1]])],
    bugs={
        "edge_case": _edit("    return order if len(order) == n else []", "    return order"),
        "logic": (("heapq.heappop(ready)", "ready.pop(0)"), ("heapq.heappush(ready, nxt)", "ready.append(nxt)")),
        "exception": _edit("indegree = [0] * n", "indegree = [0] * (n - 1)"),
    },
)


def _weighted_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 14, scale)
    edges = []
    for _ in range(rng.randint(n - 1, 2 * n)):
        a, b = rng.sample(range(n), 2)
        edges.append([a, b, rng.randint(1, 20)])
    return n, edges, rng.randrange(n)


_DIJKSTRA = Variant(
    family="graphs",
    name="dijkstra",
    topic="weighted shortest paths",
    difficulty=0.8,
    entry_points=("shortest_distances", "dijkstra", "min_costs"),
    args=("n", "edges", "source"),
    statements=(
        "Write `$sig` for a $kind_words graph with nodes `0` to `n - 1` and weighted edges `edges`, a list of "
        "`[a, b, w]` triples where each edge $edge_words and costs `w` (a positive integer). Return a list "
        "whose item `v` is the cost of the cheapest path from `source` to `v`, or `None` when `v` is "
        "unreachable (the source itself costs 0).",
        "Implement `$sig` with Dijkstra's algorithm: in a $kind_words graph of `n` nodes, each `[a, b, w]` in "
        "`edges` $edge_words with positive weight `w`. Return the list of minimum path costs from `source` to "
        "every node, using `None` for nodes that cannot be reached.",
        "`$sig` computes single-source shortest path costs. The graph is $kind_words: an edge `[a, b, w]` "
        "$edge_words and has weight `w > 0`. Return `dist` with `dist[v]` the smallest total weight of a path "
        "from `source` to `v`, `None` if there is none.",
    ),
    code=_code(
        """
        import heapq


        def $ep(n, edges, source):
            graph = [[] for _ in range(n)]
            for a, b, w in edges:
                graph[a].append((b, w))
                $back
            dist = [None] * n
            heap = [(0, source)]
            while heap:
                d, node = heapq.heappop(heap)
                if dist[node] is not None:
                    continue
                dist[node] = d
                for nxt, w in graph[node]:
                    if dist[nxt] is None:
                        heapq.heappush(heap, (d + w, nxt))
            return dist
        """
    ),
    params=(
        {"back": "graph[b].append((a, w))", "kind_words": "undirected", "edge_words": "joins `a` and `b`"},
        {"back": "", "kind_words": "directed", "edge_words": "leads from `a` to `b`", "_bump": 0.02},
    ),
    make_input=_weighted_input,
    edges=lambda p: [
        (3, [[0, 1, 5], [0, 2, 1], [2, 1, 1]], 0),
        (4, [[0, 1, 2]], 0),
        (1, [], 0),
        (4, [[3, 2, 4], [2, 1, 4], [1, 0, 4], [3, 0, 20]], 3),
    ],
    bugs={
        "edge_case": _edit("        if dist[node] is not None:\n            continue\n", ""),
        "logic": (
            ("heapq.heappop(heap)", "heap.pop(0)"),
            ("heapq.heappush(heap, (d + w, nxt))", "heap.append((d + w, nxt))"),
        ),
        "exception": _edit("dist = [None] * n", "dist = [None] * (n - 1)"),
        "off_by_one": _edit("heap = [(0, source)]", "heap = [(1, source)]"),
    },
)


# ============================================================================================
# The registry
# ============================================================================================

VARIANTS: tuple[Variant, ...] = (
    _VOWEL_COUNT, _PALINDROME, _RUN_LENGTH, _LONGEST_UNIQUE,
    _SUM_MULTIPLES, _ROTATE, _KTH_LARGEST, _MAX_WINDOW,
    _DIGIT_SUM, _COUNT_PRIMES, _LCM, _TO_ROMAN,
    _FLATTEN, _HANOI, _SUBSETS,
    _CLIMB_STAIRS, _HOUSE_ROBBER, _MIN_COINS, _LCS, _EDIT_DISTANCE,
    _KEY_VALUES, _DURATION, _EXPRESSION, _REGEX,
    _WORD_FREQ, _INVERT, _ANAGRAMS, _TOP_K,
    _BINARY_SEARCH, _INSERTION_POINT, _TWO_SUM, _INVERSIONS,
    _POPCOUNT, _NEXT_POW2, _REVERSE_BITS, _SINGLE_NUMBER,
    _TRANSPOSE, _MULTIPLY, _SPIRAL,
    _COVERED, _MERGE_INTERVALS, _ROOMS,
    _ROBOT, _BANK, _JOSEPHUS, _LIFE,
    _BALANCED, _RPN, _DECODE,
    _ISLANDS, _SHORTEST_PATH, _TOPO_ORDER, _DIJKSTRA,
)  # fmt: skip
"""Every exercise the bank can write, grouped by family in rising difficulty."""

FAMILIES: dict[str, tuple[Variant, ...]] = {}
for _variant in VARIANTS:
    FAMILIES[_variant.family] = (*FAMILIES.get(_variant.family, ()), _variant)
del _variant
