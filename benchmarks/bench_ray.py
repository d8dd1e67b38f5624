"""Executor ``ray`` against ``local`` on one workload: wall time, throughput, Ray's cost per item, a projection.

What it does (all on this machine, 127.0.0.1):

1. starts a fake endpoint, ``spade serve-fake --port 0 --latency L`` (default 0.2 s), so that the
   model is where the time goes, as with a real one; runs use ``--model openai/default --api-base``.
   ``--latency 0`` starts no server: the runs use the in-process ``fake/default``;
2. runs THE SAME workload, ``spade run --epochs E --tasks-per-epoch T --samples-per-task K
   --concurrency C --seed S --config bench.yaml --quiet`` (``bench.yaml``: ``sandbox.test_timeout_s``
   = ``--test-timeout``, 0.5 s, as the tests do: at the default 3 s one looping answer of the fake,
   retried over its turns, takes ~18 s and becomes an epoch's critical path, which measures the tail,
   not throughput), three ways:

   * ``local``: the local executor (asyncio in the one process, the default sandbox);
   * ``ray 1 raylet``: ``--executor ray --ray-address 127.0.0.1:P`` on a cluster of one raylet
     (``ray start --head --num-cpus CPUS``): one worker actor (``ray.workers_per_node`` = 1), C
     items in flight;
   * ``ray 2 raylets``: the same on ``ray start --head --num-cpus CPUS/2`` plus ``ray start
     --address 127.0.0.1:P --num-cpus CPUS/2``: a worker per raylet, 2C items in flight (the
     manifest's ``executor.nodes`` counts node IPs, so it says 1 here; the table's raylets come
     from ``ray.nodes()``);

   and checks that both Ray runs wrote the local run's records (tasks, rejected, trajectories,
   task_stats, metrics with every time field dropped, as ``tests/e2e/test_resume.py`` compares them);
3. times per run: the cluster's start (``ray start``, reported, not counted in the run's wall);
   the run's wall (spawn to exit of ``spade run``), split into *setup* (spawn until
   ``manifest.json`` appears: imports, ``ray.init`` and the worker actors starting and building
   their sessions, which ``spade run`` does before it writes the manifest; the local run's setup
   is imports and its sandbox probe, so *workers' start* = Ray setup - local setup) and *epochs*
   (the sum of ``metrics.jsonl``'s ``wall_s``); the driver's CPU seconds (user + system of the
   ``spade run`` process and the children it waited for, from ``wait4``), in all and after setup
   (``/proc/PID/stat`` read when the manifest appears); the cluster's stop (killing our processes);
4. counts work items: episodes (lines of ``trajectories.jsonl``) plus validations (rows of
   ``tasks.jsonl`` plus the rows of ``rejected.jsonl`` that name a task: a bad answer that held no
   task is never validated), and items per second over the wall and over the epochs;
5. Ray's cost per item, two ways: (Ray wall - local wall) / items, from the runs (over the whole
   wall, and over the epochs only, which leaves the workers' start out); and a micro-measure on the
   same cluster: a trivial async actor method (one actor per node, reserving ``ray.worker_cpus``,
   taking a task-sized argument and returning a trajectory-sized answer, as ``SpadeWorker`` does)
   called through ``await ref`` ``--micro-calls`` times, one at a time and ``--micro-concurrency``
   at a time, in ms per call;
6. a projection of throughput for 1, 2, 4, 8 and 16 nodes::

       projected(n) = min(n x node_rate, driver_ceiling)
       node_rate      = C / t_item    t_item = worker seconds per item = sum(episode wall_s) / items
       driver_ceiling = 1 / c_driver  c_driver = driver CPU seconds after setup / items

   both from the one-raylet Ray run. ``node_rate`` is what one node's worker sustains with its C
   slots kept busy, each episode taking what it took on the worker (``wall_s`` of the trajectory:
   mostly the model's latency x turns, so ``--latency`` moves it; a validation only runs the
   sandbox and is counted as no worker time). ``c_driver`` is everything the driver spends per item
   after the workers started (dispatch through Ray, (de)serialising tasks and trajectories, the
   generator's requests, the controller, the records): the driver is one process, so that CPU is
   what caps the cluster (it holds the run's fixed end too, closing the workers and
   ``ray.shutdown``, so a small run understates the ceiling). The projection assumes the work per
   epoch grows with the nodes (more tasks per epoch) and that each node's endpoint keeps up with C
   requests: with a real model the node rate is the node's endpoint's (``ray.node_api_base``), not
   this fake's. (Ray's own round-trip ceiling, 1 / the concurrent ms per call, is printed beside it.)

On this machine every raylet shares the same cores and the same endpoint, so ``ray 2 raylets``
shows placement and the records, not two machines' speed.

Ray clusters of our own, and only ours: each ``ray start`` gets free ports (never 6379, 8265,
10001...), a ``--temp-dir`` under this run's work directory (where ``ray start`` also writes its
``ray_current_cluster``, so a plain ``ray.init()`` elsewhere never finds our cluster), and
``RAY_AUTH_MODE=disabled`` (a token left in ``~/.ray`` by another cluster would otherwise turn
token authentication on for ``ray start`` and the driver would be refused). The script NEVER calls
``ray stop``: it has no scope and stops every Ray process on the machine, other sessions' clusters
included. It stops a cluster by killing exactly its processes: those whose command line names our
temp dir or whose environment carries our tag (``BENCH_RAY_TAG``), and their descendants (worker
processes rename themselves ``ray::...``), SIGTERM then SIGKILL; in a ``finally``, as is stopping
the fake endpoint.

Prints a table and writes JSON (``--json``, default ``runs/bench_ray.json``); exits 1 when a Ray
run's records differ from the local run's. About 2 minutes on two cores with the defaults.

    .venv/bin/python benchmarks/bench_ray.py [--latency 0.2] [--concurrency 4] [--epochs 3]
        [--tasks-per-epoch 16] [--samples-per-task 4] [--test-timeout 0.5] [--cpus 2] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ["tasks.jsonl", "rejected.jsonl", "trajectories.jsonl", "task_stats.jsonl", "metrics.jsonl"]
TIME_FIELD = re.compile(r"(time|wall|duration|elapsed|latency|second)|(_s|_ms|_at)$|^(started|finished|created)")
"""As in ``tests/e2e/test_resume.py``: fields that may differ between two runs of the same records."""
NODES = [1, 2, 4, 8, 16]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spade_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("spade")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "spade_llm.cli"]


def ray_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("ray")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of everything this script starts: our Ray clusters only, no token auth."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    env.setdefault("OPENAI_API_KEY", "sk-bench-local")
    env.update(extra)
    return env


# -- the fake endpoint ---------------------------------------------------------------------------


@contextmanager
def fake_server(latency: float, work: Path) -> Iterator[str]:
    """``spade serve-fake --port 0``: its URL is read from the banner it prints on stderr."""
    log = work / "serve-fake.log"
    cmd = [*spade_cmd(), "serve-fake", "--host", "127.0.0.1", "--port", "0", "--latency", str(latency)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=work, env=child_env())
    try:
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r"listening on (http://\S+)", log.read_text(errors="replace"))
            if found:
                yield found.group(1).rstrip("/").removesuffix("/v1")
                return
            if proc.poll() is not None:
                raise SystemExit(f"spade serve-fake exited with {proc.returncode}: {log.read_text()[-500:]}")
            if time.monotonic() > deadline:
                raise SystemExit("spade serve-fake printed no URL within 60 s")
            time.sleep(0.05)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- Ray clusters of our own ---------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time in ticks) of every live process we can read."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if fields[0] not in ("Z", "X"):  # a zombie is dead already
            table[int(entry)] = (int(fields[1]), int(fields[19]))
    return table


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


class LocalCluster:
    """Raylets started by ``ray start`` on this machine, each with its own ports and CPUs, all under
    one ``--temp-dir`` of ours; ``stop`` kills exactly their processes (never ``ray stop``: see the
    module docstring)."""

    def __init__(self, temp_dir: Path, cpus: list[int], log: Path) -> None:
        self.temp_dir = temp_dir
        self.cpus = cpus
        self.log = log
        self.tag = f"bench-ray-{uuid.uuid4().hex[:12]}"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.start_s: list[float] = []

    def _ray_start(self, head: bool, cpus: int) -> float:
        ports = [
            "--node-manager-port",
            "--object-manager-port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--runtime-env-agent-port",
            "--metrics-export-port",
        ]
        cmd = [
            *ray_cmd(),
            "start",
            "--num-cpus",
            str(cpus),
            "--num-gpus",
            "0",
            "--disable-usage-stats",
            "--temp-dir",
            str(self.temp_dir),
            "--object-store-memory",
            str(100 * 2**20),
            "--min-worker-port",
            "0",
            "--max-worker-port",
            "0",
        ]
        for flag in ports:
            cmd += [flag, str(free_port())]
        if head:
            cmd += [
                "--head",
                "--port",
                str(self.port),
                "--include-dashboard=false",
                "--dashboard-port",
                str(free_port()),
            ]
        else:
            cmd += ["--address", self.address]
        started = time.monotonic()
        with open(self.log, "ab") as out:
            r = subprocess.run(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=child_env(BENCH_RAY_TAG=self.tag), timeout=180
            )
        if r.returncode != 0:
            raise SystemExit(f"ray start failed ({r.returncode}); see {self.log}:\n{self.log.read_text()[-1500:]}")
        return time.monotonic() - started

    def start(self) -> float:
        """Start the head, then the other raylets; seconds it took."""
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        self.start_s = [self._ray_start(i == 0, c) for i, c in enumerate(self.cpus)]
        return sum(self.start_s)

    def processes(self) -> dict[int, int]:
        """Our cluster's processes, pid -> start time: by temp dir or tag, and their descendants."""
        table = _proc_table()
        needle, tag = str(self.temp_dir).encode(), f"BENCH_RAY_TAG={self.tag}".encode()
        ours = {
            pid
            for pid in table
            if pid != os.getpid()
            and (
                needle in _read(Path("/proc", str(pid), "cmdline")) or tag in _read(Path("/proc", str(pid), "environ"))
            )
        }
        grew = True
        while grew:
            more = {pid for pid, (ppid, _) in table.items() if ppid in ours and pid not in ours and pid != os.getpid()}
            grew = bool(more)
            ours |= more
        return {pid: table[pid][1] for pid in ours}

    def stop(self) -> int:
        """SIGTERM our processes, SIGKILL those left after 5 s; a few rounds for any started meanwhile.
        A pid is signalled only while its start time is the one we saw, so no reused pid is hit."""
        signalled: set[int] = set()
        for _ in range(4):
            procs = self.processes()
            if not procs:
                break
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
                live = _alive(procs)
                if not live:
                    break
                for pid in live:
                    try:
                        os.kill(pid, sig)
                        signalled.add(pid)
                    except (ProcessLookupError, PermissionError):
                        pass
                deadline = time.monotonic() + wait
                while _alive(live) and time.monotonic() < deadline:
                    time.sleep(0.1)
        return len(signalled)


