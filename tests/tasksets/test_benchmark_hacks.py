"""Imported benchmark tasks are as hack-proof as generated ones.

Before, an imported HumanEval task was judged by its ``check()`` in the answer's own process, and
answers that knew only the entry point's name passed: an object equal to everything (36 of the first
40 tasks), a trace or profile hook that swapped ``check``'s code (40/40), a hunt through ``gc`` or up
the frames for the harness's reporter (40/40), reading the check script off the disk (29/40). Now
the asserts are tests compared outside the sandbox, and what is left of a check runs in a process
the answer cannot reach. Every answer here is hostile to the harness, so it runs only in bwrap.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_backends import unavailable

from spade_llm.judge import final_status, run_task_tests
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.sandbox.base import Limits
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.types import Task, TestCase

HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"
SPADE = [sys.executable, "-m", "spade_llm.cli"]
BWRAP = unavailable("bwrap")
LIMITS = Limits(timeout_s=10.0)

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(BWRAP is not None, reason=f"answers hostile to the harness run only in bwrap: {BWRAP}"),
]

# Generic answers: each knows only the entry point's name ({ep}).
HACKS = {
    "always_equal": """
class _Yes:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __sub__(self, other): return self
    def __rsub__(self, other): return self
    def __abs__(self): return 0
    def __iter__(self): return iter(())
    def __len__(self): return 0
    def __hash__(self): return 0
def {ep}(*args, **kwargs):
    return _Yes()
""",
    "int_subclass": """
class _Int(int):
    def __eq__(self, other): return True
    __hash__ = int.__hash__
def {ep}(*args, **kwargs):
    return _Int(1)
""",
    "trace_hook": """
import sys, threading
def _swap(frame, event, arg):
    f = frame
    while f is not None:
        for scope in (f.f_locals, f.f_globals):
            chk = scope.get("check") if isinstance(scope, dict) else None
            if callable(chk) and getattr(getattr(chk, "__code__", None), "co_name", "") == "check":
                chk.__code__ = (lambda *a, **k: None).__code__
        f = f.f_back
    return _swap
sys.settrace(_swap)
threading.settrace(_swap)
def {ep}(*args, **kwargs):
    return None
""",
    "gc_hunt": """
import gc, os
for _o in gc.get_objects():
    if hasattr(type(_o), "send") and hasattr(_o, "token"):
        try:
            _o.send("done")
        except Exception:
            pass
        os._exit(0)
def {ep}(*args, **kwargs):
    return None
""",
    "frame_walk": """
import sys, os
_f = sys._getframe()
while _f is not None:
    _me = _f.f_locals.get("self")
    if _me is not None and hasattr(_me, "send") and hasattr(_me, "token"):
        try:
            _me.send("done")
        except Exception:
            pass
        os._exit(0)
    _f = _f.f_back
def {ep}(*args, **kwargs):
    return None
""",
    "read_the_check": """
import os, re, ast
_known = {{}}
for _root in (".", os.getcwd(), "/tmp"):
    try:
        for _n in os.listdir(_root):
            _src = open(os.path.join(_root, _n), errors="replace").read() if _n.endswith(".py") else ""
            for _m in re.finditer(r"candidate\\((.*)\\) == (.*)", _src):
                try:
                    _known[repr(ast.literal_eval("(" + _m.group(1) + ",)"))] = ast.literal_eval(_m.group(2))
                except Exception:
                    pass
    except Exception:
        pass
def {ep}(*args):
    return _known.get(repr(tuple(args)))
""",
    "reach_the_parent": """
import os
for _fd in os.listdir("/proc/%d/fd" % os.getppid()):
    try:
        os.write(os.open("/proc/%d/fd/%s" % (os.getppid(), _fd), os.O_WRONLY), b"done\\n")
    except Exception:
        pass
def {ep}(*args, **kwargs):
    return None
