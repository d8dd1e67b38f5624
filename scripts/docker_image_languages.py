"""The answer languages' toolchains in the docker sandbox's image (scripts/docker_image.sh runs this).

    docker_image_languages.py files LIST [NAMES]        which files to copy (relative paths, one per line
                                                        in LIST); prints the toolchains included
    docker_image_languages.py verify TAG NAMES          compile and run each one's hello-world in TAG,
                                                        the way the docker sandbox runs a container

A toolchain (spade_llm.languages.TOOLCHAINS) goes in when its commands are on this machine: the Debian
packages that own them and their toolchain's ``packages`` that are installed, then every installed package
they depend on (``Depends``, ``Pre-Depends``, virtual names through ``Provides``), less the Essential ones
and the system Python (a base system's, not a compiler's: the image has its own interpreter), less
what no compile or run reads (documentation, headers of Node's native addons, the JDK's jmods, Go's own
commands' packages and test trees). The /etc/alternatives links that lead to what is copied come along,
so /usr/bin/java works as well as the real path behind it. NAMES (comma-separated) picks some; the
default is every toolchain found.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spade_llm.languages import TOOLCHAINS
from spade_llm.languages.available import GREETING, HELLO, install_hint

LEFT_OUT = (
    "/usr/share/doc/*",
    "/usr/share/man/*",
    "/usr/share/info/*",
    "/usr/share/locale/*",
    "/usr/share/lintian/*",
    "/usr/share/bug/*",
    "/usr/share/bash-completion/*",
    "/usr/share/zsh/*",
    "/usr/include/node/*",  # headers for native addons: no answer builds one
    "/usr/lib/node_modules/*",  # npm and corepack: no answer installs packages
    "/usr/lib/jvm/*/jmods/*",  # jlink's input; javac and java read lib/modules
    "/usr/lib/go-*/pkg/*/cmd/*",  # the Go commands' own packages, to rebuild the toolchain itself
    "/usr/share/go-*/test/*",
    "/usr/share/go-*/misc/*",
    "*/testdata/*",
    "/usr/bin/*lto-dump*",  # a GCC debugging tool (-flto runs lto1, not this)
)
NOT_COPIED = re.compile(r"^(python3(\.\d+)?(-minimal)?|libpython3(\.\d+)?(-minimal|-stdlib)?|debconf)$")
"""The system Python (Node's Debian package depends on it for node-gyp) and debconf (maintainer scripts'
prompts): what a base system has, not what a compile or run uses."""


def _installed() -> tuple[dict[str, tuple[bool, str]], dict[str, list[str]]]:
    """Every installed package: (Essential, its dependencies' field text); and the packages providing
    each virtual name."""
    fields = r"${Package}\t${db:Status-Abbrev}\t${Essential}\t${Depends}, ${Pre-Depends}\t${Provides}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fields], capture_output=True, text=True, check=True).stdout
    found: dict[str, tuple[bool, str]] = {}
    provides: dict[str, list[str]] = {}
    for line in out.splitlines():
        name, status, essential, depends, provided = (line.split("\t") + [""] * 5)[:5]
        if not status.startswith("ii"):
            continue
        found[name] = (essential == "yes", depends)
        for virtual in provided.split(","):
            if virtual.strip():
                provides.setdefault(_bare(virtual), []).append(name)
    return found, provides


def _bare(item: str) -> str:
    """A dependency's package name, without its version and architecture (``libc6:amd64 (>= 2.34)``)."""
    return item.split("(")[0].strip().split(":")[0]


def closure(seeds: list[str], installed: dict[str, tuple[bool, str]], provides: dict[str, list[str]]) -> list[str]:
    """``seeds`` and every installed package they depend on, directly or not, less the ones not copied."""
    seen: set[str] = set()
    queue = [s for s in seeds if s in installed]
    while queue:
        name = queue.pop()
        if name in seen or NOT_COPIED.match(name) or installed[name][0]:
            continue
        seen.add(name)
        for clause in installed[name][1].split(","):
            for option in clause.split("|"):  # the first alternative installed here
                bare = _bare(option)
                if not bare:
                    continue
                candidates = [bare] if bare in installed else provides.get(bare, [])
                if candidates:
                    queue.extend(candidates)
                    break
    return sorted(seen)


def owner(path: str) -> list[str]:
    done = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
    return [p.split(":")[0].strip() for p in done.stdout.split(": ")[0].split(",")] if done.returncode == 0 else []


def _normal(path: str) -> str:
    """``path`` through its directory's links (/lib -> usr/lib on a merged /usr): one entry per file."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def files(listing: str, names: str) -> int:
    wanted = [n for n in names.split(",") if n] or list(TOOLCHAINS)
    unknown = [n for n in wanted if n not in TOOLCHAINS]
    if unknown:
        print(f"unknown toolchains {unknown}; known: {', '.join(TOOLCHAINS)}", file=sys.stderr)
        return 2
    installed, provides = _installed()
    seeds: list[str] = []
    included: list[str] = []
    chains: list[str] = []
    for name in wanted:
        toolchain = TOOLCHAINS[name]
        if not toolchain.packages:
            continue  # the image's own interpreter (Python)
        missing = toolchain.missing()
        if missing:
            print(f"  {name}: left out, {' '.join(missing)} not here ({install_hint(toolchain)})", file=sys.stderr)
            continue
        included.append(name)
        seeds += [p for p in toolchain.packages if p in installed]
        for command in toolchain.commands():
            seeds += owner(os.path.realpath(command))
            chains.append(command)
    packages = closure(seeds, installed, provides)
    listed = subprocess.run(["dpkg", "-L", *packages], capture_output=True, text=True, check=False).stdout
    paths: set[str] = set()
    for path in listed.splitlines():
        # the top's links (/lib -> usr/lib) are the image's own, made as this machine's are
        if not path.startswith("/") or path.count("/") == 1 or any(fnmatch.fnmatch(path, p) for p in LEFT_OUT):
            continue
        if os.path.islink(path) or os.path.isfile(path):
            paths.add(_normal(path))
    # the alternatives' links (made by maintainer scripts, so in no package's list) to what is copied:
    # /usr/bin/java -> /etc/alternatives/java -> /usr/lib/jvm/.../bin/java, and rustc's linker, cc
    for folder in ("/usr/bin", "/usr/sbin"):
        for entry in os.scandir(folder):
            into = entry.is_symlink() and os.readlink(entry.path).startswith("/etc/alternatives/")
            if into and _normal(os.path.realpath(entry.path)) in paths:
                chains.append(entry.path)
    for command in chains:  # every link on the way from a command's name to its file
        link = command
        while os.path.islink(link):
            paths.add(_normal(link))
            target = os.readlink(link)
            link = target if os.path.isabs(target) else os.path.join(os.path.dirname(link), target)
    with open(listing, "w", encoding="utf-8") as out:
        out.writelines(p.lstrip("/") + "\n" for p in sorted(paths))
    size = sum(os.lstat(p).st_size for p in paths)
    print(f"  toolchains {','.join(included) or 'none'}: {len(packages)} packages, {len(paths)} files, "
          f"{size / 1e6:.0f} MB", file=sys.stderr)  # fmt: skip
    print(",".join(included))
    return 0


def verify(tag: str, names: str) -> int:
    """Each toolchain's hello-world, compiled and run by its own commands in a container run as the docker
    backend runs one: read-only root, no network, user nobody, /tmp an executable tmpfs, memory capped."""
    failed = 0
    for name in [n for n in names.split(",") if n]:
        toolchain, code = TOOLCHAINS[name], HELLO[name]
        steps = [toolchain.argv(toolchain.compile, code)] if toolchain.compile else []
        steps.append(toolchain.argv(toolchain.run, code))
        env = {"HOME": "/tmp/w", "TMPDIR": "/tmp/w", **toolchain.env}
        script = f"mkdir /tmp/w && cd /tmp/w && cat > {shlex.quote(toolchain.source_for(code))} && " + " && ".join(
            shlex.join(step) for step in steps
        )
        argv = ["docker", "run", "--rm", "-i", "--network", "none", "--read-only", "--user", "65534:65534",
                "--tmpfs", "/tmp:rw,exec,nosuid,nodev,size=512m,mode=1777", "--memory", "1024m",
                "--memory-swap", "1024m", "--pids-limit", "256", "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--workdir", "/tmp"]  # fmt: skip
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        start = time.monotonic()
        done = subprocess.run(
            [*argv, tag, "sh", "-c", script], input=code, capture_output=True, text=True, timeout=300, check=False
        )
        took = time.monotonic() - start
        if done.returncode == 0 and done.stdout.strip() == GREETING:
            print(f"  {name}: hello-world compiled and ran in {took:.1f} s")
        else:
            failed += 1
            error = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            print(f"  {name}: FAILED (exit {done.returncode}): {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) in (2, 3) and args[0] == "files":
        raise SystemExit(files(args[1], args[2] if len(args) > 2 else ""))
    if len(args) == 3 and args[0] == "verify":
        raise SystemExit(verify(args[1], args[2]))
    print(__doc__, file=sys.stderr)
    raise SystemExit(2)
