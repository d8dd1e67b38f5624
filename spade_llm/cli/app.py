"""The ``spade`` command line.

Bad input gives one line on stderr and a non-zero exit (a traceback only with ``--debug``).
Heavy imports (litellm, the pipeline) happen inside the subcommands that need them, so
``spade --help``, ``exec``, ``verify`` and ``evaluate`` start fast. The flags, each declared once, and
the parser are ``flags.py``'s; the exit codes are ``errors.Exit``.
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EmptyEpochs, EndpointDown, ExecutorError, Exit, SandboxUnavailable, SpadeError, UserError
from ..sandbox.registry import AUTO
from .flags import COMMAND_SPECS, build_parser, command_parser, config_pairs

if TYPE_CHECKING:
    from ..evaluator import PassAtK

# -- helpers ---------------------------------------------------------------------------------


def _live(args: argparse.Namespace) -> bool:
    """Whether to draw a progress block: stderr is a terminal and ``--quiet`` was not given."""
    from ..progress import is_live_terminal

    return not getattr(args, "quiet", False) and is_live_terminal(sys.stderr)


def _sandbox_logging() -> None:
    import logging

    logging.basicConfig(format="spade: %(levelname)s: %(message)s", level=logging.WARNING)


def _sandbox(name: str) -> Any:
    from ..sandbox.registry import get_sandbox

    _sandbox_logging()
    return get_sandbox(name)


def _ray_address_means_ray(args: argparse.Namespace) -> None:
    if args.ray_address is None:
        return
    if args.executor == "local":
        raise UserError("--ray-address names a Ray cluster: it goes with --executor ray, not local")
    args.executor = "ray"


def _start_sandbox(name: str, *, one_run: bool = False) -> Any:
    """``_sandbox(name)`` started in a background thread (``.result()`` takes it): its workers start
    while the command imports the rest and reads its input. ``one_run``: see ``get_sandbox``."""
    import logging

    from ..sandbox.registry import start_sandbox

    logging.basicConfig(format="spade: %(levelname)s: %(message)s", level=logging.WARNING)
    return start_sandbox(name, one_run=one_run)


# -- commands --------------------------------------------------------------------------------


RUN_FLAGS = config_pairs("run")
"""``spade run``'s flags -> the config keys they set (``--model`` and ``--api-base`` set both roles')."""
SOLVE_FLAGS = config_pairs("solve")
"""``spade solve``'s flags -> the config keys they set (the solver's side)."""
ENV_FLAGS = config_pairs("serve-env")
"""``spade serve-env``'s flags -> the config keys they set: ``spade run``'s generator side (the clients
are the solver: no solver model; episodes run here, so no executor; no per-epoch report), and ``env:``'s."""


def cmd_run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..session import Session
    from ..store import RunDir

    _ray_address_means_ray(args)
    overrides = _overrides(args, RUN_FLAGS)

    if args.resume:
        stored_epochs = _stored_config(args.resume).get("controller", {}).get("epochs")
        run, config = _open_resumed("run", args, overrides)
        args.run_path = run.path
        _require_keys(config, generator=True, api_base=args.api_base)
        if not args.quiet:
            _tell_resume(run.path, stored_epochs, config.controller.epochs)
        session = Session(config)
    else:
        config = load_config(args.config, overrides)
        _require_keys(config, generator=True, api_base=args.api_base)
        session = Session(config)  # checks models, templates and sandbox before making the directory
        try:
            run = RunDir.create(args.out, config.runs_dir)
        except BaseException:
            session.close()
            raise
        args.run_path = run.path
    log: Callable[[str], None] = (lambda _m: None) if args.quiet else _say
    if not args.quiet:
        log(
            f"spade run: {config.generator.model} proposes, {config.solver.model} solves; "
            f"{config.controller.epochs} epochs x {config.controller.tasks_per_epoch} tasks -> {run.path}"
        )
    started = time.monotonic()
    try:
        with session:
            metrics = session.run(run, resumed=bool(args.resume), log=log, live=_live(args))
    except (EndpointDown, ExecutorError, EmptyEpochs) as e:
        return _stopped_early("run", e, run.path)
    finally:  # at once, not when the error's traceback is collected: a caller in this process may resume
        run.unlock()
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
        f"next: spade report {shlex.quote(str(run.path))}   (the run as a page)",
        f"      spade export {shlex.quote(str(run.path))} --format sft   (training data; dpo, grpo, verl too)",
    ]
    print("\n".join(lines))
    return 0


def _require_keys(config: Any, *, generator: bool, solver: bool = True, api_base: str | None = None) -> None:
    """One clear error, before anything is made, when a role's hosted model has no key to call it with
    (``llm.registry.missing_key``); without it the first request fails as an outage, exit 3. And when
    ``--api-base`` (``api_base``) names a server for a role whose model is the fake, which calls none: a
    user who forgot ``--model`` would get an offline run that looks like theirs.

    Raises:
        UserError: naming the role's model and the variable to set, or the flag to add.
    """
    from .._util.redact import scrub_secrets
    from ..llm.registry import missing_key

    roles = [("generator", config.generator)] if generator else []
    roles += [("solver", config.solver)] if solver else []
    served = [(role, section) for role, section in roles if section.api_base]
    if api_base and served and all(section.model.startswith("fake/") for _, section in served):
        models = " and ".join(f"the {role}'s {section.model}" for role, section in served)
        raise UserError(
            f"--api-base {scrub_secrets(api_base)} names a server, but no model calls it ({models}: the offline "
            "fake): name the served model too (--model openai/<name> --api-base URL)"
        )
    for role, section in roles:
        variable = missing_key(section)
        if variable is None:
            continue
        local = (
            "; for an OpenAI-compatible server that needs none, give --api-base URL"
            if section.model.startswith("openai/")
            else ""
        )
        raise UserError(
            f"{role} model {section.model} needs {variable}, which is not set: export it, or put it in a .env "
            f"file in the working directory (keys never go in the config){local}"
        )


