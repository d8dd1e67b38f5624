"""Text that never breaks a run, end to end: ``spade solve`` against a chat server whose answers hold lone
surrogates (JSON ``"\\ud800"`` on the wire, a surrogate pair split across two streamed chunks) exits 0 with
its trajectories, and every ``spade export`` format and ``spade report`` write a run directory whose records
hold escaped lone surrogates (as another tool or an older version wrote them), with U+FFFD in their place.

Only the CLI is used (as subprocesses), so these run against any checkout on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

LONE = "\ud800"
SMILE = "\U0001f600"
HIGH, LOW = "\ud83d", "\ude00"  # SMILE as a UTF-16 pair
REPLACEMENT = "\ufffd"
SPADE = [sys.executable, "-m", "spade_llm.cli"]

pytestmark = pytest.mark.e2e


def encodes(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


TASK = {
    "task_id": "add-1",
    "kind": "induction",
    "description": "Write `add(a, b)` that returns the sum of two integers.",
    "entry_point": "add",
    "reference_code": "def add(a, b):\n    return a + b\n",
    "tests": [
        {"input": "(1, 2)", "expected": 3},
        {"input": "(-1, 5)", "expected": 4},
        {"input": "(2, 2)", "expected": 4},
        {"input": "(10, 20)", "expected": 30},
    ],
}
RIGHT = ["Here it is ", f"{HIGH}", f"{LOW}:\n```python\ndef add(a, b):\n    return a + b  # {LONE}\n```\n"]
WRONG = [f"Try this {LONE}:\n```python\ndef add(a, b):\n    return a - b  # {HIGH}", f"{LOW}\n```\n"]
"""Answers as chunks: a stream sends each as one event (the pair's halves in two), a plain body the
whole text; either way the JSON on the wire holds ``\\ud800`` and ``\\ud83d``, ``\\ude00`` escapes."""


class SurrogateModel(BaseHTTPRequestHandler):
    """A chat server whose answers alternate right and wrong, each holding a lone surrogate."""

    turns = itertools.count()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        chunks = RIGHT if next(self.turns) % 2 == 0 else WRONG
        if body.get("model") == "clean":  # the same answers with no surrogate, for a run to poison later
            chunks = [c.replace(LONE, "").replace(HIGH, "").replace(LOW, "") for c in chunks]
        if body.get("stream"):
            events: list[dict[str, Any]] = [
                {"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in chunks
            ]
            events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
            ctype = "text/event-stream"
        else:
            message = {"role": "assistant", "content": "".join(chunks)}
            answer = {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
            data, ctype = json.dumps(answer).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def chat_server() -> Iterator[str]:
    """A ``SurrogateModel`` of its own (its first answer right, then wrong, right...) on a free port: its URL."""
    handler = type("Model", (SurrogateModel,), {"turns": itertools.count()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def spade(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, timeout=timeout, env=env)


def strict_lines(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file that must be strict UTF-8 holding no escaped lone surrogate."""
    text = path.read_bytes().decode("utf-8")  # strict
    assert not re.search(r"\\u[dD][89a-fA-F]", text), "a lone surrogate was written escaped"
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def solve(tmp_path: Path, *extra: str, model: str = "m") -> subprocess.CompletedProcess[str]:
    """``spade solve`` of ``TASK``, two samples of one turn each, against a fresh ``chat_server``: one
    answer right, one wrong. The run directory is ``tmp_path / "out"``."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n", encoding="utf-8")
    with chat_server() as url:
        args = ("--model", f"openai/{model}", "--api-base", url, "--sandbox", "subprocess", "--max-turns", "1")
        return spade("solve", str(tasks), *args, "--samples-per-task", "2", "--out", str(tmp_path / "out"), *extra)


def assert_solved(out: Path, proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr
    trajectories = strict_lines(out / "trajectories.jsonl")
    assert len(trajectories) == 2
    assert sorted(t["final_status"] for t in trajectories) == ["failed", "passed"]
    answers = [m["content"] for t in trajectories for m in t["messages"] if m["role"] == "assistant"]
    assert len(answers) == 2 and all(REPLACEMENT in a and SMILE in a for a in answers)
    return trajectories


def test_solve_with_surrogates_in_the_answers_exits_0_with_its_trajectories(tmp_path: Path) -> None:
    assert_solved(tmp_path / "out", solve(tmp_path))  # streamed answers, the default
    assert [r["task_id"] for r in strict_lines(tmp_path / "out" / "task_stats.jsonl")] == ["add-1"]


@pytest.mark.parametrize("transport", ["plain", pytest.param("litellm", marks=pytest.mark.slow)])
def test_solve_with_surrogates_over_a_plain_body_or_litellm(tmp_path: Path, transport: str) -> None:
    if transport == "litellm":
        pytest.importorskip("litellm", reason="litellm is not installed")
    config = tmp_path / "llm.yaml"
    config.write_text("llm:\n  stream: false\n" if transport == "plain" else "llm:\n  transport: litellm\n")
    assert_solved(tmp_path / "out", solve(tmp_path, "--config", str(config)))


def poison(run_dir: Path, target: Path) -> Path:
    """A copy of ``run_dir`` whose records hold escaped lone surrogates, as another tool or an older
    version may have written them: in the task, every message, the code, the outputs."""
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(".lock", "report.html", "exports"))

    def rewrite(name: str, change: Any) -> None:
        path = target / name
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for r in records:
            change(r)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")  # "\ud800" escapes

    def task(r: dict[str, Any]) -> None:
        r["description"] += f" {LONE}"
        r["tags"] = [*r["tags"], f"tag{LOW}"]

    def trajectory(r: dict[str, Any]) -> None:
        for m in r["messages"]:
            m["content"] += f" {LONE}"
        for a in r["attempts"]:
            a["code"] += f"\n# {HIGH}"
            a["result"]["stderr"] = f"err {LONE}"
            for t in a["result"].get("test_results") or []:
                t["output"] = f"'{LOW}'"

    rewrite("tasks.jsonl", task)
    rewrite("trajectories.jsonl", trajectory)
    assert b"\\ud800" in (target / "trajectories.jsonl").read_bytes()
    return target


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run solved with answers free of surrogates (so any checkout makes it), then poisoned."""
    where = tmp_path_factory.mktemp("poisoned")
    proc = solve(where, model="clean")
    assert proc.returncode == 0, proc.stderr
    return poison(where / "out", where / "run")


@pytest.mark.parametrize(
    "fmt", ["sft", "dpo", "grpo", "verl", "verl-sandbox_fusion"], ids=lambda f: f.replace("verl-", "verl:")
)
def test_every_export_writes_records_holding_lone_surrogates(poisoned: Path, tmp_path: Path, fmt: str) -> None:
    """Needs the defensive read in ``spade_llm.store.read_jsonl`` (another helper's file)."""
    args = ["--format", fmt]
    if fmt.startswith("verl"):
        pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
        args = ["--format", "verl", "--verl-reward", fmt.split("-")[1] if "-" in fmt else "spade"]
    output = tmp_path / ("out.parquet" if fmt.startswith("verl") else "out.jsonl")
    proc = spade("export", str(poisoned), *args, "-o", str(output))
    assert proc.returncode == 0, proc.stderr
    if fmt.startswith("verl"):
        import pyarrow.parquet as pq

        rows = pq.read_table(output).to_pylist()
        text = json.dumps(rows, ensure_ascii=False, default=str)
    else:
        rows = strict_lines(output)
        text = json.dumps(rows, ensure_ascii=False)
    assert rows and encodes(text)
    assert REPLACEMENT in text  # the poisoned prompt or answer, written with U+FFFD


def test_report_writes_a_page_for_records_holding_lone_surrogates(poisoned: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    page = tmp_path / "page.html"
    proc = spade("report", str(poisoned), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_bytes().decode("utf-8")  # strict
    assert REPLACEMENT in html and "add-1" in html


def test_a_tasks_file_holding_an_escaped_lone_surrogate_is_read(tmp_path: Path) -> None:
    # another tool wrote "\ud800" (json.dumps does): pydantic's parser refused the line as not JSON
    task = {
        "task_id": "t\ud800",
        "description": "Echo x \ud800.",
        "entry_point": "f",
        "reference_code": "def f(x):\n    return x\n",
        "tests": [{"input": f"({i},)", "expected": i} for i in range(3)],
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n")
    done = spade("evaluate", str(path), "--sandbox", "subprocess")
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["task_id"] == "t\ufffd" and row["passed"] is True
