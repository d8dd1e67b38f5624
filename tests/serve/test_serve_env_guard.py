"""``spade serve-env`` against clients that misbehave: what openenv-core mounts beyond ``/ws``
(``/mcp``), malformed and oversized messages, idle and vanishing clients, connection floods, lax
framing. Each test is an attack seen from outside, on a real ``spade serve-env`` process (issue 35:
findings 2, 10, 11, 15, 19 and 21).

Needs the ``env`` extra (openenv-core); skipped without it.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from trainer_kit import need

need("openenv", "env")

from serve_env_kit import SMALL, ServeEnv, ask, env_client, play, records  # noqa: E402
from test_serve_env import SHOUT  # noqa: E402

pytestmark = [pytest.mark.env, pytest.mark.slow]


@pytest.fixture
def serve_env() -> Any:
    started: list[ServeEnv] = []

    def start(*args: str, **kw: Any) -> ServeEnv:
        server = ServeEnv(list(args), **kw)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "serve.yaml"
    path.write_text(text)
    return str(path)


def _ws(url: str, path: str = "/ws", **kw: Any) -> Any:
    from websockets.sync.client import connect

    return connect(url.replace("http", "ws", 1) + path, open_timeout=30, **kw)


def _ask(ws: Any, message: dict[str, Any] | str, timeout: float = 60) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return dict(json.loads(ws.recv(timeout)))


def _rpc(client: httpx.Client, url: str, method: str, **params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post(f"{url}/mcp", json=body, timeout=30)


def _no_traceback(server: ServeEnv) -> None:
    assert "Traceback" not in server.stderr, server.stderr[-4000:]


# -- finding 2: /mcp ------------------------------------------------------------------------------------


def test_mcp_is_off_unless_asked_for(tmp_path, serve_env):
    server = serve_env(*SMALL, "--max-sessions", "4", "--out", str(tmp_path / "run"))
    with httpx.Client() as client:
        for _ in range(8):  # twice max_sessions: on a685e31 each held a session for good
            answer = _rpc(client, server.url, "openenv/session/create")
            assert answer.status_code == 404, answer.text
            assert "--mcp" in answer.json()["detail"]
    with pytest.raises(Exception, match="404"):
        _ws(server.url, "/mcp")
    with _ws(server.url) as ws:  # nor through /ws: an "mcp" message is refused, the session lives on
        refused = _ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close"}})
        assert refused["type"] == "error" and "--mcp" in refused["data"]["message"]
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"  # every session slot was free
    assert server.stop() == 0
    _no_traceback(server)


def test_mcp_sessions_belong_to_their_connection_and_are_bounded(tmp_path, serve_env):
    config = _config(tmp_path, "env:\n  mcp: true\n  max_sessions: 6\n  max_sessions_per_client: 4\n")
    server = serve_env("--config", config, *SMALL, "--out", str(tmp_path / "run"))
    owner, other = httpx.Client(), httpx.Client()
    made = [_rpc(owner, server.url, "openenv/session/create").json() for _ in range(6)]
    ids = [m["result"]["session_id"] for m in made if "result" in m]
    assert len(ids) == 4  # the per-client cap (all clients here share 127.0.0.1)
    assert all("capacity" in m["error"]["message"].lower() for m in made[4:])
    # another connection can neither close nor use them
    for method in ("openenv/session/close", "tools/list", "tools/call"):
        answer = _rpc(other, server.url, method, session_id=ids[0], name="x").json()
        assert "Unknown session_id" in answer["error"]["message"], answer
    # the owner can close its own, which makes room for two WebSocket sessions
    for session_id in ids[:2]:
        closed = _rpc(owner, server.url, "openenv/session/close", session_id=session_id).json()
        assert closed["result"]["closed"] is True
    close = {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/close", "params": {"session_id": ids[2]}}
    with _ws(server.url) as ws, _ws(server.url, "/mcp") as rpc:
        answer = _ask(ws, {"type": "mcp", "data": close})  # neither through an "mcp" message of /ws
        assert answer["type"] == "mcp" and "Unknown session_id" in answer["data"]["error"]["message"], answer
        answer = _ask(rpc, close)  # nor through the /mcp WebSocket
        assert "Unknown session_id" in answer["error"]["message"], answer
    # the owner's sessions end with the connection that made them
    owner.close()
    deadline = time.monotonic() + 20
    created: dict[str, Any] = {}
    while time.monotonic() < deadline:
        created = _rpc(other, server.url, "openenv/session/create").json()
        if "result" in created:
            break
        time.sleep(0.2)
    assert "result" in created, created
    other.close()
    with _ws(server.url) as ws:  # and the WebSocket sessions have room
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
    assert server.stop() == 0
    _no_traceback(server)


# -- finding 10: malformed text, WebSocket auth ---------------------------------------------------------

SURROGATE_REPLY = '{"type": "step", "data": {"answer": "```python\\ndef f(x):\\n    return \\"\\ud800\\"\\n```"}}'


def test_malformed_text_gets_an_answer_never_a_closed_session(tmp_path, serve_env, fake_server):
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"))
    policy = ask(fake_server().url, "strong-solver")
    with _ws(server.url) as ws:
        first = _ask(ws, {"type": "reset", "data": {}})
        assert first["type"] == "observation"
        turn = first["data"]["observation"]["turn"]
        answer = _ask(ws, SURROGATE_REPLY)  # a lone surrogate: not text
        assert answer["type"] == "observation", answer
        observation = answer["data"]["observation"]
        assert not answer["data"]["done"] and observation["turn"] == turn
        assert "surrogate" in observation["error"] and "surrogate" in observation["feedback"]
        # the same in the envelope, in a key, nested deep, or not JSON at all: an error, the session lives on
        for bad in (
            '{"type": "step", "data": {"answer": "x", "\\udfff": 1}}',
            '{"type": "st\\udc00ep", "data": {}}',
            "[" * 50_000 + "]" * 50_000,
            '{"type": "step", "data": ' + "[" * 5000 + "]" * 5000 + "}",
            "\x00not json",
        ):
            error = _ask(ws, bad)
            assert error["type"] == "error", error
            assert error["data"]["code"] != "SESSION_ERROR", error
        reply = policy(observation["messages"])  # and the episode goes on
        result = _ask(ws, {"type": "step", "data": {"answer": reply}})
        assert result["type"] == "observation" and result["data"]["observation"]["error"] is None
    assert server.stop() == 0
    _no_traceback(server)


def test_a_websocket_without_the_token_is_answered_401_as_http_is(tmp_path, serve_env):
    token = "tok-2718281828"
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"), env={"SPADE_ENV_TOKEN": token})
    assert httpx.get(f"{server.url}/schema").status_code == 401
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        _ws(server.url)
    assert refused.value.response.status_code == 401
    assert refused.value.response.headers.get("WWW-Authenticate") == "Bearer"
    with _ws(server.url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
    assert server.stop() == 0


# -- finding 21: message size, no echo; idle sessions ------------------------------------------------------


def test_messages_are_bounded_and_never_echoed(tmp_path, serve_env):
    config = _config(tmp_path, "env:\n  max_message_bytes: 65536\n")
    server = serve_env("--config", config, *SMALL, "--out", str(tmp_path / "run"))
    with _ws(server.url) as ws:
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        bulky = "Z" * 60_000
        for wrong in (
            {"type": "step", "data": {"answer": "x", "extra": bulky}},  # an unknown field
            {"type": "step", "data": bulky},  # not an object
            {"type": "step", "data": {"answer": "x", "code": bulky}},  # both replies
        ):
            error = _ask(ws, wrong)
            assert error["type"] == "error" and len(json.dumps(error)) < 4096, len(json.dumps(error))
            assert "ZZZZZZZZ" not in json.dumps(error)
    from websockets.exceptions import ConnectionClosed

    with _ws(server.url) as ws, pytest.raises(ConnectionClosed) as closed:
        _ask(ws, {"type": "step", "data": {"answer": "Z" * 70_000}})  # over the cap: the connection ends (1009)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert server.stop() == 0
    _no_traceback(server)


def test_idle_sessions_are_closed_and_their_episode_let_go(tmp_path, serve_env):
    config = _config(tmp_path, "env:\n  session_idle_s: 1\n")
    run = tmp_path / "run"
    server = serve_env("--config", config, *SMALL, "--out", str(run))
    from websockets.exceptions import ConnectionClosed

    with _ws(server.url) as idle, _ws(server.url) as empty:
        held = _ask(idle, {"type": "reset", "data": {}})["data"]["observation"]
        time.sleep(3)
        for ws in (idle, empty):
            with pytest.raises(ConnectionClosed) as closed:
                _ask(ws, {"type": "state"}, timeout=10)
            assert closed.value.rcvd is not None and "idle" in closed.value.rcvd.reason
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and held["task_id"] not in (run / "trajectories.jsonl").read_text():
        time.sleep(0.2)
    assert server.stop() == 0
    (episode,) = [t for t in records(run).trajectories if t.task_id == held["task_id"]]
    assert "abandoned" in episode.flags and "idle" in (episode.error or "")
    _no_traceback(server)


def test_clients_hanging_up_mid_step_leave_no_traceback(tmp_path, serve_env):
    """On a685e31 each such client left a chain of tracebacks in the log (the observation's send
    failed, then the error's, then the close's): 'Exception in ASGI application'."""
    config = _config(tmp_path, "sandbox:\n  test_timeout_s: 1\n")
    run = tmp_path / "run"
    server = serve_env("--config", config, *SMALL, "--out", str(run))
    loop = "```python\ndef f(*args):\n    while True:\n        pass\n```"  # judged until the test timeout
    task_ids = []
    for _ in range(3):
        with _ws(server.url) as ws:
            task_ids.append(_ask(ws, {"type": "reset", "data": {}})["data"]["observation"]["task_id"])
            ws.send(json.dumps({"type": "step", "data": {"answer": loop}}))  # and hang up while it is judged
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(t in (run / "trajectories.jsonl").read_text() for t in task_ids):
        time.sleep(0.3)
    assert server.stop() == 0
    recorded = [t for t in records(run).trajectories if t.task_id in task_ids]
    assert len(recorded) == 3 and all("abandoned" in t.flags and t.attempts for t in recorded)
    _no_traceback(server)


# -- finding 19: clients that leave while they wait in reset() ------------------------------------------


def test_clients_leaving_while_they_wait_leave_no_phantom_failures(tmp_path, serve_env, fake_server):
    config = _config(tmp_path, "env:\n  reset_timeout_s: 40\n")
    run = tmp_path / "run"
    small = ["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "2", "--seed", "0"]
    server = serve_env("--config", config, *small, "--pool", "1", "--epochs", "1", "--out", str(run))
    policy = ask(fake_server().url, "strong-solver")
    holder = env_client(server.url)
    holder.connect()
    result = holder.reset()  # the only episode in flight (--pool 1)
    for _ in range(3):  # three clients ask for the next one, then leave before it comes
        with _ws(server.url) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            time.sleep(0.3)
    time.sleep(1)
    while not result.done:
        result = holder.step({"answer": policy(result.observation["messages"])})
    holder.close()
    rest = play(server.url, policy, 3)  # the epoch's other three episodes, to a client that stays
    assert all(results[-1].done for results in rest)
    assert server.wait(60) == 0, server.stderr
    data = records(run)
    assert len(data.trajectories) == 4
    assert not [t.trajectory_id for t in data.trajectories if "abandoned" in t.flags or not t.attempts]
    assert data.metrics[0].episodes == 4
    _no_traceback(server)


# -- findings 5 and 15: connection floods, half-open connections ------------------------------------------


def _half_open(url: str, n: int) -> list[socket.socket]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    opened = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: the request never ends
        opened.append(s)
    return opened


def _fd_limit(n: int) -> Any:
    """A ``preexec_fn`` giving the server ``n`` open files (no more than this process may)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    n = n if hard == resource.RLIM_INFINITY else min(n, hard)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return limit


