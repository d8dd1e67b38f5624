"""spade_llm's coding tasks as an environment of the ``verifiers`` library (PrimeIntellect's, 0.4:
``pip install 'spade-selfplay[verifiers]'``).

verifiers 0.4 is its v1 stack (``import verifiers.v1 as vf``): an environment is a *taskset* (the rows),
a *harness* (the program the model runs in), and an ``Env`` (the control flow of one episode), loaded by
id: ``vf.load_environment(vf.resolve_env_config({"taskset": {"id": "spade-selfplay", ...}}))`` imports
the module the id names (``spade-selfplay`` -> ``spade_selfplay``, shipped with this distribution) and
takes the ``Taskset``, ``Env`` and ``Harness`` subclasses its ``__all__`` exports; ``vf-eval
spade-selfplay --env.taskset.run-dir RUN`` is the same from the command line. There is no entry point:
the id is the module name. ``load_environment(run_dir=... | url=...)`` here builds that config.

One episode is the loop's, turn by turn (``SpadeEnv``):

1. The model answers the task's prompt: for a run directory, the GRPO export's row (the opening the
   solver saw: system prompt and the task with its public tests).
2. The answer is read as a trainer's reward reads it (``rewards.extract_answer``: the last ```python
   block for ``induction``, the kind's ``parse_answer`` otherwise) and run on the task's **public**
   tests alone. When they all pass, or after ``max_turns`` answers, the episode ends; otherwise the
   environment replies with the loop's own repair prompt (``LLMSolver.repair_message`` over that public
   execution: the same template, verdicts, failing cases and stderr tail the solver would send). No
   hidden test runs for the feedback, so nothing of one can reach a message.
3. The reward (``SpadeTask.spade_reward``, the environment's rubric) judges the **last** answer on
   *all* the tests, hidden ones included: ``Rewarder.judge_text``, the very judge of
   ``rewards.compute_score`` and ``code_reward``: 1.0 when every test passes, else 0.0 (the fraction
   passed with ``partial_credit``). The verdict's counts are metrics (``tests_passed``, ...).

``url`` mode plays ``spade serve-env`` episodes instead (openenv-core's client, ``pip install
'spade-selfplay[env]'``): each rollout is one episode of the live curriculum: ``reset()`` at its start
gives the opening messages, each model answer is a ``step({"answer": ...})`` whose observation holds
the server's feedback, and the reward is the one the server gives at ``done`` (its judge on all tests,
through the run's reward settings). The server decides the task and when the episode ends; the
rollout's own cap (``max_turns``) leaves an episode early, which the server records as abandoned. The
server's token (``$SPADE_ENV_TOKEN``) goes in the WebSocket handshake's ``Authorization`` header, never in
a URL, and no error an episode records holds it (``trl.serve_env_client``).

The model is called through verifiers: its harness sends each turn to the rollout's interception
server, which forwards it to the run's client (any OpenAI-compatible endpoint) and records it on the
trace. The default harness (``SpadeChatHarness``) is a chat call made in-process: no program to
install, no tools, nothing run in the runtime, which is the (local) ``subprocess`` runtime by default.
A harness of verifiers' that resumes a conversation can be pinned instead (``--env.solver.harness.id
null``: its chat program, which ``uv`` installs in the runtime).

Judging goes through ``rewards.default_rewarder()``: ``$SPADE_SANDBOX`` picks the backend, and ``auto``
refuses to run answers without isolation (see ``spade_llm.rewards``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import field_validator

from ..errors import UserError, pip_install
from ..export.solver_rows import ExportFilters, build_rows, check_filters, read_for_export
from ..kinds import DEFAULT_KIND, KIND_NAMES
from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..llm.base import LLMRequest, LLMResponse
from ..rewards.code import Rewarder, Verdict, default_rewarder, extract_answer, parse_ground_truth
from ..rewards.groundtruth import ground_truth_language
from ..serve.env import TOKEN_ENV
from ..solver import LLMSolver, examples_task
from ..templates import Prompts
from ..types import Attempt, ExecutionResult, Task, TestResult
from .trl import serve_env_client, token_masked

try:
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import message_to_wire
    from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE
    from verifiers.v1.runtimes import ProgramResult
except ImportError:  # not ModuleNotFoundError: verifiers' loader would swallow that as "taskset not found"
    raise ImportError(f"spade_llm.verifiers needs verifiers 0.4: {pip_install('verifiers')}") from None

__all__ = [
    "DEFAULT_MAX_TURNS",
    "ENV_ID",
    "SpadeChatHarness",
    "SpadeEnv",
    "SpadeTaskset",
    "load_environment",
]

ENV_ID = "spade-selfplay"
"""The environment's id for verifiers (``vf-eval spade-selfplay``): the module ``spade_selfplay``."""
DEFAULT_MAX_TURNS = 3
"""Answers per episode when the solver seat sets no ``max_turns`` (the loop's ``solver.max_turns``)."""
SPLITS = ("train", "test")

