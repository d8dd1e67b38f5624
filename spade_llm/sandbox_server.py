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
* A body that is not JSON, or fields of the wrong type, get HTTP 422 with FastAPI's
  ``{"detail": [{"type", "loc", "msg", "input"}]}`` (SandboxFusion is a FastAPI app: its invalid
  JSON is a 422 ``json_invalid``, not a 400); unknown paths 404 and wrong methods 405 as
  ``{"detail": "..."}``.
* ``GET /v1/ping`` answers ``"pong"`` (SandboxFusion's liveness check), ``GET /health`` the backend
  and its concurrency, ``GET /stats`` counters.

Python only (``python``, and ``python3`` as an alias); another language is a ``SandboxError``
naming it. Limits per request: ``run_timeout`` (default 10 s, clamped to
``ServeLimits.max_run_timeout_s``) is ``Limits.timeout_s``, as the backends enforce it: CPU time
``ceil(t) + 1`` s, and a wall-clock backstop their ``grace_s`` (2 s) past ``t``, so a program
that sleeps is cut a little later than ``run_timeout`` (the fetch_files wrapper cuts at it).
``memory_limit_MB`` is the memory limit (<= 0, SandboxFusion's "no limit", means
``default_memory_mb``), rounded *up* to the next of 64, 96, 128, 192, 256, ... (powers of two and
one and a half times them) and clamped to ``max_memory_mb``: the bwrap backend keeps a pool of
warm workers per memory limit, and a client sending many distinct values would otherwise start a
worker for each. ``compile_timeout`` is accepted and unused (nothing compiles).
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

Why this server: the standard library's asyncio (``httpserve.py``, shared with ``spade
serve-fake``), no new dependency (aiohttp is only a transitive one, FastAPI/uvicorn none at all).
One event loop holds any number of connections (verl opens one per test case, hundreds at once),
while the sandbox's blocking ``run`` goes to a pool of ``concurrency`` threads behind a semaphore:
requests beyond it wait their turn holding only their connection and body.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .httpserve import HTTPError, HTTPServer, HTTPStats, Request, run_server
from .sandbox.base import Limits, Program, Sandbox
from .sandbox.common import PROGRAM_FILE

if TYPE_CHECKING:
    from .types import ExecutionResult

LANGUAGES = frozenset({"python", "python3"})
CODE_FILE = "_spade_code.py"
"""Where the user's code goes when the fetch_files wrapper runs it."""
RESERVED_FILES = frozenset({PROGRAM_FILE, CODE_FILE})
NAME_MAX = 255
"""Longest part of a file name (bytes), as Linux file systems take it."""
WRAPPER_SLACK_S = 2.0
"""The wrapper's own time past ``run_timeout``: its start, the child's, reading the files."""
ENVELOPE_SLACK_BYTES = 64 << 10


@dataclass(frozen=True)
class ServeLimits:
    """The bounds every request's limits are clamped to, and the defaults for what it leaves out."""

    default_run_timeout_s: float = 10.0
    min_run_timeout_s: float = 0.1
    max_run_timeout_s: float = 120.0
    default_memory_mb: int = 1024
    min_memory_mb: int = 64
    max_memory_mb: int = 4096
    output_limit_bytes: int = 1 << 20
    """Per stream (stdout, stderr): a program writing more is killed (``Failed``, code -9)."""
    fetch_limit_bytes: int = 16 << 20
    """The fetched files' total size; files beyond it are left out and named in ``message``."""


