"""The task bank behind the fake model: families of Python exercises with trusted references.

Why a bank: ``fake/<profile>`` must propose tasks that read like what a real generator model
writes (a real statement, a correct reference, tests with edge cases), offline and
deterministically, so that ``spade run`` works on a fresh machine and tests can be exact.

Structure: a *family* (strings, dynamic programming, graphs, ...) holds *variants*. A variant is
one kind of exercise with an intrinsic difficulty, a few entry-point synonyms, several statement
templates, a small finite list of parameter choices, a random input generator, fixed edge-case
inputs, and a catalogue of realistic mistakes expressed as edits of the reference source.

Classic variants are few (about four per family), and a long run's duplicate gate rejects a task
whose reference has the shape of an earlier one. So most proposals are *composed* exercises
(:func:`compose`, :func:`random_pipeline`): a chain of 1 to 4 building blocks (:data:`STEPS`:
filters, maps, reorderings, aggregations, parsers, grid and graph walks, each a different code
shape) whose reference code is assembled from the blocks, whose difficulty is computed from them
(:func:`chain_difficulty`: their costs plus a little per extra step, 0.05 to 0.97), whose
statement lists the steps in order, and whose mistakes are the blocks' own realistic edits. A
composed exercise is a :class:`PipelineVariant`, so everything below works on it unchanged.

Everything about a task is a pure function of (variant, params, rng): the same seed gives
byte-identical tasks. Because parameter choices are finite and statements are rendered from
templates, the solver side recognises a task from its statement alone (:func:`identify`): it
renders every (variant, params, entry point, template) combination once and looks the statements
up in the prompt, and reads a composed exercise's numbered steps back to compose it again. There
is no in-process registry, so a task written by another process, read from a file or sent over
HTTP is recognised just the same.

The references are our own code, so running them in-process (:func:`run_in_process`) is fine;
it is how expected values, examples and the test suite's checks are computed.
"""

from __future__ import annotations

import builtins
import copy
import functools
import gc
import hashlib
import html
import itertools
import json
import keyword
import math
import random
import re
import signal
import string
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import pyast
from ..mutation import mutants, probe_inputs