_T = TypeVar("_T")


# -- the rows ---------------------------------------------------------------------------------------


class SpadeData(vf.TaskData):  # type: ignore[misc]  # verifiers ships no type information: its bases are Any
    """One row: a GRPO export's (``ground_truth`` holds every test, hidden ones included: it rides the
    trace's task record, never a message), or a placeholder for a ``serve-env`` episode (``url``)."""

    task_id: str = ""
    kind: str = DEFAULT_KIND
    entry_point: str = ""
    ground_truth: str | None = None
    split: str | None = None
    difficulty: float | None = None
    prompts_dir: str | None = None
    """The run's own templates (``prompts_dir`` of its config), for the repair prompts; None: the packaged."""
    url: str | None = None
    """``url`` mode: the ``spade serve-env`` server this rollout takes an episode from."""
    group_id: str | None = None
    """``url`` mode with ``group_size``: the rollouts of this task are one serve-env group (one task)."""
    group_size: int | None = None


class SpadeTaskConfig(vf.TaskConfig):  # type: ignore[misc]  # see SpadeData
    """``--env.taskset.task.*``."""

    partial_credit: bool = False
    """Pay the fraction of tests the last answer passed instead of all-or-nothing (``run_dir`` mode)."""


class SpadeTask(vf.Task[SpadeData, vf.State, SpadeTaskConfig]):  # type: ignore[misc]  # see SpadeData
    """A coding task; its reward is spade's judge on the last answer."""

    @property
    def key(self) -> str:
        return self.data.task_id or str(super().key)

    @vf.reward  # type: ignore[untyped-decorator]  # verifiers' decorators are untyped
    async def spade_reward(self, trace: Any) -> float:
        """The last answer on every test, hidden ones included (``Rewarder.judge_text``: what
        ``rewards.compute_score`` returns as ``score``); for a ``serve-env`` episode, the server's reward."""
        data: SpadeData = self.data
        if data.ground_truth is None:
            served = trace.info.get("spade") or {}
            reward = served.get("reward")
            trace.record_metrics({"passed": float(served.get("final_status") == "passed")})
            return float(reward) if isinstance(reward, (int, float)) else 0.0
        task, _ = parse_ground_truth(data.ground_truth)
        text = final_text(trace)
        rewarder = default_rewarder()
        language = ground_truth_language(data.ground_truth)
        judge = functools.partial(
            rewarder.judge_text, task, text, partial_credit=self.config.partial_credit, language=language
        )
        verdict: Verdict = await _off_loop(rewarder, judge)
        trace.record_metrics(
            {
                "passed": float(verdict.status == "passed"),
                "pass_fraction": verdict.pass_fraction,
                "tests_passed": float(verdict.tests_passed),
                "tests_total": float(verdict.tests_total),
            }
        )
        trace.info["spade_verdict"] = verdict.as_verl()
        return verdict.score


class SpadeTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]  # see SpadeData
    """``--env.taskset.*``: where the tasks come from (exactly one of ``run_dir``, ``data_files``, ``url``)."""

    run_dir: str | None = None
    """A run directory: its GRPO export's rows, built in memory (``spade export RUN --format grpo``)."""
    data_files: str | list[str] | None = None
    """GRPO export files (``.jsonl``) to read the rows from instead."""
    url: str | None = None
    """A ``spade serve-env`` server (``http://HOST:PORT``): live episodes of its curriculum. Its token,
    if it needs one, goes in ``$SPADE_ENV_TOKEN``, not in the URL (tasks and traces record the URL)."""
    split: Literal["train", "test"] | None = "train"
    """The rows of one split (the export's ``split`` column); None: every row."""
    kinds: list[str] | None = None
    """Task kinds to keep (``induction``, ``deduction``, ``abduction``); None: all."""
    test_fraction: float = 0.1
    """``run_dir``: the share of tasks in ``test`` (``spade export --test-fraction``)."""
    prompts_dir: str | None = None
    """Templates overriding the packaged ones for the repair prompts (default: the run's own)."""
    episodes: int | None = None
    """``url``: how many tasks the taskset yields (None: endless, ``vf-eval -n`` or the trainer takes as many
    as it asks for); each task is played by as many rollouts as verifiers runs per task."""
    group_size: int | None = None
    """``url``: verifiers' rollouts per task (``rollouts_per_example``, ``vf-eval -r``): the rollouts of one
    task then play one serve-env task, a GRPO group (it must divide the server's ``samples_per_task``).
    None: each rollout takes whatever episode comes next."""
    task: SpadeTaskConfig = SpadeTaskConfig()

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url:
            _check_url(url)
        return url

    def check(self) -> None:
        """Raises UserError unless exactly one source is set (checked when the taskset is built: the
        CLI validates the config before its flags fill it)."""
        given = [name for name in ("run_dir", "data_files", "url") if getattr(self, name)]
        if len(given) != 1:
            raise UserError(
                "the spade-selfplay taskset takes exactly one of run_dir, data_files, url "
                f"(--env.taskset.run-dir ...; got {', '.join(given) or 'none'})"
            )
        files = [self.data_files] if isinstance(self.data_files, str) else list(self.data_files or [])
        for path, what in [(self.run_dir, "run directory"), (self.prompts_dir, "prompts folder")]:
            if path and not Path(path).is_dir():
                raise UserError(f"{what} not found: {path}")
        for path in files:
            if not Path(path).is_file():
                raise UserError(f"data file not found: {path}")


class SpadeTaskset(vf.Taskset[SpadeTask, SpadeTasksetConfig]):  # type: ignore[misc]  # see SpadeData
    """The tasks of a run directory or GRPO export (one per row), or ``serve-env`` episodes."""

    def __init__(self, config: SpadeTasksetConfig) -> None:
        config.check()
        super().__init__(config)
        if config.url and config.episodes is None:
            self.INFINITE = True  # the server hands out episodes until it stops

    def load(self) -> Iterator[SpadeTask]:
        config: SpadeTasksetConfig = self.config
        if config.url:
            n = 0
            loaded = uuid.uuid4().hex[:12]  # two evaluations against one server never share a group
            while config.episodes is None or n < config.episodes:
                group = f"vf-{loaded}-{n}" if config.group_size else None
                data = SpadeData(
                    name=f"serve-env#{n}",
                    prompt=None,
                    url=config.url.rstrip("/"),
                    group_id=group,
                    group_size=config.group_size,
                )
                yield SpadeTask(data, config.task)
                n += 1
            return
        prompts_dir, rows = self._rows()
        for row in rows:
            yield SpadeTask(task_data(row, prompts_dir), config.task)

    def _rows(self) -> tuple[str | None, list[dict[str, Any]]]:
        config: SpadeTasksetConfig = self.config
        kinds = list(config.kinds) if config.kinds else None
        if config.run_dir:
            filters = ExportFilters(kinds=kinds, split=config.split)
            check_filters("grpo", filters, config.test_fraction)
            run = read_for_export(Path(config.run_dir), config.test_fraction)
            own = run.prompts_dir if run.prompts_dir and Path(run.prompts_dir).is_dir() else None  # as exports do
            return config.prompts_dir or own, build_rows(run, "grpo", filters)
        unknown = sorted(set(kinds or ()) - set(KIND_NAMES))
        if unknown:
            raise UserError(f"unknown task kinds {', '.join(unknown)}; known: {', '.join(KIND_NAMES)}")
        files = [config.data_files] if isinstance(config.data_files, str) else list(config.data_files or [])
        rows = [
            row
            for path in files
            for row in _export_rows(Path(path))
            if (config.split is None or row.get("split") == config.split)
            and (kinds is None or row.get("kind") in kinds)
        ]
        return config.prompts_dir, rows


