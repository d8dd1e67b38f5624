"""Live progress on a terminal: a block of a few lines redrawn in place, a few times a second.

``spade run``, ``solve`` and ``evaluate`` show what is happening now (proposals answered, tasks
validated and accepted, episodes done, pass rate so far, requests in flight, retries, errors) as
one refreshing block on stderr when stderr is a terminal. Anywhere else (a pipe, a file, CI) there
is no block and no escape code: the plain log lines stay as they are, one per epoch.

Why not ``rich``: the block is a handful of lines of text; ANSI cursor movement draws it in ~80
lines, with no dependency and no import cost for commands that never show it. The block is drawn
by a daemon thread from a ``render`` callback that reads counters (cheap, lock-free reads of
ints), so the event loop and the worker threads never wait on the terminal. Log lines go through
``LiveBlock.log``, which clears the block, prints the line and redraws, so the two never mix.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .episodes import RunState
    from .llm.stats import LLMStats
    from .types import EpochMetrics

__all__ = [
    "LiveBlock",
    "PlainLog",
    "bar",
    "describe_epoch",
    "empty_epochs_message",
    "empty_streak",
    "epoch_lines",
    "is_live_terminal",
    "likely_cause",
    "progress_block",
    "requests_line",
    "run_summary",
    "solve_lines",
    "solve_summary",
]

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
CLEAR_LINE, CLEAR_BELOW = "\x1b[2K", "\x1b[J"


def is_live_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands cursor movement (not a pipe, not TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "")


def bar(done: int, total: int, width: int = 20) -> str:
    """``[#######-------]`` for ``done`` of ``total`` (an empty bar when the total is unknown)."""
    if total <= 0:
        return "[" + "-" * width + "]"
    filled = min(width, round(width * done / total))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def requests_line(stats: LLMStats, inflight: int) -> str:
    """The block's line about the model endpoint: requests sent, under way, retried, failed."""
    return f"  requests {stats.requests} ({inflight} in flight)   retries {stats.retries}   errors {stats.failures}"


class LiveBlock:
    """Redraws ``render()``'s lines in place on ``stream`` every ``interval`` seconds until closed.

    Use as a context manager; ``log(line)`` prints a line above the block. A ``render`` that raises
    draws its error instead (progress must never stop a run).
    """

    def __init__(self, stream: TextIO, render: Callable[[], list[str]], *, interval: float = 0.25) -> None:
        self.stream = stream
        self.render = render
        self.interval = interval
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spade-progress", daemon=True)

    def __enter__(self) -> LiveBlock:
        self.stream.write(HIDE_CURSOR)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop redrawing; the last block stays on screen (what the run ended with)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        with self._lock:
            self._draw()
            self.stream.write(SHOW_CURSOR)
            self.stream.flush()

    def log(self, line: str, stream: TextIO | None = None) -> None:
        """Print ``line`` above the block (on ``stream``, e.g. stdout, when it is not the block's)."""
        with self._lock:
            self._erase()
            self.stream.flush()
            out = stream or self.stream
            out.write(line.rstrip("\n") + "\n")
            out.flush()
            self._drawn = 0
            self._draw()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._draw()

    def _lines(self) -> list[str]:
        try:
            lines = self.render()
        except Exception as e:  # progress is decoration: show why it broke, keep the run going
            lines = [f"(progress unavailable: {type(e).__name__}: {e})"]
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        return [line[:width] for line in lines]  # a wrapped line would break the cursor arithmetic

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F{CLEAR_BELOW}")

    def _draw(self) -> None:
        lines = self._lines()
        out = f"\x1b[{self._drawn}F" if self._drawn else ""
        out += "".join(f"{CLEAR_LINE}{line}\n" for line in lines) + CLEAR_BELOW
        self.stream.write(out)
        self.stream.flush()
        self._drawn = len(lines)


class PlainLog:
    """What a command uses where no block is drawn: the same ``log`` and context manager, plain lines."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log

    def __enter__(self) -> PlainLog:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def log(self, line: str, stream: TextIO | None = None) -> None:
        """``line`` through the command's own log, or straight to ``stream`` (e.g. stdout)."""
        if stream is None:
            self._log(line)
        else:
            print(line, file=stream, flush=True)


def progress_block(live: bool, render: Callable[[], list[str]], log: Callable[[str], None]) -> LiveBlock | PlainLog:
    """A live block on stderr when ``live``, else plain lines through ``log``: one interface either way."""
    return LiveBlock(sys.stderr, render) if live else PlainLog(log)


# -- what the run and solve commands show and leave behind -------------------------------------------


def epoch_lines(state: RunState, epochs: int, samples_per_task: int, stats: LLMStats, inflight: int = 0) -> list[str]:
    """The running epoch as a few lines for the terminal, with ``inflight`` model requests under way;
    called from the drawing thread, so it only reads (and copies what the loop appends to)."""
    epoch = min(len(state.metrics), max(0, epochs - 1))
    plan = state.plans.get(epoch)
    asked = len(plan.requests) if plan is not None else 0
    answered = sum(1 for e, _ in list(state.proposals) if e == epoch)
    accepted = sum(1 for t in list(state.tasks) if t.epoch == epoch)
    rejected = sum(1 for r in list(state.rejected) if r.epoch == epoch)
    episodes = state.episodes_of(epoch)
    expected = accepted * samples_per_task
    passed = sum(t.final_status == "passed" for t in episodes)
    rate = f"{passed / len(episodes):.0%}" if episodes else "n/a"
    target = f"{plan.target_difficulty:.2f}" if plan is not None else "..."
    left = eta(state.metrics, epochs)
    return [
        f"epoch {epoch}  difficulty {target}   epochs done {len(state.metrics)}/{epochs}"
        f" {bar(len(state.metrics), epochs, 12)}" + (f"   ETA {left}" if left else ""),
        f"  proposals {answered}/{asked} answered   validated {accepted + rejected}   accepted {accepted}"
        f"   rejected {rejected}",
        f"  episodes {len(episodes)}/{expected} {bar(len(episodes), expected)}  pass rate so far {rate}",
        requests_line(stats, inflight),
    ]


def eta(metrics: Sequence[EpochMetrics], epochs: int) -> str:
    """About how long the epochs left take, at the mean wall time of the last (up to) five finished ones;
    '' before any finished, or when none is left."""
    left = epochs - len(metrics)
    recent = [m.wall_s for m in metrics[-5:]]
    if left <= 0 or not recent:
        return ""
    seconds = left * sum(recent) / len(recent)
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def solve_lines(ended: int, resumed_with: int, passed: int, total: int, stats: LLMStats, inflight: int) -> list[str]:
    """``spade solve``'s block: episodes ended of ``total`` (``resumed_with`` of them on disk before),
    the pass rate of those this process ran, requests in flight."""
    rate = f"{passed / (ended - resumed_with):.0%}" if ended > resumed_with else "n/a"
    return [
        f"solve: episodes {ended}/{total} {bar(ended, total)}  pass rate so far {rate}",
        requests_line(stats, inflight),
    ]


def _percent(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:>4.0%}"


def describe_epoch(row: EpochMetrics, said: set[str] | frozenset[str] = frozenset()) -> str:
    """One log line per epoch, then every warning of the epoch; one in ``said`` (the epoch before said the
    same words) as ``still:``, so a sign that persists is seen persisting, not taken for gone."""
    turns = "n/a" if row.mean_turns is None else f"{row.mean_turns:.2f}"
    reward = "n/a" if row.mean_reward is None else f"{row.mean_reward:+.2f}"
    line = (
        f"epoch {row.epoch}: difficulty {row.difficulty:.2f}  accepted {row.tasks_accepted}/{row.tasks_proposed}"
        f"  pass {_percent(row.pass_rate).strip()} (first try {_percent(row.first_try_pass_rate).strip()})"
        f" on {row.episodes} episodes  turns {turns}  reward {reward}  novelty {row.novelty:.2f}"
        f"  -> next {row.next_difficulty:.2f}"
    )
    return line + "".join(f"\n  warning: {'still: ' if w in said else ''}{w}" for w in row.warnings)


def empty_streak(metrics: Sequence[EpochMetrics], since: int = 0) -> list[int]:
    """The epochs, from ``since`` on, that end ``metrics`` having accepted no task, in a row (oldest first)."""
    streak: list[int] = []
    for row in reversed(metrics):
        if row.epoch < since or row.tasks_accepted:
            break
        streak.append(row.epoch)
    return streak[::-1]


def likely_cause(reason: str) -> str:
    """What a run whose proposals were mostly rejected for ``reason`` should look at first.

    Answer-level reasons are ``evaluator.ANSWER_REASONS``, the list the funnel counts them by (one list:
    a reason the generator learns to give is classed alike in both)."""
    from .evaluator import ANSWER_REASONS

    if reason in ANSWER_REASONS:
        return "the generator's answers hold no usable task: check its model, server and generator.response_format"
    if reason.startswith("llm_"):  # the request itself failed (generator.py: llm_<kind>)
        return "the generator's requests fail: check its endpoint (--api-base), key and model name"
    if reason == "duplicate":
        return "the generator repeats tasks already accepted"
    return "its tasks fail the gates"


def empty_epochs_message(epochs: Sequence[int], rows: Sequence[EpochMetrics]) -> str:
    """Why a run stopped after ``epochs`` (in a row) accepted no task, with the likely cause: their
    rejections by reason, most first, as their metrics rows (``rows``: the run's, the streak's among
    them) count them."""
    from collections import Counter

    within = set(epochs)
    reasons: Counter[str] = Counter()
    for row in rows:
        if row.epoch in within:
            reasons.update({reason: n for reason, n in row.rejected_by_reason.items() if n})
    span = f"epoch {epochs[0]}" if len(epochs) == 1 else f"epochs {epochs[0]}-{epochs[-1]}"
    head = f"{len(epochs)} epoch{'s' if len(epochs) > 1 else ''} in a row ({span}) accepted no task"
    if not reasons:
        return f"{head}; none of their proposals was decided (an epoch budget too short for one?)"
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{reason} {n}" for reason, n in ranked)
    n = sum(reasons.values())
    cause = likely_cause(ranked[0][0])
    return f"{head}; the last {n} proposals were rejected: {listed} ({cause}; rejected.jsonl has each)"


def run_summary(
    state: RunState, samples_per_task: int, llm: dict[str, Any], *, done: bool, stopped_because: str | None = None
) -> dict[str, Any]:
    """A run's ``summary.json``: where it stands, from its records (``llm``: the request counters)."""
    from .evaluator import sorted_facets

    tally = state.tally
    return {
        "complete": done,
        **({"stopped_because": stopped_because} if stopped_because else {}),
        "epochs": len(state.metrics),
        "tasks_accepted": len(state.tasks),
        "tasks_rejected": sum(tally.reasons.values()),
        "rejected_by_reason": dict(sorted(tally.reasons.items())),
        "trajectories": tally.episodes,
        "samples_per_task": samples_per_task,
        "final_status": dict(sorted(tally.statuses.items())),
        "pass_rate": tally.pass_rate(),
        "mean_reward": tally.mean_reward(),
        "difficulty": list(state.metrics.difficulties),
        **({"facets": sorted_facets(tally.facets)} if tally.facets else {}),  # a kind with TaskKind.facets ran
        "usage": {
            "solver": tally.solver_usage.model_dump(),
            "generator": {
                "prompt_tokens": tally.generator_prompt_tokens,
                "completion_tokens": tally.generator_completion_tokens,
                "cost": tally.generator_cost,
            },
        },
        "llm": llm,
    }


def solve_summary(
    state: RunState, tasks: int, samples_per_task: int, llm: dict[str, Any], stopped_because: str | None = None
) -> dict[str, Any]:
    """A solve's ``summary.json``: every episode on disk, and none twice; ``pass_at_k`` over the tasks
    with an episode (``ks_with_all``: pass@1, 10, 100 as far as every such task has the episodes, and
    pass@N of the fewest, N), an episode passing when its final status is ``passed``."""
    from .evaluator import episodes_pass_at_k, first_try_pass_rate, mean_turns, pass_rate

    trajs = [t for ts in state.by_task.values() for t in ts]
    scores = episodes_pass_at_k(trajs)
    return {
        "complete": stopped_because is None,
        **({"stopped_because": stopped_because} if stopped_because else {}),
        "tasks": tasks,
        "trajectories": len(trajs),
        "samples_per_task": samples_per_task,
        "pass_rate": pass_rate(trajs),
        "first_try_pass_rate": first_try_pass_rate(trajs),
        "pass_at_k": scores,
        "mean_turns": mean_turns(trajs),
        "llm": llm,
    }
