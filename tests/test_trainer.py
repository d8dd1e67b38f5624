"""The trainer in the loop: a command between epochs on fresh exports, whose answer switches the solver."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from spade_llm.cli import main
from spade_llm.config import TrainerConfig
from spade_llm.hooks import HookError
from spade_llm.store import RunDir
from spade_llm.trainer import RoleSwitch, Switch, Trainer, command_line, read_switch

# A training command: checks it was handed the exports, then names a new solver after epoch 0 only.
TRAIN_SCRIPT = """\
import json, os, sys
from pathlib import Path
exports = Path(sys.argv[-1])
assert exports == Path(os.environ["SPADE_EXPORTS"]), (exports, os.environ["SPADE_EXPORTS"])
rows = [json.loads(l) for l in (exports / "grpo.jsonl").read_text().splitlines()]
assert rows and all(r["prompt"] for r in rows), "no grpo rows"
gate = Path(os.environ["SPADE_RUN_DIR"]).parent / "gate"
if gate.exists() and gate.read_text() == "fail":
    print("training diverged", file=sys.stderr)
    sys.exit(1)
print("epoch", os.environ["SPADE_EPOCH"], "trained on", len(rows), "tasks, solver", os.environ["SPADE_SOLVER_MODEL"])
if os.environ["SPADE_EPOCH"] == "0":
    print(json.dumps({"solver_model": "fake/strong-solver"}))
"""


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _config(tmp_path: Path, **trainer: object) -> Path:
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    config = {
        "solver": {"model": "fake/weak-solver", "samples_per_task": 1},
        "trainer": {"command": [sys.executable, str(script)], "formats": ["grpo"], **trainer},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _run(tmp_path: Path, *extra: str) -> int:
    return main(["run", "--quiet", "--sandbox", "auto", "--tasks-per-epoch", "3", *extra])


def _models_by_epoch(out: Path) -> dict[int, set[str]]:
    seen: dict[int, set[str]] = {}
    for t in rows(out / "trajectories.jsonl"):
        seen.setdefault(t["epoch"], set()).add(t["solver_model"])
    return seen


@pytest.mark.e2e
def test_trainer_switches_the_solver_mid_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, "--config", str(_config(tmp_path)), "--epochs", "3", "--out", str(out)) == 0
    assert _models_by_epoch(out) == {0: {"fake/weak-solver"}, 1: {"fake/strong-solver"}, 2: {"fake/strong-solver"}}
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert [s["epoch"] for s in steps] == [0, 1, 2]
    assert steps[0]["switch"] == {"model": "fake/strong-solver"}
    assert steps[1]["switch"] is None and steps[2]["switch"] is None
    for epoch in range(3):  # each step saw the run so far, exported fresh
        grpo = rows(out / "exports" / f"epoch-{epoch:03d}" / "grpo.jsonl")
        assert {r["task_id"] for r in grpo} <= {t["task_id"] for t in rows(out / "tasks.jsonl")}
        assert "trained on" in (out / "trainer" / f"epoch-{epoch:03d}.stdout").read_text()
    assert "solver fake/strong-solver" in (out / "trainer" / "epoch-002.stdout").read_text()


SWITCH_SCRIPT = """
import json, os, sys
from pathlib import Path
epoch = os.environ["SPADE_EPOCH"]
print("epoch", epoch, "generator", os.environ["SPADE_GENERATOR_MODEL"], "solver", os.environ["SPADE_SOLVER_MODEL"])
gate = Path(os.environ["SPADE_RUN_DIR"]).parent / "gate"
if epoch == "1" and gate.exists():
    sys.exit(1)
if epoch == "0":
    print(json.dumps(json.loads(sys.argv[1])))
