"""The mutation part of ``weak_tests`` and behavioural duplicates: mutants, probes, the gate's verdicts."""

import ast
import asyncio
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm import behaviour
from spade_llm.config import SandboxConfig
from spade_llm.languages.python_mutants import mutants, probe_inputs
from spade_llm.types import Task, TestCase
from spade_llm.validation import ValidationReport, Validator

FILTER = "def f(xs, t):\n    return [x for x in xs if x > t]\n"
IN_RANGE = "def f(x, lo, hi):\n    return lo <= x and x <= hi\n"

NO_EPISODES = SimpleNamespace(slots=1)
"""An executor for a controller that only decides (runs no episode)."""


def task(code: str, inputs: list[str], entry: str = "f") -> Task:
    return Task(
        task_id="t", description="d", entry_point=entry, reference_code=code, tests=[TestCase(input=i) for i in inputs]
    )


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=10, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s, fingerprint_behaviour=True)


# -- mutants (pure) ------------------------------------------------------------------------------


def test_each_operator_gives_one_change_mutants():
    code = (
        "LIMIT = 10\n"
        "def f(xs, t):\n"
        "    total = 0\n"
        "    for x in xs:\n"
        "        if x > t and not x % 2 == 0:\n"
        "            total += x * 2\n"
        "    return total\n"
    )
    found = mutants(code, max_mutants=1000)
    operators = {m.operator for m in found}
    assert operators == {"relational", "arithmetic", "literal", "boolean", "not", "constant_return"}
    sources = [m.source for m in found]
    assert len(set(sources)) == len(sources) and code not in sources
    for m in found:
        ast.parse(m.source)
        changed = [line for line in m.diff.splitlines() if line[:1] in "+-"]
        assert len(changed) == 2 and changed[0].startswith("-") and changed[1].startswith("+"), m.diff
        assert m.diff.startswith("line ")
        assert "LIMIT = 1" in m.source and "LIMIT = 9" not in m.source and "LIMIT = 11" not in m.source
    # literals move by one; names are never touched
    assert any("total = 1\n" in m.source for m in found) and any("total = -1\n" in m.source for m in found)
    assert all("xs" in m.source and "for x in xs" in m.source for m in found)


def test_precedence_survives_the_splice():
    found = mutants("def f(a, b, c):\n    return a - b * c\n", max_mutants=1000)
    by_source = {m.source for m in found}
    # ``*`` swapped for ``+`` keeps its grouping: a - (b + c), not a - b + c
    assert "def f(a, b, c):\n    return a - (b + c)\n" in by_source
    for m in found:
        ast.parse(m.source)


def test_no_mutants_for_broken_or_site_less_code():
    assert mutants("def f(x:\n") == []
    assert mutants("def f(x):\n    print(x)\n") == []
    assert mutants("X = 1 + 2\n") == []  # module level is data, not behaviour


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=12), st.text(max_size=8))
def test_the_mutant_choice_is_capped_and_stable(cap, key):
    body = "".join(f"    a = a + {i} if a < b * {i} else a - {i}\n" for i in range(6))
    code = "def f(a, b):\n" + body + "    return a\n"
    first = mutants(code, max_mutants=cap, key=key)
    assert len(first) == cap
    assert [m.source for m in mutants(code, max_mutants=cap, key=key)] == [m.source for m in first]


def test_mutants_asked_for_again_are_the_same_and_each_caller_gets_its_own_list():
    from spade_llm.languages.python_mutants import _mutants

    code = "def f(a, b):\n    return a + b if a < b else a - 1\n"
    first = mutants(code, key="k")
    first.clear()  # a caller's list is its own: the kept mutants are not touched
    again = mutants(code, key="k")
    assert again and again == _mutants(code, key="k") and again is not mutants(code, key="k")
    assert [m.source for m in mutants(code, key="other")] == [m.source for m in _mutants(code, key="other")]


def test_probe_inputs_are_the_tests_then_integer_neighbours():
    probes = probe_inputs([(3, [1, "a", 5]), ("s",)])
    assert probes[:2] == [(3, [1, "a", 5]), ("s",)]
    neighbours = [(4, [1, "a", 5]), (2, [1, "a", 5]), (3, [2, "a", 5]), (3, [1, "a", 4]), (3, [1, "a", 6])]
    assert all(n in probes[2:] for n in neighbours) and len(probes) == 2 + 6
    assert len(probe_inputs([(i,) for i in range(500)], limit=40)) == 40
    assert probe_inputs([(True, [False])]) == [(True, [False])]  # a bool is not moved like an int


