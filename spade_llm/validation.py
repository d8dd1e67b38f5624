"""Stage 2: prove a proposed task sound before anyone is asked to solve it.

Gates, in order (docs/records.md, "Rejection reasons"); the first that fails is the task's ``reason``:
``syntax_error``, ``banned_import`` (only when ``validation.banned_imports`` names modules),
``missing_entry_point``, ``bad_input``, ``too_few_tests``, ``leaks_hidden_test`` (the kinds' leak
gate, ``kinds.run_gates``: a hidden test shown in what the solver reads), ``timeout``, ``runtime_error``,
``nondeterministic``, ``expected_mismatch``, ``weak_tests``; ``undecided`` wherever a gate cannot
decide within its budget (below).
The reference runs on every test whenever its code loads, whatever the reason, so ``verify``
always reports its own verdict (``judge.final_status``, as for any attempt). Near-duplicates are a
run-level gate (the controller's). The reference runs and is compared through ``judge``, like
every other piece of code judged.

``nondeterministic`` looks beyond the tests: the reference runs on the tests a second time (another
hash seed, the tests in reverse order: a counter kept across calls shows), then twice more on probe
inputs of the tests' shape that no test has (``python_mutants.determinism_probes``), again under two hash
seeds in opposite orders. A reference that is a function of its input only gives the same outputs
each time; one that is deterministic on its own tests alone (a coin flip elsewhere, ``id()``, the
clock, ``os.urandom``, set order, a global counter) does not, and abduction, whose judge runs the
reference on a solver's own inputs, would pay it by chance. The probes run the reference exactly as
that judge does (``execute_calls``: module ``solution``, the whole ``sandbox.test_timeout_s`` a call),
so nothing tells a probe from a judged answer but its input; unless at least ``DETERMINISM_QUORUM``
probes are answered in both runs the task is ``undecided``, never passed for want of evidence.

Verdicts do not depend on the machine's load: every call's budget is CPU time (the harness's timer),
a call that runs out of it is *unknown*, never evidence of a difference, and a call the wall clock
cut while it computed (its execution's deadline came first: the machine's doing) is run again in a
fresh execution that goes on from it (``_carried``, the one runner of every gate); a call that
*blocked* (the wall backstop fired with next to no CPU used) is final. A pair of runs is compared
only where both answered. When a verdict hangs on what unknown calls would have shown, the mutation
gate retries them with the task's whole test budget and, if they still cannot say, the task is
rejected as ``undecided``, never with a made-up reason. One task's gates run at most
``MAX_GATE_EXECUTIONS`` executions in all.
"""

from __future__ import annotations

import marshal
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from . import behaviour
from .judge import Judge, compare_outputs, final_status, parse_input
from .languages import Mutant, language_of
from .languages.python_mutants import (
    DEAD,
    DISPATCHER,
    MAX_MUTANTS,
    determinism_probes,
    dispatcher_source,
    probe_inputs,
)
from .sandbox.base import Limits, Sandbox
from .sandbox.runner import MAX_INPUT_CHARS, CallsOutcome, execute_calls
from .sandbox.verdict import Output, Unsupported, UnsupportedOutput, passes, to_json
from .types import ExecutionResult, Task, TestCase, TestStatus

MIN_TESTS = 3
MUTANT_CALL_BUDGET_S = 0.02
"""CPU seconds a call of the mutation gate gets (at most the task's own test budget): far above what a
task-sized call takes (tens of microseconds), and CPU time, so whether a call runs out of it is the
program's doing, not the machine's load. Mutants that loop are common (a loop's step or bound turned
around: 20 of a Collatz reference's 40) and each costs this once, so it is most of the gate's time:
80 fake tasks validated in 22 s at 0.1 s here and in 12 s at this, with the same verdicts. A heavier reference gets
more (``_gate_budget``); calls that run out are retried with the test budget when the verdict hangs on
them."""
LADDER_S = 0.025
"""First rung of the CPU-time ladder that sizes the gates' budgets to a heavy reference (each rung twice
the last): the first rung its slowest test call fits in, by the CPU time the harness measured (never
the wall clock, which a loaded machine stretches). The mutation gate's ladder is its own
(``MUTANT_BUDGET_FACTOR``)."""
MUTANT_BUDGET_FACTOR = 4
"""The mutation gate's budget is this many times the rung the reference fits in, on a ladder of its own
that starts at ``MUTANT_CALL_BUDGET_S / MUTANT_BUDGET_FACTOR``: room for a mutant that does a little
more work than the reference (one that loops runs out of any budget)."""
DETERMINISM_QUORUM = 8
"""Inputs beyond the tests that both determinism runs must answer (or raise on) before the reference
counts as a function of its input there; fewer (it ran out of time or blocked on the others, or the
gates' budget ran out) is ``undecided``: no evidence is no pass."""
PROBE_CPU_S = 1.2
"""CPU seconds a determinism run plans for: as many probes as the reference's rung fits in this, at
least ``DETERMINISM_QUORUM``, at most ``python_mutants.MAX_DETERMINISM_PROBES`` (a task-sized reference gets
them all)."""
PROBE_TIMEOUTS = 12
"""Calls of the reference on probe inputs (the determinism runs, the mutation gate's) that may time out
(out of CPU, or blocked) in one run before it calls no more: a reference may loop on part of its domain
(negative numbers) and still answer enough elsewhere, and one that loops or blocks everywhere costs this
many calls, not one per probe."""
RETRY_TIMEOUTS = 2
"""The same, when the probes that ran out of the first budget run again with the whole test budget."""
PROBE_EXECUTION_S = 2.0
"""Least wall time of a determinism run's execution, ``WALL_ROOM`` times the reference's rung when that
is more, at most ``sandbox.timeout_s``: a probe that blocks costs a share of this, not a whole deadline,
and one that needs far more than the reference's own tests is cut and stays unknown."""
WALL_ROOM = 10.0
"""How many times its CPU time a call may take by the wall clock before a determinism run gives up on
it (a machine ten times oversubscribed still answers)."""
BLOCKED_SHARE = 0.02
"""A call the wall backstop ended having used less CPU than this share of its wall time *blocked* (it
slept, waited on a pipe): the program's doing, and final (more budget cannot decide it). With more it
was computing when the wall clock cut it: the machine's doing, and the call is run again (``_carried``).
The harness's block detector uses the same share."""
BLOCK_S = 0.25
"""The gates' block detector (``execute_calls``' ``block_s``): a call that uses next to no CPU for this
long blocked and ends (it costs this much wall time, not a share of the deadline); one that computes is
ended only by its CPU budget, or by the deadline, which the gates carry on past. A nap shorter than this
is no block."""
MAX_GATE_EXECUTIONS = 40
"""Sandbox executions one task's gates may use in all, continuations included (an honest task needs
about ten): what they could not run is unknown, and a verdict that hangs on it ``undecided``."""
STAND_INS: list[tuple[str, Any]] = [("None", None), ("0", 0), ("[]", []), ("''", ""), ("{}", {})]


