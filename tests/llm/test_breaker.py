"""The circuit breaker and the fault kinds that feed it, without a network."""

from __future__ import annotations

import asyncio

import httpx
import pytest

import spade_llm.llm.breaker as breaker_mod
from spade_llm.errors import EndpointDown, LLMCallError
from spade_llm.llm.base import LLMRequest, LLMResponse
from spade_llm.llm.breaker import CircuitBreaker, GuardedLLM
from spade_llm.llm.openai_http import StatusError
from spade_llm.llm.openai_http import classify as classify_http
from spade_llm.llm.retry import RETRYABLE
from spade_llm.types import Message


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Flaky:
    """Fails with ``kind`` for the first ``failures`` calls, then answers."""

    model = "m"

    def __init__(self, failures: int, kind: str, clock: Clock, step: float) -> None:
        self.failures, self.kind, self.clock, self.step, self.calls = failures, kind, clock, step, 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        self.clock.now += self.step
        if self.calls <= self.failures:
            raise LLMCallError(f"m: {self.kind}: down", kind=self.kind)
        return LLMResponse(text="ok")


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch):
    async def instant(_s: float) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(breaker_mod, "_sleep", instant)


REQUEST = LLMRequest(messages=[Message(role="user", content="hi")], role="solver")


def test_an_outage_shorter_than_the_window_is_waited_out():
    clock = Clock()
    llm = Flaky(failures=5, kind="unreachable", clock=clock, step=1.0)
    guarded = GuardedLLM(llm, CircuitBreaker("e", 30, clock))
    assert asyncio.run(guarded.complete(REQUEST)).text == "ok" and llm.calls == 6


def test_a_longer_outage_opens_the_breaker_for_every_request():
    clock = Clock()
    breaker = CircuitBreaker("http://x/v1", 30, clock)
    guarded = GuardedLLM(Flaky(failures=10**6, kind="server_error", clock=clock, step=4.0), breaker)
    with pytest.raises(EndpointDown, match=r"http://x/v1 unusable for 3[0-9] s"):
        asyncio.run(guarded.complete(REQUEST))
    with pytest.raises(EndpointDown):  # any later request too, at once
        asyncio.run(GuardedLLM(Flaky(0, "x", clock, 0), breaker).complete(REQUEST))


def test_any_answer_ends_the_streak():
    clock = Clock()
    breaker = CircuitBreaker("e", 30, clock)
    for _ in range(5):  # 5 x 20 s of failures, each ended by an answer: never 30 s in a row
        asyncio.run(GuardedLLM(Flaky(failures=4, kind="timeout", clock=clock, step=5.0), breaker).complete(REQUEST))
    assert breaker.opened is None


@pytest.mark.parametrize("kind", ["auth", "not_found"])
def test_refused_credentials_or_an_unknown_model_open_it_at_once(kind):
    clock = Clock()
    llm = Flaky(failures=1, kind=kind, clock=clock, step=0.0)
    with pytest.raises(EndpointDown, match=kind):
        asyncio.run(GuardedLLM(llm, CircuitBreaker("e", 30, clock)).complete(REQUEST))
    assert llm.calls == 1


def test_a_fault_of_one_request_is_passed_on_not_waited_out():
    clock = Clock()
    llm = Flaky(failures=1, kind="client_error", clock=clock, step=0.0)
    with pytest.raises(LLMCallError):
        asyncio.run(GuardedLLM(llm, CircuitBreaker("e", 30, clock)).complete(REQUEST))
    assert llm.calls == 1


def _status(code: int) -> StatusError:
    return StatusError(code, "no", httpx.Headers())


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_status(401), "auth"),
        (_status(403), "auth"),
        (_status(404), "not_found"),
        (_status(400), "client_error"),
        (_status(503), "server_error"),
        (httpx.ConnectError("All connection attempts failed"), "unreachable"),
        (httpx.RemoteProtocolError("peer closed connection"), "connection"),
    ],
)
def test_http_fault_kinds(exc, kind):
    assert classify_http(exc) == kind
    assert (kind in RETRYABLE) == (kind in {"server_error", "connection"})


def test_litellm_missing_key_is_auth_not_a_server_error():
    from spade_llm.llm.litellm import classify

    class APIError(Exception):
        pass

    exc = APIError("OpenAIException - Missing credentials. Please pass an `api_key` ...")
    assert classify(exc) == "auth"


def test_a_request_the_endpoint_never_answers_while_it_answers_others_gives_up():
    clock = Clock()
    breaker = CircuitBreaker("e", 30, clock)

    class OthersSucceed(Flaky):
        async def complete(self, request: LLMRequest) -> LLMResponse:
            breaker.success()  # meanwhile, every other request is answered
            return await super().complete(request)

    llm = OthersSucceed(failures=10**6, kind="server_error", clock=clock, step=5.0)
    with pytest.raises(LLMCallError, match="server_error"):
        asyncio.run(GuardedLLM(llm, breaker).complete(REQUEST))
    assert breaker.opened is None and 60 <= clock.now <= 70  # no hang, and no outage declared
