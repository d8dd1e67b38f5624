"""``read_run``: the one reader of a run directory, for everything that reads one back.

Resume (the controller and ``solve``), exports, the report and the trainer all read a run through
it, so a record means the same thing to each of them. Two modes:

- strict (the default): every line must be a record of its journal (``FILE:LINE`` otherwise). What
  exports and trainers read. Resume then asks more of it, ``check_integrity``: the records must
  agree with what the run wrote down about them as it went (``integrity``); what can be re-derived
  exactly comes back in ``repairs``, merged into the lists, and ``apply_repairs`` writes it back.
- tolerant: for a page about a run that may be going on or damaged (``spade report``): a line that
  is not a record of its kind is counted in ``damaged`` and skipped, a damaged JSON file reads as
  ``{}``.

Either way a partial last line (a writer still at work, or killed) is not read, and nothing is written.

``RunStream`` reads the same journals with the same checks one record at a time, with each record's byte
offset, for a reader whose memory must not grow with the run: the exports keep a task's offsets and read
its episodes in its turn, the report counts the episodes as they pass.
"""

from __future__ import annotations

from array import array
from collections import Counter, deque
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import yaml
from pydantic import BaseModel, ValidationError

from .._util.text import clean_data, json_loads
from ..curriculum import EpochPlan
from ..errors import UserError
from ..types import EpochMetrics, Rejection, Task, TaskStats, Trajectory
from .integrity import (
    RECORD_MODELS,
    Lines,
    RecordSeen,
    Repairs,
    check_run,
    check_solve,
    located,
    record_at,
)
from .provenance import command_of
from .rundir import (
    METRICS,
    PLANS,
    PROPOSALS,
    REJECTED,
    TASK_STATS,
    TASKS,
    TRAJECTORIES,
    RunDir,
    read_located,
    read_numbered,
)

__all__ = [
    "CheckedRun",
    "LazyRows",
    "MetricsRows",
    "RunRecords",
    "RunStream",
    "apply_repairs",
    "check_integrity",
    "read_checked",
    "read_run",
    "record_at",
]

_ORDER = (TASKS, REJECTED, TRAJECTORIES, TASK_STATS, METRICS, PLANS, PROPOSALS)
"""The journals in the order their lines are checked (the first damaged line named is in this order)."""


@dataclass
class RunRecords:
    """A run directory's records (``spade run`` or ``spade solve``), typed. Lists are in file order."""

    path: Path
    config: dict[str, Any] = field(default_factory=dict)
    """``config.yaml`` as written (secrets scrubbed); ``{}`` when tolerant and it is damaged."""
    manifest: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    """``summary.json``; ``{}`` before the run wrote one (or after a kill mid-write)."""
    plans: list[EpochPlan] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    """``proposals.jsonl`` rows as written (``generator.Proposal.from_record`` reads them)."""
    tasks: list[Task] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    task_stats: list[TaskStats] = field(default_factory=list)
    metrics: list[EpochMetrics] = field(default_factory=list)
    damaged: Counter[str] = field(default_factory=Counter)
    """Tolerant only: journal name -> lines skipped because they were not records of its kind."""
    repairs: Repairs = field(default_factory=Repairs)
    """After ``check_integrity``: records re-derived exactly (already in the lists above)."""
    lines: Lines | None = field(default=None, repr=False)
    """Strict only: the records with their line numbers, for ``check_integrity``'s messages."""

    @property
    def is_solve(self) -> bool:
        """A ``spade solve`` directory: no plan, proposal or epoch was ever written."""
        return not (self.plans or self.proposals or self.metrics)

    @property
    def command(self) -> str | None:
        """The command that wrote the directory (``run``, ``solve``, ``serve-env``; ``provenance``)."""
        played = bool(self.plans or self.proposals or self.metrics)
        return command_of(self.config, self.manifest, played=played, has_tasks=bool(self.tasks))


def _run_root(path: str | Path) -> Path:
    root = Path(path)
    if not root.exists():
        raise UserError(f"run directory not found: {root}")
    if not root.is_dir():
        raise UserError(f"{root} is not a directory")
    if not (root / "config.yaml").is_file():
        raise UserError(f"{root} is not a run directory (no config.yaml)")
    return root


