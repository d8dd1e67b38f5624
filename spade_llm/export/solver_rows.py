"""Training data from a run directory (``spade export``): the formats TRL and verl read.

Only accepted tasks (``tasks.jsonl``) and judged trajectories (at least one attempt) are exported. One
file holds every row, each with a ``split`` column; rows come in a stable order (tasks by epoch,
generator request and position, samples by ``sample_index``), so the same run directory always
gives a byte-identical file, and a run still being written (a torn last line) exports what is whole.

Formats:

* ``sft`` (TRL conversational): ``{"messages": [...]}`` ending with the passing answer, one row per
  passing trajectory. A repair conversation (failed answer, feedback, fix) is kept whole, as the
  process signal, and flagged ``repair: true``; ``turns`` is how many answers the episode took to
  pass. ``--final-only`` keeps the first prompt (system + user) and the passing answer alone. Also
  ``task_id``, ``kind``, ``language``, ``trajectory_id``, ``sample_index``, ``split``, ``difficulty``.
* ``dpo`` (TRL preference, conversational): ``{"prompt", "chosen", "rejected"}`` as message lists,
  chosen and rejected one assistant message each, chosen always a passing answer and rejected a
  failing one. ``pair_type`` says where a pair comes from:

  - ``samples``: two samples of one task on the same first prompt, a passing one's answer against a
    failing one's first answer. Passing samples (fewest turns first, then sample order: a first-try
    pass answers the very prompt) and failing ones (sample order) are paired round robin,
    ``max(#passing, #failing)`` pairs and at most ``MAX_SAMPLE_PAIRS`` per task, so every sample is
    used when the bound allows and the pairing never depends on anything but the records;
  - ``repair``: inside a trajectory that passed after failing, each failed answer against the passing
    one, the prompt being the conversation before the failed answer.

  A pair whose two answers hold the same text or code, or whose rejected code passed in another
  attempt at the task (a flaky verdict, not a preference), is skipped.
* ``grpo`` (TRL prompt-only): ``{"prompt": [...]}`` and what a reward function needs: ``task_id``,
  ``kind``, ``language``, ``entry_point``, ``tests`` and ``ground_truth`` (JSON strings, see
  ``groundtruth``), ``split``, ``difficulty``; one row per task and answer language.
* ``verl`` (parquet, verl's RL dataset): ``data_source`` (``"spade_llm"``), ``prompt`` (messages), ``ability:
  "code"``, ``reward_model: {style: "rule", ground_truth}``, ``extra_info: {split, index, task_id, kind,
  language, difficulty}`` (``index``: the row number); one row per task and answer language. Needs pyarrow
  (``pip install 'spade-selfplay[parquet]'``). ``--verl-reward sandbox_fusion`` writes rows for verl's
  built-in judges instead, data source ``codecontests``: a function task's ground truth as ``fn_name``, JSON
  argument lines and printed outputs (tasks whose arguments JSON can carry), for the SandboxFusion judge; a
  whole program's as ``{inputs, outputs}`` stdin and stdout texts, which SandboxFusion reads and so does
  verl's ``prime_code`` (where no ``reward.sandbox_fusion.url`` is set), and so does spade's ``compute_score``
  (``rewards.field_formats``). SandboxFusion compares printed text and its ``fn_name`` wrapper prints nothing
  for an answer that raises or exits, so tests a crash or a trivial stand-in would pass there but not in
  spade's verdict are left out, and so are tasks left with no test or passed by a stand-in (a trivial program,
  for a program's task) on the tests verl scores (``groundtruth.sandbox_fusion_form``); the summary line says
  what was left out, per reason, with task ids (``LeftOut``).

A prompt is the opening the solver actually saw, taken from one of the task's trajectories; a task
with none yet is rendered from the run's templates (``prompts_dir``, else the packaged ones).

Languages: every row has the answer language (``language``; verl: in ``extra_info``): an ``sft`` or ``dpo``
row its trajectory's, a ``grpo`` or ``verl`` row the one its prompt asks in. A whole-program task
(``TaskKind.answer_languages``) gets a ``grpo``/``verl`` row per language its episodes were asked in (in
sample order), each with the opening of an episode in it and a ground truth that carries it (so a trainer's
reward judges in it); one with no episode yet, a row in the language its first episode gets
(``kinds.mix.episode_language`` on the run's ``curriculum.languages``). Every other task's rows are Python.
verl's built-in judges run Python only: ``--verl-reward sandbox_fusion`` leaves the other languages' rows out.

Filters (all optional, all must hold):

* ``difficulty`` is *measured*: ``1 - pass rate`` over the task's samples (``task_stats.jsonl``, or its
  trajectories while the row is not written yet). ``--min-difficulty``/``--max-difficulty`` and
  ``--tier`` drop tasks with no judged sample (their difficulty is ``null``).
* ``--tier`` by measured pass rate ``p``, as Absolute Zero stratifies: ``easy`` ``p > 2/3``, ``hard``
  ``p < 1/3`` (unsolved tasks included), ``medium`` in between, bounds included. Strict outer bounds
  keep ``medium`` non-empty at 3 samples per task (p = 1/3 or 2/3) and 4 (p = 1/2); computed from
  counts, so no rounding moves a task across a bound.
* ``--status``: ``sft`` rows only ever end with a passing answer, so ``passed`` (the default) is the
  only status it takes; ``grpo``/``verl`` keep tasks with at least one judged sample that ended so;
  ``dpo`` pairs passing with failing answers by construction and refuses it.
* ``--kinds``: task kinds to keep. ``--final-only``: ``sft`` only.
* ``--split``: one split, taken after identical rows are merged, so its rows are exactly those of the
  whole export with that ``split`` value (exporting each split alone never writes one example twice).

Split: a task is in ``test`` when the first 64 bits of ``sha256(task_id)``, as a fraction of 2**64, are
below ``test_fraction``: stable across runs, processes (unlike ``hash``) and formats, and every row of
a task lands in the same split, so no test task leaks into training through another format. A task made
on another (a bug hidden in an accepted task's reference: ``meta.base_task``) is split by that task's id
(``split_keys``), so it lands beside it: its fix is that task's reference.

Benchmark data: a task given to ``spade solve`` (any task of a directory it wrote: ``store.written_by``)
or imported (``source`` other than ``generated``) is in ``test`` whatever its hash (``is_benchmark``):
its rows are evaluation rows (a held-out set, verl's ``val_files``), never train rows, so a benchmark
never trains the model it measures. The summary line says how many tasks that was.

Identical rows are written once, the first kept: rows with the same training content (``sft``: the
messages; ``dpo``: prompt, chosen and rejected; ``grpo``/``verl``: the prompt and the ground truth but
its task id: the tests, kind, entry point, public count, ``check_code``...), whatever their ids. A
filter combination that can never match, or a filter that means nothing for the format, is a
``UserError``; filters that happen to leave nothing write an empty file and say ``0 rows``.

Writes are atomic (a temporary file beside the output, then ``os.replace``): a failed export leaves
no half file and never destroys an earlier one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError, pip_install
from ..evaluator import measured
from ..kinds import KIND_NAMES, get_kind
from ..kinds.mix import episode_language
from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..rewards.groundtruth import (
    LEFT_OUT_LANGUAGE,
    SANDBOX_FUSION_DATA_SOURCE,
    ground_truth,
    sandbox_fusion_form,
)
from ..store import JOURNALS, TASK_STATS, TASKS, TRAJECTORIES, RunStream
from ..types import Attempt, Message, Task, Trajectory, base_task_id, task_epoch
from .names import FORMATS, STATUSES, TIERS, VERL_REWARDS

__all__ = [
    "DATA_SOURCE",
    "FORMATS",
    "MAX_SAMPLE_PAIRS",
    "TIERS",
    "ExportFilters",
    "ExportResult",
    "LeftOut",
    "export_run",
    "is_benchmark",
    "require_pyarrow",
    "split_keys",
    "split_of",
    "task_split",
    "tier_of",
]

DATA_SOURCE = "spade_llm"
"""verl's ``data_source`` column: which reward a verl trainer dispatches to."""
MAX_SAMPLE_PAIRS = 4
"""At most this many ``samples`` DPO pairs per task: a task with many samples must not swamp the set."""
_RUN_FILES = frozenset({*JOURNALS, "config.yaml", "manifest.json", "summary.json", "report.html"})
"""A run's own records: an export never overwrites one."""