def _alive(procs: dict[int, int]) -> dict[int, int]:
    """Those of ``procs`` (pid -> start time) still running as the same process."""
    table = _proc_table()
    return {pid: st for pid, st in procs.items() if pid in table and table[pid][1] == st}


# -- one spade run -------------------------------------------------------------------------------


def _cpu_s(pid: int) -> float:
    """utime + stime (+ children's) of a live process, in seconds."""
    stat = _read(Path("/proc", str(pid), "stat")).decode()
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / CLK_TCK


def _strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_times(v) for k, v in value.items() if not TIME_FIELD.search(k)}
    if isinstance(value, list):
        return [_strip_times(v) for v in value]
    return value


def records(path: Path) -> dict[str, list[Any]]:
    """The reproducible content of a run: time fields dropped; files written in completion order sorted
    (copied from ``tests/e2e/test_resume.py``)."""
    out: dict[str, list[Any]] = {}
    for name in RECORDS:
        rows = [_strip_times(json.loads(x)) for x in (path / name).read_text().splitlines() if x.strip()]
        if name in ("trajectories.jsonl", "task_stats.jsonl"):
            rows.sort(key=lambda r: (r["task_id"], r.get("sample_index", 0)))
        out[name] = rows
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def spade_run(name: str, extra: list[str], args: argparse.Namespace, model: list[str], work: Path) -> dict[str, Any]:
    out = work / name
    cmd = [
        *spade_cmd(),
        "run",
        *model,
        "--epochs",
        str(args.epochs),
        "--tasks-per-epoch",
        str(args.tasks_per_epoch),
        "--samples-per-task",
        str(args.samples_per_task),
        "--concurrency",
        str(args.concurrency),
        "--seed",
        str(args.seed),
        "--config",
        str(work / "bench.yaml"),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]
    log = work / f"{name}.log"
    with open(log, "wb") as f:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=work, env=child_env())
    setup_s = setup_cpu = None
    try:
        while True:
            if setup_s is None and (out / "manifest.json").exists():
                setup_s, setup_cpu = time.monotonic() - started, _cpu_s(proc.pid)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > args.run_timeout:
                raise SystemExit(f"{name}: spade run took over {args.run_timeout:g} s; see {log}")
            time.sleep(0.05)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{name}: spade run failed ({proc.returncode}): {log.read_text()[-800:]}")
    cpu = usage.ru_utime + usage.ru_stime
    trajectories = _rows(out / "trajectories.jsonl")
    accepted = _rows(out / "tasks.jsonl")
    validated_rejects = [r for r in _rows(out / "rejected.jsonl") if r.get("task_id")]
    episodes, validations = len(trajectories), len(accepted) + len(validated_rejects)
    items = episodes + validations
    epochs_s = sum(float(m.get("wall_s") or 0.0) for m in _rows(out / "metrics.jsonl"))
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "wall_s": round(wall, 3),
        "setup_s": None if setup_s is None else round(setup_s, 3),
        "epochs_s": round(epochs_s, 3),
        "driver_cpu_s": round(cpu, 3),
        "driver_cpu_after_setup_s": None if setup_cpu is None else round(max(cpu - setup_cpu, 0.0), 3),
        "episodes": episodes,
        "validations": validations,
        "items": items,
        "items_per_s": round(items / wall, 3),
        "items_per_s_epochs": round(items / epochs_s, 3) if epochs_s else None,
        "episode_wall_s_sum": round(sum(float(t.get("wall_s") or 0.0) for t in trajectories), 3),
        "task_bytes": sum(len(json.dumps(t)) for t in accepted) // max(len(accepted), 1),
        "trajectory_bytes": sum(len(json.dumps(t)) for t in trajectories) // max(episodes, 1),
        "executor": manifest.get("executor"),
        "sandbox": manifest.get("sandbox"),
    }