def _resume_hint(args: argparse.Namespace) -> str:
    """What an interrupted ``run``/``solve`` says to continue: ``--resume DIR`` only for the run
    directory this command made or opened, once it holds a config (what ``--resume`` needs)."""
    path = getattr(args, "run_path", None)
    if args.command not in ("run", "solve") or path is None or not (Path(path) / "config.yaml").is_file():
        return ""
    return f"; continue with: spade {args.command} --resume {path}"


def _stopped_early(command: str, error: EndpointDown | ExecutorError | EmptyEpochs, path: Path) -> int:
    """A run stopped early (its infrastructure, or a generator whose tasks all fail; nothing lost): say
    so, and how to go on."""
    _say(f"spade {command}: stopped: {error} (continue with: spade {command} --resume {path})")
    if isinstance(error, EmptyEpochs):
        return Exit.EMPTY_EPOCHS
    return Exit.ENDPOINT if isinstance(error, EndpointDown) else Exit.EXECUTOR


def _fmt(value: float | None, spec: str) -> str:
    """A number for a table; 'n/a' (right-aligned to the spec's width) when nothing was measured."""
    if value is None:
        width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
        return "n/a".rjust(width)
    return format(value, spec)


def _open_resumed(command: str, args: argparse.Namespace, overrides: dict[str, Any]) -> tuple[Any, Any]:
    """The run directory named by ``--resume`` (locked) and its config with ``overrides``; the flags are
    checked against the stored config first (``_check_resume_flags``), so a refused resume touches nothing."""
    from ..session import load_resumed_config
    from ..store import RunDir, check_written_by

    if args.out and Path(args.out) != Path(args.resume):
        raise UserError("--out and --resume name different directories: resume writes into the run it resumes")
    if args.config:
        can = "--" + COMMAND_SPECS[command].resumable[0].replace("_", "-")
        raise UserError(f"--config cannot change a {command} being resumed; flags like {can} can")
    stored = _stored_config(args.resume)
    check_written_by(args.resume, command)  # run, solve and serve-env each resume their own directories
    _check_resume_flags(command, args, stored)
    _check_resume_prompts(command, getattr(args, "prompts", None), stored.get("prompts_dir"), Path(args.resume))
    run = RunDir.open_existing(args.resume)
    return run, load_resumed_config(run, overrides)


def _tell_resume(path: Path, stored_epochs: Any, epochs: int) -> None:
    """What a resume of ``spade run`` will do, said before it does it: a change of ``--epochs`` (kept in the
    run's ``config.yaml``), and a run whose epochs are all done already (nothing to run)."""
    metrics = path / "metrics.jsonl"
    finished = (
        sum(1 for line in metrics.read_text(encoding="utf-8").splitlines() if line.strip()) if metrics.is_file() else 0
    )
    if isinstance(stored_epochs, int) and stored_epochs != epochs:
        _say(
            f"spade run: --epochs {epochs} changes the run's epochs from {stored_epochs} to {epochs} "
            "(kept in config.yaml)"
        )
    if finished >= epochs:
        _say(
            f"spade run: {path} has finished {finished} epochs of {epochs}: nothing to run "
            f"(--resume {path} --epochs {finished + 1} or more goes on)"
        )


def _stored_config(path: str) -> dict[str, Any]:
    from ..store import RunDir

    if not Path(path, "config.yaml").is_file():
        raise UserError(f"{path} is not a run directory (no config.yaml)")
    stored = RunDir(Path(path)).read_yaml("config.yaml")
    return stored if isinstance(stored, dict) else {}


def _check_resume_flags(command: str, args: argparse.Namespace, stored: dict[str, Any]) -> None:
    """A one-line error for a flag that would change what a resumed run is (its seed, models, size...):
    one that sets a config key (``config_pairs``) and is not among the command's ``resumable``, how
    long and how fast the run goes, where the model is and where the work runs (never what the run is).

    A flag that repeats the stored value is accepted (scripts that resume with their original flags).
    """
    resumable = COMMAND_SPECS[command].resumable
    for dest, path in config_pairs(command):
        value = getattr(args, dest, None)
        if value is None or dest in resumable:
            continue
        if dest == "prompts":  # a folder: the same one however named, or a moved copy (_check_resume_prompts)
            continue
        node: Any = stored
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node != value:
            flag = "--" + dest.replace("_", "-")
            raise UserError(
                f"{flag} cannot change a run being resumed (it was started with {node!r}); "
                f"only {COMMAND_SPECS[command].may_change()} can"
            )


