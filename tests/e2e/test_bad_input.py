"""Every user mistake the CLI meets is one line on stderr and exit 2, never a traceback or an
"internal error" (exit 1 is for bugs), and nothing that existed is changed.

Mistakes walked here: paths (missing, a folder, unreadable), encodings (non-UTF-8 config, tasks,
samples, program, benchmark), malformed lines (``verify`` reports each as its own row; ``evaluate``
and ``solve`` stop at the first with FILE:LINE unless ``--skip-invalid``), bad flags and ports, and a
full disk while a run writes (the run resumes once there is room).

Most cases call ``spade_llm.cli.main`` in-process; serve-fake's runs as a subprocess so that a
regression cannot block the test session.
"""

from __future__ import annotations

import errno
import gc
import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spade_llm import store
from spade_llm.cli.app import main
from spade_llm.errors import UserError
from spade_llm.store import rundir

GOOD = "def f(x):\n    return x * 2 + 1\n"
TESTS = [{"input": f"({i},)", "expected": i * 2 + 1} for i in (1, 2, 5, 7)]
NOT_UTF8 = b"\xff\xfe bad bytes \xc3\x28\n"


def task(task_id: str = "t1", code: str = GOOD) -> dict[str, Any]:
    return {"task_id": task_id, "description": "d", "entry_point": "f", "reference_code": code, "tests": TESTS}


def line(record: Any) -> bytes:
    return json.dumps(record).encode() + b"\n"


def write(path: Path, *lines: bytes) -> str:
    path.write_bytes(b"".join(lines))
    return str(path)


def spade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    """Exit code, stdout lines, stderr lines (the subprocess sandbox's own warning left out)."""
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's exit on a bad flag
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip() and "not a security boundary" not in ln]
    return code, out.splitlines(), lines


def user_error(capsys: pytest.CaptureFixture[str], *argv: str, says: str) -> str:
    code, _, err = spade(capsys, *argv)
    assert code == 2, err
    assert len(err) == 1, err
    assert "Traceback" not in err[0] and "internal error" not in err[0]
    assert says in err[0], err[0]
    return err[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["verify", "evaluate", "solve"])
def test_tasks_path_missing_a_folder_or_unreadable(tmp_path, capsys, monkeypatch, command):
    extra = ["--model", "fake/default", "--out", str(tmp_path / "o")] if command == "solve" else []
    user_error(capsys, command, str(tmp_path / "none.jsonl"), *extra, says="not found")
    user_error(capsys, command, str(tmp_path), *extra, says="is a directory")
    tasks = tmp_path / "tasks.jsonl"
    write(tasks, line(task()))
    real = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self.name == "tasks.jsonl":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    message = user_error(capsys, command, str(tasks), *extra, says="Permission denied")
    assert str(tasks) in message
    assert not (tmp_path / "o").exists()


def test_exec_path_and_encoding(tmp_path, capsys):
    user_error(capsys, "exec", str(tmp_path / "none.py"), says="not found")
    user_error(capsys, "exec", str(tmp_path), says="is a directory")
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = 1\n" + NOT_UTF8)
    user_error(capsys, "exec", str(bad), says=f"{bad}:2: not UTF-8")


def test_config_path_encoding_and_yaml(tmp_path, capsys, monkeypatch):
    tasks = write(tmp_path / "tasks.jsonl", line(task()))
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"seed: 1\n" + NOT_UTF8)
    for argv in (["run", "--out", str(tmp_path / "o")], ["verify", tasks], ["evaluate", tasks]):
        user_error(capsys, *argv, "--config", str(bad), says=f"{bad}:2: config file is not UTF-8")
        user_error(capsys, *argv, "--config", str(tmp_path), says="is a directory")
        user_error(capsys, *argv, "--config", str(tmp_path / "none.yaml"), says="config file not found")
    broken = tmp_path / "broken.yaml"
    broken.write_text("seed: 1\ncontroller: {epochs: [\n")
    user_error(capsys, "run", "--config", str(broken), "--out", str(tmp_path / "o"), says="not valid YAML")
    real = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self.suffix == ".yaml":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    good = tmp_path / "good.yaml"
    good.write_text("seed: 1\n")
    monkeypatch.setattr(Path, "read_bytes", refuse)
    user_error(capsys, "verify", tasks, "--config", str(good), says="cannot read config file")
    assert not (tmp_path / "o").exists()


