"""spade_llm.integrations.trl's environment for TRL's ``GRPOTrainer(environment_factory=...)``, driven as TRL drives
it (duck typing, TRL not needed), plus a check against TRL itself where it is installed.

The key property: ``run_tests`` reports on the public tests alone, so nothing it returns can carry
a hidden test's input or expected value, whatever the submitted code prints or raises. The tasks
here hide distinctive strings in their hidden tests and the test looks for them everywhere.
Nothing hostile runs: the subprocess sandbox judges.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Iterator
from typing import Any, get_type_hints

import pytest

from spade_llm.errors import UserError
from spade_llm.integrations.trl import AsyncSpadeCodingEnv, SpadeCodingEnv
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.sandbox.base import Limits
from spade_llm.types import Task, TestCase

SECRET = "zq_hidden"


def make_task(kind: str, code: str, entry: str, tests: list[tuple[str, Any]], **extra: Any) -> Task:
    return Task(
        task_id=f"secret-{kind}",
        kind=kind,
        description=f"A task of kind {kind}.",
        entry_point=entry,
        reference_code=code,
        tests=[TestCase(input=i, expected=e) for i, e in tests],
        **extra,
    )


SHOUT = make_task(
    "induction",
    "def shout(s):\n    return s.upper() + '!'\n",
    "shout",
    [
        ("('abc',)", "ABC!"),
        ("('hi',)", "HI!"),
        ("('ok',)", "OK!"),
        (f"('{SECRET}_input_alpha',)", f"{SECRET.upper()}_INPUT_ALPHA!"),
        (f"('{SECRET}_input_beta',)", f"{SECRET.upper()}_INPUT_BETA!"),
    ],
)
# deduction: the hidden queries' inputs are shown (they are the question); their outputs are the secret
SEAL = make_task(
    "deduction",
    "def seal(n):\n    return 'zq' + str(n * 7) + 'hidden'\n",
    "seal",
    [("(1,)", "zq7hidden"), ("(2,)", "zq14hidden"), ("(3,)", "zq21hidden"), ("(99,)", "zq693hidden"),
     ("(1001,)", "zq7007hidden")],
)  # fmt: skip
SEAL_SECRETS = ("zq693hidden", "zq7007hidden")
# abduction: the hidden queries' outputs are shown (the question); their original inputs are the secret
SIZE = make_task(
    "abduction",
    "def size(s):\n    return len(s) * 3\n",
    "size",
    [("('a',)", 3), ("('bb',)", 6), ("('ccc',)", 9), (f"('{SECRET}_abduction_input',)", 72),
     (f"('{SECRET}_abduction_other',)", 72 - 3)],
)  # fmt: skip


def row(task: Task, public: int = 3, **columns: Any) -> dict[str, Any]:
    """A GRPO export row: the prompt messages, the ground truth and the side columns."""
    prompt = [{"role": "system", "content": "You write Python."}, {"role": "user", "content": "Solve the task."}]
    return {
        "prompt": prompt,
        "ground_truth": json.dumps(ground_truth(task, public)),
        "task_id": task.task_id,
        "kind": task.kind,
        "entry_point": task.entry_point,
        "split": "train",
        "difficulty": 0.5,
        **columns,
    }


@pytest.fixture(scope="module", autouse=True)
def rewarder() -> Iterator[Rewarder]:
    """One subprocess-sandbox rewarder, also the module default (what ``SpadeCodingEnv()`` uses)."""
    box = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, box
    yield box
    rewards._default = saved
    box.close()


def trl_tools(env: Any) -> list[str]:
    """The methods TRL exposes as tools (``GRPOTrainer._generate_and_score_completions``)."""
    return [
        name
        for name, _ in inspect.getmembers(env, predicate=inspect.ismethod)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


# -- hidden tests never leak ------------------------------------------------------------------------

LEAKY = """
import os, sys, gc
def shout(s):
    seen = [repr(a) for a in sys.argv] + [f"{k}={v}" for k, v in os.environ.items()]
    for root, _, files in os.walk('.'):
        for name in files:
            try:
                seen.append(open(os.path.join(root, name), errors='replace').read())
            except OSError:
                pass
    try:
        seen.append(open('/proc/self/cmdline', errors='replace').read())
        seen.append(sys.stdin.read())
    except Exception:
        pass
    # what the harness's frames and live containers hold that looks like one of the task's test values
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append(repr(frame.f_locals))
        frame = frame.f_back
    texts = frames + [repr(o)[:5000] for o in gc.get_objects() if isinstance(o, (tuple, list, dict))]
    hits = sorted({t[max(0, t.lower().find('zq_') - 20):][:80] for t in texts if 'zq_' in t.lower()})
    seen += [t[:200] for t in texts[:5000]]
    print(s, seen, file=sys.stderr)
    print(s, seen)
    raise ValueError(f"saw {s!r}; hits {hits}; and {len(seen)} things: {' '.join(seen)[-3000:]}")
