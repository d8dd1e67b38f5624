"""What the backends share (``sandbox/common.py``): here, the shipped programs' bytecode, compiled once
per user and kept in the user's cache."""

from __future__ import annotations

import builtins
import marshal
import types
from importlib.util import MAGIC_NUMBER
from typing import Any

import pytest

from spade_llm._util.cache import cache_dir
from spade_llm.sandbox import common


def test_a_shipped_program_is_compiled_once_per_user_and_again_when_its_entry_is_damaged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[str] = []

    def counted(source: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(name)
        return builtins.compile(source, name, *args, **kwargs)

    monkeypatch.setattr(common, "compile", counted, raising=False)
    first = fresh("forkserver.py")
    assert compiled == ["forkserver.py"]
    assert first[:4] == MAGIC_NUMBER
    assert isinstance(marshal.loads(first[4:]), types.CodeType)

    assert fresh("forkserver.py") == first  # a later process: read, not compiled
    assert compiled == ["forkserver.py"]

    (entry,) = (cache_dir() / common.BYTECODE_CACHE).iterdir()
    entry.write_bytes(first[: len(first) // 2])  # damaged: never shipped, compiled again and replaced
    assert fresh("forkserver.py") == first
    assert compiled == ["forkserver.py", "forkserver.py"]
    assert entry.read_bytes() == first

    fresh("launcher.py")  # another program, another entry
    assert compiled == ["forkserver.py", "forkserver.py", "launcher.py"]


def fresh(name: str) -> bytes:
    """``shipped_code(name)`` as a new process would find it (not this one's memory)."""
    common.shipped_code.cache_clear()
    return common.shipped_code(name)