def test_half_open_connections_never_starve_the_clients(tmp_path, serve_env, fake_server):
    """On a685e31, a server allowed 1,024 descriptors stops accepting after ~1,000 half-sent requests, and
    the next step fails for want of a descriptor; here the newest connection takes the slot of the
    oldest that has not sent a whole request, so sessions go on and a new client gets in."""
    run = tmp_path / "run"
    server = serve_env(*SMALL, "--sandbox", "subprocess", "--out", str(run), preexec_fn=_fd_limit(1024))
    policy = ask(fake_server().url, "strong-solver")
    with env_client(server.url) as session:
        result = session.reset()
        flood = _half_open(server.url, 1500)
        try:
            while not result.done:  # the session in progress steps on
                result = session.step({"answer": policy(result.observation["messages"])})
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
            (episode,) = play(server.url, policy, 1)  # and a new client connects, resets and plays
            assert episode[-1].done
        finally:
            for s in flood:
                s.close()
    assert server.stop() == 0
    assert len(server.stderr) < 20_000, server.stderr[-3000:]
    _no_traceback(server)


def test_past_the_connection_cap_a_busy_server_answers_503(tmp_path, serve_env):
    server = serve_env(*SMALL, "--max-connections", "3", "--out", str(tmp_path / "run"))
    with contextlib.ExitStack() as stack:
        sessions = [stack.enter_context(_ws(server.url)) for _ in range(3)]  # every slot busy
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 503
        sessions[0].close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and httpx.get(f"{server.url}/health", timeout=10).status_code != 200:
            time.sleep(0.1)
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200  # a slot is free again
    assert server.stop() == 0


