"""Running the bank's trusted code in-process, and comparing what it returns.

The references are our own code (and their mistakes), so running them in-process
(:func:`run_in_process`) is fine: it is how expected values, examples and the test suite's checks
are computed. :func:`strict_equal` is the bank's comparison of two such values.
"""

from __future__ import annotations

import copy
import gc
import json
import math
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from .variant import Args


@dataclass(frozen=True)
class Outcome:
    """What one call of a function did: returned ``value``, raised ``error``, or ran out of time."""

    status: Literal["ok", "error", "timeout"]
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _TimeLimit(BaseException):
    """Raised by the alarm handler; a BaseException so that ``except Exception`` cannot eat it."""


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread on Unix only; elsewhere no limit)."""
    usable = (
        seconds is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise _TimeLimit()

    # An alarm that lands in a garbage-collector callback (hypothesis installs one, for instance) is
    # swallowed there as "unraisable" and the loop it was meant to stop goes on: no collection runs
    # inside the block, so the alarm always lands in the code it bounds.
    collecting = gc.isenabled()
    gc.disable()
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, float(seconds or 0.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
        if collecting:
            gc.enable()


def load_function(code: str, entry_point: str) -> Callable[..., Any]:
    """Exec ``code`` in a fresh namespace and return its ``entry_point`` (KeyError if missing)."""
    namespace: dict[str, Any] = {"__name__": "fake_task"}
    exec(compile(code, f"<task {entry_point}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[entry_point]
    if not callable(function):
        raise TypeError(f"{entry_point} is not callable")
    return function


def run_in_process(
    code: str, entry_point: str, inputs: Sequence[Args], time_limit_s: float | None = None
) -> list[Outcome]:
    """Call ``entry_point`` of ``code`` on each input (deep-copied), in this process.

    Only for code we trust not to harm the process (our references and their mistakes): it is
    how the bank computes expected values and how tests check mistakes. ``time_limit_s`` bounds
    each call where an interval timer is usable, so a deliberate infinite loop ends as ``timeout``.
    """
    try:
        function = load_function(code, entry_point)
    except BaseException as exc:  # SyntaxError, missing entry point, anything at import
        return [Outcome("error", error=f"{type(exc).__name__}: {exc}") for _ in inputs]
    outcomes = []
    for args in inputs:
        try:
            with _alarm(time_limit_s):
                value = function(*copy.deepcopy(args))
            outcomes.append(Outcome("ok", value=value))
        except _TimeLimit:
            outcomes.append(Outcome("timeout", error="timed out"))
        except RecursionError as exc:
            outcomes.append(Outcome("error", error=f"RecursionError: {exc}"))
        except Exception as exc:
            outcomes.append(Outcome("error", error=f"{type(exc).__name__}: {exc}"))
    return outcomes


def strict_equal(a: Any, b: Any) -> bool:
    """Strict, type-preserving equality: ``True`` is not ``1``, ``1`` is not ``1.0``, a tuple is not a
    list, floats are equal only exactly, and NaN equals nothing (not even NaN).

    Stricter than the sandbox's verdict (:func:`spade_llm.sandbox.verdict.matches`, which lets
    floats differ by rounding and a tuple equal a list), and unlike the validation's determinism
    check (where NaN equals NaN): the bank uses it to tell a mutant or a mistake from the reference,
    and a value from its JSON round trip, where any difference at all counts.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return not math.isnan(a) and a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def stand_ins(args: Args) -> list[Any]:
    """The trivial answers a task's tests must reject: None, 0, the first argument, [], "", {}."""
    return [None, 0, args[0] if args else None, [], "", {}]


def json_roundtrips(value: Any) -> bool:
    try:
        return strict_equal(json.loads(json.dumps(value)), value)
    except (TypeError, ValueError):
        return False
