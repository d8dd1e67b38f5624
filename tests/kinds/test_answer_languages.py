"""Answer languages for whole-program tasks (issue 40): the ``curriculum.languages`` mix, each episode's
language by its key, the prompts that name it, the reading of its fenced block, and judging in it. The C++
programs here are benign (a sum); they run in the test-wide sandbox fixture, compiled by g++."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.checking import CodeChecker
from spade_llm.config import SandboxConfig, load_config
from spade_llm.errors import UserError
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.judge import Judge, final_status
from spade_llm.kinds import get_kind
from spade_llm.kinds.base import fenced_answer
from spade_llm.kinds.mix import episode_language
from spade_llm.languages import TOOLCHAINS
from spade_llm.llm.base import LLMRequest
from spade_llm.solver import LLMSolver, first_messages
from spade_llm.templates import Prompts
from spade_llm.types import ExecutionResult, Task, TestCase

PROGRAM = get_kind("program")
SUM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
SUM_CPP = (
    '#include <cstdio>\nint main() { int n; long long s = 0, x; scanf("%d", &n);\n'
    '  for (int i = 0; i < n; i++) { scanf("%lld", &x); s += x; }\n  printf("%lld\\n", s); }\n'
)
CASES = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n"), ("4\n10 20 30 40\n", "100\n")]
PYTHON_LINE = "Write a complete Python program that reads its input from standard input"
needs_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (the cpp toolchain)")


def sum_task(task_id: str = "p1") -> Task:
    return Task(
        task_id=task_id, kind="program", description="Read n, then n integers on one line; print their sum.",
        entry_point="", reference_code=SUM, tests=[TestCase(input=i, expected=o) for i, o in CASES], time_limit_s=2.0,
    )  # fmt: skip


# -- the config ----------------------------------------------------------------------------------------


def test_the_default_mix_is_python_alone_and_both_forms_load() -> None:
    assert load_config(None, {}).curriculum.languages == ["python"]
    assert load_config(None, {"curriculum": {"languages": {"cpp": 1, "python": 3}}}).curriculum.languages == {
        "cpp": 1.0,
        "python": 3.0,
    }
    assert load_config(None, {"curriculum": {"languages": ["cpp", "java"]}}).curriculum.languages == ["cpp", "java"]


@pytest.mark.parametrize(
    ("languages", "says"),
    [
        (["cobol"], "unknown answer language 'cobol'; known: python, cpp, java, nodejs, go, rust"),
        ({"python": 1, "c#": 2}, "unknown answer language 'c#'"),
        ([], "languages must name at least one answer language"),
        ({"cpp": -1, "python": 1}, "language 'cpp': weight must be a finite number >= 0"),
        ({"cpp": 0, "python": 0}, "the language mix needs at least one language with a positive weight"),
        ({"cpp": float("inf")}, "weight must be a finite number >= 0"),
    ],
)
def test_a_bad_mix_is_one_error_naming_what_is_wrong(languages: Any, says: str) -> None:
    with pytest.raises(UserError, match="curriculum") as caught:
        load_config(None, {"curriculum": {"languages": languages}})
    assert says in str(caught.value)


def test_the_cli_flag_sets_the_mix_and_refuses_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    from spade_llm.cli.flags import build_parser

    args = build_parser().parse_args(["run", "--languages", "cpp,python"])
    assert args.languages == ["cpp", "python"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--languages", "cpp,basic"])
    assert "answer languages are python, cpp, java, nodejs, go, rust, got 'cpp,basic'" in capsys.readouterr().err


# -- each episode's language ---------------------------------------------------------------------------


def _languages(mix: Any, tasks: int, samples: int, seed: int = 0, epoch: int = 0) -> dict[tuple[str, int], str]:
    return {
        (f"t{t}", s): episode_language(mix, seed=seed, epoch=epoch, task_id=f"t{t}", sample_index=s, samples=samples)
        for t in range(tasks)
        for s in range(samples)
    }


@settings(max_examples=30, deadline=None)
@given(order=st.randoms(use_true_random=False), samples=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_an_episodes_language_is_its_keys_whatever_the_order_episodes_ask(
    order: random.Random, samples: int, seed: int
) -> None:
    mix = {"cpp": 1.0, "python": 2.0, "go": 0.5}
    want = _languages(mix, 8, samples, seed)
    keys = list(want)
    order.shuffle(keys)  # completion order: any; and the mix written in another order
    shuffled = dict(sorted(mix.items(), key=lambda _: order.random()))
    for task_id, sample in keys:
        got = episode_language(shuffled, seed=seed, epoch=0, task_id=task_id, sample_index=sample, samples=samples)
        assert got == want[task_id, sample]


@settings(max_examples=40, deadline=None)
@given(
    weights=st.lists(st.integers(0, 5), min_size=2, max_size=4).filter(any),
    samples=st.integers(1, 9),
    seed=st.integers(0, 10**6),
)
def test_a_tasks_samples_share_the_languages_by_their_weights(weights: list[int], samples: int, seed: int) -> None:
    names = ["python", "cpp", "java", "rust"][: len(weights)]
    mix = dict(zip(names, weights, strict=True))
    total = sum(weights)
    for t in range(5):
        got = Counter(_languages(mix, 1, samples, seed, epoch=t).values())
        for name, weight in mix.items():
            share = samples * weight / total
            assert share - 1 < got[name] < share + 1, (mix, samples, got)  # floor or ceil of its share


def test_one_sample_a_task_draws_by_the_weights_over_tasks() -> None:
    got = Counter(_languages({"cpp": 1, "python": 3}, 2000, 1).values())
    assert 400 < got["cpp"] < 600 and got["python"] == 2000 - got["cpp"]
    assert set(_languages(["cpp"], 20, 3).values()) == {"cpp"}
    assert set(_languages({"cpp": 0, "python": 1}, 20, 3).values()) == {"python"}


def test_samples_past_the_configured_count_start_another_block() -> None:
    mix = {"cpp": 1, "python": 1}
    for t in range(20):
        block = [episode_language(mix, seed=3, epoch=1, task_id=f"t{t}", sample_index=i, samples=2) for i in (2, 3)]
        assert sorted(block) == ["cpp", "python"]


# -- prompts -------------------------------------------------------------------------------------------


def test_the_program_prompts_name_the_language_and_ask_for_its_fence() -> None:
    task = sum_task()
    system, user = first_messages(Prompts(), task, 1, "cpp")
    assert "Write a complete C++17 program that reads its input from standard input" in user.content
    assert "```cpp code block" in user.content and "```python" not in user.content
    assert "expert C++17 programmer" in system.content and "```cpp code block" in system.content
    system, user = first_messages(Prompts(), task, 1)  # Python: the very words as before
    assert PYTHON_LINE + " and prints the answer to standard output." in user.content
    assert "Reply with the complete program in a ```python code block." in user.content
    assert system.content.startswith("You are an expert Python programmer. Write correct, efficient code")
    for name, toolchain in TOOLCHAINS.items():
        text = first_messages(Prompts(), task, 1, name)[1].content
        assert f"Write a complete {toolchain.shown_name} program that reads" in text
        assert f"```{toolchain.fence_tags[0]} code block" in text


def test_a_function_kind_takes_no_other_language() -> None:
    induction = Task(task_id="f", description="d", entry_point="f", reference_code="def f(x):\n    return x\n",
                     tests=[TestCase(input="(1,)", expected=1)])  # fmt: skip
    with pytest.raises(UserError, match="a induction task's answer is python, not cpp"):
        first_messages(Prompts(), induction, 1, "cpp")
    with pytest.raises(UserError, match="unknown answer language 'fortran'"):
        PROGRAM.answer_language("fortran")


async def test_a_repair_prompt_asks_again_in_the_language_and_shows_the_compile_error() -> None:
    task = sum_task()
    compile_error = "main.cpp:2:5: error: expected ';' before 'printf'\n"
    failed = ExecutionResult(status="error", stderr=compile_error, tests_passed=0, tests_total=1, load_error="x")
    solver = LLMSolver(FunctionLLM(lambda r: ""), Prompts(), None, seed=0, max_turns=2, public_tests=1,  # type: ignore[arg-type]
                       temperature=0.0, max_tokens=10)  # fmt: skip
    from spade_llm.types import Attempt

    text = solver.repair_message(task, Attempt(turn=1, code="int main(", result=failed, language="cpp"), failed).content
    assert "main.cpp:2:5: error: expected ';'" in text and "corrected program in a ```cpp code block" in text
    empty = solver.repair_message(task, Attempt(turn=1, code="", result=failed, language="cpp"), failed).content
    assert "No code found: put the complete program in a ```cpp code block." in empty


# -- reading the answer --------------------------------------------------------------------------------


def test_the_answer_is_the_last_block_fenced_for_the_language() -> None:
    reply = f"Here:\n```python\n{SUM}```\nand in C++:\n```c++\n{SUM_CPP}```\nthanks"
    assert PROGRAM.read_answer(reply, "cpp") == SUM_CPP
    assert PROGRAM.read_answer(reply) == SUM  # Python's reading, as before
    assert PROGRAM.read_strict(reply, "cpp") == SUM_CPP and PROGRAM.read_strict(reply) == SUM
    only_python = f"```python\n{SUM}```"
    assert PROGRAM.read_strict(only_python, "cpp") == ""  # a reward pays the asked-for format only
    assert PROGRAM.read_answer(only_python, "cpp") == SUM  # the loop is lenient: g++ then says what is wrong
    assert PROGRAM.read_answer("no code at all", "cpp") == ""
    assert PROGRAM.read_tool_argument(SUM_CPP, "cpp") == SUM_CPP  # a tool's argument is the code itself
    assert fenced_answer(reply) == (SUM_CPP, "cpp") and fenced_answer(reply, "python") == (SUM, "python")
    assert fenced_answer("no block") is None and fenced_answer("```text\nhi\n```") is None


# -- judging -------------------------------------------------------------------------------------------


@needs_gpp
async def test_an_episode_in_each_language_is_asked_read_judged_and_recorded_in_it(sandbox: Any) -> None:
    asked: list[str] = []

    def answer(request: LLMRequest) -> str:
        prompt = request.messages[1].content
        asked.append(prompt)
        return f"```cpp\n{SUM_CPP}```" if "C++17" in prompt else f"```python\n{SUM}```"

    judged: list[str] = []
    checker = CodeChecker(sandbox, SandboxConfig(backend="subprocess", timeout_s=10, test_timeout_s=2), concurrency=1)

    async def judge(task: Task, code: str, tests: Any, /, *, language: str = "python") -> ExecutionResult:
        judged.append(language)
        return await checker.check_answer(task, code, tests, language=language)

    solver = LLMSolver(
        FunctionLLM(answer), Prompts(), judge, seed=5, max_turns=2, public_tests=1, temperature=0.0, max_tokens=200,
        languages={"cpp": 1, "python": 1}, samples_per_task=2,
    )  # fmt: skip
    episodes = [await solver.solve(sum_task(), epoch=0, sample_index=i) for i in range(2)]
    assert sorted(t.language for t in episodes) == ["cpp", "python"]  # two samples, one of each
    for trajectory in episodes:
        assert trajectory.final_status == "passed", trajectory.attempts[-1].result.stderr
        assert {a.language for a in trajectory.attempts} == {trajectory.language}
    cpp = next(t for t in episodes if t.language == "cpp")
    assert cpp.attempts[0].code == SUM_CPP and set(judged) == {"cpp", "python"}
    # a function kind is Python whatever the mix
    assert solver.language_of(sum_task().model_copy(update={"kind": "induction"}), 0, 0) == "python"


@needs_gpp
def test_check_answer_judges_in_the_language_and_a_compile_error_fails_naming_its_line(sandbox: Any) -> None:
    judge = Judge(sandbox, SandboxConfig(backend="subprocess", timeout_s=10).limits(), 2.0)
    task = sum_task()
    assert final_status(PROGRAM.check_answer(judge, task, SUM_CPP, None, language="cpp")) == "passed"
    broken = PROGRAM.check_answer(judge, task, SUM_CPP.replace("s += x;", "s += x"), None, language="cpp")
    assert final_status(broken) != "passed" and "main.cpp:3" in broken.stderr
    assert final_status(PROGRAM.check_answer(judge, task, SUM, None, language="cpp")) != "passed"  # Python as C++
    with pytest.raises(UserError, match="answer is python, not cpp"):
        get_kind("induction").check_answer(judge, task, SUM, None, language="cpp")


def test_a_record_written_before_languages_reads_as_python() -> None:
    from spade_llm.types import Trajectory

    old = {"trajectory_id": "t-0-x", "task_id": "t", "epoch": 0, "messages": [], "final_status": "failed",
           "reward": 0.0, "attempts": [{"turn": 1, "code": "", "result": {"status": "error"}}]}  # fmt: skip
    read = Trajectory.model_validate(old)
    assert read.language == "python" and read.attempts[0].language == "python"
    assert '"language":"python"' in read.model_dump_json()  # written back with it, always
