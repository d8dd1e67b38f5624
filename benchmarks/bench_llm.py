"""How well a run keeps a slow endpoint busy: requests in flight and speed-up over a sequential client.

What it does (all on 127.0.0.1):

1. starts two fake endpoints, ``spade serve-fake --latency 0`` and ``--latency 0.5`` (or
   ``python -m``-style ``spade_llm.serve.fake.serve`` when the CLI has no ``serve-fake`` yet);
2. ``spade run --model openai/default --api-base ... --concurrency 16 --tasks-per-epoch 32
   --epochs 1`` against each; the zero-latency wall time is everything but waiting on the model;
3. reads requests and the most requests in flight at once from the server's ``GET /stats`` (or,
   with ``--via-proxy``, from ``shared/tools/faulty_proxy.py`` in passthrough mode, as the
   acceptance check does);
4. speed-up vs a sequential client = (requests x latency + zero-latency wall) / wall;
5. the provider alone (``LiteLLM``, no pipeline): N requests at concurrency 1 and 16.

Prints a table and writes JSON (``--json``, default ``runs/bench_llm.json``).

    .venv/bin/python benchmarks/bench_llm.py [--latency 0.5] [--concurrency 16] [--tasks 32] [--via-proxy]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spade_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("spade")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "spade_llm.cli"]


def has_serve_fake() -> bool:
    r = subprocess.run([*spade_cmd(), "serve-fake", "--help"], capture_output=True, text=True)
    return r.returncode == 0


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_up(url: str, proc: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
        try:
            get_json(url)
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {seconds:.0f}s")


@contextmanager
def background(cmd: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def fake_server(latency: float, work: Path, use_cli: bool) -> Iterator[str]:
    port = free_port()
    if use_cli:
        cmd = [*spade_cmd(), "serve-fake", "--host", "127.0.0.1", "--port", str(port), "--latency", str(latency)]
    else:
        cmd = [sys.executable, "-c", f"from spade_llm.serve.fake import serve; serve('127.0.0.1', {port}, {latency})"]
    with background(cmd, work / f"fake-{port}.log") as proc:
        wait_up(f"http://127.0.0.1:{port}/v1/models", proc)
        yield f"http://127.0.0.1:{port}"


def find_proxy() -> Path | None:
    for root in (ROOT.parent / "shared", ROOT / "shared", Path("/work/shared")):
        if (root / "tools" / "faulty_proxy.py").is_file():
            return root / "tools" / "faulty_proxy.py"
    return None


@contextmanager
def passthrough_proxy(upstream: str, work: Path) -> Iterator[tuple[str, Path]]:
    proxy = find_proxy()
    if proxy is None:
        raise SystemExit("--via-proxy: shared/tools/faulty_proxy.py not found")
    port = free_port()
    log = work / f"proxy-{port}.log"
    with background([sys.executable, str(proxy), str(port), upstream, "passthrough"], log) as proc:
        wait_up(f"http://127.0.0.1:{port}/v1/models", proc)
        yield f"http://127.0.0.1:{port}", log


def proxy_stats(log: Path) -> dict[str, Any]:
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"requests": 0, "max_inflight": 0}


def spade_run(base: str, out: Path, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cmd = [
        *spade_cmd(),
        "run",
        "--model",
        "openai/default",
        "--api-base",
        f"{base}/v1",
        "--epochs",
        "1",
        "--tasks-per-epoch",
        str(args.tasks),
        "--concurrency",
        str(args.concurrency),
        "--seed",
        str(args.seed),
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-bench-local")}
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, timeout=args.run_timeout)
    wall = time.monotonic() - started
    if r.returncode != 0:
        raise SystemExit(f"spade run failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-500:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {
        "wall_s": round(wall, 3),
        "llm": summary.get("llm"),
        "tasks_accepted": summary.get("tasks_accepted"),
        "trajectories": summary.get("trajectories"),
    }


async def provider_only(base: str, n: int, concurrency: int) -> float:
    """Wall time of ``n`` requests through LiteLLM with at most ``concurrency`` in flight."""
    import spade_llm.llm.litellm as provider
    import spade_llm.llm.transport as transport
    from spade_llm.config import LLMConfig, RoleConfig
    from spade_llm.llm.base import LLMRequest
    from spade_llm.llm.stats import LLMStats
    from spade_llm.types import Message

    transport.ALLOW_MODEL_REQUESTS = True
    llm = provider.LiteLLM(RoleConfig(model="openai/default", api_base=f"{base}/v1"), LLMConfig(), stats=LLMStats())
    messages = [Message(role="user", content="Write a function `add(a, b)` returning a + b.")]
    await llm.complete(LLMRequest(messages=messages, role="solver"))  # warm-up: client setup, imports
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with slots:
            await llm.complete(LLMRequest(messages=messages, role="solver", seed=i))

    started = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.monotonic() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", type=float, default=0.5)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--tasks", type=int, default=32, help="--tasks-per-epoch of the run")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--provider-requests", type=int, default=32, help="requests in the provider-only rows")
    p.add_argument("--via-proxy", action="store_true", help="count in-flight requests with faulty_proxy.py")
    p.add_argument("--run-timeout", type=float, default=300.0)
    p.add_argument("--json", default=str(ROOT / "runs" / "bench_llm.json"), help="where to write the results")
    p.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    args = p.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-local")

    work = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    use_cli = has_serve_fake()
    result: dict[str, Any] = {
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "tasks": args.tasks,
        "server": "spade serve-fake" if use_cli else "spade_llm.serve.fake.serve",
        "counted_by": "faulty_proxy passthrough" if args.via_proxy else "server /stats",
    }
    try:
        with fake_server(0.0, work, use_cli) as zero, fake_server(args.latency, work, use_cli) as slow:
            base0 = spade_run(zero, work / "run0", args, work)
            if args.via_proxy:
                with passthrough_proxy(slow, work) as (proxied, log):
                    slow_run = spade_run(proxied, work / "run1", args, work)
                    counts = proxy_stats(log)
            else:
                before = get_json(f"{slow}/stats")
                slow_run = spade_run(slow, work / "run1", args, work)
                after = get_json(f"{slow}/stats")
                counts = {
                    "requests": after["completions"] - before["completions"],
                    "max_inflight": after["max_inflight"],
                }
            requests = int(counts["requests"])
            sequential = requests * args.latency + base0["wall_s"]
            result["pipeline"] = {
                "zero_latency_wall_s": base0["wall_s"],
                "wall_s": slow_run["wall_s"],
                "requests": requests,
                "max_inflight": counts["max_inflight"],
                "sequential_estimate_s": round(sequential, 3),
                "speedup_vs_sequential": round(sequential / slow_run["wall_s"], 2),
                "llm": slow_run["llm"],
                "tasks_accepted": slow_run["tasks_accepted"],
                "trajectories": slow_run["trajectories"],
            }
            n = args.provider_requests
            seq = asyncio.run(provider_only(slow, n, 1))
            par = asyncio.run(provider_only(slow, n, args.concurrency))
            result["provider"] = {
                "requests": n,
                "sequential_wall_s": round(seq, 3),
                "concurrent_wall_s": round(par, 3),
                "speedup": round(seq / par, 2),
                "ideal_speedup": min(n, args.concurrency),
            }
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    pl, pv = result["pipeline"], result["provider"]
    rows = [
        ("pipeline: requests to the model", f"{pl['requests']}"),
        ("pipeline: max requests in flight", f"{pl['max_inflight']} (concurrency {args.concurrency})"),
        ("pipeline: wall, zero latency", f"{pl['zero_latency_wall_s']:.1f} s"),
        (f"pipeline: wall, latency {args.latency:g} s", f"{pl['wall_s']:.1f} s"),
        ("pipeline: sequential client (estimate)", f"{pl['sequential_estimate_s']:.1f} s"),
        ("pipeline: speed-up vs sequential", f"{pl['speedup_vs_sequential']:.1f}x"),
        (f"provider: {pv['requests']} requests, 1 at a time", f"{pv['sequential_wall_s']:.2f} s"),
        (f"provider: {pv['requests']} requests, {args.concurrency} at a time", f"{pv['concurrent_wall_s']:.2f} s"),
        ("provider: speed-up", f"{pv['speedup']:.1f}x (ideal {pv['ideal_speedup']}x)"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value\n{'-' * width}  {'-' * 24}")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
