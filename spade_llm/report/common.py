"""What every part of the page shares: how much of a text it keeps, and how run values are read
without trusting them (a finite number or a default, text or ``""``). Imports nothing of the report."""

from __future__ import annotations

import json
import math
from typing import Any

TEXT_LIMIT = 4000
"""Characters kept of a code block, a message, a diff or stderr."""
SHORT_LIMIT = 300
"""Characters kept of a test's input, expected value, output or error, and of a rejection's detail."""
MAX_TEST_ROWS = 20


def num(value: Any, default: float | None = None) -> float | None:
    """A finite number, or ``default``: a NaN, an infinity, a bool or a non-number is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)


def to_int(value: Any) -> int:
    number = num(value, 0.0)
    return int(number) if number is not None else 0


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def clip(text: Any, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters, head and tail kept and the cut said in the middle:
    the start of a long answer and its end (the final code, the last traceback line) both matter."""
    s = text_of(text)
    if len(s) <= limit:
        return s
    head = limit * 3 // 4
    tail = limit - head
    return f"{s[:head]}\n… [{len(s) - head - tail:,} characters cut] …\n{s[-tail:]}"


def embed_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` (so no ``</script>`` or
    ``<!--``), ``>`` or ``&`` in the text, and no line separators JavaScript chokes on."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def snippet(text: str, limit: int = 110) -> str:
    """``text`` as one line of at most ``limit`` characters (the tasks table's description)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
