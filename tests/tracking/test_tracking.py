"""``tracking: [tensorboard, mlflow, wandb]``: a fake run's metrics written by each tool and read back by each
tool's own reader; a resumed run logs into the same tool runs, each epoch once; no secret reaches them."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from builders import small_config
from trainer_kit import need

from spade_llm.errors import UserError, pip_install
from spade_llm.session import start_run
from spade_llm.store import RunDir
from spade_llm.tracking import base as tracking_base
from spade_llm.tracking import scalars
from spade_llm.types import EpochMetrics

SECRET = "sk-tracking-secret-0123456789abcdef"
CHECKED = ("pass_rate", "novelty", "tasks_accepted", "funnel/accepted", "warnings")


def test_a_metrics_row_becomes_flat_scalars() -> None:
    row = EpochMetrics(
        epoch=3,
        difficulty=0.4,
        pass_rate=None,
        first_try_pass_rate=None,
        mean_turns=None,
        mean_reward=None,
        tasks_proposed=4,
        tasks_accepted=2,
        rejected_by_reason={"duplicate": 2},
        warnings=["a", "b"],
        novelty=0.5,
    ).model_dump(mode="json")
    values = scalars(row)
    assert values["rejected_by_reason/duplicate"] == 2.0 and values["warnings"] == 2.0 and values["novelty"] == 0.5
    assert "epoch" not in values and "pass_rate" not in values  # the step is no metric; None is not logged
    assert all(isinstance(v, float) for v in values.values())


def test_an_unknown_or_missing_tool_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="unknown tool 'neptune'"):
        tracking_base.opener("neptune")
    from spade_llm.tracking import wandb as wandb_tracker

    def missing() -> None:
        raise ImportError("No module named 'wandb'", name="wandb")

    monkeypatch.setattr(wandb_tracker, "require", missing)
    with pytest.raises(UserError, match=re.escape(pip_install("wandb"))):
        tracking_base.opener("wandb")


def _wandb_records(path: Path) -> list[Any]:
    """The records of a W&B offline run file, parsed with W&B's own protobuf (``Record``): the file is
    W&B's 7-byte header, then LevelDB log blocks (32 KiB; each chunk: crc32c, length, type)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _wandb_history(folder: Path) -> tuple[dict[int, dict[str, float]], dict[str, Any]]:
    history: dict[int, dict[str, float]] = {}
    config: dict[str, Any] = {}
    for file in sorted(folder.rglob("run-*.wandb")):
        for record in _wandb_records(file):
            which = record.WhichOneof("record_type")
            if which == "history":
                items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
                step = int(items.pop("_step"))
                history.setdefault(step, {}).update({k: v for k, v in items.items() if not k.startswith("_")})
            elif which == "config":
                for item in record.config.update:
                    config[item.key] = json.loads(item.value_json)
            elif which == "run":  # the run's start: its id and the config given to wandb.init
                config["__run_id"] = record.run.run_id
                for item in record.run.config.update:
                    config[item.key] = json.loads(item.value_json)
    return history, config


@pytest.mark.tracking
def test_each_tool_reads_back_what_a_run_logged_and_a_resume_logs_into_the_same_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need("tensorboard", "tensorboard")
    need("mlflow", "mlflow")
    need("wandb", "wandb")
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "WANDB_MODE", "WANDB_DIR", "WANDB_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    tools = ["tensorboard", "mlflow", "wandb"]
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    endpoint = {"api_base": f"http://user:{SECRET}@127.0.0.1:9/v1"}  # credentials a config may carry: scrubbed
    config = small_config(controller={"epochs": 2}, solver=endpoint, tracking=tools)
    start_run(config, RunDir.create(out), log=lambda _line: None)
    resumed = small_config(controller={"epochs": 3}, solver=endpoint, tracking=tools)
    start_run(resumed, RunDir(out), resumed=True, log=lambda _line: None)

    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [0, 1, 2]
    expected = {r["epoch"]: {k: v for k, v in scalars(r).items() if k in CHECKED} for r in rows}
    state = json.loads((out / "tracking" / "state.json").read_text())
    assert {name: state[name]["epochs"] for name in tools} == {name: [0, 1, 2] for name in tools}

    # TensorBoard's own reader, over every event file the two processes wrote
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(out / "tracking" / "tensorboard"))
    board.Reload()
    for key in CHECKED:
        if key in expected[0]:
            seen = {e.step: e.value for e in board.Scalars(key)}
            assert seen == pytest.approx({epoch: values[key] for epoch, values in expected.items()})

    # MLflow's client on the local store: one run, every epoch once, the config as parameters, the records linked
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'tracking' / 'mlflow' / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name == "spade_llm"]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.run_id == state["mlflow"]["state"]["run_id"] and run.info.status == "FINISHED"
    for key in CHECKED:
        if key in expected[0]:
            history = client.get_metric_history(run.info.run_id, key)
            assert {m.step: m.value for m in history} == pytest.approx({e: v[key] for e, v in expected.items()})
    assert run.data.params["controller.epochs"] == "2" and run.data.params["seed"] == "0"
    assert run.data.params["solver.api_base"] == "http://127.0.0.1:9/v1"
    linked = {a.path for a in client.list_artifacts(run.info.run_id, "records")}
    assert {"records/metrics.jsonl", "records/tasks.jsonl", "records/manifest.json"} <= linked

    # W&B's offline run: its records parsed with W&B's own protobuf; one run id across the resume
    history, wandb_config = _wandb_history(out / "tracking" / "wandb")
    assert wandb_config["__run_id"] == state["wandb"]["state"]["run_id"]
    for epoch, values in expected.items():
        assert {k: history[epoch][k] for k in values} == pytest.approx(values)
    assert wandb_config["seed"] == 0 and wandb_config["manifest"]["command"] == "run"

    # no secret in anything a tool wrote (the config is logged scrubbed, as config.yaml is)
    for file in (out / "tracking").rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
