"""A real bug-fix run without the fake model's injector: the loop's own ``Session`` played by two
function-driven fakes (``spade_llm.fake.scripted.FunctionLLM``), so every record (proposals, gates,
episodes, stats, metrics) is written by the code under test, never by hand.

The generator writes two bug-fix tasks from scratch in epoch 0 (each prompt's second answer a bug that
breaks every test: a rejected answer beside a kept one) and, in epoch 1, a second bug in each base task
the run shows it (its second answer the base's own bug again: a duplicate). The solver plays each
episode by its sample index: 0 and 3 fix the bug at once, 1 hands the buggy code back unchanged and fixes
it after the feedback, 2 never fixes it. So each task is passed by 3 of 4 samples (learnability 0.25):
sft and dpo rows, repair and samples pairs, learnable generator answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spade_llm.config import load_config
from spade_llm.fake.scripted import FunctionLLM
from spade_llm.llm.base import LLMRequest
from spade_llm.session import Session
from spade_llm.store import RunDir

TOTAL = "def total_upto(n):\n    s = 0\n    for i in range(1, n + 1):\n        s += i\n    return s\n"
FIRST_NEG = (
    "def first_negative(xs):\n    for i, x in enumerate(xs):\n        if x < 0:\n            return i\n    return -1\n"
)
TASKS: dict[str, dict[str, Any]] = {
    "total_upto": {
        "description": "Return 1 + 2 + ... + n for n >= 0. Example: total_upto(3) == 6.",
        "entry_point": "total_upto",
        "reference_code": TOTAL,
        "tests": [{"input": f"({n},)"} for n in (3, 0, 1, 5, 10, 7)],
        "difficulty": 0.4,
        "tags": ["arithmetic"],
    },
    "first_negative": {
        "description": "Return the index of the first negative number of the list xs, or -1 when it has none.",
        "entry_point": "first_negative",
        "reference_code": FIRST_NEG,
        "tests": [{"input": repr((xs,))} for xs in ([3, -1, 2], [], [0, -5], [1, 2, 3], [0], [4, 0, -2, 7], [-3])],
        "difficulty": 0.4,
        "tags": ["lists"],
    },
}
BUGS: dict[str, list[str]] = {
    "total_upto": [
        TOTAL.replace("range(1, n + 1)", "range(1, n)"),
        TOTAL.replace("range(1, n + 1)", "range(2, n + 1)"),
        TOTAL.replace("return s", "return s - n"),
    ],
    "first_negative": [
        FIRST_NEG.replace("x < 0", "x <= 0"),
        FIRST_NEG.replace("return i\n", "return i + 1\n"),
        FIRST_NEG.replace("enumerate(xs)", "enumerate(xs[1:])"),
    ],
}
"""Each task's bugs: the first written with the task (epoch 0), the others on it as a base (epoch 1: one
per prompt, so two prompts on one base make two bugs)."""
BREAKS_ALL: dict[str, str] = {
    "total_upto": TOTAL.replace("s = 0", "s = 1"),
    "first_negative": FIRST_NEG.replace("return -1", "return -2").replace("return i\n", "return i - 9\n"),
}
"""A bug every test catches: rejected as ``bug_breaks_all``."""
WRONG_FIX: dict[str, str] = {
    "total_upto": "def total_upto(n):\n    return n * n\n",  # wrong otherwise than the bug (n * (n - 1) // 2 is it)
    "first_negative": "def first_negative(xs):\n    return -1\n",
}
CONFIG: dict[str, Any] = {
    "seed": 3,
    "controller": {"epochs": 2, "tasks_per_epoch": 2, "concurrency": 2},
    "curriculum": {"kinds": ["bugfix"]},
    "bugfix": {"base_share": 1.0},  # every epoch-1 prompt on a base
    "generator": {"samples_per_request": 2},
    "solver": {"samples_per_task": 4, "max_turns": 2, "public_tests": 3},
}


def _named(text: str) -> str:
    """The task a prompt is about: the first of ``TASKS`` whose entry point it names (the base's, or the
    one the epoch's prompt index gives when it names none)."""
    for name in TASKS:
        if f"`{name}`" in text:
            return name
    raise AssertionError(f"no known task in the prompt: {text[:300]!r}")


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def propose(request: LLMRequest) -> str:
    """The generator: a task with its bug (epoch 0, a task per prompt), or a bug in the base shown (epoch 1)."""
    text = request.messages[-1].content
    prompt, sample = divmod(int(request.metadata["request_index"]), 2)
    if "proven sound" in text:  # a base task is shown: break its reference (the second answer: its own bug again)
        name = _named(text)
        return json.dumps({"tasks": [{"buggy_code": BUGS[name][0 if sample else 1 + prompt], "difficulty": 0.5}]})
    name = list(TASKS)[prompt % len(TASKS)]
    bug = BUGS[name][0] if sample == 0 else BREAKS_ALL[name]
    return json.dumps({"tasks": [{**TASKS[name], "buggy_code": bug}]})


def solve(request: LLMRequest) -> str:
    """The solver: its answer by sample index and turn (module docstring)."""
    first = next(m.content for m in request.messages if m.role == "user")
    name = _named(first)
    sample, turn = int(request.metadata["sample_index"]), int(request.metadata["turn"])
    buggy = re.search(r"```python\n(.*?)```", first, re.S)
    assert buggy is not None, first
    if sample == 2:
        return fenced(WRONG_FIX[name])
    if sample == 1 and turn == 1:
        return fenced(buggy.group(1))  # the bug handed back unchanged: scores nothing
    return fenced(TASKS[name]["reference_code"])


def make_bugfix_run(path: Path, backend: str = "subprocess", **overrides: Any) -> Path:
    """A two-epoch bug-fix run at ``path`` (module docstring), on the sandbox ``backend``."""
    config = load_config(None, {**CONFIG, "sandbox": {"backend": backend}, **overrides})
    with Session(config, solver_model=FunctionLLM(solve, model="scripted-solver")) as session:
        session.gen_llm = FunctionLLM(propose, model="scripted-generator")
        session.run(RunDir.create(path), log=lambda _line: None)
    return path