"""


def test_run_tests_never_shows_a_hidden_test_of_any_kind() -> None:
    answers = [
        (SHOUT, [
            "```python\ndef shout(s):\n    return s.upper() + '!'\n```",
            LEAKY,
            "def shout(s):\n    return {'abc': 'ABC!', 'hi': 'HI!', 'ok': 'OK!'}[s]\n",  # the public tests, hard-coded
            "def shout(s):\n    return s\n",
            "def shout(s)\n    return s\n",
            "def shout(s):\n    while True:\n        pass\n",
            "",
        ]),
        (SEAL, [
            "seal(1) == 'zq7hidden'\nseal(2) == 'zq14hidden'\nseal(3) == 'zq21hidden'",
            "seal(1) == 'x'\nseal(2) == 'y'\nseal(3) == 'z'\nseal(99) == 'w'\nseal(1001) == 'v'",
            "I cannot tell.",
        ]),
        (SIZE, [
            "size('x') == 3\nsize('yy') == 6\nsize('zzz') == 9",
            "size('x') == 3\nsize('y') == 6",
            "size(1, 2) == 3",
        ]),
    ]  # fmt: skip
    for task, texts in answers:
        env = SpadeCodingEnv()
        secrets = SEAL_SECRETS if task is SEAL else (SECRET,)
        shown = env.reset(**{k: v for k, v in row(task).items() if k != "prompt"})  # rendered: no prompt column
        outputs = [shown or ""]
        for text in texts:
            outputs.append(env.run_tests(text))
            env.get_reward()
        assert outputs[1].startswith("3/3 public tests passed."), outputs[1]
        for out in outputs:
            assert not any(s.lower() in out.lower() for s in secrets), out
        assert env.calls == len(texts)


def test_the_leak_probe_finds_hidden_inputs_when_they_are_there(rewarder: Rewarder) -> None:
    """The control: judged on all tests (as get_reward does, never shown), the probe sees the hidden inputs."""
    result = rewarder.run(SHOUT, LEAKY)
    assert f"('{SECRET}_input_alpha',)" in str((result.test_results or [])[0].error)


def test_public_feedback_says_what_the_loops_repair_prompt_says() -> None:
    env = SpadeCodingEnv()
    env.reset(**row(SHOUT))
    out = env.run_tests("def shout(s):\n    import sys\n    print('debug', s, file=sys.stderr)\n    return s\n")
    assert out.splitlines()[:4] == [
        "0/3 public tests passed.",
        "- FAIL shout('abc'): expected 'ABC!', got 'abc'",
        "- FAIL shout('hi'): expected 'HI!', got 'hi'",
        "- FAIL shout('ok'): expected 'OK!', got 'ok'",
    ]
    assert "The end of stderr:" in out and "debug abc" in out
    out = env.run_tests(
        "```python\ndef shout(s):\n    if s == 'hi':\n        raise KeyError(s)\n    return s.upper() + '!'\n```"
    )
    assert out.splitlines()[:4] == [
        "2/3 public tests passed.",
        "- PASS shout('abc')",
        "- FAIL shout('hi'): expected 'HI!', raised KeyError: 'hi'",
        "- PASS shout('ok')",
    ]
    assert "Your answer could not be used: " in env.run_tests("def shout(s)\n    return s\n")
    assert env.run_tests("  ") == "No code given: call run_tests with your complete solution as `code`.\n".rstrip("\n")

    env.reset(**row(SEAL))  # deduction: never the right value
    out = env.run_tests("seal(1) == 'zq7hidden'\nseal(2) == 'nope'")
    assert out.splitlines() == [
        "1/3 public tests passed.",
        "- PASS seal(1)",
        "- FAIL seal(2): you predicted 'nope', which is not what it returns",
        "- FAIL seal(3): no prediction for this call",
    ]
    assert "zq14hidden" not in out

    env.reset(**row(SIZE))  # abduction: the output asked for, and what the program made of the model's input
    out = env.run_tests("size('x') == 3\nsize('yyyy') == 6\nsize('zzz') == 9")
    assert out.splitlines() == [
        "2/3 public tests passed.",
        "- PASS for output 3: size('x') returned 3",
        "- FAIL for output 6: size('yyyy') returned 12",
        "- PASS for output 9: size('zzz') returned 9",
    ]


# -- reset, get_reward, and TRL's protocol ------------------------------------------------------------


def trl_appends(prompt: list[dict[str, str]], added: str) -> list[dict[str, str]]:
    """What TRL shows the model: the row's prompt with reset's string appended to its last message."""
    return [*prompt[:-1], {**prompt[-1], "content": prompt[-1]["content"] + added}]


def test_reset_tells_the_model_to_use_its_tool_after_the_rows_prompt() -> None:
    """The row's system prompt asks for a code block, but only code given to run_tests is graded: on
    main a model that followed the prompt earned 0. reset's string (appended by TRL) says so."""
    env = SpadeCodingEnv()
    given = row(SHOUT)
    added = env.reset(**given)
    assert added.startswith("\n\nYou have a tool, `run_tests(code)`")  # a blank line after the task
    assert "the 3 public tests above" in added and "The last answer you give to `run_tests` is the one graded" in added
    assert "Solve the task." not in added  # the task is in the row's prompt already: not shown twice
    assert env.prompt == trl_appends(given["prompt"], added)
    deduction = SpadeCodingEnv()
    assert "the lines `f(args) == value`" in deduction.reset(**row(SEAL))


