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

The package, one module per job (each imports only those above it):

- ``common``: text limits, ``clip``, ``embed_json``, reading a value without trusting it;
- ``reading``: the run, read once through ``spade_llm.store.read_run(path, tolerant=True)`` with its
  trajectories streamed (``store.RunStream``: each counted as it passes, the sample's candidates kept by
  byte offset), and what the page needs computed from its records (``RunData``, episode counts, the
  tasks' rows);
- ``sampling``: which task details and trajectories are embedded, slimmed, within the budget, and which
  answers are shown beside their task (``beside_answers``: a kind's ``TaskKind.beside_answer``, a bug fix's
  buggy lines beside the solver's fix, at most ``MAX_BESIDE_ROWS`` tasks);
- ``charts``: matplotlib figures as inline SVG (matplotlib is imported only there, when drawing);
- ``page``: the HTML, ``render_report``, ``epoch_hook``; the styles and script are package data
  (``static/report.css``, ``static/report.js``), inlined into the page.
"""

from . import charts, common, page, reading, sampling
from .charts import render_chart, render_charts, require_matplotlib
from .common import SHORT_LIMIT, TEXT_LIMIT, clip, embed_json
from .page import (
    CHARTS,
    MAX_REJECTED_ROWS,
    MAX_TABLE_ROWS,
    PAGE_ROWS,
    REFRESH_S,
    REPORT_FILE,
    SECTIONS,
    epoch_hook,
    page_html,
    render_report,
    write_atomic,
)
from .reading import STATUS_LABELS, RunData, TaskRow, attempt_class, read_report_data, task_rows
from .sampling import (
    CATEGORIES,
    CATEGORY_LABELS,
    DEFAULT_MAX_TRAJECTORIES,
    DETAIL_BUDGET,
    PER_TASK,
    Sample,
    sample_details,
    slim_trajectory,
)

__all__ = [
    "CATEGORIES",
    "CATEGORY_LABELS",
    "CHARTS",
    "DEFAULT_MAX_TRAJECTORIES",
    "DETAIL_BUDGET",
    "MAX_REJECTED_ROWS",
    "MAX_TABLE_ROWS",
    "PAGE_ROWS",
    "PER_TASK",
    "REFRESH_S",
    "REPORT_FILE",
    "SECTIONS",
    "SHORT_LIMIT",
    "STATUS_LABELS",
    "TEXT_LIMIT",
    "RunData",
    "Sample",
    "TaskRow",
    "attempt_class",
    "charts",
    "clip",
    "common",
    "embed_json",
    "epoch_hook",
    "page",
    "page_html",
    "read_report_data",
    "reading",
    "render_chart",
    "render_charts",
    "render_report",
    "require_matplotlib",
    "sample_details",
    "sampling",
    "slim_trajectory",
    "task_rows",
    "write_atomic",
]
