"""The trainer in the loop: a command between epochs on fresh exports, whose switch file switches the models."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from spade_llm.cli.app import main
from spade_llm.config import RoleConfig, RunConfig, TrainerConfig
from spade_llm.hooks import HookError
from spade_llm.store import RunDir
from spade_llm.train_step import RoleSwitch, Switch, Trainer, command_line, last_switch, read_switch, recorded_steps

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
    Path(os.environ["SPADE_SWITCH_FILE"]).write_text(json.dumps({"solver_model": "fake/strong-solver"}))
"""


def rows(path: Path) -> list[dict[str, Any]]:
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
    Path(os.environ["SPADE_SWITCH_FILE"]).write_text(sys.argv[1])
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
    script.write_text(
        "import os, pathlib\n"
        'pathlib.Path(os.environ["SPADE_SWITCH_FILE"]).write_text(\'{"solver_model": "nosuchprovider/x"}\')\n'
    )
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
# (printed, and written to the switch file, which is what counts)
ENV_SCRIPT = """\
import json, os, sys
from pathlib import Path
for k, v in sorted(os.environ.items()):
    print(f"{k}={v}")
print("fetching https://alice:s3cr3t-pw@hub.example/model.bin", file=sys.stderr)
switch = json.dumps({"solver_model": "fake/strong-solver", "api_base": "http://user:pass-9x@host.example/v1"})
print(switch)
Path(os.environ["SPADE_SWITCH_FILE"]).write_text(switch)
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
    """The solver must reach the endpoint it was handed: the switch is read from the file as written."""
    script = tmp_path / "switch.py"
    filler = "x" * 1000
    script.write_text(
        "import json, os, pathlib\n"
        "switch = json.dumps({'solver_model': 'openai/m', 'api_base': 'http://u:p-secret@h:1/v1'})\n"
        "print(switch)\n"
        "pathlib.Path(os.environ['SPADE_SWITCH_FILE']).write_text(switch)\n"
        f'for i in range(1500): print(\'{{"loss": \' + str(i) + \', "pad": "{filler}"}}\')\n'  # > 1 MiB after it
    )
    trainer = Trainer(TrainerConfig(command=[sys.executable, str(script)]), RunDir(tmp_path), log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    outcome = trainer.step(0, "fake/default")
    assert outcome.switch == Switch(RoleSwitch("openai/m", "http://u:p-secret@h:1/v1"))
    assert outcome.record["switch"] == {"model": "openai/m", "api_base": "http://h:1/v1"}
    log = (tmp_path / "trainer" / "epoch-000.stdout").read_text()
    assert "p-secret" not in log and log.count('"loss"') == 1500


@pytest.mark.slow  # 5-11 s on 2 cores: the full lane runs it, the fast lane does not
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


# -- the switch comes from a file; keys go only to endpoints the user configured (issue 35, finding 17) ----

USER_KEY = "sk-user-OPENAI-5e4d3c2b1a0f9e8d"


class KeyRecorder:
    """An OpenAI-compatible endpoint in front of a FakeServer (``upstream``, its ``/v1`` url) that records the
    ``Authorization`` header of every request: who got which key."""

    def __init__(self, upstream: str) -> None:
        self.seen: list[str] = []
        recorder = self
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                recorder.seen.append(self.headers.get("Authorization", ""))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = upstream + self.path.removeprefix("/v1")
                forwarded = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
                try:
                    with opener.open(forwarded, timeout=60) as r:
                        status, ctype, data = r.status, r.headers.get("Content-Type"), r.read()
                except urllib.error.HTTPError as e:
                    status, ctype, data = e.code, e.headers.get("Content-Type"), e.read()
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints(fake_server: Any, allow_model_requests: str) -> Iterator[tuple[KeyRecorder, KeyRecorder]]:
    """The endpoint the user configured and another one, each a KeyRecorder before its own FakeServer (model
    requests allowed: they reach only these, on 127.0.0.1)."""
    mine, other = KeyRecorder(fake_server().url), KeyRecorder(fake_server().url)
    yield mine, other
    mine.close()
    other.close()


def _endpoint_run(tmp_path: Path, configured: str, script: str, **trainer: object) -> tuple[int, Path]:
    """Two epochs whose solver is openai/weak-solver at ``configured``, with a training step after epoch 0."""
    (tmp_path / "step.py").write_text(script)
    config = {
        "solver": {"model": "openai/weak-solver", "api_base": configured, "samples_per_task": 1},
        "llm": {"max_retries": 0},
        "trainer": {"command": [sys.executable, str(tmp_path / "step.py")], "formats": ["sft"], **trainer},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    argv = ["run", "--sandbox", "auto", "--config", str(tmp_path / "c.yaml"), "--epochs", "2", "--tasks-per-epoch", "2"]
    return main([*argv, "--out", str(out)]), out  # not --quiet: the log says what was ignored


@pytest.mark.e2e
def test_a_switch_the_step_prints_changes_nothing_and_sends_no_key_anywhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    endpoints: tuple[KeyRecorder, KeyRecorder],
) -> None:
    """A model completion the trainer echoes (or anything else on its stdout) names both roles' model and an
    endpoint of its own: nothing switches, and that endpoint never hears from the run, let alone its key."""
    mine, injected = endpoints
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    echoed = {"model": "openai/strong-solver", "model_api_base": injected.url}
    script = f"import json\nprint('completion:')\nprint(json.dumps({echoed!r}))\n"
    code, out = _endpoint_run(tmp_path, mine.url, script)
    assert code == 0, capsys.readouterr().err
    assert injected.seen == []  # a685e31: both roles switched there, every request carrying the user's key
    assert mine.seen and set(mine.seen) == {f"Bearer {USER_KEY}"}  # the configured endpoint still gets it
    assert _models_by_epoch(out) == {0: {"openai/weak-solver"}, 1: {"openai/weak-solver"}}
    assert _generators_by_epoch(out) == {0: {"fake/default"}, 1: {"fake/default"}}
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert steps[0]["switch"] is None
    assert "a switch is read from $SPADE_SWITCH_FILE only" in capsys.readouterr().err


SWITCH_FILE_STEP = """\
import json, os
from pathlib import Path
Path(os.environ["SPADE_SWITCH_FILE"]).write_text(json.dumps({switch!r}))
"""


@pytest.mark.e2e
@pytest.mark.parametrize("pass_env", [[], ["OPENAI_API_KEY"]], ids=["key-withheld", "key-passed-to-the-step"])
def test_an_endpoint_only_the_step_named_gets_no_key_unless_the_step_was_given_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    endpoints: tuple[KeyRecorder, KeyRecorder],
    pass_env: list[str],
) -> None:
    mine, trained = endpoints
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    script = SWITCH_FILE_STEP.format(switch={"solver_model": "openai/strong-solver", "api_base": trained.url})
    code, out = _endpoint_run(tmp_path, mine.url, script, pass_env=pass_env)
    assert code == 0, capsys.readouterr().err
    assert _models_by_epoch(out) == {0: {"openai/weak-solver"}, 1: {"openai/strong-solver"}}  # the switch works
    assert set(mine.seen) == {f"Bearer {USER_KEY}"}
    expected = f"Bearer {USER_KEY}" if pass_env else "Bearer sk-no-key-required"  # the placeholder
    assert trained.seen and set(trained.seen) == {expected}
    steps = json.loads((out / "manifest.json").read_text())["trainer_steps"]
    assert steps[0]["switch"] == {"model": "openai/strong-solver", "api_base": trained.url}


HF_KEY = "hf_userHFkey5e4d3c2b1a0f9e8d7c6b5a4"


@pytest.mark.e2e
def test_a_switch_to_a_model_string_naming_its_own_endpoint_sends_it_no_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    endpoints: tuple[KeyRecorder, KeyRecorder],
) -> None:
    """``huggingface/<url>``: litellm takes the URL for the endpoint (its ``get_base_url``) and sends the
    Hugging Face key there. The step named no api_base, so round 1 called it the provider's own endpoint and
    let the switch through (exit 0, epoch 1 solved by that model). Now the run stops before any request."""
    mine, injected = endpoints
    monkeypatch.setenv("HF_TOKEN", HF_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    script = SWITCH_FILE_STEP.format(switch={"solver_model": f"huggingface/{injected.url}"})
    code, out = _endpoint_run(tmp_path, mine.url, script)
    assert code == 2, capsys.readouterr().err
    assert injected.seen == []
    assert "no key from the environment" in json.loads((out / "summary.json").read_text())["stopped_because"]


def test_a_bad_switch_file_stops_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for content, error in [
        ("not json", "names no model"),
        ('{"loss": 0.1}', "names no model"),
        ('{"solver_model": 3}', "solver_model"),
        ("x" * 70000, "over 65536 bytes"),
    ]:
        script = tmp_path / "bad_switch.py"
        script.write_text(
            f"import os, pathlib\npathlib.Path(os.environ['SPADE_SWITCH_FILE']).write_text({content!r})\n"
        )
        trainer = Trainer(TrainerConfig(command=[sys.executable, str(script)]), RunDir(tmp_path), log=lambda _m: None)
        monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
        with pytest.raises(HookError, match=error):
            trainer.step(0, "fake/default")
    # none written: no switch
    script.write_text("print('trained')\n")
    trainer = Trainer(TrainerConfig(command=[sys.executable, str(script)]), RunDir(tmp_path), log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    assert trainer.step(0, "fake/default").switch is None


def _step_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, epoch: int = 0) -> Any:
    """One training step whose command runs ``body`` (Python, with os, json and Path imported)."""
    script = tmp_path / "step_body.py"
    script.write_text("import json, os\nfrom pathlib import Path\n" + body)
    run = RunDir(tmp_path / "run")
    run.path.mkdir(exist_ok=True)
    trainer = Trainer(TrainerConfig(command=[sys.executable, str(script)]), run, log=lambda _m: None)
    monkeypatch.setattr(trainer, "export", lambda epoch: tmp_path)
    return trainer.step(epoch, "fake/default")


def test_the_switch_file_is_in_the_run_directory_where_a_remote_step_reaches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ssh host``, ``srun`` (a node's own /tmp) or ``docker run -v RUN_DIR`` reach the run directory as they
    reach the exports, never this machine's /tmp (round 1: a mkdtemp folder there)."""
    seen = tmp_path / "seen.json"
    body = (
        f"Path({str(seen)!r}).write_text(json.dumps([os.environ['SPADE_SWITCH_FILE'], os.environ['SPADE_RUN_DIR']]))\n"
        "Path(os.environ['SPADE_SWITCH_FILE']).write_text(json.dumps({'solver_model': 'fake/strong-solver'}))\n"
    )
    outcome = _step_with(tmp_path, monkeypatch, body, epoch=4)
    assert outcome.switch == Switch(RoleSwitch("fake/strong-solver"))
    switch_file, run_dir = json.loads(seen.read_text())
    assert Path(switch_file) == (tmp_path / "run" / "trainer" / "epoch-004.switch.json").absolute()
    assert Path(switch_file).is_absolute() and Path(switch_file).is_relative_to(Path(run_dir).absolute())
    assert not Path(switch_file).exists()  # read, then removed: an api_base's credentials stay off the disk


