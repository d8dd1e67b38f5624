"""``spade report``: one self-contained page (charts as inline SVG, the tasks table, sampled trajectories),
hostile run text escaped, a bounded size for a large run, one-line errors, and a clean load in Chromium.

One small fake run is built per module; each test renders a copy it may damage.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from builders import make_task

from spade_llm import report
from spade_llm.cli.app import main
from spade_llm.config import RunConfig
from spade_llm.errors import UserError
from spade_llm.hooks import EpochEnd
from spade_llm.types import EpochMetrics

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("report.test_report")

pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)><!--"


def _script_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_screenshot", ROOT / "scripts" / "report_screenshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("report_screenshot", module)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script_module()


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _edit(path: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    records = _read(path)
    change(records)
    _write(path, records)


def _data(page: str) -> dict[str, Any]:
    match = re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", page, re.S)
    assert match, "no embedded data"
    return dict(json.loads(match.group(1)))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    argv = ["run", "--epochs", "3", "--samples-per-task", "2", "--tasks-per-epoch", "4", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    return out


@pytest.fixture
def copy(run_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(".lock", "report.html"))
    return target


@pytest.fixture(scope="module")
def page(run_dir: Path) -> str:
    return report.render_report(run_dir).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def hostile(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of the run with hostile text in every place the page shows run text; (report, task id)."""
    target = tmp_path_factory.mktemp("hostile") / "run"
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(".lock", "report.html"))
    task_id = f"evil-{HOSTILE}"
    trajs = _read(target / "trajectories.jsonl")
    victim = next(t for t in trajs if len(t["attempts"]) > 1)
    old_id = victim["task_id"]
    for t in trajs:
        if t["task_id"] == old_id:
            t["task_id"] = task_id
            t["trajectory_id"] = f"{HOSTILE}-{t['sample_index']}"
            t["flags"] = [HOSTILE]
            t["error"] = HOSTILE
            for m in t["messages"]:
                m["content"] = HOSTILE + m["content"]
            for a in t["attempts"]:
                a["code"] = HOSTILE + "\n" + a["code"]
                a["result"]["stderr"] = HOSTILE
                a["result"]["load_error"] = HOSTILE
                for r in a["result"]["test_results"] or []:
                    r["input"], r["output"], r["error"] = HOSTILE, HOSTILE, HOSTILE
    _write(target / "trajectories.jsonl", trajs)

    def tasks(records: list[dict[str, Any]]) -> None:
        for t in records:
            if t["task_id"] == old_id:
                t.update(task_id=task_id, description=HOSTILE, tags=[HOSTILE, "$x^2$"], kind="induction")
                t["reference_code"] = HOSTILE
                t["tests"][0]["input"] = HOSTILE

    def stats(records: list[dict[str, Any]]) -> None:
        for r in records:
            if r["task_id"] == old_id:
                r["task_id"] = task_id

    def metrics(records: list[dict[str, Any]]) -> None:
        records[0]["warnings"].append(HOSTILE)
        records[0]["rejected_by_reason"][HOSTILE] = 1

    _edit(target / "tasks.jsonl", tasks)
    _edit(target / "task_stats.jsonl", stats)
    _edit(target / "metrics.jsonl", metrics)
    rejected = {"epoch": 0, "reason": HOSTILE, "detail": HOSTILE, "task_id": HOSTILE, "answer": HOSTILE}
    _write(target / "rejected.jsonl", [rejected])
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["models"] = {"generator": HOSTILE, "solver": HOSTILE}
    (target / "manifest.json").write_text(json.dumps(manifest))
    return report.render_report(target), task_id


