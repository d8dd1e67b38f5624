"""The trainer in the loop: between epochs, fresh exports go to the user's training command, and the
model it reports back solves the epochs after it (the seed article's last step: "feed the
evaluator's reward back into policy optimisation, closing the training loop").

``trainer.command`` runs after every ``trainer.every_epochs`` epochs, once the epoch's records, its
metrics row and the ``on_epoch_end`` hooks are done. Before it runs, the formats in
``trainer.formats`` (the solver's) and ``trainer.generator_formats`` (the generator's,
``generator-<format>.jsonl``) are exported from the whole run so far into
``RUN_DIR/exports/epoch-NNN/``; the command gets that folder (``{exports}`` in it, else as its
last argument) and the environment variables ``SPADE_EXPORTS``, ``SPADE_RUN_DIR``, ``SPADE_EPOCH``,
``SPADE_SOLVER_MODEL``, ``SPADE_GENERATOR_MODEL`` and ``SPADE_SWITCH_FILE``, on top of ours without its
keys: a key-like variable (``OPENAI_API_KEY``, ``HF_TOKEN``, ``*PASSWORD*``..., the rule is
``redact.key_like``) reaches the command only when ``trainer.pass_env`` names it. Its stdout and stderr
go to ``RUN_DIR/trainer/epoch-NNN.stdout``/``.stderr`` as they come (tail them to follow a long
training), through ``spade_llm._util.redact``'s rule: our keys in any form, key shapes, credentials of URLs
never reach the disk.

**The switch comes from a file, never from the output.** To switch models, the command writes one JSON
object to the file ``$SPADE_SWITCH_FILE`` names, ``RUN_DIR/trainer/epoch-NNN.switch.json`` (in the run
directory, so a step that reaches the exports reaches it too: over ``ssh``, ``srun`` or ``docker run``
with the run directory mounted, where a local ``/tmp`` is not the same folder): ``solver_model``/
``api_base`` the solver, ``generator_model``/``generator_api_base`` the generator, and
``model``/``model_api_base`` both (one model playing both roles, as Absolute Zero's does); a role's own
key wins over ``model``. What the command prints is never read for a switch: a trainer echoes model
completions and logs, and a completion that printed a switch line would otherwise pick the models (and
endpoints) of the next epochs. A JSON line naming a model on stdout is reported in the log as ignored.
The file is removed before the step starts (a file left by an earlier try switches nothing), read once
the command exited 0 (a regular file only: no symbolic link, FIFO or device, at most
``MAX_SWITCH_BYTES``), then removed: an ``api_base`` keeps its credentials in memory only,
``manifest.json`` records it without them.

**Keys go only to endpoints the user configured.** A switched role whose endpoint (scheme, host, port)
is one of the config's (``solver.api_base``, ``generator.api_base``, ``ray.node_api_base``, or a URL a
configured model string names), or that has no endpoint of its own (the provider's), sends our
environment's key as before. A model string that holds a URL names its endpoint as an ``api_base``
does (litellm sends ``huggingface/https://host/v1`` to that host, with the Hugging Face key), and is
held to the same rule. An endpoint only
the training step named gets requests with no key from our environment (a placeholder), unless the
user passed the provider's key variable to the step (``trainer.pass_env``): a step trusted with the key
could send it anywhere itself. A model other than ``openai/<name>`` on such an endpoint stops the run
(its provider may read credentials we cannot withhold). ``env_keys_allowed`` is the rule.

The command runs in its own process group, which a timeout or an interrupted run ends whole (SIGTERM,
then SIGKILL): a launcher's workers must not outlive the step and hold the GPU into the next try.

Each finished step is appended to ``manifest.json``'s ``trainer_steps`` (epoch, exit code, seconds,
the switch if any): that is what makes it resumable. A step that fails or is killed is not
recorded, so ``--resume`` runs it again before the next epoch; the switches recorded are applied
again on resume, so a resumed run solves with the model its last step chose (the records of runs
from before the switch file read the same).

Why a subprocess and not a Python hook: training runs in its own environment (torch, TRL, verl, a
GPU job launcher), often far heavier than this package; a command is what every trainer has.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import shlex
import signal
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ._util.redact import StreamRedactor, env_redactor, key_like, redact_text, scrub_secrets
from .hooks import HookError

if TYPE_CHECKING:
    from .config import RoleConfig, RunConfig, TrainerConfig
    from .store import RunDir

__all__ = [
    "MANIFEST_KEY",
    "SWITCH_FILE_ENV",
    "RoleSwitch",
    "Switch",
    "Trainer",
    "configured_endpoints",
    "env_keys_allowed",
    "model_endpoint",
    "read_switch",
    "recorded_steps",
    "role_endpoints",
    "switch_path",
]

MANIFEST_KEY = "trainer_steps"
"""Key of ``manifest.json`` listing the finished training steps."""
SUFFIXES = {"verl": "parquet"}
"""File suffix of each export format (``jsonl`` unless named here)."""
STOP_GRACE_S = 5.0
"""How long a stopped training command gets to exit on SIGTERM (to save what it can) before SIGKILL."""
LOG_DRAIN_S = 5.0
"""How long the logs are read on once the command has exited: what it printed last is still in the
pipes. A process it left running on purpose (a server for the new model) may hold them open for
good; its output goes on into the same files, redacted, for as long as this process lives."""
SWITCH_FILE_ENV = "SPADE_SWITCH_FILE"
"""The variable naming the file a training step writes its switch to (the only place one is read from)."""
MAX_SWITCH_BYTES = 1 << 16
"""Largest switch file read: a switch is a few hundred bytes."""


@dataclass(frozen=True)
class RoleSwitch:
    """The model of one role a training step handed back (None: keep the current value)."""

    model: str | None = None
    api_base: str | None = None

    def dump(self) -> dict[str, str]:
        return {k: v for k, v in (("model", self.model), ("api_base", self.api_base)) if v is not None}

    @classmethod
    def read(cls, record: Any) -> RoleSwitch | None:
        if not isinstance(record, dict):
            return None
        model, api_base = record.get("model"), record.get("api_base")
        return cls(model if isinstance(model, str) else None, api_base if isinstance(api_base, str) else None)


@dataclass(frozen=True)
class Switch:
    """What a training step switches: the solver's model, the generator's, or both (None: unchanged)."""

    solver: RoleSwitch | None = None
    generator: RoleSwitch | None = None

    def dump(self) -> dict[str, Any]:
        """The ``trainer_steps`` record: the solver's fields at the top (as spade wrote them before the
        generator could switch too), the generator's under ``generator``."""
        record: dict[str, Any] = self.solver.dump() if self.solver else {}
        if self.generator is not None:
            record["generator"] = self.generator.dump()
        return record

    @classmethod
    def read(cls, record: Any) -> Switch | None:
        """A ``trainer_steps`` record's switch (``dump``'s form, or the solver-only one of older runs)."""
        if not isinstance(record, dict):
            return None
        solver = RoleSwitch.read({k: v for k, v in record.items() if k != "generator"})
        return cls(solver if solver and solver.dump() else None, RoleSwitch.read(record.get("generator")))

    def describe(self) -> str:
        parts = [
            f"{role} -> {', '.join(f'{k} {v}' for k, v in switch.dump().items())}"
            for role, switch in (("solver", self.solver), ("generator", self.generator))
            if switch is not None and switch.dump()
        ]
        return "; ".join(parts)


