"""``spade export RUN --format harbor``: each task as a Harbor task directory.

Harbor's task format (harborframework.com, "Tasks") is what verifiers' ``HarborEnv``, SkyRL, NeMo Gym,
rLLM and TRL's examples read: a folder per task with

* ``task.toml``: the configuration (version, metadata, the verifier's and the agent's timeouts, the
  environment's resources);
* ``instruction.md``: what the agent is asked: the solver's first prompt (the kind's template, public
  tests included), and where to write the answer, ``/app/solution.py``;
* ``environment/Dockerfile``: a ``python:3.11-slim`` image working in ``/app``;
* ``solution/solve.sh``: the oracle, writing the task's reference to ``/app/solution.py``;
* ``tests/test.sh``: the verifier Harbor runs after the agent: ``tests/judge.py`` judges the solution
  on every test (public and hidden, in ``tests/tests.json``, which the agent never sees) and the
  script writes the reward, 1 when every test passes and 0 otherwise, to ``/logs/verifier/reward.txt``.

``judge.py`` is standard-library Python (the image has nothing else). It judges as the loop does: a
function task's answer called on each test's arguments, its value compared with the loop's rule
(``True`` is not ``1``, ``1`` is not ``1.0``, floats within a relative ``1e-9``, a tuple equals a
list); a ``program`` task's answer run on each test's stdin under its time limit, its stdout compared
by the output rule, or for a task with a ``checker`` (several outputs are right) handed to the checker
by its contract (``sandbox/stdio.py``: one JSON object ``{"input", "expected", "actual"}`` on its
stdin, exit 0 to accept), which runs as a child of its own under ``CHECKER_CPU_S``. Each test runs in
a child process of its own session, killed at its end. It is
weaker than spade's sandbox: the answer runs in the agent's container as an ordinary process, as
Harbor's own verifiers do. Kinds whose answer is no program (``deduction``, ``abduction``),
imported tasks judged by an assert script, tasks with a test whose expected value has no JSON form
(``TestCase.literal_only``: a set, bytes) and tasks whose answer is a method of a class or runs after a
prelude (``Task.entry_class``, ``Task.prelude``: LiveCodeBench's LeetCode problems) are left out, counted
by reason. Paths can be moved with
``SPADE_SOLUTION`` and ``SPADE_VERIFIER_LOGS`` (tests run the script outside a container so).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..kinds import get_kind
from ..rewards.groundtruth import LEFT_OUT_METHOD
from ..sandbox.stdio import CHECKER_CPU_S
from ..solver import first_messages
from ..templates import Prompts
from ..types import Task

__all__ = ["HarborExport", "write_harbor"]

SOLUTION_PATH = "/app/solution.py"
TASK_TOML = """version = "1.0"

[metadata]
author_name = "spade_llm"
difficulty = "{tier}"
category = "programming"
tags = {tags}
spade_task_id = "{task_id}"
spade_kind = "{kind}"

[verifier]
timeout_sec = {verifier_timeout}

[agent]
timeout_sec = 600.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
storage_mb = 10240
"""
DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\n"
TEST_SH = """#!/bin/bash
# spade_llm's verifier: judge the solution on every test of tests/tests.json, write the reward
# (1: every test passed, 0: not) where Harbor reads it.
SOLUTION="${SPADE_SOLUTION:-/app/solution.py}"
LOGS="${SPADE_VERIFIER_LOGS:-/logs/verifier}"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$LOGS"
echo 0 > "$LOGS/reward.txt"
if python3 "$HERE/judge.py" "$SOLUTION" "$HERE/tests.json" > "$LOGS/judge.log" 2>&1; then
    echo 1 > "$LOGS/reward.txt"