def task_data(row: Mapping[str, Any], prompts_dir: str | None = None) -> SpadeData:
    """A GRPO export row as a task's data (its ``prompt`` messages, ``ground_truth`` and side columns).

    Raises:
        UserError: the row has no prompt or no ground truth, or a malformed one.
    """
    truth = row.get("ground_truth")
    if truth is None or not row.get("prompt"):
        raise UserError("a spade row needs its `prompt` and `ground_truth` (a GRPO export's row)")
    truth = truth if isinstance(truth, str) else json.dumps(truth, ensure_ascii=False, sort_keys=True)
    task, _ = parse_ground_truth(truth)  # malformed: one clear error now, not one per rollout
    prompt = row["prompt"]
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    difficulty = row.get("difficulty")
    return SpadeData(
        id=task.task_id or None,
        name=task.task_id or None,
        prompt=[{"role": str(m.get("role", "user")), "content": str(m.get("content") or "")} for m in prompt],
        task_id=task.task_id,
        kind=task.kind,
        entry_point=task.entry_point,
        ground_truth=truth,
        split=row.get("split"),
        difficulty=difficulty if isinstance(difficulty, (int, float)) else None,
        prompts_dir=prompts_dir,
    )


def _export_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a GRPO export file (JSON lines)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise UserError(f"{path}:{n}: not JSON: {e}") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: a row is a JSON object")
        yield row


# -- the model's side: one chat call per segment ------------------------------------------------------


class SpadeChatHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]  # see SpadeData
    """``--env.solver.harness.*``."""

    request_timeout_s: float | None = None
    """Longest wait for one answer (None: the rollout's own timeouts bound it)."""


class SpadeChatHarness(vf.Harness[SpadeChatHarnessConfig]):  # type: ignore[misc]  # see SpadeData
    """A tool-less chat turn made in-process: the conversation so far, sent once to the rollout's
    interception endpoint (which forwards it to the model and records it on the trace). Nothing is
    installed or run in the runtime; the trace is the record of what ran."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        import httpx

        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        timeout = httpx.Timeout(self.config.request_timeout_s, connect=30.0)
        try:
            async with httpx.AsyncClient(timeout=timeout) as http:
                response = await http.post(
                    f"{endpoint.rstrip('/')}/chat/completions",
                    json={"model": ctx.model, "messages": messages},
                    headers={"Authorization": f"Bearer {secret}"},
                )
        except httpx.HTTPError as e:
            return ProgramResult(MODEL_TRANSPORT_ERROR_EXIT_CODE, "", f"{type(e).__name__}: {e}")
        if response.status_code >= 400:
            return ProgramResult(1, "", f"HTTP {response.status_code}: {response.text[:2000]}")
        return ProgramResult(0, "", "")


# -- the episode ----------------------------------------------------------------------------------------


class SpadeEnvConfig(vf.EnvConfig):  # type: ignore[misc]  # see SpadeData
    """``--env.*``: the ``solver`` seat (its ``max_turns`` is the episode's answers, default 3) and the feedback."""

    solver: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=DEFAULT_MAX_TURNS)
    stderr_lines: int = 15
    """How much of stderr a repair prompt quotes (the loop's ``solver.stderr_lines``)."""


