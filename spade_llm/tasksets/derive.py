"""``spade import FORMAT FILE --derive KIND --per-task K``: out of each imported task with a reference, up to
K tasks of another kind made from it (``TaskKind.derive``; the bug-fix kind's: the reference with a procedural
bug the benchmark's own tests catch), each proven by that kind's gates in the sandbox.

The file is read as ``spade import`` reads it without ``--derive`` (evalplus runs its canonical solutions in
the same sandbox); then each task is a *base*: proven once by its own gates, then the kind's candidates,
drawn from the base's id and ``--seed``, are tried in order until K pass. Bases are worked on concurrently,
as ``verify`` works (``judging.in_order``), and come back in the file's order: the same file and seed give
the same tasks. Only the derived tasks are written, all or nothing; a base that gives none is counted by
why (no reference, its own gates, no candidate, every candidate turned down), never dropped unsaid.

    from spade_llm.tasksets.derive import derivable_kinds, derive_tasks

    kind = derivable_kinds()[0]                      # the kinds --derive takes
    made = derive_tasks(tasks, kind, per_task=2)     # tasks: read_tasks(...) or an importer's
    print(len(made.tasks), made.skipped)             # Counter({"no_bug_kept": 3, ...})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from .judging import _open, _settings, in_order, load_run_config, make_validator, public_tests

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..sandbox.base import Sandbox
    from ..types import Task

__all__ = ["Derivation", "derivable_kinds", "derive_file", "derive_tasks", "summary_line"]


def derivable_kinds() -> tuple[str, ...]:
    """The kinds whose tasks can be derived from others (``TaskKind.derive``), in ``KIND_NAMES`` order."""
    from ..kinds import KIND_NAMES, get_kind

    return tuple(name for name in KIND_NAMES if get_kind(name).derive is not None)


@dataclass
class Derivation:
    """What a derivation made: the tasks, and what became of each base and each candidate turned down."""

    tasks: list[Task] = field(default_factory=list)
    bases: int = 0
    """Tasks read: each one a base."""
    done: int = 0
    """Bases decided so far (``bases`` once the derivation is over)."""
    yields: Counter[int] = field(default_factory=Counter)
    """Bases by how many tasks each gave (0 for a skipped one)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Bases that gave no task, by why (``Derived.skipped``)."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Candidates turned down, by the gate's reason, over every base."""


def derive_tasks(
    tasks: Sequence[Task],
    kind: str,
    per_task: int = 1,
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    seed: int = 0,
    on_base: Callable[[Derivation], None] | None = None,
) -> Derivation:
    """Up to ``per_task`` tasks of ``kind`` made out of each of ``tasks`` (the module docstring), in the
    tasks' order, in ``sandbox`` (a backend name, default ``auto``, or a started ``Sandbox``, then left
    open) under ``config``'s limits and ``bugfix:`` section (the defaults without one). ``on_base`` hears
    the derivation so far after each base is decided, in order.

    Raises:
        UserError: ``kind`` is unknown or is not derived (``TaskKind.derive``), ``per_task`` < 1, or
            ``config`` is missing or invalid; SandboxUnavailable: the sandbox cannot start.
    """
    from ..kinds import LEAK_REASON, DeriveRequest, get_kind, leaks

    derive = get_kind(kind).derive
    if derive is None:
        raise UserError(f"{kind} tasks are not derived from others; --derive takes {', '.join(derivable_kinds())}")
    if per_task < 1:
        raise UserError(f"--per-task must be at least 1, got {per_task}")
    out = Derivation(bases=len(tasks))
    if not tasks:
        return out
    loaded = load_run_config(config)
    settings = _settings(loaded, timeout, sandbox)
    public = public_tests(loaded)
    request = DeriveRequest(per_task=per_task, max_edits=settings.max_bug_edits, seed=seed)
    box, ours = _open(settings, sandbox)
    try:
        validator = make_validator(box, settings, public)
        for made in in_order(lambda base: derive(validator, base, request), tasks, concurrency):
            kept = []
            for task in made.tasks:  # the leak gate, as ``run_gates`` puts it on a task shown its public tests
                if not task.shows_examples and leaks(task, public):
                    out.rejected[LEAK_REASON] += 1
                else:
                    kept.append(task)
            out.tasks.extend(kept)
            out.yields[len(kept)] += 1
            out.rejected.update(made.rejected)
            if made.skipped is not None:
                out.skipped[made.skipped] += 1
            elif not kept:
                out.skipped[LEAK_REASON] += 1
            out.done += 1
            if on_base is not None:
                on_base(out)
    finally:
        if ours:
            box.close()
    return out


