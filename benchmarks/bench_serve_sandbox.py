"""``spade serve-sandbox`` throughput: HumanEval-164 through ``/run_code``, and hundreds of connections at once.

What it measures, against ``spade serve-sandbox`` started here (the CLI, on a free 127.0.0.1 port,
``--sandbox`` and ``--concurrency`` as given):

1. ``humaneval``: every HumanEval task's canonical solution as verl's ``sandbox_fusion`` reward
   would send it (``code = prompt + canonical_solution + test + check(entry_point)``,
   ``run_timeout`` 10, ``memory_limit_MB`` 1024, its other fields as verl sets them), at client
   concurrency ``--client-concurrency`` (default 8, one pooled connection each); wall seconds,
   requests per second and how many answered ``Success`` (expect 164/164). ``--rounds`` rounds,
   the best kept (the first starts the workers for that memory limit). For comparison,
   SandboxFusion itself took 19-20 s for this on the machines this project runs on.
2. ``connections``: ``--connections`` requests (default 256) sent at once, each on a connection of
   its own (HumanEval tasks, cycled), checking that every one is answered 200 with ``Success``; the
   server's ``/stats`` tells how many connections it held at once.

Each mode also reports the CPU time of the client (this process) and of the server process (not its
sandbox workers): with hundreds of connections httpx's pool costs the client far more than the
server, so on a small machine the burst's rate is the client's.

Two more modes hold the server's limits to account, each on a server of its own at ``--concurrency 2``:

3. ``abandoned``: ``--abandoned`` clients (default 8) post ``time.sleep(10)`` and hang up at once;
   then one ``print(42)``: how long it waits (the work of a client that left should be dropped,
   queued or running), and what the server counted meanwhile.
4. ``bodies``: two ``time.sleep(6)`` requests hold both slots, then ``--bodies`` clients (default 16)
   post a ~26 MiB body each (a 19.5 MiB file in ``files``, base64), through ``requests`` as verl's
   client does; the server process's RSS before and at its peak (sampled every 20 ms, and
   ``VmHWM``), what each client got (a status, or the exception when the connection was reset),
   and that a ``print(42)`` is still answered afterwards.

5. ``http``: the server alone, its backend answering at once (no sandbox: ``INSTANT_SERVER``, run
   by the ``python`` beside each ``spade``): HumanEval's bodies, ``--rounds`` rounds of 3 x 164 at
   8; requests per second and the server's CPU milliseconds per request. With ``--baseline``, what
   the HTTP layer's own changes cost, free of the sandbox's noise.

Measured on the same VM (bwrap, under load from other work): ``abandoned``, the ``print(42)`` is
answered in 0.1-0.6 s (the 6 queued never start, the 2 running are killed; 40.0 s before the
server dropped abandoned work, 10.0 s on a backend whose ``run`` takes no ``cancel``);
``bodies``, 9 of the 16 are held (the 256 MiB budget) and run, 7 get a 503 while their bodies are
still arriving, none a reset, and the server's RSS peaks at 360-390 MB (from 36 MB; 1290 MB before,
all 16 held).

Measured on a 2-core VM (bwrap, server concurrency 2): HumanEval-164 at 8 in 1.0-1.3 s warm,
1.2-1.8 s for the first round (~130-160 requests/s), 164/164 Success; 256 connections at once all
answered (256/256 Success, the server held 256 connections) in ~5.5 s, with the client at ~4.8 s
CPU and the server ~0.4 s.

Against another version (issue 35: throughput and p95 must stay within 10% of a685e31's):
``--baseline SPADE`` starts that ``spade`` executable's server beside this one's (``--spade``, by
default this checkout's), and runs HumanEval on both, rounds interleaved (A B B A...: the machine's
load drifts over both alike), then the burst on each; the table ends with current/baseline ratios
of throughput and p95 (best rounds, and medians over rounds). On a quiet machine:

    .venv/bin/python benchmarks/bench_serve_sandbox.py --modes humaneval,http --rounds 6 \
        --baseline /tmp/base/.venv/bin/spade        # a worktree of a685e31 with its own venv

Measured side by side with a685e31 on a loaded 2-core VM (load average 13-25): HumanEval x8, 8
rounds each, throughput 0.87 (best rounds) and 1.23 (medians) of a685e31's, p95 0.94 and 0.95 (the
rounds themselves ranged 58-135 requests/s on both: the machine's noise, not the servers'); the
server's CPU per round the same (0.10-0.20 s on both); ``http``: 0.295 ms of server CPU per request
on both, 323 against 306 requests/s.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_serve_sandbox.json``).

    .venv/bin/python benchmarks/bench_serve_sandbox.py [--sandbox bwrap] [--concurrency N]
                                                       [--client-concurrency 8] [--rounds 3] [--connections 256]
                                                       [--modes humaneval,abandoned,bodies,http]
                                                       [--spade SPADE] [--baseline SPADE]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gzip
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import requests
from bench_llm import background, free_port, get_json, spade_cmd, wait_up  # this folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SPADE_HUMANEVAL", ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"))


def humaneval_payloads() -> list[dict[str, Any]]:
    """One ``/run_code`` body per HumanEval task, shaped as verl's ``call_sandbox_api`` sends it."""
    with gzip.open(DATA, "rt") as f:
        tasks = [json.loads(line) for line in f]
    return [
        {
            "compile_timeout": 10,
            "run_timeout": 10,
            "code": t["prompt"] + t["canonical_solution"] + "\n" + t["test"] + f"\ncheck({t['entry_point']})\n",
            "stdin": None,
            "memory_limit_MB": 1024,
            "language": "python",
            "files": {},
            "fetch_files": [],
        }
        for t in tasks
    ]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (not its children: the sandbox workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def send_all(url: str, payloads: list[dict[str, Any]], concurrency: int, server_pid: int) -> dict[str, Any]:
    """Send every payload, ``concurrency`` at a time on as many pooled connections; wall, rate, statuses,
    and the CPU time the client (this process) and the server process spent meanwhile."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:

        async def one(body: dict[str, Any]) -> None:
            async with gate:
                t = time.perf_counter()
                response = await client.post(url, json=body)
                latencies.append(time.perf_counter() - t)
            status = f"HTTP {response.status_code}" if response.status_code != 200 else response.json()["status"]
            statuses[status] = statuses.get(status, 0) + 1

        started, client0, server0 = time.perf_counter(), time.process_time(), cpu_s(server_pid)
        await asyncio.gather(*(one(p) for p in payloads))
        wall = time.perf_counter() - started
        client_cpu, server_cpu = time.process_time() - client0, cpu_s(server_pid) - server0
    latencies.sort()
    return {
        "requests": len(payloads),
        "wall_s": round(wall, 3),
        "per_s": round(len(payloads) / wall, 1),
        "success": statuses.get("Success", 0),
        "statuses": statuses,
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p95_ms": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 1),
        "client_cpu_s": round(client_cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
    }


def server_cmd(args: argparse.Namespace, port: int, concurrency: int, spade: list[str] | None = None) -> list[str]:
    """``spade serve-sandbox`` on ``port``: this checkout's, or the ``spade`` command given."""
    cmd = [
        *(spade or args.spade),
        "serve-sandbox",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--sandbox",
        args.sandbox,
    ]
    if concurrency:
        cmd += ["--concurrency", str(concurrency)]
    if args.sandbox == "subprocess":
        cmd.append("--allow-unsafe")
    return cmd


def throughput(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Modes 1 and 2: HumanEval-164 rounds, then the burst of connections; with ``--baseline``, on both
    servers, started side by side, their rounds interleaved (A B B A ...: a drift of the machine's
    load falls on both alike), into ``report["baseline"]`` and the ratios into ``report["compare"]``."""
    payloads = humaneval_payloads()
    servers: list[tuple[str, list[str], dict[str, Any]]] = [("current", args.spade, report)]
    if args.baseline:
        report["baseline"] = {"spade": " ".join(args.baseline)}
        servers.append(("baseline", args.baseline, report["baseline"]))
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        running = []
        for name, spade, out in servers:
            port = free_port()
            origin = f"http://127.0.0.1:{port}"
            log = Path(work) / f"{name}.log"
            proc = stack.enter_context(background(server_cmd(args, port, args.concurrency, spade), log))
            started = time.perf_counter()
            wait_up(f"{origin}/health", proc)
            out["startup_s"] = round(time.perf_counter() - started, 2)
            health = get_json(f"{origin}/health")
            out["backend"], out["server_concurrency"] = health["backend"], health["concurrency"]
            out["humaneval_rounds"] = []
            running.append((name, origin, proc, out))
        for i in range(args.rounds):
            for name, origin, proc, out in running if i % 2 == 0 else running[::-1]:
                print(f"humaneval round {i + 1}/{args.rounds} ({name})...", file=sys.stderr)
                result = asyncio.run(send_all(f"{origin}/run_code", payloads, args.client_concurrency, proc.pid))
                out["humaneval_rounds"].append(result)
        for name, origin, proc, out in running:
            out["humaneval"] = min(out["humaneval_rounds"], key=lambda r: r["wall_s"])
            if args.connections:
                print(f"{args.connections} connections at once ({name})...", file=sys.stderr)
                burst = [payloads[i % len(payloads)] for i in range(args.connections)]
                out["connections"] = asyncio.run(send_all(f"{origin}/run_code", burst, args.connections, proc.pid))
            stats = get_json(f"{origin}/stats")
            out["server_stats"] = {k: stats[k] for k in ("requests", "max_inflight", "max_connections", "by_status")}
    if args.baseline:
        report["compare"] = compare(report, report["baseline"])


def compare(current: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """Current over baseline: throughput (requests/s, higher is better) and p95 (lower is better), of
    the best rounds and of the medians over rounds."""

    def median(rounds: list[dict[str, Any]], key: str) -> float:
        return float(statistics.median(r[key] for r in rounds))

    cur, base = current["humaneval_rounds"], baseline["humaneval_rounds"]
    return {
        "throughput_ratio_best": round(current["humaneval"]["per_s"] / baseline["humaneval"]["per_s"], 3),
        "p95_ratio_best": round(current["humaneval"]["p95_ms"] / baseline["humaneval"]["p95_ms"], 3),
        "throughput_ratio_median": round(median(cur, "per_s") / median(base, "per_s"), 3),
        "p95_ratio_median": round(median(cur, "p95_ms") / median(base, "p95_ms"), 3),
    }


def post_raw(port: int, payload: dict[str, Any]) -> socket.socket:
    """A connection that has sent one ``/run_code`` request (as a JSON client does) and not read the answer."""
    body = json.dumps(payload).encode()
    head = (
        f"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(head + body)
    return s


def wait_stats(origin: str, ready: Any, seconds: float = 10.0) -> dict[str, Any]:
    """``/stats`` once ``ready(stats)`` holds (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        stats: dict[str, Any] = get_json(f"{origin}/stats")
        if ready(stats) or time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


def answer_42(origin: str) -> tuple[float, str]:
    """Seconds a ``print(42)`` took, and what came back (``Success 42`` when all is well)."""
    started = time.perf_counter()
    try:
        response = requests.post(f"{origin}/run_code", json={"code": "print(42)", "language": "python"}, timeout=120)
        got = f"HTTP {response.status_code}"
        if response.status_code == 200:
            body = response.json()
            got = f"{body['status']} {(body['run_result'] or {}).get('stdout', '').strip()}"
    except requests.RequestException as e:
        got = type(e).__name__
    return time.perf_counter() - started, got


def abandoned(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Mode 3: clients that post ``sleep(10)`` and hang up at once, then one ``print(42)``."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    with (
        tempfile.TemporaryDirectory() as work,
        background(server_cmd(args, port, 2), Path(work) / "server.log") as proc,
    ):
        wait_up(f"{origin}/health", proc)
        answer_42(origin)  # the workers for the default limits
        print(f"{args.abandoned} abandoned sleep(10) requests, then print(42)...", file=sys.stderr)
        sockets = [
            post_raw(port, {"code": "import time\ntime.sleep(10)", "language": "python"}) for _ in range(args.abandoned)
        ]
        held = wait_stats(origin, lambda st: st["inflight"] + st["waiting"] >= args.abandoned)
        for s in sockets:
            s.close()
        wait_s, got = answer_42(origin)
        stats = get_json(f"{origin}/stats")
    report["abandoned"] = {
        "clients": args.abandoned,
        "held_before_hangup": held["inflight"] + held["waiting"],
        "print42_wait_s": round(wait_s, 2),
        "print42": got,
        "server_stats": {k: stats.get(k) for k in ("runs", "by_status", "cancelled", "killed", "orphaned")},
    }


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def bodies(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Mode 4: big bodies queued behind two busy slots; the server's RSS and what each client got."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    blob = base64.b64encode(os.urandom(args.body_mib * (3 << 20) // 4)).decode()
    code = "import os\nprint(os.path.getsize('big.bin'))"
    payload = json.dumps({"code": code, "language": "python", "files": {"big.bin": blob}}).encode()
    del blob
    with (
        tempfile.TemporaryDirectory() as work,
        background(server_cmd(args, port, 2), Path(work) / "server.log") as proc,
    ):
        wait_up(f"{origin}/health", proc)
        answer_42(origin)
        before = rss_mb(proc.pid)
        peak = [before]
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                with contextlib.suppress(OSError):
                    peak[0] = max(peak[0], rss_mb(proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        busy = [post_raw(port, {"code": "import time\ntime.sleep(6)", "language": "python"}) for _ in range(2)]
        wait_stats(origin, lambda st: st["inflight"] >= 2)
        print(f"{args.bodies} bodies of {len(payload) / 2**20:.1f} MiB behind two busy slots...", file=sys.stderr)

        def post(_: int) -> str:
            try:
                response = requests.post(
                    f"{origin}/run_code", data=payload, headers={"Content-Type": "application/json"}, timeout=300
                )
            except requests.RequestException as e:
                return type(e).__name__
            if response.status_code != 200:
                return f"HTTP {response.status_code}"
            return str(response.json()["status"])

        started = time.perf_counter()
        with ThreadPoolExecutor(args.bodies) as pool:
            outcomes = list(pool.map(post, range(args.bodies)))
        wall = time.perf_counter() - started
        for s in busy:
            s.close()
        sampling.set()
        sampler.join()
        hwm = rss_mb(proc.pid, "VmHWM")
        wait_s, got = answer_42(origin)
        stats = get_json(f"{origin}/stats")
    counted: dict[str, int] = {}
    for outcome in outcomes:
        counted[outcome] = counted.get(outcome, 0) + 1
    report["bodies"] = {
        "clients": args.bodies,
        "body_mib": round(len(payload) / 2**20, 1),
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(peak[0], 1),
        "vm_hwm_mb": round(hwm, 1),
        "outcomes": counted,
        "wall_s": round(wall, 2),
        "print42_after": got,
        "print42_wait_s": round(wait_s, 2),
        "server_stats": {k: stats.get(k) for k in ("runs", "by_status", "refused", "max_held_bytes")},
    }


INSTANT_SERVER = """
from spade_llm.serve.httpbase import run_server
from spade_llm.sandbox.base import Sandbox
from spade_llm.serve.sandbox import SandboxServer
from spade_llm.types import ExecutionResult

class Instant(Sandbox):
    name = "instant"
    isolating = True

    def run(self, program, limits, cancel=None):
        return ExecutionResult(status="ok", return_code=0, stdout="ok\\n")

srv = SandboxServer("127.0.0.1", {port}, Instant(), concurrency=2)
run_server(srv, lambda: "listening on " + srv.url, "127.0.0.1", {port})
"""
"""A serve-sandbox whose backend answers at once: what is measured is the server alone."""


@contextlib.contextmanager
def in_folder(cmd: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``cmd`` run in ``log``'s folder (``python -c`` imports from its working directory first: not
    from this checkout, for the baseline's), stopped after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def http_layer(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Mode 5: HumanEval's bodies to a server whose backend answers at once (``INSTANT_SERVER``, run by
    the ``python`` beside each ``spade``), ``--rounds`` rounds of 3 x 164 at client concurrency 8,
    interleaved between current and baseline: the server's CPU per request, and its rate."""
    payloads = humaneval_payloads() * 3
    servers = [("current", args.spade)] + ([("baseline", args.baseline)] if args.baseline else [])
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        running = []
        for name, spade in servers:
            port = free_port()
            python = str(Path(spade[-1]).with_name("python")) if spade[-1].endswith("spade") else sys.executable
            cmd = [python, "-c", INSTANT_SERVER.format(port=port)]
            proc = stack.enter_context(in_folder(cmd, Path(work) / f"http-{name}.log"))
            wait_up(f"http://127.0.0.1:{port}/health", proc)
            running.append((name, f"http://127.0.0.1:{port}", proc))
            out[name] = []
        for i in range(args.rounds):
            for name, origin, proc in running if i % 2 == 0 else running[::-1]:
                print(f"http layer round {i + 1}/{args.rounds} ({name})...", file=sys.stderr)
                result = asyncio.run(send_all(f"{origin}/run_code", payloads, args.client_concurrency, proc.pid))
                result["server_cpu_ms_per_request"] = round(1000 * result["server_cpu_s"] / len(payloads), 3)
                out[name].append(result)
    report["http_layer"] = {
        name: {
            "rounds": rounds,
            "median_per_s": statistics.median(r["per_s"] for r in rounds),
            "median_server_cpu_ms_per_request": statistics.median(r["server_cpu_ms_per_request"] for r in rounds),
        }
        for name, rounds in out.items()
    }


MODES = ("humaneval", "abandoned", "bodies", "http")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sandbox", default="bwrap", choices=["auto", "bwrap", "docker", "subprocess"])
    ap.add_argument("--concurrency", type=int, default=0, help="server's programs at once (default: its own)")
    ap.add_argument("--client-concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=256, help="requests sent at once in the burst (0: skip)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--abandoned", type=int, default=8, help="clients that post sleep(10) and hang up")
    ap.add_argument("--bodies", type=int, default=16, help="clients posting a big body each")
    ap.add_argument("--body-mib", type=int, default=26, help="size of each big body (MiB, about)")
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_serve_sandbox.json")
    ap.add_argument("--spade", help="the spade executable measured (default: this checkout's)")
    ap.add_argument(
        "--baseline",
        help="another spade executable (e.g. /tmp/base/.venv/bin/spade, a685e31's): HumanEval and the burst run "
        "on both, side by side, and the table gives current/baseline ratios",
    )
    args = ap.parse_args()
    args.spade = [args.spade] if args.spade else spade_cmd()
    args.baseline = [args.baseline] if args.baseline else None
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        ap.error(f"unknown modes: {', '.join(unknown)}")
    report: dict[str, Any] = {
        "bench": "serve_sandbox",
        "sandbox": args.sandbox,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "client_concurrency": args.client_concurrency,
    }
    if "humaneval" in modes:
        throughput(args, report)
        print_throughput(args, report)
    if "abandoned" in modes:
        abandoned(args, report)
        a = report["abandoned"]
        print(f"\n{'abandoned: clients':<34}{'held':>6}{'print(42) wait s':>18}  answer")
        print(f"{'  sleep(10), hung up at once':<28}{a['clients']:>6}{a['held_before_hangup']:>6}"
              f"{a['print42_wait_s']:>18.2f}  {a['print42']}  server: {a['server_stats']}")  # fmt: skip
    if "http" in modes:
        http_layer(args, report)
        print(f"\n{'http layer (instant backend)':<30}{'median req/s':>14}{'server cpu ms/request':>24}")
        for name, h in report["http_layer"].items():
            print(f"  {name:<28}{h['median_per_s']:>14.1f}{h['median_server_cpu_ms_per_request']:>24.3f}")
    if "bodies" in modes:
        bodies(args, report)
        b = report["bodies"]
        print(f"\n{'bodies: clients x MiB':<26}{'RSS before':>11}{'RSS peak':>10}{'VmHWM':>8}{'wall s':>8}  outcomes")
        print(f"{'  behind 2 busy slots':<20}{b['clients']:>3} x {b['body_mib']:<4}{b['rss_before_mb']:>9.0f}MB"
              f"{b['rss_peak_mb']:>8.0f}MB{b['vm_hwm_mb']:>6.0f}MB{b['wall_s']:>8.2f}  {b['outcomes']}; "
              f"then print(42): {b['print42_after']} in {b['print42_wait_s']:.2f}s")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


def print_throughput(args: argparse.Namespace, report: dict[str, Any]) -> None:
    print(
        f"\nspade serve-sandbox ({report['backend']}, concurrency {report['server_concurrency']}, "
        f"{report['cpus']} CPUs, Python {report['python']})"
    )
    print(
        f"{'mode':<26}{'requests':>9}{'wall s':>9}{'req/s':>8}{'Success':>9}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'client cpu s':>14}{'server cpu s':>14}"
    )
    servers = [("current", report)] + ([("baseline", report["baseline"])] if "baseline" in report else [])
    for label, measured in servers:
        spade = " ".join(args.spade) if label == "current" else measured["spade"]
        print(f"{label}: {spade} (server start {measured['startup_s']:.2f}s)")
        rows = [(f"humaneval x{args.client_concurrency} (best)", measured["humaneval"])]
        rows += [(f"  round {i + 1}", r) for i, r in enumerate(measured["humaneval_rounds"])]
        if "connections" in measured:
            rows.append((f"{args.connections} connections at once", measured["connections"]))
        for name, r in rows:
            print(
                f"{name:<26}{r['requests']:>9}{r['wall_s']:>9.2f}{r['per_s']:>8.1f}"
                f"{r['success']:>5}/{r['requests']:<3}{r['p50_ms']:>9.0f}{r['p95_ms']:>9.0f}"
                f"{r['client_cpu_s']:>14.2f}{r['server_cpu_s']:>14.2f}"
            )
        print(f"server: {measured['server_stats']}")
    print("(SandboxFusion: 19-20 s for HumanEval-164 at 8)")
    if "compare" in report:
        c = report["compare"]
        print(
            f"current / baseline: throughput {c['throughput_ratio_best']:.3f} (best rounds), "
            f"{c['throughput_ratio_median']:.3f} (medians); p95 {c['p95_ratio_best']:.3f} (best), "
            f"{c['p95_ratio_median']:.3f} (medians)"
        )


if __name__ == "__main__":
    main()
