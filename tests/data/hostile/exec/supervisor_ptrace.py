# ptrace, process_vm_*, kcmp and pidfd_getfd on pid 1 and its parent. Contained: every one refused.
# status-not: timeout
import ctypes
import os
import platform

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.ptrace.restype = ctypes.c_long
NR = {
    "x86_64": {"process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438},
    "aarch64": {"process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438},
}
nr = NR.get(platform.machine(), {})


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


buf = ctypes.create_string_buffer(8)
for pid in dict.fromkeys([1, os.getppid()]):
    for request, name in ((16, "attach"), (0x4206, "seize")):  # PTRACE_ATTACH, PTRACE_SEIZE
        if libc.ptrace(request, pid, None, None) == 0:
            print(f"ESCAPE:ptrace-{name}-{pid}", flush=True)
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    try:
        with open("/proc/self/maps") as f:  # an address surely mapped in a forked python: try its own
            address = int(f.readline().split("-")[0], 16)
    except OSError:
        address = 0x400000
    local = IOVec(ctypes.cast(buf, ctypes.c_void_p), 8)
    remote = IOVec(address, 8)
    for call in ("process_vm_readv", "process_vm_writev"):
        if call in nr and libc.syscall(nr[call], pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0:
            print(f"ESCAPE:{call}-{pid}", flush=True)
    if "kcmp" in nr and libc.syscall(nr["kcmp"], os.getpid(), pid, 0, 0, 0) >= 0:  # KCMP_FILE
        print(f"ESCAPE:kcmp-{pid}", flush=True)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        continue
    for n in range(64):
        if "pidfd_getfd" in nr and libc.syscall(nr["pidfd_getfd"], pidfd, n, 0) >= 0:
            print(f"ESCAPE:took-descriptor-{n}-of-{pid}", flush=True)
    os.close(pidfd)
print("done")
