"""verl's own SandboxFusion judge on ``--verl-reward sandbox_fusion`` exports, through a real ``spade serve-sandbox``.

The judge is verl 0.9.1's ``verl/utils/reward_score/sandbox_fusion`` ``compute_score``, the one verl's
``default_compute_score`` calls for the ``codecontests`` data source (with ``continuous=True``: the
fraction of the first 10 tests passed). Small real runs of the fake model on several seeds are
exported, and on every row: the reference (the fake model's passing answers are the references)
scores 1.0, an answer that raises and one that ``sys.exit(0)``-s at import score 0.0, an answer that
raises on one scored test loses exactly that test's share, and a function returning None never
scores 1.0. On main (7f19552) seed 2's task e0-00a643fc44 paid both crashes 0.875: 7 of its 8 tests
expected the empty string, which is what verl's ``fn_name`` wrapper prints when the answer raises.
A ``program`` task's export (stdin and stdout texts, no ``fn_name``: verl feeds each input to the
program's stdin through serve-sandbox) is scored by verl's judge as spade's ``compute_score`` scores the
same row, but for an answer's trailing spaces, which SandboxFusion's text comparison fails.

Loading verl: ``pip install --no-deps verl==0.9.1`` (it needs only ``requests`` here; importing the
``verl`` package itself needs torch, ray and more). So the package ``verl/utils/reward_score/
sandbox_fusion`` (``__init__.py`` and ``utils.py``: the standard library and requests) is loaded by
path under a top-level name of its own, ``verl_sandbox_fusion``; its one relative import (``from
.utils import check_correctness``) then resolves inside it, and no stub of ``verl`` is needed.

The server runs on bwrap where it works, else on the subprocess backend (``--allow-unsafe``): every
program it runs is the fake model's reference or one of the answers written here.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from trainer_kit import need, sandbox_backend, serve_sandbox, skip_unless_required

from spade_llm.cli.app import main

pytestmark = [pytest.mark.slow, pytest.mark.verl]

VERL_VERSION = "0.9.1"
SEEDS = (1, 2, 3)
BACKEND = sandbox_backend()


def load_verl_sandbox_fusion() -> ModuleType:
    """verl's ``reward_score/sandbox_fusion`` package, loaded by path (module docstring); skips the
    module when verl is not installed or is not the version these scores were measured on."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("verl")
    except PackageNotFoundError:
        skip_unless_required(f"verl is not installed: pip install --no-deps verl=={VERL_VERSION}")
    if installed != VERL_VERSION:
        skip_unless_required(f"verl {installed} installed; this judge is pinned to {VERL_VERSION}")
    need("requests", "verl")  # verl's sandbox_fusion client posts with requests
    spec = importlib.util.find_spec("verl")  # finds the package without running its __init__
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations))) / "utils" / "reward_score" / "sandbox_fusion"
    name = "verl_sandbox_fusion"
    package = importlib.util.spec_from_file_location(name, root / "__init__.py", submodule_search_locations=[str(root)])
    assert package is not None and package.loader is not None
    module = importlib.util.module_from_spec(package)
    sys.modules[name] = module
    package.loader.exec_module(module)
    return module


