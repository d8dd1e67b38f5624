# ruff: noqa: SIM105, UP031
"""The warm worker that runs *inside* a sandbox: one fresh process per execution, forked from a pristine one.

Why: a fresh ``python -S`` costs ~8 ms of CPU and the imports a typical solution makes (``typing``,
``re``, ``collections``...) several more; a fork of an interpreter that already imported them costs
far less. So each sandbox (one bwrap namespace set, cgroup and tmpfs) runs this program for many
executions, one at a time. On virtual machines, where every page-table update and copy-on-write
fault is costly, the number of processes per execution dominates; here it is one.

Started as ``python -s -S -B -c SOURCE CTRL_FD HOST_PIDNS`` (stdlib only, no file on disk) by
``bwrap --as-pid-1``. ``CTRL_FD`` is a ``SOCK_SEQPACKET`` socket to the host; ``HOST_PIDNS`` is the
host's ``/proc/self/ns/pid`` link text: the worker refuses to start unless it is in a pid namespace
of its own, the only place where its sweeps (killing every process but a known few) are safe. In a
docker container it is started as ``... -c SOURCE --relay HOST_PIDNS KEEP_ENV FILTERS`` instead: R,
the relay (at the end of this file), is then the container's pid 1 and forks W itself.

Pid 1 of the sandbox is always one of ours, non-dumpable and with no signal handler: W under bwrap
(``--as-pid-1``: no bwrap init in the sandbox), R under docker. Pid 1 is the one process every
program can name and that every sweep spares; bwrap's own init was dumpable, so a program could
write its memory (``/proc/1/mem``) and take its descriptors (``pidfd_getfd``) and live on there,
spared by every sweep. Ours is closed to the programs (``/proc/1/mem``, ``environ``, ``fd/``,
``maps``, ``cwd``, ``root`` and ``exe`` need the ptrace access a non-dumpable process refuses an
unprivileged one), and the kernel drops every signal a process of the namespace sends it
(``SIGKILL`` and ``SIGSTOP`` included) but those it has a handler for: none.

Three kinds of process:
  W  the *worker* (pid 1 under bwrap, pid 2 under docker's R): pristine — it never reads, receives
     or holds anything of a job, so every process forked from it starts clean. It is a child subreaper.
     For each job it forks C ahead of time; when C ends it kills C's process group and then every
     other process of the namespace but itself, pid 1 and S (setsid daemons, orphans, fork bombs),
     reaps them, tells S, and forks the next C. If S dies, or something would not die, it kills
     everything and leaves (the sandbox ends with it).
  S  the *supervisor*, forked from W once: it talks to the host, and is the trusted parent of the
     spade harness in all but name. It receives each job, writes the program's files into a fresh
     scratch directory, reads the harness's request and hands it to C with the run's process
     state and fresh output pipes, and only then reads the run's secrets (report nonce, check
     marker); it watches C's pipes (capped) and the deadline, gets C's exit status from W, and
     writes the harness's report. Then, while W forks the next C, it wipes the writable places
     (``/tmp``, ``/dev/shm``, ``/dev/mqueue``) and checks that no System V IPC object is left; it
     says "clean" to the host only after that (and leaves, ending the sandbox, if it cannot). S
     holds job data, so it never forks; it is non-dumpable (and seccomp denies ptrace), so C
     cannot read it.
  C  the *execution*, forked from W before its job exists and waiting for it on a socket of its
     own: for the harness it becomes the harness's untrusted child (``harness._child_main``); for
     any other program it becomes that program (``python program.py`` semantics: ``SystemExit``,
     tracebacks, ``atexit``, non-daemon threads), its stdin/stdout/stderr the host's pipes.

Protocol with the host (one message per packet; the host sends marshal, the worker answers in JSON):
  host -> W  ``{"op": "preload", "modules": {name: MAGIC + marshal'd code}, "solution_imports": bool}``
             first: modules run once before any fork (the spade harness, which S and C use instead
             of their own copies), and whether to import ``SOLUTION_IMPORTS`` too;
  S -> host  ``{"op": "ready", ...}`` once, then per job ``{"op": "done", ...}`` (every process of
             the run is gone) and ``{"op": "clean"}`` (its files too, and the next C is waiting), or
             EOF when it could not be cleaned;
  host -> S  ``{"op": "run", "scratch", "argv0", "env", "rlimits", "warm"}`` with three descriptors
             (``SCM_RIGHTS``): the payload pipe's read end (one framed marshal message with the
             source and files, then the program's stdin) and the write ends of the stdout and
             stderr pipes, which the host reads itself with caps and its own deadline. ``warm``
             names the preloaded harness when the program is exactly the runner's stub for it.
             EOF: leave.

All of them run with ``oom_score_adj`` 1000: under the memory cgroup's limit the OOM killer takes
the biggest (the program); if it takes the worker instead, the host reports ``memory`` and starts
another. None installs signal handlers or imports anything on a job's behalf.
"""

import gc
import marshal
import posix
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if __package__:  # imported from the package (tests); shipped, libc.py's source stands above this program
    from .libc import libc_function

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
SIGKILL = 9
SIGINT = 2
WRITABLE = ("/tmp", "/dev/shm", "/dev/mqueue")
MAX_FDS = 1 << 16
MESSAGE_BYTES = 1 << 17
"""Longest message a ``Channel`` receives whole: the host's preload message (the harness's bytecode,
~70 kB) must fit, and stay under a Unix socket's default send buffer (~208 kB) for one packet."""
PRECOMPILE_BYTES = 1 << 16
"""Largest file of code under test S compiles for C (see ``_precompile``); a larger one C compiles itself."""
SWEEP_S = 2.0
"""How long leftovers may take to die before the worker reports itself unclean."""

