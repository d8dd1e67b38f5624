"""The generator's training data (``spade export RUN --role generator``): the same self-play run read
for the *other* player.

The solver's exports (``exports``) teach a model to solve the run's tasks; these teach the generator
to propose tasks worth solving. A proposal is good, as Absolute Zero pays its proposer, when its tasks
got through every gate and sit at the edge of the solver's ability: a task the solver always or
never solves teaches it nothing. So an *answer* (one ``proposals.jsonl`` row: the generator's reply to
one prompt) is judged by what became of its candidates, and ``generator.samples_per_request`` answers
to one prompt (same messages, own seed) give the groups and pairs GRPO and DPO want.

What an answer is (every decision read from the journals, through ``store.read_run``):

* ``learnable``: every candidate was accepted (``tasks.jsonl``; a candidate rejected for *any* reason,
  an invalid object, a failed gate, a duplicate, rules it out), every one of them is measured, and at
  least one has learnability > 0. Only these are anyone's example of a good answer.
* ``trivial``: every candidate accepted and measured, none learnable: the solver passed each of them
  always or never (pass rate 1 or 0).
* ``rejected``: the request failed (bad JSON, a refusal, a truncated answer...: ``failure``, or a
  request-level row in ``rejected.jsonl``), or at least one candidate was rejected.
* undecided: a candidate has no decision yet, or an accepted task no ``task_stats`` row yet (not all of
  its samples are judged: a run going on, or one whose epoch budget ran out). Neither good nor bad.
* no answer: the endpoint failed the request (a ``failure`` starting ``llm_``): the model said nothing
  this records as its own, so it is no one's rejected answer.

A task is *measured* once its ``task_stats`` row is written, all its samples judged: a pass rate
over part of the samples could call a learnable task trivial. An answer's ``learnability`` is what
``proposal_reward`` pays a completion: the mean, over the ``n`` tasks asked, of each accepted task's
learnability (``1 - p`` when ``0 < p < 1``, else 0), a rejected or missing task counting 0.

Repetition (``--repetition-weight W``, default 0: off): ``proposal_reward``'s R-Zero term, the answers to one
prompt being the batch. Each accepted task loses ``W`` times the share of the prompt's other accepted tasks
in its cluster (``dedup.repetition_penalties``: code shapes at least 0.5 alike, chained) and pays
``max(0, learnability - penalty)``; an answer's ``reward`` is the mean over the ``n`` asked, its
``repetition`` the mean penalty over its accepted tasks. A learnable answer whose reward falls to 0 (its
every task asked again by its siblings) is nobody's example: in no ``sft`` row, never ``chosen``. At ``W = 0``
``reward`` equals ``learnability``.

Formats (JSON lines; TRL conversational):

* ``sft``: one row per ``learnable`` answer: ``messages`` (the prompt exactly as sent, system and user,
  then ``{"role": "assistant", "content": text}``), ``task_ids`` and ``pass_rates`` (its accepted tasks,
  in answer order), ``learnability``, ``repetition``, ``reward``, ``target_difficulty`` (the epoch's
  target), ``kind``,
  ``generator_model``, ``epoch``, ``prompt_index``, ``sample``, ``request_index``, ``split``.
  ``text`` is the answer's last one: after a repair re-ask it is the fixed answer, the JSON the
  prompt should have got at once.
* ``dpo``: pairs of answers to ONE prompt (same epoch and ``prompt_index``, the very same messages):
  ``chosen`` a ``learnable`` answer, ``rejected`` a ``rejected`` (``pair_type: "rejected"``) or
  ``trivial`` one (``pair_type: "trivial"``); ``prompt`` (messages), ``chosen``/``rejected`` (one
  assistant message each), ``chosen_request_index``, ``rejected_request_index``, ``epoch``,
  ``prompt_index``, ``kind``, ``split``, ``generator_model`` (the chosen answer's). As the solver's
  ``samples`` pairs: chosen answers (highest ``reward`` first, then sample order) and bad ones
  (sample order) are paired round robin, ``max(#chosen, #bad)`` pairs and at most
  ``exports.MAX_SAMPLE_PAIRS`` per prompt. A pair is skipped when both answers hold the same text, or
  when the rejected answer's only fault is duplicating a task of the chosen one (each of its rejections
  a ``duplicate`` naming a chosen task: which of two near copies came first is request order, not a
  preference).
* ``grpo``: one row per generation prompt (epoch, ``prompt_index``) with what ``proposal_reward``
  reads: ``prompt`` (messages), ``kind``, ``n`` (tasks asked), ``difficulty`` (the epoch's target),
  ``known_tasks`` (a JSON string: a list of ``Task`` dumps, see below), ``base_task`` (a JSON string: the
  ``Task`` dump of the accepted task the prompt showed, to be made on, for a kind with ``TaskKind.on_base``
  such as a bug hidden in its reference; None for a prompt written from scratch), ``epoch``, ``request_index``
  (the prompt's first answer's) and ``seed`` (the run's): with them the reward gives that answer's tasks
  the ids the run gave them, so at the run's sample count it repeats the run's episodes; plus
  ``prompt_index``, ``split``, ``generator_model`` and ``mean_learnability`` (the mean ``learnability``
  of the prompt's decided answers, None when none is: what the run's answers earned, for filtering
  out prompts every answer failed or trivialised) and ``mean_reward`` (the same of their ``reward``).

``known_tasks`` are the tasks accepted in epochs *before* the prompt's, the ones the loop's duplicate
gate held when it judged the answers (it also held the epoch's own earlier acceptances, which a fresh
completion has no reason to avoid), **capped at the most recent** ``KNOWN_TASKS_CAP`` (64) in
acceptance order (epoch, request, position): the reward fingerprints each one for every row, and the
recent ones are those a policy repeats. Each keeps its ``meta.behaviour``, which that gate compares.

Split: ``test`` when the first 64 bits of ``sha256("generator/<seed>/<epoch>/<prompt_index>")`` fall
below ``test_fraction`` (``exports.split_of``): every answer to a prompt, so every row built on it in
every format, lands in one split (no test prompt leaks into training through its sibling answer), and
the run's seed in the key keeps the same slot of every run from being test.

The solver's split is respected too (one model may play both roles): no task of the solver's test split
(``exports.split_of(task_id)`` at the same ``test_fraction``) is in any train row. An answer of a train
prompt that holds one (accepted, or rejected as its ``duplicate``) is left out of every row and counted
(``held_out``); a prompt's example line shows ``HELD_OUT_EXAMPLE`` instead of such a task's description
(in every row: the rest of the prompt is as sent); and ``known_tasks`` carries such a task *sealed*
(``dedup.sealed_entry``: its kind and fingerprints, no id, code, test or text), which the proposal reward's
duplicate gate still recognises. A train prompt that shows such a task as its base (a bug-fix prompt shows
its statement, reference and tests whole: no scrubbing hides them) is in no row at all: its answers are
left out (``held_out``) and so is its ``grpo`` row. A task made on a base is in its base's split
(``exports.split_keys``), so its answers go with it.

Filters: ``--split``, ``--test-fraction`` and ``--kinds`` (the prompt's kind) as for the solver;
``--min-difficulty``, ``--max-difficulty`` and ``--tier`` on the measured difficulty ``1 - p``, ``p``
the pooled pass rate (passed over samples) of the measured accepted tasks of the row's answer (``sft``),
of its chosen answer (``dpo``), or of all the prompt's answers (``grpo``); a row with none is dropped
by them. ``--status`` and ``--final-only`` are about trajectories, which the generator's rows have
none of: refused, as is ``--format verl`` (verl's dataset is one of tasks to solve).

As the solver's exports: rows in a stable order (epoch, prompt, sample), identical rows written once
(``sft``: the messages; ``dpo``: prompt, chosen and rejected; ``grpo``: the prompt and the reward's
columns ``kind``, ``n``, ``difficulty``, ``known_tasks``, ``base_task``), ``--split`` taken after that, an atomic
write. Answers recorded without their prompt (a spade before these exports) are left out and counted;
a run none of whose answers has one is refused with a ``UserError`` saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..dedup import repetition_penalties, sealed_entry
from ..errors import UserError
from ..evaluator import learnability as task_learnability
from ..kinds.names import DEFAULT_KIND
from ..store import RunRecords, read_run
from ..types import BASE_TASK, Task, TaskStats, decision_key, task_epoch
from .names import GENERATOR_FORMATS
from .solver_rows import (
    MAX_SAMPLE_PAIRS,
    ExportFilters,
    ExportResult,
    Measured,
    atomic_write,
    check_filters,
    check_output,
    split_keys,
    split_of,
    task_order,
    unique,
    write_jsonl,
)

if TYPE_CHECKING:
    from ..curriculum import EpochPlan

__all__ = [
    "GENERATOR_FORMATS",
    "KNOWN_TASKS_CAP",
    "GeneratorExportResult",
    "build_generator_rows",
    "default_generator_output",
    "export_generator",
    "generator_split",
]

KNOWN_TASKS_CAP: Final = 64
"""At most this many ``known_tasks`` per ``grpo`` row, the most recently accepted."""

LEARNABLE, TRIVIAL, REJECTED, UNDECIDED, NO_ANSWER = "learnable", "trivial", "rejected", "undecided", "no_answer"


@dataclass(frozen=True)
class GeneratorExportResult(ExportResult):
    """What a generator export wrote. ``tasks`` counts the generation prompts the rows come from;
    ``without_prompt``: answers left out because their row records no prompt (an older spade);
    ``held_out``: answers of train prompts left out because they hold a task of the solver's test split (for
    ``grpo``, whose rows hold no answer: train prompts left out because they show one as their base)."""

    without_prompt: int = 0
    held_out: int = 0
    most_answers: int = 0
    """The most answers any prompt of the run got (``generator.samples_per_request``)."""

    def describe(self) -> str:
        line = f"{self.rows} generator {self.fmt} rows ({self.train} train, {self.test} test) from {self.tasks} prompts"
        if self.rows == 0:
            line += ", nothing matched"
        lines = [f"{line} -> {self.path}"]
        if self.fmt == "dpo" and self.most_answers == 1:
            lines.append(
                "a pair is two answers to one prompt, and this run asked one per prompt: run it with "
                "generator.samples_per_request: 2 or more (docs/training.md, 'Groups and pairs')"
            )
        if self.without_prompt:
            n = self.without_prompt
            lines.append(
                f"left out: {n} generator answer{'' if n == 1 else 's'} recorded without the prompt "
                "(written by an older spade)"
            )
        if self.held_out:
            n = self.held_out
            plural = "" if n == 1 else "s"
            what = f"prompt{plural} showing" if self.fmt == "grpo" else f"answer{plural} holding"
            lines.append(
                f"left out of train rows: {n} generator {what} a task of the solver's test split (at the same "
                "--test-fraction)"
            )
        return "\n".join(lines)


# -- what a run holds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """Why an answer, or one of its candidates, was rejected."""

    reason: str
    detail: str


@dataclass
class Answer:
    """One generator answer (a ``proposals.jsonl`` row) with what became of its candidates."""

    epoch: int
    request_index: int
    prompt_index: int
    sample: int
    prompt: list[dict[str, str]] | None
    """The messages exactly as sent; None in rows an older spade wrote."""
    text: str
    n: int
    kind: str
    target_difficulty: float | None
    generator_model: str | None
    base_id: str | None = None
    """The accepted task its prompt showed to be made on (``RequestPlan.base_id``: a bug hidden in its
    reference), None: written from scratch."""
    status: str = UNDECIDED
    tasks: list[Task] = field(default_factory=list)
    """Its accepted tasks, in answer order."""
    measured: list[Measured | None] = field(default_factory=list)
    """Per accepted task: its samples and passes once its ``task_stats`` row is written."""
    faults: list[Fault] = field(default_factory=list)
    learnability: float | None = None
    """What ``proposal_reward`` pays it without a repetition penalty (module docstring); None while anything
    is undecided."""
    asked: int = 1
    """What its learnability is a mean over: the tasks asked, or its candidates when it gave more."""
    repetition: float = 0.0
    """What the repetition penalty took off its learnability (``Repetition`` in the module docstring)."""
    reward: float | None = None
    """``learnability`` less ``repetition``: what ``proposal_reward`` at the export's ``repetition_weight``
    pays it, its prompt's answers being the batch; None while anything is undecided."""
    holds_held_out: bool = False
    """One of its tasks is in the solver's test split, or was rejected as a duplicate of one, or its prompt
    shows one as its base: its text holds a held-out task, so it is in no train row."""

    @property
    def pooled(self) -> Measured | None:
        """Its measured accepted tasks' samples and passes together (None: none is measured)."""
        known = [m for m in self.measured if m is not None]
        if not known:
            return None
        return Measured(samples=sum(m.samples for m in known), passed=sum(m.passed for m in known))

    def only_duplicates_of(self, task_ids: Sequence[str]) -> bool:
        """Whether every fault is a ``duplicate`` naming one of ``task_ids`` (``dedup.Deduper``'s detail)."""
        if not self.faults or not task_ids:
            return False
        named = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in task_ids) + r")\b")
        return all(f.reason == "duplicate" and named.search(f.detail) for f in self.faults)


