"""A run directory knows who wrote it (issue 35, finding 13).

Before, ``spade run --resume`` on a directory ``spade solve`` wrote (5 HumanEval tasks) played self-play
into it, exit 0, and ``spade export DIR --format grpo`` then put the 5 HumanEval tasks in train rows;
``spade solve --resume`` took a run directory too. Now ``manifest.json`` records the command
(``command``), ``run``, ``solve`` and ``serve-env`` refuse another command's directory with one line
naming the right one (exit 2, nothing touched), directories from before are recognised from what they
hold, and a benchmark's tasks are test rows only (``--role generator``: refused).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

SPADE = [sys.executable, "-m", "spade_llm.cli"]

PROBLEMS = [
    {
        "task_id": "HumanEval/900",
        "prompt": 'def add(a, b):\n    """Add two numbers.\n    >>> add(2, 3)\n    5\n    """\n',
        "canonical_solution": "    return a + b\n",
        "test": "\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-4, 4) == 0\n"
        "    assert candidate(10, 5) == 15\n",
        "entry_point": "add",
    },
    {
        "task_id": "HumanEval/901",
        "prompt": 'def double(x):\n    """Twice x.\n    >>> double(4)\n    8\n    """\n',
        "canonical_solution": "    return 2 * x\n",
        "test": "\n\ndef check(candidate):\n    assert candidate(1) == 2\n    assert candidate(0) == 0\n"
        "    assert candidate(-3) == -6\n",
        "entry_point": "double",
    },
]


def spade(*args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SPADE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def refused(wrote: str, resumer: str, path: Path) -> str:
    return (
        f"spade {resumer}: error: {path} was written by spade {wrote}, not spade {resumer}: continue it with "
        f"spade {wrote} --resume {path}"
    )


@pytest.fixture(scope="module")
def benchmark_solve(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``spade solve`` of two imported HumanEval-format problems, as a user evaluates a model."""
    root = tmp_path_factory.mktemp("benchmark")
    source = root / "problems.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    imported = spade("import", "humaneval", str(source), "-o", str(root / "tasks.jsonl"))
    assert imported.returncode == 0, imported.stderr
    out = root / "solved"
    proc = spade(
        "solve",
        str(root / "tasks.jsonl"),
        "--model",
        "fake/strong-solver",
        "--sandbox",
        "subprocess",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def selfplay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("selfplay") / "run"
    proc = spade(
        "run", "--epochs", "1", "--tasks-per-epoch", "3", "--sandbox", "subprocess", "--out", str(out), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.e2e
@pytest.mark.slow
def test_run_resume_refuses_a_solve_directory_and_touches_nothing(benchmark_solve: Path) -> None:
    before = snapshot(benchmark_solve)
    proc = spade("run", "--resume", str(benchmark_solve), "--quiet")
    assert proc.returncode == 2, proc.stderr  # before: 0, self-play written into the benchmark's directory
    assert proc.stderr.strip() == refused("solve", "run", benchmark_solve)
    assert snapshot(benchmark_solve) == before


@pytest.mark.e2e
@pytest.mark.slow
def test_a_benchmarks_exports_are_test_rows_only(benchmark_solve: Path, tmp_path: Path) -> None:
    for fmt in ("grpo", "sft", "dpo"):
        out = tmp_path / f"{fmt}.jsonl"
        proc = spade("export", str(benchmark_solve), "--format", fmt, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert {r["split"] for r in rows(out)} <= {"test"}, fmt  # before: train rows of HumanEval tasks
        assert "2 tasks of the run are benchmark data" in proc.stderr
    assert {r["task_id"] for r in rows(tmp_path / "grpo.jsonl")} == {"HumanEval/900", "HumanEval/901"}
    train = spade("export", str(benchmark_solve), "--format", "grpo", "--split", "train", "-o", str(tmp_path / "t"))
    assert train.returncode == 0 and rows(tmp_path / "t") == []
    generator = spade(
        "export", str(benchmark_solve), "--format", "sft", "--role", "generator", "-o", str(tmp_path / "g")
    )
    assert generator.returncode == 2 and len(generator.stderr.strip().splitlines()) == 1
    assert "was written by spade solve" in generator.stderr and not (tmp_path / "g").exists()


@pytest.mark.e2e
@pytest.mark.slow
def test_solve_resume_refuses_a_run_directory_and_touches_nothing(selfplay: Path) -> None:
    before = snapshot(selfplay)
    proc = spade("solve", "--resume", str(selfplay))
    assert proc.returncode == 2, proc.stderr  # before: 0, the run's tasks solved again into it
    assert proc.stderr.strip() == refused("run", "solve", selfplay)
    assert snapshot(selfplay) == before


@pytest.mark.e2e
@pytest.mark.slow
def test_the_manifest_records_the_command(benchmark_solve: Path, selfplay: Path) -> None:
    from spade_llm.store import read_run, written_by

    for path, command in ((benchmark_solve, "solve"), (selfplay, "run")):
        assert json.loads((path / "manifest.json").read_text())["command"] == command
        assert written_by(path) == command and read_run(path).command == command


# -- directories as each command leaves them, recorded or from before -------------------------------------


def directory(path: Path, wrote: str, how: str) -> Path:
    """A run directory as ``wrote`` leaves it, its writer told ``how``: ``command`` (``manifest.json``'s
    ``command``), ``argv`` (a manifest from before: the CLI's words), ``records`` (a manifest from before
    written through the Python API, its argv the host program's: the config and the journals tell)."""
    from spade_llm.config import load_config

    path.mkdir(parents=True)
    config = load_config(None, {"sandbox": {"backend": "subprocess"}}).model_dump(mode="json")
    if wrote == "serve-env":
        config["solver"]["model"] = "env"
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    for name in ("tasks", "rejected", "trajectories", "metrics", "task_stats", "plans", "proposals"):
        (path / f"{name}.jsonl").touch()
    (path / ("tasks.jsonl" if wrote == "solve" else "plans.jsonl")).write_text("{}\n")
    if how == "command":
        (path / "manifest.json").write_text(json.dumps({"command": wrote, "argv": []}))
    elif how == "argv":
        (path / "manifest.json").write_text(json.dumps({"argv": ["--debug", wrote, "--out", str(path)]}))
    else:
        (path / "manifest.json").write_text(json.dumps({"argv": ["-q", "my_eval.py"]}))
    return path


WRITERS = ["run", "solve", "serve-env"]


@pytest.mark.parametrize("how", ["command", "argv", "records"])
@pytest.mark.parametrize("wrote", WRITERS)
def test_written_by_knows_each_writer_however_it_was_recorded(tmp_path: Path, wrote: str, how: str) -> None:
    from spade_llm.store import written_by

    assert written_by(directory(tmp_path / "d", wrote, how)) == wrote


def test_a_directory_with_no_record_has_no_known_writer(tmp_path: Path) -> None:
    from spade_llm.store import check_written_by, written_by

    path = directory(tmp_path / "d", "run", "records")
    (path / "plans.jsonl").write_text("")
    assert written_by(path) is None
    for command in WRITERS:
        check_written_by(path, command)  # nothing to go by: each command's own checks decide
    made = directory(tmp_path / "by-hand", "solve", "records")  # tasks and a config, as another tool leaves
    (made / "manifest.json").unlink()
    assert written_by(made) is None


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["command", "argv", "records"])
@pytest.mark.parametrize(("wrote", "resumer"), [(w, r) for w in WRITERS for r in ("run", "solve") if w != r])
def test_run_and_solve_refuse_another_commands_directory(tmp_path: Path, wrote: str, resumer: str, how: str) -> None:
    path = directory(tmp_path / "d", wrote, how)
    before = snapshot(path)
    proc = spade(resumer, "--resume", str(path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == refused(wrote, resumer, path)
    assert snapshot(path) == before


def test_the_python_api_refuses_too(benchmark_solve_api: Path) -> None:
    from spade_llm.config import load_config
    from spade_llm.errors import UserError
    from spade_llm.session import start_run
    from spade_llm.store import RunDir

    config = load_config(None, {"sandbox": {"backend": "subprocess"}})
    before = snapshot(benchmark_solve_api)
    with pytest.raises(UserError, match="was written by spade solve, not spade run"):
        start_run(config, RunDir(benchmark_solve_api), resumed=True)
    assert snapshot(benchmark_solve_api) == before


@pytest.fixture
def benchmark_solve_api(tmp_path: Path) -> Path:
    return directory(tmp_path / "d", "solve", "command")


def test_the_serve_env_solver_is_the_brokers_model() -> None:
    """``store.provenance`` names serve-env's solver without importing the env package."""
    from spade_llm.serve.env.broker import ENV_MODEL
    from spade_llm.store.provenance import SERVE_ENV_SOLVER

    assert ENV_MODEL == SERVE_ENV_SOLVER


# -- exports: benchmark tasks are test rows wherever they are ------------------------------------------------


def _task(task_id: str, source: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "description": f"Add two numbers ({task_id}).",
        "entry_point": "add",
        "reference_code": "def add(a, b):\n    return a + b\n",
        "tests": [{"input": f"({i}, {i + 1})", "expected": 2 * i + 1} for i in range(4)],
        "source": source,
    }


def test_an_imported_task_in_a_run_directory_is_a_test_row_and_generated_ones_split_by_hash(tmp_path: Path) -> None:
    from spade_llm.export.solver_rows import ExportFilters, export_run, split_of

    run = directory(tmp_path / "run", "run", "command")
    (run / "plans.jsonl").write_text("")
    generated = [_task(f"gen-{i}", "generated") for i in range(40)]
    (run / "tasks.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in [*generated, _task("HumanEval/7", "humaneval")])
    )
    result = export_run(run, "grpo", tmp_path / "grpo.jsonl", ExportFilters())
    split = {r["task_id"]: r["split"] for r in rows(tmp_path / "grpo.jsonl")}
    assert split.pop("HumanEval/7") == "test"
    assert split == {t["task_id"]: split_of(t["task_id"], 0.1) for t in generated}
    assert "train" in split.values() and result.benchmark == 1
    assert "1 task of the run are benchmark data" in result.describe()