# -- the micro-measure: one trivial actor call through await ref -----------------------------------


def micro_main(args: argparse.Namespace) -> int:
    """Run in a subprocess of its own (a driver of the cluster at ``--micro``); prints one JSON line."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    t0 = time.perf_counter()
    ray.init(address=args.micro, logging_level=logging.WARNING, log_to_driver=False)
    init_s = time.perf_counter() - t0
    deadline = time.monotonic() + 60
    while True:
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= args.worker_cpus]
        if len(nodes) >= args.expect_nodes or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    class Echo:
        def __init__(self, size: int) -> None:
            self.answer = b"x" * size

        async def ping(self, arg: bytes) -> bytes:
            return self.answer

    actor: Any = ray.remote(Echo)
    t0 = time.perf_counter()
    actors = [
        actor.options(
            num_cpus=args.worker_cpus,
            max_concurrency=2 * args.micro_concurrency + 4,
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
        ).remote(args.answer_bytes)
        for n in nodes
    ]
    ray.get([a.ping.remote(b"") for a in actors])
    actors_s = time.perf_counter() - t0
    arg = b"x" * args.arg_bytes

    async def calls(n: int, width: int) -> float:
        slots = asyncio.Semaphore(width)

        async def one(i: int) -> None:
            async with slots:
                await actors[i % len(actors)].ping.remote(arg)

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started

    async def measure() -> tuple[float, float]:
        await calls(20, args.micro_concurrency)  # warm-up: connections, the actor's event loop
        return await calls(args.micro_calls, 1), await calls(args.micro_calls, args.micro_concurrency)

    seq, conc = asyncio.run(measure())
    for a in actors:
        ray.kill(a)
    ray.shutdown()
    n = args.micro_calls
    print(
        json.dumps(
            {
                "nodes": len(nodes),
                "actors": len(actors),
                "calls": n,
                "concurrency": args.micro_concurrency,
                "arg_bytes": args.arg_bytes,
                "answer_bytes": args.answer_bytes,
                "ray_init_s": round(init_s, 3),
                "actors_start_s": round(actors_s, 3),
                "sequential_ms": round(1000 * seq / n, 3),
                "concurrent_ms": round(1000 * conc / n, 3),
            }
        )
    )
    return 0


def micro(cluster: LocalCluster, args: argparse.Namespace, nodes: int, local: dict[str, Any], work: Path) -> Any:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--micro",
        cluster.address,
        "--expect-nodes",
        str(nodes),
        "--micro-calls",
        str(args.micro_calls),
        "--micro-concurrency",
        str(args.micro_concurrency),
        "--worker-cpus",
        str(args.worker_cpus),
        "--arg-bytes",
        str(local["task_bytes"]),
        "--answer-bytes",
        str(local["trajectory_bytes"]),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=child_env(), timeout=300)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode != 0 or not lines:
        raise SystemExit(f"the micro-measure failed ({r.returncode}): {(r.stderr or r.stdout)[-800:]}")
    return json.loads(lines[-1])


# -- the whole benchmark ---------------------------------------------------------------------------


def ray_config(
    name: str, cpus: list[int], args: argparse.Namespace, model: list[str], work: Path, local: dict[str, Any]
) -> dict[str, Any]:
    cluster = LocalCluster(work / f"rt{len(cpus)}", cpus, work / f"{name}-ray.log")
    run: dict[str, Any] = {}
    try:
        start_s = cluster.start()
        run = spade_run(name, ["--executor", "ray", "--ray-address", cluster.address], args, model, work)
        run["cluster_start_s"] = round(start_s, 3)
        run["raylet_cpus"] = cpus
        run["workers_start_s"] = round(run["setup_s"] - local["setup_s"], 3) if run["setup_s"] else None
        run["same_records"] = records(work / name) == records(work / "local")
        run["micro"] = micro(cluster, args, len(cpus), local, work)
        run["raylets"] = run["micro"]["nodes"]
        return run
    finally:
        t0 = time.monotonic()
        run["cluster_processes_killed"] = cluster.stop()
        run["cluster_stop_s"] = round(time.monotonic() - t0, 3)
        left = cluster.processes()
        if left:
            print(f"warning: processes of our Ray cluster still alive: {sorted(left)}", file=sys.stderr)


def projection(one: dict[str, Any], concurrency: int) -> dict[str, Any]:
    items = one["items"]
    t_item = one["episode_wall_s_sum"] / items
    node_rate = concurrency / t_item if t_item else float("inf")
    driver_cpu = one["driver_cpu_after_setup_s"] or one["driver_cpu_s"]
    c_driver = driver_cpu / items
    ceiling = 1 / c_driver if c_driver else float("inf")
    rows = [
        {
            "nodes": n,
            "node_bound": round(n * node_rate, 2),
            "driver_ceiling": round(ceiling, 2),
            "projected": round(min(n * node_rate, ceiling), 2),
            "limited_by": "nodes" if n * node_rate < ceiling else "driver",
        }
        for n in NODES
    ]
    return {
        "worker_s_per_item": round(t_item, 4),
        "node_rate": round(node_rate, 3),
        "driver_cpu_ms_per_item": round(1000 * c_driver, 3),
        "driver_ceiling": round(ceiling, 2),
        "ray_round_trip_ceiling": round(1000 / one["micro"]["concurrent_ms"], 1),
        "rows": rows,
    }


def print_table(result: dict[str, Any]) -> None:
    runs = result["runs"]
    names = list(runs)
    heads = {"local": "local", "ray-1": "ray 1 raylet", "ray-2": "ray 2 raylets"}

    def cell(run: dict[str, Any], key: str) -> str:
        v = run.get(key)
        if key == "same_records":
            return "-" if v is None else ("yes" if v else "NO")
        if key == "where":
            e = run.get("executor") or {}
            return f"{run.get('raylets', '-')} / {e.get('workers', '-')} / {e.get('slots')}"
        if v is None:
            return "-"
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    rows = [
        ("cluster start (s, not in wall)", "cluster_start_s"),
        ("cluster stop: kill ours (s)", "cluster_stop_s"),
        ("wall (s)", "wall_s"),
        ("  setup: start to manifest (s)", "setup_s"),
        ("    workers' start: - local's (s)", "workers_start_s"),
        ("  epochs: sum of wall_s (s)", "epochs_s"),
        ("episodes", "episodes"),
        ("validations", "validations"),
        ("items (episodes + validations)", "items"),
        ("items/s over the wall", "items_per_s"),
        ("items/s over the epochs", "items_per_s_epochs"),
        ("driver CPU (s)", "driver_cpu_s"),
        ("driver CPU after setup (s)", "driver_cpu_after_setup_s"),
        ("raylets / workers / slots", "where"),
        ("same records", "same_records"),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{heads[n]:>14}" for n in names))
    for label, key in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{cell(runs[n], key):>14}" for n in names))

    local = runs["local"]
    print(f"\nRay's cost per item (ms/item; items = {local['items']})")
    for n in names[1:]:
        r = runs[n]
        d_wall = 1000 * (r["wall_s"] - local["wall_s"]) / r["items"]
        d_ep = 1000 * (r["epochs_s"] - local["epochs_s"]) / r["items"]
        print(f"  {heads[n]:<14} (wall - local wall) / items {d_wall:8.1f}   over the epochs only {d_ep:8.1f}")
        m = r["micro"]
        print(
            f"  {'':<14} trivial actor call, await ref: {m['sequential_ms']:.2f} ms one at a time, "
            f"{m['concurrent_ms']:.2f} ms/call {m['concurrency']} at a time ({m['calls']} calls, "
            f"{m['actors']} actor(s), {m['arg_bytes']} B in / {m['answer_bytes']} B out)"
        )
    print("  (the setup row holds the workers' start: ray.init, actors, their sessions)")

    p = result["projection"]
    print(
        f"\nprojected items/s = min(nodes x C / t_item, 1 / c_driver), from the 1-raylet run:\n"
        f"  t_item = sum(episode wall_s) / items = {p['worker_s_per_item']:.3f} s "
        f"(latency {result['latency_s']:g} s), C = {result['concurrency']}: node rate {p['node_rate']:.2f}/s\n"
        f"  c_driver = driver CPU after setup / items = {p['driver_cpu_ms_per_item']:.1f} ms: "
        f"driver ceiling {p['driver_ceiling']:.1f}/s (Ray round trip alone: {p['ray_round_trip_ceiling']:.0f}/s;\n"
        "  c_driver holds the run's fixed end, closing workers and ray.shutdown: a small run understates the ceiling)"
    )
    print(f"  {'nodes':>5}  {'node-bound':>10}  {'driver':>8}  {'projected':>9}  limited by")
    for row in p["rows"]:
        print(
            f"  {row['nodes']:>5}  {row['node_bound']:>10.1f}  {row['driver_ceiling']:>8.1f}  "
            f"{row['projected']:>9.1f}  {row['limited_by']}"
        )
    measured = ", ".join(f"{heads[n]} {runs[n]['items_per_s_epochs']:.2f}/s" for n in names[1:])
    print(f"  measured here over the epochs (raylets share 2 cores and one endpoint): {measured}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", type=float, default=0.2, help="seconds the fake endpoint adds per answer (0: fake/)")
    p.add_argument("--concurrency", type=int, default=4, help="--concurrency of every run (and per Ray worker)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--tasks-per-epoch", type=int, default=16)
    p.add_argument("--samples-per-task", type=int, default=4)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--test-timeout",
        type=float,
        default=0.5,
        help="sandbox.test_timeout_s of the runs (the default 3 s lets one looping answer of the fake take an epoch)",
    )
    p.add_argument("--cpus", type=int, default=2, help="CPUs of the cluster, split between the raylets of ray-2")
    p.add_argument("--worker-cpus", type=float, default=0.5, help="CPUs a micro-measure actor reserves")
    p.add_argument("--micro-calls", type=int, default=200)
    p.add_argument("--micro-concurrency", type=int, default=16)
    p.add_argument("--run-timeout", type=float, default=300.0)
    p.add_argument("--json", default=str(ROOT / "runs" / "bench_ray.json"), help="where to write the results")
    p.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    p.add_argument("--micro", metavar="ADDRESS", help=argparse.SUPPRESS)  # the micro-measure's own process
    p.add_argument("--expect-nodes", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--arg-bytes", type=int, default=1000, help=argparse.SUPPRESS)
    p.add_argument("--answer-bytes", type=int, default=4000, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.micro:
        return micro_main(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally clauses stop our clusters

    work = Path(tempfile.mkdtemp(prefix="bray-", dir="/tmp" if os.path.isdir("/tmp") else None))  # short: sockets
    half = max(args.cpus // 2, 1)
    (work / "bench.yaml").write_text(f"sandbox:\n  test_timeout_s: {args.test_timeout}\n")
    result: dict[str, Any] = {
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "epochs": args.epochs,
        "tasks_per_epoch": args.tasks_per_epoch,
        "samples_per_task": args.samples_per_task,
        "seed": args.seed,
        "test_timeout_s": args.test_timeout,
        "cpus": args.cpus,
        "model": "openai/default (spade serve-fake)" if args.latency > 0 else "fake/default",
        "runs": {},
    }
    try:
        with nullcontext(None) if args.latency <= 0 else fake_server(args.latency, work) as url:
            model = ["--model", "openai/default", "--api-base", f"{url}/v1"] if url else ["--model", "fake/default"]
            runs = result["runs"]
            print("local ...", file=sys.stderr, flush=True)
            runs["local"] = spade_run("local", [], args, model, work)
            print("ray, 1 raylet ...", file=sys.stderr, flush=True)
            runs["ray-1"] = ray_config("ray-1", [args.cpus], args, model, work, runs["local"])
            print("ray, 2 raylets ...", file=sys.stderr, flush=True)
            runs["ray-2"] = ray_config("ray-2", [half, half], args, model, work, runs["local"])
        result["projection"] = projection(result["runs"]["ray-1"], args.concurrency)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    print_table(result)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0 if all(r.get("same_records", True) for r in result["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