SWITCH_KEYS = ("solver_model", "api_base", "generator_model", "generator_api_base", "model", "model_api_base")
"""The keys of a switch object (``_switch_of``)."""


def _switch_of(obj: dict[str, Any]) -> Switch | None:
    """The switch ``obj`` names, or None when it names none. ``model`` counts only as a string: a JSON
    log line may well hold a ``model`` object (a config, a summary), which is no switch."""
    values: dict[str, str | None] = {}
    for name in SWITCH_KEYS:
        value = obj.get(name)
        if name == "model" and not isinstance(value, str):
            value = None
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise HookError(f"trainer command printed {name}={value!r}: expected a non-empty string")
        values[name] = value.strip() if value else None

    def role(model_key: str, api_base_key: str) -> RoleSwitch | None:
        model = values[model_key] or values["model"]
        api_base = values[api_base_key] or values["model_api_base"]
        return RoleSwitch(model, api_base) if model or api_base else None

    switch = Switch(role("solver_model", "api_base"), role("generator_model", "generator_api_base"))
    return switch if switch.solver or switch.generator else None


def read_switch(text: str) -> Switch | None:
    """The switch in a switch file's text: one JSON object (pretty-printed or not), or JSON lines of
    which the last that names a model or an endpoint (``SWITCH_KEYS``) counts; None when no object
    names one.

    Raises:
        HookError: that object names a model or endpoint that is not a non-empty string.
    """
    text = text.strip()
    candidates = [text] if text.startswith("{") else []
    candidates += [line.strip() for line in reversed(text.splitlines()) if line.strip().startswith("{")]
    for candidate in candidates:
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict):
            switch = _switch_of(obj)
            if switch is not None:
                return switch
    return None


