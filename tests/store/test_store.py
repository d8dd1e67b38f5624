import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.errors import UserError
from spade_llm.store import TASKS, RunDir, read_jsonl, read_run, scrub_secrets


def test_append_whole_lines_and_cut_partial_on_resume(tmp_path):
    run = RunDir.create(tmp_path / "r")
    run.write_yaml("config.yaml", {"seed": 1})
    run.append(TASKS, [{"a": 1}, {"a": 2}])
    with open(tmp_path / "r" / TASKS, "a") as f:
        f.write('{"a": 3, "tru')  # a kill in the middle of a line
    assert [r["a"] for r in read_jsonl(tmp_path / "r" / TASKS)] == [1, 2]
    with pytest.raises(UserError, match=f"in use by another spade process \\(pid {os.getpid()}\\)"):
        RunDir.open_existing(tmp_path / "r")  # one writer: the first still holds the directory
    assert (tmp_path / "r" / TASKS).read_text().endswith('"tru')  # and nothing was repaired under it
    run.unlock()
    again = RunDir.open_existing(tmp_path / "r")
    again.append(TASKS, [{"a": 4}])
    lines = (tmp_path / "r" / TASKS).read_text().splitlines()
    assert [json.loads(x)["a"] for x in lines] == [1, 2, 4]


def test_refuses_non_empty_out_and_non_run_resume(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(UserError, match="not empty"):
        RunDir.create(tmp_path / "full")
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    with pytest.raises(UserError, match="not a run directory"):
        RunDir.open_existing(tmp_path / "full")


def test_new_run_dirs_do_not_collide(tmp_path):
    a = RunDir.create(None, tmp_path)
    b = RunDir.create(None, tmp_path)
    assert a.path != b.path and a.path.is_dir() and b.path.is_dir()


def test_scrub_secrets():
    data = {
        "api_base": "http://user:pw@host:8000/v1",
        "api_key": "sk-x",
        "nested": [{"token": "t"}],
        "n": 3,
        "max_tokens": 5,
    }
    out = scrub_secrets(data)
    assert out == {
        "api_base": "http://host:8000/v1",
        "api_key": "***",
        "nested": [{"token": "***"}],
        "n": 3,
        "max_tokens": 5,
    }


def test_read_numbered_counts_every_line_and_names_a_damaged_one(tmp_path):
    from spade_llm.store import read_numbered

    path = tmp_path / "j.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3, "tr')  # a blank line, then a torn last line
    assert list(read_numbered(path)) == [(1, {"a": 1}), (3, {"a": 2})]
    path.write_text('{"a": 1}\n[1]\n')
    with pytest.raises(UserError, match=r"j\.jsonl:2: damaged record \(not a JSON object\)"):
        list(read_numbered(path))


def test_read_run_names_a_line_that_is_not_a_record_of_its_journal(tmp_path):
    run = RunDir.create(tmp_path / "r")
    run.write_yaml("config.yaml", {})
    run.append(TASKS, [{"task_id": "t", "description": "d", "entry_point": "f", "reference_code": "", "tests": []}])
    assert [t.task_id for t in read_run(run.path).tasks] == ["t"]
    run.append(TASKS, [{"task_id": 5}])
    with pytest.raises(
        UserError, match=rf"^{tmp_path / 'r' / TASKS}:2: not a task: task_id: Input should be a valid string"
    ):
        read_run(run.path)
    tolerant = read_run(run.path, tolerant=True)  # the report's reading: the line skipped and counted
    assert [t.task_id for t in tolerant.tasks] == ["t"] and tolerant.damaged == {TASKS: 1}


def test_insert_puts_records_back_before_their_lines_in_one_replace(tmp_path):
    run = RunDir.create(tmp_path / "r")
    run.append("j.jsonl", [{"n": 1}, {"n": 3}, {"text": "a\u2028b"}])  # a line separator inside a string
    run.insert("j.jsonl", [(2, {"n": 2}), (99, {"n": 4}), (99, {"n": 5}), (1, {"n": 0})])
    assert [json.loads(x) for x in (tmp_path / "r" / "j.jsonl").read_text().split("\n")[:-1]] == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
        {"n": 3},
        {"text": "a\u2028b"},
        {"n": 4},
        {"n": 5},
    ]
    assert not list((tmp_path / "r").glob(".*.tmp"))


