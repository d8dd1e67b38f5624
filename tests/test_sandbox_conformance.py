"""One conformance suite for every sandbox backend (SPEC "Sandbox guarantees", "Test verdicts").

Each test runs on every backend name in the registry; a backend that cannot run here is skipped
with its reason. The subprocess backend also runs with its fallback rlimit launcher. Programs
here are benign failures (loops, sleeps, floods, memory growth, exits) and reward hacks;
genuinely hostile ones (fork bombs) run only where the backend is isolating, since the
subprocess backend is not a security boundary.
"""

from __future__ import annotations

import json
import secrets
import signal
import textwrap
import time
from pathlib import Path

import pytest

from spade_llm.sandbox.base import Limits, Program, Sandbox
from spade_llm.sandbox.registry import BACKENDS, backend_availability, get_sandbox
from spade_llm.sandbox.runner import execute_calls, run_check, run_program, run_tests
from spade_llm.sandbox.subprocess import SubprocessSandbox
from spade_llm.types import TestCase

GRACE_S = 3.0
"""Backstop grace plus start-up slack a timed-out run may take beyond its limit."""

LIMITS = Limits(timeout_s=2.0, memory_mb=256, output_limit_bytes=1 << 16)
TEST_TIMEOUT_S = 1.0

_AVAILABLE = backend_availability()
VARIANTS = [*BACKENDS, "subprocess-launcher"]


@pytest.fixture(scope="module", params=VARIANTS)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    name = request.param
    if name == "subprocess-launcher":
        box: Sandbox = SubprocessSandbox(rlimits_via="launcher")
    else:
        reason = _AVAILABLE[name]
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


def test_background_process_is_gone_after_the_run(sandbox):
    r = program(sandbox, "import subprocess\nprint(subprocess.Popen(['sleep', '30']).pid)\n")
    pid = int(r.stdout)
    time.sleep(0.1)
    assert not alive(pid)


def test_detached_process_is_gone_after_the_run(sandbox):
    # setsid leaves the run's process group and session. The harness is a child subreaper, so the
    # orphan comes back to it and is killed; escaping *that* (killing the harness first) is
    # contained only by the isolating backends' pid namespaces (issue 3).
    r = program(
        sandbox,
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            print(pid, flush=True)
            os._exit(0)
        time.sleep(0.3)
        """,
    )
    assert r.status == "ok", r.stderr
    pid = int(r.stdout)
    time.sleep(0.1)
    assert not alive(pid)


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
    code = """
    import time
    def add(a, b):
        try:
            time.sleep(5)
        except BaseException:
            pass
        return a + b
    """
    r = judged(sandbox, code, limits=Limits(timeout_s=8.0))
    assert [t.status for t in r.test_results] == ["timeout"] * 3


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
    "kill-parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return a + b\n",
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
    assert r.test_results[0].status == ("passed" if passes else r.test_results[0].status)
    assert r.test_results[0].passed is passes


def test_check_mode_failure_shows_the_assert(sandbox):
    r = run_check(sandbox, "def add(a, b):\n    return a - b\n", CHECK, "add", LIMITS)
    assert r.test_results[0].status == "failed"
    assert 'File "check.py", line 5, in check' in r.stderr and "AssertionError" in r.stderr


def test_check_code_without_a_check_function_is_an_assert_script(sandbox):
    script = "assert add(2, 2) == 4\n"
    assert run_check(sandbox, "def add(a, b):\n    return a + b\n", script, "add", LIMITS).tests_passed == 1
    assert run_check(sandbox, "def add(a, b):\n    return 5\n", script, "add", LIMITS).tests_passed == 0


# -- the raw Sandbox contract ----------------------------------------------------------------


def test_raw_run_feeds_stdin_and_files(sandbox):
    data = b"x" * 300_000  # more than a pipe holds: stdin must be written while outputs are read
    src = "import sys\nd = sys.stdin.buffer.read()\nprint(len(d), open('extra/f.txt').read())\n"
    r = sandbox.run(Program(source=src, stdin=data, files={"extra/f.txt": b"hi"}), LIMITS)
    assert r.status == "ok" and r.stdout == "300000 hi\n"


def test_raw_run_rejects_file_names_outside_scratch(sandbox):
    with pytest.raises(ValueError):
        sandbox.run(Program(source="pass", files={"../escape.txt": b"x"}), LIMITS)
