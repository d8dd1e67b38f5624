"""Stage 2: prove a proposed task sound before anyone is asked to solve it.

Gates, in SPEC order; the first that fails is the task's ``reason``:
``syntax_error``, ``banned_import`` (only when ``validation.banned_imports`` names modules),
``missing_entry_point``, ``bad_input``, ``too_few_tests``, ``timeout``, ``runtime_error``,
``nondeterministic``, ``expected_mismatch``, ``weak_tests``.
The reference runs on every test whenever its code loads, whatever the reason, so ``verify``
always reports its own verdict (``judge.final_status``, as for any attempt). Near-duplicates are a
run-level gate (the controller's). The reference runs and is compared through ``judge``, like
every other piece of code judged.
"""

from __future__ import annotations

import ast
import math
import time
from dataclasses import dataclass
from typing import Any

from . import behaviour, pyast
from .judge import Judge, compare_outputs, final_status, parse_input
from .mutation import DISPATCHER, MAX_MUTANTS, Mutant, dispatcher_source, mutants, probe_inputs
from .sandbox.base import Limits, Sandbox
from .sandbox.runner import CallsOutcome, execute_calls
from .sandbox.verdict import Output, Unsupported, UnsupportedOutput, matches, to_json
from .types import Task, TestCase, TestStatus

MIN_TESTS = 3
MUTANT_CALL_FLOOR_S = 0.1
"""Shortest per-call budget of the mutation gate: far above what a task-sized call takes, so
whether a mutant times out does not hang on the machine's load (one that loops costs it once)."""
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
    """Mutants the execution did not get to (it ran out of time or memory): counted neither way."""
    seconds: float
    """Wall time of the gate's executions (the cost it adds to validation)."""

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
            "kill_rate": round(self.kill_rate, 4),
            "mutation_s": round(self.seconds, 3),
        }


def banned_import(tree: ast.Module, banned: frozenset[str]) -> str | None:
    """Where the code imports a module of ``banned`` (by its top-level name), or None.

    Sees ``import x.y``, ``from x import y``, and calls ``__import__("x")`` and
    ``importlib.import_module("x")`` with a literal name. This is a policy for determinism and
    portability, not security: the sandbox is the boundary, and computed names are not chased.
    """
    if not banned:
        return None
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in banned:
                return f"line {getattr(node, 'lineno', '?')}: imports {name!r}, which validation.banned_imports bans"
    return None


