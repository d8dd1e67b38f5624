"""Keys and credentials kept out of what we hand to other programs and what we write to disk: one rule,
in this module, wherever text leaves the process (records, ``manifest.json``, ``summary.json``,
``config.yaml``, the report, the training command's output and environment, log lines).

Two strengths, by what is written:

* **Records** (the journals: tasks, rejected, trajectories, proposals...; :func:`redact_record`) are data:
  only the **known secrets** are masked there, the user's own, in every form. A test's input that reads
  ``api_key=abc12345`` or ``https://alice:s3cret99@example.com`` must read back the same, or the stored
  test no longer holds, exports train on a changed task and a resume judges against it.
* **Everything else** (logs, errors, ``summary.json``, ``manifest.json``, ``config.yaml``, the report, a
  training step's output; :func:`redact_text`, :func:`redact_data`) gets the whole rule: the known
  secrets and the patterns below, for secrets nobody named.

What is masked (replaced by ``***``):

* **Known secrets**: the values of this process's key-like environment variables (:func:`secret_values`),
  the secrets registered (:func:`register_secret`: a serve token, the credentials of a configured
  ``api_base``, :func:`register_url_secrets`), and each of them in the forms it takes when it is passed
  around: base64 (standard or URL-safe, at any alignment, so inside ``Basic base64(user:key)`` too),
  URL-encoded, JSON- and HTML-escaped, hex, every character escaped (``\\u0073``, ``\\x73``, ``%73``,
  ``&#115;``; hex digits in either case); and any of these split by whitespace, a line break (a wrapped
  base64 blob), quotes, ``+`` or commas (``"sk-ab" + "cd"``, ``print(key[:9]); print(key[9:])``).
* **Key shapes of common providers**, whatever variable held them: OpenAI and Anthropic (``sk-``,
  ``sk-proj-``, ``sk-ant-``), GitHub (``ghp_``, ``gho_``, ``ghs_``, ``ghu_``, ``ghr_``,
  ``github_pat_``), GitLab (``glpat-``...), Slack (``xox?-``, ``xapp-``, ``hooks.slack.com`` URLs),
  Discord webhooks, AWS access key ids (``AKIA``, ``ASIA``...), Google (``AIza``, ``ya29.``,
  ``GOCSPX-``), Hugging Face (``hf_``, ``api_org_``), Stripe (``sk_live_``, ``rk_``, ``whsec_``...),
  npm, PyPI, SendGrid, Groq, Replicate, xAI, Perplexity, DigitalOcean, Databricks, Shopify, Telegram
  bot tokens, age keys, JWTs and private key blocks (``-----BEGIN ... PRIVATE KEY-----``).
* **URLs with credentials**: the user-info (``https://user:pass@host`` -> ``https://***@host``) and
  the values of credential query parameters (``?api_key=``, ``key=``, ``token=``, ``access_token=``,
  ``sig=``, ``X-Amz-Signature=``, ``code=``, ``password=``...: any literal of 8 characters and more).
* **Assignments** of a value to a secret's name: ``MYSQL_PWD=...``, ``"api_key": "..."``, ``GH_PAT:
  ...``, ``--api-key ...``, ``Authorization: Bearer ...``, ``Authorization: Basic ...`` (and ``Basic x``
  wherever ``x`` is base64 of ``user:password``). When the name says credential (``_strong_name``:
  ``*_API_KEY``, ``*_TOKEN`` or ``*_KEY`` in an environment variable's upper case, ``*_PWD``, ``*_PAT``,
  ``access_token``, a password or secret word last, ``Authorization``), any literal of at least 8
  characters is masked (``OPENAI_API_KEY=correcthorsebatterystaple``, ``MYSQL_PWD=secretpw``). For a
  weaker name (``key``, ``token``, ``auth``...: ``_secret_name``) only a value that reads like a key:
  letters and digits, or 20 and more characters of high entropy. Never a reference
  (``os.environ["X"]``, ``self.api_key``, ``${TOKEN}``, ``<your key>``).

What is not: ordinary code and data. A hex digest, a test input, ``key = "name"``, ``token =
tokens[0]``, ``password_hash = "5f4d..."`` (a ``HASH`` is no key), ``SORT_KEY``, ``eos_token`` stay as
they are; values shorter than ``MIN_SECRET_CHARS`` are never masked by value. Masks never cross the
structure of what is written: JSON is masked string by string (:func:`redact_data`), so a JSON line
stays JSON.

Which environment variables are key-like (:func:`key_like`, name compared in upper case, camelCase split
into words): a word of the name ends in ``KEY``, ``KEYS``, ``TOKEN`` or ``TOKENS``, or is ``AUTH``,
``AUTHORIZATION``, ``PAT``, ``PWD``, ``PASS``, ``PW``, ``JWT``, ``DSN``, ``SAS`` or ``CREDS``
(``OPENAI_API_KEY``, ``API_KEYS``, ``HF_TOKEN``, ``GH_PAT``, ``MYSQL_PWD``, ``SSH_AUTH_SOCK``), but
not ``TOKENIZERS_PARALLELISM`` and not the shell's ``PWD``/``OLDPWD``; or the name contains ``SECRET``,
``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``CREDENTIAL``, ``COOKIE`` or ``WEBHOOK``
(``SLACK_WEBHOOK_URL``); or its *value* is a credential on its own (:func:`value_is_credential`: a URL
with user-info or a key in its query, a webhook URL, a private key, a provider's key shape as the whole
value or one whole ``:``/``,``-separated part of it: ``PATH=/usr/bin:/opt/sk-learn-toolkit/bin`` is no
key). Settings are not key-like, whatever their prefix: ``HF_HOME``, ``AWS_REGION``, ``AWS_PROFILE``. A
training command starts without the key-like variables (``trainer.pass_env`` passes some by name).

Cost: text with nothing to mask is scanned at tens of MB/s, and no text costs more than linear time:
every pattern is tried only where its literal start is (found with ``str.find``), with bounded
quantifiers, and a start inside what a pattern already matched is skipped (``"sk-" * n``, ``"key=" *
n``, repeated ``BEGIN PRIVATE KEY`` lines). ``benchmarks/bench_redact.py`` measures both, the worst
inputs included; the known secrets of the environment are read again only when the environment changes.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import math
import os
import re
import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MASK",
    "MIN_SECRET_CHARS",
    "Redactor",
    "StreamRedactor",
    "encoded_forms",
    "env_redactor",
    "key_like",
    "masked_in",
    "pattern_spans",
    "redact",
    "redact_data",
    "redact_record",
    "redact_text",
    "register_secret",
    "register_url_secrets",
    "scrub_secrets",
    "secret_values",
    "strip_userinfo",
]

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_CHARS = 8
"""Shorter values are never masked by value (``1``, ``true``, a region name would mask every such
word of a log); real keys and tokens are far longer."""

MAX_MATCH_CHARS = 32 + 3 + 256 + 1
"""Longest text a URL's scheme and user-info cover (``_url_spans``: a scheme of at most 32 characters,
``://``, at most 256 of user-info, ``@``): what a stream keeps in view, at least."""
FRAGMENT_CHARS = 12
"""A known secret of at least twice this length is masked in part too: any run of at least half of it
(and of this many characters), a truncated copy or one piece of a split."""