@dataclass(frozen=True)
class ExportFilters:
    """Which tasks and trajectories an export keeps (module docstring: what each means per format)."""

    status: str | None = None
    min_difficulty: float | None = None
    max_difficulty: float | None = None
    kinds: Sequence[str] | None = None
    tier: str | None = None
    split: str | None = None
    final_only: bool = False


SHOWN_TASK_IDS = 10
"""At most this many task ids per reason in the summary line (``LeftOut`` keeps them all)."""


@dataclass
class LeftOut:
    """What a ``--verl-reward sandbox_fusion`` export left out, by reason (``groundtruth.
    sandbox_fusion_form``): whole tasks (their ids), and tests of the tasks it kept (how many, by task id)."""

    tasks: dict[str, list[str]] = field(default_factory=dict)
    tests: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, task_id: str, reason: str | None, tests: dict[str, int]) -> None:
        if reason is not None:
            self.tasks.setdefault(reason, []).append(task_id)
            return  # its tests went with it
        for why, n in tests.items():
            self.tests.setdefault(why, {})[task_id] = n

    def lines(self) -> list[str]:
        """One line per reason, with its counts and (the first ``SHOWN_TASK_IDS``) task ids."""

        def ids(task_ids: Sequence[str], counts: dict[str, int] | None = None) -> str:
            shown = [f"{t} ({counts[t]})" if counts else t for t in task_ids[:SHOWN_TASK_IDS]]
            more = len(task_ids) - len(shown)
            return ", ".join(shown) + (f" and {more} more" if more else "")

        out = []
        for reason, task_ids in self.tasks.items():
            out.append(f"{_count(len(task_ids), 'task')} ({reason}): {ids(task_ids)}")
        for reason, counts in self.tests.items():
            n, task_ids = sum(counts.values()), list(counts)
            out.append(
                f"{_count(n, 'test')} of {_count(len(task_ids), 'kept task')} ({reason}): {ids(task_ids, counts)}"
            )
        return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: where, how many rows of each split, and what was left out."""

    path: Path
    fmt: str
    rows: int
    train: int
    test: int
    tasks: int
    left_out: LeftOut = field(default_factory=LeftOut)
    benchmark: int = 0
    """Tasks of the run that are benchmark data (``is_benchmark``): test rows only."""

    def describe(self) -> str:
        """A line for the user (the CLI prints it on stderr), then one per reason anything was left out."""
        line = f"{self.rows} {self.fmt} rows ({self.train} train, {self.test} test) from {self.tasks} tasks"
        if self.rows == 0:
            line += ", nothing matched"
        lines = [f"{line} -> {self.path}"]
        if self.benchmark:
            lines.append(
                f"{_count(self.benchmark, 'task')} of the run are benchmark data (given to spade solve, or "
                "imported): evaluation rows, in the test split only, never a train row"
            )
        left = self.left_out.lines()
        if left:
            lines.append("left out for verl's SandboxFusion judge:" if self.fmt == "verl" else "left out:")
            lines.extend(f"  {x}" for x in left)
        return "\n".join(lines)


# -- what a run holds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """A task's samples and how many passed: its measured difficulty and tier."""

    samples: int
    passed: int

    @property
    def difficulty(self) -> float:
        return round(1.0 - self.passed / self.samples, 6)

    @property
    def tier(self) -> str:
        return tier_of(self.passed, self.samples)


