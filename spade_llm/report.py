"""``spade report``: one self-contained HTML page about a run, to look at rather than read.

The page (``RUN_DIR/report.html`` by default) has no network fetch: styles are inline, charts are
inline SVG drawn here by matplotlib's SVG backend (no script draws them), and a small inline script
only filters the tasks table and opens a task's trajectories from JSON embedded in the page.

What is embedded is bounded, so a run of 200 epochs and 10,000 trajectories still gives a page of
about 8 MB that Chromium opens in about a second:

- **Trajectory sampling.** Per task at most ``PER_TASK`` episodes, one of each kind in this order of
  preference: a *repaired* one (passed after a failed turn: the feedback loop at work), a *failing*
  one, one that *passed first try*; the task's other samples, in file order, fill the places a kind
  leaves empty (so a small run embeds everything). The page keeps at most ``max_trajectories`` of
  them and at most ``DETAIL_BUDGET`` bytes of task details and trajectories, filled round by round:
  every task gets its first pick before any task gets a second. Within a round tasks come in the
  order of a hash of their id, so a cap spreads the sample over all epochs rather than keeping the
  first ones. The rule depends only on the records: the same run gives the same page.
- **Truncation.** Code, messages and outputs are cut to ``TEXT_LIMIT`` characters (head and tail
  kept, the cut said in the text); test inputs and outputs to ``SHORT_LIMIT``; at most
  ``MAX_TEST_ROWS`` tests per attempt, ``MAX_TABLE_ROWS`` rows in the tasks table (``PAGE_ROWS``
  shown at a time) and ``MAX_REJECTED_ROWS`` rejected proposals. Charts of more than ``MAX_BARS``
  epochs draw areas instead of bars.

Everything from the run is hostile text (model output): HTML is escaped with ``html.escape``, the
embedded JSON has ``<``, ``>`` and ``&`` written as ``\\u003c``... so no ``</script>`` can end its
element, the script builds the trajectory view with ``textContent`` only, and chart labels go through
matplotlib's SVG escaping with mathtext parsing off.

``epoch_hook`` is an ``on_epoch_end`` hook that re-renders the page after every epoch; while the run
goes on the page reloads itself every ``REFRESH_S`` seconds (not while a task is open).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import html
import io
import json
import math
import os
import re
import tempfile
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import yaml

from .errors import UserError
from .store import TRAJECTORIES
from .text import clean_data, json_loads, to_utf8

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .hooks import EpochEnd

DEFAULT_MAX_TRAJECTORIES = 1500
"""Trajectories embedded in one page at most (see the module docstring for which)."""
PER_TASK = 3
"""Trajectories kept per task at most: a repaired one, a failing one, one passed first try."""
DETAIL_BUDGET = 4_500_000
"""Bytes of embedded task details and trajectories at most, whatever ``max_trajectories`` allows."""
TEXT_LIMIT = 4000
"""Characters kept of a code block, a message, a diff or stderr."""
SHORT_LIMIT = 300
"""Characters kept of a test's input, expected value, output or error, and of a rejection's detail."""
MAX_TEST_ROWS = 20
MAX_TABLE_ROWS = 5000
PAGE_ROWS = 200
"""Rows of the tasks table shown at a time (the rest wait behind "show more"): layout stays quick."""
MAX_REJECTED_ROWS = 150
MAX_WARNING_GROUPS = 60
REFRESH_S = 30
"""Seconds between reloads of a page rendered by ``epoch_hook`` while the run goes on."""
REPORT_FILE = "report.html"

CATEGORIES = ("repaired", "failing", "first_try")
"""Kinds of episode kept per task, in order of preference (module docstring)."""
CATEGORY_LABELS = {"repaired": "repaired", "failing": "failing", "first_try": "passed first try"}

# One palette for the page and its charts: a series keeps its colour everywhere.
INK = "#1f2933"
MUTED = "#6b7280"
GRID = "#e5e7eb"
BLUE = "#2563eb"
GREEN = "#16a34a"
RED = "#dc2626"
AMBER = "#d97706"
PURPLE = "#7c3aed"
TEAL = "#0891b2"
GREY = "#9ca3af"
SERIES = [BLUE, AMBER, TEAL, PURPLE, RED, GREEN, "#db2777", "#65a30d", "#0d9488", "#a16207", "#4f46e5", GREY]
TURN_COLOURS = ["#fca5a5", "#ef4444", "#991b1b"]


# -- reading the run -------------------------------------------------------------------------------


def _records_at(path: Path, damaged: Counter[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file with the byte offset of each line; a missing file gives none,
    a partial last line (a writer still at work) is skipped, and a damaged line is counted in
    ``damaged`` rather than stopping the report: a page about a broken run is still worth having."""
    offset = 0
    try:
        with path.open("rb") as f:
            for raw in f:
                start, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    return
                if not raw.strip():
                    continue
                try:
                    record = json_loads(raw)  # a lone surrogate ("\ud800", a record of another tool) gives U+FFFD
                except (ValueError, RecursionError):
                    damaged[path.name] += 1
                    continue
                if isinstance(record, dict):
                    yield start, record
                else:
                    damaged[path.name] += 1
    except FileNotFoundError:
        return
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None


def _records(path: Path, damaged: Counter[str]) -> Iterator[dict[str, Any]]:
    for _, record in _records_at(path, damaged):
        yield record


def _record_at(f: BinaryIO, offset: int) -> dict[str, Any] | None:
    """The record on the line at ``offset`` of an open JSONL file (None if it is no longer one)."""
    try:
        f.seek(offset)
        record = json_loads(f.readline())
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _yaml_file(path: Path) -> dict[str, Any]:
    try:
        data = clean_data(yaml.safe_load(path.read_text(encoding="utf-8")))  # YAML's "\ud800" too
    except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _num(value: Any, default: float | None = None) -> float | None:
    """A finite number from a record, or ``default``: records are read without trusting them."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)


def _int(value: Any) -> int:
    number = _num(value, 0.0)
    return int(number) if number is not None else 0


def _section(run: RunData, name: str) -> dict[str, Any]:
    """One section of ``config.yaml`` (``controller``, ``solver``...), empty when missing or damaged."""
    value = run.config.get(name)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def clip(text: Any, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters, head and tail kept and the cut said in the middle:
    the start of a long answer and its end (the final code, the last traceback line) both matter."""
    s = _text(text)
    if len(s) <= limit:
        return s
    head = limit * 3 // 4
    tail = limit - head
    return f"{s[:head]}\n… [{len(s) - head - tail:,} characters cut] …\n{s[-tail:]}"


@dataclass
class TaskEpisodes:
    """What the report keeps of one task's episodes: counts, and where its candidate episodes are in
    ``trajectories.jsonl`` (byte offsets: only the episodes the page embeds are read again and slimmed,
    and memory stays small for a large run)."""

    samples: int = 0
    passed: int = 0
    turns: int = 0
    picks: dict[str, int] = field(default_factory=dict)
    """The first episode of each category: category -> offset."""
    extras: list[tuple[int, str]] = field(default_factory=list)
    """Further episodes in file order, up to ``PER_TASK``: they fill the places no category took."""

    def keep(self, offset: int, category: str) -> None:
        if category not in self.picks:
            self.picks[category] = offset
        elif len(self.extras) < PER_TASK - 1:
            self.extras.append((offset, category))

    def ordered_picks(self) -> list[tuple[int, str]]:
        """(offset, category) of the episodes to embed, best first."""
        firsts = [(self.picks[c], c) for c in CATEGORIES if c in self.picks]
        return [*firsts, *self.extras][:PER_TASK]


@dataclass
class Episodes:
    """Aggregates over ``trajectories.jsonl``, read as a stream so a large run is never held whole."""

    count: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    turns_to_pass: Counter[int] = field(default_factory=Counter)
    not_passed: int = 0
    attempt_classes: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    flags: Counter[str] = field(default_factory=Counter)
    reward_sum: float = 0.0
    rewarded: int = 0
    per_task: dict[str, TaskEpisodes] = field(default_factory=dict)
    epoch_of: dict[str, int] = field(default_factory=dict)
    kind_of: dict[str, str] = field(default_factory=dict)


@dataclass
class RunData:
    """Everything the page is made of, read once."""

    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]
    summary: dict[str, Any]
    metrics: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    task_stats: dict[str, dict[str, Any]]
    episodes: Episodes
    damaged: Counter[str]


def load_run(run_dir: Path) -> RunData:
    """Read a run directory, tolerating a run still being written (partial lines, no summary yet).

    Raises:
        UserError: ``run_dir`` is missing or not a run directory (no ``config.yaml``).
    """
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory")
    if not (run_dir / "config.yaml").is_file():
        raise UserError(f"{run_dir} is not a run directory (no config.yaml)")
    damaged: Counter[str] = Counter()
    metrics = sorted(_records(run_dir / "metrics.jsonl", damaged), key=lambda m: _int(m.get("epoch")))
    stats = {_text(r.get("task_id")): r for r in _records(run_dir / "task_stats.jsonl", damaged)}
    return RunData(
        path=run_dir,
        config=_yaml_file(run_dir / "config.yaml"),
        manifest=_json_file(run_dir / "manifest.json"),
        summary=_json_file(run_dir / "summary.json"),
        metrics=metrics,
        tasks=list(_records(run_dir / "tasks.jsonl", damaged)),
        rejected=list(_records(run_dir / "rejected.jsonl", damaged)),
        task_stats=stats,
        episodes=read_episodes(run_dir / "trajectories.jsonl", damaged),
        damaged=damaged,
    )


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))\b")


