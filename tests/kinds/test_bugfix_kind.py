"""The ``bugfix`` kind (``kinds/bugfix.py``): its gates reject each trap for its own reason, through the
gates as through ``spade verify``; what the solver is shown (the buggy code and its symptom, never the
reference's changed lines); how a fix is judged (the buggy code handed back scores nothing); a proposal
made on a base keeps the base; and the fake model's injector and fixer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import TOTAL_UPTO, TOTAL_UPTO_BUG, bugfix_task
from sandbox_backends import run_backend

from spade_llm.fake.bugfix import bug_difficulty
from spade_llm.fake.model import FakeLLM
from spade_llm.generator import parse_task
from spade_llm.judge import Judge
from spade_llm.kinds import get_kind, run_gates
from spade_llm.kinds.bugfix import BUG_META, UNCHANGED, changed_lines, secret_lines
from spade_llm.languages import PYTHON
from spade_llm.llm.base import LLMRequest
from spade_llm.sandbox.base import Limits
from spade_llm.solver import first_messages
from spade_llm.templates import Prompts
from spade_llm.types import Message, TestCase

KIND = get_kind("bugfix")
TRAPS = {
    # no test asks for n = 4: the bug passes them all, yet a probe input (a test's n moved by one) tells it apart
    "bug_not_caught": TOTAL_UPTO.replace("    return s\n", "    return s if n != 4 else s + 1\n"),
    "bug_breaks_all": TOTAL_UPTO.replace("return s", "return None"),
    "bug_too_large": "def total_upto(n):\n" + "".join(f"    x{i} = {i}\n" for i in range(12)) + "    return n * n\n",
    "bug_equivalent": TOTAL_UPTO.replace("s += i", "s = s + i"),
    "bug_gives_away": TOTAL_UPTO.replace("range(1, n + 1):", "range(1, n):  # was range(1, n + 1)"),
    "bug_invalid": TOTAL_UPTO.replace("def total_upto", "def total"),
    "bug_missing": "",
    "bug_hangs": TOTAL_UPTO.replace("    return s\n", "    while n > 5:\n        n = n\n    return s\n"),
}


@pytest.fixture(scope="module")
def validator(sandbox):
    from spade_llm.validation import Validator

    return Validator(sandbox, Limits(), 2.0, max_bug_lines=3, public_tests=3)


@pytest.fixture(scope="module")
def judge(sandbox):
    return Judge(sandbox, Limits(), 2.0)


@pytest.fixture(scope="module")
def accepted(validator):
    report = run_gates(validator, bugfix_task())
    assert report.valid, report.detail
    assert report.task is not None
    return report.task


def test_a_caught_bug_is_accepted_with_what_the_solver_will_see(accepted):
    bug = accepted.meta[BUG_META]
    assert bug["maker"] == "generator" and bug["edits"] == ["off_by_one"] and bug["changed_lines"] == 1
    assert "-    for i in range(1, n + 1):" in bug["diff"] and "+    for i in range(1, n):" in bug["diff"]
    assert bug["failed_tests"] == 5  # every n >= 1; n = 0 still passes
    shown = {o["index"]: o for o in bug["shown"]}
    assert sorted(shown) == [0, 1, 2]
    assert (shown[0]["passed"], shown[0]["output"]) == (False, "3")  # total_upto(3) returned 1 + 2
    assert shown[1]["passed"] is True  # total_upto(0) == 0 either way


@pytest.mark.parametrize("reason", sorted(TRAPS))
def test_each_trap_is_rejected_for_its_own_reason(validator, reason):
    report = run_gates(validator, bugfix_task(buggy_code=TRAPS[reason]))
    assert (report.valid, report.reason) == (False, reason), report.detail


def test_a_bug_no_shown_test_catches_is_not_shown(validator):
    # wrong only from n = 5 on: the three shown tests (3, 0, 1) pass
    hidden_only = TOTAL_UPTO.replace("    return s\n", "    return s if n < 5 else s - 1\n")
    report = run_gates(validator, bugfix_task(buggy_code=hidden_only))
    assert report.reason == "bug_not_shown", report.detail


def test_verify_rejects_the_trap_set_and_the_second_copy_of_a_bug(tmp_path: Path, capsys):
    from spade_llm.cli.app import main

    rows = [bugfix_task(task_id=f"trap-{reason}", buggy_code=code).dump() for reason, code in TRAPS.items()]
    rows += [bugfix_task(task_id="first").dump(), bugfix_task(task_id="again").dump()]
    path = tmp_path / "traps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    main(["verify", str(path), "--sandbox", run_backend()])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    verdicts = {row["task_id"]: row["reason"] for row in out}
    assert verdicts == {**{f"trap-{reason}": reason for reason in TRAPS}, "first": None, "again": "duplicate"}


def test_the_changed_lines_and_the_secret_are_counted_on_the_program_not_its_layout():
    relaid = bugfix_task(
        buggy_code="def total_upto(n):\n\n    s = 0  # start\n    for i in range(1, n):\n        s += i\n    return s"
    )
    assert changed_lines(relaid) == 1
    assert secret_lines(relaid) == ["for i in range(1, n + 1):"]


def test_the_first_prompt_shows_the_bug_and_its_symptom_and_never_the_fix(accepted):
    prompt = first_messages(Prompts(), accepted.model_copy(update={"symptom": "it misses the last number"}), 3)
    text = prompt[-1].content
    assert text.startswith("Fix the bug")
    assert TOTAL_UPTO_BUG.strip() in text and "A user reports: it misses the last number" in text
    assert "total_upto(3,) -> 6: FAILS, it returned 3" in text and "total_upto(0,) -> 0: passes" in text
    assert all(secret not in text for secret in secret_lines(accepted))
    assert "(10,)" not in text and "55" not in text  # a hidden test's input and answer


def test_a_fix_is_judged_on_every_test_and_the_bug_handed_back_scores_nothing(accepted, judge):
    assert KIND.check_answer(judge, accepted, TOTAL_UPTO, None).all_passed
    relaid = "def total_upto(n):\n    s = 0\n    for i in range(1, n):   # my fix\n        s += i\n\n    return s\n"
    for unchanged in (TOTAL_UPTO_BUG, relaid):
        result = KIND.check_answer(judge, accepted, unchanged, None)
        assert (result.tests_passed, result.load_error) == (0, UNCHANGED)  # n = 0 would pass: it gets nothing
    half = TOTAL_UPTO.replace("s += i", "s += i if i < 6 else 0")
    result = KIND.check_answer(judge, accepted, half, None)
    assert 0 < (result.tests_passed or 0) < len(accepted.tests)


def test_a_proposal_on_a_base_keeps_the_base_whatever_the_answer_says(accepted):
    item = {"buggy_code": TOTAL_UPTO_BUG, "reference_code": "def total_upto(n):\n    return 0\n", "tests": []}
    task = parse_task(item, task_id="t", epoch=2, target=0.4, kind="bugfix", base=accepted)
    assert (task.reference_code, task.tests, task.description) == (
        accepted.reference_code,
        accepted.tests,
        accepted.description,
    )
    assert task.buggy_code == TOTAL_UPTO_BUG and task.meta["base_task"] == accepted.task_id
    whole = {**item, "reference_code": TOTAL_UPTO, "description": "d", "entry_point": "total_upto"}
    other = parse_task(whole, task_id="u", epoch=2, target=0.4, kind="induction")
    assert other.buggy_code is None  # another kind's answer cannot carry a bug


def _fixer_request(task, answers: list[str], seed: int) -> LLMRequest:
    messages = first_messages(Prompts(), task, 3)
    for answer in answers:
        messages += [Message(role="assistant", content=answer), Message(role="user", content="Your fix did not work.")]
    return LLMRequest(messages=messages, role="solver", seed=seed, metadata={"epoch": 0})


def test_the_fake_fixer_fixes_an_easy_bug_more_often_when_strong_and_never_sees_the_reference(validator):
    from spade_llm.fake import bank

    variant = bank.find_variant("lists/sum_multiples")
    built = bank.build_task(variant, __import__("random").Random(3), 0.3)
    bug = PYTHON.bugs(built.reference_code, 1, 1, key="x", min_edits=1)[0]
    task = bugfix_task(
        description=built.description,
        entry_point=built.entry_point,
        reference_code=built.reference_code,
        buggy_code=bug.source,
    )
    fixed = {}
    for profile in ("strong-solver", "weak-solver"):
        model = FakeLLM(profile)
        answers = [__import__("asyncio").run(model.complete(_fixer_request(task, [], seed))).text for seed in range(40)]
        fixed[profile] = sum(built.reference_code.strip() in a for a in answers)
    assert fixed["strong-solver"] >= 30 and fixed["weak-solver"] <= 20 and fixed["strong-solver"] > fixed["weak-solver"]


def test_subtler_and_more_edits_make_a_harder_bug():
    assert bug_difficulty(0.3, ["constant_return"]) < bug_difficulty(0.3, ["off_by_one"])
    assert bug_difficulty(0.3, ["off_by_one"]) < bug_difficulty(0.3, ["off_by_one", "inverted_boundary"])
    assert bug_difficulty(0.3, ["wrong_variable"] * 3) > bug_difficulty(0.3, ["wrong_variable"])


def test_a_generators_answer_cannot_claim_its_bug_was_made_procedurally(validator):
    claimed = {BUG_META: {"maker": "procedural", "edits": ["inverted_boundary"]}}
    report = run_gates(validator, bugfix_task(meta=claimed, source="generated"))
    assert report.task is not None
    assert report.task.meta[BUG_META]["maker"] == "generator"
    assert report.task.meta[BUG_META]["edits"] == ["off_by_one"]  # read from the diff, not from the claim


FIRST_NEGATIVE = '''def first_negative(xs):
    """The index of the first negative item; if there is none, return -1."""
    for i, x in enumerate(xs):
        if x < 0:
            return i
    return -1
'''


def test_a_value_the_spec_states_is_no_give_away_but_a_comment_the_bug_adds_is(validator):
    task = bugfix_task(
        task_id="neg",
        description="Return the index of the first negative item of xs, or -1. Example: first_negative([1, -2]) == 1.",
        entry_point="first_negative",
        reference_code=FIRST_NEGATIVE,
        tests=[TestCase(input=repr((xs,))) for xs in ([1, -2], [], [3, 4], [-1], [5, 0, -7], [2], [0, 0])],
        buggy_code=FIRST_NEGATIVE.replace("    return -1\n", "    return 0\n"),
    )
    report = run_gates(validator, task)
    assert report.valid, report.detail
    said = task.model_copy(update={"buggy_code": (task.buggy_code or "").replace("return 0", "return 0  # not -1")})
    assert run_gates(validator, said).reason == "bug_gives_away"


def test_a_symptom_is_one_short_line(validator):
    assert run_gates(validator, bugfix_task(symptom="it is wrong\nin the loop")).reason == "bug_invalid"
    assert run_gates(validator, bugfix_task(symptom="x" * 400)).reason == "bug_invalid"
    assert run_gates(validator, bugfix_task(symptom="it comes up short for every n above zero")).valid


def test_renaming_every_variable_makes_no_new_bug():
    def rename(code: str) -> str:
        return code.replace("s ", "acc ").replace("return s", "return acc").replace(" i ", " k ").replace("= i", "= k")

    renamed = {"reference_code": rename(TOTAL_UPTO), "buggy_code": rename(TOTAL_UPTO_BUG)}
    assert "acc += k" in renamed["buggy_code"] and "return acc" in renamed["buggy_code"]
    first, again = bugfix_task(), bugfix_task(**renamed)
    assert KIND.duplicate_key is not None
    assert KIND.duplicate_key(first) == KIND.duplicate_key(again)
    other = bugfix_task(buggy_code=TOTAL_UPTO.replace("s += i", "s += n"))  # another variable read: another bug
    assert KIND.duplicate_key(other) != KIND.duplicate_key(first)


def test_the_buggy_runs_stderr_is_clipped_as_feedback_is(validator):
    from spade_llm.solver import FEEDBACK_STDERR_CHARS

    noisy = TOTAL_UPTO_BUG.replace(
        "    return s\n", "    import sys; print('x' * 30000, file=sys.stderr)\n    return s\n"
    )
    report = run_gates(validator, bugfix_task(buggy_code=noisy))
    assert report.valid and report.task is not None, report.detail
    assert len(report.task.meta[BUG_META]["stderr"]) <= FEEDBACK_STDERR_CHARS + 3
    assert len(first_messages(Prompts(), report.task, 3)[-1].content) < 6000


def test_the_tool_prompt_asks_for_the_corrected_function():
    text = Prompts().render("solver/tools.j2", kind="bugfix", public=3)
    assert "the full source of the corrected function" in text


def test_a_grammar_constrained_answer_must_write_the_buggy_code():
    from spade_llm.generator import ProposalContext, _schema

    ctx = ProposalContext(0, 0, 2, 0.5, None, [], [], 1, kind="bugfix")
    item = _schema(ctx)["schema"]["properties"]["tasks"]["items"]
    assert "buggy_code" in item["required"] and "reference_code" in item["required"]
    on_base = _schema(ProposalContext(0, 0, 2, 0.5, None, [], [], 1, kind="bugfix", base=bugfix_task()))
    assert on_base["schema"]["properties"]["tasks"]["items"]["required"] == ["buggy_code"]


def test_the_bug_rewritten_to_do_the_same_scores_nothing_and_a_partial_fix_keeps_its_credit(accepted, judge):
    from spade_llm.kinds.bugfix import BEHAVES_AS_BUG

    padded = (
        TOTAL_UPTO_BUG.replace("    s = 0\n", '    """Sum it up."""\n    total = 0\n    pass\n')
        .replace("s += i", "total += i")
        .replace("return s", "return total")
    )
    result = KIND.check_answer(judge, accepted, padded, None)
    assert (result.tests_passed, result.load_error) == (0, BEHAVES_AS_BUG)
    half = TOTAL_UPTO.replace("s += i", "s += i if i < 6 else 0")  # right up to n = 5: some tests fixed
    partial = KIND.check_answer(judge, accepted, half, None)
    assert partial.load_error is None and 0 < (partial.tests_passed or 0) < len(accepted.tests)


def test_a_run_rejects_the_trap_set_each_for_its_reason(tmp_path: Path):
    """The same traps proposed by a generator in a run: each rejected for its reason, the second copy of a
    bug as a duplicate, the good bug accepted and solved."""
    from spade_llm.config import load_config
    from spade_llm.fake.scripted import FunctionLLM
    from spade_llm.session import Session
    from spade_llm.store import RunDir

    traps = {k: v for k, v in TRAPS.items() if k != "bug_hangs"}  # a hang costs the whole test budget
    proposed = [bugfix_task().dump(), bugfix_task().dump()] + [bugfix_task(buggy_code=c).dump() for c in traps.values()]
    answer = json.dumps({"tasks": [{k: v for k, v in t.items() if k not in ("task_id", "kind")} for t in proposed]})
    n = len(proposed)
    overrides = {
        "controller": {"epochs": 1, "tasks_per_epoch": n, "proposals_per_request": n, "concurrency": 2},
        "curriculum": {"kinds": ["bugfix"]},
        "solver": {"samples_per_task": 1},
        "sandbox": {"backend": run_backend()},
    }
    with Session(load_config(None, overrides), solver_model=FunctionLLM(lambda r: f"```python\n{TOTAL_UPTO}```")) as s:
        s.gen_llm = FunctionLLM(lambda r: answer)
        s.run(RunDir.create(tmp_path / "run"), log=lambda _line: None)
    rejected = [json.loads(line) for line in (tmp_path / "run" / "rejected.jsonl").read_text().splitlines()]
    assert sorted(r["reason"] for r in rejected) == sorted(["duplicate", *traps])
    tasks = (tmp_path / "run" / "tasks.jsonl").read_text().splitlines()
    runs = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    assert len(tasks) == 1 and [t["final_status"] for t in runs] == ["passed"]