# -- names -------------------------------------------------------------------------------------------

_KEY_WORD = re.compile(r"(?:KEYS?|TOKENS?)$|^(?:AUTH|AUTHORIZATION|PAT|PWD|PASS|PW|JWT|DSN|SAS|CREDS)$")
_KEY_PART = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE", "WEBHOOK")
_NOT_KEYS = frozenset({"PWD", "OLDPWD"})
"""The shell's working directories: a path, whatever the ``PWD`` word says."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^A-Z0-9]+")


def _words(name: str) -> list[str]:
    """``apiKey``, ``API_KEY``, ``api-key``, ``x.api_key`` -> ``["API", "KEY"]``-like words."""
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", name).upper()) if w]


def key_like(name: str, value: str = "") -> bool:
    """Whether the environment variable ``name`` (holding ``value``) carries a credential: the rule in
    this module's docstring."""
    upper = name.upper()
    if upper not in _NOT_KEYS:
        if any(part in upper for part in _KEY_PART):
            return True
        if any(_KEY_WORD.search(word) for word in _words(name)):
            return True
    return bool(value) and value_is_credential(value)


_NAME_LAST_WORDS = frozenset(
    {"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "PAT", "PWD", "PASS", "PW", "AUTH", "AUTHORIZATION", "JWT"}
    | {"DSN", "SAS", "CREDS", "SIG", "SIGNATURE", "COOKIE", "COOKIES", "SECRET", "SECRETS", "PASSWORD"}
)


_NOT_SECRET_LAST_WORDS = frozenset(
    {"HASH", "HASHED", "DIGEST", "LENGTH", "LEN", "MIN", "MAX", "COUNT", "POLICY", "FIELD", "FILE", "PATH"}
    | {"DIR", "NAME", "NAMES", "PROMPT", "ENV", "VAR", "ID", "IDS", "TYPE", "HEADER", "PARAM", "REGEX"}
)
"""What a name holding a secret word may still be about without holding one (``password_hash``,
``SECRET_NAME``, ``API_KEY_FILE``)."""


def _secret_name(name: str) -> bool:
    """A name in text whose value is a secret (``api_key``, ``GH_PAT``, ``clientSecret``,
    ``SLACK_WEBHOOK_URL``): stricter than ``key_like`` (whose any-word rule suits an environment to
    strip), so that ``KEY_HASH``, ``password_hash`` or ``primary_key_column`` in a task's code are left
    alone."""
    words = _words(name)
    if not words or words[-1] in _NOT_SECRET_LAST_WORDS:
        return False
    upper = name.upper()
    if any(part in upper for part in ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "WEBHOOK")):
        return True
    return words[-1] in _NAME_LAST_WORDS or words[-1].endswith(("APIKEY", "TOKEN"))


# -- key shapes ----------------------------------------------------------------------------------------

_PROVIDER_SHAPES = {
    # the lowercase start every key of the shape has (found with ``str.find``) -> the whole shape; every
    # quantifier bounded (``MAX_KEY_CHARS``): an attempt at one start costs at most that much, whatever follows
    # OpenAI, Anthropic; 8 characters on, as the error-text rule this replaced (``llm.transport.scrub``) took them
    "sk-": r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{8,1024}",
    "gh": r"gh[pousr]_[A-Za-z0-9]{30,1024}",  # GitHub
    "github_pat_": r"github_pat_[A-Za-z0-9_]{30,1024}",
    "gl": r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct|sa)-[A-Za-z0-9_\-]{20,1024}",  # GitLab
    "xox": r"xox[abposre]-[A-Za-z0-9\-]{10,1024}",  # Slack
    "xapp-": r"xapp-\d-[A-Za-z0-9\-]{10,1024}",
    "aiza": r"AIza[0-9A-Za-z_\-]{35}",  # Google
    "ya29.": r"ya29\.[0-9A-Za-z_\-]{20,4096}",
    "gocspx-": r"GOCSPX-[A-Za-z0-9_\-]{20,1024}",
    "hf_": r"hf_[A-Za-z0-9]{30,1024}",  # Hugging Face
    "api_org_": r"api_org_[A-Za-z0-9]{30,1024}",
    "k_live_": r"(?:sk|rk)_live_[A-Za-z0-9]{16,1024}",  # Stripe
    "k_test_": r"(?:sk|rk)_test_[A-Za-z0-9]{16,1024}",
    "whsec_": r"whsec_[A-Za-z0-9]{20,1024}",
    "npm_": r"npm_[A-Za-z0-9]{36}",  # npm
    "pypi-age": r"pypi-AgE[A-Za-z0-9_\-]{50,4096}",  # PyPI
    "sg.": r"SG\.[A-Za-z0-9_\-]{16,1024}\.[A-Za-z0-9_\-]{16,1024}",  # SendGrid
    "gsk_": r"gsk_[A-Za-z0-9]{40,1024}",  # Groq
    "r8_": r"r8_[A-Za-z0-9]{30,1024}",  # Replicate
    "xai-": r"xai-[A-Za-z0-9]{40,1024}",  # xAI
    "pplx-": r"pplx-[A-Za-z0-9]{40,1024}",  # Perplexity
    "dop_v1_": r"dop_v1_[a-f0-9]{64}",  # DigitalOcean
    "dapi": r"dapi[a-f0-9]{32}",  # Databricks
    "shp": r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",  # Shopify
    "age-secret-key-1": r"AGE-SECRET-KEY-1[0-9A-Z]{58}",  # age
    ":aa": r"\d{8,10}:AA[A-Za-z0-9_\-]{33}",  # Telegram bots (the digits before it are looked back at)
    "eyj": r"eyJ[A-Za-z0-9_\-]{8,8192}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,8192}",  # JWT
}
"""Where a shape's start is one of its own body characters (``sk-sk-sk-``...), each start inside a key
already matched is skipped (``_provider_spans``), so repeated starts cost one match, not one each."""
_RUN_AFTER_MISS = {"eyj": re.compile(r"[A-Za-z0-9_\-]*")}
"""Shapes whose match can fail after a long run (a JWT's first part with no ``.eyJ`` after it): a start
inside that run fails the same way, so the starts up to its end are skipped once one failed."""
_AWS = re.compile(r"A(?:KIA|SIA|BIA|CCA|ROA|IDA|IPA|NPA|NVA|PKA|GPA)[A-Z0-9]{16}(?![A-Za-z0-9])")
"""AWS access key ids: a regex with a literal start, which ``re`` scans for as fast as ``str.find``."""
_PROVIDER = re.compile(
    r"(?<![A-Za-z0-9])(?:" + "|".join([*_PROVIDER_SHAPES.values(), _AWS.pattern.removesuffix("(?![A-Za-z0-9])")]) + ")"
)
"""Every shape at once (for a short value; ``_provider_spans`` is the fast way over long text)."""
_SHAPE_AT = {start: re.compile(shape) for start, shape in _PROVIDER_SHAPES.items()}
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _lower(text: str) -> str:
    """``text`` in ASCII lower case, every character where it was (``str.lower`` may change lengths)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _finds(low: str, needle: str) -> list[int]:
    found, at = [], low.find(needle)
    while at >= 0:
        found.append(at)
        at = low.find(needle, at + 1)
    return found


def _provider_spans(text: str, low: str) -> list[tuple[int, int]]:
    """Every provider key shape in ``text`` (``low``: its ``_lower``): each start found with
    ``str.find``, its shape matched there (a regex over all of it would try every position). A start
    inside what the shape matched before is skipped (it would match the rest of the same key again:
    ``"sk-" * n`` costs n/3 matches of up to n characters otherwise), and so is one inside a run a
    ``_RUN_AFTER_MISS`` shape failed on. Linear in ``len(text)``."""
    spans = [m.span() for m in _AWS.finditer(text) if m.start() == 0 or text[m.start() - 1] not in _ALNUM]
    for start, shape in _SHAPE_AT.items():
        if start == ":aa":
            hits = [i - k for i in _finds(low, start) for k in range(8, 11) if i >= k]
        elif start in ("k_live_", "k_test_"):
            hits = [i - 1 for i in _finds(low, start) if i >= 1]
        else:
            hits = _finds(low, start)
        run = _RUN_AFTER_MISS.get(start)
        covered = 0
        for at in hits:
            if at < covered or (at > 0 and text[at - 1] in _ALNUM):
                continue
            m = shape.match(text, at)
            if m is not None:
                spans.append(m.span())
                covered = m.end()
            elif run is not None:
                tail = run.match(text, at)
                covered = tail.end() if tail is not None else at
    return spans


_PEM_OPEN = "-----BEGIN PRIVATE KEY-----\n"
"""What a stream puts before its text while a private key block it wrote the start of goes on."""
_NL = r"[ \t]{0,16}(?:\r?\n|(?:\\r)?\\n)[ \t]{0,16}"
_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(  # as much of a block as there is, when its END line is not in the text
    rf"(?:{_NL}(?:Proc-Type|DEK-Info):[^\n\\]{{0,200}}){{0,8}}"
    rf"(?:(?:[ \t]{{1,16}}|{_NL})[A-Za-z0-9+/]{{16,100}}){{0,400}}"
    rf"(?:(?:[ \t]{{1,16}}|{_NL})[A-Za-z0-9+/]{{1,100}}={{0,2}})?"
)
PEM_BLOCK_CHARS = 16384
"""Most text between a private key's BEGIN and END lines that makes them one block."""


