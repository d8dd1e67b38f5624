"""Rust answers: ``rustc -O`` (edition 2021, symbols stripped: a test run copies the binary in) into ``main``."""

from __future__ import annotations

from .toolchain import Toolchain

RUST = Toolchain(
    name="rust",
    label="Rust",
    fence_tags=("rust", "rs"),
    source_file="main.rs",
    extensions=(".rs",),
    compile=("/usr/bin/rustc", "--edition", "2021", "-O", "-C", "strip=symbols", "-o", "main", "{source}"),
    run=("./main",),
    artifacts=("main",),
    executables=("main",),
    packages=("rustc",),
)
