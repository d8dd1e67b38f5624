"""The import paths users type keep working after the move into area packages (issue 36): each is the
object the implementation defines, not a copy."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

PATHS = [
    ("spade_llm.rewards", "compute_score", "spade_llm.rewards.code"),
    ("spade_llm.rewards", "compute_score_async", "spade_llm.rewards.code"),
    ("spade_llm.rewards", "code_reward", "spade_llm.rewards.code"),
    ("spade_llm.rewards", "make_code_reward", "spade_llm.rewards.code"),
    ("spade_llm.rewards", "proposal_compute_score", "spade_llm.rewards.proposal"),
    ("spade_llm.proposal_reward", "proposal_compute_score", "spade_llm.rewards.proposal"),
    ("spade_llm.proposal_reward", "proposal_reward", "spade_llm.rewards.proposal"),
    ("spade_llm.trl", "SpadeCodingEnv", "spade_llm.integrations.trl"),
    ("spade_llm.trl", "SpadeLiveEnv", "spade_llm.integrations.trl"),
    ("spade_llm.trl", "AsyncSpadeCodingEnv", "spade_llm.integrations.trl"),
    ("spade_llm.verl", "write_live_files", "spade_llm.integrations.verl"),
    ("spade_llm.verl", "main", "spade_llm.integrations.verl"),
    ("spade_llm", "read_run", "spade_llm.store.records"),
    ("spade_llm", "Task", "spade_llm.types"),
    ("spade_llm.cli", "main", "spade_llm.cli.app"),
]


@pytest.mark.parametrize(("path", "name", "home"), PATHS, ids=[f"{p}.{n}" for p, n, _ in PATHS])
def test_a_user_path_names_the_implementation(path: str, name: str, home: str) -> None:
    assert getattr(importlib.import_module(path), name) is getattr(importlib.import_module(home), name)


def test_verls_pkg_path_loads_the_reward_as_verl_does() -> None:
    # verl's custom_reward_function.path=pkg://spade_llm.rewards: import the module, take the name
    spec = importlib.util.find_spec("spade_llm.rewards")
    assert spec is not None and spec.origin is not None
    module = importlib.import_module("spade_llm.rewards")
    assert callable(module.compute_score) and "compute_score" in module.__all__


def test_the_verifiers_id_and_the_documented_module_name_one_environment() -> None:
    pytest.importorskip("verifiers", reason="the verifiers extra is not installed here")
    import spade_llm.verifiers as documented
    import spade_selfplay

    assert spade_selfplay.load_environment is documented.load_environment


def test_python_dash_m_runs_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "spade_llm.cli", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("spade "), done.stderr
