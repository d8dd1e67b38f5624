"""The run directory: append-only JSONL journals, the manifest, and resume.

Every record is one JSON line written with a single ``write`` and flushed, so other programs can
read the files while a run goes on, and a killed run leaves at most one partial last line, which
``open_run`` cuts off before resuming.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import yaml

from .._util.redact import redact_data, redact_record
from .._util.redact import scrub_secrets as scrub_secrets  # where it always was; the rule is spade_llm._util.redact's
from .._util.text import json_loads, to_utf8
from ..errors import UserError

TASKS = "tasks.jsonl"
REJECTED = "rejected.jsonl"
TRAJECTORIES = "trajectories.jsonl"
METRICS = "metrics.jsonl"
TASK_STATS = "task_stats.jsonl"
PLANS = "plans.jsonl"
"""One ``EpochPlan`` per epoch, written before the epoch's first request."""
PROPOSALS = "proposals.jsonl"
"""One row per generator request: its candidates as parsed, its failure, its token usage. A resumed
epoch rebuilds answered requests from here instead of asking the model again."""
LOCK_FILE = ".lock"
"""Held (``flock``) by the one process writing the run directory; it holds that process's pid."""
JOURNALS = (TASKS, REJECTED, TRAJECTORIES, METRICS, TASK_STATS, PLANS, PROPOSALS)
CUT_BLOCK = 1 << 16
"""Bytes read at a time from a journal's end, looking for its last newline (``RunDir.open_existing``)."""


class Store(Protocol):
    """Where a run's records go. ``append`` is the verb; records are plain JSON-able dicts."""

    def append(self, journal: str, records: Iterable[dict[str, Any]]) -> None: ...


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=True, separators=(",", ":"))


