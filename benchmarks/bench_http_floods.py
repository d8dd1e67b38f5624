"""Floods against ``spade serve-sandbox`` (issue 35: findings 3, 4, 5, 7), before and after, in one run.

Each scenario starts a server of its own from a ``spade`` executable (``--spade``, default this
checkout's; ``--baseline``, e.g. ``/tmp/base/.venv/bin/spade`` for a685e31, runs every scenario on
it too and prints the two side by side), on ``--sandbox`` (bwrap by default), at ``--concurrency 2``:

1. ``slow``: 8 clients each declare a 32 MiB body and send 1 KiB of it a second, while a normal
   client posts ``print(1)`` every 50 ms for ``--duration`` seconds: how many of its requests are
   answered 200 (a685e31 counted the declared bytes: 8 x 32 MiB filled its 256 MiB budget).
   ``sent``: the same, but the 8 clients *send* 32 MiB - 1 each and hold back the last byte (and
   send it again whenever the server cuts them): 255 MiB really held, which a budget counting
   received bytes refused everyone for (the first round of issue 35: 20/20 got 503) until bodies
   that stall were made reclaimable.
2. ``json``: one body with a ``files`` map of 2.4 M entries (``{"xxxxx": null, ...}``, 31 MB) and
   one with ``fetch_files`` of 7.5 M names (30 MB), each to a fresh server, while a client pings
   ``/v1/ping`` on a kept-alive connection every 10 ms: the answer, the server's peak RSS
   (``VmHWM``) and the longest ping once the body is sent (how long the event loop stalled), beside
   the longest in the second before it (the machine's own noise: a loaded 2-core VM adds ~0.1 s);
   then an honest body near the cap (one 22 MiB file, 30 MB of base64), which runs: the stall its
   parsing costs (``json.loads`` and base64 hold the GIL: no thread would make it shorter).
3. ``connections``: the server started with a soft open-files limit of 1024 (as on the machine of
   the issue; the hard one as it is), then with 1024 for both (nothing to raise to); this client
   opens 5,000 connections that send nothing, then posts ``print(1)``: answered or not.
4. ``queue``: a server on this checkout's own code (``python -c``, the ``python`` beside the
   ``spade`` given) running one program at a time with ``max_queue`` 8: 200 clients send their
   heads, then all their bodies at once (``time.sleep(2)`` each); the most requests waiting for a
   slot (``/stats`` polled, and the server's own ``max_waiting`` where it keeps one) against 8.

Measured on a loaded 2-core VM (bwrap; a685e31 -> now): slow clients, normal requests answered 200
0/172 -> 157/157; 2.4 M files, Success with a 346 MB peak and a 14.6 s stall -> 413 with 40 MB and
0.013 s (0.009 s with nothing going on); 7.5 M fetch_files, 928 MB and 39.6 s -> 413 with 38 MB and
0.024 s; one honest 22 MiB file, 0.57 s -> 0.50 s (its parsing and base64, the same work); 5,000
silent connections with a soft limit of 1024, the next request ConnectTimeout after 1512 accepted
-> answered in 0.02 s (the limit raised to the hard one), and with a hard limit of 1024 too ->
answered in 0.01 s (cap 768, 4233 evicted); a burst of 200 at max_queue 8, 199 waiting -> 8.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_http_floods.json``).

    .venv/bin/python benchmarks/bench_http_floods.py [--baseline /tmp/base/.venv/bin/spade]
        [--spade .venv/bin/spade] [--sandbox bwrap] [--scenarios slow,sent,json,connections,queue] [--duration 10]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests
from bench_llm import free_port, get_json, wait_up  # this folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
HEAD = "POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
PRINT_1 = {"code": "print(1)", "language": "python"}


def this_spade() -> Path:
    return Path(sys.executable).with_name("spade")


@contextlib.contextmanager
def server(
    spade: Path, args: argparse.Namespace, log: Path, nofile: tuple[int, int] | None = None, code: str | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``spade serve-sandbox`` (or ``python -c code``, ``{port}`` filled in) on a free port, its open-files
    limit set to ``nofile`` when given; yields its origin and process, stopped after."""
    port = free_port()
    if code is None:
        cmd = [str(spade), "serve-sandbox", "--port", str(port), "--sandbox", args.sandbox, "--concurrency", "2"]
        cmd += ["--allow-unsafe"] if args.sandbox == "subprocess" else []
    else:
        cmd = [str(spade.with_name("python")), "-c", code.format(port=port, sandbox=args.sandbox)]

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    with log.open("ab") as out:
        # in a folder of its own: ``python -c`` imports from its working directory first
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, preexec_fn=limit, cwd=log.parent)
    origin = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{origin}/health", proc)
        requests.post(f"{origin}/run_code", json=PRINT_1, timeout=60)  # the workers for the default limits
        yield origin, proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def status_of(call: Callable[[], requests.Response]) -> str:
    try:
        response = call()
    except requests.RequestException as e:
        return type(e).__name__
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    return str(response.json().get("status")) if isinstance(response.json(), dict) else "ok"


