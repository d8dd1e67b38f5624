# ruff: noqa: SIM105, UP031
# (contextlib.suppress and f-strings' friends would cost imports; %-formatting is the cheap path)
"""The program that runs *inside* the sandbox and calls the code under test.

The runner ships this file (and its bytecode, see ``common.harness_program``) with every
execution and runs it as ``python -s -S -B``, so it is self-contained standard-library code.
Everything it imports is a built-in or tiny C module
(``posix``, ``marshal``, ``select``, ``_json``, ``_signal``, ``_ctypes``, ``resource``): ``os``,
``signal``, ``json`` and ``ast`` cost milliseconds each per execution, and with a few hundred
executions per run that is most of the sandbox overhead.

Processes
---------
The harness process is the trusted *parent*. It reads a request from stdin (a length-prefixed
``marshal`` message: mode, file names, entry point, inputs already parsed outside, limits), makes
itself non-dumpable and a child subreaper (``prctl``, best effort), and forks a *child* that runs
the untrusted code. Only after the fork does it read the second stdin message, the run's secrets
(report nonce, check-mode marker), so the child's memory never held them; being non-dumpable, the
parent's memory and ``/proc/<pid>/fd`` are closed to a child of the same *non-root* user (root,
as on the subprocess backend run as root, can read them anyway: isolating backends must not run
the code as root).

The child: stdin is ``/dev/null``, stdout/stderr go to pipes the parent reads (capped), and
results go to a private pipe, each line prefixed with a random token written first, before any
untrusted code ran (a program that blindly writes to its file descriptors corrupts the stream
instead of forging a record). The parent kills the child's process group at the deadline, or
when a stream exceeds its cap; when the child exits it kills the group and every orphan that was
reparented to it, drains what is immediately readable (a grandchild holding a pipe cannot hang
it) and writes ONE line on its stdout: ``<nonce> <json report>``. Nothing else ever writes to the
harness's stdout, so a program's own printing cannot be mistaken for results.

The bwrap backend's fork server plays this parent's part from a long-lived supervisor instead
(same steps, same code: ``new_pipes``, ``_supervise``, ``report_line``), with a child it did not
fork itself but that was forked before the run existed and got the request first
(``_apply_setup``, ``_child_main``); see ``forkserver.py``.

Files
-----
Every file the harness reads is in the scratch directory, which the code under test can write: it
opens them only as regular files (``open_regular``: no FIFO to wait on, no link to follow, no
device), the check's process leaves that directory once the answer's process exists, and a
traceback it prints shows source lines from regular files only (``_source_files_only``).

Modes
-----
``tests``
    The child execs the code as module ``solution``, looks up the entry point (with ``entry_class``
    in the request: that class, instantiated once, and the entry point its method) and calls it on
    each input under a per-test CPU-time budget (``ITIMER_PROF``, so load does not move a verdict) with
    a wall backstop for a call that blocks (a program that swallows either signal is still marked as
    timed out, and one that never returns is ended by the parent's deadline); with ``block_s`` in the
    request (validation's gates) the wall timer ends only a call that blocks, or one the deadline
    reaches. Each record carries the call's CPU time and, for a timeout, what ended it.
    ``BaseException`` is caught, so ``SystemExit`` and ``KeyboardInterrupt`` are failures. After
    ``max_timeouts`` calls timed out (when the request sets it) the child calls no more and ends
    normally: code that loops on every input would otherwise spend the whole wall limit. The
    return value is written in a strict type-tagged encoding (below); it is compared with the
    expected value *outside* the sandbox, where expected values stay. Exit codes, printed text
    and ``__eq__`` never matter. Code that targets this harness in-process (walks frames to the
    results pipe and its token) can write records of its choosing, but it would still have to
    know the right outputs, which is solving the task.
``check`` (imported benchmarks such as HumanEval; weaker)
    The child execs the program (an exception there is a load error, as in ``tests`` mode) and
    then the benchmark's ``check_code`` in one namespace (the check code seeing the builtins as
    they were before the program ran, whatever the program patched) and calls
    ``check(entry_point)`` when ``check_code`` defines ``check``. Only if that returns normally
    does the child write its done line and exit 0; the parent then reports the secret marker,
    which the program never saw. Exiting 0 early, printing, killing the parent or closing streams
    therefore fail, but the asserts run in the same process as the code under test, so code aware
    of this harness could write the done line itself. This mode is documented as weaker.
``main`` (``spade exec``, whole programs)
    The child runs the code as ``__main__`` from its real file (tracebacks show real lines); its
    exit code and signal are the program's. At the end it does what an interpreter exit visibly
    does (joins non-daemon threads, runs ``atexit``, flushes) and then calls ``_exit``.
``exec`` (answers in other languages: their compile, then each test's run)
    The child becomes the request's ``argv`` (``execve``, absolute path) with the request's
    environment (``HOME`` and ``TMPDIR`` the scratch directory), signal dispositions and mask reset
    as a fresh process has them, the files named ``executables`` made executable, and the results
    pipe closed: the command's exit status, signal and streams are the result. A ``cpu_s`` budget is
    an ``ITIMER_PROF`` armed just before ``execve`` (it survives it). After the run the parent reads
    back the regular files of the scratch directory named by ``collect`` (exact names, or
    ``*.ext``), up to ``collect_limit`` bytes in all, into the report's ``files`` (base64): what a
    compile leaves for the runs (``compiled.py``).

Tracebacks are printed by Python's own C printer (``sys.__excepthook__``) without the harness's
frames, so the solver sees what plain ``python`` would show.

Encoding of return values (decoded by ``verdict.decode_value``), one JSON array per value:
``["N"]`` None, ``["b", true]`` bool, ``["i", "0x1f"]`` int (hex: no digit limit), ``["f",
repr]`` float (``nan``/``inf`` explicit), ``["c", re, im]`` complex, ``["s", str]``, ``["y",
hex]`` bytes, ``["l"|"t"|"S"|"F", [items]]`` list/tuple/set/frozenset, ``["d", [[k, v], ...]]``
dict, ``["u", type name, short repr]`` anything else. Types are matched exactly (``type(x) is
int``), so subclasses (an ``int`` whose ``__eq__`` always says yes) are ``unsupported`` and never
pass. Depth and size are capped (``["u", "<too deep>"|"<too large>", ...]``).
"""

import builtins
import marshal
import posix
import sys
import time
from _json import encode_basestring_ascii as _esc

# No `from __future__ import annotations` and no runtime `typing` import: they cost more than
# everything else this program imports (annotations mentioning Any are quoted instead).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if __package__:  # imported from the package (tests); shipped, libc.py's source stands above this program
    from .libc import libc_function

PROTOCOL = 1
MAX_DEPTH = 100
MESSAGE_CHARS = 500
"""Longest exception message or repr kept in a record."""

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MAX_FDS = 1 << 16
SIGKILL = 9
SIGXCPU = 24
SIGPROF = 27
"""Linux's: a ``program`` run with ``cpu_s`` is ended by it at its CPU budget."""
BUDGET_SLACK_S = 0.1
"""CPU seconds over a run's ``cpu_s`` budget its process may report before the run is a timeout however it
ended: the child's own start (before the budget's timer is armed) counts in what it used."""

