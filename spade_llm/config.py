"""Run configuration: pydantic models with a docstring per field, loaded from YAML.

``configs/default.yaml`` holds every field; a user's ``--config`` file overrides parts of it
(deep merge), and CLI flags override both.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import UserError
from .export.names import ExportFormat, GeneratorFormat
from .kinds.names import DEFAULT_KIND
from .languages import DEFAULT_ANSWER_LANGUAGE, TOOLCHAINS
from .sandbox.base import Limits
from .sandbox.registry import AUTO, BACKEND_NAMES
from .types import TaskKind

if TYPE_CHECKING:
    BackendName = str
else:
    BackendName = Literal[BACKEND_NAMES]  # built from the registry's names: mypy takes no computed Literal


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RoleConfig(_Section):
    """How one role (generator or solver) calls its model."""

    model: str = "fake/default"
    """litellm model string (``openai/<name>`` with ``api_base`` for any OpenAI-compatible server),
    or ``fake/<profile>`` for the built-in offline model."""
    api_base: str | list[str] | None = None
    """Endpoint URL, e.g. ``http://localhost:8000/v1``; a list spreads requests over several servers."""
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature."""
    max_tokens: int = Field(default=2048, gt=0)
    """Upper bound on tokens in one answer."""

    @model_validator(mode="before")
    @classmethod
    def _json_mode(cls, data: Any) -> Any:
        return _read_json_mode(data, cls) if isinstance(data, dict) else data


def _read_json_mode(section: dict[str, Any], role: type[RoleConfig]) -> dict[str, Any]:
    """A role's section with the older ``json_mode: true/false`` read as ``response_format:
    json_object/text`` where the role has that field (the generator); elsewhere it meant nothing and is
    dropped. An explicit ``response_format`` wins."""
    if "json_mode" not in section:
        return section
    section = dict(section)
    legacy = section.pop("json_mode")
    if "response_format" in role.model_fields and "response_format" not in section and legacy is not None:
        section["response_format"] = "json_object" if legacy else "text"
    return section


class GeneratorConfig(RoleConfig):
    response_format: Literal["text", "json_object", "json_schema"] = "json_schema"
    """What the answer is asked to be: ``json_schema`` sends the task schema (``{"tasks": [...]}``,
    derived from the task model; vLLM, llama.cpp, Ollama and OpenAI enforce it by grammar),
    ``json_object`` any JSON object, ``text`` nothing. A server that refuses ``json_schema`` gets
    ``json_object`` from then on, once, recorded in ``manifest.json``. The older ``json_mode:
    true/false`` still reads as ``json_object``/``text``. (Solver requests carry no
    ``response_format``: an induction answer is code in prose.)"""
    temperature: float = Field(default=0.9, ge=0.0, le=2.0)
    """Sampling temperature: higher gives more varied tasks."""
    max_tokens: int = Field(default=4096, gt=0)
    """Upper bound on tokens in one answer (several tasks with code fit in it)."""
    examples_shown: int = Field(default=3, ge=0)
    """How many accepted tasks the proposal prompt shows as examples."""
    samples_per_request: int = Field(default=1, ge=1)
    """Answers to each proposal prompt (K), each with its own seed and its own ``proposals.jsonl`` row:
    the generator's groups (GRPO) and same-prompt pairs (DPO), as ``solver.samples_per_task`` makes the
    solver's. Every answer's tasks are judged, so an epoch asks K times the tasks."""


class SolverConfig(RoleConfig):
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    """Sampling temperature."""
    max_turns: int = Field(default=3, ge=1)
    """Attempts per task: the first try plus repair turns after feedback."""
    public_tests: int = Field(default=3, ge=1)
    """How many of a task's tests the solver sees and gets feedback on; the rest stay hidden."""
    stderr_tail_lines: int = Field(default=15, ge=1)
    """How many trailing lines of stderr a repair prompt quotes."""
    samples_per_task: int = Field(default=1, ge=1)
    """Independent episodes per accepted task (K): each has its own seed, so samples differ; the
    per-task pass rate over them feeds ``task_stats.jsonl`` (learnability, GRPO groups, DPO pairs)."""
    task_budget_s: float | None = Field(default=None, gt=0)
    """Most seconds the solver may spend on one task, all turns and samples together (model time
    included); a sample that starts past it ends at once, recorded with the ``budget_exhausted``
    flag. Unset: no limit beyond each execution's and request's own."""


