"""The page: HTML around the charts, the tasks table and the embedded sample, with the styles and
the script (``static/report.css``, ``static/report.js``, package data) inlined, so the file is
self-contained; ``render_report`` writes it atomically and ``epoch_hook`` re-renders it per epoch.

Everything from the run is hostile text (model output): HTML is escaped with ``html.escape``, the
embedded JSON with ``embed_json``, and the script builds the trajectory view with ``textContent``.
"""

from __future__ import annotations

import functools
import html
import os
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.redact import redact_text
from .._util.text import to_utf8
from ..errors import UserError
from ..evaluator import FACET_KEYS
from .charts import (
    chart_calibration,
    chart_coverage,
    chart_difficulty,
    chart_difficulty_mix,
    chart_diversity,
    chart_entropy,
    chart_failures,
    chart_first_try,
    chart_funnel,
    chart_rejections,
    chart_requests,
    chart_reward,
    chart_solve_time,
    chart_tokens,
    chart_turns,
    render_charts,
    require_matplotlib,
)
from .common import SHORT_LIMIT, TEXT_LIMIT, clip, embed_json, num, snippet, text_of, to_int
from .reading import (
    STATUS_LABELS,
    RejectionBrief,
    RunData,
    TaskRow,
    config_section,
    llm_roles,
    models,
    pass_at_k,
    read_report_data,
    run_status,
    task_rows,
    top,
    total_tokens,
)
from .sampling import (
    CATEGORY_LABELS,
    DEFAULT_MAX_TRAJECTORIES,
    PER_TASK,
    Beside,
    Sample,
    beside_answers,
    sample_details,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..hooks import EpochEnd

MAX_TABLE_ROWS = 5000
PAGE_ROWS = 200
"""Rows of the tasks table shown at a time (the rest wait behind "show more"): layout stays quick."""
MAX_REJECTED_ROWS = 150
MAX_LISTED_COUNTS = 12
"""How many epochs' counts a warning line lists before it elides the rest (the sum stays whole)."""
MAX_WARNING_GROUPS = 60
REFRESH_S = 30
"""Seconds between reloads of a page rendered by ``epoch_hook`` while the run goes on."""
REPORT_FILE = "report.html"


@functools.cache
def static_text(name: str) -> str:
    """A file of ``static/`` (package data), as text: the page inlines it."""
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def esc(value: Any) -> str:
    return html.escape(text_of(value), quote=True)


def _pct(value: Any) -> str:
    number = num(value)
    return "—" if number is None else f"{number:.0%}"


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _count(value: Any) -> str:
    return f"{to_int(value):,}"


def header_html(run: RunData, rows: list[TaskRow]) -> str:
    state = run_status(run)
    gen, sol = models(run)
    eps = run.episodes
    pass_rate = eps.statuses["passed"] / eps.count if eps.count else None
    mean_reward = eps.reward_sum / eps.rewarded if eps.rewarded else None
    roles = llm_roles(run.summary)
    requests = sum(to_int(r.get("requests")) for r in roles.values())
    planned = to_int(config_section(run, "controller").get("epochs"))
    solve = run.is_solve
    tiles = [
        ("pass rate", _pct(pass_rate), f"{eps.statuses['passed']:,} of {eps.count:,} episodes"),
        ("mean reward", _fmt(mean_reward), "per episode"),
    ]
    if solve:  # a solve has no epoch, no generator: its measure is pass@k over the tasks
        tiles += [(k, _pct(v), "over the tasks") for k, v in list(pass_at_k(run).items())[:4]]
        tiles.append(("tasks", f"{len(rows):,}", "given"))
    else:
        tiles.append(("epochs", f"{len(run.metrics):,}", f"of {planned:,} planned" if planned else ""))
        tiles.append(("tasks", f"{len(rows):,}", f"{len(run.rejected):,} rejected"))
    tiles += [
        (
            "episodes",
            f"{eps.count:,}",
            f"{to_int(config_section(run, 'solver').get('samples_per_task')) or 1} per task",
        ),
        ("tokens", f"{total_tokens(run):,}", f"{requests:,} requests" if roles else ""),
    ]
    solver = config_section(run, "solver")
    facts = [
        ("command", "solve" if solve else ""),
        ("generator", "" if solve else gen),
        ("solver", sol),
        ("seed", text_of(run.manifest.get("seed", run.config.get("seed")))),
        ("max turns", text_of(solver.get("max_turns"))),
        ("sandbox", text_of(run.manifest.get("sandbox") or config_section(run, "sandbox").get("backend"))),
        (
            "kinds",
            ", ".join(
                text_of(k) for k in (run.manifest.get("kinds") or config_section(run, "curriculum").get("kinds") or [])
            ),
        ),
        ("goal", text_of(run.manifest.get("goal") or "")),
        ("started", text_of(run.manifest.get("started_at"))),
        ("spade_llm", text_of(run.manifest.get("spade_llm"))),
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


def warning_counts(entries: Sequence[tuple[int, str]]) -> str:
    """How often a warning of one wording was raised: in how many epochs, and, when its wording starts
    with a count ("5 episodes abandoned..."), that count epoch by epoch and in all, as metrics.jsonl has them
    (the line shows the latest wording, whose number is only the last epoch's)."""
    epochs = len({e for e, _ in entries})
    said = f"in {epochs:,} epoch{'s' if epochs != 1 else ''}"
    if len(entries) > epochs:
        said = f"{len(entries):,} times {said}"
    counts = [re.match(r"(\d+) ", text) for _, text in entries]
    if len(entries) > 1 and all(counts):
        values = [int(c.group(1)) for c in counts if c]
        listed = ", ".join(f"{v:,}" for v in values[:MAX_LISTED_COUNTS])
        listed += ", …" if len(values) > MAX_LISTED_COUNTS else ""
        said += f": {listed}; {sum(values):,} in all"
    return said


def warnings_html(run: RunData) -> str:
    """The run's warnings, grouped by their wording with the numbers taken out, so a sign that recurs
    every epoch is one line with the epochs it appeared in and its latest wording."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for m in run.metrics:
        for text in m.warnings:
            groups.setdefault(re.sub(r"\d+(?:\.\d+)?", "#", text), []).append((m.epoch, text))
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
            f'<span class="muted"> ({esc(warning_counts(entries))})</span></li>'
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
    counts: Counter[str] = Counter(x for t in run.tasks for x in t.tags)
    if not counts:
        return ""
    chips = "".join(
        f'<span class="chip">{esc(clip(tag, 60))} <b>{n:,}</b></span>'
        for tag, n in ((k, counts[k]) for k in top(counts, 40))
    )
    more = f'<span class="muted">and {len(counts) - 40:,} more</span>' if len(counts) > 40 else ""
    return f'<div class="chips"><span class="chips-label">Most used tags</span>{chips}{more}</div>'


def rejected_html(run: RunData) -> str:
    """A sample of rejected proposals, spread over reasons (round-robin, latest first within one)."""
    if not run.rejected:
        return ""
    by_reason: dict[str, list[RejectionBrief]] = defaultdict(list)
    for r in reversed(run.rejected):
        by_reason[r.reason].append(r)
    picked: list[RejectionBrief] = []
    queues = [by_reason[k] for k in sorted(by_reason)]
    depth = 0
    while len(picked) < MAX_REJECTED_ROWS and any(depth < len(q) for q in queues):
        picked.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    picked = sorted(picked[:MAX_REJECTED_ROWS], key=lambda r: (r.epoch, r.reason))
    body = "".join(
        f"<tr><td class='num'>{r.epoch}</td><td><span class='reason'>{esc(r.reason)}</span></td>"
        f"<td class='mono'>{esc(clip(r.task_id or '', 60))}</td>"
        f"<td class='detail-text'>{esc(clip(r.detail, SHORT_LIMIT))}</td></tr>"
        for r in picked
    )
    shown = f", {len(picked):,} shown (spread over reasons)" if len(picked) < len(run.rejected) else ""
    head = "<tr><th class='num'>epoch</th><th>reason</th><th>task</th><th>detail</th></tr>"
    return (
        f"<details class='rejected'><summary>Rejected proposals: {len(run.rejected):,}{shown}</summary>"
        f"<table class='small'>{head}{body}</table></details>"
    )


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
            f"<td class='desc'>{esc(snippet(r.description))}{tags}</td></tr>"
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
        f"{sample.budget / 1e6:g} MB, every task getting its first before any gets a second, tasks taken in an "
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
    ("solving", chart_solve_time, "Episode time, 90th percentile.",
     "A tail that grows is slow tests, a slow endpoint or answers that run to their limits.", False),
    ("diversity", chart_diversity, "Novelty and duplicates.",
     "Novelty is 1 minus each accepted task's similarity to its nearest earlier task; a falling line, or a rising "
     "share of valid proposals refused as duplicates, is a generator repeating itself; so is a rising p90 of "
     "nearest similarity or a falling share of distinct behaviours. Zero-spread tasks (all samples pass or all "
     "fail) teach a GRPO group nothing.", False),
    ("diversity", chart_difficulty_mix, "Claimed difficulty of accepted tasks.",
     "The histogram metrics.jsonl keeps: the difficulty each task claimed for itself.", False),
    ("diversity", chart_calibration, "Claimed against measured difficulty.",
     "Measured difficulty is 1 minus the task's pass rate; a wide gap means the generator misjudges its tasks "
     "(the exports carry the measured one).", False),
    ("coverage", chart_coverage, "Task kinds and tags.",
     "The mix of kinds accepted per epoch, and how many new tags each epoch brings: a flat line is a generator "
     "repeating itself.", True),
    ("coverage", chart_entropy, "Entropy of tags and kinds.",
     "How evenly an epoch's accepted tasks spread over their tags and kinds, in bits (log2 of the count of "
     "equally common values): a fall is the mix narrowing.", False),
    ("cost", chart_tokens, "Tokens per epoch.", "Prompt and completion tokens of both roles.", False),
    ("cost", chart_requests, "Requests per role.",
     "Retries and failures against requests, from summary.json (transport faults, not model answers).", False),
]  # fmt: skip

SECTIONS = [
    ("curriculum", "Curriculum", "How the target difficulty followed the solver."),
    ("generation", "Task generation", "What the generator proposed and what the gates kept."),
    ("solving", "Solving", "How episodes end and how they fail."),
    ("diversity", "Diversity and calibration", "Whether the tasks stay new, and whether they are as hard as they say."),
    ("coverage", "Coverage", "What the accepted tasks are about."),
    ("cost", "Cost", "What the run spent."),
]


SOLVE_SECTIONS = {"solving"}
"""What a ``spade solve`` directory's page shows beside its tasks: no epoch, plan or generator to chart."""
SOLVE_CHARTS = {chart_failures, chart_turns}
"""The charts drawn from episodes alone (the others read epoch rows a solve never writes)."""


def beside_html(run: RunData) -> str:
    """Answers beside their task, for the kinds that show one (a bug fix: the reference's lines, the buggy
    lines and the solver's fix, side by side), a table per kind; '' when the run has none. Every line escaped."""
    shown, total = beside_answers(run)
    if not shown:
        return ""
    by_kind: dict[str, list[Beside]] = defaultdict(list)
    for b in shown:
        by_kind[b.kind].append(b)

    def cell(lines: list[str]) -> str:
        body = "\n".join(esc(line) for line in lines) if lines else "<span class='muted'>(no line)</span>"
        return f"<td><pre class='beside'>{body}</pre></td>"

    tables = []
    for kind, rows in sorted(by_kind.items()):
        labels = "".join(f"<th>{esc(label)}</th>" for label, _ in rows[0].columns)
        body = "".join(
            f"<tr><td class='mono'>{esc(clip(b.task_id, 80))}</td>"
            f"<td><span class='pill {esc(b.status)}'>{esc(b.status)}</span> {_turns(b.turns)}</td>"
            + "".join(cell(lines) for _, lines in b.columns)
            + "</tr>"
            for b in rows
        )
        tables.append(
            f"<table class='small beside' data-kind='{esc(kind)}'><caption>{esc(kind)}</caption>"
            f"<tr><th>task</th><th>episode</th>{labels}</tr>{body}</table>"
        )
    more = f", {len(shown):,} shown" if len(shown) < total else ""
    return (
        f"<details class='beside' open><summary>The answer beside the task: {total:,} tasks{more} (a passing "
        f"episode's last answer where there is one)</summary>{''.join(tables)}</details>"
    )


def _turns(n: int) -> str:
    return f"{n} turn{'' if n == 1 else 's'}"


def facets_html(run: RunData) -> str:
    """The run's tasks by facet (``metrics.jsonl``'s ``facets`` summed over epochs: a bug fix by its maker and
    edit family), made (proposed), kept (accepted) and fixed (episodes passed); '' when no epoch has any."""
    totals: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for m in run.metrics:
        for kind, facets in m.facets.items():
            for facet, labels in facets.items():
                for label, counts in labels.items():
                    totals[kind, facet, label].update({k: to_int(v) for k, v in counts.items()})
    if not totals:
        return ""
    keys = FACET_KEYS
    head = "<tr><th>kind</th><th>facet</th><th>label</th>" + "".join(f"<th class='num'>{k}</th>" for k in keys)
    body = "".join(
        f"<tr><td>{esc(kind)}</td><td>{esc(facet)}</td><td class='mono'>{esc(clip(label, 80))}</td>"
        + "".join(f"<td class='num'>{_count(counts[k])}</td>" for k in keys)
        + "</tr>"
        for (kind, facet, label), counts in sorted(totals.items())
    )
    return (
        "<details class='facets' open><summary>Tasks by facet: made (proposed), kept (accepted), played and fixed "
        f"(passed)</summary><table class='small'>{head}</tr>{body}</table></details>"
    )


def _flags_line(run: RunData) -> str:
    if not run.episodes.flags:
        return ""
    parts = ", ".join(f"{esc(k)} ×{n:,}" for k, n in sorted(run.episodes.flags.items()))
    return f"<p class='note'>Episode flags: {parts}.</p>"


def page_html(run: RunData, max_trajectories: int, refresh_s: float | None) -> str:
    rows = task_rows(run)
    sample = sample_details(run, max_trajectories)
    charts: dict[str, list[str]] = defaultdict(list)
    drawn = [c for c in CHARTS if not run.is_solve or c[1] in SOLVE_CHARTS]
    svgs = render_charts([(draw, title) for _, draw, title, _, _ in drawn], run)
    for (anchor, _, title, caption, wide), svg in zip(drawn, svgs, strict=True):
        charts[anchor].append(chart_figure(svg, title, caption, wide))
    extra = {
        "generation": facets_html(run) + rejected_html(run),
        "solving": _flags_line(run) + beside_html(run),
        "coverage": tags_html(run),
        "cost": faults_html(run),
    }
    shown = [s for s in SECTIONS if not run.is_solve or s[0] in SOLVE_SECTIONS]
    sections = [
        section(anchor, title, caption, f"<div class='charts'>{''.join(charts[anchor])}</div>{extra.get(anchor, '')}")
        for anchor, title, caption in shown
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
        f"<a href='#{a}'>{esc(t)}</a>" for a, t, _ in [*shown, ("warnings", "Warnings", ""), ("tasks", "Tasks", "")]
    )
    refresh = f" data-refresh='{int(refresh_s)}'" if refresh_s and not run_status(run).complete else ""
    data = embed_json({"tasks": sample.details, "labels": CATEGORY_LABELS})
    css, script = static_text("report.css"), static_text("report.js")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>spade report: {esc(run.path.resolve().name)}</title><style>\n{css}</style></head>"
        f"<body{refresh}>{header_html(run, rows)}<nav>{nav}</nav><main>{''.join(sections)}</main>"
        f"<footer>spade_llm report · {esc(run.path.resolve())}</footer>"
        f"<script type='application/json' id='report-data'>{data}</script><script>\n{script}</script></body></html>"
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
    run = read_report_data(run_dir)
    target = Path(output) if output is not None else run.path / REPORT_FILE
    text = redact_text(page_html(run, max(0, max_trajectories), refresh_s))  # a run from before the rule too
    write_atomic(target, text)
    return target


def write_atomic(target: Path, text: str) -> None:
    """``text`` as ``target``'s UTF-8 content, replaced atomically; a lone surrogate that got past the
    readers (none should) is written as U+FFFD rather than losing the page (``spade_llm._util.text``)."""
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