def _private_key_blocks(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, closed)`` of each private key block in ``text``: from a BEGIN line to its END line
    (``closed``) when that comes within ``PEM_BLOCK_CHARS``, else over the base64 lines that follow.
    The END lines are found once, and a BEGIN inside a block is part of it: linear in ``len(text)``
    (repeated BEGIN lines each looked ``PEM_BLOCK_CHARS`` ahead before)."""
    if "-----BEGIN" not in text:
        return []
    ends = [m.span() for m in _PEM_END.finditer(text)] if "-----END" in text else []
    blocks: list[tuple[int, int, bool]] = []
    covered, k = 0, 0
    for at in _finds(text, "-----BEGIN"):
        head = _PEM_BEGIN.match(text, at) if at >= covered else None
        if head is None:
            continue
        while k < len(ends) and ends[k][0] < head.end():
            k += 1
        if k < len(ends) and ends[k][0] - head.end() <= PEM_BLOCK_CHARS:
            blocks.append((at, ends[k][1], True))
        else:
            body = _PEM_BODY.match(text, head.end())
            blocks.append((at, body.end() if body is not None else head.end(), False))
        covered = blocks[-1][1]
    return blocks


_WEBHOOK_PATHS = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9/_\-]{8,512})"
    r"|discord(?:app)?\.com/api/webhooks/(?P<w>\d{1,32}/[A-Za-z0-9_\-]{20,512})"
    r"|api\.telegram\.org/(?P<t>bot[^/\s\"'<>]{20,512})"
)
_BEARER = re.compile(r"(?i)bearer\s{1,16}(?P<v>[A-Za-z0-9\-._~+/]{6,4096}={0,2})")  # "Bearer x": x is a credential
_BASIC = re.compile(r"(?i)basic[ \t]{1,16}(?P<v>[A-Za-z0-9+/]{8,4096}={0,2})(?![A-Za-z0-9+/=])")
"""``Basic base64(user:password)``: masked when it decodes to ``user:password`` or follows an
``Authorization`` header's name (``basic functionality`` is no credential)."""


def _basic_credential(value: str) -> bool:
    """Whether ``value`` is base64 of ``user:password`` (what a ``Basic`` header carries)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


# -- URLs ----------------------------------------------------------------------------------------------

_URL_REST = re.compile(r"[^\s\"'<>`\\]{1,4096}")
"""A URL's text after ``://``: up to what ends a URL in text (a space, a quote). The user-info is what
RFC 3986 allows there before ``@`` (``user:pass@``, or a token alone); no word boundary is needed before
the scheme, so ``x_http://u:p@h`` is caught too."""
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USERINFO = re.compile(r"[^/?#@\s\"<>]{1,256}@")
_PARAM = re.compile(r"[?&;#](?P<name>[A-Za-z0-9_.\-\[\]]{1,64})=(?P<v>[^&#;\s\"'<>`\\]+)")
_CREDENTIAL_PARAMS = frozenset(
    {"sig", "signature", "code", "auth", "apikey", "x-amz-signature", "x-amz-credential", "x-goog-signature"}
    | {"x-goog-credential", "client_secret", "sv", "session", "sessionid", "sid", "pwd", "pass", "passwd"}
)
_STRONG_PARAMS = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "auth_token", "refresh_token", "id_token"}
    | {"session_token", "private_token", "access_key", "secret_key", "password", "passwd", "pwd", "pass", "secret"}
    | {"client_secret", "sig", "signature", "x-amz-signature", "x-goog-signature", "x-amz-credential"}
    | {"x-goog-credential", "x-amz-security-token", "auth", "code"}
)
"""Query parameters whose value is a credential whatever it looks like (``?token=0123456789012345``)."""