@dataclass
class TaskRecord:
    """One accepted task with its trajectories (sample order) and measured difficulty."""

    task: Task
    split: str
    trajectories: list[Trajectory] = field(default_factory=list)
    measured: Measured | None = None

    @property
    def judged(self) -> list[Trajectory]:
        """The samples that got to an attempt (an endpoint failure before any answer judged nothing)."""
        return [t for t in self.trajectories if t.attempts]

    @property
    def difficulty(self) -> float | None:
        return None if self.measured is None else self.measured.difficulty


@dataclass
class _TaskPlace:
    """Where an accepted task and its episodes are in the run's journals: what an export holds of a task
    until it writes its rows (``TaskRecords``)."""

    offset: int
    split: str
    episodes: list[int] = field(default_factory=list)
    """Byte offsets of its trajectories in ``trajectories.jsonl``, in file order."""
    measured: Measured | None = None


class TaskRecords:
    """A run's accepted tasks in export order, each read with its trajectories only when its turn comes
    (``TaskRecord``): an export's memory is one task's episodes and a few numbers per task, not the run.
    Iterable again and again; ``len`` is the number of tasks."""

    def __init__(self, stream: RunStream, places: list[_TaskPlace]) -> None:
        self._stream = stream
        self._places = places

    def __len__(self) -> int:
        return len(self._places)

    def __iter__(self) -> Iterator[TaskRecord]:
        for place in self._places:
            task = self._stream.at(TASKS, place.offset)
            episodes: list[Trajectory] = [self._stream.at(TRAJECTORIES, o) for o in place.episodes]
            episodes.sort(key=lambda t: (t.sample_index, t.trajectory_id))
            yield TaskRecord(task=task, split=place.split, trajectories=episodes, measured=place.measured)


@dataclass(frozen=True)
class ExportRun:
    """What an export reads from a run directory: its accepted tasks with their episodes."""

    path: Path
    public_tests: int
    prompts_dir: str | None
    tasks: Iterable[TaskRecord]
    """In export order (``task_order``); a ``TaskRecords`` when read from a run, each task read in its turn."""
    benchmark: int = 0
    """How many of the tasks are benchmark data (``is_benchmark``): in the test split, whatever their hash."""
    languages: Any = (DEFAULT_ANSWER_LANGUAGE,)
    """The run's ``curriculum.languages`` (a mix or a list): the language of a task's row with no episode."""
    seed: int = 0
    samples_per_task: int = 1

    def languages_of(self, record: TaskRecord) -> list[str]:
        """The answer languages of ``record``'s rows (``grpo``, ``verl``): those its episodes were asked in, in
        sample order; with no episode, the one its first would get; Python for a kind answering in Python."""
        if not get_kind(record.task.kind).answer_languages:
            return [DEFAULT_ANSWER_LANGUAGE]
        played = list(dict.fromkeys(t.language for t in record.trajectories))
        if played:
            return played
        task = record.task
        first = episode_language(
            self.languages, seed=self.seed, epoch=task_epoch(task), task_id=task.task_id, sample_index=0,
            samples=self.samples_per_task,
        )  # fmt: skip
        return [first]


def split_of(task_id: str, test_fraction: float) -> str:
    """``test`` or ``train``, by sha256 of the task id: the same in every process, run and format."""
    h = int.from_bytes(hashlib.sha256(task_id.encode("utf-8")).digest()[:8], "big") / 2**64
    return "test" if h < test_fraction else "train"


def is_benchmark(task: Task, given: bool) -> bool:
    """Whether ``task`` is benchmark data, never a train row: a task the user gave ``spade solve``
    (``given``: a directory it wrote), or one imported (``source`` other than ``generated``, which the
    generator sets on every task it proposes)."""
    return given or task.source != "generated"


def task_split(task: Task, test_fraction: float, *, given: bool = False, key: str | None = None) -> str:
    """The split of every row of ``task``: ``test`` for benchmark data (``is_benchmark``), else by the
    hash (``split_of``) of ``key`` (``split_keys``: the id of the task it was made on), else of its id.
    ``given``: the run directory was written by ``spade solve``."""
    return "test" if is_benchmark(task, given) else split_of(key or task.task_id, test_fraction)


def split_keys(tasks: Iterable[Task]) -> dict[str, str]:
    """Each task's id -> the id its split is drawn by: its own, or for a task made on a base (``types.
    base_task_id``: a bug hidden in an accepted task's reference) its base's, followed back to a task made
    from scratch. A task and the tasks made on it share its statement, tests and reference (a fix of the
    bug *is* the reference): split apart, a train row would hand over a held-out task's solution."""
    return split_keys_of({t.task_id: base_task_id(t) for t in tasks})


