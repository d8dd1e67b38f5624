"""Which answer languages' toolchains are on this machine, and the languages a run insists on.

``SPADE_TEST_REQUIRE_LANGUAGES=cpp,java,nodejs,go,rust`` (CI sets it once it has installed the toolchains'
packages) turns "skipped: g++ is not installed" into a failure for those languages, as
``SPADE_TEST_REQUIRE_BACKENDS`` does for sandbox backends (``sandbox_backends.py``): a toolchain CI made
available and that then stops working must not hide behind skips.
"""

from __future__ import annotations

import os

import pytest

from spade_llm.languages import TOOLCHAINS, Toolchain
from spade_llm.languages.available import install_hint

REQUIRE_ENV = "SPADE_TEST_REQUIRE_LANGUAGES"
ABSENT = Toolchain(
    name="absent",
    label="Absent 1",
    fence_tags=("absent",),
    source_file="main.ab",
    extensions=(".ab",),
    compile=("/nonexistent/abc", "{source}"),
    run=("./main",),
    packages=("abc-compiler", "abc-runtime"),
)
"""A toolchain no machine has (its compiler's path does not exist), for the tests of what a missing one says."""


def required() -> set[str]:
    """The languages ``SPADE_TEST_REQUIRE_LANGUAGES`` names (a name no toolchain has is an error: a typo
    must not require nothing)."""
    names = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}
    unknown = sorted(names - set(TOOLCHAINS))
    if unknown:
        raise RuntimeError(f"{REQUIRE_ENV} names unknown languages {unknown}; known: {', '.join(TOOLCHAINS)}")
    return names


def unavailable(name: str) -> str | None:
    """None when toolchain ``name``'s commands are all on this machine, else what is missing and the fix."""
    toolchain = TOOLCHAINS[name]
    missing = toolchain.missing()
    if not missing:
        return None
    return f"{toolchain.label} ({name}): {', '.join(dict.fromkeys(missing))} not found; {install_hint(toolchain)}"


def toolchain_or_skip(name: str) -> Toolchain:
    """Toolchain ``name`` when it is installed here; else skip the test with what to install, or fail it
    when ``SPADE_TEST_REQUIRE_LANGUAGES`` names it.

    Raises:
        KeyError: ``name`` is no toolchain (a typo in a test is no skip).
    """
    toolchain = TOOLCHAINS[name]
    reason = unavailable(name)
    if reason is None:
        return toolchain
    if name in required():
        pytest.fail(f"{REQUIRE_ENV} names {name!r}, but it is not installed: {reason}")
    pytest.skip(reason)


def require(name: str) -> None:
    """``toolchain_or_skip`` for a test that needs only the skip."""
    toolchain_or_skip(name)
