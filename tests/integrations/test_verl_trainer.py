"""verl 0.9.1's own code on spade's ``verl`` exports, on CPU: its dataset, its config, its reward loop, its judge.

One fake run (``trainer_kit.make_exports``) is exported in every format. What ``python -m
verl.trainer.main_ppo`` does with it before any GPU is needed is run here with verl's own functions:

- **Config.** The ``main_ppo`` command lines of docs/training.md section 3 are read out of the docs
  (backslash continuations joined, ``key=value`` words kept, ``...`` dropped; the data, model and server
  values are the test's) and composed with hydra's compose API on verl's installed ``ppo_trainer``
  config, as ``main_ppo``'s ``@hydra.main`` composes them: struct mode, so a key verl does not have
  fails here as on the command line. ``validate_config`` (what ``main_ppo.main`` runs first) passes on
  them as written: the docs' lines hold the rollout and micro-batch keys it asks for.
- **Data.** ``verl.trainer.ppo.utils.create_rl_dataset`` builds ``RLHFDataset`` from the composed
  ``data`` config and the tokenizer verl loads itself (``HFModelConfig`` from
  ``actor_rollout_ref.model.path``: the kit's tokenizer saved with ``kit.save_tiny``); items go through
  ``collate_fn`` and ``DataProto.from_single_dict`` as the trainer's dataloader sends them.
- **Rollout.** In verl 0.9.1 ``RLHFDataset`` no longer tokenizes (its items carry ``raw_prompt``; "apply_chat_template
  has been moved to AgentLoop"). The agent loop (``verl.experimental.agent_loop``) cannot be imported
  with the ``verl`` extra (it needs ``cachetools``, which only verl's ``verl-core`` extra brings), and
  it needs a vLLM/SGLang server. So the rollout is the one seam: the prompt ids come from verl's own
  Continuous Token builder (``create_continuous_token_builder``, what ``SingleTurnAgentLoop`` calls),
  the "generated" ids are the tokenized answer and EOS, both padded as ``AgentLoopWorker._agent_loop_
  postprocess`` pads them (prompt left to ``rollout.prompt_length``, response right to
  ``rollout.response_length``), ``position_ids`` by verl's ``compute_position_id_with_mask``; the batch
  is ``DataProto.union``-ed onto the dataset's and ``DataProto.repeat``-ed as ``rollout.n`` repeats it.
- **Reward.** verl's ``RewardLoopWorker`` (the class ``RewardLoopManager`` runs as Ray actors; here it
  is built in-process, no Ray) loads the reward from the config through ``load_reward_manager`` /
  ``get_custom_reward_fn`` / ``load_extern_object`` (or, with no custom function, ``default_compute_score``
  bound to ``reward.sandbox_fusion``), and ``compute_score_batch`` scores the batch with the naive
  reward manager (decoding the valid response ids, calling the function with ``data_source``,
  ``solution_str``, ``ground_truth``, ``extra_info``); ``NaiveRewardManager.assemble_rm_scores`` makes
  ``rm_scores`` as ``RewardLoopManager.compute_rm_score`` does. Not run: Ray, the rollout server, the
  actor and critic workers (FSDP on GPUs).

Answers are the run's own: a task's passing answer is the final assistant message of its ``--final-only``
SFT row, a wrong one is the first failed attempt of the task in the run (its model text). verl's scores
must equal spade's own ``spade_llm.rewards.code.compute_score`` called directly. The SandboxFusion judge runs
against a real ``spade serve-sandbox`` (bwrap where it works, else the subprocess backend with
``--allow-unsafe``), and spade's reward on bwrap where it works, else on the subprocess backend.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_kit import (
    Exports,
    default_rewarder_on,
    export_texts,
    make_exports,
    need,
    read_jsonl,
    sandbox_backend,
    save_tiny,
    serve_sandbox,
    skip_unless_required,
    train_tokenizer,
)

from spade_llm import read_run
from spade_llm.kinds import get_kind
from spade_llm.rewards import code as rewards

pytestmark = [pytest.mark.verl, pytest.mark.slow]

VERL_VERSION = "0.9.1"
# verl's own code: pip install 'spade-selfplay[verl]' torch==2.13.0 (a skip, or a failure under
# SPADE_TEST_REQUIRE_TRAINERS: a module-level pytest.importorskip would skip silently there)
torch = need("torch", "verl")
need("verl", "verl")  # the full package: `pip install --no-deps verl` (the judge alone) cannot import it
if version("verl") != VERL_VERSION:
    skip_unless_required(f"verl {version('verl')} installed; these tests are pinned to verl {VERL_VERSION}")

BACKEND = sandbox_backend()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "training.md"
MAIN_PPO = ["python", "-m", "verl.trainer.main_ppo"]
PARTIAL = "+reward.custom_reward_function.reward_kwargs.partial_credit=true"
"""docs/training.md: "pays the fraction of tests passed"."""
ASYNC = "name=compute_score_async"
"""docs/training.md: "for verl's async reward loop" (the ``reward.custom_reward_function.name`` key)."""
LEGACY_ERROR = "NotImplementedError: Reward function is not implemented for data_source='spade_llm'"


# -- the docs ---------------------------------------------------------------------------------------


def verl_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("## 3. verl")
    return text[start : text.index("\n## 4.", start)]


def says(section: str, text: str) -> bool:
    """Whether the section's prose holds ``text`` (line breaks read as spaces)."""
    return text in " ".join(section.split())


