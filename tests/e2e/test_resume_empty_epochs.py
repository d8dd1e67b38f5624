"""Epochs that accept nothing: a growing pause between them, and after ``controller.max_empty_epochs`` in a
row a stop with its own exit status (5), the rejections named, resumable (issue 35, finding 6).

Before, an epoch whose proposals were all rejected was followed at once by the next, forever: a
``serve-env`` left running against a generator answering prose wrote 470 empty epochs (21 MB) in 4
minutes. The controller tests drive stubs (no sandbox, no model); the CLI test runs ``spade run``
against a chat server that answers prose to everything, as a misconfigured endpoint does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_kit import DyingRunDir, Killed, records
from test_controller import StubChecker, StubExecutor, unique_code

SPADE = [sys.executable, "-m", "spade_llm.cli"]
PROSE = "Sure! I would love to help you practise Python today. What would you like to work on?"


# -- a model that answers prose to everything ---------------------------------------------------------


class _Prose(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint whose every answer is ``PROSE``, streamed or not."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if body.get("stream"):
            events = [
                {"choices": [{"index": 0, "delta": {"content": PROSE}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            answer = {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": PROSE}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
            data, kind = json.dumps(answer).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def prose_server() -> Iterator[str]:
    """A ``_Prose`` endpoint on a free loopback port: its base URL (``.../v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prose)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def spade(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, timeout=timeout)


# -- the CLI: spade run against a generator whose every answer is prose ------------------------------