def test_a_switch_file_left_by_an_earlier_try_switches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "run" / "trainer" / "epoch-000.switch.json"
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps({"solver_model": "openai/injected", "api_base": "http://evil.example/v1"}))
    assert _step_with(tmp_path, monkeypatch, "print('trained, no switch this time')\n").switch is None


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("os.symlink('/etc/hostname', os.environ['SPADE_SWITCH_FILE'])\n", "symbolic link"),
        ("os.mkfifo(os.environ['SPADE_SWITCH_FILE'])\n", "not a regular file"),  # open() would wait forever
        ("os.mkdir(os.environ['SPADE_SWITCH_FILE'])\n", "not a regular file"),
        ("Path(os.environ['SPADE_SWITCH_FILE']).write_text('x' * 70000)\n", "over 65536 bytes"),
    ],
    ids=["symlink", "fifo", "folder", "too-large"],
)
def test_a_switch_file_that_is_no_regular_file_stops_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, error: str
) -> None:
    with pytest.raises(HookError, match=error):
        _step_with(tmp_path, monkeypatch, body)


def test_the_manifests_of_older_runs_still_read(tmp_path: Path) -> None:
    """Switches recorded before the switch file (and before the generator could switch) read the same."""
    run = RunDir(tmp_path)
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "trainer_steps": [
                    {"epoch": 0, "returncode": 0, "switch": {"model": "openai/a", "api_base": "http://h:1/v1"}},
                    {"epoch": 1, "returncode": 0, "switch": None},
                    {"epoch": 2, "returncode": 0, "switch": {"model": "openai/b", "generator": {"model": "openai/g"}}},
                ]
            }
        )
    )
    assert last_switch(run) == Switch(RoleSwitch("openai/b", "http://h:1/v1"), RoleSwitch("openai/g"))
    assert [s["epoch"] for s in recorded_steps(run)] == [0, 1, 2]


