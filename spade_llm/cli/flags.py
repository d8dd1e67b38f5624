"""The ``spade`` command line's flags, each declared once (issue 36, point 5).

A :class:`Flag` is data: its names, its argparse keywords, a line of help, and the config keys it sets
(``sets``). A command (:data:`COMMAND_SPECS`) lists the flags it takes; where two commands share a flag
name with another help or default, the command takes ``FLAG.but(...)`` of the one declaration. The
flag -> config maps (:func:`config_pairs`) and the flags a ``--resume`` may change
(``CommandSpec.resumable``, its check and its help) come from here.

``--help`` ends every option's line with its default; one that comes from the config shows the config's
default value and its key (``(default: 3, controller.epochs)``), read from ``configs/default.yaml`` only
when help is printed. The module stays light (argparse, no pydantic): ``spade --help`` starts fast.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, NoReturn

from ..errors import Exit, pip_install
from ..export.names import FORMATS, STATUSES, TIERS, VERL_REWARDS
from ..sandbox.registry import AUTO, BACKEND_NAMES, FALLBACK

# -- argument types ----------------------------------------------------------------------------------


def _positive(kind: type[int] | type[float], minimum: float = 1) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        return value

    return parse


def _kinds(text: str) -> list[str]:
    """A comma-separated list of task kinds for argparse."""
    from ..kinds import KIND_NAMES

    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KIND_NAMES]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(f"task kinds are {', '.join(KIND_NAMES)}, got {text!r}")
    return kinds


def _languages(text: str) -> list[str]:
    """A comma-separated list of answer languages for argparse (names of ``languages.TOOLCHAINS``)."""
    from ..languages import TOOLCHAINS

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in TOOLCHAINS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"answer languages are {', '.join(TOOLCHAINS)}, got {text!r}")
    return names


class _DerivableKinds:
    """``--derive``'s choices, the kinds with a ``TaskKind.derive`` (``tasksets.derive.derivable_kinds``),
    looked up only when needed (a value to check, ``--help``): the kind modules take a third of a second
    to import, and building the parser must not."""

    def __contains__(self, value: object) -> bool:
        return value in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    @staticmethod
    @cache
    def _names() -> tuple[str, ...]:
        from ..tasksets.derive import derivable_kinds

        return derivable_kinds()


def _ks(text: str) -> tuple[int, ...]:
    """A comma-separated list of k for pass@k (``1,5,10``): sorted, each once, every one >= 1."""
    try:
        ks = {int(k) for k in text.split(",") if k.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"k are whole numbers, comma-separated (1,5,10), got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"every k must be >= 1 (1,5,10), got {text!r}")
    return tuple(sorted(ks))


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _port(text: str) -> int:
    """A TCP port for argparse: 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 (any free port) to 65535, got {text}")
    return value


def version_text() -> str:
    """``spade --version``: the package's version, and the commit when run from a git checkout."""
    import subprocess
    from pathlib import Path

    from .. import __version__

    root = Path(__file__).resolve().parents[2]  # spade_llm/cli/flags.py -> the checkout
    commit = ""
    if (root / ".git").exists():
        try:
            found = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            found = None
        if found is not None and found.returncode == 0 and found.stdout.strip():
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            commit = f" (commit {found.stdout.strip()}{'+changes' if dirty.stdout.strip() else ''})"
    return f"spade {__version__}{commit}"


