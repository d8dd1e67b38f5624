"""``spade export --format harbor`` (issue 38): Harbor task folders whose verifier judges as the loop does.

The folders' ``tests/test.sh`` runs here outside a container, its paths moved by ``SPADE_SOLUTION`` and
``SPADE_VERIFIER_LOGS``; the programs it judges are the run's references and stand-ins written here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import tomllib
from sandbox_backends import run_backend

from spade_llm.cli.app import main

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("export.test_harbor_export")

MIX = "seed: 0\ncurriculum:\n  kinds: {induction: 0.4, deduction: 0.2, program: 0.4}\n"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("harbor")
    (base / "mix.yaml").write_text(MIX)
    run = base / "run"
    argv = ["run", "--config", str(base / "mix.yaml"), "--model", "fake/default", "--epochs", "1"]
    argv += [
        "--tasks-per-epoch",
        "6",
        "--samples-per-task",
        "2",
        "--sandbox",
        run_backend(),
        "--out",
        str(run),
        "--quiet",
    ]
    assert main(argv) == 0
    assert main(["export", str(run), "--format", "harbor", "-o", str(base / "harbor")]) == 0
    return base / "harbor"


def verify(folder: Path, solution: str, tmp_path: Path) -> str:
    """Run the folder's verifier on ``solution``; the reward it wrote."""
    answer, logs = tmp_path / "solution.py", tmp_path / "logs"
    answer.write_text(solution)
    env = {"SPADE_SOLUTION": str(answer), "SPADE_VERIFIER_LOGS": str(logs), "PATH": "/usr/bin:/bin"}
    subprocess.run(["bash", str(folder / "tests" / "test.sh")], env=env, check=True, timeout=300)
    return (logs / "reward.txt").read_text().strip()


def reference(folder: Path, tmp_path: Path) -> str:
    """What the folder's oracle, ``solution/solve.sh``, writes (its path moved into ``tmp_path``)."""
    script = (folder / "solution" / "solve.sh").read_text().replace("/app/solution.py", str(tmp_path / "oracle.py"))
    subprocess.run(["bash", "-c", script], check=True, timeout=60)
    return (tmp_path / "oracle.py").read_text()


def test_each_folder_has_harbors_files_and_its_oracle_earns_1_where_a_stand_in_earns_0(
    exported: Path, tmp_path: Path
) -> None:
    folders = sorted(p for p in exported.iterdir() if p.is_dir())
    kinds = set()
    for folder in folders:
        config = tomllib.loads((folder / "task.toml").read_text())
        assert config["version"] == "1.0" and config["verifier"]["timeout_sec"] > 0
        kinds.add(config["metadata"]["spade_kind"])
        assert "/app/solution.py" in (folder / "instruction.md").read_text()
        spec = json.loads((folder / "tests" / "tests.json").read_text())
        shown = (folder / "instruction.md").read_text()
        assert not any(t["input"].strip() in shown for t in spec["tests"][3:] if len(t["input"].strip()) > 8)
        oracle = reference(folder, tmp_path)
        assert verify(folder, oracle, tmp_path) == "1", folder.name
        stand_in = "print(0)\n" if spec["judge"] == "stdin" else f"def {spec['entry_point']}(*args):\n    return None\n"
        assert verify(folder, stand_in, tmp_path) == "0", folder.name
    assert kinds == {"induction", "program"}  # deduction's answers are no programs: left out


def test_a_solution_that_crashes_or_hangs_earns_0(exported: Path, tmp_path: Path) -> None:
    folder = next(
        p
        for p in sorted(exported.iterdir())
        if json.loads((p / "tests" / "tests.json").read_text())["judge"] == "stdin"
    )
    assert verify(folder, "raise SystemExit(0)\n", tmp_path) == "0"  # exits 0 having printed nothing
    assert verify(folder, "import os\nos.kill(os.getppid(), 9)\n", tmp_path) == "0"  # kills the judge
    spec = json.loads((folder / "tests" / "tests.json").read_text())
    assert spec["time_limit_s"] <= 2.0
    assert verify(folder, "while True:\n    pass\n", tmp_path) == "0"


def test_the_export_refuses_a_folder_that_is_not_empty(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = exported.parent / "run"
    (tmp_path / "old.txt").write_text("x")
    assert main(["export", str(run), "--format", "harbor", "-o", str(tmp_path)]) == 2
    assert "not an empty folder" in capsys.readouterr().err and (tmp_path / "old.txt").exists()


def test_a_checker_tasks_folder_judges_by_its_checker(tmp_path: Path) -> None:
    """A task where several outputs are right: its checker travels in tests.json, and the verifier runs it,
    so the oracle and another right answer earn 1 where a stand-in and a wrong answer earn 0."""
    from builders import ARGMAX, ARGMAX_CHECKER, ARGMAX_LAST, ARGMIN, argmax_task

    from spade_llm.export.harbor import write_harbor

    task = argmax_task(filled=True, time_limit_s=1.0)
    written = write_harbor([(task, "easy")], tmp_path / "harbor", public_tests=1, prompts_dir=None, test_timeout_s=1.0)
    assert (written.tasks, written.left_out) == (1, {})
    folder = tmp_path / "harbor" / "argmax"
    spec = json.loads((folder / "tests" / "tests.json").read_text())
    assert (spec["judge"], spec["checker"], spec["checker_cpu_s"]) == ("stdin", ARGMAX_CHECKER, 2.0)
    assert "any correct output is accepted" in (folder / "instruction.md").read_text()
    assert reference(folder, tmp_path) == ARGMAX
    assert verify(folder, ARGMAX, tmp_path) == "1"
    assert verify(folder, ARGMAX_LAST, tmp_path) == "1"  # another right output: the output rule would fail it
    assert verify(folder, "print(0)\n", tmp_path) == "0"
    assert verify(folder, ARGMIN, tmp_path) == "0"
    assert verify(folder, "import sys\nprint(sys.stdin.read())\n", tmp_path) == "0"  # the echo
    # an output written as the checker's JSON fields is only the actual output's text
    assert verify(folder, 'print(\'1", "actual": "2\')\n', tmp_path) == "0"
