"""Keys and credentials kept out of what we hand to other programs and what we write to disk.

Two pieces, used by the trainer step (``trainer.py``) and usable anywhere text leaves our hands:

* :func:`key_like` says which environment variables hold credentials, so that a child process
  (the user's training command) is started without them unless the config passes them by name;
* :func:`redact` takes credentials out of text before it is written: the values of key-like
  variables, and the user-info of URLs (``scheme://user:pass@host`` -> ``scheme://***@host``).

The rule for a key-like variable (name compared in upper case):

* a ``_``-separated word of the name ends in ``KEY`` or ``TOKEN``, or is ``AUTH``
  (``OPENAI_API_KEY``, ``HF_TOKEN``, ``GH_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``SERPAPI_APIKEY``,
  ``SSH_AUTH_SOCK``), but not ``TOKENIZERS_PARALLELISM``;
* or the name contains ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``CREDENTIAL`` or
  ``COOKIE`` (``PGPASSWORD``, ``GOOGLE_APPLICATION_CREDENTIALS``);
* or its *value* holds a URL with user-info (``HTTPS_PROXY=http://user:pass@proxy``).

Settings are not key-like, whatever their prefix: ``HF_HOME`` and ``HF_HUB_CACHE`` (a training command
needs its caches; ``HF_TOKEN`` is caught by its word), ``AWS_REGION``, ``AWS_PROFILE`` and
``AWS_CA_BUNDLE`` (S3 needs them; every AWS credential, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, has a KEY or TOKEN word). Why words and not substrings
for KEY and TOKEN: ``*TOKEN*`` would take the tokenizers' own settings (``TOKENIZERS_PARALLELISM``) from
every trainer. ``trainer.pass_env`` passes any key-like variable by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["MASK", "MIN_SECRET_CHARS", "URL_CREDENTIALS", "StreamRedactor", "key_like", "redact", "secret_values"]

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_CHARS = 8
"""Shorter values of key-like variables are not masked in text (``1``, ``true``, a region name would
mask every such word of a log); real keys and tokens are far longer."""

URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,31}://)[^/?#@\s\"<>]{1,256}@")
"""The user-info of a URL (``user:pass@``, or a token alone before ``@``): what RFC 3986 allows there,
less the characters that end a URL in text (a quote, a space). No word boundary before the scheme, so
``x_http://u:p@h`` is caught too. Bounded lengths, so a stream can be masked piecewise: a match is
never longer than ``MAX_MATCH_CHARS``."""
MAX_MATCH_CHARS = 32 + 3 + 256 + 1
"""Longest text one ``URL_CREDENTIALS`` match covers."""

_KEY_WORD = re.compile(r"(KEY|TOKEN)$|^AUTH$")
_KEY_PART = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE")


def key_like(name: str, value: str = "") -> bool:
    """Whether the environment variable ``name`` (holding ``value``) carries a credential: the rule in
    this module's docstring."""
    upper = name.upper()
    if any(part in upper for part in _KEY_PART):
        return True
    if any(_KEY_WORD.search(word) for word in upper.split("_") if word):
        return True
    return bool(value) and URL_CREDENTIALS.search(value) is not None


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the key-like variables of ``environ`` worth masking in text: at least
    ``MIN_SECRET_CHARS`` long, each line of a multi-line value (a PEM key) on its own too; longest
    first, so that a secret holding another is masked whole."""
    found: set[str] = set()
    for name, value in environ.items():
        if not key_like(name, value):
            continue
        for piece in (value, *value.splitlines()):
            piece = piece.strip()
            if len(piece) >= MIN_SECRET_CHARS:
                found.add(piece)
    return sorted(found, key=lambda s: (-len(s), s))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each of ``secrets`` replaced by ``***`` and the user-info of
    every URL masked (``https://user:pass@host/x`` -> ``https://***@host/x``).

    Pure: ``secrets`` is the list to mask (see :func:`secret_values`); empty strings in it are
    ignored. Idempotent: redacting redacted text changes nothing.

    >>> redact("key=sk-abcdef123 at http://bob:hunter2@example.com/v1", ["sk-abcdef123"])
    'key=*** at http://***@example.com/v1'
    """
    for secret in sorted({s for s in secrets if s}, key=lambda s: (-len(s), s)):
        if secret in text:
            text = text.replace(secret, MASK)
    return URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{MASK}@", text)


HOLD_CHARS = 1 << 16
"""Most text a stream holds back waiting for a line end (a progress bar redrawn with ``\\r`` counts as
one); past it, all but the last few hundred characters are written anyway."""


class StreamRedactor:
    """:func:`redact` over a stream that arrives in pieces (a child's stdout, read as it comes).

    Whole lines (ended by ``\\n`` or ``\\r``) are masked and let through at once; the unfinished line is
    held back, so a secret or a URL's user-info split between two reads is still masked. A line longer
    than ``HOLD_CHARS`` is let through but for its last ``hold`` characters, enough to hold the start
    of any match not yet complete. Secrets that span lines are not seen: mask their lines one by one
    (``secret_values`` lists them).
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if s}, key=lambda s: (-len(s), s))
        self.hold = max([MAX_MATCH_CHARS, *(len(s) for s in self.secrets)])
        self._pending = ""

    def feed(self, text: str) -> str:
        """The masked text that can be written now (maybe empty)."""
        pending = self._pending + text
        cut = max(pending.rfind("\n"), pending.rfind("\r")) + 1
        ready, pending = pending[:cut], pending[cut:]
        out = redact(ready, self.secrets) if ready else ""
        if len(pending) > HOLD_CHARS:
            masked = redact(pending, self.secrets)
            out, pending = out + masked[: -self.hold], masked[-self.hold :]
        self._pending = pending
        return out

    def close(self) -> str:
        """The rest, masked: the stream has ended."""
        out, self._pending = redact(self._pending, self.secrets), ""
        return out