class _VersionAction(argparse.Action):
    """``--version``: printed, then exit 0; the commit is looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit(0)


# -- the registry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """One command-line argument: ``names`` and ``kw`` go to ``add_argument``; ``sets`` are the config
    keys its value overrides (none for a flag only its command reads); ``default_text`` says in words
    what happens without it, where neither its argparse default nor a config key says it (``{key}``
    in it is replaced by that config key's default)."""

    names: tuple[str, ...]
    help: str
    sets: tuple[str, ...] = ()
    default_text: str | None = None
    kw: dict[str, Any] = field(default_factory=dict)
    origin: Flag | None = field(default=None, compare=False, repr=False)
    """The registered declaration this one varies (``but``); None: this is it."""

    @property
    def dest(self) -> str:
        name = next((n for n in self.names if n.startswith("--")), self.names[0])
        return name.lstrip("-").replace("-", "_")

    @property
    def declared(self) -> Flag:
        """The declaration in :data:`REGISTRY` this flag is, or varies."""
        return self.origin or self

    def but(
        self,
        *,
        help: str | None = None,
        sets: tuple[str, ...] | None = None,
        default_text: str | None = None,
        **kw: Any,
    ) -> Flag:
        """This flag as one command takes it: another help, config keys, default (``kw``: argparse's)."""
        return replace(
            self,
            help=self.help if help is None else help,
            sets=self.sets if sets is None else sets,
            default_text=self.default_text if default_text is None else default_text,
            kw={**self.kw, **kw},
            origin=self.declared,
        )


REGISTRY: list[Flag] = []
"""Every flag and positional argument of every command, each once."""


def _flag(*names: str, help: str, sets: tuple[str, ...] = (), default_text: str | None = None, **kw: Any) -> Flag:
    declared = Flag(names, help, sets, default_text, kw)
    REGISTRY.append(declared)
    return declared


CPUS = os.cpu_count() or 2
"""Default of the commands that only run programs: as many at once as there are CPUs."""

# global
DEBUG = _flag("--debug", action="store_true", help="show tracebacks on errors")
VERSION = _flag("--version", action=_VersionAction, help="print the version (and the git commit of a checkout)")

# positionals
TASKS = _flag("tasks", help="tasks JSONL file")
FILE = _flag("file", help="source file (its ending tells its language), or - for stdin (Python unless --language)")
RUN_DIR = _flag("run_dir", help="run directory (of spade run or spade solve)")
IMPORT_FORMAT = _flag(
    "format",
    choices=["humaneval", "mbpp", "apps", "taco", "codecontests", "lcb", "cruxeval", "evalplus"],
    help="the benchmark's format",
)
PROMPTS_ACTION = _flag(
    "action", choices=["list", "show", "check"], help="list the templates, show one, or check an override folder"
)
TEMPLATE = _flag("name", nargs="?", help="template name (show) or override folder (check)")

# what a run is
CONFIG = _flag(
    "--config",
    help="YAML config overriding configs/default.yaml, or a shipped preset by name (local-cpu)",
    default_text="none: configs/default.yaml",
)
MODEL = _flag(
    "--model",
    help="model for both roles (litellm string, or fake/<profile>)",
    sets=("generator.model", "solver.model"),
)
GENERATOR_MODEL = _flag("--generator-model", help="model that proposes tasks", sets=("generator.model",))
SOLVER_MODEL = _flag("--solver-model", help="model that solves tasks", sets=("solver.model",))
API_BASE = _flag(
    "--api-base",
    help="endpoint of an OpenAI-compatible server, e.g. http://localhost:8000/v1",
    sets=("generator.api_base", "solver.api_base"),
)
EPOCHS = _flag("--epochs", type=_positive(int), help="number of epochs", sets=("controller.epochs",))
TASKS_PER_EPOCH = _flag(
    "--tasks-per-epoch", type=_positive(int), help="tasks asked for per epoch", sets=("controller.tasks_per_epoch",)
)
CONCURRENCY = _flag(
    "--concurrency",
    type=_positive(int),
    help="model requests and executions in flight",
    sets=("controller.concurrency",),
)
MAX_TURNS = _flag("--max-turns", type=_positive(int), help="solver attempts per task", sets=("solver.max_turns",))
SAMPLES_PER_TASK = _flag(
    "--samples-per-task",
    type=_positive(int),
    help="independent solver episodes per task (K)",
    sets=("solver.samples_per_task",),
)
GOAL = _flag(
    "--goal",
    help='the capability the tasks should train, e.g. "dynamic programming on strings"',
    sets=("curriculum.goal",),
)
KINDS = _flag(
    "--kinds",
    type=_kinds,
    help="comma-separated task kinds to propose (induction,deduction,abduction)",
    sets=("curriculum.kinds",),
)
LANGUAGES = _flag(
    "--languages",
    type=_languages,
    help="comma-separated languages whole-program answers are asked in, equal shares (python,cpp)",
    sets=("curriculum.languages",),
)
SANDBOX = _flag("--sandbox", choices=BACKEND_NAMES, help="sandbox backend", sets=("sandbox.backend",))
EXECUTOR = _flag(
    "--executor",
    choices=["local", "ray"],
    help="where validations and episodes run: local (asyncio here) or ray (a Ray cluster's workers; "
    f"{pip_install('ray')}); the records are the same",
    sets=("executor",),
)
RAY_ADDRESS = _flag(
    "--ray-address",
    metavar="ADDR",
    help="Ray cluster to join (auto, HOST:6379 or ray://HOST:10001); sets --executor ray",
    sets=("ray.address",),
    default_text="RAY_ADDRESS, else a new local cluster",
)
PROMPTS = _flag(
    "--prompts",
    help="folder of templates overriding the packaged ones by name",
    sets=("prompts_dir",),
    default_text="the packaged templates",
)
SEED = _flag("--seed", type=int, help="root seed: same seed, same run", sets=("seed",))
OUT = _flag(
    "--out", help="run directory (created; must be empty)", default_text="a new directory in runs_dir ({runs_dir})"
)
RESUME = _flag(
    "--resume", metavar="DIR", help="continue a killed or finished run in DIR", default_text="none: start anew"
)
REPORT = _flag(
    "--report", action="store_const", const=True, help="write RUN_DIR/report.html after every epoch", sets=("report",)
)
QUIET = _flag("--quiet", action="store_true", help="print only the run directory")
LIST_LANGUAGES = _flag(
    "--list-languages",
    action="store_true",
    help="instead of running FILE, list the answer languages: each one's packages, commands and version "
    "here, and whether a hello-world compiles and runs in --sandbox (with --check: exit 6 if one does not)",
)
CHECK = _flag(
    "--check",
    action="store_true",
    help="exit 6 when what is checked fails, as linters do (exec: the program did not end ok; verify: a task "
    "is invalid; evaluate: a sample failed); without it the exit is 0 whenever the results were printed",
)
SKIP_INVALID = _flag(
    "--skip-invalid",
    action="store_true",
    help="skip malformed task or sample lines (counted on stderr) instead of stopping at the first",
)

# running programs
TIMEOUT = _flag("--timeout", type=_positive(float, 0.01), default=10.0, help="wall-clock limit, seconds")
MEMORY_MB = _flag("--memory-mb", type=_positive(int, 16), default=512, help="memory limit, MiB")
PROGRAM_STDIN = _flag(
    "--stdin",
    metavar="FILE",
    help="file the program reads as its standard input",
    default_text="none: the program reads end of file",
)
EXEC_LANGUAGE = _flag(
    "--language",
    metavar="NAME",
    help="the program's language (docs/languages.md lists them): compiled in the sandbox first when it is not Python",
    default_text="from the file's ending; python for stdin",
)
CPU_S = _flag(
    "--cpu-s",
    type=_positive(float, 0.01),
    help="CPU-time budget, seconds: past it the run ends as a timeout (load does not move it)",
    default_text="none: only --timeout",
)
SAMPLES = _flag(
    "--samples",
    help='JSONL of {"task_id", "completion"} or {"task_id", "code"}, any number per task; or a run directory '
    "of spade solve or run, each episode's final answer one sample",
    default_text="the tasks' reference solutions",
)
PASS_K = _flag(
    "--k",
    type=_ks,
    metavar="K1,K2",
    help="pass@k for each k (unbiased estimator, per task and the mean over tasks); refused, naming them, "
    "when a task has fewer than k samples",
    default_text="those of 1,10,100 every task has the samples for",
)
SUMMARY_JSON = _flag(
    "--json",
    metavar="FILE",
    help="also write pass@k as one JSON object: k, counts, overall, per_task rows (task_id, n, c, pass@k)",
    default_text="none: the table on stderr only",
)

# files written
OUTPUT = _flag("-o", "--output", help="file to write")

# tasks derived from imported ones
DERIVE = _flag(
    "--derive",
    metavar="KIND",
    choices=_DerivableKinds(),
    help="write tasks of KIND (%(choices)s) made out of each imported task with a reference instead of the "
    "imported tasks, each proven by KIND's gates in the sandbox (docs/cli.md)",
    default_text="none: the imported tasks themselves",
)
PER_TASK = _flag(
    "--per-task",
    type=_positive(int),
    metavar="K",
    help="with --derive: at most K tasks made out of each imported task, the first candidates that pass the gates",
    default_text="1",
)

# export
EXPORT_FORMAT = _flag("--format", required=True, choices=FORMATS, help="what to write")
ROLE = _flag(
    "--role",
    choices=["solver", "generator"],
    default="solver",
    help="whose training data: the solver's (tasks and trajectories) or the generator's (its answers, "
    "judged by what became of their tasks; sft, dpo, grpo)",
)
STATUS = _flag(
    "--status",
    choices=STATUSES,
    help="keep trajectories that ended so",
    default_text="all",
)
MIN_DIFFICULTY = _flag(
    "--min-difficulty",
    type=_fraction,
    help="keep tasks whose measured difficulty (1 - pass rate) >= X",
    default_text="no bound",
)
MAX_DIFFICULTY = _flag(
    "--max-difficulty", type=_fraction, help="keep tasks whose measured difficulty <= X", default_text="no bound"
)
TIER = _flag(
    "--tier",
    choices=TIERS,
    help="keep tasks of this tier by measured pass rate p: easy p > 2/3, hard p < 1/3, medium between",
    default_text="all",
)
SPLIT = _flag("--split", choices=["train", "test"], help="keep one split", default_text="both")
TEST_FRACTION = _flag("--test-fraction", type=_fraction, default=0.1, help="share of tasks in the test split")
REPETITION_WEIGHT = _flag(
    "--repetition-weight",
    type=_positive(float, 0.0),
    default=0.0,
    help="--role generator: R-Zero's repetition penalty, this weight times the share of a prompt's other "
    "answers' tasks like each task (0: off; R-Zero's is 1)",
)
FINAL_ONLY = _flag("--final-only", action="store_true", help="sft: the first prompt and the passing answer only")
VERL_REWARD = _flag(
    "--verl-reward",
    choices=VERL_REWARDS,
    default="spade",
    help="verl: judged by spade_llm.rewards.compute_score (spade), or by verl's built-in SandboxFusion "
    "judge through spade serve-sandbox (function tasks with JSON arguments, and program tasks, which "
    "verl's prime_code reads too)",
)

# report
MAX_TRAJECTORIES = _flag(
    "--max-trajectories",
    type=_positive(int),
    default=1500,
    help="most trajectories embedded (a sample: per task a repaired, a failing and a first-try one)",
)

# servers
HOST = _flag("--host", default="127.0.0.1", help="address to listen on")
PORT = _flag("--port", type=_port, default=8000, help="port to listen on (0: any free port)")
MAX_CONNECTIONS = _flag(
    "--max-connections",
    type=_positive(int),
    help="connections at once; past it the oldest connection that has not sent a whole request makes room, else a 503",
    default_text="the open-files limit, raised to its hard limit, less a reserve (also the most)",
)
TOKEN_FILE = _flag(
    "--token-file",
    help="file holding a bearer token every request must carry (Authorization: Bearer <token>)",
    default_text="$SPADE_SANDBOX_TOKEN if set, else no token",
)
LATENCY = _flag("--latency", type=_positive(float, 0.0), default=0.0, help="seconds added to every answer")
TOKENS_PER_S = _flag(
    "--tokens-per-s",
    type=_positive(float, 0.0),
    default=0.0,
    help="stream answers at this many tokens per second, like a model on a CPU (0: at once)",
)
STEPS = _flag("--steps", type=_positive(int), default=100, help="GRPO steps to train (one prompt's group each)")
NUM_GENERATIONS = _flag(
    "--num-generations",
    type=_positive(int),
    default=4,
    help="rollouts of each prompt (GRPO's group); a group plays one task",
)
MAX_COMPLETION_LENGTH = _flag(
    "--max-completion-length",
    type=_positive(int),
    default=1024,
    help="longest answer a rollout generates, in tokens",
)


def _warm_stages(text: str) -> tuple[str, ...]:
    from ..integrations.trl_warm_start import parse_stages

    try:
        return parse_stages(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


WARM_START = _flag(
    "--warm-start",
    metavar="RUN_DIR",
    help="before GRPO, train on this finished run's exports (its train split; --warm-start-stages)",
    default_text="none: GRPO from --model",
)
WARM_START_STAGES = _flag(
    "--warm-start-stages",
    type=_warm_stages,
    default=("sft",),
    help="sft (the passing answers), dpo (passing over failing answers) or sft,dpo, in that order",
    default_text="sft",
)
WARM_START_STEPS = _flag(
    "--warm-start-steps",
    type=_positive(int),
    help="optimizer steps per warm-start stage",
    default_text="one pass over the stage's rows",
)
ALLOW_UNSAFE = _flag(
    "--allow-unsafe",
    action="store_true",
    help=f"serve on a backend that is no security boundary ({FALLBACK}): only for code you trust",
)
MAX_SESSIONS = _flag(
    "--max-sessions", type=_positive(int), help="WebSocket sessions at once", sets=("env.max_sessions",)
)
POOL = _flag(
    "--pool",
    type=_positive(int),
    help="episodes waiting for or held by clients at once: at least one trainer batch",
    sets=("env.pool",),
)
MCP = _flag(
    "--mcp",
    action="store_true",
    default=None,
    help="serve openenv-core's /mcp; its sessions belong to the connection that made them",
    sets=("env.mcp",),
)


# -- commands ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandSpec:
    """One command: its help, its flags in ``--help``'s order, and the flags (dests) a ``--resume`` may
    change (any other that sets a config key must repeat the run's value)."""

    help: str
    flags: tuple[Flag, ...]
    description: str | None = None
    resumable: tuple[str, ...] = ()

    def may_change(self) -> str:
        """The flags a resume may change, in words: ``--epochs (the total), --concurrency and ...``."""
        names = [f"--{d.replace('_', '-')}" + (" (the total)" if d == "epochs" else "") for d in self.resumable]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


EXECUTION = (EXECUTOR, RAY_ADDRESS)
"""Where a run's work goes: ``run`` and ``solve``."""
JUDGING = (
    SANDBOX.but(default_text=f"{AUTO}, or the --config's; sandbox.backend"),
    CONCURRENCY.but(default=CPUS, sets=(), help="programs run at once", default_text=f"the CPU count, {CPUS}"),
    CONFIG.but(
        help="run config YAML whose sandbox: section sets the limits and backend",
        default_text="none: the sandbox's own defaults",
    ),
    TIMEOUT.but(
        default=None,
        help="wall-clock limit per execution, seconds",
        sets=("sandbox.timeout_s",),
        default_text="{sandbox.timeout_s}, or the --config's; sandbox.timeout_s",
    ),
)
"""``verify`` and ``evaluate``: programs judged here, the limits of a run config's ``sandbox:``."""

COMMAND_SPECS: dict[str, CommandSpec] = {
    "run": CommandSpec(
        help="run the self-play loop",
        description="Run the self-play loop: propose, validate, solve and adapt, epoch after epoch. Offline "
        "on fake/<profile> by default.",
        flags=(
            CONFIG,
            MODEL,
            GENERATOR_MODEL,
            SOLVER_MODEL,
            API_BASE,
            EPOCHS,
            TASKS_PER_EPOCH,
            CONCURRENCY,
            MAX_TURNS,
            SAMPLES_PER_TASK,
            GOAL,
            KINDS,
            LANGUAGES,
            SANDBOX,
            *EXECUTION,
            PROMPTS,
            SEED,
            OUT,
            RESUME,
            REPORT,
            QUIET,
        ),
        resumable=("epochs", "concurrency", "api_base", "executor", "ray_address"),
    ),
    "exec": CommandSpec(
        help="run one program in the sandbox, print its ExecutionResult as JSON",
        flags=(
            FILE.but(nargs="?", help=f"{FILE.help} (none with --list-languages)"),
            EXEC_LANGUAGE,
            SANDBOX.but(default=AUTO, sets=()),
            TIMEOUT,
            MEMORY_MB,
            PROGRAM_STDIN,
            CPU_S,
            LIST_LANGUAGES,
            CHECK,
        ),
    ),
    "verify": CommandSpec(
        help="validate tasks: one JSON line per task, a summary on stderr",
        flags=(TASKS, *JUDGING, CHECK),
    ),
    "evaluate": CommandSpec(
        help="judge solutions (the references by default) against the tasks' tests; pass@k per task and overall",
        flags=(TASKS, SAMPLES, PASS_K, SUMMARY_JSON, *JUDGING, SKIP_INVALID, CHECK),
    ),
    "solve": CommandSpec(
        help="the solver alone on existing tasks (e.g. an imported benchmark)",
        flags=(
            TASKS.but(nargs="?", help="tasks JSONL file (with --resume: optional, must be the run's tasks)"),
            MODEL.but(
                help="solver model (litellm string, or fake/<profile>)",
                sets=("solver.model",),
                default_text="none: required unless --resume; solver.model",
            ),
            API_BASE.but(help="endpoint of an OpenAI-compatible server", sets=("solver.api_base",)),
            MAX_TURNS.but(help="attempts per task"),
            SAMPLES_PER_TASK.but(help="independent episodes per task (K)"),
            LANGUAGES,
            CONCURRENCY.but(help="requests and executions in flight"),
            SANDBOX,
            *EXECUTION,
            CONFIG,
            PROMPTS,
            SEED.but(help="root seed"),
            OUT.but(help="output directory (created; must be empty)"),
            RESUME.but(help="continue a killed solve in DIR"),
            SKIP_INVALID.but(help="skip malformed task lines (counted on stderr) instead of stopping at the first"),
        ),
        resumable=("concurrency", "api_base", "executor", "ray_address"),
    ),
    "import": CommandSpec(
        help="convert a benchmark into tasks",
        description="Convert a benchmark's published file into a tasks file (docs/benchmarks.md). Only evalplus "
        "runs code: its canonical solutions, in the sandbox, to compute the expected outputs; and --derive, "
        "which proves each derived task in the sandbox (--sandbox, --concurrency, --config and --timeout are "
        "for them).",
        flags=(
            IMPORT_FORMAT,
            FILE.but(
                help="the benchmark's file: JSONL (.gz ok); mbpp also a .json array; apps, taco, codecontests, "
                "lcb, cruxeval, evalplus also .json, .parquet"
            ),
            OUTPUT.but(required=True, help="tasks JSONL to write"),
            DERIVE,
            PER_TASK,
            SEED.but(
                sets=(),
                help="with --derive: seed the candidates are drawn from (the same file and seed, the same tasks)",
                default_text="0",
            ),
            *JUDGING,
        ),
    ),
    "serve-fake": CommandSpec(
        help="an OpenAI-compatible server backed by the fake model",
        flags=(
            HOST,
            PORT,
            LATENCY,
            SEED.but(default=0, sets=(), help="seed of the fake model"),
            TOKENS_PER_S,
            MAX_CONNECTIONS,
        ),
    ),
    "export": CommandSpec(
        help="training data from a run: sft, dpo, grpo (TRL), verl (parquet) or harbor (task folders)",
        description="Write a run's validated tasks and judged trajectories in the format a trainer reads. "
        "One file holds both splits (a split column, by a stable hash of the task id); --split keeps one. A "
        "benchmark's tasks (those of a spade solve directory, or imported) are test rows only. "
        "--role generator writes the generator's data instead: its answers to each proposal prompt, judged by "
        "what became of their tasks (sft, dpo, grpo; split by prompt).",
        flags=(
            RUN_DIR,
            EXPORT_FORMAT,
            ROLE,
            OUTPUT.but(
                default_text="RUN_DIR/exports/FORMAT.jsonl, .parquet for verl, a folder for harbor; "
                "RUN_DIR/exports/generator-FORMAT.jsonl for --role generator"
            ),
            STATUS,
            MIN_DIFFICULTY,
            MAX_DIFFICULTY,
            KINDS.but(
                type=None,
                sets=(),
                help="comma-separated task kinds to keep (induction,deduction,abduction)",
                default_text="all",
            ),
            TIER,
            SPLIT,
            TEST_FRACTION,
            FINAL_ONLY,
            VERL_REWARD,
            REPETITION_WEIGHT,
        ),
    ),
    "report": CommandSpec(
        help="RUN_DIR/report.html: charts and trajectories of a run, one self-contained page",
        description="Write a self-contained HTML page about a run: difficulty against the band, the acceptance "
        "funnel, failures, tokens, warnings, and a table of tasks whose trajectories open turn by turn.",
        flags=(RUN_DIR, OUTPUT.but(default_text="RUN_DIR/report.html"), MAX_TRAJECTORIES),
    ),
    "serve-sandbox": CommandSpec(
        help="SandboxFusion's /run_code over this sandbox (for verl's sandbox_fusion reward and tool)",
        flags=(
            HOST,
            PORT.but(default=8080),
            SANDBOX.but(default=AUTO, sets=()),
            CONCURRENCY.but(
                default=CPUS, sets=(), help="programs running at once", default_text=f"the CPU count, {CPUS}"
            ),
            ALLOW_UNSAFE,
            TOKEN_FILE,
            MAX_CONNECTIONS,
        ),
    ),
    "serve-env": CommandSpec(
        help="the curriculum as an OpenEnv environment: a trainer's policy is the solver (openenv-core)",
        description="Serve the self-play curriculum over openenv-core's protocol (WebSocket /ws; "
        f"{pip_install('env')}): reset() hands out the next validated task's opening messages, step({{answer}}) "
        "judges the reply on the public tests and returns the feedback, or at the end the reward from all "
        "tests. The generator keeps one epoch of tasks ready; every episode is a trajectory in the run "
        "directory, and the target difficulty follows the clients' pass rates. Runs until Ctrl-C unless --epochs.",
        flags=(
            CONFIG.but(help="YAML config overriding configs/default.yaml (its env: section too), or a shipped preset"),
            MODEL.but(
                help="the generator's model (litellm string, or fake/<profile>); the clients solve",
                sets=("generator.model",),
            ),
            GENERATOR_MODEL.but(help="same as --model"),
            API_BASE.but(
                help="the generator's OpenAI-compatible server, e.g. http://localhost:8000/v1",
                sets=("generator.api_base",),
            ),
            EPOCHS.but(help="stop after this many epochs in all", default_text="until stopped"),
            TASKS_PER_EPOCH,
            CONCURRENCY.but(help="generator requests and validations in flight at once"),
            POOL.but(default_text="env.max_sessions, 64"),
            MAX_TURNS.but(help="turns per episode before it ends"),
            SAMPLES_PER_TASK.but(help="episodes per task (K)"),
            GOAL,
            KINDS,
            LANGUAGES,
            SANDBOX.but(help="sandbox backend the replies run in"),
            PROMPTS,
            SEED.but(help="root seed"),
            OUT,
            RESUME.but(help="go on serving the run in DIR"),
            HOST.but(help="address to listen on (beyond loopback a token is required)"),
            PORT,
            MAX_SESSIONS,
            MAX_CONNECTIONS.but(
                sets=("env.max_connections",), default_text="the open-files limit less a reserve (also the most)"
            ),
            MCP,
            EXECUTOR.but(
                help="where the programs the run judges go (replies, validation): local (a sandbox here) or ray "
                f"(sandbox hosts on a Ray cluster's nodes; {pip_install('ray')}); the records are the same"
            ),
            RAY_ADDRESS,
            TOKEN_FILE.but(default_text="$SPADE_ENV_TOKEN if set, else none (loopback only)"),
        ),
        resumable=(
            "epochs",
            "concurrency",
            "pool",
            "api_base",
            "max_sessions",
            "max_connections",
            "mcp",
            "host",
            "port",
            "token_file",
            "executor",
            "ray_address",
        ),
    ),
    "train": CommandSpec(
        help="train a model by GRPO on the live curriculum: serve-env behind, TRL in front",
        description="Start spade serve-env (the curriculum, its own process) and train --model on its episodes "
        "with TRL's GRPOTrainer and SpadeLiveEnv: each prompt's --num-generations rollouts play one task, the "
        "server judges and records every episode, and the target difficulty follows the policy. OUT/run holds "
        "the episodes (a run directory), OUT/model the checkpoints and the trained model. vLLM on a GPU when "
        "installed, plain transformers otherwise (CPU: fp32). --warm-start RUN_DIR first trains on a finished run's "
        "exports (SFT, DPO or both; OUT/warm). Needs: pip install 'spade-selfplay[trl,env]' torch.",
        flags=(
            MODEL.but(
                help="the model to train: a local model folder or a Hugging Face id",
                sets=(),
                default_text="none: required",
            ),
            GENERATOR_MODEL.but(
                help="the model that proposes tasks (serve-env's --model)", sets=(), default_text="the --config's"
            ),
            API_BASE.but(help="the generator's OpenAI-compatible server", sets=(), default_text="the --config's"),
            STEPS,
            NUM_GENERATIONS,
            MAX_COMPLETION_LENGTH,
            WARM_START,
            WARM_START_STAGES,
            WARM_START_STEPS,
            TASKS_PER_EPOCH.but(sets=(), default_text="the --config's"),
            MAX_TURNS.but(help="turns per episode", sets=(), default_text="the --config's"),
            SANDBOX.but(help="sandbox backend the rollouts' code runs in", sets=(), default_text="the --config's"),
            CONFIG.but(help="serve-env's YAML config (the generator, the curriculum, env:)"),
            SEED.but(sets=(), default=0),
            OUT.but(help="folder for run/ and model/ (created; must be empty)"),
        ),
    ),
    "prompts": CommandSpec(
        help="list, show or check the prompt templates",
        flags=(PROMPTS_ACTION, TEMPLATE, PROMPTS.but(sets=(), help="override folder (for list/show)")),
    ),
}


def config_pairs(command: str) -> list[tuple[str, str]]:
    """``(dest, dotted.config.key)`` of every flag of ``command`` that sets the config, in ``--help``'s
    order (a flag setting two keys, as ``run --model``, gives two pairs; a later flag wins a key)."""
    return [(f.dest, key) for f in COMMAND_SPECS[command].flags for key in f.sets]


# -- the parser --------------------------------------------------------------------------------------


@cache
def _config_defaults() -> dict[str, Any]:
    """``configs/default.yaml`` (the config models' defaults: tests/test_config.py), read for ``--help``."""
    from importlib import resources

    import yaml

    data = yaml.safe_load(resources.files("spade_llm.configs").joinpath("default.yaml").read_text())
    return data if isinstance(data, dict) else {}


def config_default(key: str) -> Any:
    """The default of the dotted config ``key``, as ``--help`` shows it (None when there is none)."""
    node: Any = _config_defaults()
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def default_words(flag: Flag, action: argparse.Action) -> str | None:
    """What ``--help`` says an option's default is (None for a positional, a required option, --version)."""
    if not action.option_strings or action.required or isinstance(action, _VersionAction):
        return None
    if flag.default_text is not None:
        words = re.sub(r"\{([a-z_.]+)\}", lambda m: _shown(config_default(m.group(1))), flag.default_text)
        keys = [k for k in flag.sets if k not in words]
        return f"{words}; {' and '.join(keys)}" if keys else words
    if flag.sets:
        return f"{_shown(config_default(flag.sets[0]))}, {' and '.join(flag.sets)}"
    if action.default in (None, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction):
        return _shown(False) if isinstance(action, argparse._StoreTrueAction) else None
    return _shown(action.default)


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (:func:`default_words`), worked out only for ``--help``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        flag: Flag | None = getattr(action, "flag", None)
        words = None if flag is None else default_words(flag, action)
        return f"{text} (default: {words.replace('%', '%%')})" if words else text


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line instead of usage + error, and takes no abbreviation
    (``--epoch`` is not ``--epochs``: a prefix that matches today may match two flags tomorrow)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(Exit.USER, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by the words typed (``"run"``, ``"prompts"``...), ``parser`` itself as ``""``."""
    found = {"": parser}

    def walk(node: argparse.ArgumentParser, words: str) -> None:
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found[f"{words} {name}".strip()] = child
                    walk(child, f"{words} {name}")

    walk(parser, "")
    return found


def command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``spade run``...), or ``parser`` itself when there is none."""
    return command_parsers(parser).get(command or "", parser)


def _add(parser: argparse.ArgumentParser, flag: Flag, spec: CommandSpec | None = None) -> None:
    text = flag.help
    if flag.declared is RESUME and spec is not None:
        text = f"{text} (only {spec.may_change()} may change)"
    action = parser.add_argument(*flag.names, help=text, **flag.kw)
    action.flag = flag  # type: ignore[attr-defined]  # for _HelpFormatter, and tests/cli/test_cli_flags.py


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="spade",
        description="Self-play data generation for code LLMs: propose tasks, prove them in a "
        "sandbox, solve them over turns, keep verified (task, trajectory, feedback) data.",
    )
    common = _Parser(add_help=False)
    _add(common, DEBUG.but(default=argparse.SUPPRESS))
    _add(p, DEBUG)
    _add(p, VERSION)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, spec in COMMAND_SPECS.items():
        parser = sub.add_parser(name, parents=[common], help=spec.help, description=spec.description)
        for flag in spec.flags:
            _add(parser, flag, spec)
    return p
