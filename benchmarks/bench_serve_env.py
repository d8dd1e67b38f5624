"""``spade serve-env`` throughput: episodes per second through openenv-core's client at 1, 8 and 32 sessions.

What it measures, all on 127.0.0.1:

1. starts ``spade serve-fake`` (the policy's model) and, for each session count, a fresh ``spade
   serve-env --model fake/default`` (its own run directory, the same config at every count:
   ``--tasks-per-epoch`` x ``--samples-per-task`` episodes an epoch, ``--concurrency`` episodes in
   flight, enough sessions allowed);
2. opens that many openenv-core ``GenericEnvClient(base_url).sync()`` sessions, one thread each,
   whose policy asks serve-fake's ``--profile`` for every reply (the whole conversation, as a
   chat request), and plays ``--episodes`` episodes in all, from the first ``reset()`` to the last
   ``done``: episodes/s, steps/s, the step latency seen by a client (p50, p90: the reply judged in
   the sandbox and the next turn or the end sent back), the policy's own request time (serve-fake
   recognising the task: it is in the wall time, as a model's would be), and the resets' waits
   (at an epoch boundary: the next plan, proposals and validation);
3. samples the server process's RSS every 100 ms (and ``VmHWM`` at the end), and its sandbox
   workers' (its descendants', summed: pages they share are counted in each) at the peak.

What bounds it: each epoch's tasks are proposed and validated (the reference, determinism, weak
tests with up to 40 mutants) before their episodes are handed out, and the controller waits for an
epoch's last episode before planning the next, so a client waits at each boundary; each reply is
one or two sandbox executions (public tests, then hidden ones), and a reply that hangs is judged
until ``sandbox.test_timeout_s`` (3 s) runs out: the fake policy's wrong answers include loops, more
often on the harder tasks of later epochs (``replies_timed_out``, ``steps_over_1s``).

Measured on a 2-core VM shared with other work (load average ~2.7; bwrap; 2026-12-02), 320 episodes
(5 epochs) at each count: 3.7, 11.2 and 11.3 episodes/s at 1, 8 and 32 sessions (step p50 5, 22 and
72 ms); 15.7, 23.8 and 23.8 over the first 128 (2 epochs). 12 of the 596 replies hung (~6 s each: 76
of the 86 s at one session); past 8 sessions the cores are the limit, and resets wait at the epoch
boundaries (up to ~14 s). The server's RSS: 213 MB idle (openenv-core's imports), 227-230 MB at the
peak; the sandbox workers ~650-670 MB summed (shared pages counted per worker). 3.1-3.3 s to listen.

Prints a table and one JSON line (also written to ``--json``, default ``runs/bench_serve_env.json``).

    /work/venv-env/bin/python benchmarks/bench_serve_env.py [--sessions 1,8,32] [--episodes 320]
        [--tasks-per-epoch 16] [--samples-per-task 4] [--concurrency 32] [--profile default] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from bench_llm import background, fake_server, spade_cmd  # this folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                kids = Path(f"/proc/{p}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                out.append(kid)
                todo.append(kid)
    return out


class Sampler(threading.Thread):
    """The server's RSS (and its descendants') every 100 ms, keeping the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0.0
        self.children_at_peak = 0.0
        self.children_peak = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            own = rss_mb(self.pid)
            children = sum(rss_mb(p) for p in descendants(self.pid))
            self.children_peak = max(self.children_peak, children)
            if own > self.peak:
                self.peak, self.children_at_peak = own, children


def wait_listening(log: Path, proc: subprocess.Popen[bytes], seconds: float = 120) -> tuple[str, float]:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if proc.poll() is not None:
            raise RuntimeError(f"serve-env exited with {proc.returncode}:\n{log.read_text()}")
        match = re.search(r"listening on (http://\S+)", log.read_text(errors="replace"))
        if match:
            return match.group(1), time.monotonic() - started
        time.sleep(0.05)
    raise RuntimeError(f"serve-env did not listen in {seconds:.0f}s:\n{log.read_text()}")


def policy(api_base: str, profile: str) -> Any:
    client = httpx.Client(timeout=60)

    def reply(messages: list[dict[str, str]]) -> str:
        body = {"model": profile, "messages": messages}
        r = client.post(f"{api_base}/chat/completions", json=body).raise_for_status()
        return str(r.json()["choices"][0]["message"]["content"])

    return reply


def play(url: str, ask: Any, budget: list[int], lock: threading.Lock, out: dict[str, list[float]]) -> None:
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=url, message_timeout_s=120).sync() as env:
        while True:
            with lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            t = time.monotonic()
            result = env.reset()
            out["reset_s"].append(time.monotonic() - t)
            while not result.done:
                t = time.monotonic()
                answer = ask(result.observation["messages"])
                out["policy_s"].append(time.monotonic() - t)
                t = time.monotonic()
                result = env.step({"answer": answer})
                out["step_s"].append(time.monotonic() - t)
            out["reward"].append(float(result.reward or 0.0))
            out["passed"].append(float(result.observation.get("final_status") == "passed"))