class LLMConfig(_Section):
    timeout_s: float = Field(default=120.0, gt=0)
    """Longest silence allowed, in seconds: no byte from the server for this long (before the answer
    starts or between streamed chunks) fails the attempt as a ``timeout``, which is retried. A slow
    server that keeps streaming is never cut by it."""
    answer_timeout_s: float = Field(default=900.0, gt=0)
    """Cap on one whole answer, in seconds. A streamed answer still going when it runs out is cut and
    kept as truncated (``finish_reason: answer_cap``, a content fault), not sent again: the same
    request would take as long again. Without streaming (``stream: false``, litellm) it bounds the
    whole request and running out is a ``timeout``."""
    stream: bool = True
    """Stream answers from OpenAI-compatible servers (server-sent events), so ``timeout_s`` measures
    silence, not length. A server that answers a streaming request with a plain JSON body is still
    understood; ``false`` sends plain requests, where ``timeout_s`` bounds each whole attempt."""
    max_inflight_per_endpoint: int | None = Field(default=None, ge=1)
    """Requests in flight at once per server URL, all roles together (a llama.cpp server with one slot
    wants 1, vLLM many); more wait their turn on our side, where no timeout runs. Unset: only
    ``controller.concurrency`` limits them."""
    max_retries: int = Field(default=4, ge=0)
    """Retries per request on rate limits, 5xx, timeouts and dropped connections."""
    backoff_s: float = Field(default=1.0, ge=0)
    """First backoff delay; it doubles per retry, with jitter, capped at 30 s."""
    retry_budget_s: float | None = Field(default=600.0, gt=0)
    """Most seconds one request may take, all attempts and waits included; unset: bounded by max_retries only."""
    max_retry_after_s: float = Field(default=60.0, ge=0)
    """Longest wait a server's Retry-After is honoured for (a longer ask waits this long)."""
    transport: Literal["auto", "litellm", "http"] = "auto"
    """How ``openai/<name>`` with an ``api_base`` (an OpenAI-compatible server) is reached: ``auto`` and
    ``http`` use the built-in HTTP client (starts seconds faster: no litellm import), ``litellm`` goes
    through litellm like every other provider. ``http`` with any other model is an error."""
    breaker_s: float = Field(default=30.0, gt=0)
    """Circuit breaker: once an endpoint has failed every request for this long (after each request's
    own retries, all requests in flight counted together), the run stops with exit code 3 and
    ``--resume`` finishes it later; until then failed requests wait and try again, so an outage is
    never recorded as the model's failure. A refused key or an unknown model stops the run at once."""
    cache_dir: str | None = None
    """Folder of the on-disk response cache (off when unset): a re-run with the same prompts, parameters
    and seeds is answered from it at no cost."""


class SandboxConfig(_Section):
    backend: BackendName = Field(
        default=AUTO,
        description=f"Where programs run, one of {', '.join(BACKEND_NAMES)}: ``{AUTO}`` picks the strongest "
        "isolating backend that works here.",
    )  # the names are the registry's (sandbox.registry.BACKEND_NAMES), so the description is built from them
    timeout_s: float = Field(default=10.0, gt=0)
    """Wall-clock limit for one execution, in seconds."""
    test_timeout_s: float = Field(default=3.0, gt=0)
    """CPU seconds one test call may use inside an execution (so a verdict does not move with the
    machine's load); a call that blocks instead is stopped by a wall backstop (10 times this, never past
    the execution's own deadline)."""
    memory_mb: int = Field(default=512, ge=16)
    """Memory limit of one execution, in MiB: everything it holds at once on bwrap and docker (its
    processes and threads together, the files it writes in its scratch directory and /dev/shm, and
    about 16 MiB of spade's own processes in the sandbox), so a program gets about this less 16 MiB.
    Without cgroups (bwrap not as root) and on subprocess, each process is limited on its own."""
    max_processes: int = Field(default=64, ge=1)
    """Processes and threads one execution may have."""
    scratch_mb: int = Field(default=64, ge=1)
    """Size of the scratch directory, and the largest file a program may write, in MiB."""
    output_limit_bytes: int = Field(default=1 << 20, ge=1024)
    """Bytes kept per output stream; the rest is dropped and flagged as truncated."""
    compile_timeout_s: float = Field(default=30.0, gt=0)
    """Wall seconds the compile of an answer in a compiled language (C++, Java, Go, Rust; Node's syntax
    check) may take, in the sandbox under at least 1 GiB; past it the answer fails as a compile error
    (docs/languages.md)."""
    docker_image: str | None = None
    """Image for the docker backend; default a slim Python of the host's minor version."""

    def limits(self) -> Limits:
        """The ``Limits`` of one execution under this section (every ``Limits`` built from a config)."""
        return Limits(
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            max_processes=self.max_processes,
            scratch_mb=self.scratch_mb,
            output_limit_bytes=self.output_limit_bytes,
        )