# -- malformed lines -----------------------------------------------------------------------------


def mixed_tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    write(
        path,
        line(task("good")),  # 1
        b"not json at all\n",  # 2
        NOT_UTF8,  # 3
        b"\n",  # 4: blank, ignored
        line({"task_id": "no-fields"}),  # 5
        line([1, 2, 3]),  # 6
        line(task("good", code="def f(x):\n    return x\n")),  # 7: a repeated id
        line(task("fine")),  # 8
    )
    return path


def test_verify_reports_each_malformed_line_and_judges_the_rest(tmp_path, capsys):
    path = mixed_tasks(tmp_path)
    before = digest(path)
    code, out, err = spade(capsys, "verify", str(path), "--sandbox", "subprocess", "--concurrency", "2")
    assert code == 0, err
    rows = [json.loads(r) for r in out]
    assert [(r["line"], r["task_id"], r["valid"], r["reason"]) for r in rows] == [
        (1, "good", True, None),
        (2, None, False, "malformed"),
        (3, None, False, "malformed"),
        (5, "no-fields", False, "malformed"),
        (6, None, False, "malformed"),
        (7, "good", False, "malformed"),
        (8, "fine", True, None),
    ]
    malformed = [r for r in rows if r["reason"] == "malformed"]
    for r in malformed:
        assert (r["status"], r["tests_passed"], r["tests_total"]) == (None, 0, 0)
        assert r["detail"] and "\n" not in r["detail"]
    assert "not JSON" in malformed[0]["detail"] and "not UTF-8" in malformed[1]["detail"]
    assert "description" in malformed[2]["detail"] and "repeated" in malformed[4]["detail"]
    assert rows[0]["tests_passed"] == rows[0]["tests_total"] == 4
    assert "5 invalid" in err[-1] and "malformed" in err[-1]
    assert digest(path) == before


def test_verify_with_only_malformed_lines_still_exits_0(tmp_path, capsys):
    path = write(tmp_path / "tasks.jsonl", b"{\n", NOT_UTF8)
    code, out, _ = spade(capsys, "verify", path)  # no sandbox needed: nothing to run
    assert code == 0 and [json.loads(r)["line"] for r in out] == [1, 2]


@pytest.mark.parametrize(
    ("bad", "says"),
    [(b"not json\n", "not JSON"), (NOT_UTF8, "not UTF-8"), (line({"task_id": "x"}), "not a task record")],
)
def test_evaluate_stops_at_the_first_malformed_line_unless_told_to_skip(tmp_path, capsys, bad, says):
    path = tmp_path / "tasks.jsonl"
    write(path, line(task("a")), bad, line(task("b")))
    before = digest(path)
    message = user_error(capsys, "evaluate", str(path), "--sandbox", "subprocess", says=f"{path}:2: {says}")
    assert "--skip-invalid" in message
    code, out, err = spade(capsys, "evaluate", str(path), "--sandbox", "subprocess", "--skip-invalid")
    assert code == 0, err
    assert [json.loads(r)["task_id"] for r in out] == ["a", "b"]
    assert any("skipped 1 malformed line" in e and f"{path}" in e for e in err)
    assert digest(path) == before


def test_repeated_task_ids_stay_an_error_for_evaluate(tmp_path, capsys):
    path = write(tmp_path / "tasks.jsonl", line(task("a")), line(task("a")))
    user_error(capsys, "evaluate", path, "--skip-invalid", says="task_id repeated: a")


