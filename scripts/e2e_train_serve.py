"""Helpers of scripts/e2e_train_loop.sh and scripts/e2e_train_step.py (run with the train venv's python).

  base --out DIR (--gguf FILE | --model-dir DIR)   the base checkpoint, once (cached in DIR)
  start --state S --role R --checkpoint DIR --serves-epoch N [--device D]
                                                   `transformers serve` on a free 127.0.0.1 port, detached,
                                                   ready (/health) when it returns; prints its record
  stop --state S [--role R]                        stop the servers still running (all, or of one role)
  report --state S --run RUN [--json FILE]         the per-epoch table, its JSON, and the checks (exit 1)

Servers are recorded in STATE/servers.jsonl (one line per start, one per stop), training steps in
STATE/steps.jsonl: that is what the report reads, with the run's own records. Each server serves one
checkpoint under its folder's name (it runs in the folder's parent, so `transformers serve NAME` loads
the local folder and answers requests naming NAME only), and serves one epoch: the count of POSTs to
/v1/chat/completions in its log (uvicorn's access log) is that epoch's count for its role.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

CHAT_POST = re.compile(r'"POST /v1/chat/completions HTTP/[0-9.]+" (\d{3})')
READY_TIMEOUT_S = float(os.environ.get("E2E_SERVER_READY_S", "900"))
STOP_GRACE_S = 10.0


def log(message: str) -> None:
    print(f"e2e: {message}", file=sys.stderr, flush=True)


def rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")


# -- weights ------------------------------------------------------------------------------------


def weights_sha256(model: Any) -> str:
    """sha256 over the state dict's tensors (sorted by name; name, dtype, shape and raw bytes)."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def fix_eos(model: Any, tokenizer: Any) -> None:
    """ChatML models (SmolLM2) end a turn with <|im_end|>: some GGUF tokenizers name <|im_start|> as eos,
    and a server would then generate past the answer's end. Reset eos (tokenizer, config, generation)."""
    if "<|im_end|>" not in tokenizer.get_vocab():
        return
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if tokenizer.eos_token != "<|im_end|>":
        log(f"tokenizer eos was {tokenizer.eos_token!r}: reset to '<|im_end|>'")
        tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.eos_token_id = end
    if model.generation_config is not None:
        model.generation_config.eos_token_id = end
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id