def memory_bucket(requested: int, bounds: ServeLimits) -> int:
    """The memory limit (MB) a request runs under: ``requested`` rounded up to the next of 2^k and
    1.5 * 2^k and clamped to the bounds (<= 0 is the default). Few distinct values keep bwrap's
    per-limit worker pools few and warm."""
    if requested <= 0:
        requested = bounds.default_memory_mb
    requested = max(bounds.min_memory_mb, min(requested, bounds.max_memory_mb))
    power = 1 << max(0, math.ceil(math.log2(requested)) - 1)  # below requested (half of it, if a power of two)
    for step in (power, power * 3 // 2, power * 2):
        if step >= requested:
            return min(step, bounds.max_memory_mb)
    return bounds.max_memory_mb  # pragma: no cover (power * 2 >= requested always)


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


def _invalid(loc: str, kind: str, msg: str, value: Any) -> HTTPError:
    """FastAPI's 422 for a field of the wrong type (one error; FastAPI lists them all)."""
    shown: Any = value if isinstance(value, (str, int, bool, type(None))) else type(value).__name__
    if isinstance(value, float):  # NaN and Infinity are no JSON: a client could not read the answer
        shown = value if math.isfinite(value) else str(value)
    detail = [{"type": kind, "loc": ["body", loc], "msg": msg, "input": shown}]
    return HTTPError(422, f"{loc}: {msg}", "validation_error", payload={"detail": detail})


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


def decode_files(files: dict[str, str | None]) -> dict[str, bytes]:
    """The request's files as bytes by checked name (a null content is skipped, as SandboxFusion does)."""
    out: dict[str, bytes] = {}
    for name, content in files.items():
        clean = _check_name(name, "file", writing=True)
        if content is None:
            continue
        try:
            out[clean] = base64.b64decode(content)
        except (binascii.Error, ValueError) as e:
            raise Refused(f"file {name!r}: not base64 ({e})") from None
    folders = {"/".join(parts[:i]) for parts in (n.split("/") for n in out) for i in range(1, len(parts))}
    clash = sorted(folders & (set(out) | RESERVED_FILES))
    if clash:  # the backend could write neither: the program would fail with nothing said
        raise Refused(f"files: {clash[0]!r} would be both a file and a folder")
    return out


# -- running it -----------------------------------------------------------------------------------

FETCH_WRAPPER = r"""
import base64, json, os, signal, subprocess, sys, threading, time

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
        try:
            if not os.path.isfile(path):
                continue
            if os.path.getsize(path) > budget:
                skipped.append(name)
                continue
            with open(path, "rb") as f:
                data = f.read(budget + 1)
        except OSError:
            continue
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
    """What one request runs: the program, its limits, and whether it is the fetch_files wrapper."""

    program: Program
    limits: Limits
    wrapped: bool


def plan(request: RunRequest, bounds: ServeLimits) -> Job:
    """The sandbox run for a request; ``Refused`` when it cannot be run (language, file names, base64)."""
    if request.language not in LANGUAGES:
        raise Refused(
            f"language {request.language!r} is not supported by spade serve-sandbox (Python only: "
            "'python' or 'python3')"
        )
    files = decode_files(request.files)
    fetch = [[name, _check_name(name, "fetch_files entry")] for name in request.fetch_files]
    asked = bounds.default_run_timeout_s if request.run_timeout is None else request.run_timeout
    timeout = max(bounds.min_run_timeout_s, min(asked, bounds.max_run_timeout_s))
    memory = memory_bucket(request.memory_limit_mb, bounds)
    stdin = (request.stdin or "").encode("utf-8", "surrogatepass")
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
    status: str, message: str = "", run: dict[str, Any] | None = None, files: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": None,
        "run_result": run,
        "executor_pod_name": os.environ.get("MY_POD_NAME"),  # as SandboxFusion fills it (null off Kubernetes)
        "files": files or {},
    }


def sandbox_error(message: str) -> dict[str, Any]:
    """The answer for a request that could not be run."""
    return _response("SandboxError", message)


def _finished(run: dict[str, Any], message: str, files: dict[str, str] | None = None) -> dict[str, Any]:
    """SandboxFusion's ``parse_run_status``: a timeout or a non-zero code is ``Failed``, else ``Success``."""
    failed = run["status"] == "TimeLimitExceeded" or run["return_code"] != 0
    return _response("Failed" if failed else "Success", message if failed else "", run, files)


_NOTES = {
    "memory": "the program ran out of memory (memory_limit_MB)",
    "output_limit": "the program's output went over the limit and it was killed",
    "killed": "the program was killed",
}


def to_response(result: ExecutionResult) -> dict[str, Any]:
    """The ``/run_code`` answer for a plain (unwrapped) run."""
    timed_out = result.status == "timeout"
    code = result.return_code if result.return_code is not None else -(result.signal or 9)
    run = {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": round(result.duration_ms / 1000, 6),
        "return_code": None if timed_out else code,
        "stdout": result.stdout,
        "stderr": result.stderr,
    }
    return _finished(run, _NOTES.get(result.status, ""))


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


def execute(sandbox: Sandbox, job: Job) -> dict[str, Any]:
    """Run ``job`` (blocking: in a worker thread) and answer it; a sandbox failure is a ``SandboxError``."""
    from .errors import SandboxUnavailable

    try:
        result = sandbox.run(job.program, job.limits)
    except SandboxUnavailable as e:
        return sandbox_error(f"the sandbox cannot run programs: {e}")
    except ValueError as e:  # a file name the backend refuses
        return sandbox_error(str(e))
    except Exception as e:  # a bug must cost one request, not the server
        return sandbox_error(f"sandbox failure: {type(e).__name__}: {e}")
    return wrapped_response(result) if job.wrapped else to_response(result)


# -- the server -----------------------------------------------------------------------------------


@dataclass
class SandboxStats(HTTPStats):
    """``GET /stats``: ``inflight`` counts programs running, ``waiting`` those queued for a slot."""

    runs: int = 0
    waiting: int = 0
    by_status: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "runs": self.runs, "waiting": self.waiting, "by_status": dict(self.by_status)}


