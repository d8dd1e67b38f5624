"""``spade serve-env``: the curriculum as an OpenEnv environment, driven by openenv-core's own client.

The clients are openenv-core's ``GenericEnvClient(base_url=...).sync()``; the policy asks ``spade
serve-fake``'s ``strong-solver`` or ``weak-solver`` (an in-process FakeServer, ``fake_server``) for each
reply, as a trainer's policy would ask its model. The servers are real ``spade serve-env`` processes
on free loopback ports, except where a test needs a scripted generator (the leak test runs the server
in-process). Needs the ``env`` extra (``pip install 'spade-selfplay[env]'``): skipped without it,
failed under ``SPADE_TEST_REQUIRE_TRAINERS``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from trainer_kit import need

need("openenv", "env")

from serve_env_kit import SMALL, SPADE, ask, env_client, play, play_parallel, records  # noqa: E402

from spade_llm import read_run  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402

pytestmark = [pytest.mark.env, pytest.mark.slow]

# -- the "done when" ------------------------------------------------------------------------


@pytest.mark.parametrize(("profile", "sessions"), [("strong-solver", 4), ("weak-solver", 1)])
def test_48_episodes_through_openenv_client_move_the_difficulty(tmp_path, serve_env, fake_server, profile, sessions):
    run = tmp_path / "run"
    server = serve_env(*SMALL, "--out", str(run))
    policy = ask(fake_server().url, profile)
    started = time.monotonic()
    episodes = play_parallel(server.url, policy, sessions, 48 // sessions)
    played_s = time.monotonic() - started
    assert server.stop() == 0, server.stderr
    assert "--resume" in server.stderr

    assert len(episodes) == 48
    for results in episodes:
        first, last = results[0], results[-1]
        assert not first.done and first.observation["turn"] == 1
        assert (
            first.observation["messages"][0]["role"] == "system" and first.observation["messages"][-1]["role"] == "user"
        )
        assert first.observation["kind"] == "induction" and first.observation["task_id"]
        assert last.done and isinstance(last.reward, float)
        assert last.observation["final_status"] in ("passed", "failed", "error", "timeout")
        assert last.observation["messages"][-1]["role"] == "assistant"  # the whole conversation, the last reply last

    data = records(run)
    trajectories = data.trajectories
    assert len(trajectories) == 48, [t.trajectory_id for t in trajectories]
    assert {t.source for t in trajectories} == {"env"} and {t.solver_model for t in trajectories} == {"env"}
    ids = {results[-1].observation["trajectory_id"] for results in episodes}
    assert ids == {t.trajectory_id for t in trajectories}  # the episodes the clients played, and only those
    rewards = {results[-1].observation["trajectory_id"]: results[-1].reward for results in episodes}
    assert all(rewards[t.trajectory_id] == (1.0 if t.final_status == "passed" else 0.0) for t in trajectories)
    assert len(data.tasks) > 4  # more than the first batch: the generator kept the pool full
    assert len(data.task_stats) >= len(trajectories) // 2 - 2
    metrics = data.metrics
    assert len(metrics) >= 5
    targets = [m.difficulty for m in metrics]
    passed = sum(t.final_status == "passed" for t in trajectories)
    if profile == "strong-solver":
        assert passed >= 40 and targets[-1] > targets[0] + 0.2, targets
    else:
        assert passed <= 16 and targets[-1] < targets[0], targets
    print(f"{profile}: 48 episodes in {played_s:.1f} s over {sessions} session(s); targets {targets}")


# -- what observations never hold --------------------------------------------------------------------

SECRET = "zq_hidden"
SHOUT = Task(
    task_id="x",
    kind="induction",
    description="Return the string upper-cased with an exclamation mark appended.",
    entry_point="shout",
    reference_code="def shout(s):\n    return s.upper() + '!'\n",
    tests=[
        TestCase(input=repr((x,)), expected=x.upper() + "!")
        for x in ["abc", "hi", "ok", f"{SECRET}_input_alpha", f"{SECRET}_input_beta"]
    ],
    difficulty=0.4,
)
SEAL = Task(  # deduction: the hidden queries' inputs are the question; their outputs are the secret
    task_id="y",
    kind="deduction",
    description="A small string function.",
    entry_point="seal",
    reference_code="def seal(n):\n    return 'zq' + str(n * 7) + 'hidden'\n",
    tests=[TestCase(input=f"({n},)", expected=f"zq{n * 7}hidden") for n in (1, 2, 3, 99, 1001)],
    difficulty=0.4,
)
SEAL_SECRETS = ("zq693hidden", "zq7007hidden")
SIZE = Task(  # abduction: the hidden queries' outputs are the question; their original inputs are the secret
    task_id="z",
    kind="abduction",
    description="A small counting function.",
    entry_point="size",
    reference_code="def size(s):\n    return len(s) * 3\n",
    tests=[
        TestCase(input=repr((x,)), expected=len(x) * 3)
        for x in ["a", "bb", "ccc", f"{SECRET}_abduction_input", f"{SECRET}_abduction_other"]
    ],
    difficulty=0.4,
)
LEAKY = {
    "induction": [
        # prints and raises with everything it sees
        "```python\nimport sys, os\ndef shout(s):\n    print('saw', s, os.listdir('.'))\n"
        "    print('saw', s, file=sys.stderr)\n    raise ValueError('bad input ' + s)\n```",
        # hard-codes the public tests: passes them, fails the hidden ones, which must stay unshown
        "```python\ndef shout(s):\n    return {'abc': 'ABC!', 'hi': 'HI!', 'ok': 'OK!'}[s]\n```",
        "```python\ndef shout(s):\n    while True:\n        pass\n```",
    ],
    "deduction": [
        "seal(1) == 'x'\nseal(2) == 'y'\nseal(3) == 'z'\nseal(99) == 'w'\nseal(1001) == 'v'",
        "I cannot tell.",
        "seal(1) == 'zq7hidden'",
    ],
    "abduction": ["size('x') == 3\nsize('yy') == 6", "size(1, 2) == 3", "size('zzz') == 9"],
}


def _scripted_generator() -> Any:
    from spade_llm.fake.scripted import FunctionLLM

    by_kind = {t.kind: t for t in (SHOUT, SEAL, SIZE)}

    def propose(request: Any) -> str:
        task = by_kind[request.metadata["kind"]]
        fields = task.model_dump(include={"description", "entry_point", "reference_code", "difficulty"})
        fields["tests"] = [{"input": t.input} for t in task.tests]
        return json.dumps({"tasks": [fields]})

    return FunctionLLM(propose, model="scripted")


class InProcess:
    """An EnvServer in this process (a thread), for a run whose generator is scripted."""

    def __init__(self, config: Any, run_dir: Path, generator: Any) -> None:
        from spade_llm.serve.env.broker import EnvBroker
        from spade_llm.serve.env.running import EnvSession
        from spade_llm.serve.env.server import EnvServer
        from spade_llm.store import RunDir

        broker = EnvBroker(episode_timeout_s=config.env.episode_timeout_s, reset_timeout_s=config.env.reset_timeout_s)
        self.session = EnvSession(config, broker)
        self.session.session.gen_llm = generator
        self.server = EnvServer(self.session, RunDir.create(run_dir), port=0, log=lambda _m: None)
        self.server.start()
        self.url = self.server.url
        self._thread = threading.Thread(target=self.server.serve, daemon=True)
        self._thread.start()
        assert self.server.ready.wait(30)

    def close(self) -> None:
        self.server.stop("the test is over")
        self._thread.join(30)
        self.session.close()


def test_no_observation_holds_a_hidden_test_of_any_kind(tmp_path):
    from spade_llm.config import load_config

    config = load_config(
        None,
        {
            "controller": {"epochs": 1, "tasks_per_epoch": 3, "concurrency": 3},
            "curriculum": {"kinds": ["induction", "deduction", "abduction"]},
            "solver": {"max_turns": 3, "public_tests": 3},
            "validation": {"min_kill_rate": 0.0},
            "sandbox": {"backend": "subprocess", "timeout_s": 3.0, "test_timeout_s": 1.0},
        },
    )
    server = InProcess(config, tmp_path / "run", _scripted_generator())
    seen: dict[str, list[dict[str, Any]]] = {}
    try:
        with env_client(server.url) as env:
            for _ in range(3):
                result = env.reset()
                kind = result.observation["kind"]
                observations = seen.setdefault(kind, [{"observation": result.observation, "reward": result.reward}])
                answers = iter(LEAKY[kind])
                while not result.done:
                    result = env.step({"answer": next(answers)})
                    observations.append({"observation": result.observation, "reward": result.reward})
    finally:
        server.close()
    assert sorted(seen) == ["abduction", "deduction", "induction"]
    for kind, observations in seen.items():
        assert len(observations) >= 3, kind  # several turns of feedback
        text = json.dumps(observations).lower()
        secrets = SEAL_SECRETS if kind == "deduction" else (SECRET,)
        assert not any(s in text for s in secrets), (kind, text[:2000])
        if kind == "induction":  # the public tests were fed back, with their inputs
            assert "'abc'" in text and "public tests" in text
    # the control: the run's own records hold the hidden tests, and the trajectories the same conversations
    data = read_run(tmp_path / "run")
    assert {t.kind for t in data.tasks} == {"induction", "deduction", "abduction"}
    stored = json.dumps([t.model_dump(mode="json") for t in data.tasks]).lower()
    assert SECRET in stored and all(s in stored for s in SEAL_SECRETS)
    assert len(data.trajectories) == 3 and all(t.source == "env" for t in data.trajectories)


def test_bugfix_episodes_show_the_bug_refuse_it_handed_back_and_pay_the_fix(tmp_path, monkeypatch):
    """A run of bug-fix tasks (the kit's scripted generator) served to openenv-core's client and to
    ``SpadeLiveEnv``: the opening shows the buggy code, the bug handed back gets the loop's feedback and no
    pass, the fix ends the episode passed, paid 1.0; the run records both episodes as bug fixes."""
    from bugfix_kit import TASKS, fenced, propose

    from spade_llm.config import load_config
    from spade_llm.fake.scripted import FunctionLLM
    from spade_llm.integrations.trl import SpadeLiveEnv
    from spade_llm.kinds.bugfix import UNCHANGED, secret_lines

    config = load_config(
        None,
        {
            "seed": 3,
            "controller": {"epochs": 1, "tasks_per_epoch": 2, "concurrency": 2},
            "curriculum": {"kinds": ["bugfix"]},
            "generator": {"samples_per_request": 2},
            "solver": {"max_turns": 3, "public_tests": 3, "samples_per_task": 1},
            "sandbox": {"backend": "subprocess", "timeout_s": 5.0, "test_timeout_s": 1.0},
        },
    )
    server = InProcess(config, tmp_path / "run", FunctionLLM(propose, model="scripted"))
    served: dict[str, Task] = {}

    def the_task(task_id: str) -> Task:
        return next(t for t in read_run(tmp_path / "run", tolerant=True).tasks if t.task_id == task_id)

    try:
        with env_client(server.url) as env:
            result = env.reset()
            task = served.setdefault("client", the_task(result.observation["task_id"]))
            opening = result.observation["messages"][-1]["content"]
            assert result.observation["kind"] == "bugfix"
            assert task.buggy_code is not None and task.buggy_code.rstrip() in opening
            assert not set(secret_lines(task)) & {line.strip() for line in opening.splitlines()}  # the line it broke
            result = env.step({"answer": fenced(task.buggy_code)})  # the bug, handed back
            assert not result.done and UNCHANGED in result.observation["messages"][-1]["content"]
            result = env.step({"answer": fenced(task.reference_code)})
            assert result.done and result.reward == 1.0 and result.observation["final_status"] == "passed"
        monkeypatch.delenv("SPADE_ENV_TOKEN", raising=False)
        live = SpadeLiveEnv(server.url, model="live-policy")
        text = live.reset()
        task = served.setdefault("live", the_task(live.task_id or ""))
        assert task.task_id != served["client"].task_id and live.kind == "bugfix"
        assert (task.buggy_code or "").rstrip() in text and "the full source of the corrected function" in text
        feedback = live.run_tests(task.buggy_code or "")
        assert not live.done and UNCHANGED in feedback
        live.run_tests(TASKS[task.entry_point]["reference_code"])
        assert live.done and live.final_status == "passed" and live.get_reward() == 1.0
        live._drop()
    finally:
        server.close()
    trajectories = read_run(tmp_path / "run").trajectories
    assert {t.task_id for t in trajectories} == {t.task_id for t in served.values()}
    assert all(t.kind == "bugfix" and t.source == "env" and t.final_status == "passed" for t in trajectories)
    assert all(t.attempts[0].result.load_error == UNCHANGED and len(t.attempts) == 2 for t in trajectories)


# -- abandoned episodes, sessions, stop and resume -----------------------------------------------


def _config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "serve.yaml"
    path.write_text(text)
    return str(path)


def test_abandoned_episodes_are_recorded_and_the_epoch_still_closes(tmp_path, serve_env, fake_server):
    config = _config_file(tmp_path, "env:\n  episode_timeout_s: 2\ncontroller:\n  tasks_per_epoch: 3\n")
    run = tmp_path / "run"
    server = serve_env("--config", config, "--model", "fake/default", "--seed", "0", "--out", str(run))
    policy = ask(fake_server().url, "strong-solver")
    silent = env_client(server.url)
    silent.connect()
    held = silent.reset()  # taken, then never answered: times out after 2 s
    leaving = env_client(server.url)
    leaving.connect()
    left = leaving.reset()
    leaving.close()  # closed mid-episode: abandoned at once
    (played,) = play(server.url, policy, 1)
    time.sleep(3)  # past the timeout: the epoch closes, the next one starts
    with pytest.raises(RuntimeError, match="abandoned"):
        silent.step({"answer": "```python\ndef f():\n    pass\n```"})  # a late reply is refused
    silent.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (run / "metrics.jsonl").read_text().strip():
        time.sleep(0.2)
    assert server.stop() == 0, server.stderr
    data = records(run)
    by_id = {t.task_id: t for t in data.trajectories}
    first = data.metrics[0] if data.metrics else None  # the epoch closed with all three: one measured
    assert first is not None and (first.episodes, first.abandoned) == (1, 2)
    timed_out = by_id[held.observation["task_id"]]
    assert "no reply within env.episode_timeout_s" in (timed_out.error or "") and "abandoned" in timed_out.flags
    closed = by_id[left.observation["task_id"]]
    assert "closed its session" in (closed.error or "") and "abandoned" in closed.flags
    finished = by_id[played[-1].observation["task_id"]]
    assert finished.error is None and "abandoned" not in finished.flags
    assert timed_out.final_status == closed.final_status == "error"
    assert "(2 abandoned)" in server.stderr


def test_sessions_and_episodes_in_flight_are_bounded(tmp_path, serve_env):
    config = _config_file(tmp_path, "env:\n  reset_timeout_s: 3\n")
    server = serve_env("--config", config, *SMALL, "--pool", "2", "--max-sessions", "3", "--out", str(tmp_path / "run"))
    clients = [env_client(server.url) for _ in range(4)]
    try:
        for client in clients[:3]:
            client.connect()
        first, second = clients[0].reset(), clients[1].reset()  # two episodes in flight: env.pool
        assert first.observation["episode_id"] != second.observation["episode_id"]
        # the third waits for a free episode, bounded by the configured reset_timeout_s (the message
        # names it: a verdict, not a wall time, which a loaded machine stretches)
        with pytest.raises(RuntimeError, match=r"no episode ready within env\.reset_timeout_s \(3 s\)"):
            clients[2].reset()
        from websockets.exceptions import ConnectionClosed

        with pytest.raises((RuntimeError, ConnectionClosed)) as refused:
            clients[3].reset()  # a fourth session is refused (env.max_sessions), its socket closed after the error
        assert isinstance(refused.value, ConnectionClosed) or "CAPACITY_REACHED" in str(refused.value)
    finally:
        for client in clients:
            client.close()
    assert server.stop() == 0


def test_a_stop_leaves_records_a_resume_goes_on_and_report_and_export_read(tmp_path, serve_env, fake_server):
    run = tmp_path / "run"
    small = ["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "2", "--seed", "3"]
    server = serve_env(*small, "--out", str(run))
    policy = ask(fake_server().url, "strong-solver")
    play(server.url, policy, 6)  # epoch 0 and half of epoch 1
    midway = env_client(server.url)
    midway.connect()
    midway.reset()  # an episode held when the server stops: unrecorded, run again on resume
    assert server.stop(signal.SIGINT) == 0, server.stderr
    midway.close()
    assert f"--resume {run}" in server.stderr
    stopped = records(run)
    assert len(stopped.trajectories) == 6 and len(stopped.metrics) == 1
    assert not any("abandoned" in t.flags for t in stopped.trajectories)

    resumed = serve_env("--resume", str(run), "--epochs", "3")
    finished = play(resumed.url, policy, 6)  # the rest of epoch 1, and epoch 2
    assert resumed.wait(60) == 0, resumed.stderr  # its epochs done, it stops by itself
    assert all(results[-1].done for results in finished)
    data = records(run)
    assert len(data.trajectories) == 12 and len({t.trajectory_id for t in data.trajectories}) == 12
    assert [m.epoch for m in data.metrics] == [0, 1, 2] and all(m.episodes == 4 for m in data.metrics)
    assert len(data.task_stats) == 6
    assert all(t.source == "env" for t in data.trajectories)
    manifest = json.loads((run / "manifest.json").read_text())
    assert len(manifest["resumes"]) == 1 and manifest["models"]["solver"] == "env"
    report = subprocess.run([*SPADE, "report", str(run)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert (run / "report.html").is_file()
    out = tmp_path / "sft.jsonl"
    export = subprocess.run(
        [*SPADE, "export", str(run), "--format", "sft", "-o", str(out)], capture_output=True, text=True
    )
    assert export.returncode == 0, export.stderr
    assert out.read_text().strip()
    # a serve-env run is not resumed by spade run (its solver is the clients), and the other way round
    other = subprocess.run([*SPADE, "run", "--resume", str(run)], capture_output=True, text=True, timeout=60)
    assert other.returncode == 2


@pytest.mark.bwrap
def test_hostile_replies_are_contained_by_the_sandbox(tmp_path, serve_env):
    from spade_llm.errors import SandboxUnavailable
    from spade_llm.sandbox.registry import get_sandbox

    try:
        get_sandbox("bwrap").close()
    except SandboxUnavailable as e:
        pytest.skip(f"needs a working bubblewrap (auto falls back to subprocess, which contains nothing): {e}")
    outside = tmp_path / "outside"
    outside.mkdir()
    config = _config_file(tmp_path, "sandbox:\n  timeout_s: 2\n  test_timeout_s: 1\nsolver:\n  max_turns: 1\n")
    run = tmp_path / "run"
    server = serve_env("--config", config, *SMALL, "--sandbox", "auto", "--out", str(run))
    write = (
        "import os\n"
        f"os.system('touch {outside}/by_system')\n"
        f"open('{outside}/by_open', 'w').write('x')\n"
        "def {name}(*args):\n    return None\n"
    )
    loop = "def {name}(*args):\n    while True:\n        pass\n"
    results = []
    with env_client(server.url) as env:
        for code in (write, loop, write, loop):
            first = env.reset()
            name = re.search(r"`(\w+)\(", first.observation["messages"][-1]["content"])
            entry = name.group(1) if name else "f"
            results.append(env.step({"code": code.replace("{name}", entry)}))
    assert server.stop() == 0
    assert json.loads((run / "manifest.json").read_text())["sandbox"] == "bwrap"
    assert not list(outside.iterdir()), "a reply wrote outside the sandbox"
    assert all(r.done and r.observation["final_status"] != "passed" for r in results)
    assert results[1].observation["final_status"] == "timeout" and results[3].observation["final_status"] == "timeout"


# -- access ----------------------------------------------------------------------------------------------


def test_beyond_loopback_a_token_is_required_and_checked(tmp_path, serve_env, fake_server):
    no_token = {"SPADE_ENV_TOKEN": ""}
    refused = serve_env("--host", "0.0.0.0", *SMALL, "--out", str(tmp_path / "r0"), env=no_token, listen=False)
    assert refused.wait(60) == 2
    assert "needs a token" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "r0").exists()

    token = "tok-3141592653"
    server = serve_env("--host", "0.0.0.0", *SMALL, "--out", str(tmp_path / "r1"), env={"SPADE_ENV_TOKEN": token})
    port = server.url.rsplit(":", 1)[1]
    plain = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{plain}/health").status_code == 200  # the readiness probe stays open
    assert httpx.get(f"{plain}/schema").status_code == 401
    assert httpx.get(f"{plain}/schema", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    with pytest.raises(Exception, match=r"403|401|rejected"):
        env_client(plain).reset()  # the WebSocket handshake is refused
    (episode,) = play(f"http://spade:{token}@127.0.0.1:{port}", ask(fake_server().url, "strong-solver"), 1)
    assert episode[-1].done
    assert server.stop() == 0


def test_loopback_refuses_other_hosts_and_web_pages_and_http_episodes(tmp_path, serve_env):
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"))
    assert httpx.get(f"{server.url}/health").status_code == 200
    assert httpx.get(f"{server.url}/health", headers={"Host": "evil.example:80"}).status_code == 403
    assert httpx.get(f"{server.url}/schema", headers={"Origin": "http://evil.example"}).status_code == 403
    schema = httpx.get(f"{server.url}/schema").json()
    assert {"answer", "code"} <= set(schema["action"]["properties"])
    assert {"messages", "task_id", "kind", "turn", "final_status"} <= set(schema["observation"]["properties"])
    answer = httpx.post(f"{server.url}/reset", json={})
    assert answer.status_code == 501 and "WebSocket" in answer.json()["detail"]
    from websockets.sync.client import connect

    with pytest.raises(Exception, match="403"):
        connect(server.url.replace("http", "ws") + "/ws", additional_headers={"Origin": "http://evil.example"})
    with env_client(server.url) as env:
        with pytest.raises(RuntimeError, match="reset"):
            env.step({"answer": "x"})  # no episode yet
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"answer": "x", "code": "y"})  # exactly one of the two
        assert not env.reset().done  # the session lives on
    assert server.stop() == 0


def test_the_cli_imports_no_openenv_until_serve_env_runs(monkeypatch, capsys):
    code = "import spade_llm.cli, sys; sys.exit(int(any(m in sys.modules for m in ('openenv', 'fastapi', 'uvicorn'))))"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
    proc = subprocess.run([*SPADE, "serve-env", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--resume" in proc.stdout and "--token-file" in proc.stdout
    import importlib.util

    from spade_llm.cli.app import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openenv" else real(name, *a))
    assert main(["serve-env", "--model", "fake/default"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'spade-selfplay[env]'" in err


def test_the_server_and_the_client_load_openenv_without_its_gradio_web_interface():
    """openenv-core's web interface imports Gradio (seconds of every serve-env start and client); spade
    never mounts it. It stays unloaded, and a process that wants it afterwards still imports it."""
    code = (
        "import sys\n"
        "import spade_llm.serve.env.server\n"
        "from spade_llm.integrations.trl import serve_env_client\n"
        "serve_env_client('http://127.0.0.1:9', None, message_timeout_s=1.0)\n"
        "import openenv.core.env_server as server\n"
        "assert 'gradio' not in sys.modules and server.create_web_interface_app is None, 'gradio loaded'\n"
        "from openenv.core.env_server.web_interface import create_web_interface_app\n"
        "assert 'gradio' in sys.modules and callable(create_web_interface_app)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_env_section_sizes_epochs_and_the_solver_is_the_clients():
    from spade_llm.config import load_config
    from spade_llm.serve.env.running import env_run_config

    config = env_run_config(load_config(None, {"env": {"episodes_per_epoch": 10}, "solver": {"samples_per_task": 4}}))
    assert config.controller.tasks_per_epoch == 3  # ceil(10 / 4) tasks, 12 episodes at most
    assert config.solver.model == "env"
    default = env_run_config(load_config(None, {"controller": {"tasks_per_epoch": 5}}))
    assert default.controller.tasks_per_epoch == 5 and default.env.episodes_per_epoch is None
    # the episodes are conversations held here: the run's executor is local, its programs go to Ray
    # (EnvSession's sandbox: tests/serve/test_serve_env_ray.py)
    assert env_run_config(load_config(None, {"executor": "ray"})).executor == "local"
    sequential = env_run_config(load_config(None, {"env": {"overlap": False}}))
    assert default.controller.overlap and not sequential.controller.overlap


async def test_the_broker_hands_episodes_first_come_and_never_loses_one():
    import asyncio

    from spade_llm.llm.base import LLMRequest
    from spade_llm.serve.env.broker import EnvBroker, EpisodeGone
    from spade_llm.types import Message

    broker = EnvBroker(episode_timeout_s=5, reset_timeout_s=0.3)
    with pytest.raises(EpisodeGone, match="no episode ready"):
        await broker.take()  # nothing yet: bounded
    leaving = asyncio.ensure_future(broker.take())  # a client that will leave while it waits
    staying = asyncio.ensure_future(broker.take())
    await asyncio.sleep(0)
    episode = broker.open(SHOUT, 0, 0)
    request = LLMRequest(
        messages=[Message(role="user", content="go")],
        role="solver",
        metadata={"epoch": 0, "task_id": SHOUT.task_id, "sample_index": 0, "turn": 1},
    )
    solving = asyncio.ensure_future(broker.complete(request))
    await asyncio.sleep(0)  # offered to the first taker...
    leaving.cancel()  # ...which leaves before it resumes: the episode goes to the next one in line
    held, view = await staying
    assert held is episode and view.turn == 1 and view.messages == [{"role": "user", "content": "go"}]
    replying = asyncio.ensure_future(broker.reply(held, "```python\ndef shout(s):\n    return s\n```"))
    answer = await solving
    assert "def shout" in answer.text
    with pytest.raises(EpisodeGone, match="not waiting for a reply"):
        await broker.reply(held, "again")  # one step per observation
    replying.cancel()
