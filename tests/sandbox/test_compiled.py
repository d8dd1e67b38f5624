"""Answers in compiled languages, judged in the isolating sandboxes as the loop judges them: right ones pass,
wrong ones fail, quadratic ones time out on the large test, a compile error fails every test naming its line;
builds are kept by the answer's hash; a missing toolchain is a clear ``SandboxUnavailable``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from languages_available import require
from polyglot_programs import BROKEN, RIGHT, SLOW, WRONG, sample_tests
from sandbox_backends import unavailable

from spade_llm.errors import SandboxUnavailable
from spade_llm.languages import TOOLCHAINS
from spade_llm.sandbox import compiled
from spade_llm.sandbox.base import Limits, Sandbox
from spade_llm.sandbox.compiled import build, compile_error_line, run_built
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.runner import run_command
from spade_llm.sandbox.stdio import run_stdio_tests

COMPILED = [name for name, t in TOOLCHAINS.items() if not t.in_harness]
LIMITS = Limits(timeout_s=30.0)
CPU_S = 1.0


def _toolchain_or_skip(name: str) -> None:
    require(name)


@pytest.fixture(scope="module", params=["bwrap", "docker"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    reason = unavailable(request.param)
    if reason is not None:
        pytest.skip(f"{request.param}: {reason}")
    sandbox = get_sandbox(request.param)
    yield sandbox
    sandbox.close()


@pytest.mark.parametrize("language", COMPILED)
def test_right_wrong_slow_and_broken_answers_get_their_verdicts(box: Sandbox, language: str) -> None:
    _toolchain_or_skip(language)
    cases = sample_tests()

    right = run_stdio_tests(box, RIGHT[language], cases, LIMITS, CPU_S, language=language)
    assert [r.status for r in right.test_results or []] == ["passed"] * 3, right.stderr[-2000:]

    wrong = run_stdio_tests(box, WRONG[language], cases, LIMITS, CPU_S, language=language)
    assert [r.status for r in wrong.test_results or []] == ["failed", "failed", "failed"]

    slow = run_stdio_tests(box, SLOW[language], cases, LIMITS, CPU_S, language=language)
    assert [r.status for r in slow.test_results or []] == ["passed", "passed", "timeout"]

    code, line = BROKEN[language]
    broken = run_stdio_tests(box, code, cases, LIMITS, CPU_S, language=language)
    assert broken.status == "error" and broken.tests_passed == 0
    assert all(r.status == "error" for r in broken.test_results or [])
    source = TOOLCHAINS[language].source_for(code)
    assert broken.load_error is not None and f"{source}:{line}" in broken.load_error, broken.load_error
    assert f"{source}:{line}" in broken.stderr  # what the repair prompt shows: the compiler's own words
    assert "/tmp/" not in broken.stderr  # no scratch path: records do not change with where a run ran


def test_an_answer_compiles_once_for_every_judging(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    _toolchain_or_skip("cpp")
    compiles: list[list[str]] = []
    real = compiled.run_command

    def counting(sandbox: Sandbox, argv: list[str], *args: object, **kwargs: object) -> object:
        if kwargs.get("collect"):
            compiles.append(argv)
        return real(sandbox, argv, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compiled, "run_command", counting)
    code = RIGHT["cpp"].replace("int main()", "int main( )")  # an answer no other test compiled
    cases = sample_tests(large=10)
    for _ in range(3):
        result = run_stdio_tests(box, code, cases, LIMITS, CPU_S, language="cpp")
        assert result.tests_passed == 3
    assert len(compiles) == 1


def test_a_program_cannot_forge_records_or_keep_ignored_signals(box: Sandbox) -> None:
    """The command is exec'd with the results pipe closed and default signal dispositions: SIGPIPE ends a
    writer to a closed pipe as it would outside (Python ignores it; an ignored signal survives execve)."""
    _toolchain_or_skip("cpp")
    code = r"""#include <csignal>
#include <cstdio>
#include <unistd.h>
int main() {
    struct sigaction sa; sigaction(SIGPIPE, nullptr, &sa);
    printf("%s\n", sa.sa_handler == SIG_DFL ? "default" : "ignored");
    int open_fds = 0; for (int fd = 3; fd < 1024; fd++) if (fcntl(fd, F_GETFD) != -1) open_fds++;
    printf("%d\n", open_fds);
}
""".replace("#include <unistd.h>", "#include <unistd.h>\n#include <fcntl.h>")
    built = build(box, TOOLCHAINS["cpp"], code, LIMITS)
    assert built.ok, built.result and built.result.stderr
    run = run_built(box, built, LIMITS, cpu_s=CPU_S).result
    assert run.status == "ok" and run.stdout.split() == ["default", "0"], run


def test_collected_files_must_be_regular_files_within_the_limit(box: Sandbox) -> None:
    """A compile's output comes back only as regular files (a link to a host file is not followed), and
    not at all past the limit (the build then fails, it is not cut)."""
    sh = "/bin/sh"
    made = run_command(
        box, [sh, "-c", "ln -s /etc/passwd main; head -c 5000 /dev/zero > big.class; echo ok"], {}, LIMITS,
        collect=("main", "*.class"), collect_limit=10_000,
    )  # fmt: skip
    assert made.result.stdout == "ok\n"
    assert made.files == {"big.class": b"\0" * 5000}
    over = run_command(
        box, [sh, "-c", "head -c 20000 /dev/zero > main"], {}, LIMITS, collect=("main",), collect_limit=10_000
    )
    assert over.files == {} and over.files_error is not None and "10000" in over.files_error


def test_a_toolchain_the_sandbox_lacks_is_sandbox_unavailable_naming_the_package(box: Sandbox) -> None:
    absent = replace(TOOLCHAINS["cpp"], compile=("/usr/bin/no-such-compiler", "{source}"), packages=("g++-99",))
    with pytest.raises(SandboxUnavailable, match=r"apt-get install g\+\+-99"):
        build(box, absent, "int main() {}\n", LIMITS)


ERROR_LINES = [
    ("main.cpp: In function 'int main()':\nmain.cpp:4:3: error: expected ';'\n", "main.cpp",
     "compile error: main.cpp:4:3: error: expected ';'"),
    ("Main.java:3: error: incompatible types\n  int n = \"one\";\n1 error\n", "Main.java",
     "compile error: Main.java:3: error: incompatible types"),
    ("main.js:2\nconsole.log(n +);\n\nSyntaxError: Unexpected token ')'\n", "main.js",
     "compile error: SyntaxError: Unexpected token ')' (main.js:2)"),
    ("# command-line-arguments\n./main.go:3:5: n declared but not used\n", "main.go",
     "compile error: main.go:3:5: n declared but not used"),
    ("error[E0308]: mismatched types\n --> main.rs:2:18\n", "main.rs",
     "compile error: error[E0308]: mismatched types (main.rs:2:18)"),
    ("", "main.rs", "compile error: the compiler failed"),
]  # fmt: skip


@pytest.mark.parametrize(("stderr", "source", "line"), ERROR_LINES)
def test_a_compile_error_reads_as_one_line_naming_its_place(stderr: str, source: str, line: str) -> None:
    assert compile_error_line(stderr, source) == line