@dataclass
class Prompt:
    """One generation prompt of an epoch with its answers (sample order)."""

    epoch: int
    prompt_index: int
    split: str
    answers: list[Answer] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, str]] | None:
        return next((a.prompt for a in self.answers if a.prompt is not None), None)

    @property
    def base_id(self) -> str | None:
        """The task its messages show to be made on (every answer to one prompt was shown the same)."""
        return next((a.base_id for a in self.answers if a.base_id is not None), None)

    @property
    def pooled(self) -> Measured | None:
        known = [m for m in (a.pooled for a in self.answers) if m is not None]
        if not known:
            return None
        return Measured(samples=sum(m.samples for m in known), passed=sum(m.passed for m in known))


@dataclass(frozen=True)
class GeneratorRun:
    """What a generator export reads from a run directory."""

    path: Path
    seed: int
    prompts: list[Prompt]
    known_before: Callable[[int], str]
    """Epoch -> the ``known_tasks`` JSON of its prompts."""
    without_prompt: int
    held_out: frozenset[str] = frozenset()
    """Task ids of the solver's test split (``exports.split_of`` at the export's ``test_fraction``)."""
    bases: Mapping[str, Task] = field(default_factory=dict)
    """The run's accepted tasks by id: the bases prompts showed (``Prompt.base_id``)."""

    def in_train(self, prompt: Prompt, answer: Answer) -> bool:
        """Whether ``answer`` may be in ``prompt``'s rows: any answer in the test split, in the train
        split only one that holds no task of the solver's test split."""
        return prompt.split == "test" or not answer.holds_held_out

    def shows_held_out(self, prompt: Prompt) -> bool:
        """Whether ``prompt`` is a train prompt whose messages show a held-out task whole (its base: the
        statement, the reference and the tests): in no row, its answers' as well as its own (grpo)."""
        return prompt.split == "train" and prompt.base_id is not None and prompt.base_id in self.held_out

    @property
    def withheld(self) -> int:
        """Answers of train prompts kept out of every row for holding a held-out task."""
        return sum(1 for p in self.prompts if p.split == "train" for a in p.answers if a.holds_held_out)

    @property
    def withheld_prompts(self) -> int:
        """Train prompts kept out of the grpo rows for showing a held-out task (``shows_held_out``)."""
        return sum(1 for p in self.prompts if self.shows_held_out(p))


