"""``bugfix``: the solver is shown a task's description, a buggy version of its reference and what the
public tests say about it, and writes the fixed code; it is judged on every test, hidden ones included.

The game (docs/bugfix.md): one player hides a bug the tests catch, the other finds and fixes it. A
bug-fix task is a function task (``reference_code`` and ``tests``, proven by induction's gates) with a
``buggy_code``: the reference broken by a few small edits, made by the generator model as injector or by
the language's procedural bug maker (``Language.bugs``). The solver never sees the reference, nor any
text that gives its changed lines away.

Gates, after induction's on the task itself, each its own reason (docs/records.md):

* ``bug_missing``: no buggy code; ``bug_invalid``: it does not compile, imports a banned module or does
  not define the entry point;
* ``bug_equivalent``: it is the reference once comments and layout are left out, or it passes every test
  and agrees with the reference on every probe input (``Validator.tell_apart``);
* ``bug_too_large``: it changes more than ``bugfix.max_changed_lines`` lines of the normalised program;
* ``bug_gives_away``: a comment it adds, a docstring it rewrites, its description or its symptom report
  tells the change (holds a line of the reference the buggy code lacks, or comments on the edit);
* ``bug_hangs``: it runs out of the run's test budget on a test: every attempt would pay for it;
* ``bug_not_caught``: it passes every test yet differs from the reference beyond them (the tests miss it);
* ``bug_breaks_all``: it fails every test (nothing left to debug but a rewrite);
* ``bug_not_shown``: it fails no public test, so the solver would see no symptom;
* ``duplicate``: the run already holds this bug on this reference (``duplicate_key``).

What the solver sees of the bug, its verdicts on the public tests and the end of its stderr, is measured
here once and kept in the task's ``meta["bug"]`` (with the maker, the edit families, the changed lines
and the diff, which is never shown), so every prompt of the task shows the same symptom.

A benchmark's task is a base too (``spade import --derive bugfix``, ``derive``): proven once by induction's
gates, its reference is broken by procedural bugs, tried in the order drawn until enough pass the bug's
gates (``bug_gates``, on the proven task): each kept bug is then caught by the benchmark's own tests,
shown by its examples, and leaves some test passing.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ..languages import DEFAULT_ANSWER_LANGUAGE, language_of
from .base import NO_REFERENCE, Derived, DeriveRequest, TaskKind, induction_text, public_indices, python_only
from .induction import KIND as INDUCTION
from .induction import check_answer as run_code
from .induction import extract_code, tool_code
from .queries import chosen_tests, malformed

if TYPE_CHECKING:
    from ..judge import Judge
    from ..types import ExecutionResult, Task
    from ..validation import ValidationReport, Validator

NAME: Final = "bugfix"
BUG_META: Final = "bug"
"""The key of ``Task.meta`` holding what the gates measured of the bug (see the module docstring)."""
GENERATOR_MAKER: Final = "generator"
"""``meta["bug"]["maker"]`` of a bug the generator model wrote."""
PROCEDURAL_MAKER: Final = "procedural"
"""``meta["bug"]["maker"]`` of a bug the language's procedural maker made (``Language.bugs``)."""
UNCHANGED: Final = "the answer is the buggy code, unchanged"
"""Why an answer that returns the buggy code as it was scores nothing, whatever tests it passes."""
BEHAVES_AS_BUG: Final = "the answer does on these tests just what the buggy code does"
"""Why an answer rewritten to behave as the buggy code on every chosen test scores nothing."""
STDERR_SHOWN_LINES: Final = 12
MAX_BUG_LINES_READ: Final = 2000
"""Lines of a reference or buggy code the bug gates read at most (a diff of more is slow, and a bug-fix
task is a function): longer is ``bug_too_large`` before any diff."""
SYMPTOM_CHARS: Final = 300
"""The longest ``symptom`` (one line, in a user's words)."""
MIN_SECRET_CHARS: Final = 4
"""A changed line of the reference shorter than this (``i += 1`` is longer) is not looked for in the
text around the bug: too short to tell anything apart."""
_WORDS = re.compile(r"[A-Za-z]{2,}")
_TRAILING_COMMENT = re.compile(r"\s+#.*$")


