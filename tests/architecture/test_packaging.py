"""What the wheel ships: every spade_llm subpackage, the prompt templates and the default config.

prompts/ and configs/ sit at the top of the repo and ship as spade_llm.prompts / spade_llm.configs
(pyproject's ``package-dir``); a mapped package cannot come from setuptools' package discovery, so
``packages`` is a list. The first test catches a subpackage missing from it at once; the slow one
builds a real wheel and looks inside, and fails on setuptools' deprecation and "absent from
packages" warnings too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# pip's words when the build requirements cannot be fetched (no index, no network)
OFFLINE = (
    "Could not find a version that satisfies the requirement setuptools",
    "No matching distribution found for setuptools",
    "Failed to establish a new connection",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def setuptools_config() -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(config["tool"]["setuptools"])


def source_packages() -> set[str]:
    """Every package the source tree has: a folder with an ``__init__.py`` under each ``package-dir`` root."""
    names = set()
    for name, folder in setuptools_config()["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            if "__pycache__" not in rel.parts:
                names.add(".".join([name, *rel.parts]))
    return names


def test_pyproject_lists_every_subpackage() -> None:
    listed = setuptools_config()["packages"]
    assert isinstance(listed, list)
    assert set(listed) == source_packages(), "pyproject.toml [tool.setuptools] packages is out of date"
    assert {"spade_llm.kinds", "spade_llm.executors", "spade_llm.prompts", "spade_llm.configs"} <= set(listed)


def _setuptools_version() -> tuple[int, ...] | None:
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return None
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def build_wheel(tmp_path: Path) -> tuple[Path, str]:
    """Build the wheel from a copy of what it is made of (the checkout stays clean); (wheel, pip's log)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pattern in ("LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*"):
        for path in ROOT.glob(pattern):
            shutil.copy2(path, src / path.name)
    for folder in set(setuptools_config()["package-dir"].values()):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v", "-w", str(out), str(src)]
    version = _setuptools_version()
    isolated = version is None or version < (77,)  # pyproject asks for setuptools>=77: fetch it if need be
    if not isolated:
        command.insert(4, "--no-build-isolation")  # offline: the setuptools installed here builds it
    env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_RETRIES": "1", "PIP_DEFAULT_TIMEOUT": "30"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.skip("building the wheel took over 10 minutes (is the package index unreachable?)")
    log = done.stdout + done.stderr
    if done.returncode != 0:
        if "No module named pip" in log:
            pytest.skip("pip is not installed here")
        if isolated and any(sign in log for sign in OFFLINE):
            pytest.skip(f"cannot build offline: setuptools here is {version}, the build needs >=77 from an index")
        pytest.fail(f"pip wheel failed:\n{log[-4000:]}")
    wheels = list(out.glob("spade_selfplay-*.whl"))
    assert len(wheels) == 1, log[-4000:]
    return wheels[0], log


@pytest.mark.slow
def test_wheel_ships_every_subpackage_template_and_config(tmp_path: Path) -> None:
    wheel, log = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata_text = archive.read(meta).decode()

    expected = {package.replace(".", "/") + "/__init__.py" for package in source_packages()}
    expected |= {  # every module of the package
        "spade_llm/" + path.relative_to(ROOT / "spade_llm").as_posix()
        for path in (ROOT / "spade_llm").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    templates = sorted((ROOT / "prompts").rglob("*.j2"))
    configs = sorted((ROOT / "configs").glob("*.yaml"))
    assert templates and (ROOT / "configs" / "default.yaml") in configs
    expected |= {"spade_llm/prompts/" + path.relative_to(ROOT / "prompts").as_posix() for path in templates}
    expected |= {"spade_llm/configs/" + path.name for path in configs}
    expected |= {"spade_llm/py.typed", "spade_llm/configs/default.yaml", "spade_llm/kinds/__init__.py"}
    expected |= {"spade_llm/executors/__init__.py"}
    static = sorted((ROOT / "spade_llm" / "report" / "static").iterdir())  # the report's CSS and JS
    assert {p.suffix for p in static} >= {".css", ".js"}
    expected |= {p.relative_to(ROOT).as_posix() for p in static}
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    assert not [n for n in names if n.startswith(("prompts/", "configs/", "tests/"))]  # nothing at the top level

    assert "License-Expression: MIT" in metadata_text
    # the report's charts come with the base install: `pip install . && spade report RUN` draws them
    base = [line for line in metadata_text.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert any(line.split()[1].startswith("matplotlib") for line in base), base
    for warning in ("SetuptoolsDeprecationWarning", "is absent from the `packages` configuration"):
        assert warning not in log, f"setuptools warned while building:\n{log[-4000:]}"


def test_the_distribution_has_a_name_of_its_own_and_every_install_line_uses_it() -> None:
    """PyPI's ``spade-llm`` (any spelling: names normalize ``_``/``-``/``.``) is another project, so
    ``pip install spade_llm`` would install someone else's package: the project's name, the one the
    package reports its version under, and every ``pip install`` it tells a user to run use ours."""
    from spade_llm.errors import DISTRIBUTION, pip_install

    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project]", 1)[1]
    found_name = re.search(r'^name = "([^"]+)"', project, re.MULTILINE)
    assert found_name, "pyproject.toml has no [project] name"
    name = found_name.group(1)
    assert name == DISTRIBUTION
    assert re.sub(r"[-_.]+", "-", name).lower() != "spade-llm"
    assert pip_install("trl") == f"pip install '{DISTRIBUTION}[trl]'" and pip_install() == f"pip install {DISTRIBUTION}"
    wrong = re.compile(r"pip install\s+(-e\s+)?['\"]?spade[-_.]llm\b", re.IGNORECASE)
    places = [ROOT / "README.md", ROOT / "pyproject.toml", *(ROOT / "docs").glob("*.md"), *(ROOT / "configs").glob("*")]
    places += [*(ROOT / "spade_llm").rglob("*.py"), *(ROOT / "scripts").glob("*"), *(ROOT / "benchmarks").glob("*.py")]
    places += [p for p in (ROOT / "tests").glob("*.py") if p.name != "test_packaging.py"] + [ROOT / ".ci" / "run"]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in places
        if path.is_file()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if wrong.search(line)
    ]
    assert not found, "\n".join(found)