def main_ppo_commands(section: str) -> list[list[str]]:
    """The ``key=value`` words of each ``python -m verl.trainer.main_ppo`` line of the section's code blocks."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[: len(MAIN_PPO)] == MAIN_PPO:
                overrides = [w for w in words[len(MAIN_PPO) :] if w != "..."]
                assert all(re.fullmatch(r"\+?[\w.]+=\S+", w) for w in overrides), overrides
                commands.append(overrides)
    return commands


def docs_command(section: str, which: int) -> list[str]:
    """The docs' ``which``-th main_ppo command: 0 with spade's reward function, 1 live from serve-env (the
    ``spade_env`` agent loop), 2 with verl's SandboxFusion judge."""
    commands = main_ppo_commands(section)
    assert len(commands) == 3, commands
    return commands[which]


def ours(command: list[str], data: Path, model: Path, values: dict[str, str] | None = None) -> list[str]:
    """``command`` with the test's data files and model path (set whether the docs give them or leave
    them to ``...``), and ``values`` (``{"reward.sandbox_fusion.url": ...}``) in place of the docs' own."""
    mine = {"data.train_files": str(data), "data.val_files": str(data), "actor_rollout_ref.model.path": str(model)}
    for key, value in (values or {}).items():
        assert any(w.split("=", 1)[0] == key for w in command), (key, command)  # the docs set it
        mine[key] = value
    kept = [w for w in command if w.split("=", 1)[0] not in mine]
    return kept + [f"{k}={v}" for k, v in mine.items()]


def compose_main_ppo(overrides: Sequence[str]) -> Any:
    """verl's ``ppo_trainer`` config with ``overrides``, composed as ``main_ppo``'s ``@hydra.main`` does."""
    import verl.trainer.main_ppo as main_ppo
    from hydra import compose, initialize_config_dir

    assert '@hydra.main(config_path="config", config_name="ppo_trainer"' in inspect.getsource(main_ppo)
    config_dir = Path(main_ppo.__file__).parent / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None, job_name="main_ppo"):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def assert_composed(config: Any, overrides: Sequence[str]) -> None:
    """Every override's value is the config's, parsed as hydra parses it."""
    from omegaconf import OmegaConf

    for word in overrides:
        key, value = word.lstrip("+").split("=", 1)
        assert OmegaConf.select(config, key) == yaml.safe_load(value), word


# -- verl's machinery, run in-process -----------------------------------------------------------------


@contextmanager
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop of its own, current while verl's reward workers are built (they keep ``get_event_loop()``)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        asyncio.set_event_loop(None)
        loop.close()


def custom_reward(config: Any) -> functools.partial[Any]:
    """The reward function verl's ``get_custom_reward_fn`` loads from ``config`` (a partial binding its kwargs)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    loaded = get_custom_reward_fn(config)
    assert isinstance(loaded, functools.partial), loaded
    return loaded


def model_config(config: Any) -> Any:
    """``HFModelConfig`` of ``actor_rollout_ref.model``: the trainer's ``_init_tokenizer``."""
    from verl.utils.config import omega_conf_to_dataclass

    return omega_conf_to_dataclass(config.actor_rollout_ref.model)


