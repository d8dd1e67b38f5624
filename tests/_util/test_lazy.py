"""``import_without``: a package loads with an optional part marked absent, and the part stays importable."""

from __future__ import annotations

import sys
import textwrap

import pytest

from spade_llm._util.lazy import import_without


@pytest.fixture
def package(tmp_path, monkeypatch):
    """``lazypkg``, whose ``__init__`` takes a missing ``heavy`` part as None, as openenv-core's does."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        textwrap.dedent(
            """
            try:
                from .heavy import WIDGET
            except ModuleNotFoundError:
                WIDGET = None
            """
        )
    )
    (root / "heavy.py").write_text("import sys\nsys.modules['lazypkg'].HEAVY_LOADS = 1\nWIDGET = 'widget'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazypkg"
    for name in [n for n in sys.modules if n == "lazypkg" or n.startswith("lazypkg.")]:
        del sys.modules[name]


def test_the_package_loads_without_the_part_and_the_part_loads_later(package):
    module = import_without(package, f"{package}.heavy")
    assert module.WIDGET is None and not hasattr(module, "HEAVY_LOADS")
    assert f"{package}.heavy" not in sys.modules  # the mark is lifted
    from lazypkg.heavy import WIDGET

    assert WIDGET == "widget"


def test_a_part_already_loaded_is_left_as_it_is(package):
    heavy = __import__(f"{package}.heavy", fromlist=["WIDGET"])
    assert import_without(package, f"{package}.heavy").WIDGET == "widget"
    assert sys.modules[f"{package}.heavy"] is heavy


def test_a_failed_import_lifts_the_mark_too(tmp_path, monkeypatch):
    (tmp_path / "brokenpkg.py").write_text("raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="broken"):
        import_without("brokenpkg", "brokenpkg_part")
    assert "brokenpkg_part" not in sys.modules
