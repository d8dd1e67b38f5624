"""A hosted model without its key is a user's mistake told at once (exit 2, no run directory), and a key
written into a config is pointed to the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import spade_llm.llm.transport as transport
from spade_llm.cli.app import main
from spade_llm.config import RoleConfig


def missing_key(role: RoleConfig) -> str | None:
    from spade_llm.llm.registry import missing_key  # here: the CLI tests run (and fail) on a tree without it

    return missing_key(role)


TASK = {
    "task_id": "add",
    "description": "Add two numbers.",
    "entry_point": "add",
    "reference_code": "def add(a, b):\n    return a + b\n",
    "tests": [
        {"input": "(1, 2)", "expected": 3},
        {"input": "(3, 4)", "expected": 7},
        {"input": "(0, 0)", "expected": 0},
    ],
}


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No key in the environment, and a working directory without a ``.env``; every variable a
    ``.env`` read here may set is put back afterwards."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GROQ_API_KEY"):
        monkeypatch.setenv(name, "placeholder")  # recorded, so that teardown restores the real state
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", ["run", "solve"])
def test_a_missing_key_is_exit_2_before_anything_is_made(
    no_keys: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    tasks = no_keys / "t.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n")
    out = no_keys / "out"
    argv = ["run", "--epochs", "1"] if command == "run" else ["solve", str(tasks)]
    assert main([*argv, "--model", "openai/gpt-4o-mini", "--sandbox", "auto", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "OPENAI_API_KEY" in err[0] and ".env" in err[0], err
    assert "--resume" not in err[0] and "--api-base" in err[0]  # no advice that cannot help
    assert not out.exists() and not (no_keys / "runs").exists()


def test_missing_key_reads_dotenv_and_refuses_an_empty_value(no_keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    role = RoleConfig(model="openai/gpt-4o-mini")
    assert missing_key(role) == "OPENAI_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "")  # a .env template's OPENAI_API_KEY=
    assert missing_key(role) == "OPENAI_API_KEY"
    monkeypatch.delenv("OPENAI_API_KEY")
    (no_keys / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-123\n")
    assert missing_key(role) is None


def test_no_key_is_asked_for_a_server_of_ones_own_or_the_fake_model(no_keys: Path) -> None:
    assert missing_key(RoleConfig(model="openai/qwen", api_base="http://127.0.0.1:8000/v1")) is None
    assert missing_key(RoleConfig(model="anthropic/claude-x", api_base="http://proxy:4000")) is None
    assert missing_key(RoleConfig(model="fake/default")) is None
    assert missing_key(RoleConfig(model="anthropic/claude-3-5-sonnet")) == "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"


def test_other_providers_ask_litellm(no_keys: Path) -> None:
    pytest.importorskip("litellm")
    assert missing_key(RoleConfig(model="groq/llama3-8b-8192")) == "GROQ_API_KEY"
    assert missing_key(RoleConfig(model="gpt-4o-mini")) == "OPENAI_API_KEY"  # litellm's name for openai/...
    assert missing_key(RoleConfig(model="ollama/llama3")) is None  # a local server: no key
    assert missing_key(RoleConfig(model="bedrock/anthropic.claude-v2")) is None  # AWS signs in many ways


def test_openai_with_an_api_base_still_needs_no_key(
    no_keys: Path, monkeypatch: pytest.MonkeyPatch, fake_server, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(transport, "ALLOW_MODEL_REQUESTS", True)  # only our server on 127.0.0.1
    server = fake_server()
    tasks = no_keys / "t.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n")
    out = no_keys / "out"
    argv = ["solve", str(tasks), "--model", "openai/fake", "--api-base", server.url, "--sandbox", "auto"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert (out / "trajectories.jsonl").read_text().strip()


@pytest.mark.parametrize("section", ["llm", "generator", "solver"])
def test_an_api_key_in_the_config_points_to_the_environment(
    no_keys: Path, capsys: pytest.CaptureFixture[str], section: str
) -> None:
    config = no_keys / "c.yaml"
    config.write_text(yaml.safe_dump({section: {"api_key": "sk-in-the-config-123"}}))
    assert main(["run", "--config", str(config), "--out", str(no_keys / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"{section}.api_key" in err[0] and "OPENAI_API_KEY" in err[0] and ".env" in err[0]
    assert "Extra inputs" not in err[0] and "sk-in-the-config-123" not in err[0]
    assert not (no_keys / "out").exists()
