"""The ``spade`` command line.

Bad input gives one line on stderr and a non-zero exit (a traceback only with ``--debug``).
Heavy imports (litellm, the pipeline) happen inside the subcommands that need them, so
``spade --help``, ``exec``, ``verify`` and ``evaluate`` start fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import SpadeError, UserError

EXIT_USER = 2
EXIT_INTERNAL = 1


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line instead of usage + error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive(kind: type[int] | type[float], minimum: float = 1) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="spade",
        description="Self-play data generation for code LLMs: propose tasks, prove them in a "
        "sandbox, solve them over turns, keep verified (task, trajectory, feedback) data.",
    )
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add = sub.add_parser

    def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
        return _add(name, parents=[common], **kw)

    sub.add_parser = add_parser  # type: ignore[method-assign,assignment]

    run = sub.add_parser(
        "run",
        help="run the self-play loop",
        description="Run the self-play loop: propose, "
        "validate, solve and adapt, epoch after epoch. Offline on fake/<profile> by default.",
    )
    run.add_argument("--config", help="YAML config overriding configs/default.yaml")
    run.add_argument("--model", help="model for both roles (litellm string, or fake/<profile>)")
    run.add_argument("--generator-model", help="model that proposes tasks")
    run.add_argument("--solver-model", help="model that solves tasks")
    run.add_argument("--api-base", help="endpoint of an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    run.add_argument("--epochs", type=_positive(int), help="number of epochs")
    run.add_argument("--tasks-per-epoch", type=_positive(int), help="tasks asked for per epoch")
    run.add_argument("--concurrency", type=_positive(int), help="model requests and executions in flight")
    run.add_argument("--max-turns", type=_positive(int), help="solver attempts per task")
    run.add_argument("--samples-per-task", type=_positive(int), help="independent solver episodes per task (K)")
    run.add_argument("--goal", help='the capability the tasks should train, e.g. "dynamic programming on strings"')
    run.add_argument("--sandbox", choices=["auto", "subprocess", "bwrap", "docker"], help="sandbox backend")
    run.add_argument("--executor", choices=["local"], help="where episodes run (local asyncio)")
    run.add_argument("--prompts", help="folder of templates overriding the packaged ones by name")
    run.add_argument("--seed", type=int, help="root seed: same seed, same run")
    run.add_argument("--out", help="run directory (created; must be empty)")
    run.add_argument(
        "--resume",
        metavar="DIR",
        help="continue a killed or finished run in DIR (only --epochs, meaning the total, --concurrency and "
        "--api-base may change)",
    )
    run.add_argument("--quiet", action="store_true", help="print only the run directory")

    ex = sub.add_parser("exec", help="run one program in the sandbox, print its ExecutionResult as JSON")
    ex.add_argument("file", help="Python file, or - for stdin")
    ex.add_argument("--sandbox", default="auto", choices=["auto", "subprocess", "bwrap", "docker"])
    ex.add_argument("--timeout", type=_positive(float, 0.01), default=10.0, help="wall-clock limit, seconds")
    ex.add_argument("--memory-mb", type=_positive(int, 16), default=512, help="memory limit, MiB")

    ve = sub.add_parser("verify", help="validate tasks: one JSON line per task, a summary on stderr")
    ve.add_argument("tasks", help="tasks JSONL file")
    ve.add_argument("--sandbox", choices=["auto", "subprocess", "bwrap", "docker"], help="backend (default: auto)")
    ve.add_argument("--concurrency", type=_positive(int), default=os.cpu_count() or 2)
    ve.add_argument("--config", help="run config YAML whose sandbox: section sets the limits and backend")
    ve.add_argument("--timeout", type=_positive(float, 0.01), help="wall-clock limit per execution, seconds")

    ev = sub.add_parser("evaluate", help="judge solutions (the references by default) against the tasks' tests")
    ev.add_argument("tasks", help="tasks JSONL file")
    ev.add_argument("--samples", help='JSONL of {"task_id", "completion"} or {"task_id", "code"}')
    ev.add_argument("--sandbox", choices=["auto", "subprocess", "bwrap", "docker"], help="backend (default: auto)")
    ev.add_argument("--concurrency", type=_positive(int), default=os.cpu_count() or 2)
    ev.add_argument("--config", help="run config YAML whose sandbox: section sets the limits and backend")
    ev.add_argument("--timeout", type=_positive(float, 0.01), help="wall-clock limit per execution, seconds")

    so = sub.add_parser("solve", help="the solver alone on existing tasks (e.g. an imported benchmark)")
    so.add_argument("tasks", help="tasks JSONL file")
    so.add_argument("--model", required=True, help="solver model (litellm string, or fake/<profile>)")
    so.add_argument("--api-base", help="endpoint of an OpenAI-compatible server")
    so.add_argument("--max-turns", type=_positive(int), help="attempts per task")
    so.add_argument("--samples-per-task", type=_positive(int), help="independent episodes per task (K)")
    so.add_argument("--concurrency", type=_positive(int), help="requests and executions in flight")
    so.add_argument("--sandbox", choices=["auto", "subprocess", "bwrap", "docker"], help="sandbox backend")
    so.add_argument("--config", help="YAML config overriding configs/default.yaml")
    so.add_argument("--prompts", help="folder of templates overriding the packaged ones by name")
    so.add_argument("--seed", type=int, help="root seed")
    so.add_argument("--out", help="output directory (created; an existing one is resumed)")

    im = sub.add_parser("import", help="convert a benchmark into tasks")
    im.add_argument("format", choices=["humaneval"])
    im.add_argument("file", help="HumanEval-format JSONL (.gz ok)")
    im.add_argument("-o", "--output", required=True, help="tasks JSONL to write")

    sf = sub.add_parser("serve-fake", help="an OpenAI-compatible server backed by the fake model")
    sf.add_argument("--host", default="127.0.0.1", help="address to listen on")
    sf.add_argument("--port", type=_positive(int, 0), default=8000, help="port to listen on (0: any free port)")
    sf.add_argument("--latency", type=_positive(float, 0.0), default=0.0, help="seconds added to every answer")
    sf.add_argument("--seed", type=int, default=0, help="seed of the fake model")

    pr = sub.add_parser("prompts", help="list, show or check the prompt templates")
    pr.add_argument("action", choices=["list", "show", "check"])
    pr.add_argument("name", nargs="?", help="template name (show) or override folder (check)")
    pr.add_argument("--prompts", help="override folder (for list/show)")
    return p


# -- helpers ---------------------------------------------------------------------------------


def _read_tasks(path: str) -> list[Any]:
    from pydantic import ValidationError

    from .types import Task

    p = Path(path)
    if not p.is_file():
        raise UserError(f"tasks file not found: {p}")
    tasks = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate_json(line))
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "line"
            raise UserError(f"{p}:{n}: not a task: {where}: {err['msg']}") from None
    ids = [t.task_id for t in tasks]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise UserError(f"{p}: task_id repeated: {', '.join(dupes[:3])}")
    return tasks


def _sandbox(name: str) -> Any:
    import logging

    from .sandbox.registry import get_sandbox

    logging.basicConfig(format="spade: %(levelname)s: %(message)s", level=logging.WARNING)
    return get_sandbox(name)


# -- commands --------------------------------------------------------------------------------


RUN_FLAGS = {
    "model": "generator.model",
    "api_base": "generator.api_base",
    "generator_model": "generator.model",
    "epochs": "controller.epochs",
    "tasks_per_epoch": "controller.tasks_per_epoch",
    "concurrency": "controller.concurrency",
    "max_turns": "solver.max_turns",
    "samples_per_task": "solver.samples_per_task",
    "goal": "curriculum.goal",
    "sandbox": "sandbox.backend",
    "executor": "executor",
    "prompts": "prompts_dir",
    "seed": "seed",
}
"""``spade run`` flag -> the config key it sets (``--model`` and ``--api-base`` set the solver's too)."""
RUN_SOLVER_FLAGS = {"model": "solver.model", "api_base": "solver.api_base", "solver_model": "solver.model"}


def cmd_run(args: argparse.Namespace) -> int:
    from .config import load_config
    from .session import Session, load_resumed_config
    from .store import RunDir

    overrides = _overrides(args, RUN_FLAGS)
    solver_overrides = _overrides(args, RUN_SOLVER_FLAGS)
    overrides.setdefault("solver", {}).update(solver_overrides.get("solver", {}))

    if args.resume:
        if args.out and Path(args.out) != Path(args.resume):
            raise UserError("--out and --resume name different directories: resume writes into the run it resumes")
        if args.config:
            raise UserError("--config cannot change a run being resumed; flags like --epochs can")
        run = RunDir.open_existing(args.resume)
        stored = run.read_yaml("config.yaml")
        stored = stored if isinstance(stored, dict) else {}
        _check_resume_flags(args, stored, [*RUN_FLAGS.items(), *RUN_SOLVER_FLAGS.items()])
        config = load_resumed_config(run, overrides)
        session = Session(config)
    else:
        config = load_config(args.config, overrides)
        session = Session(config)  # checks models, templates and sandbox before making the directory
        try:
            run = RunDir.create(args.out, config.runs_dir)
        except BaseException:
            session.close()
            raise
    log = (lambda _m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    if not args.quiet:
        log(
            f"spade run: {config.generator.model} proposes, {config.solver.model} solves; "
            f"{config.controller.epochs} epochs x {config.controller.tasks_per_epoch} tasks -> {run.path}"
        )
    started = time.monotonic()
    with session:
        metrics = session.run(run, resumed=bool(args.resume), log=log)
    if args.quiet:
        print(run.path)
        return 0
    summary = json.loads((run.path / "summary.json").read_text())
    lines = ["", "epoch  difficulty  accepted  episodes  pass  first-try  turns  reward"]
    for m in metrics:
        lines.append(
            f"{m.epoch:>5}  {m.difficulty:>10.2f}  {m.tasks_accepted:>4}/{m.tasks_proposed:<3}  {m.episodes:>8}  "
            f"{_fmt(m.pass_rate, '4.0%')}  {_fmt(m.first_try_pass_rate, '9.0%')}  {_fmt(m.mean_turns, '5.2f')}  "
            f"{_fmt(m.mean_reward, '+6.2f')}"
        )
    lines += [
        "",
        f"{summary['tasks_accepted']} tasks accepted, {summary['tasks_rejected']} rejected "
        f"{summary['rejected_by_reason']}, {summary['trajectories']} trajectories, pass rate "
        f"{_fmt(summary['pass_rate'], '.0%')} ({time.monotonic() - started:.1f}s)",
        f"run directory: {run.path}",
        "  tasks.jsonl  trajectories.jsonl  task_stats.jsonl  metrics.jsonl  rejected.jsonl  summary.json"
        "  manifest.json  config.yaml",
    ]
    print("\n".join(lines))
    return 0


def _fmt(value: float | None, spec: str) -> str:
    """A number for a table; 'n/a' (right-aligned to the spec's width) when nothing was measured."""
    if value is None:
        width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
        return "n/a".rjust(width)
    return format(value, spec)


RESUMABLE = {"epochs", "concurrency", "api_base"}
"""Flags a resume may change: how long and how fast the run goes, and where the model is, never what it is."""


def _check_resume_flags(args: argparse.Namespace, stored: dict[str, Any], pairs: list[tuple[str, str]]) -> None:
    """A one-line error for a flag that would change what a resumed run is (its seed, models, size...).

    A flag that repeats the stored value is accepted (scripts that resume with their original flags).
    """
    for dest, path in pairs:
        value = getattr(args, dest, None)
        if value is None or dest in RESUMABLE:
            continue
        node: Any = stored
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node != value:
            flag = "--" + dest.replace("_", "-")
            raise UserError(
                f"{flag} cannot change a run being resumed (it was started with {node!r}); "
                "only --epochs (the total), --concurrency and --api-base can"
            )


def _overrides(args: argparse.Namespace, pairs: dict[str, str]) -> dict[str, Any]:
    """Nested config overrides from the flags that were given (``dest -> dotted.path``)."""
    overrides: dict[str, Any] = {}
    for dest, path in pairs.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        node = overrides
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return overrides


def cmd_solve(args: argparse.Namespace) -> int:
    from .config import load_config
    from .session import Session
    from .store import RunDir

    tasks = _read_tasks(args.tasks)
    config = load_config(
        args.config,
        _overrides(
            args,
            {
                "model": "solver.model",
                "api_base": "solver.api_base",
                "max_turns": "solver.max_turns",
                "samples_per_task": "solver.samples_per_task",
                "concurrency": "controller.concurrency",
                "sandbox": "sandbox.backend",
                "prompts": "prompts_dir",
                "seed": "seed",
            },
        ),
    )
    with Session(config, need_generator=False) as session:
        resumed = bool(args.out) and Path(args.out, "trajectories.jsonl").exists()
        run = RunDir.open_existing(args.out) if resumed else RunDir.create(args.out, config.runs_dir)
        summary = session.solve(tasks, run, resumed=resumed, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(
        f"{summary['trajectories']} trajectories, pass rate {_fmt(summary['pass_rate'], '.0%')} "
        f"(first try {_fmt(summary['first_try_pass_rate'], '.0%')}) -> {run.path}"
    )
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    from .sandbox.base import Limits
    from .sandbox.runner import run_program

    if args.file == "-":
        source = sys.stdin.read()
    else:
        p = Path(args.file)
        if not p.is_file():
            raise UserError(f"file not found: {p}")
        source = p.read_text(encoding="utf-8", errors="replace")
    sandbox = _sandbox(args.sandbox)
    try:
        result = run_program(sandbox, source, Limits(timeout_s=args.timeout, memory_mb=args.memory_mb))
    finally:
        sandbox.close()
    print(result.model_dump_json(exclude_none=False))
    return 0


def _run_concurrently(fn: Any, items: Sequence[Any], concurrency: int) -> Any:
    """Yield fn(item) results in input order, computing up to ``concurrency`` at once in threads."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        yield from pool.map(fn, items)


def cmd_verify(args: argparse.Namespace) -> int:
    # the config models are imported only with --config: these commands start fast (~0.2 s saved)
    from .judge import load_settings
    from .validation import Validator

    settings = load_settings(args.config, timeout_s=args.timeout, backend=args.sandbox)
    tasks = _read_tasks(args.tasks)
    if not tasks:
        raise UserError(f"{args.tasks}: no tasks in the file, nothing to verify")
    sandbox = _sandbox(settings.backend)
    validator = Validator(sandbox, settings.limits, settings.test_timeout_s)
    valid = 0
    reasons: dict[str, int] = {}
    try:
        for report in _run_concurrently(validator.validate, tasks, args.concurrency):
            print(json.dumps(report.row()), flush=True)
            valid += report.valid
            if report.reason:
                reasons[report.reason] = reasons.get(report.reason, 0) + 1
    finally:
        sandbox.close()
    print(
        f"verified {len(tasks)} tasks: {valid} valid, {len(tasks) - valid} invalid {reasons or ''}".rstrip(),
        file=sys.stderr,
    )
    return 0


def _read_samples(path: str, tasks: dict[str, Any]) -> list[tuple[Any, str]]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"samples file not found: {p}")
    samples = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{p}:{n}: not JSON: {e.msg}") from None
        task = tasks.get(str(row.get("task_id"))) if isinstance(row, dict) else None
        if task is None:
            raise UserError(f"{p}:{n}: unknown task_id {row.get('task_id') if isinstance(row, dict) else row!r}")
        if isinstance(row.get("code"), str):
            code = row["code"]
        elif isinstance(row.get("completion"), str):
            code = str(task.meta.get("prompt", "")) + row["completion"]
        else:
            raise UserError(f'{p}:{n}: a sample needs "completion" or "code"')
        samples.append((task, code))
    return samples


def cmd_evaluate(args: argparse.Namespace) -> int:
    from . import evaluator
    from .judge import Judge, final_status, load_settings

    settings = load_settings(args.config, timeout_s=args.timeout, backend=args.sandbox)
    tasks = _read_tasks(args.tasks)
    if not tasks:
        raise UserError(f"{args.tasks}: no tasks in the file, nothing to judge")
    by_id = {t.task_id: t for t in tasks}
    samples = _read_samples(args.samples, by_id) if args.samples else [(t, t.reference_code) for t in tasks]
    if not samples:
        raise UserError(f"{args.samples}: no samples in the file, nothing to judge")
    sandbox = _sandbox(settings.backend)
    judge = Judge(sandbox, settings.limits, settings.test_timeout_s)
    per_task: dict[str, list[bool]] = {}
    try:
        for (task, _code), result in zip(
            samples, _run_concurrently(lambda s: judge(s[0], s[1]), samples, args.concurrency), strict=True
        ):
            status = final_status(result)
            passed = status == "passed"
            per_task.setdefault(task.task_id, []).append(passed)
            print(
                json.dumps(
                    {
                        "task_id": task.task_id,
                        "passed": passed,
                        "status": status,
                        "exec_status": result.status,
                        "tests_passed": result.tests_passed,
                        "tests_total": result.tests_total,
                    }
                ),
                flush=True,
            )
    finally:
        sandbox.close()
    ks = [k for k in (1, 10, 100) if all(len(v) >= k for v in per_task.values())]
    scores = {
        f"pass@{k}": sum(evaluator.pass_at_k(len(v), sum(v), k) for v in per_task.values()) / max(1, len(per_task))
        for k in ks
    }
    print(
        f"{len(samples)} samples, {len(per_task)} tasks: "
        + ", ".join(f"{name} {value:.4f}" for name, value in scores.items()),
        file=sys.stderr,
    )
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from .importers import import_humaneval

    tasks = import_humaneval(args.file)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(t.dump()) + "\n" for t in tasks), encoding="utf-8")
    print(f"imported {len(tasks)} tasks -> {out}", file=sys.stderr)
    return 0


def cmd_serve_fake(args: argparse.Namespace) -> int:
    from .server import serve

    serve(args.host, args.port, args.latency, seed=args.seed)
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    from .templates import PACKAGED_DIR, Prompts, list_templates

    if args.action == "check":
        prompts = Prompts(args.name or args.prompts)
        problems = prompts.check_all()
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(list_templates())} templates checked, {len(problems)} problems", file=sys.stderr)
        return 1 if problems else 0
    prompts = Prompts(args.prompts)
    if args.action == "list":
        for name in list_templates():
            path = prompts.source_path(name)
            origin = "packaged" if path.is_relative_to(PACKAGED_DIR) else "user"
            print(f"{name}\t{origin}\t{path}")
        return 0
    if not args.name:
        raise UserError("prompts show needs a template name (see spade prompts list)")
    path = prompts.source_path(args.name)
    if not path.is_file():
        raise UserError(f"no template named {args.name} (see spade prompts list)")
    sys.stdout.write(path.read_text())
    return 0


COMMANDS = {
    "run": cmd_run,
    "solve": cmd_solve,
    "exec": cmd_exec,
    "verify": cmd_verify,
    "evaluate": cmd_evaluate,
    "import": cmd_import,
    "serve-fake": cmd_serve_fake,
    "prompts": cmd_prompts,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_USER
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        hint = (
            f"; continue with: spade run --resume {args.out or args.resume}"
            if args.command == "run" and (getattr(args, "out", None) or getattr(args, "resume", None))
            else ""
        )
        print(f"spade {args.command}: interrupted{hint}", file=sys.stderr)
        return 130
    except SpadeError as e:
        if args.debug:
            raise
        print(f"spade {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USER if isinstance(e, UserError) else EXIT_INTERNAL
    except BrokenPipeError:
        return 0
    except Exception as e:
        if args.debug:
            raise
        print(
            f"spade {args.command}: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
