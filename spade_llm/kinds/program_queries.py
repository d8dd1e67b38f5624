"""What the query kinds over whole programs (``program_deduction``, ``program_abduction``) share: the
answer's blocks, the gates around the ``program`` kind's, the leak finder, and the queries' text.

Both kinds ask the function query kinds' questions (``deduction``, ``abduction``) of a ``program`` task: the
reference is a whole program (``entry_point`` ""), each test a (stdin, expected stdout) pair, and each test
is one *query*: deduction shows its stdin and asks what the program prints, abduction shows what it
prints and asks for a stdin. So every test is secret (its answer is what is asked), the program is shown
and a judge needs it, and no query's answer is ever in a prompt (the leak gate reads ``find_leaks``).

**Answers** are one fenced block per query, its info string the kind's tag (each kind's ``TAGS``:
``output`` or ``stdout``, ``input`` or ``stdin``) and the query's number as the prompt numbers it, from 1:
```` ```output 2 ```` holds what the program prints for input 2, ```` ```input 2 ```` an input for output 2.
Fences count at the start of a line only (``fenced_lines``), as Markdown reads them. Blocks of another
tag (a ```` ```python ```` block quoting the program) are not answers; when no block has the kind's tag,
plain blocks (```` ``` ````, ```` ```text ````) are read instead. A block without a number fills the
first query left unanswered, the last ones written winning, as a numbered block for a query written
twice does (a model may draft, then answer). A block's body is the text between its fence line and the
closing fence: its last newline may be missing (the output rule ignores it; an input gets it back).
``parse_answer`` keeps the answer's blocks in one canonical form (``canonical``), which reads back the
same, so a trainer's reward and the loop read the same text.

**Gates** (``query_gates``): the ``program`` kind's, which prove the reference a sound program task
(it compiles, runs on every input within its limit and exits 0, prints the same twice, matches the
author's ``expected``, gets a time limit from its slowest run, and its ``input_validator``, when given,
accepts every test and rejects malformed inputs), with two differences: a query's stdin longer than
``MAX_QUERY_STDIN_CHARS`` is a ``bad_input`` (a query is read or written by hand, not a contest's large
case), and an ``input_generator`` is left out of the task (its draws are contest-sized: no query). Then
the kind's own ``weak_tests`` replaces the ``program`` kind's stand-ins, in the query's terms (the
function query kinds' ``with_own_gate``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ..languages import language_of
from ..sandbox.stdio import output_lines, same_output
from .base import free_text
from .program import gates as program_gates
from .queries import MAX_ANSWER_CHARS, MAX_ITEMS, MAX_OUTPUT_CHARS

if TYPE_CHECKING:
    from ..leaks import Leak
    from ..types import Task, TestCase
    from ..validation import ValidationReport, Validator

MAX_QUERY_STDIN_CHARS: Final = 2000
"""Longest stdin of a query: deduction shows it whole, abduction's solver writes one of its own."""
MAX_QUERY_OUTPUT_CHARS: Final = MAX_OUTPUT_CHARS
"""Longest output of a query (its lines as the output rule compares them): a prediction, or an output to
find an input for, must fit in a few lines."""
FENCE: Final = "```"
PLAIN_TAGS: Final = frozenset({"", "text", "txt", "plaintext", "plain"})
"""Info strings of a plain block: read as answers when no block carries the kind's tag."""
PROSE_PART: Final = "program's comments and strings"
QUERIES_PART: Final = "queries"
"""The part of ``shown_text`` that lists the queries' shown side (never searched for leaks: it shows one
side of each test only, and one test's output may be another's input)."""
LEAK_GAP_CHARS: Final = 80
"""How far apart a test's stdin and stdout may stand in a text for the pair to count as shown together."""
MIN_LEAK_INPUT_CHARS: Final = 2
"""A shorter stdin (one digit) is everywhere in a text: a pair around it counts only close together
(``SHORT_GAP_CHARS``, its stdout first after it, and at least 2 characters long)."""
SHORT_GAP_CHARS: Final = 24
"""How far after a one-character stdin its stdout may start (``7 prints 21``, ``n = 7 gives 21``)."""
MIN_VERBATIM_CHARS: Final = 8
"""A hidden side of two lines or more and at least this long (whitespace runs as one space) shown anywhere
in the description or tags is a leak on its own (an example's input or output block)."""