def _credential_param(name: str) -> bool:
    lower = name.lower()
    return lower in _CREDENTIAL_PARAMS or lower in _STRONG_PARAMS or key_like(name) or _secret_name(name)


def _url_parts(text: str) -> list[tuple[str, int, int]]:
    """``("userinfo" | "param", start, end)`` of the user-info (``user:pass``, without its ``@``) and the
    credential query values of every URL in ``text``."""
    parts: list[tuple[str, int, int]] = []
    at = text.find("://")
    while at >= 0:
        start = at
        while start > 0 and at - start < 32 and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        rest = _URL_REST.match(text, at + 3)
        end = rest.end() if rest else at + 3
        if start < at and text[start].isalpha():
            info = _USERINFO.match(text, at + 3, end)
            if info is not None:
                parts.append(("userinfo", at + 3, info.end() - 1))
            for param in _PARAM.finditer(text, at + 3, end):
                name = param["name"]
                if _credential_param(name) and _masked_value(name, urllib.parse.unquote(param["v"]), param=True):
                    parts.append(("param", *param.span("v")))
        at = text.find("://", max(end, at + 3))
    return parts


def _url_spans(text: str) -> list[tuple[int, int]]:
    """The user-info and credential query values of every URL in ``text``."""
    return [(start, end) for _, start, end in _url_parts(text)]


def strip_userinfo(text: str) -> str:
    """``text`` with the user-info of its URLs taken out (``http://user:pw@host`` -> ``http://host``)."""
    out, at = [], 0
    for what, start, end in _url_parts(text):
        if what == "userinfo":
            out.append(text[at:start])
            at = end + 1  # and its "@"
    return "".join(out) + text[at:] if out else text


_PARTS = re.compile(r"[\s:;,]+")


def value_is_credential(value: str) -> bool:
    """Whether ``value``, the value of an environment variable, is a credential on its own: a URL with
    user-info or a credential in its query, a webhook URL, a private key block, or a provider's key
    shape that reads like a key (``looks_secret``) as the whole value or as one whole part of it
    (split at whitespace, ``:``, ``;``, ``,``). A shape inside a part is no key:
    ``PATH=/usr/bin:/opt/sk-learn-toolkit/bin`` stays."""
    if _url_parts(value) or _WEBHOOK_PATHS.search(value) or _private_key_blocks(value):
        return True
    parts = {value.strip(), *_PARTS.split(value)}
    return any(p and _PROVIDER.fullmatch(p) is not None and looks_secret(p) for p in parts)


# -- assignments ------------------------------------------------------------------------------------------

_ASSIGN_WORDS: tuple[str, ...] = ("key", "token", "secret", "pass", "pwd", "auth", "credential", "cookie")
_ASSIGN_WORDS += ("webhook", "jwt", "dsn", "sas", "pat", "pw", "sig")
"""The words one of which a secret's name holds (``_secret_name`` decides on the whole name)."""
_NAME_AFTER_WORD = 52
"""Most of a name matched from its key word on (``credential`` and 42 more characters)."""
_ASSIGN = re.compile(  # matched where a key word starts
    r"(?i)(?P<kw>[a-z0-9_.\-]{0,52})"  # the rest of the name, from one of _ASSIGN_WORDS on
    r"[\"']?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}"
    r"(?:(?:bearer|basic|token|digest|bot)[ \t]{1,16})?(?P<q>[\"'`]?)"
    r"(?P<v>[^\s\"'`<>,;&|(){}\[\]\\]{8,256}(?:,[^\s\"'`<>,;&|(){}\[\]\\]{8,256}){0,16})"  # API_KEYS=a,b
)
_NAME_RUN = re.compile(r"[A-Za-z0-9_.\-]*")
_FLAG = re.compile(  # matched where a flag's last word starts (``--api-key``'s ``key``)
    r"(?i)(?:key|token|secret|password|passwd|pass|pwd|credential|auth)"
    r"[ \t]{1,16}(?P<q>[\"']?)(?P<v>[^\s\"'`<>,;&|(){}\[\]\\]{8,512})"
)
_NAME_CHARS_TEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
_FLAG_CHARS_TEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
"""The characters of a name and of a flag, read back from a key word with ``str.rstrip`` (C speed)."""
MAX_NAME_CHARS = 64
"""Most of a name read back from its key word (``OPENAI_API_KEY``: 14): a long run of name characters
is read once per key word in it, so never more than this."""
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_REFERENCE = ("$", "%(", "{{", "<", "***", "@")


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _literal(value: str) -> bool:
    """A value written out, at least ``MIN_SECRET_CHARS`` long: not a reference (``$TOKEN``,
    ``${DB_PASSWORD}``, ``self.api_key``, ``<your key>``, ``None``) nor already masked."""
    if len(value) < MIN_SECRET_CHARS or value.startswith(_REFERENCE) or MASK in value:
        return False
    return not (_DOTTED.fullmatch(value) or value.lower() in ("none", "null", "true", "false"))


def looks_secret(value: str, password: bool = False) -> bool:
    """A literal that reads like a key or password: at least ``MIN_SECRET_CHARS`` long, no reference
    (``$TOKEN``, ``self.api_key``, ``<your key>``, a masked ``***``), and letters with digits (with
    ``password``, the value of a password's name: or with symbols, ``Kx!vQ@zR#``), or 20 characters
    and more of high entropy."""
    if not _literal(value):
        return False
    if _LETTER.search(value) and (_DIGIT.search(value) or (password and _PASSWORD_SYMBOL.search(value))):
        return True
    head = value[:64]  # as telling as the whole, at a bounded cost (a value is looked at once per key word)
    return len(value) >= 20 and len(set(head)) >= 12 and _entropy(head) >= 3.5  # 3.5 bits: 12 symbols at least


