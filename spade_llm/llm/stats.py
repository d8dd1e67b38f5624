"""Counts of model requests, retries and faults, shared by every LLM of a run, kept per role.

Two families of faults are counted apart, because they call for different fixes:

* **transport faults** (``rate_limit``, ``server_error``, ``timeout``, ``connection``,
  ``bad_response``...): the endpoint failed to deliver an answer. Each retry counts one under
  ``retried``, a request that fails for good one under ``failed``; ``by_kind`` (summary.json,
  docs/records.md) is their sum.
* **content faults** (``bad_json``, ``truncated``, ``refusal``, ``no_code``, ``empty``...): an
  answer arrived and was unusable. Nothing is retried; the prompt or the token limit needs a look.

``fallbacks`` records what the run stopped sending because a server refused it (a
``response_format`` of ``json_schema``, say); ``servers`` what each role's servers said they are (the
answers' ``model`` and ``system_fingerprint``), for ``manifest.json``'s ``model_servers``.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_IDENTITIES = 4
"""Distinct identities kept per server: a server swapped mid-run shows as a second, a flapping one stops there."""


@dataclass
class _Counts:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    retried: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    content: Counter[str] = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.requests += int(row.get("requests", 0) or 0)
        self.retries += int(row.get("retries", 0) or 0)
        self.failures += int(row.get("failures", 0) or 0)
        for name, counter in (("retried_by_kind", self.retried), ("failed_by_kind", self.failed)):
            counter.update({str(k): int(v) for k, v in (row.get(name) or {}).items()})
        self.content.update({str(k): int(v) for k, v in (row.get("content_faults") or {}).items()})

    def row(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "failures": self.failures,
            "retried_by_kind": dict(sorted(self.retried.items())),
            "failed_by_kind": dict(sorted(self.failed.items())),
            "content_faults": dict(sorted(self.content.items())),
        }


class LLMStats:
    """Thread-safe counters; ``summary()`` is what ``summary.json`` stores under ``llm``.

    Providers and stages count through :meth:`view` (one per role), so every count lands both in
    the run's totals and in its role's row.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = _Counts()
        self._roles: dict[str, _Counts] = {}
        self._fallbacks: dict[str, dict[str, Any]] = {}
        self._servers: dict[str, dict[str, list[dict[str, str]]]] = {}

    def view(self, role: str) -> RoleStats:
        """The counters of one role (``generator``, ``solver``)."""
        with self._lock:
            self._roles.setdefault(role, _Counts())
        return RoleStats(self, role)

    # -- counting (role None: totals only, for callers that know no role) ----------------------

    def _both(self, role: str | None) -> list[_Counts]:
        return [self._total] if role is None else [self._total, self._roles.setdefault(role, _Counts())]

    def request(self, role: str | None = None) -> None:
        with self._lock:
            for c in self._both(role):
                c.requests += 1

    def retry(self, kind: str, role: str | None = None) -> None:
        """A transport fault that will be retried."""
        with self._lock:
            for c in self._both(role):
                c.retries += 1
                c.retried[kind] += 1

    def failure(self, kind: str, role: str | None = None) -> None:
        """A transport fault that ended the request (no retry left, or not worth one)."""
        with self._lock:
            for c in self._both(role):
                c.failures += 1
                c.failed[kind] += 1

    def fault(self, kind: str, role: str | None = None) -> None:
        """A content fault: an answer arrived and was unusable (unparsable, refusal, truncated...)."""
        with self._lock:
            for c in self._both(role):
                c.content[kind] += 1

    def fallback(self, what: str, detail: dict[str, Any]) -> bool:
        """Record that the run stopped sending ``what``; True the first time only."""
        with self._lock:
            if what in self._fallbacks:
                return False
            self._fallbacks[what] = dict(detail)
            return True

    @property
    def fallbacks(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in self._fallbacks.items()}

    def served(self, url: str, model: str, fingerprint: str, role: str | None = None) -> None:
        """An answer came from the server at ``url`` (credentials scrubbed), which said it is ``model``
        with ``fingerprint`` ('' for what it did not say): kept once per distinct identity."""
        identity = {k: v for k, v in (("model", model), ("system_fingerprint", fingerprint)) if v}
        if not identity:
            return
        with self._lock:
            self._add_identity(role or "any", url, identity)

    def _add_identity(self, role: str, url: str, identity: dict[str, str]) -> None:
        known = self._servers.setdefault(role, {}).setdefault(url, [])
        if identity not in known and len(known) < MAX_IDENTITIES:
            known.append(identity)

    @property
    def servers(self) -> dict[str, dict[str, list[dict[str, str]]]]:
        """Role -> server URL -> the identities its answers gave, first seen first."""
        with self._lock:
            return {
                r: {u: [dict(i) for i in ids] for u, ids in sorted(s.items())} for r, s in sorted(self._servers.items())
            }

    # -- reading ---------------------------------------------------------------------------------

    @property
    def requests(self) -> int:
        return self._total.requests

    @property
    def retries(self) -> int:
        return self._total.retries

    @property
    def failures(self) -> int:
        return self._total.failures

    def carry(self, previous: dict[str, Any]) -> None:
        """Add the counts of an earlier session of the same run (resume keeps the totals)."""
        with self._lock:
            if "retried_by_kind" in previous or "content_faults" in previous:
                self._total.add(previous)
            else:  # a summary written before transport and content faults were told apart
                self._total.requests += int(previous.get("requests", 0) or 0)
                self._total.retries += int(previous.get("retries", 0) or 0)
                self._total.failures += int(previous.get("failures", 0) or 0)
            for role, row in (previous.get("by_role") or {}).items():
                if isinstance(row, dict):
                    self._roles.setdefault(str(role), _Counts()).add(row)
            for what, detail in (previous.get("fallbacks") or {}).items():
                if isinstance(detail, dict):
                    self._fallbacks.setdefault(str(what), dict(detail))
            for role, servers in (previous.get("servers") or {}).items():
                for url, identities in (servers or {}).items() if isinstance(servers, dict) else ():
                    for identity in identities if isinstance(identities, list) else ():
                        if isinstance(identity, dict):
                            self._add_identity(str(role), str(url), {str(k): str(v) for k, v in identity.items()})

    def drain(self) -> dict[str, Any]:
        """The counts since the last drain, in the form ``carry`` adds, and zero again: how a remote
        worker hands its counts to the driver's stats after each work item."""
        with self._lock:
            row: dict[str, Any] = self._total.row()
            row["by_role"] = {role: c.row() for role, c in sorted(self._roles.items())}
            row["fallbacks"] = {k: dict(v) for k, v in sorted(self._fallbacks.items())}
            row["servers"] = {r: {u: [dict(i) for i in ids] for u, ids in s.items()} for r, s in self._servers.items()}
            self._total = _Counts()
            self._roles = {role: _Counts() for role in self._roles}
            return row

    def summary(self) -> dict[str, Any]:
        """``requests``, ``retries``, ``failures``, ``by_kind`` (transport faults, retried or not),
        ``content_faults``, the same per role under ``by_role``, and ``fallbacks``."""
        with self._lock:
            total = self._total.row()
            by_kind = self._total.retried + self._total.failed
            return {
                "requests": total["requests"],
                "retries": total["retries"],
                "failures": total["failures"],
                "by_kind": dict(sorted(by_kind.items())),
                "retried_by_kind": total["retried_by_kind"],
                "failed_by_kind": total["failed_by_kind"],
                "content_faults": total["content_faults"],
                "by_role": {role: c.row() for role, c in sorted(self._roles.items())},
                "fallbacks": {k: dict(v) for k, v in sorted(self._fallbacks.items())},
            }


class RoleStats:
    """One role's window on an ``LLMStats``: the same verbs, counted for the role and the totals."""

    def __init__(self, stats: LLMStats, role: str) -> None:
        self.stats = stats
        self.role = role

    def request(self) -> None:
        self.stats.request(self.role)

    def retry(self, kind: str) -> None:
        self.stats.retry(kind, self.role)

    def failure(self, kind: str) -> None:
        self.stats.failure(kind, self.role)

    def fault(self, kind: str) -> None:
        self.stats.fault(kind, self.role)

    def fallback(self, what: str, detail: dict[str, Any]) -> bool:
        return self.stats.fallback(what, {**detail, "role": self.role})

    def served(self, url: str, model: str, fingerprint: str) -> None:
        self.stats.served(url, model, fingerprint, self.role)

    def summary(self) -> dict[str, Any]:
        return self.stats.summary()
