"""``spade serve-sandbox``: SandboxFusion's ``/run_code`` protocol over spade's sandbox.

Why it exists: verl's ``sandbox_fusion`` reward (``verl/utils/reward_score/sandbox_fusion``) and its
``SandboxFusionTool`` call a SandboxFusion server. Pointing them at this one instead runs the
model's Python in spade's own sandbox (bwrap by default: namespaces, no network, cgroups) with no
change to verl and nothing else to deploy.

The protocol, as SandboxFusion (``sandbox/server/sandbox_api.py``, ``sandbox/runners/types.py``)
and verl's client use it:

* ``POST /run_code`` with ``{code, language, stdin, run_timeout, compile_timeout, memory_limit_MB,
  files: {name: base64}, fetch_files: [name]}``; only ``code`` and ``language`` are required.
* The answer, always HTTP 200 once the request is valid: ``{status, message, compile_result,
  run_result, executor_pod_name, files}``. ``status`` is ``Success`` (the program ran and exited 0),
  ``Failed`` (it exited non-zero, was killed, or ran out of time) or ``SandboxError`` (the request
  could not be run: an unsupported language, a bad file name, a broken sandbox; ``message`` says
  why). ``run_result`` is ``{status, execution_time, return_code, stdout, stderr}`` with ``status``
  ``Finished`` (whatever the exit code: a program killed by a signal has ``-signal``),
  ``TimeLimitExceeded`` (``return_code`` null) or ``Error``. verl scores ``Failed`` + ``Finished``
  with a non-zero code as a runtime error, ``TimeLimitExceeded`` as a timeout and ``SandboxError``
  as the sandbox's fault; ``compile_result`` stays null for Python, as in SandboxFusion.
* A body that is not JSON, fields of the wrong type, or a ``files`` entry that is not base64 get
  HTTP 422 with FastAPI's ``{"detail": [{"type", "loc", "msg", "input"}]}`` (SandboxFusion is a
  FastAPI app: its invalid JSON is a 422 ``json_invalid``, not a 400; bad base64 is pydantic's
  ``base64_decode`` at ``["body", "files", name]``); unknown paths 404 and wrong methods 405 as
  ``{"detail": "..."}``.
* ``GET /v1/ping`` answers ``"pong"`` (SandboxFusion's liveness check), ``GET /health`` the backend
  and its concurrency, ``GET /stats`` counters (refusals by status, programs cancelled or killed
  because their client left, the body bytes held now and at most).

Access, checked from the headers before any of the body is read (so a refusal costs no memory):

* **Host**: while bound to a loopback address (the default 127.0.0.1, ``localhost``, ``::1``), a
  ``Host`` naming anything but a loopback name or address (``127.0.0.1``, ``localhost``, ``[::1]``,
  any port) is a 403: a web page whose name an attacker re-points at 127.0.0.1 (DNS rebinding)
  reaches the port, but its requests carry the attacker's name. Bound to another address, the
  names it is reached by are unknown, and the token is the defence.
* **Origin**: a request carrying an ``Origin`` that is not a loopback one is a 403 (a browser's
  cross-site request; no client of ``/run_code`` is a web page).
* **Token**: with a token (``SPADE_SANDBOX_TOKEN``, or ``--token-file``), every path but
  ``/v1/ping`` and ``/health`` needs ``Authorization: Bearer <token>`` (compared in constant
  time), else a 401 with ``WWW-Authenticate: Bearer``. ``Basic`` with the token as the password
  is taken too: verl's client sends no headers of its own, but ``requests`` turns the credentials
  of a URL (``http://spade:TOKEN@host:8080/run_code``) into one. ``/v1/ping`` and ``/health`` stay
  open for liveness and readiness probes, which carry no secrets; they run nothing and tell only
  the backend's name and concurrency. Bound to a non-loopback address without a token, the
  command warns on stderr.
* **Content-Type**: ``POST /run_code`` needs ``application/json`` (parameters such as
  ``charset=utf-8`` allowed, and ``application/*+json``), else a 415, as SandboxFusion's FastAPI
  answers: a browser sends ``text/plain`` (or no type) cross-site without asking first, and
  ``application/json`` only after a CORS preflight this server never grants.

Limits (``ServeLimits``): at most ``concurrency`` programs run at once; exactly ``max_queue``
requests (default 1024) may wait for a slot, and the next gets a 503 with ``Retry-After`` (a request
takes its place in one step, and a freed slot goes straight to the first waiting, so a burst cannot
overshoot); the requests being read, waiting or running hold at most ``max_held_bytes`` (256 MiB)
together, counted as their bodies' bytes *arrive* (a declared ``Content-Length`` is not memory:
counting it let 8 slow clients declaring 32 MiB lock everyone out), then as what each keeps once
parsed (``job_bytes``: its code as a ``str`` can be four times its text), a 503 with ``Retry-After``
beyond it, so memory is bounded by bytes held, not by a count of requests. The bytes of bodies still
arriving are reclaimed before anyone is refused (``httpbase``: the one longest without a byte is
aborted first; a body silent for 5 s is dropped), so clients that send 32 MiB but their last byte
hold the budget for nobody; one body is at most ``max_body_bytes`` (32 MiB), a 413 beyond it (before
reading, from ``Content-Length``). A body's JSON may hold ``max_json_items`` values (100,000),
counted from its bytes before it is parsed, and ``files`` and ``fetch_files`` ``max_files`` entries
each (4096): a 413 beyond either. Connections are capped (``--max-connections``, never above the
default: below the open-files limit, which is raised to its hard limit at start): past the cap a
newcomer evicts the oldest connection that has not sent a whole request (silent or slow: slowloris),
else it gets a 503. Framing is strict (``httpbase``: duplicate or conflicting ``Content-Length``
and ``Transfer-Encoding``, a repeated ``Host`` or ``Authorization``, line folding... are a 400). A
request refused while its body is still coming gets its status without a TCP reset (``httpbase``:
answer, half-close, read and drop the rest). verl's client retries only a 504, so a 503 is a failed
test to it: the defaults hold far more than its 64 requests in flight
(``reward_model.sandbox_fusion.max_concurrent``). While a request waits, the server holds its
program and files, not its raw body or parsed JSON.

A client that goes away (closes its connection, or half-closes it) gets nothing, and its work is
dropped: a request still waiting for a slot never starts (``cancelled`` in ``/stats``), and a
program running is killed (``killed``) where the backend's ``run`` takes a ``cancel`` hook; on
a backend without one it runs to its end for nobody (``orphaned``), holding its slot until then.

Languages: SandboxFusion's names, from ``languages.TOOLCHAINS`` (and ``TOOLCHAIN_ALIASES``: a
client may say ``python3``); another is a ``SandboxError`` listing them. Python runs as below. Any other
is compiled by its toolchain (``sandbox/compiled.py``: in the sandbox, under ``compile_timeout``, default
10 s as SandboxFusion's, and at least 1 GiB: compilers need it; kept by the answer's hash, so verl's one
request per test compiles once), then its build runs on ``stdin`` under ``run_timeout`` (its CPU budget,
plus a JVM's start-up) and ``memory_limit_MB``. The answer is SandboxFusion's ``run_commands``':
``compile_result`` the compile's ``{status, execution_time, return_code, stdout, stderr}``; a compile
that fails or runs out of time is ``Failed`` with ``run_result`` null (verl: a compile error, -4);
otherwise ``run_result`` is the program's, as for Python. A compile is not cancelled when its client
leaves (other requests of the same answer share it); the run is. ``files`` reach the run (not the
compile); ``fetch_files`` is Python's only (a ``SandboxError`` otherwise). Node.js answers get a
``compile_result`` (``node --check``, spade's own judge's compile step), where SandboxFusion has none:
a syntax error is a compile error here, as spade scores it, not a runtime one.

Limits per request: ``run_timeout`` (default 10 s, clamped to ``ServeLimits.max_run_timeout_s``) is
``Limits.timeout_s``, as the backends enforce it: CPU time
``ceil(t) + 1`` s, and a wall-clock backstop their ``grace_s`` (2 s) past ``t``, so a program
that sleeps is cut a little later than ``run_timeout`` (the fetch_files wrapper cuts at it).
``memory_limit_MB`` is the memory limit (<= 0, SandboxFusion's "no limit", means
``default_memory_mb``), rounded *down* to the last of 64, 96, 128, 192, 256, ... (powers of two and
one and a half times them: never more than asked, but for ``min_memory_mb``) and clamped to
``max_memory_mb``: the bwrap backend keeps a pool of
warm workers per memory limit, and a client sending many distinct values would otherwise start a
worker for each. ``compile_timeout`` is unused for Python (nothing compiles).
The network is closed by the backend (bwrap's own network namespace, docker's ``--network none``).

``files`` are written into the program's working (scratch) directory through ``Program.files``;
names must be relative, without ``..``, not ``program.py`` or ``_spade_code.py`` (spade's own), not
both a file and another file's folder, and with no part longer than 255 bytes (``SandboxError`` otherwise).
``fetch_files``: the sandbox API returns no files, so when some are asked for, the program run is
a small wrapper (``FETCH_WRAPPER``) that runs the user's code (``_spade_code.py``) as a child
process with the same stdin, pipes its stdout and stderr (each capped at the output limit), kills
its process group at ``run_timeout``, then reads the requested files (at most
``ServeLimits.fetch_limit_bytes`` in all; missing ones are left out, as SandboxFusion does) and
prints one JSON envelope. Its limits: the child costs an interpreter start (~20 ms); the memory
limit covers wrapper and child together where a cgroup enforces it; and the user's code, running
as the same user in the same sandbox, could forge its own envelope, which fools only its own
request. Files are read inside the sandbox, so a symlink reaches nothing the program could not.

Why this server: the standard library's asyncio (``httpbase.py``, shared with ``spade
serve-fake``), no new dependency (aiohttp is only a transitive one, FastAPI/uvicorn none at all).
One event loop holds any number of connections (verl opens one per test case, hundreds at once),
while the sandbox's blocking ``run`` goes to a pool of ``concurrency`` threads behind ``RunSlots``:
requests beyond it wait their turn (up to ``max_queue``) holding only their connection and program.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import functools
import hmac
import inspect
import ipaddress
import json
import logging
import math
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..languages import TOOLCHAIN_ALIASES, TOOLCHAINS, Toolchain
from ..sandbox.base import Limits, Program, Sandbox
from ..sandbox.common import PROGRAM_FILE
from ..sandbox.compiled import Build, build, run_built
from ..sandbox.registry import AUTO
from .httpbase import HTTPError, HTTPServer, HTTPStats, Request, run_server
from .netguard import DEFAULT_MAX_JSON_ITEMS

if TYPE_CHECKING:
    from ..types import ExecutionResult

LANGUAGES: dict[str, Toolchain] = {
    **TOOLCHAINS,
    **{alias: TOOLCHAINS[name] for alias, name in TOOLCHAIN_ALIASES.items()},
}
"""The ``language`` values served, SandboxFusion's names (``TOOLCHAINS``, and their aliases)."""
CODE_FILE = "_spade_code.py"
"""Where the user's code goes when the fetch_files wrapper runs it."""
RESERVED_FILES = frozenset({PROGRAM_FILE, CODE_FILE})
NAME_MAX = 255
"""Longest part of a file name (bytes), as Linux file systems take it."""
WRAPPER_SLACK_S = 2.0
"""The wrapper's own time past ``run_timeout``: its start, the child's, reading the files."""
ENVELOPE_SLACK_BYTES = 64 << 10
logger = logging.getLogger("spade_llm.serve.sandbox")
TOKEN_ENV = "SPADE_SANDBOX_TOKEN"
"""The environment variable holding the bearer token (``--token-file`` instead, to keep it out of ``ps``)."""
OPEN_PATHS = frozenset({"/v1/ping", "/health"})
"""Paths served without the token: liveness and readiness probes (see the module doc)."""