_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")
_PASSWORD_SYMBOL = re.compile(r"[!@#$%^&*+=~?]")
_PASSWORD_WORDS = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "PWD", "PASS", "PW")
_STRONG_LAST_WORDS = frozenset(
    {"APIKEY", "APIKEYS", "PWD", "PASSWD", "PASSWORD", "PASSPHRASE", "SECRET", "SECRETS", "PAT", "AUTHORIZATION"}
    | {"ACCESSTOKEN", "AUTHTOKEN", "REFRESHTOKEN", "APITOKEN"}
)
_STRONG_QUALIFIERS = frozenset(
    {"API", "ACCESS", "SECRET", "PRIVATE", "AUTH", "REFRESH", "SESSION", "BEARER", "CLIENT", "SIGNING"}
    | {"ENCRYPTION", "MASTER", "LICENSE", "SERVICE", "ACCOUNT", "SUBSCRIPTION", "ID", "PERSONAL", "OAUTH"}
)
"""A word before ``KEY``/``TOKEN`` that makes the name a credential's (``API_KEY``, ``access_token``)."""
_ENV_KEY_WORDS = frozenset({"KEY", "KEYS", "TOKEN", "TOKENS", "PASS", "PW"})
_NOT_QUALIFIERS = frozenset(
    {"SORT", "CACHE", "PRIMARY", "FOREIGN", "DICT", "MAP", "HASH", "LOOKUP", "GROUP", "PARTITION", "INDEX"}
    | {"ROW", "COLUMN", "NEXT", "PREV", "PAD", "EOS", "BOS", "UNK", "SEP", "CLS", "MASK", "START", "END"}
    | {"STOP", "SPECIAL", "MAX", "MIN", "NUM", "TOTAL", "SORTING", "UNIQUE", "COMPOSITE", "PUBLIC"}
)
"""A word before ``KEY``/``TOKEN`` in names of ordinary data (``SORT_KEY``, ``EOS_TOKEN``)."""


def _strong_name(name: str) -> bool:
    """A name whose value is a credential whatever it looks like, so any literal of it is masked:
    ``*_API_KEY``, ``*_TOKEN``/``*_KEY`` in an environment variable's upper case (``HF_TOKEN``),
    ``*_PWD``, ``*_PAT``, ``access_token``, ``Authorization``, anything ending in a password or secret
    word (``MYSQL_PWD=secretpw``, ``OPENAI_API_KEY=correcthorsebatterystaple``). Not the shell's
    ``PWD``, not ``password_hash``-like names (``_NOT_SECRET_LAST_WORDS``), not ``SORT_KEY``."""
    words = _words(name)
    if not words or name.upper().lstrip("-") in _NOT_KEYS or words[-1] in _NOT_SECRET_LAST_WORDS:
        return False
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    if last in _STRONG_LAST_WORDS or any(part in last for part in ("PASSWORD", "PASSWD", "PASSPHRASE")):
        return True
    if last in ("KEY", "KEYS", "TOKEN", "TOKENS") and before in _STRONG_QUALIFIERS:
        return True
    env_style = name.upper() == name and "_" in name  # OPENAI_API_KEY, HF_TOKEN, DB_PASS
    return env_style and last in _ENV_KEY_WORDS and before not in _NOT_QUALIFIERS


@functools.lru_cache(maxsize=4096)
def _name_rule(name: str, param: bool) -> tuple[int, bool]:
    """What ``_masked_value`` asks of a value of ``name``: 2 any literal, 1 one that reads like a key,
    0 none; and whether it is a password's (symbols count). Cached: text repeats its names."""
    if _strong_name(name) or (param and name.lower() in _STRONG_PARAMS):
        return 2, False
    if not (_secret_name(name) or param):
        return 0, False
    return 1, any(w in _PASSWORD_WORDS for w in _words(name)) or "PASSWORD" in name.upper()


def _masked_value(name: str, value: str, param: bool = False) -> bool:
    """Whether ``value``, given to ``name`` (an assignment's, a flag's, a query parameter's with
    ``param``), is masked: any literal when the name says credential (``_strong_name``, or a
    ``_STRONG_PARAMS`` parameter), else one that reads like a key (``looks_secret``) for a secret's name."""
    rule, password = _name_rule(name, param)
    if rule == 2:
        return _literal(value)
    return rule == 1 and looks_secret(value, password)


def _assignment_spans(text: str, low: str) -> list[tuple[int, int]]:
    """Secret values given to secret names: assignments (``NAME=v``, ``"name": "v"``), flags
    (``--api-key v``), ``Bearer v`` and ``Basic base64(user:pass)``. Only a key word followed by an
    assignment (a flag's, by a blank) is looked at, once, with at most ``MAX_NAME_CHARS`` read back and
    a bounded match forward; a key word inside a value already masked is skipped (``key=key=...``):
    linear in ``len(text)``."""
    spans: list[tuple[int, int]] = []
    flags = "--" in text
    covered = -1
    kept: tuple[str, int, int] = ("", 0, 0)  # the name and value span of the last value let through
    for at in sorted({i for w in _ASSIGN_WORDS for i in _finds(low, w)}):
        if at < covered:
            continue
        before = text[max(0, at - MAX_NAME_CHARS) : at]
        start = at - (len(before) - len(before.rstrip(_NAME_CHARS_TEXT)))
        if kept[1] <= at < kept[2]:
            after = text[at : at + _NAME_AFTER_WORD + 1]
            if text[start : at + len(after) - len(after.lstrip(_NAME_CHARS_TEXT))] == kept[0]:
                continue  # the same name again inside a value it was given (key=key=...): a part of it, let through
        m = _ASSIGN.match(text, at)
        if m is not None:
            name, value = text[start : m.end("kw")], m["v"]
            bearer_url = any(part in name.upper() for part in ("WEBHOOK", "DSN"))  # the URL is the secret
            in_url = text.endswith("://", 0, start) or ("://" in value and not bearer_url)
            # in or of a URL: the URL's own rules decide (user-info, query keys)
            if not in_url and _masked_value(name, value):
                spans.append(m.span("v"))
                covered = m.end("v")
                continue
            kept = (name, *m.span("v"))
        else:  # a key word later in the same name fails the same way, but near its end (kw's bound)
            run = _NAME_RUN.match(text, at)
            covered = run.end() - _NAME_AFTER_WORD if run is not None else at
        if flags and "--" in before:  # --api-key v
            f = _FLAG.match(text, at)
            start = at - (len(before) - len(before.rstrip(_FLAG_CHARS_TEXT)))
            if f is not None and "--" in text[start:at] and _masked_value(text[start : f.start("q")].strip(), f["v"]):
                spans.append(f.span("v"))
                covered = f.end("v")
    covered = -1
    for at in _finds(low, "bearer"):
        if at < covered or (at > 0 and text[at - 1] in _ALNUM):
            continue
        m = _BEARER.match(text, at)
        # what follows "Bearer " is a credential whatever it looks like (no entropy test), but a reference
        if m is not None and not m["v"].startswith(_REFERENCE):
            spans.append(m.span("v"))
            covered = m.end()
    covered = -1
    for at in _finds(low, "basic"):
        if at < covered or (at > 0 and text[at - 1] in _ALNUM):
            continue
        m = _BASIC.match(text, at)
        if m is not None and (_basic_credential(m["v"]) or "authorization" in low[max(0, at - 40) : at]):
            spans.append(m.span("v"))
            covered = m.end()
    return spans


# -- known values and their forms -----------------------------------------------------------------------

