"""The fake model's task bank: every exercise is correct, testable, deterministic and recognisable.

Both kinds: the classic variants, and the multi-step exercises composed from building blocks
(``STEPS``, :func:`compose`). The references are our own trusted code, so they run in-process here.
Mistakes include deliberate infinite loops: those calls run under a short interval-timer limit.
"""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
import time

import pytest

from spade_llm.fake import bank, identify, mistakes, pipelines, tasks
from spade_llm.fake.bank import VARIANTS, Variant

REQUIRED_FAMILIES = {
    "strings", "lists", "arithmetic", "recursion", "dynamic_programming", "parsing", "dicts",
    "sorting_searching", "bits", "matrices", "intervals", "simulation",
}  # fmt: skip

FAST_VARIANTS = {next(v.key for v in VARIANTS if v.family == family) for family in {v.family for v in VARIANTS}}
"""The first variant of each family: the one the fast lane (``-m "not slow"``) checks; the others are slow."""


def _lane(fast: bool) -> tuple[pytest.MarkDecorator, ...]:
    return () if fast else (pytest.mark.slow,)


PARAM_CASES = [
    pytest.param(v, pi, id=f"{v.key}#{pi}", marks=_lane(v.key in FAST_VARIANTS and pi == 0))
    for v in VARIANTS
    for pi in range(len(v.params))
]


def _task(variant: Variant, pi: int, seed: int, target: float = 0.5) -> bank.BankTask:
    return bank.build_task(variant, random.Random(seed), target, params_index=pi)


def _fails_some_test(code: str, task: bank.BankTask, time_limit_s: float = 0.1) -> bool:
    """True as soon as one test's outcome differs from the reference's (one input at a time, so a
    deliberate infinite loop costs one time limit, not one per test)."""
    for args, expected in zip(task.inputs, task.outputs, strict=True):
        outcome = bank.run_in_process(code, task.entry_point, [args], time_limit_s)[0]
        if not (outcome.ok and bank.strict_equal(outcome.value, expected)):
            return True
    return False


def test_the_bank_covers_the_required_families_with_a_spread_of_difficulty() -> None:
    assert REQUIRED_FAMILIES <= set(bank.FAMILIES)
    assert len(bank.FAMILIES) >= 12
    assert len({v.key for v in VARIANTS}) == len(VARIANTS)
    difficulties = [v.difficulty_for(pi) for v in VARIANTS for pi in range(len(v.params))]
    assert min(difficulties) <= 0.1 and max(difficulties) >= 0.8
    for family, variants in bank.FAMILIES.items():
        assert len(variants) >= 3, family
        assert max(v.difficulty for v in variants) - min(v.difficulty for v in variants) >= 0.1, family


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_variant_templates_are_well_formed(variant: Variant) -> None:
    assert len(variant.statements) >= 3 and len(variant.entry_points) >= 3
    assert all("`$sig`" in s for s in variant.statements), "every statement shows the signature"
    for pi in range(len(variant.params)):
        for ep in variant.entry_points:
            code = variant.code_for(pi, ep)
            assert code is not None
            compile(code, variant.key, "exec")
            assert f"def {ep}(" in code
            for ti in range(len(variant.statements)):
                text = variant.statement(pi, ep, ti)
                assert "$" not in text and f"`{variant.signature(ep)}`" in text
        for kind, edits in variant.bugs.items():
            assert kind in bank.MISTAKE_KINDS
            for old, _ in edits:
                assert old in variant.code, f"{variant.key}: {kind} edit does not apply"