fi
"""


@dataclass
class HarborExport:
    """What a Harbor export wrote: where, how many task folders, and what it left out (reason -> ids)."""

    path: Path
    tasks: int = 0
    left_out: dict[str, list[str]] = field(default_factory=dict)

    def describe(self) -> str:
        lines = [f"{self.tasks} Harbor task folders -> {self.path}"]
        for reason, ids in self.left_out.items():
            shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            lines.append(f"left out {len(ids)} tasks ({reason}): {shown}")
        return "\n".join(lines)


def _folder_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", task_id).strip("-.") or "task"


def _heredoc(text: str) -> str:
    """A heredoc delimiter that no line of ``text`` is."""
    mark = "SPADE_SOLUTION_EOF"
    while any(line.strip() == mark for line in text.splitlines()):
        mark += "_"
    return mark


def _why_not(task: Task) -> str | None:
    kind = get_kind(task.kind)
    if kind.field_tests is None:
        return "its answer is no program"
    if task.check_code is not None:
        return "judged by an assert script"
    if any(not t.has_expected for t in task.tests):
        return "a test without its expected value"
    if any(t.literal_only for t in task.tests):
        return "a test whose expected value has no JSON form"  # the judge reads expected values as JSON
    if task.entry_class is not None or task.prelude:  # judge.py calls a module's function, with no prelude
        return LEFT_OUT_METHOD
    return None


@functools.cache
def judge_script() -> str:
    """``tests/judge.py`` of every folder: ``static/harbor_judge.py.txt`` (package data; standard-library
    Python that runs in the task's container, not in spade)."""
    return (resources.files(__package__) / "static" / "harbor_judge.py.txt").read_text(encoding="utf-8")


def _files(task: Task, tier: str, instruction: str, test_timeout_s: float) -> dict[str, str]:
    kind = get_kind(task.kind)
    cpu_s = task.time_limit_s or test_timeout_s
    spec: dict[str, Any] = {
        "judge": kind.field_tests,
        "entry_point": task.entry_point,
        "time_limit_s": cpu_s,
        "tests": [{"input": t.input, "expected": t.expected} for t in task.tests],
    }
    per_test = 10 * cpu_s + 1  # a test's wall limit
    if task.checker is not None:
        spec.update(checker=task.checker, checker_cpu_s=CHECKER_CPU_S)
        per_test += 10 * CHECKER_CPU_S + 1
    reference = task.reference_code if task.reference_code.endswith("\n") else task.reference_code + "\n"
    mark = _heredoc(reference)
    verifier = round(60.0 + len(task.tests) * per_test, 1)  # every test at its wall limits, and slack
    return {
        "task.toml": TASK_TOML.format(
            tier=tier,
            tags=json.dumps(task.tags),
            task_id=task.task_id,
            kind=task.kind,
            verifier_timeout=verifier,
        ),
        "instruction.md": instruction,
        "environment/Dockerfile": DOCKERFILE,
        "solution/solve.sh": f"#!/bin/bash\ncat > {SOLUTION_PATH} <<'{mark}'\n{reference}{mark}\n",
        "tests/test.sh": TEST_SH,
        "tests/judge.py": judge_script(),
        "tests/tests.json": json.dumps(spec, indent=1) + "\n",
    }


def write_harbor(
    records: list[tuple[Task, str]],
    output: Path,
    *,
    public_tests: int,
    prompts_dir: str | None,
    test_timeout_s: float,
) -> HarborExport:
    """A Harbor task folder under ``output`` for each (task, difficulty tier) that can be one; the folder is
    written beside and renamed into place, so an export that fails leaves no half-written tree.

    Raises:
        UserError: ``output`` exists and is not an empty directory, or cannot be written.
    """
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise UserError(f"{output} exists and is not an empty folder: Harbor tasks are written into a new one")
    prompts = Prompts(prompts_dir)
    result = HarborExport(output)
    staging = output.with_name(f".{output.name}.tmp")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for task, tier in records:
            why = _why_not(task)
            if why is not None:
                result.left_out.setdefault(why, []).append(task.task_id)
                continue
            user = [m.content for m in first_messages(prompts, task, public_tests) if m.role == "user"]
            instruction = user[-1].rstrip() + f"\n\nWrite it to `{SOLUTION_PATH}`: that file is what is graded.\n"
            folder = staging / _folder_name(task.task_id)
            for name, text in _files(task, tier, instruction, test_timeout_s).items():
                path = folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                if name.endswith(".sh"):
                    path.chmod(0o755)
            result.tasks += 1
        if output.exists():
            output.rmdir()
        staging.rename(output)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        raise UserError(f"cannot write {output}: {e.strerror or e}") from None
    return result
