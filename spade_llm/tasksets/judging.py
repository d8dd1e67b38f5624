"""``verify`` and ``evaluate`` as Python: the gates on tasks from outside a run, and samples judged
against tasks. The CLI commands read files (``taskfile.py``), call these and print their rows.

    from spade_llm import read_samples, read_tasks, verify_tasks, evaluate_samples

    tasks = read_tasks("tasks.jsonl")
    for report in verify_tasks(tasks):          # one ValidationReport per task, in order
        print(report.task_id, report.valid, report.reason)
    result = evaluate_samples(tasks)             # each task's reference answer when no samples
    print(result.scores)                         # {"pass@1": 1.0}
    samples = read_samples("samples.jsonl", {t.task_id: t for t in tasks})  # (task, code, language) triples
    result = evaluate_samples(tasks, samples, ks=(1, 5))
    print(result.pass_at_k.summary())            # per task n, c, pass@1, pass@5; overall

Both judge in a sandbox of their own (``sandbox``: a backend name, default ``auto``; or pass a
started ``Sandbox`` to share one, which is then left open) with the limits of ``config`` (a run
config file, or a ``RunConfig`` already loaded; the defaults without one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import UserError

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..evaluator import PassAtK
    from ..judge import JudgeSettings
    from ..sandbox.base import Sandbox
    from ..types import Task
    from ..validation import ValidationReport, Validator

__all__ = ["Evaluation", "evaluate_samples", "load_run_config", "public_tests", "verify_tasks"]

ALL_JUDGE_ONLY = "every task is judge-only (no reference_code): there is no reference to judge"
"""Why ``evaluate`` without samples has nothing to judge (``Task.judge_only``)."""

_T = TypeVar("_T")
_R = TypeVar("_R")


def in_order(fn: Callable[[_T], _R], items: Sequence[_T], concurrency: int) -> Iterator[_R]:
    """``fn(item)`` for each item, in input order, up to ``concurrency`` at once in threads (the
    sandbox's calls block; each runs in a process of its own)."""
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        yield from pool.map(fn, items)


def load_run_config(config: str | Path | RunConfig | None) -> RunConfig | None:
    """``config`` loaded once (a path), as given (a ``RunConfig``), or None. The config models are
    imported only with a file or a config.

    Raises:
        UserError: the file is missing, not YAML, or holds an invalid value.
    """
    if isinstance(config, (str, os.PathLike)):
        from ..config import load_config

        return load_config(str(config))
    return config


def public_tests(config: RunConfig | None) -> int:
    """``solver.public_tests`` of a loaded run config (its default without one): which tests the leak
    gate treats as hidden."""
    from ..kinds import DEFAULT_PUBLIC_TESTS

    return DEFAULT_PUBLIC_TESTS if config is None else config.solver.public_tests


def _settings(config: RunConfig | None, timeout: float | None, sandbox: str | Sandbox | None) -> JudgeSettings:
    from ..judge import judge_settings

    return judge_settings(config, timeout_s=timeout, backend=sandbox if isinstance(sandbox, str) else None)


def _open(settings: JudgeSettings, sandbox: str | Sandbox | None) -> tuple[Sandbox, bool]:
    """The sandbox to judge in, and whether it is ours to close."""
    if sandbox is not None and not isinstance(sandbox, str):
        return sandbox, False
    from ..sandbox.registry import get_sandbox

    return get_sandbox(settings.backend), True


def make_validator(box: Sandbox, settings: JudgeSettings, public: int) -> Validator:
    """The gates of a run, as ``verify`` runs them on tasks from outside one: in ``box``, under ``settings``
    (a run config's ``sandbox:``, ``validation:`` and ``bugfix:``), ``public`` tests shown."""
    from ..validation import Validator

    return Validator(
        box,
        settings.limits,
        settings.test_timeout_s,
        settings.banned_imports,
        min_kill_rate=settings.min_kill_rate,
        max_mutants=settings.max_mutants,
        max_bug_lines=settings.max_bug_lines,
        public_tests=public,
    )


def verify_tasks(
    tasks: Iterable[Task],
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
) -> Generator[ValidationReport, None, None]:
    """Every gate a run puts a proposed task through (the reference runs, determinism, test strength,
    leaks), on each of ``tasks``: one ``ValidationReport`` per task, in order, as each is decided. The
    sandbox starts at the first and closes with the generator (``close()`` it to stop early).

    Raises:
        UserError: ``config`` is missing or invalid; SandboxUnavailable: the sandbox cannot start.
    """
    from ..kinds import run_gates

    tasks = list(tasks)
    if not tasks:
        return
    loaded = load_run_config(config)
    settings = _settings(loaded, timeout, sandbox)
    public = public_tests(loaded)
    box, ours = _open(settings, sandbox)
    try:
        validator = make_validator(box, settings, public)
        seen: dict[str, str] = {}
        for report in in_order(lambda t: run_gates(validator, t, public, full=True), tasks, concurrency):
            yield _first_copy(report, seen)
    finally:
        if ours:
            box.close()


def _first_copy(report: ValidationReport, seen: dict[str, str]) -> ValidationReport:
    """``report``, or a ``duplicate`` when an earlier valid task of the file is the same task by its kind's
    ``duplicate_key`` (the run's duplicate gate within the file; a kind without a key is not compared)."""
    from dataclasses import replace

    from ..dedup import duplicate_key

    if not report.valid or report.task is None:
        return report
    key = duplicate_key(report.task)
    if key is None:
        return report
    first = seen.setdefault(f"{report.task.kind}:{key}", report.task_id)
    if first == report.task_id:
        return report
    return replace(report, valid=False, reason="duplicate", detail=f"the same task as {first}, earlier in the file")


def _no_scores() -> PassAtK:
    from ..evaluator import PassAtK  # when judging starts: ``import spade_llm`` stays light

    return PassAtK((), ())


@dataclass
class Evaluation:
    """What ``evaluate_samples`` found: a row per sample (as ``spade evaluate`` prints them), pass@k
    per task and over the tasks (``pass_at_k``; ``scores`` its overall as ``{"pass@1": ...}``), and the
    tasks whose text shows a hidden test (judged as written, named)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    leaking: list[str] = field(default_factory=list)
    pass_at_k: PassAtK = field(default_factory=_no_scores)


Sample = tuple["Task", str] | tuple["Task", str, str]
"""A sample to judge: (task, code), written in Python, or (task, code, language), ``language`` a name of
``languages.TOOLCHAINS`` (``read_samples`` gives these)."""


def samples_per_task(tasks: Sequence[Task], samples: Sequence[Sample] | None) -> dict[str, int]:
    """Task id -> how many samples it has (one, its reference, without ``samples``: none for a judge-only
    task, which has no reference), in the tasks' order; tasks without a sample are left out (nothing of
    theirs is judged or counted)."""
    if samples is None:
        return {t.task_id: 1 for t in tasks if not t.judge_only}
    counts = {t.task_id: 0 for t in tasks}
    for sample in samples or ():
        counts[sample[0].task_id] = counts.get(sample[0].task_id, 0) + 1
    return {task_id: n for task_id, n in counts.items() if n}


def chosen_ks(counts: dict[str, int], ks: Sequence[int] | None) -> tuple[int, ...]:
    """The k to report: ``ks`` sorted, once each, when every task has at least the largest's samples;
    without ``ks``, the ``DEFAULT_KS`` every task has the samples for.

    Raises:
        UserError: a k < 1, or a task with fewer samples than a k asked for (the tasks are named:
            pass@k of fewer than k samples is not defined, and averaging over the others would
            quietly measure another set of tasks).
    """
    from ..evaluator import default_ks, short_of_samples

    if ks is None:
        return default_ks(counts.values())
    wanted = tuple(sorted(set(ks)))
    if not wanted or wanted[0] < 1:
        raise UserError(f"pass@k needs k >= 1, got {', '.join(map(str, ks)) or 'none'}")
    short = short_of_samples(counts, wanted[-1])
    if short:
        named = ", ".join(f"{task_id} ({n})" for task_id, n in list(short.items())[:5])
        more = f" and {len(short) - 5} more" if len(short) > 5 else ""
        raise UserError(
            f"pass@{wanted[-1]} needs {wanted[-1]} samples of every task; {len(short)} of {len(counts)} tasks "
            f"{'has' if len(short) == 1 else 'have'} fewer: {named}{more} (the fewest is {min(counts.values())}: "
            "ask for a k no larger, or give more samples)"
        )
    return wanted


def evaluate_samples(
    tasks: Sequence[Task],
    samples: Sequence[Sample] | None = None,
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    on_leaks: Callable[[list[str]], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    ks: Sequence[int] | None = None,
) -> Evaluation:
    """Judge each (task, answer[, language]) of ``samples`` (default: each task's reference answer, in Python; a
    judge-only task, which has none, is left out) on every test of its task, by its kind, in the answer's
    language (a row's ``language``), as the loop judges, and give
    pass@k for each of ``ks`` (default: those of 1, 10, 100 every task has the samples for) over the
    tasks with samples. A test given without an expected value gets the reference's first.
    ``on_leaks`` hears the leaking tasks before judging starts; ``on_row`` each row as it is judged.

    Raises:
        UserError: ``config`` is missing or invalid, a task's expected value cannot be filled, a task
            has fewer samples than a k of ``ks``, or every task is judge-only and no samples are given
            (before anything is judged); SandboxUnavailable: the sandbox cannot start.
    """
    from ..evaluator import pass_at_k_table
    from ..judge import Judge, final_status
    from ..kinds import get_kind, mark_leaks
    from ..languages import DEFAULT_ANSWER_LANGUAGE
    from .expected import fill_expected

    counts = samples_per_task(tasks, samples)
    if tasks and not counts and samples is None:
        raise UserError(f"{ALL_JUDGE_ONLY}; give samples")
    reported = chosen_ks(counts, ks)  # refused before the sandbox starts, not after the judging
    loaded = load_run_config(config)
    settings = _settings(loaded, timeout, sandbox)
    box, ours = _open(settings, sandbox)
    out = Evaluation()
    try:
        judge = Judge(box, settings.limits, settings.test_timeout_s, compile_timeout_s=settings.compile_timeout_s)
        filled = fill_expected(judge, list(tasks), concurrency)  # tests given without an expected value
        filled, out.leaking = mark_leaks(filled, public_tests(loaded))
        by_id = {t.task_id: t for t in filled}
        chosen = (
            [(by_id[s[0].task_id], s[1], s[2] if len(s) > 2 else DEFAULT_ANSWER_LANGUAGE) for s in samples]
            if samples is not None
            else [
                (t, get_kind(t.kind).reference_answer(t), DEFAULT_ANSWER_LANGUAGE)
                for t in filled
                if t.task_id in counts
            ]
        )
        if out.leaking and on_leaks is not None:
            on_leaks(out.leaking)
        per_task: dict[str, list[bool]] = {}
        verdicts = in_order(
            lambda s: get_kind(s[0].kind).check_answer(judge, s[0], s[1], None, language=s[2]), chosen, concurrency
        )
        for (task, _code, language), result in zip(chosen, verdicts, strict=True):
            status = final_status(result)
            passed = status == "passed"
            per_task.setdefault(task.task_id, []).append(passed)
            row: dict[str, Any] = {
                "task_id": task.task_id,
                "language": language,
                "passed": passed,
                "status": status,
                "exec_status": result.status,
                "tests_passed": result.tests_passed,
                "tests_total": result.tests_total,
            }
            if "leaks_hidden_test" in task.meta:
                row["leaks_hidden_test"] = task.meta["leaks_hidden_test"]
            out.rows.append(row)
            if on_row is not None:
                on_row(row)
    finally:
        if ours:
            box.close()
    out.pass_at_k = pass_at_k_table({task_id: per_task[task_id] for task_id in counts}, reported)
    out.scores = out.pass_at_k.scores()
    return out