class ValidationConfig(_Section):
    """Gates a proposed task passes besides the standard ones (docs/records.md; those always apply)."""

    banned_imports: list[str] = Field(default_factory=list)
    """Modules a generated task's reference may not import (by top-level name), rejected as
    ``banned_import``: a policy for deterministic, portable tasks, not security (the sandbox is the
    boundary). Empty: off. Absolute Zero's list is an example: ``[random, time, datetime, os, sys,
    subprocess, threading, multiprocessing, hashlib, socket, shutil, pathlib, signal, asyncio]``.
    Imported benchmarks (tasks with ``check_code``) are not checked."""
    min_kill_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    """Share of the reference's non-equivalent mutants (an operator swapped, a literal moved by one,
    ``and``/``or`` swapped, a ``not`` dropped, a constant returned) the tests must tell apart from
    it, or the task is rejected as ``weak_tests`` with a surviving mutant in ``detail``. A mutant
    that agrees with the reference on the tests' inputs and their neighbours is equivalent and
    ignored. 0 turns the mutation check off (the stand-in check stays)."""
    max_mutants: int = Field(default=40, ge=1)
    """Mutants run per task at most (chosen by a stable key when the reference has more sites)."""


class BugfixConfig(_Section):
    """Bug-fix tasks (docs/bugfix.md): how large a bug may be, and how many edits a procedural one makes."""

    max_changed_lines: int = Field(default=3, ge=1)
    """Lines a bug may change, counted in a normalised diff against the reference (comments, blank lines
    and layout left out): a larger edit is rejected as ``bug_too_large``, since a fixer should hunt a bug,
    not rewrite the program."""
    base_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """Share of bug-fix requests made on one of the run's accepted tasks (the generator is shown its
    statement, reference and tests and hides a bug in it, as Self-play SWE-RL's injector does); the rest,
    and every request before the run holds such a task, write a new function with its bug, so the run's
    functions keep growing. Which requests get a base is drawn by a key of (seed, epoch, request)."""
    max_bugs: int = Field(default=3, ge=1)
    """Edits one procedural bug combines at most (SWE-smith's "combine"): the fake injector makes more of
    them at a higher target difficulty, and ``spade import --derive bugfix`` draws from 1 to this many."""