class SpadeEnv(vf.Env[SpadeEnvConfig]):  # type: ignore[misc]  # see SpadeData
    """The solver's episode: answer, public-test feedback, again, until the public tests pass or the
    turns run out (module docstring); a ``serve-env`` episode when the task names a ``url``."""

    async def run(self, task: Any, agents: Any) -> None:
        agent = agents.solver
        max_turns = agent.config.max_turns or DEFAULT_MAX_TURNS
        if task.data.url:
            await self._served(task, agent, max_turns)
        else:
            await self._local(task, agent, max_turns)

    async def _local(self, task: Any, agent: Any, max_turns: int) -> None:
        data: SpadeData = task.data
        spade_task, public = parse_ground_truth(data.ground_truth)
        language = ground_truth_language(data.ground_truth or "{}")
        feedback = Feedback(spade_task, public, Prompts(data.prompts_dir), self.config.stderr_lines, language)
        rewarder = default_rewarder()
        turns = 0
        async with agent.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                turns += 1
                text = reply_text(segment)
                reply = await _off_loop(rewarder, functools.partial(feedback.after, rewarder, text, turns))
                if reply is None or turns >= max_turns:
                    break
                segment = await interaction.turn(reply)
            interaction.trace.info["spade"] = {"task_id": spade_task.task_id, "kind": spade_task.kind, "turns": turns}

    async def _served(self, task: Any, agent: Any, max_turns: int) -> None:
        token = os.environ.get(TOKEN_ENV, "").strip() or None
        client = serve_env_client(task.data.url, token, message_timeout_s=3600.0)  # the token as a header
        with token_masked(token):  # an episode's error is recorded: never with the token in it
            await self._play_served(client, task, agent, max_turns)

    async def _play_served(self, client: Any, task: Any, agent: Any, max_turns: int) -> None:
        async with client:
            data: SpadeData = task.data
            grouped = {"group_id": data.group_id, "group_size": data.group_size} if data.group_id else {}
            result = await client.reset(**grouped)
            observation = dict(result.observation or {})
            shown = list(observation.get("messages") or [])
            end: dict[str, Any] = {}
            async with agent.interaction(task) as interaction:
                segment = await interaction.turn(shown)
                turns = 0
                while not segment.terminated:
                    turns += 1
                    text = reply_text(segment)
                    result = await client.step({"answer": text, "model": agent.config.model})
                    observation = dict(result.observation or {})
                    if result.done:
                        end = {**observation, "reward": result.reward, "done": True}
                        break
                    if turns >= max_turns:
                        break
                    messages = list(observation.get("messages") or [])
                    new, shown = messages[len(shown) + 1 :], messages  # after the answer just sent
                    if not new:
                        raise UserError("serve-env answered a step with no new message and no end")
                    segment = await interaction.turn(new)
                served = {k: observation.get(k) for k in _SERVED_FIELDS}
                interaction.trace.info["spade"] = {
                    **served,
                    **{k: end.get(k) for k in ("reward", "done")},
                    "turns": turns,
                }


_SERVED_FIELDS = ("episode_id", "task_id", "kind", "difficulty", "final_status", "tests_passed", "tests_total")
"""What a rollout keeps of a serve-env episode's last observation (counts only: no test is shown)."""


class Feedback:
    """The environment's reply to one answer: the loop's repair prompt over the public execution, or
    None when the public tests all pass (for an imported benchmark: its asserts, as the loop decides)."""

    def __init__(
        self, task: Task, public: int, prompts: Prompts, stderr_lines: int = 15, language: str = DEFAULT_ANSWER_LANGUAGE
    ) -> None:
        self.task = task
        self.public = public
        self.language = language
        self.solver = LLMSolver(
            _NoModel(),
            prompts,
            _no_judge,
            seed=0,
            max_turns=DEFAULT_MAX_TURNS,
            public_tests=public,
            temperature=0.0,
            max_tokens=1,
            stderr_lines=stderr_lines,
        )

    def after(self, rewarder: Rewarder, text: str, turn: int) -> str | None:
        """The reply to the answer ``text`` of turn ``turn`` (blocking: runs in the sandbox)."""
        task = self.task
        answer = extract_answer(task, text, self.language)
        if not answer.strip():
            why = "no code in the answer"
            result = ExecutionResult(
                status="error", stderr=f"{why}\n", tests_passed=0, tests_total=max(1, len(task.tests)), load_error=why
            )
            passed = False
        elif task.shows_examples:  # the loop's rule: the asserts decide, the examples' run is what is shown
            judged = rewarder.run(task, answer, language=self.language)
            passed = judged.all_passed
            examples = rewarder.run(examples_task(task), answer, language=self.language) if task.examples else None
            result = judged if examples is None else examples  # without examples: the asserts' run, its load error
        else:
            result = rewarder.run(task, answer, list(range(self.public)), language=self.language)
            shown: Sequence[TestResult] = result.test_results or []
            passed = bool(shown) and all(r.passed for r in shown)
        if passed:
            return None
        attempt = Attempt(turn=turn, code=answer, result=result, raw=text, language=self.language)
        return str(self.solver.repair_message(task, attempt, result).content)


class _NoModel:
    """The repair prompts need an ``LLMSolver``, never its model."""

    model = "verifiers"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise AssertionError("spade_llm.verifiers never asks the solver's model")


