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
   workers' (its descendants', summed: pages they share are counted in each) at the peak;
4. reads the whole machine's busy CPU time over the episodes (``/proc/stat``): ``cpu_busy`` near 1.0
   means the cores, not the server, set the pace.

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

    /work/venv-env/bin/python benchmarks/bench_serve_env.py [--sessions 1,8,32,128] [--executors local,ray]
        [--episodes 320] [--tasks-per-epoch 16] [--samples-per-task 4] [--concurrency 32] [--profile default]
        [--sandbox auto]

``--attacks`` measures instead what clients that misbehave do to a server (issue 35), each on a fresh
``spade serve-env``, for this checkout and each ``--code DIR`` (another checkout's root, e.g. a
worktree of a685e31 with its packaged prompts and configs in place: run by ``PYTHONPATH=DIR``), side
by side: ``/mcp`` (``openenv/session/create`` past ``max_sessions``, a close from another connection,
then a ``/ws`` reset); ``--half-open`` half-sent requests (then the session in progress steps, a new
client connects and resets, the log's size); 60 sessions each sending a ``--big-mib`` message that
fails validation (the server's peak RSS, the size of the answers); clients that leave while they
wait in ``reset()`` (abandoned trajectories with no attempt in the records); a reply with a lone
surrogate (the answer, whether the session lives on); a WebSocket without the token (its status).

    .venv-train/bin/python benchmarks/bench_serve_env.py --attacks [--code /tmp/base-copy]
        [--half-open 20000] [--big-mib 16] [--leavers 3]
"""

from __future__ import annotations

import argparse
import contextlib
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


def cpu_ticks() -> tuple[int, int]:
    """The machine's (busy, total) CPU time so far, in clock ticks (``/proc/stat``: idle and iowait are not busy)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


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


def one_level(args: argparse.Namespace, api_base: str, sessions: int, work: Path, executor: str) -> dict[str, Any]:
    run = work / f"run-{executor}-{sessions}"
    log = work / f"serve-env-{executor}-{sessions}.log"
    cmd = [
        *spade_cmd(), "serve-env", "--model", "fake/default", "--port", "0", "--out", str(run),
        "--tasks-per-epoch", str(args.tasks_per_epoch), "--samples-per-task", str(args.samples_per_task),
        "--concurrency", str(args.concurrency), "--max-sessions", str(max(sessions, 1) + 4),
        "--sandbox", args.sandbox, "--seed", str(args.seed), "--executor", executor,
        *(["--config", str(args.config)] if args.config else []),
    ]  # fmt: skip
    with background(cmd, log) as proc:
        url, startup_s = wait_listening(log, proc)
        idle_mb = rss_mb(proc.pid)
        sampler = Sampler(proc.pid)
        sampler.start()
        out: dict[str, list[float]] = {"reset_s": [], "step_s": [], "policy_s": [], "reward": [], "passed": []}
        budget, lock = [args.episodes], threading.Lock()
        ask = policy(api_base, args.profile)
        started, (busy0, total0) = time.monotonic(), cpu_ticks()
        with ThreadPoolExecutor(sessions) as pool:
            for f in [pool.submit(play, url, ask, budget, lock, out) for _ in range(sessions)]:
                f.result()
        wall, (busy1, total1) = time.monotonic() - started, cpu_ticks()
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
        "executor": executor,
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
        # the whole machine's (server, sandboxes, clients, serve-fake, anything else): what the cores allow
        "cpu_busy": round((busy1 - busy0) / max(1, total1 - total0), 3),
        "cpu_s": round((busy1 - busy0) / os.sysconf("SC_CLK_TCK"), 1),
        "epochs_closed": len(metrics),
        "startup_s": round(startup_s, 2),
        "server_rss_idle_mb": round(idle_mb, 1),
        "server_rss_peak_mb": round(sampler.peak, 1),
        "server_vm_hwm_mb": round(hwm, 1),
        "sandbox_rss_peak_mb": round(sampler.children_peak, 1),
        "sandbox_rss_end_mb": round(children_now, 1),
        "sandbox": manifest.get("sandbox"),
    }


# -- attacks ---------------------------------------------------------------------------------------------

FLOODER = r"""
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
opened, error = [], ""
for _ in range(n):
    try:
        s = socket.create_connection((host, port), timeout=60)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends
        opened.append(s)
    except OSError as e:
        error = repr(e)
        break
print("opened", len(opened), error, flush=True)
sys.stdin.read()
"""
"""One flooding process: ``n`` half-sent requests, held until its stdin closes."""
WRONG = "```python\ndef f(*args):\n    return None\n```"
"""A reply that is judged (and fails): an episode ends after ``solver.max_turns`` of them."""


class Target:
    """A fresh ``spade serve-env`` of one checkout (``code``: its root, None for this one)."""

    def __init__(self, code: Path | None, work: Path, name: str, args: list[str], **kw: Any) -> None:
        env = {**os.environ, **kw.pop("env", {})}
        if code is not None:
            env["PYTHONPATH"] = str(code)
        self.log = work / f"{name}.log"
        run = work / f"{name}-run"
        cmd = [sys.executable, "-m", "spade_llm.cli", "serve-env", "--model", "fake/default", "--port", "0",
               "--out", str(run), "--sandbox", "subprocess", "--seed", "0", *args]  # fmt: skip
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=code or ROOT, env=env, **kw)
        self.run = run
        self.url, _ = wait_listening(self.log, self.proc)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return int(self.proc.wait())

    def log_bytes(self) -> int:
        return self.log.stat().st_size

    def trajectories(self) -> list[dict[str, Any]]:
        path = self.run / "trajectories.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(x) for x in lines if x.strip()]


