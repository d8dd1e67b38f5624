"""spade_llm.rewards.code: TRL's ``code_reward`` and verl's ``compute_score`` judge as the loop does.

One small fake run (every kind) is made once for the module; its tasks' ground truths are built
as exports build them. Answers here are harmless and judged in the subprocess sandbox, except the
hostile ones, which run only in bwrap (skipped where bwrap does not work).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import pickle
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import run_backend, unavailable

from spade_llm.errors import SandboxUnavailable, UserError
from spade_llm.kinds import get_kind
from spade_llm.kinds.queries import call_text
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import STATUS_CODES, CodeReward, Rewarder, code_reward, compute_score, make_code_reward
from spade_llm.rewards.groundtruth import ground_truth
from spade_llm.sandbox.base import Limits, Program, Sandbox
from spade_llm.sandbox.runner import parse_input
from spade_llm.solver import split_tests
from spade_llm.types import ExecutionResult, Task, TestCase, Trajectory

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("rewards.test_rewards")

SPADE = [sys.executable, "-m", "spade_llm.cli"]
TEST_TIMEOUT_S = 1.0


# -- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake run with all three kinds (the fake model, offline)."""
    root = tmp_path_factory.mktemp("rewards")
    config = root / "kinds.yaml"
    config.write_text("curriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n")
    out = root / "run"
    args = ["run", "--epochs", "1", "--samples-per-task", "2", "--tasks-per-epoch", "8", "--seed", "11"]
    args += ["--out", str(out), "--quiet", "--config", str(config), "--sandbox", run_backend()]
    subprocess.run([*SPADE, *args], check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def tasks(run_dir: Path) -> list[Task]:
    found = [Task.model_validate_json(line) for line in (run_dir / "tasks.jsonl").read_text().splitlines()]
    assert {t.kind for t in found} == {"induction", "deduction", "abduction"}
    return found


@pytest.fixture(scope="module")
def trajectories(run_dir: Path) -> list[Trajectory]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return [Trajectory.model_validate_json(line) for line in lines]


@pytest.fixture(scope="module", autouse=True)
def default_rewarder() -> Iterator[Rewarder]:
    """The module functions' default rewarder, on the subprocess sandbox with short test timeouts."""
    rewarder = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=TEST_TIMEOUT_S, max_workers=4)
    saved, rewards._default = rewards._default, rewarder
    yield rewarder
    rewards._default = saved
    rewarder.close()


def gt(task: Task) -> str:
    """The ground truth as exports write it: a JSON string, public count from the solver's split."""
    return json.dumps(ground_truth(task, len(split_tests(task, 3)[0])))


def fenced(code: str) -> str:
    return f"Here it is.\n\n```python\n{code.strip()}\n```\n"


def passing(task: Task) -> str:
    answer = get_kind(task.kind).reference_answer(task)
    return fenced(answer) if task.kind == "induction" else answer


def failing(task: Task) -> str:
    """A wrong answer of the task's kind: code returning None, or predictions / inputs that are wrong."""
    if task.kind == "induction":
        return fenced(f"def {task.entry_point}(*args):\n    return None\n")
    lines = []
    for t in task.tests:
        if task.kind == "deduction":  # a value no program of these tasks returns
            lines.append(f"{call_text(task.entry_point, t.input)} == 'spade-wrong-prediction'")
        else:  # one argument too many: out of shape, never the answer
            args = parse_input(t.input)
            assert isinstance(args, tuple)
            lines.append(f"{task.entry_point}{(*args, 12345)!r} == {t.expected!r}")
    return fenced("\n".join(lines))


def task(code: str, tests: list[tuple[str, Any]], *, kind: str = "induction", entry: str = "f") -> Task:
    return Task(
        task_id=f"t-{kind}",
        kind=kind,
        description="d",
        entry_point=entry,
        reference_code=code,
        tests=[TestCase(input=i, expected=e) for i, e in tests],
    )


DOUBLE = task("def f(x):\n    return 2 * x\n", [(f"({i},)", 2 * i) for i in (1, 2, 3, 10, 11)])
DOUBLE_GT = json.dumps(ground_truth(DOUBLE, 3))
RIGHT = fenced("def f(x):\n    return 2 * x\n")
HARDCODED = fenced("def f(x):\n    return {1: 2, 2: 4, 3: 6}.get(x, 0)\n")  # the public tests only
ONE_HIDDEN = fenced("def f(x):\n    return 2 * x if x == 10 else x\n")  # one hidden test of 2, no public one