_OPEN = re.compile(r"[ \t]*```([^`]*)")
"""A line that opens a fenced block, and its info string."""
_INFO = re.compile(r"[ \t]*([A-Za-z]*)[ \t]*(?:#[ \t]*)?(\d{1,6})?[ \t]*:?[ \t]*\r?")


# -- answers -------------------------------------------------------------------------------------------


def fenced_lines(text: str) -> list[tuple[str, str]]:
    """(info string, body) of each fenced block whose fences stand at the start of a line (after blanks),
    as Markdown reads them: a ```` ``` ```` inside a sentence ("one ```output N block per input") opens
    nothing. A block closes at a line that ends with ```` ``` ````, whatever stands before it on that line
    (``6```` closes a block whose last line is ``6``, without its newline); an unclosed block runs to the
    end of the text. Linear in the text."""
    blocks: list[tuple[str, str]] = []
    info: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if info is None:
            opening = _OPEN.fullmatch(line)
            if opening is not None:
                info, body = opening.group(1), []
            continue
        stripped = line.rstrip()
        if stripped.endswith(FENCE):
            last = stripped[: -len(FENCE)].rstrip("`")
            blocks.append((info, "".join(b + "\n" for b in body) + (last if last.strip() else "")))
            info = None
        else:
            body.append(line)
    if info is not None:
        blocks.append((info, "\n".join(body)))
    return blocks


def read_blocks(text: str, tags: Sequence[str]) -> list[tuple[int | None, str]]:
    """(query number or None, body) of each answer block of ``text`` (``fenced_lines``): the blocks
    tagged with one of ``tags`` (the first is the kind's own), else the plain ones; the last ``MAX_ITEMS``."""
    tagged: list[tuple[int | None, str]] = []
    plain: list[tuple[int | None, str]] = []
    for info, body in fenced_lines(text):
        m = _INFO.fullmatch(info)
        if m is None:
            continue
        word, number = m.group(1).lower(), int(m.group(2)) if m.group(2) else None
        if word in tags:
            tagged.append((number, body))
        elif word in PLAIN_TAGS:
            plain.append((number, body))
    return (tagged or plain)[-MAX_ITEMS:]


def line_end(text: str) -> str:
    """``text`` ending with a newline (as it is when empty or already ending with one)."""
    return text if not text or text.endswith("\n") else text + "\n"


def canonical(blocks: Sequence[tuple[int | None, str]], tag: str) -> str:
    """The blocks written back, one fence each, tagged ``tag`` (and numbered when they were): reading
    the result with ``read_blocks`` gives the same blocks, up to a body's missing last newline."""
    return "".join(f"{FENCE}{tag}{'' if n is None else f' {n}'}\n{line_end(body)}{FENCE}\n" for n, body in blocks)


def answer_reader(tags: Sequence[str]) -> Callable[[str], str]:
    """A kind's ``parse_answer``: the answer blocks of a reply, canonical ('' when there is none)."""

    def parse_answer(text: str) -> str:
        return canonical(read_blocks(text, tags), tags[0])

    return parse_answer


def assign(task: Task, answer: str, tags: Sequence[str], what: str) -> dict[int, str] | str:
    """Each query's answer block body by test index, or why the answer holds none (``what``: the
    queries' name in that message, ``input`` or ``output``)."""
    blocks = read_blocks(answer, tags)
    if sum(len(body) for _, body in blocks) > MAX_ANSWER_CHARS:
        return f"the answer is longer than {MAX_ANSWER_CHARS} characters"
    found: dict[int, str] = {}
    bare: list[str] = []
    for number, body in blocks:
        if number is None:
            bare.append(body)
        elif 1 <= number <= len(task.tests):
            found[number - 1] = body  # the last block for a query wins
    missing = [i for i in range(len(task.tests)) if i not in found]
    if bare and missing:
        for i, body in zip(missing, bare[-len(missing) :], strict=False):
            found[i] = body
    if not found:
        return (
            f"no answer could be read: write one {FENCE}{tags[0]} N block per {what}, N its number "
            f"(1 to {len(task.tests)}), holding the whole {tags[0]}"
        )
    return found