@dataclass(frozen=True)
class ServeLimits:
    """The bounds every request's limits are clamped to, the defaults for what it leaves out, and
    how much the server takes in at once (queue, bytes held, one body)."""

    default_run_timeout_s: float = 10.0
    default_compile_timeout_s: float = 10.0
    """SandboxFusion's ``compile_timeout`` when a request leaves it out."""
    max_compile_timeout_s: float = 120.0
    min_run_timeout_s: float = 0.1
    max_run_timeout_s: float = 120.0
    default_memory_mb: int = 1024
    min_memory_mb: int = 64
    max_memory_mb: int = 4096
    output_limit_bytes: int = 1 << 20
    """Per stream (stdout, stderr): a program writing more is killed (``Failed``, code -9)."""
    fetch_limit_bytes: int = 16 << 20
    """The fetched files' total size; files beyond it are left out and named in ``message``."""
    max_queue: int = 1024
    """Requests waiting for a slot (beyond ``concurrency`` running), exactly; the next gets a 503
    with ``Retry-After`` (before its body is read when the queue is full already). verl keeps
    ``max_concurrent`` (64 by default) requests in flight per reward loop and counts a 503 as a
    failed test: the bound is for floods, not for its load. 0: run when a slot is free, else 503."""
    max_held_bytes: int = 256 << 20
    """Bytes that requests being read, waiting and running may hold together: a body's bytes as they
    arrive, then its job's (``job_bytes``) once parsed. A request that would take the sum past it
    gets a 503 with ``Retry-After`` (before its body is read when the budget is spent already).
    What bounds the server's memory."""
    max_body_bytes: int = 32 << 20
    """One request's body; a larger one gets a 413 (``Content-Length``, or as a chunked body arrives)."""
    max_json_items: int = DEFAULT_MAX_JSON_ITEMS
    """Values a body's JSON may hold at any depth (members and elements), counted before it is
    parsed; beyond, a 413. 2.4 M map entries fit in 24 MB of text and take 330 MB once parsed."""
    max_files: int = 4096
    """Entries in ``files``, and names in ``fetch_files``, each; beyond, a 413 (checking and writing
    each costs the event loop and the sandbox a little: 100,000 of them ~0.15 s of the loop's time)."""
    retry_after_s: int = 1
    """The ``Retry-After`` of a 503."""

    def __post_init__(self) -> None:
        if self.max_queue < 0 or self.max_body_bytes < 0 or self.max_held_bytes < self.max_body_bytes:
            raise ValueError("ServeLimits: max_queue and max_body_bytes must be >= 0, max_held_bytes >= max_body_bytes")
        if self.max_json_items < 1 or self.max_files < 0:
            raise ValueError("ServeLimits: max_json_items must be >= 1 and max_files >= 0")