class ControllerConfig(_Section):
    epochs: int = Field(default=3, ge=1)
    """Number of epochs (propose, validate, solve, adapt)."""
    tasks_per_epoch: int = Field(default=8, ge=1)
    """Tasks the generator is asked for in each epoch."""
    proposals_per_request: int = Field(default=1, ge=1)
    """Tasks asked for in one generator request. One per request keeps answers short (less
    truncation; a broken answer loses one task, not several) and lets every proposal run at once."""
    concurrency: int = Field(default=4, ge=1)
    """Model requests and sandbox executions in flight at once."""
    initial_difficulty: float = Field(default=0.3, ge=0.0, le=1.0)
    """Target difficulty of the first epoch."""
    band: tuple[float, float] = (0.3, 0.7)
    """Pass-rate band to stay in: above it tasks get harder, below it easier."""
    difficulty_step: float = Field(default=0.1, gt=0.0, le=1.0)
    """How far the target difficulty moves per epoch when the pass rate leaves the band."""
    min_episodes: int = Field(default=4, ge=1)
    """An epoch with fewer episodes than this is too small to measure: the difficulty stays."""
    epoch_budget_s: float | None = Field(default=None, gt=0)
    """Most seconds one epoch may take; when it runs out, the epoch asks for no more tasks and
    starts no new episode, finishes what runs, and records a warning. Unset: no limit."""
    novelty_threshold: float = Field(default=0.9, gt=0.0, le=1.0)
    """A task whose code is at least this similar to an accepted one is rejected as a duplicate."""
    max_empty_epochs: int | None = Field(default=3, ge=1)
    """Epochs in a row that accept no task before the run stops (exit 5, ``complete: false``, the
    rejections named; ``--resume`` goes on, with as many again). None: it never stops for that."""
    empty_epoch_pause_s: float = Field(default=1.0, ge=0.0)
    """The pause before the epoch after one that accepted no task, doubled for each more in a row (at
    most 60 s), so a generator that fails fast is not asked again at once. Not in the records."""
    overlap: bool = False
    """Make the next epoch's tasks while this one's episodes are played (``spade serve-env`` turns it on:
    ``env.overlap``), so no episode waits at an epoch boundary for proposals and validation. An epoch
    starts once the one before it has decided all its tasks and the one before that has finished; its
    plan reads the epochs before the one before it, and its target is the one before's moved by the last
    measured pass rate (the target moves every epoch, on a measurement one epoch older). Metrics rows are
    still written in epoch order. Not with ``trainer.command``."""

    @model_validator(mode="after")
    def _band_ordered(self) -> ControllerConfig:
        lo, hi = self.band
        if not 0.0 <= lo < hi <= 1.0:
            raise ValueError(f"band must satisfy 0 <= low < high <= 1, got {list(self.band)}")
        return self


def _default_kinds() -> list[TaskKind]:
    return [DEFAULT_KIND]


def _default_languages() -> list[str]:
    return [DEFAULT_ANSWER_LANGUAGE]


class CurriculumConfig(_Section):
    """What the generator is asked for, epoch after epoch."""

    goal: str | None = None
    """The capability the tasks should train, in words (e.g. "dynamic programming on strings"); every
    proposal prompt carries it."""
    topics: list[str] | None = None
    """Focus topics handed round an epoch's requests; unset: the built-in list (strings, lists, ...)."""
    kinds: dict[TaskKind, float] | list[TaskKind] = Field(default_factory=_default_kinds)
    """Task kinds to propose: a mix ``{induction: 0.6, deduction: 0.2, abduction: 0.2}`` (weights), or a
    list of names (equal weights); an epoch's requests get their kinds by ``kinds.allocate_kinds``."""
    name_repeats: int = Field(default=3, ge=0)
    """Diversity steered, not only policed: each proposal prompt names up to this many accepted tasks the
    last epoch's duplicates copied at least twice, and asks for tasks unlike them (0: never)."""
    languages: dict[str, float] | list[str] = Field(default_factory=_default_languages)
    """Languages a whole-program answer is asked in (``program`` tasks: ``TaskKind.answer_languages``): a mix
    ``{cpp: 1, python: 1}`` (weights) or a list of names (equal weights), each a name of
    ``languages.TOOLCHAINS``; each episode gets one by its key (seed, epoch, task, sample:
    ``kinds.mix.episode_language``). Every other kind's answer is Python, whatever this says."""

    @model_validator(mode="after")
    def _topics_not_empty(self) -> CurriculumConfig:
        if self.topics is not None and not [t for t in self.topics if t.strip()]:
            raise ValueError("topics must name at least one topic (or be left unset)")
        if not self.kinds:
            raise ValueError("kinds must name at least one task kind")
        from .kinds.mix import normalize_mix

        normalize_mix(self.kinds)  # ValueError: a negative weight, or none positive
        if not self.languages:
            raise ValueError("languages must name at least one answer language")
        unknown = [name for name in self.languages if name not in TOOLCHAINS]
        if unknown:
            raise ValueError(f"unknown answer language {unknown[0]!r}; known: {', '.join(TOOLCHAINS)}")
        normalize_mix(self.languages, "language")
        return self


class HooksConfig(_Section):
    """Code run at points of the loop, as ``module:function`` entries."""

    on_epoch_end: list[str] = Field(default_factory=list)
    """Called after each epoch's metrics are written, with one ``EpochEnd`` argument (run directory,
    epoch, metrics row, config): exports, reports, a trainer step. A hook that raises stops the run."""


