"""The query kinds over whole programs: ``program_deduction`` (predict the stdout for a given stdin) and
``program_abduction`` (find a stdin that gives an output), from the gates to a fake run and its export.

Programs here are benign (sums, loops, upper-casing); each runs in the test-wide subprocess sandbox.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import run_backend

from spade_llm.config import SandboxConfig
from spade_llm.fake import bank
from spade_llm.fake.kinds import answer_kind, detect_kind
from spade_llm.fake.model import FakeLLM
from spade_llm.fake.programs import as_program_task
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind, leaks, run_gates
from spade_llm.kinds.program_abduction import proposals
from spade_llm.kinds.program_deduction import predictions
from spade_llm.kinds.program_queries import read_blocks
from spade_llm.llm.base import LLMRequest
from spade_llm.rewards.groundtruth import ground_truth, sandbox_fusion_form, task_from_ground_truth
from spade_llm.sandbox.runner import run_program
from spade_llm.sandbox.stdio import same_output
from spade_llm.solver import LLMSolver, first_messages
from spade_llm.templates import Prompts
from spade_llm.types import Attempt, Message, Task, TestCase
from spade_llm.validation import Validator

DEDUCTION = get_kind("program_deduction")
ABDUCTION = get_kind("program_abduction")
KINDS = (DEDUCTION.name, ABDUCTION.name)

EVENS = "n = int(input())\nxs = list(map(int, input().split()[:n]))\nprint(sum(x % 2 == 0 for x in xs), sum(xs))\n"
INPUTS = ["3\n1 2 3\n", "4\n10 20 31 7\n", "1\n5\n", "2\n8 8\n", "5\n1 1 1 1 2\n"]
OUTPUTS = ["1 6\n", "2 68\n", "0 5\n", "2 16\n", "1 6\n"]
VALIDATOR = (
    "n = int(input())\n"
    "xs = [int(x) for x in input().split()]\n"
    "assert 1 <= n <= 10 and len(xs) == n and all(0 <= x <= 99 for x in xs)\n"
)


def query_task(
    kind: str, code: str = EVENS, inputs: list[str] = INPUTS, expected: list[str] | None = None, **kw: Any
) -> Task:
    tests = [TestCase(input=i) if expected is None else TestCase(input=i, expected=e) for i, e in zip(
        inputs, expected or inputs, strict=True)]  # fmt: skip
    fields: dict[str, Any] = {
        "task_id": f"q-{kind}",
        "kind": kind,
        "description": "Reads n, then n integers; prints how many are even, then their sum.",
        "entry_point": "",
        "reference_code": code,
        "tests": tests,
        **kw,
    }
    return Task(**fields)


@pytest.fixture(scope="module")
def validator(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Validator(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def judge(sandbox):
    config = SandboxConfig(backend="subprocess", timeout_s=5, test_timeout_s=1)
    return Judge(sandbox, config.limits(), config.test_timeout_s)


@pytest.fixture(scope="module")
def tasks(validator) -> dict[str, Task]:
    """Each kind's sound task, through its gates (expected stdouts filled, a time limit derived)."""
    out = {}
    for kind in KINDS:
        report = run_gates(validator, query_task(kind))
        assert report.valid and report.task is not None, report.detail
        out[kind] = report.task
    return out


def statuses(result) -> list[str]:
    return [r.status for r in result.test_results or []]


def blocks(tag: str, bodies: list[str]) -> str:
    return "".join(f"```{tag} {k + 1}\n{body}```\n" for k, body in enumerate(bodies))


# -- gates ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_sound_program_task_passes_each_kinds_gates_with_the_references_stdout(tasks, kind):
    task = tasks[kind]
    assert [t.expected for t in task.tests] == OUTPUTS
    assert task.time_limit_s == 1.0  # derived from the reference's runs, as for a program task