def generator_split(seed: int, epoch: int, prompt_index: int, test_fraction: float) -> str:
    """``test`` or ``train`` for every answer to one prompt (module docstring)."""
    return split_of(f"generator/{seed}/{epoch}/{prompt_index}", test_fraction)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _prompt_messages(value: Any) -> list[dict[str, str]] | None:
    """A recorded prompt as messages, or None when the row has none (or not in that shape)."""
    if not isinstance(value, list) or not value:
        return None
    out = []
    for m in value:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            return None
        out.append({"role": m["role"], "content": m["content"]})
    return out


def _known_tasks(tasks: Sequence[Task], held_out: frozenset[str] = frozenset()) -> Callable[[int], str]:
    """Epoch -> JSON of the last ``KNOWN_TASKS_CAP`` tasks accepted before it (cached per epoch), those of
    the solver's test split (``held_out``) sealed: the duplicate gate still knows them, no row shows them."""
    cache: dict[int, str] = {}

    def before(epoch: int) -> str:
        if epoch not in cache:
            earlier = [t for t in tasks if 0 <= task_epoch(t) < epoch][-KNOWN_TASKS_CAP:]
            items = [sealed_entry(t) if t.task_id in held_out else t.dump() for t in earlier]
            cache[epoch] = json.dumps(items, ensure_ascii=False, sort_keys=True)
        return cache[epoch]

    return before