def _trainer_formats() -> list[ExportFormat]:
    return ["sft", "grpo"]


class TrainerConfig(_Section):
    """A training step between epochs: fresh exports, the user's command, maybe new models."""

    command: str | list[str] | None = None
    """The command to run (a list, or a string split like a shell's words; no shell runs it):
    ``{exports}``, ``{run_dir}`` and ``{epoch}`` in it are replaced, and without ``{exports}`` the
    export folder is appended as the last argument. If it writes a JSON object naming a model to
    the file ``$SPADE_SWITCH_FILE`` names (its output is never read for one), later epochs use it:
    ``solver_model``/``api_base`` for the solver, ``generator_model``/``generator_api_base`` for the
    generator, ``model``/``model_api_base`` for both (a role's own key wins). None: no training step."""
    every_epochs: int = Field(default=1, ge=1)
    """Run the command after every this many epochs (after epochs N-1, 2N-1, ...)."""
    formats: list[ExportFormat] = Field(default_factory=_trainer_formats)
    """What is exported for the command, each to ``RUN_DIR/exports/epoch-NNN/<format>.jsonl``
    (``verl.parquet``, which needs pyarrow)."""
    generator_formats: list[GeneratorFormat] = Field(default_factory=list)
    """The generator's training data exported for the command too (``spade export --role generator``),
    each to ``RUN_DIR/exports/epoch-NNN/generator-<format>.jsonl``: what a step that trains the
    generator (and prints ``generator_model``) learns from. Empty: the solver's exports only."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Longest time the command may take (None: no limit); past it the run stops, ``--resume`` retries."""
    pass_env: list[str] = Field(default_factory=list)
    """Key-like environment variables the command gets anyway, by name or shell-style glob
    (``[HF_TOKEN, WANDB_API_KEY, "AWS_*"]``). The command gets our environment (PATH, HOME, the
    locale, caches, ``SPADE_*``...) less every key-like variable: a word of the name ending in KEY or
    TOKEN, or AUTH; SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL or COOKIE in it; a value that is a
    URL with credentials (``spade_llm._util.redact.key_like``). Its logs mask the values of our key-like
    variables and the credentials of URLs either way."""

    @model_validator(mode="after")
    def _pass_env_names(self) -> TrainerConfig:
        for name in self.pass_env:
            if not name.strip() or "=" in name:
                raise ValueError(f"pass_env lists variable names or globs, got {name!r}")
        return self


class RewardConfig(_Section):
    pass_base: float = 1.0
    """Reward for passing every test at difficulty 0 on the first turn."""
    difficulty_bonus: float = 1.0
    """Extra reward for passing, times the task's difficulty."""
    turn_penalty: float = 0.2
    """Subtracted from a pass per extra turn it took."""
    fail: float = -0.2
    """Reward of an episode that never passed (plus partial credit for tests passed)."""
    partial_credit: float = 0.3
    """Credit for the fraction of the *hidden* tests the last attempt passed, on failure: an answer
    that passes the tests shown and fails hidden ones (the hard-coding signature) earns none."""
    timeout: float = -0.5
    """Reward when the last attempt timed out."""
    error: float = -0.4
    """Reward when the last attempt did not load or crashed before any test ran."""


class RayConfig(_Section):
    """Where and how ``executor: ray`` runs validations and episodes (``pip install 'spade-selfplay[ray]'``)."""

    address: str | None = None
    """Cluster to join: ``auto`` (this machine is a node of one), ``HOST:6379`` (the head's GCS) or
    ``ray://HOST:10001`` (Ray Client). None: the cluster ``RAY_ADDRESS`` names, else a new local one."""
    workers_per_node: int = Field(default=1, ge=1)
    """Worker actors placed on each node alive at the start; each keeps its own warm sandbox."""
    worker_cpus: float = Field(default=0.5, gt=0)
    """CPUs one worker reserves. Fractional, so that workers and Ray's own tasks cannot take every
    CPU of a small cluster and wait on each other."""
    concurrency_per_worker: int | None = Field(default=None, ge=1)
    """Work items (episodes, validations) one worker runs at once, and so its model requests and
    sandbox executions in flight. None: ``controller.concurrency``."""
    max_retries: int = Field(default=3, ge=0)
    """Times a dead worker is restarted and its work items run again (Ray's actor restarts and task
    retries) before the run stops; ``--resume`` goes on from there."""
    node_api_base: dict[str, str | list[str]] = Field(default_factory=dict)
    """Node IP -> the solver's ``api_base`` for workers on that node (e.g. each GPU node's own vLLM);
    nodes not named use ``solver.api_base``."""
    start_timeout_s: float = Field(default=120.0, gt=0)
    """Longest wait for the workers to start (a cluster short of CPUs for them fails after it)."""


