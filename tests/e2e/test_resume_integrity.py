"""Resume checks a run directory before it trusts it (issue 24).

A finished epoch's line removed, a line duplicated, a line that is not a record: each is refused
(exit 2, naming the file, the epoch and what is missing, or FILE:LINE and the field), or, where
the record can be recomputed exactly (a ``task_stats`` row, the rejection of an answer that did not
parse), written back as the uninterrupted run wrote it. Every line of every journal is tried, on
small fake runs of a few seeds built once per module and copied per case; the torn last line a
kill leaves is still cut and resumed from.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import unavailable

from spade_llm.config import RunConfig, load_config
from spade_llm.controller import Controller
from spade_llm.episodes import RunState
from spade_llm.errors import UserError
from spade_llm.executors import WorkItem
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.generator import LLMGenerator
from spade_llm.llm.stats import LLMStats
from spade_llm.session import Session
from spade_llm.store import RunDir, read_run
from spade_llm.templates import Prompts
from spade_llm.types import Attempt, ExecutionResult, Task, Trajectory
from spade_llm.validation import ValidationReport

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("e2e.test_resume_integrity")

SEEDS = [2, 3]
"""fake/noisy runs whose epochs hold validation rejections and refusals (a whole request failed)."""
RUN_JOURNALS = [
    "tasks.jsonl",
    "rejected.jsonl",
    "trajectories.jsonl",
    "task_stats.jsonl",
    "metrics.jsonl",
    "plans.jsonl",
    "proposals.jsonl",
]
STUB_SALTS = [3, 6]
"""Stubbed loops whose epochs hold tasks and all three kinds of rejection."""
CHANGED = "changed after it was written"


BACKEND = "bwrap" if unavailable("bwrap") is None else "subprocess"


def _config(seed: int, epochs: int = 2) -> RunConfig:
    return load_config(
        None,
        {
            "seed": seed,
            "controller": {"epochs": epochs, "tasks_per_epoch": 6, "concurrency": 4},
            "solver": {"samples_per_task": 2},
            "generator": {"model": "fake/noisy"},
            "sandbox": {"backend": BACKEND, "test_timeout_s": 0.3},
        },
    )


class RecordingRunDir(RunDir):
    """A run directory that remembers its appends, in order: replayed, every prefix is a kill point."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends: list[tuple[str, list[dict[str, Any]]]] = []

    def append(self, journal: str, records: Any) -> None:
        records = list(records)
        self.appends.append((journal, json.loads(json.dumps(records))))
        super().append(journal, records)


APPENDS: dict[int, list[tuple[str, list[dict[str, Any]]]]] = {}
"""Seed -> the appends of its run in ``runs``, in order."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Per seed, a finished two-epoch run of the fake models (each case works on a copy)."""
    root = tmp_path_factory.mktemp("integrity")
    out = {}
    for seed in SEEDS:
        run = RecordingRunDir.create(root / f"run-{seed}")
        assert isinstance(run, RecordingRunDir)
        with Session(_config(seed)) as session:
            session.run(run, log=lambda _m: None)
        run.unlock()
        out[seed], APPENDS[seed] = run.path, run.appends
    return out


