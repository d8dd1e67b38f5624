"""Java answers: ``javac`` compiles the public class (``Main`` unless the answer names another) and
``java`` runs it, with a heap sized to the sandbox's memory and the JVM's start-up granted as CPU."""

from __future__ import annotations

from .toolchain import CLASS_NAME, Toolchain


def _main_class(code: str) -> str:
    found = CLASS_NAME.search(code)
    return found.group(1) if found else "Main"


# one GC thread and the C1 compiler only: a judged program is short, and a JVM's background threads
# would otherwise spend the CPU budget (every thread counts) before the answer's code does; its class
# space, code cache and metaspace capped so that its reservations fit an address-space limit
_JVM = (
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-XX:CompressedClassSpaceSize=64m",
    "-XX:ReservedCodeCacheSize=32m", "-XX:MaxMetaspaceSize=192m",
)  # fmt: skip

_JAVAC = ("/usr/bin/javac", "-J-Xmx384m", *(f"-J{flag}" for flag in _JVM), "-encoding", "UTF-8", "-nowarn", "{source}")

JAVA = Toolchain(
    name="java",
    label="Java 17",
    fence_tags=("java",),
    source_file="Main.java",
    extensions=(".java",),
    source_name=lambda code: _main_class(code) + ".java",
    main_name=_main_class,
    compile=_JAVAC,
    run=("/usr/bin/java", "-Xmx{heap_mb}m", "-Xss16m", *_JVM, "-cp", ".", "{main}"),
    artifacts=("*.class",),
    packages=("default-jdk-headless",),
    host_paths=("/etc/java-*-openjdk",),
    env={"MALLOC_ARENA_MAX": "2"},  # glibc's 64 MiB arena per JVM thread would not fit an address-space limit
    startup_cpu_s=1.0,
    address_space_mb=1024,
)
