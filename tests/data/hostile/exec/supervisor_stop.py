# Stops every process of the sandbox not its own (pid 1, its parent...). Contained: the run ends at its deadline.
# status-not: ok
import os
import signal
import time

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


for pid in sorted({1, os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit() and not own(int(p)))}):
    try:
        os.kill(pid, signal.SIGSTOP)
        print("stopped", pid, flush=True)
    except OSError as e:
        print("denied", pid, type(e).__name__)
time.sleep(60)
