"""TensorBoard: each epoch's scalars as event files under ``tracking/tensorboard/`` (``pip install
'spade-selfplay[tensorboard]'``), written with TensorBoard's own event writer: no TensorFlow, no torch."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def require() -> None:
    import tensorboard.summary.writer.event_file_writer  # noqa: F401


class TensorBoardTracker:
    name = "tensorboard"

    def __init__(
        self, folder: Path, run_name: str, config: Mapping[str, Any], manifest: Mapping[str, Any], state: dict[str, Any]
    ) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        folder.mkdir(parents=True, exist_ok=True)
        self.state = state  # nothing to resume: a later process appends an event file to the same folder
        self._writer = EventFileWriter(str(folder))
        self._text("manifest", manifest)
        self._text("config", config)

    def log(self, epoch: int, values: Mapping[str, float]) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(value=[Summary.Value(tag=tag, simple_value=value) for tag, value in values.items()])
        self._writer.add_event(Event(wall_time=time.time(), step=epoch, summary=summary))
        self._writer.flush()

    def close(self, records: list[Path]) -> None:
        self._text("records", {"files": [str(p) for p in records]})
        self._writer.close()

    def _text(self, tag: str, value: Any) -> None:
        """A JSON document as TensorBoard's text plugin shows it (a string tensor under its plugin name)."""
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.compat.proto.tensor_pb2 import TensorProto
        from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

        text = "```\n" + json.dumps(value, indent=1, default=str) + "\n```"
        tensor = TensorProto(dtype=7, string_val=[text.encode()], tensor_shape=TensorShapeProto())  # 7: DT_STRING
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
        summary = Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=tensor)])
        self._writer.add_event(Event(wall_time=time.time(), step=0, summary=summary))


open_tracker = TensorBoardTracker
"""What ``tracking.base.opener`` hands back: the tracker, opened by its constructor."""