class RunStream:
    """A run directory read strictly as ``read_run`` reads it, one journal at a time and one record at a
    time, for a reader whose memory must not grow with the run (an export of a million trajectories): it
    keeps what it needs of each record and its byte offset, and reads a record again with :meth:`at`.

    Raises (on construction):
        UserError: ``path`` is not a run directory (no ``config.yaml``).
    """

    def __init__(self, path: str | Path, *, tolerant: bool = False) -> None:
        """``tolerant``: as ``read_run``'s tolerant mode, a line that is not a record of its journal is
        counted in ``damaged`` and skipped, and a damaged JSON file reads as ``{}``."""
        self.path = _run_root(path)
        self.tolerant = tolerant
        self.damaged: Counter[str] = Counter()
        if tolerant:
            self.config = _yaml_dict(self.path / "config.yaml")
            self.manifest = _json_dict(self.path / "manifest.json")
            self.summary = _json_dict(self.path / "summary.json")
        else:
            run = RunDir(self.path)
            config = run.read_yaml("config.yaml")
            self.config = config if isinstance(config, dict) else {}
            self.manifest = _dict(run.read_json("manifest.json"))
            self.summary = _dict(run.read_json("summary.json"))

    def records(self, journal: str) -> Iterator[tuple[int, Any]]:
        """(byte offset, record) for each record of ``journal``, in file order, each validated.

        Raises:
            UserError: strict only: a line is not a record of its journal (FILE:LINE).
        """
        if not self.tolerant:
            for _, offset, record in located(self.path / journal, journal):
                yield offset, record
            return
        model: type[BaseModel] = RECORD_MODELS[journal][0]
        for _, offset, raw in read_located(self.path / journal, self.damaged):
            try:
                yield offset, model.model_validate(raw)
            except ValidationError:
                self.damaged[journal] += 1

    def at(self, journal: str, offset: int) -> Any:
        """The record of ``journal`` at ``offset`` (one :meth:`records` gave), read and validated again."""
        return record_at(self.path, journal, offset)

    def count(self, journal: str) -> int:
        """How many lines of ``journal`` hold a JSON record (not checked further: a cheap count)."""
        return sum(1 for _ in read_numbered(self.path / journal, Counter() if self.tolerant else None))

    def _first(self, journal: str) -> bool:
        """Whether ``journal`` holds a JSON record (tolerant: a damaged line is skipped, not raised)."""
        return next(read_numbered(self.path / journal, Counter() if self.tolerant else None), None) is not None

    @property
    def played(self) -> bool:
        """Whether a plan, proposal or epoch was ever written (``RunRecords.is_solve``'s negation)."""
        return any(self._first(j) for j in (PLANS, PROPOSALS, METRICS))

    @property
    def command(self) -> str | None:
        """``RunRecords.command``, without reading the run's records."""
        has_tasks = self._first(TASKS)
        return command_of(self.config, self.manifest, played=self.played, has_tasks=has_tasks)


class LazyRows(Sequence[EpochMetrics]):
    """Metrics rows made when asked for, not held as models: a subclass says how many there are
    (``__len__``) and how to make row ``index`` (``_row``); indexing, slicing and iterating follow."""

    def _row(self, index: int) -> EpochMetrics:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> EpochMetrics: ...

    @overload
    def __getitem__(self, index: slice) -> list[EpochMetrics]: ...

    def __getitem__(self, index: int | slice) -> EpochMetrics | list[EpochMetrics]:
        size = len(self)
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(size))]
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("metrics row out of range")
        return self._row(index)

    def __iter__(self) -> Iterator[EpochMetrics]:
        for index in range(len(self)):
            yield self._row(index)