verl = load_verl_sandbox_fusion()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``spade serve-sandbox`` on a free loopback port."""
    with serve_sandbox(tmp_path_factory.mktemp("serve") / "stderr.log", BACKEND) as found:
        yield found


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, Path, Path]]:
    """(seed, run directory, sandbox_fusion export) for each seed: 2 epochs, 2 samples per task."""
    pytest.importorskip("pyarrow")
    made = []
    for seed in SEEDS:
        base = tmp_path_factory.mktemp(f"seed{seed}")
        run, out = base / "run", base / "sf.parquet"
        argv = ["run", "--seed", str(seed), "--epochs", "2", "--samples-per-task", "2", "--out", str(run), "--quiet"]
        assert main([*argv, "--sandbox", "auto"]) == 0
        assert main(["export", str(run), "--format", "verl", "--verl-reward", "sandbox_fusion", "-o", str(out)]) == 0
        made.append((seed, run, out))
    return made


def block(code: str) -> str:
    return f"```python\n{code}```\n"


def raises_on(reference: str, entry_point: str, stdin: str) -> str:
    """The reference, but raising on the test whose argument lines are ``stdin``."""
    args = [json.loads(line) for line in stdin.split("\n")] if stdin else []
    return (
        "import json\n"
        f"_ns = {{}}\nexec({reference!r}, _ns)\n"
        f"def {entry_point}(*a):\n"
        f"    if json.dumps(list(a)) == {json.dumps(args)!r}:\n"
        "        raise ValueError('wrong here')\n"
        f"    return _ns[{entry_point!r}](*a)\n"
    )


def test_verls_own_judge_pays_references_and_never_a_crash(url: str, exports: list[tuple[int, Path, Path]]) -> None:
    """One test, so that xdist's workers do not each make the runs."""
    import pyarrow.parquet as pq

    semaphore = threading.Semaphore(4)  # verl's reward_model.sandbox_fusion.max_concurrent
    jobs: list[tuple[str, str, str, str, float | None]] = []  # what, task id, ground truth, answer, its score
    for seed, run, out in exports:
        tasks = {t["task_id"]: t for t in _read(run / "tasks.jsonl")}
        passing: dict[str, set[str]] = {}
        for traj in _read(run / "trajectories.jsonl"):
            if traj["final_status"] == "passed":
                passing.setdefault(traj["task_id"], set()).add(traj["attempts"][-1]["code"])
        rows = pq.read_table(out).to_pylist()
        assert rows, seed
        for row in rows:
            task_id, truth = row["extra_info"]["task_id"], row["reward_model"]["ground_truth"]
            task, scored = tasks[task_id], json.loads(truth)["inputs"][:10]
            ep = task["entry_point"]
            answers: list[tuple[str, str, float | None]] = [
                ("a passing answer", code, 1.0) for code in sorted({task["reference_code"], *passing.get(task_id, ())})
            ]
            answers.append(("raises", f"def {ep}(*a):\n    raise ValueError('no')\n", 0.0))
            answers.append(("exits at import", "import sys\nsys.exit(0)\n", 0.0))
            if len(scored) > 1:
                once = raises_on(task["reference_code"], ep, scored[-1])
                answers.append(("raises on one scored test", once, 1 - 1 / len(scored)))
            answers.append(("returns None", f"def {ep}(*a):\n    return None\n", None))  # None: below 1.0
            jobs.extend((what, task_id, truth, code, want) for what, code, want in answers)

    def score(job: tuple[str, str, str, str, float | None]) -> float:
        _, _, truth, code, _ = job
        value, meta = verl.compute_score(url, semaphore, 1024, block(code), truth, continuous=True, timeout=10)
        assert all(m.get("status") != "api_error" for m in meta), meta  # the server answered every test
        return float(value)

    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(score, jobs))
    wrong = [
        (what, task_id, got, want)
        for (what, task_id, _, _, want), got in zip(jobs, scores, strict=True)
        if (got >= 1.0 if want is None else abs(got - want) > 1e-9)
    ]
    assert not wrong, wrong
    assert {what for what, *_ in jobs} == {
        "a passing answer",
        "raises",
        "exits at import",
        "raises on one scored test",
        "returns None",
    }
    for _, _, truth, _, _ in jobs:  # no output is null (verl passes it unseen) or prints empty
        assert all(isinstance(o, str) and o.rstrip("\n") for o in json.loads(truth)["outputs"]), truth

    # the runs hold the case this judge got wrong before (a task of seed 2's run, by id then): tests
    # expecting the empty string, now left out. Task ids follow the fake's text, so none is pinned here
    from spade_llm.rewards.groundtruth import sandbox_fusion_form
    from spade_llm.types import Task

    dropped: dict[str, int] = {}
    for _, run, _ in exports:
        for record in _read(run / "tasks.jsonl"):
            left_out = sandbox_fusion_form(Task.model_validate(record)).tests_left_out
            if n := left_out.get("output prints empty, as a crash does"):
                dropped[record["task_id"]] = n
    assert len(dropped) >= 3 and max(dropped.values()) >= 5, dropped


