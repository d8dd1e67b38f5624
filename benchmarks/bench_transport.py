"""What the official ``openai`` client costs over raw httpx for a streamed chat completion.

Measures the two things that decide docs/llm-transport.md (all on 127.0.0.1, nothing else reached):

1. import cost in a fresh interpreter, for each target (default ``httpx``, ``openai``, ``litellm``,
   and ``httpx+pydantic+openai``: what openai adds on top of what spade imports already):
   ``python -X importtime -c 'import X'`` (cumulative time of the top-level ``X`` line;
   for ``a+b`` one figure per module, so the last one is its marginal cost) and the wall time of
   ``python -c 'import X'``; best of ``--import-runs`` each, next to ``python -c pass``;
2. client overhead per streamed request against ``spade serve-fake --latency 0`` (started here on a
   free port): ``--requests`` sequential requests, then the same number with ``--concurrency`` in
   flight, each with ``"stream": true`` and ``stream_options.include_usage``, through
   (i) ``httpx.AsyncClient.stream`` with the SSE parsing written below, and
   (ii) ``openai.AsyncOpenAI(max_retries=0, http_client=httpx.AsyncClient(...))``.
   The server does the same work for both, so the differences are the client's: wall time and
   client CPU time (``time.process_time`` of this process; the server runs in another one) per
   request, and the median/p95 latency of one request. Each (client, mode) pair runs
   ``--rounds`` times in alternating order; the best round is kept. Every answer is checked
   (text, finish_reason and usage present).

Prints a table and writes JSON (``--json``, default ``runs/bench_transport.json``).

    .venv/bin/python benchmarks/bench_transport.py [--requests 300] [--concurrency 32] [--rounds 3]
                                                   [--import-runs 5] [--skip-imports]

On a small machine client and server share the cores: compare the two clients with each other,
not with figures from another machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_llm import background, free_port, spade_cmd, wait_up  # the same server plumbing (this folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]

PROMPT = "Write a function `add(a, b)` returning a + b."
IMPORT_TARGETS = "httpx,openai,litellm,httpx+pydantic+openai"


# -- the fake server ---------------------------------------------------------------------------


@contextmanager
def fake_server(log: Path) -> Iterator[str]:
    """``spade serve-fake --latency 0`` on a free port; yields its base URL (``.../v1``)."""
    port = free_port()
    cmd = [*spade_cmd(), "serve-fake", "--host", "127.0.0.1", "--port", str(port), "--latency", "0"]
    with background(cmd, log) as proc:
        wait_up(f"http://127.0.0.1:{port}/v1/models", proc)
        yield f"http://127.0.0.1:{port}/v1"


# -- one streamed answer, two ways ---------------------------------------------------------------


@dataclass
class Answer:
    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def ok(self) -> bool:
        return bool(self.text) and self.finish_reason is not None and self.prompt_tokens is not None


def request_body(seed: int) -> dict[str, Any]:
    return {
        "model": "default",
        "messages": [{"role": "user", "content": PROMPT}],
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def httpx_client(connections: int) -> Any:
    import httpx

    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=4.0),
        timeout=httpx.Timeout(60.0, read=30.0),
        follow_redirects=False,
    )


class RawHTTPX:
    """``POST /chat/completions`` with ``stream: true`` over one pooled ``httpx.AsyncClient``; SSE parsed here."""

    name = "raw httpx"

    def __init__(self, base: str, connections: int) -> None:
        self.url = f"{base}/chat/completions"
        self.client = httpx_client(connections)
        self.headers = {"Authorization": "Bearer x", "Accept": "text/event-stream"}

    async def complete(self, seed: int) -> Answer:
        answer = Answer()
        parts: list[str] = []
        async with self.client.stream("POST", self.url, json=request_body(seed), headers=self.headers) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                raise RuntimeError(f"not a stream: {response.headers.get('content-type')}")
            data: list[str] = []
            done = False
            async for line in response.aiter_lines():  # read to the end even after [DONE]: an HTTP/1.1
                if done:  # connection whose body was not read to the end is closed, not reused
                    continue
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                    continue
                if line or not data:  # other fields and comments (": ping") are ignored
                    continue
                payload, data = "\n".join(data), []
                if payload == "[DONE]":
                    done = True
                    continue
                chunk = json.loads(payload)
                if chunk.get("error"):
                    raise RuntimeError(f"error in stream: {chunk['error']}")
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if isinstance(delta.get("content"), str):
                        parts.append(delta["content"])
                    if choice.get("finish_reason"):
                        answer.finish_reason = choice["finish_reason"]
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    answer.prompt_tokens = usage.get("prompt_tokens")
                    answer.completion_tokens = usage.get("completion_tokens")
        answer.text = "".join(parts)
        return answer

    async def aclose(self) -> None:
        await self.client.aclose()


class OpenAIClient:
    """``openai.AsyncOpenAI`` on the same kind of injected ``httpx.AsyncClient``, ``max_retries=0``."""

    name = "openai.AsyncOpenAI"

    def __init__(self, base: str, connections: int) -> None:
        import openai

        self.http = httpx_client(connections)
        self.client = openai.AsyncOpenAI(base_url=base, api_key="x", max_retries=0, http_client=self.http)

    async def complete(self, seed: int) -> Answer:
        answer = Answer()
        parts: list[str] = []
        body = request_body(seed)
        stream = await self.client.chat.completions.create(
            model=body["model"],
            messages=body["messages"],
            temperature=body["temperature"],
            max_tokens=body["max_tokens"],
            seed=seed,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            for choice in chunk.choices or ():
                if choice.delta is not None and isinstance(choice.delta.content, str):
                    parts.append(choice.delta.content)
                if choice.finish_reason:
                    answer.finish_reason = choice.finish_reason
            if chunk.usage is not None:
                answer.prompt_tokens = chunk.usage.prompt_tokens
                answer.completion_tokens = chunk.usage.completion_tokens
        answer.text = "".join(parts)
        return answer

    async def aclose(self) -> None:
        await self.client.close()


# -- timing ------------------------------------------------------------------------------------


@dataclass
class Round:
    wall_s: float
    cpu_s: float
    latencies_s: list[float] = field(repr=False)
    bad: int

    def summary(self, n: int) -> dict[str, Any]:
        lat = sorted(self.latencies_s)
        return {
            "wall_s": round(self.wall_s, 4),
            "requests_per_s": round(n / self.wall_s, 1),
            "wall_per_request_us": round(self.wall_s / n * 1e6),
            "client_cpu_per_request_us": round(self.cpu_s / n * 1e6),
            "latency_p50_ms": round(statistics.median(lat) * 1e3, 3),
            "latency_p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1e3, 3),
            "bad_answers": self.bad,
        }


async def timed(complete: Callable[[int], Awaitable[Answer]], n: int, concurrency: int) -> Round:
    slots = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    bad = 0

    async def one(i: int) -> None:
        nonlocal bad
        async with slots:
            started = time.perf_counter()
            answer = await complete(i)
            latencies.append(time.perf_counter() - started)
            bad += not answer.ok()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    if concurrency == 1:
        for i in range(n):
            await one(i)
    else:
        await asyncio.gather(*(one(i) for i in range(n)))
    return Round(time.perf_counter() - wall0, time.process_time() - cpu0, latencies, bad)


async def bench_clients(base: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx  # noqa: F401  imported before the clock starts: import cost is measured apart
    import openai  # noqa: F401

    kinds = (RawHTTPX, OpenAIClient)
    warm = RawHTTPX(base, 1)  # the server's own first-request work is not a client's cold cost
    await warm.complete(0)
    await warm.aclose()
    cold: dict[str, float] = {}
    clients = {}
    for kind in kinds:  # construction + first request: the one-off cost a run pays once per client
        started = time.perf_counter()
        client = kind(base, max(args.concurrency, 1))
        if not (await client.complete(0)).ok():
            raise SystemExit(f"{kind.name}: the first answer is incomplete")
        cold[kind.name] = time.perf_counter() - started
        for i in range(args.warmup):
            await client.complete(i)
        clients[kind.name] = client
    modes = {"sequential": 1, f"{args.concurrency} in flight": args.concurrency}
    best: dict[tuple[str, str], Round] = {}
    try:
        for r in range(args.rounds):
            order = list(clients.items()) if r % 2 == 0 else list(reversed(clients.items()))
            for mode, concurrency in modes.items():
                for name, client in order:
                    result = await timed(client.complete, args.requests, concurrency)
                    if (name, mode) not in best or result.wall_s < best[(name, mode)].wall_s:
                        best[(name, mode)] = result
    finally:
        for client in clients.values():
            await client.aclose()
    out: dict[str, Any] = {"cold_first_request_ms": {k: round(v * 1e3, 1) for k, v in cold.items()}}
    for mode in modes:
        out[mode] = {name: best[(name, mode)].summary(args.requests) for name in clients}
    return out


# -- imports -----------------------------------------------------------------------------------

_IMPORTTIME = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def import_costs(target: str, runs: int) -> dict[str, Any]:
    """Best-of-``runs`` ``-X importtime`` cumulative figure per module of ``a+b+...`` and wall time."""
    modules = target.split("+")
    code = "; ".join(f"import {m}" for m in modules)
    best_cum: dict[str, int] = {}
    best_wall = float("inf")
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
        if r.returncode != 0:
            return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
        top: dict[str, int] = {}
        for line in r.stderr.splitlines():
            m = _IMPORTTIME.match(line)
            if m and len(m.group(3)) == 1 and m.group(4) in modules:  # top level: one space of indent
                top[m.group(4)] = int(m.group(2))
        for mod, us in top.items():
            best_cum[mod] = min(us, best_cum.get(mod, us))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        best_wall = min(best_wall, time.perf_counter() - started)
    return {
        "importtime_cumulative_ms": {m: round(best_cum[m] / 1e3, 1) for m in modules if m in best_cum},
        "wall_ms": round(best_wall * 1e3, 1),
    }


def interpreter_floor(runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        best = min(best, time.perf_counter() - started)
    return round(best * 1e3, 1)


def versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("httpx", "openai", "httpx2", "pydantic", "litellm"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


# -- main --------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=300, help="requests per (client, mode) round")
    p.add_argument("--concurrency", type=int, default=32, help="requests in flight in the concurrent mode")
    p.add_argument("--rounds", type=int, default=3, help="rounds per (client, mode); the best is kept")
    p.add_argument("--warmup", type=int, default=20, help="untimed requests per client first")
    p.add_argument("--import-runs", type=int, default=5, help="fresh interpreters per import target")
    p.add_argument(
        "--import-targets",
        default=IMPORT_TARGETS,
        help=f"comma-separated; a+b imports both in one process (default {IMPORT_TARGETS})",
    )
    p.add_argument("--skip-imports", action="store_true", help="only the request part")
    p.add_argument("--json", default=str(ROOT / "runs" / "bench_transport.json"), help="where to write the results")
    args = p.parse_args()

    result: dict[str, Any] = {
        "versions": versions(),
        "cpus": os.cpu_count(),
        "requests": args.requests,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    if not args.skip_imports:
        result["imports"] = {"python -c pass": {"wall_ms": interpreter_floor(args.import_runs)}}
        for target in [t.strip() for t in args.import_targets.split(",") if t.strip()]:
            result["imports"][target] = import_costs(target, args.import_runs)

    with tempfile.TemporaryDirectory(prefix="bench-transport-") as work, fake_server(Path(work) / "fake.log") as base:
        result["streamed"] = asyncio.run(bench_clients(base, args))
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]  # other work on the machine skews all

    rows: list[tuple[str, str]] = []
    for target, cost in result.get("imports", {}).items():
        if "error" in cost:
            rows.append((f"import {target}", f"failed: {cost['error']}"))
        else:
            cum = ", ".join(f"{m} {ms:.0f}" for m, ms in cost.get("importtime_cumulative_ms", {}).items())
            rows.append(
                (
                    f"import {target}",
                    f"importtime {cum} ms; wall {cost['wall_ms']:.0f} ms" if cum else f"wall {cost['wall_ms']:.0f} ms",
                )
            )
    streamed = result["streamed"]
    for name, ms in streamed["cold_first_request_ms"].items():
        rows.append((f"{name}: client + first request", f"{ms:.1f} ms"))
    for mode, by_client in streamed.items():
        if mode == "cold_first_request_ms":
            continue
        for name, s in by_client.items():
            speed = f"{s['wall_s']:.2f} s, {s['requests_per_s']:.0f} req/s"
            cpu = f"client CPU {s['client_cpu_per_request_us']} us/req"
            latency = f"p50 {s['latency_p50_ms']:.2f} ms, p95 {s['latency_p95_ms']:.2f} ms"
            rows.append(
                (f"{name}: {args.requests} streamed, {mode}", f"{speed}, {cpu}, {latency}, bad {s['bad_answers']}")
            )
    rows.append(
        (
            "load average before / after",
            f"{result['load_average_before'][0]:.1f} / {result['load_average_after'][0]:.1f} on {result['cpus']} CPUs",
        )
    )
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value\n{'-' * width}  {'-' * 40}")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