HARNESS_IMPORTS = ("select", "resource", "_signal", "_ctypes")
"""The harness's own imports (tiny C modules): imported once per worker, always."""
SOLUTION_IMPORTS = (
    # what solutions import most; typing brings re, collections, functools, contextlib, enum, operator
    "typing",
    "math",
    "itertools",
    "heapq",
    "bisect",
    "string",
    "copy",
    "random",
)
"""Imported once per worker when the host's preload message asks (``"solution_imports"``: a worker of a
pool, which forks many executions; not a one-run sandbox's, which would only make its one run wait
~25 ms for modules it may not use). Each costs a fresh interpreter milliseconds, but every module also
adds resident pages that *every* execution's fork copies page tables for (~0.1 ms per MB per
execution), so only the cheap and the common are here."""

_HERE = sys._getframe().f_code.co_filename


# -- small helpers ------------------------------------------------------------------------------


def _load_prctl() -> "Any":
    """libc's prctl, or None where it cannot be loaded."""
    try:
        return libc_function("prctl")
    except Exception:
        return None


def _dumps(obj: "dict[str, Any]") -> bytes:
    """A flat dict as JSON (str keys; None, bool, int, float or str values), without importing json."""
    from _json import encode_basestring_ascii as esc

    parts = []
    for key, value in obj.items():
        if value is None or value is True or value is False:
            text = "null" if value is None else "true" if value else "false"
        elif type(value) is int or type(value) is float:
            text = repr(value) if value == value and value not in (float("inf"), float("-inf")) else "null"
        else:
            text = esc(str(value))
        parts.append(esc(key) + ":" + text)
    return ("{" + ",".join(parts) + "}").encode("ascii")