# -- the gate ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "inputs", "diff_line"),
    [
        (FILTER, ["([1, 5, 9], 4)", "([2, 3], 0)", "([7, 8, 1], 6)"], "+    return [x for x in xs if x >= t]"),
        (IN_RANGE, ["(5, 1, 10)", "(3, 0, 4)", "(7, 7, 9)"], "+    return lo <= x or x <= hi"),
    ],
)
def test_tests_a_one_token_mutant_survives_are_weak(validator, code, inputs, diff_line):
    report = validator.validate(task(code, inputs))
    assert (report.valid, report.reason) == (False, "weak_tests")
    assert "mutants of the reference" in report.detail and "line 2:" in report.detail
    assert report.mutation is not None and report.mutation.survived >= 1
    assert report.status == "passed"  # the reference's own verdict on its tests is still reported
    if code == FILTER:
        assert diff_line in report.detail


@pytest.mark.parametrize(
    ("code", "inputs"),
    [
        (FILTER, ["([1, 5, 9], 5)", "([2, 3], 0)", "([7, 8, 1], 6)", "([], 3)"]),
        (IN_RANGE, ["(5, 1, 10)", "(0, 1, 4)", "(10, 7, 9)", "(1, 1, 4)", "(4, 1, 4)"]),
    ],
)
def test_tests_that_kill_every_mutant_pass(validator, code, inputs):
    report = validator.validate(task(code, inputs))
    assert report.valid, report.detail
    assert report.mutation is not None and report.mutation.survived == 0 and report.mutation.kill_rate == 1.0
    assert report.row()["mutants"]["total"] == report.mutation.total > 0


def test_a_survivor_equal_on_every_probe_is_equivalent_and_ignored(validator):
    # ``i = -1`` survives the tests and differs only where the reference never stops (n < 0): no
    # test could tell them apart, so it counts as equivalent
    code = "def f(n):\n    i = 0\n    while i != n:\n        i += 1\n    return i * 2\n"
    report = validator.validate(task(code, ["(0,)", "(1,)", "(3,)"]))
    assert report.valid, report.detail
    assert report.mutation is not None and report.mutation.equivalent >= 1 and report.mutation.survived == 0


def test_mutants_that_loop_are_unknown_not_killed(validator):
    # ``i -= 1`` and friends never end: a call that runs out of its budget is no difference from the
    # reference (on a loaded machine any call could), so they are counted neither way
    code = "def f(n):\n    i = total = 0\n    while i < n:\n        total += i\n        i += 1\n    return total\n"
    report = validator.validate(task(code, [f"({n},)" for n in (-1, 0, 1, 2, 5, 9, 14)]))
    assert report.valid, report.detail
    m = report.mutation
    assert m is not None and m.unknown >= 1 and m.survived == m.undecided == 0
    assert m.killed + m.equivalent + m.unknown == m.total


def test_the_kill_rate_is_configurable(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=10, test_timeout_s=1)
    weak = task(FILTER, ["([1, 5, 9], 4)", "([2, 3], 0)", "([7, 8, 1], 6)"])
    lenient = Validator(sandbox, config.limits(), 1, min_kill_rate=0.8)
    assert lenient.validate(weak).valid
    off = Validator(sandbox, config.limits(), 1, min_kill_rate=0)
    report = off.validate(weak)
    assert report.valid and report.mutation is None


def test_the_stand_in_check_still_comes_first(validator):
    report = validator.validate(task("def f(x):\n    return 0 if x < 100 else 1\n", ["(1,)", "(2,)", "(5,)"]))
    assert report.reason == "weak_tests" and "returning 0" in report.detail and report.mutation is None


def test_what_mutants_print_is_discarded(validator):
    code = "def f(x):\n    print('x' * 10000)\n    return x * 3 + 1\n"
    report = validator.validate(task(code, ["(1,)", "(2,)", "(7,)", "(-4,)"]))
    assert report.valid, report.detail