def switch_path(run_path: Path, epoch: int) -> Path:
    """Where the training step after ``epoch`` writes its switch (``$SPADE_SWITCH_FILE``)."""
    return run_path / "trainer" / f"epoch-{epoch:03d}.switch.json"


def read_switch_file(path: Path) -> Switch | None:
    """The switch a training step wrote to ``path`` (``$SPADE_SWITCH_FILE``); None when it wrote none.
    Opened without following a symbolic link and without blocking (a FIFO there would hang the run), and
    read only when it is a regular file, at most ``MAX_SWITCH_BYTES`` of it.

    Raises:
        HookError: the file is not a switch (a link, not a regular file, too large, not UTF-8, not JSON
            naming a model), or a model or endpoint in it is not a non-empty string.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise HookError("the training step's switch file is a symbolic link: write the file itself") from None
        raise HookError(f"cannot read the training step's switch file: {e.strerror or e}") from None
    with contextlib.ExitStack() as owned:
        owned.callback(os.close, fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise HookError("the training step's switch file is not a regular file")
            f = os.fdopen(fd, "rb")
            owned.pop_all()  # the file object closes it now
            with f:
                data = f.read(MAX_SWITCH_BYTES + 1)
        except OSError as e:
            raise HookError(f"cannot read the training step's switch file: {e.strerror or e}") from None
    if len(data) > MAX_SWITCH_BYTES:
        raise HookError(f"the training step's switch file is over {MAX_SWITCH_BYTES} bytes: not a switch")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HookError("the training step's switch file is not UTF-8 JSON") from None
    if not text.strip():
        return None
    switch = read_switch(text)
    if switch is None:
        raise HookError(
            "the training step's switch file names no model: write one JSON object such as "
            '{"solver_model": "openai/m", "api_base": "http://host:port/v1"}'
        )
    return switch


def _remove(path: Path, quiet: bool = False) -> None:
    """Remove the switch file ``path`` if it is there (a symbolic link itself, not what it names).

    Raises:
        HookError: it cannot be removed (a folder in its place, no permission), unless ``quiet``.
    """
    try:
        path.unlink(missing_ok=True)
    except OSError as e:
        if not quiet:
            raise HookError(f"cannot remove {path} before the training step: {e.strerror or e}") from None


def trainer_env(environ: Mapping[str, str], pass_env: Sequence[str] = ()) -> dict[str, str]:
    """The environment the training command starts with: ``environ`` without its key-like variables
    (``redact.key_like``: ``*_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``, a URL with
    credentials...), but for those ``pass_env`` names (names or shell-style globs, case-sensitive).
    PATH, HOME, the locale, caches (``HF_HOME``), CUDA settings and the rest stay."""
    return {
        k: v for k, v in environ.items() if not key_like(k, v) or any(fnmatchcase(k, pattern) for pattern in pass_env)
    }


def endpoint_origin(url: str) -> str | None:
    """Who receives what is sent to ``url``: ``scheme://host:port`` in lower case (the default port
    filled in), without user-info, path or query; None when ``url`` names no host."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host or not parts.scheme:
        return None
    port = port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme.lower())
    return f"{parts.scheme.lower()}://{host}:{port}"


def _bases(api_base: str | list[str] | None) -> list[str]:
    return [b for b in (api_base if isinstance(api_base, list) else [api_base]) if b]


def model_endpoint(model: str) -> str | None:
    """The URL a model string names as its endpoint (``huggingface/https://host/v1`` -> ``https://host/v1``:
    litellm sends the requests there, with the provider's key), None when it holds none (any ``://``
    counts, whatever the provider: the URL is where the key would go)."""
    at = model.find("://")
    if at < 0:
        return None
    return model[model.rfind("/", 0, at) + 1 :]