_prctl: "Any" = None
"""libc's prctl, loaded once by the worker (executions inherit it)."""
_BASE_PATH: "list[str]" = []
"""The interpreter's own ``sys.path`` (no script directory)."""


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = posix.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("payload ended early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int) -> "Any":
    """One ``%010d\\n``-framed marshal message, read exactly: the rest of the pipe is the program's stdin."""
    return marshal.loads(_read_exact(fd, int(_read_exact(fd, 11))))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[posix.write(fd, view) :]


def _socket_pair() -> "tuple[int, int]":
    """Two connected ``SOCK_SEQPACKET`` descriptors (for ``Channel``)."""
    import _socket

    a, b = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    return a.detach(), b.detach()


def _pids() -> "list[int]":
    return [int(n) for n in posix.listdir("/proc") if n.isdigit()]


def _reap() -> None:
    while True:
        try:
            pid, _ = posix.waitpid(-1, posix.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


# -- the execution process (E) --------------------------------------------------------------------


_DIR_FLAGS = posix.O_RDONLY | posix.O_DIRECTORY | posix.O_NOFOLLOW | posix.O_CLOEXEC


def _write_file(root: str, name: str, data: bytes) -> None:
    """Write ``name`` (a relative path) under the directory ``root`` as a new regular file.

    Every step is taken from the directory opened before it, never by following a link: a name that
    is already there (a link to elsewhere, a FIFO, any file) is an error, not a place to write to.
    """
    parts = [p for p in name.split("/") if p]
    if not parts or name.startswith("/") or ".." in parts or "\0" in name:
        raise ValueError("bad file name %r" % name)
    dfd = posix.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                posix.mkdir(part, 0o755, dir_fd=dfd)
            except FileExistsError:
                pass
            inner = posix.open(part, _DIR_FLAGS, dir_fd=dfd)
            posix.close(dfd)
            dfd = inner
        flags = posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_NOFOLLOW | posix.O_CLOEXEC
        fd = posix.open(parts[-1], flags, 0o644, dir_fd=dfd)
    finally:
        posix.close(dfd)
    try:
        _write_all(fd, data)
    finally:
        posix.close(fd)


def _exit_code(e: BaseException) -> int:
    code = getattr(e, "code", None)
    if code is None:
        return 0
    if type(code) is int:
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _print_exception(e: BaseException) -> None:
    """Print ``e`` as an uncaught exception, without this worker's frames."""
    try:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _HERE:
            tb = tb.tb_next
        e.__traceback__ = tb
        sys.excepthook(type(e), e, tb)
    except BaseException:
        pass


def _finish(code: int) -> None:
    """What an interpreter exit visibly does (threads joined, atexit run, streams flushed), then _exit."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    atexit = sys.modules.get("atexit")
    if atexit is not None:
        try:
            atexit._run_exitfuncs()
        except BaseException:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    posix._exit(code)


def _unbuffered_std() -> None:
    """``python -u``'s streams (``harness.unbuffered_std``'s twin: this worker runs jobs that are not the
    harness's too): what the program printed before it was stopped is not lost in a buffer."""
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


def _run_main(source: bytes, path: str) -> None:
    """Run ``source`` as ``__main__`` the way ``python path`` would, then end the process."""
    import builtins

    module = type(sys)("__main__")
    module.__file__ = path
    module.__dict__["__builtins__"] = builtins
    module.__dict__["__cached__"] = None
    sys.modules["__main__"] = module
    code = 0
    try:
        exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    except SystemExit as e:
        code = _exit_code(e)
    except KeyboardInterrupt as e:
        _print_exception(e)
        code = 128 + SIGINT
    except BaseException as e:
        _print_exception(e)
        code = 1
    _finish(code)


# -- C: one execution -------------------------------------------------------------------------------


def _execution(ch: "Channel") -> None:
    """C: wait for a job from S, become it, end the process (never returns)."""
    try:
        msg, fds = ch.recv()
        ch.close()
        if msg is None or len(fds) != 3:
            posix._exit(0)
        if msg.get("op") == "harness":
            harness = sys.modules[msg["module"]]
            harness._apply_setup(msg["setup"])
            out_w, err_w, res_w = fds
            harness._child_main(msg["req"], msg["token"], {"out_w": out_w, "err_w": err_w, "res_w": res_w})
            posix._exit(1)  # not reached: _child_main ends the process
        job = msg
        pin, pout, perr = fds
        if _prctl is not None:
            _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # like any freshly started process
        payload = _read_frame(pin)
        scratch = job["scratch"]
        posix.mkdir(scratch, 0o700)
        for name, data in payload["files"].items():
            _write_file(scratch, name, data)
        argv0 = job["argv0"]
        _write_file(scratch, argv0, payload["source"])
        posix.chdir(scratch)
        for target, fd in ((0, pin), (1, pout), (2, perr)):
            posix.dup2(fd, target)
        posix.closerange(3, MAX_FDS)
        _unbuffered_std()
        import resource

        for res, soft, hard in job["rlimits"]:
            resource.setrlimit(res, (soft, hard))
        import os

        for name, value in job["env"].items():  # the rest was the worker's own environment
            os.environ[name] = value
        sys.argv[:] = [argv0]
        sys.orig_argv[:] = [sys.executable, "-s", "-S", "-B", argv0]
        sys.path[:] = [scratch, *_BASE_PATH]
        source = payload["source"]
        del payload, msg, job
    except BaseException as e:
        try:
            _write_all(2, ("spade worker: could not start the program: %s: %s\n" % (type(e).__name__, e)).encode())
        except BaseException:
            pass
        posix._exit(126)
    _run_main(source, scratch + "/" + argv0)


# -- messages between processes ------------------------------------------------------------------


class Channel:
    """A ``SOCK_SEQPACKET`` socket: one message per packet, descriptors passed along (``SCM_RIGHTS``)."""

    def __init__(self, fd: int) -> None:
        import _socket

        self.socket = _socket
        self.sock = _socket.socket(fileno=fd)
        self.fd = fd

    def send(self, data: bytes, fds: "list[int] | None" = None) -> None:
        if fds:
            raw = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
            self.sock.sendmsg([data], [(self.socket.SOL_SOCKET, self.socket.SCM_RIGHTS, raw)])
        else:
            self.sock.send(data)

    def recv(self) -> "tuple[dict[str, Any] | None, list[int]]":
        """The next message (marshal: it comes from the host or from W, which are trusted) and its
        descriptors; None at EOF."""
        socket = self.socket
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(MESSAGE_BYTES, socket.CMSG_SPACE(16 * 4))
                break
            except InterruptedError:
                continue
            except OSError:
                return None, []
        fds: list[int] = []
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                raw = raw[: len(raw) - len(raw) % 4]
                fds.extend(int.from_bytes(raw[i : i + 4], sys.byteorder) for i in range(0, len(raw), 4))
        if not data:
            for fd in fds:
                posix.close(fd)
            return None, []
        try:
            msg = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            msg = None
        if type(msg) is not dict:
            msg = {"op": "?"}
        return msg, fds

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# -- S: the supervisor ----------------------------------------------------------------------------


class Supervisor:
    def __init__(self, ctrl: Channel, ws: Channel) -> None:
        self.ctrl = ctrl
        self.ws = ws
        self.exited: dict[str, Any] = {}

    def send_host(self, obj: "dict[str, Any]") -> None:
        self.ctrl.send(_dumps(obj))

    def next_child(self) -> "tuple[int, Channel] | None":
        """The C that W forked for the next job (after W cleaned up after the last one)."""
        while True:
            msg, fds = self.ws.recv()
            if msg is not None and msg.get("op") == "exited":
                continue  # a C that died before it got a job: nothing to report
            if msg is None or msg.get("op") != "child" or len(fds) != 1:
                for fd in fds:
                    posix.close(fd)
                return None
            return int(msg["pid"]), Channel(fds[0])

    def reap(self, pid: int) -> "tuple[int, float]":
        """C's wait status and CPU seconds, from W once W has reaped it and swept up after it."""
        while True:
            msg, fds = self.ws.recv()
            for fd in fds:
                posix.close(fd)
            if msg is None:
                raise RuntimeError("the worker went away")
            if msg.get("op") == "exited" and msg.get("pid") == pid:
                self.exited = msg
                return int(msg["status"]), float(msg["cpu_s"])

    def serve(self, ready: "dict[str, Any]") -> None:
        child = self.next_child()
        if child is None:
            return
        self.send_host(ready)
        _quiet_stdio()
        while True:
            msg, fds = self.ctrl.recv()
            if msg is None or msg.get("op") != "run" or len(fds) != 3:
                for fd in fds:
                    posix.close(fd)
                return  # EOF, or something we do not speak: leave (W sees it and ends the sandbox)
            try:
                reply = self.job(msg, fds, *child)
            except Exception as e:
                reply = {"op": "done", "error": "%s: %s" % (type(e).__name__, e), "clean": False, "swept": -1}
            self.send_host(reply)
            # every process of the run is gone (W swept before it told us); now its files, while W
            # forks the next C: the host sends no job before "clean", and C gets none before that
            if not (_wipe() and _ipc_empty()):
                return  # cannot be made clean: leave (W ends the sandbox; the host retries elsewhere)
            child = self.next_child()
            if child is None:
                return
            self.send_host({"op": "clean"})

    def job(self, job: "dict[str, Any]", fds: "list[int]", pid: int, ch: Channel) -> "dict[str, Any]":
        self.exited = {}
        warm = sys.modules.get(job.get("warm") or "")
        if warm is None or getattr(warm, "__spade_bin__", None) is None or not hasattr(posix, "pidfd_open"):
            # any other program: C becomes it, with the host's pipes as its stdio
            try:
                ch.send(marshal.dumps(job), fds)
            except OSError:
                _kill(pid)  # C is gone or cannot be reached: W still reports it
            ch.close()
            for fd in fds:
                posix.close(fd)
            status, _ = self.reap(pid)
        else:
            status = self.harness(warm, job, fds, pid, ch)
        done = {"op": "done", "status": status}
        for key in ("cpu_s", "swept", "clean"):
            done[key] = self.exited.get(key)
        return done

    def harness(self, harness: "Any", job: "dict[str, Any]", fds: "list[int]", pid: int, ch: Channel) -> int:
        """Play the harness's trusted parent for C (see ``harness.main``); returns our own "exit status"."""
        pin, out_job, err_job = fds
        t0 = time.monotonic()
        pidfd = -1
        opened = [pin, out_job, err_job]  # every descriptor of this job: S is long-lived, none may leak
        try:
            pidfd = posix.pidfd_open(pid)  # now, while C surely lives (it waits for us): W reaps it, not us
            opened.append(pidfd)
            payload = _read_frame(pin)
            scratch = job["scratch"]
            posix.mkdir(scratch, 0o700)
            for name, data in payload["files"].items():
                _write_file(scratch, name, data)
            req = harness.read_message(pin)
            code = _precompile(payload["files"], req)
            del payload
            token = posix.urandom(12).hex()
            pipes = harness.new_pipes()
            opened.extend(pipes.values())
            argv0 = job["argv0"]
            setup = {
                "cwd": scratch,
                "rlimits": job["rlimits"],
                "env": job["env"],
                "argv": [argv0],
                "orig_argv": [sys.executable, "-s", "-S", "-B", argv0],
                "path": list(_BASE_PATH),
            }
            request = {"op": "harness", "module": harness.__name__, "req": req, "setup": setup, "token": token}
            message = marshal.dumps({**request, "setup": {**setup, "code": code}}) if code else b""
            if not message or len(message) > MESSAGE_BYTES:
                message = marshal.dumps(request)
            del code
            ch.send(message, [pipes["out_w"], pipes["err_w"], pipes["res_w"]])
            ch.close()
            for key in ("out_w", "err_w", "res_w"):
                _close(opened, pipes[key])
            secret = harness.read_message(pin)  # only now: C has all it will ever get
            _close(opened, pin)
            cpu = next((soft for res, soft, _ in job["rlimits"] if res == 0), None)  # RLIMIT_CPU
            opened.remove(pidfd)  # _supervise closes it
            report = harness._supervise(pid, req, pipes, t0, reap=self.reap, cpu_limit=cpu, pidfd=pidfd)
            if req["mode"] == "exec":
                harness.finish_exec(report, req, scratch)
            _write_all(out_job, harness.report_line(report, req, token, secret))
        except BaseException as e:
            _kill(pid)
            ch.close()
            if not self.exited:
                self.reap(pid)
            _write_all(err_job, ("spade worker: %s: %s\n" % (type(e).__name__, e)).encode())
            return 1 << 8
        finally:
            for fd in list(opened):
                _close(opened, fd)
        return 0


# -- W: the worker -----------------------------------------------------------------------------------


class Worker:
    def __init__(self, ctrl_fd: int, host_pidns: str, relayed: bool = False) -> None:
        self.ctrl_fd = ctrl_fd
        self.me = posix.getpid()
        own = posix.readlink("/proc/self/ns/pid")
        # The sweeps below kill every process this one may signal in its pid namespace but a known
        # few: only ever do that in a namespace that is provably not the host's (ours differs from
        # the one that started us, and a child can only be in the same pid namespace or a descendant).
        if not own or own == host_pidns:
            raise SystemExit("spade worker: not in a pid namespace of its own (%r); refusing to run" % own)
        # The sweeps spare pid 1, which every program can name: it must be one of ours, closed to them
        # (see the module's doc): this worker under bwrap, the relay under docker.
        if (self.me == 1) == relayed:
            raise SystemExit(
                "spade worker: pid %d of its sandbox, where pid 1 must be %s; refusing to run"
                % (self.me, "the relay" if relayed else "this worker (bwrap --as-pid-1)")
            )
        self.pidns = own

    def spawn(self) -> "tuple[int, int]":
        """Fork the next C, waiting for its job on a socket; (its pid, the socket's other end for S)."""
        c_end, s_end = _socket_pair()
        pid = posix.fork()
        if pid == 0:
            try:
                _close_fds_but([c_end])
                posix.setsid()
                import _signal

                _signal.signal(SIGINT, _signal.default_int_handler)  # W ignores it; a program gets Python's
                _execution(Channel(c_end))
            finally:
                posix._exit(127)
        posix.close(c_end)
        return pid, s_end

    def serve(self, ws: Channel, s_pid: int) -> None:
        import select

        s_pidfd = posix.pidfd_open(s_pid)
        while True:
            try:  # the next C; S wipes the sandbox meanwhile, and hands C a job only once that is done
                pid, s_end = self.spawn()
            except OSError:
                break
            try:
                ws.send(marshal.dumps({"op": "child", "pid": pid}), [s_end])
            except OSError:
                break
            finally:
                posix.close(s_end)
            c_pidfd = posix.pidfd_open(pid)
            poller = select.poll()
            poller.register(c_pidfd, select.POLLIN)
            poller.register(s_pidfd, select.POLLIN)
            events: list[tuple[int, int]] = []
            while not events:
                try:
                    events = poller.poll()
                except InterruptedError:
                    pass
            posix.close(c_pidfd)
            if (
                any(fd == s_pidfd for fd, _ in events)
                and posix.waitid(posix.P_PID, pid, posix.WEXITED | posix.WNOHANG | posix.WNOWAIT) is None
            ):
                break  # S left (the host is done, or the run killed it): end everything
            try:
                posix.killpg(pid, SIGKILL)  # C's group, while C is unreaped (its pgid is not reused)
            except OSError:
                pass
            _, status, usage = posix.wait4(pid, 0)
            swept, clean = self.sweep(spare=[s_pid])
            try:
                ws.send(marshal.dumps({
                    "op": "exited", "pid": pid, "status": status, "cpu_s": usage.ru_utime + usage.ru_stime,
                    "swept": swept, "clean": clean,
                }))  # fmt: skip
            except OSError:
                break
            if not clean:
                break  # something of the run would not die: end the sandbox (the host retries)
        self.sweep(spare=[])

    def sweep(self, spare: "list[int]") -> "tuple[int, bool]":
        """Kill and reap every process of the namespace but pid 1, us and ``spare``; (how many, all gone)."""
        keep = {1, self.me, *spare}
        _reap()
        others = [p for p in _pids() if p not in keep]
        if not others:
            return 0, True
        count = len(others)
        deadline = time.monotonic() + SWEEP_S
        while others and time.monotonic() < deadline:
            for pid in others:
                try:
                    posix.kill(pid, SIGKILL)  # safe: __init__ proved this is our own pid namespace
                except OSError:
                    pass
            _reap()
            others = [p for p in _pids() if p not in keep]
            if others:
                time.sleep(0.001)
                _reap()
                others = [p for p in _pids() if p not in keep]
        return count, not others


def _precompile(files: "dict[str, bytes]", req: "dict[str, Any]") -> "dict[str, Any]":
    """The harness request's code file (``file``) compiled by S for C: S compiles in a
    warm process, where C, a fresh fork, would pay a page fault for most of the memory the compiler
    touches (on a virtual machine, more than the compile itself). It is exactly what C would do
    (``harness._load``: the file's bytes, its name, no inherited flags), and only when it goes
    through cleanly: a file that is too large, does not compile or draws a warning (C must print
    it) is left to C, which then reports it as it always did. Compiling runs none of the code."""
    import warnings

    code: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for key in ("file",):  # never the check script: C forks the answer's process before it reads that
            name = req.get(key)
            if type(name) is not str:
                continue
            source = files.get(name)
            if type(source) is not bytes or len(source) > PRECOMPILE_BYTES:
                continue
            try:
                code[name] = compile(source, name, "exec", dont_inherit=True)
            except Exception:
                continue
    return code


def _wipe() -> bool:
    """Empty the writable places; False when something could not be removed."""
    ok = True
    for top in WRITABLE:
        try:
            names = posix.listdir(top)
        except OSError:
            continue
        for name in names:
            try:
                _remove(top + "/" + name)
            except (OSError, RecursionError):
                ok = False
    return ok


def _ipc_empty() -> bool:
    """No System V IPC object is left (they would outlive their run in this IPC namespace)."""
    for kind in ("shm", "sem", "msg"):
        try:
            fd = posix.open("/proc/sysvipc/" + kind, posix.O_RDONLY)
            try:
                if posix.read(fd, 1 << 16).count(b"\n") > 1:
                    return False
            finally:
                posix.close(fd)
        except OSError:
            pass
    return True


def _close(opened: "list[int]", fd: int) -> None:
    """Close ``fd`` and forget it in ``opened``."""
    if fd in opened:
        opened.remove(fd)
    try:
        posix.close(fd)
    except OSError:
        pass


def _kill(pid: int) -> None:
    try:
        posix.kill(pid, SIGKILL)
    except OSError:
        pass


def _close_fds_but(keep: "list[int]") -> None:
    """Close every descriptor from 3 up, except ``keep``."""
    low = 3
    for fd in sorted(f for f in keep if f >= 3):
        posix.closerange(low, fd)
        low = fd + 1
    posix.closerange(low, MAX_FDS)


def _remove(path: str) -> None:
    import stat

    st = posix.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        if st.st_mode & 0o700 != 0o700:
            posix.chmod(path, 0o700)
        for name in posix.listdir(path):
            _remove(path + "/" + name)
        posix.rmdir(path)
    else:
        posix.unlink(path)


def _quiet_stdio() -> None:
    null = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):
        posix.dup2(null, fd)
    posix.close(null)


WARM_UP = """\
def _warm(a, b=1, *rest, **named):
    total = [x * b for x in a if x] + list(rest)
    return {str(k): v for k, v in named.items()}, total, f"{a!r}"
_warm([1, 2], 3, 4, k=5)
class _Warm:
    pass
"""
"""Compiled and run once before the first fork: the first ``compile()`` in a process costs ~2 ms
of one-time initialisation, which every execution would otherwise pay again."""


def _preload(modules: "dict[str, bytes]") -> None:
    """Run each host-given module (``name -> MAGIC + marshal'd code``, e.g. the spade harness) once,
    as ``sys.modules[name]``, keeping its bytes as ``__spade_bin__`` (a job names it in ``warm`` when
    its program is exactly the runner's stub for it), and call its ``__spade_warm__()`` if any."""
    ext = sys.modules.get("_frozen_importlib_external")
    magic = getattr(ext, "MAGIC_NUMBER", None)
    for name, data in modules.items():
        if data[:4] != magic:
            continue
        module = type(sys)(name)
        module.__dict__["__builtins__"] = __builtins__
        module.__dict__["__spade_bin__"] = data
        exec(marshal.loads(data[4:]), module.__dict__)
        sys.modules[name] = module
        warm = module.__dict__.get("__spade_warm__")
        if callable(warm):
            warm()


def main(relayed: bool = False) -> None:
    """W: the worker (``relayed``: forked by docker's R, which is pid 1; else pid 1 itself, under bwrap)."""
    global _BASE_PATH, _prctl
    import _signal

    ctrl_fd, host_pidns = int(sys.argv[1]), sys.argv[2]
    _close_fds_but([ctrl_fd])
    worker = Worker(ctrl_fd, host_pidns, relayed)
    # no handler for SIGINT (Python's default one): as pid 1, a signal with a handler is the only kind a
    # program can send it, and its KeyboardInterrupt would end the sandbox (C restores it, see ``spawn``)
    _signal.signal(SIGINT, _signal.SIG_IGN)
    _BASE_PATH = [p for p in sys.path if p]
    try:  # while still dumpable (the file is ours): every process forked from us inherits it
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    _prctl = prctl = _load_prctl()
    # non-dumpable before any program exists: its memory, descriptors and /proc entries are closed to
    # them (and those of S, forked from it), the more so as pid 1
    if prctl is None or prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise SystemExit("spade worker: cannot make itself non-dumpable; refusing to run")
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    ctrl = Channel(ctrl_fd)
    msg, fds = ctrl.recv()  # the host's preload message comes first (it was sent before we started)
    for fd in fds:
        posix.close(fd)
    if msg is None:
        return
    preload = msg.get("op") == "preload"
    loaded = []
    for name in HARNESS_IMPORTS + (SOLUTION_IMPORTS if preload and msg.get("solution_imports", True) else ()):
        try:
            __import__(name)
            loaded.append(name)
        except Exception:
            pass
    if preload:
        _preload(msg.get("modules") or {})
    exec(compile(WARM_UP, "<warm-up>", "exec", dont_inherit=True), {"__name__": "__warm__"})
    vm_kb = 0
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    vm_kb = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    ready = {
        "op": "ready",
        "pid": worker.me,
        "pidns": worker.pidns,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "preloaded": len(loaded),
        "dumpable_off": prctl is not None,
        "vm_kb": vm_kb,
    }
    w_end, s_end = _socket_pair()
    gc.collect()
    gc.freeze()  # forked processes then do not copy pages just to update GC headers
    s_pid = posix.fork()
    if s_pid == 0:
        try:
            posix.close(w_end)
            Supervisor(ctrl, Channel(s_end)).serve(ready)
        finally:
            posix._exit(0)
    posix.close(s_end)
    ctrl.close()  # only S talks to the host from now on
    _quiet_stdio()
    worker.serve(Channel(w_end), s_pid)


# -- R: the relay, pid 1 of a docker container ------------------------------------------------------


CGROUP_COUNTERS = (
    # (OOM kills file, pids-limit hits file): cgroup v2 with its own namespace, then v1
    ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/pids.events"),
    ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/pids/pids.events"),
)
RELAY_CHUNK = 1 << 16
"""Largest piece of output or payload the relay holds at once (its memory counts against the program's)."""
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _counter(path: str, key: bytes) -> "int | None":
    try:
        fd = posix.open(path, posix.O_RDONLY)
        try:
            data = posix.read(fd, 4096)
        finally:
            posix.close(fd)
    except OSError:
        return None
    for line in data.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return None


def relay_frame(kind: bytes, data: bytes, counters: "tuple[int, int]" = (-1, -1)) -> bytes:
    """One relay -> host frame: a 4-byte big-endian length of the rest, the kind byte, the container
    cgroup's OOM kills and pids-limit hits (8 bytes each, signed; -1: not read), then the data."""
    body = kind + counters[0].to_bytes(8, "big", signed=True) + counters[1].to_bytes(8, "big", signed=True) + data
    return len(body).to_bytes(4, "big") + body


class Relay:
    """R: the only channel every docker engine gives a container (local, remote, Docker Desktop's VM) is
    its stdin and stdout, so R, the container's pid 1, carries W's and S's socket protocol over them.

    Host -> R (stdin): ``%010d\\n``-framed marshal dicts (the host is trusted): ``{"op": "ctrl",
    "data"}`` is a packet for the control socket (the preload message); ``{"op": "run", "job", "cap",
    "size"}`` is a job, followed on the stream by ``size`` raw bytes of payload (files, then the
    program's stdin). R makes the job's three pipes, hands them to S with the job packet, and streams
    the payload into the program's stdin a chunk at a time, reading more from the host only once the
    last chunk is in the pipe: what R holds counts against the program's memory limit, so R never holds
    more than ``RELAY_CHUNK``. Payload the program never read is discarded. EOF: R exits, and as pid 1
    takes the whole container with it.
    R -> host (stdout): ``relay_frame`` binary frames, never anything a program can shape beyond the
    data bytes: ``c`` a packet of S (empty: S is gone, and R leaves), ``o``/``e`` stdout/stderr up to
    one byte past the job's cap (the host sees the overflow; the rest is drained unread), ``O``/``E``
    their EOF. Control and EOF frames carry the container cgroup's counters.

    R is trusted like S: it sees each job's payload, so it is non-dumpable (nothing of the container
    can trace it or open its descriptors), and as pid 1 with no signal handler no process of the
    container can signal it.
    """

    def __init__(self, ctrl_fd: int) -> None:
        import select

        self.select = select
        self.ctrl = Channel(ctrl_fd)
        self.inbuf = bytearray()
        self.poller = select.poll()
        self.fds: dict[int, str] = {}
        self.pending = memoryview(b"")
        """Payload read from the host and not yet written to the program's stdin."""
        self.payload_left = 0
        """Payload bytes still to come from the host (written to stdin, or discarded once it is closed)."""
        self.left = {"out": 0, "err": 0}
        self.outq: list[bytes] = []
        self.paths = next((paths for paths in CGROUP_COUNTERS if _counter(paths[0], b"oom_kill") is not None), None)

    def counters(self) -> "tuple[int, int]":
        if self.paths is None:
            return (-1, -1)
        oom, hits = _counter(self.paths[0], b"oom_kill"), _counter(self.paths[1], b"max")
        return (-1 if oom is None else oom, -1 if hits is None else hits)

    def send_host(self, kind: bytes, data: bytes, counted: bool = False) -> None:
        """Queue a frame; ``flush`` writes the frames of one poll round at once (each write to the
        container's stdout is a message through the engine's attach stream, several hops to spade)."""
        self.outq.append(relay_frame(kind, data, self.counters() if counted else (-1, -1)))

    def flush(self) -> None:
        if self.outq:
            data = b"".join(self.outq)
            self.outq.clear()
            _write_all(1, data)

    def watch(self, fd: int, name: str, events: int) -> None:
        self.fds[fd] = name
        self.poller.register(fd, events)

    def drop(self, fd: int) -> None:
        if self.fds.pop(fd, None) is not None:
            self.poller.unregister(fd)
            posix.close(fd)

    def host_wanted(self) -> None:
        """Poll the host's stream unless a payload chunk is still waiting for the program's stdin."""
        self.poller.modify(0, self.select.POLLIN if not self.pending else 0)

    def end_job(self) -> None:
        for fd, name in list(self.fds.items()):
            if name in ("in", "out", "err"):
                self.drop(fd)
        self.pending = memoryview(b"")

    def start_job(self, msg: "dict[str, Any]") -> None:
        self.end_job()  # whatever is left of the last one is no longer wanted
        pin_r, pin_w = posix.pipe2(posix.O_CLOEXEC)
        out_r, out_w = posix.pipe2(posix.O_CLOEXEC)
        err_r, err_w = posix.pipe2(posix.O_CLOEXEC)
        try:
            self.ctrl.send(msg["job"], [pin_r, out_w, err_w])
        finally:
            for fd in (pin_r, out_w, err_w):
                posix.close(fd)
        for fd in (pin_w, out_r, err_r):
            posix.set_blocking(fd, False)
        self.payload_left = int(msg["size"])
        cap = int(msg["cap"]) + 1
        self.left = {"out": cap, "err": cap}
        self.watch(pin_w, "in", 0)
        self.watch(out_r, "out", self.select.POLLIN)
        self.watch(err_r, "err", self.select.POLLIN)
        if not self.payload_left:
            self.drop(pin_w)

    def stdin_fd(self) -> "int | None":
        return next((fd for fd, name in self.fds.items() if name == "in"), None)

    def from_host(self) -> bool:
        """Read the host's stream: payload bytes while a payload is due, frames otherwise; False at EOF."""
        want = min(self.payload_left, RELAY_CHUNK) if self.payload_left else RELAY_CHUNK
        chunk = posix.read(0, want)
        if not chunk:
            return False
        if self.payload_left:
            self.take_payload(chunk)
            return True
        self.inbuf += chunk
        while len(self.inbuf) >= 11 and not self.payload_left:
            size = int(self.inbuf[:11])
            if len(self.inbuf) < 11 + size:
                break
            msg = marshal.loads(bytes(self.inbuf[11 : 11 + size]))
            del self.inbuf[: 11 + size]
            if msg.get("op") == "ctrl":
                self.ctrl.send(msg["data"])
            elif msg.get("op") == "run":
                self.start_job(msg)
                # the payload follows its frame on the stream: the same read may have brought its start
                if self.inbuf and self.payload_left:
                    head = bytes(self.inbuf[: self.payload_left])
                    del self.inbuf[: len(head)]
                    self.take_payload(head)
        return True

    def take_payload(self, chunk: bytes) -> None:
        """Payload from the host: for the program's stdin, or discarded once that is closed."""
        self.payload_left -= len(chunk)
        pin = self.stdin_fd()
        if pin is not None:
            self.pending = memoryview(chunk)
            self.poller.modify(pin, self.select.POLLOUT)
            self.host_wanted()

    def to_stdin(self, fd: int) -> None:
        try:
            n = posix.write(fd, self.pending)
        except BlockingIOError:
            return
        except OSError:  # the program closed its stdin or is gone: the rest of the payload is discarded
            self.pending = memoryview(b"")
            self.drop(fd)
            self.host_wanted()
            return
        self.pending = self.pending[n:]
        if not self.pending:
            if self.payload_left:
                self.poller.modify(fd, 0)
            else:
                self.drop(fd)  # the whole payload is in: the program sees EOF after it
            self.host_wanted()

    def serve(self) -> None:
        self.watch(0, "host", self.select.POLLIN)
        self.watch(self.ctrl.fd, "ctrl", self.select.POLLIN)
        while True:
            self.flush()  # what the last round queued, before waiting for more
            try:
                events = self.poller.poll()
            except InterruptedError:
                continue
            for fd, revents in events:
                name = self.fds.get(fd)  # None: dropped by an earlier event of this batch
                if name == "host":
                    if not self.from_host():
                        return
                elif name == "ctrl":
                    try:
                        data = self.ctrl.sock.recv(MESSAGE_BYTES)
                    except OSError:
                        data = b""
                    self.send_host(b"c", data, counted=True)
                    if not data:
                        self.flush()
                        return  # S is gone: so is this container
                elif name == "in":
                    if revents & (self.select.POLLERR | self.select.POLLHUP):
                        # the program closed its stdin or is gone: the rest of the payload is discarded
                        self.pending = memoryview(b"")
                        self.drop(fd)
                        self.host_wanted()
                    elif self.pending:
                        self.to_stdin(fd)
                elif name is not None:
                    try:
                        chunk = posix.read(fd, RELAY_CHUNK)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        self.drop(fd)
                        # the counters with the run's last EOF: a harness run ends there for the host
                        last = not any(other in ("out", "err") for other in self.fds.values())
                        self.send_host(b"O" if name == "out" else b"E", b"", counted=last)
                    elif self.left[name] > 0:
                        chunk = chunk[: self.left[name]]
                        self.left[name] -= len(chunk)
                        self.send_host(b"o" if name == "out" else b"e", chunk)


def _load_seccomp(prctl: "Any", program: bytes) -> bool:
    """Install ``program`` (classic BPF, ``seccomp.program()``'s bytes) with libc's ``prctl`` on this
    process and all it will fork, through ``_ctypes``; False when it cannot be done here."""
    try:
        import _ctypes

        c: Any = _ctypes

        class _CChar(c._SimpleCData):  # type: ignore[misc]  # _ctypes has no stubs: its base classes are Any
            _type_ = "c"

        class _CULong(c._SimpleCData):  # type: ignore[misc]  # _ctypes has no stubs: its base classes are Any
            _type_ = "L"

        def buffer(data: bytes) -> "Any":
            class _Buf(c.Array):  # type: ignore[misc]  # _ctypes has no stubs: its base classes are Any
                _type_ = _CChar
                _length_ = len(data)

            return _Buf.from_buffer_copy(data)

        filters = buffer(program)
        ptr = 8 if sys.maxsize > 1 << 32 else 4
        # struct sock_fprog { unsigned short len; struct sock_filter *filter; }, the pointer aligned
        count = (len(program) // 8).to_bytes(2, sys.byteorder)
        fprog = buffer(count + bytes(ptr - 2) + c.addressof(filters).to_bytes(ptr, sys.byteorder))
        if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        installed: bool = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, _CULong(c.addressof(fprog)), 0, 0) == 0
        return installed
    except Exception:
        return False


def _machine() -> str:
    machine = posix.uname().machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def relay(host_pidns: str, keep_env: str, filters: str) -> None:
    """Pid 1 of a docker sandbox: its environment cut to ``keep_env`` (comma-separated names, what the host
    set), the seccomp filter of its machine from ``filters`` (``machine:hex,...``) installed, then W
    forked (pristine, before anything of the host is read) and the host's channel relayed."""
    import _signal

    def refuse(why: str) -> None:
        _write_all(2, ("spade relay: %s; refusing to run\n" % why).encode())
        posix._exit(1)

    if posix.getpid() != 1:
        # the sweeps of W spare pid 1, and only pid 1 cannot be signalled by the container's processes:
        # an init (--init, a daemon's "init": true) or an entrypoint in front of R would break both
        refuse("not pid 1 of the container (an init process or an entrypoint runs before it)")
    keep = set(keep_env.split(","))
    for name in list(posix.environ):
        if name.decode("utf-8", "surrogateescape") not in keep:  # HOSTNAME, the image's own ENV...
            posix.unsetenv(name)
            del posix.environ[name]
    prctl = _load_prctl()
    if prctl is None:
        refuse("cannot load prctl to make itself non-dumpable")
    machine = _machine()
    wanted = dict(item.split(":", 1) for item in filters.split(",") if ":" in item).get(machine)
    filtered = wanted is not None and _load_seccomp(prctl, bytes.fromhex(wanted))
    if wanted is not None and not filtered:
        refuse("cannot install its seccomp filter")
    r_sock, w_sock = _socket_pair()
    pid = posix.fork()
    if pid == 0:
        try:
            posix.close(r_sock)
            _quiet_stdio()  # the host's channel is R's alone
            sys.argv[1:] = [str(w_sock), host_pidns]
            main(relayed=True)
        finally:
            posix._exit(0)
    posix.close(w_sock)
    # only now: W set its own oom_score_adj while still dumpable. And no handler for SIGINT (Python's
    # default one): a signal with a handler reaches even pid 1, and its KeyboardInterrupt would end R
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _signal.signal(SIGINT, _signal.SIG_IGN)
    _write_all(1, relay_frame(b"h", _dumps({"op": "relay", "seccomp": filtered, "machine": machine})))
    Relay(r_sock).serve()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--relay"]:
        relay(*sys.argv[2:5])
    else:
        main()
