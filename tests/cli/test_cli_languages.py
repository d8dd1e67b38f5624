"""``spade exec --list-languages``: a row per answer language with what this machine has of it and whether its
hello-world compiles and runs in the sandbox; a missing toolchain says what to install; ``--check`` gates."""

from __future__ import annotations

from dataclasses import replace

import pytest
from languages_available import ABSENT as LISTED_ABSENT
from languages_available import toolchain_or_skip

from spade_llm.cli.app import main
from spade_llm.errors import Exit, SandboxUnavailable
from spade_llm.languages import TOOLCHAINS
from spade_llm.languages.available import HELLO

ABSENT = replace(LISTED_ABSENT, packages=("abc-compiler",))  # one package: the hint names it alone


def _rows(out: str) -> dict[str, str]:
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["LANGUAGE", "LABEL", "PACKAGES", "COMMANDS", "VERSION"]
    return {line.split()[0]: line for line in lines[1:]}


def test_every_language_has_a_row_and_python_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exec", "--list-languages", "--sandbox", "subprocess"]) == Exit.OK
    captured = capsys.readouterr()
    rows = _rows(captured.out)
    assert list(rows) == list(TOOLCHAINS)
    assert rows["python"].endswith("ok (" + rows["python"].rsplit("ok (", 1)[1])
    for name, row in rows.items():  # each found one ran; each missing one names its package
        toolchain = TOOLCHAINS[name]
        assert (" ok (" in row) != bool(toolchain.missing()) or " failed: " in row, row
        if toolchain.missing():
            assert f"not tried: apt-get install {' '.join(toolchain.packages)}" in row
    assert "languages compile and run in subprocess" in captured.err


def test_a_missing_toolchain_is_named_with_its_package_and_fails_the_check(monkeypatch, capsys) -> None:
    monkeypatch.setattr("spade_llm.languages.TOOLCHAINS", {"python": TOOLCHAINS["python"], "absent": ABSENT})
    assert main(["exec", "--list-languages", "--sandbox", "subprocess"]) == Exit.OK  # the table is the output
    row = _rows(capsys.readouterr().out)["absent"]
    assert "missing /nonexistent/abc" in row and row.endswith("not tried: apt-get install abc-compiler")
    assert main(["exec", "--list-languages", "--sandbox", "subprocess", "--check"]) == Exit.CHECK_FAILED


def test_a_compile_error_shows_its_first_line(monkeypatch, capsys) -> None:
    cpp = toolchain_or_skip("cpp")
    monkeypatch.setattr("spade_llm.languages.TOOLCHAINS", {"cpp": cpp})
    monkeypatch.setitem(HELLO, "cpp", "int main() { return missing_name; }\n")
    assert main(["exec", "--list-languages", "--sandbox", "subprocess", "--check"]) == Exit.CHECK_FAILED
    row = _rows(capsys.readouterr().out)["cpp"]
    assert "failed: compile error: main.cpp:1:" in row and "missing_name" in row


def test_a_toolchain_the_sandbox_lacks_says_so_in_its_row(monkeypatch, capsys) -> None:
    # the host has it, the sandbox (a docker image built without it) does not
    def lacking(*args, **kwargs):
        raise SandboxUnavailable("Python 3 answers need python3, which this sandbox does not have: install it\nmore")

    monkeypatch.setattr("spade_llm.sandbox.stdio.run_stdio_tests", lacking)
    assert main(["exec", "--list-languages", "--sandbox", "subprocess", "--check"]) == Exit.CHECK_FAILED
    row = _rows(capsys.readouterr().out)["python"]
    assert row.endswith("failed: Python 3 answers need python3, which this sandbox does not have: install it")


def test_exec_takes_a_file_or_languages_not_both_nor_neither(tmp_path, capsys) -> None:
    program = tmp_path / "p.py"
    program.write_text("print(1)\n")
    assert main(["exec", "--sandbox", "subprocess"]) == Exit.USER
    assert "needs a FILE to run" in capsys.readouterr().err
    assert main(["exec", str(program), "--list-languages", "--sandbox", "subprocess"]) == Exit.USER
    assert "runs no FILE" in capsys.readouterr().err


def test_language_narrows_the_listing_to_one(capsys) -> None:
    assert main(["exec", "--list-languages", "--language", "python", "--sandbox", "subprocess", "--check"]) == Exit.OK
    assert list(_rows(capsys.readouterr().out)) == ["python"]
    assert main(["exec", "--list-languages", "--language", "cobol", "--sandbox", "subprocess"]) == Exit.USER
    assert "unknown answer language 'cobol'" in capsys.readouterr().err
