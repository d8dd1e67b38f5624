"""TRL's own trainers (SFT, DPO, GRPO with ``code_reward``, GRPO with ``SpadeCodingEnv``) on spade's exports, on CPU.

One fake run (``trainer_kit.make_exports``) is exported in every format; each test loads an export with
``datasets`` as docs/training.md does and runs one real optimizer step of a TRL 1.16 trainer on the kit's
2-layer Qwen3 (no hub: the tokenizer is trained on the exports' text). What is checked is what a user relies
on: the columns and message lists the docs promise, which tokens SFT trains on, that DPO starts from the
reference (loss log 2), and that GRPO's rewards are spade's verdicts, environment and tool loop included.

GRPO's generations are scripted, as TRL's own tests script them: ``trainer.model.generate`` is patched
(``unittest.mock.patch.object``) with a function that returns the prompt ids followed by the token ids of a
chosen answer (then EOS and padding). That is the seam under every transformers-generation path of
``GRPOTrainer._generate_single_turn``: TRL still tokenizes the prompts, decodes and parses the completions
(tool calls included), runs the tools, re-tokenizes the tool results, calls the rewards and takes the step.
The answers are the run's own: the passing answer of a task is the final assistant message of its row in the
``--final-only`` SFT export; the wrong ones are written here. The per-completion rewards TRL computed are read
from ``trainer._logs`` (what TRL's completions table shows), the means from ``trainer.state.log_history``.

Settings every trainer needs here (TRL 1.16, transformers 5.10): ``use_cpu=True`` (TRL's configs default to
``bf16=True``, and on a machine without a GPU the config raises "Your setup doesn't support bf16/gpu" unless
``use_cpu`` is set; transformers 5 has no ``no_cuda``), ``bf16=False`` (float32 on CPU), ``report_to="none"``,
``logging_steps=1`` (else the one step logs no loss).

Sandbox: bwrap where it works, else the subprocess backend (``SPADE_SANDBOX``, as docs/training.md says): the
programs judged are the fake model's answers and the ones written here.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from trainer_kit import (
    Exports,
    default_rewarder_on,
    export_texts,
    make_exports,
    need,
    read_jsonl,
    sandbox_backend,
    save_tiny,
    tiny_model,
    train_tokenizer,
)

from spade_llm import read_run
from spade_llm.integrations.trl import SpadeCodingEnv
from spade_llm.kinds.induction import extract_code
from spade_llm.kinds.queries import call_text
from spade_llm.rewards.code import Rewarder, code_reward, completion_text, make_code_reward, parse_ground_truth

pytestmark = [pytest.mark.trl, pytest.mark.slow]

# the real TRL: pip install 'spade-selfplay[trl]' torch==2.13.0 (a skip, or a failure under SPADE_TEST_REQUIRE_TRAINERS)
torch = need("torch", "trl")
need("trl", "trl")
datasets = need("datasets", "trl")

BACKEND = sandbox_backend()

CPU_ARGS: dict[str, Any] = {
    "max_steps": 1,
    "use_cpu": True,
    "bf16": False,
    "report_to": "none",
    "logging_steps": 1,
    "save_strategy": "no",
    "disable_tqdm": True,
    "seed": 0,
    "data_seed": 0,
    "learning_rate": 1e-3,
}
"""What one CPU step of any TRL trainer is given here (see the module docstring)."""

# the columns docs/training.md's table lists, per format
SFT_COLUMNS = {"messages", "repair", "turns", "task_id", "kind", "trajectory_id", "sample_index", "split", "difficulty"}
SFT_COLUMNS |= {"language"}  # the answer's language, in every row of every export
DPO_COLUMNS = {"prompt", "chosen", "rejected", "pair_type", "task_id", "kind", "split", "difficulty", "language"} | {
    "chosen_trajectory_id",
    "rejected_trajectory_id",
}
GRPO_COLUMNS = {"prompt", "task_id", "kind", "entry_point", "tests", "ground_truth", "split", "difficulty", "language"}
VERL_COLUMNS = {"data_source", "prompt", "ability", "reward_model", "extra_info"}
VERL_EXTRA_INFO = {"split", "index", "task_id", "kind", "difficulty", "language"}

CHATML_WITHOUT_MARKERS = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""A ChatML template of one's own, without ``{% generation %}`` markers, that TRL does not know."""


# -- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    return make_exports(tmp_path_factory.mktemp("trl-exports"))


@pytest.fixture(scope="module")
def texts(exports: Exports) -> list[str]:
    return export_texts(exports)