def _ws(url: str, **kw: Any) -> Any:
    from websockets.sync.client import connect

    return connect(url.replace("http", "ws", 1) + "/ws", open_timeout=60, max_size=None, **kw)


def _ask(ws: Any, message: Any, timeout: float = 120) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return dict(json.loads(ws.recv(timeout)))


def _outcome(fn: Any) -> str:
    try:
        return str(fn())
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:120]}"


def attack_mcp(code: Path | None, work: Path, name: str, extra: list[str]) -> dict[str, Any]:
    target = Target(code, work, name, ["--max-sessions", "8", *extra])
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    try:
        with httpx.Client(timeout=30) as owner, httpx.Client(timeout=30) as other:
            answers = [owner.post(f"{target.url}/mcp", json=create) for _ in range(16)]
            made = [a.json()["result"]["session_id"] for a in answers if a.status_code == 200 and "result" in a.json()]
            foreign = "n/a"
            if made:
                close = {**create, "method": "openenv/session/close", "params": {"session_id": made[0]}}
                reply = other.post(f"{target.url}/mcp", json=close).json()
                foreign = "closed" if (reply.get("result") or {}).get("closed") else "refused"
        time.sleep(1)  # the owner has gone: how many WebSocket sessions are left for the others
        granted = 0
        with contextlib.ExitStack() as stack:
            for _ in range(8):
                try:
                    ws = stack.enter_context(_ws(target.url))
                    granted += _ask(ws, {"type": "state"}, timeout=30)["type"] == "state"
                except Exception:
                    pass
        return {
            "mcp_status": answers[0].status_code,
            "sessions_created_of_16": len(made),
            "close_from_another_connection": foreign,
            "ws_sessions_of_8_after_owner_left": granted,
        }
    finally:
        target.stop()


def attack_half_open(code: Path | None, work: Path, name: str, n: int, nofile: int | None) -> dict[str, Any]:
    import resource

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    target = Target(code, work, name, ["--tasks-per-epoch", "4", "--samples-per-task", "2"], preexec_fn=limit)
    host, port = target.url.removeprefix("http://").rsplit(":", 1)
    flooders: list[subprocess.Popen[str]] = []
    out: dict[str, Any] = {"half_open": n, "open_files": nofile or "default"}
    try:
        session = _ws(target.url)
        _ask(session, {"type": "reset", "data": {}})
        started = time.monotonic()
        for i in range(0, n, 10_000):
            cmd = [sys.executable, "-c", FLOODER, host, port, str(min(10_000, n - i))]
            flooders.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        said = [f.stdout.readline().split() if f.stdout else [] for f in flooders]
        out["opened"] = sum(int(words[1]) for words in said if len(words) > 1 and words[0] == "opened")
        out["flood_s"] = round(time.monotonic() - started, 1)
        time.sleep(2)
        out["step_in_progress"] = _outcome(lambda: _ask(session, {"type": "step", "data": {"answer": WRONG}})["type"])

        def new_client() -> str:
            with _ws(target.url) as ws:
                return str(_ask(ws, {"type": "reset", "data": {}})["type"])

        out["new_client_reset"] = _outcome(new_client)
        out["health"] = _outcome(lambda: httpx.get(f"{target.url}/health", timeout=30).status_code)
        out["server_alive"] = target.alive()
        with contextlib.suppress(Exception):
            session.close()
    finally:
        for f in flooders:
            if f.stdin:
                f.stdin.close()
            f.wait(60)
        target.stop()
        out["log_bytes"] = target.log_bytes()
    return out