HELD_OUT_EXAMPLE = "(a task held out for testing)"
"""What a generation prompt's example shows instead of the description of a task of the solver's test split."""


def _shown_forms(description: str) -> list[str]:
    """How a prompt may show a description: whole, or as the packaged template's ``truncate(160)`` does."""
    import jinja2
    from jinja2.filters import do_truncate

    forms = [description, do_truncate(jinja2.Environment(), description, 160)]
    return sorted({f for f in forms if f.strip()}, key=len, reverse=True)


def scrub_examples(messages: list[dict[str, str]], hidden: Sequence[Task]) -> list[dict[str, str]]:
    """``messages`` with each ``hidden`` task's description (as an example line shows it) replaced by
    :data:`HELD_OUT_EXAMPLE`: the rest of the prompt is what was sent."""
    if not hidden:
        return messages
    forms = [f for t in hidden for f in _shown_forms(t.description)]
    out = []
    for m in messages:
        text = m["content"]
        for form in forms:
            text = text.replace(form, HELD_OUT_EXAMPLE)
        out.append({**m, "content": text})
    return out


def read_for_generator(run_dir: Path, test_fraction: float, repetition_weight: float = 0.0) -> GeneratorRun:
    """The run's generation prompts, each with its answers judged (module docstring), through
    ``store.read_run`` (strict: a damaged line is not turned into training data).

    Raises:
        UserError: not a run directory, a damaged record (FILE:LINE), a ``spade solve`` directory (no
            generator), no answer recorded, or answers none of which records its prompt.
    """
    records = read_run(run_dir)
    if records.is_solve:
        raise UserError(
            f"{run_dir} is a spade solve directory: no generator answered anything there, so --role generator "
            "has nothing to export (the solver's exports are --role solver)"
        )
    if not records.proposals:
        raise UserError(
            f"{run_dir} records no generator answer yet (proposals.jsonl has no row: a run stopped before its "
            "first answer, or one written before answers were recorded): nothing to export for --role generator"
        )
    seed = _int(records.config.get("seed"), 0)
    seen: dict[str, Task] = {}
    for task in records.tasks:
        seen.setdefault(task.task_id, task)  # a task id twice: the first is the accepted one
    tasks = [t for _, t in sorted(enumerate(seen.values()), key=task_order)]
    # the solver's test split (exports.read_for_export's, at the same fraction): in no train row of either role
    keys = split_keys(seen.values())
    held_out = frozenset(t for t in seen if split_of(keys[t], test_fraction) == "test")
    answers, without_prompt = _answers(records, seen, held_out)
    if answers == [] and without_prompt:
        raise UserError(
            f"{run_dir}/proposals.jsonl: none of its {without_prompt} generator answers records the prompt it "
            "answered (a run of a spade older than the generator exports); the generator's training data needs "
            "those prompts: run it again with this spade"
        )
    prompts: dict[tuple[int, int], Prompt] = {}
    for answer in answers:
        key = (answer.epoch, answer.prompt_index)
        if key not in prompts:
            prompts[key] = Prompt(*key, split=generator_split(seed, *key, test_fraction))
        prompts[key].answers.append(answer)
    for prompt in prompts.values():
        _penalise_repetition(prompt, repetition_weight)
    return GeneratorRun(
        path=run_dir,
        seed=seed,
        prompts=[prompts[k] for k in sorted(prompts)],
        known_before=_known_tasks(tasks, held_out),
        without_prompt=without_prompt,
        held_out=held_out,
        bases=seen,
    )