@pytest.fixture(scope="module")
def sft_tokenizer(texts: list[str]) -> Any:
    """Qwen2.5's training template (``{% generation %}`` markers): what SFT's ``assistant_only_loss`` needs."""
    from trl.chat_template_utils import qwen2_5_training_chat_template

    return train_tokenizer(texts, qwen2_5_training_chat_template)


@pytest.fixture(scope="module")
def qwen3_tokenizer(texts: list[str]) -> Any:
    """Qwen3's template, which TRL knows how to parse tool calls from. GRPO with tools sets a response schema on
    the tokenizer it is given: each GRPO test takes a copy."""
    from trl.chat_template_utils import qwen3_chat_template

    return train_tokenizer(texts, qwen3_chat_template)


@pytest.fixture(scope="module")
def judge() -> Iterator[Rewarder]:
    """The default rewarder, on the tests' backend (``trainer_kit.default_rewarder_on``)."""
    with default_rewarder_on(BACKEND) as box:
        yield box


@pytest.fixture(scope="module")
def passing(exports: Exports) -> dict[str, str]:
    """A passing answer per task id: the final assistant message of its ``--final-only`` SFT row."""
    answers: dict[str, str] = {}
    for row in read_jsonl(exports.sft_final):
        answers.setdefault(row["task_id"], row["messages"][-1]["content"])
    return answers


# -- helpers ----------------------------------------------------------------------------------------


def load_jsonl(path: Path) -> Any:
    return datasets.load_dataset("json", data_files=str(path), split="train")


def load_parquet(path: Path) -> Any:
    return datasets.load_dataset("parquet", data_files=str(path), split="train")


def assert_messages(messages: Any, roles: set[str] | None = None) -> None:
    """A list of ``{role, content}`` dicts, contents strings."""
    assert isinstance(messages, list) and messages
    for m in messages:
        assert isinstance(m, dict) and set(m) == {"role", "content"}, m
        assert isinstance(m["content"], str)
        assert m["role"] in (roles or {"system", "user", "assistant"}), m


def snapshot(model: Any) -> dict[str, Any]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def assert_all_changed(before: dict[str, Any], model: Any) -> None:
    unchanged = [name for name, p in model.named_parameters() if torch.equal(before[name], p.detach())]
    assert not unchanged, f"not updated by the step: {unchanged}"


def step_log(trainer: Any) -> dict[str, Any]:
    """What the one training step logged (the first entry of the log history, which has the loss)."""
    log = trainer.state.log_history[0]
    assert trainer.state.global_step == 1 and "loss" in log, trainer.state.log_history
    return dict(log)


def trained_spans(tokenizer: Any, labels: list[int]) -> list[str]:
    """The text of each run of tokens the loss is computed on (labels other than -100)."""
    spans: list[list[int]] = [[]]
    for label in labels:
        if label == -100:
            if spans[-1]:
                spans.append([])
        else:
            spans[-1].append(label)
    return [tokenizer.decode(ids) for ids in spans if ids]


def sft_trainer(tokenizer: Any, dataset: Any, output_dir: Path, **args: Any) -> Any:
    from trl import SFTConfig, SFTTrainer

    config = SFTConfig(output_dir=str(output_dir), per_device_train_batch_size=2, **{**CPU_ARGS, **args})
    return SFTTrainer(model=tiny_model(tokenizer), args=config, train_dataset=dataset, processing_class=tokenizer)


class ScriptedGenerate:
    """Stands in for ``model.generate`` (TRL's own tests' seam): for each prompt in the batch, the token ids of
    ``answer(prompt_text)`` then EOS, padded; returns prompt ids + completion ids as ``generate`` does. Records
    the decoded inputs of every call (the second call of a tool loop holds the tool results)."""

    def __init__(self, tokenizer: Any, answer: Callable[[str], str]) -> None:
        self.tokenizer = tokenizer
        self.answer = answer
        self.inputs: list[list[str]] = []

    def __call__(self, input_ids: Any, **kwargs: Any) -> Any:
        tok = self.tokenizer
        prompts = [tok.decode(ids, skip_special_tokens=False) for ids in input_ids]
        self.inputs.append(prompts)
        outs = [[*tok.encode(self.answer(text), add_special_tokens=False), tok.eos_token_id] for text in prompts]
        width = max(len(o) for o in outs)
        padded = [o + [tok.pad_token_id] * (width - len(o)) for o in outs]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype, device=input_ids.device)], dim=-1)