def test_every_line_malformed_is_one_error_even_when_skipping(tmp_path, capsys):
    path = write(tmp_path / "tasks.jsonl", b"x\n", b"y\n")
    user_error(capsys, "evaluate", path, "--skip-invalid", says="no tasks in the file")


@pytest.mark.parametrize(
    ("sample", "says"),
    [
        (b"{not json\n", "not JSON"),
        (NOT_UTF8, "not UTF-8"),
        (line({"task_id": "nope", "code": GOOD}), "unknown task_id 'nope'"),
        (line({"task_id": "a"}), 'not a sample: it needs "completion" or "code"'),
        (line({"code": GOOD}), 'not a sample: no "task_id"'),
        (line(["a", GOOD]), "not a sample"),
    ],
)
def test_evaluate_samples_malformed_lines(tmp_path, capsys, sample, says):
    tasks = write(tmp_path / "tasks.jsonl", line(task("a")))
    samples = tmp_path / "s.jsonl"
    write(samples, line({"task_id": "a", "code": GOOD}), sample, line({"task_id": "a", "completion": ""}))
    user_error(
        capsys, "evaluate", tasks, "--samples", str(samples), "--sandbox", "subprocess", says=f"{samples}:2: {says}"
    )
    code, out, err = spade(
        capsys, "evaluate", tasks, "--samples", str(samples), "--sandbox", "subprocess", "--skip-invalid"
    )
    assert code == 0, err
    assert [json.loads(r)["passed"] for r in out] == [True, False]  # the completion alone defines nothing
    assert any("skipped 1 malformed sample line" in e for e in err)


def test_solve_stops_at_a_malformed_line_and_skips_it_when_told(tmp_path, capsys):
    path = tmp_path / "tasks.jsonl"
    write(path, line(task("a")), b"]\n")
    argv = ["solve", str(path), "--model", "fake/default", "--sandbox", "subprocess", "--max-turns", "1"]
    user_error(capsys, *argv, "--out", str(tmp_path / "o1"), says=f"{path}:2: not JSON")
    assert not (tmp_path / "o1").exists()
    code, _, err = spade(capsys, *argv, "--out", str(tmp_path / "o2"), "--skip-invalid")
    assert code == 0, err
    assert any("skipped 1 malformed line" in e for e in err)
    trajectories = (tmp_path / "o2" / "trajectories.jsonl").read_text().splitlines()
    assert [json.loads(t)["task_id"] for t in trajectories] == ["a"]


# -- import ----------------------------------------------------------------------------------------


def humaneval(task_id: str = "HumanEval/0") -> dict[str, str]:
    return {
        "task_id": task_id,
        "prompt": "def f(x):\n",
        "entry_point": "f",
        "canonical_solution": "    return x\n",
        "test": "def check(candidate):\n    assert candidate(1) == 1\n",
    }


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (line(humaneval()) + NOT_UTF8, ":2: not UTF-8"),
        (line(humaneval()) + b"{oops\n", ":2: not JSON"),
        (line(humaneval()) + line([1]), ":2: not a HumanEval problem"),
        (line(humaneval()) + line({"task_id": "x"}), ":2: not a HumanEval problem, missing"),
        (line(humaneval()) + line(humaneval()), ":2: task_id 'HumanEval/0' repeated"),
        (b"", "no problems found"),
    ],
)
def test_import_bad_benchmark_leaves_the_output_alone(tmp_path, capsys, content, says):
    source = tmp_path / "he.jsonl"
    source.write_bytes(content)
    out = tmp_path / "tasks.jsonl"
    out.write_text("precious\n")
    user_error(capsys, "import", "humaneval", str(source), "-o", str(out), says=says)
    assert out.read_text() == "precious\n"


