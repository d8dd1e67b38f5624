"""Which modules a fresh interpreter holds after running some code: what keeps a command's start lean
(a sandbox's start, ``spade exec``) is that it never imports pydantic and the data models."""

from __future__ import annotations

import ast
import subprocess
import sys


def data_models_after(code: str) -> list[str]:
    """The pydantic and record modules a fresh interpreter holds after running ``code``."""
    models = "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'spade_llm.types'))))"
    run = subprocess.run([sys.executable, "-c", f"import sys\n{code}\n{models}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    listed: list[str] = ast.literal_eval(run.stdout.splitlines()[-1])
    return listed
