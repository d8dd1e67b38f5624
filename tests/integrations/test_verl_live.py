"""verl's agent loop on live ``spade serve-env`` episodes: the ``spade_env`` loop, run by verl 0.9.1's own
``AgentLoopWorker`` on CPU.

What ``main_ppo`` runs for a rollout step, in-process and without Ray: the config composed from verl's
``ppo_trainer`` with the keys docs/training.md gives (the agent loop file ``write_live_files`` writes, its
rows as ``data.train_files``), verl's dataset and ``collate_fn``, a ``uid`` per prompt and
``DataProto.repeat(rollout.n, interleave=True)`` as ``RayPPOTrainer.fit`` does, then
``AgentLoopWorker.generate_sequences``: verl's registry and hydra instantiate the loop from the file, run it
per row, pad, and put its reward on the last response token (``rm_scores``). The rollout server is the one
seam: verl's ``LLMServerClient`` asks Ray-held vLLM replicas for tokens; here its ``generate`` sends the
conversation to an OpenAI-compatible server (``spade serve-fake`` with a scripted backend that answers each
task with its reference solution or a wrong function) and tokenizes the reply, as vLLM's chat path would.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from trainer_kit import need, save_tiny, train_tokenizer

torch = need("torch", "verl")
need("verl", "verl")
need("openenv", "env")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from serve_env_kit import NotedClients, ServeEnv  # noqa: E402
from test_trl_live import served_task, wrong_code  # noqa: E402
from test_verifiers_env import Scripted  # noqa: E402
from test_verl_trainer import (  # noqa: E402
    assert_composed,
    compose_main_ppo,
    docs_command,
    event_loop,
    model_config,
    ours,
    rl_dataset,
    verl_section,
)
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage  # noqa: E402
from verl.trainer.ppo.reward import extract_reward  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import validate_config  # noqa: E402
from verl.workers.rollout.llm_server import LLMServerClient  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from spade_llm import read_run  # noqa: E402
from spade_llm.integrations import verl_loop as verl_live  # noqa: E402
from spade_llm.types import Task  # noqa: E402
from spade_llm.verl import main as verl_main  # noqa: E402

pytestmark = [pytest.mark.verl, pytest.mark.env, pytest.mark.slow]

TURN = re.compile(r"<\|im_start\|>(system|user|assistant)\n(.*?)<\|im_end\|>", re.DOTALL)


class ChatServerClient(LLMServerClient):
    """verl's client of its rollout servers, its ``generate`` asking an OpenAI-compatible server instead: the
    prompt's turns (the chat template's ``<|im_start|>role`` blocks) as a chat request, the reply tokenized."""

    def __init__(self, config: Any, base_url: str, tokenizer: Any) -> None:
        super().__init__(config)
        self.base_url, self.tokenizer = base_url, tokenizer

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: Any, **_: Any) -> Any:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        messages = [{"role": role, "content": content} for role, content in TURN.findall(text)]
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.post(
                f"{self.base_url}/chat/completions", json={"model": "default", "messages": messages}
            )
        reply = str(answer.raise_for_status().json()["choices"][0]["message"]["content"])
        ids = [*self.tokenizer.encode(reply, add_special_tokens=False), self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids)


def half_right(run: Path) -> Callable[[list[dict[str, str]]], str]:
    """The scripted policy: per task, the first two rollouts answer with its reference, the others with a
    wrong function, at every turn (a rollout is told by its first answer)."""
    started: dict[str, int] = {}

    def answer(messages: list[dict[str, str]]) -> str:
        task = task_shown(run, messages[1]["content"])
        earlier = [m["content"] for m in messages if m["role"] == "assistant"]
        if earlier:  # the same rollout's later turn: as it began
            right = task.reference_code in earlier[0]
        else:
            started[task.task_id] = started.get(task.task_id, 0) + 1
            right = started[task.task_id] <= 2
        return f"```python\n{task.reference_code if right else wrong_code(task)}```"

    return answer


def task_shown(run: Path, opening: str) -> Task:
    """The run's task whose description opens the episode."""
    for line in (run / "tasks.jsonl").read_text().splitlines():
        task = Task.model_validate_json(line)
        if task.description in opening:
            return served_task(run, task.task_id)
    raise AssertionError(f"no task of the run in {opening[:200]!r}")