def row_of(text: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The dataset row whose prompt (its last message, the task) is in ``text``."""
    found = [r for r in rows if r["prompt"][-1]["content"] in text]
    assert len(found) == 1, f"{len(found)} rows match the prompt"
    return found[0]


def wrong_answer(row: dict[str, Any], passing: str) -> str:
    """An answer in the task's form that fails: a function returning None, a program printing nothing;
    deduction's values, abduction's arguments replaced by None."""
    entry = row["entry_point"]
    if row["kind"] == "program":
        return "```python\nimport sys\nsys.stdin.read()\n```"
    if row["kind"] == "induction":
        return f"```python\ndef {entry}(*args):\n    return None\n```"
    if row["kind"] == "deduction":
        return re.sub(r" == .*$", " == None", passing, flags=re.M)
    return re.sub(rf"^{re.escape(entry)}\(.*\) == ", f"{entry}(None) == ", passing, flags=re.M)


# -- 1. datasets reads every export -------------------------------------------------------------------


def test_load_dataset_reads_every_export_with_the_documented_columns(exports: Exports) -> None:
    import pyarrow.parquet as pq

    sft, sft_final = load_jsonl(exports.sft), load_jsonl(exports.sft_final)
    dpo, grpo = load_jsonl(exports.dpo), load_jsonl(exports.grpo)
    for ds, path, columns in (
        (sft, exports.sft, SFT_COLUMNS),
        (sft_final, exports.sft_final, SFT_COLUMNS),
        (dpo, exports.dpo, DPO_COLUMNS),
        (grpo, exports.grpo, GRPO_COLUMNS),
    ):
        lines = read_jsonl(path)
        assert set(ds.column_names) == columns, path.name
        assert len(ds) == len(lines) > 0, path.name
        for name in columns & {"messages", "prompt", "chosen", "rejected"}:
            assert ds[name] == [line[name] for line in lines], (path.name, name)  # message lists come back intact

    full = {row["trajectory_id"]: row for row in sft}
    for row in sft:
        assert_messages(row["messages"])
        assert row["messages"][-1]["role"] == "assistant"
        assert row["turns"] == sum(m["role"] == "assistant" for m in row["messages"])
        assert row["repair"] == (row["turns"] > 1)
    for row in sft_final:  # --final-only: the first prompt and the passing answer
        assert_messages(row["messages"])
        assert [m["role"] for m in row["messages"]].count("assistant") == 1
        opening = full[row["trajectory_id"]]["messages"]
        assert row["messages"] == [*opening[: len(row["messages"]) - 1], opening[-1]]
    for row in dpo:
        for column in ("prompt", "chosen", "rejected"):
            assert_messages(row[column])
        assert row["prompt"][-1]["role"] == "user"
        assert [m["role"] for m in row["chosen"]] == [m["role"] for m in row["rejected"]] == ["assistant"]
        assert row["chosen"] != row["rejected"] and row["pair_type"] in ("samples", "repair")
    for row in grpo:
        assert_messages(row["prompt"], {"system", "user"})
        task, public = parse_ground_truth(row["ground_truth"])
        assert (task.task_id, task.kind, task.entry_point) == (row["task_id"], row["kind"], row["entry_point"])
        assert 0 < public <= len(task.tests) == len(json.loads(row["tests"]))

    verl, verl_sf = load_parquet(exports.verl), load_parquet(exports.verl_sandbox_fusion)
    for ds, path, source in ((verl, exports.verl, "spade_llm"), (verl_sf, exports.verl_sandbox_fusion, "codecontests")):
        assert set(ds.column_names) == VERL_COLUMNS, path.name
        assert len(ds) == pq.read_metadata(path).num_rows > 0, path.name
        for row in ds:
            assert row["data_source"] == source and row["ability"] == "code"
            assert_messages(row["prompt"], {"system", "user"})
            assert set(row["reward_model"]) == {"style", "ground_truth"} and row["reward_model"]["style"] == "rule"
            assert set(row["extra_info"]) == VERL_EXTRA_INFO
    by_task = {row["task_id"]: row for row in grpo}
    assert sorted(r["extra_info"]["task_id"] for r in verl) == sorted(by_task)  # one row per task, as grpo
    for row in verl:  # spade's ground truth, the GRPO row's prompt
        grpo_row = by_task[row["extra_info"]["task_id"]]
        assert row["prompt"] == grpo_row["prompt"]
        assert parse_ground_truth(row["reward_model"]["ground_truth"]) == parse_ground_truth(grpo_row["ground_truth"])
    kinds_sf = set()
    for row in verl_sf:  # SandboxFusion's ground truth: by function name for induction, stdin for programs
        kinds_sf.add(row["extra_info"]["kind"])
        truth = json.loads(row["reward_model"]["ground_truth"])
        if row["extra_info"]["kind"] == "program":
            assert "fn_name" not in truth and all(isinstance(t, str) for t in truth["inputs"] + truth["outputs"])
        else:
            assert row["extra_info"]["kind"] == "induction"
            assert truth["fn_name"] == by_task[row["extra_info"]["task_id"]]["entry_point"]
        assert len(truth["inputs"]) == len(truth["outputs"]) > 0
    assert kinds_sf == {"induction", "program"}


# -- 2. SFT ---------------------------------------------------------------------------------------------


def test_sft_step_on_the_sft_export(exports: Exports, sft_tokenizer: Any, tmp_path: Path) -> None:
    sft = load_jsonl(exports.sft)
    train = sft.filter(lambda r: r["split"] == "train")  # as docs/training.md
    assert len(train) > 0
    trainer = sft_trainer(sft_tokenizer, train, tmp_path, max_length=256)
    # the conversation, rendered by the tokenizer's chat template, is what is trained on (truncated to max_length)
    for row in trainer.train_dataset:
        rendered = sft_tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=False)
        assert row["input_ids"] == rendered[:256]
    before = snapshot(trainer.model)
    trainer.train()
    loss = step_log(trainer)["loss"]
    assert math.isfinite(loss)
    assert abs(loss - math.log(len(sft_tokenizer))) < 0.1  # an untrained model: cross-entropy of a uniform guess
    assert_all_changed(before, trainer.model)


def test_sft_assistant_only_loss_trains_exactly_the_assistant_messages(
    exports: Exports, sft_tokenizer: Any, tmp_path: Path
) -> None:
    """With ``{% generation %}`` markers (TRL's ``qwen2_5_training`` template) the labels cover each assistant
    message (the newline after ``<|im_start|>assistant``, its content, ``<|im_end|>`` and the newline after it)
    and nothing else: no system prompt, task or feedback token is trained on. ``--final-only`` rows train on
    their one answer."""
    sft = load_jsonl(exports.sft)
    trainer = sft_trainer(sft_tokenizer, sft, tmp_path, assistant_only_loss=True, max_length=None)
    assert trainer.chat_template is None  # the tokenizer's template is used as is
    repaired = 0
    for row in trainer.train_dataset:
        spans = trained_spans(sft_tokenizer, row["labels"])
        assert spans == ["\n" + m["content"] + "<|im_end|>\n" for m in row["messages"] if m["role"] == "assistant"]
        feedback = [m["content"] for m in row["messages"][2:] if m["role"] == "user"]
        assert len(feedback) == row["turns"] - 1
        assert not any(text in span for text in feedback for span in spans)
        repaired += bool(feedback)
    assert repaired > 0  # the run has repair trajectories: feedback turns were there to leave out

    final_only = load_jsonl(exports.sft_final)
    final = sft_trainer(sft_tokenizer, final_only, tmp_path, assistant_only_loss=True, max_length=None)
    last_answer = {r["trajectory_id"]: r["messages"][-1]["content"] for r in read_jsonl(exports.sft)}
    for row in final.train_dataset:
        assert [m["role"] for m in row["messages"]].count("assistant") == 1
        answer = last_answer[row["trajectory_id"]]
        assert trained_spans(sft_tokenizer, row["labels"]) == ["\n" + answer + "<|im_end|>\n"]


@pytest.mark.parametrize("template", ["qwen2_5", "qwen3", "own"])
def test_sft_assistant_only_loss_without_generation_markers(
    template: str, exports: Exports, texts: list[str], tmp_path: Path
) -> None:
    """TRL 1.16 with ``assistant_only_loss=True`` and a template without ``{% generation %}`` markers: a template
    it knows (Qwen2.5's, Qwen3's) is replaced, for training, by its training variant (``trainer.chat_template``);
    Qwen3's puts an empty ``<think>\\n\\n</think>\\n\\n`` before every assistant message, inside the trained span.
    A template it does not know is refused when the trainer is built (ValueError), before any step."""
    from trl import chat_template_utils as ctu

    sft = load_jsonl(exports.sft)
    if template == "own":
        tokenizer = train_tokenizer(texts, CHATML_WITHOUT_MARKERS)
        with pytest.raises(ValueError, match=r"not training-compatible .*generation"):
            sft_trainer(tokenizer, sft, tmp_path, assistant_only_loss=True, max_length=None)
        return
    stock, training, prefix = {
        "qwen2_5": (ctu.qwen2_5_chat_template, ctu.qwen2_5_training_chat_template, "\n"),
        "qwen3": (ctu.qwen3_chat_template, ctu.qwen3_training_chat_template, "<think>\n\n</think>\n\n"),
    }[template]
    assert not ctu.has_generation_markers(stock)
    tokenizer = train_tokenizer(texts, stock)
    trainer = sft_trainer(tokenizer, sft, tmp_path, assistant_only_loss=True, max_length=None)
    assert trainer.chat_template == training
    for row in trainer.train_dataset:
        answers = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        want = [f"{prefix}{a}<|im_end|>\n" for a in answers]
        assert trained_spans(tokenizer, row["labels"]) == want


# -- 3. DPO ---------------------------------------------------------------------------------------------


def test_dpo_step_on_the_dpo_export(exports: Exports, sft_tokenizer: Any, tmp_path: Path) -> None:
    """DPOTrainer given a model path (as docs/training.md: its reference is loaded from the same path; a model
    object built in memory has no path, and TRL 1.16 then fails building the reference unless ``ref_model`` is
    given). The first step's loss is log 2: the policy is its reference."""
    from trl import DPOConfig, DPOTrainer

    path = save_tiny(tmp_path / "tiny", sft_tokenizer)
    before = snapshot(tiny_model(sft_tokenizer))  # what save_tiny saved (same seed)
    dpo = load_jsonl(exports.dpo)
    train = dpo.filter(lambda r: r["split"] == "train")
    # max_length: TRL drops the pairs whose prompt alone fills it (spade's prompts run to a few hundred tokens)
    config = DPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, max_length=1024, **CPU_ARGS)
    with pytest.raises(OSError, match="Repo id"):  # an in-memory model: TRL looks its (empty) name up for the reference
        DPOTrainer(model=tiny_model(sft_tokenizer), args=config, train_dataset=train, processing_class=sft_tokenizer)
    trainer: Any = DPOTrainer(model=str(path), args=config, train_dataset=train, processing_class=sft_tokenizer)
    assert len(trainer.train_dataset) == len(train) > 0  # no pair dropped
    assert trainer.ref_model is not None
    trainer.train()
    log = step_log(trainer)
    assert math.isfinite(log["loss"])
    assert log["loss"] == pytest.approx(math.log(2), abs=1e-4)
    assert log["logps/chosen"] < 0 and log["logps/rejected"] < 0
    assert_all_changed(before, trainer.model)
    ref = dict(trainer.ref_model.named_parameters())
    assert all(torch.equal(before[name], ref[name].detach()) for name in before)  # the reference stays put


def docs_python_block(heading: str) -> str:
    """The first python block after ``heading`` in docs/training.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text(encoding="utf-8")
    opening = text.index("```python\n", text.index(heading)) + len("```python\n")
    return text[opening : text.index("```\n", opening)]


def test_the_docs_sft_then_dpo_block_runs_as_written(exports: Exports, sft_tokenizer: Any, tmp_path: Path) -> None:
    # before: the block trained SFT and never saved it, so DPOTrainer(model="out/sft") found no model there.
    # Run as written on the tiny model and the kit's exports, with the CPU arguments the docs name (one step)
    block = docs_python_block("### SFT and DPO")
    model = save_tiny(tmp_path / "tiny", sft_tokenizer)
    cpu = "max_steps=1, use_cpu=True, bf16=False, report_to='none', save_strategy='no', max_length=1024, "
    code = (
        block.replace("Qwen/Qwen2.5-Coder-1.5B-Instruct", str(model))
        .replace("runs/r1/exports/sft.jsonl", str(exports.sft))
        .replace("runs/r1/exports/dpo.jsonl", str(exports.dpo))
        .replace('"out/', f'"{tmp_path}/out/')
        .replace("SFTConfig(", f"SFTConfig({cpu}")
        .replace("DPOConfig(", f"DPOConfig({cpu}")
    )
    assert code.count(str(tmp_path)) >= 3 and code.count(cpu) == 2  # every path and config was the test's
    before = snapshot(tiny_model(sft_tokenizer))
    exec(compile(code, "docs/training.md", "exec"), {})
    tuned = tmp_path / "out" / "sft"
    assert (tuned / "model.safetensors").is_file() and (tuned / "tokenizer_config.json").is_file()
    from transformers import AutoModelForCausalLM

    assert_all_changed(before, AutoModelForCausalLM.from_pretrained(tuned))  # SFT's step is what DPO started from


# -- 4. GRPO with code_reward -------------------------------------------------------------------------


def test_grpo_step_rewards_are_spades_verdicts(
    exports: Exports, qwen3_tokenizer: Any, judge: Rewarder, passing: dict[str, str], tmp_path: Path
) -> None:
    """``GRPOTrainer(reward_funcs=[code_reward])`` on one task of each kind (a whole program's included), two
    scripted completions per task:
    the run's passing answer and a wrong one. The rewards TRL computed are spade's verdicts: 1.0 and 0.0."""
    from trl import GRPOConfig, GRPOTrainer

    grpo = load_jsonl(exports.grpo)
    picked = [
        next(r["task_id"] for r in grpo if r["kind"] == kind and r["task_id"] in passing)
        for kind in ("induction", "deduction", "abduction", "program")
    ]
    data = grpo.filter(lambda r: r["task_id"] in picked)
    rows = list(data)
    answers = {r["task_id"]: (passing[r["task_id"]], wrong_answer(r, passing[r["task_id"]])) for r in rows}
    # what spade's judge says of them, outside TRL
    expected: dict[str, float] = {}
    for r in rows:
        task, _ = parse_ground_truth(r["ground_truth"])
        good, bad = answers[r["task_id"]]
        verdicts = judge.judge_text(task, good), judge.judge_text(task, bad)
        assert [(v.status, v.score) for v in verdicts] == [("passed", 1.0), ("failed", 0.0)], r["task_id"]
        expected[good], expected[bad] = verdicts[0].score, verdicts[1].score

    seen: dict[str, int] = {}

    def answer(prompt: str) -> str:  # the first rollout of a task passes, the second does not
        task_id = row_of(prompt, rows)["task_id"]
        seen[task_id] = seen.get(task_id, 0) + 1
        return answers[task_id][(seen[task_id] - 1) % 2]

    tokenizer = copy.deepcopy(qwen3_tokenizer)
    config = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=2,
        max_completion_length=256,
        **CPU_ARGS,
    )
    trainer: Any = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[code_reward],
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
    )
    assert trainer.reward_func_names == ["code_reward"]
    before = snapshot(trainer.model)
    generate = ScriptedGenerate(tokenizer, answer)
    with patch.object(trainer.model, "generate", side_effect=generate):
        trainer.train()

    assert seen == dict.fromkeys(picked, 2)  # every task, both completions, in the one step
    completions = [completion_text(c) for c in trainer._logs["completion"]]
    assert sorted(completions) == sorted(expected)  # TRL decoded the scripted answers intact
    assert list(trainer._logs["rewards"]["code_reward"]) == [expected[text] for text in completions]
    log = step_log(trainer)
    assert log["rewards/code_reward/mean"] == pytest.approx(0.5)
    assert log["frac_reward_zero_std"] == 0.0  # each group has a pass and a fail: a learning signal
    assert math.isfinite(log["loss"])
    assert_all_changed(before, trainer.model)


# -- 5. GRPO with SpadeCodingEnv ------------------------------------------------------------------------


def test_grpo_step_with_the_coding_environment(
    exports: Exports,
    qwen3_tokenizer: Any,
    judge: Rewarder,
    passing: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``GRPOTrainer(environment_factory=SpadeCodingEnv, reward_funcs=[code_reward])``, the tool loop scripted
    in Qwen3's format. Per task, three rollouts: (a) calls ``run_tests`` with the passing code, then restates
    the answer; (b) calls it with wrong code, then says "Done."; (c) writes the passing answer without testing
    it. The environment's ``get_reward`` reaches TRL's rewards (a: 1.0, b and c: 0.0), ``code_reward`` scores
    the last message (a and c: 1.0), TRL sums them. The tool's answer (public tests only) is fed back to the
    model in Qwen3's ``<tool_response>``."""
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    grpo = load_jsonl(exports.grpo)
    picked = [r["task_id"] for r in grpo if r["kind"] == "induction" and r["task_id"] in passing][:2]
    assert len(picked) == 2
    data = grpo.filter(lambda r: r["task_id"] in picked)
    rows = list(data)
    good_code = {r["task_id"]: extract_code(passing[r["task_id"]]) for r in rows}
    bad_code = {r["task_id"]: f"def {r['entry_point']}(*args):\n    return None\n" for r in rows}

    def tool_call(code: str) -> str:
        return "<tool_call>\n" + json.dumps({"name": "run_tests", "arguments": {"code": code}}) + "\n</tool_call>"

    seen: dict[str, int] = {}

    def answer(prompt: str) -> str:
        row = row_of(prompt, rows)
        task_id = row["task_id"]
        if "<tool_response>" in prompt:  # after the tool: restate the tested answer when it was the passing one
            return passing[task_id] if json.dumps(good_code[task_id]) in prompt else "Done."
        seen[task_id] = seen.get(task_id, 0) + 1
        return [tool_call(good_code[task_id]), tool_call(bad_code[task_id]), passing[task_id]][(seen[task_id] - 1) % 3]

    tokenizer = copy.deepcopy(qwen3_tokenizer)
    config = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=6,
        num_generations=3,
        max_completion_length=768,
        **CPU_ARGS,
    )
    trainer: Any = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[code_reward],
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
        environment_factory=SpadeCodingEnv,
    )
    assert trainer.reward_func_names == ["code_reward", "SpadeCodingEnv"]
    assert [tool.__name__ for tool in trainer.tools] == ["run_tests"]
    before = snapshot(trainer.model)
    generate = ScriptedGenerate(tokenizer, answer)
    with patch.object(trainer.model, "generate", side_effect=generate):
        trainer.train()

    assert seen == dict.fromkeys(picked, 3)
    assert len(generate.inputs) == 2 and len(generate.inputs[1]) == 4  # the second turn: the 4 rollouts that tested
    env_rewards = list(trainer._logs["rewards"]["SpadeCodingEnv"])
    code_rewards = list(trainer._logs["rewards"]["code_reward"])
    kinds_seen = []
    for i, (prompt, completion) in enumerate(zip(trainer._logs["prompt"], trainer._logs["completion"], strict=True)):
        row = row_of(prompt[-1]["content"], rows)
        task, public = parse_ground_truth(row["ground_truth"])
        env = trainer.environments[i]
        assert env.task is not None and env.task.task_id == row["task_id"]
        calls = [m["tool_calls"][0]["function"] for m in completion if m.get("tool_calls")]
        tool_messages = [m for m in completion if m["role"] == "tool"]
        if not calls:  # (c): never tested, so the environment pays nothing; code_reward reads the answer
            kinds_seen.append("untested")
            assert (env_rewards[i], code_rewards[i], env.calls, env.verdict.status) == (0.0, 1.0, 0, "no_code")
            assert completion_text(completion) == passing[row["task_id"]]
            continue
        assert len(calls) == len(tool_messages) == 1 and calls[0]["name"] == "run_tests"
        code = calls[0]["arguments"]["code"]
        assert code in (good_code[row["task_id"]], bad_code[row["task_id"]])
        tested_good = code == good_code[row["task_id"]]
        kinds_seen.append("good" if tested_good else "bad")
        # get_reward judged the tested code on every test, hidden ones included
        assert env.calls == 1 and env.verdict.tests_total == len(task.tests) > public
        assert env_rewards[i] == (1.0 if tested_good else 0.0) == env.verdict.score
        assert code_rewards[i] == (1.0 if tested_good else 0.0)  # the restated answer, or "Done."
        # the tool's answer: what run_tests says of that code, on the public tests alone
        fresh = SpadeCodingEnv()
        fresh.reset(**row)
        feedback = fresh.run_tests(code)
        assert tool_messages[0]["content"] == feedback
        assert feedback.startswith(f"{public if tested_good else 0}/{public} public tests passed.")
        assert sum(line.startswith("- ") for line in feedback.splitlines()) == public
        shown = {call_text(task.entry_point, t.input) for t in task.tests[:public]}
        for hidden in task.tests[public:]:
            if call_text(task.entry_point, hidden.input) not in shown:
                assert call_text(task.entry_point, hidden.input) not in feedback
        # ... and the model saw it: the second generation's input holds it as Qwen3's tool response
        assert sum(f"<tool_response>\n{feedback}\n</tool_response>" in text for text in generate.inputs[1]) >= 1
    assert sorted(kinds_seen) == sorted(["good", "bad", "untested"] * 2)

    log = step_log(trainer)
    assert log["rewards/SpadeCodingEnv/mean"] == pytest.approx(1 / 3)
    assert log["rewards/code_reward/mean"] == pytest.approx(2 / 3)
    assert log["reward"] == pytest.approx(1.0)  # summed per rollout: (2 + 0 + 1) / 3
    assert log["tools/call_frequency"] == pytest.approx(4 / 6) and log["tools/failure_frequency"] == 0.0
    assert math.isfinite(log["loss"])
    assert_all_changed(before, trainer.model)