# Captured before any untrusted code runs: patching builtins cannot change how values are encoded.
_type = type
_int = int
_bool = bool
_float = float
_complex = complex
_str = str
_bytes = bytes
_list = list
_tuple: "type[Any]" = tuple  # compared by identity with the other builtins: not narrowed
_dict = dict
_set = set
_frozenset = frozenset
_float_repr = float.__repr__
_int_hex = hex
_bytes_hex = bytes.hex
_str_copy = str.__str__
_dict_items = dict.items
_repr = repr
_callable = callable
_getattr = getattr
_len = len
_getpid = posix.getpid
_write = posix.write
_exit = posix._exit
_perf = time.perf_counter
_cpu = time.process_time
_open = open
_compile = compile
_exec = exec
_excepthook = sys.__excepthook__
_HERE = sys._getframe().f_code.co_filename


class _Timeout(BaseException):
    """Raised by the per-test alarm; BaseException so ``except Exception`` does not swallow it."""


class _TooLarge(Exception):
    pass


class _TooDeep(Exception):
    pass


# -- I/O --------------------------------------------------------------------------------------


def _read_exact(n: int, fd: int = 0) -> bytes:
    chunks = []
    while n > 0:
        chunk = posix.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("stdin closed early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int = 0) -> "Any":
    """One ``%010d\\n``-framed marshal message from ``fd``, read exactly (no read-ahead buffer that a
    forked child could inherit)."""
    return marshal.loads(_read_exact(int(_read_exact(11, fd)), fd))


def frame_message(obj: "Any") -> bytes:
    """The framing ``read_message`` expects (used by the runner outside the sandbox)."""
    data = marshal.dumps(obj, 4)
    return b"%010d\n" % len(data) + data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_write(fd, view) :]


_S_IFMT = 0o170000
_S_IFREG = 0o100000


def open_regular(path: str) -> int:
    """A read-only descriptor of ``path``, which must be a regular file itself (not a symbolic link).

    Every file the harness opens is in the scratch directory, where code under test (or a process
    left from another run) could have put something else under the expected name: a FIFO would
    block the reader until the deadline, a device or a socket would be read as the file, a link would
    lead anywhere. Those are refused (``OSError``) without waiting: ``O_NONBLOCK`` returns at once
    from a FIFO, ``O_NOFOLLOW`` refuses a link, and the type is checked on what was opened.
    """
    fd = posix.open(path, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_CLOEXEC)
    try:
        if posix.fstat(fd).st_mode & _S_IFMT != _S_IFREG:
            raise OSError("%s is not a regular file" % path)
    except BaseException:
        posix.close(fd)
        raise
    return fd


def _busy_s() -> "float | None":
    """Seconds the calling thread has spent running or waiting for a CPU (``/proc/thread-self/schedstat``:
    precise where the CPU clock counts whole ticks), or None where the kernel does not say. A thread
    that computes on a loaded machine waits for a CPU, one that blocks does neither."""
    try:
        fd = posix.open("/proc/thread-self/schedstat", posix.O_RDONLY | posix.O_CLOEXEC)
        try:
            run, wait = posix.read(fd, 128).split()[:2]
        finally:
            posix.close(fd)
        return (int(run) + int(wait)) / 1e9
    except BaseException:
        return None


# -- encoding (child side) ----------------------------------------------------------------------


def encode_value(value: "Any", limit: int) -> str:
    """``value`` in the tagged JSON encoding, at most ``limit`` characters (else ``<too large>``)."""
    out: list[str] = []
    room = [limit]
    try:
        _enc(value, 0, out, room)
    except _TooLarge:
        return _unsupported(value, "<too large>")
    except _TooDeep:
        return _unsupported(value, "<too deep>")
    except RecursionError:
        return _unsupported(value, "<too deep>")
    return "".join(out)


def _put(s: str, out: list[str], room: list[int]) -> None:
    room[0] -= _len(s)
    if room[0] < 0:
        raise _TooLarge
    out.append(s)


def _enc(x: "Any", depth: int, out: list[str], room: list[int]) -> None:
    t = _type(x)
    if x is None:
        _put('["N"]', out, room)
    elif t is _bool:
        _put('["b",true]' if x else '["b",false]', out, room)
    elif t is _int:
        if x.bit_length() > room[0] * 4:
            raise _TooLarge
        _put('["i","' + _int_hex(x) + '"]', out, room)
    elif t is _float:
        _put('["f","' + _float_repr(x) + '"]', out, room)
    elif t is _str:
        if _len(x) > room[0]:
            raise _TooLarge
        _put('["s",' + _esc(x) + "]", out, room)
    elif t is _complex:
        _put('["c","' + _float_repr(x.real) + '","' + _float_repr(x.imag) + '"]', out, room)
    elif t is _bytes:
        if _len(x) * 2 > room[0]:
            raise _TooLarge
        _put('["y","' + _bytes_hex(x) + '"]', out, room)
    elif t is _list or t is _tuple or t is _set or t is _frozenset:
        if depth >= MAX_DEPTH:
            raise _TooDeep
        tag = "l" if t is _list else "t" if t is _tuple else "S" if t is _set else "F"
        _put('["' + tag + '",[', out, room)
        first = True
        for item in x:
            if not first:
                _put(",", out, room)
            first = False
            _enc(item, depth + 1, out, room)
        _put("]]", out, room)
    elif t is _dict:
        if depth >= MAX_DEPTH:
            raise _TooDeep
        _put('["d",[', out, room)
        first = True
        for k, v in _dict_items(x):
            _put("[" if first else ",[", out, room)
            first = False
            _enc(k, depth + 1, out, room)
            _put(",", out, room)
            _enc(v, depth + 1, out, room)
            _put("]", out, room)
        _put("]]", out, room)
    else:
        _put(_unsupported(x, ""), out, room)


def _unsupported(x: "Any", why: str) -> str:
    try:
        name = _str_copy(_type(x).__qualname__)
    except BaseException:
        name = "?"
    if not why:
        try:
            why = _str_copy(_repr(x))[:MESSAGE_CHARS]
        except BaseException:
            why = "<repr failed>"
    return '["u",' + _esc(name[:200]) + "," + _esc(why) + "]"


def _describe(e: BaseException) -> str:
    """``TypeName: message`` of an exception, truncated; never raises."""
    try:
        name = _str_copy(_type(e).__name__)
    except BaseException:
        name = "Exception"
    try:
        msg = _str_copy(_str(e))
    except BaseException:
        msg = "<unprintable>"
    text = name + ": " + msg if msg else name
    return text if _len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "..."


