"""spade_llm.integrations.verifiers: spade's tasks as an environment of PrimeIntellect's verifiers (0.4, its v1 stack),
driven through verifiers' own loader and rollout API (``vf.load_environment`` by id, ``env.serving()``,
``env.run_episode`` with a ``vf.ModelContext`` whose client is an OpenAI-compatible endpoint).

The model is ``spade serve-fake`` (an in-process FakeServer): its ``strong-solver``/``weak-solver``
profiles, or a scripted stand-in for ``spade_llm.fake`` behind the same server where a test needs given
answers. The run is the fake's, with the three kinds. Hidden tests carry distinctive strings
(``zq_hidden``...) the leak test looks for in every message. The subprocess sandbox judges (nothing
hostile runs). Needs the ``verifiers`` extra: skipped without it (failed under
``SPADE_TEST_REQUIRE_TRAINERS``); the ``serve-env`` test also needs the ``env`` extra (openenv-core).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from trainer_kit import KINDS_CONFIG, need, skip_unless_required

vf = need("verifiers.v1", "verifiers")

from spade_llm.errors import UserError  # noqa: E402
from spade_llm.export.solver_rows import ExportFilters, export_run  # noqa: E402
from spade_llm.integrations.verifiers import (  # noqa: E402
    ENV_ID,
    SpadeChatHarness,
    SpadeEnv,
    SpadeTaskset,
    final_text,
    load_environment,
)
from spade_llm.llm.base import LLMResponse  # noqa: E402
from spade_llm.rewards import code as rewards  # noqa: E402
from spade_llm.rewards.code import Rewarder  # noqa: E402
from spade_llm.rewards.groundtruth import ground_truth  # noqa: E402
from spade_llm.sandbox.base import Limits  # noqa: E402
from spade_llm.solver import first_messages  # noqa: E402
from spade_llm.store import read_run  # noqa: E402
from spade_llm.templates import Prompts  # noqa: E402
from spade_llm.types import Task, TestCase  # noqa: E402

pytestmark = [pytest.mark.verifiers]

SECRET = "zq_hidden"


@pytest.fixture(scope="module", autouse=True)
def rewarder() -> Iterator[Rewarder]:
    """One subprocess-sandbox rewarder as the module default (what the env and compute_score use)."""
    box = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, box
    yield box
    rewards._default = saved
    box.close()


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake run of the three kinds whose solver (weak) needed repairs: tasks and judged trajectories."""
    from spade_llm.cli.app import main

    base = tmp_path_factory.mktemp("vf-run")
    (base / "kinds.yaml").write_text(KINDS_CONFIG)
    run = base / "run"
    argv = ["run", "--config", str(base / "kinds.yaml"), "--epochs", "1", "--tasks-per-epoch", "6"]
    argv += ["--samples-per-task", "2", "--solver-model", "fake/weak-solver", "--sandbox", "subprocess"]
    assert main([*argv, "--out", str(run), "--quiet"]) == 0
    return run


class Scripted:
    """A stand-in for ``spade_llm.fake`` behind a FakeServer: ``answer(messages)`` writes every reply,
    and every request's messages are kept (what the model was shown)."""

    PROFILES: ClassVar[dict[str, None]] = {"default": None}
    model = "scripted"

    def __init__(self, answer: Callable[[list[dict[str, str]]], str]) -> None:
        self.answer = answer
        self.requests: list[list[dict[str, str]]] = []

    @staticmethod
    def infer_role(messages: Any, json_mode: bool = False) -> str:
        return "solver"

    def FakeLLM(self, profile: str, seed: int) -> Scripted:  # the fake module's class, here a method
        return self

    async def complete(self, request: Any) -> LLMResponse:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        self.requests.append(messages)
        return LLMResponse(text=self.answer(messages))


def by_turn(script: dict[str, list[str]]) -> Callable[[list[dict[str, str]]], str]:
    """Answers per task (found by its entry point in the first user message), one per turn; the last repeats."""

    def answer(messages: list[dict[str, str]]) -> str:
        first = next(m["content"] for m in messages if m["role"] == "user")
        entry = next(e for e in script if f"{e}(" in first)
        turn = sum(m["role"] == "assistant" for m in messages)
        return script[entry][min(turn, len(script[entry]) - 1)]

    return answer