# -- the diff ------------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def changed_lines(task: Task) -> int | None:
    """How many lines the bug changes in the normalised program (``Language.normalised``): per block of
    the diff, the larger of the lines taken out and put in; None when either side does not parse."""
    lang = language_of(task)
    before, after = lang.normalised(task.reference_code), lang.normalised(task.buggy_code or "")
    if before is None or after is None:
        return None
    matcher = difflib.SequenceMatcher(a=_lines(before), b=_lines(after), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")


def secret_lines(task: Task) -> list[str]:
    """The reference's lines the buggy code lacks (stripped, comment-only lines left out): what a fix
    writes back, and what no text the solver reads may hold."""
    lines = (task.buggy_code or "").splitlines()
    # a line kept with a comment after it is kept (a "#" inside a string only loosens this)
    kept = {line.strip() for line in lines} | {_TRAILING_COMMENT.sub("", line).strip() for line in lines}
    out: list[str] = []
    for line in task.reference_code.splitlines():
        text = line.strip()
        if text and not text.startswith("#") and text not in kept and text not in out:
            out.append(text)
    return out


def bug_diff(task: Task) -> str:
    """The bug as a unified diff of the raw texts (kept in ``meta``, never shown to the solver)."""
    diff = difflib.unified_diff(
        task.reference_code.splitlines(), (task.buggy_code or "").splitlines(), "reference", "buggy", lineterm="", n=0
    )
    return "\n".join(diff)


def _replaced(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines of ``before`` a line diff takes out and the lines of ``after`` it puts in, in order."""
    a, b = before.splitlines(), after.splitlines()
    out: list[str] = []
    put: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            out += a[i1:i2]
            put += b[j1:j2]
    return out, put


def _diff_sides(diff: str) -> tuple[list[str], list[str]]:
    """A unified diff's taken-out and put-in lines (``bug_diff``'s shape: two header lines, then hunks)."""
    out: list[str] = []
    put: list[str] = []
    for n, line in enumerate(diff.splitlines()):
        if (n < 2 and line.startswith(("--- ", "+++ "))) or line.startswith("@@"):
            continue
        if line.startswith("-"):
            out.append(line[1:])
        elif line.startswith("+"):
            put.append(line[1:])
    return out, put


FIX_VIEW_LINES: Final = 12
"""Lines the report shows at most in each column of a fix (``beside_answer``): a rewrite is no small diff."""


def beside_answer(task: Task, code: str) -> list[tuple[str, list[str]]]:
    """The bug beside an answer's fix, for the report: the reference's lines the bug changed and the buggy
    lines (``meta["bug"]["diff"]``, else the diff now), and the lines the answer wrote in place of the buggy
    code's (none: it handed the bug back), each column at most ``FIX_VIEW_LINES`` lines."""
    diff = _bug(task).get("diff")
    reference, buggy = _diff_sides(diff if isinstance(diff, str) and diff else bug_diff(task))
    _, fixed = _replaced(task.buggy_code or "", code)
    columns = [("reference", reference), ("bug", buggy), ("fix", fixed)]
    return [(label, lines[:FIX_VIEW_LINES]) for label, lines in columns]


def duplicate_key(task: Task) -> str | None:
    """The same bug on the same reference: both programs normalised with their local names renamed alike
    (``Language.renamed``), hashed, so renaming a variable in both makes no new task."""
    lang = language_of(task)
    pair = lang.renamed(task.reference_code, task.buggy_code or "")
    if pair is None:
        return None
    return hashlib.sha256("\0".join(pair).encode()).hexdigest()[:32]


# -- gates ---------------------------------------------------------------------------------------


def _gives_away(task: Task) -> str | None:
    """Why the text around the bug tells the change, or None: a comment the buggy code adds (or a
    docstring it rewrites), or a changed line of the reference in its comments and strings, the
    description or the symptom report."""
    lang = language_of(task)
    bug = task.buggy_code or ""
    before = set(_lines(lang.prose(task.reference_code)))
    for line in _lines(lang.prose(bug)):
        if line not in before and (line.lstrip().startswith("#") or len(_WORDS.findall(line)) >= 3):
            return f"the buggy code adds the comment or text {line.strip()[:80]!r}: it may tell the change"
    said = lang.prose(task.reference_code)
    around = {"its comments and strings": lang.prose(bug), "the description": task.description}
    if task.symptom:
        around["the symptom report"] = task.symptom
    for secret in secret_lines(task):
        if len(secret) < MIN_SECRET_CHARS or secret in said:
            continue  # too short to tell, or the author's own words said it before any bug (the spec)
        for where, text in around.items():
            if secret in text:
                return f"{where} holds the reference's line {secret[:80]!r}, which the bug changed"
    return None


def static_bug_reason(validator: Validator, task: Task) -> tuple[str, str] | None:
    """The first gate of the bug decided without running anything, as (reason, detail), or None."""
    bug = task.buggy_code
    if not bug or not bug.strip():
        return "bug_missing", "a bug-fix task needs buggy_code: the reference with a bug in it"
    lang = language_of(task)
    found = lang.static_error(bug, task.entry_point, validator.banned_imports, task.entry_class)
    if found is not None:
        return "bug_invalid", f"the buggy code: {found[1]}"
    if task.symptom is not None and ("\n" in task.symptom.strip() or len(task.symptom) > SYMPTOM_CHARS):
        return "bug_invalid", f"the symptom report must be one line of at most {SYMPTOM_CHARS} characters"
    longest = max(len(bug.splitlines()), len(task.reference_code.splitlines()))
    if longest > MAX_BUG_LINES_READ:
        return "bug_too_large", f"{longest} lines: a bug-fix task is a function of at most {MAX_BUG_LINES_READ} lines"
    size = changed_lines(task)
    if size == 0:
        return "bug_equivalent", "the buggy code is the reference once comments and layout are left out"
    if size is not None and size > validator.max_bug_lines:
        return (
            "bug_too_large",
            f"the bug changes {size} lines of the program, at most {validator.max_bug_lines} allowed "
            "(bugfix.max_changed_lines): a fixer should hunt a bug, not rewrite the program",
        )
    give = _gives_away(task)
    if give is not None:
        return "bug_gives_away", give
    return None


def _stderr_tail(stderr: str) -> str:
    """The end of the buggy run's stderr as every prompt of the task shows it: clipped as feedback is."""
    from ..solver import stderr_tail

    return stderr_tail(stderr, STDERR_SHOWN_LINES)


def _public_run(validator: Validator, task: Task) -> ExecutionResult | None:
    """The buggy code's run on the tests the solver is shown (an imported task: on its examples), each
    verdict under the index the prompt lists it by; None when the solver is shown none."""
    if task.shows_examples:
        if not task.examples:
            return None
        from ..solver import examples_task

        return validator.judge(examples_task(task), task.buggy_code or "", None)
    public = public_indices(task, validator.public_tests)
    return validator.judge(task, task.buggy_code or "", public) if public else None


def gates(validator: Validator, task: Task) -> ValidationReport:
    """Induction's gates on the task, then the bug's (the module docstring), in that order."""
    from ..validation import ValidationReport

    bad = static_bug_reason(validator, task) if validator.static_reason(task) is None else None
    if bad is not None:
        return ValidationReport(task.task_id, False, bad[0], bad[1], "error", 0, len(task.tests))
    report = validator.validate(task)
    if not report.valid or report.task is None:
        return report
    return bug_gates(validator, report.task, report)


def bug_gates(validator: Validator, filled: Task, proven: ValidationReport) -> ValidationReport:
    """The bug's gates that run code, on ``filled``: a bug-fix task whose reference and tests induction's
    gates already proved, its expected values filled (``proven``: their report, on this task or on the
    task its bug was made in, so ``derive`` proves a base once for all its bugs). The static gates
    (``static_bug_reason``) come first, and are the caller's. A valid report carries the task with
    ``meta["bug"]`` measured."""
    # every test, the check script of an imported benchmark counting as one more (``runner.run_check``)
    total = len(filled.tests) + (filled.check_code is not None)
    buggy = filled.buggy_code or ""
    # the run's test budget, as the reference had; one timeout ends the run: the bug hangs, and the
    # tests after it would each wait as long
    every = replace(validator.judge, max_timeouts=1)(filled, buggy, None)
    failed = [r.index for r in every.test_results or [] if not r.passed]
    if every.load_error is not None and not failed:
        failed = list(range(total))

    def rejected(reason: str, detail: str) -> ValidationReport:
        return replace(proven, task_id=filled.task_id, valid=False, reason=reason, detail=detail, behaviour=None)

    hung = [r.index for r in every.test_results or [] if r.status == "timeout"]
    if hung or every.status == "timeout":
        where = f"test {hung[0]}" if hung else "its tests"
        return rejected("bug_hangs", f"the buggy code runs out of time on {where}: every attempt would wait as long")
    if not failed:
        verdict = validator.tell_apart(filled, buggy)
        if verdict == "real":
            return rejected("bug_not_caught", "the buggy code passes every test, yet differs from the reference")
        if verdict == "equivalent":
            return rejected(
                "bug_equivalent", "the buggy code passes every test and agrees with the reference on every probe input"
            )
        return rejected(
            "undecided",
            "the buggy code passes every test; whether it differs from the reference beyond them cannot be decided",
        )
    if len(failed) >= total:
        return rejected(
            "bug_breaks_all", f"the buggy code fails all {total} tests: nothing is left to debug but a rewrite"
        )
    shown = _public_run(validator, filled)
    shown_results = (shown.test_results or []) if shown is not None else []
    if shown is None or (all(r.passed for r in shown_results) and shown.load_error is None):
        return rejected(
            "bug_not_shown",
            f"the buggy code fails {len(failed)} of {total} tests, none the solver is shown: it would see no symptom",
        )
    meta = dict(filled.meta)
    given = meta.get(BUG_META) or {}
    # a generator's answer may write any meta: only a task made outside the loop (derived) names its maker
    maker = GENERATOR_MAKER if filled.source == "generated" else given.get("maker", GENERATOR_MAKER)
    told = list(given.get("edits") or [])
    found = list(language_of(filled).edit_families(filled.reference_code, buggy))
    meta[BUG_META] = {
        **given,
        "maker": maker,
        # the procedural maker knows its edits; a model's bug is classified, what it said of it the fallback
        "edits": told if maker == PROCEDURAL_MAKER and told else found or told,
        "changed_lines": changed_lines(filled),
        "diff": bug_diff(filled),
        "failed_tests": len(failed),
        "shown": [{"index": r.index, "passed": r.passed, "output": r.output, "error": r.error} for r in shown_results],
        "stderr": _stderr_tail(shown.stderr),
    }
    return replace(proven, task_id=filled.task_id, task=filled.model_copy(update={"meta": meta}))


# -- derived from a task of a benchmark ----------------------------------------------------------

CANDIDATES_PER_TASK: Final = 6
"""Candidate bugs drawn per bug-fix task wanted from a base: many fall to a gate (no test catches them,
they break every test, no example shows them), so ``derive`` draws this many times more than it keeps."""
NOT_A_FUNCTION: Final = "not_a_function"
"""Why ``derive`` makes no bug in a base that is not a function written from its description (a whole
program, a query task): a bug-fix task is induction's task with a bug."""
NO_CANDIDATE: Final = "no_candidate"
"""Why ``derive`` makes no bug in a base whose reference offers the bug maker no edit."""
NO_BUG_KEPT: Final = "no_bug_kept"
"""Why ``derive`` made no task of a base: every candidate bug fell to a gate (``Derived.rejected`` says which)."""


def derive(validator: Validator, base: Task, request: DeriveRequest) -> Derived:
    """Up to ``request.per_task`` bug-fix tasks made out of ``base``, a function task with a reference (an
    imported benchmark's): the base proven once by induction's gates, then procedural bugs of its reference
    (``Language.bugs``, 1 to ``max_edits`` edits each, keyed by the seed and the base's id) tried in the
    order drawn, the first that pass every bug gate kept, as ``<task_id>/bug<j>`` (from 1). Each keeps the
    base's statement, tests, examples and check script; ``meta["base_task"]`` names the base."""
    if base.judge_only:
        return Derived(skipped=NO_REFERENCE, detail="judge-only: no reference to put a bug in")
    if base.kind != INDUCTION.name or not base.entry_point:
        return Derived(skipped=NOT_A_FUNCTION, detail=f"a {base.kind} task: bugs are made in a function's reference")
    proven = validator.validate(base)
    if not proven.valid or proven.task is None:
        return Derived(skipped=proven.reason or "invalid", detail=proven.detail)
    filled = proven.task
    key = f"{request.seed}:{filled.task_id}"
    drawn = language_of(filled).bugs(
        filled.reference_code, request.per_task * CANDIDATES_PER_TASK, request.max_edits, key, min_edits=1
    )
    if not drawn:
        return Derived(skipped=NO_CANDIDATE, detail="the bug maker finds no edit to make in the reference")
    kept: list[Task] = []
    rejected: Counter[str] = Counter()
    for bug in drawn:
        if len(kept) == request.per_task:
            break
        candidate = filled.model_copy(
            update={
                "task_id": f"{filled.task_id}/bug{len(kept) + 1}",
                "kind": NAME,
                "buggy_code": bug.source,
                "meta": {
                    **filled.meta,
                    "base_task": filled.task_id,
                    BUG_META: {"maker": PROCEDURAL_MAKER, "edits": list(bug.edits)},
                },
            }
        )
        why = static_bug_reason(validator, candidate)
        checked = bug_gates(validator, candidate, proven) if why is None else None
        if checked is not None and checked.valid and checked.task is not None:
            kept.append(checked.task)
        else:
            rejected[why[0] if why is not None else (checked.reason if checked else None) or "invalid"] += 1
    if not kept:
        return Derived(
            skipped=NO_BUG_KEPT, detail=f"none of {len(drawn)} candidate bugs passed the gates", rejected=rejected
        )
    return Derived(tuple(kept), rejected=rejected)


# -- answers -------------------------------------------------------------------------------------


def check_answer(
    judge: Judge, task: Task, code: str, tests: Sequence[int] | None, *, language: str = DEFAULT_ANSWER_LANGUAGE
) -> ExecutionResult:
    """The fix run on the task's tests as induction's code is. The buggy code handed back scores nothing
    (an ``error`` on every test), whatever tests the bug left passing: handed back as it was (the same
    program once comments and layout are left out, judged without running), or rewritten so that on every
    chosen test it does just what the bug does (a ``pass`` added, a variable renamed: the buggy code then
    runs beside it, only when the answer fails some test, so a fix costs one run)."""
    python_only("bugfix", language)
    lang = language_of(task)
    mine = lang.normalised(code)
    if task.buggy_code and mine is not None and mine == lang.normalised(task.buggy_code):
        return malformed(task, chosen_tests(task, tests), UNCHANGED)
    result = run_code(judge, task, code, tests)
    if not task.buggy_code or result.all_passed or not result.test_results:
        return result
    bug = run_code(judge, task, task.buggy_code, tests)
    if _same_verdicts(result, bug):
        return malformed(task, chosen_tests(task, tests), BEHAVES_AS_BUG)
    return result


def _same_verdicts(a: ExecutionResult, b: ExecutionResult) -> bool:
    """Whether two runs gave every test the same verdict, output and error (a test neither loaded: alike)."""
    if (a.load_error is None) != (b.load_error is None):
        return False
    mine = {r.index: (r.status, r.output, r.error) for r in a.test_results or []}
    theirs = {r.index: (r.status, r.output, r.error) for r in b.test_results or []}
    return bool(mine) and mine == theirs


# -- prompts -------------------------------------------------------------------------------------


def _bug(task: Task) -> dict[str, Any]:
    found = task.meta.get(BUG_META)
    return found if isinstance(found, dict) else {}


def view(task: Task) -> dict[str, Any]:
    """The buggy code, the symptom report, and the buggy code's verdict on each test shown (by the
    test's index: ``observed[i]``), with the end of its stderr: what the gates measured."""
    bug = _bug(task)
    observed = {int(o["index"]): o for o in bug.get("shown") or [] if isinstance(o, dict) and "index" in o}
    return {
        "buggy_code": (task.buggy_code or "").rstrip("\n"),
        "symptom": task.symptom or "",
        "observed": observed,
        "bug_stderr": bug.get("stderr") or "",
        "entry_class": task.entry_class,
    }


def shown_text(task: Task, public_tests: int) -> dict[str, str]:
    """Induction's text (description, tags, public tests) and the buggy code and symptom report."""
    parts = {**induction_text(task, public_tests), "program": task.buggy_code or ""}
    if task.symptom:
        parts["symptom"] = task.symptom
    return parts


UNCLASSIFIED: Final = "unclassified"
"""The ``edit`` facet of a bug whose edits no family of the language's recognises (``Language.edit_families``)."""


def facets(task: Task) -> dict[str, list[str]]:
    """What metrics count a bug under: its ``maker`` (the generator's unless the gates or the maker said
    otherwise) and its ``edit`` families, as the gates measured them or, on a candidate not yet judged, as
    the language tells them (``UNCLASSIFIED`` when none is told)."""
    bug = _bug(task)
    edits = [str(e) for e in bug.get("edits") or []]
    if not edits and task.buggy_code:  # () when either side does not parse
        edits = list(language_of(task).edit_families(task.reference_code, task.buggy_code))
    return {"maker": [str(bug.get("maker") or GENERATOR_MAKER)], "edit": sorted(set(edits)) or [UNCLASSIFIED]}


def on_base(task: Task) -> bool:
    """A task of the run a bug can be made in: a function with a reference and tests that are its own
    (not an imported benchmark's asserts)."""
    return bool(task.entry_point) and not task.judge_only and not task.shows_examples


KIND = TaskKind(
    name=NAME,
    first_template="solver/bugfix_first.j2",
    repair_template="solver/bugfix_repair.j2",
    parse_answer=extract_code,
    gates=gates,
    check_answer=check_answer,
    view=view,
    shown_text=shown_text,
    summary="find and fix the bug in a broken version of the function",
    tool_parse=tool_code,
    own_fields=frozenset({"buggy_code", "symptom"}),
    required_fields=frozenset({"buggy_code"}),
    judge_fields=frozenset({"buggy_code"}),
    on_base=on_base,
    derive=derive,
    duplicate_key=duplicate_key,
    facets=facets,
    beside_answer=beside_answer,
    colour="#dc2626",
    sample_first={
        "task": {"description": "d", "entry_point": "f", "difficulty": 0.5, "tags": []},
        "public_tests": [{"input": "(1,)", "expected": "2"}],
        "buggy_code": "def f(x):\n    return x",
        "symptom": "",
        "observed": {0: {"index": 0, "passed": False, "output": "1", "error": None}},
        "bug_stderr": "",
        "entry_class": None,
    },
    sample_repair={
        "entry_point": "f",
        "entry_class": None,
        "turn": 2,
        "code": "def f(x):\n    return x\n",
        "status": "ok",
        "passed": 0,
        "total": 1,
        "failing": [{"input": "(1,)", "expected": "2", "output": "1", "error": None}],
        "stderr_tail": "",
        "buggy_code": "def f(x):\n    return x",
        "symptom": "",
        "observed": {},
        "bug_stderr": "",
    },
)
