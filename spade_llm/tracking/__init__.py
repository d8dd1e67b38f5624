"""Metrics where trainers look: ``tracking: [tensorboard, mlflow, wandb]`` logs every epoch's metrics row,
the run's config (secrets scrubbed) and manifest, and links its records at the end.

One module per tool behind the ``Tracker`` contract (``base.py``), chosen by name in :data:`TRACKERS` and
imported only when a run asks for it; each tool's files go under the run directory's ``tracking/``
unless the tool's own environment says otherwise (``MLFLOW_TRACKING_URI``, ``WANDB_MODE``,
``WANDB_DIR``), and every one works offline. ``session.py`` opens them after the run's header is written;
``run.py`` logs what ``metrics.jsonl`` holds that they have not seen (a resumed run catches up) and
closes them.
"""

from __future__ import annotations

from .base import TRACKERS, Tracker, TrackerName, scalars

__all__ = ["TRACKERS", "Tracker", "TrackerName", "scalars"]