WEAK_BOUNDARY = "def f(x):\n    if x > 10:\n        return x * 2\n    return x + 1\n"
WEAK_BOUNDARY_TESTS = ["(11,)", "(20,)", "(3,)", "(5,)"]  # nothing at 10: ``x >= 10`` survives


@pytest.mark.parametrize(
    "prelude",
    [
        # module-level work is not a call's cost: the gate still runs after a slow precompute
        pytest.param(
            "import time\n_t = time.monotonic()\nwhile time.monotonic() - _t < 0.3:\n    pass\n", marks=pytest.mark.slow
        ),
        # each version is a real module: dataclasses and sys.modules[__name__] work
        "from __future__ import annotations\nimport sys\nfrom dataclasses import dataclass\n"
        "from typing import ClassVar\n\n@dataclass\nclass Box:\n    n: ClassVar[int] = 1\n"
        "_ME = sys.modules[__name__]\n",
    ],
)
def test_the_gate_runs_whatever_the_reference_does_at_import(validator, prelude):
    report = validator.validate(task(prelude + WEAK_BOUNDARY, WEAK_BOUNDARY_TESTS))
    assert report.reason == "weak_tests" and report.mutation is not None, report.detail
    assert "x >= 10" in report.detail


def test_outputs_compare_as_the_judge_compares_them(validator):
    # round(a / b, 13) differs from round(a / b, 12) by less than the judge's float tolerance: no
    # test could kill it, so it must not make the task weak
    rounding = "def f(a, b):\n    return round(a / b, 12)\n"
    report = validator.validate(task(rounding, ["(1, 2)", "(6, 3)", "(9, 4)", "(7, 8)", "(0, 5)"]))
    assert report.valid, report.detail
    # a tuple and a list are the same output to the judge
    pairs = "def f(xs):\n    if len(xs) > 2:\n        return tuple(xs[:2])\n    return []\n"
    report = validator.validate(task(pairs, ["([1, 2, 3],)", "([],)", "([4, 5, 6, 7],)", "([9],)"]))
    assert report.mutation is not None and report.mutation.total > 0


def test_an_input_too_long_to_print_gives_a_verdict_not_an_exception(validator):
    huge = "(0x" + "f" * 5000 + ",)"
    report = validator.validate(task("def f(x):\n    return x % 7 == 3\n", [huge, "(3,)", "(10,)", "(4,)"]))
    assert isinstance(report, ValidationReport)


# -- behaviour -------------------------------------------------------------------------------------


def test_signatures_and_probes_are_shared_and_typed():
    assert behaviour.signature(([1, 2], 3)) == "list[int],int"
    assert behaviour.signature(("a", True)) == "str,bool"
    assert behaviour.signature(([],)) is None and behaviour.signature(({"a": 1},)) is None
    probes = behaviour.probes("list[int],int")
    assert len(probes) == behaviour.PROBES == len(set(map(repr, probes)))
    assert all(type(p[0]) is list and type(p[1]) is int for p in probes)
    assert probes == behaviour.probes("list[int],int")