class MetricsRows(LazyRows):
    """A run's metrics rows in epoch order, as a loop holds them: the latest :data:`KEPT_ROWS` whole, the
    others by byte offset in ``metrics.jsonl``, read again when asked for (the loop reads the last few; a
    run of 30,000 epochs held whole took some 300 MB). ``difficulties`` keeps every row's target."""

    def __init__(self, root: Path | None = None) -> None:
        """``root``: the run directory the rows are read again from (None: every row is kept whole)."""
        self.root = root
        self._offsets = array("q")
        self._kept: deque[EpochMetrics] = deque()
        self._whole: dict[int, EpochMetrics] = {}
        """Rows past the latest with no place to be read from (no ``root``, or no offset given)."""
        self.difficulties = array("d")

    def append(self, row: EpochMetrics, offset: int = -1) -> None:
        """The next epoch's row, and where its line starts in ``metrics.jsonl`` (-1: not known)."""
        if offset < 0 or self.root is None:
            self._whole[len(self._offsets)] = row
        self._offsets.append(offset)
        self.difficulties.append(row.difficulty)
        self._kept.append(row)
        if len(self._kept) > KEPT_ROWS:
            self._kept.popleft()

    def before(self, epoch: int) -> Sequence[EpochMetrics]:
        """The rows of the epochs before ``epoch`` (row ``i`` is epoch ``i``'s), read as asked for."""
        return _Prefix(self, min(max(epoch, 0), len(self)))

    def __len__(self) -> int:
        return len(self._offsets)

    def _row(self, index: int) -> EpochMetrics:
        first_kept = len(self._offsets) - len(self._kept)
        if index >= first_kept:
            return self._kept[index - first_kept]
        whole = self._whole.get(index)
        if whole is not None or self.root is None:
            assert whole is not None
            return whole
        row: EpochMetrics = record_at(self.root, METRICS, self._offsets[index])
        return row


class _Prefix(LazyRows):
    """The first ``size`` rows of a ``MetricsRows``, read as asked for."""

    def __init__(self, rows: MetricsRows, size: int) -> None:
        self._rows, self._size = rows, size

    def __len__(self) -> int:
        return self._size

    def _row(self, index: int) -> EpochMetrics:
        return self._rows[index]


KEPT_ROWS = 64
"""How many of the latest metrics rows ``MetricsRows`` holds whole."""


def read_run(path: str | Path, *, tolerant: bool = False, skip: Collection[str] = ()) -> RunRecords:
    """The records of the run directory at ``path`` (see the module docstring for the two modes).
    ``skip`` (tolerant only): journals left unread, their lists empty, for a reader that streams them
    (``RunStream``) or needs none of them: the trajectories and the proposals are a run's bulk.

    Raises:
        UserError: ``path`` is not a run directory (no ``config.yaml``); strict only: a line is not a
            record of its journal (FILE:LINE).
    """
    root = _run_root(path)
    if tolerant:
        return _read_tolerant(root, frozenset(skip))
    run = RunDir(root)
    config = run.read_yaml("config.yaml")
    records = RunRecords(
        path=root,
        config=config if isinstance(config, dict) else {},
        manifest=_dict(run.read_json("manifest.json")),
        summary=_dict(run.read_json("summary.json")),
    )
    lines = Lines(root, _ORDER)
    rows = {journal: [record for _, record in lines.rows[journal]] for journal in _ORDER}
    records.plans, records.metrics = rows[PLANS], rows[METRICS]
    records.proposals = [lines.raw_proposals[n] for n, _ in lines.rows[PROPOSALS]]
    records.tasks, records.trajectories = rows[TASKS], rows[TRAJECTORIES]
    records.rejected, records.task_stats = rows[REJECTED], rows[TASK_STATS]
    records.lines = lines
    return records


def check_integrity(records: RunRecords) -> RunRecords:
    """``records`` (read strictly) checked against what the run recorded about them, as resume needs
    (``integrity``'s docstring); what can be re-derived exactly is merged in and kept in ``repairs``.

    Raises:
        UserError: the records disagree with what the run recorded about them (the file, the epoch,
            what is missing or repeated).
    """
    lines = records.lines
    if lines is None:
        raise ValueError("check_integrity needs records read strictly (read_run(path))")
    if records.is_solve:
        check_solve(lines, records.summary or None)
        return records
    repairs = check_run(lines)
    records.rejected = _merged(lines.rows[REJECTED], repairs.rejections)
    records.task_stats = [s for _, s in lines.rows[TASK_STATS]] + repairs.stats
    records.repairs = repairs
    return records


@dataclass
class CheckedRun:
    """A run directory read for resume (``read_checked``): checked as ``check_integrity`` checks. Of its
    records nothing is kept here: its reader was told of each as it passed and kept what it needs; what
    the checks re-derived is in ``repairs`` (not among the records it was told of)."""

    path: Path
    is_solve: bool
    repairs: Repairs


