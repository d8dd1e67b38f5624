"""``spade train``: the closed loop in one command, TRL's ``GRPOTrainer`` with ``SpadeLiveEnv`` against the
``spade serve-env`` it starts itself, on a tiny model made here (CPU). The completions are scripted through
``model.generate`` (a random tiny model would never call the tool): per group, the served task's reference
or a wrong function, so the group's rewards differ and GRPO has something to learn from."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from trainer_kit import KINDS_CONFIG, need, read_jsonl, save_tiny, tiny_model, train_tokenizer

need("trl", "trl")
need("openenv", "env")
torch = need("torch", "trl")

from test_trl_live import generated, served_task, tool_call, wrong_code  # noqa: E402

from spade_llm import read_run  # noqa: E402
from spade_llm.cli import app as cli  # noqa: E402

pytestmark = [pytest.mark.trl, pytest.mark.env, pytest.mark.slow]

TEXTS = ["You are an expert Python programmer.", "def f(x):\n    return x + 1\n", "public tests passed"]
"""What the tiny tokenizer is trained on (byte-level: it encodes any text)."""


def test_spade_train_runs_two_grpo_steps_against_its_own_serve_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = train_tokenizer(TEXTS * 20, qwen3_chat_template)
    model_dir = save_tiny(tmp_path / "tiny", tokenizer)
    before = {name: p.detach().clone() for name, p in tiny_model(tokenizer).named_parameters()}  # what was saved
    out = tmp_path / "train"
    real_train = GRPOTrainer.train

    def scripted(self: Any, *args: Any, **kwargs: Any) -> Any:
        def generate(input_ids: Any, **_: Any) -> Any:
            answers = []
            for i, ids in enumerate(input_ids):
                if "<tool_response>" in tokenizer.decode(ids, skip_special_tokens=False):
                    answers.append("Done.")
                    continue
                task = served_task(out / "run", self.environments[i].task_id)
                answers.append(tool_call(task.reference_code if i % 2 == 0 else wrong_code(task)))
            return generated(tokenizer, input_ids, answers)

        with patch.object(self.model, "generate", side_effect=generate):
            return real_train(self, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "train", scripted)
    argv = ["train", "--model", str(model_dir), "--steps", "2", "--num-generations", "4", "--tasks-per-epoch", "2"]
    assert cli.main([*argv, "--out", str(out)]) == 0

    trained = AutoModelForCausalLM.from_pretrained(out / "model")
    changed = [name for name, p in trained.named_parameters() if not torch.equal(before[name], p.detach())]
    assert changed, "the trained model's weights are the tiny model's"
    records = read_run(out / "run")  # a run directory like any other, read strictly
    by_task: dict[str, list[str]] = {}
    for t in records.trajectories:
        by_task.setdefault(t.task_id, []).append(t.final_status)
    assert sum(len(v) for v in by_task.values()) == 8  # 2 steps x 4 rollouts, each an episode
    assert all(len(v) == 4 and v.count("passed") == 2 for v in by_task.values()), by_task  # a group, one task


def weights(folder: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM

    return {name: p.detach().clone() for name, p in AutoModelForCausalLM.from_pretrained(folder).named_parameters()}


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [name for name in before if not torch.equal(before[name], after[name])]


def fake_run(base: Path, samples: int, turns: int, tasks: int = 4) -> Path:
    """A finished ``spade run`` of the fake model: what ``--warm-start`` learns from."""
    (base / "kinds.yaml").write_text(KINDS_CONFIG)
    argv = ["run", "--config", str(base / "kinds.yaml"), "--epochs", "1", "--tasks-per-epoch", str(tasks)]
    argv += ["--samples-per-task", str(samples), "--max-turns", str(turns), "--out", str(base / "run"), "--quiet"]
    assert cli.main(argv) == 0
    return base / "run"


def test_spade_train_warm_starts_by_sft_then_dpo_on_a_runs_train_split_then_runs_grpo_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    run = fake_run(tmp_path, samples=4, turns=2)
    tokenizer = train_tokenizer(
        ["def f(x):\n    return x + 1\n", "You are an expert Python programmer."] * 20, qwen3_chat_template
    )
    model_dir = save_tiny(tmp_path / "tiny", tokenizer)
    out = tmp_path / "train"
    started_from: list[str] = []
    real_train = GRPOTrainer.train

    def scripted(self: Any, *args: Any, **kwargs: Any) -> Any:
        started_from.append(self.model.config.name_or_path)

        def generate(input_ids: Any, **_: Any) -> Any:
            answers = []
            for i, ids in enumerate(input_ids):
                if "<tool_response>" in tokenizer.decode(ids, skip_special_tokens=False):
                    answers.append("Done.")
                    continue
                task = served_task(out / "run", self.environments[i].task_id)
                answers.append(tool_call(task.reference_code if i % 2 == 0 else wrong_code(task)))
            return generated(tokenizer, input_ids, answers)

        with patch.object(self.model, "generate", side_effect=generate):
            return real_train(self, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "train", scripted)
    argv = ["train", "--model", str(model_dir), "--steps", "1", "--num-generations", "4", "--tasks-per-epoch", "2"]
    argv += ["--warm-start", str(run), "--warm-start-stages", "sft,dpo", "--warm-start-steps", "1"]
    assert cli.main([*argv, "--out", str(out)]) == 0

    sft_rows, dpo_rows = read_jsonl(out / "warm" / "sft.jsonl"), read_jsonl(out / "warm" / "dpo.jsonl")
    assert sft_rows and dpo_rows
    assert {r["split"] for r in sft_rows + dpo_rows} == {"train"}  # the run's test split stays held out
    assert all(len(r["messages"]) == 3 and r["messages"][-1]["role"] == "assistant" for r in sft_rows)  # final-only
    tiny, sft, dpo = weights(model_dir), weights(out / "warm" / "sft"), weights(out / "warm" / "dpo")
    assert changed(tiny, sft) and changed(sft, dpo), "a warm-start stage left the weights it started from"
    assert started_from == [str(out / "warm" / "dpo")]  # GRPO starts from the last stage's model
    assert changed(dpo, weights(out / "model"))
    assert len(read_run(out / "run").trajectories) == 4


def test_a_warm_start_from_a_run_without_dpo_pairs_fails_before_any_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fake_run(tmp_path, samples=1, turns=1, tasks=8)  # one answer per task: no pair (and passes for sft)
    out = tmp_path / "train"
    argv = ["train", "--model", "never/loaded", "--warm-start", str(run), "--warm-start-stages", "sft,dpo"]
    assert cli.main([*argv, "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert read_jsonl(run / "trajectories.jsonl"), "the run has trajectories, only no pair"
    assert "--warm-start dpo" in said and "--samples-per-task >= 2" in said
    assert not any(out.iterdir())  # nothing trained, nothing exported left behind: the same --out works again


def test_spade_train_refuses_a_folder_that_is_not_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.txt").write_text("x")
    assert cli.main(["train", "--model", "any", "--out", str(tmp_path)]) == 2
    assert "is not empty" in capsys.readouterr().err
