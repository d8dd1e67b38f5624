"""Where the time goes: ``spade evaluate`` on HumanEval, ``spade exec`` of a trivial program, and ``code_reward``.

Each measured command runs in a fresh interpreter (a driver, below) that wraps the functions the
command goes through with wall clocks, so the stages are the command's own code path, not a
re-enactment: interpreter start, imports, task-file reading, leak marking, the sandbox's start (in
its background thread) and the wait for it, the judging, result writing, closing, exit. The CPU of
an evaluation is split by process: the spade process (all its threads), and per sandbox role: W
(the warm worker: forks, sweeps), S (the supervisor: files, compile, pipes, report, wipe) and C
(the executions, reaped by W: fork faults, the harness, the code under test), read from ``/proc``
before the sandbox closes; ``--cprofile`` adds the spade process's top functions (cProfile).

``--trees`` compares checkouts side by side, each measured in turn within every round (best of
``--rounds`` per stage), so load falls on all alike. The code a tree runs comes from its own
``spade_llm`` (``PYTHONPATH``); the interpreter and packages are this one's. Bytecode: run it after
the trees' modules were compiled once (``python -m compileall -q spade_llm``), as an installed
package is, or the first round pays for compiling (``PYTHONDONTWRITEBYTECODE`` keeps it paying).

Prints a table per command and one JSON line (also written to ``--json``, default
``runs/bench_breakdown.json``).

    python benchmarks/bench_breakdown.py [--trees this,/tmp/base] [--rounds 3] [--sandbox bwrap] [--cprofile]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "HumanEval.jsonl.gz"

DRIVER = r'''
import json, os, resource, sys, time
T0 = float(os.environ["BREAKDOWN_T0"])
OUT = os.environ["BREAKDOWN_OUT"]
marks = []
sums = {"rows_s": 0.0, "runs": 0, "run_s": 0.0}
roles = {}
def mark(name):
    marks.append((name, time.time() - T0))
mark("interpreter")

def wrap(module, name, before=None, after=None):
    real = getattr(module, name)
    def wrapped(*a, **k):
        mark(before or name + " start")
        out = real(*a, **k)
        mark(after or name + " done")
        return out
    setattr(module, name, wrapped)

def sandbox_roles():
    """CPU seconds of this process's sandboxes by role, from /proc (see the module's doc)."""
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        f = stat[stat.rindex(")") + 2 :].split()
        procs[int(p)] = (int(f[1]), comm, [int(x) for x in f[11:15]], int(f[19]))
    tck = os.sysconf("SC_CLK_TCK")
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, *_rest) in procs.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    out = {"W": 0.0, "S": 0.0, "C": 0.0, "launch": 0.0}
    for pid in mine - {os.getpid()}:
        ppid, comm, (ut, st, cut, cst), start = procs[pid]
        parent = procs.get(ppid, (0, "", [0] * 4, 0))
        if parent[1] == "bwrap" and comm.startswith("python"):
            out["W"] += (ut + st) / tck
            out["C"] += (cut + cst) / tck
        elif procs.get(parent[0], (0, ""))[1] == "bwrap" and parent[1].startswith("python"):
            oldest = min((q for q, v in procs.items() if v[0] == ppid), key=lambda q: procs[q][3])
            out["S" if pid == oldest else "C"] += (ut + st) / tck
        else:
            out["launch"] += (ut + st) / tck
    return out

def watch_sandbox(box):
    real_run, real_close = box.run, box.close
    def run(*a, **k):
        t = time.perf_counter()
        try:
            return real_run(*a, **k)
        finally:
            sums["runs"] += 1
            sums["run_s"] += time.perf_counter() - t
    def close(*a, **k):
        if not roles:
            roles.update(sandbox_roles())
        mark("close start")
        out = real_close(*a, **k)
        mark("close done")
        return out
    box.run, box.close = run, close
    return box

import importlib.abc, importlib.machinery

class AfterImport(importlib.abc.MetaPathFinder):
    """Applies a patch to a module right after the command itself imports it, so the driver imports
    nothing ahead of the command (that would move its sandbox's start)."""
    def __init__(self, patches):
        self.patches = patches
    def find_spec(self, name, path, target=None):
        patch = self.patches.pop(name, None)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real_exec = spec.loader.exec_module
        def exec_module(module):
            real_exec(module)
            patch(module)
        spec.loader.exec_module = exec_module
        return spec

import spade_llm.sandbox.registry as registry
real_get = registry.get_sandbox
def get_sandbox(*a, **k):
    mark("sandbox start")
    box = watch_sandbox(real_get(*a, **k))
    mark("sandbox ready")
    return box
registry.get_sandbox = get_sandbox
mark("imports: cli")
mode = sys.argv[1]
if mode in ("evaluate", "exec"):
    import spade_llm.cli.app as app
    wrap(registry.SandboxStart, "result", "wait for sandbox start", "wait for sandbox done")
    if mode == "evaluate":
        def judging_patch(judging):
            real_eval = judging.evaluate_samples
            def evaluate_samples(*a, on_row=None, **k):
                def row(r):
                    t = time.perf_counter()
                    on_row(r)
                    sums["rows_s"] += time.perf_counter() - t
                mark("evaluate_samples start")
                out = real_eval(*a, on_row=row, **k)
                mark("evaluate_samples done")
                return out
            judging.evaluate_samples = evaluate_samples
        patches = {
            "spade_llm.tasksets.taskfile": lambda m: (wrap(m, "read_tasks"), wrap(m, "read_samples")),
            "spade_llm.kinds": lambda m: wrap(m, "mark_leaks"),
            "spade_llm.tasksets.expected": lambda m: wrap(m, "fill_expected"),
            "spade_llm.tasksets.judging": judging_patch,
        }
    else:
        patches = {"spade_llm.sandbox.runner": lambda m: wrap(m, "run_program")}
    already = [name for name in patches if name in sys.modules]
    assert not already, "imported before the command: %s" % already
    sys.meta_path.insert(0, AfterImport(patches))
    sys.argv = ["spade", *sys.argv[2:]]
    if os.environ.get("BREAKDOWN_CPROFILE"):
        import cProfile, pstats, io
        prof = cProfile.Profile()
        prof.enable()
    try:
        app.main()
    except SystemExit:
        pass
    mark("main returned")
    if os.environ.get("BREAKDOWN_CPROFILE"):
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(15)
        sums["cprofile"] = text.getvalue()
else:  # reward: one call cold (the default rewarder's start), one warm, then a warm batch
    import spade_llm.rewards.code as code
    from spade_llm.rewards.groundtruth import ground_truth
    from spade_llm.tasksets.importers import import_humaneval
    mark("imports done")
    tasks = import_humaneval(sys.argv[2])
    mark("batch made")
    fence = "Here is my solution.\n\n```python\n%s\n```\n"
    batch = []
    for i in range(int(sys.argv[3])):
        t = tasks[(i // 2) % len(tasks)]
        body = t.reference_code if i % 2 == 0 else t.meta["prompt"].rstrip() + "\n    return None\n"
        batch.append((fence % body.strip(), json.dumps(ground_truth(t, 0)), 1.0 if i % 2 == 0 else 0.0))
    rewarder = code.Rewarder(sys.argv[4])
    reward = code.CodeReward(rewarder)
    mark("first call start")
    assert reward(completions=[batch[0][0]], ground_truth=[batch[0][1]]) == [1.0]
    mark("first call done")
    watch_sandbox(rewarder._sandbox)
    mark("warm call start")
    assert reward(completions=[batch[1][0]], ground_truth=[batch[1][1]]) == [0.0]
    mark("warm call done")
    before = resource.getrusage(resource.RUSAGE_SELF)
    roles_before = sandbox_roles()
    mark("batch start")
    scores = reward(completions=[b[0] for b in batch], ground_truth=[b[1] for b in batch])
    mark("batch done")
    after = resource.getrusage(resource.RUSAGE_SELF)
    roles.update({k: v - roles_before[k] for k, v in sandbox_roles().items()})
    sums["batch_host_cpu_s"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    sums["batch_n"] = len(batch)
    sums["batch_correct"] = scores == [b[2] for b in batch]
    rewarder.close()
    mark("main returned")
usage = resource.getrusage(resource.RUSAGE_SELF)
sums["host_cpu_s"] = usage.ru_utime + usage.ru_stime
with open(OUT, "w") as f:
    json.dump({"marks": marks, "sums": sums, "roles": roles}, f)
'''


def measure(tree: Path, mode: str, args: list[str], cprofile: bool) -> dict[str, Any]:
    """One command through the driver from ``tree``'s package: its marks, sums and total wall."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": str(tree), "BREAKDOWN_OUT": out.name}
        if cprofile:
            env["BREAKDOWN_CPROFILE"] = "1"
        env["BREAKDOWN_T0"] = repr(time.time())
        started = time.perf_counter()
        # run from the tree: ``-c`` puts the working directory first on the path, before PYTHONPATH
        done = subprocess.run([sys.executable, "-c", DRIVER, mode, *args], env=env, capture_output=True, cwd=tree)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{tree}: {mode} failed:\n{done.stderr.decode()[-2000:]}")
        data: dict[str, Any] = json.loads(Path(out.name).read_text())
    data["wall_s"] = wall
    data["stdout"] = done.stdout.decode()
    return data


def between(marks: dict[str, float], a: str, b: str) -> float | None:
    return marks[b] - marks[a] if a in marks and b in marks else None


def evaluate_stages(run: dict[str, Any]) -> dict[str, float | None]:
    m = dict(run["marks"])
    judging = between(m, "evaluate_samples start", "evaluate_samples done")
    leaks = between(m, "mark_leaks start", "mark_leaks done")
    filling = between(m, "fill_expected start", "fill_expected done")
    judging_only = None if judging is None else judging - (leaks or 0) - (filling or 0) - run["sums"]["rows_s"]
    first_stage = m.get("read_tasks start")
    return {
        "interpreter start": m["interpreter"],
        "imports (to the task file)": None if first_stage is None else first_stage - m["interpreter"],
        "task and sample files read": between(m, "read_tasks start", "read_samples done"),
        "sandbox start (background)": between(m, "sandbox start", "sandbox ready"),
        "waiting for the sandbox": between(m, "wait for sandbox start", "wait for sandbox done"),
        "expected values filled": filling,
        "leak marking": leaks,
        "judging (164 samples)": judging_only,
        "result rows written": run["sums"]["rows_s"],
        "sandbox closed": between(m, "close start", "close done"),
        "exit": run["wall_s"] - m["main returned"],
        "whole command": run["wall_s"],
    }


def exec_stages(run: dict[str, Any]) -> dict[str, float | None]:
    m = dict(run["marks"])
    return {
        "interpreter start": m["interpreter"],
        "imports (to the sandbox)": m["sandbox start"] - m["interpreter"],
        "sandbox start": between(m, "sandbox start", "sandbox ready"),
        "the execution": between(m, "run_program start", "run_program done"),
        "sandbox closed": between(m, "close start", "close done"),
        "exit": run["wall_s"] - m["main returned"],
        "whole command": run["wall_s"],
    }


def reward_stages(run: dict[str, Any]) -> dict[str, float | None]:
    m = dict(run["marks"])
    n = run["sums"]["batch_n"]
    batch = between(m, "batch start", "batch done")
    return {
        "interpreter start": m["interpreter"],
        "imports (rewards.code)": between(m, "imports: cli", "imports done"),
        "first call (sandbox start + 1 reward)": between(m, "first call start", "first call done"),
        "warm call (1 reward)": between(m, "warm call start", "warm call done"),
        f"warm batch ({n} rewards)": batch,
        "warm batch: per reward": None if batch is None else batch / n,
    }


def cpu_rows(run: dict[str, Any], executions: int) -> dict[str, float]:
    roles = run["roles"]
    host = run["sums"].get("batch_host_cpu_s", run["sums"]["host_cpu_s"])
    rows = {"spade process": host, **{f"sandbox {k}": v for k, v in roles.items()}}
    return {k: v / executions for k, v in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default="this", help="comma-separated checkouts ('this': this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--n", type=int, default=256, help="rewards in the warm batch")
    parser.add_argument("--cprofile", action="store_true", help="print the spade process's top functions")
    parser.add_argument("--json", type=Path, default=ROOT / "runs" / "bench_breakdown.json")
    args = parser.parse_args()
    trees = {name: ROOT if name == "this" else Path(name).resolve() for name in args.trees.split(",")}
    with gzip.open(DATA, "rt") as lines:
        rows = [json.loads(line) for line in lines]
    result: dict[str, Any] = {"sandbox": args.sandbox, "rounds": args.rounds, "commands": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        samples = work / "canonical.jsonl"
        samples.write_text(
            "".join(json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n" for r in rows)
        )
        (work / "trivial.py").write_text("print(1)\n")
        for label, tree in trees.items():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "spade_llm.cli",
                    "import",
                    "humaneval",
                    str(DATA),
                    "-o",
                    str(work / f"{label}.jsonl"),
                ],
                env={**os.environ, "PYTHONPATH": str(tree)},
                cwd=tree,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        commands = {
            "evaluate": (
                evaluate_stages,
                lambda label: [
                    "evaluate",
                    str(work / f"{label}.jsonl"),
                    "--samples",
                    str(samples),
                    "--sandbox",
                    args.sandbox,
                ],
                len(rows),
            ),
            "exec": (exec_stages, lambda label: ["exec", "--sandbox", args.sandbox, str(work / "trivial.py")], 1),
            "reward": (reward_stages, lambda label: [str(DATA), str(args.n), args.sandbox], args.n),
        }
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _ in range(args.rounds):
            for command, (_stages, argv, _n) in commands.items():
                for label, tree in trees.items():
                    runs.setdefault((command, label), []).append(
                        measure(tree, command if command != "reward" else "reward", argv(label), False)
                    )
        for command, (stages, _argv, executions) in commands.items():
            table: dict[str, dict[str, Any]] = {}
            for label in trees:
                best = min(
                    runs[(command, label)],
                    key=lambda r: (
                        r["wall_s"]
                        if command != "reward"
                        else dict(r["marks"])["batch done"] - dict(r["marks"])["batch start"]
                    ),
                )
                per_stage = [stages(r) for r in runs[(command, label)]]
                table[label] = {
                    "stages_ms": {
                        k: None if v is None else round(1000 * min(s[k] for s in per_stage if s[k] is not None), 2)
                        for k, v in per_stage[0].items()
                    },
                    "cpu_ms_per_execution": {k: round(1000 * v, 3) for k, v in cpu_rows(best, executions).items()},
                }
                if command == "evaluate":
                    table[label]["passed"] = sum(
                        json.loads(line)["passed"] for line in best["stdout"].splitlines() if line.startswith("{")
                    )
                if command == "reward":
                    table[label]["correct"] = all(r["sums"]["batch_correct"] for r in runs[(command, label)])
            result["commands"][command] = table
            labels = list(trees)
            print(f"\n{command}: best of {args.rounds}, ms")
            print(f"{'stage':<40}" + "".join(f"{label[-14:]:>16}" for label in labels))
            for stage in table[labels[0]]["stages_ms"]:
                cells = [table[label]["stages_ms"].get(stage) for label in labels]
                print(f"{stage:<40}" + "".join(f"{'-' if c is None else f'{c:.1f}':>16}" for c in cells))
            print(f"{'CPU per execution (best run)':<40}")
            for row in table[labels[0]]["cpu_ms_per_execution"]:
                cells = [table[label]["cpu_ms_per_execution"][row] for label in labels]
                print(f"{'  ' + row:<40}" + "".join(f"{c:>16.3f}" for c in cells))
            for label in labels:
                extra = {k: v for k, v in table[label].items() if k in ("passed", "correct")}
                if extra:
                    print(f"  {label}: {extra}")
        if args.cprofile:
            for label, tree in trees.items():
                run = measure(tree, "evaluate", commands["evaluate"][1](label), True)
                print(f"\nevaluate, {label}: the spade process's top functions (cProfile, by own time)")
                print(run["sums"]["cprofile"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