# -- 6. a bug-fix run's exports -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bugfix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``bugfix_kit``'s run (the loop played by scripted fakes: the fake model makes no bug-fix task yet) and its
    sft, dpo and grpo exports, through the CLI."""
    from bugfix_kit import make_bugfix_run

    from spade_llm.cli.app import main

    base = tmp_path_factory.mktemp("trl-bugfix")
    run = make_bugfix_run(base / "run", backend=BACKEND)
    paths = {fmt: base / f"{fmt}.jsonl" for fmt in ("sft", "dpo", "grpo")}
    for fmt, path in paths.items():
        assert main(["export", str(run), "--format", fmt, "-o", str(path)]) == 0
    return {"run": run, **paths}


def test_a_bugfix_runs_exports_train_in_trl_and_the_bug_handed_back_earns_nothing(
    bugfix: dict[str, Path], sft_tokenizer: Any, qwen3_tokenizer: Any, judge: Rewarder, tmp_path: Path
) -> None:
    """SFT, DPO and GRPO steps on a bug-fix run's exports, as on the other kinds': the documented columns, the
    buggy code in every prompt. GRPO's two scripted completions per task, the fix and the buggy code handed back,
    are paid 1.0 and 0.0 by ``code_reward`` and by its partial-credit form alike (the bug passes some hidden
    tests: without the kind's rule partial credit would pay it)."""
    from trl import DPOConfig, DPOTrainer, GRPOConfig, GRPOTrainer

    sft, dpo, grpo = load_jsonl(bugfix["sft"]), load_jsonl(bugfix["dpo"]), load_jsonl(bugfix["grpo"])
    for ds, columns in ((sft, SFT_COLUMNS), (dpo, DPO_COLUMNS), (grpo, GRPO_COLUMNS)):
        assert set(ds.column_names) == columns and len(ds) > 0 and set(ds["kind"]) == {"bugfix"}
    rows = list(grpo)
    buggy = {r["task_id"]: parse_ground_truth(r["ground_truth"])[0].buggy_code or "" for r in rows}
    for r in rows:
        assert buggy[r["task_id"]].rstrip() in r["prompt"][-1]["content"]

    trainer = sft_trainer(sft_tokenizer, sft, tmp_path / "sft", max_length=512)
    before = snapshot(trainer.model)
    trainer.train()
    assert math.isfinite(step_log(trainer)["loss"])
    assert_all_changed(before, trainer.model)

    path = save_tiny(tmp_path / "tiny", sft_tokenizer)
    config = DPOConfig(output_dir=str(tmp_path / "dpo"), per_device_train_batch_size=2, max_length=1024, **CPU_ARGS)
    dpo_trainer: Any = DPOTrainer(model=str(path), args=config, train_dataset=dpo, processing_class=sft_tokenizer)
    assert len(dpo_trainer.train_dataset) == len(dpo)  # no pair dropped
    dpo_trainer.train()
    assert step_log(dpo_trainer)["loss"] == pytest.approx(math.log(2), abs=1e-4)

    # the reference is the fix (the ground truth of a bug fix holds no reference: it is read from the run)
    fixes = {t.task_id: f"```python\n{t.reference_code}```" for t in read_run(bugfix["run"]).tasks}
    handed_back = {task_id: f"```python\n{code}```" for task_id, code in buggy.items()}
    seen: dict[str, int] = {}

    def answer(prompt: str) -> str:  # a task's first rollout fixes the bug, its second hands it back
        task_id = row_of(prompt, rows)["task_id"]
        seen[task_id] = seen.get(task_id, 0) + 1
        return (fixes, handed_back)[(seen[task_id] - 1) % 2][task_id]

    partial = make_code_reward(partial_credit=True)
    tokenizer = copy.deepcopy(qwen3_tokenizer)
    grpo_config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        per_device_train_batch_size=8,
        num_generations=2,
        max_completion_length=256,
        **CPU_ARGS,
    )
    grpo_trainer: Any = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[code_reward, partial],
        args=grpo_config,
        train_dataset=grpo,
        processing_class=tokenizer,
    )
    with patch.object(grpo_trainer.model, "generate", side_effect=ScriptedGenerate(tokenizer, answer)):
        grpo_trainer.train()
    assert seen == dict.fromkeys(fixes, 2)
    completions = [completion_text(c) for c in grpo_trainer._logs["completion"]]
    want = [1.0 if text in fixes.values() else 0.0 for text in completions]
    assert sorted(want) == [0.0] * 4 + [1.0] * 4
    assert list(grpo_trainer._logs["rewards"]["code_reward"]) == want
    assert list(grpo_trainer._logs["rewards"]["code_reward_partial"]) == want
    task = parse_ground_truth(rows[0]["ground_truth"])[0]
    unrepaired = judge.run(task, buggy[rows[0]["task_id"]])
    assert unrepaired.tests_passed == 0 and unrepaired.load_error  # the kind's rule, not the bug's own verdicts
    assert math.isfinite(step_log(grpo_trainer)["loss"])