def attack_big_messages(code: Path | None, work: Path, name: str, mib: float, sessions: int = 60) -> dict[str, Any]:
    target = Target(code, work, name, ["--max-sessions", str(sessions + 4)])
    bulky = "Z" * int(mib * (1 << 20))
    message = json.dumps({"type": "step", "data": {"answer": "x", "bogus": bulky}})  # fails validation
    answers: list[int] = []
    closed: list[str] = []
    lock = threading.Lock()

    def one(_i: int) -> None:
        try:
            with _ws(target.url) as ws:
                _ask(ws, {"type": "reset", "data": {}})
                reply = _ask(ws, message)
                with lock:
                    answers.append(len(json.dumps(reply)))
        except Exception as e:
            with lock:
                closed.append(type(e).__name__)

    try:
        idle = rss_mb(target.proc.pid)
        sampler = Sampler(target.proc.pid)
        sampler.start()
        with ThreadPoolExecutor(sessions) as pool:
            list(pool.map(one, range(sessions)))
        sampler.stop.set()
        sampler.join()
        return {
            "sessions": sessions,
            "message_mib": mib,
            "server_rss_idle_mb": round(idle, 1),
            "server_rss_peak_mb": round(max(sampler.peak, rss_mb(target.proc.pid, "VmHWM")), 1),
            "answers": len(answers),
            "largest_answer_bytes": max(answers, default=0),
            "connections_closed": len(closed),
        }
    finally:
        target.stop()


def attack_leavers(code: Path | None, work: Path, name: str, leavers: int) -> dict[str, Any]:
    args = ["--tasks-per-epoch", "2", "--samples-per-task", str(leavers), "--concurrency", "1", "--epochs", "1"]
    target = Target(code, work, name, args)
    try:
        with _ws(target.url) as holder:
            turn = _ask(holder, {"type": "reset", "data": {}})
            for _ in range(leavers):  # ask for the next episode, then leave before it comes
                with _ws(target.url) as ws:
                    ws.send(json.dumps({"type": "reset", "data": {}}))
                    time.sleep(0.3)
            time.sleep(1)
            while not turn["data"]["done"]:
                turn = _ask(holder, {"type": "step", "data": {"answer": WRONG}})
        with _ws(target.url) as stayer:  # the epoch's other episodes, to a client that stays
            while target.alive():
                try:
                    turn = _ask(stayer, {"type": "reset", "data": {}}, timeout=60)
                except Exception:
                    break
                if turn["type"] == "error":
                    break
                while not turn["data"]["done"]:
                    turn = _ask(stayer, {"type": "step", "data": {"answer": WRONG}})
        target.proc.wait(60)
    finally:
        target.stop()
    records = target.trajectories()
    phantom = [t for t in records if "abandoned" in t["flags"] and not t["attempts"]]
    return {"leavers": leavers, "episodes_recorded": len(records), "phantom_failures": len(phantom)}


def attack_surrogate(code: Path | None, work: Path, name: str) -> dict[str, Any]:
    target = Target(code, work, name, [])
    reply = '{"type": "step", "data": {"answer": "```python\\ndef f(x):\\n    return \\"\\ud800\\"\\n```"}}'
    try:
        with _ws(target.url) as ws:
            _ask(ws, {"type": "reset", "data": {}})
            answer = _ask(ws, reply)
            kind = answer["type"] if answer["type"] != "error" else f"error {answer['data']['code']}"
            error = (answer["data"].get("observation") or {}).get("error") if answer["type"] == "observation" else None
            after = _outcome(lambda: _ask(ws, {"type": "state"}, timeout=10)["type"])
        return {"answer": kind, "observation_error": (error or "")[:90], "session_after": after}
    finally:
        target.stop()


def attack_no_token(code: Path | None, work: Path, name: str) -> dict[str, Any]:
    target = Target(code, work, name, [], env={"SPADE_ENV_TOKEN": "tok-bench-0123456789"})
    try:
        from websockets.exceptions import InvalidStatus

        try:
            with _ws(target.url):
                status = 101
        except InvalidStatus as e:
            status = e.response.status_code
        return {"http_status": httpx.get(f"{target.url}/schema").status_code, "ws_status": status}
    finally:
        target.stop()