def split_keys_of(bases: dict[str, str | None]) -> dict[str, str]:
    """``split_keys`` from each task's id -> the id of the task it was made on (None: from scratch)."""
    keys: dict[str, str] = {}
    for task_id in bases:
        key, seen = task_id, set()
        while key in bases and key not in seen:
            seen.add(key)
            base = bases[key]
            if base is None:
                break
            key = base
        keys[task_id] = key
    return keys


def tier_of(passed: int, samples: int) -> str:
    """``easy`` (p > 2/3), ``hard`` (p < 1/3) or ``medium``, in integers so no rounding moves a bound."""
    if 3 * passed > 2 * samples:
        return "easy"
    if 3 * passed < samples:
        return "hard"
    return "medium"


def task_order(indexed: tuple[int, Task]) -> tuple[int, int, int, int]:
    """Epoch, generator request, position, then file order: the same rows whatever order concurrent
    workers appended the tasks in (a ``solve`` run's tasks have none of these and keep file order)."""
    i, task = indexed

    def num(key: str) -> int:
        value = task.meta.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return num("epoch"), num("request_index"), num("position"), i


def read_for_export(run_dir: Path, test_fraction: float) -> ExportRun:
    """The run's accepted tasks, their trajectories and measured difficulty (``store.RunStream``, strict: a
    line that is not a record of its journal is not turned into training data), read as streams: one pass
    per journal keeps each task's place, split and counts, and ``ExportRun.tasks`` reads a task with its
    episodes only when its rows are written, so the memory does not grow with the trajectories.

    Raises:
        UserError: no such directory, not a run directory, or a damaged record (FILE:LINE).
    """
    stream = RunStream(run_dir)
    config = stream.config
    solver = config.get("solver") if isinstance(config.get("solver"), dict) else {}
    public_tests = solver.get("public_tests", 3) if isinstance(solver, dict) else 3
    prompts_dir = config.get("prompts_dir")
    curriculum = config.get("curriculum") if isinstance(config.get("curriculum"), dict) else {}
    languages = (curriculum or {}).get("languages") or [DEFAULT_ANSWER_LANGUAGE]
    seed = config.get("seed", 0)
    samples = solver.get("samples_per_task", 1) if isinstance(solver, dict) else 1
    given = stream.command == "solve"  # its tasks were given to it, often a benchmark's

    places: dict[str, _TaskPlace] = {}
    order: dict[str, tuple[int, int, int, int]] = {}
    bases: dict[str, str | None] = {}
    benchmark: set[str] = set()
    for offset, task in stream.records(TASKS):
        if task.task_id in places:
            continue  # a task id twice: the first is the accepted one
        places[task.task_id] = _TaskPlace(offset=offset, split="")
        order[task.task_id] = task_order((len(order), task))
        bases[task.task_id] = base_task_id(task)
        if is_benchmark(task, given):
            benchmark.add(task.task_id)
    keys = split_keys_of(bases)  # a task made on another lands in that one's split
    for task_id, place in places.items():
        place.split = "test" if task_id in benchmark else split_of(keys[task_id], test_fraction)
    seen: set[int] = set()  # trajectory ids, hashed: a record written twice is read once
    played: dict[str, list[int]] = {}  # task id -> [measured episodes, passed]
    for offset, traj in stream.records(TRAJECTORIES):
        owner = places.get(traj.task_id)
        key = hash(traj.trajectory_id)
        if owner is None or key in seen:
            continue  # a rejected task's episode, or a record written twice
        seen.add(key)
        owner.episodes.append(offset)
        if measured([traj]):  # abandoned episodes measure nothing
            counts = played.setdefault(traj.task_id, [0, 0])
            counts[0] += 1
            counts[1] += traj.final_status == "passed"
    del seen
    for task_id, (samples_played, passed) in played.items():  # until its task_stats row is written
        places[task_id].measured = Measured(samples=samples_played, passed=passed)
    for _, row in stream.records(TASK_STATS):
        stats = places.get(row.task_id)
        if stats is not None and row.samples - row.abandoned > 0:
            stats.measured = Measured(samples=row.samples - row.abandoned, passed=row.passed)
    ordered = sorted(places, key=order.__getitem__)
    return ExportRun(
        path=run_dir,
        public_tests=public_tests if isinstance(public_tests, int) and public_tests > 0 else 3,
        prompts_dir=prompts_dir if isinstance(prompts_dir, str) else None,
        tasks=TaskRecords(stream, [places[t] for t in ordered]),
        benchmark=len(benchmark),
        languages=languages,
        seed=seed if isinstance(seed, int) else 0,
        samples_per_task=samples if isinstance(samples, int) and samples > 0 else 1,
    )


# -- filters ------------------------------------------------------------------------------------