def _print_traceback(e: BaseException) -> None:
    """Print ``e`` on stderr as Python would, without this harness's frames.

    Python's own C printer (``sys.__excepthook__``): the same format, source lines and carets as
    an uncaught exception, the last ``sys.tracebacklimit`` entries, and no import of
    ``traceback`` (which pulls in ``linecache``, ``tokenize`` and ``re``: milliseconds). It shows
    a source line only from a regular file (``_source_files_only``).
    """
    try:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _HERE:
            tb = tb.tb_next
        e.__traceback__ = tb  # the C printer shows the exception's own traceback
        restore = _source_files_only(e)
        try:
            _excepthook(_type(e), e, tb)
        finally:
            restore()
        sys.stderr.flush()
    except BaseException:
        pass


def _source_files_only(e: BaseException) -> "Any":
    """Until the returned undo is called, the traceback printer opens only regular files for the
    source lines it shows: it opens each frame's file by name, in the scratch directory, where code
    under test may have put a FIFO (the printer would wait on it until the deadline), a device or a
    link under that name. Up to 3.12 the C printer opens them with ``io.open``, replaced meanwhile;
    from 3.13 the printer is the ``traceback`` module, whose ``linecache`` gets no lines (an empty
    entry) for each file of ``e``'s traceback, and of its causes', that is not a regular file."""
    io_module: Any = sys.modules.get("io")
    real_open: Any = getattr(io_module, "open", None)

    def open_source(file: "Any", mode: str = "r", *args: "Any", **kwargs: "Any") -> "Any":
        if _type(file) is _str:
            return real_open(open_regular(file), mode, *args, **kwargs)
        return real_open(file, mode, *args, **kwargs)

    if real_open is not None:
        io_module.open = open_source
    if sys.version_info >= (3, 13):
        import linecache

        seen: set[int] = set()
        pending = [e]
        while pending:
            exc = pending.pop()
            if id(exc) in seen:
                continue
            seen.add(id(exc))
            pending.extend(x for x in (exc.__cause__, exc.__context__) if x is not None)
            pending.extend(getattr(exc, "exceptions", None) or ())
            tb = exc.__traceback__
            while tb is not None:
                name = tb.tb_frame.f_code.co_filename
                if name not in linecache.cache and not _regular_file(name):
                    linecache.cache[name] = (0, None, [], name)
                tb = tb.tb_next

    def restore() -> None:
        if real_open is not None:
            io_module.open = real_open

    return restore


def _regular_file(path: str) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one); names like ``<string>`` are not."""
    try:
        return posix.lstat(path).st_mode & _S_IFMT == _S_IFREG
    except (OSError, ValueError):
        return False


# -- check mode: the check's side of the answer's process ---------------------------------------


def _requests(fd: int) -> "Any":
    """The answer's process's inputs: argument tuples sent by the check's process (``frame_message``
    framing), until it closes; one read per call where ``read_message`` would make two."""
    buf = b""
    try:
        while True:
            while _len(buf) < 11 or _len(buf) < 11 + _int(buf[:11]):
                chunk = posix.read(fd, 1 << 16)
                if not chunk:
                    return
                buf += chunk
            end = 11 + _int(buf[:11])
            args, buf = marshal.loads(buf[11:end]), buf[end:]
            yield args
    except (OSError, ValueError, EOFError, TypeError):
        return


class _JSONContext:
    """What ``_json.make_scanner`` reads off a decoder: strict JSON, no hooks, no NaN or Infinity."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> "Any":
        raise ValueError("not JSON: " + name)


def _dump_tagged(x: "Any") -> str:
    """A tagged value as JSON text again (it holds only lists, strings and booleans), every string
    escaped: whatever the answer's process wrote, this cannot become another record."""
    t = _type(x)
    if t is _str:
        return _esc(x)
    if t is _bool:
        return "true" if x else "false"
    return "[" + ",".join([_dump_tagged(item) for item in x]) + "]"


class _AnswerEnded(Exception):
    """The answer's process ended, or sent something that is not a reply."""


_EXCEPTIONS = {
    name: cls for name, cls in builtins.__dict__.items() if _type(cls) is _type and issubclass(cls, BaseException)
}


class _Answer:
    """The check's handle on the answer's process: arguments go out as ``marshal`` (plain values
    only), replies come back as the tests-mode records the answer's process writes, parsed strictly
    and decoded into exact builtin types. Nothing the answer made crosses but such values."""

    def __init__(self, pid: int, to_fd: int, from_fd: int, limit: int) -> None:
        self.pid, self.to_fd, self.from_fd, self.limit = pid, to_fd, from_fd, limit
        self.seq = 0
        self.buf = b""
        import _json  # the C scanner ``json.loads`` uses, without ``json``'s own imports

        context: Any = _JSONContext()
        self.scan = _json.make_scanner(context)

    def call(self, args: "tuple[Any, ...]") -> "dict[str, Any] | None":
        """The reply to one call, as a dict: ``ok`` and ``v`` (the tagged value, checked well-formed),
        or ``kind`` and ``error``; ``load_error``; ``mem``. None when the answer's process ended or
        broke the protocol."""
        try:
            data = marshal.dumps(args, 4)
            _write_all(self.to_fd, b"%010d\n" % _len(data) + data)
            line = self._line()
            reply = self._parse(line)
        except _AnswerEnded as e:
            try:
                _write_all(2, ("[spade] the answer's process %s\n" % e).encode("utf-8", "replace"))
            except BaseException:
                pass
            return None
        except OSError:
            return None
        self.seq += 1
        return reply

    def end(self) -> None:
        """Stop the answer's process and reap it: nothing of an honest run is left for the worker to
        sweep (a warm worker is reused only after a run that left nothing behind)."""
        for fd in (self.to_fd, self.from_fd):
            try:
                posix.close(fd)
            except OSError:
                pass
        try:
            posix.kill(self.pid, SIGKILL)
            posix.waitpid(self.pid, 0)
        except OSError:
            pass

    def loaded(self) -> "str | None":
        """Wait for the answer's process to load the code: None once it has, else the record to
        write instead of the tests' (a load error, ``mem``)."""
        try:
            line = self._line()
            if line == b"a ready":
                return None
            reply = self._parse(line)
        except (_AnswerEnded, OSError) as e:
            return '{"load_error":' + _esc("the answer's process %s" % e) + "}"
        if "load_error" in reply:
            return '{"load_error":' + _esc(reply["load_error"]) + "}"
        return "mem" if reply.get("mem") else '{"load_error":"the answer\'s process broke the protocol"}'

    def _line(self) -> bytes:
        while b"\n" not in self.buf:
            if _len(self.buf) > self.limit:
                raise _AnswerEnded("sent a reply over the results limit")
            chunk = posix.read(self.from_fd, 1 << 16)
            if not chunk:
                raise _AnswerEnded("ended before it answered a call")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def _parse(self, line: bytes) -> "dict[str, Any]":
        if line == b"a mem":
            return {"mem": True}
        if not line.startswith(b"a "):
            raise _AnswerEnded("broke the protocol")
        try:
            text = line[2:].decode("ascii")
            data, end = self.scan(text, 0)
        except (ValueError, RecursionError, UnicodeDecodeError, StopIteration):
            raise _AnswerEnded("broke the protocol") from None
        if end != _len(text):
            raise _AnswerEnded("broke the protocol")
        if _type(data) is not _dict:
            raise _AnswerEnded("broke the protocol")
        if _len(data) == 1 and _type(data.get("load_error")) is _str:
            return {"load_error": data["load_error"][:MESSAGE_CHARS]}
        if data.get("i") != self.seq or _type(data.get("i")) is not _int or _type(data.get("ok")) is not _bool:
            raise _AnswerEnded("broke the protocol")
        if data["ok"]:
            if _len(data) != 4 or "v" not in data:
                raise _AnswerEnded("broke the protocol")
            try:
                _decode(data["v"], 0, False)
            except (ValueError, TypeError, RecursionError):
                raise _AnswerEnded("sent a value that is not in the encoding") from None
            return {"ok": True, "v": data["v"]}
        kind, error = data.get("kind"), data.get("error")
        if kind not in ("exception", "memory", "timeout") or _type(error) is not _str or _len(data) != 5:
            raise _AnswerEnded("broke the protocol")
        return {"ok": False, "kind": kind, "error": error[:MESSAGE_CHARS]}

    def candidate(self, *args: "Any", **kwargs: "Any") -> "Any":
        """The answer's entry point as the check sees it: a call by value across processes."""
        if kwargs:
            raise TypeError("keyword arguments are not passed to the answer's process")
        try:
            marshal.dumps(args, 4)
        except ValueError:
            raise TypeError(
                "only plain values (None, bool, int, float, str, bytes, containers) are passed to the answer's process"
            ) from None
        reply = self.call(args)
        if reply is None or "ok" not in reply:
            raise _AnswerEnded("ended, or broke the protocol")
        if reply["ok"]:
            return _decode(reply["v"], 0, True)
        if reply["kind"] == "timeout":
            raise TimeoutError(reply["error"])
        name, _, message = reply["error"].partition(": ")
        cls = _EXCEPTIONS.get(name, Exception)
        try:
            error = cls(message)
        except BaseException:
            error = Exception(reply["error"])
        raise error


