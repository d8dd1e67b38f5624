"""``spade serve-sandbox``'s limits and access rules (issue 24), over real HTTP against real servers.

Each server runs in a thread of its own on a free 127.0.0.1 port. The access rules and statuses
are checked on the bwrap backend where it works (the subprocess one otherwise: the code sent is
harmless); the queue, the budget of bytes held and what happens to the work of a client that leaves
are checked on ``Gated`` (``sandbox_serving``), a backend that runs nothing and holds each run until
the test lets it go, so that which programs started, and when a slot is free, are facts rather than
timings. One test kills real programs on the real backend. The flood rules the base gives every
server (framing, connection cap, JSON size) are in ``test_httpserve.py``.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import sandbox_serving
from sandbox_backends import unavailable
from sandbox_serving import Gated, GatedNoCancel

from spade_llm.errors import UserError
from spade_llm.sandbox import registry
from spade_llm.sandbox.base import Sandbox
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.serve import sandbox as sandbox_server
from spade_llm.serve.httpbase import HTTPError, Request
from spade_llm.serve.sandbox import (
    TOKEN_ENV,
    SandboxServer,
    ServeLimits,
    accepts_cancel,
    exposure_warning,
    load_token,
    serve_sandbox,
)

REASON = unavailable("bwrap")
BACKEND = "bwrap" if REASON is None else "subprocess"
JSON = {"Content-Type": "application/json"}
PRINT_42 = {"code": "print(42)", "language": "python"}


@contextmanager
def serving(sandbox: Sandbox | None = None, **options: Any) -> Iterator[SandboxServer]:
    """``sandbox_serving.serving`` on this module's backend unless another sandbox is given."""
    with sandbox_serving.serving(sandbox if sandbox is not None else get_sandbox(BACKEND), **options) as srv:
        yield srv


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with serving(concurrency=2) as srv:
        yield srv


