"""verl's side of live training on ``spade serve-env``, without importing verl: the rows of ``data.train_files``
and the agent loop file of ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` that select the
``spade_env`` agent loop (``verl_loop.SpadeEnvAgentLoop``, which verl's workers import through that file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from .trl import split_token

__all__ = ["AGENT_LOOP", "AGENT_NAME", "DATA_SOURCE", "live_rows", "main", "write_live_files"]

AGENT_NAME = "spade_env"
"""The name rows select the loop by (their ``agent_name``) and the agent loop file registers it under."""
AGENT_LOOP = "spade_llm.integrations.verl_loop.SpadeEnvAgentLoop"
"""The loop's class, as the agent loop file names it for hydra."""
DATA_SOURCE = "spade_live"
"""The rows' ``data_source``: a task comes from the server, not the row."""


def live_rows(n: int, *, placeholder: str = "A coding task from spade serve-env.") -> list[dict[str, Any]]:
    """``n`` rows for verl's ``data.train_files``: each selects the ``spade_env`` agent loop; the task comes
    from the server, so the prompt is a placeholder (verl's dataset needs one)."""
    return [
        {
            "data_source": DATA_SOURCE,
            "agent_name": AGENT_NAME,
            "prompt": [{"role": "user", "content": placeholder}],
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"index": i, "split": "train"},
        }
        for i in range(n)
    ]


def write_live_files(out: str | Path, url: str, *, rows: int = 1024) -> tuple[Path, Path]:
    """Write ``OUT/live.parquet`` (``live_rows(rows)``) and ``OUT/agent_loops.yaml`` (the ``spade_env`` loop
    and the server's ``url``, no token): ``data.train_files`` and
    ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` of ``main_ppo``. Returns both paths.

    Raises:
        UserError: pyarrow is not installed.
    """
    import yaml

    from ..export.solver_rows import require_pyarrow

    require_pyarrow("verl's live rows")
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    data, loops = folder / "live.parquet", folder / "agent_loops.yaml"
    pq.write_table(pa.Table.from_pylist(live_rows(rows)), data)
    plain_url, _ = split_token(url)  # a token stays out of the file: $SPADE_ENV_TOKEN
    entry = {"name": AGENT_NAME, "_target_": AGENT_LOOP, "url": plain_url}
    loops.write_text(yaml.safe_dump([entry], sort_keys=False))
    return data, loops


def main(argv: Sequence[str] | None = None) -> int:
    """Write the live rows and the agent loop file for a serve-env server (``python -m spade_llm.verl``);
    2 on a user's mistake."""
    parser = argparse.ArgumentParser(prog="python -m spade_llm.verl", description=main.__doc__)
    parser.add_argument(
        "--url", required=True, help="the serve-env server's http://HOST:PORT (no token: $SPADE_ENV_TOKEN)"
    )
    parser.add_argument("-o", "--out", required=True, help="folder for live.parquet and agent_loops.yaml")
    parser.add_argument("--rows", type=int, default=1024, help="rows of live.parquet: verl's epoch length (1024)")
    args = parser.parse_args(argv)
    if args.rows < 1:
        parser.error(f"--rows must be at least 1, got {args.rows}")
    try:
        data, loops = write_live_files(args.out, args.url, rows=args.rows)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"data.train_files={data}\nactor_rollout_ref.rollout.agent.agent_loop_config_path={loops}")
    return 0
