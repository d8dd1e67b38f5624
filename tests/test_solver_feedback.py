"""Hidden tests never reach the solver: its feedback comes only from executions of the public tests.

The model is a scripted OpenAI-compatible endpoint (respx at the HTTP level, through the direct
transport), so what is checked is exactly what a real server would have received.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import respx

from spade_llm.config import load_config
from spade_llm.session import Session
from spade_llm.solver import MIN_HIDDEN_TESTS, split_tests
from spade_llm.store import RunDir
from spade_llm.types import ExecutionResult, Task, TestCase, TestResult

BASE = "http://127.0.0.1:9/v1"
PUBLIC = ["PUB_alpha", "PUB_beta", "PUB_gamma"]
HIDDEN = ["SECRET_delta_77", "SECRET_epsilon_88", "SECRET_zeta_99"]
TASK = {
    "description": "Return the length of `s` times two, plus one. Example: f('ab') == 5.",
    "entry_point": "f",
    "reference_code": "def f(s):\n    return len(s) * 2 + 1\n",
    "tests": [{"input": repr((x,))} for x in PUBLIC + HIDDEN],
    "difficulty": 0.4,
    "tags": ["strings"],
}
LEAKY = [
    # prints its argument, then raises with it: every input it sees ends up in stdout and stderr
    "```python\nimport sys\ndef f(s):\n    print('saw', s)\n    print('saw', s, file=sys.stderr)\n"
    "    raise ValueError('bad input ' + s)\n```",
    # hard-codes what it was shown and prints the rest
    "```python\nimport sys\ndef f(s):\n    print(s, file=sys.stderr)\n    return {'PUB_alpha': 19}.get(s, -1)\n```",
    # passes the public tests, and would shout every hidden input if that output were shown
    "```python\ndef f(s):\n    if not s.startswith('PUB'):\n        raise KeyError(s)\n    return len(s) * 2 + 1\n```",
]


def _answer(content: str) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        },
    )


@pytest.fixture
def endpoint(allow_model_requests):
    """The scripted endpoint: ``script`` is the solver's answers by turn; ``bodies`` what it received."""
    state = SimpleNamespace(bodies=[], script=LEAKY)

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        state.bodies.append(body)
        if body.get("response_format"):  # the generator asks for JSON
            return _answer(json.dumps({"tasks": [TASK]}))
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        return _answer(state.script[min(turn, len(state.script) - 1)])

    with respx.mock(assert_all_called=False) as mock:
        mock.post(f"{BASE}/chat/completions").mock(side_effect=reply)
        yield state


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2], [2, 2, 2]])
def test_no_hidden_input_reaches_any_request_over_three_turns(tmp_path: Path, endpoint, order):
    endpoint.script = [LEAKY[i] for i in order]
    config = load_config(
        None,
        {
            "generator": {"model": "openai/scripted", "api_base": BASE},
            "solver": {"model": "openai/scripted", "api_base": BASE, "max_turns": 3, "public_tests": 3},
            "controller": {"epochs": 1, "tasks_per_epoch": 1, "concurrency": 1},
            "sandbox": {"backend": "subprocess"},
        },
    )
    run = RunDir.create(tmp_path / "run")
    with Session(config) as session:
        session.run(run, log=lambda _m: None)
    solver_bodies = [b for b in endpoint.bodies if not b.get("response_format")]
    assert solver_bodies, "the solver was never asked"
    sent = "\n".join(m["content"] for b in solver_bodies for m in b["messages"])
    for secret in HIDDEN:
        assert secret not in sent, f"hidden input {secret} reached the model"
    trajectories = [json.loads(x) for x in (run.path / "trajectories.jsonl").read_text().splitlines()]
    (traj,) = trajectories
    assert traj["final_status"] != "passed"
    if order[0] != 2:  # a public failure happened: it was fed back, with its input
        repairs = [m["content"] for m in traj["messages"][3::2]]
        assert repairs and any(p in r for r in repairs for p in PUBLIC)
    if order == [2, 2, 2]:  # public tests pass, hidden fail: one turn, flagged
        assert len(traj["attempts"]) == 1 and "hardcoded_suspect" in traj["flags"]
        assert traj["attempts"][0]["hidden_passed"] == 0 and traj["attempts"][0]["public_passed"] == 3