@pytest.fixture(scope="module")
def solved(runs: dict[int, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished ``spade solve`` of the first run's tasks, two samples each."""
    path = tmp_path_factory.mktemp("integrity-solve") / "solve"
    tasks = [Task.model_validate(json.loads(x)) for x in (runs[SEEDS[0]] / "tasks.jsonl").read_text().splitlines()]
    config = load_config(
        None,
        {"seed": 5, "solver": {"model": "fake/default", "samples_per_task": 2}, "sandbox": {"backend": BACKEND}},
    )
    run = RunDir.create(path)
    with Session(config, need_generator=False) as session:
        session.solve(tasks, run, log=lambda _m: None)
    run.unlock()
    return path


def lines(path: Path, journal: str) -> list[str]:
    return (path / journal).read_text(encoding="utf-8").splitlines(keepends=True)


def damaged(src: Path, dst: Path, journal: str, edit: Callable[[list[str]], list[str]]) -> Path:
    """A copy of the run ``src`` at ``dst`` with ``journal``'s lines edited."""
    shutil.copytree(src, dst)
    (dst / journal).write_text("".join(edit(lines(dst, journal))), encoding="utf-8")
    return dst


def drop(i: int) -> Callable[[list[str]], list[str]]:
    """An edit that removes line ``i`` (0-based)."""
    return lambda xs: xs[:i] + xs[i + 1 :]


def repeat(i: int) -> Callable[[list[str]], list[str]]:
    """An edit that writes line ``i`` twice."""
    return lambda xs: xs[: i + 1] + xs[i:]


def put(i: int, text: str) -> Callable[[list[str]], list[str]]:
    """An edit that replaces line ``i`` with ``text``."""
    return lambda xs: [*xs[:i], text, *xs[i + 1 :]]


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file() and p.name != ".lock"}


def load(path: Path) -> RunState:
    """What a resume reads first: the directory reopened (torn lines cut), then its records."""
    run = RunDir.open_existing(path)
    try:
        return RunState.load(run)
    finally:
        run.unlock()


def refused(path: Path) -> str:
    """The one-line error a resume of ``path`` stops with; the directory is left as it was."""
    before = snapshot(path)
    with pytest.raises(UserError) as e:
        load(path)
    assert snapshot(path) == before, "a refused resume changed the run directory"
    message = str(e.value)
    assert "\n" not in message and "pydantic" not in message, message
    return message


def record(line: str) -> dict[str, Any]:
    return json.loads(line)


def task_epochs(path: Path) -> dict[str, int]:
    return {record(x)["task_id"]: record(x)["meta"]["epoch"] for x in lines(path, "tasks.jsonl")}


def is_parse_rejection(row: dict[str, Any]) -> bool:
    """Whether a rejection came from the answer alone (the request failed, or a candidate did not
    parse): what resume can derive again from ``proposals.jsonl``."""
    return row["position"] is None or row["task_id"] is None


# -- a line removed from a finished epoch ---------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_every_removed_task_line_is_refused_naming_the_epoch_and_the_task(runs, tmp_path, seed):
    src = runs[seed]
    epochs = task_epochs(src)
    for i, line in enumerate(lines(src, "tasks.jsonl")):
        task_id = record(line)["task_id"]
        path = damaged(src, tmp_path / f"cut-{i}", "tasks.jsonl", drop(i))
        message = refused(path)
        assert message.startswith(f"{path / 'tasks.jsonl'}: epoch {epochs[task_id]} has "), message
        assert f"(missing {task_id})" in message and CHANGED in message, message


@pytest.mark.parametrize("seed", SEEDS)
def test_every_removed_trajectory_line_is_refused_naming_its_task(runs, tmp_path, seed):
    src = runs[seed]
    epochs = task_epochs(src)
    for i, line in enumerate(lines(src, "trajectories.jsonl")):
        row = record(line)
        path = damaged(src, tmp_path / f"cut-{i}", "trajectories.jsonl", drop(i))
        message = refused(path)
        assert message.startswith(
            f"{path / 'trajectories.jsonl'}: task {row['task_id']} (epoch {epochs[row['task_id']]})"
        )
        assert "has 1 trajectory" in message and "says 2" in message and CHANGED in message, message


def test_every_removed_rejection_is_rewritten_exactly_or_refused(runs, tmp_path):
    """A rejection of an answer that did not parse is derived again from its ``proposals.jsonl`` row,
    by the code that first wrote it, and put back at its line; one the sandbox decided is refused."""
    kinds = {"rewritten": 0, "refused": 0}
    for seed in SEEDS:
        src = runs[seed]
        original = (src / "rejected.jsonl").read_bytes()
        for i, line in enumerate(lines(src, "rejected.jsonl")):
            row = record(line)
            path = damaged(src, tmp_path / f"{seed}-cut-{i}", "rejected.jsonl", drop(i))
            if is_parse_rejection(row):
                kinds["rewritten"] += 1
                state = load(path)
                assert (path / "rejected.jsonl").read_bytes() == original
                every = [record(x) for x in lines(src, "rejected.jsonl")]
                assert state.tally.reasons == Counter(r["reason"] for r in every)  # what summary.json counts
                held = len(state.metrics) - 2  # those the next plans may read: the last two finished epochs' on
                assert [r.model_dump(mode="json") for r in state.rejected] == [r for r in every if r["epoch"] >= held]
            else:
                kinds["refused"] += 1
                message = refused(path)
                assert message.startswith(f"{path / 'rejected.jsonl'}: epoch {row['epoch']} has "), message
                assert f"for {row['reason']!r}" in message and row["task_id"] in message, message
    assert kinds["rewritten"] and kinds["refused"], kinds  # both branches were tried


@pytest.mark.parametrize("seed", SEEDS)
def test_every_removed_task_stats_row_is_recomputed_exactly(runs, tmp_path, seed):
    src = runs[seed]
    original = sorted(lines(src, "task_stats.jsonl"))
    expected = {r["task_id"]: r for r in map(record, original)}
    for i in range(len(original)):
        path = damaged(src, tmp_path / f"cut-{i}", "task_stats.jsonl", drop(i))
        state = load(path)
        assert sorted(lines(path, "task_stats.jsonl")) == original  # written back, byte for byte
        # held as the loop holds a finished epoch's rows: their counts
        assert {k: tuple(v) for k, v in state.measured.items()} == {
            k: (r["epoch"], r["samples"], r["pass_rate"]) for k, r in expected.items()
        }


# -- a line duplicated, a line that is not a record -------------------------------------------------------


@pytest.mark.parametrize("journal", RUN_JOURNALS)
def test_every_duplicated_line_is_refused_with_its_line(runs, tmp_path, journal):
    for seed in SEEDS:
        src = runs[seed]
        for i in range(len(lines(src, journal))):
            path = damaged(src, tmp_path / f"{seed}-dup-{i}", journal, repeat(i))
            message = refused(path)
            assert message.startswith(f"{path / journal}:{i + 2}: "), message
            assert f"(first at line {i + 1}): a line duplicated" in message and CHANGED in message, message


NOT_RECORDS = {
    "an object of no journal": '{"bogus": 1}\n',
    "a field of the wrong type": '{"task_id": 5, "epoch": "one"}\n',
}


@pytest.mark.parametrize("journal", RUN_JOURNALS)
@pytest.mark.parametrize("junk", list(NOT_RECORDS), ids=list(NOT_RECORDS))
def test_a_line_that_is_not_a_record_is_refused_with_file_line_and_field(runs, tmp_path, journal, junk):
    src = runs[SEEDS[0]]
    other = "metrics.jsonl" if journal != "metrics.jsonl" else "tasks.jsonl"
    for i in range(len(lines(src, journal))):
        for what, bad in ((junk, NOT_RECORDS[junk]), ("a record of another journal", lines(src, other)[0])):
            path = damaged(src, tmp_path / f"bad-{i}-{what[:8]}", journal, put(i, bad))
            message = refused(path)
            head, _, field = message.partition(": not a ")
            assert head == f"{path / journal}:{i + 1}", message
            # the field pydantic names, then its complaint
            assert ": " in field and "repair that line" in field, message
            shutil.rmtree(path)


def test_a_line_that_is_not_a_record_is_named_before_any_count(runs, tmp_path):
    src = runs[SEEDS[0]]
    path = damaged(src, tmp_path / "both", "tasks.jsonl", lambda xs: xs[1:])  # a count mismatch...
    last = len(lines(path, "proposals.jsonl"))
    (path / "proposals.jsonl").write_text("".join([*lines(path, "proposals.jsonl")[:-1], '{"epoch": 0}\n']))
    message = refused(path)  # ...and, in the last file read, a line that is not a record
    assert message.startswith(f"{path / 'proposals.jsonl'}:{last}: not a proposals row: request_index: "), message


@pytest.mark.parametrize("value", ["[1, 2]", '"text"', "7", "null"])
def test_valid_json_that_is_not_an_object_is_refused_with_file_line(runs, tmp_path, value):
    src = runs[SEEDS[0]]
    for journal in ("tasks.jsonl", "trajectories.jsonl", "rejected.jsonl", "task_stats.jsonl"):
        path = damaged(src, tmp_path / journal, journal, lambda xs: [*xs[:1], value + "\n", *xs[1:]])
        assert refused(path) == f"{path / journal}:2: damaged record (not a JSON object); repair or remove that line"


def test_a_torn_last_line_is_still_cut_and_the_run_reads_as_before(runs, tmp_path):
    src = runs[SEEDS[0]]
    path = tmp_path / "torn"
    shutil.copytree(src, path)
    for journal in RUN_JOURNALS:  # a kill half-way through each file's next line
        with open(path / journal, "a", encoding="utf-8") as f:
            f.write(lines(src, journal)[-1][:40])
    state = load(path)
    assert snapshot(path) == snapshot(src)
    assert [t.task_id for t in state.tasks] == [record(x)["task_id"] for x in lines(src, "tasks.jsonl")]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_kill_point_reads_back_with_nothing_to_refuse_or_repair(runs, tmp_path, seed):
    """No false alarm: the directory as a SIGKILL leaves it after any append (and half-way through
    the next) is read back as it is, with nothing refused and nothing written."""
    src, appends = runs[seed], APPENDS[seed]
    assert len(appends) > 40
    for k in range(len(appends) + 1):
        for torn in (False, True):
            if torn and k == len(appends):
                continue
            path = tmp_path / f"kill-{k}-{torn}"
            path.mkdir()
            for name in ("config.yaml", "manifest.json"):
                shutil.copy(src / name, path / name)
            for journal in RUN_JOURNALS:
                (path / journal).touch()
            for journal, records in appends[:k]:
                with open(path / journal, "a", encoding="utf-8") as f:
                    f.writelines(json.dumps(r) + "\n" for r in records)
            whole = snapshot(path)
            if torn:
                journal, records = appends[k]
                with open(path / journal, "a", encoding="utf-8") as f:
                    f.write(json.dumps(records[0])[:30])
            load(path)
            assert snapshot(path) == whole, f"reading the kill point after append {k} changed the directory"
            shutil.rmtree(path)


# -- the epoch still running: its decisions are a prefix of its candidates ---------------------------------


def _running(src: Path, dst: Path) -> Path:
    """``src`` as if killed in epoch 1 after its last decision: epoch 1's metrics row removed."""
    return damaged(src, dst, "metrics.jsonl", lambda xs: xs[:1])


def _decisions(path: Path, epoch: int) -> list[tuple[tuple[int, int], str, dict[str, Any]]]:
    """(decision key, journal, record) of ``epoch``'s tasks and rejections, in decision order."""
    out = []
    for x in lines(path, "tasks.jsonl"):
        t = record(x)
        if t["meta"]["epoch"] == epoch:
            out.append(((t["meta"]["request_index"], t["meta"]["position"]), "tasks.jsonl", t))
    for x in lines(path, "rejected.jsonl"):
        r = record(x)
        if r["epoch"] == epoch:
            out.append(((r["request_index"], -1 if r["position"] is None else r["position"]), "rejected.jsonl", r))
    return sorted(out, key=lambda d: d[0])


def _without(path: Path, journal: str, row: dict[str, Any]) -> None:
    """Remove ``row`` (a task: with its episodes and stats row) from the run at ``path``."""
    dropped = {journal: [row]}
    if journal == "tasks.jsonl":
        for name in ("trajectories.jsonl", "task_stats.jsonl"):
            dropped[name] = [record(x) for x in lines(path, name) if record(x)["task_id"] == row["task_id"]]
    for name, rows in dropped.items():
        kept = [x for x in lines(path, name) if record(x) not in rows]
        (path / name).write_text("".join(kept), encoding="utf-8")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_running_epochs_last_decision_lost_is_a_kill_but_a_gap_is_refused(runs, tmp_path, seed):
    src = runs[seed]
    decisions = _decisions(src, 1)
    # the last decision gone with all that followed it: what a kill just before it leaves
    path = _running(src, tmp_path / "last")
    _without(path, decisions[-1][1], decisions[-1][2])
    load(path)
    # any decision before the last gone (a task with its episodes, so only the order can tell)
    gaps = [d for d in decisions[:-1] if d[1] == "tasks.jsonl" or not is_parse_rejection(d[2])]
    assert gaps
    for n, (key, journal, row) in enumerate(gaps):
        path = _running(src, tmp_path / f"gap-{n}")
        _without(path, journal, row)
        message = refused(path)
        assert f"epoch 1 has no decision for request {key[0]} position {key[1]}" in message, message
        assert "later candidates are decided" in message and CHANGED in message, message


def test_a_missing_metrics_row_before_the_last_is_refused(runs, tmp_path):
    src = runs[SEEDS[0]]
    path = damaged(src, tmp_path / "m", "metrics.jsonl", lambda xs: xs[1:])
    assert refused(path).startswith(f"{path / 'metrics.jsonl'}:1: the row of epoch 1 where epoch 0's belongs")


def test_a_finished_epochs_lost_plan_or_answer_is_refused(runs, tmp_path):
    src = runs[SEEDS[0]]
    path = damaged(src, tmp_path / "plan", "plans.jsonl", lambda xs: xs[1:])
    assert refused(path).startswith(f"{path / 'plans.jsonl'}: no plan for epoch 0, which finished (metrics.jsonl:1)")
    for i, line in enumerate(lines(src, "proposals.jsonl")):
        row = record(line)
        path = damaged(src, tmp_path / f"answer-{i}", "proposals.jsonl", drop(i))
        message = refused(path)
        assert message.startswith(f"{path / 'proposals.jsonl'}: "), message
        assert f"epoch {row['epoch']}" in message and CHANGED in message, message


def test_a_run_that_kept_no_answers_is_still_held_to_its_counts(runs, tmp_path):
    """An older spade kept no plans or answers: its epochs have no decision order to check, only counts."""
    src = runs[SEEDS[0]]
    path = tmp_path / "old"
    shutil.copytree(src, path)
    for journal in ("plans.jsonl", "proposals.jsonl"):
        (path / journal).unlink()
    load(path)
    damaged(path, tmp_path / "old-cut", "tasks.jsonl", drop(0))
    message = refused(tmp_path / "old-cut")
    assert message.startswith(f"{tmp_path / 'old-cut' / 'tasks.jsonl'}: epoch 0 has "), message


# -- candidates that did not parse: a stubbed loop, so every kind of rejection is there ---------------------


def _code(key: str) -> str:
    names = ["abs", "len", "min", "max", "sum", "sorted", "list", "tuple", "str", "int", "float", "set", "round"]
    h = hashlib.sha256(key.encode()).digest()
    chain = [names[b % len(names)] for b in h[:6]]
    return "def f(x):\n    return " + "(".join(chain) + "(x" + ")" * len(chain) + "\n"


def _answers(salt: int) -> Callable[[Any], str]:
    """Per request: broken JSON (the request fails), or a task and an item that is not one."""

    def answer(request: Any) -> str:
        meta = request.metadata
        key = f"{salt}-{meta['epoch']}-{meta['request_index']}"
        if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3 == 0:
            return '{"tasks": [{"description": "cut'
        task = {
            "description": f"task {key}",
            "entry_point": "f",
            "reference_code": _code(key),
            "tests": [{"input": f"({j},)", "expected": j} for j in range(4)],
        }
        return json.dumps({"tasks": [task, {"description": 5, "tests": "none"}]})

    return answer


class _Checker:
    """Rejects about half the tasks (as a sandbox would, by its own judgement), passes the rest."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay, self.calls = delay, 0

    async def validate(self, task: Task) -> ValidationReport:
        self.calls += 1
        await asyncio.sleep(self.delay * self.calls)  # each one slower: a budget cuts the last ones
        if int(hashlib.sha256(task.task_id.encode()).hexdigest(), 16) % 2 == 0:
            return ValidationReport(task.task_id, False, "weak_tests", "no mutant killed", "passed", 4, 4, task)
        return ValidationReport(task.task_id, True, None, "", "passed", 4, 4, task)


class _Executor:
    def __init__(self, delay: float = 0.0) -> None:
        self.slots, self.delay = (1 if delay else 4), delay

    async def run(self, item: WorkItem) -> Trajectory:
        await asyncio.sleep(self.delay)
        passed = int(hashlib.sha256(f"{item.task.task_id}:{item.sample_index}".encode()).hexdigest(), 16) % 2 == 0
        return Trajectory(
            trajectory_id=f"{item.task.task_id}-{item.sample_index}",
            task_id=item.task.task_id,
            epoch=item.epoch,
            sample_index=item.sample_index,
            messages=[],
            attempts=[Attempt(turn=1, code="x", result=ExecutionResult(status="ok", tests_passed=4, tests_total=4))],
            final_status="passed" if passed else "failed",
            reward=1.0 if passed else 0.0,
        )


def _stubbed_run(path: Path, salt: int, epochs: int = 2, delay: float = 0.0, **controller: Any) -> Path:
    """A run of the stubbed loop at ``path`` (resumed if it exists); ``delay``: each validation and
    episode takes that long, one episode at a time."""
    config = load_config(
        None,
        {
            "seed": salt,
            "controller": {"epochs": epochs, "tasks_per_epoch": 8, "proposals_per_request": 2, **controller},
            "solver": {"samples_per_task": 2},
        },
    )
    run = RunDir.open_existing(path) if path.exists() else RunDir.create(path)
    run.touch_journals()
    run.write_yaml("config.yaml", {"seed": salt})
    stats = LLMStats()
    generator = LLMGenerator(
        FunctionLLM(_answers(salt)), Prompts(), temperature=0.5, max_tokens=100, stats=stats.view("generator")
    )
    ctl = Controller(config, run, generator, _Executor(delay), _Checker(delay), stats, log=lambda _m: None)
    asyncio.run(ctl.run_all())
    run.unlock()
    return path


@pytest.fixture(scope="module")
def stubbed(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("integrity-stub")
    return {salt: _stubbed_run(root / f"run-{salt}", salt) for salt in STUB_SALTS}


@pytest.mark.parametrize("salt", STUB_SALTS)
def test_every_kind_of_rejection_removed_is_rewritten_exactly_or_refused(stubbed, tmp_path, salt):
    src = stubbed[salt]
    original = (src / "rejected.jsonl").read_bytes()
    rows = [record(x) for x in lines(src, "rejected.jsonl")]
    reasons = {r["reason"] for r in rows}
    assert {"bad_json", "invalid_task", "weak_tests"} <= reasons  # a failed request, an item, a sandbox verdict
    for i, row in enumerate(rows):
        path = damaged(src, tmp_path / f"cut-{i}", "rejected.jsonl", drop(i))
        if row["reason"] in ("bad_json", "invalid_task"):
            load(path)
            assert (path / "rejected.jsonl").read_bytes() == original, f"rejection {i} ({row['reason']})"
        else:
            message = refused(path)
            assert message.startswith(f"{path / 'rejected.jsonl'}: epoch {row['epoch']} has "), message
    # several lost at once, across both epochs: all put back in place
    parse = [i for i, r in enumerate(rows) if r["reason"] != "weak_tests"]
    path = damaged(src, tmp_path / "all", "rejected.jsonl", lambda xs: [x for i, x in enumerate(xs) if i not in parse])
    load(path)
    assert (path / "rejected.jsonl").read_bytes() == original


def test_a_run_an_epoch_budget_cut_short_reads_back_and_resumes(tmp_path):
    """No false alarm: requests left undecided and samples left unrun by a budget are what its
    metrics say, and the epoch after it resumes."""
    path = _stubbed_run(tmp_path / "run", 6, epochs=2, delay=0.06, epoch_budget_s=0.25, concurrency=1)
    metrics = [record(x) for x in lines(path, "metrics.jsonl")]
    warnings = [w for m in metrics for w in m["warnings"]]
    assert any("not decided" in w or "during validation" in w for w in warnings), warnings
    assert any("not run" in w for w in warnings), warnings
    load(path)
    _stubbed_run(path, 6, epochs=3, delay=0.06, epoch_budget_s=0.25, concurrency=1)
    assert len(load(path).metrics) == 3


# -- spade solve --resume ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def solve_session() -> Any:
    config = load_config(
        None,
        {"seed": 5, "solver": {"model": "fake/default", "samples_per_task": 2}, "sandbox": {"backend": BACKEND}},
    )
    with Session(config, need_generator=False) as session:
        yield session


def _resume_solve(session: Session, path: Path) -> None:
    run = RunDir.open_existing(path)
    try:
        tasks = read_run(path).tasks
        session.solve(tasks, run, resumed=True, log=lambda _m: None)
    finally:
        run.unlock()


def test_solve_refuses_a_removed_or_repeated_line(solved, solve_session, tmp_path):
    for journal in ("tasks.jsonl", "trajectories.jsonl", "task_stats.jsonl"):
        for i, line in enumerate(lines(solved, journal)):
            task_id = record(line)["task_id"]
            for how, edit in (
                ("cut", drop(i)),
                ("dup", repeat(i)),
            ):
                path = damaged(solved, tmp_path / f"{journal}-{how}-{i}", journal, edit)
                if how == "cut" and journal == "task_stats.jsonl":  # recomputed from the episodes, as after a kill
                    _resume_solve(solve_session, path)
                    assert sorted(lines(path, journal)) == sorted(lines(solved, journal))
                    continue
                before = snapshot(path)
                with pytest.raises(UserError) as e:
                    _resume_solve(solve_session, path)
                assert snapshot(path) == before
                message = str(e.value)
                assert task_id in message and CHANGED in message, message
                if how == "dup":
                    assert message.startswith(f"{path / journal}:{i + 2}: "), message


def test_solve_killed_before_a_tasks_last_episode_resumes_it(solved, solve_session, tmp_path):
    """No false alarm: a task's last episodes lost with its stats row (written after them) and the
    summary (written at the end) is a kill."""
    path = tmp_path / "killed"
    shutil.copytree(solved, path)
    (path / "summary.json").unlink()
    last = record(lines(solved, "trajectories.jsonl")[-1])["task_id"]
    for journal in ("trajectories.jsonl", "task_stats.jsonl"):
        kept = [x for x in lines(path, journal) if record(x)["task_id"] != last]
        (path / journal).write_text("".join(kept), encoding="utf-8")
    _resume_solve(solve_session, path)
    assert sorted(lines(path, "task_stats.jsonl")) == sorted(lines(solved, "task_stats.jsonl"))
    assert len(lines(path, "trajectories.jsonl")) == len(lines(solved, "trajectories.jsonl"))


def test_solve_names_a_line_that_is_not_a_record(solved, solve_session, tmp_path):
    for journal in ("tasks.jsonl", "trajectories.jsonl", "task_stats.jsonl"):
        path = damaged(solved, tmp_path / journal, journal, lambda xs: [xs[0], '{"task_id": 5}\n', *xs[2:]])
        with pytest.raises(UserError, match=rf"^{path / journal}:2: not a [a-z_ ]+: [a-z_]+: [A-Z]"):
            _resume_solve(solve_session, path)


# -- the CLI: exit 2, one line, nothing touched; an exact repair resumes ------------------------------------


def _spade(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "spade_llm.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.e2e
@pytest.mark.slow
def test_cli_resume_refuses_a_damaged_run_and_leaves_it_untouched(runs, solved, tmp_path):
    src = runs[SEEDS[0]]
    cases = [
        ("run", src, "tasks.jsonl", lambda xs: xs[1:], "tasks.jsonl: epoch 0 has "),
        (
            "run",
            src,
            "tasks.jsonl",
            lambda xs: [xs[0], '{"task_id": 5}\n', *xs[2:]],
            "tasks.jsonl:2: not a task: task_id: ",
        ),
        (
            "solve",
            solved,
            "tasks.jsonl",
            lambda xs: [xs[0], '{"task_id": 5}\n', *xs[2:]],
            "tasks.jsonl:2: not a task: task_id: ",
        ),
        ("solve", solved, "trajectories.jsonl", lambda xs: xs[1:], "trajectories.jsonl: task "),
        ("solve", solved, "tasks.jsonl", lambda xs: xs[:1] + xs, "tasks.jsonl:2: task "),
    ]
    for n, (command, base, journal, edit, says) in enumerate(cases):
        path = damaged(base, tmp_path / f"{command}-{n}", journal, edit)
        before = snapshot(path)
        result = _spade(command, "--resume", str(path), *(["--quiet"] if command == "run" else []))
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"spade {command}: error: {path / says}"), result.stderr
        assert result.stderr.count("\n") == 1 and "pydantic" not in result.stderr, result.stderr
        assert snapshot(path) == before, f"{command} --resume changed {path}"


@pytest.mark.e2e
def test_cli_resume_rewrites_exact_records_and_goes_on(runs, tmp_path):
    src = runs[SEEDS[0]]
    rejected = [record(x) for x in lines(src, "rejected.jsonl")]
    parse = next(i for i, r in enumerate(rejected) if is_parse_rejection(r))
    path = damaged(src, tmp_path / "run", "task_stats.jsonl", lambda xs: xs[2:])
    (path / "rejected.jsonl").write_text("".join(x for i, x in enumerate(lines(src, "rejected.jsonl")) if i != parse))
    result = _spade("run", "--resume", str(path), "--quiet")
    assert result.returncode == 0, result.stderr
    for journal in ("tasks.jsonl", "rejected.jsonl", "trajectories.jsonl", "metrics.jsonl", "proposals.jsonl"):
        assert lines(path, journal) == lines(src, journal), journal
    assert sorted(lines(path, "task_stats.jsonl")) == sorted(lines(src, "task_stats.jsonl"))
