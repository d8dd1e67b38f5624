# ruff: noqa: SIM105
"""The launcher between spade and ``bwrap``: the sandbox's watchdog; as root also cgroups, a private
view of the interpreter and the uid drop.

Run as ``python -I -S -c SOURCE CONFIG BWRAP ARGS...`` by spade, root or not (``CONFIG``: a dict,
``marshal``'d and hex-encoded: ``json`` would cost this process more than the rest of its start), with
``CONFIG["lifeline"]`` the read end of a pipe whose write end only that spade process holds
(close-on-exec: nothing it starts inherits it), and ``CONFIG["spade"]`` that process's pid (for
whoever reads ``ps``). It first waits for spade's go-ahead, one byte on the lifeline: spade makes the
worker's cgroups (named in ``CONFIG["cgroup_procs"]``) only once this process runs, then sends ``1``
(made: join them) or ``0`` (not made); at EOF instead, spade died meanwhile, and this process removes
whatever of them was made and exits. Then it forks. The child

1. writes its own pid into the worker's cgroups (``cgroup.procs`` of each controller), so bwrap and
   everything in the sandbox are born inside them — no race with an already running process, and
   no ``preexec_fn`` in the (threaded) parent;
2. when the interpreter lives under a directory the sandbox uid cannot enter (``/root/.pyenv``,
   ``/root/miniconda3``...), makes a private mount namespace in which that directory is replaced by
   a tmpfs holding bind mounts of just the paths the sandbox needs, so the unprivileged bwrap can
   bind them (bwrap resolves its sources as the calling user) while the rest of the directory —
   the user's home — stays out of reach;
3. drops to the unprivileged host uid/gid (no supplementary groups), so a process that escaped
   the sandbox is not host root, and
4. ``exec``s bwrap with an empty environment (the sandbox's pid 1, which bwrap starts with its own
   environment plus ``--setenv``, would otherwise carry the caller's).

Steps 1-3 only when ``CONFIG`` asks for them (spade runs as root). Any failure there is one line on
stderr and exit status 111, before bwrap runs.

The parent stays, as the sandbox's *watchdog*: nothing of the sandbox may outlive the spade
process that started it, at any moment, even when that process is SIGKILLed. bwrap's
``--die-with-parent`` alone does not do that: bwrap sets it only after it cloned the sandbox's pid 1,
and that pid 1 sets its own only after setting up the sandbox, meanwhile waiting on an eventfd
for bwrap to write its uid map; if bwrap dies first (with its parent, or of ``SIGPIPE`` writing
``--info-fd`` to a spade that is gone), that pid 1 waits for ever. So the watchdog

* is a child subreaper: when bwrap dies, the sandbox's pid 1 becomes its child, not init's;
* waits for EOF on the lifeline (the spade process ended, however it ended, or retired the
  worker by closing its end) or for bwrap to exit;
* then SIGKILLs every child it has until it has none: bwrap, and the sandbox's pid 1, whose death
  kills every process of the sandbox's pid namespace (the kernel does that); after a lifeline EOF,
  as root, it also removes the worker's (now empty) cgroups; and exits with bwrap's status.

The watchdog holds no descriptor but the lifeline and stdio (in particular none of the worker's
control socket, whose EOF tells spade that the worker died), runs nothing it was sent, and is not
in the worker's cgroups. Standard library only, and only built-in or C modules besides ``os``
(``json``, ``signal`` and ``ctypes`` cost a fresh interpreter more than its own start): every worker
pays for this process's start.
"""

import _signal as signal
import marshal
import os
import select
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if __package__:  # imported from the package (tests); shipped, libc.py's source stands above this program
    from .libc import libc_function

CLONE_NEWNS = 0x00020000
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_CHILD_SUBREAPER = 36
MAX_FDS = 1 << 16
CGROUP_RMDIR_S = 2.0


def _fail(what: str, err: BaseException) -> None:
    sys.stderr.write(f"spade launcher: {what}: {err}\n")
    sys.stderr.flush()
    os._exit(111)