# -- the page ------------------------------------------------------------------------------------


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    fetches = re.findall(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert fetches == []
    assert "<link" not in page and "@import" not in page and "url(http" not in page
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts == ["<script type='application/json' id='report-data'>", "<script>"]


def test_every_chart_section_has_an_inline_svg(page: str) -> None:
    sections = dict(re.findall(r"<section id=\"([a-z]+)\">(.*?)</section>", page, re.S))
    for anchor, _title, _caption in report.SECTIONS:
        expected = sum(1 for a, *_ in report.CHARTS if a == anchor)
        assert sections[anchor].count("<svg") == expected, anchor
        assert "viewBox" in sections[anchor]
    assert page.count("<svg") == len(report.CHARTS)
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page  # inlined, not pasted files
    assert "warnings" in sections and "tasks" in sections


def _chart(page: str, label: str) -> str:
    match = re.search(rf'<svg[^>]*aria-label="{re.escape(label)}".*?</svg>', page, re.S)
    assert match, f"no chart {label!r}"
    return match.group(0)


def test_diversity_calibration_and_solve_time_are_charted_from_the_metrics(page: str, run_dir: Path) -> None:
    """What a monitor needs beside pass rates: each chart drew the run's series, not its empty message."""
    rows = _read(run_dir / "metrics.jsonl")
    assert all(r["novelty"] is not None and r["difficulty_histogram"] for r in rows)
    diversity = _chart(page, "Novelty and duplicates.")
    assert "novelty of accepted tasks" in diversity and "duplicates among valid proposals" in diversity
    assert "nearest similarity, p90" in diversity and "distinct behaviours" in diversity  # metrics' diversity
    mix = _chart(page, "Claimed difficulty of accepted tasks.")
    assert all(b in mix for b in rows[0]["difficulty_histogram"])  # one layer per bin, named by it
    assert "claimed (the task" in _chart(page, "Claimed against measured difficulty.")
    assert "p90 episode time" in _chart(page, "Episode time, 90th percentile.")
    entropy = _chart(page, "Entropy of tags and kinds.")
    assert "entropy of tags" in entropy and "entropy of kinds" in entropy
    for label in ("Novelty and duplicates.", "Claimed against measured difficulty.", "Episode time, 90th percentile."):
        assert "no epoch finished yet" not in _chart(page, label) and "yet" not in _chart(page, label)


def test_a_warning_line_counts_as_metrics_jsonl_does(copy: Path) -> None:
    """A warning of one wording in several epochs is one line: it says in how many epochs, and a count it
    starts with epoch by epoch and in all, not the latest epoch's number times the epochs."""
    counts = [5, 4, 4, 6, 3, 3]

    def metrics(records: list[dict[str, Any]]) -> None:
        template = records[-1]
        records[:] = [
            {**template, "epoch": e, "warnings": [f"{n} episodes abandoned by their clients: recorded, not measured"]}
            for e, n in enumerate(counts)
        ]

    _edit(copy / "metrics.jsonl", metrics)
    page = report.render_report(copy).read_text(encoding="utf-8")
    line = re.search(r"<li><span class=\"when\">epochs 0–5</span> 3 episodes abandoned.*?</li>", page)
    assert line, "the six epochs' warning is not one line"
    assert "(in 6 epochs: 5, 4, 4, 6, 3, 3; 25 in all)" in line.group(0)
    assert "×" not in line.group(0)


def test_a_solve_directory_gets_its_own_page_pass_at_k_and_tokens(tmp_path: Path) -> None:
    """``spade solve``'s directory has no epoch, plan or generator: its page says pass@k and the tokens its
    episodes spent, and shows no "0 of 3 epochs planned", no generator and no chart of epochs."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(make_task(f"add{i}").dump()) + "\n" for i in range(3)), encoding="utf-8")
    out = tmp_path / "solve"
    argv = ["solve", str(tasks), "--model", "fake/default", "--samples-per-task", "2", "--out", str(out)]
    assert main([*argv, "--sandbox", "subprocess"]) == 0
    page = report.render_report(out).read_text(encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text())
    header = page.split("</header>")[0]
    for k, value in summary["pass_at_k"].items():
        assert f'<div class="tile-label">{k}</div><div class="tile-value">{value:.0%}</div>' in header
    spent = sum(
        t["usage"]["prompt_tokens"] + t["usage"]["completion_tokens"] for t in _read(out / "trajectories.jsonl")
    )
    assert spent > 0 and f'<div class="tile-label">tokens</div><div class="tile-value">{spent:,}</div>' in header
    assert "planned" not in header and "<b>generator</b>" not in header and "<b>command</b> solve" in header
    assert '<section id="curriculum">' not in page and '<section id="solving">' in page
    assert page.count("<svg") == 2  # the failures and turns charts: the rest need epochs


def test_header_summarises_the_run(page: str, run_dir: Path) -> None:
    header = page[page.index("<header>") : page.index("</header>")]
    for text in ("fake/default", "complete", "pass rate", "seed", run_dir.name):
        assert text in header


def test_tasks_table_lists_every_task(page: str, run_dir: Path) -> None:
    rows = re.findall(r"<tr class='task[^']*'[^>]* data-id='([^']*)'", page)
    assert sorted(rows) == sorted(t["task_id"] for t in _read(run_dir / "tasks.jsonl"))
    statuses = set(re.findall(r"data-status='([a-z]+)'", page))
    assert statuses <= set(report.STATUS_LABELS)


def test_trajectories_are_embedded_with_their_attempts(page: str, run_dir: Path) -> None:
    data = _data(page)
    trajs = {t["trajectory_id"]: t for t in _read(run_dir / "trajectories.jsonl")}
    embedded = [t for d in data["tasks"].values() for t in d["traj"]]
    assert len(embedded) == len(trajs)  # a small run embeds every episode
    repaired = 0
    for slim in embedded:
        full = trajs[slim["id"]]
        assert slim["status"] == full["final_status"]
        assert [a["code"] for a in slim["attempts"]] == [a["code"] for a in full["attempts"]]
        for n, (a, b) in enumerate(zip(slim["attempts"], full["attempts"], strict=True)):
            assert a["told"] == full["messages"][b["message_index"] - 1]["content"]
            assert len(a["tests"]) == b["public_total"]
            assert [t["st"] for t in a["tests"]] == [
                r["status"] for r in b["result"]["test_results"][: b["public_total"]]
            ]
            assert (a["diff"] is None) == (n == 0)
        repaired += slim["cat"] == "repaired"
    assert repaired, "the fake run has episodes passed after a repair"


def test_styles_and_script_are_package_data_inlined(page: str) -> None:
    for name, tag in (("report.css", "style"), ("report.js", "script")):
        text = (ROOT / "spade_llm" / "report" / "static" / name).read_text(encoding="utf-8")
        assert f"<{tag}>\n{text}</{tag}>" in page


def test_importing_the_report_does_not_import_matplotlib() -> None:
    code = "import sys, spade_llm.report; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_same_run_same_page(run_dir: Path, page: str, tmp_path: Path) -> None:
    again = report.render_report(run_dir, tmp_path / "again.html")
    assert again.read_text(encoding="utf-8") == page
    assert [p.name for p in tmp_path.iterdir()] == ["again.html"]  # no temporary file left behind


# -- hostile text --------------------------------------------------------------------------------


def test_hostile_run_text_is_escaped(hostile: tuple[Path, str]) -> None:
    path, task_id = hostile
    page = path.read_text(encoding="utf-8")
    assert HOSTILE not in page
    assert "<img" not in page and "alert(1)</script>" not in page and "<script>alert" not in page
    assert len(re.findall(r"<script\b", page)) == 2
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # shown as text in the table and header
    data = _data(page)  # \u003c... decodes back to the very text
    detail = data["tasks"][task_id]
    assert detail["desc"] == HOSTILE
    assert all(a["code"].startswith(HOSTILE) for t in detail["traj"] for a in t["attempts"])


def test_huge_strings_are_cut(copy: Path) -> None:
    def bloat(records: list[dict[str, Any]]) -> None:
        records[0]["attempts"][0]["code"] = "x = 1\n" * 200_000
        records[0]["messages"][1]["content"] = "y" * 1_000_000

    _edit(copy / "trajectories.jsonl", bloat)
    bloated = _read(copy / "trajectories.jsonl")[0]["trajectory_id"]
    page = report.render_report(copy).read_text(encoding="utf-8")
    assert len(page) < 1_000_000
    slim = next(t for d in _data(page)["tasks"].values() for t in d["traj"] if t["id"] == bloated)
    assert "characters cut" in slim["attempts"][0]["code"]
    assert len(slim["attempts"][0]["code"]) < report.TEXT_LIMIT + 100


def test_records_holding_lone_surrogates_still_get_a_page(copy: Path) -> None:
    """Records with an escaped lone surrogate ("\\ud800", as another tool or an older version wrote
    them) in every kind of text the page shows: read with U+FFFD in its place, and the page written."""
    lone = "\ud800"

    def trajectories(records: list[dict[str, Any]]) -> None:
        for t in records:
            for m in t["messages"]:
                m["content"] += lone
            for a in t["attempts"]:
                a["code"] += f"# {lone}"
                a["result"]["stderr"] = lone

    def tasks(records: list[dict[str, Any]]) -> None:
        for t in records:
            t["description"] += lone
            t["tags"] = [*t["tags"], f"tag{lone}"]

    _edit(copy / "trajectories.jsonl", trajectories)
    _edit(copy / "tasks.jsonl", tasks)
    _edit(copy / "metrics.jsonl", lambda records: records[0]["warnings"].append(f"warn{lone}"))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["models"] = {"generator": f"gen{lone}", "solver": f"sol{lone}"}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert b"\\ud800" in (copy / "tasks.jsonl").read_bytes()

    page = report.render_report(copy).read_bytes().decode("utf-8")  # strict: every byte encodes text
    assert "tag\ufffd" in page and "sol\ufffd" in page
    data = _data(page)
    first = next(iter(data["tasks"].values()))
    assert first["desc"].endswith("\ufffd")
    assert all(a["code"].endswith("# \ufffd") for t in first["traj"] for a in t["attempts"])


# -- size and sampling ---------------------------------------------------------------------------


def test_sampling_caps_a_large_run(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = SCRIPT.synthesize(run_dir, tmp_path / "big", 600)
    trajectories = len(_read(big / "trajectories.jsonl"))
    tasks = len(_read(big / "tasks.jsonl"))
    assert trajectories >= 600 and tasks > report.PAGE_ROWS
    run = report.read_report_data(big)
    capped = report.sample_details(run, max_trajectories=40, budget=10**9)
    assert capped.embedded == 40
    assert len(capped.details) == 40  # one per task before any task gets a second
    epochs = {run.episodes.epoch_of[t] for t in capped.details}
    assert len(epochs) > 10  # spread over the run, not its first epochs
    assert report.sample_details(run, 40, 10**9).details.keys() == capped.details.keys()  # deterministic
    monkeypatch.setattr(report.sampling, "DETAIL_BUDGET", 150_000)  # the default budget, read per call
    page = report.render_report(big).read_text(encoding="utf-8")
    data = _data(page)
    assert 20 < sum(len(d["traj"]) for d in data["tasks"].values()) < trajectories
    assert len(report.embed_json(data["tasks"]).encode()) <= 150_000 + 2
    assert len(re.findall(r"<tr class='task", page)) == tasks
    assert len(re.findall(r"<tr class='task[^']*' hidden", page)) == tasks - report.PAGE_ROWS
    assert "Trajectories embedded" in page


# -- runs in odd states ----------------------------------------------------------------------------


def test_a_run_still_going_or_damaged_still_gets_a_page(copy: Path) -> None:
    def first_epoch_only(records: list[dict[str, Any]]) -> None:
        del records[1:]

    _edit(copy / "metrics.jsonl", first_epoch_only)
    (copy / "summary.json").unlink()
    with (copy / "trajectories.jsonl").open("a") as f:
        f.write("not json\n")
        f.write('{"trajectory_id": "json, not a trajectory"}\n')  # read_run counts it, as not a record
        f.write('{"trajectory_id": "half a line')
    (copy / "rejected.jsonl").unlink()
    page = report.render_report(copy, refresh_s=30).read_text(encoding="utf-8")
    assert "in progress: 1 of 3 epochs" in page
    assert "data-refresh='30'" in page
    assert "<b>trajectories.jsonl</b> 2 damaged line(s) skipped" in page
    assert page.count("<svg") == len(report.CHARTS)


def test_a_run_without_metrics_or_tasks(copy: Path) -> None:
    """A ``spade solve`` run: trajectories only; the table comes from them, charts say there is no data."""
    for name in ("metrics.jsonl", "tasks.jsonl", "task_stats.jsonl", "summary.json"):
        (copy / name).unlink()
    page = report.render_report(copy).read_text(encoding="utf-8")
    tasks = {t["task_id"] for t in _read(copy / "trajectories.jsonl")}
    assert set(re.findall(r" data-id='([^']*)'", page)) == tasks
    assert "no epoch finished yet" in page


def test_epoch_hook_renders_and_refreshes_until_the_last_epoch(copy: Path) -> None:
    config = RunConfig.model_validate(yaml.safe_load((copy / "config.yaml").read_text()))
    rows = _read(copy / "metrics.jsonl")
    metrics = [EpochMetrics.model_validate(m) for m in rows]
    _write(copy / "metrics.jsonl", rows[:1])  # as the hook sees the run after its first epoch
    summary = json.loads((copy / "summary.json").read_text())
    (copy / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    report.epoch_hook(EpochEnd(run_dir=copy, epoch=0, metrics=metrics[0], config=config))
    page = (copy / "report.html").read_text(encoding="utf-8")
    assert f"data-refresh='{report.REFRESH_S}'" in page and "in progress: 1 of 3 epochs" in page
    _write(copy / "metrics.jsonl", rows)
    report.epoch_hook(EpochEnd(run_dir=copy, epoch=2, metrics=metrics[2], config=config))
    assert "data-refresh" not in (copy / "report.html").read_text(encoding="utf-8")


# -- errors --------------------------------------------------------------------------------------


def test_missing_or_foreign_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="run directory not found: "):
        report.render_report(tmp_path / "nope")
    with pytest.raises(UserError, match=r"not a run directory \(no config.yaml\)"):
        report.render_report(tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_matplotlib_missing_says_how_to_install(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(
        UserError, match=re.escape("needs matplotlib, which spade_llm depends on: pip install matplotlib")
    ):
        report.render_report(copy)


def test_unwritable_output_is_a_user_error(copy: Path) -> None:
    (copy / "blocker").write_text("a file, not a folder")
    with pytest.raises(UserError, match="cannot write"):
        report.render_report(copy, copy / "blocker" / "report.html")


# -- in a browser ----------------------------------------------------------------------------------


@pytest.mark.skipif(SCRIPT.find_chromium() is None, reason="no Chromium on this machine")
def test_chromium_opens_a_hostile_trajectory_without_errors(hostile: tuple[Path, str]) -> None:
    from urllib.parse import quote

    path, task_id = hostile
    check = SCRIPT.check_page(path, fragment=f"task={quote(task_id, safe='')}")
    assert check.errors == []
    assert check.scripts == 2  # nothing injected
    assert check.open_rows == 1  # #task=ID opened the task
    assert "alert(1)" in check.detail_text  # the hostile text is shown, as text


@pytest.mark.skipif(SCRIPT.find_chromium() is None, reason="no Chromium on this machine")
def test_the_browser_check_sees_errors(tmp_path: Path) -> None:
    """The check above is not vacuous: console errors, exceptions and dialogs are all caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><body><script>console.error('boom'); alert(1); throw new Error('bad');</script>")
    errors = SCRIPT.check_page(page).errors
    assert any("boom" in e for e in errors)
    assert any(e.startswith("dialog") for e in errors)
    assert any("bad" in e and e.startswith("exception") for e in errors)


def test_the_cli_writes_the_report_and_a_run_with_report_on_refreshes_it(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spade_llm.cli.app import main

    out = tmp_path / "page.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and "<svg" in out.read_text()
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "run directory not found: " in capsys.readouterr().err

    live = tmp_path / "live"
    assert main(["run", "--epochs", "2", "--tasks-per-epoch", "1", "--report", "--out", str(live), "--quiet"]) == 0
    page = (live / "report.html").read_text()
    tasks = [json.loads(line)["task_id"] for line in (live / "tasks.jsonl").read_text().splitlines()]
    assert tasks and all(task_id in page for task_id in tasks)  # rendered after the last epoch too