def cmd_base(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if (out / "config.json").exists() and (out / "model.safetensors").exists() and (out / "checksum").exists():
        log(f"base checkpoint cached: {out} (sha256 {(out / 'checksum').read_text().strip()[:16]})")
        return 0
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    if args.gguf:
        gguf = Path(args.gguf)
        log(f"loading {gguf.name} with transformers (dequantized to float32)")
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        # a model loaded from GGUF refuses save_pretrained ("quantized with gguf and is not serializable"):
        # copy its weights into a plain model of the same architecture, built from its config
        config = copy.deepcopy(loaded.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        import transformers

        architecture = getattr(transformers, (config.architectures or ["LlamaForCausalLM"])[0])
        model = architecture(config)
        result = model.load_state_dict(loaded.state_dict(), strict=False)
        if result.missing_keys or result.unexpected_keys:
            missing = [k for k in result.missing_keys if "lm_head" not in k]  # tied to the embeddings
            if missing or result.unexpected_keys:
                raise SystemExit(f"weights do not fit {architecture.__name__}: {result}")
        model.tie_weights()
        model.generation_config = copy.deepcopy(loaded.generation_config)
        del loaded
    else:
        log(f"loading {args.model_dir}")
        tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
        model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    fix_eos(model, tokenizer)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    checksum = weights_sha256(model)
    (tmp / "checksum").write_text(checksum + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"base checkpoint {out} ({time.monotonic() - started:.0f}s, sha256 {checksum[:16]})")
    return 0


# -- servers ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child not reaped yet) is no server
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _ours(record: dict[str, Any]) -> bool:
    """The recorded pid still runs the server we started (not a pid reused by something else)."""
    try:
        cmdline = Path(f"/proc/{record['pid']}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"serve" in cmdline and record["name"].encode() in cmdline


def servers(state: Path) -> list[dict[str, Any]]:
    """Every server started, in order, with ``stopped`` set for those stopped since."""
    started: dict[int, dict[str, Any]] = {}
    for r in rows(state / "servers.jsonl"):
        if r.get("event") == "start":
            started[r["pid"]] = {**r, "stopped": False}
        elif r.get("event") == "stop" and r.get("pid") in started:
            started[r["pid"]]["stopped"] = True
    return list(started.values())


def transformers_cli() -> list[str]:
    exe = Path(sys.executable).with_name("transformers")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "transformers.cli.transformers"]


def start_server(state: Path, role: str, checkpoint: Path, serves_epoch: int, device: str) -> dict[str, Any]:
    """`transformers serve` on the checkpoint, in a session of its own (it outlives the training step
    that starts it), output to a log file; returns once /health answers (the model is loaded first)."""
    checkpoint = checkpoint.resolve()
    name = checkpoint.name
    port = free_port()
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{name}.log"
    argv = [
        *transformers_cli(), "serve", name,
        "--host", "127.0.0.1", "--port", str(port), "--device", device, "--log-level", "info",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=checkpoint.parent,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    record = {
        "event": "start", "role": role, "name": name, "model": f"openai/{name}", "port": port,
        "api_base": f"http://127.0.0.1:{port}/v1", "pid": proc.pid, "log": str(log_path),
        "checkpoint": str(checkpoint), "serves_epoch": serves_epoch, "device": device,
        "started_at": time.time(),
    }  # fmt: skip
    append(state / "servers.jsonl", record)  # recorded at once: cleanup finds it even if it never gets ready
    log(f"{role}: transformers serve {name} on 127.0.0.1:{port} (pid {proc.pid}, log {log_path})")
    started = time.monotonic()
    while True:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace").splitlines()[-5:]
            raise RuntimeError(f"server {name} exited with {proc.returncode}: {' | '.join(tail)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() - started > READY_TIMEOUT_S:
            raise RuntimeError(f"server {name} not ready after {READY_TIMEOUT_S:.0f}s (log {log_path})")
        time.sleep(1.0)
    record["ready_s"] = round(time.monotonic() - started, 1)
    append(state / "servers.jsonl", {"event": "ready", "pid": proc.pid, "ready_s": record["ready_s"]})
    log(f"{role}: {name} ready in {record['ready_s']}s")
    return record


def stop_servers(state: Path, role: str | None = None) -> int:
    """SIGTERM to the process group of each running server (of ``role``, or all), SIGKILL after a grace."""
    stopping = [s for s in servers(state) if not s["stopped"] and (role is None or s["role"] == role)]
    for s in stopping:
        if _alive(s["pid"]) and _ours(s):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s["pid"], signal.SIGTERM)  # its own session: the group is its pid
    deadline = time.monotonic() + STOP_GRACE_S
    for s in stopping:
        while _alive(s["pid"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(s["pid"]) and _ours(s):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s["pid"], signal.SIGKILL)
        append(state / "servers.jsonl", {"event": "stop", "pid": s["pid"], "name": s["name"], "at": time.time()})
        log(f"{s['role']}: stopped {s['name']} (pid {s['pid']}, port {s['port']})")
    return len(stopping)


def request_counts(log_path: str) -> dict[str, int]:
    counts = {"ok": 0, "failed": 0}
    try:
        text = Path(log_path).read_text(errors="replace")
    except OSError:
        return counts
    for status in CHAT_POST.findall(text):
        counts["ok" if status == "200" else "failed"] += 1
    return counts


def cmd_start(args: argparse.Namespace) -> int:
    record = start_server(Path(args.state), args.role, Path(args.checkpoint), args.serves_epoch, args.device)
    print(json.dumps(record))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    stop_servers(Path(args.state), args.role)
    return 0


# -- report -------------------------------------------------------------------------------------


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def build_report(state: Path, run: Path, run_exit: int | None) -> tuple[list[dict[str, Any]], list[str]]:
    metrics = {m["epoch"]: m for m in rows(run / "metrics.jsonl")}
    summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").exists() else {}
    manifest = json.loads((run / "manifest.json").read_text()) if (run / "manifest.json").exists() else {}
    trainer_steps = {s["epoch"]: s for s in manifest.get("trainer_steps", []) if isinstance(s, dict)}
    proposals, trajectories = rows(run / "proposals.jsonl"), rows(run / "trajectories.jsonl")
    all_servers = servers(state)
    steps = {s["epoch"]: s for s in rows(state / "steps.jsonl")}
    epochs = sorted(set(metrics) | {p["epoch"] for p in proposals})
    problems: list[str] = []
    if run_exit not in (None, 0):
        problems.append(f"spade run exited {run_exit}")
    if summary.get("complete") is not True:
        problems.append(f"the run did not complete (summary complete={summary.get('complete')!r}, "
                        f"stopped_because={summary.get('stopped_because')!r})")  # fmt: skip

    table: list[dict[str, Any]] = []
    for epoch in epochs:
        row: dict[str, Any] = {"epoch": epoch}
        for role in ("generator", "solver"):
            serving = [s for s in all_servers if s["role"] == role and s["serves_epoch"] == epoch]
            server = serving[-1] if serving else None
            counts = request_counts(server["log"]) if server else {"ok": 0, "failed": 0}
            if role == "generator":
                used = sorted({p.get("generator_model") or "?" for p in proposals if p["epoch"] == epoch})
            else:
                used = sorted({t.get("solver_model") or "?" for t in trajectories if t.get("epoch") == epoch})
            row[role] = {
                "model": server["model"] if server else None,
                "port": server["port"] if server else None,
                "models_in_records": used,
                "requests": counts["ok"],
                "failed_requests": counts["failed"],
                "checkpoint": server["checkpoint"] if server else None,
            }
        m = metrics.get(epoch, {})
        row["tasks_proposed"] = m.get("tasks_proposed")
        row["tasks_accepted"] = m.get("tasks_accepted")
        row["episodes"] = m.get("episodes")
        row["pass_rate"] = m.get("pass_rate")
        row["first_try_pass_rate"] = m.get("first_try_pass_rate")
        row["epoch_wall_s"] = m.get("wall_s")
        step = steps.get(epoch)
        row["step"] = step
        row["step_wall_s"] = trainer_steps.get(epoch, {}).get("seconds")
        row["switch"] = trainer_steps.get(epoch, {}).get("switch")
        table.append(row)

        if step is None:
            problems.append(f"epoch {epoch}: no training step recorded")
        else:
            for role in ("solver", "generator"):
                part = step.get(role) or {}
                if not part.get("before") or part.get("before") == part.get("after"):
                    problems.append(f"epoch {epoch}: the {role} step did not change its weights checksum "
                                    f"({_short(part.get('before'))} -> {_short(part.get('after'))})")  # fmt: skip
        if epoch > 0:  # an epoch after a switch: both roles must have reached the new servers
            for role in ("generator", "solver"):
                r = row[role]
                previous = table[-2][role]["model"] if len(table) > 1 else None
                if r["model"] is None or r["model"] == previous:
                    problems.append(f"epoch {epoch}: no new {role} server serves it")
                elif r["requests"] == 0:
                    problems.append(f"epoch {epoch}: 0 requests reached the new {role} server {r['model']} "
                                    f"(port {r['port']})")  # fmt: skip
                if r["model"] and r["models_in_records"] not in ([], [r["model"]]):
                    problems.append(f"epoch {epoch}: the records name {role} {r['models_in_records']}, "
                                    f"the new server is {r['model']}")  # fmt: skip
    if not epochs:
        problems.append("no epoch recorded")
    return table, problems


def print_table(table: list[dict[str, Any]]) -> None:
    cols = [
        ("epoch", 5), ("generator (port)", 22), ("gen req", 7), ("solver (port)", 22), ("sol req", 7),
        ("prop/acc", 8), ("episodes", 8), ("pass", 5), ("epoch s", 7), ("step s", 6),
        ("solver sha before->after", 26), ("generator sha before->after", 27),
    ]  # fmt: skip
    print("  ".join(f"{name:<{width}}" for name, width in cols))
    for r in table:
        g, s, step = r["generator"], r["solver"], r["step"] or {}

        def sha(role: str, step: dict[str, Any] = step) -> str:
            part = step.get(role) or {}
            return f"{_short(part.get('before'))}->{_short(part.get('after'))}" if part else "-"

        pass_rate = "-" if r["pass_rate"] is None else f"{r['pass_rate']:.2f}"
        values = [
            r["epoch"], f"{g['model']} ({g['port']})", g["requests"], f"{s['model']} ({s['port']})", s["requests"],
            f"{r['tasks_proposed']}/{r['tasks_accepted']}", r["episodes"], pass_rate,
            "-" if r["epoch_wall_s"] is None else f"{r['epoch_wall_s']:.0f}",
            "-" if r["step_wall_s"] is None else f"{r['step_wall_s']:.0f}", sha("solver"), sha("generator"),
        ]  # fmt: skip
        print("  ".join(f"{v!s:<{width}}" for v, (_, width) in zip(values, cols, strict=True)))


def cmd_report(args: argparse.Namespace) -> int:
    table, problems = build_report(Path(args.state), Path(args.run), args.run_exit)
    print_table(table)
    for r in table:
        step = r["step"] or {}
        for role in ("solver", "generator"):
            part = step.get(role)
            if part:
                print(f"epoch {r['epoch']} step, {role}: {part.get('rows')} rows ({part.get('data')}), "
                      f"{part.get('steps')} steps in {part.get('train_s')}s, loss {part.get('loss')}, "
                      f"-> {part.get('checkpoint')}")  # fmt: skip
        if step.get("generator_export"):
            print(f"epoch {r['epoch']} step, generator export: {step['generator_export']}")
    result = {"epochs": table, "problems": problems, "ok": not problems}
    text = json.dumps(result)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if problems:
        for p in problems:
            print(f"FAIL: {p}", file=sys.stderr)
        return 1
    print("e2e OK")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base")
    b.add_argument("--out", required=True)
    src = b.add_mutually_exclusive_group(required=True)
    src.add_argument("--gguf")
    src.add_argument("--model-dir")
    s = sub.add_parser("start")
    s.add_argument("--state", required=True)
    s.add_argument("--role", required=True, choices=["solver", "generator"])
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--serves-epoch", type=int, required=True)
    s.add_argument("--device", default="cpu")
    st = sub.add_parser("stop")
    st.add_argument("--state", required=True)
    st.add_argument("--role", choices=["solver", "generator"])
    r = sub.add_parser("report")
    r.add_argument("--state", required=True)
    r.add_argument("--run", required=True)
    r.add_argument("--run-exit", type=int)
    r.add_argument("--json")
    args = p.parse_args(argv)
    return {"base": cmd_base, "start": cmd_start, "stop": cmd_stop, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