def read_checked(path: str | Path, *, seen: RecordSeen | None = None) -> CheckedRun:
    """The run directory at ``path`` read strictly and checked as resume needs (``check_integrity``),
    in one pass over each journal, holding of each record only what the checks compare
    (``integrity.LIGHT``, ``integrity.EpisodeIndex``): ``seen`` is told of every record as it is read
    (journal, byte offset, as written, validated), before the checks, so a caller keeps what it needs
    without a second pass; what it kept counts only once this returns.

    Raises:
        UserError: not a run directory, a line is not a record of its journal (FILE:LINE), or the
            records disagree with what the run recorded about them.
    """
    root = _run_root(path)
    RunDir(root).read_yaml("config.yaml")  # a damaged config is named before any record
    lines = Lines(root, _ORDER, light=_ORDER, seen=seen)
    solve = not (lines.rows[PLANS] or lines.rows[PROPOSALS] or lines.rows[METRICS])
    if solve:
        check_solve(lines, RunDir(root).read_json("summary.json") or None)
        repairs = Repairs()
    else:
        repairs = check_run(lines)
    return CheckedRun(path=root, is_solve=solve, repairs=repairs)


def apply_repairs(run: RunDir, records: RunRecords | CheckedRun) -> None:
    """Write back what ``read_run`` re-derived, as the run would have written it: rejections in
    place (``rejected.jsonl`` is in decision order), stats rows appended (completion order, as after
    a kill). Resume does this before it goes on; nothing else writes a run it reads."""
    repairs = records.repairs
    if repairs.rejections:
        run.insert(REJECTED, [(before, r.model_dump(mode="json")) for before, r in repairs.rejections])
    if repairs.stats:
        run.append(TASK_STATS, [s.model_dump(mode="json") for s in repairs.stats])


def _merged(rows: list[tuple[int, Rejection]], inserted: list[tuple[int, Rejection]]) -> list[Rejection]:
    """``rows`` with each ``(n, rejection)`` of ``inserted`` placed before line ``n`` (past the end:
    last, by ``n``): the list ``RunDir.insert`` leaves on disk."""
    before: dict[int, list[Rejection]] = {}
    for n, rejection in inserted:
        before.setdefault(n, []).append(rejection)
    out: list[Rejection] = []
    for n, rejection in rows:
        out.extend(before.pop(n, []))
        out.append(rejection)
    for n in sorted(before):
        out.extend(before[n])
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _read_tolerant(root: Path, skip: frozenset[str] = frozenset()) -> RunRecords:
    damaged: Counter[str] = Counter()

    def typed(journal: str) -> list[Any]:
        model: type[BaseModel] = RECORD_MODELS[journal][0]
        out: list[Any] = []
        if journal in skip:
            return out
        for _, raw in read_numbered(root / journal, damaged):
            try:
                out.append(model.model_validate(raw))
            except ValidationError:
                damaged[journal] += 1
        return out

    proposals = []
    for _, raw in read_numbered(root / PROPOSALS, damaged) if PROPOSALS not in skip else ():
        try:
            RECORD_MODELS[PROPOSALS][0].model_validate(raw)
            proposals.append(raw)
        except ValidationError:
            damaged[PROPOSALS] += 1
    return RunRecords(
        path=root,
        config=_yaml_dict(root / "config.yaml"),
        manifest=_json_dict(root / "manifest.json"),
        summary=_json_dict(root / "summary.json"),
        plans=typed(PLANS),
        proposals=proposals,
        tasks=typed(TASKS),
        rejected=typed(REJECTED),
        trajectories=typed(TRAJECTORIES),
        task_stats=typed(TASK_STATS),
        metrics=typed(METRICS),
        damaged=damaged,
    )


def _json_dict(path: Path) -> dict[str, Any]:
    try:
        return _dict(json_loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError):
        return {}


def _yaml_dict(path: Path) -> dict[str, Any]:
    try:
        return _dict(clean_data(yaml.safe_load(path.read_text(encoding="utf-8"))))  # YAML's "\ud800" too
    except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return {}
