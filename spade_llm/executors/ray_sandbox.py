"""The sandbox on a Ray cluster: ``RaySandbox`` runs each program on a ``SandboxHost`` actor, one or more per
node, each with a warm sandbox of its own (``config.sandbox.backend`` on that node).

``spade serve-env --executor ray`` judges this way: its episodes are conversations with the clients, so
they stay in the server's process, but what they run (each reply's tests, each proposal's validation) goes
to the cluster. ``Sandbox.run`` is blocking and thread-safe, and the judge and validation call it from
worker threads, so the proxy blocks on the actor's answer. A program's result is a function of the program
and its limits, so the records equal the local sandbox's, whatever node ran what. A host that dies (Ray
restarts it ``ray.max_retries`` times) has its program run again on the next free one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

import ray

from ..config import RunConfig
from ..errors import ExecutorError, SandboxUnavailable, SpadeError, UserError
from ..sandbox.base import Limits, Program, Sandbox
from ..sandbox.registry import get_sandbox
from ..types import ExecutionResult
from .ray import forwarded_env, ray_connect, start_actors

__all__ = ["RaySandbox", "SandboxHost"]


class SandboxHost:
    """One actor: a warm sandbox of the configured backend on its node; ``run`` returns the result, or the
    ``SpadeError`` the backend raised (the proxy raises it), so an error means the same on either side."""

    def __init__(self, backend: str, docker_image: str | None, env: dict[str, str]) -> None:
        os.environ.update(env)
        node_ip: Callable[[], str] = ray.util.get_node_ip_address  # ray's API has no annotations
        self.node = node_ip()
        self.error: SpadeError | None = None
        self.sandbox: Sandbox | None = None
        try:
            self.sandbox = get_sandbox(backend, docker_image=docker_image)
        except SpadeError as e:
            self.error = e

    def ready(self) -> dict[str, Any]:
        if self.error is not None or self.sandbox is None:
            return {"error": self.error, "node": self.node}
        return {"sandbox": self.sandbox.name, "isolating": self.sandbox.isolating, "node": self.node}

    def run(self, program: Program, limits: Limits) -> ExecutionResult | SpadeError:
        assert self.sandbox is not None
        try:
            return self.sandbox.run(program, limits)
        except SpadeError as e:
            return e


class RaySandbox(Sandbox):
    """``Sandbox.run`` on the cluster's ``SandboxHost`` actors, the least busy live one first (see the module
    docstring).

    Raises (from the constructor):
        UserError: the cluster cannot be reached, or a host cannot start its sandbox.
        ExecutorError: the hosts did not start within ``ray.start_timeout_s``.
    """

    name = "ray"

    def __init__(self, config: RunConfig) -> None:
        r = config.ray
        self.owns_cluster = not ray.is_initialized()
        if self.owns_cluster:
            ray_connect(r)
        self.per_host = r.concurrency_per_worker or config.controller.concurrency
        try:
            sandbox = (config.sandbox.backend, config.sandbox.docker_image, forwarded_env())
            self.hosts: list[Any] = start_actors(SandboxHost, r, self.per_host, *sandbox)
        except UserError:
            self.close()
            raise
        try:
            ready = ray.get([h.ready.remote() for h in self.hosts], timeout=r.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise ExecutorError(
                f"{len(self.hosts)} Ray sandbox hosts did not start within {r.start_timeout_s:g} s"
            ) from None
        for info in ready:
            if "error" in info:
                self.close()
                error = info["error"]
                raise UserError(f"Ray sandbox host on {info['node']}: {error}") from None
        self.isolating = all(bool(i["isolating"]) for i in ready)
        self.backends = sorted({str(i["sandbox"]) for i in ready})
        self.name = f"ray:{','.join(self.backends)}"  # the manifest's sandbox: where, and which backend
        self.nodes = sorted({str(i["node"]) for i in ready})
        self._busy = [0] * len(self.hosts)
        self._dead: set[int] = set()
        self._free = threading.Condition()

    def describe(self) -> dict[str, Any]:
        """Where the programs ran, for the manifest."""
        return {"name": "ray", "nodes": len(self.nodes), "hosts": len(self.hosts), "backends": self.backends}

    def run(self, program: Program, limits: Limits) -> ExecutionResult:
        while True:
            index = self._acquire()
            try:
                result = ray.get(self.hosts[index].run.remote(program, limits))
            except ray.exceptions.RayActorError:
                self._dead.add(index)  # past its restarts: the program goes to another host
                continue
            except ray.exceptions.RayError as e:
                raise SandboxUnavailable(f"a Ray sandbox host failed: {e}") from None
            finally:
                self._release(index)
            if isinstance(result, SpadeError):
                raise result
            assert isinstance(result, ExecutionResult)
            return result

    def _acquire(self) -> int:
        with self._free:
            while True:
                live = [i for i in range(len(self.hosts)) if i not in self._dead]
                if not live:
                    raise SandboxUnavailable("every Ray sandbox host died more than ray.max_retries times")
                free = [i for i in live if self._busy[i] < self.per_host]
                if free:
                    index = min(free, key=lambda i: (self._busy[i], i))
                    self._busy[index] += 1
                    return index
                self._free.wait()

    def _release(self, index: int) -> None:
        with self._free:
            self._busy[index] -= 1
            self._free.notify()

    def close(self) -> None:
        for host in getattr(self, "hosts", []):
            with contextlib.suppress(Exception):
                ray.kill(host, no_restart=True)
        self.hosts = []
        if self.owns_cluster and ray.is_initialized():
            ray.shutdown()