def attacks(args: argparse.Namespace) -> None:
    codes: list[tuple[str, Path | None]] = [(str(p), p) for p in args.code] + [("this checkout", None)]
    report: dict[str, Any] = {"bench": "serve_env_attacks", "cpus": os.cpu_count(), "results": {}}
    with tempfile.TemporaryDirectory(prefix="bench-serve-env-attacks-") as tmp:
        work = Path(tmp)
        for label, code in codes:
            tag = "base" if code is not None else "now"
            got: dict[str, Any] = {}
            got["mcp"] = attack_mcp(code, work, f"{tag}-mcp", [])
            if code is None:
                got["mcp_on"] = attack_mcp(code, work, f"{tag}-mcp-on", ["--mcp"])
            got["half_open"] = attack_half_open(code, work, f"{tag}-flood", args.half_open, None)
            got["half_open_1024"] = attack_half_open(code, work, f"{tag}-flood-1024", 1_100, 1024)
            got["big_messages"] = attack_big_messages(code, work, f"{tag}-big", args.big_mib)
            got["big_messages_1mib"] = attack_big_messages(code, work, f"{tag}-big1", 0.95)
            got["leavers"] = attack_leavers(code, work, f"{tag}-leavers", args.leavers)
            got["surrogate"] = attack_surrogate(code, work, f"{tag}-surrogate")
            got["no_token"] = attack_no_token(code, work, f"{tag}-token")
            report["results"][label] = got
            print(f"  {label}: done", file=sys.stderr, flush=True)
    for label, got in report["results"].items():
        print(f"\n{label}")
        for attack, figures in got.items():
            print(f"  {attack:<15} " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", default="1,8,32,128", help="comma-separated session counts")
    ap.add_argument("--executors", default="local", help="comma-separated: local, ray (a local Ray cluster)")
    ap.add_argument("--config", type=Path, help="serve-env's --config (env.overlap: false, say)")
    ap.add_argument("--episodes", type=int, default=320, help="episodes played at each count (5 epochs)")
    ap.add_argument("--tasks-per-epoch", type=int, default=16)
    ap.add_argument("--samples-per-task", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=32, help="the server's episodes in flight")
    ap.add_argument("--profile", default="default", help="serve-fake profile the policy asks")
    ap.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "docker", "subprocess"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_serve_env.json")
    ap.add_argument("--attacks", action="store_true", help="the attack figures instead of throughput")
    ap.add_argument("--code", type=Path, action="append", default=[], help="another checkout's root, beside this one")
    ap.add_argument("--half-open", type=int, default=20_000, help="half-sent requests of the flood")
    ap.add_argument("--big-mib", type=float, default=15.9, help="size of each of 60 sessions' message")
    ap.add_argument("--leavers", type=int, default=3, help="clients that leave while they wait in reset()")
    args = ap.parse_args()
    if args.attacks:
        attacks(args)
        return
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
            for executor in [x.strip() for x in args.executors.split(",") if x.strip()]:
                for n in counts:
                    report["levels"].append(one_level(args, f"{origin}/v1", n, work, executor))
                    print(f"  {executor}, {n} session(s): done", file=sys.stderr, flush=True)
    levels = report["levels"]
    print(
        f"\nspade serve-env (fake/default generator, policy serve-fake {args.profile}; {args.tasks_per_epoch} tasks x "
        f"{args.samples_per_task} samples an epoch, concurrency {args.concurrency}; {report['cpus']} CPUs, "
        f"sandbox {levels[0]['sandbox'] if levels else '?'})"
    )
    print(
        f"{'executor':>9}{'sessions':>8}{'episodes':>9}{'wall s':>8}{'ep/s':>7}{'steps/s':>8}{'step p50':>9}"
        f"{'p90 ms':>8}"
        f"{'policy p50':>11}{'reset max s':>12}{'epochs':>7}{'pass':>6}{'RSS idle':>9}{'peak':>7}{'HWM':>6}"
        f"{'sandbox':>8}{'CPU busy':>9}{'CPU s':>7}"
    )
    for r in levels:
        print(
            f"{r['executor']:>9}{r['sessions']:>8}{r['episodes']:>9}{r['wall_s']:>8.1f}{r['episodes_per_s']:>7.2f}{r['steps_per_s']:>8.2f}"
            f"{r['step_p50_ms']:>9.0f}{r['step_p90_ms']:>8.0f}{r['policy_p50_ms']:>11.0f}"
            f"{r['reset_wait_max_s']:>12.2f}{r['epochs_closed']:>7}"
            f"{r['pass_rate']:>6.2f}{r['server_rss_idle_mb']:>7.0f}MB{r['server_rss_peak_mb']:>5.0f}MB"
            f"{r['server_vm_hwm_mb']:>4.0f}MB{r['sandbox_rss_peak_mb']:>6.0f}MB"
            f"{100 * r['cpu_busy']:>8.0f}%{r['cpu_s']:>7.0f}"
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