# -- the same verdicts as the loop, on every task of a run --------------------------------------------


def test_a_passing_answer_beats_a_failing_one_on_every_task_of_every_kind(tasks: list[Task]) -> None:
    completions, truths = [], []
    for t in tasks:
        completions += [passing(t), failing(t)]
        truths += [gt(t)] * 2
    scores = code_reward(prompts=["p"] * len(completions), completions=completions, ground_truth=truths)
    assert scores == [1.0, 0.0] * len(tasks)
    for t in tasks:
        good = compute_score("spade_llm", passing(t), gt(t), {"kind": t.kind})
        bad = compute_score("spade_llm", failing(t), gt(t), {"kind": t.kind})
        assert good["score"] == 1.0 and good["acc"] == 1.0 and good["status"] == "passed", (t.kind, good)
        assert good["tests_passed"] == good["tests_total"] == len(t.tests)
        assert bad["score"] == 0.0 and bad["acc"] == 0.0 and bad["status"] in ("failed", "error"), (t.kind, bad)
        assert bad["tests_passed"] == 0 and bad["pass_fraction"] == 0.0


def test_rewards_agree_with_the_loops_verdicts_on_the_runs_answers(
    tasks: list[Task], trajectories: list[Trajectory]
) -> None:
    by_id = {t.task_id: t for t in tasks}
    completions, truths, loop = [], [], []
    for tr in trajectories:
        t = by_id[tr.task_id]
        for a in tr.attempts:
            if t.kind == "induction" and not rewards.strict_python_block(a.raw):
                continue  # the loop's extract_code is more lenient; covered by the no-code tests
            completions.append(a.raw)
            truths.append(gt(t))
            loop.append(1.0 if a.result.tests_passed == a.result.tests_total == len(t.tests) else 0.0)
    assert 1.0 in loop and 0.0 in loop
    assert code_reward(completions=completions, ground_truth=truths) == loop


def test_hidden_tests_count_and_partial_credit_is_the_fraction_of_hidden_ones_passed() -> None:
    assert code_reward(completions=[RIGHT, HARDCODED], ground_truth=[DOUBLE_GT] * 2) == [1.0, 0.0]
    partial = make_code_reward(partial_credit=True)
    assert partial.__name__ == "code_reward_partial"
    # a copy of the shown tests earns nothing; an answer right on hidden ones earns their share, public or not
    got = partial(completions=[RIGHT, HARDCODED, ONE_HIDDEN], ground_truth=[DOUBLE_GT] * 3)
    assert got == [1.0, 0.0, 0.5]
    score = compute_score("spade_llm", HARDCODED, DOUBLE_GT)
    assert score == {
        "score": 0.0,
        "acc": 0.0,
        "pass_fraction": 0.6,
        "tests_passed": 3,
        "tests_total": 5,
        "status": "failed",
        "status_code": STATUS_CODES["failed"],
    }
    assert compute_score("spade_llm", HARDCODED, DOUBLE_GT, None, partial_credit=True)["score"] == 0.0
    assert compute_score("spade_llm", ONE_HIDDEN, DOUBLE_GT, None, partial_credit=True)["score"] == 0.5


@pytest.mark.parametrize(
    "completion",
    [
        "def f(x):\n    return 2 * x\n",  # bare code: the loop would take it, a reward does not
        "```\ndef f(x):\n    return 2 * x\n```",  # an untagged block
        "```js\nfunction f(x) { return 2 * x }\n```",
        "```python\n```",
        "",
        [],
        [{"role": "assistant", "content": None}],
        # shapes no trainer sends: 0.0 for the row, not an exception failing the whole batch
        5,
        b"```python\ndef f(x):\n    return 2 * x\n```",
        [{"role": "assistant", "content": 5}],
        [{"role": "assistant", "content": {"type": "image"}}],
    ],
)
def test_no_python_block_scores_zero(completion: Any) -> None:
    assert code_reward(completions=[completion], ground_truth=[DOUBLE_GT]) == [0.0]
    if isinstance(completion, str):
        score = compute_score("spade_llm", completion, DOUBLE_GT)
        assert score["score"] == 0.0 and score["status"] == "no_code"
        assert score["status_code"] == STATUS_CODES["no_code"] and score["tests_total"] == 5


