"""``spade verify`` and ``spade evaluate``: limits from a run config or ``--timeout``, verdicts from
the one judge, and an empty input is a user error (exit 2, one line), not a pass@k of 0.

Commands run in-process through ``cli.main`` on the subprocess sandbox; the programs are benign.
"""

from __future__ import annotations

import json

import pytest
from modules_held import data_models_after
from sandbox_backends import run_backend

from spade_llm.cli.app import main

GOOD = "def f(x):\n    return x * 2 + 1\n"
TESTS = [{"input": f"({i},)", "expected": i * 2 + 1} for i in (1, 2, 5, 7)]


def write_tasks(path, *tasks):
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return str(path)


def task(task_id="t1", code=GOOD, tests=TESTS):
    return {"task_id": task_id, "description": "d", "entry_point": "f", "reference_code": code, "tests": tests}


def run(capsys, *argv):
    code = main([*argv, "--sandbox", "subprocess", "--concurrency", "2"])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return code, rows, [line for line in err.splitlines() if line.strip() and "not a security boundary" not in line]


@pytest.mark.parametrize("command", ["verify", "evaluate"])
@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_tasks_file_is_a_user_error(tmp_path, capsys, command, content):
    path = tmp_path / "tasks.jsonl"
    path.write_text(content)
    code, rows, err = run(capsys, command, str(path))
    assert code == 2 and rows == []
    assert len(err) == 1 and "no tasks" in err[0] and "nothing to" in err[0] and str(path) in err[0]