def always(text: str) -> Callable[[list[dict[str, str]]], str]:
    def answer(messages: list[dict[str, str]]) -> str:
        return text

    return answer


def play(env: Any, base_url: str, model: str = "default", tasks: list[Any] | None = None) -> list[Any]:
    """One rollout per task through verifiers' own API; the solver seat's trace of each episode."""
    ctx = vf.ModelContext(model=model, client=vf.EvalClientConfig(base_url=base_url, api_key_var="SPADE_TEST_NO_KEY"))
    chosen = list(env.taskset) if tasks is None else tasks

    async def go() -> list[Any]:
        async with env.serving():
            return list(await asyncio.gather(*(env.run_episode(t, ctx) for t in chosen)))

    episodes = asyncio.run(go())
    for ep in episodes:
        assert ep.ok and len(ep.traces) == 1, [e.message for e in ep.errors] + [
            e.message for t in ep.traces for e in t.errors
        ]
    return [ep.traces[0] for ep in episodes]


def conversation(trace: Any) -> list[tuple[str, str]]:
    return [(m.role, m.content or "") for m in trace.messages]


def make_task(kind: str, code: str, entry: str, tests: list[tuple[str, Any]]) -> Task:
    return Task(
        task_id=f"secret-{kind}",
        kind=kind,
        description=f"A task of kind {kind}.",
        entry_point=entry,
        reference_code=code,
        tests=[TestCase(input=i, expected=e) for i, e in tests],
    )


SHOUT = make_task(
    "induction",
    "def shout(s):\n    return s.upper() + '!'\n",
    "shout",
    [("('abc',)", "ABC!"), ("('hi',)", "HI!"), ("('ok',)", "OK!"),
     (f"('{SECRET}_input_alpha',)", f"{SECRET.upper()}_INPUT_ALPHA!"),
     (f"('{SECRET}_input_beta',)", f"{SECRET.upper()}_INPUT_BETA!")],
)  # fmt: skip
# deduction: the hidden queries' calls are the question; their outputs are the secret
SEAL = make_task(
    "deduction",
    "def seal(n):\n    return 'zq' + str(n * 7) + 'hidden'\n",
    "seal",
    [("(1,)", "zq7hidden"), ("(2,)", "zq14hidden"), ("(3,)", "zq21hidden"), ("(99,)", "zq693hidden"),
     ("(1001,)", "zq7007hidden")],
)  # fmt: skip
SEAL_SECRETS = ("zq693hidden", "zq7007hidden")
# abduction: the hidden queries' outputs are the question; the inputs they came from are the secret
SIZE = make_task(
    "abduction",
    "def grow_size(s):\n    return len(s) * 3\n",
    "grow_size",
    [("('a',)", 3), ("('bb',)", 6), ("('ccc',)", 9), (f"('{SECRET}_abduction_input',)", 72),
     (f"('{SECRET}_abduction_other',)", 69)],
)  # fmt: skip


def py(code: str, prose: str = "Here it is.") -> str:
    return f"{prose}\n\n```python\n{code.strip()}\n```"


RIGHT = py(SHOUT.reference_code)
WRONG = py("def shout(s):\n    return s\n")
# hard-codes the shown tests
PUBLIC_ONLY = py("def shout(s):\n    return {'abc': 'ABC!', 'hi': 'HI!', 'ok': 'OK!'}[s]\n")


def rows_file(path: Path, *tasks: Task, public: int = 3) -> Path:
    """A GRPO export of ``tasks``: the loop's opening as the prompt, every test in the ground truth."""
    lines = []
    for task in tasks:
        prompt = [{"role": m.role, "content": m.content} for m in first_messages(Prompts(), task, public)]
        truth = json.dumps(ground_truth(task, public), ensure_ascii=False, sort_keys=True)
        row = {"prompt": prompt, "ground_truth": truth, "task_id": task.task_id, "kind": task.kind}
        lines.append(json.dumps({**row, "entry_point": task.entry_point, "split": "train", "difficulty": 0.5}))
    path.write_text("\n".join(lines) + "\n")
    return path


# -- loading -------------------------------------------------------------------------------------------