def test_the_last_python_block_is_the_answer() -> None:
    both = RIGHT + "\nor, shorter:\n" + fenced("def f(x):\n    return x\n")
    assert code_reward(completions=[both, HARDCODED + RIGHT], ground_truth=[DOUBLE_GT] * 2) == [0.0, 1.0]


def test_crashes_timeouts_and_syntax_errors_score_zero() -> None:
    answers = {
        "error": fenced("def f(x)\n    return x\n"),
        "failed": fenced("def f(x):\n    raise ValueError(x)\n"),
        "timeout": fenced("def f(x):\n    while True:\n        pass\n"),
    }
    for status, answer in answers.items():
        score = compute_score("spade_llm", answer, DOUBLE_GT)
        assert (score["score"], score["status"]) == (0.0, status)


def _shared_hacks() -> Path | None:
    here = Path(__file__).resolve().parents[2]
    for root in (here.parent / "shared", here / "shared", Path("/work/shared")):
        if (root / "adversarial" / "hacks" / "tasks.jsonl").is_file():
            return root / "adversarial" / "hacks" / "tasks.jsonl"
    return None


def test_the_shared_reward_hacks_earn_nothing() -> None:
    """shared/adversarial/hacks: exit codes, printed verdicts, objects equal to anything. Cheats, not
    attacks (nothing here touches the host), so the subprocess sandbox judges them."""
    path = _shared_hacks()
    if path is None:
        pytest.skip("shared/adversarial/hacks/tasks.jsonl not found")
    hacks = [Task.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]
    completions = [fenced(t.reference_code) for t in hacks]
    truths = [json.dumps(ground_truth(t, 1)) for t in hacks]
    want = [1.0 if t.task_id.startswith("control") else 0.0 for t in hacks]
    assert 1.0 in want and 0.0 in want
    assert make_code_reward(partial_credit=True)(completions=completions, ground_truth=truths) == want


# -- TRL's calling convention ------------------------------------------------------------------------


def test_conversational_completions_and_trls_own_keywords() -> None:
    statuses: dict[str, list[str]] = {}
    messages = [
        [{"role": "assistant", "content": RIGHT}],
        [{"role": "assistant", "content": HARDCODED}],
        # multi-turn tool use: the last assistant message is the answer
        [
            {"role": "assistant", "content": HARDCODED},
            {"role": "tool", "name": "run_tests", "content": RIGHT},
            {"role": "assistant", "content": [{"type": "text", "text": RIGHT}]},
        ],
    ]
    scores = code_reward(
        prompts=[[{"role": "user", "content": "write f"}]] * 3,
        completions=messages,
        completion_ids=[[1, 2, 3]] * 3,
        trainer_state=object(),
        environments=[object()] * 3,
        log_metric=lambda name, value: None,
        log_extra=lambda column, values: statuses.__setitem__(column, values),
        ground_truth=[DOUBLE_GT] * 3,
        task_id=["t"] * 3,
        kind=["induction"] * 3,
        entry_point=["f"] * 3,
        split=["train"] * 3,
        difficulty=[0.5] * 3,
    )
    assert scores == [1.0, 0.0, 1.0]
    assert statuses == {"code_reward_status": ["passed", "failed", "passed"]}
    assert code_reward.__name__ == "code_reward" and code_reward_name_in_trl(code_reward) == "code_reward"


def code_reward_name_in_trl(func: Any) -> str:
    """What TRL logs a reward under (``trl.trainer.utils.get_callable_name``)."""
    import functools

    while isinstance(func, functools.partial):
        func = func.func
    return str(getattr(func, "__name__", type(func).__name__))