def check_filters(fmt: str, filters: ExportFilters, test_fraction: float) -> None:
    """Refuse what can never match or means nothing for ``fmt``, before reading anything.

    Raises:
        UserError: one line saying which flags clash.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    if not 0.0 <= test_fraction <= 1.0:
        raise UserError(f"--test-fraction must be between 0 and 1, got {test_fraction}")
    f = filters
    if f.status is not None and f.status not in STATUSES:
        raise UserError(f"unknown status {f.status!r}; known: {', '.join(STATUSES)}")
    if f.status is not None and fmt == "dpo":
        raise UserError("--status does not apply to dpo: its pairs are a passing against a failing answer")
    if f.status not in (None, "passed") and fmt == "sft":
        raise UserError(f"sft rows end with a passing answer: --status {f.status} can never match (use passed)")
    if f.final_only and fmt != "sft":
        raise UserError(f"--final-only applies to sft only, not {fmt}")
    if f.kinds is not None:
        if not f.kinds:
            raise UserError(f"--kinds names no kind; known: {', '.join(KIND_NAMES)}")
        unknown = [k for k in f.kinds if k not in KIND_NAMES]
        if unknown:
            raise UserError(f"unknown task kind {unknown[0]!r} in --kinds; known: {', '.join(KIND_NAMES)}")
    if f.tier is not None and f.tier not in TIERS:
        raise UserError(f"unknown tier {f.tier!r}; known: {', '.join(TIERS)}")
    if f.split is not None and f.split not in ("train", "test"):
        raise UserError(f"unknown split {f.split!r}; known: train, test")
    for name, value in (("--min-difficulty", f.min_difficulty), ("--max-difficulty", f.max_difficulty)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise UserError(f"{name} must be between 0 and 1, got {value}")
    lo = 0.0 if f.min_difficulty is None else f.min_difficulty
    hi = 1.0 if f.max_difficulty is None else f.max_difficulty
    if lo > hi:
        raise UserError(f"--min-difficulty {lo} is above --max-difficulty {hi}: no task can match")
    # measured difficulty d = 1 - p: easy d < 1/3, hard d > 2/3 (rounded to 6 places: <= .333333, >= .666667)
    eps = 1e-6
    clash = {
        "easy": lo >= 1 / 3,
        "hard": hi <= 2 / 3,
        "medium": hi < 1 / 3 - eps or lo > 2 / 3 + eps,
    }
    if f.tier is not None and clash[f.tier]:
        raise UserError(f"--tier {f.tier} and difficulty range [{lo}, {hi}] can never both hold")
    if f.split == "test" and test_fraction == 0.0:
        raise UserError("--split test with --test-fraction 0: the test split is empty")
    if f.split == "train" and test_fraction == 1.0:
        raise UserError("--split train with --test-fraction 1: the train split is empty")


def keep_task(record: TaskRecord, filters: ExportFilters, fmt: str) -> bool:
    """Whether the task-level filters keep ``record`` (``--status`` too, for grpo and verl). Not
    ``--split``: that one applies to the rows once duplicates are gone (``build_rows``)."""
    f = filters
    if f.kinds is not None and record.task.kind not in f.kinds:
        return False
    if f.min_difficulty is not None or f.max_difficulty is not None or f.tier is not None:
        measured = record.measured
        if measured is None:
            return False
        if f.min_difficulty is not None and measured.difficulty < f.min_difficulty:
            return False
        if f.max_difficulty is not None and measured.difficulty > f.max_difficulty:
            return False
        if f.tier is not None and measured.tier != f.tier:
            return False
    if f.status is not None and fmt in ("grpo", "verl"):
        return any(t.final_status == f.status for t in record.judged)
    return True


# -- conversations ------------------------------------------------------------------------------


def _messages(messages: Iterable[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def opening(traj: Trajectory) -> list[Message]:
    """The messages before the first answer: what the solver saw first (system, then the task)."""
    for i, m in enumerate(traj.messages):
        if m.role == "assistant":
            return traj.messages[:i]
    return list(traj.messages)


def answer_index(traj: Trajectory, n: int) -> int | None:
    """Index in ``messages`` of attempt ``n``'s answer: its ``message_index``, else the n-th assistant
    message (each attempt comes from one answer, in order); None when the records disagree."""
    attempt = traj.attempts[n]
    i = attempt.message_index
    if i is not None and 0 <= i < len(traj.messages) and traj.messages[i].role == "assistant":
        return i
    answers = [k for k, m in enumerate(traj.messages) if m.role == "assistant"]
    return answers[n] if n < len(answers) else None


def passing_answer(traj: Trajectory) -> tuple[int, Attempt] | None:
    """The passing attempt and the index of its answer, when the trajectory passed."""
    if traj.final_status != "passed" or not traj.attempts or not traj.attempts[-1].result.all_passed:
        return None
    i = answer_index(traj, len(traj.attempts) - 1)
    return None if i is None else (i, traj.attempts[-1])


class Openings:
    """A task's prompt: a trajectory's recorded opening, else rendered from the run's templates."""

    def __init__(self, run: ExportRun) -> None:
        self.run = run
        self._prompts: Any = None

    def of(self, record: TaskRecord, language: str = DEFAULT_ANSWER_LANGUAGE) -> list[Message]:
        """The opening of the task's first episode asked in ``language``, else one rendered in it."""
        for traj in record.trajectories:
            first = opening(traj)
            if traj.language == language and first and first[-1].role == "user":
                return first
        return self.render(record.task, language)

    def render(self, task: Task, language: str = DEFAULT_ANSWER_LANGUAGE) -> list[Message]:
        from ..solver import first_messages
        from ..templates import Prompts

        if self._prompts is None:
            folder = self.run.prompts_dir
            self._prompts = Prompts(folder if folder and Path(folder).is_dir() else None)
        return first_messages(self._prompts, task, self.run.public_tests, language)


# -- rows ---------------------------------------------------------------------------------------


def _task_columns(record: TaskRecord, language: str) -> dict[str, Any]:
    return {
        "task_id": record.task.task_id,
        "kind": record.task.kind,
        "language": language,
        "split": record.split,
        "difficulty": record.difficulty,
    }