def _check_resume_prompts(command: str, given: str | None, stored: Any, run_path: Path) -> None:
    """A one-line error unless a resume renders the templates its run started with.

    ``stored`` is the run's ``prompts_dir`` (absolute since issue 35). While that folder exists,
    ``--prompts`` may only name it again. Once it is gone (the run directory moved to another machine),
    ``--prompts`` names its copy: accepted when the templates in use with it hash to what
    ``manifest.json`` recorded at the start (``templates``), refused naming those that differ.
    """
    if not isinstance(stored, str):  # started with the packaged templates: they stay
        if given is not None:
            raise UserError(
                f"--prompts cannot change a run being resumed (it was started with {stored!r}); "
                f"only {COMMAND_SPECS[command].may_change()} can"
            )
        return
    if Path(stored).is_dir():
        if given is not None and Path(given).resolve() != Path(stored).resolve():
            raise UserError(
                f"--prompts cannot change a run being resumed (it was started with {stored!r}, which is there); "
                f"only {COMMAND_SPECS[command].may_change()} can"
            )
        return
    if given is None:
        raise UserError(
            f"the prompts folder {stored} this run was started with is not there (a run directory moved from "
            f"another machine?): give --prompts with a copy of it (its templates are checked against "
            f"{run_path / 'manifest.json'})"
        )
    from ..store import RunDir
    from ..templates import Prompts

    manifest = RunDir(run_path).read_json("manifest.json")
    recorded = manifest.get("templates") if isinstance(manifest, dict) else None
    if not isinstance(recorded, dict) or not recorded:
        raise UserError(
            f"--prompts {given}: {run_path / 'manifest.json'} records no template hashes to check it against, "
            f"and {stored}, which the run was started with, is not there"
        )
    hashes = Prompts(given).hashes  # a missing folder: one line from Prompts
    differ = sorted(name for name in recorded.keys() | hashes.keys() if recorded.get(name) != hashes.get(name))
    if differ:
        raise UserError(
            f"--prompts {given} renders other templates than the run was started with ({', '.join(differ)} "
            f"differ from manifest.json's hashes): give a copy of {stored}"
        )