def test_import_paths_and_gzip(tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    user_error(capsys, "import", "humaneval", str(tmp_path / "none.jsonl"), "-o", str(out), says="not found")
    user_error(capsys, "import", "humaneval", str(tmp_path), "-o", str(out), says="is a directory")
    corrupt = tmp_path / "he.jsonl.gz"
    corrupt.write_bytes(gzip.compress(line(humaneval()))[:-12] + b"garbage!")
    user_error(capsys, "import", "humaneval", str(corrupt), "-o", str(out), says=f"cannot read {corrupt}")
    source = write(tmp_path / "he.jsonl", line(humaneval()))
    user_error(capsys, "import", "humaneval", source, "-o", str(tmp_path), says="is a directory")
    assert not out.exists()
    code, _, err = spade(capsys, "import", "humaneval", source, "-o", str(out))
    assert code == 0 and "imported 1 tasks" in err[-1]


# -- flags and ports -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["exec", "x.py", "--timeout", "nan"], "--timeout"),
        (["exec", "x.py", "--timeout", "inf"], "--timeout"),
        (["verify", "t.jsonl", "--concurrency", "0"], "--concurrency"),
        (["evaluate", "t.jsonl", "--no-such-flag"], "--no-such-flag"),
        (["serve-fake", "--port", "99999"], "--port"),
        (["serve-fake", "--port", "-1"], "--port"),
        (["serve-fake", "--port", "http"], "--port"),
        (["serve-fake", "--latency", "nan"], "--latency"),
        (["prompts", "show", "../../../etc/passwd"], "no template named"),
    ],
)
def test_bad_flags(capsys, argv, says):
    user_error(capsys, *argv, says=says)


def test_serve_fake_on_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "spade_llm.cli", "serve-fake", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_debug_keeps_the_traceback(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        main(["verify", str(tmp_path), "--debug"])


# -- a full disk ---------------------------------------------------------------------------------


class _DiskFullOn:
    """Stands in for ``os`` in spade_llm.store.rundir: writes to the journal named ``journal`` fail with ENOSPC."""

    def __init__(self, journal: str) -> None:
        self.journal = journal

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(self.journal):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell the file written")
def test_a_full_disk_mid_run_is_one_line_and_the_run_resumes(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    argv = ["run", "--out", str(out), "--epochs", "1", "--tasks-per-epoch", "2", "--sandbox", "subprocess"]
    with monkeypatch.context() as m:
        m.setattr(rundir, "os", _DiskFullOn(store.TRAJECTORIES))
        message = user_error(capsys, *argv, "--quiet", says="No space left on device")
    assert f"--resume {out}" in message and "free some space" in message
    kept = (out / store.TASKS).read_text()
    assert kept and (out / "config.yaml").is_file()  # what was written before the disk filled is there
    gc.collect()  # the failed run's RunDir (and its writer lock) lives on in a reference cycle until collected
    code, _, err = spade(capsys, "run", "--resume", str(out), "--quiet")
    assert code == 0, err
    assert (out / store.TASKS).read_text() == kept
    trajectories = [json.loads(t) for t in (out / store.TRAJECTORIES).read_text().splitlines()]
    assert trajectories and len({t["trajectory_id"] for t in trajectories}) == len(trajectories)


def test_a_full_disk_replacing_a_file_keeps_the_old_one(tmp_path):
    run = store.RunDir(tmp_path)
    run.write_json("summary.json", {"old": True})

    class Full:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def replace(src: Any, dst: Any) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    store_os = rundir.os
    rundir.os = Full()  # type: ignore[assignment]
    try:
        with pytest.raises(UserError, match="No space left on device"):
            run.write_json("summary.json", {"new": True})
    finally:
        rundir.os = store_os
    assert json.loads((tmp_path / "summary.json").read_text()) == {"old": True}
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_damaged_journal_line_is_named_not_a_crash(tmp_path):
    (tmp_path / store.TASKS).write_bytes(line(task("a")) + b"{half a rec\n" + line(task("b")))
    (tmp_path / "config.yaml").write_text("{}\n")
    with pytest.raises(UserError, match=r"tasks.jsonl:2: damaged record"):
        store.read_run(tmp_path)