def attempt_class(attempt: dict[str, Any]) -> str | None:
    """Why one attempt failed, in one word (None when every test passed): ``timeout``, ``memory``...,
    ``no_code``, an exception type, ``hidden_only`` (the public tests passed, hidden ones did not: a
    sign of hard-coding) or ``wrong_answer``. It follows ``evaluator.failure_class``, per attempt."""
    result = attempt.get("result") if isinstance(attempt.get("result"), dict) else {}
    assert isinstance(result, dict)
    tests = [t for t in result.get("test_results") or [] if isinstance(t, dict)]
    total = _int(result.get("tests_total"))
    if total and _int(result.get("tests_passed")) == total:
        return None
    status = _text(result.get("status"))
    if status == "timeout" or any(t.get("status") == "timeout" for t in tests):
        return "timeout"
    if status in ("memory", "output_limit", "killed"):
        return status
    if not _text(attempt.get("code")).strip():
        return "no_code"
    for text in [
        _text(result.get("load_error")),
        *(_text(t.get("error")) for t in tests if t.get("status") != "passed"),
    ]:
        match = _EXCEPTION.match(text.strip())
        if match:
            return match.group(1).rsplit(".", 1)[-1]
    public_total = _int(attempt.get("public_total"))
    if public_total and _int(attempt.get("public_passed")) == public_total:
        return "hidden_only"
    return "wrong_answer"


def _category(trajectory: dict[str, Any]) -> str:
    if trajectory.get("final_status") != "passed":
        return "failing"
    return "first_try" if len(trajectory.get("attempts") or []) <= 1 else "repaired"


def read_episodes(path: Path, damaged: Counter[str]) -> Episodes:
    """Count what the charts need and note, per task, where its candidate episodes are."""
    eps = Episodes()
    for offset, t in _records_at(path, damaged):
        task_id = _text(t.get("task_id"))
        attempts = [a for a in t.get("attempts") or [] if isinstance(a, dict)]
        status = _text(t.get("final_status")) or "error"
        eps.count += 1
        eps.statuses[status] += 1
        reward = _num(t.get("reward"))
        if reward is not None:
            eps.reward_sum += reward
            eps.rewarded += 1
        if status == "passed":
            eps.turns_to_pass[max(1, len(attempts))] += 1
        else:
            eps.not_passed += 1
        for n, a in enumerate(attempts, 1):
            cls = attempt_class(a)
            if cls is not None:
                eps.attempt_classes[cls][n] += 1
        for flag in t.get("flags") or []:
            eps.flags[_text(flag)] += 1
        eps.epoch_of.setdefault(task_id, _int(t.get("epoch")))
        eps.kind_of.setdefault(task_id, _text(t.get("kind")) or "induction")
        per = eps.per_task.setdefault(task_id, TaskEpisodes())
        per.samples += 1
        per.passed += status == "passed"
        per.turns += len(attempts)
        per.keep(offset, _category(t))
    return eps


def _told(messages: list[dict[str, Any]], attempt: dict[str, Any], turn: int) -> str:
    """The user message the solver answered with this attempt: the one before the attempt's answer
    (``message_index``), or the ``turn``-th user message in records without that index."""
    index = attempt.get("message_index")
    if isinstance(index, int) and 0 < index <= len(messages):
        for m in reversed(messages[:index]):
            if m.get("role") == "user":
                return _text(m.get("content"))
        return ""
    users = [m for m in messages if m.get("role") == "user"]
    return _text(users[turn - 1].get("content")) if turn - 1 < len(users) else ""


def code_diff(before: str, after: str) -> str:
    """A unified diff of two attempts' code without the file header lines, cut to ``TEXT_LIMIT``."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    return clip("\n".join(line for line in lines if not line.startswith(("---", "+++"))))


def _slim_test(test: dict[str, Any]) -> dict[str, Any]:
    return {
        "in": clip(test.get("input"), SHORT_LIMIT),
        "st": _text(test.get("status")),
        "out": clip(test.get("output"), SHORT_LIMIT) if test.get("output") is not None else None,
        "err": clip(test.get("error"), SHORT_LIMIT) if test.get("error") else None,
    }


def _slim_attempt(attempt: dict[str, Any], told: str, previous: str | None) -> dict[str, Any]:
    result = attempt.get("result") if isinstance(attempt.get("result"), dict) else {}
    assert isinstance(result, dict)
    tests = [t for t in result.get("test_results") or [] if isinstance(t, dict)]
    public_total = _int(attempt.get("public_total")) or len(tests)
    code = clip(attempt.get("code"))
    hidden = attempt.get("hidden_passed")
    return {
        "turn": _int(attempt.get("turn")),
        "code": code,
        "told": clip(told),
        "diff": None if previous is None else code_diff(previous, code),
        "tests": [_slim_test(t) for t in tests[: min(public_total, MAX_TEST_ROWS)]],
        "pp": _int(attempt.get("public_passed")),
        "pt": public_total,
        "hp": _int(hidden) if isinstance(hidden, int) else None,
        "ht": _int(attempt.get("hidden_total")),
        "status": _text(result.get("status")),
        "load_error": clip(result.get("load_error"), SHORT_LIMIT) or None,
        "stderr": clip(_text(result.get("stderr"))[-TEXT_LIMIT:]) or None,
    }


def slim_trajectory(t: dict[str, Any], category: str) -> dict[str, Any]:
    """The part of a trajectory the page shows, every text clipped: per attempt its code, what the
    solver was told, the diff from the previous attempt and the public tests' verdicts."""
    messages = [m for m in t.get("messages") or [] if isinstance(m, dict)]
    attempts = [a for a in t.get("attempts") or [] if isinstance(a, dict)]
    system = next((_text(m.get("content")) for m in messages if m.get("role") == "system"), "")
    slim: list[dict[str, Any]] = []
    previous: str | None = None
    for n, a in enumerate(attempts, 1):
        slim.append(_slim_attempt(a, _told(messages, a, n), previous))
        previous = slim[-1]["code"]
    reward = _num(t.get("reward"))
    return {
        "id": clip(t.get("trajectory_id"), SHORT_LIMIT),
        "sample": _int(t.get("sample_index")),
        "cat": category,
        "status": _text(t.get("final_status")),
        "reward": None if reward is None else round(reward, 4),
        "flags": [clip(f, SHORT_LIMIT) for f in t.get("flags") or []],
        "error": clip(t.get("error"), SHORT_LIMIT) or None,
        "system": clip(system),
        "prompt": "" if attempts else clip(_told(messages, {}, 1)),
        "attempts": slim,
    }


# -- what the page embeds ----------------------------------------------------------------------


@dataclass
class TaskRow:
    task_id: str
    epoch: int
    kind: str
    difficulty: float | None
    tags: list[str]
    description: str
    samples: int
    passed: int
    mean_turns: float | None
    learnability: float | None
    status: str


STATUS_LABELS = {
    "solved": "all samples passed",
    "mixed": "some samples passed",
    "unsolved": "no sample passed",
    "pending": "not solved yet",
}


def _task_status(samples: int, passed: int) -> str:
    if samples == 0:
        return "pending"
    return "solved" if passed == samples else "unsolved" if passed == 0 else "mixed"


def task_rows(run: RunData) -> list[TaskRow]:
    """One row per accepted task, and per task that only trajectories name (``spade solve`` runs)."""
    rows: list[TaskRow] = []
    seen: set[str] = set()
    eps = run.episodes
    records = [*run.tasks, *({"task_id": tid} for tid in eps.per_task)]  # repeats are skipped below
    for t in records:
        task_id = _text(t.get("task_id"))
        if task_id in seen:
            continue
        seen.add(task_id)
        per = eps.per_task.get(task_id, TaskEpisodes())
        stats = run.task_stats.get(task_id, {})
        meta = t.get("meta") if isinstance(t.get("meta"), dict) else {}
        assert isinstance(meta, dict)
        epoch = meta.get("epoch", stats.get("epoch", eps.epoch_of.get(task_id, 0)))
        p = per.passed / per.samples if per.samples else None
        learn = _num(stats.get("learnability"), None if p is None else (1 - p if 0 < p < 1 else 0.0))
        rows.append(
            TaskRow(
                task_id=task_id,
                epoch=_int(epoch),
                kind=_text(t.get("kind")) or eps.kind_of.get(task_id, "induction"),
                difficulty=_num(t.get("difficulty")),
                tags=[_text(x) for x in t.get("tags") or []],
                description=_text(t.get("description")),
                samples=per.samples,
                passed=per.passed,
                mean_turns=per.turns / per.samples if per.samples else None,
                learnability=learn,
                status=_task_status(per.samples, per.passed),
            )
        )
    return rows


def _spread_key(task_id: str) -> str:
    """A deterministic, id-derived order that spreads a capped sample over the whole run."""
    return hashlib.sha1(task_id.encode("utf-8", "replace")).hexdigest()


