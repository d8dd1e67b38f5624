"""verl's agent loop on live ``spade serve-env`` episodes: ``spade_env``.

verl 0.9's multi-turn rollouts run through its agent loop (``verl.experimental.agent_loop``): for each row of
a batch, ``AgentLoopWorker`` instantiates the loop its ``agent_name`` names (``register`` or the entries of
``actor_rollout_ref.rollout.agent.agent_loop_config_path``, instantiated with hydra) and awaits
``run(sampling_params, **row)``; the loop asks the rollout server for tokens (``server_manager.generate``)
and returns ``AgentLoopOutput``: the prompt's and the response's token ids, a mask with 1 on the tokens the
model generated, and, when it has one, the reward (``reward_score``, put on the last response token).

``SpadeEnvAgentLoop`` plays one serve-env episode per row:

* ``reset`` with the row's ``uid`` as the group key and ``rollout.n`` as its size: verl gives the ``n``
  rollouts of a prompt one ``uid``, so they play one task (GRPO's group compares answers to one problem);
* the episode's messages (the solver's system prompt and task, public tests only) become the prompt
  through verl's own Continuous Token builder, each model turn one ``generate`` and one ``step``, the
  server's feedback appended as a user message whose tokens are masked out (0), as verl's tool loop masks
  tool responses;
* at ``done`` the reward is the server's verdict, as every client pays it (``served_reward``: 1.0 passed,
  else 0.0; ``partial_credit``: the share of the hidden tests passed). A rollout that runs out of
  ``rollout.response_length`` first closes its session: the server records the episode ``abandoned``
  (measured by nothing) and the rollout earns 0.0.

Select it with ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` (a file ``verl.write_live_files``
writes, naming this class and the server's url) and rows whose ``agent_name`` is ``spade_env``
(``verl.live_rows``). Importing this module imports verl.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from ..errors import UserError
from ..serve.env import TOKEN_ENV
from .trl import ENV_URL, serve_env_client, served_reward, split_token, token_masked
from .verl import AGENT_NAME

__all__ = ["SpadeEnvAgentLoop"]


@register(AGENT_NAME)
class SpadeEnvAgentLoop(AgentLoopBase):  # type: ignore[misc]  # verl ships no type information
    """One live serve-env episode per rollout (the module docstring says how).

    Besides verl's own arguments: ``url``, the server's ``http://HOST:PORT`` (default ``$SPADE_ENV_URL``);
    ``token`` (default ``$SPADE_ENV_TOKEN``: keep it out of the agent loop file); ``partial_credit``;
    ``group_size``, the rollouts of one ``uid`` (default ``rollout.n``; 1: no groups); ``timeout_s``, how
    long a reset or step may wait for the server.
    """

    def __init__(
        self,
        *args: Any,
        url: str | None = None,
        token: str | None = None,
        partial_credit: bool = False,
        group_size: int | None = None,
        timeout_s: float = 3600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        url = url or os.environ.get(ENV_URL, "").strip()
        if not url:
            raise UserError(
                f"the {AGENT_NAME} agent loop needs the url of a spade serve-env server: `url:` in its agent loop "
                f"file, or ${ENV_URL}"
            )
        self.url, in_url = split_token(url)
        self.token = token or os.environ.get(TOKEN_ENV, "").strip() or in_url or None
        self.partial_credit = partial_credit
        self.group_size = int(group_size if group_size is not None else self.rollout_config.n)
        self.timeout_s = timeout_s
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        with token_masked(self.token):
            client = serve_env_client(self.url, self.token, message_timeout_s=self.timeout_s)
            await client.connect()
            try:
                return await self._play(client, sampling_params, kwargs.get("uid"))
            finally:
                with contextlib.suppress(Exception):  # a session ended early is recorded abandoned
                    await client.close()

    async def _play(self, client: Any, sampling_params: dict[str, Any], uid: Any) -> AgentLoopOutput:
        grouped = {"group_id": str(uid), "group_size": self.group_size} if uid is not None else {}
        grouped = grouped if self.group_size > 1 else {}
        result = await client.reset(**grouped)
        observation = dict(result.observation or {})
        messages = [dict(m) for m in observation.get("messages") or []]
        ids = await self.ct_build_initial_tokens(messages)
        prompt_length = len(ids)
        mask: list[int] = []
        logprobs: list[float] | None = None
        metrics: dict[str, Any] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        turns, done, request_id = 0, False, uuid4().hex
        while True:
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=ids, sampling_params=sampling_params
            )
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                ids, output.token_ids, mask, logprobs if (logprobs or output.log_probs) else None,
                assistant_logprobs=output.log_probs or None,
            )  # fmt: skip
            ids, turns = merged.token_ids, turns + 1
            answer = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            messages.append({"role": "assistant", "content": answer})
            result = await client.step({"answer": answer})
            observation = dict(result.observation or {})
            done = bool(result.done)
            if done or len(mask) >= self.response_length:
                break
            said = [dict(m) for m in (observation.get("messages") or [])[len(messages) :] if m.get("role") == "user"]
            merged, grown, grown_logprobs = await self.ct_merge_context_msg(
                messages, [*messages, *said], ids, mask, logprobs
            )
            if len(grown) >= self.response_length:
                break
            messages, ids, mask, logprobs = [*messages, *said], merged.token_ids, grown, grown_logprobs
        final_status = observation.get("final_status") if done else None
        reward = served_reward(observation, final_status, partial_credit=self.partial_credit) if done else 0.0
        response = ids[len(ids) - len(mask) :] if mask else []
        return AgentLoopOutput(
            prompt_ids=ids[: len(ids) - len(mask)] if mask else ids[:prompt_length],
            response_ids=response[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=reward,
            num_turns=2 * turns + 1,
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={
                "reward_extra_info": {"acc": float(final_status == "passed")},
                "spade_task_id": observation.get("task_id"),
                "spade_trajectory_id": observation.get("trajectory_id") if done else None,
                "spade_final_status": final_status or "abandoned",
            },
        )
