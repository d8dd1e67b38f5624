"""``spade serve-env``: the self-play curriculum as an OpenEnv environment (``pip install 'spade-selfplay[env]'``).

A trainer's policy plays the solver. The run behind the server is an ordinary self-play run whose
solver's model is a broker: each solver turn becomes an observation for a client, each client reply
the model's answer (``broker.py``); the run itself, in a thread of its own, plans, proposes,
validates, records and moves the difficulty as ``spade run`` does (``running.py``); openenv-core's
server (its app as ``create_app`` builds it) serves it, one environment per WebSocket session
(``server.py``, ``models.py``), behind the same access rules as ``serve-sandbox`` (``access.py``),
sessions with owners and caps, a gate on every message (``sessions.py``), and uvicorn's protocols
under the rules every spade server keeps (``wire.py``: a connection cap, framing).
``docs/environments.md`` shows a client.

Importing this package imports nothing of openenv-core; ``server``, ``sessions``, ``wire`` and ``models`` do.
"""

from __future__ import annotations

import importlib
import importlib.util

from ...errors import UserError, pip_install

__all__ = ["OPENENV_WEB_INTERFACE", "TOKEN_ENV", "import_server", "require_openenv"]

TOKEN_ENV = "SPADE_ENV_TOKEN"
"""The environment variable holding serve-env's bearer token: the server reads it (``--token-file`` keeps
it out of ``ps``), and the clients (``trl.SpadeLiveEnv``, ``verifiers``' url mode) send it."""


OPENENV_WEB_INTERFACE = "openenv.core.env_server.web_interface"
"""openenv-core's Gradio web interface, which spade never mounts: its package is imported without it
(``_util.lazy.import_without``), as the Gradio import was 5 to 7 s of CPU of a 9 s serve-env start."""


def require_openenv() -> None:
    """Raises UserError, naming the extra to install, when openenv-core is missing."""
    if importlib.util.find_spec("openenv") is None:
        raise UserError(f"spade serve-env needs openenv-core: {pip_install('env')}")


def import_server() -> None:
    """Import the server's side (openenv-core, FastAPI, uvicorn: seconds), so what follows is quick.
    Here, not in ``running.py``: the server imports the run's side, never the other way round.

    Raises:
        UserError: openenv-core is installed but does not import (its packages disagree: a later install
            moved one, as ``verifiers`` 0.4 moves ``mcp`` to 2.0.0 under a ``fastmcp`` that needs 2.3),
            naming the line that puts them back in step.
    """
    try:
        importlib.import_module(f"{__name__}.server")
    except ImportError as e:
        if (e.name or "").startswith("spade_llm"):
            raise
        raise UserError(
            f"spade serve-env cannot import openenv-core ({e}): a package it needs was changed by a later "
            f"install; {pip_install('env')} installs the versions that work together"
        ) from None
