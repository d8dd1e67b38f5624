"""``spade_llm.verl``, the path verl users type: live rows and the ``spade_env`` agent loop file live in
``integrations/verl.py`` (the loop itself, which imports verl, in ``integrations/verl_loop.py``).

``python -m spade_llm.verl --url http://HOST:PORT -o DIR`` writes ``DIR/live.parquet`` (``data.train_files``)
and ``DIR/agent_loops.yaml`` (``actor_rollout_ref.rollout.agent.agent_loop_config_path``).
"""

from .integrations.verl import AGENT_LOOP, AGENT_NAME, live_rows, main, write_live_files

__all__ = ["AGENT_LOOP", "AGENT_NAME", "live_rows", "main", "write_live_files"]

if __name__ == "__main__":
    raise SystemExit(main())