class SandboxServer(HTTPServer):
    """``/run_code`` over ``sandbox``, which it owns: ``close()`` closes it.

    At most ``concurrency`` programs run at once, each in a worker thread; any number of
    connections wait for a slot.
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
    ) -> None:
        super().__init__(host, port)
        self.sandbox = sandbox
        self.concurrency = max(1, concurrency)
        self.bounds = bounds or ServeLimits()
        self.stats: SandboxStats = SandboxStats()
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="serve-sandbox")
        self._slots: asyncio.Semaphore | None = None
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

    async def route(self, request: Request, writer: asyncio.StreamWriter) -> None:
        if request.path == "/run_code":
            if request.method != "POST":
                raise HTTPError(405, "Method Not Allowed")
            await self.send_json(writer, 200, await self.run_code(_json_body(request)), request.keep_alive)
        elif request.path == "/v1/ping":
            if request.method != "GET":
                raise HTTPError(405, "Method Not Allowed")
            await self.send_json(writer, 200, "pong", request.keep_alive)
        else:
            raise HTTPError(404, "Not Found")

    async def run_code(self, body: Any) -> dict[str, Any]:
        """The answer to one ``/run_code`` body; ``HTTPError(422)`` for a malformed one."""
        request = parse_request(body)
        try:
            job = plan(request, self.bounds)
        except Refused as e:
            return self._count(sandbox_error(str(e)))
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        stats = self.stats
        stats.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            stats.waiting -= 1
        stats.enter()
        try:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(self._pool, execute, self.sandbox, job)
        finally:
            stats.leave()
            self._slots.release()
        return self._count(answer)

    def _count(self, answer: dict[str, Any]) -> dict[str, Any]:
        self.stats.runs += 1
        self.stats.by_status[answer["status"]] = self.stats.by_status.get(answer["status"], 0) + 1
        return answer

    async def close(self) -> None:
        """Stop serving, then end the programs still running and close the sandbox."""
        await super().close()
        if not self._closed:
            self._closed = True
            await asyncio.get_running_loop().run_in_executor(None, self.shutdown_sandbox)

    def shutdown_sandbox(self) -> None:
        """Drop queued runs, close the sandbox (which kills the running ones), wait for their threads,
        and close it again in case one of them started a worker meanwhile. Safe to call twice."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.sandbox.close()
        self._pool.shutdown(wait=True)
        self.sandbox.close()


def _json_body(request: Request) -> Any:
    """The body as JSON; FastAPI's 422 ``json_invalid`` when it is not."""
    try:
        return json.loads(request.body.decode("utf-8"))
    except UnicodeDecodeError as e:
        error, pos = f"not UTF-8: {e.reason}", e.start
    except json.JSONDecodeError as e:
        error, pos = e.msg, e.pos
    except (ValueError, RecursionError) as e:  # an int of more digits than Python converts; nested too deep
        error, pos = str(e).split(":")[0], 0
    detail = [
        {"type": "json_invalid", "loc": ["body", pos], "msg": "JSON decode error", "input": {}, "ctx": {"error": error}}
    ]
    raise HTTPError(422, f"JSON decode error: {error}", "validation_error", payload={"detail": detail})


# -- the command ----------------------------------------------------------------------------------


def serve_sandbox(
    host: str,
    port: int,
    *,
    backend: str = "auto",
    concurrency: int | None = None,
    allow_unsafe: bool = False,
    bounds: ServeLimits | None = None,
) -> None:
    """Serve ``/run_code`` until Ctrl-C or SIGTERM (blocking); prints the listening URL on stderr.

    ``port`` 0 picks a free port (the printed URL tells which). ``concurrency``: programs run at
    once (default: one per core).

    Raises:
        UserError: a bad port or concurrency, an unknown backend, a backend that is no security
            boundary without ``allow_unsafe``, or an address that cannot be listened on.
        SandboxUnavailable: the backend cannot run programs here.
    """
    from .errors import UserError
    from .sandbox.registry import get_sandbox, is_isolating

    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0 (any free port) to 65535, got {port}")
    slots = concurrency if concurrency is not None else os.cpu_count() or 2
    if slots < 1:
        raise UserError(f"--concurrency must be at least 1, got {slots}")
    refusal = (
        "the {} sandbox is no security boundary: serve-sandbox will not run code sent over the network on it "
        "(use --sandbox bwrap or docker, or --allow-unsafe for code you trust)"
    )
    if backend != "auto" and not allow_unsafe and not is_isolating(backend):
        raise UserError(refusal.format(backend))  # before starting it: nothing to start or warn about
    sandbox = get_sandbox(backend)  # a backend that is no boundary has warned about it on its start
    if not sandbox.isolating and not allow_unsafe:
        sandbox.close()
        raise UserError(refusal.format(sandbox.name))
    server = SandboxServer(host, port, sandbox, concurrency=slots, bounds=bounds)

    def banner() -> str:
        return (
            f"spade serve-sandbox: listening on {server.url} (sandbox {sandbox.name}, concurrency {slots}); "
            "Ctrl-C to stop"
        )

    try:
        run_server(server, banner, host, port)
    finally:
        server.shutdown_sandbox()
    print("spade serve-sandbox: stopped", file=sys.stderr, flush=True)


__all__ = [
    "FETCH_WRAPPER",
    "RunRequest",
    "SandboxServer",
    "ServeLimits",
    "memory_bucket",
    "parse_request",
    "plan",
    "serve_sandbox",
]
