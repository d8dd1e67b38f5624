"""Which answer languages' toolchains are on this machine, and the languages a run insists on.

``SPADE_TEST_REQUIRE_LANGUAGES=cpp,java,nodejs,go,rust`` (CI sets it once it has installed the toolchains)
turns "skipped: no g++ here" into a failure for those languages, as ``SPADE_TEST_REQUIRE_BACKENDS`` does for
sandbox backends (``sandbox_backends.py``): a toolchain CI installed must not hide behind skips.
"""

from __future__ import annotations

import os

import pytest

from spade_llm.languages import TOOLCHAINS

REQUIRE_ENV = "SPADE_TEST_REQUIRE_LANGUAGES"


def required() -> set[str]:
    """The languages ``SPADE_TEST_REQUIRE_LANGUAGES`` names (a name no toolchain has is an error: a typo
    must not require nothing)."""
    names = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}
    unknown = sorted(names - set(TOOLCHAINS))
    if unknown:
        raise RuntimeError(f"{REQUIRE_ENV} names unknown languages {unknown}; known: {', '.join(TOOLCHAINS)}")
    return names


def unavailable(name: str) -> str | None:
    """None when the toolchain of language ``name`` is on this machine, else why not."""
    toolchain = TOOLCHAINS[name]
    missing = toolchain.missing()
    if not missing:
        return None
    return f"{name}: {', '.join(missing)} not found (install {', '.join(toolchain.packages) or 'it'})"


def require(name: str) -> None:
    """Skip the calling test (with the reason) unless language ``name``'s toolchain is here; fail it instead
    when ``SPADE_TEST_REQUIRE_LANGUAGES`` names the language."""
    reason = unavailable(name)
    if reason is None:
        return
    if name in required():
        pytest.fail(f"{REQUIRE_ENV} names {name!r}, but {reason}")
    pytest.skip(reason)
