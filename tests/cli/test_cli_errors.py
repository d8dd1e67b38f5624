"""What the CLI says when a flag or a config key is wrong (issue 36, point 5): the command typed names
the error, no prefix of a flag is taken for the flag, a misspelt config key gets the nearest valid one
and its line, and ``spade --version`` says what is installed."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from spade_llm import __version__
from spade_llm.cli.app import build_parser, main
from spade_llm.cli.flags import command_parsers
from spade_llm.config import load_config
from spade_llm.errors import Exit, UserError

ROOT = Path(__file__).resolve().parents[2]


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, sub-commands included (``prompts check``...), by the words typed."""
    return {words: parser for words, parser in command_parsers(build_parser()).items() if words}


def said(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    return int(stopped.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("words", sorted(commands()))
def test_an_unknown_flag_is_named_by_the_command_typed(capsys: pytest.CaptureFixture[str], words: str) -> None:
    # before: "spade: error: unrecognized arguments" whatever command was typed
    code, err = said(capsys, [*words.split(), "--no-such-flag"])
    assert code == 2
    assert err.startswith(f"spade {words}: error: "), err
    assert "--no-such-flag" in err or "are required" in err, err  # argparse names a missing argument first
    assert err.count("\n") == 1  # one line, no usage block


def test_a_prefix_of_a_flag_is_not_the_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # before: argparse took --epoch for --epochs and ran two epochs
    code, err = said(capsys, ["run", "--epoch", "2", "--out", str(tmp_path / "r")])
    assert code == 2 and "spade run: error: unrecognized arguments: --epoch 2" in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("words", sorted(commands()))
def test_no_command_takes_an_abbreviation(words: str) -> None:
    # asked of the parser, not by running the command: were a prefix taken, ``spade serve-env --por``
    # would start a server
    parser = commands()[words]
    assert parser.allow_abbrev is False
    flags = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    prefixes = {f[:-1] for f in flags if len(f) > 4} - flags
    assert prefixes or words == "prompts", words  # every command has a long flag to cut short
    for prefix in sorted(prefixes):
        found = parser._parse_optional(prefix)  # (action, ...) or, on newer Pythons, a list of them
        matches = found if isinstance(found, list) else [found]
        assert all(m is None or m[0] is None for m in matches), (prefix, found)


def test_the_top_level_says_spade(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = said(capsys, ["--no-such-flag"])
    assert code == 2 and err.startswith("spade: error: "), err


def test_version_names_the_package_and_a_checkouts_commit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    out = capsys.readouterr().out
    assert stopped.value.code == 0
    assert out.startswith(f"spade {__version__}"), out
    if (ROOT / ".git").exists() and shutil.which("git"):
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
        )
        if head.returncode == 0:  # a checkout git can read (not one owned by another user)
            assert f"commit {head.stdout.strip()}" in out, out


# -- a misspelt config key ----------------------------------------------------------------------


def config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "my.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_config(path)
    return str(caught.value)


def test_a_misspelt_key_gets_the_nearest_one_and_its_line(tmp_path: Path) -> None:
    message = config_error(tmp_path, "seed: 3\n# the solver\nsolver:\n  temperature: 0.2\n  max_turn: 4\n")
    assert "solver.max_turn: unknown key; did you mean max_turns?" in message, message
    assert message.endswith(f"({tmp_path / 'my.yaml'} line 5)"), message


def test_a_misspelt_section_gets_the_nearest_one(tmp_path: Path) -> None:
    message = config_error(tmp_path, "controler:\n  concurrency: 2\n")
    assert re.search(r"controler: unknown key; did you mean controller\? \(.*my\.yaml line 1\)", message), message


def test_a_key_like_no_other_gets_no_guess_but_its_line(tmp_path: Path) -> None:
    message = config_error(tmp_path, "solver:\n  max_turns: 2\n  xyzzy: 1\n")
    assert "solver.xyzzy: unknown key (" in message and "did you mean" not in message, message
    assert message.endswith("line 3)"), message


def test_a_wrong_value_keeps_pydantics_words(tmp_path: Path) -> None:
    message = config_error(tmp_path, "solver:\n  max_turns: many\n")
    assert "solver.max_turns:" in message and "integer" in message, message


def test_the_cli_says_it_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text("solver:\n  max_turn: 4\n", encoding="utf-8")
    code = main(["run", "--config", str(path), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("spade run: error: ") and "did you mean max_turns? (" in err and "line 2)" in err, err
    assert not (tmp_path / "r").exists()


# -- every run-shaping flag on every command that runs the loop ------------------------------------------


def test_serve_env_takes_no_loop_flag_run_lacks() -> None:
    # before: serve-env had --kinds and run did not; serve-env's flags are run's generator side
    def flags(words: str) -> set[str]:
        return {s for a in commands()[words]._actions for s in a.option_strings}

    serving = {"--host", "--port", "--token-file", "--max-connections", "--max-sessions", "--pool", "--mcp"}
    shaping = flags("serve-env") - serving
    assert "--kinds" in shaping and "--goal" in shaping
    assert shaping - flags("run") == set(), shaping - flags("run")


def test_run_proposes_only_the_kinds_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "r"
    argv = ["run", "--kinds", "deduction", "--epochs", "1", "--tasks-per-epoch", "3", "--samples-per-task", "1"]
    assert main([*argv, "--sandbox", "auto", "--out", str(out), "--quiet"]) == 0
    kinds = {json.loads(line)["kind"] for line in (out / "tasks.jsonl").read_text().splitlines()}
    assert kinds == {"deduction"}
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--kinds", "induction", "--epochs", "2"]) == 2
    assert "--kinds cannot change a run being resumed" in capsys.readouterr().err


# -- --api-base without a model that calls it (issue 37) -------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--api-base", "http://localhost:8000/v1", "--epochs", "1"],
        ["solve", "TASKS", "--model", "fake/default", "--api-base", "http://user:pw-9x@localhost:8000/v1"],
    ],
    ids=["run-forgot-model", "solve-fake-model"],
)
def test_an_api_base_no_model_calls_is_an_error_not_an_offline_run(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a vLLM user who gives --api-base and forgets --model used to get a fake run that looked like theirs
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t", "description": "d", "entry_point": "f", "reference_code": '
                     '"def f(x):\\n    return x\\n", "tests": [{"input": "(1,)", "expected": 1}]}\n')  # fmt: skip
    out = tmp_path / "out"
    argv = [str(tasks) if a == "TASKS" else a for a in argv] + ["--out", str(out), "--sandbox", "subprocess"]
    assert main(argv) == Exit.USER
    err = capsys.readouterr().err
    assert f"spade {argv[0]}: error: --api-base" in err and "--model openai/<name>" in err, err
    assert "pw-9x" not in err  # the URL's credentials are never echoed
    assert not out.exists()  # nothing was made


def test_an_api_base_one_model_calls_is_fine(tmp_path: Path) -> None:
    from spade_llm.cli.app import _require_keys
    from spade_llm.config import load_config

    config = load_config(
        None, {"solver": {"model": "openai/x", "api_base": "http://h/v1"}, "generator": {"api_base": "http://h/v1"}}
    )
    _require_keys(config, generator=True, api_base="http://h/v1")  # the solver calls it: no error