def test_verifiers_loads_the_environment_by_its_id(fake_run: Path, tmp_path: Path) -> None:
    assert ENV_ID == "spade-selfplay"
    assert vf.environment_class(ENV_ID) is SpadeEnv
    assert vf.default_harness_id(ENV_ID) == ENV_ID  # the taskset brings its own harness
    config = vf.resolve_env_config({"taskset": {"id": ENV_ID, "run_dir": str(fake_run), "split": None}})
    env = vf.load_environment(config)
    assert isinstance(env, SpadeEnv) and isinstance(env.taskset, SpadeTaskset)
    assert isinstance(env._harnesses["solver"], SpadeChatHarness)
    assert env.config.solver.max_turns == 3 and env.config.solver.runtime.type == "subprocess"

    # the tasks are the run's GRPO export, row for row; split and data_files select the same rows
    out = tmp_path / "grpo.jsonl"
    export_run(fake_run, "grpo", out, ExportFilters())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    tasks = list(env.taskset)
    assert [t.data.task_id for t in tasks] == [r["task_id"] for r in rows]
    assert [[m.model_dump(include={"role", "content"}) for m in t.data.prompt] for t in tasks] == [
        r["prompt"] for r in rows
    ]
    assert [t.data.ground_truth for t in tasks] == [r["ground_truth"] for r in rows]
    assert {t.data.kind for t in tasks} == {"induction", "deduction", "abduction"}
    from_files = load_environment(data_files=out, split=None)
    assert [t.data.model_dump() for t in from_files.taskset] == [t.data.model_dump() for t in tasks]
    train, test = (list(load_environment(run_dir=fake_run, split=s).taskset) for s in ("train", "test"))
    assert sorted(t.key for t in train + test) == sorted(t.key for t in tasks)
    assert all(t.data.split == "train" for t in train) and all(t.data.split == "test" for t in test)

    with pytest.raises(UserError, match="exactly one of"):
        load_environment()
    with pytest.raises(UserError, match="exactly one of"):
        load_environment(run_dir=fake_run, url="http://127.0.0.1:1")
    with pytest.raises(UserError, match="SPADE_ENV_TOKEN"):
        load_environment(url="http://spade:sekrit@127.0.0.1:1")
    with pytest.raises(UserError, match="unknown keyword"):
        load_environment(run_dir=fake_run, tempreature=0.5)


def test_without_the_extra_the_import_fails_with_the_install_line() -> None:
    code = "import sys; sys.modules['verifiers'] = None; import spade_llm.integrations.verifiers"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == "ImportError: spade_llm.verifiers needs verifiers 0.4: pip install 'spade-selfplay[verifiers]'"


# -- rollouts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["strong-solver", "weak-solver"])
def test_a_rollout_against_serve_fake_earns_what_spades_judge_says(
    fake_run: Path, fake_server: Callable[..., Any], profile: str
) -> None:
    server = fake_server()
    env = load_environment(run_dir=fake_run, split=None)
    traces = play(env, server.url, profile)
    scores: list[float] = []
    for trace in traces:
        text = final_text(trace)
        assert text == trace.messages[-1].content  # the last answer, as the model wrote it
        judged = rewards.compute_score("spade_llm", text, trace.task.data.ground_truth)
        assert trace.reward == judged["score"] == trace.rewards["spade_reward"].score
        assert trace.metrics["tests_passed"] == judged["tests_passed"]
        assert trace.metrics["tests_total"] == judged["tests_total"]
        assert 1 <= trace.num_turns <= 3
        scores.append(float(judged["score"]))
    if profile == "strong-solver":
        assert sum(scores) >= len(scores) - 1
    assert server.stats.completions == sum(t.num_turns for t in traces)