_SEPARATORS = re.compile(r"(?:\s|\\[nrt]|[\\\"'+,])+")
"""What a secret may be split by (a line break, a wrapped base64 blob, string concatenation)."""
_KEPT = re.compile(r"(?:(?<!\\)[^\s\\\"'+,]|(?<=\\)[^\s\\\"'+,nrt])+")
"""The characters ``_SEPARATORS`` leaves: runs of them, to map a split secret back to the text."""


def _b64_cores(data: bytes, encode: Any) -> list[str]:
    """The base64 characters that encode ``data`` wherever it starts in a longer blob (3 alignments),
    without the edge characters that depend on the neighbouring bytes."""
    cores = []
    for offset in range(3):
        text = encode(bytes(offset) + data).decode("ascii").rstrip("=")
        head = (0, 2, 3)[offset]
        tail = (offset + len(data)) % 3  # 1: the last char mixes in the next byte; 2: likewise
        cores.append(text[head : len(text) - (1 if tail else 0)])
    return cores


_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")


def _b64_forms(secret: str) -> list[str]:
    data = secret.encode("utf-8", "surrogatepass")
    return [*_b64_cores(data, base64.b64encode), *_b64_cores(data, base64.urlsafe_b64encode)]


def _escaped_forms(secret: str) -> set[str]:
    """``secret`` with every character escaped, as some encoders write everything: ``\\uXXXX`` (UTF-16
    units), ``\\xXX``, ``%XX`` (bytes of UTF-8), ``&#N;`` and ``&#xH;``, and hex, in lower and upper case."""
    data = secret.encode("utf-8", "surrogatepass")
    utf16 = secret.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(utf16[i : i + 2], "big") for i in range(0, len(utf16), 2)]
    forms = {
        "".join(f"\\u{u:04x}" for u in units),
        "".join(f"\\x{b:02x}" for b in data),
        "".join(f"%{b:02x}" for b in data),
        "".join(f"&#{ord(c)};" for c in secret),
        "".join(f"&#x{ord(c):x};" for c in secret),
        data.hex(),
    }
    return forms | {f.upper().replace("\\U", "\\u").replace("\\X", "\\x").replace("&#X", "&#x") for f in forms}


def encoded_forms(secret: str) -> list[str]:
    """``secret`` as it may appear in text: itself, JSON- and HTML-escaped, URL-encoded, hex, every
    character escaped (``_escaped_forms``: ``\\u0073``, ``%73``, upper-case hex...), and base64
    (standard and URL-safe) at any alignment; each at least ``MIN_SECRET_CHARS`` long."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        html.escape(secret),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        *_escaped_forms(secret),
        *_b64_forms(secret),
    }
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))


def _quick(text: str) -> str:
    """``text`` without ``_SEPARATORS`` (near enough: C-speed string methods, no regex), and the two
    base64 alphabets made one: where a known secret's every form is looked for first."""
    quick = "".join(text.split())
    for sep in ("\\n", "\\r", "\\t", "\\", '"', "'", "+", ","):
        quick = quick.replace(sep, "")
    return quick.replace("-", "/").replace("_", "/")


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], MASK]
        at = end
    out.append(text[at:])
    return "".join(out)


