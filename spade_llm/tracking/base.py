"""The ``Tracker`` contract: one epoch's scalars in, logged to a tool; and the pure pieces every tool shares."""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from ..errors import UserError, pip_install

TrackerName = Literal["tensorboard", "mlflow", "wandb"]
TRACKERS: dict[str, tuple[str, str]] = {
    "tensorboard": ("spade_llm.tracking.tensorboard", "tensorboard"),
    "mlflow": ("spade_llm.tracking.mlflow", "mlflow"),
    "wandb": ("spade_llm.tracking.wandb", "wandb"),
}
"""Tracker name -> (its module, the extra that installs its tool)."""


class Tracker(Protocol):
    """One tool a run's metrics go to."""

    name: str
    state: dict[str, Any]
    """What a resumed run needs to log into the same place (a run id), kept in ``tracking/state.json``."""

    def log(self, epoch: int, values: Mapping[str, float]) -> None:
        """Log one epoch's scalars at step ``epoch``."""

    def close(self, records: list[Path]) -> None:
        """Link the run's record files (artifacts) and end the tool's run."""


class TrackerOpener(Protocol):
    def __call__(
        self, folder: Path, run_name: str, config: Mapping[str, Any], manifest: Mapping[str, Any], state: dict[str, Any]
    ) -> Tracker: ...


def opener(name: str) -> TrackerOpener:
    """The ``open_tracker`` of tracker ``name``, its module imported now.

    Raises:
        UserError: an unknown name, or the tool is not installed (naming the extra to install).
    """
    if name not in TRACKERS:
        raise UserError(f"tracking: unknown tool {name!r}; choose from {', '.join(TRACKERS)}")
    module_name, extra = TRACKERS[name]
    module = importlib.import_module(module_name)
    try:
        module.require()
    except ImportError as e:
        raise UserError(f"tracking: {name} needs its package ({e.name or e}): {pip_install(extra)}") from None
    open_tracker: TrackerOpener = module.open_tracker
    return open_tracker


def scalars(row: Mapping[str, Any]) -> dict[str, float]:
    """A ``metrics.jsonl`` row as the flat scalars a tracker logs: numbers as they are, nested counts as
    ``outer/inner``, a list as its length (``warnings`` -> how many), nothing else (no text, no None)."""
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, bool):
            out[prefix] = float(value)
        elif isinstance(value, int | float):
            if math.isfinite(value):
                out[prefix] = float(value)
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}/{key}" if prefix else str(key), inner)
        elif isinstance(value, list):
            out[prefix] = float(len(value))

    walk("", row)
    out.pop("epoch", None)  # the step, not a metric
    return out


def flat_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A (scrubbed) config as ``section.field`` -> text, the shape parameter tables take."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flat_params(value, name))
        else:
            out[name] = str(value)[:500]  # MLflow refuses longer values
    return out