def _task_detail(task: dict[str, Any]) -> dict[str, Any]:
    tests = [t for t in task.get("tests") or [] if isinstance(t, dict)]
    return {
        "desc": clip(task.get("description")),
        "entry": clip(task.get("entry_point"), SHORT_LIMIT),
        "ref": clip(task.get("reference_code")),
        "tests": [
            {"in": clip(t.get("input"), SHORT_LIMIT), "exp": clip(json.dumps(t.get("expected")), SHORT_LIMIT)}
            for t in tests[:MAX_TEST_ROWS]
        ],
        "ntests": len(tests),
        "traj": [],
    }


def _size(value: Any) -> int:
    """Bytes ``value`` takes in the page."""
    return len(embed_json(value).encode("utf-8"))


MIN_ITEM_BYTES = 1000
"""Below this much budget left, no trajectory fits: sampling stops looking."""


@dataclass
class Sample:
    """The task details and trajectories embedded in the page, and how many were left out."""

    details: dict[str, dict[str, Any]]
    embedded: int
    total: int
    bytes: int


def sample_details(run: RunData, max_trajectories: int, budget: int | None = None) -> Sample:
    """Pick the trajectories to embed by the rule of the module docstring, within both caps
    (``budget`` bytes, ``DETAIL_BUDGET`` by default)."""
    budget = DETAIL_BUDGET if budget is None else budget
    tasks = {_text(t.get("task_id")): t for t in run.tasks}
    per_task = run.episodes.per_task
    order = sorted(per_task, key=_spread_key)
    details: dict[str, dict[str, Any]] = {}
    used = embedded = 0
    with contextlib.ExitStack() as stack:
        try:
            f = stack.enter_context((run.path / TRAJECTORIES).open("rb"))
        except OSError:
            order = []
        for rank in range(PER_TASK):
            for task_id in order:
                if embedded >= max_trajectories or budget - used < MIN_ITEM_BYTES:
                    break
                picks = per_task[task_id].ordered_picks()
                if rank >= len(picks):
                    continue
                record = _record_at(f, picks[rank][0])
                if record is None:
                    continue
                cost = _embed(details, task_id, slim_trajectory(record, picks[rank][1]), tasks, budget - used)
                if cost:
                    used += cost
                    embedded += 1
    return Sample(details=details, embedded=embedded, total=run.episodes.count, bytes=used)


def _embed(
    details: dict[str, dict[str, Any]], task_id: str, pick: dict[str, Any], tasks: dict[str, dict[str, Any]], room: int
) -> int:
    """Add ``pick`` (with its task's details if it is the task's first) when it fits in ``room`` bytes;
    the bytes it took, or 0."""
    detail = details.get(task_id)
    cost = _size(pick) + 1  # and a comma
    if detail is None:
        detail = _task_detail(tasks.get(task_id, {}))
        cost += _size(task_id) + _size(detail) + 1  # "id":{...},
    if cost > room:
        return 0
    detail["traj"].append(pick)
    details[task_id] = detail
    return cost


