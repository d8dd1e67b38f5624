"""``spade serve-sandbox`` (spade_llm.serve.sandbox): SandboxFusion's ``/run_code`` over our sandbox.

One server per module, in-process on a free 127.0.0.1 port, on the bwrap backend where it works;
where it does not, the subprocess backend serves the harmless tests and every test whose code
could do harm (network) is skipped. The answers are checked against what verl's ``sandbox_fusion``
client reads: top-level ``status`` (Success/Failed/SandboxError) and ``run_result`` (``status``
Finished/TimeLimitExceeded, ``return_code``, ``stdout``, ``stderr``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import polyglot_programs as polyglot
import pytest
from sandbox_backends import unavailable
from sandbox_serving import serving

from spade_llm.errors import UserError
from spade_llm.languages import TOOLCHAINS
from spade_llm.sandbox import registry
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.serve.sandbox import (
    FETCH_WRAPPER,
    WRAPPER_SLACK_S,
    SandboxServer,
    ServeLimits,
    memory_bucket,
    parse_request,
    plan,
    serve_sandbox,
)

REASON = unavailable("bwrap")
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bwrap: {REASON}")
BACKEND = "bwrap" if REASON is None else "subprocess"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with serving(get_sandbox(BACKEND), concurrency=4) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: SandboxServer) -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def run_code(client: httpx.Client, server: SandboxServer, code: str, **fields: Any) -> dict[str, Any]:
    payload = json.dumps({"code": code, "language": "python", **fields})  # ASCII: lone surrogates escaped
    response = client.post(server.url, content=payload, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
    return body


POST_HEAD = b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
"""The start of a raw ``/run_code`` request as a JSON client sends it (loopback Host, JSON type)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- shapes ---------------------------------------------------------------------------------------


def test_success_has_sandboxfusions_shape(client: httpx.Client, server: SandboxServer) -> None:
    body = run_code(client, server, "print('hello')")
    assert body["status"] == "Success" and body["message"] == "" and body["compile_result"] is None
    run = body["run_result"]
    assert set(run) == {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert (run["status"], run["return_code"], run["stdout"], run["stderr"]) == ("Finished", 0, "hello\n", "")
    assert isinstance(run["execution_time"], float) and run["execution_time"] >= 0
    assert body["files"] == {}


def test_nonzero_exit_is_failed_but_finished(client: httpx.Client, server: SandboxServer) -> None:
    body = run_code(client, server, "import sys\nprint('out')\nsys.exit(3)")
    assert body["status"] == "Failed"
    run = body["run_result"]
    assert (run["status"], run["return_code"], run["stdout"]) == ("Finished", 3, "out\n")
    body = run_code(client, server, "raise ValueError('boom')")
    assert body["status"] == "Failed" and body["run_result"]["return_code"] == 1
    assert "ValueError: boom" in body["run_result"]["stderr"]


def test_stdin_reaches_the_program(client: httpx.Client, server: SandboxServer) -> None:
    body = run_code(client, server, "import sys\nprint(sys.stdin.read()[::-1])", stdin="abc\n")
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "\ncba\n"
    body = run_code(client, server, "import sys\nprint(repr(sys.stdin.read()))", stdin=None)
    assert body["run_result"]["stdout"] == "''\n"


def test_files_in_and_fetch_files_out(client: httpx.Client, server: SandboxServer) -> None:
    code = (
        "import sys\n"
        "data = open('in/data.txt').read()\n"
        "open('out.txt', 'w').write(data.upper())\n"
        "print(sys.stdin.read(), end='')\n"
        "sys.stderr.write('note\\n')\n"
    )
    body = run_code(
        client,
        server,
        code,
        stdin="from stdin",
        files={"in/data.txt": b64(b"payload"), "ignored.txt": None},
        fetch_files=["out.txt", "missing.txt", "./in/data.txt"],
    )
    assert body["status"] == "Success", body
    run = body["run_result"]
    assert (run["status"], run["return_code"], run["stdout"], run["stderr"]) == ("Finished", 0, "from stdin", "note\n")
    assert {name: base64.b64decode(v) for name, v in body["files"].items()} == {
        "out.txt": b"PAYLOAD",
        "./in/data.txt": b"payload",
    }


def test_fetch_files_keeps_failures_and_timeouts(client: httpx.Client, server: SandboxServer) -> None:
    body = run_code(client, server, "open('o', 'w').write('x')\nraise SystemExit(4)", fetch_files=["o"])
    assert body["status"] == "Failed" and body["run_result"]["return_code"] == 4
    assert body["files"] == {"o": b64(b"x")}
    code = "import time\nprint('asleep', flush=True)\ntime.sleep(30)\nprint('woke')"
    body = run_code(client, server, code, run_timeout=0.5, fetch_files=["o"])
    assert body["status"] == "Failed" and body["run_result"]["status"] == "TimeLimitExceeded"
    assert body["run_result"]["return_code"] is None
    assert body["run_result"]["stdout"] == "asleep\n"  # cut in its sleep: it never woke


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"language": "php"}, "language 'php' is not supported"),
        ({"files": {"../escape": b64(b"x")}}, "'../escape'"),
        ({"files": {"/etc/x": b64(b"x")}}, "'/etc/x'"),
        ({"files": {"program.py": b64(b"x")}}, "server's own"),
        ({"fetch_files": ["/etc/passwd"]}, "'/etc/passwd'"),
        ({"files": {"a": b64(b"x"), "a/b": b64(b"y")}}, "'a' would be both a file and a folder"),
        ({"files": {"program.py/x": b64(b"x")}}, "'program.py' would be both"),
        ({"fetch_files": ["\ud800"]}, "not a file name"),
        ({"files": {"a\ud800": b64(b"x")}}, "not a file name"),
        ({"files": {"d/" + "a" * 256: b64(b"x")}}, "longer than 255 bytes"),
    ],
)
def test_what_cannot_run_is_a_sandbox_error(
    fields: dict[str, Any], needle: str, client: httpx.Client, server: SandboxServer
) -> None:
    body = run_code(client, server, "print(1)", **fields)
    assert body["status"] == "SandboxError" and needle in body["message"], body
    assert body["run_result"] is None