__all__ = [
    "FAMILIES",
    "MISTAKE_KINDS",
    "STEPS",
    "VARIANTS",
    "BankTask",
    "Identification",
    "Outcome",
    "PipelineVariant",
    "Step",
    "Variant",
    "break_syntax",
    "build_task",
    "chain_difficulty",
    "compose",
    "entry_point_index",
    "find_variant",
    "identify",
    "json_roundtrips",
    "load_function",
    "mistake_code",
    "mistake_kinds",
    "random_chain",
    "random_pipeline",
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
        seconds is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise _TimeLimit()

    # An alarm that lands in a garbage-collector callback (hypothesis installs one, for instance) is
    # swallowed there as "unraisable" and the loop it was meant to stop goes on: no collection runs
    # inside the block, so the alarm always lands in the code it bounds.
    collecting = gc.isenabled()
    gc.disable()
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, float(seconds or 0.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
        if collecting:
            gc.enable()


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
_ALLOCATING = ("append(", "extend(", "insert(", "+= [", "+= ch", '+= "', "+= token", ".add(")


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


MAX_KILLER_TESTS = 3
"""Tests a bank task may add to tell its reference from its mutants."""
MUTANT_STEPS = 5_000
"""Most lines a mutant's (or a neighbour input's) call may run in the search: the bank's references
run a few hundred on these inputs, so only a call that never stops reaches it. Counted, not timed:
the tests a task gets do not depend on the machine, its load or the calling thread."""


class _OutOfSteps(BaseException):
    """Raised by the line counter; a BaseException so that ``except Exception`` cannot eat it."""


MUTANT_VALUE_BITS = 1 << 16
"""Largest int a mutant's local may hold (and, in items, the longest str or container): one line
of a mutant that squares a number every loop would otherwise outgrow the memory in a few dozen lines."""


def _runaway(frame: Any) -> bool:
    for value in frame.f_locals.values():
        t = type(value)
        if t is int and value.bit_length() > MUTANT_VALUE_BITS:
            return True
        if (t is str or t is list or t is dict or t is set) and len(value) > MUTANT_VALUE_BITS:
            return True
    return False


def _bounded(function: Callable[..., Any], args: Args) -> Any:
    """``function(*args)`` on a copy of the arguments, stopped with :class:`_OutOfSteps` after
    :data:`MUTANT_STEPS` lines, or when a local grows past :data:`MUTANT_VALUE_BITS` (checked every
    8 lines). Counted, not timed, and runs in any thread (``sys.settrace`` is per thread)."""
    steps = [0]

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            steps[0] += 1
            if steps[0] > MUTANT_STEPS or (steps[0] % 8 == 0 and _runaway(frame)):
                raise _OutOfSteps
        return local

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        return local

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        return function(*copy.deepcopy(args))
    finally:
        sys.settrace(previous)


def _mutant_killers(
    code: str,
    entry_point: str,
    reference: Callable[..., Any],
    inputs: Sequence[Args],
    outputs: Sequence[Any],
    variant: Variant,
    params: Params,
    rng: random.Random,
) -> list[tuple[Args, Any]]:
    """Inputs, with the reference's outputs, that tell apart mutants of the reference the tests miss.

    Mutants are our own code with one operator changed, run in this process under a line budget
    (:func:`_bounded`), so one that never stops is cut off, deterministically. Candidates are the
    tests' inputs with one integer moved by one, then fresh inputs of the variant, small ones first,
    where boundaries are likeliest to be hit.
    """
    alive: list[Callable[..., Any]] = []
    for mutant in mutants(code, key=code):
        try:
            function = load_function(mutant.source, entry_point)
        except Exception:
            continue
        if not any(_differs(function, args, out) for args, out in zip(inputs, outputs, strict=True)):
            alive.append(function)
    added: list[tuple[Args, Any]] = []
    if not alive:
        return added
    neighbours = probe_inputs(list(inputs))[len(inputs) :]
    rng.shuffle(neighbours)
    fresh = [variant.make_input(rng, params, scale) for scale in (0.0, 0.0, 0.1, 0.2, 0.3, 0.5) * 4]
    for args in [*neighbours[:24], *fresh]:
        if len(added) >= MAX_KILLER_TESTS or not alive:
            break
        try:  # a neighbour may lie outside what the reference was written for: it may raise or loop
            out = _bounded(reference, args)
        except (_OutOfSteps, Exception):
            continue
        killed = [m for m in alive if _differs(m, args, out)]
        if killed and json_roundtrips(out):
            added.append((args, out))
            alive = [m for m in alive if m not in killed]
    return added


def _differs(mutant: Callable[..., Any], args: Args, expected: Any) -> bool:
    """Whether ``mutant`` returns something other than ``expected`` on ``args`` (raising, or running
    out of steps, counts as different)."""
    try:
        return not same_value(_bounded(mutant, args), expected)
    except (_OutOfSteps, Exception):
        return True


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
    stand-in (None, 0, first argument, [], "", {}) would still pass them all, up to
    ``MAX_KILLER_TESTS`` more that tell the reference from its one-token mutants (as validation's
    ``weak_tests`` gate asks), and a few tests carry an explicit ``expected`` when it survives JSON
    unchanged.
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
    # a careful author adds the cases that tell the reference from its one-token mutants (x == t,
    # an empty run, one digit), drawn from their own stream so the rest of the task stays as it was
    search = random.Random(stable_hash("killers", variant.family, variant.name, pi, ep, len(inputs)))
    for args, out in _mutant_killers(code, ep, function, inputs, outputs, variant, params, search):
        if add(args):
            outputs.append(out)
            randoms.append(args)

    order = list(range(len(inputs)))
    rng.shuffle(order)
    inputs = [inputs[i] for i in order]
    outputs = [outputs[i] for i in order]

    candidates = [i for i, out in enumerate(outputs) if json_roundtrips(out)]
    n_expected = min(len(candidates), rng.choice((0, 1, 1, 2)))
    expected_at = frozenset(rng.sample(candidates, n_expected))

    short = [
        i for i, a in enumerate(inputs) if a in randoms and len(_call_text(ep, a)) <= 60 and len(repr(outputs[i])) <= 60
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
    return all(o.ok and same_value(o.value, out) for o, (_, out) in zip(outcomes, examples, strict=False))


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
        "Implement `$sig`: count the primes $range_words. Use an efficient method: `n` can be as large as 20000.",
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
        "`$sig` computes a Levenshtein-style distance between `a` and `b`. $cost_note Either string may be empty.",
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
        "Write `$sig` that returns the number of 1 bits in the binary representation of the non-negative integer `n`.",
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
    make_input=lambda rng, p, scale: (_matrix(rng, _size(rng, 1, 6, scale), _size(rng, 2, 6, scale), 0, 9),),
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
    make_input=lambda rng, p, scale: (_matrix(rng, _size(rng, 2, 7, scale), _size(rng, 2, 7, scale), 0, 99),),
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
        ["".join("#" if rng.random() < 0.45 else "." for _ in range(cols)) for _ in range(_size(rng, 2, 9, scale))]
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


# ============================================================================================
# Multi-step exercises: pipelines composed from building blocks
# ============================================================================================
#
# The fixed variants above are few; a long run proposes hundreds of tasks, and the run's
# duplicate gate (token-shingle similarity of the references) rejects a task whose code has the
# same shape as an earlier one. A *pipeline* exercise chains 1 to 4 steps (filters, maps,
# reorderings, aggregations, parsers, graph and grid walks...), each a different code shape, so
# different chains are structurally different programs. Its difficulty is computed from the
# chain (the steps' costs plus a little per extra step), its statement lists the steps in order,
# and it is a regular :class:`Variant` built on the fly (:func:`compose`), so everything that
# works on a variant (tests, mistakes, identification) works on it.


@dataclass(frozen=True)
class Step:
    """One building block of a pipeline: reads a value of type ``takes``, produces ``gives``.

    ``code`` is a :class:`string.Template` of statements with ``$IN`` (the variable read),
    ``$OUT`` (the variable assigned, last) and the parameters; ``phrase`` describes it as one item
    of the statement's numbered list (no ``;``, no final full stop). ``bugs`` are realistic edits
    of ``code`` per mistake kind. ``cost`` is what the step adds to the task's difficulty.
    """

    name: str
    family: str
    topic: str
    takes: str
    gives: str
    cost: float
    phrase: str
    code: str
    slug: str
    params: tuple[Params, ...] = ({},)
    bugs: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    reorders: bool = False
    """Only changes the order of a list (a reorder right after another one is pointless)."""
    order_free: bool = False
    """Ignores the order of its input (a reorder right before it is pointless)."""
    first_only: bool = False
    """Only reads the function's own argument (its work grows with the value of an integer, which a
    step before it could make huge)."""

    def values(self, params_index: int) -> dict[str, str]:
        return {k: (v if isinstance(v, str) else str(v)) for k, v in self.params[params_index].items()}

    def render_phrase(self, params_index: int) -> str:
        return string.Template(self.phrase).substitute(self.values(params_index))

    def render_code(self, params_index: int, src: str, dst: str, template: str | None = None) -> str:
        text = _code(self.code if template is None else template)
        return string.Template(text).substitute({**self.values(params_index), "IN": src, "OUT": dst})


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


def _step(
    name: str, family: str, topic: str, takes: str, gives: str, cost: float, phrase: str, code: str, slug: str,
    params: tuple[Params, ...] = ({},), bugs: Mapping[str, Sequence[tuple[str, str]]] | None = None, **flags: bool,
) -> Step:  # fmt: skip
    edits = {kind: tuple(pairs) for kind, pairs in (bugs or {}).items()}
    return Step(name, family, topic, takes, gives, cost, phrase, code, slug, params, edits, **flags)


STEPS: tuple[Step, ...] = (
    # --- lists ---------------------------------------------------------------------------------
    _step(
        "keep_multiples", "lists", "filtering", "ints", "ints", 0.04,
        "keep only the numbers divisible by $k", "$OUT = [x for x in $IN if x % $k == 0]", "multiples",
        ({"k": 2}, {"k": 3}, {"k": 5}), {"edge_case": [("x % $k == 0", "x % $k == 0 and x != 0")]},
    ),
    _step(
        "keep_greater", "lists", "filtering", "ints", "ints", 0.04,
        "keep only the numbers greater than $k", "$OUT = [x for x in $IN if x > $k]", "large",
        ({"k": 0}, {"k": 5}, {"k": 10}), {"off_by_one": [("x > $k", "x >= $k")]},
    ),
    _step(
        "square_each", "lists", "mapping", "ints", "ints", 0.04,
        "replace every number by its square",
        """
        squares = []
        for x in $IN:
            squares.append(x * x)
        $OUT = squares
        """,
        "squares", bugs={"logic": [("x * x", "x * 2")]},
    ),
    _step(
        "affine", "lists", "mapping", "ints", "ints", 0.05,
        "multiply every number by $a and then $b_text", "$OUT = [x * $a $b_op for x in $IN]", "scaled",
        ({"a": 2, "b_text": "add 1", "b_op": "+ 1"}, {"a": 3, "b_text": "subtract 2", "b_op": "- 2"}),
        {"logic": [("x * $a $b_op", "(x $b_op) * $a")]},
    ),
    _step(
        "reverse", "lists", "slicing", "ints", "ints", 0.03, "reverse the order of the numbers",
        "$OUT = $IN[::-1]", "reversed", bugs={"off_by_one": [("$IN[::-1]", "$IN[:0:-1]")]}, reorders=True,
    ),
    _step(
        "every_other", "lists", "slicing", "ints", "ints", 0.04,
        "keep the numbers at the 1st, 3rd, 5th, ... positions", "$OUT = $IN[::2]", "alternate",
        bugs={"off_by_one": [("[::2]", "[1::2]")]},
    ),
    _step(
        "clamp", "lists", "mapping", "ints", "ints", 0.06,
        "clamp every number into the range $lo to $hi (smaller numbers become $lo, larger ones $hi)",
        "$OUT = [min(max(x, $lo), $hi) for x in $IN]", "clamped",
        ({"lo": 0, "hi": 9}, {"lo": -5, "hi": 5}), {"logic": [("min(max(x, $lo), $hi)", "max(min(x, $lo), $hi)")]},
    ),
    _step(
        "dedupe", "lists", "distinct values", "ints", "ints", 0.1,
        "remove repeated numbers, keeping only the first occurrence of each",
        """
        seen = set()
        unique = []
        for x in $IN:
            if x not in seen:
                seen.add(x)
                unique.append(x)
        $OUT = unique
        """,
        "unique", bugs={"logic": [("if x not in seen:", "if x not in unique[-1:]:")]},
    ),
    _step(
        "prefix_sums", "lists", "running totals", "ints", "ints", 0.1,
        "replace the list by its running totals (the i-th total is the sum of the first i numbers)",
        """
        running = 0
        totals = []
        for x in $IN:
            running += x
            totals.append(running)
        $OUT = totals
        """,
        "running_totals",
        bugs={
            "off_by_one": [
                (
                    "    running += x\n    totals.append(running)\n",
                    "    totals.append(running)\n    running += x\n",
                )
            ],
        },
    ),
    _step(
        "differences", "lists", "adjacent pairs", "ints", "ints", 0.1,
        "replace the list by the differences between neighbours (each number minus the one before it), which "
        "leaves one number fewer",
        "$OUT = [b - a for a, b in zip($IN, $IN[1:])]", "steps", bugs={"logic": [("b - a", "a - b")]},
    ),
    _step(
        "pair_sums", "lists", "adjacent pairs", "ints", "ints", 0.1,
        "add up the numbers in pairs (1st + 2nd, 3rd + 4th, ...), an unpaired last number staying as it is",
        "$OUT = [sum($IN[i:i + 2]) for i in range(0, len($IN), 2)]", "pair_sums",
        bugs={"off_by_one": [("range(0, len($IN), 2)", "range(0, len($IN) - 1, 2)")]},
    ),
    _step(
        "window_sums", "lists", "sliding window", "ints", "ints", 0.18,
        "replace the list by the sums of every $k consecutive numbers (a list shorter than $k gives no sums)",
        "$OUT = [sum($IN[i:i + $k]) for i in range(len($IN) - $k + 1)]", "window_sums",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("range(len($IN) - $k + 1)", "range(len($IN) - $k)")]},
    ),
    _step(
        "running_max", "lists", "running maximum", "ints", "ints", 0.12,
        "replace every number by the largest number up to and including it",
        """
        peaks = []
        for x in $IN:
            peaks.append(x if not peaks else max(peaks[-1], x))
        $OUT = peaks
        """,
        "peaks", bugs={"edge_case": [("x if not peaks else max(peaks[-1], x)", "max(peaks[-1] if peaks else 0, x)")]},
    ),
    _step(
        "rotate", "lists", "rotation", "ints", "ints", 0.12,
        "rotate the list $k places to the right (the last $k numbers move to the front, wrapping around "
        "as many times as needed for a short list)",
        """
        if $IN:
            shift = $k % len($IN)
            $OUT = $IN[len($IN) - shift:] + $IN[:len($IN) - shift]
        else:
            $OUT = []
        """,
        "rotated", ({"k": 2}, {"k": 3}), {"edge_case": [("shift = $k % len($IN)", "shift = min($k, len($IN))")]},
        reorders=True,
    ),
    _step(
        "total", "lists", "aggregation", "ints", "int", 0.03, "add the numbers up (no numbers give 0)",
        """
        total = 0
        for x in $IN:
            total += x
        $OUT = total
        """,
        "total", order_free=True,
    ),
    _step(
        "largest", "lists", "aggregation", "ints", "int", 0.05, "take the largest number (0 when there are none)",
        "$OUT = max($IN, default=0)", "largest", bugs={"edge_case": [("max($IN, default=0)", "max($IN + [0])")]},
        order_free=True,
    ),
    _step(
        "spread", "lists", "aggregation", "ints", "int", 0.06,
        "take the largest number minus the smallest one (0 when there are no numbers)",
        "$OUT = max($IN) - min($IN) if $IN else 0", "spread", bugs={"logic": [("- min($IN)", "- $IN[0]")]},
        order_free=True,
    ),
    _step(
        "count_distinct", "lists", "distinct values", "ints", "int", 0.04, "count how many different numbers there are",
        "$OUT = len(set($IN))", "distinct_count", bugs={"logic": [("len(set($IN))", "len($IN)")]}, order_free=True,
    ),
    # --- arithmetic --------------------------------------------------------------------------
    _step(
        "alt_sum", "arithmetic", "alternating sums", "ints", "int", 0.08,
        "add the numbers with alternating signs: plus the 1st, minus the 2nd, plus the 3rd, and so on (0 for no "
        "numbers)",
        """
        signed = 0
        for i, x in enumerate($IN):
            if i % 2 == 0:
                signed += x
            else:
                signed -= x
        $OUT = signed
        """,
        "alternating_sum", bugs={"off_by_one": [("if i % 2 == 0:", "if i % 2 == 1:")]},
    ),
    _step(
        "digit_sums", "arithmetic", "digits", "ints", "ints", 0.1,
        "replace every number by the sum of its decimal digits (ignoring the sign)",
        """
        digit_sums = []
        for x in $IN:
            rest = abs(x)
            acc = 0
            while rest:
                acc += rest % 10
                rest //= 10
            digit_sums.append(acc)
        $OUT = digit_sums
        """,
        "digit_sums",
        bugs={
            "off_by_one": [("while rest:", "while rest > 9:")],
            "edge_case": [("rest = abs(x)", "rest = x if x > 0 else 0")],
        },
    ),
    _step(
        "gcd_all", "arithmetic", "greatest common divisor", "ints", "int", 0.2,
        "take the greatest common divisor of all the numbers, ignoring signs (0 when there are no numbers or "
        "all are 0)",
        """
        g = 0
        for x in $IN:
            a, b = g, abs(x)
            while b:
                a, b = b, a % b
            g = a
        $OUT = g
        """,
        "gcd", bugs={"edge_case": [("a, b = g, abs(x)", "a, b = g, x")]}, order_free=True,
    ),
    _step(
        "keep_primes", "arithmetic", "primes", "ints", "ints", 0.15, "keep only the prime numbers",
        """
        primes = []
        for x in $IN:
            if x < 2:
                continue
            d = 2
            while d * d <= x:
                if x % d == 0:
                    break
                d += 1
            else:
                primes.append(x)
        $OUT = primes
        """,
        "primes",
        bugs={
            "edge_case": [("if x < 2:", "if x < 1:")],
            "off_by_one": [("while d * d <= x:", "while d * d < x:")],
        },
    ),
    _step(
        "digits_of", "arithmetic", "digits", "int", "ints", 0.05,
        "split the number into its decimal digits, most significant first (ignoring the sign)",
        "$OUT = [int(c) for c in str(abs($IN))]", "digits", bugs={"edge_case": [("str(abs($IN))", "str($IN)")]},
    ),
    _step(
        "divisors", "arithmetic", "divisors", "int", "ints", 0.15,
        "list the positive divisors of its absolute value in increasing order (0 has none)",
        """
        target = abs($IN)
        small, large = [], []
        d = 1
        while d * d <= target:
            if target % d == 0:
                small.append(d)
                if d != target // d:
                    large.append(target // d)
            d += 1
        $OUT = small + large[::-1]
        """,
        "divisors",
        bugs={
            "edge_case": [("if d != target // d:", "if True:")],
            "off_by_one": [("while d * d <= target:", "while d * d < target:")],
        },
    ),
    _step(
        "reverse_digits", "arithmetic", "digits", "int", "int", 0.1,
        "reverse its decimal digits, keeping its sign (-120 becomes -21)",
        "$OUT = int(str(abs($IN))[::-1]) * (-1 if $IN < 0 else 1)", "reversed_digits",
        bugs={"edge_case": [("int(str(abs($IN))[::-1]) * (-1 if $IN < 0 else 1)", "int(str(abs($IN))[::-1])")]},
    ),
    # --- strings -----------------------------------------------------------------------------
    _step(
        "lower", "strings", "case", "text", "text", 0.02, "convert it to lower case", "$OUT = $IN.lower()", "lowered",
    ),
    _step(
        "letters_only", "strings", "cleaning", "text", "text", 0.05,
        "remove every character that is neither a letter nor a space",
        "$OUT = ''.join(ch for ch in $IN if ch.isalpha() or ch == ' ')", "letters",
        bugs={"edge_case": [("if ch.isalpha() or ch == ' '", "if ch.isalpha()")]},
    ),
    _step(
        "remove_vowels", "strings", "vowels", "text", "text", 0.05,
        "remove the vowels (a, e, i, o, u, in either case)",
        "$OUT = ''.join(ch for ch in $IN if ch.lower() not in 'aeiou')", "consonants",
        bugs={"edge_case": [("ch.lower() not in", "ch not in")]},
    ),
    _step(
        "squeeze", "strings", "runs", "text", "text", 0.1,
        "collapse every run of the same character into one character",
        """
        squeezed = ''
        for ch in $IN:
            if not squeezed or squeezed[-1] != ch:
                squeezed += ch
        $OUT = squeezed
        """,
        "squeezed",
        bugs={
            "off_by_one": [("if not squeezed or squeezed[-1] != ch:", "if squeezed and squeezed[-1] != ch:")],
        },
    ),
    _step(
        "caesar", "strings", "ciphers", "text", "text", 0.15,
        "shift every lower-case letter $k places forward in the alphabet, wrapping around from z to a (other "
        "characters stay as they are)",
        """
        shifted = []
        for ch in $IN:
            if 'a' <= ch <= 'z':
                shifted.append(chr((ord(ch) - ord('a') + $k) % 26 + ord('a')))
            else:
                shifted.append(ch)
        $OUT = ''.join(shifted)
        """,
        "shifted", ({"k": 1}, {"k": 3}, {"k": 13}),
        {"edge_case": [("chr((ord(ch) - ord('a') + $k) % 26 + ord('a'))", "chr(ord(ch) + $k)")]},
    ),
    _step(
        "split_words", "strings", "tokenizing", "text", "words", 0.02, "split it into words at whitespace",
        "$OUT = $IN.split()", "words", bugs={"edge_case": [("$IN.split()", "$IN.split(' ')")]},
    ),
    _step(
        "count_vowels", "strings", "counting characters", "text", "int", 0.05,
        "count its vowels (a, e, i, o, u, in either case)",
        """
        vowels = 0
        for ch in $IN.lower():
            if ch in 'aeiou':
                vowels += 1
        $OUT = vowels
        """,
        "vowel_count", bugs={"edge_case": [("for ch in $IN.lower():", "for ch in $IN:")]},
    ),
    _step(
        "char_codes", "strings", "character codes", "text", "ints", 0.04,
        "replace it by the list of its characters' Unicode code points (as `ord` gives them)",
        "$OUT = [ord(ch) for ch in $IN]", "codes", bugs={"logic": [("ord(ch) for", "ord(ch) - ord('a') for")]},
    ),
    _step(
        "reverse_each", "strings", "reversal", "words", "words", 0.04,
        "reverse the letters of every word, keeping the words in order", "$OUT = [w[::-1] for w in $IN]", "mirrored",
        bugs={"logic": [("[w[::-1] for w in $IN]", "$IN[::-1]")]},
    ),
    _step(
        "join_words", "strings", "joining", "words", "text", 0.02, "join the words with single spaces",
        "$OUT = ' '.join($IN)", "joined", bugs={"logic": [("' '.join($IN)", "''.join($IN)")]},
    ),
    _step(
        "word_lengths", "strings", "lengths", "words", "ints", 0.03, "replace every word by its length",
        "$OUT = [len(w) for w in $IN]", "lengths",
    ),
    _step(
        "long_words", "strings", "filtering", "words", "words", 0.04,
        "keep only the words with more than $k characters", "$OUT = [w for w in $IN if len(w) > $k]", "long_words",
        ({"k": 3}, {"k": 4}), {"off_by_one": [("len(w) > $k", "len(w) >= $k")]},
    ),
    _step(
        "capitalize", "strings", "case", "words", "words", 0.03,
        "capitalize every word (first character upper case, the rest lower case)",
        "$OUT = [w[:1].upper() + w[1:].lower() for w in $IN]", "capitalized",
        bugs={"edge_case": [("w[:1].upper() + w[1:].lower()", "w[:1].upper() + w[1:]")]},
    ),
    _step(
        "palindromes", "strings", "palindromes", "words", "words", 0.08,
        "keep only the words that read the same backwards, ignoring case",
        "$OUT = [w for w in $IN if w.lower() == w.lower()[::-1]]", "palindromes",
        bugs={"edge_case": [("w.lower() == w.lower()[::-1]", "w == w[::-1]")]},
    ),
    _step(
        "common_prefix", "strings", "prefixes", "words", "text", 0.2,
        "take the longest prefix that all the words share (the empty string when there are no words)",
        """
        prefix = $IN[0] if $IN else ''
        for w in $IN[1:]:
            while not w.startswith(prefix):
                prefix = prefix[:-1]
        $OUT = prefix
        """,
        "common_prefix", bugs={"exception": [("prefix = $IN[0] if $IN else ''", "prefix = $IN[0]")]},
        order_free=True,
    ),
    # --- dictionaries ------------------------------------------------------------------------
    _step(
        "count_words", "dicts", "counting", "words", "counts", 0.08,
        "count how often each word occurs, as a dictionary from word to count",
        """
        counts = {}
        for w in $IN:
            counts[w] = counts.get(w, 0) + 1
        $OUT = counts
        """,
        "word_counts", bugs={"off_by_one": [("counts.get(w, 0) + 1", "counts.get(w, 1)")]},
    ),
    _step(
        "count_letters", "dicts", "counting", "text", "counts", 0.1,
        "count each letter, case-insensitively, as a dictionary from lower-case letter to count (other "
        "characters are not counted)",
        """
        letters = {}
        for ch in $IN.lower():
            if ch.isalpha():
                letters[ch] = letters.get(ch, 0) + 1
        $OUT = letters
        """,
        "letter_counts", bugs={"edge_case": [("for ch in $IN.lower():", "for ch in $IN:")]},
    ),
    _step(
        "frequent_keys", "dicts", "filtering", "counts", "words", 0.08,
        "list the keys whose count is at least $k, in alphabetical order",
        "$OUT = sorted(key for key, c in $IN.items() if c >= $k)", "frequent",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("c >= $k", "c > $k")]},
    ),
    _step(
        "by_count", "dicts", "sorting by value", "counts", "words", 0.14,
        "list the keys by decreasing count, keys with equal counts in alphabetical order",
        "$OUT = sorted($IN, key=lambda key: (-$IN[key], key))", "by_count",
        bugs={"logic": [("key=lambda key: (-$IN[key], key)", "key=lambda key: -$IN[key]")]},
    ),
    _step(
        "top_count", "dicts", "aggregation", "counts", "int", 0.05,
        "take the largest count (0 when the dictionary is empty)", "$OUT = max($IN.values(), default=0)", "top_count",
        bugs={"logic": [("max($IN.values(), default=0)", "len($IN)")]},
    ),
    _step(
        "count_pairs", "dicts", "items", "counts", "pairs", 0.05,
        "turn the dictionary into a list of `[key, count]` pairs sorted by key",
        "$OUT = [[key, $IN[key]] for key in sorted($IN)]", "pairs",
        bugs={"logic": [("for key in sorted($IN)", "for key in $IN")]},
    ),
    _step(
        "singles", "dicts", "counting", "ints", "ints", 0.14,
        "keep only the numbers that occur exactly once in the list, in their order",
        """
        tally = {}
        for x in $IN:
            tally[x] = tally.get(x, 0) + 1
        $OUT = [x for x in $IN if tally[x] == 1]
        """,
        "singles", bugs={"logic": [("if tally[x] == 1", "if tally[x] <= 2")]},
    ),
    _step(
        "occurrences", "dicts", "counting", "ints", "ints", 0.1,
        "replace every number by how many times it occurs in the whole list",
        """
        tally = {}
        for x in $IN:
            tally[x] = tally.get(x, 0) + 1
        $OUT = [tally[x] for x in $IN]
        """,
        "occurrences", bugs={"off_by_one": [("tally.get(x, 0) + 1", "tally.get(x, 1)")]},
    ),
    _step(
        "first_index", "dicts", "index maps", "ints", "ints", 0.12,
        "replace every number by the position (from 0) of its first occurrence in the list",
        """
        first_at = {}
        for i, x in enumerate($IN):
            first_at.setdefault(x, i)
        $OUT = [first_at[x] for x in $IN]
        """,
        "first_positions", bugs={"logic": [("first_at.setdefault(x, i)", "first_at[x] = i")]},
    ),
    # --- sorting and searching -----------------------------------------------------------------
    _step(
        "sort_asc", "sorting_searching", "sorting", "ints", "ints", 0.03, "sort the numbers in increasing order",
        "$OUT = sorted($IN)", "sorted", bugs={"logic": [("sorted($IN)", "sorted($IN, key=abs)")]}, reorders=True,
    ),
    _step(
        "sort_desc", "sorting_searching", "sorting", "ints", "ints", 0.03, "sort the numbers in decreasing order",
        "$OUT = sorted($IN, reverse=True)", "descending",
        bugs={
            "logic": [("sorted($IN, reverse=True)", "sorted($IN)")],
        },
        reorders=True,
    ),
    _step(
        "sort_by_abs", "sorting_searching", "custom sort keys", "ints", "ints", 0.08,
        "sort the numbers by absolute value, a negative number before the positive one of the same size",
        "$OUT = sorted($IN, key=lambda x: (abs(x), x))", "by_size",
        bugs={"edge_case": [("key=lambda x: (abs(x), x)", "key=abs")]}, reorders=True,
    ),
    _step(
        "sort_words", "sorting_searching", "custom sort keys", "words", "words", 0.08,
        "sort the words by length, shortest first, keeping the original order of words of equal length",
        "$OUT = sorted($IN, key=len)", "by_length", bugs={"logic": [("sorted($IN, key=len)", "sorted($IN)")]},
    ),
    _step(
        "top_k", "sorting_searching", "selection", "ints", "ints", 0.05,
        "keep the $k largest numbers, largest first (all of them when there are fewer)",
        "$OUT = sorted($IN, reverse=True)[:$k]", "top", ({"k": 3}, {"k": 4}),
        {"logic": [("sorted($IN, reverse=True)[:$k]", "sorted($IN)[-$k:]")]},
    ),
    _step(
        "count_below", "sorting_searching", "binary search", "ints", "int", 0.15,
        "count how many numbers are smaller than $k (binary search in the sorted numbers is one way)",
        """
        ordered = sorted($IN)
        lo, hi = 0, len(ordered)
        while lo < hi:
            mid = (lo + hi) // 2
            if ordered[mid] < $k:
                lo = mid + 1
            else:
                hi = mid
        $OUT = lo
        """,
        "count_below", ({"k": 0}, {"k": 10}), {"off_by_one": [("if ordered[mid] < $k:", "if ordered[mid] <= $k:")]},
        order_free=True,
    ),
    _step(
        "lower_median", "sorting_searching", "order statistics", "ints", "int", 0.1,
        "take the lower median: the middle number once sorted, the smaller middle one for an even count (0 when "
        "there are no numbers)",
        "$OUT = sorted($IN)[(len($IN) - 1) // 2] if $IN else 0", "median",
        bugs={"off_by_one": [("[(len($IN) - 1) // 2]", "[len($IN) // 2]")]}, order_free=True,
    ),
    _step(
        "inversions", "sorting_searching", "inversions", "ints", "int", 0.22,
        "count the pairs of positions i < j where the number at i is larger than the number at j",
        """
        inverted = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                if $IN[i] > $IN[j]:
                    inverted += 1
        $OUT = inverted
        """,
        "inversions",
        bugs={
            "edge_case": [("if $IN[i] > $IN[j]:", "if $IN[i] >= $IN[j]:")],
            "off_by_one": [("range(i + 1, len($IN))", "range(i + 2, len($IN))")],
        },
    ),
    # --- bit manipulation ----------------------------------------------------------------------
    _step(
        "popcounts", "bits", "set bits", "ints", "ints", 0.05,
        "replace every number by the number of 1 bits in the binary form of its absolute value",
        "$OUT = [bin(x).count('1') for x in $IN]", "bit_counts",
        bugs={"logic": [("bin(x).count('1')", "len(bin(abs(x))) - 2")]},
    ),
    _step(
        "xor_all", "bits", "xor", "ints", "int", 0.06, "combine all the numbers with bitwise XOR (0 for no numbers)",
        """
        folded = 0
        for x in $IN:
            folded ^= x
        $OUT = folded
        """,
        "xor", bugs={"logic": [("folded ^= x", "folded |= x")]}, order_free=True,
    ),
    _step(
        "xor_k", "bits", "xor", "ints", "ints", 0.04, "replace every number x by x XOR $k",
        "$OUT = [x ^ $k for x in $IN]", "masked", ({"k": 1}, {"k": 5}, {"k": 12}),
        {"logic": [("x ^ $k", "x | $k")]},
    ),
    _step(
        "powers_of_two", "bits", "powers of two", "ints", "ints", 0.1,
        "keep only the numbers that are powers of two (1, 2, 4, 8, ...)",
        "$OUT = [x for x in $IN if x > 0 and x & (x - 1) == 0]", "powers",
        bugs={"edge_case": [("x > 0 and x & (x - 1) == 0", "x & (x - 1) == 0")]},
    ),
    _step(
        "lowest_bit", "bits", "lowest set bit", "ints", "ints", 0.1,
        "replace every number x by its lowest set bit, x AND -x (0 stays 0)", "$OUT = [x & -x for x in $IN]",
        "low_bits", bugs={"logic": [("x & -x", "x & (x - 1)")]},
    ),
    _step(
        "bits_of", "bits", "binary digits", "int", "ints", 0.08,
        "write its absolute value in binary as a list of bits, most significant first (0 gives [0])",
        "$OUT = [int(b) for b in bin(abs($IN))[2:]]", "bits",
        bugs={
            "edge_case": [("bin(abs($IN))[2:]", "bin($IN)[2:]")],
        },
    ),
    _step(
        "one_bit_pairs", "bits", "hamming distance", "ints", "int", 0.25,
        "count the pairs of positions i < j whose numbers differ in exactly one bit",
        """
        close = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                if bin($IN[i] ^ $IN[j]).count('1') == 1:
                    close += 1
        $OUT = close
        """,
        "one_bit_pairs",
        bugs={
            "logic": [("bin($IN[i] ^ $IN[j]).count('1') == 1", "bin($IN[i] ^ $IN[j]).count('1') <= 1")],
        },
    ),
    # --- matrices ------------------------------------------------------------------------------
    _step(
        "row_sums", "matrices", "rows", "grid", "ints", 0.04, "replace the grid by the sum of each row",
        "$OUT = [sum(row) for row in $IN]", "row_sums", bugs={"off_by_one": [("sum(row) for", "sum(row[1:]) for")]},
    ),
    _step(
        "col_sums", "matrices", "columns", "grid", "ints", 0.1,
        "replace the grid by the sum of each column (no rows give no sums)",
        "$OUT = [sum(row[c] for row in $IN) for c in range(len($IN[0]))] if $IN else []", "column_sums",
        bugs={
            "exception": [
                (
                    "[sum(row[c] for row in $IN) for c in range(len($IN[0]))] if $IN else []",
                    "[sum(row[c] for row in $IN) for c in range(len($IN[0]))]",
                )
            ],
        },
    ),
    _step(
        "flatten_grid", "matrices", "flattening", "grid", "ints", 0.04,
        "read the grid row by row into one flat list",
        """
        cells = []
        for row in $IN:
            cells.extend(row)
        $OUT = cells
        """,
        "cells",
    ),
    _step(
        "transpose", "matrices", "transpose", "grid", "grid", 0.1,
        "transpose the grid (row i becomes column i)",
        """
        flipped = []
        for c in range(len($IN[0]) if $IN else 0):
            flipped.append([row[c] for row in $IN])
        $OUT = flipped
        """,
        "transposed", bugs={"exception": [("range(len($IN[0]) if $IN else 0)", "range(len($IN[0]))")]},
    ),
    _step(
        "rotate_grid", "matrices", "rotation", "grid", "grid", 0.18, "rotate the grid 90 degrees clockwise",
        "$OUT = [list(row) for row in zip(*$IN[::-1])]", "rotated_grid",
        bugs={"logic": [("zip(*$IN[::-1])", "zip(*$IN)")]},
    ),
    _step(
        "diagonal", "matrices", "diagonals", "grid", "ints", 0.06,
        "take the main diagonal (the entries whose row and column numbers are equal)",
        "$OUT = [$IN[i][i] for i in range(min(len($IN), len($IN[0]) if $IN else 0))]", "diagonal",
        bugs={
            "off_by_one": [
                (
                    "range(min(len($IN), len($IN[0]) if $IN else 0))",
                    "range(min(len($IN), len($IN[0]) if $IN else 0) - 1)",
                )
            ],
        },
    ),
    _step(
        "neighbour_sums", "matrices", "neighbourhoods", "grid", "grid", 0.2,
        "replace every entry by the sum of its up to four horizontal and vertical neighbours",
        """
        rows = len($IN)
        sums = []
        for r in range(rows):
            sums.append([])
            for c in range(len($IN[r])):
                acc = 0
                for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    if 0 <= r + dr < rows and 0 <= c + dc < len($IN[r]):
                        acc += $IN[r + dr][c + dc]
                sums[r].append(acc)
        $OUT = sums
        """,
        "neighbour_sums",
        bugs={
            "edge_case": [
                (
                    "if 0 <= r + dr < rows and 0 <= c + dc < len($IN[r]):",
                    "if r + dr < rows and c + dc < len($IN[r]):",
                )
            ],
        },
    ),
    _step(
        "spiral", "matrices", "spiral order", "grid", "ints", 0.35,
        "read its entries in clockwise spiral order, starting at the top-left corner",
        """
        order = []
        top, bottom, left, right = 0, len($IN) - 1, 0, (len($IN[0]) - 1 if $IN else -1)
        while top <= bottom and left <= right:
            for c in range(left, right + 1):
                order.append($IN[top][c])
            for r in range(top + 1, bottom + 1):
                order.append($IN[r][right])
            if top < bottom and left < right:
                for c in range(right - 1, left - 1, -1):
                    order.append($IN[bottom][c])
                for r in range(bottom - 1, top, -1):
                    order.append($IN[r][left])
            top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
        $OUT = order
        """,
        "spiral", bugs={"edge_case": [("if top < bottom and left < right:", "if True:")]},
    ),
    _step(
        "local_peaks", "matrices", "neighbourhoods", "grid", "int", 0.2,
        "count the entries strictly larger than each of their up to four horizontal and vertical neighbours",
        """
        peaks = 0
        for r, row in enumerate($IN):
            for c, x in enumerate(row):
                around = [$IN[r + dr][c + dc] for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
                          if 0 <= r + dr < len($IN) and 0 <= c + dc < len(row)]
                if all(x > y for y in around):
                    peaks += 1
        $OUT = peaks
        """,
        "peak_count", bugs={"edge_case": [("if all(x > y for y in around):", "if all(x >= y for y in around):")]},
    ),
    # --- dynamic programming -------------------------------------------------------------------
    _step(
        "max_subarray", "dynamic_programming", "maximum subarray", "ints", "int", 0.22,
        "take the largest sum of a non-empty run of consecutive numbers (0 when there are no numbers)",
        """
        best = $IN[0] if $IN else 0
        current = 0
        for x in $IN:
            current = max(x, current + x)
            best = max(best, current)
        $OUT = best
        """,
        "best_run", bugs={"edge_case": [("best = $IN[0] if $IN else 0", "best = 0")]},
    ),
    _step(
        "lis", "dynamic_programming", "increasing subsequences", "ints", "int", 0.35,
        "take the length of the longest strictly increasing subsequence (its numbers need not be adjacent)",
        """
        ending = []
        for i, x in enumerate($IN):
            ending.append(1 + max((ending[j] for j in range(i) if $IN[j] < x), default=0))
        $OUT = max(ending, default=0)
        """,
        "longest_increasing", bugs={"edge_case": [("if $IN[j] < x", "if $IN[j] <= x")]},
    ),
    _step(
        "no_adjacent", "dynamic_programming", "non-adjacent sums", "ints", "int", 0.28,
        "take the largest sum of numbers no two of which are neighbours in the list (taking none gives 0)",
        """
        take, skip = 0, 0
        for x in $IN:
            take, skip = skip + x, max(take, skip)
        $OUT = max(take, skip)
        """,
        "best_non_adjacent",
        bugs={
            "logic": [("take, skip = skip + x, max(take, skip)", "take, skip = take + x, max(take, skip)")],
        },
    ),
    _step(
        "coin_ways", "dynamic_programming", "counting combinations", "ints", "int", 0.35,
        "count the ways to make $k as a sum of the different positive numbers of the list, each usable any number "
        "of times and the order not mattering (1 way for an empty sum)",
        """
        ways = [1] + [0] * $k
        for coin in sorted(set(x for x in $IN if x > 0)):
            for total in range(coin, $k + 1):
                ways[total] += ways[total - coin]
        $OUT = ways[$k]
        """,
        "coin_ways", ({"k": 10}, {"k": 15}),
        {
            "logic": [("sorted(set(x for x in $IN if x > 0))", "[x for x in $IN if x > 0]")],
            "off_by_one": [("range(coin, $k + 1)", "range(coin, $k)")],
        },
        order_free=True,
    ),
    _step(
        "stairs", "dynamic_programming", "counting paths", "int", "int", 0.18,
        "count the ways to climb that many stairs taking 1, 2 or 3 stairs at a time, modulo 1000007 (1 way for "
        "0 stairs, none for a negative number)",
        """
        if $IN < 0:
            $OUT = 0
        else:
            a, b, c = 1, 0, 0
            for _ in range($IN):
                a, b, c = (a + b + c) % 1000007, a, b
            $OUT = a
        """,
        "stair_ways", bugs={"off_by_one": [("for _ in range($IN):", "for _ in range($IN - 1):")]}, first_only=True,
    ),
    _step(
        "grid_path", "dynamic_programming", "grid paths", "grid", "int", 0.3,
        "take the largest sum along a path from the top-left to the bottom-right entry that only moves right "
        "or down (0 for a grid without rows)",
        """
        best = []
        for r, row in enumerate($IN):
            best.append([])
            for c, x in enumerate(row):
                before = [v for v in (best[r - 1][c] if r else None, best[r][c - 1] if c else None) if v is not None]
                best[r].append(x + max(before, default=0))
        $OUT = best[-1][-1] if best else 0
        """,
        "best_path", bugs={"edge_case": [("x + max(before, default=0)", "x + max(before + [0])")]},
    ),
    # --- recursion -----------------------------------------------------------------------------
    _step(
        "flatten_nested", "recursion", "flattening", "nested", "ints", 0.12,
        "flatten it into the list of its integers, in order",
        """
        def collect(item, out):
            if isinstance(item, list):
                for inner in item:
                    collect(inner, out)
            else:
                out.append(item)
            return out

        $OUT = collect($IN, [])
        """,
        "flat", bugs={"logic": [("            collect(inner, out)\n", "            out.append(inner)\n")]},
    ),
    _step(
        "nested_depth", "recursion", "depth", "nested", "int", 0.15,
        "take its nesting depth (a list without inner lists has depth 1)",
        """
        def depth(item):
            if not isinstance(item, list):
                return 0
            return 1 + max((depth(inner) for inner in item), default=0)

        $OUT = depth($IN)
        """,
        "depth", bugs={"edge_case": [("default=0)", "default=-1)")]},
    ),
    _step(
        "weighted_sum", "recursion", "weighted sums", "nested", "int", 0.22,
        "add up its integers, each multiplied by its depth (integers directly in the list have depth 1)",
        """
        def weigh(item, level):
            if isinstance(item, list):
                return sum(weigh(inner, level + 1) for inner in item)
            return item * level

        $OUT = weigh($IN, 0)
        """,
        "weighted_sum", bugs={"off_by_one": [("weigh($IN, 0)", "weigh($IN, 1)")]},
    ),
    _step(
        "digital_roots", "recursion", "digit recursion", "ints", "ints", 0.12,
        "replace every number by its digital root: sum the digits of its absolute value, repeating until one "
        "digit is left",
        """
        def root(x):
            if x < 10:
                return x
            return root(sum(int(d) for d in str(x)))

        $OUT = [root(abs(x)) for x in $IN]
        """,
        "digital_roots", bugs={"off_by_one": [("if x < 10:", "if x < 100:")]},
    ),
    # --- parsing -------------------------------------------------------------------------------
    _step(
        "parse_csv", "parsing", "comma-separated values", "csv", "ints", 0.06,
        "parse it into the list of its integers (spaces around a number are allowed, empty fields are skipped)",
        "$OUT = [int(part) for part in $IN.split(',') if part.strip()]", "parsed",
        bugs={"exception": [("if part.strip()]", "]")]},
    ),
    _step(
        "parse_kv", "parsing", "key-value pairs", "kv", "counts", 0.1,
        "parse it into a dictionary from key to integer value (empty pieces are skipped, a repeated key keeps "
        "its last value)",
        """
        parsed = {}
        for piece in $IN.split(';'):
            if piece:
                key, _, raw = piece.partition('=')
                parsed[key] = int(raw)
        $OUT = parsed
        """,
        "settings", bugs={"logic": [("parsed[key] = int(raw)", "parsed.setdefault(key, int(raw))")]},
    ),
    _step(
        "extract_numbers", "parsing", "tokenizing", "text", "ints", 0.15,
        "extract every maximal run of decimal digits as a non-negative integer, in order",
        """
        found = []
        digits = ''
        for ch in $IN:
            if ch.isdigit():
                digits += ch
            elif digits:
                found.append(int(digits))
                digits = ''
        if digits:
            found.append(int(digits))
        $OUT = found
        """,
        "numbers", bugs={"edge_case": [("if digits:\n    found.append(int(digits))\n", "")]},
    ),
    _step(
        "durations", "parsing", "time formats", "times", "ints", 0.08,
        "convert every duration to minutes",
        """
        minutes = []
        for t in $IN:
            hours, _, mins = t.partition(':')
            minutes.append(int(hours) * 60 + int(mins))
        $OUT = minutes
        """,
        "minutes", bugs={"logic": [("int(hours) * 60 + int(mins)", "int(hours) * 100 + int(mins)")]},
    ),
    _step(
        "evaluate_sum", "parsing", "expressions", "expr", "int", 0.15,
        "evaluate it (a leading sign is allowed, the empty string is 0)",
        """
        result, number, sign = 0, 0, 1
        for ch in $IN:
            if ch.isdigit():
                number = number * 10 + int(ch)
            else:
                result += sign * number
                number, sign = 0, (1 if ch == '+' else -1)
        $OUT = result + sign * number
        """,
        "evaluated", bugs={"edge_case": [("$OUT = result + sign * number", "$OUT = result")]},
    ),
    _step(
        "format_csv", "parsing", "formatting", "ints", "text", 0.03,
        "format the numbers as one string, separated by commas without spaces",
        "$OUT = ','.join(str(x) for x in $IN)", "formatted", bugs={"logic": [("','.join(", "', '.join(")]},
    ),
    # --- intervals -----------------------------------------------------------------------------
    _step(
        "sort_spans", "intervals", "sorting intervals", "spans", "spans", 0.05,
        "sort the intervals by start, and by end for equal starts", "$OUT = sorted($IN)", "sorted_spans",
        bugs={"logic": [("sorted($IN)", "sorted($IN, key=lambda s: s[1])")]},
    ),
    _step(
        "span_lengths", "intervals", "lengths", "spans", "ints", 0.04,
        "replace every interval `[start, end]` by its length, end - start",
        "$OUT = [end - start for start, end in $IN]", "lengths",
        bugs={
            "off_by_one": [("end - start for", "end - start + 1 for")],
        },
    ),
    _step(
        "long_spans", "intervals", "filtering", "spans", "spans", 0.05,
        "keep only the intervals whose length, end - start, is at least $k",
        "$OUT = [[start, end] for start, end in $IN if end - start >= $k]", "long_spans",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("if end - start >= $k", "if end - start > $k")]},
    ),
    _step(
        "merge_spans", "intervals", "merging", "spans", "spans", 0.3,
        "merge intervals that overlap or touch ([1, 3] and [3, 5] become [1, 5]), giving the result sorted by "
        "start",
        """
        merged = []
        for start, end in sorted($IN):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        $OUT = merged
        """,
        "merged",
        bugs={
            "edge_case": [("start <= merged[-1][1]", "start < merged[-1][1]")],
            "logic": [("merged[-1][1] = max(merged[-1][1], end)", "merged[-1][1] = end")],
        },
    ),
    _step(
        "covered_length", "intervals", "coverage", "spans", "int", 0.3,
        "take the total length covered by the intervals, counting overlaps once",
        """
        covered = 0
        reach = None
        for start, end in sorted($IN):
            if reach is None or start > reach:
                covered += end - start
                reach = end
            elif end > reach:
                covered += end - reach
                reach = end
        $OUT = covered
        """,
        "covered", bugs={"logic": [("        covered += end - reach\n", "        covered += end - start\n")]},
        order_free=True,
    ),
    _step(
        "max_overlap", "intervals", "sweep line", "spans", "int", 0.35,
        "take the largest number of intervals that share a common point (the intervals are closed, so [1, 3] "
        "and [3, 4] share 3)",
        """
        events = []
        for start, end in $IN:
            events.append((start, 0))
            events.append((end, 1))
        depth = deepest = 0
        for _, kind in sorted(events):
            depth += 1 if kind == 0 else -1
            deepest = max(deepest, depth)
        $OUT = deepest
        """,
        "max_overlap", bugs={"edge_case": [("events.append((end, 1))", "events.append((end, -1))")]}, order_free=True,
    ),
    _step(
        "runs_to_spans", "intervals", "ranges", "ints", "spans", 0.2,
        "turn the different numbers, in increasing order, into maximal runs of consecutive integers, each as "
        "`[first, last]`",
        """
        runs = []
        for x in sorted(set($IN)):
            if runs and x == runs[-1][1] + 1:
                runs[-1][1] = x
            else:
                runs.append([x, x])
        $OUT = runs
        """,
        "runs", bugs={"edge_case": [("for x in sorted(set($IN)):", "for x in sorted($IN):")]}, order_free=True,
    ),
    # --- simulation ----------------------------------------------------------------------------
    _step(
        "balances", "simulation", "accounts", "ints", "ints", 0.15,
        "treat the numbers as deposits and withdrawals on an account that starts at 0, skip any withdrawal that "
        "would make the balance negative, and list the balance after each number",
        """
        balance = 0
        history = []
        for amount in $IN:
            if balance + amount >= 0:
                balance += amount
            history.append(balance)
        $OUT = history
        """,
        "balances", bugs={"edge_case": [("if balance + amount >= 0:", "if balance + amount > 0:")]},
    ),
    _step(
        "robot_walk", "simulation", "grid walks", "moves", "ints", 0.1,
        "move a robot from `[0, 0]` (U adds 1 to y, D subtracts 1, R adds 1 to x, L subtracts 1) and give its "
        "final position `[x, y]`",
        """
        x = y = 0
        for ch in $IN:
            if ch == 'U':
                y += 1
            elif ch == 'D':
                y -= 1
            elif ch == 'R':
                x += 1
            elif ch == 'L':
                x -= 1
        $OUT = [x, y]
        """,
        "position", bugs={"logic": [("        x -= 1\n", "        y -= 1\n")]},
    ),
    _step(
        "cells_visited", "simulation", "grid walks", "moves", "int", 0.2,
        "move a robot from (0, 0) one cell per command (U up, D down, L left, R right) and count the different "
        "cells it visits, the start included",
        """
        x = y = 0
        visited = {(0, 0)}
        for ch in $IN:
            if ch in 'UDLR':
                x += (ch == 'R') - (ch == 'L')
                y += (ch == 'U') - (ch == 'D')
                visited.add((x, y))
        $OUT = len(visited)
        """,
        "visited", bugs={"edge_case": [("visited = {(0, 0)}", "visited = set()")]},
    ),
    _step(
        "elimination", "simulation", "elimination games", "ints", "ints", 0.3,
        "stand the numbers in a circle and, starting from the first, repeatedly remove every $k-th number "
        "(counting restarts after each removal), listing the numbers in the order they are removed",
        """
        circle = list($IN)
        removed = []
        pos = 0
        while circle:
            pos = (pos + $k - 1) % len(circle)
            removed.append(circle.pop(pos))
        $OUT = removed
        """,
        "removal_order", ({"k": 2}, {"k": 3}),
        {
            "off_by_one": [("pos = (pos + $k - 1) % len(circle)", "pos = (pos + $k) % len(circle)")],
        },
    ),
    _step(
        "collatz", "simulation", "iterated maps", "int", "int", 0.1,
        "count the steps of the Collatz process (halve an even number, turn an odd one into 3 * n + 1) until it "
        "reaches 1 (0 steps for a number below 2)",
        """
        steps = 0
        current = $IN
        while current > 1:
            current = current // 2 if current % 2 == 0 else 3 * current + 1
            steps += 1
        $OUT = steps
        """,
        "collatz_steps", bugs={"off_by_one": [("while current > 1:", "while current > 2:")]},
    ),
    _step(
        "parity_automaton", "simulation", "cellular automata", "ints", "ints", 0.2,
        "replace every number by 1 when exactly one of its two neighbours in the list is odd and by 0 otherwise "
        "(a missing neighbour counts as even)",
        """
        odd = [x % 2 for x in $IN]
        cells = []
        for i in range(len(odd)):
            left = odd[i - 1] if i > 0 else 0
            right = odd[i + 1] if i + 1 < len(odd) else 0
            cells.append(1 if left + right == 1 else 0)
        $OUT = cells
        """,
        "next_cells", bugs={"edge_case": [("left = odd[i - 1] if i > 0 else 0", "left = odd[i - 1]")]},
    ),
    # --- stacks --------------------------------------------------------------------------------
    _step(
        "cancel_pairs", "stacks", "cancellation", "ints", "ints", 0.15,
        "remove adjacent equal numbers in pairs, again and again, until no two neighbours are equal ([1, 2, 2, 1, "
        "3] becomes [3])",
        """
        stack = []
        for x in $IN:
            if stack and stack[-1] == x:
                stack.pop()
            else:
                stack.append(x)
        $OUT = stack
        """,
        "cancelled",
        bugs={
            "logic": [
                (
                    "if stack and stack[-1] == x:\n        stack.pop()\n    else:\n        stack.append(x)\n",
                    "if not stack or stack[-1] != x:\n        stack.append(x)\n",
                )
            ],
        },
    ),
    _step(
        "next_greater", "stacks", "monotonic stacks", "ints", "ints", 0.3,
        "replace every number by the nearest number to its right that is larger than it, or by -1 when there is "
        "none",
        """
        answer = [-1] * len($IN)
        waiting = []
        for i, x in enumerate($IN):
            while waiting and $IN[waiting[-1]] < x:
                answer[waiting.pop()] = x
            waiting.append(i)
        $OUT = answer
        """,
        "next_greater", bugs={"edge_case": [("$IN[waiting[-1]] < x", "$IN[waiting[-1]] <= x")]},
    ),
    _step(
        "paren_depth", "stacks", "nesting", "parens", "int", 0.1,
        "take the deepest nesting of its parentheses (other characters are ignored, 0 when there are none)",
        """
        depth = deepest = 0
        for ch in $IN:
            if ch == '(':
                depth += 1
                deepest = max(deepest, depth)
            elif ch == ')':
                depth -= 1
        $OUT = deepest
        """,
        "depth", bugs={"logic": [("        depth -= 1\n", "        deepest = max(deepest, depth)\n")]},
    ),
    _step(
        "unmatched", "stacks", "bracket matching", "parens", "int", 0.18,
        "count the parentheses that have no partner (an opening one never closed or a closing one never opened)",
        """
        open_count = unmatched = 0
        for ch in $IN:
            if ch == '(':
                open_count += 1
            elif ch == ')':
                if open_count:
                    open_count -= 1
                else:
                    unmatched += 1
        $OUT = unmatched + open_count
        """,
        "unmatched", bugs={"edge_case": [("$OUT = unmatched + open_count", "$OUT = unmatched")]},
    ),
    _step(
        "backspaces", "stacks", "editing", "keys", "text", 0.12,
        "type it out, each `#` deleting the last character still typed (if any)",
        """
        typed = []
        for ch in $IN:
            if ch == '#':
                if typed:
                    typed.pop()
            else:
                typed.append(ch)
        $OUT = ''.join(typed)
        """,
        "typed", bugs={"exception": [("        if typed:\n            typed.pop()\n", "        typed.pop()\n")]},
    ),
    _step(
        "collisions", "stacks", "collisions", "ints", "ints", 0.4,
        "drop the zeros, then simulate collisions: positive numbers move right, negative ones move left, and when "
        "two meet the one with the smaller absolute value disappears (both when they are equal)",
        """
        alive = []
        for x in $IN:
            keep = x != 0
            while keep and x < 0 and alive and alive[-1] > 0:
                if alive[-1] < -x:
                    alive.pop()
                else:
                    if alive[-1] == -x:
                        alive.pop()
                    keep = False
            if keep:
                alive.append(x)
        $OUT = alive
        """,
        "survivors", bugs={"logic": [("            if alive[-1] == -x:\n                alive.pop()\n", "")]},
    ),
    # --- graphs --------------------------------------------------------------------------------
    _step(
        "degrees", "graphs", "degrees", "graph", "ints", 0.08,
        "list the degree (number of edges touching it) of every node 0 to n - 1",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        degree = [0] * size
        for u, v in $IN:
            degree[u] += 1
            degree[v] += 1
        $OUT = degree
        """,
        "degrees", bugs={"edge_case": [("default=0)", "default=-1)")], "logic": [("    degree[v] += 1\n", "")]},
    ),
    _step(
        "reachable", "graphs", "reachability", "graph", "ints", 0.25,
        "list the nodes reachable from node 0 (node 0 included), in increasing order",
        """
        links = {}
        for u, v in $IN:
            links.setdefault(u, []).append(v)
            links.setdefault(v, []).append(u)
        seen = {0}
        todo = [0]
        while todo:
            node = todo.pop()
            for nxt in links.get(node, []):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        $OUT = sorted(seen)
        """,
        "reachable", bugs={"logic": [("    links.setdefault(v, []).append(u)\n", "")]},
    ),
    _step(
        "components", "graphs", "connected components", "graph", "int", 0.3,
        "count the connected components of the graph (every node 0 to n - 1 belongs to one)",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        parent = list(range(size))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for u, v in $IN:
            parent[find(u)] = find(v)
        $OUT = sum(1 for x in range(size) if find(x) == x)
        """,
        "component_count", bugs={"logic": [("parent[find(u)] = find(v)", "parent[u] = v")]},
    ),
    _step(
        "bfs_distances", "graphs", "shortest paths", "graph", "ints", 0.35,
        "list, for every node 0 to n - 1, the least number of edges on a path from node 0 to it, or -1 when "
        "there is none",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        links = [[] for _ in range(size)]
        for u, v in $IN:
            links[u].append(v)
            links[v].append(u)
        dist = [-1] * size
        dist[0] = 0
        queue = [0]
        for node in queue:
            for nxt in links[node]:
                if dist[nxt] == -1:
                    dist[nxt] = dist[node] + 1
                    queue.append(nxt)
        $OUT = dist
        """,
        "distances", bugs={"edge_case": [("    links[v].append(u)\n", "")]},
    ),
    _step(
        "component_sizes", "graphs", "connected components", "graph", "ints", 0.35,
        "list the sizes of the connected components (every node 0 to n - 1 belongs to one), largest first",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        links = [[] for _ in range(size)]
        for u, v in $IN:
            links[u].append(v)
            links[v].append(u)
        group = [None] * size
        sizes = []
        for start in range(size):
            if group[start] is None:
                group[start] = start
                stack, count = [start], 0
                while stack:
                    node = stack.pop()
                    count += 1
                    for nxt in links[node]:
                        if group[nxt] is None:
                            group[nxt] = start
                            stack.append(nxt)
                sizes.append(count)
        $OUT = sorted(sizes, reverse=True)
        """,
        "component_sizes",
        bugs={
            "edge_case": [
                (
                    "sorted(sizes, reverse=True)",
                    "sorted(sizes, reverse=True)[:-1] if len(sizes) > 1 else sizes",
                )
            ],
        },
    ),
    _step(
        "leaves", "graphs", "degrees", "graph", "ints", 0.12,
        "list the nodes with exactly one neighbour, in increasing order",
        """
        touching = {}
        for u, v in $IN:
            touching[u] = touching.get(u, 0) + 1
            touching[v] = touching.get(v, 0) + 1
        $OUT = sorted(node for node, d in touching.items() if d == 1)
        """,
        "leaves", bugs={"logic": [("if d == 1", "if d <= 2")]},
    ),
    # --- more building blocks, for harder chains ----------------------------------------------
    _step(
        "equilibrium", "lists", "balance points", "ints", "int", 0.25,
        "take the first position (from 0) where the sum of the numbers before it equals the sum of the numbers "
        "after it, or -1 when there is none",
        """
        left, right = 0, sum($IN)
        pivot = -1
        for i, x in enumerate($IN):
            right -= x
            if left == right:
                pivot = i
                break
            left += x
        $OUT = pivot
        """,
        "balance_point", bugs={"edge_case": [("pivot = -1", "pivot = None")]},
    ),
    _step(
        "longest_run", "lists", "runs", "ints", "int", 0.15,
        "take the length of the longest run of equal neighbouring numbers (0 for no numbers)",
        """
        longest = current = 0
        for i, x in enumerate($IN):
            current = current + 1 if i and $IN[i - 1] == x else 1
            longest = max(longest, current)
        $OUT = longest
        """,
        "longest_run", bugs={"off_by_one": [("if i and $IN[i - 1] == x else 1", "if i and $IN[i - 1] == x else 0")]},
    ),
    _step(
        "pair_count", "lists", "pair counting", "ints", "int", 0.22,
        "count the pairs of positions i < j whose numbers add up to $k",
        """
        seen_values = {}
        pairs_found = 0
        for x in $IN:
            pairs_found += seen_values.get($k - x, 0)
            seen_values[x] = seen_values.get(x, 0) + 1
        $OUT = pairs_found
        """,
        "pair_count", ({"k": 10}, {"k": 0}),
        {
            "logic": [
                (
                    "    pairs_found += seen_values.get($k - x, 0)\n    seen_values[x] = seen_values.get(x, 0) + 1\n",
                    "    seen_values[x] = seen_values.get(x, 0) + 1\n    pairs_found += seen_values.get($k - x, 0)\n",
                )
            ],
        },
        order_free=True,
    ),
    _step(
        "evens_first", "lists", "partitioning", "ints", "ints", 0.08,
        "move the even numbers to the front, keeping the order among the even and among the odd numbers",
        "$OUT = [x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 != 0]", "evens_first",
        bugs={
            "logic": [
                (
                    "[x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 != 0]",
                    "[x for x in $IN if x % 2 == 0] + [x for x in $IN if x % 2 == 1 and x > 0]",
                )
            ],
        },
        reorders=True,
    ),
    _step(
        "rle", "strings", "run-length encoding", "text", "text", 0.2,
        "replace every run of the same character by the character followed by the length of the run (aaab "
        "becomes a3b1)",
        """
        encoded = []
        i = 0
        while i < len($IN):
            j = i
            while j < len($IN) and $IN[j] == $IN[i]:
                j += 1
            encoded.append($IN[i] + str(j - i))
            i = j
        $OUT = ''.join(encoded)
        """,
        "encoded", bugs={"off_by_one": [("str(j - i)", "str(j - i - 1)")]},
    ),
    _step(
        "longest_palindrome", "strings", "palindromes", "text", "text", 0.35,
        "take its longest substring that reads the same backwards, case-sensitively (the leftmost of the "
        "longest ones, empty for an empty string)",
        """
        best = ''
        for center in range(2 * len($IN) - 1):
            lo, hi = center // 2, center // 2 + center % 2
            while lo >= 0 and hi < len($IN) and $IN[lo] == $IN[hi]:
                lo, hi = lo - 1, hi + 1
            if hi - lo - 1 > len(best):
                best = $IN[lo + 1:hi]
        $OUT = best
        """,
        "longest_palindrome", bugs={"edge_case": [("if hi - lo - 1 > len(best):", "if hi - lo - 1 >= len(best):")]},
    ),
    _step(
        "distinct_window", "dicts", "sliding window", "ints", "int", 0.3,
        "take the length of the longest run of consecutive numbers in which no number repeats (0 for no numbers)",
        """
        last_seen = {}
        start = longest = 0
        for i, x in enumerate($IN):
            if x in last_seen and last_seen[x] >= start:
                start = last_seen[x] + 1
            last_seen[x] = i
            longest = max(longest, i - start + 1)
        $OUT = longest
        """,
        "longest_distinct",
        bugs={
            "edge_case": [("if x in last_seen and last_seen[x] >= start:", "if x in last_seen:")],
        },
    ),
    _step(
        "two_sum_positions", "dicts", "index maps", "ints", "ints", 0.25,
        "find the pair of positions [i, j] with i < j whose numbers add up to $k, with the smallest j and then "
        "the smallest i (an empty list when there is none)",
        """
        where = {}
        found = []
        for j, x in enumerate($IN):
            if $k - x in where:
                found = [where[$k - x], j]
                break
            where.setdefault(x, j)
        $OUT = found
        """,
        "pair_positions", ({"k": 10}, {"k": 0}), {"logic": [("where.setdefault(x, j)", "where[x] = j")]},
    ),
    _step(
        "anagram_pairs", "dicts", "anagrams", "words", "int", 0.22,
        "count the pairs of positions whose words are anagrams of each other, ignoring case (equal words count "
        "too)",
        """
        groups = {}
        for w in $IN:
            key = ''.join(sorted(w.lower()))
            groups[key] = groups.get(key, 0) + 1
        $OUT = sum(c * (c - 1) // 2 for c in groups.values())
        """,
        "anagram_pairs", bugs={"edge_case": [("''.join(sorted(w.lower()))", "''.join(sorted(w))")]}, order_free=True,
    ),
    _step(
        "min_gap", "sorting_searching", "closest pairs", "ints", "int", 0.15,
        "take the smallest difference between two numbers at different positions (-1 when there are fewer than "
        "two numbers)",
        """
        ordered = sorted($IN)
        gaps = [b - a for a, b in zip(ordered, ordered[1:])]
        $OUT = min(gaps) if gaps else -1
        """,
        "min_gap", bugs={"logic": [("ordered = sorted($IN)", "ordered = $IN")]}, order_free=True,
    ),
    _step(
        "h_index", "sorting_searching", "order statistics", "ints", "int", 0.2,
        "take the largest h such that at least h of the numbers are h or more",
        """
        ranked = sorted($IN, reverse=True)
        h = 0
        while h < len(ranked) and ranked[h] >= h + 1:
            h += 1
        $OUT = h
        """,
        "h_index", bugs={"off_by_one": [("ranked[h] >= h + 1", "ranked[h] >= h")]}, order_free=True,
    ),
    _step(
        "sort_by_frequency", "sorting_searching", "custom sort keys", "ints", "ints", 0.25,
        "sort the numbers by how often they occur, most frequent first, equally frequent ones in increasing order",
        """
        freq = {}
        for x in $IN:
            freq[x] = freq.get(x, 0) + 1
        $OUT = sorted($IN, key=lambda x: (-freq[x], x))
        """,
        "by_frequency", bugs={"logic": [("key=lambda x: (-freq[x], x)", "key=lambda x: -freq[x]")]}, reorders=True,
    ),
    _step(
        "max_xor_pair", "bits", "xor", "ints", "int", 0.3,
        "take the largest XOR of two numbers at different positions, or 0 when no pair gives more than 0",
        """
        best_xor = 0
        for i in range(len($IN)):
            for j in range(i + 1, len($IN)):
                best_xor = max(best_xor, $IN[i] ^ $IN[j])
        $OUT = best_xor
        """,
        "max_xor", bugs={"logic": [("$IN[i] ^ $IN[j]", "$IN[i] | $IN[j]")]}, order_free=True,
    ),
    _step(
        "gray_code", "bits", "gray codes", "ints", "ints", 0.1,
        "replace every number x by its Gray code, x XOR (x shifted right by one bit)",
        "$OUT = [x ^ (x >> 1) for x in $IN]", "gray", bugs={"logic": [("x ^ (x >> 1)", "x ^ (x << 1)")]},
    ),
    _step(
        "best_prefix", "dynamic_programming", "prefix sums", "ints", "int", 0.08,
        "take the largest sum of a prefix of the list (the empty prefix counts, with sum 0)",
        """
        best = running = 0
        for x in $IN:
            running += x
            best = max(best, running)
        $OUT = best
        """,
        "best_prefix", bugs={"logic": [("best = max(best, running)", "best = max(best, x)")]},
    ),
    _step(
        "nested_flip", "recursion", "nested lists", "nested", "nested", 0.2,
        "reverse it at every level (the inner lists are reversed too)",
        """
        def flip(item):
            if isinstance(item, list):
                return [flip(inner) for inner in reversed(item)]
            return item

        $OUT = flip($IN)
        """,
        "flipped", bugs={"logic": [("[flip(inner) for inner in reversed(item)]", "list(reversed(item))")]},
    ),
    _step(
        "level_sums", "recursion", "depth", "nested", "ints", 0.3,
        "list the sums of its integers depth by depth, integers directly in the list having depth 1, down to "
        "the deepest integer (0 for a depth without integers)",
        """
        def visit(item, level, sums):
            for inner in item:
                if isinstance(inner, list):
                    visit(inner, level + 1, sums)
                else:
                    while len(sums) < level:
                        sums.append(0)
                    sums[level - 1] += inner
            return sums

        $OUT = visit($IN, 1, [])
        """,
        "level_sums", bugs={"off_by_one": [("sums[level - 1] += inner", "sums[level - 2] += inner")]},
    ),
    _step(
        "roman_values", "parsing", "roman numerals", "romans", "ints", 0.2, "convert every Roman numeral to its value",
        """
        values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
        converted = []
        for numeral in $IN:
            amount = 0
            for i, ch in enumerate(numeral):
                if i + 1 < len(numeral) and values[ch] < values[numeral[i + 1]]:
                    amount -= values[ch]
                else:
                    amount += values[ch]
            converted.append(amount)
        $OUT = converted
        """,
        "values",
        bugs={
            "off_by_one": [("values[ch] < values[numeral[i + 1]]", "values[ch] <= values[numeral[i + 1]]")],
        },
    ),
    _step(
        "evaluate_parens", "parsing", "expressions", "pexpr", "int", 0.4,
        "evaluate it (a sign may also start the expression or follow an opening parenthesis, and the empty "
        "string is 0)",
        """
        stack = []
        result, number, sign = 0, 0, 1
        for ch in $IN:
            if ch.isdigit():
                number = number * 10 + int(ch)
            elif ch in '+-':
                result += sign * number
                number, sign = 0, (1 if ch == '+' else -1)
            elif ch == '(':
                stack.append((result, sign))
                result, sign = 0, 1
            elif ch == ')':
                result += sign * number
                outer, outer_sign = stack.pop()
                result, number = outer + outer_sign * result, 0
        $OUT = result + sign * number
        """,
        "evaluated",
        bugs={
            "logic": [("result, number = outer + outer_sign * result, 0", "result, number = outer + result, 0")],
        },
    ),
    _step(
        "prime_factors", "arithmetic", "prime factors", "int", "ints", 0.25,
        "list the prime factors of its absolute value in increasing order, repeated as often as they divide it "
        "(0 and 1 have none)",
        """
        rest = abs($IN)
        factors = []
        p = 2
        while rest > 1 and p * p <= rest:
            while rest % p == 0:
                factors.append(p)
                rest //= p
            p += 1
        if rest > 1:
            factors.append(rest)
        $OUT = factors
        """,
        "prime_factors",
        bugs={
            "edge_case": [("if rest > 1:\n    factors.append(rest)\n", "")],
            "logic": [("while rest % p == 0:", "if rest % p == 0:")],
        },
    ),
    _step(
        "count_primes_upto", "arithmetic", "sieves", "int", "int", 0.3,
        "count the primes that are not larger than it",
        """
        limit = max($IN, 0)
        sieve = [True] * (limit + 1)
        found_primes = 0
        for k in range(2, limit + 1):
            if sieve[k]:
                found_primes += 1
                for multiple in range(k * k, limit + 1, k):
                    sieve[multiple] = False
        $OUT = found_primes
        """,
        "prime_count", bugs={"off_by_one": [("for k in range(2, limit + 1):", "for k in range(2, limit):")]},
        first_only=True,
    ),
    _step(
        "to_base", "arithmetic", "number bases", "int", "text", 0.15,
        "write its absolute value in base $b with the digits 0 to $top (0 is written 0)",
        """
        rest = abs($IN)
        written = ''
        while rest:
            written = str(rest % $b) + written
            rest //= $b
        $OUT = written or '0'
        """,
        "in_base", ({"b": 3, "top": 2}, {"b": 7, "top": 6}),
        {
            "edge_case": [("$OUT = written or '0'", "$OUT = written")],
        },
    ),
    _step(
        "zigzag", "lists", "alternating runs", "ints", "int", 0.3,
        "take the length of the longest run of consecutive numbers whose neighbours always differ, with the "
        "differences alternating in sign (one number is a run of 1, no numbers give 0)",
        """
        best = cur = min(len($IN), 1)
        for i in range(1, len($IN)):
            diff = $IN[i] - $IN[i - 1]
            if diff == 0:
                cur = 1
            elif i >= 2 and ($IN[i - 1] - $IN[i - 2]) * diff < 0:
                cur += 1
            else:
                cur = 2
            best = max(best, cur)
        $OUT = best
        """,
        "zigzag_length", bugs={"edge_case": [("            cur = 1\n", "            cur = 2\n")]},
    ),
    _step(
        "ranks", "sorting_searching", "ranking", "ints", "ints", 0.2,
        "replace every number by its rank among the different numbers (the smallest has rank 1, equal numbers "
        "share a rank)",
        """
        rank_of = {x: i + 1 for i, x in enumerate(sorted(set($IN)))}
        $OUT = [rank_of[x] for x in $IN]
        """,
        "ranks", bugs={"logic": [("enumerate(sorted(set($IN)))", "enumerate(sorted($IN))")]},
    ),
    _step(
        "longest_consecutive", "sorting_searching", "consecutive runs", "ints", "int", 0.3,
        "take the length of the longest run of consecutive integers that can be formed from the numbers, in any "
        "order and ignoring repeats (0 for no numbers)",
        """
        present = set($IN)
        longest_streak = 0
        for x in present:
            if x - 1 not in present:
                length = 1
                while x + length in present:
                    length += 1
                longest_streak = max(longest_streak, length)
        $OUT = longest_streak
        """,
        "longest_streak", bugs={"logic": [("if x - 1 not in present:", "if x + 1 not in present:")]}, order_free=True,
    ),
    _step(
        "fibonacci", "dynamic_programming", "recurrences", "int", "int", 0.1,
        "take the Fibonacci number at that position modulo 1000007 (position 0 gives 0, position 1 gives 1, a "
        "negative position gives 0)",
        """
        prev, cur = 0, 1
        for _ in range(max($IN, 0)):
            prev, cur = cur, (prev + cur) % 1000007
        $OUT = prev
        """,
        "fibonacci", bugs={"off_by_one": [("$OUT = prev", "$OUT = cur")]}, first_only=True,
    ),
    _step(
        "best_ending_here", "dynamic_programming", "maximum subarray", "ints", "ints", 0.12,
        "replace every number by the largest sum of a run of consecutive numbers that ends with it",
        """
        ending_sums = []
        for x in $IN:
            ending_sums.append(x if not ending_sums else max(x, ending_sums[-1] + x))
        $OUT = ending_sums
        """,
        "best_ending", bugs={"edge_case": [("max(x, ending_sums[-1] + x)", "ending_sums[-1] + max(x, 0)")]},
    ),
    # --- small steps, so that easy exercises come in many shapes too --------------------------
    _step(
        "nested_sum", "recursion", "nested lists", "nested", "int", 0.06, "add up all its integers, at any depth",
        """
        def total_of(item):
            if isinstance(item, list):
                return sum(total_of(inner) for inner in item)
            return item

        $OUT = total_of($IN)
        """,
        "nested_total",
        bugs={
            "logic": [
                (
                    "return sum(total_of(inner) for inner in item)",
                    "return sum(inner for inner in item if not isinstance(inner, list))",
                )
            ],
        },
    ),
    _step(
        "nested_count", "recursion", "nested lists", "nested", "int", 0.05, "count its integers, at any depth",
        """
        def count_of(item):
            if isinstance(item, list):
                return sum(count_of(inner) for inner in item)
            return 1

        $OUT = count_of($IN)
        """,
        "integer_count", bugs={"logic": [("return sum(count_of(inner) for inner in item)", "return len(item)")]},
    ),
    _step(
        "paren_pairs", "stacks", "bracket matching", "parens", "int", 0.06,
        "count the pairs of matching parentheses (a closing one matches the nearest unmatched opening one before it)",
        """
        waiting = 0
        matched = 0
        for ch in $IN:
            if ch == '(':
                waiting += 1
            elif ch == ')' and waiting:
                waiting -= 1
                matched += 1
        $OUT = matched
        """,
        "matched_pairs", bugs={"edge_case": [("elif ch == ')' and waiting:", "elif ch == ')':")]},
    ),
    _step(
        "cancel_chars", "stacks", "cancellation", "text", "text", 0.1,
        "remove adjacent equal characters in pairs, again and again, until no two neighbours are equal (abba "
        "becomes the empty string)",
        """
        kept = []
        for ch in $IN:
            if kept and kept[-1] == ch:
                kept.pop()
            else:
                kept.append(ch)
        $OUT = ''.join(kept)
        """,
        "reduced",
        bugs={
            "logic": [
                (
                    "if kept and kept[-1] == ch:\n        kept.pop()\n    else:\n        kept.append(ch)\n",
                    "if not kept or kept[-1] != ch:\n        kept.append(ch)\n",
                )
            ],
        },
    ),
    _step(
        "returns_to_start", "simulation", "grid walks", "moves", "int", 0.08,
        "move a robot from (0, 0) one cell per command (U up, D down, L left, R right) and count how often it is "
        "back at (0, 0) after a move",
        """
        x = y = 0
        returns = 0
        for ch in $IN:
            if ch in 'UDLR':
                x += (ch == 'R') - (ch == 'L')
                y += (ch == 'U') - (ch == 'D')
                if x == 0 and y == 0:
                    returns += 1
        $OUT = returns
        """,
        "returns", bugs={"logic": [("if x == 0 and y == 0:", "if x == 0 or y == 0:")]},
    ),
    _step(
        "max_degree", "graphs", "degrees", "graph", "int", 0.06,
        "take the largest number of edges that touch one node (0 when there are no edges)",
        """
        touching = {}
        for u, v in $IN:
            touching[u] = touching.get(u, 0) + 1
            touching[v] = touching.get(v, 0) + 1
        $OUT = max(touching.values(), default=0)
        """,
        "max_degree", bugs={"logic": [("    touching[v] = touching.get(v, 0) + 1\n", "")]},
    ),
    _step(
        "node_count", "graphs", "graph size", "graph", "int", 0.04, "count the nodes n",
        "$OUT = 1 + max((max(e) for e in $IN), default=0)", "node_count",
        bugs={"edge_case": [("1 + max((max(e) for e in $IN), default=0)", "len({x for e in $IN for x in e})")]},
    ),
    _step(
        "distinct_words", "dicts", "distinct values", "words", "int", 0.05,
        "count the different words, ignoring case", "$OUT = len({w.lower() for w in $IN})", "distinct_words",
        bugs={"edge_case": [("{w.lower() for w in $IN}", "set($IN)")]}, order_free=True,
    ),
    _step(
        "unique_words", "dicts", "distinct values", "words", "words", 0.07,
        "remove repeated words, ignoring case, keeping the first spelling of each in order",
        """
        seen_words = set()
        firsts = []
        for w in $IN:
            if w.lower() not in seen_words:
                seen_words.add(w.lower())
                firsts.append(w)
        $OUT = firsts
        """,
        "unique_words", bugs={"edge_case": [("if w.lower() not in seen_words:", "if w not in seen_words:")]},
    ),
    _step(
        "abs_each", "arithmetic", "absolute values", "ints", "ints", 0.03, "replace every number by its absolute value",
        "$OUT = [abs(x) for x in $IN]", "absolute", bugs={"logic": [("abs(x) for", "max(x, 0) for")]},
    ),
    _step(
        "mod_each", "arithmetic", "remainders", "ints", "ints", 0.04,
        "replace every number by its remainder after division by $k (between 0 and $k - 1, also for negative "
        "numbers)",
        "$OUT = [x % $k for x in $IN]", "remainders", ({"k": 3}, {"k": 7}),
        {"edge_case": [("x % $k for", "abs(x) % $k for")]},
    ),
    _step(
        "halve_each", "arithmetic", "integer division", "ints", "ints", 0.03,
        "replace every number by half of it, rounded down (-3 becomes -2)", "$OUT = [x // 2 for x in $IN]", "halves",
        bugs={"edge_case": [("x // 2 for", "int(x / 2) for")]},
    ),
)  # fmt: skip
"""Every building block of pipeline exercises."""

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
        if any(not (g.ok and same_value(g.value, r.value)) for g, r in zip(got, ref_edges + ref_extra, strict=True)):
            return True
        if len(extra) >= 3:
            return False
        for x, g, r in zip(pool, run(code, pool), ref_pool, strict=True):
            if not (g.ok and same_value(g.value, r.value)):
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
    identity = all(same_value(o.value, x) for o, x in zip(ref_edges + ref_pool, edges + pool, strict=True))
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