def test_a_fingerprint_needs_evidence():
    ok = [(True, f"d{i % 5}") for i in range(behaviour.PROBES)]
    assert behaviour.fingerprint("int", ok) is not None
    assert behaviour.fingerprint("int", [(True, "same")] * behaviour.PROBES) is None  # a constant says little
    failing = [(False, None)] * (behaviour.PROBES // 2 + 1) + ok[: behaviour.PROBES // 2 - 1]
    assert behaviour.fingerprint("int", failing) is None
    assert behaviour.fingerprint("int", ok) != behaviour.fingerprint("str", ok)


def test_references_that_compute_the_same_thing_share_a_fingerprint(validator):
    loop = "def total(xs, k):\n    s = 0\n    for x in xs:\n        if x > k:\n            s += x\n    return s\n"
    builtin = "def total(xs, k):\n    return sum(filter(lambda v: v > k, xs))\n"
    other = "def total(xs, k):\n    return sum(x for x in xs if x >= k)\n"
    inputs = ["([1, 5, 9], 5)", "([2, 3], 0)", "([7, 8, 1], 6)", "([], 3)", "([4, 4], 4)"]
    reports = [validator.validate(task(code, inputs, "total")) for code in (loop, builtin, other)]
    assert all(r.valid for r in reports), [r.detail for r in reports]
    assert reports[0].behaviour is not None and reports[0].behaviour == reports[1].behaviour
    assert reports[2].behaviour != reports[0].behaviour


class BehaviourChecker:
    """Every task valid; its behaviour fingerprint is read from its description."""

    async def validate(self, task: Task) -> ValidationReport:
        await asyncio.sleep(0)
        report = ValidationReport(task.task_id, True, None, "", "passed", len(task.tests), len(task.tests), task)
        report.behaviour = task.description.split(":")[0]
        return report


def test_the_controller_rejects_a_behavioural_twin_and_remembers_it_on_resume(tmp_path):
    from spade_llm.config import load_config
    from spade_llm.controller import Controller
    from spade_llm.llm.stats import LLMStats
    from spade_llm.store import RunDir

    run = RunDir.create(tmp_path / "run")
    run.touch_journals()
    run.write_yaml("config.yaml", {})  # a run directory: what the resumed controller reads back
    config = load_config(None, {"controller": {"epochs": 1, "tasks_per_epoch": 2}})
    controller = Controller(config, run, None, NO_EPISODES, BehaviourChecker(), LLMStats(), log=lambda _m: None)  # type: ignore[arg-type]
    code_a = "def f(x):\n    return sorted(x)\n"
    code_b = "def f(x):\n    out = list(x)\n    out.sort()\n    return out\n"

    def decide(task_id: str, code: str, fp: str, index: int, kind: str = "induction") -> Task | None:
        t = Task(
            task_id=task_id,
            kind=kind,
            description=f"{fp}: sort",
            entry_point="f",
            reference_code=code,
            tests=[TestCase(input="([2, 1],)")] * 3,
        )
        report = asyncio.run(BehaviourChecker().validate(t))
        return controller.decide(t, report, index, 0)

    assert decide("e0-a", code_a, "fp1", 0) is not None
    assert decide("e0-b", code_b, "fp1", 1) is None
    assert decide("e0-c", code_b, "fp1", 2, kind="deduction") is not None  # another kind: not a twin
    rejected = run.path.joinpath("rejected.jsonl").read_text()
    assert '"duplicate"' in rejected and "computes what e0-a computes" in rejected
    again = Controller(config, run, None, NO_EPISODES, BehaviourChecker(), LLMStats(), log=lambda _m: None)  # type: ignore[arg-type]
    controller = again
    assert decide("e0-d", code_b, "fp1", 3) is None


def test_a_mutant_that_raises_is_killed_however_long_the_gates_program_is(validator):
    # the harness prints a call's first traceback inside the call's CPU budget, and a version's frames
    # pointed at the gate program's lines: its line 6 holds every version's source, and the printer's
    # work under it for a comprehension's frames took longer than the budget (20 ms), so a mutant's
    # IndexError there became a timeout (unknown), never a kill
    note = "x" * 20000
    body = "def f(xs):\n    n = len(xs)\n    return [xs[i - 1] * 2 for i in range(n)\n            if i >= 0]\n"
    code = f"NOTE = {note!r}\n\n\n{body}"  # the comprehension on line 6
    inputs = ["([1, 2, 3],)", "([5],)", "([4, -1],)", "([0, 7, 7, 2],)", "([],)"]
    raising = [x for x in mutants(code, 40, key=code) if "xs[i + 1]" in x.source]
    report = validator.validate(task(code, inputs))
    assert report.valid, report.detail
    m = report.mutation
    assert raising and m is not None and m.unknown == 0 and m.killed >= len(raising)


def test_versions_called_on_one_input_each_get_their_own_copy_of_it(validator):
    # the gate sends each test's arguments once parsed to every version: a version that changes its
    # argument (here every one appends) must not change what the next version gets. ``0`` -> ``1`` in
    # the append returns the same everywhere: equivalent, never killed by the reference's own append
    code = "def f(xs):\n    xs.append(0)\n    return len(xs) * 2 + xs[0]\n"
    report = validator.validate(task(code, ["([1, 2, 3],)", "([5],)", "([4, -1],)", "([0, 7, 7, 2],)"]))
    assert report.valid, report.detail
    m = report.mutation
    assert any("xs.append(1)" in x.source for x in mutants(code, 40, key=code))
    assert m is not None and m.equivalent >= 1 and m.survived == m.unknown == 0
