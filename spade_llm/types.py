"""The data that flows through the pipeline, with the field names docs/records.md describes.

Every record written to a run directory is one of these models dumped as one JSON line.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
    model_validator,
)

from .kinds.names import DEFAULT_KIND, KIND_NAMES, known_kind
from .languages.pyast import python_literal as python_literal
from .languages.python import PYTHON_ANSWERS

# the sandbox's records are plain dataclasses defined beside it (no pydantic: see ``sandbox/result.py``)
from .sandbox.result import ExecStatus as ExecStatus
from .sandbox.result import ExecutionResult as ExecutionResult
from .sandbox.result import TestResult as TestResult
from .sandbox.result import TestStatus as TestStatus

TaskKind = Annotated[str, AfterValidator(known_kind), WithJsonSchema({"type": "string", "enum": list(KIND_NAMES)})]
"""A kind's name (``kinds.names.KIND_NAMES``: the registry's one list); another is a validation error
naming the known ones."""
FinalStatus = Literal["passed", "failed", "error", "timeout"]


class _Record(BaseModel):
    """What every model here is: its pydantic schema is built on first use (``defer_build``), not at
    import, where building all of them cost every command ~55 ms though most use two or three."""

    model_config = ConfigDict(defer_build=True)


class TestCase(_Record):
    """One test: positional arguments as a Python literal tuple, and the expected output.

    ``expected`` absent (not in ``model_fields_set``) means "take the reference's output";
    an explicit ``null`` means the function must return ``None``.
    """

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    input: str
    expected: Any = None
    abs_tol: float | None = Field(default=None, gt=0)
    """Set for an imported benchmark's ``abs(f(x) - y) < eps``: a number passes within ``abs_tol`` of
    ``expected`` (strictly less), an ``int`` or a ``float``, never a ``bool``."""
    as_bool: bool = False
    """Set for an imported benchmark's ``assert f(x)`` / ``assert not f(x)``: the output's truth value
    is compared with ``expected`` (a bool); the output must still be of an exact builtin type."""
    python_eq: str | None = None
    """Set for an imported benchmark's ``assert f(x) == VALUE``: ``VALUE`` as a Python literal (``"(4, 6)"``),
    and the output passes when Python's ``==`` says it equals that value, as the benchmark's own harness
    judges (``[4, 6]`` is not ``(4, 6)``, ``21.0`` is ``21``, no float tolerance). The output is still
    an exact builtin value decoded outside the sandbox. ``expected`` is the same value's JSON form
    (shown, exported, searched for leaks); this field decides. A literal with no JSON form (a set,
    bytes, a complex number, a dict with int keys: CRUXEval's ``{1, 2}``) is written without
    ``expected``, and ``expected`` is then the literal's own Python value (``literal_only``)."""
    as_tuple: bool = False
    """With ``python_eq``, for ``assert tuple(f(x)) == tuple(VALUE)`` (or ``list``): the output, a
    list, tuple, str, bytes or dict, is turned into a tuple before it is compared."""
    allclose_atol: float | None = Field(default=None, gt=0)
    """With ``python_eq``, EvalPlus's tolerance (``spade import evalplus``): an output that is not ``==``
    the value still passes when it is of the value's type (of its length, a list or tuple) and
    ``numpy.allclose(output, value, rtol=1e-07, atol=allclose_atol)`` holds (``verdict.all_close``)."""
    tuple_as_list: bool = False
    """With ``python_eq``, LiveCodeBench's rule for its functional problems: an output that is a tuple
    (at the top, not within) is turned into a list before it is compared."""

    @property
    def has_expected(self) -> bool:
        return "expected" in self.model_fields_set

    @property
    def literal_only(self) -> bool:
        """Whether ``python_eq``'s literal has no JSON form: ``expected`` is then that literal's Python
        value (a set, bytes...), which a task file does not write (``python_eq`` alone carries it), and
        only a consumer that judges by ``python_eq`` can use the test (docs/records.md)."""
        return self.python_eq is not None and _json_text(self.expected) is None

    @property
    def expected_repr(self) -> str:
        """The expected value as prompts and feedback write it: the benchmark's own literal when its rule
        is Python's ``==`` (``(1, 3)``, ``{2, 4}``, ``b'ab'``: not the JSON form's ``[1, 3]``), else its
        ``repr``."""
        return self.python_eq if self.python_eq is not None else repr(self.expected)

    @model_validator(mode="after")
    def _python_eq_is_expected_as_a_literal(self) -> TestCase:
        if self.python_eq is None:
            if self.as_tuple or self.tuple_as_list:
                raise ValueError("as_tuple and tuple_as_list need python_eq")
            if self.allclose_atol is not None:
                raise ValueError("allclose_atol needs python_eq")
            return self
        if self.abs_tol is not None or self.as_bool:
            raise ValueError("python_eq is a rule of its own: not with abs_tol or as_bool")
        if self.allclose_atol is not None and self.as_tuple:
            raise ValueError("allclose_atol is EvalPlus's rule: not with as_tuple")
        value = python_literal(self.python_eq)
        as_json = _json_text(value)
        if as_json is None:  # no JSON form: expected is the literal's own value, never a JSON stand-in
            if not self.has_expected:
                self.expected = value  # marks it set: the test's answer is known
            elif not (type(self.expected) is type(value) and self.expected == value):
                raise ValueError(f"python_eq {self.python_eq[:60]!r} has no JSON form: leave expected out")
            return self
        if not self.has_expected or as_json != _json_text(self.expected):
            raise ValueError(f"python_eq {self.python_eq[:60]!r} is not expected's value as a Python literal")
        return self

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """As JSON, the test as a record holds it (``dump``): a literal-only ``expected`` is left out."""
        return self.dump() if info.mode_is_json() else handler(self)

    def dump(self) -> dict[str, Any]:
        data: dict[str, Any] = {"input": self.input}
        if self.has_expected and not self.literal_only:
            data["expected"] = self.expected
        if self.abs_tol is not None:  # only imported benchmarks carry these: other records keep their documented shape
            data["abs_tol"] = self.abs_tol
        if self.as_bool:
            data["as_bool"] = True
        if self.python_eq is not None:
            data["python_eq"] = self.python_eq
        if self.as_tuple:
            data["as_tuple"] = True
        if self.allclose_atol is not None:
            data["allclose_atol"] = self.allclose_atol
        if self.tuple_as_list:
            data["tuple_as_list"] = True
        return data


def _json_text(value: Any) -> str | None:
    """``value`` as canonical JSON text (tuples as lists, ``1`` and ``1.0`` and ``true`` apart); None
    when it has none (a set, bytes, NaN, a dict with a key that is no ``str``: JSON would turn ``{1: 2}``
    into ``{"1": 2}``, which Python's ``==`` tells apart)."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False) if _str_keys(value) else None
    except (TypeError, ValueError, RecursionError):
        return None


def _str_keys(value: Any) -> bool:
    """Whether every dict within ``value`` (lists and tuples walked) has only ``str`` keys."""
    if isinstance(value, dict):
        return all(type(k) is str and _str_keys(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_str_keys(v) for v in value)
    return True


class Task(_Record):
    """A coding task: statement, reference solution and tests (docs/records.md, "tasks.jsonl")."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    kind: TaskKind = DEFAULT_KIND
    description: str
    entry_point: str
    reference_code: str
    tests: list[TestCase]
    entry_class: str | None = None
    """Set when the entry point is a method of this class (LeetCode's ``class Solution``): the class is
    instantiated once, with no arguments, and each test calls the method of that one instance."""
    prelude: str | None = None
    """Code the judge puts before every answer, in its module: names a benchmark's own harness gives
    its answers without an import (LiveCodeBench's ``from typing import *``, ``from collections import
    *``...)."""
    check_code: str | None = None
    """An imported benchmark's asserts that could not become ``tests`` (loops, random inputs, helper
    calls), as a script defining ``check(candidate)``. It runs in a process of its own that the answer
    cannot reach: ``candidate`` there sends plain arguments to the answer's process and gets plain
    values back (see ``sandbox/harness.py``)."""
    examples: list[TestCase] = Field(default_factory=list)
    """Examples shown to the solver and fed back after each turn that never decide a verdict (an
    imported benchmark's docstring examples, which can be wrong); only ``tests`` or ``check_code`` do."""
    public_tests: int | None = Field(default=None, ge=0)
    """How many of the tests, the first ones, the solver may see; None: the run's ``solver.public_tests``.
    Imported benchmarks set 0: their asserts are all hidden and their ``examples`` are shown instead."""
    input_generator: str | None = None
    """A ``program`` task's input generator: a program that reads ``SIZE SEED`` on stdin and prints one
    valid input of about that size; the gates add tests drawn from it at several sizes."""
    input_validator: str | None = None
    """A ``program`` task's input validator: a program that reads an input on stdin and exits 0 exactly
    when the constraints allow it."""
    checker: str | None = None
    """A ``program`` task's checker, where several outputs are right: a Python program run in the sandbox
    that reads one JSON object on stdin, ``{"input": ..., "expected": ..., "actual": ...}`` (the test's
    input, the reference's output and the answer's, as strings), and exits 0 to accept ``actual``,
    non-zero to reject it. It then decides each test in place of the output rule (``sandbox/stdio.py``);
    the gates prove it accepts the reference's outputs and rejects the trivial stand-ins'."""
    buggy_code: str | None = None
    """A ``bugfix`` task's broken version of ``reference_code``: what the solver is shown and must fix (the
    reference never is). Small edits the tests catch; the gates prove it (``kinds/bugfix.py``)."""
    symptom: str | None = None
    """A ``bugfix`` task's one-line report of what goes wrong, in a user's words (the injector's, optional)."""
    time_limit_s: float | None = Field(default=None, gt=0)
    """CPU seconds each test's run may take (a whole program's: the ``program`` kind, a contest's limit);
    None: the run's ``sandbox.test_timeout_s``."""
    difficulty: float = Field(default=0.5, ge=0.0, le=1.0)
    tags: list[str] = Field(default_factory=list)
    source: str = "generated"
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _a_method_or_prelude_only_judged(self) -> Task:
        # The judge follows entry_class and prelude; the gates that run a reference (mutants, probes) and
        # the check-code path do not yet, so a task with either must be judge-only and without check code.
        if (self.entry_class is not None or self.prelude) and (self.reference_code.strip() or self.check_code):
            raise ValueError("entry_class and prelude are for judge-only tasks: no reference_code, no check_code")
        return self

    @property
    def shows_examples(self) -> bool:
        """Whether the solver sees this task through its ``examples`` and none of its tests: an imported
        benchmark, whose asserts (``tests`` and ``check_code``) are all hidden and decide the verdict."""
        return self.check_code is not None or self.public_tests == 0

    @property
    def judge_only(self) -> bool:
        """Whether the task has no reference (``reference_code`` blank): an imported problem published
        without a usable solution. Answers are judged on its tests as any task's; what would run the
        reference (the gates, ``evaluate`` without samples) says so instead (docs/records.md)."""
        return not self.reference_code.strip()

    def dump(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["tests"] = [t.dump() for t in self.tests]
        for optional in (
            "entry_class",
            "prelude",
            "public_tests",
            "time_limit_s",
            "input_generator",
            "input_validator",
            "checker",
            "buggy_code",
            "symptom",
        ):  # unset: left out (docs/records.md)
            if data.get(optional) is None:
                data.pop(optional, None)
        if self.examples:
            data["examples"] = [t.dump() for t in self.examples]
        else:
            data.pop("examples", None)  # records without examples keep their documented shape
        return data


class TokenUsage(_Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
        )


class Message(_Record):
    role: Literal["system", "user", "assistant"]
    content: str


class Attempt(_Record):
    """One solver turn: the model's answer, the code in it, and how that code did.

    ``result`` holds every test's verdict: the public ones from the execution whose output fed the
    next prompt, the hidden ones from a separate execution whose output never reaches a prompt
    (run only when the public tests passed or it was the last turn; otherwise they count as not
    passed). Its streams are the public execution's.
    """

    turn: int
    code: str
    result: ExecutionResult
    public_passed: int = 0
    public_total: int = 0
    hidden_passed: int | None = None
    """Hidden tests passed, or None when they were not run (the public tests already failed)."""
    hidden_total: int = 0
    raw: str = ""
    """The model's whole answer, as it came."""
    finish_reason: str | None = None
    message_index: int | None = None
    """Index in the trajectory's ``messages`` of the answer this attempt came from."""
    language: str = PYTHON_ANSWERS.name  # languages.DEFAULT_ANSWER_LANGUAGE: that package reads Task
    """The language the code is written in and was judged in (a name of ``languages.TOOLCHAINS``): the
    episode's; Python for every kind but those whose answer is a whole program (``TaskKind.answer_languages``)."""


class Trajectory(_Record):
    """One solving episode of one task (docs/records.md, "trajectories.jsonl")."""

    trajectory_id: str
    task_id: str
    epoch: int
    sample_index: int = 0
    """Which of the task's ``samples_per_task`` independent episodes this is (0..K-1)."""
    kind: TaskKind = DEFAULT_KIND
    language: str = PYTHON_ANSWERS.name  # languages.DEFAULT_ANSWER_LANGUAGE: that package reads Task
    """The language the episode asked its answers in (``curriculum.languages``, by the episode's key, for a
    kind whose answer is a whole program; else Python): every attempt's ``language``."""
    messages: list[Message]
    attempts: list[Attempt]
    final_status: FinalStatus
    reward: float
    usage: TokenUsage = Field(default_factory=TokenUsage)
    difficulty: float = 0.5
    """The difficulty the reward was computed at: the epoch's target for generated tasks (never the
    generator's own claim), the task's stated difficulty for imported ones."""
    solver_model: str = ""
    source: Literal["solver", "env"] = "solver"
    """Who wrote the answers: ``solver``, the run's own solver model; ``env``, a client of ``spade
    serve-env`` (an OpenEnv trainer's policy), whose replies are the assistant turns."""
    flags: list[str] = Field(default_factory=list)
    """Warnings about the episode: ``hardcoded_suspect`` (passed the public tests, failed hidden ones),
    ``budget_exhausted`` (the task's time budget ran out before the turns did), ``abandoned`` (a
    ``serve-env`` client left or went silent mid-episode: ``error`` says which)."""
    error: str | None = None
    """Why the episode ended without a judged attempt (e.g. the endpoint failed for good)."""
    wall_s: float = 0.0
    """Seconds the episode took, model and sandbox time together (a time: not reproducible)."""


class Rejection(_Record):
    """A proposed task that did not make it, with the first gate it failed."""

    epoch: int
    reason: str
    detail: str = ""
    request_index: int | None = None
    """Which generator request of the epoch proposed it (resume skips decided requests)."""
    position: int | None = None
    """Index of the candidate in that request's answer; None when the whole request failed."""
    task_id: str | None = None
    task: dict[str, Any] | None = None
    answer: str | None = None
    """The model's raw answer (its head and tail when longer than 16 kB), when the rejection comes from
    the answer itself: bad JSON, refusal, truncation, an invalid task object."""
    parse_error: dict[str, Any] | None = None
    """Where parsing the answer as JSON failed: ``line``, ``column``, ``offset`` and ``message``."""


ABANDONED = "abandoned"
"""The flag of an episode its ``serve-env`` client left before the end: recorded, never measured (no pass
rate, no learnability, no move of the target counts it)."""


class EpochMetrics(_Record):
    """One row of ``metrics.jsonl``."""

    epoch: int
    difficulty: float
    """The epoch's target difficulty (from its plan)."""
    pass_rate: float | None
    """Share of the epoch's measured episodes that passed; None when there was none."""
    first_try_pass_rate: float | None
    mean_turns: float | None
    tasks_proposed: int
    tasks_accepted: int
    rejected_by_reason: dict[str, int]
    novelty: float
    mean_reward: float | None
    episodes: int = 0
    """Episodes measured: those recorded, less the ``abandoned`` ones."""
    abandoned: int = Field(default=0, exclude_if=lambda n: n == 0)
    """Episodes a ``serve-env`` client left before the end (flagged ``abandoned``): recorded, not measured.
    Written only when not 0, so a run without any writes the rows it wrote before."""
    mean_learnability: float | None = None
    """Mean over the epoch's tasks of ``1 - p`` when ``0 < p < 1`` (else 0), p the task's pass rate."""
    prompt_tokens: int = 0
    """Solver tokens of the epoch's episodes."""
    completion_tokens: int = 0
    generator_prompt_tokens: int = 0
    generator_completion_tokens: int = 0
    wall_s: float = 0.0
    next_difficulty: float = 0.5
    """The target the next epoch plans with."""
    warnings: list[str] = Field(default_factory=list)
    """What went wrong or looks wrong: budgets run out, too few episodes, and the warning signs of
    ``evaluator.warning_signs`` (pass rate stuck near 0 or 1, difficulty not moving, novelty collapsing,
    duplicates rising, validity collapsing)."""
    funnel: dict[str, int] = Field(default_factory=dict)
    """Where proposals were lost: ``proposed``, ``parsed``, ``valid``, ``novel``, ``accepted``."""
    failure_classes: dict[str, int] = Field(default_factory=dict)
    """Failed episodes by why their last attempt failed: ``timeout``, an exception type, ``wrong_answer``..."""
    p90_solve_s: float | None = None
    """90th percentile of the wall time of the epoch's episodes (model and sandbox time together)."""
    difficulty_histogram: dict[str, int] = Field(default_factory=dict)
    """Accepted tasks by their own (claimed) difficulty, in fifths of [0, 1]."""
    zero_spread_share: float | None = None
    """Share of the epoch's tasks whose samples all passed or all failed (TRL's ``frac_reward_zero_std``)."""
    calibration: dict[str, float] | None = None
    """Claimed against measured (``1 - pass rate``) difficulty: ``claimed``, ``measured``, ``mean_abs_gap``."""
    tags_seen: int = 0
    """Distinct tags over every task accepted so far."""
    new_tags: int = 0
    """Tags this epoch's tasks brought that no earlier task had."""
    kinds: dict[str, int] = Field(default_factory=dict)
    """Accepted tasks by kind."""
    mutants: dict[str, int | float] | None = None
    """The mutation gate on the epoch's accepted tasks: ``tasks`` it ran on, mutants ``per_task``."""
    mutation_s: float | None = None
    """Mean seconds the mutation gate added to validating one of the epoch's candidates (timing:
    measured by the process that validated them)."""
    diversity: dict[str, float] = Field(default_factory=dict, exclude_if=lambda d: not d)
    """How varied the epoch's accepted tasks are (``evaluator.diversity``): the distribution of each one's
    similarity to its nearest earlier task (``nearest_p50``, ``nearest_p90``, ``nearest_max``), the entropy in
    bits of their tags and kinds (``tag_entropy``, ``kind_entropy``), and ``distinct_behaviours``, the share of
    those with a behaviour fingerprint that compute something no other of the epoch does; written only when the
    epoch accepted a task."""
    facets: dict[str, dict[str, dict[str, dict[str, int]]]] = Field(default_factory=dict, exclude_if=lambda d: not d)
    """The epoch's tasks of a kind with ``TaskKind.facets`` by kind, facet and label (a bug fix's ``maker`` and
    ``edit`` families): ``proposed``, ``accepted``, ``episodes``, ``passed`` (``evaluator.facet_counts``);
    written only when not empty."""


class TaskStats(_Record):
    """One row of ``task_stats.jsonl``: a task once all its samples are judged."""

    task_id: str
    epoch: int
    kind: TaskKind = DEFAULT_KIND
    samples: int
    """Episodes recorded, ``abandoned`` ones included."""
    passed: int
    pass_rate: float | None
    """Share of the measured samples (``samples - abandoned``) that passed; None when every one was abandoned."""
    learnability: float
    """Absolute Zero's ``1 - p`` when ``0 < p < 1``, else 0: how much the solver can still learn here."""
    mean_turns: float
    abandoned: int = Field(default=0, exclude_if=lambda n: n == 0)
    """Samples a ``serve-env`` client left before the end: recorded, not measured (written only when not 0)."""


REQUEST_FAILED = -1
"""Position of a rejection that stands for a whole failed request (no candidate came out of it)."""


def decision_key(request_index: int | None, position: int | None) -> tuple[int, int]:
    """Where a decision sits in its epoch's order: (request, position; ``REQUEST_FAILED`` first)."""
    return (request_index if request_index is not None else -1, position if position is not None else REQUEST_FAILED)


def task_epoch(task: Task) -> int:
    """The epoch that accepted a run's task (-1 for a task no epoch made: an imported one)."""
    return int(task.meta.get("epoch", -1))


BASE_TASK: Final = "base_task"
"""The key of ``Task.meta`` naming the accepted task a task was made on (``generator.parse_task``: a kind
with ``on_base``, such as a bug hidden in that task's reference)."""


def base_task_id(task: Task) -> str | None:
    """The id of the task ``task`` was made on (``BASE_TASK``), or None: written from scratch."""
    base = task.meta.get(BASE_TASK)
    return base if isinstance(base, str) and base else None
