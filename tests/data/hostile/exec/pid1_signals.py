# Stops, interrupts and kills the sandbox's pid 1 with every signal. Contained: pid 1 is not stopped and keeps serving.
# status-not: timeout
import os
import signal
import time

for sig in (
    signal.SIGSTOP,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGPIPE,
    signal.SIGSEGV,
    signal.SIGABRT,
    signal.SIGKILL,
):
    try:
        os.kill(1, sig)
    except OSError as e:
        print("denied", sig.name, type(e).__name__)
time.sleep(0.2)
with open("/proc/1/stat") as f:
    state = f.read().rsplit(")", 1)[1].split()[0]
if state in ("T", "t"):
    print("ESCAPE:stopped-pid-1", flush=True)
    os.kill(1, signal.SIGCONT)
print("pid 1 state", state)