@pytest.mark.parametrize(("variant", "pi"), PARAM_CASES)
def test_reference_is_correct_deterministic_and_fast_on_its_own_tests(variant: Variant, pi: int) -> None:
    for seed, target in ((1, 0.0), (2, 0.5), (3, 1.0)):
        task = _task(variant, pi, seed, target)
        data = task.to_json()
        assert set(data) == {"description", "entry_point", "reference_code", "tests", "difficulty", "tags"}
        assert 5 <= len(data["tests"]) <= 8 + bank.MAX_KILLER_TESTS
        assert data["tags"][0] == variant.family and 0.0 <= data["difficulty"] <= 1.0
        inputs = []
        for test in data["tests"]:
            literal = ast.literal_eval(test["input"])
            assert isinstance(literal, tuple), test["input"]
            inputs.append(literal)
        assert len({t["input"] for t in data["tests"]}) == len(inputs), "no duplicate inputs"
        started = time.perf_counter()
        first = bank.run_in_process(data["reference_code"], data["entry_point"], inputs, time_limit_s=2.0)
        per_test = (time.perf_counter() - started) / len(inputs)
        second = bank.run_in_process(data["reference_code"], data["entry_point"], inputs, time_limit_s=2.0)
        assert per_test < 0.1
        for test, a, b, out in zip(data["tests"], first, second, task.outputs, strict=True):
            assert a.ok and b.ok, a.error
            assert bank.strict_equal(a.value, b.value) and bank.strict_equal(a.value, out)
            assert bank.json_roundtrips(out), "verdicts compare JSON values: every output must have an exact JSON form"
            if "expected" in test:
                assert bank.strict_equal(json.loads(json.dumps(test["expected"])), a.value)


@pytest.mark.parametrize(("variant", "pi"), PARAM_CASES)
def test_tests_reject_the_trivial_stand_ins(variant: Variant, pi: int) -> None:
    for seed in (4, 5):
        task = _task(variant, pi, seed)
        for position, name in enumerate(("None", "0", "first argument", "[]", '""', "{}")):
            survives = all(
                bank.strict_equal(bank.stand_ins(args)[position], out)
                for args, out in zip(task.inputs, task.outputs, strict=True)
            )
            assert not survives, f"returning {name} passes every test"


def test_same_rng_gives_byte_identical_tasks_and_other_seeds_differ() -> None:
    variant = bank.find_variant("strings/run_length")
    a = json.dumps(bank.build_task(variant, random.Random(7), 0.4).to_json())
    b = json.dumps(bank.build_task(variant, random.Random(7), 0.4).to_json())
    c = json.dumps(bank.build_task(variant, random.Random(8), 0.4).to_json())
    assert a == b and a != c