TRAPS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "program_deduction": {
        "same output": ({"code": "import sys\nsys.stdin.read()\nprint('ok')\n"}, "same output"),
        "echo": ({"code": "import sys\nprint(sys.stdin.read(), end='')\n"}, "prints its input back"),
        "long output": ({"code": "n = int(input())\ninput()\nprint('ab' * (200 + n))\n"}, "characters long"),
        "fenced output": ({"code": "n = int(input())\ninput()\nprint('```', n)\n"}, "fenced block"),
    },
    "program_abduction": {
        "same output": ({"code": "import sys\nsys.stdin.read()\nprint('ok')\n"}, "same output"),
        # upper-casing is no echo of the tests' inputs, but it gives back every output it is given
        "prints back": (
            {"code": "import sys\nprint(sys.stdin.read().strip().upper())\n", "inputs": ["abc\n", "hey\n", "xyz\n"]},
            "no input to search for",
        ),
        "long output": ({"code": "n = int(input())\ninput()\nprint('ab' * (200 + n))\n"}, "characters long"),
    },
}


@pytest.mark.parametrize(("kind", "trap"), [(k, t) for k, traps in TRAPS.items() for t in traps])
def test_queries_that_make_no_exercise_are_weak_tests_for_the_kinds_own_reason(validator, kind, trap):
    fields, said = TRAPS[kind][trap]
    report = run_gates(validator, query_task(kind, **fields))
    assert (report.valid, report.reason) == (False, "weak_tests") and said in report.detail, report.detail


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("reason", "fields"),
    [
        ("syntax_error", {"code": "print(int(input()) +\n"}),
        ("too_few_tests", {"inputs": INPUTS[:2]}),
        ("runtime_error", {"code": "n = int(input())\nxs = input().split()\nprint(int(xs[n]))\n"}),
        ("nondeterministic", {"code": "import random\ninput(); input()\nprint(random.random())\n"}),
        ("expected_mismatch", {"expected": [*OUTPUTS[:4], "999\n"]}),
        ("bad_input", {"inputs": [*INPUTS[:4], "1\n" + "9 " * 1500]}),  # a query is not a contest's large case
    ],
)
def test_the_program_kinds_gates_reject_an_unsound_reference_for_their_own_reasons(validator, kind, reason, fields):
    report = run_gates(validator, query_task(kind, **fields))
    assert (report.valid, report.reason) == (False, reason), report.detail


def test_a_deduction_query_whose_input_cannot_be_shown_in_a_block_is_bad_input(validator):
    fenced = query_task(DEDUCTION.name, code="import sys\nprint(len(sys.stdin.read()))\n",
                        inputs=["a\n", "bb\n", "```\n"])  # fmt: skip
    assert run_gates(validator, fenced).reason == "bad_input"
    # abduction never shows a stdin: the same task is fine there
    assert run_gates(validator, fenced.model_copy(update={"kind": ABDUCTION.name})).valid


def test_the_tasks_validator_is_checked_and_an_input_generator_left_out(validator):
    generator = "size, seed = map(int, input().split())\nprint(size)\nprint(' '.join(['7'] * size))\n"
    task = query_task(ABDUCTION.name, input_validator=VALIDATOR, input_generator=generator)
    report = run_gates(validator, task)
    assert report.valid and report.task is not None, report.detail
    assert len(report.task.tests) == len(INPUTS) and report.task.input_generator is None  # no contest-sized query
    assert report.task.input_validator == VALIDATOR
    weak = run_gates(validator, query_task(ABDUCTION.name, input_validator="import sys\nsys.stdin.read()\n"))
    assert weak.reason == "weak_validator"
    strict = run_gates(validator, query_task(ABDUCTION.name, input_validator=VALIDATOR.replace("1 <= n", "2 <= n")))
    assert strict.reason == "invalid_input"


# -- deduction: judging --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (blocks("output", OUTPUTS), ["passed"] * 5),
        # the output rule: trailing spaces and a missing final newline do not matter
        (blocks("output", ["1 6   \n", "2 68", "0 5\n\n", "2 16\t\n", "1 6"]), ["passed"] * 5),
        # order does not matter for numbered blocks; the last block written for a query wins
        ("```output 5\n1 6\n```\n```output 1\n9 9\n```\n" + blocks("output", OUTPUTS[:4]), ["passed"] * 5),
        # unnumbered blocks fill the queries in order; a python block is the program quoted, not an answer
        ("```python\nprint(1)\n```\n" + "".join(f"```output\n{o}```\n" for o in OUTPUTS), ["passed"] * 5),
        ("```\n1 6\n```\n```\n2 68\n```", ["passed", "passed", "error", "error", "error"]),  # plain blocks
        (blocks("output", ["1 6\n", "2 67\n", " 0 5\n", "2\n16\n", "1 6\n"]), ["passed", *["failed"] * 3, "passed"]),
        (blocks("output", OUTPUTS[:2]), ["passed", "passed", "error", "error", "error"]),
    ],
)
def test_deduction_predictions_are_judged_by_the_output_rule(tasks, answer, expected):
    task = tasks[DEDUCTION.name]
    result = DEDUCTION.check_answer(None, task, DEDUCTION.parse_answer(answer), None)  # type: ignore[arg-type]
    assert statuses(result) == expected
    assert result.tests_passed == expected.count("passed") and result.tests_total == 5


