# Writes into the memory of the sandbox's pid 1 (what supervises every run). Contained: /proc/1/mem is closed to it.
# status-not: timeout
import os


def first_writable(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms.startswith("rw"):
                return int(span.split("-")[0], 16)
    return None


try:
    fd = os.open("/proc/1/mem", os.O_RDWR)
except OSError as e:
    print("denied /proc/1/mem", type(e).__name__)
else:
    print("ESCAPE:opened-/proc/1/mem-for-writing", flush=True)
    try:
        address = first_writable(1)
        old = os.pread(fd, 8, address)
        os.pwrite(fd, bytes(b ^ 0xFF for b in old), address)
        changed = os.pread(fd, 8, address)
        os.pwrite(fd, old, address)  # put it back: the point is made
        if changed != old:
            print("ESCAPE:wrote-pid-1-memory", hex(address), flush=True)
    except (OSError, TypeError) as e:
        print("could not write", type(e).__name__)