def _shadow(plan: "list[list[object]]") -> None:
    """For each ``[top, [source, ...]]``: hide ``top`` behind a tmpfs that holds only the sources."""
    import _ctypes

    unshare, mount = libc_function("unshare"), libc_function("mount")

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = _ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    check(unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    for top, sources in plan:
        assert isinstance(top, str) and isinstance(sources, list)
        # open the sources in the new namespace (a bind from another namespace's mount is EINVAL),
        # before the tmpfs hides them
        opened = [(src, os.open(src, os.O_PATH | os.O_CLOEXEC), os.path.isdir(src)) for src in sources]
        flags = MS_NOSUID | MS_NODEV
        check(mount(b"spade", top.encode(), b"tmpfs", flags, b"mode=755,size=1m"), f"tmpfs on {top}")
        for src, fd, is_dir in opened:
            if is_dir:
                os.makedirs(src, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(src), 0o755, exist_ok=True)
                with open(src, "a"):
                    pass
            check(mount(f"/proc/self/fd/{fd}".encode(), src.encode(), None, MS_BIND | MS_REC, None), f"bind {src}")
            os.close(fd)


def _launch(config: "dict[str, Any]", argv: "list[str]") -> None:
    """The child: cgroups, private view, uid drop (as configured), then exec bwrap. Never returns."""
    # what subprocess.Popen restores for the programs it starts (Python ignores these itself)
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    pid = str(os.getpid())
    for path in config.get("cgroup_procs") or []:
        try:
            with open(path, "w") as f:
                f.write(pid)
        except OSError as e:
            _fail(f"joining cgroup {path}", e)
    shadow = config.get("shadow")
    if shadow:
        try:
            _shadow(shadow)
        except (OSError, AssertionError) as e:
            _fail("private view of the interpreter", e)
    if config.get("uid") is not None:
        uid, gid = int(config["uid"]), int(config["gid"])
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as e:
            _fail(f"dropping to uid {uid}", e)
        if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid or os.getgroups():
            _fail("dropping privileges", RuntimeError("credentials did not change"))
    try:
        os.execve(argv[0], argv, {})
    except OSError as e:
        _fail(f"exec {argv[0]}", e)


def _subreaper() -> bool:
    """Become a child subreaper (libc's prctl)."""
    try:
        return int(libc_function("prctl")(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except Exception:
        return False


def _children() -> "list[int]":
    """Our children (with the subreaper flag: also whatever of bwrap's was orphaned)."""
    me = os.getpid()
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children") as f:
                kids += [int(p) for p in f.read().split()]
        return kids
    except (OSError, ValueError):
        pass
    for name in os.listdir("/proc"):  # no children files (an old kernel): read every parent pid
        try:
            with open(f"/proc/{name}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                    kids.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return kids


def _grandchildren(pid: int) -> "list[int]":
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def _end_all(bwrap: int, reaper: bool) -> int:
    """SIGKILL our children (bwrap, the sandbox's pid 1) until none is left; bwrap's wait status."""
    status = 0
    while True:
        for pid in _children():
            if not reaper:  # its pid 1 would go to init when bwrap dies: kill it first, while bwrap lives
                for grandchild in _grandchildren(pid):
                    try:
                        os.kill(grandchild, signal.SIGKILL)
                    except OSError:
                        pass
            try:
                os.kill(pid, signal.SIGKILL)  # a child, not yet reaped: its pid is not anyone else's
            except OSError:
                pass
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        except InterruptedError:
            continue
        if pid == bwrap:
            status = st


def _remove_cgroups(procs: "list[str]") -> None:
    dirs = {os.path.dirname(p) for p in procs}
    deadline = time.monotonic() + CGROUP_RMDIR_S
    while dirs and time.monotonic() < deadline:
        for d in list(dirs):
            try:
                os.rmdir(d)
                dirs.discard(d)
            except FileNotFoundError:
                dirs.discard(d)
            except OSError:
                pass
        if dirs:
            time.sleep(0.01)


def _watch(lifeline: int, bwrap: int) -> bool:
    """Until the lifeline reaches EOF (True) or bwrap exits (False)."""
    pidfd = -1
    try:
        pidfd = os.pidfd_open(bwrap)
    except (AttributeError, OSError):
        pass
    poller = select.poll()
    poller.register(lifeline, select.POLLIN)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
    while True:
        try:
            events = poller.poll(None if pidfd >= 0 else 250)
        except InterruptedError:
            continue
        for fd, _ in events:
            if fd == lifeline:
                try:
                    data = os.read(lifeline, 64)
                except OSError:
                    data = b""
                if not data:
                    return True
        if pidfd >= 0:
            if any(fd == pidfd for fd, _ in events):
                return False
        elif os.waitid(os.P_PID, bwrap, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return False


def _go_ahead(lifeline: int) -> bytes:
    """spade's first byte on the lifeline, sent once it made (b"1") or failed to make (b"0") the cgroup
    it planned for us; b"" when it died first."""
    while True:
        try:
            return os.read(lifeline, 1)
        except InterruptedError:
            continue
        except OSError:
            return b""


def main() -> None:
    config = marshal.loads(bytes.fromhex(sys.argv[1]))
    argv = sys.argv[2:]
    lifeline = int(config["lifeline"])
    os.set_inheritable(lifeline, False)
    reaper = _subreaper()  # before the fork: bwrap's orphans must never reach init
    procs = config.get("cgroup_procs") or []
    go = _go_ahead(lifeline)
    if not go:  # spade died while it was making our cgroup: remove what it made
        _remove_cgroups(procs)
        os._exit(0)
    if go != b"1":  # it could not make the cgroup: the worker relies on rlimits
        config["cgroup_procs"] = []
    bwrap = os.fork()
    if bwrap == 0:
        try:
            os.close(lifeline)
            _launch(config, argv)
        except BaseException as e:
            _fail("starting bwrap", e)
        finally:
            os._exit(111)
    # the watchdog keeps only stdio and the lifeline: the worker's sockets and pipes are bwrap's
    os.closerange(3, lifeline)
    os.closerange(lifeline + 1, MAX_FDS)
    orphaned = _watch(lifeline, bwrap)
    status = _end_all(bwrap, reaper)
    if orphaned:
        if procs:
            _remove_cgroups(procs)
        os._exit(0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