@pytest.mark.parametrize("answer", ["", "I cannot tell.", "```python\n1 6\n```", "```output 9\n1 6\n```"])
def test_an_answer_without_a_readable_prediction_is_an_error(tasks, answer):
    task = tasks[DEDUCTION.name]
    result = DEDUCTION.check_answer(None, task, DEDUCTION.parse_answer(answer), None)  # type: ignore[arg-type]
    assert final_status(result) == "error" and result.load_error and statuses(result) == ["error"] * 5


def test_parse_answer_keeps_the_blocks_in_one_form_and_reads_it_back_alike(tasks):
    raw = "Tracing it:\n```output 2\n2 68```\nthen\n```stdout #1:\n1 6\n```\n```python\nx = 1\n```"
    parsed = DEDUCTION.parse_answer(raw)
    assert parsed == "```output 2\n2 68\n```\n```output 1\n1 6\n```\n"
    assert DEDUCTION.parse_answer(parsed) == parsed
    assert predictions(tasks[DEDUCTION.name], parsed) == {1: "2 68\n", 0: "1 6\n"}
    # a fence inside a sentence opens nothing (Markdown's reading): the blocks after it still read
    prose = "Here is one ```output N block per input, as asked:\n```output 1\n1 6\n```\n```output 2\n2 68\n```\n"
    assert predictions(tasks[DEDUCTION.name], prose) == {0: "1 6\n", 1: "2 68\n"}


def test_each_kinds_reference_answer_passes_and_a_subset_keeps_its_indices(tasks, judge):
    for kind in (DEDUCTION, ABDUCTION):
        task = tasks[kind.name]
        assert kind.check_answer(judge, task, kind.parse_answer(kind.reference_answer(task)), None).all_passed
        some = kind.check_answer(judge, task, kind.reference_answer(task), [3, 1])
        assert [r.index for r in some.test_results or []] == [3, 1] and some.all_passed


# -- abduction: judging by running the reference -------------------------------------------------------


def test_abduction_any_input_giving_the_output_passes_and_the_inputs_are_the_answers(tasks, judge):
    task = tasks[ABDUCTION.name]
    others = ["1\n6", "2\n2 66\n", "3\n1 1 3\n", "2\n6 10\n", "1\n6 99\n"]  # none is the task's own input
    result = ABDUCTION.check_answer(judge, task, ABDUCTION.parse_answer(blocks("input", others)), None)
    assert statuses(result) == ["passed"] * 5 and final_status(result) == "passed"
    assert [r.input for r in result.test_results or []] == ["1\n6\n", *others[1:]]  # the final newline added


def test_abduction_an_input_giving_another_output_or_crashing_or_looping_fails(judge, validator):
    code = "n = int(input())\nwhile n == 0:\n    pass\nxs = list(map(int, input().split()[:n]))\n"
    code += "print(sum(x % 2 == 0 for x in xs), sum(xs))\n"
    report = run_gates(validator, query_task(ABDUCTION.name, code=code))
    assert report.valid and report.task is not None, report.detail
    task = report.task
    answer = blocks("input", ["2\n1 5\n", "abc\n", "0\n1\n", "2\n6 10\n"])
    result = ABDUCTION.check_answer(judge, task, ABDUCTION.parse_answer(answer), None)
    assert statuses(result) == ["failed", "failed", "timeout", "passed", "error"]
    wrong, crash, _, _, missing = result.test_results or []
    assert wrong.output == "0 6\n" and wrong.error is None  # what it printed on the solver's input
    assert "the program failed on this input" in (crash.error or "") and "ValueError" in (crash.error or "")
    assert missing.input == "" and missing.error == "no input given for this output"
    assert final_status(result) == "timeout"