class EnvConfig(_Section):
    """``spade serve-env``: the curriculum served as an OpenEnv environment, a client's policy as the solver."""

    episodes_per_epoch: int | None = Field(default=None, ge=1)
    """Episodes an epoch hands out: each epoch asks the generator for ``ceil(episodes_per_epoch /
    solver.samples_per_task)`` tasks (that many tasks times ``samples_per_task`` episodes, fewer when
    proposals are rejected), and its metrics and the next target come from those rollouts. None:
    ``controller.tasks_per_epoch x solver.samples_per_task``."""
    episode_timeout_s: float = Field(default=300.0, gt=0)
    """Longest wait for a client's reply to one turn once it holds the episode, in seconds; past it the
    episode is abandoned and recorded (its trajectory has ``error`` and the ``abandoned`` flag), and
    a late reply gets an error. An episode no client has taken yet never times out: an idle trainer
    costs nothing."""
    reset_timeout_s: float = Field(default=45.0, gt=0)
    """Longest ``reset()`` waits for an episode while the epoch's tasks are proposed and validated,
    in seconds; past it the client gets an error and may retry. Keep it under the client's message
    timeout (openenv-core's ``EnvClient``: 60 s)."""
    max_sessions: int = Field(default=64, ge=1)
    """Sessions served at once, every way in counted (openenv-core's ``max_concurrent_envs``); one more
    is refused with ``CAPACITY_REACHED``."""
    reward: Literal["pass", "partial_credit", "shaped"] = "pass"
    """The ``reward`` of an episode's last observation: ``pass``, 1.0 when it passed every test, else 0.0 (as
    ``SpadeLiveEnv``, ``SpadeCodingEnv``, the verifiers rubric and ``compute_score`` pay by default);
    ``partial_credit``, a failure earns the share of the hidden tests passed (their ``partial_credit``);
    ``shaped``, the trajectory's own reward (``reward.*``: difficulty, turns, timeouts), as recorded."""
    pool: int | None = Field(default=None, ge=1)
    """Episodes that may wait for a client or be held by one at once (``--pool``): at least a trainer's
    batch (every rollout of a batch resets before any steps), so no reset of a batch waits while the
    epoch has episodes. None: ``max_sessions`` (each session holds at most one episode)."""
    max_sessions_per_client: int | None = Field(default=None, ge=1)
    """Sessions one client address may hold at once (over ``/ws``, and ``/mcp`` when on); one more is
    refused with ``CAPACITY_REACHED``. None: ``max_sessions`` (clients on this machine share one address)."""
    session_idle_s: float = Field(default=900.0, gt=0)
    """A session that sends no message for this long, in seconds, is closed (WebSocket code 1001): its
    episode is abandoned (recorded so, ``error`` naming the idle time) when its client was shown it,
    else handed to the next client. Openenv-core's clients reconnect on their next ``reset``."""
    max_message_bytes: int = Field(default=1 << 20, ge=4096)
    """Largest WebSocket message taken (uvicorn's ``ws_max_size``: a larger one closes the connection,
    code 1009), and largest ``/mcp`` body (413)."""
    max_connections: int | None = Field(default=None, ge=1)
    """Connections open at once (``--max-connections``). Past it, a new connection takes the slot of the
    oldest one that has not sent a whole request (a slow or silent client), else it gets a 503. None, or
    more than the descriptors allow: the open-files limit less a reserve for the run's own files."""
    overlap: bool = True
    """Make the next epoch's tasks while this epoch's episodes are played (``controller.overlap``), so a
    client's reset at an epoch boundary finds an episode waiting; the target difficulty then moves on
    pass rates one epoch older. False: epochs one after another, as ``spade run`` runs them."""
    mcp: bool = False
    """Serve openenv-core's MCP endpoints (``/mcp`` over HTTP and WebSocket, ``mcp`` messages on ``/ws``;
    ``--mcp``). A session made over them belongs to the connection that made them: no other may use or
    close it, and it ends with that connection. Off: they are refused (404)."""


