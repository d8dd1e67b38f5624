"""Counts of model requests, retries and failures, shared by every LLM of a run."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class LLMStats:
    """Thread-safe counters; ``summary()`` is what ``summary.json`` stores under ``llm``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self.failures = 0
        self.by_kind: Counter[str] = Counter()

    def request(self) -> None:
        with self._lock:
            self.requests += 1

    def retry(self, kind: str) -> None:
        with self._lock:
            self.retries += 1
            self.by_kind[kind] += 1

    def failure(self, kind: str) -> None:
        with self._lock:
            self.failures += 1
            self.by_kind[kind] += 1

    def fault(self, kind: str) -> None:
        """A bad answer the caller coped with (unparsable, refusal, truncated): counted by kind only."""
        with self._lock:
            self.by_kind[kind] += 1

    def carry(self, previous: dict[str, Any]) -> None:
        """Add the counts of an earlier session of the same run (resume keeps the totals)."""
        with self._lock:
            self.requests += int(previous.get("requests", 0))
            self.retries += int(previous.get("retries", 0))
            self.failures += int(previous.get("failures", 0))
            self.by_kind.update({str(k): int(v) for k, v in (previous.get("by_kind") or {}).items()})

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "retries": self.retries,
                "failures": self.failures,
                "by_kind": dict(sorted(self.by_kind.items())),
            }