def _decode(tagged: "Any", depth: int, strict: bool) -> "Any":
    """A tagged value (``encode_value``'s form) as the exact builtin value; ValueError if malformed.
    A value of a type the encoding does not carry (``["u", ...]``) is None, or with ``strict`` a
    TypeError: only exact builtin types reach a check. ``verdict.decode_value`` is its twin outside
    the sandbox (which never imports this file)."""
    if depth > MAX_DEPTH + 1 or _type(tagged) is not _list or not tagged or _type(tagged[0]) is not _str:
        raise ValueError("malformed value")
    tag, n = tagged[0], _len(tagged)
    if tag == "N" and n == 1:
        return None
    if n == 2:
        arg = tagged[1]
        if tag == "b" and _type(arg) is _bool:
            return arg
        if tag == "i" and _type(arg) is _str and arg.lstrip("-").startswith("0x"):
            return _int(arg, 16)
        if tag == "f" and _type(arg) is _str:
            return _float(arg)
        if tag == "s" and _type(arg) is _str:
            return arg
        if tag == "y" and _type(arg) is _str:
            return _bytes.fromhex(arg)
        if tag in ("l", "t", "S", "F") and _type(arg) is _list:
            items = [_decode(x, depth + 1, strict) for x in arg]
            if tag == "l":
                return items
            return _tuple(items) if tag == "t" else _set(items) if tag == "S" else _frozenset(items)
        if tag == "d" and _type(arg) is _list:
            out = {}
            for pair in arg:
                if _type(pair) is not _list or _len(pair) != 2:
                    raise ValueError("malformed dict item")
                out[_decode(pair[0], depth + 1, strict)] = _decode(pair[1], depth + 1, strict)
            return out
    if n == 3:
        if tag == "c" and _type(tagged[1]) is _str and _type(tagged[2]) is _str:
            return _complex(_float(tagged[1]), _float(tagged[2]))
        if tag == "u" and _type(tagged[1]) is _str and _type(tagged[2]) is _str:
            if strict:
                raise TypeError("the answer returned a %s: only exact builtin types are compared" % tagged[1][:200])
            return None
    raise ValueError("malformed value")


# -- the child ------------------------------------------------------------------------------