@dataclass
class ValidationReport:
    """The outcome of validating one task (a row of ``spade verify``)."""

    task_id: str
    valid: bool
    reason: str | None
    detail: str
    status: TestStatus
    tests_passed: int
    tests_total: int
    task: Task | None = None
    """The task with every ``expected`` filled from the reference, when it loaded."""
    mutation: MutationStats | None = None
    """What the mutation part of ``weak_tests`` ran, when it got that far."""
    behaviour: str | None = None
    """A valid task's behaviour fingerprint (``behaviour.py``), for the run's duplicate gate."""

    def row(self) -> dict[str, Any]:
        row = {
            "task_id": self.task_id,
            "valid": self.valid,
            "reason": self.reason,
            "status": self.status,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
            "detail": self.detail,
        }
        if self.mutation is not None:
            row["mutants"] = self.mutation.row()
        return row


@dataclass(frozen=True)
class MutationStats:
    """The mutation gate on one task: how many mutants ran and what became of them."""

    total: int
    killed: int
    equivalent: int
    survived: int
    """Survivors that differ from the reference on some probe input: what the tests miss."""
    unknown: int
    """Mutants no test told apart but that some test could not judge (the call ran out of its CPU
    budget, or was never run): counted neither way."""
    seconds: float
    """Wall time of the gate's executions (the cost it adds to validation)."""

    undecided: int = 0
    """Mutants that pass every test and that no probe told apart, but that ran out of time on some
    probe the reference answers even with the whole test budget: equivalent or not, nobody knows."""

    @property
    def kill_rate(self) -> float:
        judged = self.killed + self.survived
        return 1.0 if judged == 0 else self.killed / judged

    def row(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "killed": self.killed,
            "equivalent": self.equivalent,
            "survived": self.survived,
            "unknown": self.unknown,
            "undecided": self.undecided,
            "kill_rate": round(self.kill_rate, 4),
            "mutation_s": round(self.seconds, 3),
        }