def post(srv: SandboxServer, body: bytes | str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(srv.url, content=body, headers=headers, timeout=60)


def eventually(what: Callable[[], bool], why: str, seconds: float = 30.0) -> None:
    """Wait for ``what()`` (a state the server reaches, not a speed: the bound only ends a hung test)."""
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, why
        time.sleep(0.02)


def raw_request(port: int, payload: dict[str, Any], extra: bytes = b"") -> socket.socket:
    """A connection that has sent one ``/run_code`` request as a JSON client does (``Connection:
    close``: the server closes after its answer), answer unread."""
    body = json.dumps(payload).encode()
    head = b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
    head += extra
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return s


def read_answer(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the answer on ``s``, read to the server's close (a reset raises)."""
    data = b""
    while chunk := s.recv(1 << 16):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


def job(name: str, **fields: Any) -> dict[str, Any]:
    return {"code": name, "language": "python", **fields}


# -- Content-Type, Host, Origin ------------------------------------------------------------------------


def test_a_body_not_sent_as_json_is_415_and_runs_nothing(server: SandboxServer) -> None:
    runs = server.stats.runs
    body = json.dumps(PRINT_42)
    for headers in ({"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}, {}):
        response = post(server, body, headers)
        assert response.status_code == 415, (headers, response.text)
        assert "application/json" in response.json()["detail"]
    assert server.stats.runs == runs  # nothing ran
    for kind in ("application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"):
        response = post(server, body, {"Content-Type": kind})
        assert response.status_code == 200 and response.json()["run_result"]["stdout"] == "42\n", kind


def test_a_foreign_host_or_origin_is_403_while_bound_to_loopback(server: SandboxServer) -> None:
    body = json.dumps(PRINT_42)
    runs = server.stats.runs
    rebound = post(server, body, {**JSON, "Host": "attacker.example", "Origin": "http://attacker.example"})
    assert rebound.status_code == 403 and "DNS rebinding" in rebound.json()["detail"]
    for origin in ("http://attacker.example", "null", "https://127.0.0.1.attacker.example"):
        response = post(server, body, {**JSON, "Origin": origin})
        assert response.status_code == 403 and "Origin" in response.json()["detail"], origin
    assert httpx.get(f"{server.origin}/health", headers={"Host": "attacker.example"}).status_code == 403
    assert server.stats.runs == runs
    for host in ("localhost:8080", "LOCALHOST", "[::1]:9", "127.0.0.1", f"127.0.0.1:{server.port}", "127.1.2.3"):
        response = post(server, body, {**JSON, "Host": host, "Origin": "http://localhost:3000"})
        assert response.status_code == 200 and response.json()["status"] == "Success", host


def test_a_server_bound_beyond_loopback_takes_any_host() -> None:
    srv = SandboxServer("0.0.0.0", 0, Gated())
    head = Request("POST", "/run_code", "/run_code", {"host": "sandbox.internal:8080", **{"content-type": "a/json"}},
                   b"", True)  # fmt: skip
    assert not srv.loopback_only
    with pytest.raises(HTTPError) as refused:
        srv.check_head(head)
    assert refused.value.status == 415  # past the Host rule: it is the type that is wrong
    head.headers["content-type"] = "application/json"
    srv.check_head(head)  # no refusal
    assert SandboxServer("::1", 0, Gated()).loopback_only and SandboxServer("localhost", 0, Gated()).loopback_only


# -- the token -------------------------------------------------------------------------------------------


def test_a_token_is_required_when_set(server: SandboxServer) -> None:
    with serving(server.sandbox, token="tok-9f2c") as srv:
        body = json.dumps(PRINT_42)
        missing = post(srv, body, JSON)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert "Bearer" in missing.json()["detail"]
        assert post(srv, body, {**JSON, "Authorization": "Bearer tok-9f2"}).status_code == 401
        assert post(srv, body, {**JSON, "Authorization": "Bearer tok-9f2cX"}).status_code == 401
        assert (
            post(srv, body, {**JSON, "Authorization": "Basic " + base64.b64encode(b"u:nope").decode()}).status_code
            == 401
        )
        assert srv.stats.runs == 0
        for auth in ("Bearer tok-9f2c", "bearer  tok-9f2c"):
            answer = post(srv, body, {**JSON, "Authorization": auth})
            assert answer.status_code == 200 and answer.json()["run_result"]["stdout"] == "42\n", auth
        # a URL with credentials, as verl's client can be given: requests sends them as Basic
        url = f"http://spade:tok-9f2c@127.0.0.1:{srv.port}/run_code"
        assert requests.post(url, json=PRINT_42, timeout=60).json()["status"] == "Success"
        # the probes stay open; the counters do not
        assert httpx.get(f"{srv.origin}/v1/ping").json() == "pong"
        assert httpx.get(f"{srv.origin}/health").status_code == 200
        assert httpx.get(f"{srv.origin}/stats").status_code == 401
        assert httpx.get(f"{srv.origin}/stats", headers={"Authorization": "Bearer tok-9f2c"}).json()["runs"] == 3


def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("s3cret-from-file\n")
    assert load_token(path, {TOKEN_ENV: "from-env"}) == "s3cret-from-file"
    assert load_token(None, {TOKEN_ENV: " from-env "}) == "from-env"
    assert load_token(None, {TOKEN_ENV: ""}) is None and load_token(None, {}) is None
    path.write_text("\n")
    with pytest.raises(UserError, match="is empty"):
        load_token(path, {})
    with pytest.raises(UserError, match="cannot read --token-file"):
        load_token(tmp_path / "missing", {})
    with pytest.raises(UserError, match="printable ASCII"):
        load_token(None, {TOKEN_ENV: "two words"})


def test_listening_beyond_loopback_without_a_token_warns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    served: list[SandboxServer] = []
    monkeypatch.setattr(sandbox_server, "run_server", lambda srv, banner, host, port: served.append(srv))
    monkeypatch.setattr(registry, "get_sandbox", lambda name: Gated())
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    serve_sandbox("0.0.0.0", 0)
    assert "warning: listening on 0.0.0.0 with no token" in capsys.readouterr().err
    assert served[-1].token is None
    monkeypatch.setenv(TOKEN_ENV, "tok-env")
    serve_sandbox("0.0.0.0", 0)
    assert "warning" not in capsys.readouterr().err and served[-1].token == "tok-env"
    (tmp_path / "t").write_text("tok-file")
    serve_sandbox("0.0.0.0", 0, token_file=tmp_path / "t")
    assert served[-1].token == "tok-file"
    monkeypatch.delenv(TOKEN_ENV)
    serve_sandbox("127.0.0.1", 0)
    assert "warning" not in capsys.readouterr().err
    assert exposure_warning("", None) is not None and exposure_warning("::1", None) is None


# -- bodies: base64, the cap ------------------------------------------------------------------------------


def test_files_that_are_not_base64_are_422(server: SandboxServer) -> None:
    runs = server.stats.runs
    for bad in ("!!!!", "***not base64", "QUJ", "aé=="):
        response = httpx.post(server.url, json=job("print(1)", files={"a.txt": bad}), timeout=60)
        assert response.status_code == 422, (bad, response.text)
        (detail,) = response.json()["detail"]
        assert detail["type"] == "base64_decode" and detail["loc"] == ["body", "files", "a.txt"], detail
        assert detail["input"] == bad
    response = httpx.post(server.url, json=job("1", files={"a": "!" * 5000}), timeout=60)
    assert response.status_code == 422 and len(response.json()["detail"][0]["input"]) < 300  # not echoed whole
    assert server.stats.runs == runs
    data = bytes(range(256)) * 4
    code = "import hashlib\nprint(hashlib.sha256(open('d.bin', 'rb').read()).hexdigest())"
    mime = base64.encodebytes(data).decode()  # with line breaks, as MIME writes base64
    body = httpx.post(server.url, json=job(code, files={"d.bin": mime}), timeout=60).json()
    import hashlib

    assert body["status"] == "Success" and body["run_result"]["stdout"] == hashlib.sha256(data).hexdigest() + "\n"


def test_a_body_over_the_cap_is_413_even_while_it_is_being_sent(server: SandboxServer) -> None:
    """The answer must reach a client still sending: no reset (it would lose the 413)."""
    size = server.max_body_bytes + (8 << 20)
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % size)  # fmt: skip
        piece = b"x" * (1 << 20)
        for _ in range(size >> 20):
            s.sendall(piece)  # a reset from the server would raise here
        status, headers, body = read_answer(s)
    assert status == 413 and headers["connection"] == "close"
    assert json.loads(body) == {"detail": f"request body too large (at most {server.max_body_bytes} bytes)"}

    def chunks() -> Iterator[bytes]:
        yield b'{"code": "print(1)", "language": "python", "files": {"a": "'
        for _ in range(size >> 20):
            yield b"A" * (1 << 20)
        yield b'"}}'

    response = requests.post(server.url, data=chunks(), headers=JSON, timeout=60)  # chunked
    assert response.status_code == 413
    assert httpx.post(server.url, json=PRINT_42, timeout=60).json()["status"] == "Success"


# -- the queue and the bytes held ---------------------------------------------------------------------------


def test_beyond_the_queue_a_request_gets_503_with_retry_after() -> None:
    gated = Gated()
    with serving(gated, concurrency=1, bounds=ServeLimits(max_queue=2, retry_after_s=3)) as srv:
        held = [raw_request(srv.port, job(name)) for name in ("a", "b", "c")]
        eventually(lambda: srv.stats.inflight == 1 and srv.stats.waiting == 2, "a running, b and c waiting")
        refused = requests.post(srv.url, json=job("d"), timeout=60)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "3"
        assert "waiting" in refused.json()["detail"]
        gated.gate.set()
        answers = [read_answer(s) for s in held]
        for s in held:
            s.close()
        assert [(status, json.loads(body)["run_result"]["stdout"]) for status, _, body in answers] == [
            (200, "ran a\n"), (200, "ran b\n"), (200, "ran c\n"),
        ]  # fmt: skip
        assert requests.post(srv.url, json=job("e"), timeout=60).json()["status"] == "Success"
        assert gated.started == ["a", "b", "c", "e"] and srv.stats.refused == {"503": 1}


def test_the_bytes_held_are_bounded_and_the_refusal_arrives_while_the_body_is_sent() -> None:
    gated = Gated()
    bounds = ServeLimits(max_held_bytes=3 << 20, max_body_bytes=2 << 20)
    big = "#" + "x" * (3 << 19)  # 1.5 MiB of code
    with serving(gated, concurrency=1, bounds=bounds) as srv:
        running = raw_request(srv.port, job("a"))
        eventually(lambda: srv.stats.inflight == 1, "a running")
        waiting = raw_request(srv.port, job(big))
        eventually(lambda: srv.stats.waiting == 1, "the big one waiting")
        assert srv.stats.held_bytes > 3 << 19
        body = json.dumps(job(big)).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
            s.sendall(b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body))  # fmt: skip
            for i in range(0, len(body), 1 << 16):
                s.sendall(body[i : i + 1 << 16])  # a reset would raise here
            status, headers, answer = read_answer(s)
        assert status == 503 and headers["retry-after"] == "1" and "retry later" in json.loads(answer)["detail"]
        gated.gate.set()
        for s in (running, waiting):
            assert read_answer(s)[0] == 200
            s.close()
        eventually(lambda: srv.stats.held_bytes == 0, "every byte let go")
        assert requests.post(srv.url, json=job("b"), timeout=60).json()["status"] == "Success"
        assert gated.started == ["a", big, "b"]
        assert srv.stats.max_held_bytes <= bounds.max_held_bytes


def test_the_limits_refuse_to_be_inconsistent() -> None:
    with pytest.raises(ValueError, match="max_held_bytes"):
        ServeLimits(max_held_bytes=1 << 20, max_body_bytes=2 << 20)
    assert ServeLimits().max_queue >= 64  # verl's reward loop keeps 64 requests in flight


# -- clients that leave --------------------------------------------------------------------------------------


def test_queued_requests_of_clients_that_left_never_start() -> None:
    gated = GatedNoCancel()
    with serving(gated, concurrency=1) as srv:
        assert not srv.cancellable
        running = raw_request(srv.port, job("a"))
        eventually(lambda: srv.stats.inflight == 1, "a running")
        left = [raw_request(srv.port, job(name)) for name in ("b", "c", "d")]
        eventually(lambda: srv.stats.waiting == 3, "b, c and d waiting")
        for s in left:
            s.close()
        eventually(lambda: srv.stats.cancelled == 3 and srv.stats.waiting == 0, "the three dropped")
        gated.gate.set()
        assert read_answer(running)[0] == 200
        running.close()
        assert requests.post(srv.url, json=job("e"), timeout=60).json()["run_result"]["stdout"] == "ran e\n"
        assert gated.started == ["a", "e"]


async def test_a_slot_handed_over_in_the_turn_its_client_left_starts_nothing() -> None:
    """The one slot is given back, to the request waiting for it, in the same turn of the loop as that
    request's client leaves: its program never starts (the first round started it, then killed it)."""
    gated = Gated()
    srv = SandboxServer("127.0.0.1", 0, gated, concurrency=1)
    try:
        holder = srv._run_slots.take()  # the only slot, taken
        assert holder is not None and holder.done()
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(srv.run_code(job("late"), gone))
        while srv.stats.waiting != 1:
            await asyncio.sleep(0.01)
        srv._run_slots.give_back(holder)  # the slot goes to the waiting request ...
        gone.set_result(None)  # ... in the turn its client leaves
        with pytest.raises(sandbox_server.ClientGone, match="before its program started"):
            await waiting
        assert gated.started == [] and gated.killed == []
        assert srv.stats.cancelled == 1 and srv.stats.killed == 0
        assert srv._run_slots.free == 1  # and the slot is free again
    finally:
        gated.gate.set()
        srv.shutdown_sandbox()


def test_a_running_program_whose_client_left_is_killed() -> None:
    gated = Gated()
    with serving(gated, concurrency=1) as srv:
        assert srv.cancellable
        s = raw_request(srv.port, job("a"))
        eventually(lambda: srv.stats.inflight == 1, "a running")
        s.close()
        eventually(lambda: srv.stats.killed == 1 and srv.stats.inflight == 0, "a killed, its slot free")
        assert gated.killed == ["a"]
        gated.gate.set()
        assert requests.post(srv.url, json=job("b"), timeout=60).json()["run_result"]["stdout"] == "ran b\n"


def test_on_a_backend_that_cannot_stop_a_run_the_slot_stays_taken_until_it_ends() -> None:
    gated = GatedNoCancel()
    with serving(gated, concurrency=1) as srv:
        s = raw_request(srv.port, job("a"))
        eventually(lambda: srv.stats.inflight == 1, "a running")
        s.close()
        eventually(lambda: srv.stats.orphaned == 1, "a orphaned")
        assert srv.stats.inflight == 1  # still running: a second program would oversubscribe the pool
        gated.gate.set()
        eventually(lambda: srv.stats.inflight == 0, "a over")
        assert requests.post(srv.url, json=job("b"), timeout=60).json()["status"] == "Success"


def test_the_builtin_backends_can_stop_a_run() -> None:
    from spade_llm.sandbox.bwrap import BwrapSandbox
    from spade_llm.sandbox.docker import DockerSandbox
    from spade_llm.sandbox.subprocess import SubprocessSandbox

    for backend in (BwrapSandbox, DockerSandbox, SubprocessSandbox):
        assert accepts_cancel(backend.__new__(backend)), backend.__name__


def test_abandoned_sleeps_are_dropped_or_killed_on_the_real_backend() -> None:
    """8 clients post a sleep longer than this test may take and hang up: the 2 running are killed,
    the 6 queued never start, and the next request is served."""
    with serving(concurrency=2) as srv:
        assert srv.cancellable, f"the {srv.sandbox.name} backend's run takes no cancel hook"
        sleeper = job("import time\ntime.sleep(60)", run_timeout=60)
        clients = [raw_request(srv.port, sleeper) for _ in range(8)]
        eventually(lambda: srv.stats.inflight == 2 and srv.stats.waiting == 6, "2 running, 6 waiting")
        for s in clients:
            s.close()
        eventually(lambda: srv.stats.inflight == 0, "the sleeps stopped (they would run 60 s)", seconds=40)
        assert (srv.stats.cancelled, srv.stats.killed, srv.stats.orphaned) == (6, 2, 0)
        body = requests.post(srv.url, json=PRINT_42, timeout=60).json()
        assert body["status"] == "Success" and body["run_result"]["stdout"] == "42\n"


# -- verl's own client ----------------------------------------------------------------------------------------


def verl_sandbox_utils() -> Any:
    """verl's ``reward_score/sandbox_fusion/utils.py``, loaded by path (``import verl`` needs torch)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        pytest.skip("verl is not installed")
    path = Path(spec.origin).parent / "utils" / "reward_score" / "sandbox_fusion" / "utils.py"
    module_spec = importlib.util.spec_from_file_location("verl_sandbox_fusion_utils", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.verl
def test_verls_client_works_with_and_without_a_token(server: SandboxServer) -> None:
    verl = verl_sandbox_utils()
    answer, error = verl.call_sandbox_api(server.url, "print(6 * 7)", None, 10, 10, 1024)
    assert error is None and answer["status"] == "Success" and answer["run_result"]["stdout"] == "42\n"
    with serving(server.sandbox, token="tok-verl") as srv:
        answer, error = verl.call_sandbox_api(srv.url, "print(1)", None, 10, 10, 1024)
        assert answer is None and "401" in error
        with_token = f"http://spade:tok-verl@127.0.0.1:{srv.port}/run_code"
        answer, error = verl.call_sandbox_api(with_token, "print(6 * 7)", None, 10, 10, 1024)
        assert error is None and answer["run_result"]["stdout"] == "42\n"


def spade_verdicts(sandbox: Sandbox, language: str, code: str, tests: list[Any], timeout: int) -> list[Any]:
    """spade's own judge of ``code`` on ``tests``, in verl's terms: True, False, -2 (error), -3 (timeout),
    -4 (compile error)."""
    from spade_llm.sandbox.base import Limits
    from spade_llm.sandbox.stdio import run_stdio_tests

    result = run_stdio_tests(
        sandbox, code, tests, Limits(timeout_s=timeout, memory_mb=1024), float(timeout), language=language,
        compile_timeout_s=timeout, max_timeouts=None,
    )  # fmt: skip
    if result.load_error is not None:
        return [-4] * len(tests)
    codes = {"timeout": -3, "error": -2}
    return [True if r.passed else codes.get(r.status, False) for r in result.test_results or []]


@pytest.mark.verl
@pytest.mark.slow
@pytest.mark.parametrize("language", ["cpp", "java", "go", "nodejs", "rust"])
def test_verls_check_correctness_scores_other_languages_as_spades_judge(language: str, server: SandboxServer) -> None:
    """verl 0.9.1's own ``check_correctness`` with a ``language``, through serve-sandbox: right answers
    pass, wrong ones fail, a quadratic one times out on the large test, one that does not compile is a
    compile error (-4) on every test; and each verdict is spade's own judge's."""
    import polyglot_programs as polyglot

    from spade_llm.languages import TOOLCHAINS

    missing = TOOLCHAINS[language].missing()
    if missing:
        pytest.skip(f"{language}: {', '.join(missing)} not installed")
    verl = verl_sandbox_utils()
    tests = polyglot.sample_tests()
    in_outs = {"inputs": [t.input for t in tests], "outputs": [t.expected for t in tests]}
    timeout = 5  # verl's one timeout for the compile and each run (the quadratic answer spends it twice a language)
    answers = {
        "right": (polyglot.RIGHT[language], [True, True, True]),
        "wrong": (polyglot.WRONG[language], None),
        "slow": (polyglot.SLOW[language], [True, True, -3]),
        "broken": (polyglot.BROKEN[language][0], [-4, -4, -4]),
    }
    for name, (code, want) in answers.items():
        got, metadata = verl.check_correctness(server.url, in_outs, code, timeout, 1024, language)
        if want is None:
            assert False in got and all(v in (True, False) for v in got), (name, got)
        else:
            assert got == want, (name, got, metadata)
        assert got == spade_verdicts(server.sandbox, language, code, tests, timeout), name
