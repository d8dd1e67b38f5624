"""One flag registry (issue 36, point 5): every flag of every command is declared once, in
``spade_llm.cli.flags``; each command's ``--help`` gives every option a line of help and its default (the
config's value and key where the config sets it); the flag -> config maps and the flags a ``--resume``
may change come from the registry; the exit codes are one table, the README's."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from spade_llm.cli import app as cli
from spade_llm.cli import flags as cli_flags
from spade_llm.cli.app import main
from spade_llm.cli.flags import (
    COMMAND_SPECS,
    REGISTRY,
    Flag,
    build_parser,
    command_parsers,
    config_default,
    config_pairs,
)
from spade_llm.errors import Exit, UserError

ROOT = Path(__file__).resolve().parents[2]


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by the words typed, ``spade`` itself as ""."""
    return command_parsers(build_parser())


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """A parser's arguments but argparse's own (``-h``, the sub-command choice)."""
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def flag_of(action: argparse.Action) -> Flag:
    """The registry's flag an argument was made from (``cli_flags._add`` sets it)."""
    found = getattr(action, "flag", None)
    assert isinstance(found, Flag), action
    return found


# -- declared once ---------------------------------------------------------------------------------


def test_the_registry_names_each_flag_once() -> None:
    names = [name for flag in REGISTRY for name in flag.names]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_each_flag_string_is_written_once_in_the_source() -> None:
    # before: --concurrency was declared 7 times, --config 5 times, in a 280-line build_parser
    source = Path(cli_flags.__file__).read_text(encoding="utf-8")
    for flag in REGISTRY:
        for name in flag.names:
            assert source.count(f'"{name}"') == 1, name
    assert "add_argument(" not in Path(cli.__file__).read_text(encoding="utf-8")


@pytest.mark.parametrize("words", sorted(commands()))
def test_every_argument_comes_from_the_registry(words: str) -> None:
    registered = {id(flag) for flag in REGISTRY}
    for action in arguments(commands()[words]):
        flag: Flag | None = getattr(action, "flag", None)
        assert flag is not None, (words, action.option_strings or action.dest)
        assert id(flag.declared) in registered, (words, flag.names)
        assert tuple(action.option_strings or [action.dest]) == flag.names
        assert action.dest == flag.dest or flag.declared is cli_flags.VERSION


def test_a_variation_keeps_its_declarations_name() -> None:
    # serve-sandbox's --port is serve-env's, with another default: one declaration, an override
    ports = {
        words: next(a for a in arguments(p) if "--port" in a.option_strings)
        for words, p in commands().items()
        if words in ("serve-env", "serve-sandbox", "serve-fake")
    }
    assert {w: a.default for w, a in ports.items()} == {"serve-env": 8000, "serve-sandbox": 8080, "serve-fake": 8000}
    assert {flag_of(a).declared is cli_flags.PORT for a in ports.values()} == {True}


# -- help and defaults -------------------------------------------------------------------------------


@pytest.mark.parametrize("words", sorted(commands()))
def test_every_option_has_help_and_says_its_default(words: str) -> None:
    parser = commands()[words]
    page = "".join(parser.format_help().split())  # wrapped anywhere, a hyphen too
    for action in arguments(parser):
        assert action.help and action.help.strip(), (words, action.option_strings or action.dest)
        if not action.option_strings or action.required or isinstance(action, cli_flags._VersionAction):
            continue
        shown = cli_flags.default_words(flag_of(action), action)
        assert shown, (words, action.option_strings)
        assert f"(default:{''.join(shown.split())})" in page, (words, action.option_strings, shown)


@pytest.mark.parametrize("words", sorted(w for w in commands() if w))
def test_help_renders_for_every_command(words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*words.split(), "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: spade {words}") and "(default: " in out


def test_run_help_shows_the_configs_defaults_and_keys(capsys: pytest.CaptureFixture[str]) -> None:
    from spade_llm.config import RunConfig

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    page = " ".join(capsys.readouterr().out.split())
    assert f"(default: {RunConfig().controller.epochs}, controller.epochs)" in page
    assert f"(default: {RunConfig().solver.max_turns}, solver.max_turns)" in page
    assert "(default: fake/default, generator.model and solver.model)" in page


