"""``python -m spade_llm.verl``: the live rows and agent loop file main_ppo reads (no verl needed to write them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from spade_llm.verl import AGENT_LOOP, AGENT_NAME, main

pytest.importorskip("pyarrow", reason="the parquet extra is not installed here")


def test_the_rows_select_the_loop_and_the_file_names_it_without_the_token(tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    secret = "s3cr3t-token-of-the-server-0123456789"
    assert main(["--url", f"http://spade:{secret}@127.0.0.1:8000", "-o", str(tmp_path), "--rows", "5"]) == 0
    rows = pq.read_table(tmp_path / "live.parquet").to_pylist()
    assert len(rows) == 5 and {r["agent_name"] for r in rows} == {AGENT_NAME}
    assert all(r["prompt"][0]["role"] == "user" for r in rows)  # verl's dataset needs a prompt
    [entry] = yaml.safe_load((tmp_path / "agent_loops.yaml").read_text())
    assert entry == {"name": AGENT_NAME, "_target_": AGENT_LOOP, "url": "http://127.0.0.1:8000"}
    assert secret not in (tmp_path / "agent_loops.yaml").read_text()  # $SPADE_ENV_TOKEN carries it
    assert "agent_loop_config_path=" in capsys.readouterr().out  # the keys to paste


def test_a_bad_row_count_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--url", "http://127.0.0.1:8000", "-o", str(tmp_path), "--rows", "0"])
    assert stopped.value.code == 2 and not (tmp_path / "live.parquet").exists()