"""


def _switch_config(tmp_path: Path, switch: dict[str, str]) -> Path:
    script = tmp_path / "switch.py"
    script.write_text(SWITCH_SCRIPT)
    config = {
        "solver": {"model": "fake/weak-solver"},
        "trainer": {
            "command": [sys.executable, str(script), json.dumps(switch), "{exports}"],
            "formats": ["sft"],
            "generator_formats": ["sft", "dpo", "grpo"],
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _generators_by_epoch(out: Path) -> dict[int, set[str]]:
    seen: dict[int, set[str]] = {}
    for row in rows(out / "proposals.jsonl"):
        seen.setdefault(row["epoch"], set()).add(row["generator_model"])
    return seen


@pytest.mark.e2e
def test_a_step_that_names_a_generator_model_switches_the_generator_and_resume_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (tmp_path / "gate").write_text("fail")  # the step after epoch 1 fails: the run stops there
    config = _switch_config(tmp_path, {"generator_model": "fake/collapse"})
    assert _run(tmp_path, "--config", str(config), "--epochs", "3", "--out", str(out)) == 2
    assert _generators_by_epoch(out) == {0: {"fake/default"}, 1: {"fake/collapse"}}
    assert _models_by_epoch(out) == {0: {"fake/weak-solver"}, 1: {"fake/weak-solver"}}  # the solver stays
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert [s["switch"] for s in steps] == [{"generator": {"model": "fake/collapse"}}]
    assert "generator fake/collapse" in (out / "trainer" / "epoch-001.stdout").read_text()
    for epoch in (0, 1):  # both roles' data, fresh for each step
        folder = out / "exports" / f"epoch-{epoch:03d}"
        assert sorted(p.name for p in folder.iterdir()) == [
            "generator-dpo.jsonl",
            "generator-grpo.jsonl",
            "generator-sft.jsonl",
            "sft.jsonl",
        ]
        prompts = {(r["epoch"], r["prompt_index"]) for r in rows(folder / "generator-grpo.jsonl")}
        assert prompts == {(e, p) for e in range(epoch + 1) for p in range(3)}

    (tmp_path / "gate").unlink()
    assert main(["run", "--quiet", "--resume", str(out)]) == 0  # a new process: the switch comes from the manifest
    assert _generators_by_epoch(out) == {0: {"fake/default"}, 1: {"fake/collapse"}, 2: {"fake/collapse"}}
    assert "generator fake/collapse" in (out / "trainer" / "epoch-002.stdout").read_text()


@pytest.mark.e2e
def test_model_switches_both_roles_and_a_roles_own_key_wins(tmp_path: Path) -> None:
    out = tmp_path / "run"
    switch = {"model": "fake/strong-solver", "solver_model": "fake/default"}
    assert _run(tmp_path, "--config", str(_switch_config(tmp_path, switch)), "--epochs", "2", "--out", str(out)) == 0
    assert _generators_by_epoch(out) == {0: {"fake/default"}, 1: {"fake/strong-solver"}}
    assert _models_by_epoch(out) == {0: {"fake/weak-solver"}, 1: {"fake/default"}}
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert steps[0]["switch"] == {"model": "fake/default", "generator": {"model": "fake/strong-solver"}}


@pytest.mark.e2e
def test_failed_step_stops_the_run_and_resume_runs_it_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    (tmp_path / "gate").write_text("fail")
    config = _config(tmp_path, every_epochs=2)
    assert _run(tmp_path, "--config", str(config), "--epochs", "3", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "trainer command exited with 1 after epoch 1" in err and "--resume" in err
    assert len(rows(out / "metrics.jsonl")) == 2  # both epochs kept; the step is what failed
    assert "trainer_steps" not in json.loads((out / "manifest.json").read_text())
    assert "training diverged" in (out / "trainer" / "epoch-001.stderr").read_text()
    summary = json.loads((out / "summary.json").read_text())  # SPEC: an early stop says why
    assert summary["complete"] is False and "trainer command exited with 1" in summary["stopped_because"]

    (tmp_path / "gate").write_text("ok")  # the user fixes their script, then resumes
    assert main(["run", "--quiet", "--resume", str(out)]) == 0
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert [s["epoch"] for s in steps] == [1]  # every_epochs=2: after epoch 1 only (not after 0 or 2)
    assert len(rows(out / "metrics.jsonl")) == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and "stopped_because" not in summary
    # the step after epoch 1 ran before epoch 2 and named no switch (SPADE_EPOCH was 1)
    assert _models_by_epoch(out)[2] == {"fake/weak-solver"}


@pytest.mark.e2e
def test_resume_keeps_the_model_the_last_step_chose(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, "--config", str(_config(tmp_path)), "--epochs", "1", "--out", str(out)) == 0
    assert main(["run", "--quiet", "--resume", str(out), "--epochs", "2"]) == 0
    assert _models_by_epoch(out) == {0: {"fake/weak-solver"}, 1: {"fake/strong-solver"}}
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert [s["epoch"] for s in steps] == [0, 1]


def test_unknown_model_from_the_trainer_stops_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bad.py"
    script.write_text('print(\'{"solver_model": "nosuchprovider/x"}\')\n')
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "trainer": {"command": f"{sys.executable} {script}", "formats": ["grpo"]},
                "solver": {"samples_per_task": 1},
            }
        )
    )
    out = tmp_path / "run"
    assert _run(tmp_path, "--config", str(config), "--epochs", "2", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "the trainer's solver model" in err and "nosuchprovider/x" in err
    assert "trainer_steps" not in json.loads((out / "manifest.json").read_text())  # unrecorded: resume retries


def test_nothing_of_the_epoch_runs_on_while_the_trainer_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An epoch budget that runs out leaves validations undecided: they must end with the epoch, not run
    on beside a training step (hours, on the same machine) and into the next epoch. And the epoch's
    line is on the terminal before the step starts, not hours later."""
    from spade_llm.checking import CodeChecker
    from spade_llm.controller import Controller

    async def slow_validation(self: CodeChecker, task: object) -> object:
        await asyncio.sleep(60)
        raise AssertionError("never decided")

    seen: list[list[str]] = []
    original = Controller.train_after

    async def watched(self: Controller, epoch: int) -> None:
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        seen.append([repr(t.get_coro()) for t in others])
        await original(self, epoch)

    monkeypatch.setattr(CodeChecker, "validate", slow_validation)
    monkeypatch.setattr(Controller, "train_after", watched)
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "controller": {"epoch_budget_s": 0.3},
                "trainer": {"command": [sys.executable, "-c", "pass"], "formats": ["grpo"]},
            }
        )
    )
    out = tmp_path / "run"
    argv = ["run", "--sandbox", "auto", "--tasks-per-epoch", "3", "--epochs", "1", "--config", str(config)]
    assert main([*argv, "--out", str(out)]) == 0
    assert seen == [[]]
    err = capsys.readouterr().err
    assert 0 <= err.index("epoch 0: difficulty") < err.index("trainer: epoch 0:"), err
    assert [s["epoch"] for s in json.loads((out / "manifest.json").read_text())["trainer_steps"]] == [0]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead, whoever reaps it


