"""Backends by name: lazy imports, clear errors, and ``auto``'s fallback."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest
from modules_held import data_models_after
from sandbox_backends import needs

from spade_llm.errors import SandboxUnavailable, UserError
from spade_llm.sandbox import registry
from spade_llm.sandbox.base import Sandbox
from spade_llm.sandbox.pool import WorkerPool
from spade_llm.sandbox.registry import BACKENDS, backend_availability, get_sandbox
from spade_llm.sandbox.subprocess import SubprocessSandbox


def test_subprocess_backend_by_name():
    sandbox = get_sandbox("subprocess")
    assert isinstance(sandbox, SubprocessSandbox) and sandbox.name == "subprocess" and not sandbox.isolating
    sandbox.close()
    sandbox.close()  # safe twice


def test_unknown_backend_is_a_user_error():
    with pytest.raises(UserError, match=r"unknown sandbox backend 'nope'.*subprocess"):
        get_sandbox("nope")


def test_missing_backend_module_is_unavailable(monkeypatch):
    monkeypatch.setitem(BACKENDS, "future", "spade_llm.sandbox.not_written_yet:Future")
    with pytest.raises(SandboxUnavailable, match="future sandbox is not available yet"):
        get_sandbox("future")


def test_auto_falls_back_to_subprocess_with_a_warning(monkeypatch, caplog):
    monkeypatch.setattr(registry, "AUTO_ORDER", ("future",))
    monkeypatch.setitem(BACKENDS, "future", "spade_llm.sandbox.not_written_yet:Future")
    with caplog.at_level(logging.WARNING, logger="spade_llm.sandbox"):
        sandbox = get_sandbox("auto")
    assert isinstance(sandbox, SubprocessSandbox)
    assert "NOT a security boundary" in caplog.text and "future: the future sandbox is not available yet" in caplog.text


class _Works(Sandbox):
    name = "works"
    isolating = True

    def run(self, program, limits):  # pragma: no cover - never called
        raise AssertionError


def test_auto_prefers_a_working_isolating_backend(monkeypatch):
    monkeypatch.setattr(registry, "AUTO_ORDER", ("works",))
    monkeypatch.setitem(BACKENDS, "works", f"{__name__}:_Works")
    assert isinstance(get_sandbox("auto"), _Works)


def test_availability_lists_every_backend():
    status = backend_availability()
    assert set(status) == set(BACKENDS) and status["subprocess"] is None


def test_subprocess_unavailable_without_an_interpreter():
    with pytest.raises(SandboxUnavailable):
        SubprocessSandbox(python="/nonexistent/python")


def test_auto_picks_bwrap_where_it_works(caplog):
    if backend_availability()["bwrap"] is not None:
        pytest.skip(f"bwrap unavailable here: {backend_availability()['bwrap']}")
    with caplog.at_level(logging.WARNING, logger="spade_llm.sandbox"):
        sandbox = get_sandbox("auto")
    try:
        assert sandbox.name == "bwrap" and sandbox.isolating
        assert "NOT a security boundary" not in caplog.text
    finally:
        sandbox.close()


def test_every_backend_is_importable_and_says_why_it_is_unavailable():
    for name, reason in backend_availability().items():
        assert reason is None or (isinstance(reason, str) and reason), name


class _DockerStub(Sandbox):
    name = "docker"
    isolating = True
    images: ClassVar[list[str | None]] = []

    def __init__(self, image: str | None = None) -> None:
        self.images.append(image)

    def run(self, program, limits):  # pragma: no cover - never called
        raise AssertionError


def test_docker_image_reaches_the_docker_backend(monkeypatch):
    monkeypatch.setitem(BACKENDS, "docker", f"{__name__}:_DockerStub")
    get_sandbox("docker", docker_image="registry.local/py:3.11")
    assert _DockerStub.images == ["registry.local/py:3.11"]


class _Counted(Sandbox):
    name = "counted"
    made: ClassVar[list[_Counted]] = []

    def __init__(self) -> None:
        self.closed = 0
        self.made.append(self)

    def run(self, program, limits):  # pragma: no cover - never called
        raise AssertionError

    def close(self) -> None:
        self.closed += 1


def test_start_sandbox_hands_over_what_get_sandbox_makes(monkeypatch):
    monkeypatch.setitem(BACKENDS, "counted", f"{__name__}:_Counted")
    _Counted.made.clear()
    starting = registry.start_sandbox("counted")
    sandbox = starting.result()
    assert isinstance(sandbox, _Counted)
    assert _Counted.made == [sandbox]
    starting.close()  # handed over: the caller closes it, not the start
    assert sandbox.closed == 0


def test_start_sandbox_never_taken_is_closed(monkeypatch):
    monkeypatch.setitem(BACKENDS, "counted", f"{__name__}:_Counted")
    _Counted.made.clear()
    starting = registry.start_sandbox("counted")
    starting.close()
    starting.close()
    assert [s.closed for s in _Counted.made] == [1]


def test_start_sandbox_raises_what_get_sandbox_raised(monkeypatch):
    monkeypatch.setitem(BACKENDS, "future", "spade_llm.sandbox.not_written_yet:Future")
    with pytest.raises(SandboxUnavailable, match="future sandbox is not available yet"):
        registry.start_sandbox("future").result()
    with pytest.raises(UserError, match="unknown sandbox backend"):
        registry.start_sandbox("nope").result()


class _Pooled(Sandbox):
    name = "pooled"
    pooled = True
    made: ClassVar[list[bool]] = []

    def __init__(self, prewarm: int | None = None, one_run: bool = False) -> None:
        self.made.append(one_run)

    def run(self, program, limits):  # pragma: no cover - never called
        raise AssertionError


def test_one_run_is_passed_to_a_pooled_backend(monkeypatch):
    """``spade exec`` runs one program: its sandbox's start did not need the second worker a 2-core
    machine's default starts, whose start only competed with the command's own imports."""
    monkeypatch.setitem(BACKENDS, "pooled", f"{__name__}:_Pooled")
    monkeypatch.setitem(BACKENDS, "counted", f"{__name__}:_Counted")
    _Pooled.made.clear()
    get_sandbox("pooled")
    get_sandbox("pooled", one_run=True)
    registry.start_sandbox("pooled", one_run=True).result()
    assert _Pooled.made == [False, True, True]
    assert isinstance(get_sandbox("counted", one_run=True), _Counted)  # not pooled: nothing to pass


@needs("bwrap")
def test_bwrap_for_one_run_has_one_worker():
    sandbox = get_sandbox("bwrap", one_run=True)
    assert isinstance(sandbox, WorkerPool)
    try:
        assert sum(len(workers) for workers in sandbox._idle.values()) == 1
        assert not sandbox._prewarming
    finally:
        sandbox.close()


SEES_TYPING = "import sys\nprint('typing' in sys.modules)"


@pytest.mark.parametrize("backend", [pytest.param(name, marks=needs(name)) for name in ("bwrap", "docker")])
def test_only_a_pool_imports_what_solutions_use_before_it_forks(backend):
    """A pool's worker imports ``typing`` and the like once for the many executions it forks; a one-run
    sandbox's would make its only run wait ~25 ms for modules it may not use."""
    from spade_llm.sandbox.base import Limits, Program

    seen = {}
    for one_run in (False, True):
        sandbox = get_sandbox(backend, one_run=one_run)
        try:
            end = sandbox.run(Program(source=SEES_TYPING), Limits())
        finally:
            sandbox.close()
        assert end.status == "ok", end.stderr
        seen[one_run] = end.stdout
    assert seen == {False: "True\n", True: "False\n"}


def test_backends_import_without_the_data_models():
    # what lets the CLI start a sandbox while it imports pydantic and the models on its main thread
    assert data_models_after("from spade_llm.sandbox import registry\nimport spade_llm.sandbox.bwrap") == []


@needs("bwrap")
def test_a_backends_start_builds_no_data_model():
    """The start's probe run is read from its ``Ending``: it imported pydantic and the records (~120 ms)
    in the start's thread, which then held the import lock the command's own imports waited on."""
    code = "from spade_llm.sandbox.registry import get_sandbox\nget_sandbox('bwrap', one_run=True).close()"
    assert data_models_after(code) == []