def test_which_endpoints_get_our_keys() -> None:
    from spade_llm.train_step import configured_endpoints, env_keys_allowed

    config = RunConfig.model_validate(
        {
            "solver": {"model": "openai/m", "api_base": ["http://u:p@127.0.0.1:8000/v1", "https://api.example/v1"]},
            "generator": {"model": "openai/g", "api_base": "http://gen.example:9000/v1?key=abc"},
            "ray": {"node_api_base": {"10.0.0.2": "http://10.0.0.2:8000/v1"}},
        }
    )
    configured = configured_endpoints(config)
    assert configured == {
        "http://127.0.0.1:8000",
        "https://api.example:443",
        "http://gen.example:9000",
        "http://10.0.0.2:8000",
    }

    def role(model: str, api_base: str | None) -> RoleConfig:
        return RoleConfig(model=model, api_base=api_base)

    assert env_keys_allowed(role("openai/m", None), configured)  # the provider's own endpoint
    assert env_keys_allowed(role("openai/m2", "http://127.0.0.1:8000/v2"), configured)  # same server, new path
    assert env_keys_allowed(role("openai/m2", "HTTPS://API.example:443/x"), configured)
    assert not env_keys_allowed(role("openai/m2", "http://127.0.0.1:8001/v1"), configured)  # another port
    assert not env_keys_allowed(role("openai/m2", "http://evil.example/v1"), configured)
    assert not env_keys_allowed(role("openai/m2", "http://api.example/v1"), configured)  # http, not https
    assert env_keys_allowed(role("openai/m2", "http://evil.example/v1"), configured, ["OPENAI_API_KEY"])
    assert env_keys_allowed(role("openai/m2", "http://evil.example/v1"), configured, ["OPENAI_*"])
    assert not env_keys_allowed(role("openai/m2", "http://evil.example/v1"), configured, ["HF_TOKEN"])
    assert not env_keys_allowed(role("custom/x", "http://evil.example/v1"), configured, ["*"])  # no known key