class Validator:
    """Runs the gates for one task at a time; blocking (call it from a worker thread)."""

    def __init__(
        self,
        sandbox: Sandbox,
        limits: Limits,
        test_timeout_s: float,
        banned_imports: frozenset[str] = frozenset(),
        *,
        min_kill_rate: float = 1.0,
        max_mutants: int = MAX_MUTANTS,
        fingerprint_behaviour: bool = False,
        max_bug_lines: int = 3,
        public_tests: int = 3,
    ) -> None:
        """``min_kill_rate``: the share of non-equivalent mutants the tests must kill (0: mutants are
        not run); ``max_mutants``: mutants run per task at most; ``fingerprint_behaviour``: run a
        valid task's reference on its signature's shared probes (the run's duplicate gate needs it,
        ``verify`` does not); ``max_bug_lines``: the most lines a bug-fix task's bug may change
        (``bugfix.max_changed_lines``); ``public_tests``: the run's ``solver.public_tests`` (the tests
        whose verdicts a kind's gates may record for the solver to see)."""
        self.fingerprint_behaviour = fingerprint_behaviour
        self.max_bug_lines = max_bug_lines
        self.public_tests = public_tests
        self.sandbox = sandbox
        self.limits = limits
        self.test_timeout_s = test_timeout_s
        self.banned_imports = frozenset(banned_imports)
        self.min_kill_rate = min_kill_rate
        self.max_mutants = max_mutants
        # every test is tried, however many time out: ``verify`` reports the reference on all of them
        self.judge = Judge(sandbox, limits, test_timeout_s, max_timeouts=None)

    def static_reason(self, task: Task) -> tuple[str, str] | None:
        """The first static gate ``task`` fails, as (reason, detail), or None: ``syntax_error``,
        ``banned_import``, ``missing_entry_point``, ``bad_input``, ``too_few_tests``, decided without
        running anything. The one place they are checked (``validate``, and the kinds' leak gate,
        which may come before the gates that run code only once these pass)."""
        found = language_of(task).static_error(
            task.reference_code, task.entry_point, self.banned_imports, task.entry_class
        )
        if found is not None:
            return found
        for i, test in enumerate(task.tests):
            parsed = parse_input(test.input)
            if isinstance(parsed, str):
                return "bad_input", f"test {i}: {parsed}"
        if len(task.tests) < MIN_TESTS:
            return "too_few_tests", f"{len(task.tests)} tests, at least {MIN_TESTS} needed"
        return None

    def validate(self, task: Task, *, test_strength: bool = True) -> ValidationReport:
        """The gates in order. ``test_strength=False`` stops before ``weak_tests`` (stand-ins and
        mutants): kinds whose tests are queries rather than a specification judge that their own way."""
        total = len(task.tests)

        def report(
            reason: str | None, detail: str, status: TestStatus = "error", passed: int = 0, filled: Task | None = None
        ) -> ValidationReport:
            return ValidationReport(task.task_id, reason is None, reason, detail, status, passed, total, filled)

        static_reason = self.static_reason(task)
        if static_reason is not None and static_reason[0] == "syntax_error":
            return report(*static_reason)
        if task.shows_examples:
            return self._validate_check_mode(task)
        spend = _Spend()
        first = _as_outcome(self._reference_run(spend, task, [t.input for t in task.tests], hash_seed=0))
        filled, status, passed, runtime = self._own_verdict(task, first, spend)
        if static_reason is not None:
            return report(*static_reason, status=status, passed=passed, filled=filled)
        if runtime is not None:
            return report(*runtime, status=status, passed=passed, filled=filled)
        assert filled is not None
        for why in (self._order_or_seed(spend, task, first), self._beyond_the_tests(spend, task, _slowest_cpu(first))):
            if why is not None:
                return report(*why, status=status, passed=passed, filled=filled)
        for i, test in enumerate(task.tests):
            if test.has_expected and not passes(first.outputs[i].value, test):
                return report(
                    "expected_mismatch",
                    f"test {i} ({test.input[:60]}): expected {test.expected!r}, the "
                    f"reference returns {to_json_or_repr(first.outputs[i].value)}",
                    status=status,
                    passed=passed,
                    filled=filled,
                )
        checked = report(None, "", status=status, passed=passed, filled=filled)
        if test_strength:
            weak = self._weak_tests(filled)
            if weak:
                return report("weak_tests", weak, status=status, passed=passed, filled=filled)
            stats, survivor, unsure = self._mutation_gate(spend, filled, first)
            if isinstance(stats, str):  # the gate could not run the reference itself: no baseline
                checked = report("undecided", stats, status=status, passed=passed, filled=filled)
            elif stats is not None and stats.kill_rate < self.min_kill_rate:
                assert survivor is not None
                detail = (
                    f"the tests miss {stats.survived} of {stats.total} mutants of the reference (kill rate "
                    f"{stats.kill_rate:.0%}, {self.min_kill_rate:.0%} needed); this one passes every test but "
                    f"differs on a nearby input, add a test that tells them apart:\n{survivor.diff}"
                )
                checked = report("weak_tests", detail, status=status, passed=passed, filled=filled)
            elif stats is not None and unsure is not None and _rate(stats, stats.undecided) < self.min_kill_rate:
                detail = (
                    f"{stats.undecided} of {stats.total} mutants of the reference pass every test and no nearby "
                    "input tells them apart, but they run out of time or block on some nearby input the "
                    "reference answers, even with the whole test budget: whether the tests miss them cannot be "
                    f"decided (add a test on such an input):\n{unsure.diff}"
                )
                checked = report("undecided", detail, status=status, passed=passed, filled=filled)
            checked.mutation = stats if isinstance(stats, MutationStats) else None
        if checked.valid and self.fingerprint_behaviour:
            checked.behaviour = self._behaviour(spend, filled)
        return checked

    def tell_apart(self, task: Task, other: str) -> str:
        """Whether ``other``, code that passes every test of ``task`` (filled), differs from its reference
        beyond the tests, judged as the mutation gate judges a survivor: ``real`` (some probe input the
        reference answers shows another output or an exception), ``equivalent`` (every such probe shows
        the same, or no probe can be written), ``undecided`` (neither, even with the whole test budget)."""
        args_list = [parse_input(t.input) for t in task.tests]
        probes = probe_inputs([a for a in args_list if isinstance(a, tuple)])
        verdicts = self._probe_survivors(
            _Spend(), task, [task.reference_code, other], [1], probes, self._gate_budget(0.0)
        )
        return verdicts[1]

    def _behaviour(self, spend: _Spend, task: Task) -> str | None:
        """The reference's outputs on the shared probes of its signature, as one fingerprint."""
        first = parse_input(task.tests[0].input) if task.tests else None
        sig = behaviour.signature(first) if isinstance(first, tuple) else None
        if sig is None:
            return None
        probes = behaviour.probes(sig)
        calls = [(0, j, p) for j, p in enumerate(probes)]
        # whether a probe times out depends on the machine: a reference that times out on any
        # probe gets no fingerprint (and costs one probe budget), so a fingerprint is always the same
        budget = min(self.test_timeout_s, behaviour.PROBE_BUDGET_S)
        outcomes = self._digests(spend, task, [task.reference_code], calls, budget, max_timeouts=1)
        if outcomes is None or not all(_observed(o) for o in outcomes):
            return None
        return behaviour.fingerprint(sig, [o for o in outcomes if o is not None])

    def _validate_check_mode(self, task: Task) -> ValidationReport:
        """Imported benchmarks: the reference must get through the benchmark's own asserts (its
        ``tests`` and ``check_code``); the generated-task gates (test counts, stand-ins, mutants) do not apply."""
        result = self.judge(task, task.reference_code)
        status = final_status(result)
        passed, total = result.tests_passed or 0, result.tests_total or 0
        if status == "passed":
            return ValidationReport(task.task_id, True, None, "", status, passed, total, task)
        if status == "timeout":
            return ValidationReport(
                task.task_id, False, "timeout", "the reference exceeds the time limit", status, passed, total, task
            )
        failing = next((r for r in result.test_results or [] if not r.passed), None)
        if failing is not None and failing.input.startswith("check("):
            detail = f"check_code fails: {(failing.error or result.status)[:200]}"
        elif failing is not None:
            detail = f"assert on {failing.input[:60]} fails: {failing.error or f'returned {failing.output}'}"[:300]
        else:
            detail = (result.stderr.strip().splitlines() or [result.status])[-1][:200]
        return ValidationReport(task.task_id, False, "runtime_error", detail, status, passed, total, task)

    def _own_verdict(
        self, task: Task, outcome: CallsOutcome, spend: _Spend
    ) -> tuple[Task | None, TestStatus, int, tuple[str, str] | None]:
        """The reference judged on its own tests; the task with expected values filled; a runtime reason.

        A test call that ran out of its CPU budget, or blocked, is the reference's ``timeout``; one the
        machine cut even in an execution of its own, or one the gates' budget never reached, leaves
        that ``undecided`` (the reference may well be within its limit)."""
        result = outcome.result
        if outcome.load_error is not None:
            return None, "error", 0, ("runtime_error", f"reference does not load: {outcome.load_error}")
        unfinished = next((i for i, o in enumerate(outcome.outputs) if _cut(o)), None)
        if any(o.status == "timeout" and not _cut(o) for o in outcome.outputs):
            reason: tuple[str, str] | None = ("timeout", "the reference exceeds the time limit on some input")
        elif unfinished is not None or (spend.exhausted and len(outcome.outputs) < len(task.tests)):
            at = unfinished if unfinished is not None else len(outcome.outputs)
            reason = (
                "undecided",
                f"test {at} ({task.tests[at].input[:60]}): the reference's call could not be run to its end within "
                "its CPU budget (its execution's wall deadline came first, or the gates' budget ran out): "
                "whether it exceeds the time limit cannot be decided on this machine now",
            )
        elif result.status in ("memory", "output_limit", "killed"):
            reason = ("runtime_error", f"the reference was stopped: {result.status}")
        else:
            reason = None
        filled_tests: list[TestCase] = []
        for i, test in enumerate(task.tests):
            out = outcome.outputs[i] if i < len(outcome.outputs) else None
            if out is not None and not out.ok and reason is None:
                # whether or not the author gave an expected value: a reference that raises is broken
                reason = ("runtime_error", f"test {i} ({test.input[:60]}): the reference raised {out.error}")
            if test.has_expected:
                filled_tests.append(test)
            elif out is not None and out.ok:
                try:
                    filled_tests.append(TestCase(input=test.input, expected=to_json(out.value)))
                except UnsupportedOutput as e:
                    filled_tests.append(TestCase(input=test.input))
                    reason = reason or ("runtime_error", f"test {i}: the reference's output has no JSON form: {e}")
            else:
                filled_tests.append(TestCase(input=test.input))
        if reason is None and len(outcome.outputs) < len(task.tests):
            reason = ("runtime_error", f"the reference stopped after {len(outcome.outputs)} of {len(task.tests)} tests")
        filled = task.model_copy(update={"tests": filled_tests})
        verdict = compare_outputs(outcome, filled_tests)
        return filled, final_status(verdict), verdict.tests_passed or 0, reason

    def _reference_run(self, spend: _Spend, task: Task, inputs: list[str], *, hash_seed: int) -> _Carried:
        """The reference on ``inputs`` as the judge runs it (``execute_calls``: module ``solution``, the
        whole test budget a call), carried on over the machine's cuts (``_carried``)."""
        return self._carried(
            spend,
            inputs,
            self.test_timeout_s,
            source=lambda _: task.reference_code,
            entry=task.entry_point,
            hash_seed=hash_seed,
        )

    def _order_or_seed(self, spend: _Spend, task: Task, first: CallsOutcome) -> tuple[str, str] | None:
        """Why the reference's outputs depend on call order or the hash seed, or None: it runs on the tests
        again, in reverse order under another hash seed, and a test both runs answered that changed is
        ``nondeterministic``; a test the second run could not answer (out of time, cut, not reached)
        tells nothing, and leaves it ``undecided``."""
        order = list(range(len(task.tests)))[::-1]
        second = self._reference_run(spend, task, [task.tests[i].input for i in order], hash_seed=1)
        if second.load_error is not None:
            return "nondeterministic", f"the reference loaded once and not on a second run: {second.load_error}"
        got = dict(zip(order, second.outputs, strict=True))
        unknown = None
        for i in range(len(task.tests)):
            b = got.get(i)
            if b is None or b.status == "timeout":
                unknown = i if unknown is None else unknown
                continue
            a = first.outputs[i]
            if not (b.ok and same_across_runs(a.value, b.value)):
                return (
                    "nondeterministic",
                    f"test {i} ({task.tests[i].input[:60]}): output changed on a second run "
                    "(another hash seed, the tests in reverse order)",
                )
        if unknown is not None:
            return (
                "undecided",
                f"test {unknown} ({task.tests[unknown].input[:60]}): a second run (another hash seed, the tests "
                "in reverse order) could not answer it within its budget: whether the reference's output "
                "depends on call order or the hash seed cannot be decided",
            )
        return None

    def _beyond_the_tests(self, spend: _Spend, task: Task, slowest_cpu_s: float) -> tuple[str, str] | None:
        """Why the reference is not a function of its input beyond the tests, or None when it is as far as
        ``DETERMINISM_QUORUM`` probes or more show.

        Two runs on ``python_mutants.determinism_probes`` (hash seeds 0 and 1, the second over the probes the
        first answered, in reverse), run as the judge runs the reference (``_reference_run``'s runner):
        a probe both answered that differs (a value, or an exception where the other returned) is
        ``nondeterministic``. The calls get the mutation gate's CPU budget first (``_gate_budget``: a
        program's cost on the tests, sized in CPU time), and while fewer than the quorum are told the
        probes that ran out of it are run again with the judge's whole ``sandbox.test_timeout_s``: a
        reference that burns time before it flips its coin is probed all the same. A probe that runs
        out of time or blocks in either run tells nothing; too few told is ``undecided``."""
        args_list = [a for a in (parse_input(t.input) for t in task.tests) if isinstance(a, tuple)]
        sig = behaviour.signature(args_list[0]) if args_list else None
        shared = behaviour.probes(sig) if sig is not None else []
        probes: list[tuple[Any, ...]] = []
        texts: list[str] = []
        for probe in determinism_probes(args_list, task.reference_code, shared):
            text = _literal(probe)
            if text is not None:
                probes.append(probe)
                texts.append(text)
        if not probes:
            return None
        rung = _rung(slowest_cpu_s, self.test_timeout_s)
        count = min(len(probes), max(DETERMINISM_QUORUM, int(PROBE_CPU_S / rung)))
        need = min(DETERMINISM_QUORUM, count)
        limits = replace(self.limits, timeout_s=min(self.limits.timeout_s, max(PROBE_EXECUTION_S, WALL_ROOM * rung)))
        told = 0
        pending = list(range(count))
        first_budget = self._gate_budget(slowest_cpu_s)
        stages = [(first_budget, PROBE_TIMEOUTS)]
        if first_budget < self.test_timeout_s:
            stages.append((self.test_timeout_s, RETRY_TIMEOUTS))
        for budget, timeouts in stages:

            def run(positions: list[int], seed: int, budget: float = budget, timeouts: int = timeouts) -> _Carried:
                return self._carried(
                    spend,
                    [texts[j] for j in positions],
                    budget,
                    source=lambda _: task.reference_code,
                    entry=task.entry_point,
                    hash_seed=seed,
                    max_timeouts=timeouts,
                    limits=limits,
                    block_s=BLOCK_S,
                    crash="skip",
                )

            forward = run(pending, 0)
            answered = [j for j, o in zip(pending, forward.outputs, strict=True) if _told(o)]
            backward = run(answered[::-1], 1)
            for run_ in (forward, backward):
                if run_.load_error is not None:
                    return "nondeterministic", f"the reference loaded once and not on another run: {run_.load_error}"
            first = dict(zip(pending, forward.outputs, strict=True))
            second = dict(zip(answered[::-1], backward.outputs, strict=True))
            for j in answered:
                a, b = first[j], second[j]
                if a is None or not _told(b):
                    continue
                assert b is not None
                told += 1
                if not same_outcome(a, b):
                    return (
                        "nondeterministic",
                        f"on an input no test has, {task.entry_point}{_text_or_type(probes[j])[:80]}, the reference "
                        "gave different outputs in two runs (another hash seed, another call order): its output "
                        "must depend on its input alone, beyond the tests too",
                    )
            if told >= need:
                return None
            # what a larger CPU budget may tell: the probes that ran out of this one in either run
            ran_out = [j for j in pending if _out_of_cpu(first.get(j)) or _out_of_cpu(second.get(j))]
            pending = ran_out[: 2 * (need - told)]
            if not pending:
                break
        return (
            "undecided",
            f"the reference answered {told} of {count} inputs beyond its tests in both of two runs ({need} "
            "needed; on the others it ran out of time even with the whole test budget, blocked, or the gates' "
            "budget ran out): whether its output depends on its input alone there cannot be decided",
        )

    def _mutation_gate(
        self, spend: _Spend, task: Task, first: CallsOutcome
    ) -> tuple[MutationStats | str | None, Mutant | None, Mutant | None]:
        """Run the reference's mutants on the tests, then the survivors on the probe inputs.

        One call per (version, input) through ``mutation``'s dispatcher, each with a short CPU budget
        (``MUTANT_CALL_BUDGET_S``; more for a heavy reference, ``_gate_budget``): a mutant that loops
        is cut off early and dies once. A call that runs out of its budget, or blocks, is unknown, not a
        difference: a mutant is *killed* only by an output or exception where the reference answered, a
        *survivor* only when every test saw the reference's output, and *unknown* otherwise. A survivor
        is *real* when some probe the reference answers shows another output, *equivalent* when every
        such probe shows the same, and else its probes that ran out of CPU are run again with the whole
        test budget; a survivor they still cannot place (or that blocked) is *undecided*. Returns the
        stats, the first real survivor and the first undecided one (None when there is none); in place
        of the stats, why the gate could not run the reference on its own tests (no baseline).
        """
        if self.min_kill_rate <= 0:
            return None, None, None
        found = list(language_of(task).mutants(task.reference_code, self.max_mutants, key=task.reference_code))
        if not found:
            return None, None, None
        started = time.monotonic()
        args_list = [parse_input(t.input) for t in task.tests]
        versions = [task.reference_code, *(m.source for m in found)]
        n = len(args_list)
        calls = [(k, i, args) for k in range(len(versions)) for i, args in enumerate(args_list)]
        # sized by the CPU time the reference's own test calls took: the same on a loaded machine
        budget = self._gate_budget(_slowest_cpu(first))
        digests = self._digests(spend, task, versions, calls, budget)
        if digests is not None and budget < self.test_timeout_s and TIMED_OUT in digests[:n]:
            budget = self.test_timeout_s  # the reference itself needs more here (by CPU time)
            digests = self._digests(spend, task, versions, calls, budget)
        if digests is None:  # a test with no literal to send: nothing to compare
            return None, None, None
        reference = digests[:n]
        if not all(_answered(d) for d in reference):
            return (
                (
                    "the mutation gate could not run the reference on its own tests within the test budget (it ran "
                    "out of time or blocked there, or the gates' budget ran out): whether the tests are strong enough "
                    "cannot be decided"
                ),
                None,
                None,
            )
        survivors: list[int] = []
        unknown = 0
        for k in range(1, len(versions)):
            own = digests[k * n : (k + 1) * n]
            if any(_observed(d) and d != r for d, r in zip(own, reference, strict=True)):
                continue  # killed: some test saw another output or an exception
            if all(_observed(d) for d in own):
                survivors.append(k)
            else:
                unknown += 1
        real: list[int] = []
        unsure: list[int] = []
        if survivors:
            probes = probe_inputs([a for a in args_list if isinstance(a, tuple)])
            verdicts = self._probe_survivors(spend, task, versions, survivors, probes, budget)
            real = [k for k in survivors if verdicts[k] == "real"]
            unsure = [k for k in survivors if verdicts[k] == "undecided"]
        stats = MutationStats(
            total=len(found),
            killed=len(found) - len(survivors) - unknown,
            equivalent=len(survivors) - len(real) - len(unsure),
            survived=len(real),
            unknown=unknown,
            seconds=time.monotonic() - started,
            undecided=len(unsure),
        )
        return (
            stats,
            found[real[0] - 1] if real else None,
            found[unsure[0] - 1] if unsure else None,
        )

    def _gate_budget(self, slowest_cpu_s: float) -> float:
        """The mutation gate's CPU budget a call: ``MUTANT_BUDGET_FACTOR`` times the reference's rung on
        the gate's ladder (``_rung`` from ``MUTANT_CALL_BUDGET_S / MUTANT_BUDGET_FACTOR``, by the CPU time
        its slowest test call took): ``MUTANT_CALL_BUDGET_S`` for a task-sized reference, at most the test
        budget."""
        rung = _rung(slowest_cpu_s, self.test_timeout_s, start=MUTANT_CALL_BUDGET_S / MUTANT_BUDGET_FACTOR)
        return min(self.test_timeout_s, MUTANT_BUDGET_FACTOR * rung)

    def _probe_survivors(
        self,
        spend: _Spend,
        task: Task,
        versions: list[str],
        survivors: list[int],
        probes: list[tuple[Any, ...]],
        budget: float,
    ) -> dict[int, str]:
        """Each survivor's verdict on the probes: ``real`` (some probe the reference answers shows
        another output or an exception), ``equivalent`` (every such probe shows the same), or
        ``undecided`` (neither: some such probe unknown even with the whole test budget, or blocked,
        which no budget decides). When a probe cannot be written as a literal nothing tells them apart:
        ``equivalent``, as with no probe.

        Only a probe the reference answers could become a test (one where it raises or runs out of time
        would make the task invalid), so the reference runs on the probes alone first, and stops after
        ``PROBE_TIMEOUTS`` timeouts (a reference that loops or blocks on the probes costs that many, not
        one per probe); the survivors then run on the probes it answered. What ran out of the short CPU
        budget is run again with the whole test budget."""
        verdicts: dict[int, str] = {}
        pending = list(survivors)
        base: dict[int, Digest | None] = {}
        stages = [(budget, PROBE_TIMEOUTS)]
        if budget < self.test_timeout_s:
            stages.append((self.test_timeout_s, RETRY_TIMEOUTS))
        for attempt_budget, cap in stages:
            todo = [i for i in range(len(probes)) if base.get(i) in (None, TIMED_OUT)]
            ref = self._digests(spend, task, versions, [(0, i, probes[i]) for i in todo], attempt_budget, cap)
            if ref is None:
                return {**verdicts, **dict.fromkeys(pending, "equivalent")}
            base.update((i, d) for i, d in zip(todo, ref, strict=True) if d is not None or i not in base)
            usable = [i for i in range(len(probes)) if _answered(base.get(i))]
            calls = [(k, i, probes[i]) for k in (0, *pending) for i in usable]
            seen = self._digests(spend, task, versions, calls, attempt_budget) if usable else []
            if seen is None:
                return {**verdicts, **dict.fromkeys(pending, "equivalent")}
            # the reference's answers as this run gave them (the same, for a reference that passed the
            # determinism gates; where it did not answer again the probe tells nothing)
            again = seen[: len(usable)]
            still: list[int] = []
            for m, k in enumerate(pending, start=1):
                own = seen[m * len(usable) : (m + 1) * len(usable)]
                pairs = [(d, b) for d, b in zip(own, again, strict=True) if _answered(b)]
                if any(_observed(d) and d != b for d, b in pairs):
                    verdicts[k] = "real"
                elif all(_observed(d) for d, _ in pairs):
                    verdicts[k] = "equivalent"
                elif any(d == TIMED_OUT for d, _ in pairs):
                    still.append(k)  # more CPU may tell
                else:
                    verdicts[k] = "undecided"  # blocked, or not reached: more CPU cannot tell
            pending = still
            if not pending:
                break
        return {**verdicts, **dict.fromkeys(pending, "undecided")}

    def _digests(
        self,
        spend: _Spend,
        task: Task,
        versions: list[str],
        calls: list[tuple[int, int, Any]],
        budget: float,
        max_timeouts: int | None = None,
    ) -> list[Digest | None] | None:
        """(ok, digest) of each call through the dispatcher (``TIMED_OUT`` for one that ran out of its CPU
        budget, ``BLOCKED`` for one that blocked or that the machine cut even in an execution of its own),
        None for a call that did not run: not reached, or a mutant's call after it was told apart or ran
        out of time (so the verdict never depends on where a timer happened to fire). None for the whole
        when a call cannot be written as a literal, or the code does not load (the gate is then skipped,
        not guessed). Carried on over the machine's cuts (``_carried``), the dispatcher's state with it.
        """
        # each distinct input written and read back once, not once per version: each call gets a fresh
        # copy of what was read (marshal's round trip: the request keeps shared objects shared)
        written: dict[int, tuple[str, bytes]] = {}
        inputs: list[str | tuple[Any, ...]] = []
        for k, i, args in calls:
            known = written.get(i)
            if known is None:
                read = _written(args)
                if read is None:
                    return None
                known = written[i] = (read[0], marshal.dumps(read[1]))
            text, frozen = known
            call = f"({k}, {i}, {text[1:]}"
            # the text's length is what parse_input checks first: one near the limit takes its way
            inputs.append((k, i, *marshal.loads(frozen)) if len(call) <= MAX_INPUT_CHARS else call)
        out: list[Digest | None] = [None] * len(calls)
        base: dict[int, str | None] = {}
        dead: set[int] = set()

        def seen(j: int, output: Output) -> None:
            out[j] = _replay(calls[j], _digest(output), base, dead)

        run = self._carried(
            spend,
            inputs,
            budget,
            source=lambda _: dispatcher_source(
                task.entry_point,
                versions,
                budget,
                self.test_timeout_s,
                base=base,
                dead=dead,
            ),
            entry=DISPATCHER,
            max_timeouts=max_timeouts,
            block_s=BLOCK_S,
            seen=seen,
            crash="fail",
        )
        if run.load_error is not None:
            return None
        return out

    def _carried(
        self,
        spend: _Spend,
        inputs: Sequence[str | tuple[Any, ...]],
        budget: float,
        *,
        source: Callable[[int], str],
        entry: str,
        hash_seed: int = 0,
        max_timeouts: int | None = None,
        limits: Limits | None = None,
        block_s: float | None = None,
        seen: Callable[[int, Output], None] | None = None,
        crash: Literal["stop", "fail", "skip"] = "stop",
    ) -> _Carried:
        """``entry`` of ``source(start)`` called on each of ``inputs`` (``budget`` CPU seconds a call), in
        as many executions as the machine's cuts take: the one runner of the gates.

        A call the wall clock cut while it computed (``_cut``: its execution's deadline came first), or
        the call an execution was killed on at its deadline, is the machine's doing: the next execution
        goes on from that call (``source(start)`` may carry state over, ``seen`` hears each output kept,
        in order), so how far one execution got on a loaded machine never shows in the result. Such a
        call that was already the first of its execution had all an execution gives: it is kept as cut
        (unknown) and the next goes on after it. An execution that ended another way (out of memory,
        killed) stops the run (``crash="stop"``), or counts the call it ended on as an exception
        (``"fail"``) or as not run (``"skip"``) and goes on after it. ``max_timeouts`` counts over the
        whole run, as ``execute_calls`` counts it; ``spend`` bounds the executions. ``block_s``: the wall
        clock ends a call only when it blocks (``execute_calls``); the reference's own test runs leave
        it None, to be run exactly as the judge runs them.
        """
        limits = limits or self.limits
        out: list[Output | None] = []
        timeouts = 0
        last: CallsOutcome | None = None

        def keep(output: Output | None) -> None:
            nonlocal timeouts
            if output is not None:
                timeouts += output.status == "timeout"
                if seen is not None:
                    seen(len(out), output)
            out.append(output)

        def more() -> bool:
            return len(out) < len(inputs) and (max_timeouts is None or timeouts < max_timeouts)

        while more() and spend.take():
            start = len(out)
            outcome = execute_calls(
                self.sandbox,
                source(start),
                entry,
                inputs[start:],
                limits,
                budget,
                hash_seed=hash_seed,
                max_timeouts=None if max_timeouts is None else max_timeouts - timeouts,
                block_s=block_s,
            )
            last = outcome
            if outcome.load_error is not None:
                return _Carried([*out, *[None] * (len(inputs) - len(out))], outcome.result, outcome.load_error)
            cut = next((j for j, o in enumerate(outcome.outputs) if _cut(o)), None)
            for output in outcome.outputs[:cut]:
                keep(output)
                if not more():
                    break
            if not more() or (cut is None and outcome.stopped):
                break
            if cut is None and outcome.result.status != "timeout":
                if crash == "stop":
                    break
                ended = Output("error", None, f"the execution ended: {outcome.result.status}")
                keep(ended if crash == "fail" else None)
            elif len(out) == start:  # the first call of an execution of its own was cut: unknown, go on after it
                cut_short = Output("timeout", None, f"timed out after {budget:g} s", timer="wall")
                keep(outcome.outputs[0] if cut == 0 else cut_short)
        result = last.result if last is not None else ExecutionResult(status="ok")
        if result.status == "timeout":  # a deadline the run went on past: each call says what became of it
            result = replace(result, status="ok")
        return _Carried([*out, *[None] * (len(inputs) - len(out))], result)

    @staticmethod
    def _weak_tests(task: Task) -> str:
        """Why the tests are too weak, or '' when every trivial stand-in fails some test."""
        args = [parse_input(t.input) for t in task.tests]  # all tuples: the bad_input gate came first
        stand_ins = [*STAND_INS, ("the first argument", None)]
        for name, constant in stand_ins:
            fooled = True
            for test, call_args in zip(task.tests, args, strict=True):
                first = call_args[0] if isinstance(call_args, tuple) and call_args else None
                value = first if name == "the first argument" else constant
                if not passes(value, test):
                    fooled = False
                    break
            if fooled:
                return f"the tests do not reject a function returning {name}"
        return ""