@pytest.mark.e2e
@pytest.mark.slow
def test_a_run_whose_generator_answers_prose_stops_after_3_empty_epochs_with_exit_5(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with prose_server() as url:
        flags = ("--model", "openai/prose", "--api-base", url, "--tasks-per-epoch", "3", "--sandbox", "subprocess")
        first = spade("run", *flags, "--epochs", "10", "--out", str(out), "--quiet")
        assert first.returncode == 5, first.stderr  # before: 0, after 10 empty epochs
        assert [m["epoch"] for m in rows(out / "metrics.jsonl")] == [0, 1, 2]
        why = (
            "3 epochs in a row (epochs 0-2) accepted no task; the last 9 proposals were rejected: bad_json 9 "
            "(the generator's answers hold no usable task"
        )
        last = first.stderr.strip().splitlines()[-1]
        assert last.startswith(f"spade run: stopped: {why}") and f"spade run --resume {out}" in last
        summary = json.loads((out / "summary.json").read_text())
        assert summary["complete"] is False and summary["stopped_because"].startswith(why)
        assert {r["reason"] for r in rows(out / "rejected.jsonl")} == {"bad_json"}
        # resumable like every stop: the resume gets as many empty epochs again, then stops the same way
        again = spade("run", "--resume", str(out), "--quiet")
        assert again.returncode == 5, again.stderr
        assert "(epochs 3-5)" in again.stderr
        assert [m["epoch"] for m in rows(out / "metrics.jsonl")] == list(range(6))
        stops = json.loads((out / "manifest.json").read_text())["stops"]
        assert [(s["epoch"], s["reason"]) for s in stops] == [(2, "empty_epochs"), (5, "empty_epochs")]


# -- the controller, on stubs --------------------------------------------------------------------------


class EpochGenerator:
    """One task per request, except in the epochs ``empty(epoch)`` names: there every answer is prose."""

    def __init__(self, empty: Callable[[int], bool]) -> None:
        self.empty = empty

    async def propose(self, ctx: Any) -> Any:
        from spade_llm.generator import Candidate, Proposal
        from spade_llm.types import Task, TestCase

        await asyncio.sleep(0)
        proposal = Proposal(request_index=ctx.request_index, usage_prompt=10, usage_completion=5)
        if self.empty(ctx.epoch):
            proposal.failure, proposal.detail = "bad_json", "no JSON in the answer"
            return proposal
        key = f"{ctx.seed}-{ctx.epoch}-{ctx.request_index}"
        task = Task(
            task_id=f"e{ctx.epoch}-{ctx.request_index}",
            description=f"task {key}",
            entry_point="f",
            reference_code=unique_code(key),
            tests=[TestCase(input=f"({j},)", expected=j) for j in range(5)],
            meta={"epoch": ctx.epoch, "target_difficulty": ctx.difficulty},
        )
        proposal.candidates.append(Candidate((ctx.request_index, 0), task=task, raw={}))
        return proposal


def _config(epochs: int, limit: int | None = 3, pause: float = 0.0) -> Any:
    from spade_llm.config import load_config

    controller = {
        "epochs": epochs,
        "tasks_per_epoch": 2,
        "concurrency": 2,
        "max_empty_epochs": limit,
        "empty_epoch_pause_s": pause,
    }
    return load_config(None, {"controller": controller})


def _start(path: Path, config: Any, run: Any = None) -> Any:
    """A new run directory at ``path`` (``run``: the RunDir to write it through) with its config."""
    from spade_llm.store import RunDir

    path.mkdir(parents=True, exist_ok=True)
    run = run if run is not None else RunDir(path)
    run.write_yaml("config.yaml", config.model_dump(mode="json"))
    run.touch_journals()
    return run


def _controller(run: Any, config: Any, empty: Callable[[int], bool], log: list[str] | None = None) -> Any:
    from spade_llm.controller import Controller
    from spade_llm.llm.stats import LLMStats

    said = log if log is not None else []
    executor = StubExecutor(lambda d: 0.5, slots=2)
    return Controller(config, run, EpochGenerator(empty), executor, StubChecker(), LLMStats(), log=said.append)


def test_three_empty_epochs_in_a_row_stop_the_run_naming_the_rejections(tmp_path: Path) -> None:
    from spade_llm.errors import EmptyEpochs

    config = _config(epochs=10)
    run = _start(tmp_path / "run", config)
    with pytest.raises(EmptyEpochs) as stop:
        asyncio.run(_controller(run, config, lambda e: e >= 1).run_all())  # epoch 0 accepts, then nothing
    message = str(stop.value)
    assert message.startswith(
        "3 epochs in a row (epochs 1-3) accepted no task; the last 6 proposals were rejected: bad_json 6"
    )
    assert stop.value.epoch == 3
    assert [m["tasks_accepted"] for m in rows(run.path / "metrics.jsonl")] == [2, 0, 0, 0]
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert [(s["epoch"], s["reason"], s["detail"]) for s in manifest["stops"]] == [(3, "empty_epochs", message)]


def test_the_streak_is_in_a_row_and_an_accepting_epoch_starts_it_again(tmp_path: Path) -> None:
    config = _config(epochs=7)
    run = _start(tmp_path / "run", config)
    asyncio.run(_controller(run, config, lambda e: e in (0, 1, 3, 4, 6)).run_all())  # never 3 in a row
    assert len(rows(run.path / "metrics.jsonl")) == 7
    assert json.loads((run.path / "summary.json").read_text())["complete"] is True


@pytest.mark.parametrize(("epochs", "empty"), [(3, lambda e: True), (4, lambda e: e >= 1), (1, lambda e: True)])
def test_a_streak_that_ends_on_the_last_planned_epoch_finishes_the_run_with_a_warning(
    tmp_path: Path, epochs: int, empty: Callable[[int], bool]
) -> None:
    """All planned epochs ran: the run is complete (exit 0), its last row says the streak; before, it
    raised the stop (exit 5, ``complete: false``) with nothing left to run."""
    config = _config(epochs=epochs, limit=min(3, epochs))
    run = _start(tmp_path / "run", config)
    said: list[str] = []
    asyncio.run(_controller(run, config, empty, said).run_all())
    metrics = rows(run.path / "metrics.jsonl")
    assert len(metrics) == epochs
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["complete"] is True and "stopped_because" not in summary
    warning = [w for w in metrics[-1]["warnings"] if "accepted no task" in w]
    assert len(warning) == 1 and "bad_json" in warning[0] and "ends as planned" in warning[0]
    assert any(warning[0] in line for line in said)  # in the epoch's log line too
    assert all("accepted no task" not in w for m in metrics[:-1] for w in m["warnings"])
    assert _stops(run.path) == []


def test_a_longer_resume_of_a_run_that_ended_on_its_streak_gets_as_many_empty_epochs_again(tmp_path: Path) -> None:
    from spade_llm.errors import EmptyEpochs
    from spade_llm.store import RunDir

    config = _config(epochs=3)
    run = _start(tmp_path / "run", config)
    asyncio.run(_controller(run, config, lambda e: True).run_all())  # complete, with the warning
    run.unlock()
    longer = _config(epochs=10)
    with pytest.raises(EmptyEpochs) as stop:
        asyncio.run(_controller(RunDir.open_existing(run.path), longer, lambda e: True).run_all())
    assert stop.value.epoch == 5 and "(epochs 3-5)" in str(stop.value)
    assert _stops(run.path) == [2, 5]  # the streak the first run ended on is noted when the resume goes past it


def test_no_task_on_the_last_epoch_alone_warns_nothing_about_a_streak(tmp_path: Path) -> None:
    config = _config(epochs=4)
    run = _start(tmp_path / "run", config)
    asyncio.run(_controller(run, config, lambda e: e in (0, 1, 3)).run_all())  # 2 accepts: a streak of 1
    assert all("accepted no task" not in w for m in rows(run.path / "metrics.jsonl") for w in m["warnings"])


def test_max_empty_epochs_null_never_stops(tmp_path: Path) -> None:
    config = _config(epochs=6, limit=None)
    run = _start(tmp_path / "run", config)
    asyncio.run(_controller(run, config, lambda e: True).run_all())
    assert len(rows(run.path / "metrics.jsonl")) == 6


def test_the_pause_grows_after_each_empty_epoch_and_is_capped(tmp_path: Path, monkeypatch) -> None:
    import spade_llm.empty_epochs as empty_epochs_module

    monkeypatch.setattr(empty_epochs_module, "PAUSE_MAX_S", 0.05)
    config = _config(epochs=6, limit=None, pause=0.01)
    run = _start(tmp_path / "run", config)
    said: list[str] = []
    asyncio.run(_controller(run, config, lambda e: e != 2, said).run_all())  # epoch 2 accepts: the pause resets
    pauses = [line.rsplit(" in ", 1)[1] for line in said if "no task accepted" in line]
    assert pauses == ["0.01 s", "0.02 s", "0.01 s", "0.02 s"]  # after epochs 0; 0-1; 3; 3-4
    config = _config(epochs=6, limit=None, pause=0.02)
    said.clear()
    asyncio.run(_controller(_start(tmp_path / "capped", config), config, lambda e: True, said).run_all())
    assert [line.rsplit(" in ", 1)[1] for line in said if "no task accepted" in line] == [
        "0.02 s",
        "0.04 s",
        "0.05 s",
        "0.05 s",
        "0.05 s",
    ]


def test_the_pause_is_interrupted_by_a_stop_and_leaves_nothing_half_done(tmp_path: Path) -> None:
    config = _config(epochs=5, limit=None, pause=600.0)
    run = _start(tmp_path / "run", config)

    async def main() -> None:
        work = asyncio.ensure_future(_controller(run, config, lambda e: True).run_all())
        while not rows(run.path / "metrics.jsonl"):
            await asyncio.sleep(0.01)
        work.cancel()  # what Ctrl-C and serve-env's stop do to the run's main task
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(work, timeout=60)  # a liveness bound: the pause itself is 600 s

    asyncio.run(main())
    assert len(rows(run.path / "metrics.jsonl")) == 1


def test_the_pause_is_not_in_the_records(tmp_path: Path) -> None:
    written = {}
    for pause in (0.0, 0.01):
        config = _config(epochs=4, limit=None, pause=pause)
        run = _start(tmp_path / f"pause-{pause}", config)
        asyncio.run(_controller(run, config, lambda e: e in (1, 2)).run_all())
        written[pause] = records(run.path)
    assert written[0.0] == written[0.01]


def _play(path: Path, config: Any, empty: Callable[[int], bool], kill_at: int | None, partial: bool) -> int:
    """Run to the end, resuming after every stop (and after the kill at write ``kill_at``); the writes
    the first process made."""
    from spade_llm.errors import EmptyEpochs
    from spade_llm.store import RunDir

    class DyingAnywhere(DyingRunDir):
        """Dies at its ``kill_at``-th write, JSON files counted too: between an epoch's row and the
        manifest's note of the stop it caused, among others."""

        def write_json(self, name: str, data: Any) -> None:
            if not self.dead and self.appends == self.kill_at:
                self.dead = True
            if self.dead:
                raise Killed
            self.appends += 1
            RunDir.write_json(self, name, data)

    first = DyingAnywhere(path, kill_at if kill_at is not None else 10**9, partial)
    run: Any = _start(path, config, first)
    for _ in range(50):
        try:
            asyncio.run(_controller(run, config, empty).run_all())
            return first.appends
        except EmptyEpochs:
            continue  # resumed at once, by the same writer (its writes go on counting)
        except Killed:
            run = RunDir.open_existing(path)  # the partial last line cut, as a resume does
            run.unlock()
    raise AssertionError("the run never ended")


def _stops(path: Path) -> list[int]:
    manifest = path / "manifest.json"
    return [s["epoch"] for s in json.loads(manifest.read_text())["stops"]] if manifest.exists() else []


@pytest.mark.parametrize(
    ("pattern", "limit"),
    [("EEEEEEEE", 2), ("AEEEAEEE", 3)],  # E: an epoch that accepts nothing
)
def test_a_kill_at_every_write_gives_the_uninterrupted_stops_and_records(
    tmp_path: Path, pattern: str, limit: int
) -> None:
    """Every kill point, the write between an epoch's row and the manifest's note of its stop included."""
    config = _config(epochs=len(pattern), limit=limit)

    def empty(epoch: int) -> bool:
        return pattern[epoch] == "E"

    writes = _play(tmp_path / "whole", config, empty, None, False)
    for kill_at in range(writes):
        for partial in (False, True):
            where = tmp_path / f"killed-{kill_at}-{partial}"
            _play(where, config, empty, kill_at, partial)
            assert _stops(where) == _stops(tmp_path / "whole"), (kill_at, partial)
            assert records(where) == records(tmp_path / "whole"), (kill_at, partial)
            shutil.rmtree(where)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pattern=st.lists(st.booleans(), min_size=8, max_size=8),
    limit=st.sampled_from([1, 2, 3]),
    cut=st.floats(0, 1),
    partial=st.booleans(),
)
def test_killed_anywhere_the_stops_and_records_are_the_uninterrupted_runs(
    tmp_path_factory: pytest.TempPathFactory, pattern: list[bool], limit: int, cut: float, partial: bool
) -> None:
    """Where the run stops is a function of its records: a kill at any append (a row written, its stop
    not yet noted, included) and a resume give the same stops and the same records."""
    root = tmp_path_factory.mktemp("empty")
    config = _config(epochs=8, limit=limit)

    def empty(epoch: int) -> bool:
        return pattern[epoch]

    writes = _play(root / "whole", config, empty, None, False)
    _play(root / "killed", config, empty, int(cut * writes), partial)
    assert _stops(root / "killed") == _stops(root / "whole")
    assert records(root / "killed") == records(root / "whole")
    shutil.rmtree(root)


def test_the_error_pickles_with_its_epoch() -> None:
    import pickle

    from spade_llm.errors import EmptyEpochs

    again = pickle.loads(pickle.dumps(EmptyEpochs("3 epochs in a row", 7)))
    assert isinstance(again, EmptyEpochs) and str(again) == "3 epochs in a row" and again.epoch == 7
