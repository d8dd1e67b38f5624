# Reads the /proc entries of pid 1, its parent and every process of the sandbox not its own. Contained: all closed.
# status-not: timeout
import contextlib
import os

me = os.getpid()


def own(pid):
    while pid > 1:
        if pid == me:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            return False
    return False


others = sorted({1, os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit() and not own(int(p)))})
for pid in others:
    for entry in ("environ", "maps", "auxv", "syscall", "stack", "pagemap", "smaps", "io", "personality"):
        try:
            with open(f"/proc/{pid}/{entry}", "rb") as f:
                f.read(64)
            print(f"ESCAPE:read-/proc/{pid}/{entry}")
        except OSError:
            pass
    for entry in ("cwd", "root", "exe"):
        with contextlib.suppress(OSError):
            print(f"ESCAPE:/proc/{pid}/{entry}->{os.readlink(f'/proc/{pid}/{entry}')}")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        print(f"ESCAPE:listed-/proc/{pid}/fd:{','.join(fds)}")
    except OSError:
        pass
    for n in range(64):
        try:
            fd = os.open(f"/proc/{pid}/fd/{n}", os.O_RDONLY | os.O_NONBLOCK)
            print(f"ESCAPE:opened-/proc/{pid}/fd/{n}")
            os.close(fd)
        except OSError:
            pass
print("checked", len(others))
