"""A small on-disk cache of pure results, per user: what spade derived once from content it can hash
(a task's leak check), found again by that content's digest instead of derived again.

Why on disk and not in the records: only this user's spade writes here, so an entry can be trusted
as the derivation's result; a stamp carried in a task file could be forged by whoever wrote the file.

Where: ``SPADE_CACHE_DIR``, else ``$XDG_CACHE_HOME/spade_llm``, else ``~/.cache/spade_llm``; one
small file per entry (JSON, or bytes: the sandbox's programs compiled), ``NAMESPACE/KEY``, written
whole (a temporary file, then a rename).
Best effort: a cache that cannot be read or written is a miss, never an error, and deleting the
folder loses nothing but time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "digest", "load", "load_bytes", "store", "store_bytes"]


def cache_dir() -> Path:
    """The cache's folder (see the module's doc); not created here."""
    given = os.environ.get("SPADE_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "spade_llm"


def digest(*parts: str | bytes) -> str:
    """A key for ``parts`` (their order and boundaries count): 40 hex digits of BLAKE2b."""
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def load(namespace: str, key: str) -> Any:
    """The value stored under ``key``, or None when there is none (or it cannot be read)."""
    data = load_bytes(namespace, key)
    try:
        return None if data is None else json.loads(data)
    except ValueError:
        return None


def store(namespace: str, key: str, value: Any) -> None:
    """Keep ``value`` (JSON) under ``key``; silently nothing when the cache cannot be written."""
    store_bytes(namespace, key, json.dumps(value).encode())


def load_bytes(namespace: str, key: str) -> bytes | None:
    """The bytes stored under ``key``, or None when there are none (or they cannot be read)."""
    try:
        return (cache_dir() / namespace / key).read_bytes()
    except OSError:
        return None


def store_bytes(namespace: str, key: str, data: bytes) -> None:
    """Keep ``data`` under ``key``; silently nothing when the cache cannot be written."""
    folder = cache_dir() / namespace
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, folder / key)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