def test_columns_without_ground_truth_and_rows_it_does_not_apply_to() -> None:
    columns = {"tests": [json.dumps([t.dump() for t in DOUBLE.tests])] * 2, "entry_point": ["f"] * 2}
    assert code_reward(completions=[RIGHT, HARDCODED], kind=["induction"] * 2, **columns) == [1.0, 0.0]
    # a mixed dataset: rows without a ground truth get None, TRL's "not mine"
    assert code_reward(completions=[RIGHT, RIGHT], ground_truth=[DOUBLE_GT, None]) == [1.0, None]


def test_async_twins_equal_the_sync_functions(tasks: list[Task]) -> None:
    one_of_each = list({t.kind: t for t in tasks}.values())
    completions = [passing(t) for t in one_of_each] + [failing(t) for t in one_of_each] + [ONE_HIDDEN]
    truths = [gt(t) for t in one_of_each] * 2 + [DOUBLE_GT]
    sync = code_reward(completions=completions, ground_truth=truths, trainer_state=None)
    assert inspect.iscoroutinefunction(rewards.code_reward_async)
    assert asyncio.run(rewards.code_reward_async(completions=completions, ground_truth=truths)) == sync
    partial_async = make_code_reward(partial_credit=True, asynchronous=True)
    assert inspect.iscoroutinefunction(partial_async)  # how TRL tells async rewards apart
    partial_sync = make_code_reward(partial_credit=True)(completions=completions, ground_truth=truths)
    assert asyncio.run(partial_async(completions=completions, ground_truth=truths)) == partial_sync
    assert partial_sync[-1] == 0.5

    async def both() -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(
                *(rewards.compute_score_async("s", c, g) for c, g in zip(completions, truths, strict=True))
            )
        )

    assert asyncio.run(both()) == [compute_score("s", c, g) for c, g in zip(completions, truths, strict=True)]