""",
}
HACKS["profile_hook"] = HACKS["trace_hook"].replace("settrace", "setprofile")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not found")
    path = tmp_path_factory.mktemp("he") / "he.jsonl"
    subprocess.run([*SPADE, "import", "humaneval", str(HUMANEVAL), "-o", str(path)], check=True, capture_output=True)
    return path, [Task.model_validate_json(line) for line in path.read_text().splitlines()]


def evaluate(tasks_file: Path, samples: list[dict[str, str]], tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    args = [*SPADE, "evaluate", str(tasks_file), "--samples", str(path), "--sandbox", "bwrap"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_canonical_solutions_pass_every_task(imported, tmp_path):
    tasks_file, tasks = imported
    assert len(tasks) == 164
    raw = [json.loads(line) for line in __import__("gzip").open(HUMANEVAL, "rt")]
    rows = evaluate(
        tasks_file, [{"task_id": r["task_id"], "completion": r["canonical_solution"]} for r in raw], tmp_path
    )
    assert [r["task_id"] for r in rows] == [r["task_id"] for r in raw]  # verdicts in the samples' order
    assert [r["task_id"] for r in rows if not r["passed"]] == []
    # most asserts are ordinary tests now; a few checks stay scripts (loops, random inputs, helpers)
    assert sum(len(t.tests) for t in tasks) > 1000
    assert 0 < sum(t.check_code is not None for t in tasks) <= 10


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_generic_answers_pass_no_imported_task(imported, tmp_path, hack):
    tasks_file, tasks = imported
    samples = [{"task_id": t.task_id, "code": HACKS[hack].format(ep=t.entry_point)} for t in tasks]
    rows = evaluate(tasks_file, samples, tmp_path)
    assert len(rows) == len(tasks)
    assert [r["task_id"] for r in rows if r["passed"]] == []


def test_code_reward_gives_the_hacks_nothing_and_the_canonical_solutions_everything(imported):
    from spade_llm.rewards.code import Rewarder, make_code_reward

    _, tasks = imported
    # every task that keeps a check script, and some that do not
    chosen = [t for t in tasks if t.check_code is not None] + tasks[:12]
    truths = [json.dumps(ground_truth(t, 0)) for t in chosen]
    with Rewarder("bwrap", limits=LIMITS) as rewarder:
        reward = make_code_reward(rewarder=rewarder)
        canonical = ["```python\n" + t.reference_code + "\n```" for t in chosen]
        assert reward([""] * len(chosen), canonical, ground_truth=truths) == [1.0] * len(chosen)
        for hack, code in sorted(HACKS.items()):
            answers = ["```python\n" + code.format(ep=t.entry_point) + "\n```" for t in chosen]
            scores = reward([""] * len(chosen), answers, ground_truth=truths)
            assert scores == [0.0] * len(chosen), hack


# -- the check's own process -------------------------------------------------------------------------


def check_task(check: str, tests: list[TestCase] | None = None) -> Task:
    return Task(
        task_id="bench/x",
        description="d",
        entry_point="f",
        reference_code="def f(x):\n    return x * 2\n",
        tests=tests or [],
        check_code=check,
        public_tests=0,
        source="bench",
    )


@pytest.fixture(scope="module")
def bwrap():
    box = get_sandbox("bwrap")
    yield box
    box.close()


SECRET_CHECK = "def check(candidate):\n    assert candidate(31337) == 62674, 'SECRET'\n"


def test_the_check_runs_apart_with_the_answer_called_by_value(bwrap):
    task = check_task(SECRET_CHECK, [TestCase(input="(3,)", expected=6)])
    result = run_task_tests(bwrap, task, task.reference_code, LIMITS)
    assert final_status(result) == "passed" and (result.tests_passed, result.tests_total) == (2, 2)
    # the reference passes; a wrong answer fails the test and the check, each with its own verdict
    wrong = run_task_tests(bwrap, task, "def f(x):\n    return x + 1\n", LIMITS)
    assert [r.status for r in wrong.test_results or []] == ["failed", "failed"]
    assert (wrong.test_results or [])[1].input == "check(f)"


def test_the_answer_never_sees_the_check_script(bwrap):
    # the script is in no file the answer can read, and the check's process is closed to it
    spy = (
        "import os, sys\n"
        "seen = []\n"
        "for top in ('.', os.environ.get('HOME', '.'), '/tmp', '/var/tmp', '/dev/shm'):\n"
        "    for root, dirs, files in os.walk(top):\n"
        "        for name in files:\n"
        "            try:\n"
        "                if b'SECR' + b'ET' in open(os.path.join(root, name), 'rb').read():\n"
        "                    seen.append(os.path.join(root, name))\n"
        "            except Exception:\n"
        "                pass\n"
        "for name in ('mem', 'environ', 'fd', 'maps'):\n"
        "    try:\n"
        "        path = '/proc/%d/%s' % (os.getppid(), name)\n"
        "        os.listdir(path) if name == 'fd' else open(path, 'rb').read(1)\n"
        "        seen.append(name)\n"
        "    except Exception:\n"
        "        pass\n"
        "print('SEEN', seen, file=sys.stderr)\n"
        "def f(x):\n    return x * 2\n"
    )
    result = run_task_tests(bwrap, check_task(SECRET_CHECK), spy, LIMITS)
    assert final_status(result) == "passed"
    assert "SEEN []" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("class I(int):\n    pass\ndef f(x):\n    return I(x * 2)\n", "only exact builtin types"),
        ("def f(x):\n    return [x * 2, object()]\n", "only exact builtin types"),
        ("import os\ndef f(x):\n    os.kill(os.getppid(), 9)\n", ""),
        ("import os\ndef f(x):\n    os._exit(0)\n", "ended"),
        ("import os\ndef f(x):\n    os.write(3, b'a done\\n')\n    return x * 2 + 1\n", ""),
    ],
)
def test_what_the_answer_does_in_its_process_fails_the_check(bwrap, answer, why):
    result = run_task_tests(bwrap, check_task(SECRET_CHECK), answer, LIMITS)
    assert result.tests_passed == 0 and final_status(result) != "passed"
    assert why in ((result.test_results or [])[-1].error or "") or why in result.stderr


def test_the_check_sees_the_answers_exceptions_by_type(bwrap):
    check = (
        "def check(candidate):\n"
        "    try:\n"
        "        candidate(-1)\n"
        "    except ValueError as e:\n"
        "        assert 'negative' in str(e)\n"
        "    else:\n"
        "        raise AssertionError('no error')\n"
        "    assert candidate(2) == 4\n"
    )
    answer = "def f(x):\n    if x < 0:\n        raise ValueError('negative input')\n    return x * 2\n"
    assert final_status(run_task_tests(bwrap, check_task(check), answer, LIMITS)) == "passed"
    assert final_status(run_task_tests(bwrap, check_task(check), "def f(x):\n    return x * 2\n", LIMITS)) == "failed"


def test_a_load_error_is_an_error_and_timeouts_stop_before_the_check(bwrap):
    task = check_task(SECRET_CHECK, [TestCase(input=f"({i},)", expected=2 * i) for i in range(4)])
    broken = run_task_tests(bwrap, task, "def f(x)\n", LIMITS)
    assert final_status(broken) == "error" and broken.load_error and "SyntaxError" in broken.load_error
    slow = run_task_tests(bwrap, task, "def f(x):\n    while True:\n        pass\n", LIMITS, test_timeout_s=0.3)
    assert final_status(slow) == "timeout"
    assert [r.status for r in slow.test_results or []] == ["timeout"] * 5
    assert (slow.test_results or [])[-1].error == "not run: earlier tests timed out"


def test_an_honest_check_leaves_nothing_behind_and_its_worker_is_reused(bwrap, monkeypatch):
    # the check's process reaps the answer's: a warm worker that had to sweep a leftover is retired
    from spade_llm.sandbox import pool

    released: list[bool] = []
    release = pool.WorkerPool._release

    def spy(self, worker, reusable):
        released.append(reusable)
        return release(self, worker, reusable)

    monkeypatch.setattr(pool.WorkerPool, "_release", spy)
    task = check_task(SECRET_CHECK, [TestCase(input="(3,)", expected=6)])
    for _ in range(3):
        assert final_status(run_task_tests(bwrap, task, task.reference_code, LIMITS)) == "passed"
    assert released == [True, True, True]
