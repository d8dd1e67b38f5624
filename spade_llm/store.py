"""The run directory: append-only JSONL journals, the manifest, and resume.

Every record is one JSON line written with a single ``write`` and flushed, so other programs can
read the files while a run goes on, and a killed run leaves at most one partial last line, which
``open_run`` cuts off before resuming.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import yaml

from .errors import UserError

TASKS = "tasks.jsonl"
REJECTED = "rejected.jsonl"
TRAJECTORIES = "trajectories.jsonl"
METRICS = "metrics.jsonl"
TASK_STATS = "task_stats.jsonl"
PLANS = "plans.jsonl"
"""One ``EpochPlan`` per epoch, written before the epoch's first request."""
PROPOSALS = "proposals.jsonl"
"""One row per generator request: its candidates as parsed, its failure, its token usage. A resumed
epoch rebuilds answered requests from here instead of asking the model again."""
JOURNALS = (TASKS, REJECTED, TRAJECTORIES, METRICS, TASK_STATS, PLANS, PROPOSALS)


class Store(Protocol):
    """Where a run's records go. ``append`` is the verb; records are plain JSON-able dicts."""

    def append(self, journal: str, records: Iterable[dict[str, Any]]) -> None: ...


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=True, separators=(",", ":"))


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file; a partial last line (a killed writer) is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                return
            line = line.strip()
            if line:
                yield json.loads(line)


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_SECRET_KEY = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd)$", re.I)


def scrub_secrets(value: Any) -> Any:
    """Config values with credentials removed: ``user:pass@`` in URLs, keys named like secrets."""
    if isinstance(value, dict):
        return {k: ("***" if _SECRET_KEY.search(str(k)) and v else scrub_secrets(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_secrets(v) for v in value]
    if isinstance(value, str):
        return _USERINFO.sub("", value)
    return value


class RunDir:
    """A run directory on disk (SPEC "Run directory")."""

    def __init__(self, path: Path) -> None:
        self.path = path

    # -- creating and reopening -------------------------------------------------------------

    @classmethod
    def create(cls, out: str | Path | None, runs_dir: str | Path = "runs") -> RunDir:
        """A new run directory: ``out`` itself (must be empty or absent), else a fresh one under ``runs_dir``."""
        if out is not None:
            path = Path(out)
            if path.exists() and (not path.is_dir() or any(path.iterdir())):
                raise UserError(f"{path} exists and is not empty: choose another --out, or --resume {path}")
        else:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            base = Path(runs_dir) / stamp
            path, n = base, 1
            while path.exists():
                n += 1
                path = base.with_name(f"{stamp}-{n}")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create run directory {path}: {e.strerror}") from None
        return cls(path)

    @classmethod
    def open_existing(cls, path: str | Path) -> RunDir:
        """Reopen a run to resume it: repair partial last lines left by a kill."""
        p = Path(path)
        if not (p / "config.yaml").is_file():
            raise UserError(f"{p} is not a run directory (no config.yaml)")
        run = cls(p)
        for name in JOURNALS:
            run._cut_partial_line(p / name)
        return run

    @staticmethod
    def _cut_partial_line(path: Path) -> None:
        if not path.exists():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])

    # -- writing -----------------------------------------------------------------------------

    def touch_journals(self) -> None:
        for name in JOURNALS:
            (self.path / name).touch()

    def append(self, journal: str, records: Iterable[dict[str, Any]]) -> None:
        """Append records as whole lines in one write, flushed to the OS."""
        text = "".join(_dumps(r) + "\n" for r in records)
        if not text:
            return
        fd = os.open(self.path / journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(text.encode("utf-8"))
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)

    def write_json(self, name: str, data: Any) -> None:
        """Replace a JSON file atomically (write a temporary file, then rename)."""
        self._replace(name, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=True) + "\n")

    def write_yaml(self, name: str, data: Any) -> None:
        self._replace(name, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))

    def _replace(self, name: str, text: str) -> None:
        tmp = self.path / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path / name)

    # -- reading -----------------------------------------------------------------------------

    def read(self, journal: str) -> list[dict[str, Any]]:
        return list(read_jsonl(self.path / journal))

    def read_json(self, name: str) -> Any:
        """A JSON file of the run, or None when it is missing or damaged (a kill mid-write)."""
        try:
            return json.loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def read_yaml(self, name: str) -> Any:
        try:
            return yaml.safe_load((self.path / name).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise UserError(f"cannot read {self.path / name}: {e}") from None