def _answers(
    records: RunRecords, tasks: dict[str, Task], held_out: frozenset[str] = frozenset()
) -> tuple[list[Answer], int]:
    """Every answer that records its prompt, judged, in (epoch, prompt, sample, request) order; and how
    many answers record none. Prompts show no description of a ``held_out`` task (``scrub_examples``)."""
    plans: dict[int, EpochPlan] = {}
    for epoch_plan in records.plans:
        plans.setdefault(epoch_plan.epoch, epoch_plan)  # a plan is written once; a copy would say the same
    accepted: dict[tuple[int, int, int], Task] = {}
    for task in tasks.values():
        request, position = decision_key(task.meta.get("request_index"), task.meta.get("position"))
        accepted.setdefault((task_epoch(task), request, position), task)
    refused: dict[tuple[int, int, int], Fault] = {}
    for r in records.rejected:
        request, position = decision_key(r.request_index, r.position)
        refused.setdefault((r.epoch, request, position), Fault(r.reason, r.detail))
    stats: dict[str, TaskStats] = {}
    for stat in records.task_stats:
        stats.setdefault(stat.task_id, stat)

    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for row in records.proposals:
        rows.setdefault((int(row["epoch"]), int(row["request_index"])), row)  # written twice: the first
    out, without_prompt = [], 0
    for (epoch, request_index), row in sorted(rows.items()):
        prompt = _prompt_messages(row.get("prompt"))
        if prompt is None:
            without_prompt += 1
            continue
        plan = plans.get(epoch)
        planned = next((r for r in plan.requests if r.request_index == request_index), None) if plan else None
        hidden = [tasks[t] for t in (plan.example_ids if plan else []) if t in held_out and t in tasks]
        prompt = scrub_examples(prompt, hidden)
        candidates = [c for c in row.get("candidates") or [] if isinstance(c, dict)]
        first_task: dict[str, Any] = next((c["task"] for c in candidates if isinstance(c.get("task"), dict)), {})
        prompt_index = row.get("prompt_index")
        answer = Answer(
            epoch=epoch,
            request_index=request_index,
            # rows an older spade wrote lack it: the plan's, else one prompt per request as then
            prompt_index=_int(prompt_index, planned.prompt if planned is not None else request_index),
            sample=_int(row.get("sample"), planned.sample if planned is not None else 0),
            prompt=prompt,
            text=str(row.get("text") or ""),
            n=max(1, _int(row.get("n"), planned.n if planned is not None else 1)),
            kind=planned.kind if planned is not None else str(first_task.get("kind") or DEFAULT_KIND),
            target_difficulty=plan.target_difficulty if plan is not None else _target(first_task),
            generator_model=row.get("generator_model") if isinstance(row.get("generator_model"), str) else None,
            base_id=planned.base_id if planned is not None else _base(first_task),
        )
        _judge(answer, row, candidates, accepted, refused, stats)
        answer.holds_held_out = _holds(answer, held_out) or (answer.base_id is not None and answer.base_id in held_out)
        out.append(answer)
    out.sort(key=lambda a: (a.epoch, a.prompt_index, a.sample, a.request_index))
    return out, without_prompt