class _Spend:
    """What one task's gates may still spend: ``MAX_GATE_EXECUTIONS`` sandbox executions in all."""

    def __init__(self, executions: int = MAX_GATE_EXECUTIONS) -> None:
        self.left = executions
        self.exhausted = False
        """An execution was wanted after the last was spent (some call was never run)."""

    def take(self) -> bool:
        """Spend one execution; False (and ``exhausted``) when none is left."""
        if self.left <= 0:
            self.exhausted = True
            return False
        self.left -= 1
        return True


@dataclass(frozen=True)
class _Carried:
    """What ``Validator._carried`` ran: one entry per input, in input order."""

    outputs: list[Output | None]
    """Each call's output (a call the machine cut even in an execution of its own is a timeout ``_cut``
    says so of), None where it was not run (the calls stopped, the gates' budget ran out, or it was
    skipped)."""
    result: ExecutionResult
    """The last execution's result (status ``ok`` when the run went on past a deadline)."""
    load_error: str | None = None


def _as_outcome(run: _Carried) -> CallsOutcome:
    """A carried run as ``execute_calls`` returns one: the outputs up to the first call not run."""
    outputs: list[Output] = []
    for output in run.outputs:
        if output is None:
            break
        outputs.append(output)
    return CallsOutcome(run.result, outputs, run.load_error)