@pytest.mark.slow
def test_tasks_do_not_depend_on_the_hash_seed() -> None:
    """Task content (and the references' outputs) is the same in processes with other hash seeds."""
    script = (
        "import json, random, hashlib\n"
        "from spade_llm.fake import bank as b\n"
        "variants = [*b.VARIANTS, *(b.random_pipeline(random.Random(i), i / 20) for i in range(20))]\n"
        "blob = json.dumps([b.build_task(v, random.Random(i), i / 60).to_json() for i, v in enumerate(variants)])\n"
        "print(hashlib.sha256(blob.encode()).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


@pytest.mark.parametrize(("variant", "pi"), PARAM_CASES)
def test_every_mistake_really_fails_a_test(variant: Variant, pi: int) -> None:
    kinds = bank.mistake_kinds(variant, pi)
    assert {"syntax_error", "wrong_name"} <= set(kinds)
    assert len(kinds) >= 4, f"{variant.key} offers too few kinds of mistakes: {kinds}"
    for seed in (11, 12):
        task = _task(variant, pi, seed, target=seed / 20)
        for kind in kinds:
            code = bank.mistake_code(variant, pi, task.entry_point, kind, random.Random(seed))
            assert code is not None and code != task.reference_code
            if kind != "syntax_error":
                compile(code, kind, "exec")
            assert _fails_some_test(code, task), f"{variant.key} {kind} passes every test:\n{code}"


def test_generic_loop_rewrites_read_like_real_mistakes() -> None:
    code = "def total(nums):\n    s = 0\n    for x in nums:\n        s += x\n    return s\n"
    assert "for x in nums[1:]:" in (mistakes._generic_off_by_one(code) or "")
    assert "for i in range(len(nums) + 1):\n        x = nums[i]" in (mistakes._generic_exception(code) or "")
    looping = mistakes._generic_infinite_loop(code) or ""
    assert "while idx < len(nums):" in looping and "idx += 1" not in looping
    assert bank.run_in_process(looping, "total", [([1],)], time_limit_s=0.05)[0].status == "timeout"
    growing = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n"
    assert mistakes._generic_infinite_loop(growing) is None, "a loop that allocates would end on memory, not time"
    ranged = "def f(n):\n    t = 0\n    for i in range(1, n + 1):\n        t += i\n    return t\n"
    assert "range(1, n)" in (mistakes._generic_off_by_one(ranged) or "")
    assert "i = 1\n    while i < n + 1:" in (mistakes._generic_infinite_loop(ranged) or "")


@pytest.mark.parametrize("variant", [pytest.param(v, id=v.key, marks=_lane(v.key in FAST_VARIANTS)) for v in VARIANTS])
def test_identify_recognises_each_variant_from_its_description(variant: Variant) -> None:
    for seed in range(4):
        task = bank.build_task(variant, random.Random(seed), 0.5)
        prompt = (
            "You are an expert Python programmer.\n\nTask:\n"
            f"{task.description}\n\nWrite the function `{task.entry_point}`. Public tests:\n"
            + "\n".join(t["input"] for t in task.tests()[:3])
        )
        found = bank.identify(prompt)
        assert found is not None and found.exact
        assert (found.variant.key, found.params_index, found.entry_point) == (
            variant.key,
            task.params_index,
            task.entry_point,
        )


def test_identify_survives_reformatting_and_small_edits() -> None:
    variant = bank.find_variant("lists/sum_multiples")
    task = bank.build_task(variant, random.Random(3), 0.2, params_index=2)
    # whitespace, HTML escaping and JSON-style newlines do not matter
    mangled = task.description.replace(" ", "  ").replace("\n", "\\n").replace("'", "&#x27;")
    found = bank.identify(f"Solve this:\n{mangled}")
    assert found is not None and found.exact and found.params_index == 2
    # an edited statement is still found, and the shown example pins the parameter
    edited = task.description.replace("Write", "Please write").replace("Implement", "Please implement")
    edited = edited.replace("Negative numbers count too", "Negatives count as well")
    found = bank.identify(edited.replace("Given a list", "For a list"))
    assert found is not None and found.variant is variant and found.params_index == 2


def test_identify_returns_none_for_foreign_tasks() -> None:
    humaneval = (
        "from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        '    """ Check if in given list of numbers, are any two numbers closer to each other than\n'
        '    given threshold."""\n'
    )
    assert bank.identify(humaneval) is None
    assert bank.identify("Write `count_vowels(s)` that returns the number of consonants.") is None
    assert bank.identify("") is None


def test_run_in_process_reports_errors_and_timeouts_as_outcomes() -> None:
    code = "def f(x):\n    if x == 0:\n        return 1 // x\n    while x < 0:\n        pass\n    return x\n"
    ok, err, slow = bank.run_in_process(code, "f", [(2,), (0,), (-1,)], time_limit_s=0.05)
    assert ok.ok and ok.value == 2
    assert err.status == "error" and err.error and err.error.startswith("ZeroDivisionError")
    assert slow.status == "timeout"
    assert all(o.status == "error" for o in bank.run_in_process("def f(:\n", "f", [(1,), (2,)]))
    assert (bank.run_in_process("def g():\n    return 1\n", "f", [()])[0].error or "").startswith("KeyError")


def test_strict_equal_is_strict_about_types() -> None:
    assert not bank.strict_equal(True, 1) and not bank.strict_equal(1, 1.0)
    assert not bank.strict_equal(float("nan"), float("nan"))
    assert bank.strict_equal([1, {"a": (2,)}], [1, {"a": (2,)}])
    assert not bank.strict_equal([1, 2], (1, 2))


def test_stable_hash_is_fixed_across_processes() -> None:
    assert bank.stable_hash(0, "default", "generator", {"epoch": 1}) == bank.stable_hash(
        0, "default", "generator", {"epoch": 1}
    )
    assert bank.stable_hash(1, "a") != bank.stable_hash(1, "b")
    assert bank.stable_hash("x") == 14800493225841368724  # pinned: runs must reproduce across versions


# --------------------------------------------------------------------------------------------
# Composed (multi-step) exercises
# --------------------------------------------------------------------------------------------


def _minimal_chain(step: bank.Step, pi: int) -> bank.Spec:
    """The step alone, or with the first step that feeds it or consumes it when it must."""
    chain: list[tuple[str, int]] = [(step.name, pi)]
    if step.takes not in pipelines._INPUT_TYPES:
        feeder = next(s for s in bank.STEPS if s.gives == step.takes and s.takes in pipelines._INPUT_TYPES)
        chain.insert(0, (feeder.name, 0))
    if step.gives not in pipelines._OUTPUT_TYPES:
        consumer = next(s for s in bank.STEPS if s.takes == step.gives and s.gives in pipelines._OUTPUT_TYPES)
        chain.append((consumer.name, 0))
    return tuple(chain)


FAST_STEPS = {next(s.name for s in bank.STEPS if s.family == family) for family in bank.FAMILIES}
STEP_CASES = [
    pytest.param(s, pi, id=f"{s.name}#{pi}", marks=_lane(s.name in FAST_STEPS and pi == 0))
    for s in bank.STEPS
    for pi in range(len(s.params))
]

PIPELINES = [
    pytest.param(family, target, id=f"{family}@{target}", marks=_lane(target == 0.5))
    for family in sorted(bank.FAMILIES)
    for target in (0.1, 0.5, 0.9)
]


def test_steps_are_well_formed_and_cover_every_family() -> None:
    names = [s.name for s in bank.STEPS]
    assert len(names) == len(set(names)) >= 100
    assert {s.family for s in bank.STEPS} == set(bank.FAMILIES)
    produced = {s.gives for s in bank.STEPS} | pipelines._INPUT_TYPES
    consumed = {s.takes for s in bank.STEPS} | pipelines._OUTPUT_TYPES
    for step in bank.STEPS:
        assert 0 < step.cost <= 0.45 and step.family in bank.FAMILIES
        assert step.takes in produced and step.gives in consumed, step.name
        for pi in range(len(step.params)):
            phrase = step.render_phrase(pi)
            assert ";" not in phrase and not phrase.endswith(".") and "$" not in phrase, phrase
        for kind in step.bugs:
            assert kind in bank.MISTAKE_KINDS
    assert len(identify._phrase_index()) == sum(len(s.params) for s in bank.STEPS), "every phrase reads differently"
    for family in bank.FAMILIES:
        costs = [s.cost for s in bank.STEPS if s.family == family]
        assert min(costs) <= 0.12 and max(costs) >= 0.25, family


@pytest.mark.parametrize(("step", "pi"), STEP_CASES)
def test_every_step_composes_and_its_mistakes_fail_a_test(step: bank.Step, pi: int) -> None:
    variant = bank.compose(_minimal_chain(step, pi))
    assert variant.key.startswith(f"{variant.family}/pipeline:") and bank.find_variant(variant.key) is variant
    kinds = bank.mistake_kinds(variant, 0)
    assert {"syntax_error", "wrong_name"} <= set(kinds)
    for seed in (1, 2):
        task = _task(variant, 0, seed, target=seed / 3)
        for kind in kinds:
            code = bank.mistake_code(variant, 0, task.entry_point, kind, random.Random(seed))
            assert code is not None and code != task.reference_code
            assert _fails_some_test(code, task), f"{variant.key} {kind} passes every test:\n{code}"


@pytest.mark.parametrize(("family", "target"), PIPELINES)
def test_composed_tasks_are_valid_recognisable_and_near_the_target(family: str, target: float) -> None:
    rng = random.Random(f"{family}{target}")
    keys = set()
    for _ in range(3):
        variant = bank.random_pipeline(rng, target, family)
        assert variant is not None and variant.family == family and variant.informative
        keys.add(variant.key)
        task = bank.build_task(variant, rng, target)
        data = task.to_json()
        assert 5 <= len(data["tests"]) <= 8 + bank.MAX_KILLER_TESTS and data["tags"] == [family, variant.topic]
        assert abs(variant.difficulty - target) <= 0.2 and 0.0 < data["difficulty"] < 1.0
        inputs = [ast.literal_eval(t["input"]) for t in data["tests"]]
        first = bank.run_in_process(data["reference_code"], task.entry_point, inputs, time_limit_s=2.0)
        second = bank.run_in_process(data["reference_code"], task.entry_point, inputs, time_limit_s=2.0)
        for a, b, out in zip(first, second, task.outputs, strict=True):
            assert a.ok and b.ok and bank.strict_equal(a.value, b.value) and bank.strict_equal(a.value, out)
            assert bank.json_roundtrips(out)
        assert tasks._rejects_stand_ins(task.inputs, task.outputs)
        assert {"syntax_error", "wrong_name"} <= set(bank.mistake_kinds(variant, 0))
        prompt = f"{task.description}\n\nWrite a Python function `{task.entry_point}`."
        found = bank.identify(prompt)
        assert found is not None and found.exact, task.description
        assert (found.variant.key, found.entry_point) == (variant.key, task.entry_point)
        assert found.reference() == task.reference_code
    assert len(keys) >= (2 if target >= 0.5 else 1), "independent draws rarely meet (easy ones are fewer)"


def test_composed_tasks_offer_several_kinds_of_realistic_mistakes() -> None:
    rng = random.Random(31)
    variants = [bank.random_pipeline(rng, i / 40, sorted(bank.FAMILIES)[i % 14]) for i in range(40)]
    counts = [len(bank.mistake_kinds(v, 0)) for v in variants if v is not None]
    assert sum(c >= 3 for c in counts) >= 0.85 * len(counts), counts
    assert sum(counts) / len(counts) >= 4


def test_composed_statements_list_the_steps_and_read_back_after_edits() -> None:
    variant = bank.compose((("keep_multiples", 1), ("square_each", 0), ("total", 0)))
    assert variant.difficulty == round(0.02 + 0.04 + 0.04 + 0.03 + 0.05, 2)
    statement = variant.statement(0, "squares_total", 0)
    assert "`squares_total(nums)`" in statement
    steps = "1. keep only the numbers divisible by 3; 2. replace every number by its square; 3. add the numbers up"
    assert steps in statement
    assert bank.identify(statement.replace("Write a function", "Please write a function")) is not None
    found = bank.identify(statement.replace(" ", "  ").replace("Write", "Kindly write"))
    assert found is not None and found.variant is variant and found.entry_point == "squares_total"
    # one step less is another exercise; a name inside a longer one is not taken for the entry point
    two_steps = bank.compose((("keep_multiples", 1), ("square_each", 0)))
    shorter = bank.identify(two_steps.statement(0, "process_numbers", 1))
    assert shorter is not None and isinstance(shorter.variant, bank.PipelineVariant)
    assert shorter.variant.spec == (("keep_multiples", 1), ("square_each", 0))
    assert shorter.entry_point == "process_numbers"


def test_compose_refuses_chains_that_do_not_fit() -> None:
    for spec in (
        (),
        (("total", 0), ("square_each", 0)),  # an int cannot be squared element-wise
        (("square_each", 0), ("square_each", 0)),  # a step twice
        (("frequent_keys", 0),),  # nothing produces its input
        (("count_words", 0),) * 1 + (("split_words", 0),),
        (("keep_greater", 9),),
    ):
        with pytest.raises((ValueError, KeyError)):
            bank.compose(spec)


def test_pipeline_difficulty_spans_the_scale_in_every_family() -> None:
    for family in bank.FAMILIES:
        low = [bank.random_pipeline(random.Random(i), 0.05, family) for i in range(4)]
        high = [bank.random_pipeline(random.Random(i), 0.95, family) for i in range(4)]
        assert min(v.difficulty for v in low if v) <= 0.16, family
        assert max(v.difficulty for v in high if v) >= 0.88, family


def test_a_time_limit_is_not_swallowed_by_a_gc_callback():
    """The alarm that bounds an in-process call must land in the call: a slow garbage-collector
    callback (hypothesis installs one) would otherwise swallow it as an unraisable exception."""
    import gc
    import time

    def slow_callback(phase: str, info: dict) -> None:
        time.sleep(0.002)

    looping = "def f(x):\n    while True:\n        y = [[[] for _ in range(50)]]\n        y.append(y)\n"
    gc.callbacks.append(slow_callback)
    try:
        for _ in range(5):
            (outcome,) = bank.run_in_process(looping, "f", [(1,)], time_limit_s=0.05)
            assert outcome.status == "timeout"
    finally:
        gc.callbacks.remove(slow_callback)


def test_tasks_are_the_same_in_any_thread() -> None:
    """The mutant-killing tests a task gets are found under a line budget, not a timer: a task built
    off the main thread (an embedding app, a server thread) is the same task."""
    import threading

    def build(out: list[dict]) -> None:
        rng = random.Random(7)
        for i in range(12):
            target = 0.2 + 0.06 * i
            variant = bank.random_pipeline(rng, target, None) if i % 2 else bank.VARIANTS[(5 * i) % len(bank.VARIANTS)]
            assert variant is not None
            out.append(bank.build_task(variant, random.Random(i), target).to_json())

    here: list[dict] = []
    build(here)
    there: list[dict] = []
    thread = threading.Thread(target=build, args=(there,))
    thread.start()
    thread.join()
    assert here == there
    assert any(len(t["tests"]) > 8 for t in here)  # some task did get a test that kills a mutant