def test_the_episode_is_the_loops_own_conversation(fake_run: Path, fake_server: Callable[..., Any]) -> None:
    """Replaying the answers the run's solver gave, the environment says exactly what the loop said:
    the same opening, the same repair prompts (public feedback), the same end, in all three kinds."""
    records = read_run(fake_run)
    longest: dict[str, Any] = {}
    for traj in records.trajectories:  # per task, the sample with the most turns
        if traj.task_id not in longest or len(traj.attempts) > len(longest[traj.task_id].attempts):
            longest[traj.task_id] = traj
    openings = {t.messages[1].content: t for t in longest.values()}

    def replay(messages: list[dict[str, str]]) -> str:
        traj = openings[messages[1]["content"]]
        answers = [m.content for m in traj.messages if m.role == "assistant"]
        return answers[sum(m["role"] == "assistant" for m in messages)]

    server = fake_server(backend=Scripted(replay))
    traces = play(load_environment(run_dir=fake_run, split=None), server.url)
    repaired = set()
    for trace in traces:
        traj = longest[trace.task.data.task_id]
        assert conversation(trace) == [(m.role, m.content) for m in traj.messages]
        assert (trace.reward == 1.0) == (traj.final_status == "passed")
        if len(traj.attempts) > 1:
            repaired.add(traj.kind)
    assert repaired == {"induction", "deduction", "abduction"}


