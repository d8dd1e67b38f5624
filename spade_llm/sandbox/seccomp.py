"""A small seccomp deny-list for the bwrap sandbox, as the classic-BPF bytes ``bwrap --seccomp`` loads.

Namespaces and a non-root uid already take away what needs privileges; this closes what an
unprivileged process could still reach that no judged program needs, each for a reason:

* the kernel keyring (``keyctl``, ``add_key``, ``request_key``): a process inherits the session
  keyring of whoever started spade, and keys are shared by every sandbox of the same uid — a way
  to read the caller's keys and to pass data between executions;
* ``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd`` (another process's descriptors),
  ``process_madvise`` and ``kcmp``: no looking into or steering the harness or the worker (which are
  also non-dumpable: these are a second wall);
* ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``: large kernel attack surface;
* mount, namespace, module, kexec, swap, reboot, accounting and file-handle calls: need
  capabilities the sandbox has not got; denied outright so a capability leak would not do;
* any other ABI than the native one (the 32-bit ``int 0x80`` entry and x32 on x86_64 use other
  system call numbers, which would bypass the list).

Denied calls fail with ``EPERM``. Architectures without a table here get no filter (bwrap still
isolates); ``program()`` returns None for them.
"""

from __future__ import annotations

import platform
import struct

# struct sock_filter: u16 code, u8 jt, u8 jf, u32 k
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
_X32_BIT = 0x40000000

DENIED = (
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "process_madvise", "kcmp", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "mount",
    "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "setns", "unshare", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "swapon", "swapoff", "reboot", "acct", "syslog", "quotactl", "lookup_dcookie",
    "vhangup", "name_to_handle_at", "open_by_handle_at", "fanotify_init",
)  # fmt: skip

_X86_64 = {
    "ptrace": 101, "syslog": 103, "vhangup": 153, "pivot_root": 155, "acct": 163, "mount": 165, "umount2": 166,
    "swapon": 167, "swapoff": 168, "reboot": 169, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "lookup_dcookie": 212, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442,
}  # fmt: skip

_AARCH64 = {  # asm-generic numbering
    "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "vhangup": 58, "quotactl": 60, "acct": 89,
    "unshare": 97, "kexec_load": 104, "init_module": 105, "delete_module": 106, "syslog": 116, "ptrace": 117,
    "reboot": 142, "add_key": 217, "request_key": 218, "keyctl": 219, "swapon": 224, "swapoff": 225,
    "perf_event_open": 241, "fanotify_init": 262, "name_to_handle_at": 264, "open_by_handle_at": 265, "setns": 268,
    "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "finit_module": 273, "bpf": 280,
    "userfaultfd": 282,
    "kexec_file_load": 294, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442,
}  # fmt: skip

ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, _X86_64),
    "aarch64": (0xC00000B7, _AARCH64),
}
"""machine -> (AUDIT_ARCH_*, system call numbers)."""


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture (``platform.machine()``), or None if unknown."""
    machine = machine or platform.machine()
    if machine == "amd64":
        machine = "x86_64"
    if machine == "arm64":
        machine = "aarch64"
    if machine not in ARCHES:
        return None
    arch, table = ARCHES[machine]
    numbers = sorted({table[name] for name in DENIED if name in table})
    out = [
        _ins(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _ins(_JEQ_K, 1, 0, arch),
        _ins(_RET_K, 0, 0, _RET_EPERM),  # a foreign ABI: other numbers, deny everything
        _ins(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    n = len(numbers)
    if machine == "x86_64":  # x32 system calls carry the same arch with this bit set
        out.append(_ins(_JGE_K, n + 1, 0, _X32_BIT))
    for i, nr in enumerate(numbers):
        out.append(_ins(_JEQ_K, n - i, 0, nr))  # to the deny below the allow
    out.append(_ins(_RET_K, 0, 0, _RET_ALLOW))
    out.append(_ins(_RET_K, 0, 0, _RET_EPERM))
    return b"".join(out)
