"""``spade train`` without what it needs: one line naming the install, and nothing written."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli import app as cli


@pytest.mark.parametrize("missing", ["trl", "torch", "openenv"])
def test_a_missing_trainer_package_names_the_install_line(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec

    def without(name: str, *args: Any) -> Any:
        return None if name == missing else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    out = tmp_path / "train"
    assert cli.main(["train", "--model", "some/model", "--out", str(out)]) == 2
    said = capsys.readouterr().err
    named = said.split("spade train needs ", 1)[1].split(":", 1)[0].split(", ")
    assert missing in named and "pip install 'spade-selfplay[trl,env]' torch" in said
    assert not out.exists()


def test_train_without_a_model_is_a_users_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["train"]) == 2
    assert "spade train needs --model" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--warm-start-steps", "3"], ["--warm-start-stages", "dpo"]])
def test_warm_start_settings_without_a_run_are_a_users_mistake(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "train"
    assert cli.main(["train", "--model", "some/model", *flags, "--out", str(out)]) == 2
    assert "need --warm-start RUN_DIR" in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_warm_start_stage_names_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["train", "--model", "m", "--warm-start", "r", "--warm-start-stages", "sft,ppo"])
    assert "warm-start stages are sft, dpo" in capsys.readouterr().err


def test_warm_start_stages_run_sft_before_dpo_whatever_the_order_given() -> None:
    from spade_llm.integrations.trl_warm_start import parse_stages

    assert parse_stages("dpo,sft") == ("sft", "dpo") and parse_stages(" dpo ") == ("dpo",)
