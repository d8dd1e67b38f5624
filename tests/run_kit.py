"""Runs that die at a chosen write, as after a SIGKILL, and the records two runs must share: for the
resume tests and every test that kills a run (Ray workers, outages, empty epochs)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from builders import run_records
from sandbox_backends import run_backend

from spade_llm.store import RunDir

RECORDS = ["tasks.jsonl", "rejected.jsonl", "trajectories.jsonl", "task_stats.jsonl", "metrics.jsonl"]
"""The record files a resumed run must write as the run that was never killed."""


BACKEND = run_backend()


class Killed(BaseException):
    """The process died: nothing after this reaches the disk."""


class DyingRunDir(RunDir):
    """A run directory whose writer dies at its ``kill_at``-th append, half-way through the line
    when ``partial``; every write after that is lost, as after a SIGKILL."""

    def __init__(self, path: Path, kill_at: int, partial: bool) -> None:
        super().__init__(path)
        self.kill_at, self.partial, self.appends, self.dead = kill_at, partial, 0, False

    def append(self, journal: str, records: Iterable[dict[str, Any]]) -> None:
        records = list(records)
        if self.dead:
            raise Killed
        if self.appends == self.kill_at:
            self.dead = True
            if self.partial:
                line = json.dumps(records[0]) + "\n"
                with open(self.path / journal, "a", encoding="utf-8") as f:
                    f.write(line[: len(line) // 2])
            raise Killed
        self.appends += 1
        super().append(journal, records)

    def write_json(self, name: str, data: Any) -> None:
        if self.dead:
            raise Killed
        super().write_json(name, data)


def records(path: Path) -> dict[str, list[Any]]:
    """The reproducible content of a run: time fields dropped; files written in completion order sorted."""
    return run_records(path, RECORDS)
