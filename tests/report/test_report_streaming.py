"""The report streams the trajectories, a run's bulk: each is counted as it passes and what the page may embed
is kept by offset, so reading a run for its page grows with its tasks, not with its episodes (issue 41)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from builders import grown_run, run_fake, small_config

from spade_llm.report import render_report
from spade_llm.report.reading import read_report_data


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = small_config(7, controller={"epochs": 2, "tasks_per_epoch": 4}, solver={"samples_per_task": 3})
    return run_fake(tmp_path_factory.mktemp("template") / "run", config)


def _read_peak(run: Path) -> int:
    tracemalloc.start()
    try:
        read_report_data(run)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_a_run_for_its_page_does_not_hold_its_episodes(template: Path, tmp_path: Path) -> None:
    small, large = grown_run(template, tmp_path / "x2", 2), grown_run(template, tmp_path / "x16", 16)
    read_report_data(small)  # imports and caches filled first
    added = (large / "trajectories.jsonl").stat().st_size - (small / "trajectories.jsonl").stat().st_size
    grew = _read_peak(large) - _read_peak(small)
    # holding the episodes took 6x their JSON's bytes; what remains grows with the tasks and epochs
    assert grew < 2 * added, (grew, added)


def test_the_page_of_a_grown_run_counts_every_episode_and_embeds_a_sample(template: Path, tmp_path: Path) -> None:
    run = grown_run(template, tmp_path / "x4", 4)
    data = read_report_data(run)
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    assert data.episodes.count == len(lines) and sum(c.samples for c in data.episodes.per_task.values()) == len(lines)
    page = render_report(run, tmp_path / "report.html", max_trajectories=5).read_text()
    assert f"Trajectories embedded: <b>5</b> of {len(lines):,}" in page
    assert page.count('"cat":') == 5  # five episodes read again, by offset, and embedded


def test_the_page_holds_each_task_as_what_it_shows_and_reads_an_embedded_one_again(
    template: Path, tmp_path: Path
) -> None:
    """A task's reference and tests are read again only for the tasks the page embeds: the page of a run
    grows by less than 6 bytes per byte of task JSON added (whole tasks took ~10; briefs, with each
    task's counts, picks and stats row, ~4.5)."""
    from spade_llm.store import read_run

    small, large = grown_run(template, tmp_path / "x2", 2), grown_run(template, tmp_path / "x16", 16)
    read_report_data(small)
    added = (large / "tasks.jsonl").stat().st_size - (small / "tasks.jsonl").stat().st_size
    grew = _read_peak(large) - _read_peak(small)
    assert grew < 6 * added, (grew, added)
    data = read_report_data(large)
    tasks = read_run(large).tasks
    assert [b.task_id for b in data.tasks] == [t.task_id for t in tasks]
    assert data.task(data.tasks[-1]) == tasks[-1]  # read again, whole, from its offset
    assert len(data.rejected) == len(read_run(large).rejected)


def test_a_run_in_its_first_epoch_gets_a_runs_page_though_its_plans_are_not_read(
    template: Path, tmp_path: Path
) -> None:
    """The page never reads plans (it shows none); whether a directory is a solve's is asked of the journals'
    first records, a damaged line skipped as the page skips it."""
    import shutil

    run = tmp_path / "running"
    shutil.copytree(template, run)
    for journal in ("metrics.jsonl", "proposals.jsonl"):
        (run / journal).write_text("")  # the first epoch's answers and row not yet written
    plans = (run / "plans.jsonl").read_text()
    (run / "plans.jsonl").write_text("{not json\n" + plans)
    data = read_report_data(run)
    assert not data.is_solve and data.records.damaged["plans.jsonl"] == 0  # not read at all
    (run / "plans.jsonl").write_text("{not json\n")
    assert read_report_data(run).is_solve  # nothing says a plan was made