def test_python3_is_an_alias(client: httpx.Client, server: SandboxServer) -> None:
    assert run_code(client, server, "print(2)", language="python3")["status"] == "Success"


def test_bad_json_and_bad_fields_get_fastapis_422(client: httpx.Client, server: SandboxServer) -> None:
    response = client.post(server.url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail[0]["type"] == "json_invalid" and detail[0]["loc"] == ["body", 1]
    response = client.post(server.url, json={"language": "python"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "code"]
    response = client.post(server.url, json={"code": "1", "language": "python", "run_timeout": "soon"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "run_timeout"]
    response = client.post(server.url, json=[1, 2])
    assert response.status_code == 422
    assert run_code(client, server, "print(3)")["status"] == "Success"  # the server is still serving


def test_health_ping_stats_and_unknown_routes(client: httpx.Client, server: SandboxServer) -> None:
    base = server.origin
    assert client.get(f"{base}/v1/ping").json() == "pong"
    health = client.get(f"{base}/health").json()
    assert health == {"status": "ok", "backend": BACKEND, "isolating": BACKEND == "bwrap", "concurrency": 4}
    stats = client.get(f"{base}/stats").json()
    assert stats["runs"] >= 0 and "by_status" in stats
    response = client.get(f"{base}/nothing")
    assert response.status_code == 404 and response.json() == {"detail": "Not Found"}
    response = client.get(server.url)
    assert response.status_code == 405 and response.json() == {"detail": "Method Not Allowed"}


def test_request_body_size_is_bounded(server: SandboxServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(POST_HEAD + b"Content-Length: 999999999999\r\n\r\n")
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413 ")


def raw_exchange(port: int, data: bytes) -> tuple[int, Any]:
    """Send ``data`` on a connection of its own; the status and JSON body of the answer (0 and None
    when the server closed the connection without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    if not answer:
        return 0, None
    head, _, body = answer.partition(b"\r\n\r\n")

    def strict(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return int(head.split()[1]), json.loads(body, parse_constant=strict)


def raw_post(port: int, body: bytes) -> tuple[int, Any]:
    head = POST_HEAD + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    return raw_exchange(port, head + body)


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b'{"code": "1", "language": "python", "run_timeout": 1' + b"0" * 400 + b"}", 422, "finite"),
        # Pythons that convert ints of any length (before 3.10.7) read it, and clamp the memory limit
        (b'{"code": "1", "language": "python", "memory_limit_MB": 1' + b"0" * 5000 + b"}", (422, 200), ""),
        (b"[" * 100_000 + b"]" * 100_000, 422, "JSON decode"),
        (b'{"code": "1", "language": "python", "run_timeout": "\\ud800"}', 422, "valid number"),
        (b'{"code": "1", "language": "python", "memory_limit_MB": NaN}', 422, "valid integer"),
    ],
    ids=["int-past-float", "int-too-long", "nested-too-deep", "lone-surrogate", "nan"],
)
def test_odd_bodies_get_an_answer_in_json(
    server: SandboxServer, body: bytes, status: int | tuple[int, ...], needle: str
) -> None:
    """Bodies JSON allows but Python chokes on: an answer (strict JSON), never a dropped connection."""
    got, answer = raw_post(server.port, body)
    assert got in (status if isinstance(status, tuple) else (status,)), answer
    assert needle in json.dumps(answer)


def test_a_negative_chunk_size_is_a_bad_request(server: SandboxServer) -> None:
    head = POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    assert raw_exchange(server.port, head + b"-1\r\n") == (400, {"detail": "malformed chunk size"})


def test_a_bug_costs_its_request_a_500_and_the_server_keeps_serving(
    client: httpx.Client, server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(body: Any, gone: Any = None, request: Any = None) -> dict[str, Any]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(server, "run_code", broken)
    response = client.post(server.url, json={"code": "print(1)", "language": "python"})
    assert response.status_code == 500 and response.json() == {"detail": "Internal Server Error"}
    monkeypatch.undo()
    assert run_code(client, server, "print(3)")["status"] == "Success"


def test_a_client_that_stops_reading_is_cut_off(server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer of ~12 MB (1 MiB per stream, escaped 6x in JSON) to a client that never reads: the
    server drops the connection and its buffer after ``write_timeout_s`` instead of holding them."""
    monkeypatch.setattr(server, "write_timeout_s", 0.5, raising=False)
    code = "import sys\nsys.stdout.write('\\x01' * 1000000)\nsys.stderr.write('\\x01' * 1000000)\n"
    body = json.dumps({"code": code, "language": "python"}).encode()
    before = server.stats.connections  # other tests' pooled connections, idle
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        s.sendall(POST_HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.monotonic() + 20
        while server.stats.connections <= before and time.monotonic() < deadline:
            time.sleep(0.02)
        while server.stats.connections > before and time.monotonic() < deadline:
            time.sleep(0.05)
        held = server.stats.connections > before
        assert not held, "the server still holds the connection of a client that stopped reading"


def test_a_client_that_never_reads_is_let_go_when_its_connection_ends(
    server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer fits the write buffer (``drain`` returns), the client never reads it, then idles out:
    closing the connection must not wait for the answer to be taken (it never will be): the server
    drops it (the client, reading at last, finds the connection reset before the answer's end)."""
    from spade_llm.serve import httpbase as httpserve

    async def buffered(writer: asyncio.StreamWriter) -> None:  # as when the answer is under the high-water mark
        return None

    monkeypatch.setattr(server, "drain", buffered, raising=False)
    monkeypatch.setattr(httpserve, "IDLE_TIMEOUT_S", 0.2)
    code = "import sys\nsys.stdout.write('\\x01' * 1000000)\n"  # 6 MB of JSON escapes
    body = json.dumps({"code": code, "language": "python"}).encode()
    received = 0
    before = server.stats.connections  # other tests' pooled connections, idle
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        s.sendall(POST_HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.monotonic() + 20
        while server.stats.connections <= before and time.monotonic() < deadline:
            time.sleep(0.02)
        while server.stats.connections > before and time.monotonic() < deadline:
            time.sleep(0.02)  # answered, then idled out: the close has begun
        time.sleep(1.5)  # its grace for the buffered answer to go
        s.settimeout(5)
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(1 << 20):
                received += len(chunk)
    assert received < 6_000_000, "the server kept the connection open to flush an answer nobody reads"


# -- limits ---------------------------------------------------------------------------------------


def test_run_timeout_is_enforced(client: httpx.Client, server: SandboxServer) -> None:
    """A loop that never ends is cut at its limit (that it ends at all is the limit's doing)."""
    body = run_code(client, server, "print('started', flush=True)\nwhile True:\n    pass", run_timeout=0.5)
    assert body["status"] == "Failed"
    run = body["run_result"]
    assert run["status"] == "TimeLimitExceeded" and run["return_code"] is None
    assert run["stdout"] == "started\n"


def test_memory_limit_is_enforced(client: httpx.Client, server: SandboxServer) -> None:
    code = "x = bytearray(400 << 20)\nprint(len(x))"
    body = run_code(client, server, code, memory_limit_MB=128)
    assert body["status"] == "Failed" and body["run_result"]["status"] == "Finished"
    assert body["run_result"]["return_code"] != 0 and body["run_result"]["stdout"] == ""
    body = run_code(client, server, code, memory_limit_MB=1024)
    assert body["status"] == "Success" and body["run_result"]["stdout"] == f"{400 << 20}\n"


def test_memory_values_share_few_buckets() -> None:
    bounds = ServeLimits(default_memory_mb=1024, min_memory_mb=64, max_memory_mb=4096)
    # rounded down: a program never gets more memory than it asked for
    assert [memory_bucket(v, bounds) for v in (-1, 0, 1, 64, 65, 100, 128, 129, 1000, 1024, 1025)] == [
        1024, 1024, 64, 64, 64, 96, 128, 128, 768, 1024, 1024,
    ]  # fmt: skip
    assert memory_bucket(10**9, bounds) == 4096
    assert len({memory_bucket(v, bounds) for v in range(1, 5000)}) == 13


def test_parse_request_defaults() -> None:
    request = parse_request({"code": "x", "language": "python", "memory_limit_MB": 512.0})
    assert (request.stdin, request.run_timeout, request.memory_limit_mb, request.files, request.fetch_files) == (
        None,
        None,
        512,
        {},
        [],
    )
    job = plan(request, ServeLimits(default_run_timeout_s=7.0, max_run_timeout_s=60.0))
    assert (job.limits.timeout_s, job.limits.memory_mb, job.wrapped) == (7.0, 512, False)
    job = plan(
        parse_request({"code": "x", "language": "python", "run_timeout": 1e9, "fetch_files": ["o"]}), ServeLimits()
    )
    assert job.wrapped and job.limits.timeout_s == ServeLimits().max_run_timeout_s + WRAPPER_SLACK_S
    assert "json.loads(" in FETCH_WRAPPER  # the config travels as a JSON literal, never as code


@needs_bwrap
def test_network_is_closed(client: httpx.Client, server: SandboxServer) -> None:
    code = (
        "import socket\n"
        f"for addr in [('127.0.0.1', {server.port}), ('1.1.1.1', 53)]:\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=2).close()\n"
        "        print('open', addr)\n"
        "    except OSError as e:\n"
        "        print('blocked', type(e).__name__)\n"
    )
    body = run_code(client, server, code)
    assert body["status"] == "Success", body
    lines = body["run_result"]["stdout"].splitlines()
    assert len(lines) == 2 and all(line.startswith("blocked") for line in lines), lines


@needs_bwrap
async def test_thirty_two_requests_sixteen_at_a_time(server: SandboxServer) -> None:
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def one(i: int) -> dict[str, Any]:
            code = f"import sys\nn = int(sys.stdin.read())\nprint(n * n)\nsys.exit({i % 2})"
            response = await client.post(server.url, json={"code": code, "language": "python", "stdin": str(i)})
            assert response.status_code == 200
            return dict(response.json())

        answers = await asyncio.gather(*(one(i) for i in range(32)))
    for i, body in enumerate(answers):
        assert body["run_result"]["stdout"] == f"{i * i}\n", body
        assert body["run_result"]["return_code"] == i % 2
        assert body["status"] == ("Success" if i % 2 == 0 else "Failed")
    assert server.stats.max_inflight <= server.concurrency


# -- the command ----------------------------------------------------------------------------------


def test_refuses_a_backend_that_is_no_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="subprocess sandbox is no security boundary"):
        serve_sandbox("127.0.0.1", 0, backend="subprocess")
    monkeypatch.setattr(registry, "AUTO_ORDER", ())  # auto finds no isolating backend: it falls back
    with pytest.raises(UserError, match=r"subprocess sandbox is no security boundary.*--allow-unsafe"):
        serve_sandbox("127.0.0.1", 0, backend="auto")
    with pytest.raises(UserError, match="--port"):
        serve_sandbox("127.0.0.1", 70000, backend="subprocess")


def test_cli_refusal_exits_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "spade_llm.cli", "serve-sandbox", "--sandbox", "subprocess", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "no security boundary" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_in_a_process_prints_its_url_and_stops_on_sigterm(tmp_path: Path) -> None:
    unsafe = "" if BACKEND == "bwrap" else ", allow_unsafe=True"
    code = (
        "from spade_llm.serve.sandbox import serve_sandbox; "
        f"serve_sandbox('127.0.0.1', 0, backend={BACKEND!r}, concurrency=2{unsafe})"
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "listening on" not in line:  # the subprocess backend warns first
            line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split("listening on ")[1].split()[0]
        body = httpx.post(url, json={"code": "print(6 * 7)", "language": "python"}, timeout=30).json()
        assert body["status"] == "Success" and body["run_result"]["stdout"] == "42\n"
        spawned = descendants(proc.pid)
        assert spawned or BACKEND != "bwrap"  # its warm workers
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "stopped" in rest and "Traceback" not in rest
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in spawned) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in spawned if alive(pid)], "sandbox processes outlived the server"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (from /proc's children lists)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                kids = [int(k) for k in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except OSError:
                continue
            found += kids
            frontier += kids
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


# -- verl's built-in judge on a spade export -------------------------------------------------------


# what verl's fn_name wrapper does (verl/utils/reward_score/sandbox_fusion/utils.py): the answer, then a
# call of the named function on one JSON argument per stdin line, its result printed as JSON or str()
VERL_CALL = """
import json as _json, sys as _sys
def _call():
    raw = _sys.stdin.read()
    args = [_json.loads(line) for line in raw.split("\\n")] if raw.strip() else []
    try:
        result = globals()[{name!r}](*args)
    except Exception as e:
        _sys.stderr.write(repr(e))
        return
    if isinstance(result, (dict, list, tuple)) or result is None or isinstance(result, bool):
        print(_json.dumps(result))
    else:
        print(str(result))
if __name__ == "__main__":
    _call()
"""


def verl_passes(client: httpx.Client, server: SandboxServer, answer: str, truth: dict[str, Any]) -> list[bool]:
    """verl's ``sandbox_fusion.check_correctness`` decision with ``fn_name``, per test: the wrapped
    answer run with the test's arguments on stdin; passed when ``Success``, ``Finished`` and stdout
    equals the test's output."""
    code = answer + VERL_CALL.format(name=truth["fn_name"])
    verdicts = []
    for stdin, output in zip(truth["inputs"], truth["outputs"], strict=True):
        body = run_code(client, server, code, stdin=stdin, run_timeout=10, memory_limit_MB=1024)
        run = body["run_result"] or {}
        verdicts.append(
            body["status"] == "Success"
            and run.get("status") == "Finished"
            and str(run.get("stdout") or "").rstrip("\n") == str(output).rstrip("\n")
        )
    return verdicts


def test_sandbox_fusion_export_is_judged_like_spade(client: httpx.Client, server: SandboxServer) -> None:
    from spade_llm.rewards.groundtruth import sandbox_fusion_ground_truth
    from spade_llm.types import Task, TestCase

    task = Task(
        task_id="t1",
        description="",
        entry_point="pairs",
        reference_code="def pairs(xs, k):\n    return [[x, x * k] for x in xs]\n",
        tests=[
            TestCase(input="([1, 2], 2)", expected=[[1, 2], [2, 4]]),
            TestCase(input="([], 3)", expected=[]),
            TestCase(input="([0.5], 2)", expected=[[0.5, 1.0]]),
        ],
    )
    truth = sandbox_fusion_ground_truth(task)
    assert truth is not None
    assert verl_passes(client, server, task.reference_code, truth) == [True, True, True]
    tuples = "def pairs(xs, k):\n    return [(x, x * k) for x in xs]\n"  # printed as JSON lists: the same
    assert verl_passes(client, server, tuples, truth) == [True, True, True]
    wrong = "def pairs(xs, k):\n    return [[x, x * k] for x in xs][:1]\n"
    assert verl_passes(client, server, wrong, truth) == [False, True, True]
    hacks = {  # none of them can know what to print: the expected outputs never enter the sandbox
        "exits before the call": "import os\nos._exit(0)\n",
        "sys.exit(0)": "import sys\nsys.exit(0)\n",
        "reads its own source": "print(open(__file__).read()[-40:])\nimport os\nos._exit(0)\n",
        "False for []": "def pairs(xs, k):\n    return [[x, x * k] for x in xs] or False\n",
    }
    for name, answer in hacks.items():
        assert not all(verl_passes(client, server, answer, truth)), name


# -- where serve-sandbox answers otherwise than SandboxFusion (docs/training.md's table) ---------------------


def test_an_unknown_language_is_a_sandbox_error_not_a_422(client: httpx.Client, server: SandboxServer) -> None:
    """SandboxFusion validates ``language`` against its list (FastAPI: 422); here it is the protocol's own
    ``SandboxError`` with a 200, whose message a client such as verl logs, naming every language served."""
    response = client.post(server.url, json={"code": "print(1)", "language": "cobol"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "SandboxError" and body["run_result"] is None
    assert "language 'cobol' is not supported" in body["message"]
    assert all(repr(name) in body["message"] for name in TOOLCHAINS), body["message"]


# -- SandboxFusion's other languages ---------------------------------------------------------------------

COMPILED = [name for name, toolchain in TOOLCHAINS.items() if not toolchain.in_harness]


def needs_toolchain(language: str) -> None:
    missing = TOOLCHAINS[language].missing()
    if missing:
        pytest.skip(f"{language}: {', '.join(missing)} not installed on this machine")


def run_in(client: httpx.Client, server: SandboxServer, language: str, code: str, **fields: Any) -> dict[str, Any]:
    defaults = {"language": language, "memory_limit_MB": 1024, "compile_timeout": 60}
    return run_code(client, server, code, **{**defaults, **fields})


@pytest.mark.parametrize("language", COMPILED)
def test_other_languages_answer_as_sandboxfusion(language: str, client: httpx.Client, server: SandboxServer) -> None:
    """Right, wrong, too slow and not compiling, in SandboxFusion's shapes: a compile_result beside the
    run's; a failed compile is ``Failed`` with no run_result (verl: a compile error)."""
    needs_toolchain(language)
    small, _, large = polyglot.sample_tests()
    right = run_in(client, server, language, polyglot.RIGHT[language], stdin=small.input, run_timeout=10)
    assert right["status"] == "Success", right
    assert right["compile_result"]["status"] == "Finished" and right["compile_result"]["return_code"] == 0
    assert set(right["compile_result"]) == {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert right["run_result"]["status"] == "Finished" and right["run_result"]["stdout"] == small.expected
    wrong = run_in(client, server, language, polyglot.WRONG[language], stdin=small.input, run_timeout=10)
    assert wrong["status"] == "Success" and wrong["run_result"]["stdout"] != small.expected
    slow = run_in(client, server, language, polyglot.SLOW[language], stdin=large.input, run_timeout=1)
    assert slow["status"] == "Failed" and slow["compile_result"]["return_code"] == 0, slow
    assert slow["run_result"]["status"] == "TimeLimitExceeded" and slow["run_result"]["return_code"] is None
    code, line = polyglot.BROKEN[language]
    broken = run_in(client, server, language, code, stdin=small.input, run_timeout=10)
    assert broken["status"] == "Failed" and broken["run_result"] is None, broken
    assert broken["compile_result"]["status"] == "Finished" and broken["compile_result"]["return_code"] != 0
    assert broken["compile_result"]["stderr"] and f":{line}" in broken["message"], broken["message"]


def test_compile_timeout_and_memory_limit_are_honoured(client: httpx.Client, server: SandboxServer) -> None:
    language = "cpp"
    needs_toolchain(language)
    code = polyglot.RIGHT[language] + "\n// a compile no other test has kept\n"
    late = run_in(client, server, language, code, stdin="0\n", compile_timeout=0.01)
    assert late["status"] == "Failed" and late["run_result"] is None, late
    assert late["compile_result"]["status"] == "TimeLimitExceeded" and late["compile_result"]["return_code"] is None
    assert late["message"] == "compile time limit exceeded"
    # touches 512 MiB and prints what it read back, so the compiler cannot drop the allocation
    hog = "#include <cstdio>\n#include <cstdlib>\nint main() { size_t n = 512u << 20; char* p = (char*) malloc(n);"
    hog += " if (!p) return 3; long s = 0; for (size_t i = 0; i < n; i += 4096) p[i] = (char) i;"
    hog += ' for (size_t i = 0; i < n; i += 4096) s += p[i]; printf("%ld\\n", s); }\n'
    for memory, ok in ((128, False), (1024, True)):
        body = run_code(client, server, hog, language=language, memory_limit_MB=memory, run_timeout=10)
        assert (body["status"] == "Success") is ok, (memory, body)
        assert body["compile_result"]["return_code"] == 0


def test_fetch_files_is_refused_for_a_compiled_language(client: httpx.Client, server: SandboxServer) -> None:
    body = run_in(client, server, "cpp", "int main() {}\n", fetch_files=["out.txt"])
    assert body["status"] == "SandboxError" and "fetch_files is served for Python only" in body["message"]


def test_a_stdout_flood_is_killed_with_its_first_mib_kept(client: httpx.Client, server: SandboxServer) -> None:
    """SandboxFusion keeps the first 1 MiB of stdout and lets the program finish; here a program that goes
    past the output limit is killed there (it would hold a slot until its time limit): ``Failed``, -9."""
    for code in ("print('x' * (3 << 20))", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)"):
        body = run_code(client, server, code, run_timeout=20)
        run = body["run_result"]
        assert body["status"] == "Failed" and "output went over the limit" in body["message"], body["message"]
        # killed at the output limit (-9, "Finished"), not at the time limit ("TimeLimitExceeded")
        assert run["status"] == "Finished" and run["return_code"] == -9
        assert run["stdout"] == "x" * (1 << 20)


@needs_bwrap  # a cgroup's OOM kill (bwrap, docker); the subprocess backend's rlimit raises MemoryError
def test_running_out_of_memory_is_a_kill_the_program_cannot_catch(client: httpx.Client, server: SandboxServer) -> None:
    """SandboxFusion limits the address space (RLIMIT_AS), so Python raises ``MemoryError`` and exits 1,
    and an answer can catch it and go on; here the program is killed (-9) and the message says why."""
    code = "try:\n    x = bytearray(400 << 20)\nexcept MemoryError:\n    print('caught')\nprint('went on')"
    body = run_code(client, server, code, memory_limit_MB=128)
    run = body["run_result"]
    assert body["status"] == "Failed" and "ran out of memory" in body["message"], body["message"]
    assert run["status"] == "Finished" and run["return_code"] == -9 and run["stdout"] == ""
