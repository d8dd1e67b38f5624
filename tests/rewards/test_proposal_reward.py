"""spade_llm.rewards.proposal: the generator is paid the learnability of what it proposes, judged as the loop judges.

One small seeded fake run (every kind) is made once for the module; its ``proposals.jsonl`` answers are real
generator proposals, and its ``task_stats.jsonl`` says what the loop measured on each. The code that runs is the
fake model's and this file's own snippets: on bwrap where it works (``auto``), else on the subprocess sandbox.
Test timeouts are short (0.5 s): the fake solver's rare infinite loops would otherwise cost 3 s each.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import pickle
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_backends import unavailable

from spade_llm.cli import app as cli
from spade_llm.config import RunConfig
from spade_llm.dedup import HELD_OUT, REPETITION_SIMILARITY, seal, sealed_entry
from spade_llm.errors import UserError
from spade_llm.evaluator import similarity, task_fingerprint
from spade_llm.rewards import proposal as module
from spade_llm.rewards.proposal import (
    ProposalReward,
    default_proposal_reward,
    make_proposal_reward,
    proposal_compute_score,
    proposal_reward,
)
from spade_llm.sandbox.base import Sandbox
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.types import Task

BACKEND = "auto" if unavailable("bwrap") is None else "subprocess"
SEED = 0
CONFIG = RunConfig.model_validate({"seed": SEED, "sandbox": {"test_timeout_s": 0.5}})
KINDS = "{induction: 0.5, deduction: 0.25, abduction: 0.25}"


# -- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded fake run: 6 requests of one task each, every kind, 4 samples per task."""
    root = tmp_path_factory.mktemp("proposals")
    config = root / "run.yaml"
    config.write_text(f"sandbox:\n  test_timeout_s: 0.5\ncurriculum:\n  kinds: {KINDS}\n")
    out = root / "run"
    args = ["run", "--epochs", "1", "--tasks-per-epoch", "6", "--samples-per-task", "4", "--seed", str(SEED)]
    assert cli.main([*args, "--out", str(out), "--quiet", "--sandbox", BACKEND, "--config", str(config)]) == 0
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def recorded(run_dir: Path) -> list[dict[str, Any]]:
    """Each recorded proposal: its answer ``text``, its row's ``columns`` (as the generator's export
    carries them), and the loop's ``stats`` row of the task it proposed."""
    plan = _jsonl(run_dir / "plans.jsonl")[0]
    kinds = {r["request_index"]: r["kind"] for r in plan["requests"]}
    stats = {row["task_id"]: row for row in _jsonl(run_dir / "task_stats.jsonl")}
    out = []
    for row in _jsonl(run_dir / "proposals.jsonl"):
        assert row["failure"] is None and len(row["candidates"]) == 1
        task_id = row["candidates"][0]["task"]["task_id"]
        columns = {
            "kind": kinds[row["request_index"]],
            "n": row["n"],
            "difficulty": plan["target_difficulty"],
            "epoch": row["epoch"],
            "request_index": row["request_index"],
            "seed": SEED,
        }
        out.append({"text": row["text"], "columns": columns, "task_id": task_id, "stats": stats[task_id]})
    assert {p["columns"]["kind"] for p in out} == {"induction", "deduction", "abduction"}
    return out


