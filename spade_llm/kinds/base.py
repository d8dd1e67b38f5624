"""What every task kind is and shares: the ``TaskKind`` interface and the reading of fenced blocks.

The kind modules (``induction``, ``deduction``, ``abduction``, ``program`` and the two query kinds over
programs) import this module, never the package: ``spade_llm.kinds`` imports them (lazily, by name), so
no import goes both ways.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from ..languages import DEFAULT_ANSWER_LANGUAGE, PYTHON, get_toolchain, language_of

if TYPE_CHECKING:
    from ..judge import Judge
    from ..leaks import Leak
    from ..types import ExecutionResult, Task, TestCase, TestResult
    from ..validation import ValidationReport, Validator

FieldTests = Literal["call", "stdin"]
"""The field's two shapes of code tests (verl's ``prime_code``, LiveCodeBench, SandboxFusion): ``call``, a
function called by name on JSON arguments (``fn_name``, LiveCodeBench's ``functional``); ``stdin``, a whole
program fed a test's input on stdin and judged by what it prints."""
CALL_TESTS: Final[FieldTests] = "call"
STDIN_TESTS: Final[FieldTests] = "stdin"

CODE_TAGS: Final = PYTHON.fence_tags
"""Fence tags of an answer's code: the tasks' language's (Python for every task so far)."""
"""Language tags of a fenced block that mark it as Python."""
DEFAULT_PUBLIC_TESTS: Final = 3
"""``solver.public_tests``'s default: what the leak gate assumes when a caller does not say."""
MIN_HIDDEN_TESTS: Final = 2
"""Tests a task always keeps hidden when it has enough: a solution that prints or raises with its
arguments cannot hand the hidden inputs to the model (``solver`` re-exports it)."""
NO_REFERENCE: Final = "no_reference"
"""The reason of a judge-only task (``Task.judge_only``): every gate runs the reference, and it has none."""


def _no_view(task: Task) -> dict[str, Any]:
    """Induction's prompts need nothing beyond what the solver already passes."""
    return {}


def _reference_code(task: Task) -> str:
    """Induction's perfect answer is the reference itself."""
    return task.reference_code


def strict_python_block(text: str) -> str:
    """The last fenced block tagged python (``python``, ``py``, ``python3``), or '' when there is none.

    Stricter than the loop's ``extract_code`` (no untagged block, no bare code): a reward for code
    without the asked-for block would teach the policy that the format does not matter."""
    return strict_block(text, CODE_TAGS)


def strict_block(text: str, tags: Sequence[str]) -> str:
    """The last fenced block tagged with one of ``tags`` (an answer language's ``fence_tags``), or ''."""
    bodies = [body for lang, body in fenced_blocks(text) if lang in tags]
    if not bodies or not bodies[-1].strip():
        return ""
    return bodies[-1].strip("\n") + "\n"


def lenient_block(text: str, tags: Sequence[str]) -> str:
    """The loop's reading of a whole program in another language than Python: the last fenced block tagged
    with one of ``tags``, else the last fenced block (a wrong tag then fails as the language's compile
    error, which the repair prompt shows), else ''."""
    blocks = fenced_blocks(text)
    tagged = [body for lang, body in blocks if lang in tags]
    body = tagged[-1] if tagged else blocks[-1][1] if blocks else ""
    return body.strip("\n") + "\n" if body.strip() else ""


def fenced_answer(text: str, language: str | None = None) -> tuple[str, str] | None:
    """(code, language) of a reply's answer as its fence tells it: the last block tagged for ``language``
    when one is named, else the last block whose tag is one of an answer language's (``languages.TOOLCHAINS``'
    ``fence_tags``); None when there is no such block."""
    from ..languages import TOOLCHAINS

    if language is not None:
        body = strict_block(text, get_toolchain(language).fence_tags)
        return (body, language) if body else None
    by_tag = {tag: name for name, toolchain in TOOLCHAINS.items() for tag in toolchain.fence_tags}
    for tag, body in reversed(fenced_blocks(text)):
        if tag in by_tag and body.strip():
            return body.strip("\n") + "\n", by_tag[tag]
    return None


class CheckAnswer(Protocol):
    """A kind's ``check_answer``: an answer (already parsed) judged on the task's tests (a subset by index,
    or all), in its answer ``language`` (a name of ``languages.TOOLCHAINS``; only a kind with
    ``answer_languages`` takes another than Python)."""

    def __call__(
        self, judge: Judge, task: Task, code: str, tests: Sequence[int] | None, /, *, language: str = ...
    ) -> ExecutionResult: ...


def python_only(kind: str, language: str) -> None:
    """Refuse an answer language other than Python for a kind whose answers are Python (a function, a value).

    Raises:
        UserError: ``language`` is not Python.
    """
    if language != DEFAULT_ANSWER_LANGUAGE:
        from ..errors import UserError

        raise UserError(f"a {kind} task's answer is {DEFAULT_ANSWER_LANGUAGE}, not {language}: only whole programs "
                        "are answered in other languages")  # fmt: skip


def call_text(entry_point: str, test_input: str) -> str:
    """``f(1, [2])`` for the input ``(1, [2])`` (a 1-tuple shown without its comma)."""
    from ..sandbox.runner import parse_input

    args = parse_input(test_input)
    if isinstance(args, str):
        return f"{entry_point}{test_input}"
    return f"{entry_point}({', '.join(safe_repr(a) for a in args)})"


def safe_repr(value: Any) -> str:
    """``repr(value)``, or a placeholder for an int too long for ``repr`` (Python refuses past 4300 digits)."""
    try:
        return repr(value)
    except ValueError:
        return f"<{type(value).__name__} too long to print>"


def code_feedback_line(task: Task, test: TestCase, r: TestResult | None) -> str:
    """One public test's verdict as induction's repair prompt tells it: the call, and for a failure
    the expected value with what the code returned or raised (the public tests are shown)."""
    call = call_text(task.entry_point, test.input)
    if r is None:
        return f"- FAIL {call}: not run"
    if r.passed:
        return f"- PASS {call}"
    got = f"raised {r.error}" if r.error else f"got {r.output}"
    return f"- FAIL {call}: expected {test.expected_repr}, {got}"


def public_indices(task: Task, public_tests: int) -> list[int]:
    """The tests a solver is shown: the first ``public_tests`` (the task's own ``public_tests`` when
    set), at least one, and never so many that fewer than ``MIN_HIDDEN_TESTS`` stay hidden; none
    for a task seen through its examples (an imported benchmark). The one rule of the split:
    ``solver.split_tests`` (the solver, exports, rewards) and the leak gate both read it."""
    total = len(task.tests)
    if total == 0 or task.shows_examples:
        return []
    if task.public_tests is not None:
        public_tests = task.public_tests
    return list(range(max(1, min(public_tests, total - MIN_HIDDEN_TESTS))))


def same_case(a: TestCase, b: TestCase) -> bool:
    """Whether two tests are one: the same arguments (the same literal once read) and the same
    expected value (as the judge compares values: ``True`` is not ``1``)."""
    return _is_shown(a, _shown_cases([b]))


def _case_args(case: TestCase) -> str | None:
    """The arguments of ``case`` as ``same_case`` compares them (the literal read, then written back), or
    None when they cannot be one (no expected value, an unreadable input, an int too long to write)."""
    from ..sandbox.runner import parse_input

    if not case.has_expected:
        return None
    args = parse_input(case.input)
    if isinstance(args, str):
        return None
    try:
        return repr(args)
    except ValueError:
        return None


def _shown_cases(examples: list[TestCase]) -> dict[str, list[TestCase]]:
    """``examples`` by their arguments (``_case_args``): each read once, not once per test."""
    shown: dict[str, list[TestCase]] = {}
    for example in examples:
        args = _case_args(example)
        if args is not None:
            shown.setdefault(args, []).append(example)
    return shown


def _is_shown(test: TestCase, shown: dict[str, list[TestCase]]) -> bool:
    """``any(same_case(test, e) for e in examples)``, with ``shown`` from ``_shown_cases(examples)``."""
    from ..sandbox.verdict import matches

    args = _case_args(test) if shown else None
    if args is None:
        return False
    for example in shown.get(args, ()):
        if test.literal_only or example.literal_only:
            if type(test.expected) is type(example.expected) and test.expected == example.expected:
                return True
        elif matches(test.expected, example.expected):
            return True
    return False


def tests_after_public(task: Task, public_tests: int) -> list[int]:
    """Induction's hidden tests: those after the public ones; for a task seen through its examples
    (an imported benchmark), every assert but those an example shows (those are public already)."""
    if task.shows_examples:
        shown = _shown_cases(task.examples)
        return [i for i, t in enumerate(task.tests) if not _is_shown(t, shown)]
    return list(range(len(public_indices(task, public_tests)), len(task.tests)))


def every_test(task: Task, public_tests: int) -> list[int]:
    """The query kinds' hidden side is in every test (deduction's answers, abduction's inputs)."""
    return list(range(len(task.tests)))


def free_text(task: Task) -> dict[str, str]:
    """The text every kind's prompt may show of a task: its description and tags (a user's
    template may render them)."""
    parts = {"description": task.description}
    if task.tags:
        parts["tags"] = ", ".join(task.tags)
    return parts


def shown_cases(task: Task, cases: Sequence[TestCase]) -> str:
    """Test cases as the first prompt lists them: ``f(3,) -> 9``, one a line."""
    return "\n".join(f"{task.entry_point}{t.input} -> {t.expected_repr}" for t in cases if t.has_expected)


def induction_text(task: Task, public_tests: int) -> dict[str, str]:
    """What an induction prompt shows: the description, the tags, and the public tests (or an
    imported benchmark's examples): a hidden test that copies a public one is shown too."""
    parts = free_text(task)
    cases = task.examples if task.shows_examples else [task.tests[i] for i in public_indices(task, public_tests)]
    if cases:
        parts["public tests"] = shown_cases(task, cases)
    return parts


CODE_PARTS: Final = frozenset({"program"})
"""The parts of ``shown_text`` that are program code (only forms with a call are read there)."""


def program_text(task: Task, public_tests: int) -> dict[str, str]:
    """What a query kind's prompt shows as text: the description, the tags, the program's prose
    (its docstrings, comments and strings) and its code (an ``assert f(3) == 9`` in it). Its queries
    show one side of each test only (the call, or the output), so they cannot tie an input to its
    answer."""
    parts = {**free_text(task), "program": task.reference_code}
    prose = language_of(task).prose(task.reference_code)
    if prose:
        parts["program's comments and strings"] = prose
    return parts


@dataclass(frozen=True)
class DeriveRequest:
    """What ``spade import --derive`` asks of a kind's ``derive`` for each base task."""

    per_task: int
    """Derived tasks wanted from each base at most: the first candidates that pass the kind's gates."""
    max_edits: int
    """Edits one candidate's change may combine at most (``bugfix.max_bugs``); each has from 1 to this many."""
    seed: int = 0
    """With the base's id, the key the candidates are drawn from: the same file and seed, the same tasks."""


@dataclass(frozen=True)
class Derived:
    """What ``TaskKind.derive`` made of one base task."""

    tasks: tuple[Task, ...] = ()
    """The derived tasks, each past every gate of the kind, in the order drawn."""
    skipped: str | None = None
    """Why the base yielded no task (``no_reference``, a reason of its own gates, ``no_candidate``, ...)."""
    detail: str = ""
    """The words behind ``skipped``."""
    rejected: Mapping[str, int] = field(default_factory=dict)
    """Candidates turned down, by the gate's reason (``bug_not_caught``, ``bug_breaks_all``, ...)."""


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: the pieces the pipeline looks up by ``task.kind``."""

    name: str
    first_template: str
    """Template of the solver's first prompt."""
    repair_template: str
    """Template of a repair prompt after a failed attempt."""
    parse_answer: Callable[[str], str]
    """The model's answer text -> the answer to check ('' when there is none)."""
    gates: Callable[[Validator, Task], ValidationReport]
    """Proves a proposed task of this kind sound (the gates in order: docs/records.md, "Rejection reasons")."""
    check_answer: CheckAnswer
    """Checks an answer (already parsed) on the task's tests (a subset by index, or all), in its answer
    ``language`` (keyword; default Python): each test's verdict, as an ``ExecutionResult``."""
    summary: str = ""
    view: Callable[[Task], dict[str, Any]] = _no_view
    """Extra variables for this kind's first and repair templates (built from public information
    only: the program for deduction and abduction, and their queries)."""
    reference_answer: Callable[[Task], str] = _reference_code
    """The answer a perfect solver gives (``spade evaluate`` checks it when no samples are given)."""
    secret_tests: Callable[[Task, int], list[int]] = tests_after_public
    """Indices of the tests whose input and expected value a solver must never see together, given
    the run's ``solver.public_tests`` (the leak gate, ``kinds.leaks``): induction's hidden tests,
    every query of deduction (its answers) and abduction (its inputs)."""
    shown_text: Callable[[Task, int], dict[str, str]] = induction_text
    """The text a solver is shown of a task, by part (``description``, ``public tests``,
    ``program``...), given the run's ``solver.public_tests``: every task-dependent text a first
    prompt renders, so a leak in any template's rendering is in one of them."""
    public_answers_in_prompt: bool = True
    """Whether the first prompt shows the public tests' expected values (induction lists them). Where
    it does not (the query kinds: those values are the answers asked for), partial credit counts the
    public tests as shown only for an answer written after feedback told their verdicts
    (``evaluator.shown_tests``): a first answer is paid on every query it gets right."""
    flags_hardcoding: bool = True
    """Whether an answer that passes every public test and fails a hidden one is flagged
    ``hardcoded_suspect`` (the solver): so for induction, whose public answers are shown; for a
    query kind a wrong hidden prediction is a mistake, not a copied answer."""
    needs_reference: bool = False
    """Whether judging an answer needs the task's reference program: the query kinds' (deduction
    reads the program's outputs, abduction runs it), so their ground truth and reward rows carry it
    (and the task's ``input_validator``, when it has one: a program abduction's judge runs it too)."""
    judge_fields: frozenset[str] = frozenset()
    """The text fields of ``Task`` beyond its tests that ``check_answer`` reads (a bug fix's ``buggy_code``:
    an answer handing it back unchanged scores nothing), which a ground truth therefore carries
    (``rewards.groundtruth``), so a trainer's reward judges as the loop does. verl's built-in judges, which
    read tests alone, are given none of the kind's tasks (``sandbox_fusion``)."""
    own_fields: frozenset[str] = frozenset()
    """The kind-only ``Task`` fields (``generator.KIND_FIELDS``: a whole program's ``input_generator``,
    ``input_validator``, ``checker``; a bug fix's ``buggy_code``, ``symptom``) a generator's task of this
    kind keeps: those its gates prove and its judge or prompts use; the rest are dropped
    (``generator.parse_task``), since no gate of the kind would check them."""
    field_tests: FieldTests | None = CALL_TESTS
    """Which of the field's test shapes (``FieldTests``) this kind's tasks are: a ground truth of that
    shape (verl's ``prime_code``, LiveCodeBench's, SandboxFusion's) is read as a task of this kind
    (``rewards.field_formats``), an export writes this kind's tasks in it for verl's own judges
    (``groundtruth.sandbox_fusion_form``), and a Harbor folder's standalone judge checks it so
    (``export/harbor.py``). None: none of these (a query kind's answer is not a program)."""
    strict_parse: Callable[[str], str] | None = strict_python_block
    """A trainer reward's reading of a whole completion (``rewards.extract_answer``): for induction
    the last python-tagged block only, so the format is paid for; None: ``parse_answer``."""
    tool_parse: Callable[[str], str] | None = None
    """The reading of a tool argument (``trl``'s ``run_tests(code)``: the argument *is* the answer,
    so the reading is lenient); None: ``parse_answer``."""
    fill_expected: Callable[[Judge, Task, Sequence[int]], list[TestCase]] | None = None
    """The tests at these indices with their expected values taken from the reference's runs (``solve``
    and ``evaluate`` on tasks given without them), raising ``UserError`` naming a test the reference
    cannot answer; None: the reference's entry point called on each input (``tasksets/expected.py``)."""
    find_leaks: Callable[[Task, int], list[Leak]] | None = None
    """The hidden tests the solver's text shows with their answers, given the run's ``solver.public_tests``;
    None: the shared detector (``leaks.find_leaks``) on tests whose input is a literal tuple."""
    feedback_line: Callable[[Task, TestCase, TestResult | None], str] = code_feedback_line
    """One public test's verdict in a tool's feedback (``trl``), saying only what the kind's repair
    prompt may say."""
    feedback_stderr: bool = True
    """Whether a tool's feedback may show the end of the run's stderr (deduction runs nothing)."""
    required_fields: frozenset[str] = frozenset()
    """Of ``own_fields``, those every answer of this kind must write (a bug fix's ``buggy_code``): the
    ``json_schema`` response format requires them, with or without a base."""
    on_base: Callable[[Task], bool] | None = None
    """Whether a task of the run can be the *base* of a proposal of this kind, or None: this kind's
    proposals are written from scratch. A kind that makes its tasks out of a validated one (``bugfix``:
    the generator breaks a task's reference) is shown such a base by its prompt (``curriculum`` picks
    one of the run's accepted tasks per request), and its answer keeps the base's statement, reference
    and tests (``on_base_fields``), whatever the model wrote of them."""
    derive: Callable[[Validator, Task, DeriveRequest], Derived] | None = None
    """Tasks of this kind made out of a task from outside the run (``spade import --derive``), or None: this
    kind's tasks are not derived. From one base task (proven once by its own gates), the first
    ``DeriveRequest.per_task`` candidates that pass this kind's gates, drawn from the base's id and the
    seed; a base that yields none says why (``Derived.skipped``)."""
    duplicate_key: Callable[[Task], str | None] | None = None
    """What makes two tasks of this kind the same task, as a key (the duplicate gate: an accepted task with
    the same key is a copy), or None: the shared gate (similar reference code, or the same behaviour). A
    kind whose tasks share a reference (bugs of one function) keys them on what differs."""
    facets: Callable[[Task], Mapping[str, Sequence[str]]] | None = None
    """The labels metrics count a task of this kind under, by facet (a bug fix: its bug's ``maker`` and its
    ``edit`` families), read from a candidate as proposed and from the task as accepted: per label, how many
    were proposed, accepted, played and passed (``evaluator.facet_counts``); None: counted by kind alone."""
    beside_answer: Callable[[Task, str], Sequence[tuple[str, Sequence[str]]]] | None = None
    """What the report shows of an answer (its code) beside the task, as labelled columns of lines (a bug fix:
    the reference's lines the bug changed, the buggy lines, and the lines the answer wrote in their place),
    or None: nothing beyond the trajectory."""
    colour: str = "#2563eb"
    """The kind's colour in the report's charts."""
    sample_first: Mapping[str, Any] = field(default_factory=dict)
    """Sample variables of ``first_template`` (``spade prompts check`` renders a user's override with them)."""
    sample_repair: Mapping[str, Any] = field(default_factory=dict)
    """Sample variables of ``repair_template``, as ``sample_first``."""
    answer_languages: bool = False
    """Whether an answer is a whole program that may be written in any language of ``languages.TOOLCHAINS``
    (``program``): each episode is then asked in the language the run's ``curriculum.languages`` gives it
    (``kinds.mix.episode_language``), its prompts name that language, its answer is read from that
    language's fenced block and judged in it. False: always Python (a function, a value, a fix of Python)."""

    @property
    def sandbox_fusion(self) -> bool:
        """Whether verl's built-in judges (SandboxFusion, ``prime_code``) can judge it: code run on tests,
        and on nothing else (``judge_fields``)."""
        return self.field_tests is not None and not self.judge_fields

    def answer_language(self, language: str | None) -> str:
        """The language this kind's answer is in when ``language`` is asked: ``language`` (default Python)
        for a kind with ``answer_languages``.

        Raises:
            UserError: an unknown language, or one other than Python for a kind whose answers are Python.
        """
        language = language or DEFAULT_ANSWER_LANGUAGE
        get_toolchain(language)
        if not self.answer_languages:
            python_only(self.name, language)
        return language

    def read_answer(self, text: str, language: str = DEFAULT_ANSWER_LANGUAGE) -> str:
        """A model's reply's answer as the loop reads it ('' when there is none): Python's by ``parse_answer``,
        another language's by ``lenient_block`` on its fence tags."""
        if language == DEFAULT_ANSWER_LANGUAGE:
            return self.parse_answer(text)
        return lenient_block(text, get_toolchain(language).fence_tags)

    def read_strict(self, text: str, language: str = DEFAULT_ANSWER_LANGUAGE) -> str:
        """A completion's answer as a trainer's reward reads it ('' when there is none): in another language
        than Python, the last block tagged for it (``strict_block``)."""
        if language != DEFAULT_ANSWER_LANGUAGE:
            return strict_block(text, get_toolchain(language).fence_tags)
        return (self.strict_parse or self.parse_answer)(text)

    def read_tool_argument(self, text: str, language: str = DEFAULT_ANSWER_LANGUAGE) -> str:
        """A tool argument's answer ('' when there is none): the argument is the answer, a fenced block unwrapped."""
        if language != DEFAULT_ANSWER_LANGUAGE:
            return lenient_block(text, get_toolchain(language).fence_tags) or (
                text.strip("\n") + "\n" if text.strip() else ""
            )
        return (self.tool_parse or self.parse_answer)(text)

    def shown_tests(self, public_passed: int, public_total: int, *, after_feedback: bool) -> tuple[int, int]:
        """The public tests partial credit counts as *shown* for one answer, as
        ``evaluator.credited_fraction``'s last two arguments: (``public_passed``, ``public_total``)
        when the solver had seen their expected values, else (0, 0) (every test then counts).

        Induction's first prompt lists its public tests with their answers, so they are shown from
        the first turn; a query kind's (deduction, abduction) asks for those answers, so they are
        shown only to an answer written ``after_feedback`` told their verdicts (a repair turn: a
        prediction told right is known right, a yes/no one told wrong is told its answer). A first
        answer to a query task is paid on every query.

        >>> from spade_llm.kinds import get_kind
        >>> get_kind("induction").shown_tests(2, 3, after_feedback=False)
        (2, 3)
        >>> get_kind("deduction").shown_tests(2, 3, after_feedback=False)
        (0, 0)
        >>> get_kind("deduction").shown_tests(2, 3, after_feedback=True)
        (2, 3)
        """
        if after_feedback or self.public_answers_in_prompt:
            return public_passed, public_total
        return 0, 0


_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of each fenced block: a fence, a tag and the rest of its line, then
    the body up to the next fence or the end of the text. One pass with ``str.find``, linear."""
    blocks = []
    pos = 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            break
        newline = text.find("\n", start + 3)
        if newline < 0:
            break
        lang = _LANG.match(text, start + 3, newline)
        end = text.find("```", newline + 1)
        body = text[newline + 1 :] if end < 0 else text[newline + 1 : end]
        blocks.append((lang.group(1).lower() if lang else "", body))
        if end < 0:
            break
        pos = end + 3
    return blocks