def _frame(opcode: int, payload: bytes) -> bytes:
    """One masked WebSocket frame, as a client sends it (payload under 126 bytes)."""
    mask = b"\x01\x02\x03\x04"
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_what_any_client_can_send_never_fills_the_log(tmp_path, serve_env):
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"))
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    handshake = (
        f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    for i in range(60):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            if i % 3 == 0:  # a request h11 cannot read
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
            elif i % 3 == 1:  # an upgrade to something else
                s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
            else:  # a WebSocket whose text frame is not UTF-8 (closed 1007, as RFC 6455 asks)
                s.sendall(handshake)
                assert s.recv(4096).startswith(b"HTTP/1.1 101")
                s.sendall(_frame(0x2, b'{"type": "state"}'))  # a binary frame: answered, the session lives
                assert b"INVALID_JSON" in s.recv(4096)
                s.sendall(_frame(0x1, b'{"type": "st\xff\xfeate"}'))
            with contextlib.suppress(OSError):
                s.recv(4096)
    assert httpx.get(f"{server.url}/health").status_code == 200
    assert server.stop() == 0
    assert len(server.stderr) < 3000, server.stderr[-3000:]
    _no_traceback(server)


# -- finding 11: framing -------------------------------------------------------------------------------------


FRAMINGS = (
    b"Content-Length: 2\r\nContent-Length: 2\r\n",
    b"Content-Length: 2, 2\r\n",
    b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
)


def test_duplicate_or_conflicting_framing_is_refused(tmp_path, serve_env):
    # one server for every framing (a server's start is ~6 s of CPU), each on a connection of its own
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"))
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    for head in FRAMINGS:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head + b"\r\n{}")
            answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 400"), (head, answer[:200])
        assert httpx.get(f"{server.url}/health").status_code == 200
    assert server.stop() == 0
    _no_traceback(server)