def _blocked(output: Output) -> bool:
    """A call that blocked (the harness's block detector ended it, or the wall backstop did while it used
    next to no CPU, ``BLOCKED_SHARE``): it slept or waited, which is the program's doing, and no budget
    would have decided it."""
    if output.status != "timeout":
        return False
    if output.timer == "blocked":
        return True
    return (
        output.timer == "wall"
        and output.cpu_ms is not None
        and output.cpu_ms < BLOCKED_SHARE * (output.duration_ms or 0.0)
    )


def _cut(output: Output) -> bool:
    """A call the wall clock ended while it computed (its execution's deadline came first): the
    machine's doing, which says nothing of the program."""
    return output.status == "timeout" and output.timer == "wall" and not _blocked(output)


def _told(output: Output | None) -> bool:
    """Whether a call ran to an outcome (an output or an exception) that two runs can compare."""
    return output is not None and output.status in ("ok", "error")


def _out_of_cpu(output: Output | None) -> bool:
    """A call that ran out of its CPU budget (a larger one may tell)."""
    return output is not None and output.status == "timeout" and output.timer not in ("blocked", "wall")


def same_outcome(a: Output, b: Output) -> bool:
    """Two runs' outcomes of one call are the same: the same value (``same_across_runs``), or an exception
    of the same type (abduction's judge asks it of the reference, which must agree with itself)."""
    if a.ok or b.ok:
        return a.ok and b.ok and same_across_runs(a.value, b.value)
    return (a.error or "").split(":")[0] == (b.error or "").split(":")[0]


