"""Which sandbox backends work here, asked once per test process (starting docker's containers or bwrap's
workers for every module that asks would cost seconds), and the backends a run insists on.

``SPADE_TEST_REQUIRE_BACKENDS=bwrap,docker`` (CI sets it once it has installed bubblewrap and started a
Docker engine) turns "skipped: this backend does not work here" into an error for those backends: a
backend that CI made available and that then stops working must not hide behind skips.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest

from spade_llm.sandbox.base import Sandbox
from spade_llm.sandbox.registry import backend_availability, get_sandbox

REQUIRE_ENV = "SPADE_TEST_REQUIRE_BACKENDS"


def required() -> set[str]:
    return {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}


@functools.cache
def unavailable(name: str) -> str | None:
    """None when backend ``name`` works here, else why not.

    Raises:
        RuntimeError: it does not work, and ``SPADE_TEST_REQUIRE_BACKENDS`` names it.
    """
    reason = backend_availability([name])[name]
    if reason is not None and name in required():
        raise RuntimeError(f"{REQUIRE_ENV} names {name!r}, but it does not work here: {reason}")
    return reason


@functools.cache
def run_backend() -> str:
    """The backend for tests whose runs need a sandbox but do not test one: ``bwrap`` where it works (a warm
    pool of forked workers), else ``subprocess`` (an interpreter started for every execution: a fake run
    cost twice the CPU there, and those tests were a sixth of CI's CPU time).

    Raises:
        RuntimeError: bwrap does not work, and ``SPADE_TEST_REQUIRE_BACKENDS`` names it.
    """
    return "subprocess" if unavailable("bwrap") else "bwrap"


def needs(name: str) -> pytest.MarkDecorator:
    """Skip (with the reason) unless backend ``name`` works here."""
    reason = unavailable(name)
    return pytest.mark.skipif(reason is not None, reason=f"{name}: {reason}")


def started(name: str) -> Iterator[Sandbox]:
    """Backend ``name`` started for a module's tests and closed after them (a fixture's body: ``yield from``);
    the tests skip with the reason when it does not work here."""
    reason = unavailable(name)
    if reason is not None:
        pytest.skip(f"{name}: {reason}")
    sandbox = get_sandbox(name)
    try:
        yield sandbox
    finally:
        sandbox.close()
