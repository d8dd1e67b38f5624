"""Choosing an executor: the flags, and what a user without the ``ray`` extra is told."""

from __future__ import annotations

import subprocess
import sys

import pytest

from spade_llm.cli.app import main
from spade_llm.config import load_config
from spade_llm.errors import UserError
from spade_llm.executors import start_ray_executor
from spade_llm.llm.stats import LLMStats


def test_without_ray_the_executor_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, as without the extra
    monkeypatch.delitem(sys.modules, "spade_llm.executors.ray", raising=False)
    with pytest.raises(UserError, match=r"pip install 'spade-selfplay\[ray\]'"):
        start_ray_executor(load_config(None, {"executor": "ray"}), LLMStats())


def test_the_commands_that_run_no_model_never_import_ray() -> None:
    code = (
        "import sys, spade_llm.cli.app, spade_llm.session, spade_llm.controller, spade_llm.executors\n"
        "spade_llm.cli.app.build_parser()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'litellm', 'openai'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ray_address_with_the_local_executor_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", "--executor", "local", "--ray-address", "auto", "--out", str(out)]) == 2
    assert "--executor ray" in capsys.readouterr().err and not out.exists()


def test_a_resume_may_move_the_run_to_another_executor_but_not_change_it(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert (
        main(
            ["run", "--epochs", "1", "--tasks-per-epoch", "2", "--sandbox", "subprocess", "--quiet", "--out", str(out)]
        )
        == 0
    )
    # --executor is accepted on resume (local here: the ray tests resume across executors)
    assert main(["run", "--resume", str(out), "--executor", "local", "--epochs", "1", "--quiet"]) == 0
    assert main(["run", "--resume", str(out), "--seed", "99", "--quiet"]) == 2
    assert "--executor and --ray-address can" in capsys.readouterr().err