def _overrides(args: argparse.Namespace, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Nested config overrides from the flags that were given (``(dest, dotted.path)``; a later pair
    wins a path: ``--generator-model`` over ``--model``)."""
    overrides: dict[str, Any] = {}
    for dest, path in pairs:
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
    from ..config import load_config
    from ..kinds import leak_note, mark_leaks
    from ..session import Session
    from ..store import TASKS, RunDir, read_run
    from ..tasksets.taskfile import read_tasks

    _ray_address_means_ray(args)
    if args.resume:
        run, config = _open_resumed("solve", args, _overrides(args, SOLVE_FLAGS))
        args.run_path = run.path
        tasks = read_run(run.path).tasks  # solve checks the rest before it writes
        if args.tasks:  # the same tasks, or a mistake: never mix two task files in one directory
            given = read_tasks(args.tasks, skip_invalid=args.skip_invalid, command="solve")
            if [t.task_id for t in given] != [t.task_id for t in tasks]:
                raise UserError(f"{args.tasks} holds other tasks than {run.path / TASKS}: resume solves the run's own")
    else:
        if not args.tasks or not args.model:
            raise UserError("solve needs TASKS and --model (or --resume DIR)")
        tasks = read_tasks(args.tasks, skip_invalid=args.skip_invalid, command="solve")
        config = load_config(args.config, _overrides(args, SOLVE_FLAGS))
        run = None
    _require_keys(config, generator=False, api_base=args.api_base)
    with Session(config, need_generator=False) as session:
        tasks = session.fill_expected(tasks)  # a task that cannot be filled fails before the directory exists
        tasks, leaking = mark_leaks(tasks, config.solver.public_tests)  # judged as written, named
        if leaking:
            print(f"spade: {leak_note(leaking)}", file=sys.stderr, flush=True)
        run = run or RunDir.create(args.out, config.runs_dir)  # an existing non-empty --out is refused
        args.run_path = run.path
        try:
            summary = session.solve(
                tasks,
                run,
                resumed=bool(args.resume),
                log=_say,
                live=_live(args),
            )
        except (EndpointDown, ExecutorError) as e:
            return _stopped_early("solve", e, run.path)
        finally:
            run.unlock()
    scores = "".join(f", {name} {value:.4f}" for name, value in summary["pass_at_k"].items())
    print(
        f"{summary['trajectories']} trajectories, pass rate {_fmt(summary['pass_rate'], '.0%')} "
        f"(first try {_fmt(summary['first_try_pass_rate'], '.0%')}){scores} -> {run.path}"
    )
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    if args.list_languages:
        if args.file is not None:
            raise UserError("spade exec --list-languages runs no FILE: give one or the other")
        return _exec_languages(args)
    if args.file is None:
        raise UserError("spade exec needs a FILE to run (or - for stdin), or --list-languages")
    # the sandbox starts first, in the background, while the rest is imported and the program read
    starting = _start_sandbox(args.sandbox or AUTO, one_run=True)
    try:
        return _exec(args, starting)
    finally:
        starting.close()  # a no-op once handed over; else (bad input) it is closed here


def _exec(args: argparse.Namespace, starting: Any) -> int:
    from dataclasses import replace

    from .._util.files import read_input
    from ..sandbox.base import Limits
    from ..sandbox.result import dump_json
    from ..sandbox.runner import run_program

    if args.file == "-":
        where, data = "<stdin>", sys.stdin.buffer.read()
    else:
        where, data = args.file, read_input(args.file, "file")
    try:
        source = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(
            f"{where}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x}); spade exec runs UTF-8 source"
        ) from None
    stdin = None
    if args.stdin is not None:
        try:
            stdin = read_input(args.stdin, "--stdin file").decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{args.stdin}: not UTF-8 text (byte at offset {e.start}): --stdin takes text") from None
    from ..languages import get_toolchain, toolchain_for_file

    toolchain = get_toolchain(args.language) if args.language else toolchain_for_file(where)
    sandbox = starting.result()
    try:
        limits = Limits(timeout_s=args.timeout, memory_mb=args.memory_mb)
        if toolchain.in_harness:
            result = run_program(sandbox, source, limits, stdin=stdin, cpu_s=args.cpu_s)
        else:
            from ..sandbox.compiled import build, run_built

            built = build(sandbox, toolchain, source, limits)
            if built.ok:
                result = run_built(sandbox, built, limits, stdin=stdin, cpu_s=args.cpu_s).result
            else:  # the compiler's verdict is the result: what it said, and that nothing ran
                assert built.result is not None
                result = replace(built.result, status="error", load_error=built.error)
    finally:
        sandbox.close()
    print(dump_json(result))
    return _checked(args, result.status == "ok")


def _exec_languages(args: argparse.Namespace) -> int:
    """``spade exec --list-languages``: per answer language (or the ``--language`` one), what this machine has
    of it (packages, commands, the compiler's version) and whether its hello-world compiles and runs in
    the sandbox, by the path answers take (``run_stdio_tests``); a table on stdout."""
    from ..languages import TOOLCHAINS, get_toolchain
    from ..languages.available import GREETING, HELLO, host_check, install_hint
    from ..sandbox.base import Limits
    from ..sandbox.stdio import run_stdio_tests
    from ..types import TestCase

    chosen = [get_toolchain(args.language)] if args.language else list(TOOLCHAINS.values())
    checks = [host_check(t) for t in chosen]
    sandbox, why_not = None, ""
    try:
        sandbox = _sandbox(args.sandbox)
    except SandboxUnavailable as e:
        why_not = f"not tried: {e}"
    where = f"in {sandbox.name if sandbox is not None else args.sandbox}"
    rows = [("LANGUAGE", "LABEL", "PACKAGES", "COMMANDS", "VERSION", where.upper())]
    works = 0
    try:
        limits = Limits(timeout_s=args.timeout, memory_mb=args.memory_mb)
        for check in checks:
            toolchain = check.toolchain
            commands = [*check.found, *(f"missing {c}" for c in check.missing)]
            if not check.ok:
                trial = f"not tried: {install_hint(toolchain) or 'not installed'}"
            elif sandbox is None:
                trial = why_not
            else:
                started = time.monotonic()
                try:
                    result = run_stdio_tests(
                        sandbox, HELLO[toolchain.name], [TestCase(input="", expected=f"{GREETING}\n")], limits,
                        args.cpu_s or args.timeout, language=toolchain.name,
                    )  # fmt: skip
                except SandboxUnavailable as e:
                    trial = f"failed: {_first_line(str(e))}"
                else:
                    took = time.monotonic() - started
                    if result.tests_passed == 1:
                        works += 1
                        trial = f"ok ({took:.1f} s)"
                    else:
                        tested = result.test_results[0].error if result.test_results else None
                        error = result.load_error or tested or result.stderr
                        trial = f"failed: {_first_line(error or result.status)}"
            version = check.version or ("-" if not check.ok else "?")
            rows.append((toolchain.name, toolchain.label, " ".join(toolchain.packages) or "-", ", ".join(commands),
                         version, trial))  # fmt: skip
    finally:
        if sandbox is not None:
            sandbox.close()
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    print(f"{works} of {len(checks)} languages compile and run {where}", file=sys.stderr)
    return _checked(args, works == len(checks))


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _checked(args: argparse.Namespace, held: bool) -> int:
    """The exit of a command that printed its results: ``CHECK_FAILED`` under ``--check`` when what it
    checked did not hold, else 0 (the results are the output, whatever the verdicts)."""
    return Exit.CHECK_FAILED if args.check and not held else Exit.OK


def _malformed_row(entry: Any) -> dict[str, Any]:
    """``verify``'s row for a line that is not a task (reason ``malformed``, its own row: docs/records.md)."""
    return {
        "task_id": entry.task_id,
        "line": entry.line,
        "valid": False,
        "reason": "malformed",
        "detail": entry.detail,
        "status": None,
        "tests_passed": 0,
        "tests_total": 0,
    }


def cmd_verify(args: argparse.Namespace) -> int:
    # the config models are imported only with --config: these commands start fast (~0.2 s saved)
    from ..kinds import leaks
    from ..tasksets.judging import load_run_config, public_tests, verify_tasks
    from ..tasksets.taskfile import scan_tasks

    config = load_run_config(args.config)  # once, and first: a bad config is the error, whatever the tasks
    public = public_tests(config)
    entries = scan_tasks(args.tasks)
    if not entries:
        raise UserError(f"{args.tasks}: no tasks in the file, nothing to verify")
    first_line: dict[str, int] = {}
    for entry in entries:  # each task is judged alone; a repeated id is a malformed line, not a second task
        if entry.task is None:
            continue
        task_id = entry.task.task_id
        if task_id in first_line:
            entry.task, entry.detail = None, f"task_id repeated (first on line {first_line[task_id]})"
        else:
            first_line[task_id] = entry.line
    tasks = [e.task for e in entries if e.task is not None]
    valid = 0
    reasons: dict[str, int] = {}
    _sandbox_logging()
    reports = verify_tasks(
        tasks, config=config, sandbox=args.sandbox, timeout=args.timeout, concurrency=args.concurrency
    )
    try:
        for entry in entries:
            if entry.task is None:
                row = _malformed_row(entry)
            else:
                report = next(reports)
                row = {"task_id": report.task_id, "line": entry.line, **report.row()}
                valid += report.valid
                if entry.task.shows_examples:  # a benchmark's own asserts decide: its leaks are reported
                    shown = sorted({leak.test for leak in leaks(report.task or entry.task, public)})
                    if shown:
                        row["leaks_hidden_test"] = shown
            print(json.dumps(row), flush=True)
            if row["reason"]:
                reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    finally:
        reports.close()  # the sandbox closes with the generator
    print(
        f"verified {len(entries)} tasks: {valid} valid, {len(entries) - valid} invalid {reasons or ''}".rstrip(),
        file=sys.stderr,
    )
    return _checked(args, valid == len(entries))


def cmd_evaluate(args: argparse.Namespace) -> int:
    # the sandbox starts first, in the background, while the rest is imported and the input read
    # (with --config, the config names the backend)
    starting = None if args.config else _start_sandbox(args.sandbox or AUTO)
    try:
        return _evaluate(args, starting)
    finally:
        if starting is not None:
            starting.close()  # a no-op once handed over; else (bad input) it is closed here


def _evaluate(args: argparse.Namespace, starting: Any) -> int:
    from ..judge import judge_settings
    from ..kinds import leak_note
    from ..progress import bar, progress_block
    from ..tasksets.judging import ALL_JUDGE_ONLY, chosen_ks, evaluate_samples, load_run_config, samples_per_task
    from ..tasksets.taskfile import read_samples, read_tasks

    config = load_run_config(args.config)  # once, and first: a bad config is the error, whatever the tasks
    settings = judge_settings(config, timeout_s=args.timeout, backend=args.sandbox)
    tasks = read_tasks(args.tasks, skip_invalid=args.skip_invalid, command="evaluate")
    if not tasks:
        raise UserError(f"{args.tasks}: no tasks in the file, nothing to judge")
    by_id = {t.task_id: t for t in tasks}
    given = read_samples(args.samples, by_id, skip_invalid=args.skip_invalid) if args.samples else None
    if args.samples and not given:
        raise UserError(f"{args.samples}: no samples in the file, nothing to judge")
    counts = samples_per_task(tasks, given)
    if not counts and given is None:
        raise UserError(f"{args.tasks}: {ALL_JUDGE_ONLY}; give --samples (answers to judge)")
    chosen_ks(counts, args.k)  # a k some task has too few samples for: refused before anything runs
    left = [t.task_id for t in tasks if t.task_id not in counts]
    if left and given is not None:
        print(
            f"spade evaluate: {len(left)} of {len(tasks)} tasks have no sample in {args.samples}, left out of "
            f"pass@k (first: {left[0]})",
            file=sys.stderr,
            flush=True,
        )
    sandbox = starting.result() if starting else _sandbox(settings.backend)
    total = len(given) if given is not None else len(tasks)
    judged = {"done": 0, "passed": 0}

    def progress() -> list[str]:
        done = judged["done"]
        rate = f"{judged['passed'] / done:.0%}" if done else "n/a"
        return [f"evaluate: {done}/{total} judged {bar(done, total)}  passed so far {rate}"]

    block = progress_block(_live(args), progress, print)

    def said(row: dict[str, Any]) -> None:
        judged["done"] += 1
        judged["passed"] += row["passed"]
        block.log(json.dumps(row), stream=sys.stdout)

    try:
        with block:
            result = evaluate_samples(
                tasks,
                given,
                config=config,
                sandbox=sandbox,
                timeout=args.timeout,
                concurrency=args.concurrency,
                on_leaks=lambda leaking: print(f"spade: {leak_note(leaking)}", file=sys.stderr, flush=True),
                on_row=said,
                ks=args.k,
            )
    finally:
        sandbox.close()
    if left and given is None:  # said once judged: a task that cannot be filled is the one error line
        print(
            f"spade evaluate: {len(left)} of {len(tasks)} tasks are judge-only (no reference to judge: give "
            f"--samples), left out of pass@k (first: {left[0]})",
            file=sys.stderr,
        )
    for line in pass_at_k_lines(result.pass_at_k):
        print(line, file=sys.stderr)
    if args.json:
        _write_text(Path(args.json), json.dumps({**result.pass_at_k.summary(), "leaking": result.leaking}) + "\n")
    return _checked(args, all(row["passed"] for row in result.rows))


TABLE_TASKS = 20
"""At most this many tasks get a row of their own in evaluate's table (all of them are in ``--json``)."""


def pass_at_k_lines(table: PassAtK) -> list[str]:
    """``spade evaluate``'s stderr: a row per task (n, c, pass@k) when there are a few with more than one
    sample each, then the overall line, the mean over tasks (its words as before the table existed)."""
    ks = table.ks
    lines = []
    if len(table.tasks) <= TABLE_TASKS and any(t.n > 1 for t in table.tasks):
        width = max(len("task"), *(len(t.task_id) for t in table.tasks))
        heads = [f"pass@{k}" for k in ks]
        lines.append(f"{'task':<{width}}  {'n':>5}  {'c':>5}  " + "  ".join(f"{h:>8}" for h in heads))
        for t in table.tasks:
            values = "  ".join(f"{t.scores[k]:>{max(8, len(h))}.4f}" for k, h in zip(ks, heads, strict=True))
            lines.append(f"{t.task_id:<{width}}  {t.n:>5}  {t.c:>5}  {values}")
    overall = ", ".join(f"{name} {value:.4f}" for name, value in table.scores().items())
    lines.append(f"{table.samples} samples, {len(table.tasks)} tasks: {overall}")
    return lines


def _write_text(out: Path, text: str) -> None:
    """``text`` as the UTF-8 content of ``out``: a temporary file, then a rename, so a failed write leaves
    any existing file as it was.

    Raises:
        UserError: ``out`` is a directory, or cannot be written.
    """
    import contextlib

    if out.is_dir():
        raise UserError(f"{out} is a directory: name the file to write")
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {out}: {e.strerror or e}") from None


def cmd_import(args: argparse.Namespace) -> int:
    from ..tasksets.contests import FORMATS, summary_line, write_file
    from ..tasksets.importers import import_humaneval, import_mbpp

    if args.derive is not None:
        return _import_derived(args)
    given = [name for name, value in (("--per-task", args.per_task), ("--seed", args.seed)) if value is not None]
    if given:
        raise UserError(f"{' and '.join(given)} go{'es' if len(given) == 1 else ''} with --derive KIND")
    if args.format in FORMATS:  # a dataset file's rows (tasksets/contests.py), written all or nothing
        print(summary_line(write_file(args.format, args.file, args.output), args.output), file=sys.stderr)
        return 0
    if args.format == "evalplus":  # rows as the contest formats, expected outputs from the sandbox
        from ..tasksets.evalplus import write_evalplus

        made = write_evalplus(
            args.file,
            args.output,
            config=args.config,
            sandbox=args.sandbox,
            timeout=args.timeout,
            concurrency=args.concurrency,
        )
        print(summary_line(made, args.output), file=sys.stderr)
        return 0
    out = Path(args.output)
    if out.is_dir():
        raise UserError(f"-o {out} is a directory: name the tasks file to write")
    left_out: dict[str, list[str]] = {}
    if args.format == "mbpp":
        imported = import_mbpp(args.file)
        tasks, left_out = imported.tasks, imported.left_out
    else:
        tasks = import_humaneval(args.file)
    shown = [t for t in tasks if t.meta.get("docstring_tests")]
    shown_in = "statement" if args.format == "mbpp" else "docstring"
    _write_text(out, "".join(json.dumps(t.dump()) + "\n" for t in tasks))
    note = ""
    if shown:
        asserts = sum(len(t.meta["docstring_tests"]) for t in shown)
        note = (
            f" ({len(shown)} show {asserts} of their asserts in their {shown_in}: those are examples too, "
            "shown and fed back; every assert still decides)"
        )
    print(f"imported {len(tasks)} tasks -> {out}{note}", file=sys.stderr)
    from ..kinds import leak_note, mark_leaks

    _, leaking = mark_leaks(tasks)  # said now; and kept in the cache, where evaluate and solve find it
    if leaking:
        print(f"spade: {leak_note(leaking)}", file=sys.stderr)
    if left_out:
        ids = ", ".join(list(left_out)[:10]) + (", ..." if len(left_out) > 10 else "")
        print(
            f"left out {len(left_out)} problems whose asserts use what only the answer's code defines "
            f"(a class, a helper), which a check run apart from the answer cannot see: {ids}",
            file=sys.stderr,
        )
    return 0


def _import_derived(args: argparse.Namespace) -> int:
    """``spade import ... --derive KIND``: the tasks made out of the benchmark's, proven in the sandbox."""
    from ..progress import bar, progress_block
    from ..tasksets.derive import derive_file, summary_line

    per_task = args.per_task or 1
    seen: list[Any] = []  # the derivation so far, once a first base is decided

    def progress() -> list[str]:
        if not seen:
            return ["derive: reading the file and starting the sandbox"]
        made = seen[-1]
        return [f"derive: {made.done}/{made.bases} tasks {bar(made.done, made.bases)}  {len(made.tasks)} derived"]

    _sandbox_logging()
    with progress_block(_live(args), progress, lambda line: None):
        derived = derive_file(
            args.format,
            args.file,
            args.output,
            args.derive,
            per_task,
            config=args.config,
            sandbox=args.sandbox,
            timeout=args.timeout,
            concurrency=args.concurrency,
            seed=args.seed or 0,
            on_base=seen.append,
        )
    print(summary_line(derived, args.derive, per_task, args.output), file=sys.stderr)
    return 0


def cmd_serve_fake(args: argparse.Namespace) -> int:
    from ..serve.fake import serve

    serve(
        args.host,
        args.port,
        args.latency,
        seed=args.seed,
        tokens_per_s=args.tokens_per_s,
        max_connections=args.max_connections,
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..export.solver_rows import ExportFilters, export_run

    filters = ExportFilters(
        status=args.status,
        min_difficulty=args.min_difficulty,
        max_difficulty=args.max_difficulty,
        kinds=[k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else None,
        tier=args.tier,
        split=args.split,
        final_only=args.final_only,
    )
    if args.role == "generator":
        from ..export.generator_rows import export_generator

        if args.verl_reward != "spade":
            raise UserError("--verl-reward is for the solver's --format verl, not --role generator")
        from ..store import written_by

        if written_by(args.run_dir) == "solve":  # also one a self-play run was once resumed into
            raise UserError(
                f"{args.run_dir} was written by spade solve: its tasks were given (a benchmark, often), no "
                "generator proposed them, so --role generator has nothing to export (--role solver: test rows)"
            )
        generated = export_generator(
            Path(args.run_dir),
            args.format,
            Path(args.output) if args.output else None,
            filters,
            test_fraction=args.test_fraction,
            repetition_weight=args.repetition_weight,
        )
        print(generated.describe(), file=sys.stderr)
        return 0
    if args.repetition_weight:
        raise UserError("--repetition-weight is the generator's reward (--role generator), not the solver's")
    written = export_run(
        Path(args.run_dir),
        args.format,
        Path(args.output) if args.output else None,
        filters,
        test_fraction=args.test_fraction,
        verl_reward=args.verl_reward,
    )
    print(written.describe(), file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import render_report

    path = render_report(
        Path(args.run_dir), Path(args.output) if args.output else None, max_trajectories=args.max_trajectories
    )
    print(path)
    return 0


def cmd_serve_sandbox(args: argparse.Namespace) -> int:
    from ..serve.sandbox import serve_sandbox

    serve_sandbox(
        args.host,
        args.port,
        backend=args.sandbox,
        concurrency=args.concurrency,
        allow_unsafe=args.allow_unsafe,
        token_file=args.token_file,
        max_connections=args.max_connections,
    )
    return 0


def cmd_serve_env(args: argparse.Namespace) -> int:
    from ..serve.env import require_openenv

    require_openenv()  # before anything is built: one line naming the extra
    from ..serve.env.running import sigterm_interrupts

    with sigterm_interrupts():  # SIGTERM stops it as Ctrl-C does, from here on
        return _cmd_serve_env(args)


def _cmd_serve_env(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..serve.env import import_server
    from ..serve.env.access import check_exposure, load_env_token
    from ..serve.env.running import UNTIL_STOPPED, EnvSession
    from ..store import RunDir

    _ray_address_means_ray(args)
    token = load_env_token(args.token_file)
    check_exposure(args.host, token)
    overrides = _overrides(args, ENV_FLAGS)  # --max-sessions, --max-connections, --mcp: env's, a resume may change
    if args.epochs is None and not args.resume:  # until stopped; --resume DIR keeps the run's (--epochs N: N in all)
        overrides.setdefault("controller", {})["epochs"] = UNTIL_STOPPED
    if args.resume:  # a run or solve directory is refused there, naming the command that continues it
        run, config = _open_resumed("serve-env", args, overrides)
        try:
            _require_keys(config, generator=True, solver=False, api_base=args.api_base)
            session = EnvSession(config, _env_broker(config))  # checks the generator, templates and sandbox
        except BaseException:
            run.unlock()
            raise
    else:
        config = load_config(args.config, overrides)
        _require_keys(config, generator=True, solver=False, api_base=args.api_base)
        session = EnvSession(config, _env_broker(config))  # before the run directory exists
        try:
            import_server()  # openenv-core, FastAPI, uvicorn (seconds): before the run directory exists too
            run = RunDir.create(args.out, config.runs_dir)
        except BaseException:
            session.close()
            raise
    args.run_path = run.path
    try:
        with session:
            return _serve_env(args, session, run, token)
    except (EndpointDown, ExecutorError, EmptyEpochs) as e:
        return _stopped_early("serve-env", e, run.path)
    finally:
        run.unlock()


def _env_broker(config: Any) -> Any:
    from ..serve.env.broker import EnvBroker

    return EnvBroker(episode_timeout_s=config.env.episode_timeout_s, reset_timeout_s=config.env.reset_timeout_s)


def _serve_env(args: argparse.Namespace, session: Any, run: Any, token: str | None) -> int:
    from ..serve.env.running import UNTIL_STOPPED
    from ..serve.env.server import EnvServer

    def log(line: str) -> None:
        _say(f"spade serve-env: {line}")

    c = session.config
    epochs = "until stopped" if c.controller.epochs == UNTIL_STOPPED else f"{c.controller.epochs} epochs"
    server = EnvServer(session, run, resumed=bool(args.resume), host=args.host, port=args.port, token=token, log=log)

    def ready() -> None:
        access = "bearer token required" if token is not None else "loopback only, no token"
        log(
            f"listening on {server.url} (openenv-core WebSocket {server.url.replace('http', 'ws', 1)}/ws; {access}); "
            f"{c.generator.model} proposes, {c.controller.tasks_per_epoch} tasks x {c.solver.samples_per_task} "
            f"samples an epoch, {epochs}, at most {c.env.pool or c.env.max_sessions} episodes waiting or held at "
            f"once -> {run.path}; "
            "Ctrl-C to stop"
        )

    server.serve(on_ready=ready)
    broker, metrics = session.broker, server.runner.metrics
    why = server.stopped_because or f"stopped: its {len(metrics or [])} epochs are done"
    log(
        f"{why}: {broker.ended} episodes recorded ({broker.abandoned} abandoned); "
        f"continue with: spade serve-env --resume {shlex.quote(str(run.path))}"
    )
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..integrations.trl_train import TrainPlan, server_args, train_live
    from ..integrations.trl_warm_start import WarmStart

    if not args.model:
        raise UserError("spade train needs --model: the model to train (a local folder or a Hugging Face id)")
    warm = None
    if args.warm_start is not None:
        warm = WarmStart(Path(args.warm_start), args.warm_start_stages, args.warm_start_steps)
    elif args.warm_start_steps is not None or args.warm_start_stages != ("sft",):
        raise UserError("--warm-start-stages and --warm-start-steps need --warm-start RUN_DIR: the run to learn from")
    runs_dir = load_config(args.config, {}).runs_dir
    out = Path(args.out) if args.out else Path(runs_dir) / time.strftime("train-%Y%m%d-%H%M%S")
    flags = [("--config", args.config), ("--model", args.generator_model), ("--api-base", args.api_base)]
    flags += [("--tasks-per-epoch", args.tasks_per_epoch), ("--max-turns", args.max_turns), ("--sandbox", args.sandbox)]
    plan = TrainPlan(
        model=args.model,
        out=out,
        steps=args.steps,
        num_generations=args.num_generations,
        server_args=server_args(flags),
        seed=args.seed,
        max_completion_length=args.max_completion_length,
        warm=warm,
    )
    train_live(plan, log=_say)
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    from ..templates import PACKAGED_DIR, Prompts, list_templates

    if args.action == "check":
        prompts = Prompts(args.name or args.prompts)
        problems = prompts.check_all()
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(list_templates())} templates checked, {len(problems)} problems", file=sys.stderr)
        return Exit.USER if problems else Exit.OK
    prompts = Prompts(args.prompts)
    if args.action == "list":
        for name in list_templates():
            path = prompts.source_path(name)
            origin = "packaged" if path.is_relative_to(PACKAGED_DIR) else "user"
            print(f"{name}\t{origin}\t{path}")
        return 0
    if not args.name:
        raise UserError("prompts show needs a template name (see spade prompts list)")
    if args.name not in list_templates():
        raise UserError(f"no template named {args.name} (see spade prompts list)")
    path = prompts.source_path(args.name)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    sys.stdout.write(text)
    return 0


COMMANDS = {
    "run": cmd_run,
    "solve": cmd_solve,
    "exec": cmd_exec,
    "verify": cmd_verify,
    "evaluate": cmd_evaluate,
    "import": cmd_import,
    "serve-fake": cmd_serve_fake,
    "export": cmd_export,
    "report": cmd_report,
    "serve-sandbox": cmd_serve_sandbox,
    "serve-env": cmd_serve_env,
    "train": cmd_train,
    "prompts": cmd_prompts,
}


def _say(line: str) -> None:
    """One line on stderr, as every line a run or its error tells leaves the process: credentials masked
    (``redact``: an ``api_base`` with user-info, a key a model or a trainer echoed)."""
    from .._util.redact import redact_text

    print(redact_text(line), file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``spade`` command on ``argv`` (default: the process's arguments); its exit status.

    As the process's own command (no ``argv``), what exists when it ends is frozen out of the garbage
    collector's reach: the interpreter's last collection then walks only what is left, not every
    object of a few hundred modules (~40 ms of each short command's exit)."""
    if argv is not None:
        return _main(argv)
    try:
        return _main(None)
    finally:
        gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command typed (``spade run: error: ...``), not by ``spade``
        command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not args.command:
        parser.print_help()
        return Exit.USER
    try:
        return _run_command(args)
    except KeyboardInterrupt:
        print(f"spade {args.command}: interrupted{_resume_hint(args)}", file=sys.stderr)
        return Exit.INTERRUPTED
    except SpadeError as e:
        if args.debug:
            raise
        _say(f"spade {args.command}: error: {e}")
        return Exit.USER if isinstance(e, UserError) else Exit.INTERNAL
    except BrokenPipeError:
        return 0
    except OSError as e:
        if args.debug:
            raise
        why = _USER_OS_ERRORS.get(e.errno or 0)
        if why is None:
            return _internal_error(args.command, e)
        where = f" {e.filename}" if e.filename else ""
        _say(f"spade {args.command}: error:{where}: {e.strerror or why}")
        return Exit.USER
    except Exception as e:
        if args.debug:
            raise
        return _internal_error(args.command, e)


def _run_command(args: argparse.Namespace) -> int:
    """The command, where an error raised while a Ctrl-C unwound (a cleanup that failed as the command
    stopped) is that interrupt: answered as itself it ended an interrupted run as an internal error, or
    with 0 and no word when it was a broken pipe (as ``spade ... | head`` ends)."""
    try:
        return COMMANDS[args.command](args)
    except BaseException as e:
        if not isinstance(e, KeyboardInterrupt) and _unwinding_an_interrupt(e):
            raise KeyboardInterrupt from e
        raise


def _unwinding_an_interrupt(error: BaseException) -> bool:
    """Whether ``error`` was raised while a ``KeyboardInterrupt`` unwound (one is in the chain of
    exceptions being handled when ``error`` was raised)."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__context__
    return False


_USER_OS_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files",
    errno.EADDRINUSE: "address already in use",
    errno.EADDRNOTAVAIL: "address not available",
    errno.ENAMETOOLONG: "file name too long",
    errno.ELOOP: "too many symbolic links",
}
"""OS errors a user can fix (a path, a permission, free space, a port): one line and exit 2, not a bug."""


def _internal_error(command: str, e: BaseException) -> int:
    _say(f"spade {command}: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)")
    return Exit.INTERNAL
