"""serve-env's side of the optional extras: a missing openenv-core, or one whose packages a later install moved,
is one line naming the install that fixes it (issue 37: verifiers 0.4 moved mcp under openenv-core's fastmcp;
serve-env died on a FastMCP ImportError while ``pip check`` was clean). ``scripts/check_extras.sh`` installs
the extras in both orders for real."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from spade_llm.errors import UserError
from spade_llm.serve import env


def server_import_raises(monkeypatch: pytest.MonkeyPatch, error: ImportError) -> None:
    """From now on, importing serve-env's server module raises ``error`` (what a broken install does)."""
    real = importlib.import_module

    def broken(name: str, *args: Any) -> Any:
        if name == "spade_llm.serve.env.server":
            raise error
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", broken)


def test_an_openenv_core_that_does_not_import_names_the_install_that_fixes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    server_import_raises(monkeypatch, ImportError("FastMCP client support is not installed.", name="fastmcp.client"))
    with pytest.raises(UserError) as told:
        env.import_server()
    said = str(told.value)
    assert "pip install 'spade-selfplay[env]'" in said and "FastMCP client support" in said
    assert "\n" not in said  # one line


def test_a_bug_of_ours_is_not_dressed_as_an_install_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    server_import_raises(monkeypatch, ImportError("cannot import name 'X'", name="spade_llm.serve.env.sessions"))
    with pytest.raises(ImportError, match="cannot import name 'X'"):
        env.import_server()


def test_the_env_extra_keeps_fastmcp_where_mcp_2_0_works() -> None:
    # verifiers 0.4 pins mcp==2.0.0; fastmcp from 4.1.2 needs mcp>=2.2 (in an extra pip check skips)
    from pathlib import Path

    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    extra = project["project"]["optional-dependencies"]["env"]
    assert any(r.replace(" ", "").startswith("fastmcp") and "<4.1.2" in r for r in extra), extra
