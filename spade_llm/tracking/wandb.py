"""Weights & Biases: each epoch's scalars as one W&B run's history at step ``epoch``, the config and
manifest as its config, the records linked (by reference, not uploaded) as an artifact (``pip install
'spade-selfplay[wandb]'``).

Offline unless ``WANDB_MODE`` says otherwise: the run directory goes under ``tracking/wandb/`` (or
``WANDB_DIR``), and ``wandb sync`` uploads it later. The project is ``WANDB_PROJECT`` or ``spade_llm``;
a resumed run logs into the same W&B run (its id is kept in the tracking state).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROJECT = "spade_llm"


def require() -> None:
    import wandb  # noqa: F401


class WandbTracker:
    name = "wandb"

    def __init__(
        self, folder: Path, run_name: str, config: Mapping[str, Any], manifest: Mapping[str, Any], state: dict[str, Any]
    ) -> None:
        import wandb

        folder.mkdir(parents=True, exist_ok=True)
        self.state = state
        run_id = state.get("run_id")
        if not isinstance(run_id, str):
            run_id = state["run_id"] = uuid.uuid4().hex[:12]  # W&B's own ids: lowercase letters and digits
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT") or PROJECT,
            name=run_name,
            id=run_id,
            resume="allow",
            mode=os.environ.get("WANDB_MODE") or "offline",  # the user's choice, checked by wandb
            dir=os.environ.get("WANDB_DIR") or str(folder),
            config={**config, "manifest": dict(manifest)},
            settings=wandb.Settings(console="off", quiet=True, x_disable_stats=True, save_code=False),
        )

    def log(self, epoch: int, values: Mapping[str, float]) -> None:
        self.run.log(dict(values), step=epoch)

    def close(self, records: list[Path]) -> None:
        import wandb

        if records:
            artifact = wandb.Artifact(f"{self.run.id}-records", type="dataset")
            for path in records:
                artifact.add_reference(path.resolve().as_uri(), name=path.name, checksum=False)
            self.run.log_artifact(artifact)
        self.run.finish()


open_tracker = WandbTracker
"""What ``tracking.base.opener`` hands back: the tracker, opened by its constructor."""
