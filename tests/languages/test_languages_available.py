"""What ``spade exec --list-languages`` and CI's required languages stand on: the host check of a toolchain
(found, missing with the package to install, its version), the tests' skip-or-fail helper, and the
package closure scripts/docker_image.sh copies into the docker image."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from languages_available import ABSENT, REQUIRE_ENV, toolchain_or_skip, unavailable

from spade_llm.languages import TOOLCHAINS
from spade_llm.languages.available import GREETING, HELLO, host_check, install_hint

ROOT = Path(__file__).resolve().parents[2]


def test_every_toolchain_has_a_hello_world_that_prints_the_greeting() -> None:
    assert set(HELLO) == set(TOOLCHAINS)
    assert all(GREETING in code for code in HELLO.values())


def test_a_missing_toolchain_names_its_command_and_the_packages_to_install() -> None:
    check = host_check(ABSENT)
    assert not check.ok and check.missing == ("/nonexistent/abc",) and check.version is None
    assert install_hint(ABSENT) == "apt-get install abc-compiler abc-runtime"


def test_a_found_toolchain_reports_its_first_version_line(tmp_path: Path) -> None:
    compiler = tmp_path / "abc"
    compiler.write_text("#!/bin/sh\necho\necho 'abc 1.2.3'\necho 'Copyright'\n")
    compiler.chmod(0o755)
    check = host_check(replace(ABSENT, compile=(str(compiler), "{source}")))
    assert check.ok and check.found == (str(compiler),) and check.version == "abc 1.2.3"


def test_a_compiler_without_dash_dash_version_is_asked_as_go_is(tmp_path: Path) -> None:
    compiler = tmp_path / "abc"
    compiler.write_text('#!/bin/sh\n[ "$1" = version ] && echo "abc version 9" && exit 0\necho nope >&2; exit 2\n')
    compiler.chmod(0o755)
    check = host_check(replace(ABSENT, compile=(str(compiler), "{source}")))
    assert check.version == "abc version 9"


def test_a_toolchain_not_installed_is_skipped_with_the_fix_or_failed_when_required(monkeypatch) -> None:
    monkeypatch.setitem(TOOLCHAINS, "absent", ABSENT)
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"/nonexistent/abc not found; apt-get install abc-compiler"):
        toolchain_or_skip("absent")
    monkeypatch.setenv(REQUIRE_ENV, "cpp, absent")
    with pytest.raises(pytest.fail.Exception, match=rf"{REQUIRE_ENV} names 'absent'.*apt-get install abc-compiler"):
        toolchain_or_skip("absent")
    with pytest.raises(KeyError):
        toolchain_or_skip("cobol")


def test_an_installed_toolchain_is_returned(monkeypatch) -> None:
    found = [name for name in TOOLCHAINS if unavailable(name) is None]
    assert "python" in found  # its command is the interpreter, found wherever the tests run
    monkeypatch.setenv(REQUIRE_ENV, ",".join(found))
    assert all(toolchain_or_skip(name) is TOOLCHAINS[name] for name in found)


def _image_script():
    spec = importlib.util.spec_from_file_location("docker_image_languages", ROOT / "scripts/docker_image_languages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop("docker_image_languages", None)
    return module


def test_the_image_copies_installed_dependencies_not_essential_ones_nor_the_system_python() -> None:
    closure = _image_script().closure
    installed = {
        "g++": (False, "gcc (>= 4:12), libstdc++-dev | libstdc++-12-dev, libc6:amd64 (>= 2.34), "),
        "gcc": (False, "cpp, "),
        "cpp": (False, ", "),
        "libstdc++-12-dev": (False, ", "),
        "libc6": (False, ", libgcc-s1"),
        "libgcc-s1": (False, ", "),
        "nodejs": (False, "python3, tar, awk, "),
        "python3": (False, "python3.11, "),
        "python3.11": (False, ", "),
        "tar": (True, ", "),
        "mawk": (False, ", "),
    }
    provides = {"awk": ["mawk"]}
    assert closure(["g++"], installed, provides) == ["cpp", "g++", "gcc", "libc6", "libgcc-s1", "libstdc++-12-dev"]
    assert closure(["nodejs", "not-installed"], installed, provides) == ["mawk", "nodejs"]