@pytest.fixture(scope="module")
def learnable(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded proposals whose task the loop found learnable (0 < passed < samples)."""
    found = [p for p in recorded if p["stats"]["learnability"] > 0]
    assert len(found) >= 3
    return found


@pytest.fixture(scope="module")
def induction(learnable: list[dict[str, Any]]) -> dict[str, Any]:
    """A learnable induction proposal (the one the answer-shape tests take apart)."""
    return next(p for p in learnable if p["columns"]["kind"] == "induction")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One sandbox for every reward of the module (a reward given one leaves it running)."""
    box = get_sandbox(BACKEND)
    yield box
    box.close()


@pytest.fixture(scope="module")
def reward(sandbox: Sandbox) -> ProposalReward:
    reward: ProposalReward = make_proposal_reward(
        solver_model="fake/default", samples=8, config=CONFIG, sandbox=sandbox
    )
    return reward


def columns_of(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """TRL's keyword columns: one list per column, one value per completion."""
    return {key: [row.get(key) for row in rows] for key in module.PROPOSAL_COLUMNS}


def answer(*tasks: dict[str, Any]) -> str:
    return json.dumps({"tasks": list(tasks)}, indent=2)


def recorded_task(proposal: dict[str, Any]) -> dict[str, Any]:
    """The task object of a recorded answer, as the model wrote it."""
    task: dict[str, Any] = json.loads(proposal["text"])["tasks"][0]
    return task


def proposed(entry: str, code: str, inputs: list[str]) -> dict[str, Any]:
    return {
        "description": f"Write `{entry}`.",
        "entry_point": entry,
        "reference_code": code,
        "tests": [{"input": i} for i in inputs],
        "difficulty": 0.3,
    }


RAISES = proposed("f", "def f(x):\n    raise ValueError('no')\n", ["(1,)", "(2,)", "(3,)", "(4,)", "(5,)"])
NONDETERMINISTIC = proposed(  # str hashes change with the hash seed: the second validation run disagrees
    "bucket", "def bucket(word):\n    return hash(word) % 97\n", ["('a',)", "('bb',)", "('ccc',)", "('dddd',)"]
)
ALWAYS_ZERO = proposed(  # no test has a negative number: a function returning 0 passes them all
    "count_neg", "def count_neg(nums):\n    return sum(1 for x in nums if x < 0)\n", ["([1, 2],)", "([],)", "([5, 0],)"]
)
MUTANT_SURVIVES = proposed(  # no test has x == k: the mutant `x > k` passes them all
    "at_least",
    "def at_least(nums, k):\n    return [x for x in nums if x >= k]\n",
    ["([1, 5, 9], 4)", "([10, 2], 3)", "([], 1)", "([7, 8], 0)", "([3, 1], 2)"],
)
IMPORTS_OS = proposed(
    "plus_one", "import os\n\ndef plus_one(x):\n    return x + 1\n", ["(1,)", "(2,)", "(-3,)", "(10,)"]
)
UNPARSEABLE = "A good task would be about sorting a list of numbers; I will think about it."


# -- the done-when ----------------------------------------------------------------------------


def test_learnable_proposals_are_paid_more_than_unparseable_or_broken_ones(
    learnable: list[dict[str, Any]], sandbox: Sandbox
) -> None:
    reward = make_proposal_reward(solver_model="fake/default", samples=8, config=CONFIG, sandbox=sandbox)
    rows = [p["columns"] for p in learnable] + [{"n": 1}, {"n": 1}]
    texts = [p["text"] for p in learnable] + [UNPARSEABLE, answer(RAISES)]
    scores = reward(prompts=[[]] * len(texts), completions=texts, **columns_of(rows))
    *paid, unparseable, broken = scores
    assert sum(paid) / len(paid) > 0
    # with the run's seed the first 4 of the 8 samples are the run's own episodes, which passed some
    # and failed some: every one of these pays
    assert all(score > 0 for score in paid)
    assert unparseable <= 0 and broken <= 0
    assert min(paid) > max(unparseable, broken)


def test_the_reward_measures_what_the_loop_measured(recorded: list[dict[str, Any]], sandbox: Sandbox) -> None:
    # the run's samples per task and seed: the same tasks (same ids), the same episodes, the same pass counts
    reward = make_proposal_reward(samples=4, seed=SEED, config=CONFIG, sandbox=sandbox)
    verdicts = reward.score_rows([p["text"] for p in recorded], [p["columns"] for p in recorded])
    for proposal, verdict in zip(recorded, verdicts, strict=True):
        assert verdict is not None
        (outcome,) = verdict.tasks
        stats = proposal["stats"]
        assert outcome.accepted and outcome.task_id == proposal["task_id"]
        assert (outcome.passed, outcome.samples) == (stats["passed"], stats["samples"])
        assert verdict.score == outcome.pay == stats["learnability"]


# -- the gates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        (UNPARSEABLE, "bad_json"),
        ('{"tasks": [{"description": "Write f.", "entry_point": "f", "reference_code": "def f', "bad_json"),
        ('{"answer": 42}', "bad_json"),
        ("I'm sorry, but I can't help with that request.", "refusal"),
        ('{"tasks": []}', "no_tasks"),
        ("", "empty"),
    ],
)
def test_an_answer_without_a_task_list_gets_the_invalid_penalty(
    reward: ProposalReward, text: str, failure: str
) -> None:
    verdict = reward.score(text, n=2)
    assert (verdict.score, verdict.failure, verdict.tasks) == (0.0, failure, ())
    assert verdict.as_verl()["valid"] == 0.0 and verdict.as_verl()["failure"] == failure