class RunConfig(_Section):
    """Everything one ``spade run`` needs."""

    seed: int = 0
    """Root of all randomness: same seed, same run."""
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    """The model that proposes tasks."""
    solver: SolverConfig = Field(default_factory=SolverConfig)
    """The model that attempts tasks."""
    llm: LLMConfig = Field(default_factory=LLMConfig)
    """Timeouts and retries of model calls."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Where and under which limits programs run."""
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    """Extra gates for proposed tasks (``banned_imports``)."""
    bugfix: BugfixConfig = Field(default_factory=BugfixConfig)
    """Bug-fix tasks: the largest edit a bug may make, the edits a procedural bug combines."""
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    """Epochs, difficulty band and concurrency."""
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    """Goal, topics and task kinds the generator is asked for."""
    reward: RewardConfig = Field(default_factory=RewardConfig)
    """Shape of the reward."""
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Code run at points of the loop (``on_epoch_end``)."""
    report: bool = False
    """Write ``RUN_DIR/report.html`` after every epoch (the page reloads itself while the run goes
    on)."""
    tracking: list[Literal["tensorboard", "mlflow", "wandb"]] = Field(default_factory=list)
    """Where else every epoch's metrics go: TensorBoard event files, an MLflow run, a W&B run (each an
    extra: ``pip install 'spade-selfplay[tensorboard]'``...), offline by default, under ``RUN_DIR/tracking/``
    (``docs/tracking.md``)."""
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    """A training command run between epochs, which may hand the solver a new model."""
    executor: Literal["local", "ray"] = "local"
    """Where validations and episodes run: ``local`` (asyncio in this process) or ``ray`` (worker
    actors on a Ray cluster, see ``ray``); the records are the same either way."""
    ray: RayConfig = Field(default_factory=RayConfig)
    """The Ray cluster and its workers, for ``executor: ray``."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """``spade serve-env``'s sessions, episode timeouts and epoch size (unused by ``run`` and ``solve``)."""
    prompts_dir: str | None = None
    """Folder of Jinja templates overriding the packaged ones by file name."""
    runs_dir: str = "runs"
    """Parent folder of new run directories when ``--out`` is not given."""

    @model_validator(mode="after")
    def _overlap_without_training(self) -> RunConfig:
        if self.controller.overlap and self.trainer.command is not None:
            raise ValueError(
                "controller.overlap runs the next epoch during this one, and trainer.command trains between "
                "epochs: set one of them"
            )
        return self


