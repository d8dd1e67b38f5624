"""The root-only launcher between spade and ``bwrap``: cgroups, a private view of the interpreter, uid drop.

Run as ``python -I -S -c SOURCE CONFIG_JSON BWRAP ARGS...`` by a root parent, it

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
4. ``exec``s bwrap with an empty environment (bwrap's pid-1 helper would otherwise keep the
   caller's environment readable at ``/proc/1/environ``).

Any failure is one line on stderr and exit status 111, before bwrap runs.
Standard library only (``ctypes`` only when a mount namespace is needed).
"""

import json
import os
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


def _fail(what: str, err: BaseException) -> None:
    sys.stderr.write(f"spade launcher: {what}: {err}\n")
    sys.stderr.flush()
    os._exit(111)


def _shadow(plan: "list[list[object]]") -> None:
    """For each ``[top, [source, ...]]``: hide ``top`` behind a tmpfs that holds only the sources."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    for top, sources in plan:
        assert isinstance(top, str) and isinstance(sources, list)
        # open the sources in the new namespace (a bind from another namespace's mount is EINVAL),
        # before the tmpfs hides them
        opened = [(src, os.open(src, os.O_PATH | os.O_CLOEXEC), os.path.isdir(src)) for src in sources]
        flags = MS_NOSUID | MS_NODEV
        check(libc.mount(b"spade", top.encode(), b"tmpfs", flags, b"mode=755,size=1m"), f"tmpfs on {top}")
        for src, fd, is_dir in opened:
            if is_dir:
                os.makedirs(src, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(src), 0o755, exist_ok=True)
                with open(src, "a"):
                    pass
            check(libc.mount(f"/proc/self/fd/{fd}".encode(), src.encode(), None, MS_BIND | MS_REC, None), f"bind {src}")
            os.close(fd)


def main() -> None:
    config = json.loads(sys.argv[1])
    argv = sys.argv[2:]
    pid = str(os.getpid())
    for path in config.get("cgroup_procs", []):
        try:
            with open(path, "w") as f:
                f.write(pid)
        except OSError as e:
            _fail(f"joining cgroup {path}", e)
    if config.get("shadow"):
        try:
            _shadow(config["shadow"])
        except (OSError, AssertionError) as e:
            _fail("private view of the interpreter", e)
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


if __name__ == "__main__":
    main()