def _slowest_cpu(outcome: CallsOutcome) -> float:
    """CPU seconds the slowest call took (0 where the harness did not say)."""
    return max((o.cpu_ms or 0.0 for o in outcome.outputs), default=0.0) / 1000


def _rung(cpu_s: float, cap: float, start: float = LADDER_S) -> float:
    """The first rung of the CPU-time ladder (``start``, doubled at each rung) that ``cpu_s`` fits in, or
    the first past ``cap``."""
    rung = start
    while rung < cpu_s and rung < cap:
        rung *= 2
    return rung


def _literal(args: Any) -> str | None:
    """The text of an argument tuple that reads back as the same value, or None (an int too long to
    print, or a value with no literal)."""
    written = _written(args)
    return None if written is None else written[0]


def _written(args: Any) -> tuple[str, Any] | None:
    """``_literal``'s text and the value ``parse_input`` reads back from it, or None."""
    try:
        text = repr(tuple(args))
    except ValueError:  # an int too long for repr
        return None
    value = parse_input(text)
    return (text, value) if value == tuple(args) else None


Digest = tuple[bool, Any]
"""A call's outcome as the gates compare it: (True, its output's digest), (False, None) for an exception,
``TIMED_OUT`` or ``BLOCKED``."""
TIMED_OUT: Digest = (False, "timeout")
"""A call that ran out of its CPU budget: a larger budget may decide it."""
BLOCKED: Digest = (False, "blocked")
"""A call that blocked, or that the machine cut even in an execution of its own: no budget decides it."""