def memory_bucket(requested: int, bounds: ServeLimits) -> int:
    """The memory limit (MB) a request runs under: ``requested`` rounded *down* to the last of 2^k
    and 1.5 * 2^k, so a program never gets more than it asked for, and clamped to the bounds (<= 0
    is the default; below ``min_memory_mb`` it is that). Few distinct values keep bwrap's per-limit
    worker pools few and warm."""
    if requested <= 0:
        requested = bounds.default_memory_mb
    requested = max(bounds.min_memory_mb, min(requested, bounds.max_memory_mb))
    power = 1 << (requested.bit_length() - 1)  # the largest power of two <= requested
    step = power * 3 // 2 if power * 3 // 2 <= requested else power
    return max(bounds.min_memory_mb, step)


# -- the request ----------------------------------------------------------------------------------


class Refused(Exception):
    """A well-formed request this server cannot run: answered as ``SandboxError`` with this message."""


@dataclass(frozen=True)
class RunRequest:
    """A ``/run_code`` body, its types checked (SandboxFusion's ``RunCodeRequest``)."""

    code: str
    language: str
    stdin: str | None = None
    run_timeout: float | None = None
    """None: not given (``ServeLimits.default_run_timeout_s``, SandboxFusion's 10 s by default)."""
    compile_timeout: float | None = None
    memory_limit_mb: int = -1
    files: dict[str, str | None] = field(default_factory=dict)
    fetch_files: list[str] = field(default_factory=list)


SHOWN_INPUT_CHARS = 200
"""How much of a refused string a 422 shows (FastAPI echoes it whole: a 20 MB file would come back)."""


def _invalid(loc: str | list[str], kind: str, msg: str, value: Any) -> HTTPError:
    """FastAPI's 422 for a field of the wrong type (one error; FastAPI lists them all)."""
    shown: Any = value if isinstance(value, (str, int, bool, type(None))) else type(value).__name__
    if isinstance(value, float):  # NaN and Infinity are no JSON: a client could not read the answer
        shown = value if math.isfinite(value) else str(value)
    if isinstance(shown, str) and len(shown) > SHOWN_INPUT_CHARS:
        shown = shown[:SHOWN_INPUT_CHARS] + "..."
    path = [loc] if isinstance(loc, str) else loc
    detail = [{"type": kind, "loc": ["body", *path], "msg": msg, "input": shown}]
    return HTTPError(422, f"{'.'.join(path)}: {msg}", "validation_error", payload={"detail": detail})