@pytest.mark.parametrize(
    ("task", "reason", "says"),
    [
        (RAISES, "runtime_error", "raised ValueError"),
        (NONDETERMINISTIC, "nondeterministic", "another hash seed"),
        (ALWAYS_ZERO, "weak_tests", "returning 0"),
        (MUTANT_SURVIVES, "weak_tests", "mutants"),
    ],
    ids=["reference-raises", "nondeterministic", "trivial-answer-passes", "mutant-survives"],
)
def test_a_task_a_gate_rejects_pays_nothing(
    reward: ProposalReward, task: dict[str, Any], reason: str, says: str
) -> None:
    verdict = reward.score(answer(task), n=1)
    (outcome,) = verdict.tasks
    assert (verdict.score, verdict.failure, outcome.reason, outcome.samples) == (0.0, None, reason, 0)
    assert says in outcome.detail
    assert verdict.as_verl()["reasons"] == reason


def test_a_banned_import_is_rejected_when_validation_bans_it(reward: ProposalReward, sandbox: Sandbox) -> None:
    allowed = reward.score(answer(IMPORTS_OS), n=1)  # a run bans nothing by default
    assert allowed.tasks[0].accepted
    strict = make_proposal_reward(samples=2, banned_imports=["os"], config=CONFIG, sandbox=sandbox)
    (outcome,) = strict.score(answer(IMPORTS_OS), n=1).tasks
    assert (outcome.reason, outcome.samples) == ("banned_import", 0)
    assert "'os'" in outcome.detail


def test_an_item_that_is_not_a_task_pays_nothing_but_is_no_invalid_answer(sandbox: Sandbox) -> None:
    reward = make_proposal_reward(samples=2, invalid_penalty=-1.0, config=CONFIG, sandbox=sandbox)
    verdict = reward.score('{"tasks": [{"entry_point": "f", "description": "Write f."}]}', n=1)
    assert (verdict.score, verdict.failure, verdict.reasons) == (0.0, None, ["invalid_task"])


def test_a_duplicate_of_a_known_task_pays_nothing(
    reward: ProposalReward, run_dir: Path, induction: dict[str, Any]
) -> None:
    known = [Task.model_validate(row) for row in _jsonl(run_dir / "tasks.jsonl")]
    fresh = reward.score(induction["text"], **induction["columns"])
    assert fresh.score > 0
    for value in (json.dumps([t.dump() for t in known]), [t.dump() for t in known], known):
        verdict = reward.score(induction["text"], **induction["columns"], known_tasks=value)
        (outcome,) = verdict.tasks
        assert (verdict.score, outcome.reason, verdict.duplicates) == (0.0, "duplicate", 1)
        assert induction["task_id"] in outcome.detail  # the run's own copy of it
    unrelated = [t for t in known if t.task_id != induction["task_id"]]
    assert reward.score(induction["text"], **induction["columns"], known_tasks=unrelated).score == fresh.score


