"""What a run does after epochs that accepted no task: pause, then stop (``controller.max_empty_epochs``).

A generator whose every proposal is rejected (a model that writes no task JSON, a server that answers
prose) would otherwise retry at once, epoch after epoch, forever: each epoch costs requests and writes
records. After such an epoch the next one waits (``controller.empty_epoch_pause_s``, doubled for each
more in a row, at most ``PAUSE_MAX_S``); after ``max_empty_epochs`` in a row the run stops with
``EmptyEpochs`` (its own exit status), resumable like any stop. A resume gets as many empty epochs again:
the streak is counted from the last stop noted in the manifest. When the streak ends on the run's last
planned epoch there is nothing to spare: the run ends as planned, its last row warning of the streak.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from .config import ControllerConfig
from .errors import EmptyEpochs
from .progress import empty_epochs_message, empty_streak
from .store import RunDir
from .types import EpochMetrics

__all__ = ["PAUSE_MAX_S", "EmptyEpochGuard"]

PAUSE_MAX_S = 60.0
"""The longest pause after epochs that accepted no task."""
STOP_NOTE = "empty_epochs"
"""The kind of stop noted in the manifest (``RunDir.note_stop``)."""


class EmptyEpochGuard:
    """The pause and the stop for one run (``config``: its controller section; ``run``: its directory)."""

    def __init__(self, config: ControllerConfig, run: RunDir, log: Callable[[str], None]) -> None:
        self.config = config
        self.run = run
        self.log = log

    def streak(self, rows: Sequence[EpochMetrics]) -> list[int]:
        """The last epochs of ``rows`` (the run's metrics) that accepted no task, in a row, since the run
        last stopped for them."""
        return empty_streak(rows, since=self.run.stopped_after(STOP_NOTE) + 1)

    async def pause(self, rows: Sequence[EpochMetrics]) -> None:
        """A pause growing with each epoch in a row that accepted no task (not in the records)."""
        empty, base = len(self.streak(rows)), self.config.empty_epoch_pause_s
        if empty and base > 0:
            pause = min(PAUSE_MAX_S, base * 2 ** min(empty - 1, 16))
            self.log(f"no task accepted in the last {empty} epoch(s): the next one starts in {pause:g} s")
            await asyncio.sleep(pause)  # Ctrl-C (a cancel) ends it at once

    def stop_if_due(self, rows: Sequence[EpochMetrics], *, resuming: bool) -> None:
        """Stop (``EmptyEpochs``) once ``max_empty_epochs`` epochs in a row accepted no task, noted in the
        manifest first; ``resuming``: killed before the note, which is made, and the run goes on."""
        limit, empty = self.config.max_empty_epochs, self.streak(rows)
        if limit is None or len(empty) < limit:
            return
        if len(rows) >= self.config.epochs:  # nothing left to spare: the run ends as planned (its last row
            return  # warns, ``last_epoch_warning``), killed and resumed alike
        message = empty_epochs_message(empty, rows)
        self.run.note_stop(empty[-1], STOP_NOTE, message)
        if not resuming:
            raise EmptyEpochs(message, empty[-1])

    def last_epoch_warning(self, rows: Sequence[EpochMetrics], row: EpochMetrics) -> list[str]:
        """The warning of a run's last planned epoch (``row``, after ``rows``) when it is also the
        ``max_empty_epochs``-th in a row to accept nothing: the run ends as planned, the streak said."""
        limit = self.config.max_empty_epochs
        if limit is None or row.epoch != self.config.epochs - 1:
            return []
        empty = self.streak([*rows, row])
        if len(empty) < limit:
            return []
        said = empty_epochs_message(empty, [*rows, row])
        return [f"{said}; the run's last epoch, so it ends as planned (a longer run would stop here, exit 5)"]