def embed_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` (so no ``</script>`` or
    ``<!--``), ``>`` or ``&`` in the text, and no line separators JavaScript chokes on."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


# -- charts --------------------------------------------------------------------------------------

_MPL_LOCK = threading.Lock()
"""matplotlib's rcParams are process-wide: one chart is drawn at a time."""


def _rc() -> Any:
    from cycler import cycler

    return {
        "svg.fonttype": "none",  # text as <text>, not paths: smaller, sharper, selectable
        "text.parse_math": False,  # a `$` in a label is a dollar, not mathtext
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
        "font.size": 9,
        "text.color": INK,
        "axes.labelcolor": MUTED,
        "axes.edgecolor": GRID,
        "axes.linewidth": 0.8,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.prop_cycle": cycler(color=SERIES),
        "grid.color": "#eef0f3",
        "grid.linewidth": 0.8,
        "xtick.color": MUTED,
        "ytick.color": MUTED,
        "xtick.major.size": 0,
        "ytick.major.size": 0,
        "legend.frameon": False,
        "legend.fontsize": 8,
        "figure.facecolor": "white",
        "svg.image_inline": True,
    }


def require_matplotlib() -> None:
    """Fail with the install line when matplotlib is missing: callers (the CLI, a run with
    ``report: true``) can check before any work."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_svg import FigureCanvasSVG  # noqa: F401
    except ImportError:
        raise UserError("spade report needs matplotlib: pip install 'spade_llm[report]'") from None


_SVG_HEAD = re.compile(r"\A.*?(?=<svg\b)", re.S)
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_SVG_SIZE = re.compile(r'\A<svg\b([^>]*?)\swidth="[^"]*"\s+height="[^"]*"')


def figure_svg(fig: Figure, label: str) -> str:
    """The figure as an inline ``<svg>`` element: no XML prolog or DOCTYPE, no metadata, sized by its
    ``viewBox`` so CSS can scale it to the column."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buf = io.StringIO()
    FigureCanvasSVG(fig).print_svg(buf, metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = _SVG_METADATA.sub("", _SVG_HEAD.sub("", buf.getvalue(), count=1), count=1)
    svg = _SVG_SIZE.sub(lambda m: f'<svg{m.group(1)} role="img" aria-label="{html.escape(label)}"', svg, count=1)
    return _PATH_DATA.sub(_compact_path, svg).strip()


_PATH_DATA = re.compile(r'(?<= d=")[^"]*')
_DECIMAL = re.compile(r"-?\d+\.\d+")


def _round(match: re.Match[str]) -> str:
    return f"{float(match.group()):.1f}".removesuffix(".0")


def _compact_path(match: re.Match[str]) -> str:
    """Path data with coordinates to a tenth of a point, on one line: a 200-epoch chart's shapes shrink
    to a third, and a tenth of a point is below what a screen shows."""
    return " ".join(_DECIMAL.sub(_round, match.group()).split())


def _figure(
    width: float = 6.4, height: float = 3.0, cols: int = 1, *, left: float = 0.55, right: float = 0.2, top: float = 0.42
) -> tuple[Figure, list[Axes]]:
    """A figure with fixed margins in inches (room for the legend above, axis labels below): a layout
    engine would lay the figure out twice and double the drawing time, which an epoch hook pays."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(
        left=left / width, right=1 - right / width, bottom=0.5 / height, top=1 - top / height, wspace=0.22
    )
    axes = [fig.add_subplot(1, cols, i + 1) for i in range(cols)]
    return fig, axes


def _label_room(labels: Sequence[str]) -> float:
    """Inches a column of horizontal-bar labels needs at the charts' font size."""
    return 0.2 + 0.068 * max((len(s) for s in labels), default=4)


def _integer_x(ax: Axes) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=10))


def _integer_y(ax: Axes) -> None:
    """Counts get whole-number ticks."""
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _legend(ax: Axes, handles: Sequence[Any] | None = None, ncol: int = 4) -> None:
    """A legend above the plot, left-aligned: it never hides a line."""
    kwargs: dict[str, Any] = {"loc": "lower left", "bbox_to_anchor": (0.0, 1.0), "ncol": ncol, "borderaxespad": 0.2}
    if handles is not None:
        kwargs["handles"] = handles
    ax.legend(**kwargs)


def _series(metrics: list[dict[str, Any]], key: str) -> list[float]:
    """A metric per epoch, NaN where missing (the line breaks there)."""
    return [v if (v := _num(m.get(key))) is not None else math.nan for m in metrics]


def _markers(n: int) -> dict[str, Any]:
    return {"marker": "o", "markersize": 3.5} if n <= 40 else {}


def _empty(ax: Axes, message: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", color=MUTED, fontsize=10, transform=ax.transAxes)


def chart_difficulty(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    m = run.metrics
    if not m:
        _empty(ax, "no epoch finished yet")
        return fig
    x = [_int(r.get("epoch")) for r in m]
    band = _section(run, "controller").get("band")
    if isinstance(band, list) and len(band) == 2 and all(_num(b) is not None for b in band):
        lo, hi = float(band[0]), float(band[1])
        ax.axhspan(lo, hi, color=GREEN, alpha=0.08, lw=0, label=f"band {lo:g}–{hi:g}")
    ax.plot(x, _series(m, "difficulty"), color=BLUE, label="target difficulty", **_markers(len(x)))
    ax.plot(x, _series(m, "pass_rate"), color=GREEN, label="pass rate", **_markers(len(x)))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax)
    return fig


def chart_first_try(run: RunData) -> Figure:
    fig, (ax,) = _figure(right=0.55)
    m = run.metrics
    if not m:
        _empty(ax, "no epoch finished yet")
        return fig
    x = [_int(r.get("epoch")) for r in m]
    (a,) = ax.plot(x, _series(m, "first_try_pass_rate"), color=AMBER, label="first-try pass rate", **_markers(len(x)))
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("pass rate")
    twin = ax.twinx()
    twin.grid(False)
    twin.spines["right"].set_visible(True)
    (b,) = twin.plot(x, _series(m, "mean_turns"), color=TEAL, ls="--", label="mean turns", **_markers(len(x)))
    twin.set_ylim(bottom=0)
    twin.set_ylabel("turns")
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax, [a, b])
    return fig


def chart_reward(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    m = run.metrics
    if not m:
        _empty(ax, "no epoch finished yet")
        return fig
    x = [_int(r.get("epoch")) for r in m]
    ax.plot(x, _series(m, "mean_reward"), color=PURPLE, label="mean reward", **_markers(len(x)))
    ax.plot(x, _series(m, "mean_learnability"), color=TEAL, label="mean learnability", **_markers(len(x)))
    ax.axhline(0, color=GRID, lw=0.8)
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax)
    return fig


FUNNEL_STAGES = ("proposed", "parsed", "valid", "novel", "accepted")


def funnel_totals(run: RunData) -> dict[str, int]:
    totals: Counter[str] = Counter()
    for m in run.metrics:
        funnel = m.get("funnel") if isinstance(m.get("funnel"), dict) else None
        if funnel:
            for stage in FUNNEL_STAGES:
                totals[stage] += _int(funnel.get(stage))
        else:  # older rows: the ends of the funnel only
            totals["proposed"] += _int(m.get("tasks_proposed"))
            totals["accepted"] += _int(m.get("tasks_accepted"))
    return {stage: totals[stage] for stage in FUNNEL_STAGES if stage in totals}


def chart_funnel(run: RunData) -> Figure:
    fig, (ax,) = _figure(left=_label_room(FUNNEL_STAGES), top=0.2)
    totals = funnel_totals(run)
    if not totals or not totals.get("proposed"):
        _empty(ax, "no proposals yet")
        return fig
    stages = list(totals)[::-1]
    values = [totals[s] for s in stages]
    colours = [GREEN if s == "accepted" else BLUE for s in stages]
    bars = ax.barh(stages, values, color=colours, alpha=0.85, height=0.6)
    top = totals["proposed"]
    ax.bar_label(bars, labels=[f"{v:,} ({v / top:.0%})" for v in values], padding=3, color=INK, fontsize=8)
    ax.set_xlim(0, top * 1.22)
    _integer_x(ax)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("candidates, all epochs")
    return fig


MAX_BARS = 60
"""Epochs beyond which per-epoch bars become areas: one shape per series instead of one per
epoch keeps a 200-epoch chart small and quick to draw."""


def _stacked_bars(ax: Axes, x: list[int], layers: list[tuple[str, list[float], str]]) -> None:
    bottom = [0.0] * len(x)
    for label, values, colour in layers:
        top = [b + v for b, v in zip(bottom, values, strict=True)]
        if len(x) <= MAX_BARS:
            ax.bar(x, values, bottom=bottom, color=colour, label=label, width=0.8, lw=0)
        else:
            ax.fill_between(x, bottom, top, color=colour, label=label, lw=0)
        bottom = top


def _top(counter: Counter[str], n: int) -> list[str]:
    """The ``n`` most common keys; ties broken by name so the order is stable."""
    return [k for k, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def chart_rejections(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    per_epoch = {_int(m.get("epoch")): m.get("rejected_by_reason") or {} for m in run.metrics}
    total: Counter[str] = Counter()
    for reasons in per_epoch.values():
        for reason, n in reasons.items():
            total[_text(reason)] += _int(n)
    if not sum(total.values()):
        _empty(ax, "no proposal rejected" if run.metrics else "no epoch finished yet")
        return fig
    shown = _top(total, 8)
    x = sorted(per_epoch)
    layers = [(r, [float(_int(per_epoch[e].get(r))) for e in x], SERIES[i % len(SERIES)]) for i, r in enumerate(shown)]
    rest = [float(sum(_int(n) for r, n in per_epoch[e].items() if r not in shown)) for e in x]
    if any(rest):
        layers.append(("other", rest, GREY))
    _stacked_bars(ax, x, layers)
    ax.set_xlabel("epoch")
    ax.set_ylabel("rejected")
    _integer_x(ax)
    _integer_y(ax)
    _legend(ax, ncol=3)
    return fig


def chart_failures(run: RunData) -> Figure:
    classes = run.episodes.attempt_classes
    total = Counter({c: sum(turns.values()) for c, turns in classes.items()})
    shown = _top(total, 12)[::-1]
    fig, (ax,) = _figure(height=max(3.0, 1.0 + 0.24 * len(shown)), left=_label_room(shown))
    if not total:
        _empty(ax, "no failed attempt")
        return fig
    left = [0.0] * len(shown)
    groups = [("turn 1", lambda n: n == 1), ("turn 2", lambda n: n == 2), ("turn 3+", lambda n: n >= 3)]
    for (label, keep), colour in zip(groups, TURN_COLOURS, strict=True):
        values = [float(sum(v for n, v in classes[c].items() if keep(n))) for c in shown]
        if any(values):
            ax.barh(shown, values, left=left, color=colour, label=label, height=0.65, lw=0)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.grid(axis="y", visible=False)
    _integer_x(ax)
    ax.set_xlabel("failed attempts")
    _legend(ax, ncol=3)
    return fig


def chart_turns(run: RunData) -> Figure:
    fig, (ax,) = _figure(top=0.2)
    eps = run.episodes
    if not eps.count:
        _empty(ax, "no episode yet")
        return fig
    turns = max([*eps.turns_to_pass, _int(_section(run, "solver").get("max_turns")), 1])
    labels = [str(n) for n in range(1, turns + 1)] + ["never"]
    values = [eps.turns_to_pass.get(n, 0) for n in range(1, turns + 1)] + [eps.not_passed]
    bars = ax.bar(labels, values, color=[GREEN] * turns + [RED], alpha=0.85, width=0.6)
    ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=2, color=INK, fontsize=8)
    ax.set_ylim(0, max(values) * 1.15 + 1)
    ax.grid(axis="x", visible=False)
    _integer_y(ax)
    ax.set_xlabel("turn of the passing attempt")
    ax.set_ylabel("episodes")
    return fig


def _task_epoch(task: dict[str, Any]) -> int:
    meta = task.get("meta") if isinstance(task.get("meta"), dict) else {}
    assert isinstance(meta, dict)
    return _int(meta.get("epoch"))


def chart_coverage(run: RunData) -> Figure:
    fig, (left, right) = _figure(width=9.6, cols=2, right=0.3)
    if not run.tasks:
        _empty(left, "no task accepted yet")
        _empty(right, "")
        return fig
    kinds_by_epoch: dict[int, Counter[str]] = defaultdict(Counter)
    tags_by_epoch: dict[int, set[str]] = defaultdict(set)
    for t in run.tasks:
        e = _task_epoch(t)
        kinds_by_epoch[e][_text(t.get("kind")) or "induction"] += 1
        tags_by_epoch[e].update(_text(x) for x in t.get("tags") or [])
    x = list(range(min(kinds_by_epoch), max(kinds_by_epoch) + 1))
    kinds = sorted({k for c in kinds_by_epoch.values() for k in c})
    kind_colours = {"induction": BLUE, "deduction": AMBER, "abduction": TEAL}
    layers = [
        (k, [float(kinds_by_epoch[e][k]) for e in x], kind_colours.get(k, SERIES[i % len(SERIES)]))
        for i, k in enumerate(kinds)
    ]
    _stacked_bars(left, x, layers)
    left.set_xlabel("epoch")
    left.set_ylabel("accepted tasks")
    _integer_x(left)
    _integer_y(left)
    _legend(left)
    seen: set[str] = set()
    new, cumulative = [], []
    for e in x:
        fresh = tags_by_epoch[e] - seen
        seen |= fresh
        new.append(float(len(fresh)))
        cumulative.append(float(len(seen)))
    _stacked_bars(right, x, [("new tags", new, "#d8c8fb")])
    right.plot(x, cumulative, color=PURPLE, label="distinct tags so far", **_markers(len(x)))
    right.set_xlabel("epoch")
    _integer_x(right)
    _integer_y(right)
    _legend(right)
    return fig


def chart_tokens(run: RunData) -> Figure:
    fig, (ax,) = _figure(top=0.6)
    m = run.metrics
    if not m:
        _empty(ax, "no epoch finished yet")
        return fig
    x = [_int(r.get("epoch")) for r in m]
    keys = [
        ("solver prompt", "prompt_tokens", "#a5d8e6"),
        ("solver completion", "completion_tokens", TEAL),
        ("generator prompt", "generator_prompt_tokens", "#a9c1f5"),
        ("generator completion", "generator_completion_tokens", BLUE),
    ]
    layers = [(label, [float(_int(r.get(key))) for r in m], colour) for label, key, colour in keys]
    _stacked_bars(ax, x, layers)
    from matplotlib.ticker import EngFormatter

    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_xlabel("epoch")
    ax.set_ylabel("tokens")
    _integer_x(ax)
    _legend(ax, ncol=2)
    return fig


def llm_roles(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``summary.json``'s ``llm.by_role``, or the totals as one ``all`` role for older summaries."""
    llm = summary.get("llm") if isinstance(summary.get("llm"), dict) else {}
    assert isinstance(llm, dict)
    roles = llm.get("by_role")
    if isinstance(roles, dict) and roles:
        return {_text(k): v for k, v in roles.items() if isinstance(v, dict)}
    return {"all": llm} if llm else {}


def chart_requests(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    roles = llm_roles(run.summary)
    if not roles:
        _empty(ax, "no request counts yet (summary.json)")
        return fig
    names = list(roles)
    width = 0.26
    for i, (key, colour) in enumerate((("requests", BLUE), ("retries", AMBER), ("failures", RED))):
        values = [_int(roles[r].get(key)) for r in names]
        bars = ax.bar([j + (i - 1) * width for j in range(len(names))], values, width=width, color=colour, label=key)
        ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=2, color=INK, fontsize=8)
    ax.set_xticks(range(len(names)), names)
    _integer_y(ax)
    ax.set_ylim(0, max(max(_int(r.get("requests")) for r in roles.values()) * 1.18, 1))
    ax.grid(axis="x", visible=False)
    _legend(ax, ncol=3)
    return fig


def render_chart(draw: Callable[[RunData], Figure], run: RunData, label: str) -> str:
    """One chart as inline SVG, drawn under the page's style."""
    return render_charts([(draw, label)], run)[0]


def render_charts(charts: Sequence[tuple[Callable[[RunData], Figure], str]], run: RunData) -> list[str]:
    """Charts as inline SVG, drawn under the page's style (one style context for all: it is copied
    on entry, and an epoch hook draws them all after every epoch)."""
    import matplotlib

    out = []
    with _MPL_LOCK, matplotlib.rc_context(_rc()):
        for draw, label in charts:
            matplotlib.rcParams["svg.hashsalt"] = draw.__name__  # ids unique per chart in one page
            out.append(figure_svg(draw(run), label))
    return out


# -- HTML ----------------------------------------------------------------------------------------


def esc(value: Any) -> str:
    return html.escape(_text(value), quote=True)


def _pct(value: Any) -> str:
    number = _num(value)
    return "—" if number is None else f"{number:.0%}"


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _count(value: Any) -> str:
    return f"{_int(value):,}"


@dataclass(frozen=True)
class RunState:
    complete: bool
    label: str


def run_state(run: RunData) -> RunState:
    """Finished, stopped early, or still going: ``summary.json``'s ``complete`` is only set after the
    last epoch's hooks, so a run with all its epochs counts as finished too."""
    planned = _int(_section(run, "controller").get("epochs"))
    if run.summary.get("stopped_because"):
        return RunState(False, f"stopped early: {run.summary['stopped_because']}")
    if run.summary.get("complete") is True or (planned and len(run.metrics) >= planned):
        return RunState(True, "complete")
    return RunState(False, f"in progress: {len(run.metrics)} of {planned or '?'} epochs")


def _models(run: RunData) -> tuple[str, str]:
    models = run.manifest.get("models") if isinstance(run.manifest.get("models"), dict) else {}
    assert isinstance(models, dict)
    gen = models.get("generator") or _section(run, "generator").get("model")
    sol = models.get("solver") or _section(run, "solver").get("model")
    return _text(gen) or "?", _text(sol) or "?"


def _tokens(run: RunData) -> int:
    usage = run.summary.get("usage")
    if isinstance(usage, dict):
        return sum(
            _int(u.get(k))
            for u in usage.values()
            if isinstance(u, dict)
            for k in ("prompt_tokens", "completion_tokens")
        )
    keys = ("prompt_tokens", "completion_tokens", "generator_prompt_tokens", "generator_completion_tokens")
    return sum(_int(m.get(k)) for m in run.metrics for k in keys)


def header_html(run: RunData, rows: list[TaskRow]) -> str:
    state = run_state(run)
    gen, sol = _models(run)
    eps = run.episodes
    pass_rate = eps.statuses["passed"] / eps.count if eps.count else None
    mean_reward = eps.reward_sum / eps.rewarded if eps.rewarded else None
    roles = llm_roles(run.summary)
    requests = sum(_int(r.get("requests")) for r in roles.values())
    planned = _int(_section(run, "controller").get("epochs"))
    tiles = [
        ("pass rate", _pct(pass_rate), f"{eps.statuses['passed']:,} of {eps.count:,} episodes"),
        ("mean reward", _fmt(mean_reward), "per episode"),
        ("epochs", f"{len(run.metrics):,}", f"of {planned:,} planned" if planned else ""),
        ("tasks", f"{len(rows):,}", f"{len(run.rejected):,} rejected"),
        (
            "episodes",
            f"{eps.count:,}",
            f"{_int(_section(run, 'solver').get('samples_per_task')) or 1} per task",
        ),
        ("tokens", f"{_tokens(run):,}", f"{requests:,} requests" if roles else ""),
    ]
    solver = _section(run, "solver")
    facts = [
        ("generator", gen),
        ("solver", sol),
        ("seed", _text(run.manifest.get("seed", run.config.get("seed")))),
        ("max turns", _text(solver.get("max_turns"))),
        ("sandbox", _text(run.manifest.get("sandbox") or _section(run, "sandbox").get("backend"))),
        (
            "kinds",
            ", ".join(_text(k) for k in (run.manifest.get("kinds") or _section(run, "curriculum").get("kinds") or [])),
        ),
        ("goal", _text(run.manifest.get("goal") or "")),
        ("started", _text(run.manifest.get("started_at"))),
        ("spade_llm", _text(run.manifest.get("spade_llm"))),
    ]
    badge = "ok" if state.complete else "warn"
    tile_html = "".join(
        f'<div class="tile"><div class="tile-label">{esc(a)}</div><div class="tile-value">{esc(b)}</div>'
        f'<div class="tile-sub">{esc(c)}</div></div>'
        for a, b, c in tiles
    )
    fact_html = "".join(f"<span><b>{esc(k)}</b> {esc(v)}</span>" for k, v in facts if v)
    return (
        f'<header><div class="title"><h1>{esc(run.path.resolve().name)}</h1>'
        f'<span class="badge {badge}">{esc(state.label)}</span></div>'
        f'<div class="path mono">{esc(run.path.resolve())}</div>'
        f'<div class="facts">{fact_html}</div><div class="tiles">{tile_html}</div></header>'
    )


def chart_figure(svg: str, title: str, caption: str, wide: bool = False) -> str:
    cls = "chart wide" if wide else "chart"
    return f'<figure class="{cls}"><figcaption><b>{esc(title)}</b> {esc(caption)}</figcaption>{svg}</figure>'


def section(anchor: str, title: str, caption: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2><p class="caption">{esc(caption)}</p>{body}</section>'


def _ranges(epochs: Sequence[int]) -> str:
    """``0–3, 5, 7–8``: the epochs a warning appeared in."""
    out: list[str] = []
    values = sorted(set(epochs))
    start = prev = values[0]
    for e in [*values[1:], None]:
        if e is not None and e == prev + 1:
            prev = e
            continue
        out.append(str(start) if start == prev else f"{start}–{prev}")
        if e is not None:
            start = prev = e
    return ", ".join(out)


def warnings_html(run: RunData) -> str:
    """The run's warnings, grouped by their wording with the numbers taken out, so a sign that recurs
    every epoch is one line with the epochs it appeared in and its latest wording."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for m in run.metrics:
        for w in m.get("warnings") or []:
            text = _text(w)
            groups.setdefault(re.sub(r"\d+(?:\.\d+)?", "#", text), []).append((_int(m.get("epoch")), text))
    items: list[str] = []
    if run.summary.get("stopped_because"):
        items.append(
            f'<li class="bad"><b>run stopped</b> {esc(clip(run.summary["stopped_because"], SHORT_LIMIT))}</li>'
        )
    for name, n in sorted(run.damaged.items()):
        items.append(f'<li class="bad"><b>{esc(name)}</b> {n:,} damaged line(s) skipped</li>')
    for entries in list(groups.values())[:MAX_WARNING_GROUPS]:
        epochs = [e for e, _ in entries]
        label = "epoch" if len(set(epochs)) == 1 else "epochs"
        items.append(
            f'<li><span class="when">{label} {esc(_ranges(epochs))}</span> {esc(clip(entries[-1][1], SHORT_LIMIT))}'
            f'<span class="muted"> ({len(entries):,}×)</span></li>'
        )
    if len(groups) > MAX_WARNING_GROUPS:
        items.append(f'<li class="muted">{len(groups) - MAX_WARNING_GROUPS:,} more kinds of warning not shown</li>')
    if not items:
        return '<p class="empty">No warning: the run raised none.</p>'
    return f'<ul class="warnings">{"".join(items)}</ul>'


def faults_html(run: RunData) -> str:
    """Fault counts by kind per role, as a small table: the chart shows totals, this says why."""
    rows = []
    for role, counts in llm_roles(run.summary).items():
        for key in ("retried_by_kind", "failed_by_kind", "content_faults"):
            kinds = counts.get(key)
            if isinstance(kinds, dict):
                for kind, n in sorted(kinds.items()):
                    cells = [esc(role), esc(key.replace("_", " ")), esc(kind)]
                    rows.append(f"<tr><td>{'</td><td>'.join(cells)}</td><td class='num'>{_count(n)}</td></tr>")
    if not rows:
        return '<p class="note">No retry or failure by kind recorded.</p>'
    head = '<tr><th>role</th><th>count</th><th>kind</th><th class="num">n</th></tr>'
    return f'<table class="small">{head}{"".join(rows)}</table>'


def tags_html(run: RunData) -> str:
    counts: Counter[str] = Counter(_text(x) for t in run.tasks for x in t.get("tags") or [])
    if not counts:
        return ""
    chips = "".join(
        f'<span class="chip">{esc(clip(tag, 60))} <b>{n:,}</b></span>'
        for tag, n in ((k, counts[k]) for k in _top(counts, 40))
    )
    more = f'<span class="muted">and {len(counts) - 40:,} more</span>' if len(counts) > 40 else ""
    return f'<div class="chips"><span class="chips-label">Most used tags</span>{chips}{more}</div>'


def rejected_html(run: RunData) -> str:
    """A sample of rejected proposals, spread over reasons (round-robin, latest first within one)."""
    if not run.rejected:
        return ""
    by_reason: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in reversed(run.rejected):
        by_reason[_text(r.get("reason"))].append(r)
    picked: list[dict[str, Any]] = []
    queues = [by_reason[k] for k in sorted(by_reason)]
    depth = 0
    while len(picked) < MAX_REJECTED_ROWS and any(depth < len(q) for q in queues):
        picked.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    picked = sorted(picked[:MAX_REJECTED_ROWS], key=lambda r: (_int(r.get("epoch")), _text(r.get("reason"))))
    body = "".join(
        f"<tr><td class='num'>{_int(r.get('epoch'))}</td><td><span class='reason'>{esc(r.get('reason'))}</span></td>"
        f"<td class='mono'>{esc(clip(r.get('task_id') or '', 60))}</td>"
        f"<td class='detail-text'>{esc(clip(r.get('detail'), SHORT_LIMIT))}</td></tr>"
        for r in picked
    )
    shown = f", {len(picked):,} shown (spread over reasons)" if len(picked) < len(run.rejected) else ""
    head = "<tr><th class='num'>epoch</th><th>reason</th><th>task</th><th>detail</th></tr>"
    return (
        f"<details class='rejected'><summary>Rejected proposals: {len(run.rejected):,}{shown}</summary>"
        f"<table class='small'>{head}{body}</table></details>"
    )


def _snippet(text: str, limit: int = 110) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def table_html(rows: list[TaskRow], sample: Sample) -> str:
    """The tasks table, rendered here (the script only filters it and opens rows)."""
    shown = rows
    note = ""
    if len(rows) > MAX_TABLE_ROWS:
        keep = {r.task_id for r in rows if r.task_id in sample.details}
        rest = [r for r in rows if r.task_id not in keep]
        room = max(0, MAX_TABLE_ROWS - len(keep))
        keep |= {r.task_id for r in rest[len(rest) - room :]} if room else set()
        shown = [r for r in rows if r.task_id in keep]
        note = (
            f"<p class='note'>{len(shown):,} of {len(rows):,} tasks listed: those with embedded trajectories "
            "and the latest others.</p>"
        )
    epochs = sorted({r.epoch for r in shown})
    kinds = sorted({r.kind for r in shown})
    statuses = "".join(f"<option value='{esc(s)}'>{esc(label)}</option>" for s, label in STATUS_LABELS.items())
    kind_options = "".join(f"<option>{esc(k)}</option>" for k in kinds)
    epoch_options = "".join(f"<option>{e}</option>" for e in epochs)
    filters = (
        "<div class='filters'>"
        f"<label>status <select id='f-status'><option value=''>all</option>{statuses}</select></label>"
        f"<label>kind <select id='f-kind'><option value=''>all</option>{kind_options}</select></label>"
        f"<label>epoch <select id='f-epoch'><option value=''>all</option>{epoch_options}</select></label>"
        "<label>search <input id='f-text' type='search' placeholder='id, tag or words'></label>"
        f"<span id='f-count' class='muted'>{min(len(shown), PAGE_ROWS):,} shown of {len(shown):,} tasks</span></div>"
    )
    body = []
    for i, r in enumerate(shown):
        has = r.task_id in sample.details
        hidden = " hidden" if i >= PAGE_ROWS else ""
        tags = "".join(f"<span class='tag'>{esc(clip(t, 40))}</span>" for t in r.tags[:3])
        body.append(
            f"<tr class='task{'' if has else ' bare'}'{hidden} tabindex='0' data-id='{esc(r.task_id)}' "
            f"data-status='{r.status}' data-kind='{esc(r.kind)}' data-epoch='{r.epoch}'>"
            f"<td class='mono'><span class='caret'>▸</span>{esc(clip(r.task_id, 80))}</td>"
            f"<td class='num'>{r.epoch}</td>"
            f"<td>{esc(r.kind)}</td><td class='num'>{_fmt(r.difficulty)}</td>"
            f"<td><span class='pill {r.status}'>{r.passed}/{r.samples}</span></td>"
            f"<td class='num'>{_fmt(r.mean_turns, 1)}</td><td class='num'>{_fmt(r.learnability)}</td>"
            f"<td class='desc'>{esc(_snippet(r.description))}{tags}</td></tr>"
        )
    head = (
        "<thead><tr><th data-sort='text'>task</th><th data-sort='num' class='num'>epoch</th>"
        "<th data-sort='text'>kind</th><th data-sort='num' class='num'>difficulty</th><th data-sort='pass'>passed</th>"
        "<th data-sort='num' class='num'>turns</th><th data-sort='num' class='num'>learnability</th>"
        "<th>description</th></tr></thead>"
    )
    return (
        f"{filters}{note}<div class='table-wrap'><table id='tasks'>{head}<tbody>{''.join(body)}</tbody></table></div>"
        f"<button id='f-more' type='button' data-page='{PAGE_ROWS}'{'' if len(shown) > PAGE_ROWS else ' hidden'}>"
        f"show {min(PAGE_ROWS, len(shown) - PAGE_ROWS) if len(shown) > PAGE_ROWS else 0} more</button>"
    )


def sampling_note(sample: Sample, max_trajectories: int) -> str:
    return (
        f"<p class='note'>Trajectories embedded: <b>{sample.embedded:,}</b> of {sample.total:,} "
        f"({sample.bytes / 1e6:.1f} MB). Per task at most {PER_TASK}: a repaired one (passed after a failed turn), "
        f"a failing one and one that passed first try, other samples filling the places a kind leaves empty; "
        f"at most {max_trajectories:,} in all and "
        f"{DETAIL_BUDGET / 1e6:g} MB, every task getting its first before any gets a second, tasks taken in an "
        f"order hashed from their ids. Code and messages are cut at {TEXT_LIMIT:,} characters, test values at "
        f"{SHORT_LIMIT}. Rows in grey have no embedded trajectory. Click a row to open it; "
        f"<span class='mono'>#task=ID</span> in the address opens one.</p>"
    )


CHARTS: list[tuple[str, Callable[[RunData], Figure], str, str, bool]] = [
    ("curriculum", chart_difficulty, "Difficulty and pass rate.",
     "The controller aims the pass rate at the shaded band: above it the target difficulty rises, below it falls. "
     "A pass rate stuck at 0 or 1 means the tasks do not teach.", False),
    ("curriculum", chart_first_try, "First try and turns.",
     "A gap between first-try and final pass rate is what the repair turns buy; mean turns near the maximum "
     "mean the solver rarely gets there.", False),
    ("curriculum", chart_reward, "Reward and learnability.",
     "Learnability (1 − p for tasks some but not all samples solve) is the signal a trainer can use; near 0 "
     "means the tasks are all solved or all failed.", False),
    ("generation", chart_funnel, "Acceptance funnel.",
     "Where proposals are lost: unparsable answers, failed validity gates, near-duplicates.", False),
    ("generation", chart_rejections, "Rejections per epoch.",
     "A reason that grows is a generator habit or a gate worth checking.", False),
    ("solving", chart_failures, "Why attempts fail.",
     "Every failed attempt by error class, split by turn; hidden_only means the public tests passed and hidden "
     "ones did not (a hint of hard-coding).", False),
    ("solving", chart_turns, "Turns to pass.",
     "Episodes by the turn of their passing attempt; many late passes mean the feedback helps.", False),
    ("coverage", chart_coverage, "Task kinds and tags.",
     "The mix of kinds accepted per epoch, and how many new tags each epoch brings: a flat line is a generator "
     "repeating itself.", True),
    ("cost", chart_tokens, "Tokens per epoch.", "Prompt and completion tokens of both roles.", False),
    ("cost", chart_requests, "Requests per role.",
     "Retries and failures against requests, from summary.json (transport faults, not model answers).", False),
]  # fmt: skip

SECTIONS = [
    ("curriculum", "Curriculum", "How the target difficulty followed the solver."),
    ("generation", "Task generation", "What the generator proposed and what the gates kept."),
    ("solving", "Solving", "How episodes end and how they fail."),
    ("coverage", "Coverage", "What the accepted tasks are about."),
    ("cost", "Cost", "What the run spent."),
]


def _flags_line(run: RunData) -> str:
    if not run.episodes.flags:
        return ""
    parts = ", ".join(f"{esc(k)} ×{n:,}" for k, n in sorted(run.episodes.flags.items()))
    return f"<p class='note'>Episode flags: {parts}.</p>"


def page_html(run: RunData, max_trajectories: int, refresh_s: float | None) -> str:
    rows = task_rows(run)
    sample = sample_details(run, max_trajectories)
    charts: dict[str, list[str]] = defaultdict(list)
    svgs = render_charts([(draw, title) for _, draw, title, _, _ in CHARTS], run)
    for (anchor, _, title, caption, wide), svg in zip(CHARTS, svgs, strict=True):
        charts[anchor].append(chart_figure(svg, title, caption, wide))
    extra = {
        "generation": rejected_html(run),
        "solving": _flags_line(run),
        "coverage": tags_html(run),
        "cost": faults_html(run),
    }
    sections = [
        section(anchor, title, caption, f"<div class='charts'>{''.join(charts[anchor])}</div>{extra.get(anchor, '')}")
        for anchor, title, caption in SECTIONS
    ]
    sections.append(
        section(
            "warnings",
            "Warnings",
            "What the run flagged, epoch by epoch; numbers vary, the wording groups them.",
            warnings_html(run),
        )
    )
    sections.append(
        section("tasks", "Tasks", "Every accepted task; open one to read its trajectories turn by turn.",
                sampling_note(sample, max_trajectories) + table_html(rows, sample))
    )  # fmt: skip
    nav = "".join(
        f"<a href='#{a}'>{esc(t)}</a>" for a, t, _ in [*SECTIONS, ("warnings", "Warnings", ""), ("tasks", "Tasks", "")]
    )
    refresh = f" data-refresh='{int(refresh_s)}'" if refresh_s and not run_state(run).complete else ""
    data = embed_json({"tasks": sample.details, "labels": CATEGORY_LABELS})
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>spade report: {esc(run.path.resolve().name)}</title><style>{CSS}</style></head>"
        f"<body{refresh}>{header_html(run, rows)}<nav>{nav}</nav><main>{''.join(sections)}</main>"
        f"<footer>spade_llm report · {esc(run.path.resolve())}</footer>"
        f"<script type='application/json' id='report-data'>{data}</script><script>{SCRIPT}</script></body></html>"
    )


def render_report(
    run_dir: Path | str,
    output: Path | str | None = None,
    *,
    max_trajectories: int = DEFAULT_MAX_TRAJECTORIES,
    refresh_s: float | None = None,
) -> Path:
    """Write the report of ``run_dir`` to ``output`` (default ``RUN_DIR/report.html``) and return its path.

    The file is replaced atomically (a temporary file, then ``os.replace``), so a browser reloading it
    mid-write never sees half a page. ``refresh_s`` makes an unfinished run's page reload itself.

    Raises:
        UserError: the run directory is missing or is not one, matplotlib is not installed, or the
            output cannot be written.
    """
    require_matplotlib()
    run = load_run(Path(run_dir))
    target = Path(output) if output is not None else run.path / REPORT_FILE
    text = page_html(run, max(0, max_trajectories), refresh_s)
    write_atomic(target, text)
    return target


def write_atomic(target: Path, text: str) -> None:
    """``text`` as ``target``'s UTF-8 content, replaced atomically; a lone surrogate that got past the
    readers (none should) is written as U+FFFD rather than losing the page (``spade_llm.text``)."""
    data = to_utf8(text)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise UserError(f"cannot write {target}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write {target}: {e.strerror or e}") from None


def epoch_hook(event: EpochEnd) -> None:
    """``on_epoch_end`` hook: re-render ``RUN_DIR/report.html`` after each epoch, so a browser tab on it
    follows the run (the page reloads itself every ``REFRESH_S`` seconds until the last epoch)."""
    last = event.epoch + 1 >= event.config.controller.epochs
    render_report(event.run_dir, refresh_s=None if last else REFRESH_S)


CSS = """
:root{--ink:#1f2933;--muted:#6b7280;--line:#e5e7eb;--bg:#f6f7f9;--card:#fff;--blue:#2563eb;--green:#16a34a;
--red:#dc2626;--amber:#d97706;--purple:#7c3aed;--teal:#0891b2}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
header{background:var(--card);border-bottom:1px solid var(--line);padding:22px 32px 18px}
.title{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
h1{font-size:22px;margin:0;font-weight:650}
.path{color:var(--muted);font-size:12px;margin-top:2px}
.badge{font-size:12px;padding:2px 10px;border-radius:999px;font-weight:600}
.badge.ok{background:#dcfce7;color:#166534}.badge.warn{background:#fef3c7;color:#92400e}
.facts{display:flex;flex-wrap:wrap;gap:6px 18px;margin:10px 0 14px;color:var(--muted);font-size:13px}
.facts b{color:var(--ink);font-weight:600;margin-right:4px}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px}
.tile{border:1px solid var(--line);border-radius:10px;padding:10px 14px;background:#fbfcfd}
.tile-label{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.tile-value{font-size:24px;font-weight:650}.tile-sub{font-size:12px;color:var(--muted)}
nav{position:sticky;top:0;z-index:5;background:rgba(246,247,249,.95);backdrop-filter:blur(4px);
border-bottom:1px solid var(--line);padding:8px 32px;display:flex;gap:18px;flex-wrap:wrap}
nav a{color:var(--muted);text-decoration:none;font-weight:500}nav a:hover{color:var(--blue)}
main{padding:8px 32px 32px;max-width:1500px}
section{margin-top:26px}
h2{font-size:18px;margin:0 0 2px}
.caption{color:var(--muted);margin:0 0 12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.chart.wide{grid-column:1/-1}
.chart figcaption{font-size:13px;color:var(--muted);margin-bottom:6px}
.chart figcaption b{color:var(--ink)}
.chart svg{width:100%;height:auto;display:block}
.chart.wide svg{max-width:1000px;margin:0 auto}
.note{color:var(--muted);font-size:13px}
.empty{color:var(--muted)}
.muted{color:var(--muted)}
.chips{margin-top:12px;display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.chips-label{font-size:13px;color:var(--muted);margin-right:4px}
.chip{background:#f3e8ff;color:#5b21b6;border-radius:999px;padding:1px 9px;font-size:12px}
.chip b{font-weight:600}
ul.warnings{list-style:none;padding:0;margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px}
ul.warnings li{padding:8px 14px;border-top:1px solid var(--line)}ul.warnings li:first-child{border-top:0}
ul.warnings li::before{content:"▲";color:var(--amber);margin-right:8px;font-size:11px}
ul.warnings li.bad::before{color:var(--red)}
.when{font-weight:600;margin-right:6px}
table{border-collapse:collapse;width:100%;background:var(--card)}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.03em;background:#fbfcfd}
th[data-sort]{cursor:pointer}th[data-sort]:hover{color:var(--blue)}
.num{text-align:right;font-variant-numeric:tabular-nums}
table.small{font-size:13px;border:1px solid var(--line);border-radius:10px;margin-top:10px}
.table-wrap{border:1px solid var(--line);border-radius:10px;overflow:hidden}
#tasks{table-layout:fixed}
#tasks>thead th:nth-child(1){width:190px}#tasks>thead th:nth-child(2){width:70px}
#tasks>thead th:nth-child(3){width:96px}#tasks>thead th:nth-child(4){width:96px}
#tasks>thead th:nth-child(5){width:84px}#tasks>thead th:nth-child(6){width:70px}
#tasks>thead th:nth-child(7){width:110px}
#tasks td.mono{overflow:hidden;text-overflow:ellipsis}
table.tests th:first-child{width:44px}
#f-more{margin:12px 0;font:inherit;border:1px solid var(--line);background:#fff;border-radius:999px;padding:4px 16px;
cursor:pointer;color:var(--blue)}
tr.task{cursor:pointer;scroll-margin-top:48px}tr.task:hover{background:#f5f8ff}tr.task.open{background:#eef4ff}
tr.task.bare td{color:#8a929e}
tr.task td.mono{white-space:nowrap;font-size:12.5px}
.caret{display:inline-block;width:14px;color:var(--muted);transition:transform .1s}
tr.open .caret{transform:rotate(90deg)}
.desc{font-size:13px}
.tag{display:inline-block;background:#f1f5f9;color:#475569;border-radius:4px;padding:0 6px;margin-left:6px;
font-size:11px}
.pill{display:inline-block;min-width:44px;text-align:center;border-radius:999px;padding:0 8px;font-size:12px;
font-weight:600}
.pill.solved,.st-passed{background:#dcfce7;color:#166534}.pill.unsolved,.st-failed{background:#fee2e2;color:#991b1b}
.pill.mixed{background:#fef3c7;color:#92400e}.pill.pending{background:#f1f5f9;color:#64748b}
.st-error{background:#ede9fe;color:#5b21b6}.st-timeout{background:#ffedd5;color:#9a3412}
.reason{background:#fee2e2;color:#991b1b;border-radius:4px;padding:0 6px;font-size:12px}
.detail-text{font-size:12.5px;word-break:break-word}
.filters{display:flex;flex-wrap:wrap;gap:14px;align-items:center;margin:8px 0 12px}
.filters label{font-size:13px;color:var(--muted)}
.filters select,.filters input{margin-left:6px;font:inherit;padding:3px 6px;border:1px solid var(--line);
border-radius:6px;background:#fff}
details.rejected{margin-top:14px}details.rejected summary{cursor:pointer;color:var(--muted)}
tr.detail-row>td{background:#f8fafc;padding:14px 18px}
.detail{max-width:1200px}
.task-desc{white-space:pre-wrap;margin:0 0 8px}
.tabs{display:flex;gap:6px;flex-wrap:wrap;margin:10px 0}
.tabs button{font:inherit;font-size:12.5px;border:1px solid var(--line);background:#fff;border-radius:999px;
padding:2px 12px;cursor:pointer}
.tabs button.on{border-color:var(--blue);color:var(--blue);background:#eef4ff}
.turn{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 14px;margin:10px 0}
.turn-head{display:flex;gap:10px;align-items:center;flex-wrap:wrap;font-weight:600}
.chipv{font-size:12px;border-radius:999px;padding:0 8px;font-weight:600}
details.sub{margin:6px 0}details.sub>summary{cursor:pointer;color:var(--muted);font-size:13px}
pre{background:#f8fafc;border:1px solid var(--line);border-radius:8px;padding:8px 10px;font-size:12.5px;overflow:auto;
max-height:420px;margin:6px 0;white-space:pre-wrap;word-break:break-word}
pre.told{background:#fffbeb;border-color:#fde68a}
pre.diff span{display:block}pre.diff .add{background:#dcfce7;color:#14532d}
pre.diff .del{background:#fee2e2;color:#7f1d1d}
pre.diff .hunk{color:var(--purple)}
table.tests{font-size:12.5px;margin:6px 0;border:1px solid var(--line)}
table.tests td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;
word-break:break-word}
footer{color:var(--muted);font-size:12px;padding:12px 32px 28px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var table = document.getElementById("tasks");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.task"));
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function pre(text, cls) { return el("pre", cls || "", text); }
  function sub(summary, body, open) {
    var d = el("details", "sub");
    if (open) d.open = true;
    return add(d, el("summary", "", summary), body);
  }
  function diffView(text) {
    var p = el("pre", "diff");
    text.split("\n").forEach(function (line) {
      var c = line.charAt(0) === "+" ? "add" : line.charAt(0) === "-" ? "del" : line.slice(0, 2) === "@@" ? "hunk" : "";
      p.appendChild(el("span", c, line));
    });
    return p;
  }
  function testsView(a) {
    if (!a.tests.length) return null;
    var t = el("table", "tests");
    add(t, add(el("tr"), el("th", "", "#"), el("th", "", "input"), el("th", "", "verdict"),
      el("th", "", "output / error")));
    a.tests.forEach(function (x, i) {
      var v = el("td"); v.appendChild(el("span", "chipv st-" + x.st, x.st));
      add(t, add(el("tr"), el("td", "num", i + 1), el("td", "", x["in"]), v,
        el("td", "", x.err ? x.err : x.out === null ? "" : x.out)));
    });
    return t;
  }
  function verdict(a) {
    var s = "public " + a.pp + "/" + a.pt;
    if (a.ht) s += a.hp === null ? " · hidden not run" : " · hidden " + a.hp + "/" + a.ht;
    return s;
  }
  function attemptView(a, i) {
    var ok = a.pt && a.pp === a.pt && (a.hp === null ? !a.ht : a.hp === a.ht);
    var box = el("div", "turn");
    var head = add(el("div", "turn-head"), el("span", "", "Turn " + (a.turn || i + 1)),
      el("span", "chipv " + (ok ? "st-passed" : "st-failed"), verdict(a)));
    if (a.status && a.status !== "ok") head.appendChild(el("span", "chipv st-timeout", a.status));
    box.appendChild(head);
    var told = i === 0 ? "What the solver was told (the task prompt)" : "What the solver was told (feedback)";
    if (a.told) box.appendChild(sub(told, pre(a.told, "told"), i > 0));
    if (a.diff !== null) box.appendChild(a.diff ? sub("Diff from the previous turn", diffView(a.diff), true)
      : el("p", "muted", "Same code as the previous turn."));
    box.appendChild(sub("Code", pre(a.code), a.diff === null));
    box.appendChild(testsView(a) || el("p", "muted", "No test result."));
    if (a.load_error) box.appendChild(add(el("p"), el("b", "", "Load error: "), document.createTextNode(a.load_error)));
    if (a.stderr) box.appendChild(sub("stderr", pre(a.stderr), false));
    return box;
  }
  function trajectoryView(t) {
    var box = el("div", "trajectory");
    var meta = add(el("p"), el("span", "chipv st-" + t.status, t.status),
      document.createTextNode(" reward " + (t.reward === null ? "—" : t.reward) + " · " + t.attempts.length +
        " turn(s) · " + t.id));
    if (t.flags.length) meta.appendChild(el("span", "reason", " " + t.flags.join(", ")));
    box.appendChild(meta);
    if (t.error) box.appendChild(add(el("p"), el("b", "", "Error: "), document.createTextNode(t.error)));
    if (t.system) box.appendChild(sub("System prompt", pre(t.system, "told"), false));
    if (t.prompt) box.appendChild(sub("Prompt", pre(t.prompt, "told"), true));
    t.attempts.forEach(function (a, i) { box.appendChild(attemptView(a, i)); });
    return box;
  }
  function taskView(id) {
    var info = DATA.tasks[id];
    var box = el("div", "detail");
    if (!info) {
      box.appendChild(el("p", "muted",
        "No trajectory of this task is embedded in this page (see how they are sampled above)."));
      return box;
    }
    box.appendChild(el("p", "task-desc", info.desc));
    var tests = el("table", "tests");
    add(tests, add(el("tr"), el("th", "", "input"), el("th", "", "expected")));
    info.tests.forEach(function (x) { add(tests, add(el("tr"), el("td", "", x["in"]), el("td", "", x.exp))); });
    box.appendChild(sub("Reference solution and tests (" + info.ntests + ")",
      add(el("div"), pre(info.ref), tests), false));
    var tabs = el("div", "tabs");
    var panel = el("div");
    info.traj.forEach(function (t, i) {
      var b = el("button", i === 0 ? "on" : "", "sample " + t.sample + " · " + (DATA.labels[t.cat] || t.cat));
      b.type = "button";
      b.addEventListener("click", function () {
        Array.prototype.forEach.call(tabs.children, function (c) { c.className = ""; });
        b.className = "on";
        panel.replaceChildren(trajectoryView(t));
      });
      tabs.appendChild(b);
    });
    add(box, tabs, panel);
    if (info.traj.length) panel.appendChild(trajectoryView(info.traj[0]));
    return box;
  }
  function isOpen(tr) { return tr.classList.contains("open"); }
  function close(tr) {
    var next = tr.nextElementSibling;
    if (next && next.classList.contains("detail-row")) next.remove();
    tr.classList.remove("open");
  }
  function open(tr, scroll) {
    if (isOpen(tr)) return;
    var row = el("tr", "detail-row");
    var cell = el("td");
    cell.colSpan = tr.children.length;
    cell.appendChild(taskView(tr.dataset.id));
    row.appendChild(cell);
    tr.after(row);
    tr.classList.add("open");
    if (scroll) tr.scrollIntoView({block: "start"});
  }
  function setHash(id) {
    var url = location.pathname + location.search + (id ? "#task=" + encodeURIComponent(id) : "");
    history.replaceState(null, "", url);
  }
  rows.forEach(function (tr) {
    function toggle() {
      if (isOpen(tr)) { close(tr); setHash(null); } else { open(tr, false); setHash(tr.dataset.id); }
    }
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", function (e) { if (e.key === "Enter") toggle(); });
  });
  var fs = document.getElementById("f-status"), fk = document.getElementById("f-kind"),
      fe = document.getElementById("f-epoch"), ft = document.getElementById("f-text"),
      fc = document.getElementById("f-count");
  var more = document.getElementById("f-more");
  var PAGE = +more.dataset.page, limit = PAGE;
  function filter(reset) {
    if (reset) limit = PAGE;
    var s = fs.value, k = fk.value, e = fe.value, q = ft.value.trim().toLowerCase(), n = 0, shown = 0;
    rows.forEach(function (tr) {
      var match = (!s || tr.dataset.status === s) && (!k || tr.dataset.kind === k) &&
        (!e || tr.dataset.epoch === e) && (!q || tr.textContent.toLowerCase().indexOf(q) >= 0);
      var show = match && (shown < limit || isOpen(tr));
      if (!show) close(tr);
      tr.hidden = !show;
      n += match ? 1 : 0;
      shown += show ? 1 : 0;
    });
    fc.textContent = shown + " shown of " + n + (n === rows.length ? " tasks" : " matching, " + rows.length + " tasks");
    more.hidden = shown >= n;
    more.textContent = "show " + Math.min(PAGE, n - shown) + " more";
  }
  [fs, fk, fe].forEach(function (x) { x.addEventListener("change", function () { filter(true); }); });
  ft.addEventListener("input", function () { filter(true); });
  more.addEventListener("click", function () { limit += PAGE; filter(false); });
  Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th, col) {
    var dir = 1;
    th.addEventListener("click", function () {
      var kind = th.dataset.sort;
      function key(tr) {
        var t = tr.children[col].textContent;
        if (kind === "num") { var v = parseFloat(t); return isNaN(v) ? -Infinity : v; }
        if (kind === "pass") { var p = t.split("/"); return +p[1] ? p[0] / p[1] : -1; }
        return t;
      }
      rows.forEach(close);
      rows.sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
      dir = -dir;
      var body = table.tBodies[0];
      rows.forEach(function (tr) { body.appendChild(tr); });
      filter(false);
    });
  });
  function fromHash() {
    var m = /^#task=(.*)$/.exec(location.hash);
    if (!m) return;
    var id;
    try { id = decodeURIComponent(m[1]); } catch (err) { return; }
    rows.forEach(function (tr) { if (tr.dataset.id === id) { tr.hidden = false; open(tr, true); } });
  }
  fromHash();
  var refresh = +document.body.dataset.refresh;
  if (refresh > 0) {
    setInterval(function () {
      var busy = rows.some(isOpen) || fs.value || fk.value || fe.value || ft.value;
      if (!busy && !document.hidden) location.reload();
    }, refresh * 1000);
  }
})();
"""