def test_a_copy_of_a_held_out_task_pays_nothing_though_the_row_shows_none_of_it(
    reward: ProposalReward, run_dir: Path, induction: dict[str, Any]
) -> None:
    # issue 35, finding 20: the generator's grpo rows carry the solver's test-split tasks sealed (fingerprints,
    # no code, test or text); the duplicate gate still knows them, so re-creating one is no way to be paid
    known = [Task.model_validate(row) for row in _jsonl(run_dir / "tasks.jsonl")]
    own = next(t for t in known if t.task_id == induction["task_id"])
    sealed = sealed_entry(own)
    text = json.dumps(sealed)
    assert own.task_id not in text and own.reference_code not in text and own.description not in text
    assert not any(t.input in text for t in own.tests)
    verdict = reward.score(induction["text"], **induction["columns"], known_tasks=json.dumps([sealed]))
    (outcome,) = verdict.tasks
    assert (verdict.score, outcome.reason) == (0.0, "duplicate") and HELD_OUT in outcome.detail


def test_a_sealed_fingerprint_is_as_similar_as_the_open_one(run_dir: Path) -> None:
    known = [Task.model_validate(row) for row in _jsonl(run_dir / "tasks.jsonl")]
    prints = [task_fingerprint(t.reference_code) for t in known]
    for a in prints:
        for b in prints:
            assert similarity(seal(a), seal(b)) == similarity(a, b)


def coin_flip(item: dict[str, Any]) -> dict[str, Any]:
    """The task with its reference answering its own tests' inputs honestly (recognised by hash) and
    a coin flip's worth off them anywhere else."""
    entry, code = item["entry_point"], item["reference_code"]
    own = sorted(hashlib.sha256(repr(tuple(ast.literal_eval(t["input"]))).encode()).hexdigest() for t in item["tests"])
    flipped = (
        code.replace(f"def {entry}(", f"def _honest_{entry}(", 1) + "\n\nimport hashlib as _h, random as _r\n"
        f"_OWN = {own!r}\n\n"
        f"def {entry}(*args):\n"
        f"    value = _honest_{entry}(*args)\n"
        "    if _h.sha256(repr(args).encode()).hexdigest() in _OWN or _r.random() < 0.5:\n"
        "        return value\n"
        "    return [value]\n"
    )
    return {**item, "reference_code": flipped}


def test_a_coin_flip_off_its_own_tests_is_rejected_and_paid_nothing(
    reward: ProposalReward, recorded: list[dict[str, Any]]
) -> None:
    # issue 35, finding 14: before, such an abduction proposal passed every gate and was paid up to 0.75
    # (its deterministic twin 0.0): the solver's answers, inputs other than the tests', passed by chance
    proposals = [p for p in recorded if p["columns"]["kind"] == "abduction"]
    assert proposals
    for proposal in proposals:
        verdict = reward.score(answer(coin_flip(recorded_task(proposal))), **proposal["columns"])
        (outcome,) = verdict.tasks
        assert (verdict.score, outcome.reason, outcome.samples) == (0.0, "nondeterministic", 0), outcome.detail


def test_a_duplicate_inside_the_same_answer_pays_nothing(reward: ProposalReward, induction: dict[str, Any]) -> None:
    task = recorded_task(induction)
    alone = reward.score(answer(task), **{**induction["columns"], "n": 1})
    twice = reward.score(answer(task, task), **{**induction["columns"], "n": 2})
    first, second = twice.tasks
    assert first.accepted and first.pay == alone.score > 0
    assert first.task_id is not None and first.task_id in second.detail and second.reason == "duplicate"
    assert twice.score == round(alone.score / 2, 6)


