"""Answers in compiled languages, judged in the isolating sandboxes as the loop judges them: right ones pass,
wrong ones fail, quadratic ones time out on the large test, a compile error fails every test naming its line;
builds are kept by the answer's hash; a missing toolchain is a clear ``SandboxUnavailable``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from languages_available import require
from polyglot_programs import BROKEN, RIGHT, sample_tests
from sandbox_backends import started

from spade_llm.errors import SandboxUnavailable
from spade_llm.languages import TOOLCHAINS
from spade_llm.sandbox import compiled
from spade_llm.sandbox.base import Limits, Sandbox
from spade_llm.sandbox.compiled import Build, build, compile_error_line, run_built
from spade_llm.sandbox.runner import run_command
from spade_llm.sandbox.stdio import run_stdio_tests

COMPILED = [name for name, t in TOOLCHAINS.items() if not t.in_harness]
LIMITS = Limits(timeout_s=30.0)
CPU_S = 1.0


@pytest.fixture(scope="module", params=["bwrap", "docker"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    yield from started(request.param)


@pytest.mark.parametrize("language", COMPILED)
def test_an_answer_that_does_not_compile_fails_every_test_naming_its_line(box: Sandbox, language: str) -> None:
    """(Right, wrong and quadratic answers in every language: ``tests/cli/test_cli_evaluate_languages.py``.)"""
    require(language)
    cases = sample_tests(large=10)
    code, line = BROKEN[language]
    broken = run_stdio_tests(box, code, cases, LIMITS, CPU_S, language=language)
    assert broken.status == "error" and broken.tests_passed == 0
    assert all(r.status == "error" for r in broken.test_results or [])
    source = TOOLCHAINS[language].source_for(code)
    assert broken.load_error is not None and f"{source}:{line}" in broken.load_error, broken.load_error
    assert f"{source}:{line}" in broken.stderr  # what the repair prompt shows: the compiler's own words
    assert "/tmp/" not in broken.stderr  # no scratch path: records do not change with where a run ran


def test_an_answer_compiles_once_for_every_judging(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    require("cpp")
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
    require("cpp")
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


DISARMING = {
    # busy for 2.5 s of CPU against a budget of 1 s, each escaping the budget's SIGPROF its own way
    # CPU time, read from getrusage: a loop on the wall clock (time.Since) ran 2.5 s on a loaded machine
    # with less than its 1 s of CPU, and was rightly "ok"
    "go": 'package main\nimport ("fmt";"syscall")\n'
    "func cpu() int64 { var ru syscall.Rusage; syscall.Getrusage(syscall.RUSAGE_SELF, &ru);"
    " return ru.Utime.Nano() + ru.Stime.Nano() }\n"
    "func main(){ x := 0; for cpu() < 2500000000 { for i := 0; i < 100000; i++ { x++ } }; fmt.Println(x > 0) }\n",
    "cpp": "#include <sys/time.h>\n#include <cstdio>\n#include <ctime>\nint main() {\n"
    "    itimerval off{}; setitimer(ITIMER_PROF, &off, nullptr);\n"
    "    clock_t start = clock(); volatile long x = 0; while (clock() - start < 5 * CLOCKS_PER_SEC / 2) x++;\n"
    '    printf("1\\n");\n}\n',
}


@pytest.mark.parametrize("language", sorted(DISARMING))
def test_a_program_that_escapes_its_budgets_signal_is_still_a_timeout(box: Sandbox, language: str) -> None:
    """Go's runtime swallows SIGPROF and a C++ program may disarm the timer: past its budget the run is a
    timeout however it ended, and a backstop rlimit ends it near the budget, not at the wall limit."""
    require(language)
    built = build(box, TOOLCHAINS[language], DISARMING[language], LIMITS)
    assert built.ok, built.result and built.result.stderr
    seen = run_built(box, built, replace(LIMITS, timeout_s=20.0), cpu_s=1.0)
    assert seen.result.status == "timeout", seen.result
    assert seen.cpu_s is not None and seen.cpu_s < 4.0  # the backstop, well before the 20 s wall limit


def test_a_python_program_that_disarms_its_budget_is_still_a_timeout(box: Sandbox) -> None:
    from spade_llm.sandbox.runner import run_program

    code = "import signal, time\nsignal.setitimer(signal.ITIMER_PROF, 0)\nt = time.process_time()\n"
    code += "while time.process_time() - t < 2.5:\n    pass\nprint('done')\n"
    result = run_program(box, code, replace(LIMITS, timeout_s=20.0), cpu_s=1.0)
    assert result.status == "timeout", result


def test_a_build_larger_than_allowed_fails_and_is_not_kept(box: Sandbox) -> None:
    require("cpp")
    code = "char ballast[20 << 20] = {1};\nint main() { return ballast[0] - 1; }\n"
    built = build(box, TOOLCHAINS["cpp"], code, LIMITS)
    assert not built.ok and built.result is not None and "larger than" in built.result.stderr
    assert not any(kept.code == code for kept in compiled._BUILDS.values())


def test_a_file_named_as_the_sandboxs_own_is_refused(box: Sandbox) -> None:
    for name in ("harness.py", "harness.bin", "stdin.txt"):
        with pytest.raises(ValueError, match="reserved"):
            run_command(box, ["/bin/true"], {name: b"x"}, LIMITS)


def _build_of(size: int, ok: bool = True, status: str = "ok", rc: int = 0) -> Build:
    from spade_llm.types import ExecutionResult

    result = ExecutionResult(status=status, return_code=rc)  # type: ignore[arg-type]
    return Build(TOOLCHAINS["cpp"], f"code {size} {status} {rc}", ok, result, {"main": b"\0" * size})


def test_kept_builds_are_bounded_by_count_and_bytes_and_only_settled_ones_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compiled, "_BUILDS", type(compiled._BUILDS)())
    monkeypatch.setattr(compiled, "BUILD_BYTES_KEPT", 1000)
    for i in range(5):
        compiled._keep(("k", str(i)), _build_of(300))
    assert list(compiled._BUILDS) == [("k", "2"), ("k", "3"), ("k", "4")]  # 900 bytes: the oldest went
    assert compiled._settled(_build_of(1))  # it compiled
    assert compiled._settled(_build_of(0, ok=False, rc=1))  # its compiler rejected it
    assert not compiled._settled(_build_of(0, ok=False, status="timeout", rc=0))  # a limit cut it
    assert not compiled._settled(_build_of(0, ok=False, status="memory", rc=0))


def test_a_compile_never_gets_more_memory_than_a_servers_ceiling() -> None:
    from spade_llm.sandbox.compiled import compile_limits

    assert compile_limits(Limits(memory_mb=256), 10.0).memory_mb == compiled.COMPILE_MEMORY_MB
    assert compile_limits(Limits(memory_mb=256), 10.0, max_memory_mb=512).memory_mb == 512
    assert compile_limits(Limits(memory_mb=2048), 10.0, max_memory_mb=512).memory_mb == 2048  # never below the run's