def test_a_bugfix_episode_is_the_loops_own_conversation(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    """A bug-fix run (the kit's: the loop played by scripted fakes), replayed: the bug handed back unchanged gets
    the loop's own repair prompt, the fix after it passes, and the reward is the loop's verdict."""
    from bugfix_kit import make_bugfix_run

    from spade_llm.kinds.bugfix import UNCHANGED

    run = make_bugfix_run(tmp_path / "run")
    handed_back = {  # per task, the episode whose first answer was the bug itself
        t.messages[1].content: t for t in read_run(run).trajectories if t.attempts[0].result.load_error == UNCHANGED
    }
    assert len(handed_back) == 4

    def replay(messages: list[dict[str, str]]) -> str:
        answers = [m.content for m in handed_back[messages[1]["content"]].messages if m.role == "assistant"]
        return answers[sum(m["role"] == "assistant" for m in messages)]

    server = fake_server(backend=Scripted(replay))
    traces = play(load_environment(run_dir=run, split=None), server.url)
    assert len(traces) == 4
    for trace in traces:
        loop = handed_back[trace.messages[1].content]
        assert conversation(trace) == [(m.role, m.content) for m in loop.messages]
        assert UNCHANGED in trace.messages[3].content  # the feedback on the bug handed back
        assert trace.reward == 1.0 and loop.final_status == "passed" and trace.info["spade"]["kind"] == "bugfix"


def test_a_wrong_first_answer_gets_the_public_feedback_and_the_second_can_pass(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    model = Scripted(by_turn({"shout": [WRONG, RIGHT]}))
    server = fake_server(backend=model)
    [trace] = play(load_environment(data_files=rows_file(tmp_path / "rows.jsonl", SHOUT)), server.url)
    roles = [role for role, _ in conversation(trace)]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    feedback = trace.messages[3].content
    assert "0/3 public tests passed" in feedback
    for shown, expected in (("'abc'", "'ABC!'"), ("'hi'", "'HI!'"), ("'ok'", "'OK!'")):
        assert shown in feedback and expected in feedback and f"got {shown}" in feedback
    assert len(model.requests) == 2 and model.requests[1][-1] == {"role": "user", "content": feedback}
    assert trace.reward == 1.0 and trace.metrics["tests_passed"] == 5
    assert trace.info["spade"]["turns"] == 2


LEAKY = py(
    """
import os, sys, gc
def shout(s):
    seen = [repr(a) for a in sys.argv] + [f"{k}={v}" for k, v in os.environ.items()]
    for root, _, files in os.walk('.'):
        for name in files:
            try:
                seen.append(open(os.path.join(root, name), errors='replace').read())
            except OSError:
                pass
    texts = [repr(o)[:2000] for o in gc.get_objects() if isinstance(o, (tuple, list, dict))]
    print(s, seen, texts[:200], file=sys.stderr)
    raise ValueError(f"saw {s!r} and {' '.join(seen + texts)[-3000:]}")
"""
)


def test_no_hidden_test_reaches_a_message_in_any_kind(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    script = {
        "shout": [
            LEAKY,
            WRONG,
            py("def shout(s)\n    return s\n"),  # does not compile
            "I would rather not write code.",
            py("import sys\ndef shout(s):\n    print(s * 50, file=sys.stderr)\n    raise KeyError(s)\n"),
            PUBLIC_ONLY,  # passes the public tests: the episode ends, hidden tests still unseen
        ],
        "seal": [
            py("\n".join(f"seal({n}) == 'guess{n}'" for n in (1, 2, 3, 99, 1001)), "My predictions."),
            "no idea",
            py("seal(1) == 'zq7hidden'\nseal(2) == 'zq14hidden'\nseal(3) == 'zq21hidden'\nseal(99) == 'x'"),
        ],
        "grow_size": [
            py("grow_size('q') == 3\ngrow_size('') == 6\ngrow_size([1]) == 9\ngrow_size(None) == 72"),
            py("grow_size('a') == 3\ngrow_size('bb') == 6\ngrow_size('ccc') == 9\ngrow_size('x' * 24) == 72"),
        ],
    }
    model = Scripted(by_turn(script))
    server = fake_server(backend=model)
    env = load_environment(data_files=rows_file(tmp_path / "rows.jsonl", SHOUT, SEAL, SIZE), max_turns=8)
    traces = {t.task.data.kind: t for t in play(env, server.url)}

    secrets = {"induction": [SECRET], "deduction": list(SEAL_SECRETS), "abduction": [SECRET]}
    for kind, trace in traces.items():
        truth = trace.task.data.ground_truth.lower()
        assert all(s in truth for s in secrets[kind])  # the secrets are the task's hidden tests
        shown = [content for role, content in conversation(trace) if role != "assistant"]
        assert len(shown) >= 3  # the opening and feedback
        for text in shown:
            for secret in secrets[kind]:
                assert secret not in text.lower(), f"{kind}: a hidden test leaked into:\n{text}"
    assert [role for role, _ in conversation(traces["induction"])].count("assistant") == len(script["shout"])
    assert "ValueError: saw 'abc'" in traces["induction"].messages[3].content  # stderr is shown: public only
    for request in model.requests:  # nor did the model see one, anywhere in its requests
        for message in request:
            assert SECRET not in message["content"].lower()
            assert not any(s in message["content"] for s in SEAL_SECRETS if message["role"] != "assistant")


def test_max_turns_is_respected(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    model = Scripted(by_turn({"shout": [WRONG]}))
    server = fake_server(backend=model)
    rows = rows_file(tmp_path / "rows.jsonl", SHOUT)
    for max_turns, expected in ((1, 1), (2, 2), (4, 4), (None, 3)):
        before = len(model.requests)
        [trace] = play(load_environment(data_files=rows, max_turns=max_turns), server.url)
        assert trace.num_turns == expected == len(model.requests) - before
        assert [role for role, _ in conversation(trace)].count("user") == expected  # no feedback after the last
        assert trace.info["spade"]["turns"] == expected and trace.reward == 0.0
        assert trace.stop_condition == "user_closed" and not trace.is_truncated  # the env ended it, not a limit
    [trace] = play(load_environment(data_files=rows, solver={"max_turns": 2}), server.url)
    assert trace.num_turns == 2


@pytest.mark.parametrize("partial_credit", [False, True])
def test_the_rubric_scores_as_compute_score_and_code_reward(
    tmp_path: Path, fake_server: Callable[..., Any], partial_credit: bool
) -> None:
    answers = [
        RIGHT,
        WRONG,
        PUBLIC_ONLY,  # every public test, no hidden one
        py("def shout(s):\n    return s.upper() + '!' if len(s) < 3 else s\n"),  # 2 of 5
        SHOUT.reference_code,  # bare code: a trainer's reward wants the ```python block
        f"```\n{SHOUT.reference_code}```",  # an untagged block: the same
        "",
    ]
    rows = rows_file(tmp_path / "rows.jsonl", SHOUT)
    truth = json.loads(rows.read_text().splitlines()[0])["ground_truth"]
    model = Scripted(always(""))
    server = fake_server(backend=model)
    for answer in answers:
        model.answer = always(answer)
        env = load_environment(data_files=rows, max_turns=1, partial_credit=partial_credit)
        [trace] = play(env, server.url)
        assert final_text(trace) == answer
        judged = rewards.compute_score("spade_llm", answer, truth, partial_credit=partial_credit)
        reward = rewards.make_code_reward(partial_credit=partial_credit)
        completion = [{"role": "assistant", "content": answer}]
        assert trace.reward == judged["score"] == reward(completions=[completion], ground_truth=[truth])[0]
        assert trace.metrics["pass_fraction"] == judged["pass_fraction"]
        assert trace.info["spade_verdict"] == judged
    # an answer that passes the shown tests and none of the hidden ones is the hard-coding signature:
    # partial credit pays hidden tests only, so it earns nothing either way
    assert rewards.compute_score("spade_llm", PUBLIC_ONLY, truth, partial_credit=partial_credit)["score"] == 0.0


# -- url mode: spade serve-env ----------------------------------------------------------------------------


def test_url_mode_plays_serve_env_episodes(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    if importlib.util.find_spec("openenv") is None:
        skip_unless_required("openenv-core is not installed: pip install 'spade-selfplay[env]'")
    (tmp_path / "kinds.yaml").write_text(KINDS_CONFIG)
    argv = [sys.executable, "-m", "spade_llm.cli", "serve-env", "--model", "fake", "--epochs", "1"]
    argv += ["--config", str(tmp_path / "kinds.yaml"), "--tasks-per-epoch", "3", "--samples-per-task", "1"]
    argv += ["--sandbox", "subprocess"]
    proc = subprocess.Popen(
        [*argv, "--port", "0", "--out", str(tmp_path / "env-run")], stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "listening on" in line:
                listening.set()
        listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert listening.wait(60), "".join(lines)
        match = re.search(r"listening on (http://\S+)", "".join(lines))
        assert match, "".join(lines)
        server = fake_server()
        env = load_environment(url=match.group(1), episodes=3)
        traces = play(env, server.url, "weak-solver")
        assert proc.wait(60) == 0, "".join(lines)  # the run's one epoch is done: the server stops by itself
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    data = read_run(tmp_path / "env-run")
    recorded = {t.task_id: t for t in data.trajectories}
    tasks = {t.task_id: t for t in data.tasks}
    assert len(recorded) == 3
    for trace in traces:
        served = trace.info["spade"]
        assert served["done"] is True and trace.task.data.ground_truth is None
        traj = recorded[served["task_id"]]
        assert conversation(trace) == [(m.role, m.content) for m in traj.messages]  # one episode, turn for turn
        # one reward: the server's, verifiers', and verl's compute_score on the last answer, 1.0 or 0.0
        truth = ground_truth(tasks[traj.task_id], traj.attempts[-1].public_total if traj.attempts else 0)
        judged = rewards.compute_score("spade_llm", final_text(trace), truth)["score"]
        assert trace.reward == served["reward"] == judged == (1.0 if traj.final_status == "passed" else 0.0)
        assert served["final_status"] == traj.final_status and trace.num_turns == len(traj.attempts)


TOKEN = "tok-SECRET-6d1f9a2b3c4d5e6f"


def episode_of(env: Any, base_url: str = "http://127.0.0.1:9/v1") -> Any:
    """One url-mode episode through verifiers' API, failed or not (``play`` wants it to pass)."""
    ctx = vf.ModelContext(model="weak-solver", client=vf.EvalClientConfig(base_url=base_url, api_key_var="NO_KEY"))

    async def go() -> Any:
        async with env.serving():
            return await env.run_episode(next(iter(env.taskset)), ctx)

    return asyncio.run(go())


def test_the_serve_env_token_is_in_no_task_and_no_episode_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35, finding 16: a685e31 put the token in the connection URL, which openenv-core's connection
    error prints: into the episode's recorded error."""
    if importlib.util.find_spec("openenv") is None:
        skip_unless_required("openenv-core is not installed: pip install 'spade-selfplay[env]'")
    monkeypatch.setenv("SPADE_ENV_TOKEN", TOKEN)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed once the block ends: refused
    env = load_environment(url=url, episodes=2)
    tasks = list(env.taskset)
    assert [t.data.url for t in tasks] == [url] * 2
    assert TOKEN not in json.dumps([t.data.model_dump() for t in tasks])
    episode = episode_of(load_environment(url=url, episodes=1))
    assert not episode.ok and episode.errors
    assert "Failed to connect" in episode.errors[0].message
    assert TOKEN not in episode.model_dump_json()  # errors, traces, everything the episode records


def test_url_mode_sends_the_token_as_a_header(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    if importlib.util.find_spec("openenv") is None:
        skip_unless_required("openenv-core is not installed: pip install 'spade-selfplay[env]'")
    from serve_env_kit import SMALL, ServeEnv

    server = ServeEnv(
        [*SMALL, "--sandbox", "subprocess", "--out", str(tmp_path / "env-run")], env={"SPADE_ENV_TOKEN": TOKEN}
    )
    model = fake_server()
    try:
        with pytest.MonkeyPatch.context() as mp:
            wrong = "tok-WRONG-0a9b8c7d6e5f4a3b"
            mp.setenv("SPADE_ENV_TOKEN", wrong)
            refused = episode_of(load_environment(url=server.url, episodes=1), model.url)
            assert not refused.ok and "401" in refused.errors[0].message
            assert TOKEN not in refused.model_dump_json() and wrong not in refused.model_dump_json()
            mp.setenv("SPADE_ENV_TOKEN", TOKEN)
            played = episode_of(load_environment(url=server.url, episodes=1), model.url)
            assert played.ok, [e.message for e in played.errors]
            assert played.traces[0].info["spade"]["task_id"]
            assert TOKEN not in played.model_dump_json()
    finally:
        server.kill()


def test_url_mode_rollouts_of_one_task_play_one_served_task(tmp_path: Path, fake_server: Callable[..., Any]) -> None:
    # verifiers runs each task rollouts_per_example times; with group_size they are one serve-env group
    if importlib.util.find_spec("openenv") is None:
        skip_unless_required("openenv-core is not installed: pip install 'spade-selfplay[env]'")
    from serve_env_kit import ServeEnv

    server = ServeEnv(
        ["--model", "fake/default", "--tasks-per-epoch", "4", "--samples-per-task", "4", "--seed", "0",
         "--sandbox", "subprocess", "--out", str(tmp_path / "env-run")]
    )  # fmt: skip
    model = fake_server()
    try:
        env = load_environment(url=server.url, episodes=2, group_size=4)
        tasks = list(env.taskset)
        traces = play(env, model.url, "weak-solver", tasks=[t for t in tasks for _ in range(4)])
    finally:
        server.kill()
    served = [trace.info["spade"]["task_id"] for trace in traces]
    assert len(set(served[:4])) == 1 and len(set(served[4:])) == 1, served
    assert served[0] != served[4]


def test_url_mode_groups_of_four_over_three_steps_and_an_epoch_never_wait_once_the_pool_is_full(
    tmp_path: Path, fake_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # rollouts_per_example=4 as verifiers runs it: each of 3 steps plays one task 4 times; 2 tasks x 4 samples
    # an epoch, so the third step's group plays epoch 1, made while epoch 0 was played (env.overlap)
    if importlib.util.find_spec("openenv") is None:
        skip_unless_required("openenv-core is not installed: pip install 'spade-selfplay[env]'")
    import time

    from serve_env_kit import NotedClients, ServeEnv

    from spade_llm.integrations import verifiers as served_env

    resets = NotedClients().watch(monkeypatch, served_env).resets
    run = tmp_path / "env-run"
    server = ServeEnv(
        ["--model", "fake/default", "--tasks-per-epoch", "2", "--samples-per-task", "4", "--seed", "0",
         "--sandbox", "subprocess", "--out", str(run)]
    )  # fmt: skip
    model = fake_server()
    served: list[str] = []
    try:
        env = load_environment(url=server.url, episodes=3, group_size=4)
        for step, task in enumerate(list(env.taskset)):
            if step:  # the trainer's update between two steps
                deadline = time.monotonic() + 60
                while f'"task_id":"e{step // 2}-' not in (run / "tasks.jsonl").read_text():
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            traces = play(env, model.url, "weak-solver", tasks=[task] * 4)
            served += [trace.info["spade"]["task_id"] for trace in traces]
    finally:
        server.kill()
    groups = [served[i : i + 4] for i in range(0, 12, 4)]
    assert all(len(set(g)) == 1 for g in groups) and len({g[0] for g in groups}) == 3, groups
    assert {g[0].split("-")[0] for g in groups} == {"e0", "e1"}  # across the epoch boundary
    assert len(resets) == 12 and max(resets[4:]) < 1.0, resets  # once the pool is full, no reset waits
