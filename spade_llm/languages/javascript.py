"""JavaScript answers, run by Node.js; ``node --check`` stands for a compile, so a syntax error reads as
one (once, naming its line) rather than as every test's failure."""

from __future__ import annotations

from .toolchain import Toolchain

NODEJS = Toolchain(
    name="nodejs",
    label="JavaScript (Node.js)",
    fence_tags=("javascript", "js", "node", "nodejs"),
    source_file="main.js",
    extensions=(".js", ".cjs"),
    compile=("/usr/bin/node", "--check", "{source}"),
    run=("/usr/bin/node", "--max-old-space-size={heap_mb}", "{source}"),
    artifacts=(),
    packages=("nodejs",),
    startup_cpu_s=0.2,
    address_space_mb=1536,
)