def _penalise_repetition(prompt: Prompt, weight: float) -> None:
    """Take R-Zero's repetition penalty off each decided answer's learnability, the prompt's answers being
    the batch (``proposal_reward``'s rule: ``dedup.repetition_penalties`` over their accepted tasks, each
    paying ``max(0, learnability - penalty)``)."""
    answers = [a for a in prompt.answers if a.status != NO_ANSWER]
    places = [(a, i) for a in answers for i in range(len(a.tasks))]
    penalties = repetition_penalties([a.tasks[i] for a, i in places], weight)
    taken: dict[int, list[tuple[float, float]]] = {id(a): [] for a in answers}
    for (a, i), penalty in zip(places, penalties, strict=True):
        m = a.measured[i]
        paid = task_learnability(m.passed, m.samples) if m is not None else 0.0
        taken[id(a)].append((penalty, max(0.0, paid - penalty)))
    for a in answers:
        pairs = taken[id(a)]
        a.repetition = round(sum(p for p, _ in pairs) / len(pairs), 6) if pairs else 0.0
        if a.learnability is not None:
            a.reward = round(sum(pay for _, pay in pairs) / a.asked, 6)


def _holds(answer: Answer, held_out: frozenset[str]) -> bool:
    """Whether ``answer`` holds a held-out task: one of its accepted tasks, or a near copy of one (a
    ``duplicate`` naming it)."""
    if not held_out:
        return False
    if any(t.task_id in held_out for t in answer.tasks):
        return True
    named = [f.detail for f in answer.faults if f.reason == "duplicate"]
    return any(re.search(r"\b" + re.escape(t) + r"\b", detail) for detail in named for t in held_out)


def _base(task: dict[str, Any]) -> str | None:
    """The base a candidate was made on, as its meta says (rows whose plan is lost)."""
    meta = task.get("meta")
    value = meta.get(BASE_TASK) if isinstance(meta, dict) else None
    return value if isinstance(value, str) and value else None


