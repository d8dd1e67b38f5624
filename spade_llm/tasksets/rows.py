"""Rows of a published dataset file, read one at a time: JSON lines (``.jsonl``, ``.jsonl.gz``), a JSON
array or JSON lines (``.json``, ``.json.gz``), or the parquet a Hugging Face dataset is stored as.

Each row comes with where it is, for errors to name: ``FILE:LINE`` in JSON lines, ``FILE row N`` in a
JSON array or a parquet file (N counted from 0, as ``dataset[N]`` counts). Nothing here knows a
benchmark: an importer reads the row's fields (``fields.py``). Rows are read lazily (a parquet file a
batch at a time), so a large shard is never held whole.
"""

from __future__ import annotations

import gzip
import importlib
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError, pip_install

__all__ = ["SUFFIXES", "Row", "read_rows"]

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")
"""The file names ``read_rows`` reads, by their ending."""
PARQUET_BATCH_ROWS = 64
"""Rows decoded from parquet at a time: a contest's row can hold hundreds of tests and solutions."""


@dataclass(frozen=True)
class Row:
    """One record of a dataset file: where it is (``FILE:LINE`` or ``FILE row N``), its position among
    the file's rows (from 0), and its fields."""

    where: str
    index: int
    data: dict[str, Any]


def read_rows(path: str | Path) -> Iterator[Row]:
    """Every row of ``path``, in order.

    Raises:
        UserError: the file is missing, a folder, of another type, unreadable (a corrupt gzip or
            parquet), or a record is not UTF-8 JSON, not an object (named ``FILE:LINE`` or ``FILE row N``);
            a ``.parquet`` without pyarrow installed.
    """
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{p} is a directory, not a file")
    if not p.exists():
        raise UserError(f"file not found: {p}")
    name = p.name.lower()
    if name.endswith(".parquet"):
        return _parquet_rows(p)
    if name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        return _json_rows(p)
    raise UserError(f"{p}: not a file spade import reads (it reads {', '.join(SUFFIXES)})")


# -- JSON -----------------------------------------------------------------------------------------------


def _open(p: Path) -> io.BufferedIOBase:
    if p.name.lower().endswith(".gz"):
        return gzip.GzipFile(p, "rb")  # seekable: the first bytes are peeked, then read again
    return p.open("rb")


def _json_rows(p: Path) -> Iterator[Row]:
    """JSON lines, or one JSON array (a ``.json`` file may be either: Hugging Face stores JSON lines
    under that name too)."""
    try:
        with _open(p) as f:
            first = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
            f.seek(0)
            if first.startswith(b"["):
                yield from _array_rows(p, f.read())
            else:
                yield from _line_rows(p, f)
    except (OSError, EOFError, zlib.error) as e:  # unreadable, not gzip, truncated or corrupt gzip
        raise UserError(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None


def _line_rows(p: Path, f: io.BufferedIOBase) -> Iterator[Row]:
    index = 0
    for n, raw in enumerate(f, 1):
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, as some editors write
            raw = raw[3:]
        if not raw.strip():
            continue
        where = f"{p}:{n}"
        yield Row(where, index, _object(where, _parsed(where, raw)))
        index += 1


def _array_rows(p: Path, data: bytes) -> Iterator[Row]:
    where = str(p)
    rows = _parsed(where, data.removeprefix(b"\xef\xbb\xbf"))
    if not isinstance(rows, list):
        raise UserError(f"{p}: not a dataset: a JSON {type(rows).__name__}, not a list of rows")
    for index, value in enumerate(rows):
        here = f"{p} row {index}"
        yield Row(here, index, _object(here, value))


def _parsed(where: str, raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise UserError(f"{where}: not JSON: nested too deeply") from None


def _object(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where}: not a row: a JSON {type(value).__name__}, not an object")
    return value


# -- parquet --------------------------------------------------------------------------------------------


def _parquet_module() -> Any:
    """``pyarrow.parquet``, or a ``UserError`` saying what to install (it is the ``parquet`` extra)."""
    try:
        return importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise UserError(f"reading .parquet needs pyarrow: {pip_install('parquet')}") from None


def _parquet_rows(p: Path) -> Iterator[Row]:
    pq = _parquet_module()
    arrow_error = importlib.import_module("pyarrow").ArrowException
    index = 0
    try:
        for batch in pq.ParquetFile(p).iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for data in batch.to_pylist():
                yield Row(f"{p} row {index}", index, data)
                index += 1
    except (arrow_error, OSError) as e:  # not parquet, truncated, or a page that does not decode
        raise UserError(f"cannot read {p} as parquet: {' '.join(str(e).split())[:300]}") from None
