"""Tests published compressed: base64 of zlib of a pickle (LiveCodeBench's ``private_test_cases``, a
pickled JSON string; SandboxFusion's LiveCodeBench ``test``, a pickled dict of strings), decoded
without unpickling any object.

A pickle is a program for a small stack machine, and the instructions that run code all reach it the
same way: an opcode that names a Python object (``GLOBAL``, ``STACK_GLOBAL``, ``INST``, ``OBJ``, the
extension codes) makes the unpickler call ``find_class``, and only an object found so can then be
called (``REDUCE``, ``NEWOBJ``) or handed state (``BUILD``). ``find_class`` here refuses every name, and
``persistent_load`` every persistent id, so what can be built is only what the opcodes build by
themselves: strings, bytes, numbers, ``None``, booleans, lists, tuples, dicts, sets. A payload that
names anything (``os.system``, ``builtins.eval``) stops with an error before it is called. The
decompressed size is capped before unpickling (``MAX_UNPACKED_BYTES``), so a small field cannot
expand into all of memory.
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
import zlib
from typing import Any

__all__ = ["MAX_UNPACKED_BYTES", "PackedError", "unpack"]

MAX_UNPACKED_BYTES = 1 << 30
"""Largest decompressed pickle accepted (1 GiB): LiveCodeBench's largest private tests are far smaller."""


_NOT_A_PICKLE = (
    pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError,
    RecursionError, MemoryError,
)  # fmt: skip
"""What a malformed pickle raises while it is read (the pure-Python and the C unpickler differ)."""


class PackedError(ValueError):
    """Why a packed field cannot be read (one line)."""


class _NothingNamed(pickle.Unpickler):
    """An unpickler that builds plain data only: no name resolves, so no object is ever called."""

    def find_class(self, module: str, name: str) -> Any:
        raise PackedError(f"the pickle names the Python object {module}.{name}: refused (only plain data is read)")

    def persistent_load(self, pid: Any) -> Any:
        raise PackedError("the pickle refers to a persistent object: refused (only plain data is read)")


def unpack(text: str) -> Any:
    """The plain value ``text`` (base64 of zlib of a pickle) holds.

    Raises:
        PackedError: not base64, not zlib data, larger than ``MAX_UNPACKED_BYTES`` decompressed, not a
            pickle, or a pickle that names a Python object (it is refused, never called).
    """
    try:
        compressed = base64.b64decode(text.encode("ascii"))
    except (UnicodeEncodeError, binascii.Error) as e:
        raise PackedError(f"not base64 ({e})") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(compressed, MAX_UNPACKED_BYTES)
    except zlib.error as e:
        raise PackedError(f"not zlib data ({e})") from None
    if inflater.unconsumed_tail:
        raise PackedError(f"more than {MAX_UNPACKED_BYTES} bytes once decompressed: refused")
    try:
        return _NothingNamed(io.BytesIO(raw)).load()
    except PackedError:
        raise
    except _NOT_A_PICKLE as e:
        raise PackedError(f"not a pickle of plain data ({type(e).__name__}: {str(e)[:200]})") from None