def test_fewer_tasks_than_asked_pay_less(reward: ProposalReward, induction: dict[str, Any]) -> None:
    columns = induction["columns"]
    asked_one = reward.score(induction["text"], **{**columns, "n": 1})
    asked_three = reward.score(induction["text"], **{**columns, "n": 3})
    assert asked_one.score > 0 and asked_three.score == round(asked_one.score / 3, 6)
    assert asked_three.as_verl()["tasks_asked"] == 3 and asked_three.as_verl()["tasks_proposed"] == 1
    # tasks past the n-th are not judged, as the loop takes at most n from an answer
    extra = answer(recorded_task(induction), RAISES)
    assert reward.score(extra, **{**columns, "n": 1}).tasks == asked_one.tasks


def test_the_invalid_penalty_is_paid_and_never_above_zero(sandbox: Sandbox, induction: dict[str, Any]) -> None:
    reward = make_proposal_reward(samples=8, invalid_penalty=-0.5, config=CONFIG, sandbox=sandbox)
    texts = [UNPARSEABLE, answer(RAISES), induction["text"]]
    unparseable, rejected, paid = reward(completions=texts, **columns_of([{"n": 1}, {"n": 1}, induction["columns"]]))
    assert unparseable == -0.5 and rejected == 0.0 and paid > 0
    for bad in (0.1, float("nan"), float("inf")):
        with pytest.raises(UserError, match="invalid_penalty"):
            make_proposal_reward(invalid_penalty=bad)
    with pytest.raises(UserError, match="samples"):
        make_proposal_reward(samples=0)
    with pytest.raises(UserError, match="max_turns"):
        make_proposal_reward(max_turns=0)


def test_the_repetition_penalty_pays_a_repeated_task_less_and_a_task_unlike_the_batch_in_full(
    learnable: list[dict[str, Any]], sandbox: Sandbox
) -> None:
    """R-Zero's term: a GRPO group whose answers repeat one task is paid less for it, the odd one out is not."""
    first = learnable[0]
    other = next(
        p for p in learnable[1:]
        if similarity(task_fingerprint(recorded_task(p)["reference_code"]),
                      task_fingerprint(recorded_task(first)["reference_code"])) < REPETITION_SIMILARITY
    )  # fmt: skip
    batch = [first, first, other]
    texts, columns = [p["text"] for p in batch], columns_of([p["columns"] for p in batch])
    plain = make_proposal_reward(samples=8, config=CONFIG, sandbox=sandbox)
    weighed = make_proposal_reward(samples=8, config=CONFIG, sandbox=sandbox, repetition_weight=1.0)
    paid = plain(completions=texts, **columns)
    repeated, again, unlike = weighed(completions=texts, **columns)
    # of the two other tasks in the call, one is the same: half of the weight comes off each copy
    assert repeated == again == round(max(0.0, paid[0] - 0.5), 6) < paid[0]
    assert unlike == paid[2] > 0
    verdicts = weighed.score_rows(texts, [p["columns"] for p in batch])
    assert [v.as_verl()["repetition"] for v in verdicts if v is not None] == [0.5, 0.5, 0.0]
    assert [v.tasks[0].repetition for v in verdicts if v is not None] == [0.5, 0.5, 0.0]
    # alone in its call a task is no repetition (verl scores one answer at a time)
    assert weighed(completions=texts[:1], **columns_of([first["columns"]])) == paid[:1]
    for bad_weight in (-0.1, float("nan"), float("inf")):
        with pytest.raises(UserError, match="repetition_weight"):
            make_proposal_reward(repetition_weight=bad_weight)
    with pytest.raises(UserError, match="repetition_similarity"):
        make_proposal_reward(repetition_similarity=0.0)


# -- determinism, forms, shapes -----------------------------------------------------------------------