def test_abduction_an_input_the_tasks_validator_rejects_fails_even_when_it_prints_the_output(validator, judge):
    report = run_gates(validator, query_task(ABDUCTION.name, input_validator=VALIDATOR))
    assert report.valid and report.task is not None, report.detail
    task = report.task
    # "1\n6 100" prints "1 6" (the program reads n numbers only), but 2 numbers on the line break the format
    answer = blocks("input", ["1\n6 100\n", "1\n68\n", "1\n5\n", "1\n16\n", "11\n1 1 1 1 1 1 1 1 1 1 0\n"])
    result = ABDUCTION.check_answer(judge, task, answer, None)
    assert statuses(result) == ["failed", "failed", "passed", "failed", "failed"]
    rejected = [r for r in result.test_results or [] if r.index in (0, 4)]
    assert all("input validator rejects" in (r.error or "") for r in rejected)
    assert (result.test_results or [])[1].output == "1 68\n"  # accepted, run, and another output
    # without the validator the same first input passes: the validator is what fails it
    bare = task.model_copy(update={"input_validator": None})
    assert statuses(ABDUCTION.check_answer(judge, bare, answer, [0])) == ["passed"]


def test_abduction_a_program_that_is_a_coin_flip_on_the_answers_input_pays_nothing(validator, judge, sandbox):
    # deterministic on its tests; on n == 7 it prints a hash, which moves with the hash seed of each run
    code = "n = int(input())\ninput()\nprint(n * 3 if n != 7 else hash('spade') % 100003)\n"
    report = run_gates(validator, query_task(ABDUCTION.name, code=code))
    assert report.valid and report.task is not None, report.detail
    printed = run_program(sandbox, code, validator.limits, stdin="7\n0\n").stdout  # the judge's first run: seed 0
    flip = TestCase(input="9\n0\n", expected=printed)  # an output its own input does not give: only 7 does
    task = report.task.model_copy(update={"tests": [*report.task.tests[:4], flip]})
    answer = blocks("input", ["3\n0\n", "4\n0\n", "1\n0\n", "2\n0\n", "7\n0\n"])
    result = ABDUCTION.check_answer(judge, task, answer, [0, 4])
    assert statuses(result) == ["failed", "failed"]  # the flip fails, and takes the honest one with it
    assert "another run" in ((result.test_results or [])[1].error or "")
    honest = ABDUCTION.check_answer(judge, task, answer, [0])
    assert statuses(honest) == ["passed"]


def test_abduction_reads_proposals_as_blocks_by_number_or_in_order(tasks):
    task = tasks[ABDUCTION.name]
    found = proposals(task, "```input 3\n1\n5```\n```input\n3\n1 2 3\n```\n```stdin\n4\n10 20 31 7\n```")
    assert found == {2: "1\n5\n", 0: "3\n1 2 3\n", 1: "4\n10 20 31 7\n"}
    assert isinstance(proposals(task, "```output 1\n1 6\n```"), str)  # blocks of the other kind are no answer


# -- what the solver is shown -------------------------------------------------------------------------

SECRET = "import sys\nw = sys.stdin.read().strip()\nprint(w.upper() + '-42')\n"
WORDS = ["zebra\n", "yak\n", "ox\n", "gnu\n", "emu\n"]


def render_first(task: Task) -> str:
    return first_messages(Prompts(), task, 3)[1].content


@pytest.fixture(scope="module")
def secret(validator) -> dict[str, Task]:
    out = {}
    for kind in KINDS:
        report = run_gates(validator, query_task(kind, code=SECRET, inputs=WORDS, description="Shouts a word."))
        assert report.valid and report.task is not None, report.detail
        out[kind] = report.task
    return out


def test_the_first_prompt_shows_the_program_and_the_questions_never_the_answers(secret):
    text = render_first(secret[DEDUCTION.name])
    assert text.startswith("Predict the program's output") and "w.upper()" in text
    assert "```input 1\nzebra\n```" in text and "```input 5\nemu\n```" in text
    assert not any(word in text for word in ("ZEBRA", "YAK", "GNU", "EMU"))  # no expected stdout, public or hidden
    text = render_first(secret[ABDUCTION.name])
    assert text.startswith("Find inputs for the program") and "```output 1\nZEBRA-42\n```" in text
    assert not any(word in text for word in ("zebra", "yak", "gnu", "emu"))  # no stdin, public or hidden
    for kind in KINDS:
        assert detect_kind([Message(role="user", content=render_first(secret[kind]))]) == kind


