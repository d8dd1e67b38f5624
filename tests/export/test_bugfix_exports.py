"""A bug-fix run read back as training data, for both players: every solver format shows the buggy code in its
prompt and never the line the bug changed, every reward a trainer calls scores the buggy code handed back as
the loop did (nothing, partial credit or not), and the generator's bug-injection answers come with their
learnability, their base task, and no held-out task in a train row.

The run is ``bugfix_kit``'s: the loop itself, played by two function-driven fakes (no hand-written record).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bugfix_kit import TASKS, WRONG_FIX, fenced, make_bugfix_run

from spade_llm.cli.app import main
from spade_llm.dedup import HELD_OUT, Deduper, sealed_entry, shape
from spade_llm.errors import UserError
from spade_llm.evaluator import task_fingerprint
from spade_llm.export.generator_rows import read_for_generator
from spade_llm.export.solver_rows import read_for_export, split_of
from spade_llm.kinds import get_kind
from spade_llm.kinds.bugfix import UNCHANGED, duplicate_key, secret_lines
from spade_llm.rewards import code as rewards
from spade_llm.rewards.code import Rewarder, parse_ground_truth, task_from_columns
from spade_llm.rewards.groundtruth import LEFT_OUT_JUDGED_WITH_MORE, ground_truth, sandbox_fusion_form
from spade_llm.sandbox.base import Limits
from spade_llm.store import read_run
from spade_llm.types import Task, base_task_id

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("export.test_bugfix_exports")]


@pytest.fixture(scope="module", autouse=True)
def rewarder() -> Any:
    """One subprocess-sandbox rewarder as the module default (what compute_score uses)."""
    box = Rewarder("subprocess", limits=Limits(timeout_s=5.0), test_timeout_s=1.0, max_workers=2)
    saved, rewards._default = rewards._default, box
    yield box
    rewards._default = saved
    box.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bugfix_run(tmp_path_factory.mktemp("bugfix") / "run")


@pytest.fixture(scope="module")
def tasks(run: Path) -> dict[str, Task]:
    return {t.task_id: t for t in read_run(run).tasks}


def export(run: Path, fmt: str, *flags: str, role: str = "solver") -> Path:
    out = run.parent / f"{role}-{fmt}-{'-'.join(f.strip('-') for f in flags)}.{'parquet' if fmt == 'verl' else 'jsonl'}"
    assert main(["export", str(run), "--role", role, "--format", fmt, "-o", str(out), *flags]) == 0
    return out


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def asked(messages: list[dict[str, str]]) -> str:
    """What the solver was shown before its first answer: every message up to the first assistant one."""
    shown = []
    for m in messages:
        if m["role"] == "assistant":
            break
        shown.append(m["content"])
    return "\n".join(shown)


# -- the solver's rows ---------------------------------------------------------------------------------


def test_the_run_is_a_real_bugfix_run(run: Path, tasks: dict[str, Task]) -> None:
    records = read_run(run)
    assert {t.kind for t in tasks.values()} == {"bugfix"} and len(tasks) == 4
    assert {r.reason for r in records.rejected} == {"bug_breaks_all", "duplicate"}
    made_on = {t.task_id: base_task_id(t) for t in tasks.values()}
    assert sum(b is not None for b in made_on.values()) == 2  # epoch 1's, each made on an epoch-0 task
    assert all(b is None or tasks[b].meta["epoch"] == 0 for b in made_on.values())
    assert [m.novelty for m in records.metrics] == [1.0, 1.0]  # keyed tasks: new by their bug, not their code
    assert {s.passed for s in records.task_stats} == {3} and {s.samples for s in records.task_stats} == {4}
    # bugs made, kept and fixed: 2 answers a prompt, one kept, each fixed by 3 of its 4 episodes
    # (the edit families are the language's to tell: each bug here is one edit, under one label or more)
    made = {"proposed": 4, "accepted": 2, "episodes": 8, "passed": 6}
    whole = {"proposed": 8, "accepted": 4, "episodes": 16, "passed": 12}
    for facets, counts in [*((row.facets, made) for row in records.metrics), (records.summary["facets"], whole)]:
        assert list(facets) == ["bugfix"] and facets["bugfix"]["maker"] == {"generator": counts}
        edits = facets["bugfix"]["edit"].values()
        assert edits and all(e["proposed"] <= counts["proposed"] and e["passed"] <= e["episodes"] for e in edits)
        assert max(e["accepted"] for e in edits) <= counts["accepted"] <= sum(e["accepted"] for e in edits)


@pytest.mark.parametrize("fmt", ["sft", "dpo", "grpo"])
def test_every_prompt_shows_the_buggy_code_and_never_the_line_it_changed(
    run: Path, tasks: dict[str, Task], fmt: str
) -> None:
    found = rows(export(run, fmt))
    assert {r["kind"] for r in found} == {"bugfix"} and {r["task_id"] for r in found} == set(tasks)
    for row in found:
        task = tasks[row["task_id"]]
        shown = asked(row["messages"] if fmt == "sft" else row["prompt"])
        assert task.buggy_code is not None and task.buggy_code.rstrip() in shown
        lines = {line.strip() for line in shown.splitlines()}
        assert secret_lines(task) and not set(secret_lines(task)) & lines, row["task_id"]
        assert "FAILS" in shown  # the buggy code's verdicts on the public tests, measured by the gates
    if fmt == "dpo":  # the repair pairs: the bug handed back unchanged is the rejected answer
        repair = [r for r in found if r["pair_type"] == "repair"]
        assert repair and all(str(tasks[r["task_id"]].buggy_code) in r["rejected"][0]["content"] for r in repair)
        assert {r["pair_type"] for r in found} == {"samples", "repair"}


def test_the_ground_truth_carries_the_buggy_code_and_every_reward_refuses_it_unchanged(
    run: Path, tasks: dict[str, Task]
) -> None:
    graded = 0
    for row in rows(export(run, "grpo")):
        task, public = parse_ground_truth(row["ground_truth"])
        original = tasks[row["task_id"]]
        assert task.buggy_code == original.buggy_code and public == 3
        fixed = fenced(original.reference_code)
        unchanged = fenced(original.buggy_code or "")
        relaid = fenced("# my fix\n" + (original.buggy_code or "").replace("    ", "  "))  # same program, re-laid
        for partial in (False, True):
            paid = rewards.compute_score("spade_llm", fixed, row["ground_truth"], partial_credit=partial)
            assert paid["score"] == 1.0
            for answer in (unchanged, relaid):
                score = rewards.compute_score("spade_llm", answer, row["ground_truth"], partial_credit=partial)
                assert (score["score"], score["status"], score["tests_passed"]) == (0.0, "error", 0), answer
        wrong = rewards.compute_score("spade_llm", fenced(WRONG_FIX[original.entry_point]), row["ground_truth"])
        assert wrong["score"] == 0.0 and wrong["status"] == "failed"
        graded += 1
    assert graded == 4


def test_the_trainers_reward_is_the_loops_verdict_on_the_same_answers(run: Path, tasks: dict[str, Task]) -> None:
    """Every attempt of the run, judged again from the export's ground truth: each test the loop ran, the same
    verdict (the loop runs the hidden tests only once the public ones pass, or on the last turn)."""
    truths = {r["task_id"]: r["ground_truth"] for r in rows(export(run, "grpo"))}
    unchanged = compared = 0
    for trajectory in read_run(run).trajectories:
        task, _ = parse_ground_truth(truths[trajectory.task_id])
        for attempt in trajectory.attempts:
            verdict = rewards.default_rewarder().judge_answer(task, attempt.code)
            assert verdict.result is not None
            again = {r.index: r.passed for r in verdict.result.test_results or []}
            ran = [r for r in attempt.result.test_results or [] if not (r.error or "").startswith("not run")]
            assert ran and all(again[r.index] == r.passed for r in ran), (trajectory.trajectory_id, attempt.turn)
            compared += len(ran)
            unchanged += attempt.result.load_error == UNCHANGED
    assert unchanged == 4  # sample 1 of each task handed the bug back on its first turn
    assert compared > 50


def test_a_ground_truth_without_its_buggy_code_is_refused(tasks: dict[str, Task]) -> None:
    task = next(iter(tasks.values()))
    truth = ground_truth(task, 3)
    del truth["buggy_code"]
    with pytest.raises(UserError, match="bugfix ground truth needs its buggy_code"):
        parse_ground_truth(truth)
    with pytest.raises(UserError, match="judged with its buggy_code: use the `ground_truth` column"):
        task_from_columns(json.dumps([t.dump() for t in task.tests]), task.entry_point, "bugfix")
    with pytest.raises(UserError, match="is judged with its buggy_code, and it has none"):
        ground_truth(task.model_copy(update={"buggy_code": None}), 3)


def test_verls_own_judges_are_given_no_bugfix_task(run: Path, tasks: dict[str, Task], capsys: Any) -> None:
    """SandboxFusion and prime_code read the tests alone: they would pay the bug handed back on every test it
    leaves passing, so the sandbox_fusion export leaves the kind out, saying why."""
    assert not get_kind("bugfix").sandbox_fusion and get_kind("induction").sandbox_fusion
    for task in tasks.values():
        assert sandbox_fusion_form(task).reason == LEFT_OUT_JUDGED_WITH_MORE
    capsys.readouterr()
    pq = pytest.importorskip("pyarrow.parquet")
    path = export(run, "verl", "--verl-reward", "sandbox_fusion")
    assert pq.read_table(path).num_rows == 0
    assert f"4 tasks ({LEFT_OUT_JUDGED_WITH_MORE})" in capsys.readouterr().err
    spade = pq.read_table(export(run, "verl")).to_pylist()  # spade's own reward: every task, the bug in its prompt
    assert len(spade) == 4
    for row in spade:
        task = tasks[row["extra_info"]["task_id"]]
        assert task.buggy_code is not None and task.buggy_code.rstrip() in asked(row["prompt"])
        assert parse_ground_truth(row["reward_model"]["ground_truth"])[0].buggy_code == task.buggy_code


def test_a_harbor_folder_shows_the_bug_and_its_verifier_pays_the_fix_alone(
    run: Path, tasks: dict[str, Task], tmp_path: Path
) -> None:
    out = run.parent / "harbor"
    assert main(["export", str(run), "--format", "harbor", "-o", str(out)]) == 0
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(folders) == 4
    for folder in folders:
        task = tasks[folder.name]
        assert (task.buggy_code or "").rstrip() in (folder / "instruction.md").read_text()
        for code, reward in ((task.reference_code, "1"), (task.buggy_code or "", "0")):
            answer, logs = tmp_path / "solution.py", tmp_path / "logs"
            answer.write_text(code)
            env = {"SPADE_SOLUTION": str(answer), "SPADE_VERIFIER_LOGS": str(logs), "PATH": "/usr/bin:/bin"}
            subprocess.run(["bash", str(folder / "tests" / "test.sh")], env=env, check=True, timeout=120)
            assert (logs / "reward.txt").read_text().strip() == reward, folder.name


def test_a_task_made_on_a_base_lands_in_its_bases_split(run: Path, tasks: dict[str, Task]) -> None:
    """A fix of a bug in a held-out task is that task's reference: the two are split together, on the base's id."""
    made = [t for t in tasks.values() if base_task_id(t) is not None]
    fractions = [f / 20 for f in range(1, 20)]
    apart = next(f for f in fractions if any(split_of(t.task_id, f) != split_of(t.meta["base_task"], f) for t in made))
    split = {r.task.task_id: r.split for r in read_for_export(run, apart).tasks}
    for task in made:
        assert split[task.task_id] == split[base_task_id(task) or ""] == split_of(base_task_id(task) or "", apart)


# -- the generator's rows --------------------------------------------------------------------------------


def test_the_bug_injection_answers_come_with_their_learnability_and_their_base(
    run: Path, tasks: dict[str, Task]
) -> None:
    sft = rows(export(run, "sft", "--test-fraction", "0", role="generator"))
    assert len(sft) == 4 and {r["kind"] for r in sft} == {"bugfix"}
    assert {r["learnability"] for r in sft} == {0.25} and {tuple(r["pass_rates"]) for r in sft} == {(0.75,)}
    on_base = [r for r in sft if r["epoch"] == 1]
    assert len(on_base) == 2
    for row in on_base:
        (task,) = (tasks[i] for i in row["task_ids"])
        base = tasks[base_task_id(task) or ""]
        prompt = row["messages"][1]["content"]
        assert base.reference_code.rstrip() in prompt and base.description in prompt  # the base, shown whole
        assert json.loads(row["messages"][-1]["content"])["tasks"][0]["buggy_code"] == task.buggy_code
    dpo = rows(export(run, "dpo", "--test-fraction", "0", role="generator"))
    assert {r["pair_type"] for r in dpo} == {"rejected"} and len(dpo) >= 2  # a bug that breaks every test, refused
    grpo = rows(export(run, "grpo", "--test-fraction", "0", role="generator"))
    assert len(grpo) == 4 and {r["mean_learnability"] for r in grpo} == {0.125}  # one of two answers paid
    for row in grpo:
        assert (row["epoch"] == 1) == (row["base_task"] is not None)
        if row["base_task"] is not None:
            shown = Task.model_validate(json.loads(row["base_task"]))
            assert shown.reference_code.rstrip() in row["prompt"][1]["content"] and shown.task_id in tasks


def test_a_held_out_base_is_in_no_train_row_of_the_generator(run: Path, tasks: dict[str, Task]) -> None:
    """A bug-fix prompt shows its base whole (statement, reference, tests): a train prompt on a task of the
    solver's test split is in no row, sft, dpo or grpo, and is counted."""

    def showing(fraction: float) -> tuple[str, list[Any]] | None:
        """A base of the solver's test split and the train prompts showing it, at ``fraction``."""
        generator = read_for_generator(run, fraction)
        for prompt in generator.prompts:
            if prompt.base_id is not None and generator.shows_held_out(prompt):
                return prompt.base_id, [p for p in generator.prompts if p.base_id == prompt.base_id]
        return None

    fraction = next(f / 100 for f in range(1, 100) if showing(f / 100) is not None)
    held, prompts = showing(fraction) or ("", [])
    assert held in tasks and split_of(held, fraction) == "test" and "train" in {p.split for p in prompts}
    secret = tasks[held].reference_code.rstrip()
    everything = rows(export(run, "grpo", "--test-fraction", "0", role="generator"))
    assert any(secret in r["prompt"][1]["content"] for r in everything)  # the control: those prompts show it
    for fmt in ("sft", "dpo", "grpo"):
        path = export(run, fmt, "--test-fraction", str(fraction), "--split", "train", role="generator")
        text = path.read_text(encoding="utf-8")
        assert secret not in json.dumps([json.loads(line) for line in text.splitlines()]).replace("\\n", "\n"), fmt
        assert not any(secret in json.dumps(r) for r in rows(path)), fmt
        assert held not in text, fmt


