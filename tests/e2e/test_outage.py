"""An outage is not the solver's fault: the circuit breaker stops the run, resumable, recording
nothing of it; one writer per run directory.

End to end with real processes: a closed port, a server answering 401, ``spade serve-fake`` killed
mid-run and started again, and two ``spade run`` on one directory.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from run_kit import records

SPADE = [sys.executable, "-m", "spade_llm.cli"]
ENV = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def breaker_config(tmp_path: Path, seconds: float) -> str:
    path = tmp_path / "breaker.yaml"
    path.write_text(f"llm:\n  breaker_s: {seconds}\n  backoff_s: 0.05\nsandbox:\n  test_timeout_s: 0.5\n")
    return str(path)


def spade(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


@pytest.mark.e2e
def test_a_closed_port_stops_the_run_naming_the_endpoint(tmp_path):
    # a port held bound but never listened on: connections are refused, and no test running beside
    # this one (-n auto) can start a server on it meanwhile
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = int(closed.getsockname()[1])
        out = tmp_path / "run"
        started = time.monotonic()
        proc = spade(
            "run", "--config", breaker_config(tmp_path, 3), "--model", "openai/default",
            "--api-base", f"http://127.0.0.1:{port}/v1", "--out", str(out),
        )  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        assert time.monotonic() - started < 60
        last = proc.stderr.strip().splitlines()[-1]
        assert f"127.0.0.1:{port}" in last and "unreachable" in last and "--resume" in last
        s = summary(out)
        assert s["complete"] is False and "unusable" in s["stopped_because"]
        # nothing of the outage was recorded as the model's doing
        assert not (out / "rejected.jsonl").read_text() and not (out / "metrics.jsonl").read_text()


class _Refuse(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b'{"error": {"message": "Invalid API key", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.e2e
def test_a_refused_key_stops_the_run_at_once(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "run"
        started = time.monotonic()
        proc = spade(
            "run", "--model", "openai/default", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
            "--out", str(out),
        )  # fmt: skip
    finally:
        server.shutdown()
    assert proc.returncode == 3 and "auth" in proc.stderr and "Invalid API key" in proc.stderr
    assert time.monotonic() - started < 30  # no 30 s wait: a refused key does not get better
    assert summary(out)["complete"] is False and summary(out)["difficulty"] == []


def _serve(port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*SPADE, "serve-fake", "--port", str(port), "--latency", "0.02"],
        stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert re.search(r"listening on", line), line
    return proc


@pytest.mark.e2e
@pytest.mark.slow
def test_serve_fake_killed_mid_run_then_resumed_equals_an_uninterrupted_run(tmp_path):
    port = free_port()
    api = ["--model", "openai/default", "--api-base", f"http://127.0.0.1:{port}/v1"]
    args = [*api, "--config", breaker_config(tmp_path, 3), "--epochs", "2", "--tasks-per-epoch", "6", "--seed", "5"]
    server = _serve(port)
    try:
        full = tmp_path / "full"
        assert spade("run", *args, "--out", str(full), "--quiet").returncode == 0
        cut = tmp_path / "cut"
        run = subprocess.Popen([*SPADE, "run", *args, "--out", str(cut), "--quiet"], env=ENV, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and run.poll() is None:
            t = cut / "trajectories.jsonl"
            if t.exists() and t.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.005)
        server.send_signal(signal.SIGKILL)
        server.wait()
        started = time.monotonic()
        _, err = run.communicate(timeout=90)
        assert run.returncode == 3, err
        assert time.monotonic() - started < 90
        assert summary(cut)["complete"] is False
        assert not any(r.get("reason", "").startswith("llm_") for r in records(cut)["rejected.jsonl"])
        server = _serve(port)  # the endpoint is back
        proc = spade("run", "--resume", str(cut), "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert records(cut) == records(full)
        assert summary(cut)["complete"] is True
    finally:
        server.kill()
        server.wait()


@pytest.mark.e2e
@pytest.mark.slow
def test_a_second_writer_is_refused_and_the_run_still_verifies(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen(
        [*SPADE, "run", "--epochs", "3", "--tasks-per-epoch", "8", "--out", str(out), "--quiet"],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (out / ".lock").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        second = spade("run", "--resume", str(out), "--quiet")
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid}" in second.stderr and len(second.stderr.strip().splitlines()) == 1
    finally:
        _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    tasks = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    assert len({t["task_id"] for t in tasks}) == len(tasks)
    verify = spade("verify", str(out / "tasks.jsonl"))
    assert verify.returncode == 0 and all(json.loads(x)["valid"] for x in verify.stdout.splitlines())
    # the lock died with its holder: resuming the finished run works at once
    assert spade("run", "--resume", str(out), "--epochs", "3", "--quiet").returncode == 0
