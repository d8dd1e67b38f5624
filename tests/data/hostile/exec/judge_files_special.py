# Puts FIFOs, sockets and links where the judge keeps its files. Contained: runs end normally, no judge fooled.
# status-not: timeout
import contextlib
import os
import socket

NAMES = ("check.py", "solution.py", "harness.py", "harness.bin", "main.py", "program.py", "_spade_code.py")
made = 0
for folder in (".", "/tmp", "/dev/shm"):
    for i, name in enumerate(NAMES):
        path = os.path.join(folder, name)
        try:
            if os.path.lexists(path):
                os.unlink(path)
            kind = i % 3
            if kind == 0:
                os.mkfifo(path)
            elif kind == 1:
                s = socket.socket(socket.AF_UNIX)
                s.bind(path)
            else:
                os.symlink("/dev/zero", path)
            made += 1
        except OSError as e:
            print("could not make", path, type(e).__name__)
    for i in range(3):  # and each kind under every name of the next runs' scratch folders it can guess
        with contextlib.suppress(OSError):
            os.mkfifo(os.path.join(folder, f"spade-{i:016x}"))
print("made", made)
