"""Dataset files as rows (``tasksets/rows.py``): JSON lines, a JSON array, gzip, parquet; and the packed
tests LiveCodeBench publishes (``tasksets/packed.py``), read without unpickling any object (issue 38).

The hostile pickles here would run ``touch MARKER`` if anything unpickled them; each test asserts the
marker file was never made.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import pickle
import zlib
from pathlib import Path

import pytest

from spade_llm.errors import UserError
from spade_llm.tasksets import packed
from spade_llm.tasksets.packed import PackedError, unpack
from spade_llm.tasksets.rows import read_rows

ROWS = [{"id": 1, "text": "a"}, {"id": 2, "text": "é"}]


def where_and_data(path: Path) -> list[tuple[str, int, dict]]:
    return [(r.where, r.index, r.data) for r in read_rows(path)]


def test_json_lines_plain_and_gzipped_give_each_row_with_its_line(tmp_path):
    lines = json.dumps(ROWS[0]) + "\n\n" + json.dumps(ROWS[1]) + "\n"
    plain = tmp_path / "d.jsonl"
    plain.write_text(lines, encoding="utf-8")
    zipped = tmp_path / "d.jsonl.gz"
    zipped.write_bytes(gzip.compress(lines.encode()))
    for path in (plain, zipped):
        assert where_and_data(path) == [(f"{path}:1", 0, ROWS[0]), (f"{path}:3", 1, ROWS[1])]


def test_a_json_file_is_an_array_of_rows_or_json_lines(tmp_path):
    array = tmp_path / "a.json"
    array.write_text("\ufeff" + json.dumps(ROWS, indent=2), encoding="utf-8")
    assert where_and_data(array) == [(f"{array} row 0", 0, ROWS[0]), (f"{array} row 1", 1, ROWS[1])]
    lines = tmp_path / "l.json"  # Hugging Face stores JSON lines under .json too
    lines.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert [r.data for r in read_rows(lines)] == ROWS


def test_parquet_rows_come_back_as_the_dataset_holds_them(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"name": "p", "tests": {"input": ["1\n"], "output": ["2\n"]}, "limit": {"seconds": 2, "nanos": 0}}] * 3
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2)
    assert where_and_data(path) == [(f"{path} row {i}", i, rows[i]) for i in range(3)]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("d.jsonl", b'{"a": 1}\n{"a": \n', "d.jsonl:2: not JSON"),
        ("d.jsonl", b'{"a": 1}\n[1, 2]\n', "d.jsonl:2: not a row: a JSON list, not an object"),
        ("d.jsonl", b'{"a": "\xff"}\n', "d.jsonl:1: not UTF-8"),
        ("d.json", b'[{"a": 1}, 3]', "d.json row 1: not a row: a JSON int"),
        ("d.jsonl.gz", b"not gzip at all", "cannot read"),
        ("d.parquet", b"PAR1 not really", "as parquet"),
        ("d.csv", b"a,b\n", "not a file spade import reads"),
    ],
)
def test_an_unreadable_file_or_record_is_one_error_naming_where(tmp_path, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UserError, match=says.replace(".", r"\.").replace("[", r"\[")) as e:
        list(read_rows(path))
    assert "\n" not in str(e.value)


def test_a_missing_file_or_a_folder_is_said_before_any_row(tmp_path):
    with pytest.raises(UserError, match="file not found"):
        read_rows(tmp_path / "nope.jsonl")
    with pytest.raises(UserError, match="is a directory"):
        read_rows(tmp_path)


# -- packed tests ---------------------------------------------------------------------------------------


def pack(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw)).decode()


def test_packed_plain_data_comes_back():
    tests = json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}])
    assert unpack(pack(pickle.dumps(tests))) == tests  # LiveCodeBench: a pickled JSON string
    row = {"input_output": json.dumps({"inputs": ["1\n"], "outputs": ["2\n"], "fn_name": None})}
    assert unpack(pack(pickle.dumps(row, protocol=2))) == row  # SandboxFusion: a pickled dict


class Touch:
    """Unpickled by ``pickle.loads``, this runs ``os.system("touch PATH")``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def hostile_payloads(marker: Path) -> dict[str, bytes]:
    return {
        "reduce": pickle.dumps(Touch(marker)),  # STACK_GLOBAL posix.system, then REDUCE
        "protocol 0": f"cos\nsystem\n(S'touch {marker}'\ntR.".encode(),  # GLOBAL, then REDUCE
        "inst": f"(S'touch {marker}'\nios\nsystem\n.".encode(),  # INST: the class named and called at once
        "eval": b'cbuiltins\neval\n(S\'__import__("os").system("touch ' + str(marker).encode() + b"\")'\ntR.",
    }


@pytest.mark.parametrize("payload", ["reduce", "protocol 0", "inst", "eval"])
def test_a_pickle_that_names_a_python_object_is_refused_and_nothing_runs(tmp_path, payload):
    marker = tmp_path / "MARKER"
    with pytest.raises(PackedError, match=r"names the Python object .*: refused") as e:
        unpack(pack(hostile_payloads(marker)[payload]))
    assert not marker.exists()
    assert "\n" not in str(e.value)


def test_packed_fields_that_are_no_pickle_say_why(monkeypatch):
    with pytest.raises(PackedError, match="not base64"):
        unpack("not base64!")
    with pytest.raises(PackedError, match="not zlib data"):
        unpack(base64.b64encode(b"plain bytes").decode())
    with pytest.raises(PackedError, match="not a pickle"):
        unpack(pack(b"\x80\x04 garbage"))
    monkeypatch.setattr(packed, "MAX_UNPACKED_BYTES", 1000)  # a small field that inflates beyond the cap
    with pytest.raises(PackedError, match="more than 1000 bytes"):
        unpack(pack(pickle.dumps("x" * 5000)))