def role_endpoints(role: RoleConfig) -> list[str]:
    """Where requests of ``role`` go, when not to its provider's own endpoint: its ``api_base`` (each,
    for a list) and the URL its model string names (``model_endpoint``)."""
    named = model_endpoint(role.model)
    return [*_bases(role.api_base), *([named] if named else [])]


def configured_endpoints(config: RunConfig) -> frozenset[str]:
    """The origins (``endpoint_origin``) of the endpoints the user configured for ``config``: both
    roles' ``api_base`` and the URLs their model strings name, and Ray's ``node_api_base``. Read before
    a training step switches a role."""
    bases = [*role_endpoints(config.solver), *role_endpoints(config.generator)]
    bases += [b for node in config.ray.node_api_base.values() for b in _bases(node)]
    return frozenset(o for o in map(endpoint_origin, bases) if o is not None)


def env_keys_allowed(role: RoleConfig, configured: Iterable[str], pass_env: Sequence[str] = ()) -> bool:
    """Whether requests of ``role`` may carry keys from our environment (``OPENAI_API_KEY``...): yes
    when it has no endpoint of its own (``role_endpoints``: no ``api_base``, no URL in its model string;
    its provider's) or every one of them is an endpoint the user configured (``configured``:
    ``configured_endpoints``); for an endpoint a training step named, only when ``pass_env`` hands the
    provider's key variables to the step anyway (a step trusted with a key could send it anywhere
    itself). A URL that names no host is no configured endpoint."""
    bases = role_endpoints(role)
    known = set(configured)
    if not bases or all(endpoint_origin(b) in known for b in bases):
        return True
    from .llm.registry import KEY_VARIABLES

    names = KEY_VARIABLES.get(role.model.split("/", 1)[0], ())
    return bool(names) and all(any(fnmatchcase(n, pattern) for pattern in pass_env) for n in names)


class _SwitchLines:
    """Watches a command's stdout for a JSON line that names a model (``_switch_of``), as a step
    written for the old protocol (the switch printed) would print: reported as ignored, never used."""

    def __init__(self) -> None:
        self.seen = False
        self._line = ""

    def feed(self, text: str) -> None:
        if self.seen:
            return
        *lines, self._line = (self._line + text).split("\n")
        if len(self._line) > MAX_SWITCH_BYTES:  # no switch is that long
            self._line = ""
        for line in lines:
            self._scan(line)

    def close(self) -> None:
        self._scan(self._line)

    def _scan(self, line: str) -> None:
        line = line.strip()
        if self.seen or not line.startswith("{") or ("model" not in line and "api_base" not in line):
            return
        try:
            obj = json.loads(line)
        except ValueError:
            return
        with contextlib.suppress(HookError):
            self.seen = isinstance(obj, dict) and _switch_of(obj) is not None


class _LogCopy(threading.Thread):
    """Copies one output stream of the command into its log file, redacted, as it comes (a daemon
    thread: see ``LOG_DRAIN_S``). A write that fails (disk full) is kept in ``error``; the pipe is
    still drained, so the command never blocks on a full pipe."""

    def __init__(self, pipe: IO[bytes], out: IO[bytes], scan: _SwitchLines | None) -> None:
        super().__init__(name=f"trainer-log-{Path(out.name).name}", daemon=True)
        self.pipe = pipe
        self.out = out
        self.redactor = StreamRedactor(redactor=env_redactor())  # ours, passed on or not: none is written
        self.scan = scan
        self.error: OSError | None = None

    def _write(self, text: str) -> None:
        if text and self.error is None:
            try:
                self.out.write(text.encode("utf-8", "surrogateescape"))  # the bytes it printed, less the secrets
                self.out.flush()
            except OSError as e:
                self.error = e

    def run(self) -> None:
        decode = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape").decode
        try:
            while chunk := os.read(self.pipe.fileno(), 1 << 16):  # what is there, at once
                text = decode(chunk)
                if self.scan is not None:
                    self.scan.feed(text)
                self._write(self.redactor.feed(text))
            self._write(self.redactor.feed(decode(b"", final=True)) + self.redactor.close())
            if self.scan is not None:
                self.scan.close()
        finally:
            with contextlib.suppress(OSError):
                self.pipe.close()
            with contextlib.suppress(OSError):
                self.out.close()


