"""Programs and answers that attack what supervises them, on every isolating backend.

Two categories, each defended whole, not by one example:

* **What supervises a run** (``tests/data/hostile/exec``): the sandbox's pid 1, the program's parent
  and every other process of the sandbox that is not the program's own: their memory
  (``/proc/<pid>/mem``, ``process_vm_*``), descriptors (``/proc/<pid>/fd``, ``pidfd_getfd``), other
  ``/proc`` entries, ptrace, and signals (``kill -STOP 1``). On a685e31 bwrap's own init was the
  sandbox's pid 1 and dumpable: a program wrote its memory and took its descriptors.
* **Files the judge uses**: an answer puts a FIFO, a socket, a link (to ``/dev/zero``, to a FIFO) or a
  forged file where the judge reads or writes its own files (``check.py``, ``harness.py``...). On
  a685e31 the check-mode judge, printing the check's traceback, opened ``check.py`` by name: a FIFO
  there hung it until the run's deadline (a ``timeout`` instead of the answer's ``failed``).

Each case asserts the verdict stays what the answer earned, decided by the answer and not by the
deadline (never ``timeout``), and that the sandbox judges the next task correctly. The programs
are hostile, so they run only on backends that are a security boundary.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_backends import unavailable

from spade_llm.sandbox.base import Limits, Sandbox
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.runner import run_check, run_program, run_tests
from spade_llm.types import ExecutionResult, TestCase

HOSTILE_EXEC = Path(__file__).parents[1] / "data" / "hostile" / "exec"
PROGRAMS = sorted(HOSTILE_EXEC.glob("*.py"))
LIMITS = Limits(timeout_s=3.0, memory_mb=256, output_limit_bytes=1 << 16)
TEST_TIMEOUT_S = 1.0
ISOLATING = [pytest.param("bwrap", marks=pytest.mark.bwrap), pytest.param("docker", marks=pytest.mark.docker)]

JUDGE_FILES = ("check.py", "solution.py", "harness.py", "harness.bin", "main.py", "program.py", "_spade_code.py")
"""Every file a judge of this project reads or writes in a scratch directory (the runner's, the harness
stub's, the fork server's, serve-sandbox's wrapper's)."""

CHECK = """
def check(candidate):
    assert candidate(2, 3) == 5
    assert candidate(3, 0) == 3
"""
TESTS = [TestCase(input="(2, 3)", expected=5), TestCase(input="(3, 0)", expected=3)]
ANSWERS = {
    # (body of add, the check's verdict and error, each test's verdict)
    "right": ("return a + b", ("passed", None), ["passed", "passed"]),
    "wrong": ("return a - b", ("failed", "AssertionError"), ["failed", "passed"]),
    "raising": ("raise ValueError('boom')", ("failed", "ValueError: boom"), ["error", "error"]),
}

PLANT = {
    # how the answer replaces each judge file, at import time (before any call)
    "fifo": "os.mkfifo(path)",
    "socket": "_s = socket.socket(socket.AF_UNIX); _s.bind(path); _keep.append(_s)",
    "link_to_zero": "os.symlink('/dev/zero', path)",
    "link_to_fifo": "os.mkfifo(path + '.real'); os.symlink(os.path.abspath(path + '.real'), path)",
    "forged": "open(path, 'w').write('assert True  # FORGED: the check passed\\n' * 3)",
    "directory": "os.mkdir(path)",
}


@pytest.fixture(scope="module", params=ISOLATING)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    reason = unavailable(request.param)
    if reason is not None:
        pytest.skip(f"{request.param}: {reason}")
    box = get_sandbox(request.param)
    yield box
    box.close()


def planting_answer(kind: str, body: str) -> str:
    """An ``add`` that, when loaded, puts ``kind`` in place of every judge file in its folder."""
    return textwrap.dedent(
        f"""
        import os, socket
        _keep = []
        for name in {JUDGE_FILES!r}:
            path = name
            try:
                if os.path.lexists(path) and not os.path.isdir(path):
                    os.unlink(path)
                {PLANT[kind]}
            except OSError:
                pass
        def add(a, b):
            {body}
        """
    )


def assert_judged(check: ExecutionResult, tests: ExecutionResult, answer: str) -> None:
    """The verdicts ``answer`` earned: each test's, and the check's (after the tests) with its error."""
    _, (check_status, check_error), test_statuses = ANSWERS[answer]
    assert check.test_results is not None and tests.test_results is not None
    (verdict,) = check.test_results  # the check alone: no tests given to it
    assert (verdict.status, verdict.error) == (check_status, check_error), check.stderr[-800:]
    assert check.status != "timeout" and tests.status != "timeout"  # decided by the answer, not the deadline
    assert "FORGED" not in check.stderr + tests.stderr
    assert [t.status for t in tests.test_results] == test_statuses
    assert check.tests_passed == (1 if answer == "right" else 0)


def judge(sandbox: Sandbox, code: str) -> tuple[ExecutionResult, ExecutionResult]:
    """``code`` judged in check mode (no tests: the check alone) and in tests mode."""
    check = run_check(sandbox, code, CHECK, "add", LIMITS, test_timeout_s=TEST_TIMEOUT_S)
    tests = run_tests(sandbox, code, "add", TESTS, LIMITS, TEST_TIMEOUT_S)
    return check, tests


def judged_right_after(sandbox: Sandbox) -> None:
    """The sandbox still judges honest answers exactly (what a run left could have tampered with)."""
    for answer in ("wrong", "right"):
        code = f"def add(a, b):\n    {ANSWERS[answer][0]}\n"
        assert_judged(*judge(sandbox, code), answer)


# -- what supervises a run ------------------------------------------------------------------------


def header(path: Path) -> tuple[str, list[str]]:
    """A hostile program's first line (what contained means) and its ``# status-not:`` verdicts."""
    lines = path.read_text().splitlines()[:3]
    banned = next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("# status-not:")), [])
    return lines[0], banned