def answer_of(tests: Sequence[TestCase], tag: str, side: Callable[[TestCase], str | None]) -> str:
    """The blocks of a perfect answer: each test's ``side`` (its stdin, or its expected stdout), numbered."""
    blocks = [(k + 1, text) for k, test in enumerate(tests) if (text := side(test)) is not None]
    return canonical(blocks, tag)


def printed(test: TestCase) -> str | None:
    """A test's expected stdout, None when it has none (a program task's expected value is text)."""
    return test.expected if test.has_expected and isinstance(test.expected, str) else None


def shown_output(text: str) -> str:
    """An output as prompts show it: the lines the output rule compares (trailing spaces and blank lines
    dropped)."""
    return "\n".join(output_lines(text))


def shown_input(text: str) -> str:
    """A stdin as a fenced block shows it: exact, but for its final newline, which the fence's line supplies."""
    return text[:-1] if text.endswith("\n") else text


# -- what the solver is shown ----------------------------------------------------------------------------


def shown_text(task: Task, queries: Sequence[str]) -> dict[str, str]:
    """The text a prompt shows of a task, by part: the description, the tags, the program, its prose and
    the queries' shown side (``queries``)."""
    parts = {**free_text(task), "program": task.reference_code}
    prose = language_of(task).prose(task.reference_code)
    if prose:
        parts[PROSE_PART] = prose
    parts[QUERIES_PART] = "\n\n".join(queries)
    return parts


def _spaced(text: str) -> str:
    return " ".join(text.split())


def find_leaks(task: Task, *, hidden_input: bool) -> list[Leak]:
    """The queries whose answer the solver's text gives away, the first place each shows: in the
    description, the tags or the program's comments and strings, the test's stdin and its stdout within
    ``LEAK_GAP_CHARS`` of each other, in either order (whole tokens, whitespace runs as one space; a
    one-character stdin only with its stdout right after it, ``SHORT_GAP_CHARS``); or, in
    the description or tags, the hidden side alone (``hidden_input``: the stdin, else the stdout) when it
    spans two lines or more and ``MIN_VERBATIM_CHARS`` (an example block). The program's code is what the
    solver reads to answer, and the queries show one side each: neither is searched."""
    searched = {part: text for part, text in shown_text(task, ()).items() if part not in ("program", QUERIES_PART)}
    texts = {part: _spaced(text) for part, text in searched.items()}
    found: list[Leak] = []
    for i, test in enumerate(task.tests):
        output = printed(test)
        if output is None:
            continue
        given, answer = _spaced(test.input), _spaced(output)
        hidden_raw = test.input if hidden_input else output
        if not (given if hidden_input else answer):
            continue
        leak = _tied(i, given, answer, texts) or _verbatim(i, hidden_raw, texts)
        if leak is not None:
            found.append(leak)
    return found


def _whole(text: str) -> str:
    """``text`` as a regex matching it as whole tokens (no letter or digit glued to either end)."""
    return rf"(?<!\w){re.escape(text)}(?!\w)"


def _tied(i: int, given: str, answer: str, texts: dict[str, str]) -> Leak | None:
    from ..leaks import Leak

    short = len(given) < MIN_LEAK_INPUT_CHARS
    if not given or not answer or (short and len(answer) < 2):
        return None
    gap = f".{{0,{SHORT_GAP_CHARS if short else LEAK_GAP_CHARS}}}?"
    forms = [f"{_whole(given)}{gap}{_whole(answer)}"] + ([] if short else [f"{_whole(answer)}{gap}{_whole(given)}"])
    pattern: re.Pattern[str] | None = None
    for part, text in texts.items():
        if given not in text or answer not in text:
            continue  # shown nowhere: no pattern to build
        pattern = pattern or re.compile("|".join(forms), re.S)
        match = pattern.search(text)
        if match:
            return Leak(i, part, match.start(), "io", match.group(0)[:120])
    return None