def test_reset_renders_the_task_when_the_row_has_no_prompt() -> None:
    env = SpadeCodingEnv()
    given = row(SHOUT)
    shown = env.reset(**{k: v for k, v in given.items() if k != "prompt"}, description="Shout the word.")
    assert shown.startswith("Shout the word.")
    assert "- shout('abc',) -> 'ABC!'\n" in shown and "- shout('ok',) -> 'OK!'\n" in shown  # solver/first.j2
    assert "\n\nYou have a tool, `run_tests(code)`" in shown
    assert SECRET not in shown.lower()
    assert env.prompt[-1] == {"role": "user", "content": shown}
    # TRL: the placeholder prompt's last message, plus the observation, is what the model sees
    trl_prompt = [{"role": "user", "content": ""}]
    assert [*trl_prompt[:-1], {**trl_prompt[-1], "content": trl_prompt[-1]["content"] + shown}] == env.prompt[-1:]


def test_get_reward_judges_the_last_tested_code_on_every_test() -> None:
    right = "def shout(s):\n    return s.upper() + '!'\n"
    hardcoded = "def shout(s):\n    return {'abc': 'ABC!', 'hi': 'HI!', 'ok': 'OK!'}[s]\n"
    env = SpadeCodingEnv()
    env.reset(**row(SHOUT))
    assert env.get_reward() == 0.0 and env.verdict is not None and env.verdict.status == "no_code"
    env.run_tests(right)
    env.run_tests(hardcoded)  # passes the public tests, fails the hidden ones: the last one counts
    assert env.get_reward() == 0.0
    assert (env.verdict.status, env.verdict.tests_passed, env.verdict.tests_total) == ("failed", 3, 5)
    env.run_tests(f"```python\n{right}```")
    assert env.get_reward() == 1.0 and env.last_code == right
    env.reset(**row(SHOUT))  # TRL reuses instances across rollouts: nothing carries over
    assert (env.last_code, env.calls, env.verdict) == (None, 0, None) and env.get_reward() == 0.0

    partial = functools.partial(SpadeCodingEnv, partial_credit=True)()  # how settings reach TRL's factory
    partial.reset(**row(SHOUT))
    partial.run_tests(hardcoded)
    assert partial.get_reward() == 0.0  # partial credit pays hidden tests only: a copy of the shown ones earns nothing


