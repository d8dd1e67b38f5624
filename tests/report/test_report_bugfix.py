"""``spade report`` on a bug-fix run: the buggy lines beside the solver's fix, the reference's lines beside
them, bugs made, kept and fixed by maker and edit family; model text escaped wherever it lands.

The run is ``bugfix_kit``'s (the loop played by two function-driven fakes); each test renders a copy it may
edit, as the other report tests do.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from bugfix_kit import FIRST_NEG, TOTAL, make_bugfix_run

from spade_llm.kinds import get_kind
from spade_llm.kinds.bugfix import FIX_VIEW_LINES
from spade_llm.report import read_report_data, render_report
from spade_llm.report.sampling import beside_answers
from spade_llm.types import Task, TestCase

pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("report.test_report_bugfix")]

HOSTILE = "</pre></td><script>alert(1)</script><img src=x onerror=alert(2)><!--"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bugfix_run(tmp_path_factory.mktemp("report-bugfix") / "run")


@pytest.fixture
def copy(run_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(".lock", "report.html"))
    return target


def page(run: Path) -> str:
    return render_report(run).read_text(encoding="utf-8")


def beside_rows(text: str) -> dict[str, list[str]]:
    """Task id -> its row's cells (the status cell and each column's text, tags stripped, entities decoded)."""
    start = text.index("<details class='beside'")
    table = text[start : text.index("</details>", start)]
    out = {}
    for row in re.findall(r"<tr><td class='mono'>(.*?)</tr>", table, re.S):
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        task_id = row.split("</td>", 1)[0]
        out[html.unescape(task_id)] = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells]
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_each_bug_is_shown_beside_the_reference_and_the_solvers_fix(copy: Path) -> None:
    text = page(copy)
    rows = beside_rows(text)
    tasks = {t["task_id"]: t for t in lines(copy / "tasks.jsonl")}
    assert set(rows) == set(tasks)
    for task_id, (status, reference, bug, fix) in rows.items():
        buggy, ref = tasks[task_id]["buggy_code"].splitlines(), tasks[task_id]["reference_code"].splitlines()
        assert status.startswith("passed")  # 3 of 4 samples fixed it: a passing episode is the one shown
        assert bug.splitlines() == [b for b in buggy if b not in ref]  # the buggy line(s), as the bug made them
        assert reference.splitlines() == [r for r in ref if r not in buggy]  # the reference's line(s) it replaced
        assert fix == reference  # the fix wrote the reference's line back
    assert "<caption>bugfix</caption>" in text and "<th>reference</th><th>bug</th><th>fix</th>" in text


def test_an_unfixed_bug_shows_the_last_episode_and_no_line_of_fix(copy: Path) -> None:
    """With its passing episodes gone, a task shows its last played one: the bug handed back wrote no line."""
    trajectories = lines(copy / "trajectories.jsonl")
    task_id = trajectories[0]["task_id"]
    buggy = next(t for t in lines(copy / "tasks.jsonl") if t["task_id"] == task_id)["buggy_code"]
    kept = [t for t in trajectories if t["task_id"] != task_id or t["final_status"] != "passed"]
    for t in kept:  # its failing episode's last answer: the bug itself, handed back
        if t["task_id"] == task_id:
            t["attempts"][-1]["code"] = buggy
    (copy / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in kept), encoding="utf-8")
    status, _, bug, fix = beside_rows(page(copy))[task_id]
    assert status.startswith("failed") and bug and fix == "(no line)"


def test_model_text_in_the_bug_and_the_fix_is_escaped(copy: Path) -> None:
    trajectories = lines(copy / "trajectories.jsonl")
    for t in trajectories:
        for a in t["attempts"]:
            a["code"] = a["code"] + f"# {HOSTILE}\n"
    (copy / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajectories), encoding="utf-8")
    tasks = lines(copy / "tasks.jsonl")
    for t in tasks:
        t["meta"]["bug"]["diff"] += f"\n+    x = '{HOSTILE}'"
    (copy / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    text = page(copy)
    assert HOSTILE not in text and "<script>alert(1)" not in text
    start = text.index("<details class='beside'")
    section = text[start : text.index("</details>", start)]
    assert section.count(html.escape(f"# {HOSTILE}", quote=True)) == 4  # each task's fix column
    assert section.count(html.escape(f"x = '{HOSTILE}'", quote=True)) == 4  # each task's bug column
    for _, reference, bug, fix in beside_rows(text).values():
        assert HOSTILE in fix and HOSTILE in bug and HOSTILE not in reference


def test_bugs_made_kept_and_fixed_by_maker_and_edit_family(copy: Path) -> None:
    text = page(copy)
    start = text.index("<details class='facets'")
    table = text[start : text.index("</details>", start)]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(<td.*?)</tr>", table)]
    assert ["bugfix", "maker", "generator", "8", "4", "16", "12"] in cells  # 8 bugs made, 4 kept, 12 of 16 fixed
    assert {c[1] for c in cells} == {"edit", "maker"}


def test_a_run_without_such_a_kind_shows_neither_table(copy: Path) -> None:
    for name in ("tasks.jsonl", "trajectories.jsonl"):
        rows = lines(copy / name)
        for row in rows:
            row["kind"] = "induction"
        (copy / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    metrics = lines(copy / "metrics.jsonl")
    for row in metrics:
        row.pop("facets")
    (copy / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics), encoding="utf-8")
    text = page(copy)
    assert "<details class='beside'" not in text and "<details class='facets'" not in text
    assert beside_answers(read_report_data(copy)) == ([], 0)


def test_the_kinds_view_of_an_answer() -> None:
    """``TaskKind.beside_answer`` of a bug fix: the diff's two sides, and the answer's lines in place of the bug's."""
    view = get_kind("bugfix").beside_answer
    assert view is not None and get_kind("induction").beside_answer is None
    task = Task(
        task_id="t", kind="bugfix", description="d", entry_point="first_negative", reference_code=FIRST_NEG,
        tests=[TestCase(input="([1],)", expected=-1)], buggy_code=FIRST_NEG.replace("x < 0", "x <= 0"),
    )  # fmt: skip
    assert view(task, FIRST_NEG) == [
        ("reference", ["        if x < 0:"]),
        ("bug", ["        if x <= 0:"]),
        ("fix", ["        if x < 0:"]),
    ]
    assert view(task, task.buggy_code or "")[2] == ("fix", [])
    rewrite = "\n".join(f"x{i} = {i}" for i in range(40))
    assert len(view(task, rewrite)[2][1]) == FIX_VIEW_LINES
    assert view(task.model_copy(update={"reference_code": TOTAL}), TOTAL)[0][1]  # no measured diff: made now