def command_line(command: str | list[str], exports: Path, run_dir: Path, epoch: int) -> list[str]:
    """The argv to run: placeholders filled, the export folder appended when none names it."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if not words:
        raise HookError("trainer.command is empty")
    values = {"exports": str(exports), "run_dir": str(run_dir), "epoch": str(epoch)}
    filled = [w.replace("{exports}", values["exports"]).replace("{run_dir}", values["run_dir"]) for w in words]
    filled = [w.replace("{epoch}", values["epoch"]) for w in filled]
    if not any("{exports}" in w for w in words):
        filled.append(values["exports"])
    return filled


def _steps(manifest: Any) -> list[dict[str, Any]]:
    steps = manifest.get(MANIFEST_KEY) if isinstance(manifest, dict) else None
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def recorded_steps(run: RunDir) -> list[dict[str, Any]]:
    """The finished training steps of ``run``, in order (``manifest.json``'s ``trainer_steps``)."""
    return _steps(run.read_json("manifest.json"))


def last_switch(run: RunDir) -> Switch | None:
    """The models and endpoints the recorded steps leave each role with (each field's latest value)."""
    latest: dict[str, dict[str, str]] = {"solver": {}, "generator": {}}
    for step in recorded_steps(run):
        switch = Switch.read(step.get("switch"))
        if switch is None:
            continue
        for role, part in (("solver", switch.solver), ("generator", switch.generator)):
            if part is not None:
                latest[role].update(part.dump())

    def of(name: str) -> RoleSwitch | None:
        fields = latest[name]
        return RoleSwitch(fields.get("model"), fields.get("api_base")) if fields else None

    found = Switch(of("solver"), of("generator"))
    return found if found.solver or found.generator else None


@dataclass(frozen=True)
class StepOutcome:
    switch: Switch | None
    record: dict[str, Any]
    """The ``trainer_steps`` entry: epoch, exports, returncode, seconds, switch, finished_at."""


class Trainer:
    """Runs ``trainer.command`` for a run directory (blocking: the controller calls it in a thread)."""

    def __init__(self, config: TrainerConfig, run: RunDir, log: Callable[[str], None] = print) -> None:
        self.config = config
        self.run = run
        self.log = log
        self._running: subprocess.Popen[bytes] | None = None
        """The command of the step under way (its process group is its pid)."""

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the step under way, if any, with everything it started (callable from any thread): its
        process group gets SIGTERM, then SIGKILL after ``grace_s``. What a step that finished left
        running on purpose (a server for the new model) is no longer its process and stays."""
        proc = self._running
        if proc is None:
            return
        group = proc.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:  # until every process of the group is gone, not just the first
            proc.poll()  # reaps it if this thread may: its zombie would keep the group
            try:
                os.killpg(group, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)

    def due(self, epoch: int) -> bool:
        """Whether a step follows ``epoch`` (0-based)."""
        return self.config.command is not None and (epoch + 1) % self.config.every_epochs == 0

    def done(self, epoch: int) -> bool:
        return any(step.get("epoch") == epoch for step in recorded_steps(self.run))

    def export(self, epoch: int) -> Path:
        """The run so far, in each configured format of both roles, in a fresh ``exports/epoch-NNN/``."""
        from .export.generator_rows import export_generator
        from .export.solver_rows import ExportFilters, export_run

        folder = self.run.path / "exports" / f"epoch-{epoch:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        for fmt in self.config.formats:
            export_run(self.run.path, fmt, folder / f"{fmt}.{SUFFIXES.get(fmt, 'jsonl')}", ExportFilters())
        for fmt in self.config.generator_formats:
            export_generator(self.run.path, fmt, folder / f"generator-{fmt}.jsonl", ExportFilters())
        return folder

    def step(self, epoch: int, solver_model: str, generator_model: str | None = None) -> StepOutcome:
        """Export and run the command: the switch it wrote to ``$SPADE_SWITCH_FILE``, if any, and the
        step's record (which ``record`` writes once the switch is in use).

        Raises:
            HookError: the command could not start, failed, timed out, or wrote a bad switch; the
                step is not recorded, so ``--resume`` runs it again.
        """
        assert self.config.command is not None
        exports = self.export(epoch)
        argv = command_line(self.config.command, exports, self.run.path, epoch)
        logs = self.run.path / "trainer"
        logs.mkdir(exist_ok=True)
        out_path, err_path = logs / f"epoch-{epoch:03d}.stdout", logs / f"epoch-{epoch:03d}.stderr"
        # the one channel a switch comes through (its output echoes model completions, which may say
        # anything): a file in the run directory, which the step reaches wherever it runs, as the exports
        switch_file = switch_path(self.run.path, epoch).absolute()
        _remove(switch_file)  # what an earlier try left switches nothing
        env = {
            **trainer_env(os.environ, self.config.pass_env),
            "SPADE_EXPORTS": str(exports),
            "SPADE_RUN_DIR": str(self.run.path),
            "SPADE_EPOCH": str(epoch),
            "SPADE_SOLVER_MODEL": solver_model,
            "SPADE_GENERATOR_MODEL": generator_model or "",
            SWITCH_FILE_ENV: str(switch_file),
        }
        self.log(f"trainer: epoch {epoch}: {redact_text(shlex.join(argv))}")
        try:
            code, seconds, printed_switch = self._run(argv, env, epoch, out_path, err_path)
            switch = read_switch_file(switch_file)
        finally:
            _remove(switch_file, quiet=True)  # an api_base's credentials stay in memory only
        if printed_switch and switch is None:
            self.log(
                f"trainer: epoch {epoch}: the command printed a JSON line naming a model; a switch is read "
                f"from ${SWITCH_FILE_ENV} only, so nothing changes (docs/training.md, section 4)"
            )
        record = {
            "epoch": epoch,
            "exports": str(exports),
            "returncode": code,
            "seconds": seconds,
            "switch": scrub_secrets(switch.dump()) if switch else None,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return StepOutcome(switch, record)

    def _run(
        self, argv: list[str], env: dict[str, str], epoch: int, out_path: Path, err_path: Path
    ) -> tuple[int, float, bool]:
        """Run the command to its end, its output copied into the logs (masked): its exit code (0),
        its seconds, and whether its stdout printed a line that would have been a switch.

        Raises:
            HookError: it could not start, failed or timed out.
        """
        started = time.monotonic()
        where = f"(output in {out_path.parent}; --resume runs it again)"
        scan = _SwitchLines()
        with contextlib.ExitStack() as files:
            out = files.enter_context(out_path.open("wb"))
            err = files.enter_context(err_path.open("wb"))
            try:
                # its own process group: a timeout or an interrupted run ends the whole training (a
                # launcher's workers too), not only the process it started
                proc = subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
            except FileNotFoundError:
                raise HookError(f"trainer command not found: {argv[0]}") from None
            except PermissionError:
                raise HookError(f"trainer command is not executable: {argv[0]}") from None
            self._running = proc  # at once: stop() may come before the copies below are made
            assert proc.stdout is not None and proc.stderr is not None
            copies = [_LogCopy(proc.stdout, out, scan), _LogCopy(proc.stderr, err, None)]
            files.pop_all()  # the copies close them
        for copy in copies:
            copy.start()
        try:
            code = proc.wait(timeout=self.config.timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise HookError(
                f"trainer command ran past trainer.timeout_s={self.config.timeout_s} after epoch {epoch} {where}"
            ) from None
        finally:
            self._running = None
            deadline = time.monotonic() + LOG_DRAIN_S
            for copy in copies:
                copy.join(max(0.0, deadline - time.monotonic()))
        seconds = round(time.monotonic() - started, 3)
        failed = next((c.error for c in copies if c.error is not None), None)
        if failed is not None:
            raise failed  # the run directory cannot be written (disk full...): the step is not recorded
        if code != 0:
            raise HookError(f"trainer command exited with {code} after epoch {epoch} {where}")
        return code, seconds, scan.seen

    def record(self, outcome: StepOutcome) -> None:
        """Mark the step finished in ``manifest.json`` (once its switch, if any, is in use)."""
        manifest = self.run.read_json("manifest.json")
        steps = [*_steps(manifest), outcome.record]
        self.run.write_json("manifest.json", {**(manifest if isinstance(manifest, dict) else {}), MANIFEST_KEY: steps})
        switch = Switch.read(outcome.record["switch"])
        said = f"; {switch.describe()}" if switch else ""
        self.log(
            redact_text(f"trainer: epoch {outcome.record['epoch']}: done in {outcome.record['seconds']:.1f}s{said}")
        )
