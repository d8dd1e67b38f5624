"""An opt-in, on-disk response cache: re-running an experiment costs no model calls.

Why our own and not litellm's cache: it must wrap every provider (the fake included), key on
exactly what decides an answer, survive concurrent writers (several runs sharing one folder),
and never store a failure. litellm's cache is configured globally, lives inside litellm's call
path (below our retries) and needs extra dependencies for disk storage.

Layout: one JSON file per key, ``DIR/ab/abcdef....json`` (the key is a SHA-256), written to a
temporary file in the same folder and moved into place with ``os.replace``, so a reader sees a
whole entry or none, and two writers of one key just replace each other's (equal) answers.
Entries are never expired: delete the folder to start over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from ..types import TokenUsage
from .base import LLM, LLMRequest, LLMResponse

log = logging.getLogger("spade_llm.llm")

CACHE_VERSION = 2
"""Part of every key: bump it when the key's recipe or the entry format changes."""


def cache_key(model: str, request: LLMRequest) -> str:
    """SHA-256 of what decides a model's answer: model, messages and sampling parameters, seed included.

    ``role`` and ``metadata`` are left out on purpose: they never reach a real endpoint, so two
    requests differing only there get the same answer from it. ``api_base`` is left out too,
    so replicas of one model share entries.
    """
    payload = {
        "v": CACHE_VERSION,
        "model": model,
        "messages": [m.model_dump() for m in request.messages],
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "response_format": request.response_format,
        "json_schema": request.json_schema,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedLLM:
    """Wraps an LLM; answers a request seen before from disk, else asks ``inner`` and stores the answer.

    Only answers are stored: a request that raises (``LLMCallError`` after retries, anything
    else) is never cached, and neither is an empty answer, which is more often a hiccup than
    what the model means, nor one cut by ``llm.answer_timeout_s`` (it measures the server's
    speed). Identical requests in flight at once in this process share one call.
    ``hits`` and ``misses`` count lookups (a shared in-flight call counts as a hit). A hit keeps
    the answer's token counts but costs 0.0.
    """

    def __init__(self, inner: LLM, directory: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.model = inner.model
        self.directory = Path(directory).expanduser()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._inflight: dict[str, asyncio.Future[LLMResponse]] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        key = cache_key(self.model, request)
        cached = self._load(key)
        if cached is not None:
            self.hits += 1
            return cached
        pending = self._inflight.get(key)
        if pending is not None:
            self.hits += 1
            return await asyncio.shield(pending)
        self.misses += 1
        future: asyncio.Future[LLMResponse] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            response = await self.inner.complete(request)
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # marked retrieved: no "exception never retrieved" warning without waiters
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            self._inflight.pop(key, None)
        future.set_result(response)
        if response.text and response.finish_reason != "answer_cap":
            # an answer cut by the time cap says how fast the server was, not what the prompt asks for
            self._store(key, response)
        return response

    def _load(self, key: str) -> LLMResponse | None:
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            usage = TokenUsage.model_validate(data["usage"])
            if usage.cost is not None:
                usage = usage.model_copy(update={"cost": 0.0})  # tokens describe the answer; this time it was free
            return LLMResponse(
                text=str(data["text"]),
                usage=usage,
                finish_reason=str(data["finish_reason"]),
                model=str(data.get("model", self.model)),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            # a damaged entry (disk full, hand edit) is a miss, and will be overwritten
            log.warning("ignoring unreadable cache entry %s: %s", path, e)
            return None

    def _store(self, key: str, response: LLMResponse) -> None:
        path = self.path_for(key)
        entry: dict[str, Any] = {
            "text": response.text,
            "finish_reason": response.finish_reason,
            "model": response.model,
            "usage": response.usage.model_dump(),
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(entry, f, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as e:
            # a cache that cannot write must not fail the run: the answer is returned anyway
            log.warning("could not write cache entry %s: %s", path, e)