def defines_name(tree: ast.Module, name: str) -> bool:
    """Whether the module's top level binds ``name`` (def, class, assignment or import)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
        if isinstance(node, (ast.If, ast.Try, ast.With)) and defines_name(
            ast.Module(body=_children(node), type_ignores=[]), name
        ):
            return True
    return False


def _children(node: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for attr in ("body", "orelse", "finalbody"):
        out.extend(getattr(node, attr, []) or [])
    for handler in getattr(node, "handlers", []) or []:
        out.extend(handler.body)
    return out


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
    ) -> None:
        """``min_kill_rate``: the share of non-equivalent mutants the tests must kill (0: mutants are
        not run); ``max_mutants``: mutants run per task at most; ``fingerprint_behaviour``: run a
        valid task's reference on its signature's shared probes (the run's duplicate gate needs it,
        ``verify`` does not)."""
        self.fingerprint_behaviour = fingerprint_behaviour
        self.sandbox = sandbox
        self.limits = limits
        self.test_timeout_s = test_timeout_s
        self.banned_imports = frozenset(banned_imports)
        self.min_kill_rate = min_kill_rate
        self.max_mutants = max_mutants
        # every test is tried, however many time out: ``verify`` reports the reference on all of them
        self.judge = Judge(sandbox, limits, test_timeout_s, max_timeouts=None)

    def _run(self, task: Task, hash_seed: int) -> CallsOutcome:
        return self.judge.outputs(task, task.reference_code, hash_seed=hash_seed)

    def validate(self, task: Task, *, test_strength: bool = True) -> ValidationReport:
        """SPEC's gates in order. ``test_strength=False`` stops before ``weak_tests`` (stand-ins and
        mutants): kinds whose tests are queries rather than a specification judge that their own way."""
        total = len(task.tests)

        def report(
            reason: str | None, detail: str, status: TestStatus = "error", passed: int = 0, filled: Task | None = None
        ) -> ValidationReport:
            return ValidationReport(task.task_id, reason is None, reason, detail, status, passed, total, filled)

        try:
            tree = pyast.parse(task.reference_code)
            pyast.compile_tree(tree, "<reference>")
        except (SyntaxError, ValueError) as e:
            return report("syntax_error", f"reference does not compile: {e}")
        if task.shows_examples:
            return self._validate_check_mode(task)
        static_reason: tuple[str, str] | None = None
        banned = banned_import(tree, self.banned_imports)
        if banned is not None:
            static_reason = ("banned_import", banned)
        elif not defines_name(tree, task.entry_point):
            static_reason = ("missing_entry_point", f"reference does not define {task.entry_point!r}")
        else:
            for i, test in enumerate(task.tests):
                parsed = parse_input(test.input)
                if isinstance(parsed, str):
                    static_reason = ("bad_input", f"test {i}: {parsed}")
                    break
            else:
                if total < MIN_TESTS:
                    static_reason = ("too_few_tests", f"{total} tests, at least {MIN_TESTS} needed")

        first = self._run(task, hash_seed=0)
        filled, status, passed, runtime = self._own_verdict(task, first)
        if static_reason is not None:
            return report(*static_reason, status=status, passed=passed, filled=filled)
        if runtime is not None:
            return report(*runtime, status=status, passed=passed, filled=filled)
        assert filled is not None
        second = self._run(task, hash_seed=1)
        for i, (a, b) in enumerate(zip(first.outputs, second.outputs, strict=False)):
            if not (a.ok and b.ok and same_across_runs(a.value, b.value)):
                return report(
                    "nondeterministic",
                    f"test {i} ({task.tests[i].input[:60]}): output changed on a second run under another hash seed",
                    status=status,
                    passed=passed,
                    filled=filled,
                )
        if len(second.outputs) != len(first.outputs):
            return report(
                "nondeterministic",
                "a second run under another hash seed did not finish like the first",
                status=status,
                passed=passed,
                filled=filled,
            )
        for i, test in enumerate(task.tests):
            if test.has_expected and not matches(first.outputs[i].value, test.expected):
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
            stats, survivor = self._mutation_gate(filled, first)
            if stats is not None and stats.kill_rate < self.min_kill_rate:
                assert survivor is not None
                detail = (
                    f"the tests miss {stats.survived} of {stats.total} mutants of the reference (kill rate "
                    f"{stats.kill_rate:.0%}, {self.min_kill_rate:.0%} needed); this one passes every test but "
                    f"differs on a nearby input, add a test that tells them apart:\n{survivor.diff}"
                )
                checked = report("weak_tests", detail, status=status, passed=passed, filled=filled)
            checked.mutation = stats
        if checked.valid and self.fingerprint_behaviour:
            checked.behaviour = self._behaviour(filled)
        return checked

    def _behaviour(self, task: Task) -> str | None:
        """The reference's outputs on the shared probes of its signature, as one fingerprint."""
        first = parse_input(task.tests[0].input) if task.tests else None
        sig = behaviour.signature(first) if isinstance(first, tuple) else None
        if sig is None:
            return None
        probes = behaviour.probes(sig)
        calls = [(0, j, p) for j, p in enumerate(probes)]
        # whether a probe times out depends on the machine: a reference that times out on any
        # probe gets no fingerprint (and costs one test budget), so a fingerprint is always the same
        outcomes = self._digests(task, [task.reference_code], calls, self.test_timeout_s, max_timeouts=1)
        if outcomes is None or any(o is None or o == (False, "timeout") for o in outcomes):
            return None
        return behaviour.fingerprint(sig, outcomes)

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
        self, task: Task, outcome: CallsOutcome
    ) -> tuple[Task | None, TestStatus, int, tuple[str, str] | None]:
        """The reference judged on its own tests; the task with expected values filled; a runtime reason."""
        result = outcome.result
        if outcome.load_error is not None:
            return None, "error", 0, ("runtime_error", f"reference does not load: {outcome.load_error}")
        if result.status == "timeout" or any(o.status == "timeout" for o in outcome.outputs):
            reason: tuple[str, str] | None = ("timeout", "the reference exceeds the time limit on some input")
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

    def _mutation_gate(self, task: Task, first: CallsOutcome) -> tuple[MutationStats | None, Mutant | None]:
        """Run the reference's mutants on the tests, then the survivors on the probe inputs.

        Two executions at most, each one call per (version, input) through ``mutation``'s
        dispatcher. A mutant's calls get a short budget (the reference's slowest call times 20, at
        least 0.25 s): a mutant that loops is cut off early and dies once. Returns the stats and
        the first non-equivalent survivor (None when none).
        """
        if self.min_kill_rate <= 0:
            return None, None
        found = mutants(task.reference_code, self.max_mutants, key=task.reference_code)
        if not found:
            return None, None
        started = time.monotonic()
        args_list = [parse_input(t.input) for t in task.tests]
        slowest_s = max((o.duration_ms or 0.0 for o in first.outputs), default=0.0) / 1000
        budget = min(self.test_timeout_s, max(MUTANT_CALL_FLOOR_S, 20 * slowest_s))
        versions = [task.reference_code, *(m.source for m in found)]
        calls = [(k, i, args) for k in range(len(versions)) for i, args in enumerate(args_list)]
        digests = self._digests(task, versions, calls, budget)
        if digests is None:
            return None, None
        reference = digests[: len(args_list)]
        if any(d is None or not d[0] for d in reference):  # the reference itself failed here: no baseline
            return None, None
        survivors: list[int] = []
        unknown = 0
        for k in range(1, len(versions)):
            own = digests[k * len(args_list) : (k + 1) * len(args_list)]
            if any(d is not None and d != r for d, r in zip(own, reference, strict=True)):
                continue  # killed: some test saw another output, an exception or a timeout
            if any(d is None for d in own):
                unknown += 1
            else:
                survivors.append(k)
        real: list[int] = []
        if survivors:
            probes = probe_inputs([a for a in args_list if isinstance(a, tuple)])
            probe_calls = [(k, i, p) for k in (0, *survivors) for i, p in enumerate(probes)]
            seen = self._digests(task, versions, probe_calls, budget) or []
            base = seen[: len(probes)]
            for n, k in enumerate(survivors, start=1):
                own = seen[n * len(probes) : (n + 1) * len(probes)]
                # only a probe the reference answers could become a test (one where it raises or
                # times out would make the task invalid), and one the run never got to proves nothing
                if any(d is not None and b is not None and b[0] and d != b for d, b in zip(own, base, strict=False)):
                    real.append(k)
        killed = len(found) - len(survivors) - unknown
        stats = MutationStats(
            total=len(found),
            killed=killed,
            equivalent=len(survivors) - len(real),
            survived=len(real),
            unknown=unknown,
            seconds=time.monotonic() - started,
        )
        return stats, (found[real[0] - 1] if real else None)

    def _digests(
        self,
        task: Task,
        versions: list[str],
        calls: list[tuple[int, int, Any]],
        budget: float,
        max_timeouts: int | None = None,
    ) -> list[tuple[bool, Any] | None] | None:
        """(ok, digest) of each call, None for a call the execution did not get to; None when a
        call cannot be written as a literal (the gate is then skipped rather than guessed)."""
        written: dict[int, str] = {}  # each distinct input written and read back once, not per version
        inputs = []
        for k, i, args in calls:
            text = written.get(i)
            if text is None:
                try:
                    text = repr(tuple(args))
                except ValueError:  # an int too long for repr: no literal to send
                    return None
                if parse_input(text) != tuple(args):
                    return None
                written[i] = text
            inputs.append(f"({k}, {i}, {text[1:]}")
        outcome = execute_calls(
            self.sandbox,
            dispatcher_source(task.entry_point, versions, budget, self.test_timeout_s),
            DISPATCHER,
            inputs,
            self.limits,
            budget,
            max_timeouts=max_timeouts,
        )
        if outcome.load_error is not None:
            return None
        out: list[tuple[bool, Any] | None] = [_digest(o) for o in outcome.outputs]
        return out + [None] * (len(calls) - len(out))

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
                if not matches(value, test.expected):
                    fooled = False
                    break
            if fooled:
                return f"the tests do not reject a function returning {name}"
        return ""


def _digest(output: Output) -> tuple[bool, Any]:
    """A call's outcome as the gate compares it: (True, its digest), (False, "timeout"), or
    (False, None) for an exception."""
    if output.ok:
        return True, output.value
    return False, "timeout" if output.status == "timeout" else None


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
