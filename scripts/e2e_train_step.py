"""The training step of scripts/e2e_train_loop.sh: `trainer.command` of its run, between epochs.

    e2e_train_step.py --state STATE [--device cpu] [--teacher-sft FILE] EXPORTS

For each role it fine-tunes the checkpoint the role's server serves now (TRL SFTTrainer, a few steps,
completion-only loss) into a new folder, prints the weights' sha256 before and after, stops that
role's old `transformers serve` and starts one on the new checkpoint (detached: its own session, its
output to a log file, so it outlives this step), and writes the switch naming both new endpoints to the
file spade names in $SPADE_SWITCH_FILE (the only place spade reads a switch from: what a step prints is
never one, since a trainer echoes model completions):

    {"solver_model": "openai/sol-v1", "api_base": "http://127.0.0.1:P/v1",
     "generator_model": "openai/gen-v1", "generator_api_base": "http://127.0.0.1:Q/v1"}

Data:
  solver     EXPORTS/sft.jsonl (the run's passing trajectories: prompt = the messages before the last
             answer, completion = that answer). A 135M model passes next to nothing, so when the run
             has fewer than E2E_MIN_ROWS rows, rows of --teacher-sft (the offline fake model's passing
             answers, `spade export --final-only` of a `fake/default` run) fill in: a cold start.
  generator  EXPORTS/generator-sft.jsonl if the trainer exported it, else `spade export RUN --role
             generator --format sft` (the run's "learnable" answers: every task accepted, one at least
             solved sometimes but not always), else (a spade without --role) rows built from
             RUN/proposals.jsonl: the first ask's `prompt` and the answer's `text` of each answer whose
             candidates were all accepted (the report says FALLBACK then). Without grammar-constrained
             decoding (`transformers serve` ignores response_format) the base model writes no parseable
             task at all, so one short, valid task of TEACHER_TASKS that the run has not accepted yet is
             added, answering up to 4 of the run's prompts (this epoch's first): the cold start that
             makes the next epoch propose a task the solver then gets to solve (the run's duplicate gate
             rejects a task proposed twice, hence a new one each step).

Environment (set by spade): SPADE_EXPORTS, SPADE_RUN_DIR, SPADE_EPOCH, SPADE_SOLVER_MODEL,
SPADE_GENERATOR_MODEL, SPADE_SWITCH_FILE. Knobs: E2E_SOLVER_STEPS (8), E2E_GENERATOR_STEPS (16), E2E_SOLVER_LR (2e-4),
E2E_GENERATOR_LR (5e-4), E2E_SOLVER_MAX_LENGTH (512), E2E_GENERATOR_MAX_LENGTH (768), E2E_MIN_ROWS (4).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_train_serve as serve

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = serve.log


def _task(entry_point: str, description: str, reference: str, inputs: list[str], tag: str) -> str:
    item = {
        "description": description,
        "entry_point": entry_point,
        "reference_code": reference,
        "tests": [{"input": i} for i in inputs],
        "difficulty": 0.2,
        "tags": [tag],
    }
    return json.dumps({"tasks": [item]})


TEACHER_TASKS = [
    # short answers (~150 tokens: a CPU writes them in seconds), each valid under spade's gates
    # (`spade verify`: the reference runs, the tests kill every mutant)
    ("count_vowels", _task(
        "count_vowels",
        "Write `count_vowels(s)` that returns how many characters of the lowercase string `s` are vowels "
        "(a, e, i, o, u). E.g. `count_vowels('banana')` returns `3`.",
        "def count_vowels(s):\n    return sum(ch in 'aeiou' for ch in s)\n",
        ["('banana',)", "('sky',)", "('',)", "('aeiou',)", "('education',)", "('queue',)"], "strings")),
    ("sum_of_squares", _task(
        "sum_of_squares",
        "Write `sum_of_squares(nums)` that returns the sum of the squares of the integers in `nums`. "
        "E.g. `sum_of_squares([1, 2, 3])` returns `14`.",
        "def sum_of_squares(nums):\n    return sum(x * x for x in nums)\n",
        ["([1, 2, 3],)", "([],)", "([-4],)", "([5, 0, 2],)", "([10, -1, 1, 3],)"], "arithmetic")),
    ("count_ones", _task(
        "count_ones",
        "Write `count_ones(n)` that returns the number of 1 bits in the binary form of the non-negative "
        "integer `n`. E.g. `count_ones(7)` returns `3`.",
        "def count_ones(n):\n    return bin(n).count('1')\n",
        ["(0,)", "(7,)", "(8,)", "(255,)", "(1023,)", "(37,)"], "bit manipulation")),
    ("reverse_words", _task(
        "reverse_words",
        "Write `reverse_words(s)` that returns the words of `s` in reverse order, joined by single spaces. "
        "E.g. `reverse_words('a b c')` returns `'c b a'`.",
        "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
        ["('a b c',)", "('hello world',)", "('',)", "('one',)", "('x  y z',)"], "parsing")),
    ("transpose", _task(
        "transpose",
        "Write `transpose(grid)` that returns the transpose of the rectangular list of lists `grid`. "
        "E.g. `transpose([[1, 2], [3, 4]])` returns `[[1, 3], [2, 4]]`.",
        "def transpose(grid):\n    return [list(row) for row in zip(*grid)]\n",
        ["([[1, 2], [3, 4]],)", "([[1, 2, 3]],)", "([],)", "([[5], [6], [7]],)", "([[1, 0], [0, 1], [2, 2]],)"],
        "matrices")),
    ("running_max", _task(
        "running_max",
        "Write `running_max(nums)` that returns a list whose i-th item is the largest of `nums[0..i]`. "
        "E.g. `running_max([1, 3, 2])` returns `[1, 3, 3]`.",
        "def running_max(nums):\n    out = []\n    for x in nums:\n        out.append(x if not out or x > out[-1] "
        "else out[-1])\n    return out\n",
        ["([1, 3, 2],)", "([],)", "([5, 4, 3],)", "([-2, -1, -3, 0],)", "([2, 2, 7, 1, 9],)"],
        "sorting and searching")),
]  # fmt: skip


def knob(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


# -- data ---------------------------------------------------------------------------------------


def prompt_completion(row: dict[str, Any]) -> dict[str, Any] | None:
    """A TRL prompt-completion row from an export row (`messages`, or `prompt` + `completion`): the
    messages before the last assistant answer, and that answer (the loss is on it alone)."""
    if isinstance(row.get("prompt"), list) and isinstance(row.get("completion"), list):
        return {"prompt": row["prompt"], "completion": row["completion"]}
    messages = row.get("messages")
    if not isinstance(messages, list):
        return None
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if not last:
        return None
    clean = [{"role": m["role"], "content": m["content"]} for m in messages]
    return {"prompt": clean[:last], "completion": [clean[last]]}


def generator_rows(exports: Path, run_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The run's generator SFT rows and where they came from."""
    target = exports / "generator-sft.jsonl"
    if target.exists():
        return [r for r in map(prompt_completion, serve.rows(target)) if r], f"{target} (exported by spade's trainer)"
    spade = os.environ.get("SPADE") or str(Path(sys.executable).with_name("spade"))
    argv = [spade, "export", str(run_dir), "--role", "generator", "--format", "sft", "-o", str(target)]
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode == 0 and target.exists():
        rows = [r for r in map(prompt_completion, serve.rows(target)) if r]
        return rows, f"spade export --role generator -> {target}"
    said = (done.stderr.strip().splitlines() or [""])[-1]
    if "--role" in said or "unrecognized" in said:
        why = f"FALLBACK: this spade has no `export --role` ({said})"
    else:
        why = f"FALLBACK: `spade export --role generator` exited {done.returncode} ({said})"
    accepted = {t["task_id"] for t in serve.rows(run_dir / "tasks.jsonl")}
    out = []
    for p in serve.rows(run_dir / "proposals.jsonl"):
        cands = p.get("candidates") or []
        ok = cands and all(c.get("task") and c["task"].get("task_id") in accepted for c in cands)
        if ok and p.get("prompt") and p.get("text"):
            out.append({"prompt": p["prompt"], "completion": [{"role": "assistant", "content": p["text"]}]})
    with target.open("w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    return out, f"{why}: {len(out)} rows from proposals.jsonl (answers whose candidates were all accepted) -> {target}"


def teacher_generator_rows(run_dir: Path, epoch: int, max_prompts: int = 4) -> tuple[list[dict[str, Any]], str]:
    """One teacher task the run has not accepted yet, answering the prompts the run's proposals were
    asked with (this epoch's first, then earlier ones: a few prompts, so the answer is learnt for the
    next epoch's prompt too, which differs in its topic and difficulty)."""
    accepted = {t.get("entry_point") for t in serve.rows(run_dir / "tasks.jsonl")}
    fresh = [(name, text) for name, text in TEACHER_TASKS if name not in accepted]
    if not fresh:
        return [], "teacher: every teacher task accepted already"
    name, text = fresh[0]
    proposals = serve.rows(run_dir / "proposals.jsonl")
    prompts: list[list[dict[str, str]]] = []
    for p in sorted(proposals, key=lambda p: (p.get("epoch") != epoch, -int(p.get("epoch") or 0))):
        if p.get("prompt") and p["prompt"] not in prompts:
            prompts.append(p["prompt"])
    rows = [{"prompt": pr, "completion": [{"role": "assistant", "content": text}]} for pr in prompts[:max_prompts]]
    return rows, f"teacher task {name} x {len(rows)} prompts"


def fit(rows: list[dict[str, Any]], tokenizer: Any, max_length: int) -> list[dict[str, Any]]:
    """Rows whose whole conversation fits max_length tokens (truncating would cut the answer off),
    deduplicated, shortest first."""
    seen, out = set(), []
    for r in rows:
        key = json.dumps(r, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        ids = tokenizer.apply_chat_template(r["prompt"] + r["completion"], tokenize=True)
        if not isinstance(ids, list):  # transformers 5 answers a BatchEncoding
            ids = ids["input_ids"]
        n = len(ids)
        if n <= max_length:
            out.append((n, r))
    return [r for _, r in sorted(out, key=lambda x: x[0])]


# -- training -----------------------------------------------------------------------------------


def train(role: str, src: Path, dst: Path, rows: list[dict[str, Any]], steps: int, lr: float,
          max_length: int, device: str, seed: int) -> dict[str, Any]:  # fmt: skip
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    started = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    before = serve.weights_sha256(model)
    log(f"{role}: {src.name} sha256 before {before}")
    data = fit(rows, tokenizer, max_length)
    if not data:
        raise SystemExit(f"{role}: no training row fits {max_length} tokens ({len(rows)} rows)")
    shutil.rmtree(dst, ignore_errors=True)
    config = SFTConfig(
        output_dir=str(dst.with_name(dst.name + ".trainer")),
        max_steps=steps,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=1,
        learning_rate=lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=device == "cpu",
        max_length=max_length,
        gradient_checkpointing=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=seed,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(data), processing_class=tokenizer)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    model = trainer.model
    serve.fix_eos(model, tokenizer)
    model.save_pretrained(dst)
    tokenizer.save_pretrained(dst)
    after = serve.weights_sha256(model)
    (dst / "checksum").write_text(after + "\n")
    shutil.rmtree(dst.with_name(dst.name + ".trainer"), ignore_errors=True)
    seconds = round(time.monotonic() - started, 1)
    log(f"{role}: {dst.name} sha256 after  {after} ({len(data)} rows, {steps} steps, {seconds}s, "
        f"loss {losses[0] if losses else None} -> {losses[-1] if losses else None})")  # fmt: skip
    del trainer, model
    return {
        "before": before, "after": after, "changed": before != after, "source": str(src), "checkpoint": str(dst),
        "rows": len(data), "steps": steps, "lr": lr, "train_s": seconds,
        "loss": [round(x, 4) for x in losses],
    }  # fmt: skip


def next_name(current: Path, epoch: int) -> str:
    prefix = current.name.rsplit("-v", 1)[0]
    return f"{prefix}-v{epoch + 1}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("exports", help="the export folder spade wrote for this step ({exports})")
    p.add_argument("--state", required=True, help="the e2e state folder (servers.jsonl, steps.jsonl, logs/)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--teacher-sft", help="solver cold-start rows (sft JSONL) for a run with too few of its own")
    args = p.parse_args()
    state, exports = Path(args.state), Path(args.exports)
    run_dir = Path(os.environ["SPADE_RUN_DIR"])
    epoch = int(os.environ["SPADE_EPOCH"])
    started = time.monotonic()
    log(f"step after epoch {epoch}: exports {exports}; solver {os.environ.get('SPADE_SOLVER_MODEL')}, "
        f"generator {os.environ.get('SPADE_GENERATOR_MODEL')}")  # fmt: skip
    live = {s["role"]: s for s in serve.servers(state) if not s["stopped"]}
    missing = [role for role in ("solver", "generator") if role not in live]
    if missing:
        raise SystemExit(f"no running server recorded for {missing} in {state}/servers.jsonl")
    min_rows = int(knob("E2E_MIN_ROWS", 4))
    record: dict[str, Any] = {"epoch": epoch}

    # solver: the run's passing trajectories, the teacher's answers filling in
    own = [r for r in map(prompt_completion, serve.rows(exports / "sft.jsonl")) if r]
    solver_data, source = list(own), f"run sft export: {len(own)} rows"
    if len(own) < min_rows and args.teacher_sft:
        teacher = [r for r in map(prompt_completion, serve.rows(Path(args.teacher_sft))) if r]
        solver_data += teacher
        source += f" + teacher (fake/default, final answers): {len(teacher)} rows"
    # generator: the run's accepted answers, plus one fresh teacher task
    gen_own, gen_source = generator_rows(exports, run_dir)
    record["generator_export"] = gen_source
    log(f"generator rows: {gen_source}")
    teacher_rows, teacher_source = teacher_generator_rows(run_dir, epoch)
    generator_data = gen_own + teacher_rows

    with contextlib.redirect_stdout(sys.stderr):  # the trainer's log lines on stderr, with the rest of its log
        plans = [
            ("solver", solver_data, source, "E2E_SOLVER", 8, 2e-4, 512),
            ("generator", generator_data, f"run generator rows: {len(gen_own)} + {teacher_source}", "E2E_GENERATOR",
             16, 5e-4, 768),
        ]  # fmt: skip
        for role, data, where, prefix, steps, lr, max_length in plans:
            current = Path(live[role]["checkpoint"])
            dst = current.with_name(next_name(current, epoch))
            result = train(
                role, current, dst, data, int(knob(f"{prefix}_STEPS", steps)), knob(f"{prefix}_LR", lr),
                int(knob(f"{prefix}_MAX_LENGTH", max_length)), args.device, seed=epoch,
            )  # fmt: skip
            result["data"] = where
            record[role] = result
        # new servers for both roles on the new checkpoints, the old ones stopped first (CPU and memory)
        new = {}
        for role in ("solver", "generator"):
            serve.stop_servers(state, role)
            new[role] = serve.start_server(state, role, Path(record[role]["checkpoint"]), epoch + 1, args.device)
    record["seconds"] = round(time.monotonic() - started, 1)
    serve.append(state / "steps.jsonl", record)
    switch = {
        "solver_model": new["solver"]["model"],
        "api_base": new["solver"]["api_base"],
        "generator_model": new["generator"]["model"],
        "generator_api_base": new["generator"]["api_base"],
    }
    Path(os.environ["SPADE_SWITCH_FILE"]).write_text(json.dumps(switch), encoding="utf-8")
    print(f"switch: {json.dumps(switch)}", flush=True)  # for the log; spade reads the file
    return 0


if __name__ == "__main__":
    sys.exit(main())
