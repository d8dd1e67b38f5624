"""Live progress: a refreshing block on a terminal, nothing of it in a pipe."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_llm.progress import LiveBlock, bar, describe_epoch, eta, is_live_terminal
from spade_llm.types import EpochMetrics

SPADE = [sys.executable, "-m", "spade_llm.cli"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["TERM"] = "xterm"
    return env


def on_terminal(*args: str, timeout: float = 120) -> tuple[int, str]:
    """Run spade with stdout and stderr on a pseudo-terminal; its exit code and everything it drew."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*SPADE, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=_env())
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.e2e
@pytest.mark.slow
def test_run_draws_a_progress_block_on_a_terminal_and_none_in_a_pipe(tmp_path: Path) -> None:
    args = ["run", "--epochs", "2", "--tasks-per-epoch", "2", "--seed", "3"]
    code, drawn = on_terminal(*args, "--out", str(tmp_path / "tty"))
    assert code == 0, drawn
    assert "\x1b[2K" in drawn and "\x1b[?25l" in drawn and "\x1b[?25h" in drawn
    assert "epochs done 2/2" in drawn and "pass rate so far" in drawn and "in flight" in drawn
    assert "proposals 2/2 answered" in drawn  # the last block drawn counts the whole epoch
    assert "epoch 0: difficulty" in drawn and "epoch 1: difficulty" in drawn  # the log lines, above the block

    piped = subprocess.run(
        [*SPADE, *args, "--out", str(tmp_path / "pipe")], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stderr + piped.stdout
    assert "pass rate so far" not in piped.stderr and "epoch 0: difficulty" in piped.stderr
    # the progress block changes nothing of the run: the same seed gives the same records
    for name in ("tasks.jsonl", "trajectories.jsonl"):
        tty = [json.loads(x)["task_id"] for x in (tmp_path / "tty" / name).read_text().splitlines()]
        pipe = [json.loads(x)["task_id"] for x in (tmp_path / "pipe" / name).read_text().splitlines()]
        assert sorted(tty) == sorted(pipe)


@pytest.mark.e2e
def test_quiet_run_draws_nothing_on_a_terminal(tmp_path: Path) -> None:
    code, drawn = on_terminal("run", "--epochs", "1", "--tasks-per-epoch", "1", "--out", str(tmp_path / "q"), "--quiet")
    assert code == 0, drawn
    assert "\x1b" not in drawn and drawn.strip() == str(tmp_path / "q")


def test_evaluate_keeps_its_rows_whole_on_a_terminal(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {
            "task_id": f"t{i}",
            "description": "double",
            "entry_point": "f",
            "reference_code": "def f(x):\n    return 2 * x\n",
            "tests": [{"input": f"({j},)", "expected": 2 * j} for j in range(3)],
        }
        for i in range(6)
    ]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, drawn = on_terminal("evaluate", str(tasks), "--sandbox", "subprocess")
    assert code == 0, drawn
    assert "evaluate: 6/6 judged" in drawn and "\x1b[2K" in drawn
    lines = [line for line in drawn.replace("\r", "").split("\n") if '"task_id"' in line]
    assert len(lines) == 6 and all(line.startswith("{") or "\x1b" in line for line in lines)
    for line in lines:  # each row is whole JSON once the block's own codes are taken off
        assert json.loads(line[line.index("{") :])["passed"] is True


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_block_redraws_in_place_and_keeps_log_lines_above(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    out = _FakeTerminal()
    assert is_live_terminal(out) and not is_live_terminal(io.StringIO())
    count = {"n": 0}

    def render() -> list[str]:
        count["n"] += 1
        return [f"step {count['n']}", "second line"]

    with LiveBlock(out, render, interval=0.01) as block:
        time.sleep(0.05)
        block.log("a log line")
        time.sleep(0.03)
    text = out.getvalue()
    assert "a log line\n" in text and "\x1b[2F" in text  # moved up over its own two lines to redraw
    assert text.endswith("\x1b[?25h") and count["n"] >= 3
    assert bar(5, 10, 10) == "[#####-----]" and bar(0, 0, 4) == "[----]"


def test_a_broken_render_shows_why_and_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    out = _FakeTerminal()

    def render() -> list[str]:
        raise KeyError("gone")

    with LiveBlock(out, render, interval=0.01):
        time.sleep(0.03)
    assert "progress unavailable: KeyError" in out.getvalue()


def test_dumb_terminals_and_pipes_get_no_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert not is_live_terminal(_FakeTerminal())


# -- why a run stopped after epochs that accepted nothing (issue 35, finding 6) ---------------------------


def _metrics(epoch: int, accepted: int):
    from spade_llm.types import EpochMetrics

    return EpochMetrics(
        epoch=epoch,
        difficulty=0.3,
        pass_rate=None,
        first_try_pass_rate=None,
        mean_turns=None,
        tasks_proposed=4,
        tasks_accepted=accepted,
        rejected_by_reason={},
        novelty=0.0,
        mean_reward=None,
    )


def _rejection(epoch: int, reason: str, index: int):
    from spade_llm.types import Rejection

    return Rejection(epoch=epoch, request_index=index, position=None, reason=reason)


def _counted(rejected) -> list[EpochMetrics]:
    """The metrics rows of epochs that accepted nothing, counting ``rejected`` by reason as the loop does."""
    from spade_llm.evaluator import count_reasons

    epochs = sorted({r.epoch for r in rejected})
    rows = [_row(e, []) for e in epochs]
    return [
        row.model_copy(update={"tasks_accepted": 0, "rejected_by_reason": count_reasons(
            r.reason for r in rejected if r.epoch == row.epoch
        )})
        for row in rows
    ]  # fmt: skip


def test_the_empty_streak_is_the_last_epochs_in_a_row_since_a_stop() -> None:
    from spade_llm.progress import empty_streak

    rows = [_metrics(e, n) for e, n in enumerate([2, 0, 0, 1, 0, 0, 0])]
    assert empty_streak(rows) == [4, 5, 6]
    assert empty_streak(rows, since=6) == [6]  # a resume after a stop at epoch 5 counts from 6
    assert empty_streak(rows, since=7) == []
    assert empty_streak(rows[:4]) == [] and empty_streak([]) == []


@pytest.mark.parametrize(
    ("reasons", "said"),
    [
        (
            ["bad_json"] * 20 + ["weak_tests"] * 4,
            "the last 24 proposals were rejected: bad_json 20, weak_tests 4 (the generator's answers hold no usable "
            "task: check its model, server and generator.response_format; rejected.jsonl has each)",
        ),
        (["duplicate", "duplicate", "bad_input"], "duplicate 2, bad_input 1 (the generator repeats tasks"),
        (["weak_tests", "bad_input", "bad_input"], "bad_input 2, weak_tests 1 (its tasks fail the gates"),
        ([], "none of their proposals was decided"),
    ],
)
def test_the_stop_message_names_the_rejections_most_first_and_the_likely_cause(reasons: list[str], said: str) -> None:
    from spade_llm.progress import empty_epochs_message

    rejected = [_rejection(3 + i % 3, reason, i) for i, reason in enumerate(reasons)]
    rejected.append(_rejection(2, "refusal", 99))  # before the streak: not its cause
    message = empty_epochs_message([3, 4, 5], _counted(rejected))
    assert message.startswith("3 epochs in a row (epochs 3-5) accepted no task; ") and said in message
    assert "refusal" not in message
    assert empty_epochs_message([7], []).startswith("1 epoch in a row (epoch 7) accepted no task")


ANSWERS = "the generator's answers hold no usable task"
GATES = "its tasks fail the gates"


@pytest.mark.parametrize("reason", ["too_long", "malformed", "bad_json", "truncated", "refusal", "empty", "no_tasks"])
def test_every_answer_level_reason_is_blamed_on_the_answers_never_on_the_gates(reason: str) -> None:
    """The stop names the cause from evaluator's one list (before, progress kept a copy that lacked
    ``too_long`` and ``malformed``: a streak of answers too long to read was blamed on the gates)."""
    from spade_llm.progress import empty_epochs_message

    message = empty_epochs_message([0, 1, 2], _counted([_rejection(i % 3, reason, i) for i in range(6)]))
    assert ANSWERS in message and GATES not in message


def test_failed_requests_are_blamed_on_the_endpoint() -> None:
    from spade_llm.progress import empty_epochs_message

    message = empty_epochs_message([0], _counted([_rejection(0, "llm_timeout", i) for i in range(3)]))
    assert "the generator's requests fail" in message and GATES not in message


KNOWN_REASONS = "bad_json too_long malformed invalid_task no_code duplicate weak_tests llm_auth leaks_hidden_test"


@given(
    reason=st.one_of(
        st.sampled_from([*KNOWN_REASONS.split(), "undecided", "bad_input", "nondeterministic"]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20),
    )
)
def test_the_stop_and_the_funnel_class_every_reason_alike(reason: str) -> None:
    """A reason the funnel takes from ``valid`` (a gate's) is the only kind the stop blames on the gates,
    and one it counts as the answer's is blamed on the answers: one classification, whatever the reason."""
    from spade_llm.evaluator import ANSWER_REASONS, funnel
    from spade_llm.progress import empty_epochs_message

    message = empty_epochs_message([4], _counted([_rejection(4, reason, 0)]))
    assert (GATES in message) == (funnel(1, 1, [reason], 0)["valid"] == 0)
    assert (ANSWERS in message) == (reason in ANSWER_REASONS)


def _row(epoch: int, warnings: list[str], wall_s: float = 60.0) -> EpochMetrics:
    return EpochMetrics(
        epoch=epoch, difficulty=0.3, pass_rate=0.5, first_try_pass_rate=0.4, mean_turns=1.5, tasks_proposed=4,
        tasks_accepted=4, rejected_by_reason={}, novelty=0.9, mean_reward=0.1, warnings=warnings, wall_s=wall_s,
    )  # fmt: skip


def test_a_warning_the_epoch_before_said_is_said_again_as_persisting() -> None:
    """The terminal dropped a warning whose words matched the epoch before's: a sign that persists looked gone."""
    sign = "pass rate stuck near 1 for 3 epochs: the tasks are too easy to learn from"
    first = describe_epoch(_row(3, [sign, "2 episodes abandoned by their clients"]))
    assert f"\n  warning: {sign}" in first
    again = describe_epoch(_row(4, [sign, "1 episodes abandoned by their clients"]), said={sign})
    assert f"\n  warning: still: {sign}" in again and "\n  warning: 1 episodes abandoned" in again


def test_the_live_block_estimates_the_time_left_from_the_epochs_done() -> None:
    rows = [_row(e, [], wall_s=w) for e, w in enumerate([50.0, 70.0])]
    assert eta(rows, 10) == "~8 min"  # 8 epochs left at 60 s
    assert eta(rows, 3) == "~60 s" and eta(rows, 2) == "" and eta([], 5) == ""
    assert eta([_row(0, [], wall_s=4000.0)], 4) == "~3.3 h"