def sft_rows(records: Iterable[TaskRecord], final_only: bool) -> Iterator[dict[str, Any]]:
    """One row per passing trajectory, cut at its passing answer."""
    for record in records:
        for traj in record.judged:
            found = passing_answer(traj)
            if found is None:
                continue
            i, _ = found
            turns = len(traj.attempts)
            messages = [*opening(traj), traj.messages[i]] if final_only else traj.messages[: i + 1]
            yield {
                "messages": _messages(messages),
                **_task_columns(record, traj.language),
                "trajectory_id": traj.trajectory_id,
                "sample_index": traj.sample_index,
                "repair": turns > 1 and not final_only,
                "turns": turns,
            }


def _same_answer(a: Attempt, b: Attempt, a_text: str, b_text: str) -> bool:
    return a_text == b_text or (bool(a.code.strip()) and a.code == b.code)


def _passed_elsewhere(failed: Attempt, passed_codes: set[str]) -> bool:
    """Whether a failed answer's code passed in some attempt of the task: a flaky verdict (a timeout
    under load), not a wrong answer, so it is no one's ``rejected``."""
    return bool(failed.code.strip()) and failed.code in passed_codes


def _pair(
    record: TaskRecord,
    pair_type: str,
    prompt: Sequence[Message],
    chosen: tuple[Trajectory, int],
    rejected: tuple[Trajectory, int],
) -> dict[str, Any]:
    (good, gi), (bad, bi) = chosen, rejected
    return {
        "prompt": _messages(prompt),
        "chosen": _messages([good.messages[gi]]),
        "rejected": _messages([bad.messages[bi]]),
        "pair_type": pair_type,
        **_task_columns(record, good.language),
        "chosen_trajectory_id": good.trajectory_id,
        "rejected_trajectory_id": bad.trajectory_id,
    }


def dpo_rows(records: Iterable[TaskRecord]) -> Iterator[dict[str, Any]]:
    """``samples`` pairs then ``repair`` pairs, task by task (module docstring: the pairing)."""
    for record in records:
        # first-try passes first: their answer replies to the very prompt, not to feedback
        passing = [(t, found) for t in record.judged if (found := passing_answer(t)) is not None]
        passing.sort(key=lambda pair: len(pair[0].attempts))  # stable: sample order within a turn count
        failing = [
            (t, i) for t in record.judged if t.final_status != "passed" and (i := answer_index(t, 0)) is not None
        ]
        passed_codes = {a.code for t in record.judged for a in t.attempts if a.result.all_passed}
        if passing and failing:
            for n in range(min(max(len(passing), len(failing)), MAX_SAMPLE_PAIRS)):
                good, (gi, good_attempt) = passing[n % len(passing)]
                bad, bi = failing[n % len(failing)]
                prompt = opening(good)
                if opening(bad) != prompt:  # not the same question (another template): no preference
                    continue
                if _same_answer(good_attempt, bad.attempts[0], good.messages[gi].content, bad.messages[bi].content):
                    continue
                if _passed_elsewhere(bad.attempts[0], passed_codes):
                    continue
                yield _pair(record, "samples", prompt, (good, gi), (bad, bi))
        for good, (gi, good_attempt) in passing:
            for n, failed in enumerate(good.attempts[:-1]):
                fi = answer_index(good, n)
                if fi is None or fi >= gi or failed.result.all_passed:
                    continue
                if _same_answer(good_attempt, failed, good.messages[gi].content, good.messages[fi].content):
                    continue
                if _passed_elsewhere(failed, passed_codes):
                    continue
                yield _pair(record, "repair", good.messages[:fi], (good, gi), (good, fi))


def _truth(run: ExportRun, task: Task, language: str = DEFAULT_ANSWER_LANGUAGE) -> dict[str, Any]:
    from ..solver import split_tests

    return ground_truth(task, len(split_tests(task, run.public_tests)[0]), language)


def _ground_truth(run: ExportRun, task: Task, language: str = DEFAULT_ANSWER_LANGUAGE) -> str:
    return json.dumps(_truth(run, task, language), ensure_ascii=False, sort_keys=True)


def grpo_rows(run: ExportRun, records: Iterable[TaskRecord]) -> Iterator[dict[str, Any]]:
    """One prompt per task and answer language, with the columns TRL hands a reward function."""
    openings = Openings(run)
    for record in records:
        task = record.task
        for language in run.languages_of(record):
            yield {
                "prompt": _messages(openings.of(record, language)),
                "task_id": task.task_id,
                "kind": task.kind,
                "language": language,
                "entry_point": task.entry_point,
                "tests": json.dumps([t.dump() for t in task.tests], ensure_ascii=False),
                "ground_truth": _ground_truth(run, task, language),
                "split": record.split,
                "difficulty": record.difficulty,
            }


