"""The page's charts: matplotlib figures drawn with its SVG backend and inlined as ``<svg>``
elements (no script draws them). matplotlib is imported only inside the functions that draw, so
``spade report``'s import stays light and a missing matplotlib is one line (``require_matplotlib``).

Chart labels are run text: they go through matplotlib's SVG escaping, with mathtext parsing off.
"""

from __future__ import annotations

import html
import io
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..evaluator import valid_duplicates
from ..kinds import KIND_NAMES, get_kind
from ..types import EpochMetrics
from .common import num, to_int
from .reading import FUNNEL_STAGES, RunData, config_section, funnel_totals, llm_roles, task_epoch, top

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

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
        raise UserError("spade report needs matplotlib, which spade_llm depends on: pip install matplotlib") from None


_SVG_HEAD = re.compile(r"\A.*?(?=<svg\b)", re.S)
_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_SVG_SIZE = re.compile(r'\A<svg\b([^>]*?)\swidth="[^"]*"\s+height="[^"]*"')


def figure_svg(fig: Figure, label: str) -> str:
    """The figure as an inline ``<svg>`` element: no XML prolog or DOCTYPE, no metadata, sized by its
    ``viewBox`` so CSS can scale it to the column."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buf = io.StringIO()
    # matplotlib declares print_svg without annotations (backend_svg.pyi): typed here, so strict mypy
    # accepts the call with matplotlib installed or not
    print_svg: Callable[..., None] = FigureCanvasSVG(fig).print_svg
    print_svg(buf, metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
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


def _series(metrics: Sequence[EpochMetrics], key: str) -> list[float]:
    """A metric per epoch, NaN where missing (the line breaks there)."""
    return [v if (v := num(getattr(m, key))) is not None else math.nan for m in metrics]


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
    x = [r.epoch for r in m]
    band = config_section(run, "controller").get("band")
    if isinstance(band, list) and len(band) == 2 and all(num(b) is not None for b in band):
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
    x = [r.epoch for r in m]
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
    x = [r.epoch for r in m]
    ax.plot(x, _series(m, "mean_reward"), color=PURPLE, label="mean reward", **_markers(len(x)))
    ax.plot(x, _series(m, "mean_learnability"), color=TEAL, label="mean learnability", **_markers(len(x)))
    ax.axhline(0, color=GRID, lw=0.8)
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax)
    return fig


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


def chart_rejections(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    per_epoch = {m.epoch: m.rejected_by_reason for m in run.metrics}
    total: Counter[str] = Counter()
    for reasons in per_epoch.values():
        for reason, n in reasons.items():
            total[reason] += n
    if not sum(total.values()):
        _empty(ax, "no proposal rejected" if run.metrics else "no epoch finished yet")
        return fig
    shown = top(total, 8)
    x = sorted(per_epoch)
    layers = [(r, [float(per_epoch[e].get(r, 0)) for e in x], SERIES[i % len(SERIES)]) for i, r in enumerate(shown)]
    rest = [float(sum(n for r, n in per_epoch[e].items() if r not in shown)) for e in x]
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
    shown = top(total, 12)[::-1]
    fig, (ax,) = _figure(height=max(3.0, 1.0 + 0.24 * len(shown)), left=_label_room(shown))
    if not total:
        _empty(ax, "no failed attempt")
        return fig
    left = [0.0] * len(shown)
    groups: list[tuple[str, Callable[[int], bool]]] = [
        ("turn 1", lambda n: n == 1),
        ("turn 2", lambda n: n == 2),
        ("turn 3+", lambda n: n >= 3),
    ]
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
    turns = max([*eps.turns_to_pass, to_int(config_section(run, "solver").get("max_turns")), 1])
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


def chart_coverage(run: RunData) -> Figure:
    fig, (left, right) = _figure(width=9.6, cols=2, right=0.3)
    if not run.tasks:
        _empty(left, "no task accepted yet")
        _empty(right, "")
        return fig
    kinds_by_epoch: dict[int, Counter[str]] = defaultdict(Counter)
    tags_by_epoch: dict[int, set[str]] = defaultdict(set)
    for t in run.tasks:
        e = task_epoch(t)
        kinds_by_epoch[e][t.kind] += 1
        tags_by_epoch[e].update(t.tags)
    x = list(range(min(kinds_by_epoch), max(kinds_by_epoch) + 1))
    kinds = sorted({k for c in kinds_by_epoch.values() for k in c})
    kind_colours = {name: get_kind(name).colour for name in KIND_NAMES}
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
    x = [r.epoch for r in m]
    keys = [
        ("solver prompt", "prompt_tokens", "#a5d8e6"),
        ("solver completion", "completion_tokens", TEAL),
        ("generator prompt", "generator_prompt_tokens", "#a9c1f5"),
        ("generator completion", "generator_completion_tokens", BLUE),
    ]
    layers = [(label, [float(getattr(r, key)) for r in m], colour) for label, key, colour in keys]
    _stacked_bars(ax, x, layers)
    from matplotlib.ticker import EngFormatter

    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_xlabel("epoch")
    ax.set_ylabel("tokens")
    _integer_x(ax)
    _legend(ax, ncol=2)
    return fig


def chart_requests(run: RunData) -> Figure:
    fig, (ax,) = _figure()
    roles = llm_roles(run.summary)
    if not roles:
        _empty(ax, "no request counts yet (summary.json)")
        return fig
    names = list(roles)
    width = 0.26
    for i, (key, colour) in enumerate((("requests", BLUE), ("retries", AMBER), ("failures", RED))):
        values = [to_int(roles[r].get(key)) for r in names]
        bars = ax.bar([j + (i - 1) * width for j in range(len(names))], values, width=width, color=colour, label=key)
        ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=2, color=INK, fontsize=8)
    ax.set_xticks(range(len(names)), names)
    _integer_y(ax)
    ax.set_ylim(0, max(max(to_int(r.get("requests")) for r in roles.values()) * 1.18, 1))
    ax.grid(axis="x", visible=False)
    _legend(ax, ncol=3)
    return fig


def chart_diversity(run: RunData) -> Figure:
    """Novelty, the share of valid proposals the duplicate gate refused, the zero-spread share, and from
    ``diversity`` the 90th percentile of each task's similarity to its nearest earlier one and the share of
    distinct behaviours, per epoch."""
    fig, (ax,) = _figure()
    m = run.metrics
    if not m:
        _empty(ax, "no epoch finished yet")
        return fig
    x = [r.epoch for r in m]
    duplicates = [d / valid if valid else math.nan for d, valid in map(valid_duplicates, m)]
    ax.plot(x, _series(m, "novelty"), color=TEAL, label="novelty of accepted tasks", **_markers(len(x)))
    ax.plot(x, duplicates, color=RED, label="duplicates among valid proposals", **_markers(len(x)))
    ax.plot(x, _series(m, "zero_spread_share"), color=GREY, ls="--", label="zero-spread share", **_markers(len(x)))
    for key, label, colour in (("nearest_p90", "nearest similarity, p90", PURPLE),
                               ("distinct_behaviours", "distinct behaviours", GREEN)):  # fmt: skip
        values = [float(v) if (v := num(r.diversity.get(key))) is not None else math.nan for r in m]
        if any(not math.isnan(v) for v in values):
            ax.plot(x, values, color=colour, ls=":", label=label, **_markers(len(x)))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax, ncol=2)
    return fig


def chart_entropy(run: RunData) -> Figure:
    """The entropy, in bits, of the accepted tasks' tags and of their kinds per epoch (``diversity``)."""
    fig, (ax,) = _figure()
    m = [r for r in run.metrics if r.diversity]
    if not m:
        _empty(ax, "no task accepted yet" if run.metrics else "no epoch finished yet")
        return fig
    x = [r.epoch for r in m]
    for key, label, colour in (("tag_entropy", "tags", BLUE), ("kind_entropy", "kinds", AMBER)):
        values = [float(v) if (v := num(r.diversity.get(key))) is not None else math.nan for r in m]
        ax.plot(x, values, color=colour, label=f"entropy of {label}", **_markers(len(x)))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("epoch")
    ax.set_ylabel("bits")
    _integer_x(ax)
    _legend(ax, ncol=2)
    return fig