def _gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout_s: float | None = None) -> Trainer:
    """A trainer whose command starts a worker (as torchrun, accelerate or a shell script do) and waits."""
    command = ["sh", "-c", f"sleep 60 & echo $! > {tmp_path / 'worker.pid'}; wait"]
    trainer = Trainer(TrainerConfig(command=command, timeout_s=timeout_s), RunDir(tmp_path), log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    return trainer


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_timeout_ends_the_training_with_its_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = _launcher(tmp_path, monkeypatch, timeout_s=0.5)
    with pytest.raises(HookError, match=r"ran past trainer\.timeout_s"):
        trainer.step(0, "fake/default")
    worker = int((tmp_path / "worker.pid").read_text())
    assert _gone(worker), "the command's worker outlived the timeout (it would hold the GPU into --resume)"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_stop_ends_a_step_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the controller calls when the run is interrupted (Ctrl-C) during a step."""
    trainer = _launcher(tmp_path, monkeypatch)
    errors: list[BaseException] = []

    def step() -> None:
        try:
            trainer.step(0, "fake/default")
        except HookError as e:
            errors.append(e)

    thread = threading.Thread(target=step)
    thread.start()
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    trainer.stop()
    thread.join(10)
    assert not thread.is_alive() and len(errors) == 1
    assert _gone(int(pid_file.read_text()))
    trainer.stop()  # no step under way: nothing to do


def test_read_switch_takes_the_last_json_object() -> None:
    assert read_switch('step 1 loss 0.3\n{"solver_model": "a"}\nsaving\n{"api_base": "http://h:1/v1"}\n') == (
        Switch(RoleSwitch(api_base="http://h:1/v1"))
    )
    # ``model`` is both roles' (one model playing both); ``api_base`` stays the solver's endpoint
    assert read_switch('{\n  "model": "openai/m",\n  "api_base": "http://x/v1"\n}\n') == Switch(
        RoleSwitch("openai/m", "http://x/v1"), RoleSwitch("openai/m")
    )
    assert read_switch("loss 0.1\n{not json}\n") is None
    assert read_switch('{"loss": 0.1}') is None  # a JSON log line naming no model: no switch
    with pytest.raises(HookError, match="solver_model"):
        read_switch('{"solver_model": 3}')
    with pytest.raises(HookError, match="api_base"):
        read_switch('{"api_base": ""}')


def test_read_switch_is_not_lost_behind_a_json_log_line() -> None:
    """Training libraries log JSON lines (metrics, a summary at exit) after the script said its switch."""
    out = '{"solver_model": "openai/trained", "api_base": "http://h:1/v1"}\n{"train_runtime": 12.5, "loss": 0.1}\n'
    assert read_switch(out) == Switch(RoleSwitch("openai/trained", "http://h:1/v1"))
    config_line = '{"model": {"name": "Qwen/Qwen2.5-Coder", "dtype": "bf16"}, "lr": 1e-05}'
    assert read_switch('{"solver_model": "openai/trained"}\n' + config_line) == Switch(RoleSwitch("openai/trained"))
    assert read_switch(config_line) is None  # a ``model`` object is a log, not a switch


def test_command_line_fills_placeholders_or_appends_the_exports(tmp_path: Path) -> None:
    exports, run = tmp_path / "e", tmp_path / "r"
    assert command_line("train --data {exports} --tag e{epoch}", exports, run, 4) == [
        "train",
        "--data",
        str(exports),
        "--tag",
        "e4",
    ]
    assert command_line(["train", "--out", "{run_dir}/m"], exports, run, 0) == [
        "train",
        "--out",
        f"{run}/m",
        str(exports),
    ]
    with pytest.raises(HookError, match="empty"):
        command_line("  ", exports, run, 0)


# -- secrets stay out (issue 24) -------------------------------------------------------------------

OPENAI_KEY = "sk-test-OPENAI-9f8e7d6c5b4a"
HF_KEY = "hf_testTOKEN0a1b2c3d4e5f"
AWS_KEY = "AWSsecret/0123456789abcdefXYZ"
PROXY = "http://bob:hunter2-proxy@proxy.example:3128"

# prints every variable it got, a URL with credentials on stderr, then a switch whose endpoint has some
ENV_SCRIPT = """\
import json, os, sys
for k, v in sorted(os.environ.items()):
    print(f"{k}={v}")
print("fetching https://alice:s3cr3t-pw@hub.example/model.bin", file=sys.stderr)
print(json.dumps({"solver_model": "fake/strong-solver", "api_base": "http://user:pass-9x@host.example/v1"}))
"""


@pytest.mark.parametrize("pass_env", [[], ["HF_TOKEN"]], ids=["nothing-passed", "hf-token-passed"])
def test_a_trainer_that_prints_its_environment_leaves_no_key_in_the_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pass_env: list[str]
) -> None:
    for name, value in [
        ("OPENAI_API_KEY", OPENAI_KEY),
        ("HF_TOKEN", HF_KEY),
        ("AWS_SECRET_ACCESS_KEY", AWS_KEY),
        ("HTTPS_PROXY", PROXY),
    ]:
        monkeypatch.setenv(name, value)
    script = tmp_path / "env.py"
    script.write_text(ENV_SCRIPT)
    trainer: dict[str, object] = {"command": [sys.executable, str(script)], "formats": ["grpo"]}
    if pass_env:
        trainer["pass_env"] = pass_env
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"solver": {"samples_per_task": 1}, "trainer": trainer}))
    out = tmp_path / "run"
    assert _run(tmp_path, "--config", str(config), "--epochs", "1", "--out", str(out)) == 0
    stdout = (out / "trainer" / "epoch-000.stdout").read_text()
    got = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line and not line.startswith("{"))
    assert "OPENAI_API_KEY" not in got and "AWS_SECRET_ACCESS_KEY" not in got and "HTTPS_PROXY" not in got
    if pass_env:
        assert got["HF_TOKEN"] == "***"  # passed on, and masked in the log all the same
    else:
        assert "HF_TOKEN" not in got
    assert got["SPADE_EPOCH"] == "0" and got["PATH"] == os.environ["PATH"]  # the rest stays
    assert "http://***@host.example/v1" in stdout
    assert "https://***@hub.example/model.bin" in (out / "trainer" / "epoch-000.stderr").read_text()
    leaks = [OPENAI_KEY, HF_KEY, AWS_KEY, "hunter2-proxy", "s3cr3t-pw", "pass-9x"]
    for path in out.rglob("*"):  # the whole run directory, every file
        if path.is_file():
            data = path.read_bytes()
            assert not [s for s in leaks if s.encode() in data], path
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert steps[0]["switch"] == {"model": "fake/strong-solver", "api_base": "http://host.example/v1"}


def test_the_switch_keeps_the_credentials_the_log_hides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The solver must reach the endpoint it was handed: the switch is read from the output as printed."""
    script = tmp_path / "switch.py"
    filler = "x" * 1000
    script.write_text(
        "import json\n"
        "print(json.dumps({'solver_model': 'openai/m', 'api_base': 'http://u:p-secret@h:1/v1'}))\n"
        f'for i in range(1500): print(\'{{"loss": \' + str(i) + \', "pad": "{filler}"}}\')\n'  # > 1 MiB after it
    )
    trainer = Trainer(TrainerConfig(command=[sys.executable, str(script)]), RunDir(tmp_path), log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    outcome = trainer.step(0, "fake/default")
    assert outcome.switch == Switch(RoleSwitch("openai/m", "http://u:p-secret@h:1/v1"))
    assert outcome.record["switch"] == {"model": "openai/m", "api_base": "http://h:1/v1"}
    log = (tmp_path / "trainer" / "epoch-000.stdout").read_text()
    assert "p-secret" not in log and log.count('"loss"') == 1500


def test_a_process_the_step_leaves_running_does_not_hold_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step may start a server for its new model and leave it running, its output on our pipe."""
    pid_file = tmp_path / "server.pid"
    command = ["sh", "-c", f"(sleep 120; echo late) & echo $! > {pid_file}; echo trained"]
    trainer = Trainer(TrainerConfig(command=command), RunDir(tmp_path), log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(trainer.step(0, "fake/default")), daemon=True)
    thread.start()
    thread.join(60)
    try:
        assert done, "the step waited for a process it left running"
        assert "trained" in (tmp_path / "trainer" / "epoch-000.stdout").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(os.getpgid(int(pid_file.read_text())), signal.SIGKILL)
