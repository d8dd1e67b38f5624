"""Task kinds by name: what the solver is shown, how its answer is read, how it is judged.

Six kinds, each in its own module: three as in Absolute Zero,

* ``induction`` (the default): write the function from its description and example tests;
* ``deduction``: read the program and predict its output on given inputs (judged outside the
  sandbox, nothing runs);
* ``abduction``: read the program and find inputs that make it return given outputs (judged by
  running the *reference* on the proposed inputs in the sandbox);

and the field's contest dialect:

* ``program``: write a whole program that reads stdin and prints the answer (judged by its stdout on
  each test's input, ``sandbox/stdio.py``);

and the two query kinds asked of such a program:

* ``program_deduction``: read the program and predict what it prints for given stdins (judged by the
  output rule against the reference's stdout, nothing runs);
* ``program_abduction``: read the program and find stdins on which it prints given outputs (judged by
  running the *reference* on them in the sandbox, the task's input validator accepting them first).

Every kind keeps the same task record (``docs/records.md``, "tasks.jsonl"), so generation, validation, records, rewards
and metrics are shared; only the prompts, the answer's reading, the gates and ``check_answer`` differ.
``allocate_kinds`` (``mix.py``) hands an epoch's generator requests their kinds from a weighted mix.

The names, ``KIND_NAMES`` and ``DEFAULT_KIND``, live in ``names.py`` (``types`` reads them); each
is the name of this package's module that holds the kind, as ``KIND``. The interface, ``TaskKind``,
lives in ``base.py`` with what every kind shares; ``queries.py`` holds what the two query kinds
share, ``program_queries.py`` what the two over programs share. Imports go one way: this package
imports the kind modules (when a kind is first asked for), and they import ``base``, ``queries`` and
each other's modules (never the package).

``run_gates`` is the one entry point for "a proposed task's gates": its kind's, and the leak gate
(``leaks``: a hidden test's input shown with its answer in what the solver reads), in the gates' order
(docs/records.md).
Every place a task enters (``run``, ``serve-env`` and the Ray workers through
``checking.CodeChecker``, ``verify``, ``proposal_reward``) goes through it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from .base import CODE_PARTS, DEFAULT_PUBLIC_TESTS, NO_REFERENCE, Derived, DeriveRequest, FieldTests, TaskKind
from .mix import allocate_kinds, normalize_mix
from .names import DEFAULT_KIND, KIND_NAMES, known_kind

if TYPE_CHECKING:
    from ..leaks import Leak
    from ..types import Task
    from ..validation import ValidationReport, Validator

__all__ = [
    "DEFAULT_KIND",
    "DEFAULT_PUBLIC_TESTS",
    "KIND_NAMES",
    "LEAK_CACHE",
    "LEAK_REASON",
    "NO_REFERENCE",
    "DeriveRequest",
    "Derived",
    "TaskKind",
    "allocate_kinds",
    "get_kind",
    "kind_for_field_tests",
    "leak_note",
    "leaks",
    "mark_leaks",
    "normalize_mix",
    "run_gates",
]

LEAK_REASON = "leaks_hidden_test"
"""The rejection reason of a task whose shown text carries a hidden test (docs/records.md)."""
BEFORE_LEAKS = ("syntax_error", "banned_import", "missing_entry_point", "bad_input", "too_few_tests")
"""The reasons ordered before ``leaks_hidden_test``: the static ones, decided without running
anything (the leak gate needs readable inputs). Every reason that needs the reference run comes after."""


def get_kind(name: str) -> TaskKind:
    """The kind called ``name`` (its module's ``KIND``, imported when first asked for); a UserError
    naming the known kinds otherwise."""
    try:
        known_kind(name)
    except ValueError as e:
        raise UserError(str(e)) from None
    kind: TaskKind = import_module(f"{__name__}.{name}").KIND
    return kind


def kind_for_field_tests(shape: FieldTests) -> TaskKind:
    """The kind whose tasks are tests of the field's ``shape`` (``TaskKind.field_tests``): what a ground
    truth of that shape is read as (``rewards.field_formats``); the first in ``KIND_NAMES`` order."""
    for name in KIND_NAMES:
        kind = get_kind(name)
        if kind.field_tests == shape:
            return kind
    raise AssertionError(f"no kind takes the field's {shape!r} tests")  # tests/architecture pins one per shape


def leaks(task: Task, public_tests: int = DEFAULT_PUBLIC_TESTS) -> list[Leak]:
    """The hidden tests of ``task`` whose input and expected value its shown text carries, with
    ``public_tests`` tests shown (the run's ``solver.public_tests``). The kind says which tests are
    hidden and what text is shown; only tests with a readable input and an expected value count
    (before validation, those whose author gave one)."""
    from ..leaks import Secret, find_leaks
    from ..sandbox.runner import parse_input

    kind = get_kind(task.kind)
    if kind.find_leaks is not None:
        return kind.find_leaks(task, public_tests)
    secrets = []
    for i in kind.secret_tests(task, public_tests):
        test = task.tests[i]
        args = parse_input(test.input)
        if test.has_expected and not isinstance(args, str):
            secrets.append(Secret(i, args, test.expected))
    if not secrets:
        return []
    return find_leaks(kind.shown_text(task, public_tests), secrets, code=CODE_PARTS)


def run_gates(
    validator: Validator, task: Task, public_tests: int = DEFAULT_PUBLIC_TESTS, *, full: bool = False
) -> ValidationReport:
    """A proposed task's gates in order (docs/records.md): its kind's, with ``leaks_hidden_test`` after the
    static reasons (``BEFORE_LEAKS``) and before every reason that runs the reference; first of all,
    ``no_reference`` for a judge-only task (an imported problem without a usable solution).

    A leak in the expected values the author gave is decided before anything runs (the sandbox is
    not spent on the task) unless ``full`` (``verify``: the reference runs on every test whatever
    the reason); one in values the reference fills is found on the filled task, and takes the place
    of a later reason. An imported benchmark's task (judged by its own asserts) is never rejected
    for it: its leaks are reported where it is solved or evaluated.
    """
    from ..leaks import describe
    from ..validation import ValidationReport

    kind = get_kind(task.kind)
    if task.judge_only:  # an imported problem without a usable solution: nothing for the gates to run
        detail = "judge-only: the task has no reference_code to run (spade solve and evaluate --samples judge answers)"
        return ValidationReport(task.task_id, False, NO_REFERENCE, detail, "error", 0, len(task.tests))
    if task.shows_examples:
        return kind.gates(validator, task)
    if not full:
        found = leaks(task, public_tests)
        if found and _static_ok(validator, task):
            return ValidationReport(task.task_id, False, LEAK_REASON, describe(found), "error", 0, len(task.tests))
    report = kind.gates(validator, task)
    if report.reason in BEFORE_LEAKS:
        return report
    found = leaks(report.task or task, public_tests)
    if not found:
        return report
    return replace(report, valid=False, reason=LEAK_REASON, detail=describe(found), behaviour=None)


def _static_ok(validator: Validator, task: Task) -> bool:
    """Whether ``task`` passes the static gates (``BEFORE_LEAKS``), checked by validation's own
    ``Validator.static_reason`` without running anything: only then may a leak be its reason before
    the gates run."""
    return validator.static_reason(task) is None


def mark_leaks(tasks: Sequence[Task], public_tests: int = DEFAULT_PUBLIC_TESTS) -> tuple[list[Task], list[str]]:
    """``tasks`` as given, each one whose shown text carries hidden tests marked with their indices
    in ``meta["leaks_hidden_test"]`` (a mark an earlier run left is replaced), and the ids of the
    marked ones. For tasks judged as written (``solve``, ``evaluate``): reported, never rejected.

    Each result is kept in the user's cache (``LEAK_CACHE``), so a task file judged again (an evaluation
    per checkpoint; ``spade import`` checks the tasks it writes) is not searched again."""
    from .._util import cache

    out: list[Task] = []
    ids: list[str] = []
    for task in tasks:
        meta = {k: v for k, v in task.meta.items() if k != LEAK_REASON}
        key = _leak_key(task, meta, public_tests)
        found = cache.load(LEAK_CACHE, key) if key else None
        if not _test_indices(found, len(task.tests)):
            found = sorted({leak.test for leak in leaks(task, public_tests)})
            if key:
                cache.store(LEAK_CACHE, key, found)
        if found:
            meta[LEAK_REASON] = found
            ids.append(task.task_id)
        out.append(task if meta == task.meta else task.model_copy(update={"meta": meta}))
    return out, ids


LEAK_CACHE = "leaks"
"""The namespace of ``mark_leaks``' results in the user's cache (``_util.cache``): a task searched once
is not searched again while it, the public tests' count and the detector stay as they were."""


def _leak_key(task: Task, meta: dict[str, Any], public_tests: int) -> str | None:
    """The cache key of ``task``'s leak check: the detector's sources, the count of public tests and the
    whole task (its meta without the mark); None when the detector's sources cannot be read."""
    import json

    from .._util import cache

    detector = _detector_digest()
    if detector is None:
        return None
    data = task.dump()
    data["meta"] = meta
    return cache.digest(detector, str(public_tests), json.dumps(data, sort_keys=True, default=repr))


@functools.cache
def _detector_digest() -> str | None:
    """A digest of what decides a leak: ``leaks.py`` and the kinds (what each shows and hides); None
    where the sources are not there to read (then nothing is cached)."""
    from .._util import cache

    here = Path(__file__).parent
    try:
        sources = [(here.parent / "leaks.py").read_bytes()] + [p.read_bytes() for p in sorted(here.glob("*.py"))]
    except OSError:
        return None
    return cache.digest(*sources)


def _test_indices(value: Any, tests: int) -> bool:
    """Whether a cached result is one ``mark_leaks`` could have stored: sorted distinct test indices."""
    return (
        isinstance(value, list)
        and all(type(i) is int and 0 <= i < tests for i in value)
        and value == sorted(set(value))
    )


def leak_note(ids: Sequence[str], shown: int = 10) -> str:
    """One line naming the tasks ``mark_leaks`` marked ('' when none)."""
    if not ids:
        return ""
    names = ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
    return (
        f"{len(ids)} task(s) show a hidden test with its answer in the text the solver reads, so their "
        f"results overstate what was solved (meta.{LEAK_REASON} lists the tests): {names}"
    )