class _Quitter:
    """``exit``/``quit`` as ``site`` would define them (``-S`` skips ``site``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Use {self.name}() or Ctrl-D (i.e. EOF) to exit"

    def __call__(self, code: "Any" = None) -> None:
        raise SystemExit(code)


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


_CODE: "dict[str, Any]" = {}
"""Code under test already compiled by a fork server's supervisor, by file name (``_apply_setup``):
the modes take theirs before any of it runs and ``_load`` runs it instead of compiling the file
(the same code: same source, name and flags)."""


def _read(path: str) -> bytes:
    with _open(open_regular(path), "rb") as f:
        return f.read()


def _load(path: str, module: "Any", code: "Any" = None, source: "bytes | None" = None) -> None:
    """Run the file ``path`` in ``module``: ``code``, its code compiled already, or else ``source``,
    its bytes read already, or else what the file holds now."""
    if code is None:
        code = _compile(_read(path) if source is None else source, path, "exec")
    _exec(code, module.__dict__)


def _new_module(name: str, path: str) -> "Any":
    """A real module for the code under test (dataclasses, pickle and typing look it up).

    It is also ``sys.modules["__main__"]``: ``import __main__`` must not hand the code under test
    this harness's globals.
    """
    module = _type(sys)(name)
    module.__file__ = path
    module.__dict__["__builtins__"] = builtins
    sys.modules[name] = module
    sys.modules["__main__"] = module
    return module


class _Child:
    """Runs the untrusted code; results go to ``res`` as ``<token> <payload>`` lines."""

    def __init__(self, req: "dict[str, Any]", token: str, res: int) -> None:
        self.req = req
        self.token = token
        self.res = res
        self.pid = _getpid()
        self.printed = False

    def send(self, payload: str) -> None:
        if _getpid() != self.pid:  # a fork of the code under test returned into the harness
            _exit(0)
        _write_all(self.res, (self.token + " " + payload + "\n").encode("ascii"))

    def run(self) -> int:
        self.send("start")
        builtins.__dict__["exit"] = _Quitter("exit")
        builtins.__dict__["quit"] = _Quitter("quit")
        mode = self.req["mode"]
        if mode == "tests":
            return self.tests()
        if mode == "check":
            return self.check()
        if mode == "exec":
            return self.exec_command()
        return self.program()

    def failed_load(self, e: BaseException, memory: bool) -> int:
        if memory:
            self.send("mem")
            return 1
        _print_traceback(e)
        self.send('{"load_error":' + _esc(_describe(e)) + "}")
        return 1

    def tests(self) -> int:
        req = self.req
        module = _new_module("solution", req["file"])
        sys.argv = [req["file"]]
        name = req["entry_point"]
        import _signal

        # Bound before the code under test runs: it cannot swap them by patching globals it can
        # reach without walking this frame.
        send, encode, esc, describe, perf = self.send, encode_value, _esc, _describe, _perf
        cpu_now, busy_now = _cpu, _busy_s
        setitimer, real, timeout_cls, sigprof = _signal.setitimer, _signal.ITIMER_REAL, _Timeout, _signal.SIGPROF
        # A call's budget is CPU time (ITIMER_PROF: user + system, every thread), so whether it runs
        # out measures the program, not the machine's load. Wall time is a backstop for a call that
        # blocks instead of computing (it sleeps, waits on a pipe): wall_factor times the budget, but
        # never more than the calls may still take before the execution's own wall deadline, shared
        # among the timeouts left before the calls stop. When it fires on a call whose thread ran or
        # waited for a CPU for at least half of that time, the machine kept the call waiting: it goes on
        # to its CPU budget (or the deadline). So code that loops costs what it costs on an idle machine
        # and ends with the same records on a loaded one, instead of being cut off by the
        # deadline half way. (The mutation gate's dispatcher re-arms the CPU timer with its own budget.)
        # A request with "block_s" (validation's gates) makes the wall timer a detector of calls that
        # block instead: it fires every block_s, and a call whose thread spent less than half of that
        # running or waiting for a CPU, and whose process used less than block_share of it in CPU time,
        # blocked (it sleeps, waits on a pipe) and ends; one that computes goes on until its CPU budget
        # or the execution's deadline, however slowly a loaded machine runs it. Each record
        # also says what the call cost in CPU time ("c", ms) and, for a timeout, what ended it ("by":
        # "cpu", "blocked", or "wall": the backstop, whose CPU time then tells a call that blocked from
        # one the deadline cut while it computed): validation carries the latter on. The error text stays
        # one for all. Check mode's answer process ("ready") keeps the record its check's side reads.
        cpu, wall_factor, block_share = _signal.ITIMER_PROF, 10.0, 0.02
        timed = not req.get("ready")
        budget = float(req["test_timeout_s"])
        backstop, floor = budget * wall_factor, min(budget, 0.05)
        block = float(req.get("block_s") or 0.0)
        end = perf() + float(req["timeout_s"]) * 0.85  # the parent's deadline comes later: room to report
        limit = int(req["value_limit"])
        inputs = req["inputs"]
        stop_after = req.get("max_timeouts")
        stop_after = _int(stop_after) if stop_after is not None else -1
        timeouts = 0
        try:
            _load(req["file"], module, _CODE.pop(req["file"], None))
            owner = req.get("entry_class")
            if owner:  # LeetCode's shape: one instance, made as the answer loads, its method called per test
                cls = module.__dict__.get(owner)
                if cls is None:
                    raise NameError(f"class {owner!r} is not defined")
                if not _callable(cls):
                    raise TypeError(f"class {owner!r} is not callable ({_type(cls).__name__})")
                fn = _getattr(cls(), name, None)
                if fn is None:
                    raise AttributeError(f"class {owner!r} has no method {name!r}")
            else:
                fn = module.__dict__.get(name)
            if fn is None:
                raise NameError(f"entry point {name!r} is not defined")
            if not _callable(fn):
                raise TypeError(f"entry point {name!r} is not callable ({_type(fn).__name__})")
        except MemoryError:
            return self.failed_load(MemoryError(), True)
        except BaseException as e:
            return self.failed_load(e, False)
        if req.get("ready"):  # check mode's answer process: the check's process waits to hear it loaded
            send("ready")

        fired = [0]
        tick: list[Any] = [0.0, 0.0, None]  # CPU, wall clock and busy time when the detector last looked

        def wall_left(now: float) -> float:
            """The wall timer's next interval: the block detector's, or the backstop, never past the
            deadline's share for each timeout left before the calls stop."""
            left = (end - now) / (stop_after - timeouts if stop_after > 0 and not block else 1)
            return min(block or backstop, max(left, floor))

        def on_alarm(signum: int, frame: "Any") -> None:
            if not block and signum != sigprof:
                now, busy = perf(), busy_now()
                # the backstop: a call whose thread ran or waited for a CPU most of the time computes on
                # a machine that keeps it waiting (its CPU budget decides it, as on an idle machine); one
                # that did neither blocked, and ends here. So does any call at the deadline
                waited = busy is not None and tick[2] is not None and busy - tick[2] >= 0.5 * (now - tick[1])
                if waited and now < end - 0.005:
                    setitimer(real, wall_left(now))
                    return
            if block and signum != sigprof:
                now, used, busy = perf(), cpu_now(), busy_now()
                if now >= end - 0.005:
                    fired[0] = signum  # the deadline: cut while it ran
                    raise timeout_cls
                idle = used - tick[0] < block_share * (now - tick[1])
                if idle and (busy is None or tick[2] is None or busy - tick[2] < 0.5 * (now - tick[1])):
                    fired[0] = -1  # blocked
                    raise timeout_cls
                tick[0], tick[1], tick[2] = used, now, busy
                setitimer(real, wall_left(now))
                return
            fired[0] = signum
            raise timeout_cls

        _signal.signal(_signal.SIGALRM, on_alarm)
        _signal.signal(_signal.SIGPROF, on_alarm)
        for i, args in enumerate(inputs):
            fired[0] = 0
            body = None
            t0, c0 = perf(), cpu_now()
            tick[0], tick[1], tick[2] = c0, t0, busy_now()
            try:
                setitimer(cpu, budget)
                setitimer(real, wall_left(t0))
                try:
                    if _type(args) is _str:
                        body = '"ok":false,"kind":"exception","error":' + esc("bad input: " + args)
                    else:
                        value = fn(*args)
                        body = '"ok":true,"v":' + encode(value, limit)
                        value = None
                except timeout_cls:
                    raise
                except MemoryError:
                    body = '"ok":false,"kind":"memory","error":"MemoryError"'
                except BaseException as e:
                    body = '"ok":false,"kind":"exception","error":' + esc(describe(e))
                    if not self.printed:
                        self.printed = True
                        _print_traceback(e)
                finally:
                    setitimer(real, 0)
                    setitimer(cpu, 0)
            except BaseException:  # either alarm, raised anywhere above
                pass
            ms = (perf() - t0) * 1000.0
            used = (cpu_now() - c0) * 1000.0
            if fired[0]:  # one message whichever timer fired: records must not say how loaded the machine was
                by = '"by":"%s",' % ("cpu" if fired[0] == sigprof else "blocked" if fired[0] < 0 else "wall")
                by = by if timed else ""
                body = '"ok":false,"kind":"timeout",' + by + '"error":' + esc(f"timed out after {budget:g} s")
                timeouts += 1
            elif body is None:
                body = '"ok":false,"kind":"exception","error":"no result"'
            if timed:
                send('{"i":%d,"ms":%.3f,"c":%.3f,%s}' % (i, ms, used, body))
            else:
                send('{"i":%d,"ms":%.3f,%s}' % (i, ms, body))
            if timeouts == stop_after:
                break
        return 0

    def check(self) -> int:
        """Check mode: this process (trusted: no code under test ever runs in it) forks the answer's
        process, asks it for the tests' outputs and relays them as records, then runs the check
        script with ``candidate`` calling across; ``done`` only when ``check`` returned."""
        req = self.req
        # opened and unlinked before the answer's process exists, read only after it is forked: the
        # script is neither on disk nor in memory anywhere the answer can look
        check_fd = open_regular(req["check_file"])
        posix.unlink(req["check_file"])
        _CODE.pop(req["check_file"], None)  # never compiled ahead (forkserver._precompile); never kept

        prctl = _PRCTL[0] if _PRCTL else _load_prctl()
        if prctl is not None:
            prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the answer's process may not read this one's memory
        to_r, to_w = posix.pipe()
        from_r, from_w = posix.pipe()
        _flush_std()
        pid = posix.fork()
        if pid == 0:
            for fd in (self.res, to_w, from_r, check_fd):
                posix.close(fd)
            self.pid, self.res, self.token = _getpid(), from_w, "a"
            self.req = {**req, "inputs": _requests(to_r), "max_timeouts": None, "ready": True}
            _exit(self.tests())
        posix.close(to_r)
        posix.close(from_w)
        # Out of the scratch directory, which the answer's process can now write: this process never
        # resolves a name there again. Python's traceback and warning printers open the source file of
        # each frame by name ("check.py", "harness.py", relative): a FIFO the answer put there would
        # hang this process until the deadline, a file would be shown as the check's source. From
        # "/" (read-only) they find nothing, as they found nothing before (check.py is unlinked).
        posix.chdir("/")
        answer = _Answer(pid, to_w, from_r, int(req["results_limit"]))
        try:
            return self._check_through(answer, check_fd)
        finally:
            answer.end()

    def _check_through(self, answer: "_Answer", check_fd: int) -> int:
        """Check mode's part once the answer's process exists: the tests' records, then the script."""
        req = self.req
        stop_after = req.get("max_timeouts")
        stop_after = _int(stop_after) if stop_after is not None else -1
        timeouts = 0
        try:
            loaded = answer.loaded()
            if loaded is not None:
                self.send(loaded)
                return 1
            for i, args in enumerate(req["inputs"]):
                t0 = _perf()
                reply = answer.call(args)
                ms = (_perf() - t0) * 1000.0
                if reply is None or "ok" not in reply:
                    return 1  # the answer's process ended or broke the protocol (said on stderr)
                if reply["ok"]:  # the value as sent, checked well-formed and written anew (no forged line)
                    body = '"ok":true,"v":' + _dump_tagged(reply["v"])
                else:
                    body = '"ok":false,"kind":"%s","error":%s' % (reply["kind"], _esc(reply["error"]))
                    timeouts += reply["kind"] == "timeout"
                self.send('{"i":%d,"ms":%.3f,%s}' % (i, ms, body))
                if timeouts == stop_after:
                    return 0  # as in tests mode: no more calls, and the check is not run
            source = b""
            while True:
                chunk = posix.read(check_fd, 1 << 16)
                if not chunk:
                    break
                source += chunk
            posix.close(check_fd)
            module = _type(sys)("check")
            module.__file__ = req["check_file"]
            candidate = answer.candidate
            namespace = module.__dict__
            namespace["__builtins__"] = builtins
            namespace[req["entry_point"]] = candidate  # a check naming the entry point means the answer too
            _exec(_compile(source, req["check_file"], "exec"), namespace)
            check = namespace.get("check")
            if _callable(check):
                check(candidate)
        except MemoryError:
            self.send("mem")
            return 1
        except BaseException as e:
            _print_traceback(e)
            return 1
        self.send("done")
        return 0

    def program(self) -> int:
        path = self.req["file"]
        module = _new_module("__main__", path)
        sys.argv = [path]
        cpu_s = self.req.get("cpu_s")
        if cpu_s:
            import _signal

            # the program's CPU time (every thread), so load does not move a verdict; SIGPROF's default
            # action ends the process, which the parent reports as a timeout (a program that catches
            # or ignores it meets the wall deadline instead)
            _signal.signal(_signal.SIGPROF, _signal.SIG_DFL)
            _signal.setitimer(_signal.ITIMER_PROF, float(cpu_s))
            _cpu_backstop(float(cpu_s))
        try:
            _load(path, module, _CODE.pop(path, None))
        except SystemExit as e:
            return _exit_code(e)
        except MemoryError as e:
            self.send("mem")
            _print_traceback(e)
            return 1
        except BaseException as e:
            _print_traceback(e)
            return 1
        return 0

    def exec_command(self) -> int:
        """Become the request's command (``exec`` mode: a compiler, or a compiled answer), with the
        dispositions and mask a fresh process has: Python ignores SIGPIPE and SIGXFSZ, and an ignored
        signal stays ignored across ``execve``. The results pipe is closed first, so the command
        cannot write records; its verdict is its exit status and its output. Returns only when the
        command cannot be started (127, with why on stderr)."""
        import _signal

        req = self.req
        for name in ("SIGPIPE", "SIGXFSZ", "SIGPROF", "SIGINT", "SIGTERM", "SIGALRM", "SIGCHLD"):
            number = _getattr(_signal, name, None)
            if number is not None:
                try:
                    _signal.signal(number, _signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
        try:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
        except (AttributeError, OSError):
            pass
        for name in req.get("executables") or ():
            try:
                posix.chmod(name, 0o755)
            except OSError:
                pass
        env = _dict(req.get("env") or {})
        cwd = posix.getcwd()
        env["HOME"] = cwd
        env["TMPDIR"] = cwd
        argv = _list(req["argv"])
        cpu_s = req.get("cpu_s")
        if cpu_s:
            # CPU time of every thread, and it survives execve: SIGPROF's default action ends the
            # command at its budget, which the parent reports as a timeout
            _signal.setitimer(_signal.ITIMER_PROF, float(cpu_s))
            _cpu_backstop(float(cpu_s))
        posix.close(self.res)
        try:
            posix.execve(argv[0], argv, env)
        except OSError as e:
            _write_all(2, ("spade: cannot run %s: %s\n" % (argv[0], e.strerror)).encode("utf-8", "replace"))
        return 127


def backstop_s(cpu_s: float) -> int:
    """The CPU seconds at which ``_cpu_backstop`` ends a run with a budget of ``cpu_s``: its next whole
    second, and one more."""
    return int(cpu_s + 0.999) + 1


def _cpu_backstop(cpu_s: float) -> None:
    """``RLIMIT_CPU`` a second or two past a run's budget: a program that disarms, ignores or catches the
    budget's SIGPROF is then killed near its budget rather than at the wall limit (ten times it); the
    parent reports it as a timeout (``BUDGET_SLACK_S``)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = backstop_s(cpu_s) + int(usage.ru_utime + usage.ru_stime)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY and hard <= soft:
        return  # the run's own limit is already as tight
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
    except (OSError, ValueError):
        pass


def _exit_code(e: SystemExit) -> int:
    """The exit status Python gives an uncaught ``SystemExit`` (printing a non-int code)."""
    code = e.code
    if code is None:
        return 0
    if _type(code) is _int:
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _shutdown_like_python(code: int) -> None:
    """What a normal interpreter exit does that a program can see: join non-daemon threads, run
    atexit handlers, flush the streams. Then ``_exit``: tearing down every module of a forked
    interpreter would copy most of its pages and cost milliseconds per execution."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    _flush_std()
    _exit(code)


def unbuffered_std() -> None:
    """``sys.stdout`` and ``sys.stderr`` writing straight to descriptors 1 and 2, as ``python -u``
    makes them: what a program printed before it was stopped (a deadline, a kill, a cap) is in the
    pipe already, not lost in a buffer. The fork server's executions call it too."""
    import _io

    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name, None)
        try:
            encoding = getattr(old, "encoding", None) or "utf-8"
            errors = getattr(old, "errors", None) or "strict"
            new = _io.TextIOWrapper(_io.FileIO(fd, "w", closefd=False), encoding, errors, None, False, True)
        except BaseException:
            continue
        setattr(sys, name, new)
        setattr(sys, "__%s__" % name, new)