def config_keys(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        out[prefix + key] = value
        if isinstance(value, dict):
            out.update(config_keys(value, f"{prefix}{key}."))
    return out


def test_the_config_keys_flags_set_exist_and_help_shows_their_model_defaults() -> None:
    from spade_llm.config import RunConfig

    defaults = config_keys(RunConfig().model_dump(mode="json"))
    for words in COMMAND_SPECS:
        for dest, key in config_pairs(words):
            assert key in defaults, (words, dest, key)
            assert config_default(key) == defaults[key], key  # configs/default.yaml: the models' defaults


def test_the_config_maps_are_the_registrys() -> None:
    assert cli.RUN_FLAGS == config_pairs("run")
    assert cli.SOLVE_FLAGS == config_pairs("solve")
    assert cli.ENV_FLAGS == config_pairs("serve-env")
    run = dict(cli.RUN_FLAGS)
    assert ("model", "solver.model") in cli.RUN_FLAGS and ("model", "generator.model") in cli.RUN_FLAGS
    assert ("model", "generator.model") in cli.ENV_FLAGS and ("model", "solver.model") not in cli.ENV_FLAGS
    assert {"executor", "ray_address", "report"} <= run.keys()
    assert "report" not in dict(cli.ENV_FLAGS)  # serve-env writes no per-epoch report
    assert {"executor", "ray_address"} <= dict(cli.ENV_FLAGS).keys()  # its programs may go to a Ray cluster


def test_a_specific_model_flag_wins_over_model() -> None:
    args = build_parser().parse_args(["run", "--model", "fake/a", "--solver-model", "fake/b"])
    assert cli._overrides(args, cli.RUN_FLAGS) == {"generator": {"model": "fake/a"}, "solver": {"model": "fake/b"}}


# -- what a resume may change ------------------------------------------------------------------------

RESUMING = sorted(name for name, spec in COMMAND_SPECS.items() if spec.resumable)


def test_the_commands_that_resume() -> None:
    assert RESUMING == ["run", "serve-env", "solve"]


@pytest.mark.parametrize("command", RESUMING)
def test_the_resume_list_names_flags_of_the_command_and_its_help_says_them(command: str) -> None:
    spec = COMMAND_SPECS[command]
    dests = {flag.dest for flag in spec.flags}
    assert set(spec.resumable) <= dests, set(spec.resumable) - dests
    resume = next(a for a in arguments(commands()[command]) if a.dest == "resume")
    assert f"(only {spec.may_change()} may change)" in (resume.help or "")


@pytest.mark.parametrize("command", RESUMING)
def test_the_resume_check_refuses_exactly_the_flags_not_on_the_list(command: str) -> None:
    spec = COMMAND_SPECS[command]
    stored = cli_flags._config_defaults()
    for dest, _key in config_pairs(command):
        if dest == "prompts":  # a folder, checked by what it renders (tests/e2e/test_resume_keeps_flags.py)
            continue
        args = argparse.Namespace(**{dest: object()})  # differs from whatever the run was started with
        if dest in spec.resumable:
            cli._check_resume_flags(command, args, stored)
        else:
            with pytest.raises(UserError) as refused:
                cli._check_resume_flags(command, args, stored)
            flag = "--" + dest.replace("_", "-")
            assert str(refused.value).startswith(f"{flag} cannot change a run being resumed"), str(refused.value)
            assert str(refused.value).endswith(f"only {spec.may_change()} can")


def test_a_resume_refuses_a_flag_off_the_list_and_takes_one_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["run", "--epochs", "1", "--tasks-per-epoch", "2", "--samples-per-task", "1", "--sandbox", "auto"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--seed", "9", "--quiet"]) == Exit.USER
    err = capsys.readouterr().err
    assert "--seed cannot change a run being resumed" in err
    assert COMMAND_SPECS["run"].may_change() in err
    assert main(["run", "--resume", str(out), "--concurrency", "2", "--epochs", "1", "--quiet"]) == 0


# -- exit codes --------------------------------------------------------------------------------------


def readme_exit_codes() -> dict[int, str]:
    """The exit-code table, which moved from the README to docs/cli.md (the README links to it)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text[text.index("Exit codes") :]
    table = table[table.index("| code |") :]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        code, means = (cell.strip() for cell in line.strip("|").split("|")[:2])
        rows[int(code)] = means
    return rows


def test_the_readmes_exit_codes_are_the_table() -> None:
    words = {
        Exit.OK: "done",
        Exit.INTERNAL: "internal error",
        Exit.USER: "mistake of yours",
        Exit.ENDPOINT: "endpoint",
        Exit.EXECUTOR: "executor",
        Exit.EMPTY_EPOCHS: "max_empty_epochs",
        Exit.CHECK_FAILED: "--check",
        Exit.INTERRUPTED: "interrupted",
    }
    assert set(words) == set(Exit)
    rows = readme_exit_codes()
    assert sorted(rows) == sorted(int(code) for code in Exit)
    for code, word in words.items():
        assert word in rows[int(code)], (code, rows[int(code)])


def test_the_readme_lists_what_a_run_resume_may_change() -> None:
    text = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())  # the README links to it
    said = re.search(r"`spade run --resume DIR`; `--epochs N` there means N in total, and only (.*?) may change", text)
    assert said, "docs/cli.md: the flags spade run --resume may change"
    assert re.findall(r"`--([a-z-]+)`", said.group(1)) == [d.replace("_", "-") for d in COMMAND_SPECS["run"].resumable]


def test_a_bad_flag_and_no_command_exit_with_the_users_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == Exit.USER
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--no-such-flag"])
    assert stopped.value.code == Exit.USER
    capsys.readouterr()


def test_a_resume_says_it_has_nothing_to_run_and_what_a_changed_epochs_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: --resume on a finished run printed the run's table as if it had run; --epochs 2 on a
    # 1-epoch run rewrote config.yaml without a word
    out = tmp_path / "r"
    argv = ["run", "--epochs", "1", "--tasks-per-epoch", "2", "--samples-per-task", "1", "--sandbox", "auto"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--resume", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{out} has finished 1 epochs of 1: nothing to run" in err and "--epochs 2 or more goes on" in err
    assert main(["run", "--resume", str(out), "--epochs", "2"]) == 0
    err = capsys.readouterr().err
    assert "changes the run's epochs from 1 to 2 (kept in config.yaml)" in err and "nothing to run" not in err
    assert "epochs: 2" in (out / "config.yaml").read_text()
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