def _task(n: int) -> Task:
    return Task(
        task_id="t",
        description="d",
        entry_point="f",
        reference_code="def f(x): return x",
        tests=[TestCase(input=f"({i},)", expected=i) for i in range(n)],
    )


@pytest.mark.parametrize("n_tests", range(1, 12))
@pytest.mark.parametrize("public_tests", [1, 2, 3, 5, 8])
def test_split_keeps_two_hidden_tests_whenever_it_can(n_tests, public_tests):
    public, hidden = split_tests(_task(n_tests), public_tests)
    assert public + hidden == list(range(n_tests))
    assert 1 <= len(public) <= max(1, public_tests)
    if n_tests >= 1 + MIN_HIDDEN_TESTS:
        assert len(hidden) >= MIN_HIDDEN_TESTS


# -- a turn's feedback is bounded, whatever the program printed (issue 35, finding 21) ------------------

BIG = 1 << 20
"""What a program's output may reach in the sandbox (``sandbox.output_limit_bytes``)."""
FEEDBACK_BOUND = 16_000
"""A turn's feedback, its template's own text included, over three public tests."""


def _big_result(shape: str, n: int) -> ExecutionResult:
    huge = "".join(chr(0x41 + (i * 7 + n) % 26) for i in range(64)) * (BIG // 64)
    output = repr(huge) if shape == "output" else "1"
    error = f"ValueError: {huge}" if shape == "error" else None
    if shape == "stderr-line":
        stderr = "Traceback (most recent call last):\n" + huge + "\n"
    elif shape == "stderr-lines":
        stderr = "\n".join(f"line {i}: {huge[:900]}" for i in range(2000))
    else:
        stderr = ""
    results = [
        TestResult(index=i, input=f"({i},)", status="error" if error else "failed", output=output, error=error)
        for i in range(3)
    ]
    return ExecutionResult(status="ok", stdout="", stderr=stderr, tests_passed=0, tests_total=3, test_results=results)


def _solver() -> Any:
    from spade_llm.fake.scripted import FunctionLLM
    from spade_llm.solver import LLMSolver
    from spade_llm.templates import Prompts

    async def judge(task: Task, code: str, which: Any, *, language: str = "python") -> ExecutionResult:
        raise AssertionError("not judged here")

    llm = FunctionLLM(lambda _r: "", model="scripted")
    return LLMSolver(llm, Prompts(), judge, seed=0, max_turns=3, public_tests=3, temperature=0.0, max_tokens=64)


@pytest.mark.parametrize("shape", ["output", "error", "stderr-line", "stderr-lines", "big-input"])
@pytest.mark.parametrize("kind", ["induction", "deduction", "abduction"])
@pytest.mark.parametrize("n", range(3))
def test_a_turns_feedback_is_bounded_and_the_same_each_time(shape, kind, n):
    from spade_llm.types import Attempt

    task = _task(6).model_copy(update={"kind": kind})
    if shape == "big-input":  # the task's own public tests, as long as a generator could make them
        task = task.model_copy(
            update={"tests": [TestCase(input=f"({'9' * BIG},)", expected="x" * BIG) for _ in range(6)]}
        )
    solver = _solver()
    result = _big_result(shape, n)
    attempt = Attempt(turn=1, code="def f(x):\n    return x\n", result=result)
    first = solver.repair_message(task, attempt, result).content
    assert len(first) < FEEDBACK_BOUND, (shape, kind, len(first))
    assert first == solver.repair_message(task, attempt, result).content  # the same records every run
    if shape in ("output", "error", "stderr-line") and kind == "induction":
        assert "characters cut]" in first  # told, not silently dropped


def test_small_feedback_is_left_as_it_was():
    from spade_llm.solver import clip, stderr_tail

    assert clip("x" * 500) == "x" * 500 and len(clip("x" * 501)) < 560
    trace = "Traceback (most recent call last):\n  File 'a.py', line 1\n\n    f()\nValueError: bad\n"
    assert stderr_tail(trace, 15) == "\n".join(line for line in trace.splitlines() if line)
    assert stderr_tail(trace, 2) == "    f()\nValueError: bad"