def verl_rows(
    run: ExportRun,
    records: Iterable[TaskRecord],
    reward: str = "spade",
    left_out: LeftOut | None = None,
    split: str | None = None,
) -> Iterator[dict[str, Any]]:
    """verl's RL dataset rows (``index`` is filled in once duplicates are gone). ``reward``: who judges
    them, ``spade`` (``spade_llm.rewards.compute_score``) or ``sandbox_fusion`` (verl's built-in judges:
    SandboxFusion through ``spade serve-sandbox``, and ``prime_code`` for program tasks; function tasks
    whose arguments JSON can carry and program tasks, without the tests and tasks that judge could pass a
    crash or a trivial answer on, see ``groundtruth.sandbox_fusion_form``); what it leaves out of
    ``split`` (None: both) is added to ``left_out``."""
    openings = Openings(run)
    for record in records:
        for language in run.languages_of(record):
            if reward == "sandbox_fusion":
                if language != DEFAULT_ANSWER_LANGUAGE:  # verl's built-in judges run every answer as Python
                    if left_out is not None and split in (None, record.split):
                        left_out.add(f"{record.task.task_id} ({language})", LEFT_OUT_LANGUAGE, {})
                    continue
                form = sandbox_fusion_form(record.task)
                if left_out is not None and split in (None, record.split):
                    left_out.add(record.task.task_id, form.reason, form.tests_left_out)
                if form.truth is None:
                    continue
                source = SANDBOX_FUSION_DATA_SOURCE
                truth = json.dumps(form.truth, ensure_ascii=False, sort_keys=True)
            else:
                source, truth = DATA_SOURCE, _ground_truth(run, record.task, language)
            yield {
                "data_source": source,
                "prompt": _messages(openings.of(record, language)),
                "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": truth},
                "extra_info": {
                    "split": record.split,
                    "index": 0,
                    "task_id": record.task.task_id,
                    "kind": record.task.kind,
                    "language": language,
                    "difficulty": record.difficulty,
                },
            }


def _content_key(fmt: str, run: ExportRun, tasks: Callable[[str], Task]) -> Callable[[dict[str, Any]], str]:
    """What makes two rows the same training example (module docstring), as a canonical string.

    For ``grpo`` and ``verl`` that is the prompt and all a reward judges: the whole ground truth but
    the task id (tests alone would merge imported benchmarks whose ``check_code`` differs), in
    whichever form the row holds it; ``tasks``: a row's task by its id."""

    def key(row: dict[str, Any]) -> str:
        if fmt == "sft":
            content: Any = row["messages"]
        elif fmt == "dpo":
            content = [row["prompt"], row["chosen"], row["rejected"]]
        else:
            truth = _truth(run, tasks(_task_id(row)), _language_column(row))
            content = [row["prompt"], {k: v for k, v in truth.items() if k != "task_id"}]
        return json.dumps(content, ensure_ascii=False, sort_keys=True)

    return key