# -- 1. slow declared bodies ------------------------------------------------------------------------------


def slow(spade: Path, args: argparse.Namespace, log: Path) -> dict[str, Any]:
    with server(spade, args, log) as (origin, _):
        port = int(origin.rsplit(":", 1)[1])
        stop = threading.Event()

        def slow_client() -> None:
            while not stop.is_set():  # reconnects when the server cuts it (its read timeout)
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(f"{HEAD}Content-Length: {32 << 20}\r\n\r\n".encode())
                    while not stop.is_set():
                        s.sendall(b" " * 1024)
                        stop.wait(1.0)

        slow_clients = [threading.Thread(target=slow_client, daemon=True) for _ in range(8)]
        for t in slow_clients:
            t.start()
        time.sleep(1.0)  # their heads in
        outcomes: dict[str, int] = {}
        deadline = time.monotonic() + args.duration
        session = requests.Session()
        while time.monotonic() < deadline:
            got = status_of(lambda: session.post(f"{origin}/run_code", json=PRINT_1, timeout=30))
            outcomes[got] = outcomes.get(got, 0) + 1
            time.sleep(0.05)
        stop.set()
        stats = get_json(f"{origin}/stats")
    return {
        "normal_requests": sum(outcomes.values()),
        "answered_200": outcomes.get("Success", 0),
        "outcomes": outcomes,
        "max_held_bytes": stats.get("max_held_bytes"),
    }


def sent(spade: Path, args: argparse.Namespace, log: Path) -> dict[str, Any]:
    body = b"{" + b" " * ((32 << 20) - 2)  # a 32 MiB body but for its last byte
    with server(spade, args, log) as (origin, _):
        port = int(origin.rsplit(":", 1)[1])
        stop = threading.Event()
        sends = [0]

        def holder() -> None:
            while not stop.is_set():  # sends it all again whenever the server cuts it
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                    s.sendall(f"{HEAD}Content-Length: {32 << 20}\r\n\r\n".encode() + body)
                    sends[0] += 1
                    s.settimeout(0.5)
                    while not stop.is_set():
                        try:
                            if not s.recv(1 << 16):
                                break
                        except TimeoutError:
                            continue

        holders = [threading.Thread(target=holder, daemon=True) for _ in range(8)]
        for t in holders:
            t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and get_json(f"{origin}/stats").get("held_bytes", 0) < 250 << 20:
            time.sleep(0.1)  # until nearly all of 8 x 32 MiB is in
        held_at_start = get_json(f"{origin}/stats").get("held_bytes", 0)
        outcomes: dict[str, int] = {}
        deadline = time.monotonic() + args.duration
        session = requests.Session()
        while time.monotonic() < deadline:
            got = status_of(lambda: session.post(f"{origin}/run_code", json=PRINT_1, timeout=30))
            outcomes[got] = outcomes.get(got, 0) + 1
            time.sleep(0.05)
        stop.set()
        stats = get_json(f"{origin}/stats")
        for t in holders:
            t.join(10)
    return {
        "held_mb_at_start": round(held_at_start / (1 << 20)),
        "normal_requests": sum(outcomes.values()),
        "answered_200": outcomes.get("Success", 0),
        "outcomes": outcomes,
        "bodies_sent": sends[0],
        "reclaimed": stats.get("reclaimed"),
        "max_held_bytes": stats.get("max_held_bytes"),
    }