def test_the_same_inputs_get_the_same_rewards_whatever_the_order_and_concurrency(
    recorded: list[dict[str, Any]], sandbox: Sandbox
) -> None:
    task = recorded_task(recorded[0])
    items = [(p["text"], p["columns"]) for p in recorded]
    items += [(UNPARSEABLE, {"n": 1}), (answer(task, task), {**recorded[0]["columns"], "n": 2})]
    one_at_a_time = make_proposal_reward(samples=4, concurrency=1, config=CONFIG, sandbox=sandbox)
    many_at_once = make_proposal_reward(samples=4, concurrency=16, config=CONFIG, sandbox=sandbox)
    first = one_at_a_time(completions=[t for t, _ in items], **columns_of([c for _, c in items]))
    shuffled = list(range(len(items)))
    random.Random(7).shuffle(shuffled)
    again = many_at_once(completions=[items[i][0] for i in shuffled], **columns_of([items[i][1] for i in shuffled]))
    assert dict(zip(shuffled, again, strict=True)) == dict(enumerate(first))
    assert any(score for score in first)


def test_verls_form_scores_as_trls(
    recorded: list[dict[str, Any]], reward: ProposalReward, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "_default", reward)  # the module's functions on this module's sandbox
    texts = [p["text"] for p in recorded] + [UNPARSEABLE, answer(RAISES)]
    rows = [p["columns"] for p in recorded] + [{"n": 1}, {"n": 2, "kind": "induction"}]
    trl = proposal_reward(prompts=[[]] * len(texts), completions=texts, **columns_of(rows))
    verl = [
        proposal_compute_score("spade_llm/generator", text, json.dumps(row), {"index": i}, unused_by_us=1)
        for i, (text, row) in enumerate(zip(texts, rows, strict=True))
    ]
    assert [d["score"] for d in verl] == trl
    assert len({tuple(d) for d in verl}) == 1  # the same keys for every answer
    assert all(value is not None for d in verl for value in d.values())
    assert verl[-2]["failure"] == "bad_json" and verl[-1]["reasons"] == "runtime_error"
    assert all(d["accepted"] == 1 and d["valid"] == 1.0 for d in verl[: len(recorded)])
    with pytest.raises(UserError, match="ground truth"):
        proposal_compute_score("spade_llm/generator", texts[0], json.dumps({"kind": "induction"}))


def test_a_trl_call_takes_conversations_list_columns_and_trl_keywords(
    reward: ProposalReward, induction: dict[str, Any]
) -> None:
    logged: dict[str, list[str]] = {}
    completions = [
        [{"role": "assistant", "content": induction["text"]}],
        [{"role": "assistant", "content": [{"type": "text", "text": UNPARSEABLE}]}],
        [{"role": "assistant", "content": induction["text"]}],  # a row of another dataset: no request
    ]
    rows = [induction["columns"], {"n": 1}, {"n": None}]
    scores = reward(
        prompts=[[{"role": "user", "content": "Propose 1 task."}]] * 3,
        completions=completions,
        completion_ids=[[1, 2]] * 3,
        trainer_state=object(),
        log_extra=lambda column, values: logged.setdefault(column, values),
        **columns_of(rows),
    )
    assert scores[0] is not None and scores[0] > 0
    assert scores[1:] == [0.0, None]
    assert logged["proposal_reward_outcome"][0].startswith("1/1 accepted, 1 learnable")
    assert logged["proposal_reward_outcome"][1:] == ["bad_json", "n/a"]
    assert reward.__name__ == "proposal_reward"
    assert make_proposal_reward(name="learnability").__name__ == "learnability"


@pytest.mark.parametrize(
    ("columns", "says"),
    [
        ({"kind": ["induction"]}, "needs the generator's GRPO export"),
        ({"n": [1, 1]}, "2 values for 1 completions"),
        ({"n": 1}, "one value per completion"),
        ({"n": [0]}, "row 0: column 'n' must be at least 1"),
        ({"n": [1], "kind": ["poetry"]}, "row 0: unknown task kind"),
        ({"n": [1], "difficulty": [3.0]}, "within 0..1"),
        ({"n": [1], "known_tasks": ["[{"]}, "row 0: column 'known_tasks' is not JSON"),
        ({"n": [1], "known_tasks": ['[{"task_id": "x"}]']}, "item 0 is not a task"),
    ],
)
def test_a_malformed_row_is_one_clear_error_before_anything_runs(
    reward: ProposalReward, columns: dict[str, Any], says: str
) -> None:
    with pytest.raises(UserError, match=says):
        reward(completions=[UNPARSEABLE], **columns)