def _verbatim(i: int, hidden: str, texts: dict[str, str]) -> Leak | None:
    from ..leaks import Leak

    spaced = _spaced(hidden)
    if len([line for line in hidden.split("\n") if line.strip()]) < 2 or len(spaced) < MIN_VERBATIM_CHARS:
        return None
    for part in ("description", "tags"):
        text = texts.get(part, "")
        if spaced in text:
            match = re.search(_whole(spaced), text)
            if match:
                return Leak(i, part, match.start(), "verbatim", match.group(0)[:120])
    return None


# -- gates -------------------------------------------------------------------------------------------------


def _compiles(validator: Validator, task: Task) -> bool:
    """Whether the reference and the input validator pass the static checks (``program``'s first gates)."""
    language = language_of(task)
    codes = (task.reference_code, task.input_validator)
    return all(language.static_error(c, "", validator.banned_imports) is None for c in codes if c is not None)


def _query_inputs(task: Task, shown: bool) -> str | None:
    """Why a query's stdin cannot be one (too long; for a kind that shows it, holding a fence), or None."""
    for i, test in enumerate(task.tests):
        if len(test.input) > MAX_QUERY_STDIN_CHARS:
            return f"test {i}: the input is {len(test.input)} characters, at most {MAX_QUERY_STDIN_CHARS} for a query"
        if shown and FENCE in test.input:
            return f"test {i}: the input holds {FENCE} and cannot be shown in a fenced block"
    return None


def query_outputs(task: Task) -> str | None:
    """Why a query's output cannot be written in a reply or shown in a prompt, or None: longer than
    ``MAX_QUERY_OUTPUT_CHARS`` (as the output rule reads it), or holding a fence."""
    for i, test in enumerate(task.tests):
        text = shown_output(printed(test) or "")
        if len(text) > MAX_QUERY_OUTPUT_CHARS:
            size = len(text)
            return f"query {i}: the output is {size} characters long, at most {MAX_QUERY_OUTPUT_CHARS} can be shown"
        if FENCE in text:
            return f"query {i}: the output holds {FENCE} and cannot be written in a fenced block"
    return None


def all_print_alike(task: Task) -> bool:
    """Whether every query's expected stdout is the same by the output rule (with more than one query)."""
    outputs = [printed(t) or "" for t in task.tests]
    return len(outputs) > 1 and all(same_output(outputs[0], o) for o in outputs[1:])


def query_gates(
    validator: Validator, task: Task, own: Callable[[Validator, Task], str | None], *, input_shown: bool
) -> ValidationReport:
    """The ``program`` kind's gates (an ``input_generator`` left out), ``bad_input`` for a query's stdin
    (``_query_inputs``), then ``own``: the kind's ``weak_tests`` verdict on the filled task, in place of
    the ``program`` kind's stand-ins."""
    from ..validation import ValidationReport

    if task.input_generator is not None:
        task = task.model_copy(update={"input_generator": None})
    bad = _query_inputs(task, input_shown)
    if bad is not None and _compiles(validator, task):
        return ValidationReport(task.task_id, False, "bad_input", bad, "error", 0, len(task.tests))
    report = program_gates(validator, task, mutants=False)
    if report.reason not in (None, "weak_tests") or report.task is None:
        return report
    weak = own(validator, report.task)
    if weak is not None:
        return replace(report, valid=False, reason="weak_tests", detail=weak, status="error")
    return replace(report, valid=True, reason=None, detail="", status="passed")


# -- the template check's samples --------------------------------------------------------------------------

SAMPLE_PROGRAM: Final = "n = int(input())\nprint(n + 1)"
SAMPLE_TASK: Final[dict[str, Any]] = {"description": "d", "entry_point": "", "difficulty": 0.5, "tags": []}
SAMPLE_PUBLIC: Final[list[dict[str, Any]]] = [{"input": "1\n", "expected": "'2\\n'", "expected_text": "2\n"}]