def one_level(args: argparse.Namespace, api_base: str, sessions: int, work: Path) -> dict[str, Any]:
    run = work / f"run-{sessions}"
    log = work / f"serve-env-{sessions}.log"
    cmd = [
        *spade_cmd(), "serve-env", "--model", "fake/default", "--port", "0", "--out", str(run),
        "--tasks-per-epoch", str(args.tasks_per_epoch), "--samples-per-task", str(args.samples_per_task),
        "--concurrency", str(args.concurrency), "--max-sessions", str(max(sessions, 1) + 4),
        "--sandbox", args.sandbox, "--seed", str(args.seed),
    ]  # fmt: skip
    with background(cmd, log) as proc:
        url, startup_s = wait_listening(log, proc)
        idle_mb = rss_mb(proc.pid)
        sampler = Sampler(proc.pid)
        sampler.start()
        out: dict[str, list[float]] = {"reset_s": [], "step_s": [], "policy_s": [], "reward": [], "passed": []}
        budget, lock = [args.episodes], threading.Lock()
        ask = policy(api_base, args.profile)
        started = time.monotonic()
        with ThreadPoolExecutor(sessions) as pool:
            for f in [pool.submit(play, url, ask, budget, lock, out) for _ in range(sessions)]:
                f.result()
        wall = time.monotonic() - started
        sampler.stop.set()
        sampler.join()
        hwm = rss_mb(proc.pid, "VmHWM")
        children_now = sum(rss_mb(p) for p in descendants(proc.pid))
    manifest = json.loads((run / "manifest.json").read_text())
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    attempts = [
        a
        for line in (run / "trajectories.jsonl").read_text().splitlines()
        if line.strip()
        for a in json.loads(line)["attempts"]
    ]
    hung = sum(
        a["result"]["status"] == "timeout" or any(t["status"] == "timeout" for t in a["result"]["test_results"] or [])
        for a in attempts
    )
    steps = sorted(out["step_s"])
    episodes = len(out["reward"])
    return {
        "sessions": sessions,
        "episodes": episodes,
        "steps": len(steps),
        "wall_s": round(wall, 2),
        "episodes_per_s": round(episodes / wall, 2),
        "steps_per_s": round(len(steps) / wall, 2),
        "step_p50_ms": round(1000 * statistics.median(steps), 1),
        "step_p90_ms": round(1000 * steps[int(0.9 * (len(steps) - 1))], 1),
        "step_max_s": round(steps[-1], 2),
        "step_total_s": round(sum(steps), 2),
        "steps_over_1s": sum(x >= 1.0 for x in steps),
        "replies_timed_out": hung,
        "reset_wait_max_s": round(max(out["reset_s"]), 2),
        "reset_wait_total_s": round(sum(out["reset_s"]), 2),
        "policy_p50_ms": round(1000 * statistics.median(out["policy_s"]), 1),
        "policy_total_s": round(sum(out["policy_s"]), 2),
        "pass_rate": round(sum(out["passed"]) / max(1, episodes), 3),
        "epochs_closed": len(metrics),
        "startup_s": round(startup_s, 2),
        "server_rss_idle_mb": round(idle_mb, 1),
        "server_rss_peak_mb": round(sampler.peak, 1),
        "server_vm_hwm_mb": round(hwm, 1),
        "sandbox_rss_peak_mb": round(sampler.children_peak, 1),
        "sandbox_rss_end_mb": round(children_now, 1),
        "sandbox": manifest.get("sandbox"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", default="1,8,32", help="comma-separated session counts")
    ap.add_argument("--episodes", type=int, default=320, help="episodes played at each count (5 epochs)")
    ap.add_argument("--tasks-per-epoch", type=int, default=16)
    ap.add_argument("--samples-per-task", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=32, help="the server's episodes in flight")
    ap.add_argument("--profile", default="default", help="serve-fake profile the policy asks")
    ap.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "docker", "subprocess"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_serve_env.json")
    args = ap.parse_args()
    counts = [int(x) for x in args.sessions.split(",") if x.strip()]
    report: dict[str, Any] = {
        "bench": "serve_env",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "openenv_core": _version("openenv-core"),
        "config": {
            "tasks_per_epoch": args.tasks_per_epoch,
            "samples_per_task": args.samples_per_task,
            "concurrency": args.concurrency,
            "profile": args.profile,
            "episodes": args.episodes,
        },
        "levels": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-serve-env-") as tmp:
        work = Path(tmp)
        with fake_server(0.0, work, use_cli=True) as origin:
            warm = [{"role": "user", "content": "Write `def f(x)` returning x."}]
            policy(f"{origin}/v1", args.profile)(warm)  # the fake's first answer builds its bank's index
            for n in counts:
                report["levels"].append(one_level(args, f"{origin}/v1", n, work))
                print(f"  {n} session(s): done", file=sys.stderr, flush=True)
    levels = report["levels"]
    print(
        f"\nspade serve-env (fake/default generator, policy serve-fake {args.profile}; {args.tasks_per_epoch} tasks x "
        f"{args.samples_per_task} samples an epoch, concurrency {args.concurrency}; {report['cpus']} CPUs, "
        f"sandbox {levels[0]['sandbox'] if levels else '?'})"
    )
    print(
        f"{'sessions':>8}{'episodes':>9}{'wall s':>8}{'ep/s':>7}{'steps/s':>8}{'step p50':>9}{'p90 ms':>8}"
        f"{'policy p50':>11}{'reset max s':>12}{'epochs':>7}{'pass':>6}{'RSS idle':>9}{'peak':>7}{'HWM':>6}"
        f"{'sandbox':>8}"
    )
    for r in levels:
        print(
            f"{r['sessions']:>8}{r['episodes']:>9}{r['wall_s']:>8.1f}{r['episodes_per_s']:>7.2f}{r['steps_per_s']:>8.2f}"
            f"{r['step_p50_ms']:>9.0f}{r['step_p90_ms']:>8.0f}{r['policy_p50_ms']:>11.0f}"
            f"{r['reset_wait_max_s']:>12.2f}{r['epochs_closed']:>7}"
            f"{r['pass_rate']:>6.2f}{r['server_rss_idle_mb']:>7.0f}MB{r['server_rss_peak_mb']:>5.0f}MB"
            f"{r['server_vm_hwm_mb']:>4.0f}MB{r['sandbox_rss_peak_mb']:>6.0f}MB"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