# -- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not json", "row 1: ground truth is not JSON"),
        ('{"tests": [], "kind": "induction"}', "row 1: not a spade_llm ground truth: missing 'entry_point'"),
        ('{"version": 9, "tests": [], "entry_point": "f"}', "row 1: ground truth version 9"),
        ('{"tests": [], "entry_point": "f", "kind": "deduction"}', "row 1: a deduction ground truth needs"),
        ("[1, 2]", "row 1: ground truth must be a JSON object"),
        (42, "row 1: a ground truth is a JSON string or object"),
    ],
)
def test_a_malformed_ground_truth_is_one_clear_user_error(value: Any, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")):
        code_reward(completions=[RIGHT, RIGHT], ground_truth=[DOUBLE_GT, value])
    if isinstance(value, str):
        with pytest.raises(UserError, match=message.removeprefix("row 1: ")[:20]):
            compute_score("spade_llm", RIGHT, value)


def test_missing_or_misshapen_columns_are_user_errors() -> None:
    with pytest.raises(UserError, match="needs the GRPO export's `ground_truth` column"):
        code_reward(completions=[RIGHT], task_id=["t"], trainer_state=None)
    with pytest.raises(UserError, match="column 'ground_truth' has 1 values for 2 completions"):
        code_reward(completions=[RIGHT, RIGHT], ground_truth=[DOUBLE_GT])
    with pytest.raises(UserError, match="one value per completion"):
        code_reward(completions=[RIGHT], ground_truth=DOUBLE_GT)
    with pytest.raises(UserError, match="row 0: a deduction task needs its program: use the `ground_truth` column"):
        code_reward(completions=[RIGHT], tests=["[]"], entry_point=["f"], kind=["deduction"])


class FlakySandbox(Sandbox):
    """Fails its first ``failures`` runs as a broken backend does, then runs in a real subprocess sandbox."""

    name = "flaky"

    def __init__(self, failures: int, made: list[FlakySandbox]) -> None:
        from spade_llm.sandbox.subprocess import SubprocessSandbox

        self.failures = failures
        self.inner = SubprocessSandbox(warn=False)
        self.closed = False
        made.append(self)

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        if self.failures > 0:
            self.failures -= 1
            raise SandboxUnavailable("the backend broke")
        return self.inner.run(program, limits)

    def close(self) -> None:
        self.closed = True
        self.inner.close()


def test_a_broken_sandbox_is_restarted_once_then_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_llm.sandbox.registry as registry

    made: list[FlakySandbox] = []
    # the first sandbox is broken for good, its replacement works
    monkeypatch.setattr(registry, "get_sandbox", lambda name: FlakySandbox(0 if made else 99, made))
    with Rewarder("flaky", test_timeout_s=TEST_TIMEOUT_S) as rewarder:
        assert CodeReward(rewarder)(completions=[RIGHT], ground_truth=[DOUBLE_GT]) == [1.0]
        assert len(made) == 2 and made[0].closed and not made[1].closed  # the broken one replaced

    made.clear()
    monkeypatch.setattr(registry, "get_sandbox", lambda name: FlakySandbox(99, made))  # every one broken
    with Rewarder("flaky", test_timeout_s=TEST_TIMEOUT_S, max_workers=2) as rewarder:
        with pytest.raises(SandboxUnavailable, match="failed again after a restart"):
            CodeReward(rewarder)(completions=[RIGHT, HARDCODED] * 4, ground_truth=[DOUBLE_GT] * 8)
        assert rewarder._pool is not None
        rewarder._pool.shutdown(wait=True)  # whatever was still running or queued has ended
        # one restart, however many answers saw the failure and in whatever order: an answer that
        # first ran on the replacement does not restart it again, and the answers left are not run
        assert len(made) == 2


class DyingSandbox(Sandbox):
    """A sandbox that breaks on an answer marked BREAK while another, marked SLOW, is still running on
    it; closing it kills what runs there (as the real backends do), so a run cut by a close comes back
    ``killed``. Its replacement runs everything, in a real subprocess sandbox."""

    name = "dying"

    def __init__(self, events: dict[str, threading.Event], first: bool) -> None:
        from spade_llm.sandbox.subprocess import SubprocessSandbox

        self.events, self.first = events, first
        self.inner = SubprocessSandbox(warn=False)

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        code = "".join(data.decode(errors="replace") for data in program.files.values())
        if self.first and "BREAK" in code:
            assert self.events["slow running"].wait(10)
            raise SandboxUnavailable("the backend broke")
        if self.first and "SLOW" in code:
            self.events["slow running"].set()
            while not (self.events["closed"].is_set() or self.events["retried"].is_set()):
                time.sleep(0.01)
            if self.events["closed"].is_set():
                return ExecutionResult(status="killed", signal=9, stderr="killed: the sandbox closed")
        if not self.first:
            self.events["retried"].set()
        return self.inner.run(program, limits)

    def close(self) -> None:
        if self.first:
            self.events["closed"].set()
        self.inner.close()


def test_a_restart_lets_the_runs_in_flight_on_the_old_sandbox_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    """One answer breaks the sandbox while another is being judged on it: the restart must not kill
    the other (a good answer would score 0 as killed); the old sandbox closes once it is done."""
    import spade_llm.sandbox.registry as registry

    events = {name: threading.Event() for name in ("slow running", "closed", "retried")}
    made: list[DyingSandbox] = []

    def make(name: str) -> DyingSandbox:
        made.append(DyingSandbox(events, first=not made))
        return made[-1]

    monkeypatch.setattr(registry, "get_sandbox", make)
    slow = fenced("# SLOW\ndef f(x):\n    return 2 * x\n")
    breaking = fenced("# BREAK\ndef f(x):\n    return 2 * x\n")
    with Rewarder("dying", test_timeout_s=TEST_TIMEOUT_S, max_workers=2) as rewarder:
        reward = CodeReward(rewarder)
        assert reward(completions=[slow, breaking], ground_truth=[DOUBLE_GT] * 2) == [1.0, 1.0]
        assert len(made) == 2 and events["closed"].is_set()  # replaced, and closed once the slow run ended


def test_rewards_pickle_and_start_their_own_sandbox() -> None:
    for reward in (code_reward, make_code_reward(partial_credit=True), make_code_reward(asynchronous=True)):
        clone = pickle.loads(pickle.dumps(reward))
        result = clone(completions=[RIGHT, HARDCODED], ground_truth=[DOUBLE_GT] * 2)
        if inspect.iscoroutine(result):
            result = asyncio.run(result)
        assert result[0] == 1.0
    rewarder = Rewarder("subprocess", test_timeout_s=TEST_TIMEOUT_S)
    try:
        rewarder.start()
        clone = pickle.loads(pickle.dumps(rewarder))
        assert clone._sandbox is None and clone.backend == "subprocess"
        assert clone.score(RIGHT, DOUBLE_GT).score == 1.0
        clone.close()
    finally:
        rewarder.close()


def test_the_default_backend_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPADE_SANDBOX", "subprocess")
    assert Rewarder().backend == "subprocess"
    monkeypatch.setenv("SPADE_SANDBOX", "nosuch")
    with pytest.raises(UserError, match="unknown sandbox backend 'nosuch'"):
        Rewarder().score(RIGHT, DOUBLE_GT)
    monkeypatch.delenv("SPADE_SANDBOX")
    assert Rewarder().backend == "auto" and Rewarder("bwrap").backend == "bwrap"


def test_importing_the_rewards_costs_no_model_client_nor_trainer() -> None:
    code = (
        "import sys, spade_llm.rewards.code, spade_llm.integrations.trl; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'openai', 'trl', 'torch', 'transformers'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- hostile answers (bwrap only) ----------------------------------------------------------------------

BWRAP = unavailable("bwrap")


@pytest.mark.bwrap
@pytest.mark.skipif(BWRAP is not None, reason=f"hostile answers run only in bwrap, which does not work here: {BWRAP}")
def test_hostile_answers_score_zero_and_do_no_harm(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    targets = [Path("/etc") / f"spade-{marker}", Path.home() / f"spade-{marker}", tmp_path / f"spade-{marker}"]
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        connections: list[Any] = []
        stop = threading.Event()

        def accept() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    connections.append(server.accept())

        # each answer returns the right value only when its attack worked, and raises otherwise
        hostile = {
            "network": (
                "import socket\ndef f(x):\n"
                f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n    return 2 * x\n"
            ),
            "fork bomb": (
                "import os\ndef f(x):\n    while True:\n        try:\n            os.fork()\n"
                "        except OSError:\n            pass\n"
            ),
            "writes": "def f(x):\n"
            + "".join(f"    open({str(p)!r}, 'w').write('escaped')\n" for p in targets)
            + "    return 2 * x\n",
        }
        # the control: outside an isolating sandbox the network answer reaches the listener and passes.
        # Its connections (one per test call) are all queued once the reward returns: drained here with
        # no thread, since a listener accepting them one by one raced the clearing below and left some
        # to be counted against bwrap (seen once in CI)
        network = fenced(hostile["network"])
        assert code_reward(completions=[network], ground_truth=[DOUBLE_GT]) == [1.0]  # subprocess
        server.setblocking(False)
        control = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                server.accept()[0].close()
                control += 1
        assert control >= 1
        server.settimeout(0.2)
        listener = threading.Thread(target=accept, daemon=True)
        listener.start()
        with Rewarder("bwrap", limits=Limits(timeout_s=5.0), test_timeout_s=TEST_TIMEOUT_S) as rewarder:
            assert rewarder.sandbox.isolating
            reward = CodeReward(rewarder)
            for name, code in hostile.items():
                assert reward(completions=[fenced(code)], ground_truth=[DOUBLE_GT]) == [0.0], name
            # the sandbox still judges, and the host is untouched
            assert reward(completions=[RIGHT, HARDCODED], ground_truth=[DOUBLE_GT] * 2) == [1.0, 0.0]
        stop.set()
        listener.join(5)
    assert connections == []
    assert [p for p in targets if p.exists()] == []


def test_auto_without_an_isolating_backend_is_refused_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy's completions are untrusted: ``auto`` falling back to subprocess must not judge them quietly."""
    from spade_llm.sandbox import registry
    from spade_llm.sandbox.subprocess import SubprocessSandbox

    started: list[Sandbox] = []

    def fallback(name: str, **_: Any) -> Sandbox:
        started.append(SubprocessSandbox())
        return started[-1]

    monkeypatch.setattr(registry, "get_sandbox", fallback)
    with pytest.raises(UserError, match="no isolating sandbox"):
        Rewarder("auto").start()
    allowed = Rewarder("auto", allow_unsafe=True)
    try:
        assert allowed.start().sandbox is started[-1]
        assert pickle.loads(pickle.dumps(allowed)).allow_unsafe is True
    finally:
        allowed.close()
    assert len(started) == 2