async def test_repair_prompts_show_the_solvers_own_answer_never_the_hidden_one(secret, judge):
    solver = LLMSolver(None, Prompts(), None, seed=0, max_turns=3, public_tests=3,  # type: ignore[arg-type]
                       temperature=0.0, max_tokens=100)  # fmt: skip
    task = secret[DEDUCTION.name]
    answer = blocks("output", ["ZEBRA-41\n", "YAK-42\n"])
    result = DEDUCTION.check_answer(judge, task, answer, [0, 1, 2])
    text = solver.repair_message(task, Attempt(turn=1, code=answer, result=result), result).content
    assert text.startswith("Predict the program's output") and "ZEBRA-41" in text
    assert "ZEBRA-42" not in text and "OX-42" not in text and "1/3" in text
    task = secret[ABDUCTION.name]
    for answer in (blocks("input", ["cat\n", "yak\n"]), "no idea"):
        parsed = ABDUCTION.parse_answer(answer)
        result = ABDUCTION.check_answer(judge, task, parsed, [0, 1, 2])
        text = solver.repair_message(task, Attempt(turn=1, code=parsed, result=result), result).content
        assert text.startswith("Find inputs for the program") and "zebra" not in text and "\nox" not in text
        assert not parsed or "CAT-42" in text  # what its own input gave
        assert parsed or "no ```input block could be read" in text


@pytest.mark.parametrize("kind", KINDS)
def test_a_query_shown_with_its_answer_in_the_description_is_a_leak(validator, kind):
    said = "Shouts a word: for the input yak the program prints YAK-42."
    task = query_task(kind, code=SECRET, inputs=WORDS, description=said)
    report = run_gates(validator, task)
    assert report.reason == "leaks_hidden_test" and "hidden test 1" in report.detail, report.detail
    backwards = query_task(kind, code=SECRET, inputs=WORDS, description="YAK-42 is what it prints for yak.")
    assert [leak.test for leak in leaks(backwards.model_copy(update={"tests": report.task.tests}))] == [1]  # type: ignore[union-attr]
    apart = query_task(kind, code=SECRET, inputs=WORDS, description="Shouts a word (yak, say). " + "." * 90 + "YAK-42")
    assert run_gates(validator, apart).valid  # too far apart to be one example


@pytest.mark.parametrize("kind", KINDS)
def test_a_one_character_input_leaks_only_with_its_output_right_after_it(kind):
    tests = [TestCase(input="7\n", expected="21\n"), TestCase(input="3\n", expected="3\n")]
    told = query_task(kind, tests=tests).model_copy(update={"tests": tests, "description": "For n = 7 it prints 21."})
    assert [leak.test for leak in leaks(told)] == [0]
    apart = told.model_copy(update={"description": "Read n (1 <= n <= 7) and print the number of ways; at most 21."})
    assert leaks(apart) == []


def test_a_multiline_input_shown_whole_in_the_description_is_an_abduction_leak(tasks):
    task = tasks[ABDUCTION.name].model_copy(update={"description": "Example input:\n4\n10 20 31 7\n(see above)"})
    assert [(leak.test, leak.form) for leak in leaks(task)] == [(1, "verbatim")]
    # for deduction the input is the question: showing it is no leak
    assert leaks(task.model_copy(update={"kind": DEDUCTION.name})) == []


# -- the fake model ---------------------------------------------------------------------------------------


def bank_program_task(kind: str, seed: int) -> Task | None:
    """One of the fake's program tasks, built as its generator builds them, as a task of ``kind``."""
    rng = random.Random(seed)
    variant = bank.random_pipeline(rng, rng.random(), None) if seed % 2 else bank.VARIANTS[seed % len(bank.VARIANTS)]
    if variant is None:
        return None
    built = bank.build_task(variant, random.Random(seed), variant.difficulty)
    data = as_program_task(built)
    if data is None:
        return None
    tests = [
        TestCase(input=t["input"], expected=json.dumps(out) + "\n")
        for t, out in zip(data["tests"], built.outputs, strict=True)
    ]
    return Task(**{**data, "tests": tests, "task_id": f"{kind}-{seed}", "kind": kind})