async def _no_judge(
    task: Task, code: str, tests: Sequence[int] | None, /, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    raise AssertionError("spade_llm.verifiers judges through its rewarder")


def reply_text(segment: Any) -> str:
    """A segment's answer: the last assistant message's text as the model wrote it."""
    for message in reversed(segment.messages):
        if getattr(message, "role", None) == "assistant":
            return str(message.content or "")
    return str(segment.last_reply)


def final_text(trace: Any) -> str:
    """A finished trace's last answer (``reply_text`` of its last turn): what the reward judges."""
    answers = trace.assistant_messages
    return str(answers[-1].content or "") if answers else ""


async def _off_loop(rewarder: Rewarder, fn: Callable[[], _T]) -> _T:
    """``fn`` on the rewarder's thread pool: the sandbox blocks, the rollouts share an event loop."""
    return await asyncio.get_running_loop().run_in_executor(rewarder._executor(), fn)


def _check_url(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise ValueError(f"url must be a serve-env server's http://HOST:PORT, got {url!r}")
    if parts.username or parts.password:
        raise ValueError(f"put serve-env's token in ${TOKEN_ENV}, not in the url (tasks and traces record the url)")


# -- the entry point ---------------------------------------------------------------------------------------

_ENV_KEYS = frozenset({"stderr_lines", "timeout", "retries", "max_concurrent_agents", "interception"})


def load_environment(
    run_dir: str | Path | None = None,
    url: str | None = None,
    *,
    data_files: str | Path | Sequence[str | Path] | None = None,
    split: Literal["train", "test"] | None = "train",
    max_turns: int | None = None,
    partial_credit: bool = False,
    solver: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """The verifiers environment (a ``vf.Env``) over a run directory's tasks, GRPO export files
    (``data_files=``), or a ``spade serve-env`` server (``url=``): exactly one of the three.

    ``split``: the rows of one split (None: all); ``max_turns``: answers per episode (default 3);
    ``partial_credit``: the reward pays the fraction of tests passed; ``solver``: the seat's
    ``vf.AgentConfig`` fields (``model``, ``client``, ``harness``, ``runtime``, ``sampling``...). Other
    keywords go to the taskset (``kinds``, ``test_fraction``, ``prompts_dir``, ``episodes``) or the env
    (``stderr_lines``, ``timeout``, ``retries``...). Rollouts: ``async with env.serving():
    await env.run_episode(task, vf.ModelContext(model=..., client=vf.EvalClientConfig(base_url=...)))``
    for each ``task`` of ``env.taskset``, or ``vf-eval spade-selfplay`` with the same keys.

    Raises:
        UserError: no source or several, an unknown keyword, or a configuration verifiers refuses.
    """
    given = [name for name, value in (("run_dir", run_dir), ("url", url), ("data_files", data_files)) if value]
    if len(given) != 1:
        raise UserError(
            f"load_environment takes exactly one of run_dir, url, data_files (got {', '.join(given) or 'none'})"
        )
    if split is not None and split not in SPLITS:
        raise UserError(f"split must be train, test or None, got {split!r}")
    taskset: dict[str, Any] = {"id": ENV_ID, "split": split, "task": {"partial_credit": partial_credit}}
    if run_dir:
        taskset["run_dir"] = str(run_dir)
    elif url:
        taskset["url"] = str(url)
    else:
        files = [data_files] if isinstance(data_files, (str, Path)) else list(data_files or [])
        taskset["data_files"] = [str(f) for f in files]
    env: dict[str, Any] = {"taskset": taskset}
    seat = dict(solver or {})
    if max_turns is not None:
        seat["max_turns"] = max_turns
    if seat:
        env["solver"] = seat
    for key, value in kwargs.items():
        if key in SpadeTasksetConfig.model_fields and key not in ("id", "task"):
            taskset[key] = value
        elif key in _ENV_KEYS:
            env[key] = value
        else:
            raise UserError(f"load_environment: unknown keyword {key!r}")
    try:
        return vf.load_environment(vf.resolve_env_config(env))
    except ValueError as e:  # pydantic's ValidationError included: the config's own words
        raise UserError(f"spade-selfplay environment: {e}") from None