def chart_difficulty_mix(run: RunData) -> Figure:
    """The accepted tasks' claimed difficulty per epoch, as the histogram ``metrics.jsonl`` keeps."""
    fig, (ax,) = _figure()
    per_epoch = {m.epoch: m.difficulty_histogram for m in run.metrics}
    bins = sorted({b for h in per_epoch.values() for b in h})
    if not any(sum(h.values()) for h in per_epoch.values()):
        _empty(ax, "no task accepted yet" if run.metrics else "no epoch finished yet")
        return fig
    x = sorted(per_epoch)
    shades = ["#dbeafe", "#93c5fd", "#3b82f6", "#1d4ed8", "#1e3a8a"]
    layers = [(b, [float(per_epoch[e].get(b, 0)) for e in x], shades[i % len(shades)]) for i, b in enumerate(bins)]
    _stacked_bars(ax, x, layers)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accepted tasks")
    _integer_x(ax)
    _integer_y(ax)
    _legend(ax, ncol=5)
    return fig


def chart_calibration(run: RunData) -> Figure:
    """Claimed against measured difficulty (1 - pass rate) of the epoch's solved-at-all tasks."""
    fig, (ax,) = _figure()
    m = [r for r in run.metrics if r.calibration]
    if not m:
        _empty(ax, "no task measured yet" if run.metrics else "no epoch finished yet")
        return fig
    x = [r.epoch for r in m]
    keys = ("claimed", "measured", "mean_abs_gap")
    series = {k: [float((r.calibration or {}).get(k, math.nan)) for r in m] for k in keys}
    ax.plot(x, series["claimed"], color=BLUE, label="claimed (the task's own)", **_markers(len(x)))
    ax.plot(x, series["measured"], color=AMBER, label="measured (1 - pass rate)", **_markers(len(x)))
    ax.plot(x, series["mean_abs_gap"], color=GREY, ls="--", label="mean gap, per task", **_markers(len(x)))
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("difficulty")
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax, ncol=3)
    return fig


def chart_solve_time(run: RunData) -> Figure:
    """The 90th percentile of an episode's wall time, per epoch."""
    fig, (ax,) = _figure()
    m = run.metrics
    if not any(r.p90_solve_s is not None for r in m):
        _empty(ax, "no episode measured yet" if m else "no epoch finished yet")
        return fig
    x = [r.epoch for r in m]
    ax.plot(x, _series(m, "p90_solve_s"), color=PURPLE, label="p90 episode time", **_markers(len(x)))
    ax.set_ylim(bottom=0)
    ax.set_ylabel("seconds")
    ax.set_xlabel("epoch")
    _integer_x(ax)
    _legend(ax)
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
