"""Errors raised by spade_llm.

A program that fails is data (an ``ExecutionResult`` with a status), not an exception.
Exceptions are for the framework's own trouble, and tell apart whose fault it is::

    SpadeError                 base of everything spade_llm raises on purpose
    ├── UserError              bad config, flag, file or template: the user can fix it
    │   ├── TemplateError      a prompt template is missing or does not render
    │   └── HookError          a user's on_epoch_end hook raised (hooks.py)
    ├── ModelError             the model misbehaved: unparsable or invalid answer, refusal
    │   └── LLMCallError       the endpoint failed for good (after retries)
    ├── SandboxUnavailable     the sandbox backend cannot run anything on this machine
    ├── ExecutorError          the executor lost its workers (a Ray worker died past its retries)
    ├── EndpointDown           a model endpoint stayed unusable: the run stops (exit 3), resumable
    └── EmptyEpochs            epoch after epoch accepted no task: the run stops (exit 5), resumable

Each pickles with its fields, so an error raised in a remote worker is raised as itself in the driver.
"""

from __future__ import annotations

from enum import IntEnum

DISTRIBUTION = "spade-selfplay"
"""The name spade_llm is installed by (``pip install spade-selfplay``; PyPI's ``spade-llm`` is another
project, an extension of the SPADE agent platform); the import package stays ``spade_llm``."""


def pip_install(extra: str = "") -> str:
    """The command that installs spade_llm with ``extra``: what an error about a missing module says."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {DISTRIBUTION}"


class Exit(IntEnum):
    """The ``spade`` command's exit codes, the one table of them (docs/cli.md's "Exit codes" lists the same)."""

    OK = 0
    """Done."""
    INTERNAL = 1
    """A bug of ours ("internal error")."""
    USER = 2
    """A mistake of the user's (``UserError``, a bad flag, an OS error a user can fix): one line on stderr."""
    ENDPOINT = 3
    """The model endpoint was unusable (``EndpointDown``): the circuit breaker stopped the run, resumable."""
    EXECUTOR = 4
    """The executor lost its workers (``ExecutorError``: Ray workers dead past their retries), resumable."""
    EMPTY_EPOCHS = 5
    """``controller.max_empty_epochs`` epochs in a row accepted no task (``EmptyEpochs``), resumable."""
    CHECK_FAILED = 6
    """``--check``: what ``exec``, ``verify`` or ``evaluate`` checked failed (without it they exit 0
    whenever they produced their results, whatever the verdicts: the results are the output)."""
    INTERRUPTED = 130
    """Ctrl-C (SIGTERM for serve-env)."""


class SpadeError(Exception):
    """Base class of every error spade_llm raises on purpose."""


class UserError(SpadeError):
    """Bad input from the user: config, CLI flag, input file, template folder."""


class TemplateError(UserError):
    """A prompt template is missing, does not parse, or uses an undefined variable."""


class ModelError(SpadeError):
    """The model answered something unusable (not JSON, invalid task, refusal, empty)."""


class LLMCallError(ModelError):
    """The endpoint could not produce an answer, after retries.

    ``kind`` is one of: rate_limit, server_error, timeout, connection (dropped), unreachable
    (refused, no such host), auth (401/403, missing key), not_found (404: model or URL),
    bad_response, client_error (other 4xx: this request is wrong).
    """

    def __init__(self, message: str, kind: str = "bad_response") -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[type[LLMCallError], tuple[str, str]]:
        return type(self), (str(self), self.kind)


class SandboxUnavailable(SpadeError):
    """The sandbox backend cannot run programs here (missing binary, probe failed, broken)."""


class ExecutorError(SpadeError):
    """Work could not be run where the executor sends it: its workers died more often than
    ``ray.max_retries`` allows, or none could start. Nothing of the lost work was recorded:
    ``--resume`` goes on (with either executor)."""


class EndpointDown(SpadeError):
    """A model endpoint was unusable for longer than the circuit breaker allows (or refused our
    credentials): the run stops with ``complete: false``; ``--resume`` finishes it later."""

    def __init__(self, message: str, endpoint: str = "") -> None:
        super().__init__(message)
        self.endpoint = endpoint

    def __reduce__(self) -> tuple[type[EndpointDown], tuple[str, str]]:
        return type(self), (str(self), self.endpoint)


class EmptyEpochs(SpadeError):
    """``controller.max_empty_epochs`` epochs in a row accepted no task: the run stops with
    ``complete: false`` and a message naming the rejections (the likely cause) instead of asking the
    generator again and again; ``--resume`` goes on once the cause is fixed."""

    def __init__(self, message: str, epoch: int = -1) -> None:
        super().__init__(message)
        self.epoch = epoch
        """The last epoch of the empty streak (the one the run stopped after)."""

    def __reduce__(self) -> tuple[type[EmptyEpochs], tuple[str, int]]:
        return type(self), (str(self), self.epoch)
