"""Building a task of the bank from a variant (:func:`build_task`): inputs, the reference's outputs,
tests that reject trivial stand-ins and one-token mutants, a statement with an example.

The description never shows a test (``leaks_hidden_test``): its example is an input none of the
tests has, with an output none of them gives, and a test whose answer the statement itself spells
out (a step's own rule, "0 gives [0]") is left out of the tests."""

from __future__ import annotations

import copy
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..languages.python_mutants import mutants, probe_inputs
from ..leaks import Secret, find_leaks
from .running import json_roundtrips, load_function, stand_ins, strict_equal
from .variant import Args, Params, Variant, stable_hash

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
        return not strict_equal(_bounded(mutant, args), expected)
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
    unchanged. The description's example is none of the tests (:func:`_fresh_example`), and no test
    is one the statement spells out (:func:`_told`): a description shows no hidden test.
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
    # a test whose answer the statement spells out (a step's own rule, "0 gives [0]", on the very
    # input it names) would be a hidden test in plain sight: it is left out (its input stays taken)
    statement = variant.statement(pi, ep, template_index)
    told = _told(statement, inputs, outputs)
    if told:
        randoms = [a for a in randoms if all(a is not inputs[i] for i in told)]
        kept = [i for i in range(len(inputs)) if i not in told]
        inputs[:] = [inputs[i] for i in kept]
        outputs = [outputs[i] for i in kept]
    attempts = 0
    while len(inputs) < 8 and attempts < 60 and not _rejects_stand_ins(inputs, outputs):
        attempts += 1
        if add(variant.make_input(rng, params, scale)):
            outputs.append(function(*copy.deepcopy(inputs[-1])))
            if _told(statement, inputs[-1:], outputs[-1:]):
                inputs.pop()
                outputs.pop()
            else:
                randoms.append(inputs[-1])
    # a careful author adds the cases that tell the reference from its one-token mutants (x == t,
    # an empty run, one digit), drawn from their own stream so the rest of the task stays as it was
    search = random.Random(stable_hash("killers", variant.family, variant.name, pi, ep, len(inputs)))
    for args, out in _mutant_killers(code, ep, function, inputs, outputs, variant, params, search):
        if not _told(statement, [args], [out]) and add(args):
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
    telling = [i for i in short if not any(strict_equal(s, outputs[i]) for s in stand_ins(inputs[i]))]
    by_length = sorted(range(len(inputs)), key=lambda i: len(_call_text(ep, inputs[i])) + len(repr(outputs[i])))
    pool = telling or short or by_length[:1]
    near = inputs[rng.choice(pool)]  # the example is drawn near this test, never one of the tests
    template = rng.choice(_EXAMPLE_TEMPLATES)
    shown = _fresh_example(function, variant, params, ep, inputs, outputs, near)
    example = "" if shown is None else template.format(call=_call_text(ep, shown[0]), out=repr(shown[1]))
    difficulty = variant.difficulty_for(pi) + 0.05 * (scale - 0.5) + rng.uniform(-0.03, 0.03)
    return BankTask(
        variant=variant,
        params_index=pi,
        entry_point=ep,
        statement=statement,
        description=f"{statement}\n\n{example}" if example else statement,
        reference_code=code,
        inputs=inputs,
        outputs=outputs,
        expected_at=expected_at,
        difficulty=round(min(0.99, max(0.01, difficulty)), 2),
        tags=[variant.family, variant.topic],
    )


def _told(statement: str, inputs: Sequence[Args], outputs: Sequence[Any]) -> set[int]:
    """Which of the cases the statement ties to their answers (``leaks.find_leaks``)."""
    secrets = [Secret(i, tuple(a), out) for i, (a, out) in enumerate(zip(inputs, outputs, strict=True))]
    return {leak.test for leak in find_leaks({"statement": statement}, secrets)}


EXAMPLE_DRAWS = 24
"""Fresh inputs tried for a task's example before it goes without one."""


def _fresh_example(
    function: Callable[..., Any],
    variant: Variant,
    params: Params,
    entry_point: str,
    inputs: Sequence[Args],
    outputs: Sequence[Any],
    near: Args,
) -> tuple[Args, Any] | None:
    """The example a statement shows: an input that is none of the tests, whose output is none of
    theirs (a test's output shown with any input that gives it answers an abduction query), short
    to read, and telling (no trivial stand-in gives it) when one is found; None when none is.

    Why not a test: every test but the first few is hidden, and for deduction and abduction every
    one is (its answer, its input), so a test in the description hands a hidden answer over
    (``leaks_hidden_test``). Candidates are the neighbours of ``near`` (one integer moved by one),
    then small fresh inputs of the variant, from a stream of their own, so the tests, their order
    and everything else drawn for the task stay as they were.
    """
    search = random.Random(stable_hash("example", variant.family, variant.name, entry_point, _input_literal(near)))
    taken = {_input_literal(a) for a in inputs}
    neighbours = probe_inputs([tuple(near)])[1:]
    search.shuffle(neighbours)
    fresh = [variant.make_input(search, params, scale) for scale in (0.0, 0.1, 0.2, 0.3) * (EXAMPLE_DRAWS // 4)]
    fallback: tuple[Args, Any] | None = None
    for args in [*neighbours[:EXAMPLE_DRAWS], *fresh]:
        literal = _input_literal(args)
        if literal in taken or len(_call_text(entry_point, args)) > 60:
            continue
        taken.add(literal)
        try:  # a neighbour may lie outside what the reference was written for: it may raise or loop
            out = _bounded(function, args)
        except (_OutOfSteps, Exception):
            continue
        if len(repr(out)) > 60 or not json_roundtrips(out) or any(strict_equal(out, o) for o in outputs):
            continue
        if not any(strict_equal(s, out) for s in stand_ins(args)):
            return args, out
        fallback = fallback or (args, out)
    return fallback


def _rejects_stand_ins(inputs: Sequence[Args], outputs: Sequence[Any]) -> bool:
    for position in range(6):
        if all(strict_equal(stand_ins(args)[position], out) for args, out in zip(inputs, outputs, strict=False)):
            return False
    return True
