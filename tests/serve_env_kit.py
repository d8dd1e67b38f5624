"""A ``spade serve-env`` process and openenv-core's client, for the tests of serve-env and of the
clients that train against it (TRL's live environment, verifiers' url mode). Nothing here imports
openenv-core until a client is made: its import takes seconds."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from spade_llm import read_run

SPADE = [sys.executable, "-m", "spade_llm.cli"]
Policy = Callable[[list[dict[str, str]]], str]


def env_client(base_url: str) -> Any:
    """openenv-core's own client, sync: ``GenericEnvClient(base_url=...).sync()`` (imported here, not at
    collection: openenv-core's import takes seconds)."""
    from spade_llm._util.lazy import import_without
    from spade_llm.serve.env import OPENENV_WEB_INTERFACE

    GenericEnvClient = import_without("openenv.core", OPENENV_WEB_INTERFACE).GenericEnvClient

    return GenericEnvClient(base_url=base_url).sync()


# -- a spade serve-env process --------------------------------------------------------------------


class ServeEnv:
    """``spade serve-env ARGS --port 0`` in a process of its own; ``url`` once it listens."""

    def __init__(
        self,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        listen: bool = True,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            [*SPADE, "serve-env", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec_fn,  # e.g. a lower limit of open files
        )
        self.lines: list[str] = []
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = ""
        if listen:
            if not self._listening.wait(90):
                self.proc.kill()
                raise AssertionError("serve-env did not listen in 90 s:\n" + self.stderr)
            match = re.search(r"listening on (http://\S+)", self.stderr)
            assert match, self.stderr
            self.url = match.group(1)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self._listening.set()
        self._listening.set()  # it exited

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def serve_env() -> Iterator[Callable[..., ServeEnv]]:
    started: list[ServeEnv] = []

    def start(*args: str, **kw: Any) -> ServeEnv:
        server = ServeEnv(list(args), **kw)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def ask(api_base: str, profile: str) -> Policy:
    """The policy: each reply from serve-fake's ``profile`` at ``api_base`` (``.../v1``), the whole
    conversation sent as a chat request."""
    client = httpx.Client(timeout=30)

    def reply(messages: list[dict[str, str]]) -> str:
        body = {"model": profile, "messages": messages}
        answer = client.post(f"{api_base}/chat/completions", json=body).raise_for_status().json()
        return str(answer["choices"][0]["message"]["content"])

    return reply


def play(url: str, policy: Policy, episodes: int) -> list[list[Any]]:
    """``episodes`` whole episodes in one session; each as its list of StepResults (reset first)."""
    out = []
    with env_client(url) as env:
        for _ in range(episodes):
            results = [env.reset()]
            while not results[-1].done:
                results.append(env.step({"answer": policy(results[-1].observation["messages"])}))
            out.append(results)
    return out


def play_parallel(url: str, policy: Policy, sessions: int, episodes_each: int) -> list[list[Any]]:
    with ThreadPoolExecutor(sessions) as pool:
        runs = list(pool.map(lambda _i: play(url, policy, episodes_each), range(sessions)))
    return [episode for run in runs for episode in run]


def records(path: Path) -> Any:
    return read_run(path)  # strict: every journal line a record of its kind, checked against the others


SMALL = ["--model", "fake/default", "--tasks-per-epoch", "4", "--samples-per-task", "2", "--seed", "0"]
"""Epochs of 4 tasks x 2 samples: 8 episodes an epoch."""


class NotedClients:
    """What the serve-env clients a module builds (its ``serve_env_client``) saw, once ``watch`` patched it:
    how long each ``reset`` waited (seconds, in the order they returned) and the reward the server sent at
    each episode's end (trajectory id -> reward)."""

    def __init__(self) -> None:
        self.resets: list[float] = []
        self.finals: dict[str, float | None] = {}

    def watch(self, monkeypatch: Any, module: Any) -> NotedClients:
        real = module.serve_env_client

        def noted_client(*args: Any, **kwargs: Any) -> Any:
            client = real(*args, **kwargs)
            reset, step = client.reset, client.step

            async def timed_reset(**kw: Any) -> Any:
                started = time.monotonic()
                result = await reset(**kw)
                self.resets.append(time.monotonic() - started)
                return result

            async def noted_step(action: Any) -> Any:
                result = await step(action)
                if result.done:  # the reward the server itself sends at the end (env.reward)
                    self.finals[str(result.observation["trajectory_id"])] = result.reward
                return result

            client.reset, client.step = timed_reset, noted_step
            return client

        monkeypatch.setattr(module, "serve_env_client", noted_client)
        return self
