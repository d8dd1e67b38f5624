"""openenv-core's server side, as serve-env uses it: imported here once, without its web interface.

openenv-core's ``env_server`` package imports its Gradio web interface whenever Gradio is installed
(openenv-core installs it), and Gradio's import was 5 to 7 s of CPU of a 9 s serve-env start. serve-env
builds its app without that interface (``server.py``), so the package is loaded with the interface
marked absent (``import_without``), which openenv-core's own ``__init__`` takes as ``None``.
"""

from __future__ import annotations

from ..._util.lazy import import_without
from . import OPENENV_WEB_INTERFACE

import_without("openenv.core.env_server", OPENENV_WEB_INTERFACE)

from openenv.core.env_server.exceptions import SessionCapacityError  # noqa: E402
from openenv.core.env_server.http_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse, WSMCPResponse  # noqa: E402
from openenv.core.env_server.types import (  # noqa: E402
    Action,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
    WSErrorResponse,
)

__all__ = [
    "Action",
    "Environment",
    "EnvironmentMetadata",
    "HTTPEnvServer",
    "JsonRpcErrorCode",
    "JsonRpcResponse",
    "Observation",
    "SessionCapacityError",
    "State",
    "WSErrorCode",
    "WSErrorResponse",
    "WSMCPResponse",
]