def _digest(output: Output) -> Digest | None:
    """A dispatcher call's outcome; None for :data:`mutation.DEAD` (the call did not run)."""
    if output.ok:
        return None if output.value == DEAD else (True, output.value)
    if output.status == "timeout":
        return TIMED_OUT if output.timer not in ("blocked", "wall") else BLOCKED
    return (False, None)


def _replay(
    call: tuple[int, int, Any], digest: Digest | None, base: dict[int, str | None], dead: set[int]
) -> Digest | None:
    """The dispatcher's own rule, replayed outside on what came back (and its state carried on): the
    reference's call sets input ``i``'s baseline; a mutant is dead once it shows another output, or fails,
    where the reference answered; a dead mutant's calls count as not run, whether or not they ran."""
    k, i, _ = call
    if k == 0:
        base[i] = digest[1] if digest is not None and digest[0] else None
        return digest
    if k in dead or digest is None:
        return None
    if base.get(i) is not None and (not digest[0] or digest[1] != base[i]):
        dead.add(k)
    return digest


def _observed(d: Digest | None) -> bool:
    """Whether a call ran to an answer (an output or an exception): one that timed out, blocked or did
    not run tells nothing."""
    return d is not None and d != TIMED_OUT and d != BLOCKED


def _answered(d: Digest | None) -> bool:
    """Whether a call returned an output."""
    return d is not None and d[0]


def _rate(stats: MutationStats, more_survivors: int) -> float:
    """The kill rate were ``more_survivors`` mutants real survivors too."""
    judged = stats.killed + stats.survived + more_survivors
    return 1.0 if judged == 0 else stats.killed / judged


def _text_or_type(args: tuple[Any, ...]) -> str:
    try:
        return repr(args)
    except ValueError:
        return "(<an int too long to print>)"


def same_across_runs(a: Any, b: Any) -> bool:
    """Whether two runs' outputs are the same value: exact types (``1`` is not ``True`` or ``1.0``),
    NaN the same as NaN, unsupported values by their type only (their repr may show an address)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is complex:
        return same_across_runs(a.real, b.real) and same_across_runs(a.imag, b.imag)
    if type(a) is list or type(a) is tuple:
        return len(a) == len(b) and all(same_across_runs(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same_across_runs(a[k], b[k]) for k in a)
    if type(a) is Unsupported:
        return bool(a.type_name == b.type_name)
    return bool(a == b)


def to_json_or_repr(value: Any) -> str:
    try:
        return repr(to_json(value))
    except UnsupportedOutput:
        return "an output with no JSON form"