@pytest.mark.parametrize(
    "model",
    [
        "huggingface/https://evil.example/v1",  # litellm: api_base https://evil.example/v1, Bearer <HF key>
        "huggingface/HTTPS://evil.example/v1",
        "openai/http://evil.example:8000/v1",
        "hosted_vllm/https://evil.example/v1",
        "https://evil.example/v1",
    ],
)
def test_a_model_string_that_names_its_own_endpoint_is_held_to_the_rule(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A switch needs no api_base to name an endpoint: the model string can hold one (round 1: no api_base,
    so "the provider's own endpoint", and the provider's key went to the URL)."""
    from spade_llm.config import LLMConfig
    from spade_llm.errors import UserError
    from spade_llm.llm.registry import get_llm
    from spade_llm.train_step import configured_endpoints, env_keys_allowed

    config = RunConfig.model_validate({"solver": {"model": "openai/m", "api_base": "http://127.0.0.1:8000/v1"}})
    configured = configured_endpoints(config)
    switched = RoleConfig(model=model)
    assert not env_keys_allowed(switched, configured)
    assert env_keys_allowed(switched, {*configured, "https://evil.example:443", "http://evil.example:8000"})
    if not model.startswith("openai/"):
        monkeypatch.setenv("HF_TOKEN", "hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x")
        with pytest.raises(UserError, match="no key from the environment"):
            get_llm(switched, LLMConfig(), env_keys=env_keys_allowed(switched, configured))


def test_a_url_in_a_configured_model_string_is_a_configured_endpoint() -> None:
    from spade_llm.train_step import configured_endpoints, env_keys_allowed

    config = RunConfig.model_validate({"solver": {"model": "huggingface/https://my-endpoint.example/v1"}})
    assert configured_endpoints(config) == {"https://my-endpoint.example:443"}
    assert env_keys_allowed(config.solver, configured_endpoints(config))
    assert env_keys_allowed(RoleConfig(model="huggingface/meta-llama/Llama-3"), set())  # no URL: the provider's


def test_a_model_without_its_key_is_built_to_send_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_llm.config import LLMConfig
    from spade_llm.errors import UserError
    from spade_llm.llm.base import LLMRequest
    from spade_llm.llm.litellm import PLACEHOLDER_KEY
    from spade_llm.llm.openai_http import OpenAIHTTP
    from spade_llm.llm.registry import get_llm
    from spade_llm.types import Message

    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    role = RoleConfig(model="openai/m", api_base="http://evil.example/v1")
    http = get_llm(role, LLMConfig(), env_keys=False)
    assert isinstance(http, OpenAIHTTP) and not http.env_key
    assert get_llm(role, LLMConfig()).env_key  # type: ignore[attr-defined]
    via_litellm = get_llm(role, LLMConfig(transport="litellm"), env_keys=False)
    request = LLMRequest(messages=[Message(role="user", content="hi")], role="solver", temperature=0.0, max_tokens=8)
    sent = via_litellm.prepare(request, "http://evil.example/v1", 10.0)  # type: ignore[attr-defined]
    assert sent["api_key"] == PLACEHOLDER_KEY and sent["api_base"] == "http://evil.example/v1"
    with pytest.raises(UserError, match="no key from the environment"):
        get_llm(RoleConfig(model="anthropic/claude-x", api_base="http://evil.example"), LLMConfig(), env_keys=False)
