"""Text that always encodes: lone surrogates replaced by U+FFFD, so no record, export or page fails to write.

Why this exists: a Python ``str`` can hold code points that UTF-8 cannot encode, the surrogates
U+D800..U+DFFF (they are the only such code points). A model's answer gets them from a JSON escape
(``"\\ud800"``, which ``json.loads`` decodes as is), from a surrogate pair split across two streamed
chunks, or from a server that decoded bytes with ``surrogateescape``. Written with UTF-8 they raise
``UnicodeEncodeError``: once in a run, that ended ``spade solve`` with an empty trajectories file.

Where it is applied: once where model text enters (``LLMResponse`` cleans its own text, whichever
provider built it; ``LLMRequest`` its messages, so no prompt made from such text breaks a request),
and defensively where records are written and read (``RunDir.append``, the JSONL readers of exports
and the report), for text from other places and records an older version wrote.

Why U+FFFD and not dropping the character: it is what Unicode prescribes for ill-formed text and
what every ``errors="replace"`` decoder here already writes (program output); the reader of a record
sees that something was there; and deleting can join what was apart: ``"<scr\\ud800ipt>"`` would
become ``"<script>"``, ``"ab\\ud800c"`` a different identifier (the security reason Unicode TR #36
gives for replacing rather than deleting). Each lone surrogate becomes exactly one U+FFFD, so lengths
and offsets stay as they were; a high surrogate followed by a low one is the pair it spells (one
astral character, as any UTF-16 reader takes it).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REPLACEMENT", "clean_data", "clean_text", "json_loads", "to_utf8"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes."""

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_RAW_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")
"""A surrogate's own (ill-formed) UTF-8 form, which ``json.loads`` lets through in bytes (``surrogatepass``)."""


def clean_text(s: str) -> str:
    """``s`` with every lone surrogate replaced by U+FFFD and every surrogate pair joined into its
    character; ``s`` itself (the same object) when it already encodes as UTF-8, the common case.

    Fast when there is nothing to do: ASCII is checked in constant time, other text by encoding it
    (a few milliseconds a megabyte); only text that fails to encode is rebuilt.

    >>> clean_text("ok \\ud800!")
    'ok \\ufffd!'
    >>> clean_text("\\ud83d\\ude00") == "\\U0001f600"
    True
    """
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 has a code unit for every surrogate: out with surrogatepass, back in with replace
        # turns each unpaired one into U+FFFD and each high+low pair into the character it encodes
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return s


def to_utf8(s: str) -> bytes:
    """``s`` encoded as UTF-8, a lone surrogate as U+FFFD: for a writer that must never fail on text.
    One encode when there is nothing to clean (the common case), as a plain ``s.encode()``."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return clean_text(s).encode("utf-8")


def clean_data(value: Any) -> Any:
    """JSON-like data (dicts, lists, tuples, strings, anything else kept) with every string, keys
    included, passed through :func:`clean_text`. Containers are rebuilt; other values are kept as
    they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {(clean_text(k) if isinstance(k, str) else k): clean_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(clean_data(v) for v in value)
    return value


def json_loads(raw: str | bytes) -> Any:
    """``json.loads(raw)`` holding no lone surrogate: a ``\\udXXX`` escape of one gives U+FFFD.

    Text decoded from UTF-8 can only carry a surrogate as such an escape; bytes also in the ill-formed
    UTF-8 that ``json.loads`` lets through (it decodes with ``surrogatepass``). So a search for those,
    about a tenth of the parse, decides whether the value is walked at all. A ``str`` is taken to be
    decoded text (strict UTF-8 decoding never yields a surrogate). Raises what ``json.loads`` raises.
    """
    value = json.loads(raw)
    # a pattern that starts with a literal is searched at memory speed; an alternation would not be
    if isinstance(raw, str):
        suspect = _ESCAPED_SURROGATE.search(raw) is not None
    else:
        suspect = _ESCAPED_SURROGATE_BYTES.search(raw) is not None or (
            b"\xed" in raw and _RAW_SURROGATE_BYTES.search(raw) is not None
        )
    return clean_data(value) if suspect else value