def _child_main(req: "dict[str, Any]", token: str, fds: dict[str, int]) -> None:
    """Set up the child's descriptors, run the mode, and end the process (never returns)."""
    try:
        posix.setpgid(0, 0)
    except OSError:  # a session leader already leads its own group
        pass
    null = posix.open("/dev/null", posix.O_RDWR)
    posix.dup2(null, 0)
    stdin_file = req.get("stdin_file")
    if stdin_file:  # a program's input: a regular file of the scratch directory, never a FIFO or a link
        try:
            posix.dup2(open_regular(stdin_file), 0)
        except OSError:
            _exit(1)  # not reached for a file the runner wrote; an empty stdin would be a wrong verdict
    posix.dup2(fds["out_w"], 1)
    posix.dup2(fds["err_w"], 2)
    unbuffered_std()
    res = fds["res_w"]
    # every other descriptor goes: the capture pipes' other ends, and whatever the parent held
    posix.closerange(3, res)
    posix.closerange(res + 1, MAX_FDS)
    child = _Child(req, token, res)
    try:
        code = child.run()
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException:
        code = 1
    if req["mode"] == "main":
        _shutdown_like_python(code)
    _flush_std()
    _exit(code)


# -- the parent ---------------------------------------------------------------------------------


def _load_prctl() -> "Any":
    """libc's prctl through ``_ctypes`` (a millisecond; ``import ctypes`` costs several), or None."""
    try:
        return libc_function("prctl")
    except Exception:
        pass
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        return None