def _upgrade(layer: dict[str, Any]) -> dict[str, Any]:
    """A config layer with older keys in today's names (``json_mode`` -> ``response_format``), so an old
    file still overrides the defaults it meant to."""
    out = dict(layer)
    for name, role in (("generator", GeneratorConfig), ("solver", SolverConfig)):
        if isinstance(out.get(name), dict):
            out[name] = _read_json_mode(out[name], role)
    return out


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` laid over it, section by section (older key names upgraded first)."""
    override = _upgrade(override)
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(text: str, origin: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = " ".join(str(getattr(e, "problem", None) or e).split())  # one line
        raise UserError(f"{where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise UserError(f"{origin}: not valid YAML: nested too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{origin}: expected a mapping of config keys, got {type(data).__name__}")
    return data


def default_config_dict() -> dict[str, Any]:
    text = resources.files("spade_llm.configs").joinpath("default.yaml").read_text()
    return _read_yaml(text, "default.yaml")


_KEY_FIELDS = frozenset({"api_key", "apikey", "api-key"})
"""Names of a credential that a config might be given, in every section we would read a model from."""


def _refuse_keys(data: dict[str, Any], origin: str) -> None:
    """One clear line for a key written into the config (``llm: {api_key: ...}``, or under
    ``generator:``/``solver:``): keys never live in the config, which is copied into every run
    directory; the provider's environment variable, or a ``.env`` file, holds it.

    Raises:
        UserError: naming where the key is and what to set instead.
    """
    for section in ("llm", "generator", "solver", None):
        node = data.get(section) if section else data
        if not isinstance(node, dict):
            continue
        for key in node:
            if str(key).lower() in _KEY_FIELDS:
                where = f"{section}.{key}" if section else str(key)
                raise UserError(
                    f"{origin}: {where}: keys never go in the config (it is copied into the run directory); "
                    "set the provider's variable instead (OPENAI_API_KEY for openai/ models, ANTHROPIC_API_KEY, "
                    "...) in the environment or in a .env file in the working directory"
                )


def _fields_at(path: tuple[Any, ...]) -> list[str] | None:
    """The keys a config section at ``path`` (``("solver",)``) takes, None when it is no section."""
    model: Any = RunConfig
    for name in path:
        field = model.model_fields.get(name) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return None
        model = field.annotation
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return None


def _key_line(text: str, path: tuple[Any, ...]) -> int | None:
    """The line (1-based) of the key at ``path`` in YAML ``text``, None when it is not there."""
    try:
        node = yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    line = None
    for name in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(name):
                node, line = value, key.start_mark.line + 1
                break
        else:
            return None
    return line


def _describe(err: ValidationError, sources: tuple[tuple[str, str], ...] = ()) -> str:
    """The first error in one line; a key no section has gets the nearest valid one and the line of
    ``sources`` (``(origin, YAML text)``, the last one first) where it is written."""
    import difflib

    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "config"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    what = first["msg"]
    if first["type"] == "extra_forbidden" and first["loc"]:
        path, key = tuple(first["loc"][:-1]), str(first["loc"][-1])
        what = "unknown key"
        near = difflib.get_close_matches(key, _fields_at(path) or [], n=1, cutoff=0.6)
        if near:
            what += f"; did you mean {near[0]}?"
        for origin, text in reversed(sources):
            line = _key_line(text, tuple(first["loc"]))
            if line is not None:
                what += f" ({origin} line {line})"
                break
    return f"{where}: {what}{more}"


def _read_config_text(p: Path) -> str:
    """The text of a config file; a one-line ``UserError`` when it is missing, a folder, unreadable or
    not UTF-8 (naming the line of the first bad byte)."""
    if p.is_dir():
        raise UserError(f"config file {p} is a directory, not a file")
    if not p.exists():
        raise UserError(f"config file not found: {p}")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read config file {p}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(f"{p}:{line}: config file is not UTF-8 text (byte 0x{data[e.start]:02x})") from None


def presets() -> list[str]:
    """Names of the configs shipped in ``configs/`` that ``--config NAME`` accepts (``local-cpu``...)."""
    files = resources.files("spade_llm.configs").iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml") and f.name != "default.yaml")


def _preset_text(name: str) -> str | None:
    """The text of the shipped preset ``name`` (with or without ``.yaml``), None when there is none."""
    stem = name.removesuffix(".yaml")
    if "/" in name or stem not in presets():
        return None
    return resources.files("spade_llm.configs").joinpath(f"{stem}.yaml").read_text(encoding="utf-8")


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Default config, then the YAML file at ``path``, then ``overrides`` (nested dict).

    ``path`` may name a shipped preset instead of a file (``local-cpu``, see :func:`presets`); a file of
    that name in the working directory wins.

    Raises:
        UserError: the file is missing or not YAML, or a value is invalid.
    """
    data = default_config_dict()
    origin = "default.yaml"
    sources: tuple[tuple[str, str], ...] = ()
    if path is not None:
        p = Path(path)
        preset = None if p.exists() else _preset_text(str(path))
        if preset is not None:
            data = deep_merge(data, _read_yaml(preset, f"preset {p.stem}"))
            origin = f"preset {p.stem}"
            sources = ((origin, preset),)
        else:
            try:
                text = _read_config_text(p)
            except UserError as e:
                if p.exists() or not presets():
                    raise
                raise UserError(f"{e} (or name a preset: {', '.join(presets())})") from None
            data = deep_merge(data, _read_yaml(text, str(p)))
            origin = str(p)
            sources = ((origin, text),)
    if overrides:
        data = deep_merge(data, overrides)
    _refuse_keys(data, origin)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        raise UserError(f"invalid config ({origin} + flags): {_describe(e, sources)}") from None


def config_from_dict(data: dict[str, Any], origin: str) -> RunConfig:
    _refuse_keys(data, origin)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        raise UserError(f"invalid config in {origin}: {_describe(e)}") from None