def _raw(url: str, head: bytes) -> bytes:
    """Send a request head on a connection of its own; what came back before the server closed it."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head)
        got = b""
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                got += chunk
    return got


def test_two_of_a_header_the_access_rules_read_are_refused(tmp_path, serve_env):
    """Two ``Authorization`` headers (a wrong token, then the right one), two ``Origin`` (loopback, then
    a web page's, or the other way round), two ``Host``: a 400, over HTTP and for a WebSocket
    handshake, as serve-sandbox and serve-fake answer (the first round's guard kept the last of each:
    a proxy that checked the first would let the second through)."""
    server = serve_env(*SMALL, "--out", str(tmp_path / "run"), env={"SPADE_ENV_TOKEN": "s3cret-token"})
    good, bad = "Authorization: Bearer s3cret-token\r\n", "Authorization: Bearer wrong\r\n"
    local, foreign = "Origin: http://127.0.0.1\r\n", "Origin: https://attacker.example\r\n"
    upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    upgrade += "Sec-WebSocket-Version: 13\r\n"
    cases = {
        "a wrong token, then the right one": ("/metadata", bad + good),
        "the right token, then a wrong one": ("/metadata", good + bad),
        "a page's origin after loopback": ("/metadata", good + local + foreign),
        "loopback after a page's origin": ("/metadata", good + foreign + local),
        "two hosts": ("/metadata", good + "Host: attacker.example\r\n"),
        "a handshake with two tokens": ("/ws", bad + good + upgrade),
        "a handshake with two origins": ("/ws", good + foreign + local + upgrade),
    }
    for case, (path, fields) in cases.items():
        answer = _raw(server.url, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 400"), (case, answer[:300])
        assert b"more than one" in answer, (case, answer[:300])
    # one of each passes
    fine = _raw(
        server.url, f"GET /metadata HTTP/1.1\r\nHost: 127.0.0.1\r\n{good}{local}Connection: close\r\n\r\n".encode()
    )
    assert fine.startswith(b"HTTP/1.1 200"), fine[:300]
    assert server.stop() == 0
    _no_traceback(server)


async def test_the_guard_refuses_two_of_a_header_whatever_server_runs_the_app():
    """The access guard on its own (the app under another ASGI server, or a test client): two
    ``Authorization`` headers are a 400 before any rule reads them (the first round's dict kept the
    last: a wrong token then the right one passed)."""
    from spade_llm.serve.env.access import Guard

    reached: list[str] = []

    async def app(scope, receive, send):
        reached.append(scope["path"])

    sent: list[dict[str, Any]] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    guard = Guard(app, host="127.0.0.1", token="s3cret-token")
    for pairs in (
        [(b"authorization", b"Bearer wrong"), (b"authorization", b"Bearer s3cret-token")],
        [
            (b"authorization", b"Bearer s3cret-token"),
            (b"origin", b"http://127.0.0.1"),
            (b"Origin", b"http://x.example"),
        ],
    ):
        sent.clear()
        await guard({"type": "http", "path": "/metadata", "headers": [(b"host", b"127.0.0.1"), *pairs]}, receive, send)
        assert sent[0]["status"] == 400 and b"more than one" in sent[1]["body"], sent
    assert reached == []
    await guard(
        {"type": "http", "path": "/metadata", "headers": [(b"authorization", b"Bearer s3cret-token")]}, receive, send
    )
    assert reached == ["/metadata"]


class _Counting:
    """``wire._HEAD_END`` with the bytes each search covers added up."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern
        self.searched = 0

    def search(self, data: Any, pos: int = 0) -> Any:
        self.searched += len(data) - pos
        return self.pattern.search(data, pos)


@pytest.mark.parametrize("duplicate", [False, True])
def test_a_head_sent_a_byte_at_a_time_costs_linear_work(monkeypatch, duplicate):
    """A 15 KB head, one byte per packet: the framing check searches (and copies) each byte a bounded
    number of times (the first round copied and searched the whole buffer per packet: ~n^2/2, 112 MB
    for this head), and still refuses a bad head or passes a good one to h11."""
    import h11

    from spade_llm.serve.env import wire

    counting = _Counting(wire._HEAD_END)
    monkeypatch.setattr(wire, "_HEAD_END", counting)
    copied = [0]

    class Framed(wire._FramedConnection):
        @property
        def trailing_data(self):  # what the check copies out of h11's buffer
            data = super().trailing_data
            copied[0] += len(data[0])
            return data

    refused: list[str] = []
    heads: list[int] = []
    conn = Framed(64 * 1024, refused.append, lambda: heads.append(1))
    fields = "".join(f"X-Pad-{i}: {'v' * 80}\r\n" for i in range(170))
    extra = "Origin: http://127.0.0.1\r\nOrigin: http://127.0.0.1\r\n" if duplicate else ""
    head = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}{extra}\r\n".encode()
    assert len(head) > 15_000
    events = []
    for i in range(len(head)):
        conn.receive_data(head[i : i + 1])
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            events.append(event)
            break
    assert counting.searched <= 3 * len(head), counting.searched
    assert copied[0] <= 2 * len(head), copied[0]
    if duplicate:
        assert events == [h11.PAUSED] and refused and "more than one 'origin'" in refused[0]
    else:
        assert len(events) == 1 and isinstance(events[0], h11.Request) and heads == [1] and not refused


