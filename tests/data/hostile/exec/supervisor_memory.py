# Writes into the memory of its parent and of every other process of the sandbox not its own. Contained: none opens.
# status-not: timeout
import os

me = os.getpid()


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def own(pid):  # itself or one of its descendants
    while pid > 1:
        if pid == me:
            return True
        try:
            pid = parent(pid)
        except (OSError, ValueError):
            return False
    return False


targets = [os.getppid()] + [int(p) for p in os.listdir("/proc") if p.isdigit() and not own(int(p))]
for pid in dict.fromkeys(targets):
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDWR)
    except OSError as e:
        print("denied", pid, type(e).__name__)
        continue
    print(f"ESCAPE:opened-/proc/{pid}/mem-for-writing", flush=True)
    try:
        with open(f"/proc/{pid}/maps") as f:
            address = next(int(row.split("-")[0], 16) for row in f if row.split()[1].startswith("rw"))
        old = os.pread(fd, 8, address)
        os.pwrite(fd, bytes(b ^ 0xFF for b in old), address)
        changed = os.pread(fd, 8, address)
        os.pwrite(fd, old, address)
        if changed != old:
            print(f"ESCAPE:wrote-memory-of-{pid}", flush=True)
    except (OSError, StopIteration) as e:
        print("could not write", pid, type(e).__name__)
    os.close(fd)