def test_a_sealed_bugfix_task_is_still_a_duplicate_to_the_proposal_reward(tasks: dict[str, Task]) -> None:
    task = next(iter(tasks.values()))
    entry = sealed_entry(task)
    assert entry["key"] == duplicate_key(task)
    assert task.reference_code not in json.dumps(entry) and (task.buggy_code or "") not in json.dumps(entry)
    gate = Deduper(0.9)
    gate.accept_sealed(entry)
    assert gate.duplicate("bugfix", shape(task_fingerprint(task.reference_code)), None, duplicate_key(task)) == (
        f"the same task as {HELD_OUT}"
    )
    other = task.model_copy(update={"buggy_code": (task.buggy_code or "").replace("s = 0", "s = 2")})
    assert gate.duplicate("bugfix", shape(task_fingerprint(task.reference_code)), None, duplicate_key(other)) is None


def test_the_proposal_reward_makes_the_answer_on_the_rows_base(run: Path, tasks: dict[str, Task]) -> None:
    """The generator's GRPO row carries its base: a completion that writes only the bug is made on it, as the
    loop made it, and accepted; without the column it is no task at all."""
    from spade_llm.rewards.proposal import make_proposal_reward

    grpo = rows(export(run, "grpo", "--test-fraction", "0", role="generator"))
    row = next(r for r in grpo if r["base_task"] is not None)
    base = Task.model_validate(json.loads(row["base_task"]))
    name = base.entry_point
    known = [t for t in tasks.values() if t.entry_point == name]
    fresh = next(b for b in (TASKS[name]["reference_code"].replace("return -1", "return 0"),) if b)
    if name == "total_upto":
        fresh = TASKS[name]["reference_code"].replace("s += i", "s += i * (i < 9)")
    assert all(fresh != t.buggy_code for t in known)
    completion = json.dumps({"tasks": [{"buggy_code": fresh, "difficulty": 0.5}]})
    reward = make_proposal_reward(solver_model="fake/default", samples=1, sandbox="subprocess")
    try:
        columns = {k: row[k] for k in ("n", "kind", "difficulty", "known_tasks", "base_task", "epoch", "seed")}
        made = reward.score(completion, **columns, request_index=row["request_index"])
        assert made.accepted == 1, made.outcome()
        own_bug = json.dumps({"tasks": [{"buggy_code": base.buggy_code, "difficulty": 0.5}]})
        assert reward.score(own_bug, **columns, request_index=row["request_index"]).reasons == ["duplicate"]
        columns.pop("base_task")
        assert reward.score(completion, **columns).reasons == ["invalid_task"]
        with pytest.raises(UserError, match="tasks are made on another; induction tasks are not"):
            reward.score(completion, **{**columns, "kind": "induction", "base_task": row["base_task"]})
    finally:
        reward.close()