def _children() -> list[int]:
    me = _getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    found = []
    for name in posix.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    data = f.read()
                if int(data[data.rfind(b")") + 2 :].split()[1]) == me:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return found


def _kill_orphans() -> None:
    """Kill and reap every process reparented to us (we are a subreaper), until none is left."""
    for _ in range(200):
        kids = _children()
        if not kids:
            return
        for pid in kids:
            try:
                posix.kill(pid, SIGKILL)
            except OSError:
                pass
        for pid in kids:
            try:
                posix.waitpid(pid, 0)
            except OSError:
                pass


def _killpg(pgid: int) -> None:
    try:
        posix.killpg(pgid, SIGKILL)
    except OSError:
        pass


def _reap_own_child(pid: int) -> "tuple[int, float]":
    """Kill the child's group (while the child is unreaped, its pgid cannot be reused), reap the
    child, then every orphan that came back to us; its wait status and CPU seconds."""
    _killpg(pid)
    _, status, usage = posix.wait4(pid, 0)
    _kill_orphans()
    return status, usage.ru_utime + usage.ru_stime


def _supervise(
    pid: int,
    req: "dict[str, Any]",
    fds: dict[str, int],
    t0: float,
    reap: "Any" = None,
    cpu_limit: "float | None" = None,
    pidfd: int = -1,
) -> "dict[str, Any]":
    """Watch the child until it exits, the deadline passes or a stream overflows; then clean up.

    ``reap`` ends and collects the child and what it left (default: ``_reap_own_child``, for a
    parent); a fork server's supervisor, which is not the child's parent, passes its own.
    ``cpu_limit`` is the child's CPU-time limit (default: ours, which the child inherited).
    ``pidfd``, if given, is the child's (opened while it surely lived: a supervisor that is not the
    parent could otherwise find it already reaped); it is closed here.
    """
    import select

    deadline = t0 + float(req["timeout_s"])
    out_limit = int(req["output_limit"])
    caps = {fds["out_r"]: out_limit, fds["err_r"]: out_limit, fds["res_r"]: int(req["results_limit"])}
    bufs: dict[int, bytearray] = {fd: bytearray() for fd in caps}
    over: set[int] = set()
    poller = select.poll()
    for fd in caps:
        poller.register(fd, select.POLLIN)
    open_fds = set(caps)
    try:
        if pidfd < 0:
            pidfd = posix.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pidfd = -1
    timed_out = exited = False
    status = 0

    def read(fd: int) -> bool:
        """Read once from fd; False at EOF."""
        try:
            chunk = posix.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            poller.unregister(fd)
            open_fds.discard(fd)
            return False
        buf = bufs[fd]
        room = caps[fd] - len(buf)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            over.add(fd)
        else:
            buf += chunk
        return True

    while not over:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        wait_s = remaining if pidfd >= 0 else min(remaining, 0.02)
        for fd, _ in poller.poll(wait_s * 1000.0 + 1):
            if fd == pidfd:
                exited = True
            else:
                read(fd)
        if pidfd < 0 and posix.waitid(posix.P_PID, pid, posix.WEXITED | posix.WNOHANG | posix.WNOWAIT):
            exited = True
        if exited:
            break
    if not exited:  # the deadline or a cap: stop it now (it is still unreaped, so this is its group)
        _killpg(pid)
    status, cpu_s = (reap or _reap_own_child)(pid)
    # Drain what is already there; a writer that escaped the kill cannot keep us here.
    drain_until = time.monotonic() + 0.2
    while open_fds and time.monotonic() < drain_until:
        ready = poller.poll(0)
        if not ready:
            break
        for fd, _ in ready:
            if fd in open_fds and fd != pidfd:
                read(fd)
    if pidfd >= 0:
        posix.close(pidfd)
    cpu_exceeded = False
    signal = posix.WTERMSIG(status) if posix.WIFSIGNALED(status) else None
    budget = req.get("cpu_s")
    if signal == SIGXCPU or (signal == SIGPROF and budget):
        cpu_exceeded = True
    elif (
        budget and cpu_s > float(budget) + BUDGET_SLACK_S and (signal != SIGKILL or cpu_s >= backstop_s(budget) - 0.05)
    ):
        # over its budget however it ended: a program that ignores, catches or disarms the budget's
        # signal (Go's runtime swallows SIGPROF) must not pass by finishing before the wall limit. A kill
        # short of the backstop is someone else's (the memory cgroup's): the run is what that makes it
        cpu_exceeded = True
    elif signal == SIGKILL and not timed_out and not over:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_CPU)[0] if cpu_limit is None else cpu_limit
        cpu_exceeded = soft != resource.RLIM_INFINITY and cpu_s >= soft - 0.05
    out, err, res = fds["out_r"], fds["err_r"], fds["res_r"]
    return {
        "v": PROTOCOL,
        "rc": posix.WEXITSTATUS(status) if posix.WIFEXITED(status) else None,
        "sig": signal,
        "out": bufs[out].decode("utf-8", "replace"),
        "err": bufs[err].decode("utf-8", "replace"),
        "out_trunc": out in over,
        "err_trunc": err in over,
        "res": bufs[res].decode("ascii", "replace"),
        "res_trunc": res in over,
        "timed_out": timed_out,
        "cpu_exceeded": cpu_exceeded,
        "output_limit": bool(over),
        "ms": (time.monotonic() - t0) * 1000.0,
        "cpu": cpu_s,
    }


