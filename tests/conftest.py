"""Test-wide guards: no real model request by accident, no run output outside tmp paths."""

from __future__ import annotations

import pytest

import spade_llm.llm.litellm as litellm_provider


@pytest.fixture(autouse=True)
def block_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm_provider, "ALLOW_MODEL_REQUESTS", False)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
