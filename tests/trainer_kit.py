"""What the tests of the real trainers (TRL, verl) share: a run's exports, a tokenizer trained on the
fly and a tiny causal LM made from a config, so no hub download is ever needed.

The run is the fake model's (three kinds, K=4 samples: DPO pairs, tiers and GRPO groups), exported
through the CLI in every format the trainers read. The tokenizer is a byte-level BPE trained on the
exports' own text, with Qwen's special tokens and a chat template TRL ships (``trl.chat_template_utils``:
``qwen3`` for tool calling, which TRL knows how to parse; ``qwen2_5_training`` for SFT's
``assistant_only_loss``, which needs ``{% generation %}`` markers). The model is a 2-layer Qwen3 with a
hidden size of 32: a training step takes well under a second on one CPU core.

``SPADE_TEST_REQUIRE_TRAINERS=1`` (CI's trainer lane sets it, in the venv with the ``trl`` and ``verl``
extras) turns "skipped: TRL/verl/torch is not installed" into a failure, here (``need``) and for any
test marked ``trl`` or ``verl`` that skips (conftest.py): installed extras must not hide behind skips.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

from spade_llm.errors import pip_install

REQUIRE_ENV = "SPADE_TEST_REQUIRE_TRAINERS"

KINDS_CONFIG = "seed: 0\ncurriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n"
EXPORT_KINDS_CONFIG = "seed: 0\ncurriculum:\n  kinds: {induction: 0.4, deduction: 0.2, abduction: 0.2, program: 0.2}\n"
"""``make_exports``'s run: the three kinds and whole programs, whose exports TRL and verl load too."""
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>"]
VOCAB_SIZE = 1024


def trainers_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def need(module: str, extra: str) -> ModuleType:
    """``module`` imported; when it is missing, the test module is skipped with the command that installs
    it (``extra``: the spade extra that brings it), or fails under ``SPADE_TEST_REQUIRE_TRAINERS``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        reason = f"{module} is not importable ({e}): {pip_install(extra)} torch==2.13.0"
        if trainers_required():
            pytest.fail(f"{REQUIRE_ENV} is set, but {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def skip_unless_required(reason: str) -> NoReturn:
    """Skip the test module for ``reason``, or fail it under ``SPADE_TEST_REQUIRE_TRAINERS``."""
    if trainers_required():
        pytest.fail(f"{REQUIRE_ENV} is set, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


@dataclass(frozen=True)
class Exports:
    """One fake run and its exports (paths)."""

    run: Path
    sft: Path
    sft_final: Path
    dpo: Path
    grpo: Path
    verl: Path
    verl_sandbox_fusion: Path


def make_exports(base: Path) -> Exports:
    """``spade run`` (fake model, four kinds, 2 epochs of 4 tasks, K=4) and every export of it."""
    from spade_llm.cli.app import main

    config = base / "kinds.yaml"
    config.write_text(EXPORT_KINDS_CONFIG)
    run = base / "run"
    argv = ["run", "--config", str(config), "--epochs", "2", "--tasks-per-epoch", "4", "--samples-per-task", "4"]
    assert main([*argv, "--sandbox", "auto", "--out", str(run), "--quiet"]) == 0
    out = base / "exports"
    exports = Exports(
        run=run,
        sft=out / "sft.jsonl",
        sft_final=out / "sft_final.jsonl",
        dpo=out / "dpo.jsonl",
        grpo=out / "grpo.jsonl",
        verl=out / "verl.parquet",
        verl_sandbox_fusion=out / "verl_sf.parquet",
    )
    for fmt, path, flags in (
        ("sft", exports.sft, []),
        ("sft", exports.sft_final, ["--final-only"]),
        ("dpo", exports.dpo, []),
        ("grpo", exports.grpo, []),
        ("verl", exports.verl, []),
        ("verl", exports.verl_sandbox_fusion, ["--verl-reward", "sandbox_fusion"]),
    ):
        assert main(["export", str(run), "--format", fmt, "-o", str(path), *flags]) == 0
    return exports


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def export_texts(exports: Exports) -> list[str]:
    """Every message text of the exports: what the tokenizer is trained on."""
    texts: list[str] = []
    for row in read_jsonl(exports.sft) + read_jsonl(exports.grpo):
        texts += [m["content"] for m in row.get("messages") or row.get("prompt") or []]
    for row in read_jsonl(exports.dpo):
        texts += [m["content"] for m in row["prompt"] + row["chosen"] + row["rejected"]]
    return texts


def train_tokenizer(texts: list[str], chat_template: str) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` (any byte can be encoded), Qwen's special tokens,
    ``chat_template`` as its template, ``<|im_end|>`` as its end and pad token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.chat_template = chat_template
    return fast


def tiny_model(tokenizer: Any, seed: int = 0) -> Any:
    """A 2-layer Qwen3 causal LM (hidden size 32) sized to ``tokenizer``, its weights seeded."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return model


def save_tiny(directory: Path, tokenizer: Any, seed: int = 0) -> Path:
    """The tiny model and its tokenizer saved to ``directory`` (what trainers given a path load)."""
    tiny_model(tokenizer, seed).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def sandbox_backend() -> str:
    """bwrap where it works, else the subprocess backend: what the trainer tests judge in (the programs
    are the fake model's answers and ones the tests write)."""
    from sandbox_backends import unavailable

    return "bwrap" if unavailable("bwrap") is None else "subprocess"


@contextlib.contextmanager
def serve_sandbox(log: Path, backend: str, concurrency: int = 2) -> Iterator[str]:
    """A real ``spade serve-sandbox`` subprocess on a free loopback port; yields its ``/run_code`` URL."""
    argv = [sys.executable, "-m", "spade_llm.cli", "serve-sandbox", "--host", "127.0.0.1", "--port", "0"]
    argv += ["--sandbox", backend, "--concurrency", str(concurrency)]
    argv += ["--allow-unsafe"] if backend == "subprocess" else []
    with log.open("w") as err:  # a file, not a pipe: nothing blocks the server when no one reads
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on (http://127\.0\.0\.1:\d+/run_code)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def default_rewarder_on(backend: str) -> Iterator[Any]:
    """``spade_llm.rewards.code``' default rewarder (what ``code_reward``, ``compute_score`` and
    ``SpadeCodingEnv()`` judge with) rebuilt on ``backend`` through ``SPADE_SANDBOX``, as a user pins it;
    the previous default is put back afterwards."""
    from spade_llm.rewards import code as rewards

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(rewards.SANDBOX_ENV, backend)
        saved, rewards._default = rewards._default, None
        box = rewards.default_rewarder()
        assert box.backend == backend
        try:
            yield box
        finally:
            rewards._default = saved
            box.close()
