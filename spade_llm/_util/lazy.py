"""Lazy public names for a package ``__init__``: importing the package stays cheap, and a name's
module is imported the first time the name is used; and imports without a part spade never uses."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each lazy
    name to the module that defines it; a name once loaded is kept in ``namespace`` (the package's
    ``globals()``), so the lookup runs once."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *public])

    return __getattr__, __dir__


def import_without(module: str, absent: str) -> ModuleType:
    """Import ``module`` with ``absent`` marked missing while it loads (``None`` in ``sys.modules``, the
    import system's own mark): for a package that imports an optional part spade never uses, at a cost of
    seconds, and takes its absence in its stride (openenv-core's Gradio web interface). The mark is lifted
    after, so a later import of ``absent`` itself still works; one already imported is left as it is."""
    blocked = absent not in sys.modules
    if blocked:
        sys.modules[absent] = None  # type: ignore[assignment]
    try:
        return import_module(module)
    finally:
        if blocked and absent in sys.modules and sys.modules[absent] is None:
            del sys.modules[absent]