FIRST_NEG = (
    "def first_negative(xs):\n    for i, x in enumerate(xs):\n        if x < 0:\n            return i\n    return -1\n"
)
BUG = make_task(  # the bug passes 2 of the 4 hidden tests: partial credit would pay it 0.5 but for the kind's rule
    "bugfix",
    FIRST_NEG,
    "first_negative",
    [("([3, -1, 2],)", 1), ("([],)", -1), ("([0, -5],)", 1), ("([1, 2, 3],)", -1), ("([0],)", -1),
     ("([4, 0, -2, 7],)", 2), ("([-3],)", 0)],
    buggy_code=FIRST_NEG.replace("x < 0", "x <= 0"),
)  # fmt: skip


def test_a_bugfix_row_refuses_the_bug_handed_back_and_pays_the_fix() -> None:
    env = SpadeCodingEnv(partial_credit=True)
    added = env.reset(**row(BUG))
    assert "the full source of the corrected function, not the buggy one" in added  # tools.j2 knows the kind
    assert BUG.buggy_code is not None
    feedback = env.run_tests(BUG.buggy_code)
    assert feedback.startswith("0/3 public tests passed.") and "the answer is the buggy code, unchanged" in feedback
    assert env.get_reward() == 0.0 and env.verdict is not None and env.verdict.tests_passed == 0
    env.run_tests("# fixed\n" + BUG.buggy_code.replace("    ", "  "))  # the same program, re-laid: still the bug
    assert env.get_reward() == 0.0
    assert env.run_tests(f"```python\n{FIRST_NEG}```").startswith("3/3 public tests passed.")
    assert env.get_reward() == 1.0
    bare = SpadeCodingEnv()  # a row without its prompt: the task rendered from the kind's template, bug included
    shown = bare.reset(**{k: v for k, v in row(BUG).items() if k != "prompt"})
    assert BUG.buggy_code.rstrip() in shown and "Fix the bug" in shown


def test_every_kind_and_the_fallback_columns() -> None:
    env = SpadeCodingEnv()
    env.reset(**row(SEAL))
    env.run_tests("seal(1) == 'zq7hidden'\nseal(2) == 'zq14hidden'\nseal(3) == 'zq21hidden'")
    assert env.get_reward() == 0.0  # the hidden queries were not answered
    env.run_tests("\n".join(f"seal{t.input[:-2]}) == {t.expected!r}" for t in SEAL.tests))
    assert env.get_reward() == 1.0
    env.reset(**row(SIZE))
    env.run_tests(
        f"size('x') == 3\nsize('yy') == 6\nsize('zzz') == 9\nsize({'x' * 24!r}) == 72\nsize({'y' * 23!r}) == 69"
    )
    assert env.get_reward() == 1.0
    # a row without ground_truth: tests, entry point and kind columns
    columns = {"tests": json.dumps([t.dump() for t in SHOUT.tests]), "public": 3}
    env.reset(**{k: v for k, v in row(SHOUT).items() if k != "ground_truth"}, **columns)
    assert env.run_tests("def shout(s):\n    return s.upper() + '!'\n").startswith("3/3 public tests passed.")
    assert env.get_reward() == 1.0


