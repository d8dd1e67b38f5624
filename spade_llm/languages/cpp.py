"""C++ answers: compiled once by g++ (C++17, -O2) into ``main``, which each test runs."""

from __future__ import annotations

from .toolchain import Toolchain

CPP = Toolchain(
    name="cpp",
    label="C++17",
    fence_tags=("cpp", "c++", "cc", "cxx"),
    source_file="main.cpp",
    extensions=(".cpp", ".cc", ".cxx", ".c++"),
    compile=("/usr/bin/g++", "-std=c++17", "-O2", "-pipe", "-o", "main", "{source}"),
    run=("./main",),
    artifacts=("main",),
    executables=("main",),
    packages=("g++",),
)