def test_evaluate_empty_samples_file_is_a_user_error(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", task())
    (tmp_path / "s.jsonl").write_text("")
    code, rows, err = run(capsys, "evaluate", tasks, "--samples", str(tmp_path / "s.jsonl"))
    assert code == 2 and rows == [] and len(err) == 1 and "no samples" in err[0]


def test_evaluate_rows_carry_the_final_status(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", task("a"), task("b"))
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        "".join(
            json.dumps(s) + "\n"
            for s in [
                {"task_id": "a", "code": GOOD},
                {"task_id": "a", "code": "def f(x):\n    return x\n"},
                {"task_id": "b", "code": "def f(x)\n"},
                {"task_id": "b", "code": "def f(x):\n    while True:\n        pass\n"},
            ]
        )
    )
    cfg = tmp_path / "run.yaml"
    cfg.write_text("sandbox:\n  test_timeout_s: 0.2\n")
    code, rows, err = run(capsys, "evaluate", tasks, "--samples", str(samples), "--config", str(cfg), "--timeout", "5")
    assert code == 0
    assert [(r["task_id"], r["passed"], r["status"]) for r in rows] == [
        ("a", True, "passed"),
        ("a", False, "failed"),
        ("b", False, "error"),
        ("b", False, "timeout"),
    ]
    assert rows[3]["exec_status"] == "ok"  # stopped after two timed-out tests, not at the wall limit
    assert "pass@1 0.2500" in err[-1]


def test_config_limits_apply_to_evaluate_and_verify(tmp_path, capsys):
    # 0.4 s of CPU time: a test's budget is CPU time (waiting, as time.sleep does, is not running out)
    slow = (
        "import time\ndef f(x):\n    t = time.process_time()\n    while time.process_time() - t < 0.4:\n"
        "        pass\n    return x * 2 + 1\n"
    )
    tasks = write_tasks(tmp_path / "tasks.jsonl", task("slow", slow))
    code, rows, _ = run(capsys, "evaluate", tasks)
    assert code == 0 and rows[0]["status"] == "passed"  # default per-test budget: 3 s
    cfg = tmp_path / "run.yaml"
    cfg.write_text("sandbox:\n  test_timeout_s: 0.1\n  timeout_s: 5\n")
    code, rows, _ = run(capsys, "evaluate", tasks, "--config", str(cfg))
    assert code == 0 and rows[0]["status"] == "timeout"
    code, rows, _ = run(capsys, "verify", tasks, "--config", str(cfg))
    assert code == 0 and rows[0]["reason"] == "timeout" and rows[0]["status"] == "timeout"


def test_timeout_flag_is_the_wall_limit(tmp_path, capsys):
    slow = "import time\ndef f(x):\n    time.sleep(0.3)\n    return x * 2 + 1\n"
    tasks = write_tasks(tmp_path / "tasks.jsonl", task("slow", slow))
    code, rows, _ = run(capsys, "evaluate", tasks, "--timeout", "0.5")
    # calls that wait share what is left before the wall limit: they time out, the execution ends in time
    assert code == 0 and rows[0]["status"] == "timeout"
    code, rows, _ = run(capsys, "verify", tasks, "--timeout", "0.5")
    assert code == 0 and rows[0]["reason"] == "timeout"


def test_bad_config_is_one_line(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", task())
    for command in ("verify", "evaluate"):
        code, rows, err = run(capsys, command, tasks, "--config", str(tmp_path / "missing.yaml"))
        assert code == 2 and rows == [] and len(err) == 1 and "config file not found" in err[0]


def test_verify_reports_a_raising_reference_as_runtime_error(tmp_path, capsys):
    raising = "def f(x):\n    return 10 // (x - 5) * 0 + x * 2 + 1\n"
    tasks = write_tasks(tmp_path / "tasks.jsonl", task("r", raising), task("ok"))
    code, rows, _ = run(capsys, "verify", tasks)
    assert code == 0
    assert [(r["task_id"], r["valid"], r["reason"], r["status"]) for r in rows] == [
        ("r", False, "runtime_error", "failed"),
        ("ok", True, None, "passed"),
    ]
    assert rows[0]["tests_passed"] == 3 and rows[0]["tests_total"] == 4


def test_verify_applies_the_configs_banned_imports(tmp_path, capsys):
    code_with_random = "import random\ndef f(x):\n    return x * 2 + 1\n"
    tasks = write_tasks(tmp_path / "tasks.jsonl", task("r", code_with_random), task("ok"))
    cfg = tmp_path / "run.yaml"
    cfg.write_text("validation:\n  banned_imports: [random, time]\n")
    code, rows, _ = run(capsys, "verify", tasks, "--config", str(cfg))
    assert code == 0 and [(r["task_id"], r["reason"]) for r in rows] == [("r", "banned_import"), ("ok", None)]
    code, rows, _ = run(capsys, "verify", tasks)
    assert [r["reason"] for r in rows] == [None, None]  # no config: no policy


# -- --check: a linter's exit (issue 36) ---------------------------------------------------------------


def test_check_exits_6_when_what_is_checked_fails_and_0_otherwise(tmp_path, capsys, make_task):
    from spade_llm.cli import main
    from spade_llm.errors import Exit

    ok, bad = tmp_path / "ok.py", tmp_path / "bad.py"
    ok.write_text("print(1)\n")
    bad.write_text("raise SystemExit(3)\n")
    assert main(["exec", str(bad), "--sandbox", "subprocess"]) == Exit.OK  # the result is the output
    assert main(["exec", str(bad), "--sandbox", "subprocess", "--check"]) == Exit.CHECK_FAILED
    assert main(["exec", str(ok), "--sandbox", "subprocess", "--check"]) == Exit.OK

    good = make_task()
    wrong = good.model_copy(update={"task_id": "wrong", "reference_code": "def add(a, b):\n    return a * b\n"})
    both, one = tmp_path / "both.jsonl", tmp_path / "one.jsonl"
    both.write_text(good.model_dump_json() + "\n" + wrong.model_dump_json() + "\n")
    one.write_text(good.model_dump_json() + "\n")
    common = ["--sandbox", "subprocess", "--concurrency", "2"]
    assert main(["verify", str(both), *common]) == Exit.OK
    assert main(["verify", str(both), *common, "--check"]) == Exit.CHECK_FAILED
    assert main(["verify", str(one), *common, "--check"]) == Exit.OK
    assert main(["evaluate", str(one), *common, "--check"]) == Exit.OK  # the reference passes
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "add", "code": "def add(a, b):\\n    return 0\\n"}\n')
    assert main(["evaluate", str(one), "--samples", str(samples), *common]) == Exit.OK
    assert main(["evaluate", str(one), "--samples", str(samples), *common, "--check"]) == Exit.CHECK_FAILED
    capsys.readouterr()


# -- exec: a whole program's stdin and CPU budget (issue 38) ---------------------------------------------


def test_exec_feeds_the_program_its_stdin_file_and_ends_it_at_its_cpu_budget(tmp_path, capsys):
    program, given = tmp_path / "sum.py", tmp_path / "in.txt"
    program.write_text("n = int(input())\nprint(sum(map(int, input().split()[:n])))\n")
    given.write_text("2\n20 22 99\n")
    assert main(["exec", str(program), "--sandbox", "subprocess", "--stdin", str(given)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["status"], result["stdout"]) == ("ok", "42\n")
    loop = tmp_path / "loop.py"
    loop.write_text("while True:\n    pass\n")
    assert main(["exec", str(loop), "--sandbox", "subprocess", "--cpu-s", "0.2", "--timeout", "30"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "timeout" and "CPU time limit" in result["stderr"]


def test_exec_stdin_that_is_missing_or_not_text_is_one_error(tmp_path, capsys):
    program, binary = tmp_path / "p.py", tmp_path / "in.bin"
    program.write_text("print(input())\n")
    binary.write_bytes(b"\xff\xfe\n")
    assert main(["exec", str(program), "--stdin", str(tmp_path / "none.txt")]) == 2
    assert "--stdin file not found" in capsys.readouterr().err
    assert main(["exec", str(program), "--stdin", str(binary)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err


def test_exec_starts_its_sandbox_for_one_run_while_it_reads_the_program(tmp_path, capsys, monkeypatch):
    """The sandbox starts first, in the background, with one worker (a pooled backend's default of one
    per core only competed with the command's imports); a missing program is still the one error."""
    from spade_llm.sandbox import registry

    asked = []
    real = registry.get_sandbox

    def recorded(name, **kwargs):
        asked.append((name, kwargs.get("one_run")))
        return real(name, **kwargs)

    monkeypatch.setattr(registry, "get_sandbox", recorded)
    program = tmp_path / "p.py"
    program.write_text("print(6 * 7)\n")
    assert main(["exec", str(program), "--sandbox", "subprocess"]) == 0
    assert json.loads(capsys.readouterr().out)["stdout"] == "42\n"
    assert main(["exec", str(tmp_path / "none.py"), "--sandbox", "subprocess"]) == 2
    assert "file not found" in capsys.readouterr().err
    assert asked == [("subprocess", True), ("subprocess", True)]


def test_exec_of_a_python_program_imports_no_data_model(tmp_path):
    """pydantic and the records (~100-200 ms here) were most of ``spade exec``'s start: the run's result
    is a dataclass, printed as the JSON a record holds it in."""
    program = tmp_path / "p.py"
    program.write_text("print(6 * 7)\n")
    out = tmp_path / "out.json"
    code = (
        "import contextlib, io\n"
        "from spade_llm.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as printed:\n"
        f"    assert main(['exec', {str(program)!r}, '--sandbox', {run_backend()!r}]) == 0\n"
        f"open({str(out)!r}, 'w').write(printed.getvalue())"
    )
    assert data_models_after(code) == []
    assert json.loads(out.read_text())["stdout"] == "42\n"
