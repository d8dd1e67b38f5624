"""A run's trackers together: opened once the run's header is on disk, fed each new ``metrics.jsonl`` row
(an epoch hook), closed when the run ends.

What each tool has logged is kept in ``tracking/state.json`` (the epochs, the tool's run id): a resumed
run logs into the same tool run, and logs first the rows a kill left unlogged, so every epoch reaches every
tool once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.redact import scrub_secrets
from ..store import RunDir
from .base import Tracker, opener, scalars

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..hooks import EpochEnd
    from ..types import EpochMetrics

FOLDER = "tracking"
STATE = "state.json"
RECORDS = ("manifest.json", "config.yaml", "summary.json", "tasks.jsonl", "trajectories.jsonl", "metrics.jsonl")
"""The run's files a tool links at the end, with every export the run wrote."""


class RunTracking:
    """The trackers ``config.tracking`` names, for the run in ``run_dir``."""

    def __init__(self, config: RunConfig, run_dir: Path, logged_rows: Sequence[EpochMetrics] = ()) -> None:
        """Open every tool (its run resumed when ``tracking/state.json`` names one) and log the rows of
        ``logged_rows`` (``metrics.jsonl`` so far) it has not logged yet.

        Raises:
            UserError: a tool is unknown or not installed.
        """
        self.run_dir = run_dir
        self.folder = run_dir / FOLDER
        openers = {name: opener(name) for name in dict.fromkeys(config.tracking)}  # all checked before any opens
        self.folder.mkdir(exist_ok=True)
        self.store = RunDir(self.folder)  # its atomic JSON writer and reader, for state.json
        saved = _dict(self.store.read_json(STATE))
        manifest = _dict(RunDir(run_dir).read_json("manifest.json"))
        params = scrub_secrets(config.model_dump(mode="json"))
        self.trackers: list[Tracker] = []
        self.logged: dict[str, set[int]] = {}
        for name, open_tracker in openers.items():
            own = saved.get(name, {})
            state = dict(own.get("state") or {})
            self.trackers.append(open_tracker(self.folder / name, run_dir.name, params, manifest, state))
            self.logged[name] = {int(e) for e in own.get("epochs") or []}
        for row in logged_rows:
            self.log(row)

    def log(self, row: EpochMetrics) -> None:
        """Log one epoch's row to every tool that has not logged it, then remember that it has."""
        values = scalars(row.model_dump(mode="json"))
        for tracker in self.trackers:
            done = self.logged[tracker.name]
            if row.epoch not in done:
                tracker.log(row.epoch, values)
                done.add(row.epoch)
        self._write_state()

    def epoch_hook(self, event: EpochEnd) -> None:
        """The ``on_epoch_end`` hook: the row just written to ``metrics.jsonl``."""
        self.log(event.metrics)

    def close(self) -> None:
        """Link the run's records and exports, and end every tool's run."""
        records = [self.run_dir / name for name in RECORDS if (self.run_dir / name).is_file()]
        exports = self.run_dir / "exports"
        if exports.is_dir():
            records += sorted(p for p in exports.rglob("*") if p.is_file())
        for tracker in self.trackers:
            tracker.close(records)
        self._write_state()

    def _write_state(self) -> None:
        state = {t.name: {"state": t.state, "epochs": sorted(self.logged[t.name])} for t in self.trackers}
        self.store.write_json(STATE, state)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
