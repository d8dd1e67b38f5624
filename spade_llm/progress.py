"""Live progress on a terminal: a block of a few lines redrawn in place, a few times a second.

``spade run``, ``solve`` and ``evaluate`` show what is happening now (proposals answered, tasks
validated and accepted, episodes done, pass rate so far, requests in flight, retries, errors) as
one refreshing block on stderr when stderr is a terminal. Anywhere else (a pipe, a file, CI) there
is no block and no escape code: the plain log lines stay as they are, one per epoch.

Why not ``rich``: the block is a handful of lines of text; ANSI cursor movement draws it in ~80
lines, with no dependency and no import cost for commands that never show it. The block is drawn
by a daemon thread from a ``render`` callback that reads counters (cheap, lock-free reads of
ints), so the event loop and the worker threads never wait on the terminal. Log lines go through
``LiveBlock.log``, which clears the block, prints the line and redraws, so the two never mix.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .llm.stats import LLMStats

__all__ = ["LiveBlock", "PlainLog", "bar", "is_live_terminal", "progress_block", "requests_line"]

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
CLEAR_LINE, CLEAR_BELOW = "\x1b[2K", "\x1b[J"


def is_live_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands cursor movement (not a pipe, not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "")


def bar(done: int, total: int, width: int = 20) -> str:
    """``[#######-------]`` for ``done`` of ``total`` (an empty bar when the total is unknown)."""
    if total <= 0:
        return "[" + "-" * width + "]"
    filled = min(width, round(width * done / total))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def requests_line(stats: LLMStats, inflight: int) -> str:
    """The block's line about the model endpoint: requests sent, under way, retried, failed."""
    return f"  requests {stats.requests} ({inflight} in flight)   retries {stats.retries}   errors {stats.failures}"


class LiveBlock:
    """Redraws ``render()``'s lines in place on ``stream`` every ``interval`` seconds until closed.

    Use as a context manager; ``log(line)`` prints a line above the block. A ``render`` that raises
    draws its error instead (progress must never stop a run).
    """

    def __init__(self, stream: TextIO, render: Callable[[], list[str]], *, interval: float = 0.25) -> None:
        self.stream = stream
        self.render = render
        self.interval = interval
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spade-progress", daemon=True)

    def __enter__(self) -> LiveBlock:
        self.stream.write(HIDE_CURSOR)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop redrawing; the last block stays on screen (what the run ended with)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        with self._lock:
            self._draw()
            self.stream.write(SHOW_CURSOR)
            self.stream.flush()

    def log(self, line: str, stream: TextIO | None = None) -> None:
        """Print ``line`` above the block (on ``stream``, e.g. stdout, when it is not the block's)."""
        with self._lock:
            self._erase()
            self.stream.flush()
            out = stream or self.stream
            out.write(line.rstrip("\n") + "\n")
            out.flush()
            self._drawn = 0
            self._draw()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._draw()

    def _lines(self) -> list[str]:
        try:
            lines = self.render()
        except Exception as e:  # progress is decoration: show why it broke, keep the run going
            lines = [f"(progress unavailable: {type(e).__name__}: {e})"]
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        return [line[:width] for line in lines]  # a wrapped line would break the cursor arithmetic

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F{CLEAR_BELOW}")

    def _draw(self) -> None:
        lines = self._lines()
        out = f"\x1b[{self._drawn}F" if self._drawn else ""
        out += "".join(f"{CLEAR_LINE}{line}\n" for line in lines) + CLEAR_BELOW
        self.stream.write(out)
        self.stream.flush()
        self._drawn = len(lines)


class PlainLog:
    """What a command uses where no block is drawn: the same ``log`` and context manager, plain lines."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log

    def __enter__(self) -> PlainLog:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def log(self, line: str, stream: TextIO | None = None) -> None:
        """``line`` through the command's own log, or straight to ``stream`` (e.g. stdout)."""
        if stream is None:
            self._log(line)
        else:
            print(line, file=stream, flush=True)


def progress_block(live: bool, render: Callable[[], list[str]], log: Callable[[str], None]) -> LiveBlock | PlainLog:
    """A live block on stderr when ``live``, else plain lines through ``log``: one interface either way."""
    return LiveBlock(sys.stderr, render) if live else PlainLog(log)