def in_process_verdicts(task: Task, answer: str) -> list[bool]:
    """Each query right or not: deduction by the output rule, abduction by the bank's trusted function
    called on the proposed input's JSON lines, in-process (the program's ``main`` does just that)."""
    if task.kind == DEDUCTION.name:
        said = predictions(task, answer)
        assert not isinstance(said, str)
        return [i in said and same_output(str(t.expected), said[i]) for i, t in enumerate(task.tests)]
    given = proposals(task, answer)
    assert not isinstance(given, str)
    ident = bank.identify(task.description)
    assert ident is not None
    calls = [tuple(json.loads(x) for x in given.get(i, "").splitlines() if x.strip()) for i in range(len(task.tests))]
    outcomes = bank.run_in_process(ident.reference(), ident.entry_point, calls, 1.0)
    return [
        o.ok and same_output(str(t.expected), json.dumps(o.value)) for o, t in zip(outcomes, task.tests, strict=True)
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_the_fake_plays_each_kind_right_when_strong_and_wrong_when_weak(kind):
    built = [t for seed in range(40) if (t := bank_program_task(kind, seed)) is not None]
    assert len(built) >= 25
    rates = {}
    for profile in ("strong-solver", "weak-solver"):
        fake, whole, queries = FakeLLM(profile), [], []
        for i, task in enumerate(built):
            request = LLMRequest(messages=first_messages(Prompts(), task, 3), role="solver", seed=i)
            answer = answer_kind(fake, request)
            assert answer is not None and answer == answer_kind(fake, request)  # deterministic
            verdicts = in_process_verdicts(task, DEDUCTION.parse_answer(answer) if kind == DEDUCTION.name else answer)
            whole.append(all(verdicts))
            queries.extend(verdicts)
        rates[profile] = (sum(whole) / len(whole), sum(queries) / len(queries))
    strong, weak = rates["strong-solver"], rates["weak-solver"]
    if kind == DEDUCTION.name:
        assert strong[0] >= 0.9 and weak[0] <= 0.2, rates
    else:  # an output the fake's search never meets cannot be answered: judged per query, as for abduction
        assert strong[1] >= 0.75 and weak[1] <= 0.45, rates
    assert weak[1] < strong[1] - 0.3, rates


# -- self-play on the fake model, and the exports ---------------------------------------------------------


def fake_run(tmp_path: Path, kind: str, profile: str) -> Path:
    from spade_llm.cli.app import main

    out = tmp_path / f"{kind}-{profile}"
    argv = ["run", "--model", f"fake/{profile}", "--kinds", kind, "--epochs", "1", "--tasks-per-epoch", "8"]
    assert main([*argv, "--samples-per-task", "2", "--sandbox", run_backend(), "--out", str(out), "--quiet"]) == 0
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def query_share(runs: list[dict[str, Any]]) -> float:
    """The share of queries the last answers got right, over every trajectory."""
    results = [t["attempts"][-1]["result"] for t in runs if t["attempts"]]
    return sum(r["tests_passed"] for r in results) / max(1, sum(r["tests_total"] for r in results))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_fake_self_play_run_accepts_tasks_the_strong_solver_passes_and_the_weak_one_fails(tmp_path, kind):
    strong, weak = fake_run(tmp_path, kind, "strong-solver"), fake_run(tmp_path, kind, "weak-solver")
    tasks = read_jsonl(strong / "tasks.jsonl")
    assert len(tasks) >= 6 and {t["kind"] for t in tasks} == {kind}
    assert all(t["entry_point"] == "" and all(x["expected"].endswith("\n") for x in t["tests"]) for t in tasks)
    strong_runs, weak_runs = read_jsonl(strong / "trajectories.jsonl"), read_jsonl(weak / "trajectories.jsonl")
    passed = Counter(t["final_status"] == "passed" for t in strong_runs)
    weak_passed = sum(t["final_status"] == "passed" for t in weak_runs)
    assert query_share(strong_runs) >= 0.65 and query_share(weak_runs) <= 0.45
    assert weak_passed < len(weak_runs) / 2 and passed[True] > weak_passed
    if kind == DEDUCTION.name:  # every output can be worked out: the strong solver passes nearly all
        assert passed[True] >= 0.8 * len(strong_runs)
    asked = "output" if kind == DEDUCTION.name else "input"
    for t in strong_runs:  # no prompt ever held an answer block but the reply format's example
        shown = "\n".join(m["content"] for m in t["messages"] if m["role"] == "user")
        assert [body for _, body in read_blocks(shown, (asked,))] in ([], ["...\n"]), t["task_id"]
    check_exports(tmp_path, strong, tasks, strong_runs)


def check_exports(tmp_path: Path, run: Path, tasks: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    """The GRPO rows' ground truth judges as the loop did; SFT rows end with a passing answer; verl's own
    judges leave the tasks out for their counted reason (the answer is no program)."""
    from spade_llm.cli.app import main
    from spade_llm.export.harbor import _why_not
    from spade_llm.rewards.code import compute_score

    grpo = tmp_path / f"{run.name}.grpo.jsonl"
    assert main(["export", str(run), "--format", "grpo", "-o", str(grpo)]) == 0
    rows = {row["task_id"]: row for row in read_jsonl(grpo)}
    assert set(rows) == {t["task_id"] for t in tasks}
    for record in tasks:
        task = Task(**record)
        kind = get_kind(task.kind)
        truth = rows[task.task_id]["ground_truth"]
        assert compute_score("spade", kind.reference_answer(task), truth)["score"] == 1.0
        assert compute_score("spade", "```output 1\n```\n```input 1\n```", truth)["score"] == 0.0
        assert sandbox_fusion_form(task).reason == "its answer is not a program" and _why_not(task)
    for trajectory in runs:  # the reward reads and judges the last answer as the episode ended
        raw = trajectory["attempts"][-1]["raw"]
        score = compute_score("spade", raw, rows[trajectory["task_id"]]["ground_truth"])["score"]
        assert (score == 1.0) == (trajectory["final_status"] == "passed"), trajectory["task_id"]
    sft = tmp_path / f"{run.name}.sft.jsonl"
    assert main(["export", str(run), "--format", "sft", "-o", str(sft)]) == 0
    assert all(row["messages"][-1]["role"] == "assistant" for row in read_jsonl(sft))
    try:
        import pyarrow.parquet as pq
    except ImportError:  # the verl rows need pyarrow; the ground truth above is theirs too
        return
    from spade_llm.export.solver_rows import ExportFilters, export_run

    verl = export_run(run, "verl", tmp_path / f"{run.name}.parquet", ExportFilters())
    verl_rows = pq.read_table(verl.path).to_pylist()
    truths = {r["extra_info"]["task_id"]: r["reward_model"]["ground_truth"] for r in verl_rows}
    assert truths == {task_id: row["ground_truth"] for task_id, row in rows.items()}
    fusion = export_run(run, "verl", tmp_path / "fusion.parquet", ExportFilters(), verl_reward="sandbox_fusion")
    assert fusion.rows == 0 and set(fusion.left_out.tasks["its answer is not a program"]) == set(rows)


def test_the_ground_truth_carries_the_program_and_its_validator_and_the_reward_checks_it(validator):
    from spade_llm.rewards.code import compute_score

    report = run_gates(validator, query_task(ABDUCTION.name, input_validator=VALIDATOR))
    assert report.task is not None
    truth = ground_truth(report.task, 3)
    assert truth["reference_code"] == EVENS and truth["input_validator"] == VALIDATOR and truth["time_limit_s"] == 1.0
    back, public = task_from_ground_truth(json.dumps(truth))
    assert (back.input_validator, back.kind, public) == (VALIDATOR, ABDUCTION.name, 3)
    right = blocks("input", ["1\n6\n", "2\n2 66\n", "1\n5\n", "2\n6 10\n", "3\n1 1 4\n"])
    assert compute_score("spade", right, json.dumps(truth))["score"] == 1.0
    outside = blocks("input", ["1\n6 100\n", "2\n2 66\n", "1\n5\n", "2\n6 10\n", "3\n1 1 4\n"])  # refused
    assert compute_score("spade", outside, json.dumps(truth))["score"] == 0.0