def _number(body: dict[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _invalid(name, "float_parsing", "Input should be a valid number", value)
    try:
        number = float(value)  # an int past float's range overflows
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _invalid(name, "finite_number", "Input should be a finite number", value)
    return number


def _integer(body: dict[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(name, "int_parsing", "Input should be a valid integer", value)
    return value


def _text(body: dict[str, Any], name: str, *, required: bool) -> str | None:
    if name not in body:
        if required:
            raise _invalid(name, "missing", "Field required", None)
        return None
    value = body[name]
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _invalid(name, "string_type", "Input should be a valid string", value)
    return value


def parse_request(body: Any) -> RunRequest:
    """The ``RunRequest`` in a decoded JSON body; ``HTTPError(422)`` in FastAPI's shape when it is none."""
    if not isinstance(body, dict):
        raise HTTPError(
            422,
            "the body must be a JSON object",
            "validation_error",
            payload={"detail": [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a "
                                 "valid dictionary or object to extract fields from", "input": None}]},
        )  # fmt: skip
    files = body.get("files") or {}
    if not isinstance(files, dict) or not all(isinstance(v, (str, type(None))) for v in files.values()):
        raise _invalid("files", "dict_type", "Input should be a dictionary of name to base64 text", files)
    fetch = body.get("fetch_files") or []
    if not isinstance(fetch, list) or not all(isinstance(n, str) for n in fetch):
        raise _invalid("fetch_files", "list_type", "Input should be a list of names", fetch)
    return RunRequest(
        code=_text(body, "code", required=True) or "",
        language=_text(body, "language", required=True) or "",
        stdin=_text(body, "stdin", required=False),
        run_timeout=_number(body, "run_timeout"),
        compile_timeout=_number(body, "compile_timeout"),
        memory_limit_mb=_integer(body, "memory_limit_MB", -1),
        files=dict(files),
        fetch_files=list(fetch),
    )


def _check_name(name: str, what: str, *, writing: bool = False) -> str:
    """``name`` normalised (``a/./b`` -> ``a/b``); ``Refused`` when it would leave the scratch directory,
    or (``writing``) could not be written."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not name or name.startswith("/") or ".." in parts or not parts or "\0" in name:
        raise Refused(f"{what} {name!r}: names must be relative paths inside the working directory, without '..'")
    clean = "/".join(parts)
    try:
        encoded = [p.encode("utf-8", "surrogateescape") for p in parts]  # JSON allows lone surrogates
    except UnicodeEncodeError:
        raise Refused(f"{what} {name!r}: not a file name (it holds a lone surrogate)") from None
    if writing and max(map(len, encoded)) > NAME_MAX:  # unwritable: the run would fail unexplained
        raise Refused(f"{what} {name[:80]!r}...: a part of the name is longer than {NAME_MAX} bytes")
    if clean in RESERVED_FILES:
        raise Refused(f"{what} {name!r}: the name is the server's own (choose another)")
    return clean


def b64decode_strict(content: str) -> bytes:
    """``content`` decoded as standard base64, line breaks and other whitespace allowed (MIME's
    ``encodebytes`` writes them); ``binascii.Error`` or ``ValueError`` for anything else.

    Not ``base64.b64decode``'s default, which drops every character outside the alphabet: ``"!!!!"``
    would be an empty file, and a typo a silently different one."""
    try:
        return base64.b64decode(content, validate=True)
    except binascii.Error:
        if not any(c.isspace() for c in content):
            raise
    return base64.b64decode("".join(content.split()), validate=True)


def decode_files(files: dict[str, str | None]) -> dict[str, bytes]:
    """The request's files as bytes by checked name (a null content is skipped, as SandboxFusion does).

    Raises:
        Refused: a name that cannot be written (answered as ``SandboxError``).
        HTTPError: 422 (pydantic's ``base64_decode``) for a content that is not base64.
    """
    out: dict[str, bytes] = {}
    for name, content in files.items():
        clean = _check_name(name, "file", writing=True)
        if content is None:
            continue
        try:
            out[clean] = b64decode_strict(content)
        except (binascii.Error, ValueError) as e:
            raise _invalid(["files", name], "base64_decode", f"Base64 decoding error: '{e}'", content) from None
    folders = {"/".join(parts[:i]) for parts in (n.split("/") for n in out) for i in range(1, len(parts))}
    clash = sorted(folders & (set(out) | RESERVED_FILES))
    if clash:  # the backend could write neither: the program would fail with nothing said
        raise Refused(f"files: {clash[0]!r} would be both a file and a folder")
    return out


# -- running it -----------------------------------------------------------------------------------

FETCH_WRAPPER = r"""
import base64, json, os, signal, stat, subprocess, sys, threading, time

_CFG = json.loads(%s)


def _flags():
    f = sys.flags
    pairs = (("-E", f.ignore_environment), ("-s", f.no_user_site), ("-S", f.no_site), ("-B", f.dont_write_bytecode))
    return [flag for flag, on in pairs if on]


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _drain(fd, cap, sink, proc, over):
    kept = 0
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        if kept < cap:
            sink.append(chunk[: cap - kept])
        kept += len(chunk)
        if kept > cap and not over:
            over.append(True)
            _kill(proc)
    os.close(fd)


def _fetch(names, budget):
    files, skipped = {}, []
    for name, path in names:
        # one open, then questions to what was opened: a FIFO swapped in after a check would block
        # the read (links are followed on purpose: the program may link what it wants fetched)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > budget:
                skipped.append(name)
                continue
            chunks, size = [], 0
            while size <= budget:
                chunk = os.read(fd, min(1 << 20, budget + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
        except OSError:
            continue
        finally:
            os.close(fd)
        if len(data) > budget:
            skipped.append(name)
            continue
        budget -= len(data)
        files[name] = base64.b64encode(data).decode("ascii")
    return files, skipped


def _main():
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable] + _flags() + [_CFG["code"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    out, err, over = [], [], []
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout.fileno(), _CFG["cap"], out, proc, over)),
        threading.Thread(target=_drain, args=(proc.stderr.fileno(), _CFG["cap"], err, proc, over)),
    ]
    for t in readers:
        t.start()
    timed_out = False
    try:
        code = proc.wait(timeout=_CFG["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        code = proc.wait()
    elapsed = time.monotonic() - start
    _kill(proc)
    for t in readers:
        t.join(1.0)
    files, skipped = _fetch(_CFG["fetch"], _CFG["fetch_cap"])
    envelope = {
        "return_code": code, "timed_out": timed_out, "overflow": bool(over), "execution_time": elapsed,
        "stdout": base64.b64encode(b"".join(out)).decode("ascii"),
        "stderr": base64.b64encode(b"".join(err)).decode("ascii"),
        "files": files, "skipped": skipped,
    }
    sys.stdout.write(json.dumps(envelope))
    sys.stdout.flush()
    os._exit(0)


_main()
"""
"""Runs the user's code as a child, then reads ``fetch_files`` and prints one JSON envelope (see the module doc)."""


@dataclass(frozen=True)
class Job:
    """What one request runs: the program, its limits, and whether it is the fetch_files wrapper.

    ``toolchain``: a language the harness does not run itself (``Toolchain.in_harness`` false): the
    program's source is compiled by it (``compile_timeout_s``, kept by the answer's hash) and its build
    run on the program's stdin, with the program's files beside it; None: the program is Python."""

    program: Program
    limits: Limits
    wrapped: bool
    toolchain: Toolchain | None = None
    compile_timeout_s: float = 0.0
    max_compile_memory_mb: int | None = None
    """The server's memory ceiling, which a compile's own memory (more than a run's) must not pass."""


def plan(request: RunRequest, bounds: ServeLimits) -> Job:
    """The sandbox run for a request; ``Refused`` when it cannot be run (language, file names),
    ``HTTPError(422)`` for a file that is not base64."""
    toolchain = LANGUAGES.get(request.language)
    if toolchain is None:
        aliases = "".join(f", {alias!r} as an alias of {name!r}" for alias, name in TOOLCHAIN_ALIASES.items())
        raise Refused(
            f"language {request.language!r} is not supported by spade serve-sandbox (supported: "
            f"{', '.join(map(repr, TOOLCHAINS))}{aliases})"
        )
    files = decode_files(request.files)
    fetch = [[name, _check_name(name, "fetch_files entry")] for name in request.fetch_files]
    asked = bounds.default_run_timeout_s if request.run_timeout is None else request.run_timeout
    timeout = max(bounds.min_run_timeout_s, min(asked, bounds.max_run_timeout_s))
    memory = memory_bucket(request.memory_limit_mb, bounds)
    stdin = (request.stdin or "").encode("utf-8", "surrogatepass")
    if not toolchain.in_harness:
        if fetch:  # the wrapper that reads them runs Python code only
            raise Refused(f"fetch_files is served for Python only, not for {request.language!r}")
        compile_asked = bounds.default_compile_timeout_s if request.compile_timeout is None else request.compile_timeout
        compile_timeout = max(bounds.min_run_timeout_s, min(compile_asked, bounds.max_compile_timeout_s))
        # the run's wall limit grants the runtime's start (a JVM's) on top, as spade's judge does
        limits = Limits(
            timeout_s=timeout + toolchain.startup_cpu_s, memory_mb=memory, output_limit_bytes=bounds.output_limit_bytes
        )
        program = Program(source=request.code, stdin=stdin, files=files)
        return Job(
            program, limits, wrapped=False, toolchain=toolchain, compile_timeout_s=compile_timeout,
            max_compile_memory_mb=bounds.max_memory_mb,
        )  # fmt: skip
    if not fetch:
        limits = Limits(timeout_s=timeout, memory_mb=memory, output_limit_bytes=bounds.output_limit_bytes)
        return Job(Program(source=request.code, stdin=stdin, files=files), limits, wrapped=False)
    config = {"code": CODE_FILE, "timeout": timeout, "cap": bounds.output_limit_bytes, "fetch": fetch}
    config["fetch_cap"] = bounds.fetch_limit_bytes
    envelope = math.ceil((2 * bounds.output_limit_bytes + bounds.fetch_limit_bytes) * 4 / 3) + ENVELOPE_SLACK_BYTES
    files[CODE_FILE] = request.code.encode("utf-8", "surrogatepass")
    program = Program(source=FETCH_WRAPPER % repr(json.dumps(config)), stdin=stdin, files=files)
    limits = Limits(timeout_s=timeout + WRAPPER_SLACK_S, memory_mb=memory, output_limit_bytes=envelope)
    return Job(program, limits, wrapped=True)


def _response(
    status: str,
    message: str = "",
    run: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    compiled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": compiled,
        "run_result": run,
        "executor_pod_name": os.environ.get("MY_POD_NAME"),  # as SandboxFusion fills it (null off Kubernetes)
        "files": files or {},
    }


def sandbox_error(message: str) -> dict[str, Any]:
    """The answer for a request that could not be run."""
    return _response("SandboxError", message)


def _finished(
    run: dict[str, Any], message: str, files: dict[str, str] | None = None, compiled: dict[str, Any] | None = None
) -> dict[str, Any]:
    """SandboxFusion's ``parse_run_status``: a timeout or a non-zero code is ``Failed``, else ``Success``."""
    failed = run["status"] == "TimeLimitExceeded" or run["return_code"] != 0
    return _response("Failed" if failed else "Success", message if failed else "", run, files, compiled)


_NOTES = {
    "memory": "the program ran out of memory (memory_limit_MB)",
    "output_limit": "the program's output went over the limit and it was killed",
    "killed": "the program was killed",
}


def command_result(result: ExecutionResult) -> dict[str, Any]:
    """SandboxFusion's ``CommandRunResult`` of one execution (a compile's or a run's)."""
    timed_out = result.status == "timeout"
    code = result.return_code if result.return_code is not None else -(result.signal or 9)
    return {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": round(result.duration_ms / 1000, 6),
        "return_code": None if timed_out else code,
        "stdout": result.stdout,
        "stderr": result.stderr,
    }


def to_response(result: ExecutionResult, compiled: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``/run_code`` answer for a plain (unwrapped) run, after ``compiled`` (its compile's result)."""
    return _finished(command_result(result), _NOTES.get(result.status, ""), compiled=compiled)


def compile_failed(built: Build) -> dict[str, Any]:
    """SandboxFusion's answer to a compile that failed or ran out of time: ``Failed``, the compile's
    result, no ``run_result`` (nothing ran). verl reads it as a compile error (-4)."""
    assert built.result is not None
    compiled = command_result(built.result)
    if compiled["return_code"] == 0:  # it exited 0 but left nothing to run: still the compile's failure
        compiled["return_code"] = 1
    return _response("Failed", built.error, compiled=compiled)


def wrapped_response(result: ExecutionResult) -> dict[str, Any]:
    """The ``/run_code`` answer for a fetch_files run: the wrapper's envelope, or the run itself
    when there is none (it ran out of time, or the user's code ended the wrapper)."""
    try:
        envelope = json.loads(result.stdout)
        stdout = base64.b64decode(envelope["stdout"]).decode("utf-8", "replace")
        stderr = base64.b64decode(envelope["stderr"]).decode("utf-8", "replace")
        timed_out, code = bool(envelope["timed_out"]), envelope["return_code"]
        files, skipped = dict(envelope["files"]), list(envelope["skipped"])
        elapsed = float(envelope["execution_time"])
    except (ValueError, KeyError, TypeError):
        if result.status == "timeout":
            return to_response(result)
        run = {
            "status": "Finished",
            "execution_time": round(result.duration_ms / 1000, 6),
            "return_code": result.return_code or -(result.signal or 9),
            "stdout": "",
            "stderr": result.stderr,
        }
        return _finished(run, f"the fetch_files wrapper gave no report ({result.status}): the program ended it")
    run = {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": round(elapsed, 6),
        "return_code": None if timed_out else code,
        "stdout": stdout,
        "stderr": stderr,
    }
    notes = [_NOTES["output_limit"]] if envelope.get("overflow") else []
    if result.status == "memory":
        notes.append(_NOTES["memory"])
    if skipped:
        notes.append(f"fetch_files over the size limit, left out: {', '.join(skipped)}")
    response = _finished(run, "; ".join(notes), files)
    if skipped:  # worth saying even when the program succeeded
        response["message"] = "; ".join(notes)
    return response


class RunCancel:
    """Stops one run from another thread: the backend says how (``on_cancel``), the server decides
    when (``cancel``, once its client has gone). What a backend's ``run(..., cancel=...)`` takes.

    Hooks run under a lock that ``on_cancel``'s undo also takes: once the backend has undone its
    hook (its run is over and it may reuse or close what the hook touches), no hook is still running.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self.cancelled = False

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call ``hook`` (from another thread) when the run is cancelled, at once if it already was;
        the function returned takes it back."""
        with self._lock:
            if not self.cancelled:
                self._hooks.append(hook)
                return functools.partial(self._undo, hook)
        hook()
        return lambda: None

    def _undo(self, hook: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._hooks.remove(hook)

    def cancel(self) -> None:
        """Cancel the run: every hook registered, once (a failing hook is logged, not raised)."""
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            hooks, self._hooks = self._hooks, []
            for hook in hooks:
                try:
                    hook()
                except Exception:  # the run ends on its own limits anyway
                    logger.exception("a cancel hook failed")


def accepts_cancel(sandbox: Sandbox) -> bool:
    """Whether ``sandbox.run`` takes a ``cancel`` hook (``RunCancel``) to stop a run it has started."""
    try:
        return "cancel" in inspect.signature(sandbox.run).parameters
    except (TypeError, ValueError):
        return False


class CancellingSandbox(Sandbox):
    """``sandbox`` with ``cancel`` passed to each of its runs: how a build's run (``run_built``, which
    calls ``run`` itself) is killed when its client leaves."""

    def __init__(self, sandbox: Sandbox, cancel: RunCancel) -> None:
        self.sandbox = sandbox
        self.cancel = cancel
        self.name = sandbox.name
        self.isolating = sandbox.isolating

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        run: Callable[..., ExecutionResult] = self.sandbox.run  # the ``cancel`` parameter is a backend's own
        return run(program, limits, cancel=self.cancel)


def execute_built(sandbox: Sandbox, job: Job, cancel: RunCancel | None = None) -> dict[str, Any]:
    """Compile ``job``'s source with its toolchain, then run the build on its stdin: SandboxFusion's
    ``compile_result`` and ``run_result``. ``SandboxUnavailable`` when the toolchain is missing.

    The compile is not cancelled with its client: it is kept by the answer's hash and shared with
    every request of the same answer (verl sends one per test), which a kill would fail for all."""
    assert job.toolchain is not None
    toolchain, program = job.toolchain, job.program
    built = build(
        sandbox, toolchain, program.source, job.limits, job.compile_timeout_s, max_memory_mb=job.max_compile_memory_mb
    )
    if not built.ok:
        return compile_failed(built)
    compiled = None if built.result is None else command_result(built.result)
    if cancel is not None:
        if cancel.cancelled:  # its client left during the compile
            return sandbox_error("cancelled: the client went away")
        sandbox = CancellingSandbox(sandbox, cancel)
    if program.files:  # the request's files beside the build's (the build's own names win)
        built = dataclasses.replace(built, files={**program.files, **built.files})
    stdin = program.stdin.decode("utf-8", "surrogatepass")
    seen = run_built(sandbox, built, job.limits, stdin=stdin, cpu_s=job.limits.timeout_s - toolchain.startup_cpu_s)
    return to_response(seen.result, compiled)


def execute(sandbox: Sandbox, job: Job, cancel: RunCancel | None = None) -> dict[str, Any]:
    """Run ``job`` (blocking: in a worker thread) and answer it; a sandbox failure is a ``SandboxError``.

    ``cancel``: passed to a backend whose ``run`` takes it (``accepts_cancel``)."""
    from ..errors import SandboxUnavailable

    if cancel is not None and cancel.cancelled:  # its client left between the slot and the thread
        return sandbox_error("cancelled: the client went away")
    try:
        if job.toolchain is not None:
            return execute_built(sandbox, job, cancel)
        if cancel is not None:
            run: Callable[..., ExecutionResult] = sandbox.run  # the ``cancel`` parameter is a backend's own
            result = run(job.program, job.limits, cancel=cancel)
        else:
            result = sandbox.run(job.program, job.limits)
    except SandboxUnavailable as e:
        return sandbox_error(f"the sandbox cannot run programs: {e}")
    except ValueError as e:  # a file name the backend refuses
        return sandbox_error(str(e))
    except Exception as e:  # a bug must cost one request, not the server
        return sandbox_error(f"sandbox failure: {type(e).__name__}: {e}")
    return wrapped_response(result) if job.wrapped else to_response(result)


# -- access ---------------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine's
    loopback: ``localhost`` or an address in 127.0.0.0/8 or ``::1``."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port (``[::1]:8080`` -> ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def loopback_origin(origin: str) -> bool:
    """Whether an ``Origin`` header names a page on this machine's loopback (``null`` does not)."""
    try:
        name = urlsplit(origin.strip()).hostname
    except ValueError:
        return False
    return name is not None and is_loopback(name)


def is_json_type(content_type: str) -> bool:
    """Whether a ``Content-Type`` is JSON: ``application/json`` or ``application/*+json``, any parameters."""
    media = content_type.split(";", 1)[0].strip().lower()
    kind, _, sub = media.partition("/")
    return kind == "application" and (sub == "json" or sub.endswith("+json"))


def token_matches(header: str, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token``: ``Bearer <token>``, or ``Basic`` with the
    token as the password (any user name), which is what ``requests`` sends for a URL such as
    ``http://spade:TOKEN@host:8080/run_code``: verl's client takes a URL and no headers. The scheme in
    any case; compared in constant time, so the answer's timing tells nothing of the token."""
    scheme, _, given = header.strip().partition(" ")
    scheme, given = scheme.lower(), given.strip()
    if scheme == "basic":
        try:
            given = base64.b64decode(given, validate=True).decode("latin-1").partition(":")[2]
        except (binascii.Error, ValueError):
            return False
    elif scheme != "bearer":
        return False
    return hmac.compare_digest(given.encode("latin-1", "replace"), token.encode("ascii"))


def load_token(
    token_file: str | Path | None, environ: Mapping[str, str] | None = None, variable: str = TOKEN_ENV
) -> str | None:
    """The bearer token: ``token_file``'s content (stripped), else the environment ``variable``
    (``SPADE_SANDBOX_TOKEN``; serve-env's is ``SPADE_ENV_TOKEN``; an empty one is none), else None (no
    token required).

    Raises:
        UserError: the file cannot be read, or the token is empty or not printable ASCII without spaces.
    """
    from ..errors import UserError

    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"cannot read --token-file {token_file}: {getattr(e, 'strerror', None) or e}") from None
        what = f"--token-file {token_file}"
        if not token:
            raise UserError(f"{what} is empty: write the token in it")
    else:
        token = (os.environ if environ is None else environ).get(variable, "").strip()
        what = variable
        if not token:
            return None
    if not all("!" <= c <= "~" for c in token):
        raise UserError(f"{what}: the token must be printable ASCII without spaces (it travels in a header)")
    from .._util.redact import register_secret

    register_secret(token)  # masked in whatever this process writes, as an environment key is
    return token


def exposure_warning(host: str, token: str | None) -> str | None:
    """The warning for listening beyond loopback with no token (None when there is nothing to say)."""
    if token is not None or is_loopback(host):
        return None
    shown = host or "every address"
    return (
        f"spade serve-sandbox: warning: listening on {shown} with no token: anyone who can reach this port "
        f"can run code in the sandbox; set {TOKEN_ENV} or --token-file to require a bearer token"
    )


# -- the server -----------------------------------------------------------------------------------


class ClientGone(ConnectionResetError):
    """The client closed its connection before its answer: nothing to send, its work dropped."""


@dataclass
class SandboxStats(HTTPStats):
    """``GET /stats``: ``inflight`` counts programs running, ``waiting`` those queued for a slot (at
    most ``max_queue``: ``max_waiting`` is the most at once); ``cancelled`` requests dropped before
    they ran, ``killed`` programs stopped, and ``orphaned`` programs run to their end (a backend
    without a cancel hook), all because their client left."""

    runs: int = 0
    waiting: int = 0
    max_waiting: int = 0
    cancelled: int = 0
    killed: int = 0
    orphaned: int = 0
    by_status: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "runs": self.runs,
            "waiting": self.waiting,
            "max_waiting": self.max_waiting,
            "cancelled": self.cancelled,
            "killed": self.killed,
            "orphaned": self.orphaned,
            "by_status": dict(self.by_status),
        }


class RunSlots:
    """``size`` programs at once and at most ``queue`` requests waiting for a slot, first come first
    served.

    A request takes its slot or its place in the queue at once (``take``: no await between the check
    and the taking, so the bound is exact however many requests arrive together), and a slot given
    back goes straight to the first in the queue (``give_back``), so requests wait only while every
    slot is taken. ``stats.waiting`` is the queue's length. One event loop; not thread-safe."""

    def __init__(self, size: int, queue: int, stats: SandboxStats) -> None:
        self.free = size
        self.queue = queue
        self._stats = stats
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._granted: set[asyncio.Future[None]] = set()

    def full(self) -> bool:
        """Whether ``take`` would find neither a slot nor a place in the queue."""
        return self.free == 0 and len(self._waiting) >= self.queue

    def take(self) -> asyncio.Future[None] | None:
        """A ticket: done when it holds a slot (at once when one is free), else waiting in the queue
        until one is handed over; None when the queue is full. Give it back once done with it."""
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.free > 0:
            self.free -= 1
            ticket.set_result(None)
            self._granted.add(ticket)
        elif len(self._waiting) < self.queue:
            self._waiting.append(ticket)
        else:
            return None
        self._count()
        return ticket

    def give_back(self, ticket: asyncio.Future[None]) -> None:
        """Done with ``ticket``: its slot goes to the first in the queue (or is free again), or its
        place in the queue is dropped. Once per ticket; a second call does nothing."""
        if ticket in self._granted:
            self._granted.discard(ticket)
            while self._waiting:
                following = self._waiting.popleft()
                if not following.done():
                    following.set_result(None)
                    self._granted.add(following)
                    break
            else:
                self.free += 1
        else:
            with contextlib.suppress(ValueError):
                self._waiting.remove(ticket)
        self._count()

    def _count(self) -> None:
        stats = self._stats
        stats.waiting = len(self._waiting)
        stats.max_waiting = max(stats.max_waiting, stats.waiting)


def job_bytes(job: Job) -> int:
    """The memory a job keeps while it waits, near enough: its source (as Python holds the text: up
    to 4 bytes a character), stdin and files. What its request is counted as once parsed
    (``HTTPServer.hold_bytes``): a body of plain text can grow fourfold as a ``str``."""
    program = job.program
    files = sum(len(name) + len(data) for name, data in program.files.items())
    return sys.getsizeof(program.source) + len(program.stdin) + files


class SandboxServer(HTTPServer):
    """``/run_code`` over ``sandbox``, which it owns: ``close()`` closes it.

    At most ``concurrency`` programs run at once, each in a worker thread; up to
    ``bounds.max_queue`` requests wait for a slot. ``token``: the bearer token every request but
    the probes must carry (None: none needed). ``max_connections``: connections at once (None: from
    the open-files limit). The access rules and limits are the module doc's.
    """

    server_name = "spade-serve-sandbox"

    def __init__(
        self,
        host: str,
        port: int,
        sandbox: Sandbox,
        *,
        concurrency: int = 2,
        bounds: ServeLimits | None = None,
        token: str | None = None,
        max_connections: int | None = None,
    ) -> None:
        self.bounds = bounds or ServeLimits()
        super().__init__(
            host,
            port,
            max_body_bytes=self.bounds.max_body_bytes,
            max_held_bytes=self.bounds.max_held_bytes,
            max_json_items=self.bounds.max_json_items,
            max_connections=max_connections,
        )
        self.retry_after_s = self.bounds.retry_after_s
        self.sandbox = sandbox
        self.concurrency = max(1, concurrency)
        self.token = token
        self.loopback_only = is_loopback(host)
        """Bound to loopback: requests must name a loopback host (see the module doc)."""
        self.cancellable = accepts_cancel(sandbox)
        self.stats: SandboxStats = SandboxStats()
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="serve-sandbox")
        self._run_slots = RunSlots(self.concurrency, self.bounds.max_queue, self.stats)
        self._closing = False
        self._closed = False

    @property
    def url(self) -> str:
        """The ``/run_code`` URL (what verl's ``sandbox_fusion_url`` takes)."""
        return f"{self.origin}/run_code"

    def health_payload(self) -> Any:
        return {
            "status": "ok",
            "backend": self.sandbox.name,
            "isolating": self.sandbox.isolating,
            "concurrency": self.concurrency,
        }

    def check_head(self, request: Request) -> None:
        """The access rules, then a full queue, from the headers alone (see the module doc)."""
        headers = request.headers
        host = headers.get("host")
        if self.loopback_only and host is not None and not is_loopback(host_name(host)):
            raise HTTPError(
                403,
                f"Host {host!r} refused: this server listens on loopback and answers only requests addressed to "
                "127.0.0.1, localhost or [::1] (any other name is how a web page reaches it by DNS rebinding); "
                "to serve other names, listen on another address (--host) with a token",
            )
        origin = headers.get("origin")
        if origin is not None and not loopback_origin(origin):
            raise HTTPError(403, f"Origin {origin!r} refused: this server runs no code for web pages of other sites")
        token = self.token
        if (
            token is not None
            and request.path not in OPEN_PATHS
            and not token_matches(headers.get("authorization", ""), token)
        ):
            raise HTTPError(
                401,
                "Not authenticated: this server needs 'Authorization: Bearer <token>' (the token it was started "
                f"with, from {TOKEN_ENV} or --token-file)",
                headers=(("WWW-Authenticate", "Bearer"),),
            )
        if request.path == "/run_code" and request.method == "POST":
            content_type = headers.get("content-type", "")
            if not is_json_type(content_type):
                got = f"got {content_type!r}" if content_type else "none given"
                raise HTTPError(415, f"Unsupported Media Type: the body must be sent as application/json ({got})")
            if self._run_slots.full():
                raise self._queue_full()

    def _queue_full(self) -> HTTPError:
        return HTTPError(
            503,
            f"Service Unavailable: {self.bounds.max_queue} requests are already waiting for the sandbox; retry later",
            "overloaded",
            headers=(("Retry-After", str(self.bounds.retry_after_s)),),
        )

    def parse_json(self, body: bytes) -> Any:
        """The body as JSON; FastAPI's 422 ``json_invalid`` when it is not (an empty body neither)."""
        try:
            return json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as e:
            error, pos = f"not UTF-8: {e.reason}", e.start
        except json.JSONDecodeError as e:
            error, pos = e.msg, e.pos
        except (ValueError, RecursionError) as e:  # an int of more digits than Python converts; nested too deep
            error, pos = str(e).split(":")[0], 0
        detail = [
            {
                "type": "json_invalid",
                "loc": ["body", pos],
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": error},
            }
        ]
        raise HTTPError(422, f"JSON decode error: {error}", "validation_error", payload={"detail": detail})

    async def route(self, request: Request, writer: asyncio.StreamWriter) -> None:
        if request.path == "/run_code":
            if request.method != "POST":
                raise HTTPError(405, "Method Not Allowed")
            answer = await self.run_code(await self.read_json(request), request.gone, request)
            self.hold_bytes(request, 0)  # the job is over: from now on its answer's bytes count (``drain``)
            await self.send_json(writer, 200, answer, request.keep_alive)
        elif request.path == "/v1/ping":
            if request.method != "GET":
                raise HTTPError(405, "Method Not Allowed")
            await self.send_json(writer, 200, "pong", request.keep_alive)
        else:
            raise HTTPError(404, "Not Found")

    async def run_code(
        self, body: Any, gone: asyncio.Future[None] | None = None, request: Request | None = None
    ) -> dict[str, Any]:
        """The answer to one ``/run_code`` body.

        ``gone``: done when the client leaves; the request is then dropped, or its program killed.
        ``request``: the HTTP request, counted from now on as holding its job's bytes (``job_bytes``).

        Raises:
            HTTPError: 422 for a malformed body; 413 for more than ``max_files`` files or names to
                fetch; 503 when ``max_queue`` requests are waiting already, or the job's bytes would
                take the bytes held past ``max_held_bytes``.
            ClientGone: the client left before the answer.
        """
        bounds = self.bounds
        run_request = parse_request(body)
        del body  # while it waits, the request holds its program, not its JSON
        for name, count in (("files", len(run_request.files)), ("fetch_files", len(run_request.fetch_files))):
            if count > bounds.max_files:
                raise HTTPError(
                    413, f"request body too large: {name} holds {count} entries (at most {bounds.max_files})"
                )
        try:
            job = plan(run_request, bounds)
        except Refused as e:
            return self._count(sandbox_error(str(e)))
        del run_request
        if request is not None:
            self.hold_bytes(request, job_bytes(job))
        if gone is not None and gone.done():
            self.stats.cancelled += 1
            raise ClientGone("the client left before its program started")
        ticket = self._run_slots.take()
        if ticket is None:
            raise self._queue_full()
        try:
            if not ticket.done():  # in the queue: until a slot is handed over, or the client leaves
                await asyncio.wait((ticket,) if gone is None else (ticket, gone), return_when=asyncio.FIRST_COMPLETED)
                # both may be done by now (a slot handed over in the turn the client left): the
                # program of a client that left is never started, whichever came first
                if not ticket.done() or (gone is not None and gone.done()):
                    self.stats.cancelled += 1
                    raise ClientGone("the client left before its program started")
            return self._count(await self._execute(job, gone))
        finally:
            self._run_slots.give_back(ticket)

    async def _execute(self, job: Job, gone: asyncio.Future[None] | None) -> dict[str, Any]:
        """Run ``job`` in a worker thread (its slot taken). Its client leaving (``gone``) kills it where
        the backend can, and the slot stays taken until the thread is done with it either way."""
        stats = self.stats
        stats.enter()
        try:
            cancel = RunCancel() if self.cancellable else None
            future = asyncio.get_running_loop().run_in_executor(self._pool, execute, self.sandbox, job, cancel)
            del job
            try:
                await asyncio.wait((future,) if gone is None else (future, gone), return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                if not self._closing:  # closing: ``shutdown_sandbox`` ends every program
                    self._abandon(cancel)
                    await asyncio.wait((future,))
                raise
            if future.done():
                return future.result()
            self._abandon(cancel)
            await asyncio.wait((future,))  # the thread (and the slot) are the program's until it ends
            raise ClientGone("the client left before its answer")
        finally:
            stats.leave()

    def _abandon(self, cancel: RunCancel | None) -> None:
        """Stop a program nobody waits for, where the backend can (``killed``), else let it run (``orphaned``)."""
        if cancel is not None:
            cancel.cancel()
            self.stats.killed += 1
        else:
            self.stats.orphaned += 1

    def _count(self, answer: dict[str, Any]) -> dict[str, Any]:
        self.stats.runs += 1
        self.stats.by_status[answer["status"]] = self.stats.by_status.get(answer["status"], 0) + 1
        return answer

    async def close(self) -> None:
        """Stop serving, then end the programs still running and close the sandbox."""
        self._closing = True
        await super().close()
        if not self._closed:
            self._closed = True
            await asyncio.get_running_loop().run_in_executor(None, self.shutdown_sandbox)

    def shutdown_sandbox(self) -> None:
        """Drop queued runs, close the sandbox (which kills the running ones), wait for their threads,
        and close it again in case one of them started a worker meanwhile. Safe to call twice."""
        self._closing = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.sandbox.close()
        self._pool.shutdown(wait=True)
        self.sandbox.close()


# -- the command ----------------------------------------------------------------------------------


def serve_sandbox(
    host: str,
    port: int,
    *,
    backend: str = AUTO,
    concurrency: int | None = None,
    allow_unsafe: bool = False,
    bounds: ServeLimits | None = None,
    token_file: str | Path | None = None,
    max_connections: int | None = None,
) -> None:
    """Serve ``/run_code`` until Ctrl-C or SIGTERM (blocking); prints the listening URL on stderr.

    ``port`` 0 picks a free port (the printed URL tells which). ``concurrency``: programs run at
    once (default: one per core). ``token_file``: a file holding the bearer token requests must
    carry; without it, ``SPADE_SANDBOX_TOKEN`` when set (``load_token``). Listening beyond loopback
    with no token prints a warning. ``max_connections``: connections at once (None: from the
    open-files limit, which is raised to its hard limit first).

    Raises:
        UserError: a bad port, concurrency or connection cap, an unknown backend, a backend that is no security
            boundary without ``allow_unsafe``, an unreadable or empty token file, or an address
            that cannot be listened on.
        SandboxUnavailable: the backend cannot run programs here.
    """
    from ..errors import UserError
    from ..sandbox.registry import get_sandbox, is_isolating

    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0 (any free port) to 65535, got {port}")
    slots = concurrency if concurrency is not None else os.cpu_count() or 2
    if slots < 1:
        raise UserError(f"--concurrency must be at least 1, got {slots}")
    if max_connections is not None and max_connections < 1:
        raise UserError(f"--max-connections must be at least 1, got {max_connections}")
    token = load_token(token_file)
    refusal = (
        "the {} sandbox is no security boundary: serve-sandbox will not run code sent over the network on it "
        "(use --sandbox bwrap or docker, or --allow-unsafe for code you trust)"
    )
    if backend != AUTO and not allow_unsafe and not is_isolating(backend):
        raise UserError(refusal.format(backend))  # before starting it: nothing to start or warn about
    sandbox = get_sandbox(backend)  # a backend that is no boundary has warned about it on its start
    if not sandbox.isolating and not allow_unsafe:
        sandbox.close()
        raise UserError(refusal.format(sandbox.name))
    server = SandboxServer(
        host, port, sandbox, concurrency=slots, bounds=bounds, token=token, max_connections=max_connections
    )
    warning = exposure_warning(host, token)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)

    def banner() -> str:
        access = "bearer token required" if token is not None else "no token"
        return (
            f"spade serve-sandbox: listening on {server.url} (sandbox {sandbox.name}, concurrency {slots}, "
            f"{access}); Ctrl-C to stop"
        )

    try:
        run_server(server, banner, host, port)
    finally:
        server.shutdown_sandbox()
    print("spade serve-sandbox: stopped", file=sys.stderr, flush=True)


__all__ = [
    "FETCH_WRAPPER",
    "RunCancel",
    "RunRequest",
    "SandboxServer",
    "ServeLimits",
    "load_token",
    "memory_bucket",
    "parse_request",
    "plan",
    "serve_sandbox",
]