EVALPLUS = "evalplus"
"""The one format whose import runs code (its canonical solutions, in the derivation's sandbox)."""


def derive_file(
    fmt: str,
    file: str | Path,
    out: str | Path,
    kind: str,
    per_task: int = 1,
    *,
    config: str | Path | RunConfig | None = None,
    sandbox: str | Sandbox | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    seed: int = 0,
    on_base: Callable[[Derivation], None] | None = None,
) -> Derivation:
    """The tasks ``derive_tasks`` makes out of ``file``'s (a benchmark in format ``fmt``, read as ``spade
    import`` reads it), written to ``out`` as JSONL, all or nothing: an error, or no task derived, leaves
    no file and any earlier one as it was.

    Raises:
        UserError: as the format's importer and ``derive_tasks``; no task derived (the bases' reasons
            named); ``out`` is a directory or cannot be written. SandboxUnavailable: as ``derive_tasks``.
    """
    from .contests import write_all_or_nothing

    target = Path(out)
    if target.is_dir():
        raise UserError(f"-o {target} is a directory: name the tasks file to write")
    loaded = load_run_config(config)  # once, and first: a bad config is the error, whatever the file
    settings = _settings(loaded, timeout, sandbox)
    read = None if fmt == EVALPLUS else read_benchmark(fmt, file)  # a malformed file: before the sandbox
    box, ours = _open(settings, sandbox)
    try:
        if read is None:
            from .evalplus import import_evalplus

            read, _ = import_evalplus(file, config=loaded, sandbox=box, timeout=timeout, concurrency=concurrency)
        made = derive_tasks(
            read,
            kind,
            per_task,
            config=loaded,
            sandbox=box,
            timeout=timeout,
            concurrency=concurrency,
            seed=seed,
            on_base=on_base,
        )
    finally:
        if ours:
            box.close()
    if not made.tasks:
        raise UserError(f"{file}: no {kind} task derived from its {made.bases} tasks: {_counts(made.skipped)}")
    write_all_or_nothing(target, made.tasks)
    return made


def read_benchmark(fmt: str, file: str | Path) -> list[Task]:
    """Every task ``spade import fmt file`` writes, in memory (any format but evalplus, which runs code).

    Raises:
        UserError: as the format's importer.
    """
    from .contests import FORMATS, import_file
    from .importers import import_humaneval, import_mbpp

    if fmt in FORMATS:
        return import_file(fmt, file)[0]
    if fmt == "mbpp":
        return import_mbpp(file).tasks
    if fmt == "humaneval":
        return import_humaneval(file)
    raise UserError(f"unknown format {fmt!r}")


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in counter.most_common()) or "none"


def summary_line(made: Derivation, kind: str, per_task: int, out: str | Path) -> str:
    """What ``spade import --derive`` says when done: tasks derived from how many bases, how many gave fewer
    than asked, the bases skipped by why, and the candidates turned down by gate."""
    gave = made.bases - sum(made.skipped.values())
    line = f"derived {len(made.tasks)} {kind} tasks from {gave} of {made.bases} tasks -> {out}"
    short = sum(n for k, n in made.yields.items() if 0 < k < per_task)
    if short:
        line += f" ({short} gave fewer than {per_task})"
    if made.skipped:
        line += f"; skipped {sum(made.skipped.values())}: {_counts(made.skipped)}"
    if made.rejected:
        line += f"; candidates turned down: {_counts(made.rejected)}"
    return line