PROGRAM = "n = int(input())\nprint(sum(map(int, input().split()[:n])))\n"
PROGRAM_CASES = [("3\n1 2 3\n", "6\n"), ("1\n7\n", "7\n"), ("2\n-5 5\n", "0\n"), ("4\n10 20 30 40\n", "100\n")]
PROGRAM_ANSWERS: dict[str, tuple[str, float, float]] = {  # what: answer, verl's score, spade's (as verl's number)
    "the reference": (PROGRAM, 1.0, 1.0),
    "reads all of stdin": ("import sys\nn, *xs = map(int, sys.stdin.read().split())\nprint(sum(xs[:n]))\n", 1.0, 1.0),
    "no final newline": ("n = int(input())\nprint(sum(map(int, input().split()[:n])), end='')\n", 1.0, 1.0),
    "trailing blank lines": (PROGRAM + "print()\nprint()\n", 1.0, 1.0),
    "the first number": ("input()\nprint(input().split()[0])\n", 0.25, 0.25),
    "raises on n == 2": ("n = int(input())\nassert n != 2\n" + PROGRAM.split("\n", 1)[1], 0.75, 0.75),
    "raises": ("raise ValueError('no')\n", 0.0, 0.0),
    "the right output, then exit 1": (PROGRAM + "raise SystemExit(1)\n", 0.0, 0.0),
    "prints nothing": ("import sys\nsys.stdin.read()\n", 0.0, 0.0),
    # SandboxFusion compares text: an answer's trailing spaces fail there, never in spade's output rule
    "trailing spaces (differs)": (PROGRAM.replace("[:n])))", "[:n])), end=' \\n')"), 0.0, 1.0),
}


def test_verls_own_judge_scores_a_program_task_export_as_spade_does(url: str, tmp_path: Path) -> None:
    """A ``program`` task exported with ``--verl-reward sandbox_fusion``, scored by verl's SandboxFusion
    judge through serve-sandbox (each test's input on the program's stdin) and by spade's compute_score
    on the same row: the same score, but where SandboxFusion's text comparison is stricter."""
    import pyarrow.parquet as pq
    from trainer_kit import default_rewarder_on

    from spade_llm.rewards.code import compute_score
    from spade_llm.types import Task, TestCase

    run = tmp_path / "run"
    run.mkdir()
    tests = [TestCase(input=i, expected=o) for i, o in PROGRAM_CASES]
    task = Task(task_id="p1", kind="program", description="d", entry_point="", reference_code=PROGRAM, tests=tests)
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "tasks.jsonl").write_text(json.dumps(task.dump()) + "\n")
    out = tmp_path / "sf.parquet"
    assert main(["export", str(run), "--format", "verl", "--verl-reward", "sandbox_fusion", "-o", str(out)]) == 0
    (row,) = pq.read_table(out).to_pylist()
    truth = row["reward_model"]["ground_truth"]
    assert "fn_name" not in json.loads(truth)  # stdin and stdout texts: verl feeds each input to the program

    semaphore = threading.Semaphore(4)

    def verl_score(answer: str) -> float:
        value, meta = verl.compute_score(url, semaphore, 1024, block(answer), truth, continuous=True, timeout=10)
        assert all(m.get("status") != "api_error" for m in meta), meta
        return float(value)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(verl_score, [answer for answer, _, _ in PROGRAM_ANSWERS.values()]))
    scores = dict(zip(PROGRAM_ANSWERS, got, strict=True))
    with default_rewarder_on(BACKEND):
        for what, (answer, in_verl, in_spade) in PROGRAM_ANSWERS.items():
            verdict = compute_score(row["data_source"], block(answer), truth, row["extra_info"])
            spade = 1.0 if verdict["acc"] == 1.0 else verdict["pass_fraction"]
            assert (scores[what], spade) == pytest.approx((in_verl, in_spade)), what