def test_an_evicted_connection_is_aborted_not_closed():
    """``close`` would wait for an unsent answer to drain to a client that may never read it, its
    descriptor held past the cap meanwhile: evicting aborts."""
    import asyncio

    from spade_llm.serve.env.wire import Wire

    class Transport(asyncio.WriteTransport):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[str] = []

        def abort(self) -> None:
            self.calls.append("abort")

        def close(self) -> None:
            self.calls.append("close")

    wire = Wire(1)
    first, second = Transport(), Transport()
    assert wire.slots.admit(first) and wire.slots.admit(second)  # the second takes the first's slot
    assert first.calls == ["abort"] and second.calls == []


async def test_an_episode_its_client_never_saw_goes_to_the_next_client_untimed():
    import asyncio

    from spade_llm.llm.base import LLMRequest
    from spade_llm.serve.env.broker import EnvBroker, EpisodeGone
    from spade_llm.types import Message

    broker = EnvBroker(episode_timeout_s=0.5, reset_timeout_s=5)
    episode = broker.open(SHOUT, 0, 0)
    request = LLMRequest(
        messages=[Message(role="user", content="go")],
        role="solver",
        metadata={"epoch": 0, "task_id": SHOUT.task_id, "sample_index": 0, "turn": 1},
    )
    solving = asyncio.ensure_future(broker.complete(request))
    await asyncio.sleep(0)
    taken, _ = await broker.take()  # a client takes it, and leaves before it is shown the first turn
    broker.give_back(taken)
    await asyncio.sleep(1.0)  # past episode_timeout_s: no reply timer runs while nobody holds it
    assert not solving.done()
    ticket = object()
    leaving = asyncio.ensure_future(broker.take(ticket))
    await asyncio.sleep(0)  # handed to the first client in line: it is given the episode ...
    again, view = await leaving
    assert again is episode and view.turn == 1 and broker.given_back == 1
    waiting = asyncio.ensure_future(broker.take(ticket))  # ... and a client that leaves while it waits
    await asyncio.sleep(0)
    broker.withdraw(ticket)
    with pytest.raises(EpisodeGone, match="left"):
        await waiting
    replying = asyncio.ensure_future(broker.reply(again, "```python\ndef shout(s):\n    return s\n```"))
    answer = await solving  # the client that stayed answers: its reply is the turn's
    assert "def shout" in answer.text
    broker.give_back(again)  # too late: it was answered, nothing happens
    assert broker.given_back == 1
    replying.cancel()
    with pytest.raises(asyncio.CancelledError):
        await replying