def _to_json(value: "Any") -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if _type(value) in (int, float):
        return repr(value)
    if _type(value) is str:
        return _esc(value)
    return "{" + ",".join(_esc(k) + ":" + _to_json(v) for k, v in value.items()) + "}"


_PRCTL: "list[Any]" = []
"""prctl, loaded ahead by ``__spade_warm__`` when a fork server preloads this module."""


_PRISTINE: "list[dict[str, Any]]" = []
"""builtins before any code under test ran (with ``exit`` and ``quit``), taken by ``__spade_warm__``."""


def __spade_warm__() -> None:
    """Called once by a fork server that preloaded this module: do the per-run set-up that does not
    depend on the run, so every forked run inherits it instead of paying for it."""
    if not _PRCTL:
        _PRCTL.append(_load_prctl())
    if not _PRISTINE:
        builtins.__dict__["exit"] = _Quitter("exit")
        builtins.__dict__["quit"] = _Quitter("quit")
        _PRISTINE.append(_dict(builtins.__dict__))


def _fork_child(req: "dict[str, Any]") -> "dict[str, Any]":
    """Become the trusted parent (non-dumpable, subreaper) and fork the child with its pipes."""
    prctl = _PRCTL[0] if _PRCTL else _load_prctl()
    if prctl is not None:
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    import resource  # noqa: F401  (posix.wait4 imports it; do it before untrusted files can shadow it)
    import select  # noqa: F401

    token = posix.urandom(12).hex()
    fds = new_pipes()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = posix.fork()
    if pid == 0:
        _child_main(req, token, fds)
    try:
        posix.setpgid(pid, pid)
    except OSError:
        pass
    for key in ("out_w", "err_w", "res_w"):
        posix.close(fds[key])
    return {"pid": pid, "token": token, "fds": fds}


def _apply_setup(setup: "dict[str, Any]") -> None:
    """Take on a run's process state: directory, rlimits, environment, argv, path (for a child that a
    fork server started before its run existed, see ``forkserver.py``)."""
    posix.chdir(setup["cwd"])
    import resource

    for res, soft, hard in setup["rlimits"]:
        resource.setrlimit(res, (soft, hard))
    env_module = sys.modules.get("os")
    for name, value in setup["env"].items():
        if env_module is not None:
            env_module.environ[name] = value
        else:
            posix.putenv(name, value)
    sys.argv[:] = setup["argv"]
    if "orig_argv" in setup and hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = setup["orig_argv"]
    sys.path[:] = setup["path"]
    _CODE.update(setup.get("code") or {})


def report_line(report: "dict[str, Any]", req: "dict[str, Any]", token: str, secret: "dict[str, Any]") -> bytes:
    """The one line the backend reads: ``<nonce> <json report>``, with the check-mode marker when earned."""
    if report.get("harness_error") is None and req["mode"] == "check":
        # the check's process, which no code under test ever ran in, is the only writer of these lines
        lines = report["res"].split("\n")
        done = len(lines) >= 3 and lines[0] == token + " start" and lines[-2:] == [token + " done", ""]
        report["marker"] = secret["marker"] if done and report["rc"] == 0 else None
    line: str = secret["nonce"] + " " + _to_json(report) + "\n"
    return line.encode("ascii")


def finish_exec(report: "dict[str, Any]", req: "dict[str, Any]", directory: str) -> None:
    """An ``exec`` run's report completed: the files it was asked to leave, and its stderr without the
    scratch directory's path (a runtime's traces name ``/tmp/<random>/main.js``; the records of a run
    must not change with where it ran)."""
    if req.get("collect"):
        report["files"] = collect_files(req, directory)
    if "err" in report:
        report["err"] = report["err"].replace(directory + "/", "")


def collect_files(req: "dict[str, Any]", directory: str) -> "dict[str, str]":
    """The regular files of ``directory`` that ``req["collect"]`` names (``*.ext``: every file so
    ending), base64, at most ``req["collect_limit"]`` bytes in all (past it: none of them, and
    ``"!"`` says so); links, FIFOs and devices are never read. Called once every process of the run
    is gone, so nothing changes the files while they are read."""
    wanted = req.get("collect")
    if not wanted:
        return {}
    import binascii

    limit = int(req.get("collect_limit") or 0)
    suffixes = [w[1:] for w in wanted if w.startswith("*")]
    names = [n for n in sorted(posix.listdir(directory)) if n in wanted or any(n.endswith(x) for x in suffixes)]
    out: dict[str, str] = {}
    total = 0
    for name in names:
        try:
            fd = open_regular(directory + "/" + name)
        except OSError:
            continue
        try:
            data = b""
            while True:
                chunk = posix.read(fd, 1 << 20)
                if not chunk:
                    break
                data += chunk
                if total + _len(data) > limit:
                    return {"!": "the compile's output is larger than %d bytes" % limit}
        finally:
            posix.close(fd)
        total += _len(data)
        out[name] = binascii.b2a_base64(data, newline=False).decode("ascii")
    return out


def new_pipes() -> "dict[str, int]":
    """The child's stdout, stderr and results pipes."""
    out_r, out_w = posix.pipe()
    err_r, err_w = posix.pipe()
    res_r, res_w = posix.pipe()
    return {"out_r": out_r, "out_w": out_w, "err_r": err_r, "err_w": err_w, "res_r": res_r, "res_w": res_w}


def main() -> None:
    t0 = time.monotonic()
    sys.path[:] = [p for p in sys.path if not _is_cwd(p)]  # nothing imported from the scratch dir
    req = read_message()
    child = _fork_child(req)
    pid, token, fds = child["pid"], child["token"], child["fds"]
    secret = read_message()
    posix.close(0)
    try:
        report = _supervise(pid, req, fds, t0)
        if req["mode"] == "exec":
            finish_exec(report, req, posix.getcwd())
    except BaseException as e:  # a harness bug: still end the child and say so
        _killpg(pid)
        report = {"v": PROTOCOL, "harness_error": _describe(e)}
    _write_all(1, report_line(report, req, token, secret))
    # EOF now rather than once the kernel has torn this process down: the backend can go on
    for fd in (1, 2):
        try:
            posix.close(fd)
        except OSError:
            pass
    _exit(0)  # skip interpreter teardown: the backend is waiting for our exit


def _is_cwd(path: str) -> bool:
    if not path:
        return True
    try:
        a, b = posix.stat(path), posix.stat(".")
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


if __name__ == "__main__":
    main()