def unique(rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> Iterator[dict[str, Any]]:
    """``rows`` with each training example once, the first kept, order unchanged (streamed: a digest of each
    example is all that is kept of it)."""
    seen: set[bytes] = set()
    for row in rows:
        k = hashlib.blake2b(key(row).encode("utf-8"), digest_size=16).digest()
        if k not in seen:
            seen.add(k)
            yield row


# -- writing ------------------------------------------------------------------------------------


def default_output(run_dir: Path, fmt: str, filters: ExportFilters | None = None) -> Path:
    """``RUN_DIR/exports/FORMAT[-TIER][-SPLIT].jsonl`` (``.parquet`` for verl, a folder for harbor): a tier
    or split selected is a file of its own, so ``--tier medium`` never overwrites the whole export."""
    parts = [fmt, *(p for p in (filters.tier, filters.split) if p)] if filters is not None else [fmt]
    suffix = {"verl": ".parquet", "harbor": ""}.get(fmt, ".jsonl")
    return run_dir / "exports" / f"{'-'.join(parts)}{suffix}"


def _export_harbor(run: ExportRun, path: Path, filters: ExportFilters) -> ExportResult:
    """The kept tasks as Harbor task folders (``export/harbor.py``), one per task of the chosen split."""
    from ..config import load_config
    from .harbor import write_harbor

    records = [r for r in run.tasks if keep_task(r, filters, "harbor") and filters.split in (None, r.split)]
    kept = [(r.task, r.measured.tier if r.measured is not None else "medium") for r in records]
    config = run.path / "config.yaml"
    test_timeout_s = load_config(config if config.is_file() else None, {}).sandbox.test_timeout_s
    written = write_harbor(
        kept, path, public_tests=run.public_tests, prompts_dir=run.prompts_dir, test_timeout_s=test_timeout_s
    )
    skipped = {task_id for ids in written.left_out.values() for task_id in ids}
    test = sum(r.split == "test" and r.task.task_id not in skipped for r in records)
    left = LeftOut(tasks=dict(written.left_out))
    return ExportResult(
        path=path, fmt="harbor", rows=written.tasks, train=written.tasks - test, test=test, tasks=written.tasks,
        left_out=left, benchmark=run.benchmark,
    )  # fmt: skip


def check_output(output: Path, run_dir: Path) -> None:
    """Refuse an output that is a directory or one of the run's own records."""
    if output.is_dir():
        raise UserError(f"output {output} is a directory; give a file path")
    with contextlib.suppress(OSError):
        if output.resolve().parent == run_dir.resolve() and output.name in _RUN_FILES:
            raise UserError(f"output {output} is one of the run's own records; choose another path")


def atomic_write(output: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``output``, then rename it over: all or nothing.

    Raises:
        UserError: the folder cannot be made or written (the earlier file, if any, is kept).
    """
    tmp: Path | None = None
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
        os.close(fd)
        tmp = Path(name)
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
        tmp = None
    except OSError as e:
        raise UserError(f"cannot write {output}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_jsonl(rows: Iterable[dict[str, Any]]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")

    return write


def _needs_pyarrow(what: str) -> UserError:
    return UserError(f"{what} writes parquet, which needs pyarrow: {pip_install('parquet')}")


def require_pyarrow(what: str) -> None:
    """Fail now, before any work (a run's first epoch), when ``what`` needs the parquet extra and it is
    not installed; looks without importing it."""
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        raise _needs_pyarrow(what)


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # the submodule write_table lives in
    except ImportError:
        raise _needs_pyarrow("verl export") from None
    return pyarrow


def verl_schema(pa: Any) -> Any:
    """The parquet schema, explicit so an empty export still has every column and nested field."""
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(message)),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            (
                "extra_info",
                pa.struct(
                    [
                        ("split", pa.string()),
                        ("index", pa.int64()),
                        ("task_id", pa.string()),
                        ("kind", pa.string()),
                        ("language", pa.string()),
                        ("difficulty", pa.float64()),
                    ]
                ),
            ),
        ]
    )


PARQUET_BATCH = 2048
"""Rows per parquet row group: an export holds one batch of rows, not the file."""


def _write_parquet(rows: Iterable[dict[str, Any]]) -> Callable[[Path], None]:
    pa = _pyarrow()

    def write(path: Path) -> None:
        schema = verl_schema(pa)
        with pa.parquet.ParquetWriter(str(path), schema) as writer:
            batch: list[dict[str, Any]] = []
            written = False
            for row in rows:
                batch.append(row)
                if len(batch) == PARQUET_BATCH:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch, written = [], True
            if batch or not written:  # no row at all: an empty table, as before
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))

    return write


# -- the command --------------------------------------------------------------------------------


def build_rows(
    run: ExportRun,
    fmt: str,
    filters: ExportFilters,
    verl_reward: str = "spade",
    left_out: LeftOut | None = None,
) -> list[dict[str, Any]]:
    """The export's rows, filtered, deduplicated, in order (verl's ``index`` numbered); what the
    ``sandbox_fusion`` form leaves out of the kept tasks goes to ``left_out``. ``iter_rows`` streams them."""
    return list(iter_rows(run, fmt, filters, verl_reward, left_out))


def iter_rows(
    run: ExportRun,
    fmt: str,
    filters: ExportFilters,
    verl_reward: str = "spade",
    left_out: LeftOut | None = None,
) -> Iterator[dict[str, Any]]:
    """``build_rows``, one task's rows at a time."""
    current: dict[str, Task] = {}

    def records() -> Iterator[TaskRecord]:
        # the row builders finish a task's rows before they take the next task, so the task of the
        # row being keyed is always the latest one handed out
        for record in run.tasks:
            if keep_task(record, filters, fmt):
                current.clear()
                current[record.task.task_id] = record.task
                yield record

    rows: Iterable[dict[str, Any]]
    if fmt == "sft":
        rows = sft_rows(records(), filters.final_only)
    elif fmt == "dpo":
        rows = dpo_rows(records())
    elif fmt == "grpo":
        rows = grpo_rows(run, records())
    else:
        rows = verl_rows(run, records(), verl_reward, left_out, filters.split)
    # --split once duplicates are gone: an example that tasks of both splits share is kept once, in the
    # first one's split, so exporting each split alone never writes it into both files
    index = 0
    for row in unique(rows, _content_key(fmt, run, current.__getitem__)):
        if filters.split not in (None, _split_column(row)):
            continue
        if fmt == "verl":
            row["extra_info"]["index"] = index
        index += 1
        yield row


@dataclass
class _Tally:
    """What an export wrote, counted as its rows stream past."""

    rows: int = 0
    test: int = 0
    task_ids: set[str] = field(default_factory=set)

    def counted(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            self.rows += 1
            self.test += _split_column(row) == "test"
            self.task_ids.add(_task_id(row))
            yield row


def _split_column(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["split"] if "extra_info" in row else row["split"])


def _task_id(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["task_id"] if "extra_info" in row else row["task_id"])


def _language_column(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["language"] if "extra_info" in row else row["language"])


def export_run(
    run_dir: Path,
    fmt: str,
    output: Path | None,
    filters: ExportFilters,
    *,
    test_fraction: float = 0.1,
    verl_reward: str = "spade",
) -> ExportResult:
    """Write ``run_dir``'s training data in ``fmt`` to ``output`` (default: ``RUN_DIR/exports/``).

    ``verl_reward`` (verl only): ``spade`` writes our ground truth for ``spade_llm.rewards.
    compute_score``; ``sandbox_fusion`` writes the form verl's built-in judges run
    (``groundtruth.sandbox_fusion_form``), function and program tasks only, and ``ExportResult.left_out``
    says which tasks and tests it left out and why.

    Raises:
        UserError: a missing or damaged run directory, filters that clash or mean nothing for
            ``fmt``, pyarrow missing for verl, an output that cannot be written.
    """
    check_filters(fmt, filters, test_fraction)
    if verl_reward not in VERL_REWARDS:
        raise UserError(f"unknown verl reward {verl_reward!r}; known: {', '.join(VERL_REWARDS)}")
    if verl_reward != "spade" and fmt != "verl":
        raise UserError(f"--verl-reward is for --format verl, not {fmt}")
    if fmt == "verl":
        _pyarrow()  # before any work: say what to install
    run = read_for_export(run_dir, test_fraction)
    path = output if output is not None else default_output(run_dir, fmt, filters)
    if fmt == "harbor":
        return _export_harbor(run, path, filters)
    check_output(path, run_dir)
    left_out = LeftOut()
    tally = _Tally()
    rows = tally.counted(iter_rows(run, fmt, filters, verl_reward, left_out))  # written as they are made
    atomic_write(path, _write_parquet(rows) if fmt == "verl" else write_jsonl(rows))
    return ExportResult(
        path=path,
        fmt=fmt,
        rows=tally.rows,
        train=tally.rows - tally.test,
        test=tally.test,
        tasks=len(tally.task_ids),
        left_out=left_out,
        benchmark=run.benchmark,
    )
