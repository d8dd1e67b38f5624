"""Randomness from stable keys: same seed, same run, whatever the concurrency."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from stable keys (run seed, epoch, task id, turn...).

    Never draw from a shared generator consumed in completion order: concurrent requests would
    then change each other's results.
    """
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