def wait_for_epoch(run: Path, epoch: int, timeout: float = 60) -> None:
    """Until the run has accepted a task of ``epoch``: what a trainer's update step between two rollout
    steps gives the server time to do."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f'"task_id":"e{epoch}-' in (run / "tasks.jsonl").read_text():
            return
        time.sleep(0.2)
    raise AssertionError(f"epoch {epoch} has no task after {timeout} s")


def test_verl_rollouts_of_one_prompt_play_one_task_over_three_steps_and_an_epoch(
    tmp_path: Path, fake_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trl.chat_template_utils import qwen2_5_chat_template
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    run = tmp_path / "run"
    server = ServeEnv(["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "4", "--seed", "0",
                       "--out", str(run)])  # fmt: skip
    noted = NotedClients().watch(monkeypatch, verl_live)
    try:
        # the docs' commands: python -m spade_llm.verl, then main_ppo's keys (lengths the test's, for the tiny
        # tokenizer's long token lists), checked as main_ppo.main checks them first
        assert verl_main(["--url", server.url, "-o", str(tmp_path / "live"), "--rows", "6"]) == 0
        data, loops = tmp_path / "live" / "live.parquet", tmp_path / "live" / "agent_loops.yaml"
        system = "You are an expert Python programmer."
        tokenizer = train_tokenizer([system, "def f(x):\n    return x + 1\n", "public tests passed"] * 20,
                                    qwen2_5_chat_template)  # fmt: skip
        model = save_tiny(tmp_path / "tiny", tokenizer)
        lengths = ("actor_rollout_ref.rollout.prompt_length", "actor_rollout_ref.rollout.response_length")
        values = {key: "8192" for key in (*lengths, "data.max_prompt_length")}
        values["actor_rollout_ref.rollout.agent.agent_loop_config_path"] = str(loops)
        values["actor_rollout_ref.rollout.n"] = "4"  # groups of 4: the server's --samples-per-task
        overrides = ours(docs_command(verl_section(), 1), data, model, values)
        config = compose_main_ppo(overrides)
        assert_composed(config, overrides)
        validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
        chat = fake_server(backend=Scripted(half_right(run)))
        dataset = rl_dataset(config)
        assert len(dataset) == 6 and model_config(config).tokenizer is not None
        steps: list[Any] = []
        n = config.actor_rollout_ref.rollout.n  # as RayPPOTrainer.fit repeats a batch
        with event_loop() as loop:
            worker = AgentLoopWorker(config, llm_client=ChatServerClient(config, chat.url, tokenizer))
            for step in range(3):
                if step:
                    wait_for_epoch(run, step)
                batch = DataProto.from_single_dict(collate_fn([dataset[2 * step], dataset[2 * step + 1]]))
                batch.non_tensor_batch["uid"] = np.array([str(uuid4()) for _ in range(len(batch))], dtype=object)
                generated = loop.run_until_complete(worker.generate_sequences(batch.repeat(n, interleave=True)))
                steps.append(generated)
        assert server.stop() == 0, server.stderr
    finally:
        server.kill()

    records = read_run(run)
    status = {t.trajectory_id: t.final_status for t in records.trajectories}
    epoch_of = {t.task_id: int(t.meta["epoch"]) for t in records.tasks}
    epochs = set()
    for generated in steps:
        extra, uids = generated.non_tensor_batch, generated.non_tensor_batch["uid"]
        assert len(uids) == 8
        tasks_of = {uid: {extra["spade_task_id"][i] for i in range(8) if uids[i] == uid} for uid in set(uids)}
        assert all(len(ids) == 1 for ids in tasks_of.values()), tasks_of  # a prompt's 4 rollouts: one task
        assert len({next(iter(ids)) for ids in tasks_of.values()}) == 2  # two prompts, two tasks
        epochs |= {epoch_of[str(t)] for t in extra["spade_task_id"]}
        scores = generated.batch["rm_scores"].sum(dim=1).tolist()
        for i in range(8):
            trajectory = str(extra["spade_trajectory_id"][i])
            passed = status[trajectory] == "passed"
            # one reward: verl's is the server's, 1.0 or 0.0
            assert scores[i] == (1.0 if passed else 0.0) == noted.finals[trajectory], (i, status[trajectory])
            assert extra["acc"][i] == float(passed)
        for uid, ids in tasks_of.items():  # two of each group passed: the group compares answers to one task
            assert sum(scores[i] for i in range(8) if uids[i] == uid) == 2.0, ids
        # verl's GRPO advantage over the groups: a passing answer beats its group's mean, a failing one not
        rewards, _ = extract_reward(generated)
        advantages, _ = compute_grpo_outcome_advantage(rewards, generated.batch["response_mask"], uids)
        for i in range(8):
            assert (advantages[i].max() > 0) == (scores[i] == 1.0), (i, advantages[i].max())
        mask = generated.batch["response_mask"]
        wrong = [i for i in range(8) if scores[i] == 0.0]
        for i in wrong:  # a wrong answer got the feedback, masked out, and answered again
            row = mask[i].tolist()
            ones = [k for k, v in enumerate(row) if v]
            assert 0 in row[ones[0] : ones[-1]], "the feedback between two answers must be masked"
    assert epochs == {0, 1, 2}, epochs  # 24 episodes of 8 an epoch: across two epoch boundaries
    print("reset waits (s):", [round(w, 2) for w in noted.resets])
    assert len(noted.resets) == 24
    assert max(noted.resets[8:]) < 1.0, noted.resets  # once the pool is full, no reset waits, at a boundary either