# -- 2. JSON amplification ----------------------------------------------------------------------------------


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def wide_files() -> bytes:
    """``files`` of 2.4 M entries, 5-character names in base 36, null contents (31 MB)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    names = (
        "".join(digits[(i // 36**k) % 36] for k in range(5)) for i in range(2_400_000)
    )  # distinct, 5 characters each
    files = ",".join(f'"{name}":null' for name in names)
    return ('{"code": "print(1)", "language": "python", "files": {' + files + "}}").encode()


def long_fetch() -> bytes:
    """``fetch_files`` of 7.5 M one-letter names (30 MB)."""
    names = ",".join(['"a"'] * 7_500_000)
    return ('{"code": "print(1)", "language": "python", "fetch_files": [' + names + "]}").encode()


def big_file() -> bytes:
    """An honest body near the cap: one 22 MiB file (30 MB of base64), which runs."""
    data = base64.b64encode(os.urandom(22 << 20)).decode()
    code = "import os\nprint(os.path.getsize('big.bin'))"
    return json.dumps({"code": code, "language": "python", "files": {"big.bin": data}}).encode()


def amplification(spade: Path, args: argparse.Namespace, log: Path, body: bytes) -> dict[str, Any]:
    with server(spade, args, log) as (origin, proc):
        before = rss_mb(proc.pid)
        pings: list[tuple[float, float]] = []  # (sent at, took)
        stop = threading.Event()

        def ping() -> None:
            session = requests.Session()
            while not stop.is_set():
                started = time.perf_counter()
                with contextlib.suppress(requests.RequestException):
                    session.get(f"{origin}/v1/ping", timeout=120)
                pings.append((started, time.perf_counter() - started))
                stop.wait(0.01)

        pinger = threading.Thread(target=ping, daemon=True)
        pinger.start()
        time.sleep(1.0)  # pings with nothing else going on: the machine's own noise
        started = time.perf_counter()
        got = status_of(
            lambda: requests.post(
                f"{origin}/run_code", data=body, headers={"Content-Type": "application/json"}, timeout=300
            )
        )
        answered_s = time.perf_counter() - started
        time.sleep(0.5)
        stop.set()
        pinger.join()
        hwm = rss_mb(proc.pid, "VmHWM")
        after = status_of(lambda: requests.post(f"{origin}/run_code", json=PRINT_1, timeout=60))
    return {
        "body_mb": round(len(body) / 1e6, 1),
        "answer": got,
        "answered_s": round(answered_s, 2),
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(hwm, 1),
        "longest_ping_s": round(max(took for at, took in pings if at + took >= started), 3),
        "longest_ping_quiet_s": round(max(took for at, took in pings if at + took < started), 3),
        "pings": len(pings),
        "print1_after": after,
    }


# -- 3. connections -----------------------------------------------------------------------------------------


def connections(spade: Path, args: argparse.Namespace, log: Path, nofile: tuple[int, int]) -> dict[str, Any]:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client's own 5,000
    with server(spade, args, log, nofile=nofile) as (origin, _):
        port = int(origin.rsplit(":", 1)[1])
        opened: list[socket.socket] = []
        try:
            for _ in range(args.connections):
                s = socket.socket()
                s.settimeout(5)
                try:
                    s.connect(("127.0.0.1", port))
                except OSError:
                    s.close()
                    break
                opened.append(s)
            time.sleep(1.0)
            started = time.perf_counter()
            got = status_of(lambda: requests.post(f"{origin}/run_code", json=PRINT_1, timeout=15))
            wait_s = time.perf_counter() - started
            try:
                stats = get_json(f"{origin}/stats", timeout=15)
            except OSError:
                stats = {}
        finally:
            for s in opened:
                s.close()
    return {
        "server_nofile": list(nofile),
        "opened": len(opened),
        "print1": got,
        "print1_wait_s": round(wait_s, 2),
        "server_stats": {k: stats.get(k) for k in ("connections", "connection_cap", "evicted", "max_connections")},
    }


# -- 4. the queue bound -------------------------------------------------------------------------------------

QUEUE_SERVER = """
from spade_llm.serve.httpbase import run_server
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.serve.sandbox import SandboxServer, ServeLimits
srv = SandboxServer("127.0.0.1", {port}, get_sandbox("{sandbox}"), concurrency=1, bounds=ServeLimits(max_queue=8))
run_server(srv, lambda: "listening on " + srv.url, "127.0.0.1", {port})
"""


def queue(spade: Path, args: argparse.Namespace, log: Path) -> dict[str, Any]:
    body = json.dumps({"code": "import time\ntime.sleep(2)", "language": "python"}).encode()
    with server(spade, args, log, code=QUEUE_SERVER) as (origin, _):
        port = int(origin.rsplit(":", 1)[1])
        clients = []
        for _ in range(args.burst):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(f"{HEAD}Connection: close\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:1])
            clients.append(s)
        time.sleep(1.0)  # every head in
        for s in clients:
            s.sendall(body[1:])
        most = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            stats = get_json(f"{origin}/stats")
            most = max(most, stats["waiting"])
            time.sleep(0.02)
        refused = 0
        for s in clients:
            s.settimeout(0.2)
            with contextlib.suppress(OSError):
                refused += s.recv(64).startswith(b"HTTP/1.1 503")
            s.close()
    return {
        "limit": 8,
        "burst": args.burst,
        "max_waiting_polled": most,
        "max_waiting_server": stats.get("max_waiting"),
        "refused_503": refused,
    }


# -- the report ----------------------------------------------------------------------------------------------

SCENARIOS = ("slow", "sent", "json", "connections", "queue")


def run_all(spade: Path, args: argparse.Namespace, scenarios: list[str], log: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"spade": str(spade)}
    if "slow" in scenarios:
        print(f"[{spade}] 8 slow clients declaring 32 MiB, {args.duration:g}s of print(1)...", file=sys.stderr)
        out["slow"] = slow(spade, args, log)
    if "sent" in scenarios:
        print(
            f"[{spade}] 8 clients sending 32 MiB but the last byte, {args.duration:g}s of print(1)...", file=sys.stderr
        )
        out["sent"] = sent(spade, args, log)
    if "json" in scenarios:
        print(f"[{spade}] 2.4 M files, then 7.5 M fetch_files...", file=sys.stderr)
        out["json_files"] = amplification(spade, args, log, wide_files())
        out["json_fetch"] = amplification(spade, args, log, long_fetch())
        out["json_big"] = amplification(spade, args, log, big_file())
    if "connections" in scenarios:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        print(f"[{spade}] {args.connections} silent connections...", file=sys.stderr)
        out["connections_asked"] = args.connections
        out["connections_soft_1024"] = connections(spade, args, log, (1024, hard))
        out["connections_hard_1024"] = connections(spade, args, log, (1024, 1024))
    if "queue" in scenarios:
        print(f"[{spade}] a burst of {args.burst} against max_queue 8...", file=sys.stderr)
        out["queue"] = queue(spade, args, log)
    return out


def args_connections(result: dict[str, Any]) -> int:
    return int(result.get("connections_asked", 5000))


def rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs of one server's results, for the table."""
    shown: list[tuple[str, str]] = []
    if "slow" in result:
        s = result["slow"]
        shown.append(("slow 32 MiB x8: normal requests answered 200", f"{s['answered_200']}/{s['normal_requests']}"))
    if "sent" in result:
        s = result["sent"]
        got = f"{s['answered_200']}/{s['normal_requests']} ({s['held_mb_at_start']} MiB held)"
        shown.append(("32 MiB-1 sent x8: normal requests answered 200", got))
    for key, name in (
        ("json_files", "2.4 M files"),
        ("json_fetch", "7.5 M fetch_files"),
        ("json_big", "a 22 MiB file"),
    ):
        if key in result:
            r = result[key]
            shown.append((f"{name}: answer", r["answer"]))
            shown.append((f"{name}: server peak RSS MB", f"{r['rss_peak_mb']:.0f} (from {r['rss_before_mb']:.0f})"))
            ping = f"{r['longest_ping_s']:.3f} (quiet {r['longest_ping_quiet_s']:.3f})"
            shown.append((f"{name}: longest /v1/ping s", ping))
    for key, name in (("connections_soft_1024", "soft 1024"), ("connections_hard_1024", "soft=hard 1024")):
        if key in result:
            r = result[key]
            got = f"{r['print1']} in {r['print1_wait_s']}s ({r['opened']} open)"
            shown.append((f"{args_connections(result)} silent conns ({name}): print(1)", got))
    if "queue" in result:
        q = result["queue"]
        most = f"{q['max_waiting_polled']} (server's max_waiting: {q['max_waiting_server']})"
        shown.append((f"burst of {q['burst']}: most waiting (limit {q['limit']})", most))
    return shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spade", type=Path, default=this_spade(), help="the spade executable measured")
    ap.add_argument("--baseline", type=Path, help="another spade executable, measured too (e.g. a685e31's)")
    ap.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker", "subprocess"])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of normal requests beside the slow ones")
    ap.add_argument("--connections", type=int, default=5000, help="silent connections opened")
    ap.add_argument("--burst", type=int, default=200, help="clients in the queue's burst")
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_http_floods.json")
    args = ap.parse_args()
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        ap.error(f"unknown scenarios: {', '.join(unknown)}")
    report: dict[str, Any] = {
        "bench": "http_floods",
        "sandbox": args.sandbox,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    with tempfile.TemporaryDirectory() as work:
        log = Path(work) / "servers.log"
        if args.baseline is not None:
            report["baseline"] = run_all(args.baseline, args, scenarios, log)
        report["current"] = run_all(args.spade, args, scenarios, log)
    current = dict(rows(report["current"]))
    before = dict(rows(report["baseline"])) if "baseline" in report else {}
    print(f"\nfloods against spade serve-sandbox ({args.sandbox}, concurrency 2, {report['cpus']} CPUs)")
    print(f"{'figure':<50}{'baseline':>40}{'current':>40}")
    for name, value in current.items():
        print(f"{name:<50}{before.get(name, '-'):>40}{value:>40}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