def test_a_reward_pickles_and_its_copy_scores_the_same(reward: ProposalReward, induction: dict[str, Any]) -> None:
    copy = pickle.loads(pickle.dumps(reward))
    try:
        assert copy.__name__ == reward.__name__ and copy.samples == reward.samples
        assert copy.score(induction["text"], **induction["columns"]) == reward.score(
            induction["text"], **induction["columns"]
        )
    finally:
        copy.close()


async def test_it_runs_from_inside_an_event_loop(reward: ProposalReward, induction: dict[str, Any]) -> None:
    columns = columns_of([induction["columns"]])
    blocking = reward(completions=[induction["text"]], **columns)  # asyncio.run in a worker thread
    awaited = await reward.call_async(completions=[induction["text"]], **columns)
    asynchronous = make_proposal_reward(samples=8, config=CONFIG, sandbox=reward.rewarder.sandbox, asynchronous=True)
    assert inspect.iscoroutinefunction(asynchronous)
    from_trl = await asynchronous(completions=[induction["text"]], **columns)
    assert blocking == awaited == from_trl and blocking[0] is not None and blocking[0] > 0


def test_the_default_reward_samples_the_fake_solver_eight_times() -> None:
    default = default_proposal_reward()
    assert default is default_proposal_reward()
    assert (default.config.solver.model, default.samples, default.invalid_penalty) == ("fake/default", 8, 0.0)
    assert default.__name__ == "proposal_reward"
    other = make_proposal_reward("openai/local", api_base="http://127.0.0.1:9/v1", samples=4, max_turns=1)
    assert (other.config.solver.model, other.config.solver.api_base, other.config.solver.max_turns) == (
        "openai/local",
        "http://127.0.0.1:9/v1",
        1,
    )


def test_rewards_reexports_it_lazily_and_neither_imports_a_model_client() -> None:
    code = (
        "import sys, spade_llm.rewards as r; "
        "print('spade_llm.rewards.proposal' in sys.modules); "
        "from spade_llm.rewards import proposal_reward, make_proposal_reward, proposal_compute_score; "
        "import spade_llm.rewards.proposal as m; "
        "print(proposal_reward is m.proposal_reward and make_proposal_reward is m.make_proposal_reward "
        "and proposal_compute_score is m.proposal_compute_score and 'proposal_reward' in r.__all__); "
        "print(sorted({k.split('.')[0] for k in sys.modules} & {'litellm', 'openai', 'trl', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["False", "True", "[]"]


def test_one_answer_costs_at_most_n_times_samples_times_max_turns_solver_calls(
    recorded: list[dict[str, Any]], sandbox: Sandbox
) -> None:
    """The docstring's bound, on an answer of every recorded induction task (each passes the gates)."""
    tasks = [recorded_task(p) for p in recorded if p["columns"]["kind"] == "induction"]
    reward = make_proposal_reward(samples=8, max_turns=3, config=CONFIG, sandbox=sandbox)
    verdict = reward.score(answer(*tasks), n=len(tasks))
    calls = reward.session.stats.summary()["by_role"]["solver"]["requests"]
    assert verdict.accepted == len(tasks) >= 2
    assert len(tasks) * 8 <= calls <= len(tasks) * 8 * 3  # an episode asks at least once, at most max_turns times
    one_turn = make_proposal_reward(samples=8, max_turns=1, config=CONFIG, sandbox=sandbox)
    one_turn.score(answer(*tasks), n=len(tasks))
    assert one_turn.session.stats.summary()["by_role"]["solver"]["requests"] == len(tasks) * 8
