"""The fake's programs in other languages (``fake/polyglot.py``) do what each is written to do, compiled and
run natively by each toolchain's own commands (they are our own trusted programs, so outside the sandbox),
and the fake model answers a prompt in another language with them."""

from __future__ import annotations

import asyncio
import difflib
import functools
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import languages_available
import pytest
from languages_available import require

from spade_llm.fake import contests, polyglot
from spade_llm.fake.model import FakeLLM, infer_role
from spade_llm.languages import TOOLCHAINS, Toolchain
from spade_llm.llm.base import LLMRequest
from spade_llm.types import Message

OTHERS = tuple(name for name in TOOLCHAINS if name != "python")
PROBLEMS = {p.key: p for p in contests.PROBLEMS}
SMALL = 100
"""The slow programs run on inputs up to this many numbers only: their timing is the sandbox's to judge."""
GENERATED = ((1, 11), (2, 12), (3, 13), (8, 14), (30, 15), (100, 16), (1000, 17))
"""(size, seed) of the inputs drawn from each problem's generator, beside its own tests."""


def _python(code: str, stdin: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@functools.cache
def _cases(key: str) -> tuple[tuple[str, str], ...]:
    """Each input (the problem's tests first: they hold the edge cases) with what the Python reference prints."""
    problem = PROBLEMS[key]
    inputs = [*problem.tests, *(_python(problem.generator, f"{size} {seed}\n") for size, seed in GENERATED)]
    return tuple((stdin, _python(problem.reference, stdin)) for stdin in inputs)


def _size(stdin: str) -> int:
    return int(stdin.split()[0])


class Built:
    """One program compiled by its toolchain's compile command in a directory of its own."""

    def __init__(self, toolchain: Toolchain, code: str, where: Path, env: dict[str, str]) -> None:
        where.mkdir()
        (where / toolchain.source_for(code)).write_text(code, encoding="utf-8")
        assert toolchain.compile is not None
        command = toolchain.argv(toolchain.compile, code)
        self.compiled = subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=300)
        self.toolchain, self.code, self.where, self.env = toolchain, code, where, env

    def run(self, stdin: str) -> str:
        command = self.toolchain.argv(self.toolchain.run, self.code)
        done = subprocess.run(command, cwd=self.where, env=self.env, input=stdin, capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        return done.stdout if done.returncode == 0 else f"exit {done.returncode}: {done.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(polyglot.PROGRAMS))
@pytest.mark.parametrize("language", OTHERS)
def test_each_program_does_what_it_is_written_to(language: str, key: str, tmp_path: Path) -> None:
    require(language)
    toolchain, written, cases = TOOLCHAINS[language], polyglot.PROGRAMS[key][language], _cases(key)
    # a HOME and a Go build cache of the test's own: the compilers write there
    env = {**os.environ, **toolchain.env, "HOME": str(tmp_path), "GOCACHE": str(tmp_path / "gocache")}

    def build(version: str) -> Built:
        return Built(toolchain, getattr(written, version), tmp_path / version, env)

    correct = build("correct")
    assert correct.compiled.returncode == 0, correct.compiled.stderr
    for stdin, expected in cases:
        assert correct.run(stdin) == expected, stdin[:200]

    wrong = build("wrong")
    assert wrong.compiled.returncode == 0, wrong.compiled.stderr
    assert any(wrong.run(stdin) != expected for stdin, expected in cases), "the wrong program is never wrong"

    slow = build("slow")
    assert slow.compiled.returncode == 0, slow.compiled.stderr
    for stdin, expected in cases:
        if _size(stdin) <= SMALL:
            assert slow.run(stdin) == expected, stdin[:200]

    broken = build("compile_error")
    said = broken.compiled.stdout + broken.compiled.stderr
    assert broken.compiled.returncode != 0, "the compile error compiles"
    lines = [int(n) for n in re.findall(rf"{re.escape(toolchain.source_for(written.compile_error))}:(\d+)", said)]
    assert lines and all(1 <= n <= written.compile_error.count("\n") for n in lines), said


# -- without a toolchain --------------------------------------------------------------------------------------


def test_three_problems_have_every_language_and_each_compile_error_is_one_slip() -> None:
    assert len(polyglot.PROGRAMS) >= 3
    for key, by_language in polyglot.PROGRAMS.items():
        assert key in PROBLEMS and sorted(by_language) == sorted(OTHERS)
        for written in by_language.values():
            assert len(set(written.mistakes) | {written.correct}) == 4
            # a compile error is the right program with one slip: why a repair that fixes it is right
            lines = difflib.ndiff(written.correct.splitlines(), written.compile_error.splitlines())
            changed = [d for d in lines if d[0] in "+-"]
            assert len(changed) <= 3, changed


def test_the_program_line_names_the_language_by_its_label() -> None:
    for toolchain in TOOLCHAINS.values():
        line = f"Write a complete {toolchain.label} program that reads its input from standard input and prints"
        assert polyglot.asked_language("Statement.\n\n" + line) == toolchain.name
    assert polyglot.asked_language("Write a complete Python program that reads its input from standard input") == (
        "python"
    )  # today's line
    assert polyglot.asked_language("Write a function `f(x)` that returns x.") is None


def _first(problem: contests.Problem, toolchain: Toolchain) -> str:
    return (
        f"{problem.statement}\n\nWrite a complete {toolchain.label} program that reads its input from standard input "
        f"and prints the answer to standard output.\n\n"
        f"Reply with the complete program in a ```{toolchain.fence_tags[0]} code block."
    )


def _ask(messages: list[Message], seed: int) -> str:
    request = LLMRequest(messages=messages, role="solver", seed=seed, metadata={"epoch": 0})
    return asyncio.run(FakeLLM("default").complete(request)).text


@pytest.mark.parametrize("language", OTHERS)
def test_the_fake_answers_in_the_language_asked_and_repairs_a_compile_error(language: str) -> None:
    toolchain, problem = TOOLCHAINS[language], contests.MAX_SUBARRAY
    written = polyglot.PROGRAMS[problem.key][language]
    first = [Message(role="user", content=_first(problem, toolchain))]
    answers = [_ask(first, seed) for seed in range(60)]
    tag = toolchain.fence_tags[0]
    codes = [polyglot.extract(a, language) for a in answers]
    assert all(f"```{tag}\n" in a for a in answers)
    assert {written.correct, *written.mistakes} == set(codes)  # each of the four, over 60 episodes

    fix = "Compilation failed:\nmain:9: error: expected ';'\nFix it."
    slip = f"Here it is.\n\n```{tag}\n{written.compile_error}```"
    repair = [*first, Message(role="assistant", content=slip), Message(role="user", content=fix)]
    assert infer_role(repair) == "solver"  # over HTTP too: the other language's fence reads as code
    assert polyglot.extract(_ask(repair, 1), language) == written.correct


def test_a_repair_after_a_timeout_fixes_the_slowness_more_surely() -> None:
    written = polyglot.PROGRAMS[contests.INVERSIONS.key]["go"]

    def fixes(feedback: str) -> float:
        runs = [
            polyglot.solve(written, random.Random(i), 0.5, lambda p, clarity: clarity / 2, written.slow, feedback)
            for i in range(400)
        ]
        return sum(r == written.correct for r in runs) / len(runs)

    assert fixes("test 9: timeout (time limit 1 s)") > fixes("test 9: expected 3, printed 4") + 0.1


def test_a_problem_without_programs_is_answered_in_python() -> None:
    cpp = TOOLCHAINS["cpp"]
    answers = [_ask([Message(role="user", content=_first(contests.ZERO_PAIRS, cpp))], seed) for seed in range(10)]
    assert all("```python\n" in a and "```cpp" not in a for a in answers)


def test_a_missing_toolchain_skips_unless_the_environment_requires_its_language(monkeypatch) -> None:
    monkeypatch.setattr(Toolchain, "missing", lambda self: ["/usr/bin/g++"])
    monkeypatch.delenv(languages_available.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="install g\\+\\+"):
        require("cpp")
    monkeypatch.setenv(languages_available.REQUIRE_ENV, "cpp,rust")
    with pytest.raises(pytest.fail.Exception, match="SPADE_TEST_REQUIRE_LANGUAGES names 'cpp'"):
        require("cpp")
    monkeypatch.setenv(languages_available.REQUIRE_ENV, "c++")
    with pytest.raises(RuntimeError, match="unknown languages"):
        languages_available.required()