def test_an_imported_benchmark_feeds_back_its_examples_and_never_its_asserts() -> None:
    check = f"def check(candidate):\n    assert candidate(2) == 4\n    assert candidate('{SECRET}_assert') == 9\n"
    bench = make_task("induction", "def sq(x):\n    return x * x\n", "sq", [], check_code=check)
    with_examples = bench.model_copy(update={"examples": [TestCase(input="(3,)", expected=9)]})
    env = SpadeCodingEnv()
    env.reset(**row(with_examples, public=0))
    out = env.run_tests("def sq(x):\n    return x + x\n")
    assert out.splitlines()[:2] == ["0/1 public tests passed.", "- FAIL sq(3): expected 9, got 6"]
    assert SECRET not in out and env.get_reward() == 0.0
    env.reset(**row(bench, public=0))
    out = env.run_tests("def sq(x):\n    raise ValueError(repr(x))\n")
    assert "no public tests" in out and SECRET not in out


def test_the_async_environment_answers_as_the_sync_one() -> None:
    import asyncio

    answers = ["def shout(s):\n    return s\n", "def shout(s):\n    return s.upper() + '!'\n", ""]
    sync_env, async_env = SpadeCodingEnv(), AsyncSpadeCodingEnv()
    assert trl_tools(async_env) == ["run_tests"]
    assert inspect.iscoroutinefunction(async_env.run_tests) and inspect.iscoroutinefunction(async_env.get_reward)
    assert inspect.getdoc(async_env.run_tests) == inspect.getdoc(sync_env.run_tests)

    async def episode(text: str) -> tuple[str, float]:
        async_env.reset(**row(SHOUT))
        return await async_env.run_tests(text), await async_env.get_reward()

    for text in answers:
        sync_env.reset(**row(SHOUT))
        assert asyncio.run(episode(text)) == (sync_env.run_tests(text), sync_env.get_reward())


def test_misuse_is_a_user_error() -> None:
    env = SpadeCodingEnv()
    with pytest.raises(UserError, match="call reset"):
        env.run_tests("def f(): pass")
    with pytest.raises(UserError, match="needs the row's `ground_truth`"):
        env.reset(prompt=[{"role": "user", "content": "hi"}], task_id="t")
    with pytest.raises(UserError, match="not JSON"):
        env.reset(ground_truth="{oops")


def test_trl_sees_one_tool_with_a_schema_it_can_read() -> None:
    env = SpadeCodingEnv()
    assert trl_tools(env) == ["run_tests"]
    hints = get_type_hints(env.run_tests)
    assert hints == {"code": str, "return": str}
    doc = inspect.getdoc(env.run_tests) or ""
    assert "Args:\n    code: " in doc and "\nReturns:\n" in doc
    assert not inspect.iscoroutinefunction(env.get_reward) and get_type_hints(env.get_reward) == {"return": float}


@pytest.mark.trl
def test_the_tool_schema_transformers_builds() -> None:
    utils = pytest.importorskip("transformers.utils")  # TRL turns tools into schemas with it
    schema = utils.get_json_schema(SpadeCodingEnv().run_tests)
    assert schema["function"]["name"] == "run_tests"
    assert schema["function"]["description"].startswith("Run your solution on the task's public tests")
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert schema["function"]["parameters"]["properties"]["code"]["type"] == "string"


@pytest.mark.trl
def test_against_trl_itself() -> None:
    pytest.importorskip("trl")
    from trl.trainer import grpo_trainer

    # the protocol this module follows: reset(**row), its string appended to the prompt, get_reward()
    source = inspect.getsource(grpo_trainer)
    assert "environment.reset(**reset_kwargs)" in source and 'member_name == "get_reward"' in source
    env = SpadeCodingEnv()
    assert trl_tools(env) == ["run_tests"]
    assert env.reset(**row(SHOUT)).strip().startswith("You have a tool")
