"""Which answer languages work on this machine: each toolchain's commands found or missing, its compiler's
version, and a hello-world program to try it with in a sandbox.

``spade exec --list-languages`` prints these; ``scripts/docker_image.sh`` compiles and runs the hello-worlds
in the image it builds. Light on purpose (no model client, no sandbox): ``spade exec`` starts fast.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Final

from .toolchain import Toolchain

__all__ = ["GREETING", "HELLO", "HostCheck", "host_check", "install_hint"]

GREETING: Final = "hello from spade"
"""What every hello-world prints (one line)."""

HELLO: Final[dict[str, str]] = {
    "python": f'print("{GREETING}")\n',
    "cpp": f'#include <iostream>\nint main() {{ std::cout << "{GREETING}" << std::endl; return 0; }}\n',
    "java": "public class Main {\n  public static void main(String[] args) {\n"
    f'    System.out.println("{GREETING}");\n  }}\n}}\n',
    "nodejs": f'console.log("{GREETING}");\n',
    "go": f'package main\n\nimport "fmt"\n\nfunc main() {{\n\tfmt.Println("{GREETING}")\n}}\n',
    "rust": f'fn main() {{\n    println!("{GREETING}");\n}}\n',
}
"""A program per toolchain name (``TOOLCHAINS``) that prints :data:`GREETING`: the smallest proof that a
toolchain compiles and runs an answer."""

VERSION_TIMEOUT_S: Final = 20.0
"""A JVM's or Go's first ``--version`` on a cold disk takes seconds; a hung one must not hang the listing."""


def install_hint(toolchain: Toolchain) -> str:
    """The command that installs ``toolchain`` on Debian or Ubuntu (empty when no package provides it)."""
    return f"apt-get install {' '.join(toolchain.packages)}" if toolchain.packages else ""


@dataclass(frozen=True)
class HostCheck:
    """One toolchain as found on this machine."""

    toolchain: Toolchain
    missing: tuple[str, ...]
    """Its commands not found (``Toolchain.missing``)."""
    version: str | None
    """The first line its compiler (or interpreter) prints for ``--version``; None when it printed none."""

    @property
    def ok(self) -> bool:
        return not self.missing

    @property
    def found(self) -> tuple[str, ...]:
        return tuple(c for c in dict.fromkeys(self.toolchain.commands()) if c not in self.missing)


def host_check(toolchain: Toolchain) -> HostCheck:
    """Whether ``toolchain``'s commands are on this machine, and its version when they are."""
    missing = tuple(dict.fromkeys(toolchain.missing()))
    commands = toolchain.commands()
    version = None if missing or not commands else _version(commands[0])
    return HostCheck(toolchain, missing, version)


def _version(command: str) -> str | None:
    # `--version` is every compiler's and interpreter's spelling but Go's (`go version`)
    for argv in ([command, "--version"], [command, "version"]):
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, errors="replace", timeout=VERSION_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode == 0:
            lines = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
            return lines[0] if lines else None
    return None