def read_numbered(path: Path, damaged: Counter[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each record of a JSONL file; a partial last line (a killed writer)
    is skipped, blank lines too. ``damaged`` given (a tolerant reader): a whole line that is not a
    JSON record is counted there, under the file's name, and skipped instead.

    Raises:
        UserError: the file cannot be read, or (no ``damaged``) a whole line is not a JSON record (a
            damaged run directory), naming the file and line.
    """
    for n, _, record in read_located(path, damaged):
        yield n, record


def read_located(path: Path, damaged: Counter[str] | None = None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``read_numbered`` with each record's byte offset in the file: (line number, offset, record), so a
    reader that streams can come back for a record (``read_at``) instead of holding it."""
    if not path.exists():
        return
    try:
        with path.open("rb") as f:
            offset = 0
            for n, raw in enumerate(f, 1):
                at, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    return
                if not raw.strip():
                    continue
                try:
                    record = json_loads(raw.decode("utf-8"))  # "\ud800" (another tool's record): U+FFFD
                except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested too deep
                    if damaged is not None:
                        damaged[path.name] += 1
                        continue
                    why = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
                    raise UserError(f"{path}:{n}: damaged record ({why}); repair or remove that line") from None
                if not isinstance(record, dict):
                    if damaged is not None:
                        damaged[path.name] += 1
                        continue
                    raise UserError(f"{path}:{n}: damaged record (not a JSON object); repair or remove that line")
                yield n, at, record
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None


def read_at(path: Path, offset: int) -> dict[str, Any]:
    """The record at ``offset`` of a JSONL file (an offset ``read_located`` gave: a whole record line).

    Raises:
        UserError: the file cannot be read, or the line there is no longer a JSON record (changed since).
    """
    try:
        with path.open("rb") as f:
            f.seek(offset)
            raw = f.readline()
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        record = json_loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        record = None
    if not isinstance(record, dict):
        raise UserError(f"{path}: the record at byte {offset} changed while it was read; read the run again")
    return record


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file, as ``read_numbered`` reads them."""
    for _, record in read_numbered(path):
        yield record


WRITE_ERRORS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error",
    errno.ENOENT: "the run directory was removed",
    errno.ENOTDIR: "the run directory was replaced",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files",
}
"""Errors writing a run directory that the user can fix (free space, permissions, limits): they end the
command with one line and exit 2; anything else is a bug and propagates."""


class RunDir:
    """A run directory on disk (every file: docs/records.md)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_fd: int | None = None

    # -- one writer ----------------------------------------------------------------------------

    def lock(self) -> None:
        """Become the directory's only writer: an exclusive ``flock`` on ``.lock``, holding our pid.

        The lock dies with its holder (the kernel drops it with the last descriptor; the descriptor
        is close-on-exec, so no sandbox process keeps it), so a resume right after a SIGKILL works.

        Raises:
            UserError: another process holds it (its pid is named).
        """
        if self._lock_fd is not None:
            return
        lock_path = self.path / LOCK_FILE
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise UserError(f"cannot lock run directory {self.path}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise UserError(
                f"{self.path} is in use by another spade process (pid {holder}); wait for it to end or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __del__(self) -> None:
        self.unlock()

    # -- creating and reopening -------------------------------------------------------------

    @classmethod
    def create(cls, out: str | Path | None, runs_dir: str | Path = "runs") -> RunDir:
        """A new run directory: ``out`` itself (must be empty or absent), else a fresh one under ``runs_dir``."""
        if out is not None:
            path = Path(out)
            if path.exists() and (not path.is_dir() or any(path.iterdir())):
                raise UserError(f"{path} exists and is not empty: choose another --out, or --resume {path}")
        else:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            base = Path(runs_dir) / stamp
            path, n = base, 1
            while path.exists():
                n += 1
                path = base.with_name(f"{stamp}-{n}")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create run directory {path}: {e.strerror}") from None
        run = cls(path)
        run.lock()
        return run

    @classmethod
    def open_existing(cls, path: str | Path) -> RunDir:
        """Reopen a run to resume it: repair partial last lines left by a kill."""
        p = Path(path)
        if not (p / "config.yaml").is_file():
            raise UserError(f"{p} is not a run directory (no config.yaml)")
        run = cls(p)
        run.lock()  # before repairing anything: a live writer's last line may be half-written
        for name in JOURNALS:
            run._cut_partial_line(p / name)
        return run

    @staticmethod
    def _cut_partial_line(path: Path) -> None:
        """Cut what follows the last newline (a killed writer's partial line), read from the end a block at
        a time: a journal can be gigabytes, and a resume must not hold it."""
        try:
            with path.open("r+b") as f:
                end = f.seek(0, os.SEEK_END)
                at = end
                while at > 0:
                    start = max(0, at - CUT_BLOCK)
                    f.seek(start)
                    newline = f.read(at - start).rfind(b"\n")
                    if newline >= 0:
                        at = start + newline + 1
                        break
                    at = start
                if at < end:
                    f.truncate(at)
        except FileNotFoundError:
            return
        except OSError as e:
            raise UserError(f"cannot repair {path}: {e.strerror or e}") from None

    # -- writing -----------------------------------------------------------------------------

    def touch_journals(self) -> None:
        for name in JOURNALS:
            (self.path / name).touch()

    def append(self, journal: str, records: Iterable[dict[str, Any]]) -> None:
        """Append records as whole lines in one write, flushed to the OS.

        A lone surrogate in a record (text that did not come through the LLM layer, which cleans its
        own) is written as U+FFFD: a record is never lost to ``UnicodeEncodeError`` (``spade_llm._util.text``).
        Our own secrets (the environment's keys, registered tokens, an endpoint's credentials) are
        masked in every form (``redact.redact_record``); nothing else is: a record is data, and a test's
        input that reads ``api_key=abc12345`` must read back the same.
        """
        text = "".join(_dumps(redact_record(r)) + "\n" for r in records)
        if not text:
            return
        data = to_utf8(text)
        try:
            fd = os.open(self.path / journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            finally:
                os.close(fd)
        except OSError as e:
            self._raise_write_error(journal, e)
            raise

    def append_record(self, journal: str, record: dict[str, Any]) -> int:
        """``append`` one record, and return the byte offset its line starts at (``read_at`` reads it
        back): the run's one writer holds the lock, so the file's size before the write is that place."""
        path = self.path / journal
        try:
            offset = path.stat().st_size
        except FileNotFoundError:
            offset = 0
        except OSError as e:
            self._raise_write_error(journal, e)
            raise
        self.append(journal, [record])
        return offset

    def insert(self, journal: str, records: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Put records back where they belong, each ``(n, record)`` before the journal's line ``n``
        (past the last line: at the end), by replacing the file at once (a kill leaves the old file or
        the new one). For resume's exact repairs (``store.apply_repairs``), never during a run."""
        placed: dict[int, list[str]] = {}
        for n, record in records:
            placed.setdefault(n, []).append(_dumps(redact_record(record)) + "\n")
        path = self.path / journal
        try:
            data = path.read_bytes() if path.exists() else b""
        except OSError as e:
            raise UserError(f"cannot read {path}: {e.strerror or e}") from None
        whole = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]  # lines as read_numbered counts them
        out: list[str] = []
        for n, line in enumerate(whole, 1):
            out.extend(placed.pop(n, []))
            out.append(line.decode("utf-8") + "\n")  # every whole line was read as UTF-8 before
        for n in sorted(placed):
            out.extend(placed[n])
        self._replace(journal, "".join(out))

    def write_json(self, name: str, data: Any) -> None:
        """Replace a JSON file atomically (write a temporary file, then rename); secrets masked by the
        whole rule (``redact.redact_data``: key shapes and credentials too): ``manifest.json``,
        ``summary.json``, which are about a run, not its data."""
        self._replace(name, json.dumps(redact_data(data), indent=2, ensure_ascii=False, allow_nan=True) + "\n")

    def write_yaml(self, name: str, data: Any) -> None:
        """Replace a YAML file (``config.yaml``), secrets masked as in ``write_json``."""
        self._replace(name, yaml.safe_dump(redact_data(data), sort_keys=False, allow_unicode=True))

    def _replace(self, name: str, text: str) -> None:
        tmp = self.path / f".{name}.tmp"
        try:
            tmp.write_bytes(to_utf8(text))
            os.replace(tmp, self.path / name)
        except OSError as e:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self._raise_write_error(name, e)
            raise

    def _raise_write_error(self, name: str, e: OSError) -> None:
        """Raise a one-line ``UserError`` for a write the user can fix (``WRITE_ERRORS``); else return.

        A failed append leaves at most a partial last line, which ``open_existing`` cuts off, and a
        failed replace leaves the previous file: the run can be continued once the cause is fixed.
        """
        why = WRITE_ERRORS.get(e.errno or 0)
        if why is None:
            return
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            fix = "free some space"
        elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            fix = "fix the permissions"
        else:
            fix = "fix that"
        if (self.path / "config.yaml").is_file():
            then = f"what was written is kept: {fix}, then continue with --resume {self.path}"
        else:
            then = f"nothing was run yet: {fix} and start again"
        raise UserError(f"cannot write {self.path / name}: {e.strerror or why}; {then}") from None

    # -- reading -----------------------------------------------------------------------------

    def read_json(self, name: str) -> Any:
        """A JSON file of the run, or None when it is missing or damaged (a kill mid-write)."""
        try:
            return json_loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def note_llm(self, fallbacks: dict[str, Any], servers: dict[str, dict[str, list[dict[str, str]]]]) -> None:
        """Record in ``manifest.json`` what the run stopped sending because a server refused it
        (``llm_fallbacks``) and what each role's servers said they are (``model_servers``: role -> URL ->
        identities, ``LLMStats.servers``); nothing is written when that is already recorded."""
        if not fallbacks and not servers:
            return
        manifest = self.read_json("manifest.json")
        if not isinstance(manifest, dict):
            return
        recorded = manifest.get("llm_fallbacks")
        known: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        merged = {**fallbacks, **known}  # the first refusal recorded stays
        said = manifest.get("model_servers")
        before: dict[str, Any] = said if isinstance(said, dict) else {}
        identities = {role: dict(urls) for role, urls in before.items() if isinstance(urls, dict)}
        for role, urls in servers.items():  # a resumed run's servers join the earlier sessions'
            for url, found in urls.items():
                kept = identities.setdefault(role, {}).get(url)
                kept = list(kept) if isinstance(kept, list) else []
                identities[role][url] = kept + [i for i in found if i not in kept]
        if merged != known or identities != before:
            noted = dict(manifest)
            if merged:
                noted["llm_fallbacks"] = merged
            if identities:
                noted["model_servers"] = identities
            self.write_json("manifest.json", noted)

    def note_stop(self, epoch: int, reason: str, detail: str) -> None:
        """Record in ``manifest.json``'s ``stops`` that the run stopped after ``epoch`` for ``reason``
        (once per epoch and reason): a resume counts what made it stop from there on."""
        manifest = self.read_json("manifest.json")
        manifest = manifest if isinstance(manifest, dict) else {}
        kept = manifest.get("stops")
        stops: list[Any] = kept if isinstance(kept, list) else []
        if any(isinstance(s, dict) and (s.get("epoch"), s.get("reason")) == (epoch, reason) for s in stops):
            return
        at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        stops = [*stops, {"epoch": epoch, "reason": reason, "detail": detail, "at": at}]
        self.write_json("manifest.json", {**manifest, "stops": stops})

    def stopped_after(self, reason: str) -> int:
        """The last epoch after which the run stopped for ``reason`` (``note_stop``); -1 if it never did."""
        manifest = self.read_json("manifest.json")
        stops = manifest.get("stops") if isinstance(manifest, dict) else None
        epochs = [
            s["epoch"]
            for s in (stops if isinstance(stops, list) else [])
            if isinstance(s, dict) and s.get("reason") == reason and isinstance(s.get("epoch"), int)
        ]
        return max(epochs, default=-1)

    def read_yaml(self, name: str) -> Any:
        try:
            return yaml.safe_load((self.path / name).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError) as e:
            raise UserError(f"cannot read {self.path / name}: {e}") from None
