"""Go answers: ``go build`` (module mode off, a cache in the scratch directory) into ``main``."""

from __future__ import annotations

from .toolchain import Toolchain

GO = Toolchain(
    name="go",
    label="Go",
    fence_tags=("go", "golang"),
    source_file="main.go",
    extensions=(".go",),
    compile=("/usr/bin/go", "build", "-o", "main", "{source}"),
    run=("./main",),
    artifacts=("main",),
    executables=("main",),
    packages=("golang-go",),
    address_space_mb=1024,
    env={"GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off", "CGO_ENABLED": "0", "GOMAXPROCS": "1"},
)