def test_a_stop_is_noted_once_in_the_manifest_and_kept_by_what_else_writes_it(tmp_path):
    run = RunDir.create(tmp_path / "run")
    run.write_json("manifest.json", {"command": "run", "resumes": []})
    assert run.stopped_after("empty_epochs") == -1
    run.note_stop(2, "empty_epochs", "3 epochs in a row")
    run.note_stop(2, "empty_epochs", "again")  # the same stop noted twice (a resume after a kill): once
    run.note_llm({"generator": ["json_schema"]}, {})
    run.note_stop(5, "empty_epochs", "3 more")
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert [(s["epoch"], s["detail"]) for s in manifest["stops"]] == [(2, "3 epochs in a row"), (5, "3 more")]
    assert manifest["command"] == "run" and manifest["llm_fallbacks"] == {"generator": ["json_schema"]}
    assert run.stopped_after("empty_epochs") == 5 and run.stopped_after("other") == -1
    assert "model_servers" not in manifest  # no server said anything: nothing written
    # what the servers said: a resumed run's join the earlier session's, each identity once
    url = "http://127.0.0.1:8000/v1"
    run.note_llm({}, {"solver": {url: [{"model": "a"}]}})
    run.note_llm({}, {"solver": {url: [{"model": "a"}, {"model": "b"}]}, "generator": {url: [{"model": "g"}]}})
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["model_servers"] == {
        "solver": {url: [{"model": "a"}, {"model": "b"}]},
        "generator": {url: [{"model": "g"}]},
    }
    assert manifest["llm_fallbacks"] == {"generator": ["json_schema"]} and len(manifest["stops"]) == 2
    (run.path / "manifest.json").write_text("{not json")  # a damaged manifest: no stop known, none lost later
    assert run.stopped_after("empty_epochs") == -1


def test_resume_cuts_a_partial_line_without_reading_the_journal_whole(tmp_path):
    """A run of a million trajectories has a 6.6 GB journal: resume read each journal whole to look at its
    last byte, so its memory was the run's size before a record was read."""
    import tracemalloc

    run = RunDir.create(tmp_path / "r")
    run.write_yaml("config.yaml", {"seed": 1})
    line = json.dumps({"pad": "x" * 1000}) + "\n"
    with open(tmp_path / "r" / TASKS, "w") as f:
        f.write(line * 40_000 + '{"a": 3, "tru')  # 40 MB, and a kill in the middle of a line
    run.unlock()
    tracemalloc.start()
    try:
        RunDir.open_existing(tmp_path / "r").unlock()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, peak
    data = (tmp_path / "r" / TASKS).read_bytes()
    assert data == (line * 40_000).encode()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6), st.binary(max_size=90),
       st.integers(1, 17))  # fmt: skip
def test_a_partial_last_line_is_cut_whatever_its_length(tmp_path_factory, lines, tail, block):
    """Only the bytes after the last newline go (all of them when there is none), read back a block at a time."""
    from spade_llm.store import rundir

    path = tmp_path_factory.mktemp("cut") / TASKS
    data = b"".join(line + b"\n" for line in lines) + tail
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rundir, "CUT_BLOCK", block)
        RunDir._cut_partial_line(path)
    assert path.read_bytes() == data[: data.rfind(b"\n") + 1]


def test_append_record_gives_the_offset_its_line_is_read_back_from(tmp_path):
    from spade_llm.store import record_at

    run = RunDir.create(tmp_path / "r")
    run.write_yaml("config.yaml", {"seed": 1})
    blank = {"pass_rate": None, "first_try_pass_rate": None, "mean_turns": None, "mean_reward": None}
    rows: list[dict[str, object]] = [
        {"epoch": e, "difficulty": 0.3 + e / 10, "tasks_proposed": e, "tasks_accepted": 0, "rejected_by_reason": {},
         "novelty": 1.0, **blank}
        for e in range(4)
    ]  # fmt: skip
    offsets = [run.append_record("metrics.jsonl", row) for row in rows]
    assert offsets[0] == 0 and offsets == sorted(set(offsets))
    assert [record_at(run.path, "metrics.jsonl", o).model_dump(include=set(rows[0])) for o in offsets] == rows


def test_metrics_rows_hold_the_latest_whole_and_read_the_others_back(tmp_path, monkeypatch):
    """A loop's metrics rows: every row answers as written, past the few held whole too, and a prefix
    (``before``) is a view of the first ones, in epoch order."""
    from spade_llm.store import MetricsRows, records
    from spade_llm.types import EpochMetrics

    monkeypatch.setattr(records, "KEPT_ROWS", 2)
    run = RunDir.create(tmp_path / "r")
    run.write_yaml("config.yaml", {"seed": 1})
    made = [
        EpochMetrics(epoch=e, difficulty=e / 10, pass_rate=None, first_try_pass_rate=None, mean_turns=None,
                     tasks_proposed=e, tasks_accepted=0, rejected_by_reason={}, novelty=1.0, mean_reward=None)
        for e in range(7)
    ]  # fmt: skip
    rows, unplaced = MetricsRows(run.path), MetricsRows()
    for row in made:
        rows.append(row, run.append_record("metrics.jsonl", row.model_dump(mode="json")))
        unplaced.append(row)  # no run to read from: every row held
    for held in (rows, unplaced):
        assert len(held) == 7 and list(held) == made and held[-1] == made[-1] and held[-7] == made[0]
        assert held[1:4] == made[1:4] and list(reversed(held)) == made[::-1]
        assert list(held.before(3)) == made[:3] and held.before(3)[-1] == made[2] and len(held.before(99)) == 7
        assert list(held.difficulties) == [m.difficulty for m in made]
        with pytest.raises(IndexError):
            held[7]
        with pytest.raises(IndexError):
            held.before(3)[3]
    (run.path / "metrics.jsonl").write_text("")  # the rows read back come from the file, the latest two do not
    with pytest.raises(UserError):
        rows[0]
    assert rows[-1] == made[-1] and unplaced[0] == made[0]