def pattern_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a secret nobody named (key shapes, private keys, URL credentials, webhooks,
    assignments): unsorted, maybe overlapping. No pattern spans a line break but a private key block."""
    low = _lower(text)
    spans = _provider_spans(text, low)
    if "PRIVATE KEY" in text:
        spans += [(start, end) for start, end, _ in _private_key_blocks(text)]
    if "://" in text:
        spans += _url_spans(text)
        for m in _WEBHOOK_PATHS.finditer(text):
            group = next(g for g in ("v", "w", "t") if m[g] is not None)
            spans.append(m.span(group))
    return spans + _assignment_spans(text, low)


class Redactor:
    """The rule of this module over a fixed list of known ``secrets`` (see :func:`secret_values`): the
    patterns always, the secrets in every form of :func:`encoded_forms`, whole or split."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=lambda s: (-len(s), s))
        forms = {f for s in self.secrets for f in encoded_forms(s)}
        self.forms = sorted(forms, key=lambda f: (-len(f), f))
        """Every form of every secret, longest first."""
        self._b64_forms = {c for s in self.secrets for c in _b64_forms(s)} - set(self.secrets)
        joined = {_SEPARATORS.sub("", f) for f in self.forms}
        self.joined_forms = sorted((f for f in joined if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))
        """The forms without separators: what a split secret reads as once they are taken out."""
        self.longest = max((len(f) for f in self.forms), default=0)
        self._prefixes = {f[:k] for f in self.joined_forms for k in range(4, len(f))}
        self._grams = {f[i : i + 4] for f in self.joined_forms for i in range(len(f) - 3)}
        """Every 4 characters in a row of a form: what the end of a line holding a secret's start ends with."""
        self._tiles: list[tuple[str, int, str, int]] = []
        """(secret, offset, piece, shortest fragment) for fragments: any run of at least half a long
        secret (a truncated copy, one of its pieces) holds one of its pieces whole."""
        for secret in self.secrets:
            if len(secret) < 2 * FRAGMENT_CHARS:
                continue
            shortest = max(FRAGMENT_CHARS, len(secret) // 2)
            step = (shortest + 1) // 2
            offsets = sorted({*range(0, len(secret) - step + 1, step), len(secret) - step})
            self._tiles += [(secret, i, secret[i : i + step], shortest) for i in offsets]
        needles = {_quick(f) for f in self.joined_forms} | {_quick(t[2]) for t in self._tiles}
        needles |= {n[1:] for n in needles if n[:1] in ("n", "r", "t")}  # after a "\\" the quick text lost
        needles = {n for n in needles if len(n) >= 4}
        self._needles = sorted(n for n in needles if not any(o in n for o in needles if o != n))
        """What the quick text (``_quick``) holds when a known secret is anywhere in any form, whole,
        split or in part: one scan each, and the close look only when one is there (a needle that holds
        another is left out: the other is found wherever it is)."""

    def spans(self, text: str, patterns: bool = True) -> list[tuple[int, int]]:
        """Where ``text`` holds a secret: sorted, non-overlapping ``(start, end)`` ranges to mask. Without
        ``patterns``, the known secrets only (what a record's data is masked for: ``redact_record``)."""
        spans = self.known_spans(text)
        return _merge(spans + pattern_spans(text) if patterns else spans)

    def known_spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` holds a known secret (unsorted, maybe overlapping)."""
        if self._needles:
            quick = _quick(text)
            if any(n in quick for n in self._needles):
                return self._known_spans(text)
        return []

    def _known_spans(self, text: str) -> list[tuple[int, int]]:
        """The known secrets in ``text``: each form whole, split, or in part."""
        spans: list[tuple[int, int]] = []
        for form in self.forms:
            at = text.find(form)
            while at >= 0:
                start, end = at, at + len(form)
                if form in self._b64_forms:  # and the edge characters its neighbours share
                    while start > 0 and at - start < 3 and text[start - 1] in _B64_CHARS:
                        start -= 1
                    while end < len(text) and end - at - len(form) < 3 and text[end] in _B64_CHARS:
                        end += 1
                spans.append((start, end))
                at = text.find(form, at + len(form))
        return spans + self._split_spans(text) + self._fragment_spans(text)

    def _split_spans(self, text: str) -> list[tuple[int, int]]:
        """Secrets split by separators: found in the text with the separators taken out, masked from
        the first to the last character they cover in ``text``."""
        starts: list[int] = []  # joined index -> text index, for each kept character
        for run in _KEPT.finditer(text):
            starts.extend(range(run.start(), run.end()))
        joined = "".join(text[i] for i in starts)
        found = [f for f in self.joined_forms if f in joined]
        spans = []
        for form in found:
            at = joined.find(form)
            while at >= 0:
                spans.append((starts[at], starts[at + len(form) - 1] + 1))
                at = joined.find(form, at + len(form))
        return spans

    def _fragment_spans(self, text: str) -> list[tuple[int, int]]:
        """Runs of ``text`` that copy at least half of a long known secret (``key[:-2]``, ``key[:30]``)."""
        spans = []
        for secret, offset, piece, shortest in self._tiles:
            at = text.find(piece)
            while at >= 0:
                start, i = at, offset
                while start > 0 and i > 0 and text[start - 1] == secret[i - 1]:
                    start, i = start - 1, i - 1
                end, j = at + len(piece), offset + len(piece)
                while end < len(text) and j < len(secret) and text[end] == secret[j]:
                    end, j = end + 1, j + 1
                if end - start >= shortest:
                    spans.append((start, end))
                at = text.find(piece, at + 1)
        return spans

    def held_from(self, text: str) -> int:
        """Where the end of ``text`` may be the start of a known secret that goes on in text not yet
        seen (at least 4 of its characters, separators aside): the index to hold back from, or
        ``len(text)``."""
        if not self._prefixes:
            return len(text)
        last = "".join(_KEPT.findall(text, max(0, len(text) - 64)))[-4:]
        if last not in self._grams:  # no secret's start ends there (the usual line): no closer look
            return len(text)
        tail_start = max(0, len(text) - 2 * self.longest)
        runs = [(m.start(), m.end()) for m in _KEPT.finditer(text, tail_start)]
        starts = [i for a, b in runs for i in range(a, b)]
        joined = "".join(text[i] for i in starts)
        for k in range(min(self.longest - 1, len(joined)), 3, -1):
            if joined[-k:] in self._prefixes:
                return starts[len(joined) - k]
        return len(text)

    def text(self, text: str, patterns: bool = True) -> str:
        """``text`` with every secret masked (without ``patterns``: the known ones only)."""
        spans = self.spans(text, patterns)
        return _apply(text, spans) if spans else text

    def many(self, texts: list[str], patterns: bool = True) -> list[str]:
        """Each of ``texts`` masked, a secret split between two of them included (they are read as
        one text, one line each)."""
        if not texts:
            return []
        whole = "\n".join(texts)
        spans = self.spans(whole, patterns)
        if not spans:
            return list(texts)
        out, at, k = [], 0, 0
        for text in texts:  # the spans are sorted: each text takes those that reach into it, in one pass
            end = at + len(text)
            while k < len(spans) and spans[k][1] <= at:
                k += 1
            mine, j = [], k
            while j < len(spans) and spans[j][0] < end:
                mine.append((max(spans[j][0], at) - at, min(spans[j][1], end) - at))
                j += 1
            mine = [m for m in mine if m[1] > m[0]]
            out.append(_apply(text, mine) if mine else text)
            at = end + 1
        return out

    def data(self, value: Any, patterns: bool = True) -> Any:
        """A JSON-like value (dicts, lists, strings...) with every string in it masked, keys included;
        the value itself when nothing is. Without ``patterns``: the known secrets only."""
        texts: list[str] = []
        _collect(value, texts)
        masked = self.many(texts, patterns)
        if masked == texts:
            return value
        return _rebuild(value, iter(masked))


def _collect(value: Any, texts: list[str]) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                texts.append(k)
            _collect(v, texts)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, texts)


def _rebuild(value: Any, masked: Any) -> Any:
    if isinstance(value, str):
        return next(masked)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            key = next(masked) if isinstance(k, str) else k
            out[key] = _rebuild(v, masked)
        return out
    if isinstance(value, (list, tuple)):
        items = [_rebuild(v, masked) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


# -- the process's secrets ------------------------------------------------------------------------------------


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


_registered: set[str] = set()
_cache_lock = threading.Lock()
_cache: tuple[int, Redactor] | None = None


def register_secret(value: str | None) -> None:
    """Mask ``value`` everywhere this process writes from now on, like an environment key (a token
    read from ``--token-file``, say). Shorter than ``MIN_SECRET_CHARS``: ignored."""
    global _cache
    if value and len(value.strip()) >= MIN_SECRET_CHARS:
        with _cache_lock:
            if value.strip() not in _registered:  # the redactor is built again only for a new one
                _registered.add(value.strip())
                _cache = None


def env_redactor() -> Redactor:
    """The redactor of this process: its environment's key-like values and the registered secrets;
    rebuilt when the environment changes (a ``.env`` file loaded, a variable set)."""
    global _cache
    data = getattr(os.environ, "_data", None)
    key = hash(tuple(data.items())) if isinstance(data, dict) else hash(tuple(os.environ.items()))
    cached = _cache
    if cached is not None and cached[0] == key:
        return cached[1]
    with _cache_lock:
        redactor = Redactor([*secret_values(os.environ), *_registered])
        _cache = (key, redactor)
    return redactor


def redact_text(text: str) -> str:
    """``text`` as it may leave the process (a log line, an error, a report, a training step's output):
    everything this module masks, masked."""
    return env_redactor().text(text)


def redact_data(value: Any) -> Any:
    """A file that is no data (``manifest.json``, ``summary.json``, ``config.yaml``: JSON-like) with every
    string in it masked by the whole rule (``Redactor.data``)."""
    return env_redactor().data(value)


def redact_record(value: Any) -> Any:
    """A record of a journal (a task, a trajectory, a proposal: JSON-like) with this process's own secrets
    masked, in every form, and nothing else: a record is data (a test's input may well read
    ``api_key=abc12345`` or ``https://alice:s3cret99@host``, and must read back the same), so the shape and
    assignment patterns are for text that is not (``redact_text``, ``redact_data``)."""
    return env_redactor().data(value, patterns=False)


def register_url_secrets(url: str | None) -> None:
    """Mask, like an environment key, the credentials an endpoint's ``url`` carries: its user-info
    (``user:password`` and the password alone) and its credential query values (``?api_key=...``), decoded."""
    if not url:
        return
    for what, start, end in _url_parts(url):
        value = urllib.parse.unquote(url[start:end])
        register_secret(value)
        if what == "userinfo" and ":" in value:
            register_secret(value.split(":", 1)[1])


def masked_in(url: str | None) -> bool:
    """Whether ``url`` holds a masked credential (``***``): a value recorded by this rule, not the one
    that was used (``config.yaml``'s ``api_base`` with ``?key=***``)."""
    return bool(url) and MASK in str(url)


def scrub_secrets(value: Any) -> Any:
    """Config values as a run records them (``config.yaml``, ``manifest.json``'s argv, a training
    step's switch): URLs without their user-info (``http://user:pw@host`` -> ``http://host``: a
    resumed run still reaches the endpoint, without the credentials), string fields named like secrets
    (``api_key``, ``token``: ``_secret_name``) masked, and the rest of the rule (:func:`redact_data`:
    a credential query value of an ``api_base`` reads ``***``) applied."""
    return redact_data(_scrub(value))


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (MASK if isinstance(v, str) and v and _secret_name(str(k)) else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return strip_userinfo(value)
    return value


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every occurrence of each of ``secrets`` (in any form) replaced by ``***``, and every
    key shape, credential URL part and secret assignment masked (the module's rule).

    Pure: ``secrets`` is the list to mask (see :func:`secret_values`); short or empty ones are
    ignored. Idempotent: redacting redacted text changes nothing.

    >>> redact("key=sk-abcdef123 at http://bob:hunter2@example.com/v1", ["sk-abcdef123"])
    'key=*** at http://***@example.com/v1'
    """
    return _redactor_of(tuple(sorted(set(secrets)))).text(text)


_redactors: dict[tuple[str, ...], Redactor] = {}


def _redactor_of(secrets: tuple[str, ...]) -> Redactor:
    found = _redactors.get(secrets)
    if found is None:
        if len(_redactors) > 64:
            _redactors.clear()
        found = _redactors[secrets] = Redactor(secrets)
    return found


HOLD_CHARS = 1 << 16
"""Most text a stream holds back waiting for a line end (a progress bar redrawn with ``\\r`` counts as
one); past it, all but the last few hundred characters are written anyway."""


def _continued_key_block(text: str) -> tuple[int, bool] | None:
    """Where the private key block that ``text`` goes on with (its start went out before) ends in it, and
    whether its END line is there: None when ``text`` does not go on with one."""
    blocks = _private_key_blocks(_PEM_OPEN + text)
    if not blocks or blocks[0][0] != 0:
        return None
    return blocks[0][1] - len(_PEM_OPEN), blocks[0][2]


class StreamRedactor:
    """The rule over a stream that arrives in pieces (a child's stdout, read as it comes).

    Whole lines (ended by ``\\n`` or ``\\r``) are masked and let through at once, but for a line that
    ends with the start of a known secret (4 characters of it and more): that one waits for the next,
    so a secret printed over two lines is masked too. The unfinished line is held back, so a secret or
    a URL's user-info split between two reads is still masked, and so is a match that a long line's
    cut would split. What was written stays in view (its last ``hold`` characters), so the rest of a
    secret whose start went out is masked when it comes; the lines of a private key block are masked
    until its end. A line longer than ``HOLD_CHARS`` is let through but for its last ``hold`` characters.
    """

    def __init__(self, secrets: Iterable[str] = (), redactor: Redactor | None = None) -> None:
        self.redactor = redactor if redactor is not None else Redactor(secrets)
        self.secrets = self.redactor.secrets
        self.hold = max(MAX_MATCH_CHARS, 2 * self.redactor.longest)
        self._pending = ""
        self._context = ""
        """The last characters written, as they came: the start of a match that ends in what comes next."""
        self._in_key = False
        """What was written ended inside a private key block (no END line yet)."""

    def _take(self, text: str, keep: int) -> str:
        """The masked first ``keep`` characters of ``text`` (fewer when a match or a secret's start
        straddles the cut: those wait); the rest goes back to the pending text."""
        if keep == 0:  # nothing goes out: no need to look (a line arriving a byte at a time is looked at once)
            self._pending = text + self._pending
            return ""
        base = len(self._context)
        if not self._context or self._context.endswith(("\n", "\r")):
            # the patterns stop at a line's end (a private key block: _in_key): only the known secrets,
            # which may be split over lines, are looked for across it
            shown = [(s + base, e + base) for s, e in pattern_spans(text)]
            shown += self.redactor.known_spans(self._context + text)
        else:
            shown = self.redactor.spans(self._context + text)
        found = [(s - base, e - base) for s, e in _merge(shown) if e > base]
        if self._in_key:  # the rest of a private key block whose start went out before
            block = _continued_key_block(text)
            if block is not None and block[0] > 0:
                found = _merge([*found, (0, block[0])])
        for start, end in found:
            if start < keep < end:
                keep = max(0, start)
        if keep:
            keep = min(keep, self.redactor.held_from(text[:keep]))
        spans = [(max(s, 0), min(e, keep)) for s, e in found if e > 0 and s < keep]
        written = text[:keep]
        self._pending = text[keep:] + self._pending
        if written:
            self._in_key = self._key_open(written)
            if self.secrets or not written.endswith(("\n", "\r")):
                self._context = (self._context + written)[-self.hold :]
            else:  # no pattern spans a line break (a private key block has _in_key): nothing to keep in view
                self._context = ""
        return _apply(written, spans) if spans else written

    def _key_open(self, written: str) -> bool:
        """Whether the output ends inside a private key block (its END line still to come)."""
        if self._in_key:
            block = _continued_key_block(written)
            if block is not None and not block[1] and not written[block[0] :].strip():
                return True
        shown = self._context + written
        if "PRIVATE KEY" not in shown:
            return False
        blocks = _private_key_blocks(shown)
        return bool(blocks) and not blocks[-1][2] and not shown[blocks[-1][1] :].strip()

    def feed(self, text: str) -> str:
        """The masked text that can be written now (maybe empty)."""
        pending, self._pending = self._pending + text, ""
        cut = max(pending.rfind("\n"), pending.rfind("\r")) + 1
        if len(pending) - cut > HOLD_CHARS:  # a line with no end in sight: all but its tail goes
            cut = len(pending) - self.hold
        return self._take(pending, cut)

    def close(self) -> str:
        """The rest, masked: the stream has ended."""
        pending, self._pending = self._pending, ""
        out = self._take(pending, len(pending))
        if self._pending:  # the start of a known secret, and the stream ended: masked all the same
            rest, self._pending = self._pending, ""
            stripped = rest.rstrip()
            out += MASK + rest[len(stripped) :]
        return out