def _target(task: dict[str, Any]) -> float | None:
    meta = task.get("meta")
    value = meta.get("target_difficulty") if isinstance(meta, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _judge(
    answer: Answer,
    row: dict[str, Any],
    candidates: list[dict[str, Any]],
    accepted: dict[tuple[int, int, int], Task],
    refused: dict[tuple[int, int, int], Fault],
    stats: dict[str, TaskStats],
) -> None:
    """Set ``answer``'s status, tasks, faults and learnability from the run's decisions."""
    e, ri = answer.epoch, answer.request_index
    failure = row.get("failure")
    if isinstance(failure, str) and failure.startswith("llm_"):
        answer.status = NO_ANSWER  # the endpoint failed the request: no answer of the model's
        return
    request_fault = refused.get((e, *decision_key(ri, None)))
    if failure or request_fault is not None or not candidates:
        reason = str(failure) if failure else request_fault.reason if request_fault else "no_tasks"
        detail = str(row.get("detail") or "") if failure else request_fault.detail if request_fault else ""
        answer.status, answer.faults, answer.learnability, answer.reward = REJECTED, [Fault(reason, detail)], 0.0, 0.0
        return
    undecided = False
    for c in candidates:
        key = (e, *decision_key(ri, _int(c.get("position"), 0)))
        task = accepted.get(key)
        if task is not None:
            answer.tasks.append(task)
            row_stats = stats.get(task.task_id)
            played = 0 if row_stats is None else row_stats.samples - row_stats.abandoned  # abandoned: not measured
            answer.measured.append(None if row_stats is None or played <= 0 else Measured(played, row_stats.passed))
        elif key in refused:
            answer.faults.append(refused[key])
        elif c.get("reason"):  # an invalid task object, whose rejection row is missing (an older run)
            answer.faults.append(Fault(str(c["reason"]), str(c.get("detail") or "")))
        else:
            undecided = True
    if not undecided and all(m is not None for m in answer.measured):
        paid = [task_learnability(m.passed, m.samples) for m in answer.measured if m is not None]
        answer.asked = max(answer.n, len(candidates))
        answer.learnability = answer.reward = round(sum(paid) / answer.asked, 6)
    if answer.faults:
        answer.status = REJECTED
    elif answer.learnability is None:
        answer.status = UNDECIDED
    else:
        answer.status = LEARNABLE if answer.learnability > 0 else TRIVIAL


# -- filters ------------------------------------------------------------------------------------


def check_generator_filters(fmt: str, filters: ExportFilters, test_fraction: float) -> None:
    """Refuse what means nothing for the generator's rows, then what can never match (``check_filters``).

    Raises:
        UserError: one line saying which flag does not apply, or which flags clash.
    """
    if fmt == "verl":
        raise UserError(
            "--format verl is the solver's (verl's dataset of tasks to solve); --role generator writes sft, dpo or grpo"
        )
    if fmt not in GENERATOR_FORMATS:
        raise UserError(f"unknown export format {fmt!r} for --role generator; known: {', '.join(GENERATOR_FORMATS)}")
    if filters.status is not None:
        raise UserError("--status is about trajectories: --role generator exports the generator's answers, none")
    if filters.final_only:
        raise UserError("--final-only is for the solver's sft (--role solver), not --role generator")
    check_filters(fmt, filters, test_fraction)


def _measured_ok(measured: Measured | None, filters: ExportFilters) -> bool:
    """The difficulty and tier filters on a row's measured pass rate (none measured: only without them)."""
    f = filters
    if f.min_difficulty is None and f.max_difficulty is None and f.tier is None:
        return True
    if measured is None:
        return False
    if f.min_difficulty is not None and measured.difficulty < f.min_difficulty:
        return False
    if f.max_difficulty is not None and measured.difficulty > f.max_difficulty:
        return False
    return f.tier is None or measured.tier == f.tier


def _kind_ok(kind: str, filters: ExportFilters) -> bool:
    return filters.kinds is None or kind in filters.kinds


# -- rows ---------------------------------------------------------------------------------------


def _paid(answer: Answer) -> bool:
    """A good answer: learnable, and still paid once the repetition penalty is taken off."""
    return answer.status == LEARNABLE and (answer.reward or 0.0) > 0


def _assistant(answer: Answer) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": answer.text}]


def sft_rows(run: GeneratorRun, filters: ExportFilters) -> Iterator[dict[str, Any]]:
    """One row per learnable answer."""
    for prompt in run.prompts:
        for a in prompt.answers:
            if not _paid(a) or a.prompt is None or not _kind_ok(a.kind, filters):
                continue
            if not run.in_train(prompt, a):
                continue
            if not _measured_ok(a.pooled, filters):
                continue
            yield {
                "messages": [*a.prompt, *_assistant(a)],
                "task_ids": [t.task_id for t in a.tasks],
                "pass_rates": [round(m.passed / m.samples, 6) for m in a.measured if m is not None],
                "learnability": a.learnability,
                "repetition": a.repetition,
                "reward": a.reward,
                "target_difficulty": a.target_difficulty,
                "kind": a.kind,
                "generator_model": a.generator_model,
                "epoch": a.epoch,
                "prompt_index": a.prompt_index,
                "sample": a.sample,
                "request_index": a.request_index,
                "split": prompt.split,
            }


def dpo_rows(run: GeneratorRun, filters: ExportFilters) -> Iterator[dict[str, Any]]:
    """Same-prompt pairs, prompt by prompt (module docstring: the pairing and what is skipped)."""
    for prompt in run.prompts:
        answers = [a for a in prompt.answers if run.in_train(prompt, a)]
        good = [a for a in answers if _paid(a) and _kind_ok(a.kind, filters)]
        good.sort(key=lambda a: -(a.reward or 0.0))  # stable: sample order within one reward
        bad = [a for a in answers if a.status in (REJECTED, TRIVIAL)]
        if not good or not bad:
            continue
        for n in range(min(max(len(good), len(bad)), MAX_SAMPLE_PAIRS)):
            chosen, rejected = good[n % len(good)], bad[n % len(bad)]
            if chosen.prompt is None or chosen.prompt != rejected.prompt or chosen.text == rejected.text:
                continue
            if rejected.only_duplicates_of([t.task_id for t in chosen.tasks]):
                continue
            if not _measured_ok(chosen.pooled, filters):
                continue
            yield {
                "prompt": chosen.prompt,
                "chosen": _assistant(chosen),
                "rejected": _assistant(rejected),
                "pair_type": "rejected" if rejected.status == REJECTED else "trivial",
                "chosen_request_index": chosen.request_index,
                "rejected_request_index": rejected.request_index,
                "epoch": prompt.epoch,
                "prompt_index": prompt.prompt_index,
                "kind": chosen.kind,
                "split": prompt.split,
                "generator_model": chosen.generator_model,
            }


def grpo_rows(run: GeneratorRun, filters: ExportFilters) -> Iterator[dict[str, Any]]:
    """One row per prompt, with the columns ``proposal_reward`` reads."""
    for prompt in run.prompts:
        messages = prompt.messages
        first = prompt.answers[0]
        if messages is None or not _kind_ok(first.kind, filters) or not _measured_ok(prompt.pooled, filters):
            continue
        if run.shows_held_out(prompt):  # its messages show a held-out task whole: no scrubbing hides that
            continue
        base = run.bases.get(prompt.base_id) if prompt.base_id is not None else None
        decided = [a for a in prompt.answers if a.status != NO_ANSWER and a.learnability is not None]
        paid = [a.learnability for a in decided if a.learnability is not None]
        rewards = [a.reward for a in decided if a.reward is not None]
        yield {
            "prompt": messages,
            "kind": first.kind,
            "n": first.n,
            "difficulty": first.target_difficulty,
            "known_tasks": run.known_before(prompt.epoch),
            "base_task": json.dumps(base.dump(), ensure_ascii=False, sort_keys=True) if base is not None else None,
            "epoch": prompt.epoch,
            "request_index": first.request_index,
            "seed": run.seed,
            "prompt_index": prompt.prompt_index,
            "split": prompt.split,
            "generator_model": first.generator_model,
            "mean_learnability": round(sum(paid) / len(paid), 6) if paid else None,
            "mean_reward": round(sum(rewards) / len(rewards), 6) if rewards else None,
        }


def _content_key(fmt: str) -> Callable[[dict[str, Any]], str]:
    """What makes two rows the same training example, as a canonical string (module docstring)."""

    def key(row: dict[str, Any]) -> str:
        if fmt == "sft":
            content: Any = row["messages"]
        elif fmt == "dpo":
            content = [row["prompt"], row["chosen"], row["rejected"]]
        else:
            content = [row["prompt"], row["kind"], row["n"], row["difficulty"], row["known_tasks"], row["base_task"]]
        return json.dumps(content, ensure_ascii=False, sort_keys=True)

    return key


def build_generator_rows(run: GeneratorRun, fmt: str, filters: ExportFilters) -> list[dict[str, Any]]:
    """The export's rows, filtered, deduplicated, in order; ``--split`` once duplicates are gone, so an
    example two prompts of both splits share is written once, in the first one's split."""
    rows: Iterable[dict[str, Any]]
    if fmt == "sft":
        rows = sft_rows(run, filters)
    elif fmt == "dpo":
        rows = dpo_rows(run, filters)
    else:
        rows = grpo_rows(run, filters)
    return [r for r in unique(rows, _content_key(fmt)) if filters.split in (None, r["split"])]


# -- the command --------------------------------------------------------------------------------


def default_generator_output(run_dir: Path, fmt: str) -> Path:
    return run_dir / "exports" / f"generator-{fmt}.jsonl"


def export_generator(
    run_dir: Path,
    fmt: str,
    output: Path | None,
    filters: ExportFilters,
    *,
    test_fraction: float = 0.1,
    repetition_weight: float = 0.0,
) -> GeneratorExportResult:
    """Write the generator's training data from ``run_dir`` in ``fmt`` (``sft``, ``dpo``, ``grpo``) to
    ``output`` (default: ``RUN_DIR/exports/generator-FORMAT.jsonl``); ``exports.export_run`` is the
    solver's.

    Raises:
        UserError: a missing or damaged run directory, a ``spade solve`` directory, answers that record
            no prompt, ``verl`` or a filter that means nothing for the generator, filters that clash, an
            output that cannot be written.
    """
    check_generator_filters(fmt, filters, test_fraction)
    run = read_for_generator(run_dir, test_fraction, repetition_weight)
    path = output if output is not None else default_generator_output(run_dir, fmt)
    check_output(path, run_dir)
    rows = build_generator_rows(run, fmt, filters)
    atomic_write(path, write_jsonl(rows))
    test = sum(r["split"] == "test" for r in rows)
    prompts = len({(r["epoch"], r["prompt_index"]) for r in rows})
    return GeneratorExportResult(
        path=path,
        fmt=fmt,
        rows=len(rows),
        train=len(rows) - test,
        test=test,
        tasks=prompts,
        without_prompt=run.without_prompt,
        held_out=run.withheld if fmt != "grpo" else run.withheld_prompts,  # grpo rows carry no answer
        most_answers=max((len(p.answers) for p in run.prompts), default=0),
    )