def rl_dataset(config: Any) -> Any:
    """verl's dataset of ``data.train_files``, as the trainer's ``_init_dataloader`` makes it."""
    from verl.trainer.ppo.utils import create_rl_dataset

    model = model_config(config)
    return create_rl_dataset(config.data.train_files, config.data, model.tokenizer, model.processor, is_train=True)


def dataset_batch(dataset: Any) -> Any:
    """Every item of ``dataset`` as the trainer's dataloader hands them over: ``collate_fn``, then a DataProto."""
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))


def padded(ids: list[int], length: int, pad: int, *, left: bool) -> tuple[list[int], list[int]]:
    """``ids`` padded to ``length`` on one side, and its attention mask."""
    fill, mask = [pad] * (length - len(ids)), [1] * len(ids)
    return (fill + ids, [0] * len(fill) + mask) if left else (ids + fill, mask + [0] * len(fill))


def rollout(config: Any, dataset: Any, answers: Sequence[Sequence[str]]) -> Any:
    """The dataset's batch with a rollout of ``answers[i]`` (one per sample, ``DataProto.repeat``) for item i,
    tokenized and padded as verl's single-turn agent loop does (module docstring)."""
    from verl import DataProto
    from verl.utils.model import compute_position_id_with_mask
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    model = model_config(config)
    tokenizer, shape = model.tokenizer, config.actor_rollout_ref.rollout
    builder = create_continuous_token_builder(
        tokenizer,
        hf_model_type=model.hf_config.model_type,
        chat_template_kwargs=dict(config.data.apply_chat_template_kwargs),
        processor=model.processor,
    )
    n = len(answers[0])
    batch = dataset_batch(dataset).repeat(repeat_times=n, interleave=True)
    prompts, prompt_mask, responses, response_mask = [], [], [], []
    for i, raw_prompt in enumerate(batch.non_tensor_batch["raw_prompt"]):
        prompt_ids = builder.build_initial_tokens(list(raw_prompt))
        answer_ids = [*tokenizer.encode(answers[i // n][i % n], add_special_tokens=False), tokenizer.eos_token_id]
        merged = builder.merge_assistant_tokens(prompt_ids, answer_ids)
        assert merged.token_ids == prompt_ids + answer_ids
        # what the naive reward manager will decode the response to: the answer, untouched
        assert tokenizer.decode(answer_ids, skip_special_tokens=True) == answers[i // n][i % n]
        assert len(prompt_ids) <= shape.prompt_length and len(answer_ids) <= shape.response_length  # no truncation
        ids, mask = padded(prompt_ids, shape.prompt_length, tokenizer.pad_token_id, left=True)
        prompts.append(ids)
        prompt_mask.append(mask)
        ids, mask = padded(answer_ids, shape.response_length, tokenizer.pad_token_id, left=False)
        responses.append(ids)
        response_mask.append(mask)
    p, r = torch.tensor(prompts), torch.tensor(responses)
    attention_mask = torch.cat([torch.tensor(prompt_mask), torch.tensor(response_mask)], dim=1)
    generated = DataProto.from_dict(
        tensors={
            "prompts": p,
            "responses": r,
            "response_mask": torch.tensor(response_mask),
            "input_ids": torch.cat([p, r], dim=1),
            "attention_mask": attention_mask,
            "position_ids": compute_position_id_with_mask(attention_mask),
        }
    )
    return batch.union(generated)


def reward_loop(config: Any, batch: Any) -> tuple[Any, list[dict[str, Any]], Any]:
    """verl's reward loop worker built from ``config`` (no Ray) and what it makes of ``batch``:
    (its reward manager, one ``{"reward_score", "reward_extra_info"}`` per row, ``rm_scores``)."""
    from verl.experimental.reward_loop import RewardLoopWorker

    with event_loop() as loop:
        worker = RewardLoopWorker(config)
        outputs = loop.run_until_complete(worker.compute_score_batch(batch))
    manager = worker.reward_manager
    rm_scores = type(manager).assemble_rm_scores(batch, [o["reward_score"] for o in outputs])
    return manager, outputs, rm_scores


def assert_rm_scores(batch: Any, rm_scores: Any, scores: Sequence[float]) -> None:
    """One reward per row, on its last response token (EOS), as verl's advantage estimators read it."""
    lengths = batch.batch["attention_mask"][:, batch.batch["prompts"].size(1) :].sum(dim=1)
    assert rm_scores.shape == batch.batch["responses"].shape
    for row, length, score in zip(rm_scores, lengths.tolist(), scores, strict=True):
        assert row[length - 1].item() == pytest.approx(score)
        assert row.sum().item() == pytest.approx(score)


# -- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    return make_exports(tmp_path_factory.mktemp("verl-exports"))


@pytest.fixture(scope="module")
def model_dir(exports: Exports, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit's tiny Qwen3 and its tokenizer (Qwen2.5's chat template), saved: ``actor_rollout_ref.model.path``."""
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = train_tokenizer(export_texts(exports), qwen2_5_chat_template)
    return save_tiny(tmp_path_factory.mktemp("tiny-qwen3"), tokenizer)


@pytest.fixture(scope="module")
def section() -> str:
    return verl_section()


@pytest.fixture(scope="module")
def judge() -> Iterator[rewards.Rewarder]:
    """The default rewarder, on the tests' backend (``trainer_kit.default_rewarder_on``)."""
    with default_rewarder_on(BACKEND) as box:
        yield box


@pytest.fixture(scope="module")
def rows(exports: Exports) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    found: list[dict[str, Any]] = pq.read_table(exports.verl).to_pylist()
    assert found and {r["data_source"] for r in found} == {"spade_llm"}
    return found


@pytest.fixture(scope="module")
def passing(exports: Exports) -> dict[str, str]:
    """A passing answer per task id: the final assistant message of its ``--final-only`` SFT row, or for a
    task no attempt passed (the verl export holds every task, the SFT one only those solved) the kind's
    reference answer, in a code block as a model writes it."""
    answers: dict[str, str] = {}
    for row in read_jsonl(exports.sft_final):
        answers.setdefault(row["task_id"], row["messages"][-1]["content"])
    for task in read_run(exports.run).tasks:
        answer = get_kind(task.kind).reference_answer(task)
        answers.setdefault(task.task_id, answer if answer.startswith("```") else f"```python\n{answer}\n```")
    return answers


@pytest.fixture(scope="module")
def failing(exports: Exports) -> dict[str, str]:
    """A wrong answer per task id: the model's text of the task's first attempt in the run that failed a test."""
    answers: dict[str, str] = {}
    for trajectory in read_run(exports.run).trajectories:
        for attempt in trajectory.attempts:
            hidden = attempt.hidden_passed
            if attempt.public_passed < attempt.public_total or hidden is None or hidden < attempt.hidden_total:
                answers.setdefault(trajectory.task_id, attempt.raw)
    return answers


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``spade serve-sandbox`` on a free loopback port."""
    with serve_sandbox(tmp_path_factory.mktemp("serve") / "stderr.log", BACKEND) as found:
        yield found


# -- the tests --------------------------------------------------------------------------------------


def test_rlhf_dataset_loads_the_verl_export(
    exports: Exports, model_dir: Path, section: str, rows: list[dict[str, Any]]
) -> None:
    """``RLHFDataset`` on the docs' data config: one item per row, the row's messages as ``raw_prompt``, its
    ground truth and data source through collate and DataProto; the agent loop's tokenization of that
    prompt is the chat template's, padded to ``rollout.prompt_length``; verl's length filter counts tokens
    through the chat template."""
    from omegaconf import OmegaConf

    command = docs_command(section, 0)
    config = compose_main_ppo(ours(command, exports.verl, model_dir))
    model = model_config(config)
    tokenizer = model.tokenizer
    assert model.hf_config.model_type == "qwen3" and model.processor is None
    assert "<|im_start|>" in tokenizer.chat_template  # the kit's, loaded back by verl

    dataset = rl_dataset(config)
    assert len(dataset) == len(rows)
    for i, row in enumerate(rows):
        item = dataset[i]
        assert item["raw_prompt"] == row["prompt"] and item["prompt"] == row["prompt"]
        assert item["data_source"] == row["data_source"] == "spade_llm"
        assert item["reward_model"] == row["reward_model"] and item["reward_model"]["style"] == "rule"
        assert item["extra_info"] == row["extra_info"] and item["index"] == row["extra_info"]["index"]
        assert item["ability"] == "code"
    batch = dataset_batch(dataset)
    for key in ("data_source", "reward_model", "extra_info", "raw_prompt", "index"):
        assert len(batch.non_tensor_batch[key]) == len(rows), key
    assert [r["ground_truth"] for r in batch.non_tensor_batch["reward_model"]] == [
        r["reward_model"]["ground_truth"] for r in rows
    ]
    assert list(batch.non_tensor_batch["data_source"]) == [r["data_source"] for r in rows]

    # the prompt as the rollout sees it: input_ids/attention_mask of the configured length
    length = config.actor_rollout_ref.rollout.prompt_length
    # the docs' value; the rollout's is ${oc.select:data.max_prompt_length,512}
    assert length == config.data.max_prompt_length == 2048
    answers = [["```python\npass\n```"] for _ in rows]
    generated = rollout(config, dataset, answers).batch
    assert generated["prompts"].shape == (len(rows), length)
    width = length + config.actor_rollout_ref.rollout.response_length
    assert generated["input_ids"].shape == generated["attention_mask"].shape == (len(rows), width)
    for i, row in enumerate(rows):
        mask = generated["attention_mask"][i, :length]
        ids = generated["prompts"][i][mask.bool()].tolist()
        assert mask[-1] == 1 and mask.tolist() == sorted(mask.tolist())  # left padded
        want = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        assert tokenizer.decode(ids) == want
        assert generated["input_ids"][i, :length].tolist() == generated["prompts"][i].tolist()

    # verl's own length filter tokenizes through the chat template: rows over the limit are dropped
    lengths = [
        len(tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True)["input_ids"])
        for r in rows
    ]
    limit = sorted(lengths)[len(lengths) // 2]
    keys = ["data.filter_overlong_prompts=true", f"data.max_prompt_length={limit}"]
    filtered = compose_main_ppo(ours(command, exports.verl, model_dir) + keys)
    assert OmegaConf.select(filtered, "actor_rollout_ref.rollout.prompt_length") == limit
    kept = rl_dataset(filtered)
    assert 0 < len(kept) == sum(n <= limit for n in lengths) < len(rows)
    assert [kept[i]["extra_info"]["task_id"] for i in range(len(kept))] == [
        r["extra_info"]["task_id"] for r, n in zip(rows, lengths, strict=True) if n <= limit
    ]


def test_docs_reward_keys_load_spades_compute_score_through_verls_loader(
    exports: Exports, model_dir: Path, section: str
) -> None:
    """The docs' first main_ppo line composes on verl 0.9.1's struct config and passes ``validate_config``
    as written; ``get_custom_reward_fn`` (via ``load_extern_object``, what
    ``load_reward_manager`` calls for the reward loop) then gives spade's ``compute_score``, with the docs'
    ``reward_kwargs`` bound when given, and ``compute_score_async`` under the docs' other name."""
    from hydra.errors import ConfigCompositionException
    from verl.experimental.reward_loop.reward_manager import NaiveRewardManager
    from verl.trainer.ppo import reward as verl_reward
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    command = docs_command(section, 0)
    overrides = ours(command, exports.verl, model_dir)
    config = compose_main_ppo(overrides)
    assert_composed(config, overrides)
    # what main_ppo.main checks first, before Ray and the workers
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    with pytest.raises(ConfigCompositionException):  # a key verl lacks fails, as on the command line
        compose_main_ppo([*overrides, "reward.custom_reward_function.no_such_key=1"])

    loaded = custom_reward(config)
    assert loaded.func is verl_reward._call_with_kwargs
    assert loaded.args == (rewards.compute_score, {})
    assert not inspect.iscoroutinefunction(loaded)

    # +reward.custom_reward_function.reward_kwargs.partial_credit=true, as the docs write it (with its +:
    # reward_kwargs is not in verl's reward config)
    assert says(section, f"`{PARTIAL}`")
    partial = compose_main_ppo([*overrides, PARTIAL])
    assert_composed(partial, [PARTIAL])
    assert custom_reward(partial).args == (rewards.compute_score, {"partial_credit": True})
    with pytest.raises(ConfigCompositionException):
        compose_main_ppo([*overrides, PARTIAL.lstrip("+")])

    # name=compute_score_async: verl wraps a coroutine function so its reward managers await it
    assert says(section, f"`{ASYNC}`")
    name = {"reward.custom_reward_function.name": ASYNC.split("=", 1)[1]}
    asynchronous = compose_main_ppo(ours(command, exports.verl, model_dir, name))
    loaded = custom_reward(asynchronous)
    assert loaded.func is verl_reward._call_with_kwargs_async
    assert loaded.args == (rewards.compute_score_async, {}) and inspect.iscoroutinefunction(loaded)

    # the reward loop's worker loads it the same way, into the naive reward manager (reward.reward_manager's default)
    with event_loop():
        manager = verl_reward.load_reward_manager(partial, model_config(partial).tokenizer)
    assert type(manager) is NaiveRewardManager and not manager.is_async_reward_score
    assert isinstance(manager.compute_score, functools.partial)
    assert manager.compute_score.args == (rewards.compute_score, {"partial_credit": True})


def test_legacy_top_level_keys_are_accepted_but_never_read(
    exports: Exports, model_dir: Path, section: str, rows: list[dict[str, Any]], passing: dict[str, str]
) -> None:
    """The docs' claims about older verl's keys: ``custom_reward_function.path=...`` at the top level still
    composes on 0.9.1 (legacy_reward_impl.yaml keeps it) but ``main_ppo`` never reads it (only the fully
    async entry point migrates it), so the reward loop falls back to ``default_compute_score``, which raises
    the docs' NotImplementedError on data_source 'spade_llm'. The old ``reward_model.sandbox_fusion`` keys
    fail to compose with the error the docs quote."""
    import verl
    from hydra.errors import ConfigCompositionException
    from verl.trainer.ppo import reward as verl_reward
    from verl.utils.reward_score import default_compute_score

    assert says(section, "(`custom_reward_function.path=...`, `+custom_reward_function.reward_kwargs...`)")
    assert says(section, f"`{LEGACY_ERROR}`")
    command = docs_command(section, 0)
    legacy = [w.replace("reward.custom_reward_function.", "custom_reward_function.", 1) for w in command]
    legacy = [*ours(legacy, exports.verl, model_dir), "+custom_reward_function.reward_kwargs.partial_credit=true"]
    config = compose_main_ppo(legacy)
    assert config.custom_reward_function.path == "pkg://spade_llm.rewards"
    assert config.custom_reward_function.reward_kwargs == {"partial_credit": True}
    assert config.reward.custom_reward_function.path is None
    assert verl_reward.get_custom_reward_fn(config) is None

    # nothing main_ppo runs moves the legacy keys under reward.: the migration's one caller is fully_async_main
    root = Path(verl.__file__).parent
    callers = {
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"(?<!def )migrate_legacy_reward_impl\(", p.read_text(encoding="utf-8"))
    }
    assert callers == {"experimental/fully_async_policy/fully_async_main.py"}, callers

    dataset = rl_dataset(config)
    batch = rollout(config, dataset, [[passing[r["extra_info"]["task_id"]]] for r in rows])
    with pytest.raises(NotImplementedError) as raised:
        reward_loop(config, batch[:1])
    assert f"NotImplementedError: {raised.value}" == LEGACY_ERROR
    with pytest.raises(NotImplementedError):
        default_compute_score("spade_llm", passing[rows[0]["extra_info"]["task_id"]], "{}")

    # before verl 0.7.1 the judge's keys were reward_model.sandbox_fusion.*
    assert says(section, "(from 0.7.1 on that fails: `Key 'sandbox_fusion' is not in struct`)")
    with pytest.raises(ConfigCompositionException) as failed:
        compose_main_ppo(["reward_model.sandbox_fusion.url=http://127.0.0.1:8080/run_code"])
    assert "Key 'sandbox_fusion' is not in struct" in str(failed.value.__cause__)


@pytest.mark.usefixtures("judge")
def test_verls_reward_loop_pays_spades_verdicts(
    exports: Exports,
    model_dir: Path,
    section: str,
    rows: list[dict[str, Any]],
    passing: dict[str, str],
    failing: dict[str, str],
) -> None:
    """Every row of the verl export, rolled out twice (its passing answer, then a failed attempt of the run),
    scored by verl's reward loop worker with the docs' keys: the reference 1.0, the wrong answer 0.0, and
    every ``reward_extra_info`` exactly spade's own ``compute_score`` on the same text, for
    ``compute_score``, with the docs' partial credit, and for ``compute_score_async``. ``rm_scores`` holds
    each score on its response's last token."""
    task_ids = [r["extra_info"]["task_id"] for r in rows]
    assert set(task_ids) <= set(passing) and set(task_ids) <= set(failing)
    answers = [[passing[t], failing[t]] for t in task_ids]
    command = docs_command(section, 0)
    name = "reward.custom_reward_function.name"
    variants = {
        "compute_score": ours(command, exports.verl, model_dir),
        "partial credit": [*ours(command, exports.verl, model_dir), PARTIAL],
        "compute_score_async": ours(command, exports.verl, model_dir, {name: ASYNC.split("=", 1)[1]}),
    }
    got: dict[str, list[dict[str, Any]]] = {}
    for what, overrides in variants.items():
        config = compose_main_ppo(overrides)
        batch = rollout(config, rl_dataset(config), answers)
        manager, outputs, rm_scores = reward_loop(config, batch)
        assert manager.is_async_reward_score == (what == "compute_score_async"), what
        assert_rm_scores(batch, rm_scores, [o["reward_score"] for o in outputs])
        assert all(o["reward_score"] == o["reward_extra_info"]["score"] for o in outputs), what
        got[what] = [o["reward_extra_info"] for o in outputs]

    def spade(row: dict[str, Any], answer: str, partial: bool) -> dict[str, Any]:
        truth = row["reward_model"]["ground_truth"]
        return rewards.compute_score(row["data_source"], answer, truth, row["extra_info"], partial_credit=partial)

    for partial_credit, what in ((False, "compute_score"), (True, "partial credit"), (False, "compute_score_async")):
        want = [spade(row, answer, partial_credit) for row, pair in zip(rows, answers, strict=True) for answer in pair]
        assert got[what] == want, what
    binary = [info["score"] for info in got["compute_score"]]
    assert binary == [1.0, 0.0] * len(rows)
    assert {info["status"] for info in got["compute_score"][::2]} == {"passed"}
    assert all(info["tests_passed"] == info["tests_total"] for info in got["compute_score"][::2])
    fractions = [info["score"] for info in got["partial credit"][1::2]]
    assert any(0.0 < f < 1.0 for f in fractions), fractions  # partial credit is applied
    assert [info["score"] for info in got["partial credit"][::2]] == [1.0] * len(rows)


@pytest.mark.usefixtures("judge")
def test_verls_sandbox_fusion_judge_over_serve_sandbox_with_the_docs_keys(
    exports: Exports,
    model_dir: Path,
    section: str,
    rows: list[dict[str, Any]],
    passing: dict[str, str],
    url: str,
) -> None:
    """The docs' second main_ppo line (``reward.sandbox_fusion.url``/``max_concurrent=1``) with the live
    server's URL: with no custom reward function, verl's ``load_reward_manager`` binds
    ``default_compute_score`` to the config's URL, a semaphore of ``max_concurrent`` and
    ``memory_limit_mb``, and its reward loop routes the ``codecontests`` rows of the ``--verl-reward
    sandbox_fusion`` export to verl's SandboxFusion judge over ``spade serve-sandbox``: the reference
    answer 1.0, one that raises 0.0, as spade's own verdict on the same task and text."""
    import pyarrow.parquet as pq
    from verl.utils.reward_score import default_compute_score

    command = docs_command(section, 2)
    overrides = ours(command, exports.verl_sandbox_fusion, model_dir, {"reward.sandbox_fusion.url": url})
    config = compose_main_ppo(overrides)
    assert_composed(config, overrides)
    assert config.reward.sandbox_fusion.memory_limit_mb == 1024 and config.reward.num_workers == 8  # as the docs say
    assert says(section, "`reward.num_workers` of them (8 by default)")

    sf_rows = pq.read_table(exports.verl_sandbox_fusion).to_pylist()
    assert sf_rows and {r["data_source"] for r in sf_rows} == {"codecontests"}
    assert {r["extra_info"]["kind"] for r in sf_rows} == {"induction", "program"}  # programs judged on their stdin
    spade_truth = {r["extra_info"]["task_id"]: r["reward_model"]["ground_truth"] for r in rows}
    answers = []
    for row in sf_rows:
        entry_point = json.loads(row["reward_model"]["ground_truth"]).get("fn_name")  # none: a whole program
        body = "raise ValueError('wrong')\n"
        if entry_point:
            body = f"def {entry_point}(*args):\n    " + body
        raises = f"```python\n{body}```"
        answers.append([passing[row["extra_info"]["task_id"]], raises])

    dataset = rl_dataset(config)
    assert len(dataset) == len(sf_rows)
    batch = rollout(config, dataset, answers)
    manager, outputs, rm_scores = reward_loop(config, batch)
    bound = manager.compute_score
    semaphore = bound.keywords["concurrent_semaphore"]
    try:  # multiprocessing.Manager().Semaphore(max_concurrent): max_concurrent requests at once
        limit = config.reward.sandbox_fusion.max_concurrent
        assert [semaphore.acquire(False) for _ in range(limit + 1)] == [True] * limit + [False]
        for _ in range(limit):
            semaphore.release()
    finally:
        semaphore._manager.shutdown()  # the manager process load_reward_manager started for it
    assert bound.func is default_compute_score and not bound.args
    assert bound.keywords["sandbox_fusion_url"] == url and bound.keywords["memory_limit_mb"] == 1024
    scores = [o["reward_score"] for o in outputs]
    assert scores == [1.0, 0.0] * len(sf_rows)
    assert [o["reward_extra_info"] for o in outputs] == [{"acc": s} for s in scores]
    assert_rm_scores(batch, rm_scores, scores)
    spade = [
        rewards.compute_score("spade_llm", answer, spade_truth[row["extra_info"]["task_id"]])["score"]
        for row, pair in zip(sf_rows, answers, strict=True)
        for answer in pair
    ]
    assert spade == scores


# -- a bug-fix run's export ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bugfix(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """``bugfix_kit``'s run (the loop played by scripted fakes: the fake model makes no bug-fix task yet), its
    verl export and its ``--verl-reward sandbox_fusion`` export, through the CLI."""
    from bugfix_kit import make_bugfix_run

    from spade_llm.cli.app import main

    base = tmp_path_factory.mktemp("verl-bugfix")
    run = make_bugfix_run(base / "run", backend=BACKEND)
    spade, fusion = base / "verl.parquet", base / "verl_sf.parquet"
    assert main(["export", str(run), "--format", "verl", "-o", str(spade)]) == 0
    assert main(["export", str(run), "--format", "verl", "--verl-reward", "sandbox_fusion", "-o", str(fusion)]) == 0
    return run, spade, fusion


@pytest.mark.usefixtures("judge")
def test_a_bugfix_runs_export_loads_in_verl_and_its_reward_loop_refuses_the_bug_handed_back(
    bugfix: tuple[Path, Path, Path], model_dir: Path, section: str
) -> None:
    """The docs' first main_ppo line on a bug-fix run's verl export: ``RLHFDataset`` loads every row, the buggy
    code in its prompt; verl's reward loop pays the fix 1.0 and the buggy code handed back 0.0, with the docs'
    partial credit too (the bug passes some hidden tests), each exactly spade's ``compute_score``. verl's own
    judges, which read the tests alone, are given no row (the sandbox_fusion export is empty)."""
    import pyarrow.parquet as pq

    run, spade, fusion = bugfix
    assert pq.read_table(fusion).num_rows == 0
    found = pq.read_table(spade).to_pylist()
    tasks = {t.task_id: t for t in read_run(run).tasks}
    assert len(found) == len(tasks) == 4 and {r["extra_info"]["kind"] for r in found} == {"bugfix"}
    answers = []
    for row in found:
        task = tasks[row["extra_info"]["task_id"]]
        assert task.buggy_code is not None and task.buggy_code.rstrip() in row["prompt"][-1]["content"]
        answers.append([f"```python\n{task.reference_code}```", f"```python\n{task.buggy_code}```"])
    command = docs_command(section, 0)
    for partial in (False, True):
        config = compose_main_ppo([*ours(command, spade, model_dir), *([PARTIAL] if partial else [])])
        dataset = rl_dataset(config)
        assert len(dataset) == len(found)
        assert [dataset[i]["raw_prompt"] for i in range(len(dataset))] == [r["prompt"] for r in found]
        batch = rollout(config, dataset, answers)
        _, outputs, rm_scores = reward_loop(config, batch)
        scores = [o["reward_score"] for o in outputs]
        assert scores == [1.0, 0.0] * len(found), partial
        assert_rm_scores(batch, rm_scores, scores)
        want = [
            rewards.compute_score(
                row["data_source"], answer, row["reward_model"]["ground_truth"], partial_credit=partial
            )
            for row, pair in zip(found, answers, strict=True)
            for answer in pair
        ]
        assert [o["reward_extra_info"] for o in outputs] == want
        assert {w["status"] for w in want[1::2]} == {"error"}  # the kind's rule: the bug handed back
