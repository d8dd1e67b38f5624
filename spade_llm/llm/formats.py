"""The ``response_format`` a provider sends, and its one fall-back from ``json_schema`` to ``json_object``.

Both providers (the direct HTTP transport and litellm) keep one :class:`ResponseFormats` per model:
it builds the parameter from a request and, when a server refuses ``json_schema`` by name, records
the refusal once (``LLMStats.fallbacks``, a warning) so no later request of the run carries it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from .base import LLMRequest

log = logging.getLogger("spade_llm.llm")

_NAMES_FORMAT = re.compile(r"response_format|json_schema", re.I)


def refuses_json_schema(status: int | None, message: str) -> bool:
    """Whether an error answered to a request carrying ``response_format: json_schema`` refuses that
    form: a 4xx or 5xx (not an auth, missing-model, timeout or rate-limit answer) whose message names
    ``response_format`` or ``json_schema`` (llama-cpp-python answers 500, others 400 or 422)."""
    if status is None or status < 400 or status in (401, 403, 404, 408, 429):
        return False
    return bool(_NAMES_FORMAT.search(message))


class ResponseFormats:
    """One model's ``response_format`` parameter, with ``json_schema`` dropped for good once refused."""

    def __init__(self, model: str, stats: Any) -> None:
        self.model = model
        self.stats = stats
        """An ``LLMStats`` (or a role's view) that records the fall-back."""
        self.schema_refused = False

    def param(self, request: LLMRequest) -> dict[str, Any] | None:
        """The ``response_format`` to send for ``request`` (None: send none)."""
        form = request.response_format
        if form == "json_schema" and (self.schema_refused or not request.json_schema):
            form = "json_object"
        if form == "json_schema":
            return {"type": "json_schema", "json_schema": request.json_schema}
        if form == "json_object":
            return {"type": "json_object"}
        return None

    def refused(self, sent: Any, status: int | None, message: str) -> bool:
        """Whether an error to a request that carried ``sent`` refuses ``json_schema``; if so it is never
        sent again, and the first such refusal is recorded."""
        if not (isinstance(sent, dict) and sent.get("type") == "json_schema"):
            return False
        if not refuses_json_schema(status, message):
            return False
        self.schema_refused = True
        detail = {"from": "json_schema", "to": "json_object", "status": status, "said": message[:200]}
        if self.stats.fallback("response_format", detail):
            log.warning(
                "%s refused response_format json_schema (%s); asking for json_object from now on",
                self.model,
                message[:160],
            )
        return True