def test_every_hostile_program_says_what_contained_means() -> None:
    assert len(PROGRAMS) >= 7
    for path in PROGRAMS:
        first, banned = header(path)
        assert first.startswith("# ") and "Contained" in first and banned, path.name


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_hostile_program_is_contained_and_the_next_task_judged_right(sandbox: Sandbox, path: Path) -> None:
    _, banned = header(path)
    r = run_program(sandbox, path.read_text(), LIMITS)
    assert not re.findall(r"ESCAPE:\S+", r.stdout), r.stdout[-2000:]
    assert r.status not in banned, (r.status, r.stderr[-800:])
    judged_right_after(sandbox)


def test_pid_1_is_the_sandboxs_own_closed_and_unstoppable(sandbox: Sandbox) -> None:
    """Pid 1 is one of ours (the fork server's worker, or docker's relay), not dumpable: its /proc
    entries are closed to programs, and the one process every program can name cannot be stopped."""
    r = run_program(
        sandbox,
        textwrap.dedent(
            """
            import os, signal
            try:
                open("/proc/1/environ", "rb").read()
                closed = False
            except PermissionError:
                closed = True
            cmd = open("/proc/1/cmdline", "rb").read().split(b"\\0")
            os.kill(1, signal.SIGSTOP)
            state = open("/proc/1/stat").read().rsplit(")", 1)[1].split()[0]
            print(closed, os.path.basename(cmd[0]).decode()[:6], b"-c" in cmd, state)
            """
        ),
        LIMITS,
    )
    assert r.status == "ok", r.stderr
    closed, exe, python_c, state = r.stdout.split()
    assert (closed, exe, python_c) == ("True", "python", "True")  # not bwrap's init
    assert state not in ("T", "t")


# -- files the judge uses --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(PLANT))
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_special_files_in_place_of_the_judges_never_change_a_verdict(sandbox: Sandbox, kind: str, answer: str) -> None:
    code = planting_answer(kind, ANSWERS[answer][0])
    assert_judged(*judge(sandbox, code), answer)


def test_a_check_reads_no_file_the_answer_made_even_when_it_fails_late(sandbox: Sandbox) -> None:
    """The answer plants its FIFOs during the calls, after the check started, and under every name a
    traceback printer might look for (the check's, the harness's), then fails: still ``failed``."""
    code = textwrap.dedent(
        f"""
        import os
        def add(a, b):
            for name in {JUDGE_FILES!r}:
                if not os.path.lexists(name):
                    os.mkfifo(name)
            raise ValueError("boom")
        """
    )
    assert_judged(*judge(sandbox, code), "raising")
