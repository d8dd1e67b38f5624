"""MLflow: each epoch's scalars as metrics of one MLflow run, the config as its parameters, the manifest and
records as its artifacts (``pip install 'spade-selfplay[mlflow]'``).

The store is ``MLFLOW_TRACKING_URI`` when set (a user's server), else a local SQLite store in
``tracking/mlflow/`` (MLflow 3 keeps its plain-file store in maintenance mode, behind an opt-out): no
server, no network. The experiment is ``MLFLOW_EXPERIMENT_NAME`` or ``spade_llm``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import flat_params

EXPERIMENT = "spade_llm"


def require() -> None:
    import mlflow.tracking  # noqa: F401
    import sqlalchemy  # noqa: F401  (the local store)


def store_uri(folder: Path) -> str:
    """Where a run's MLflow records go: the user's tracking URI, or a SQLite file in ``folder``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(folder / 'mlflow.db').resolve()}"


class MLflowTracker:
    name = "mlflow"

    def __init__(
        self, folder: Path, run_name: str, config: Mapping[str, Any], manifest: Mapping[str, Any], state: dict[str, Any]
    ) -> None:
        from mlflow.tracking import MlflowClient

        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.client = MlflowClient(tracking_uri=store_uri(folder))
        self.state = state
        run_id = state.get("run_id")
        if not isinstance(run_id, str):  # a new run: its parameters and manifest logged once
            name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT
            experiment = self.client.get_experiment_by_name(name)
            experiment_id = (
                experiment.experiment_id
                if experiment is not None
                else self.client.create_experiment(name, artifact_location=(folder / "artifacts").resolve().as_uri())
            )
            run = self.client.create_run(experiment_id, run_name=run_name, tags={"spade_llm.command": "run"})
            run_id = state["run_id"] = run.info.run_id
            params = flat_params(config)
            items = list(params.items())
            for start in range(0, len(items), 100):  # MLflow takes at most 100 parameters a call
                from mlflow.entities import Param

                self.client.log_batch(run_id, params=[Param(k, v) for k, v in items[start : start + 100]])
            self._document(run_id, "manifest.json", manifest)
        self.run_id = run_id

    def log(self, epoch: int, values: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(_key(k), v, now, epoch) for k, v in values.items()]
        for start in range(0, len(metrics), 1000):  # MLflow takes at most 1000 metrics a call
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def close(self, records: list[Path]) -> None:
        for path in records:
            self.client.log_artifact(self.run_id, str(path), artifact_path="records")
        self.client.set_terminated(self.run_id)

    def _document(self, run_id: str, name: str, value: Any) -> None:
        path = self.folder / name
        path.write_text(json.dumps(value, indent=1, default=str) + "\n", encoding="utf-8")
        self.client.log_artifact(run_id, str(path))


def _key(name: str) -> str:
    """A metric name MLflow accepts (letters, digits, ``_-./`` and spaces)."""
    return "".join(c if c.isalnum() or c in "_-./ " else "_" for c in name)


open_tracker = MLflowTracker
"""What ``tracking.base.opener`` hands back: the tracker, opened by its constructor."""
