"""``spade export RUN --role generator``: the generator's sft, dpo and grpo rows, checked against the
run's own journals, on one small seeded run made once per module.

The run: the ``noisy`` fake generator (broken references, refusals, weak tests: rejected answers), two
tasks per request (answers with some candidates accepted and some not), three answers per prompt
(``generator.samples_per_request``: same-prompt groups and pairs), a kind mix, 4 solver samples per task
(pass rates of 0 and 1: trivial answers). Tests that need an older or damaged run work on a copy.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from builders import run_fake, small_config

from spade_llm.cli.app import main
from spade_llm.dedup import sealed_entry
from spade_llm.export import generator_rows as proposal_exports
from spade_llm.export.generator_rows import (
    HELD_OUT_EXAMPLE,
    KNOWN_TASKS_CAP,
    GeneratorExportResult,
    export_generator,
    generator_split,
)
from spade_llm.export.solver_rows import MAX_SAMPLE_PAIRS, ExportFilters, ExportResult, split_of, tier_of
from spade_llm.types import Task

FORMATS = ("sft", "dpo", "grpo")
CONFIG = (
    "seed: 3\n"
    "generator:\n  model: fake/noisy\n  samples_per_request: 3\n"
    "controller:\n  proposals_per_request: 2\n"
    "curriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n"
)

# with -n, one worker (--dist loadgroup): its module-scoped fixtures are made once, not once per worker
pytestmark = pytest.mark.xdist_group("export.test_proposal_exports")
SEED = 3


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("generator-export")
    config = base / "noisy.yaml"
    config.write_text(CONFIG)
    out = base / "run"
    argv = ["run", "--config", str(config), "--epochs", "3", "--samples-per-task", "4", "--sandbox", "auto"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def truth(run: Path) -> dict[str, Any]:
    """What each answer is, worked out here from the journals alone (not through the module)."""
    proposals = {(r["epoch"], r["request_index"]): r for r in read_rows(run / "proposals.jsonl")}
    tasks = [Task.model_validate(t) for t in read_rows(run / "tasks.jsonl")]
    accepted = {(t.meta["epoch"], t.meta["request_index"], t.meta["position"]): t for t in tasks}
    rejected = {(r["epoch"], r["request_index"], r["position"]): r for r in read_rows(run / "rejected.jsonl")}
    stats = {s["task_id"]: s for s in read_rows(run / "task_stats.jsonl")}
    plans = {p["epoch"]: p for p in read_rows(run / "plans.jsonl")}
    requests = {(e, r["request_index"]): r for e, p in plans.items() for r in p["requests"]}
    status: dict[tuple[int, int], str | None] = {}
    answer_tasks: dict[tuple[int, int], list[Task]] = {}
    for (e, ri), p in proposals.items():
        keys = [(e, ri, c["position"]) for c in p["candidates"]]
        answer_tasks[e, ri] = [accepted[k] for k in keys if k in accepted]
        if p["failure"] or (e, ri, None) in rejected or any(k in rejected for k in keys):
            status[e, ri] = "rejected"
        elif all(k in accepted for k in keys) and keys:
            rates = [stats[accepted[k].task_id]["learnability"] for k in keys]
            status[e, ri] = "learnable" if any(x > 0 for x in rates) else "trivial"
        else:
            status[e, ri] = None
    counts = Counter(status.values())
    assert counts["learnable"] and counts["trivial"] and counts["rejected"], f"the fixture needs each: {counts}"
    # the solver's test split at the default --test-fraction: what no train row may hold
    held_out = {t.task_id for t in tasks if split_of(t.task_id, 0.1) == "test"}
    holds = {
        key: any(t.task_id in held_out for t in answer_tasks[key])
        or any(
            r["reason"] == "duplicate" and any(h in r["detail"] for h in held_out)
            for k, r in rejected.items()
            if k[:2] == key
        )
        for key in proposals
    }
    by_id = {t.task_id: t for t in tasks}

    def shown(key: tuple[int, int]) -> list[dict[str, str]]:
        """The answer's prompt as the export shows it: a held-out example's description replaced."""
        messages = proposals[key]["prompt"]
        for example in plans[key[0]]["example_ids"]:
            if example in held_out:
                description = by_id[example].description
                cut = description if len(description) <= 165 else description[:157].rsplit(" ", 1)[0] + "..."
                messages = [{**m, "content": m["content"].replace(cut, HELD_OUT_EXAMPLE)} for m in messages]
        return messages

    def in_train_prompt(key: tuple[int, int]) -> bool:
        return generator_split(SEED, key[0], proposals[key]["prompt_index"], 0.1) == "train"

    assert len({t.kind for t in tasks}) >= 2, "the fixture needs a kind mix"
    assert any(len(p["candidates"]) == 2 for p in proposals.values()), "the fixture needs answers of 2 tasks"
    return {
        "proposals": proposals,
        "tasks": tasks,
        "accepted": accepted,
        "rejected": rejected,
        "stats": stats,
        "plans": plans,
        "requests": requests,
        "status": status,
        "answer_tasks": answer_tasks,
        "held_out": held_out,
        "kept": {key: not (holds[key] and in_train_prompt(key)) for key in proposals},
        "shown": shown,
    }


def export(run: Path, out: Path, fmt: str, *flags: str) -> list[dict[str, Any]]:
    assert main(["export", str(run), "--role", "generator", "--format", fmt, "-o", str(out), *flags]) == 0
    return read_rows(out)


def pooled(tasks: list[Task], stats: dict[str, Any]) -> tuple[int, int] | None:
    """(passed, samples) over the measured tasks."""
    measured = [stats[t.task_id] for t in tasks if t.task_id in stats]
    if not measured:
        return None
    return sum(s["passed"] for s in measured), sum(s["samples"] for s in measured)


def difficulty(counts: tuple[int, int]) -> float:
    return round(1 - counts[0] / counts[1], 6)


# -- what the rows hold -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_is_a_non_empty_table_datasets_loads(run: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"{fmt}.jsonl"
    rows = export(run, out, fmt)
    assert rows
    keys = {tuple(r) for r in rows}
    assert len(keys) == 1, f"rows with other keys: {keys}"
    for key in rows[0]:
        kinds = {type(r[key]).__name__ for r in rows if r[key] is not None}
        assert len(kinds) <= 1, (key, kinds)
    pa_json = pytest.importorskip("pyarrow.json")
    assert pa_json.read_json(str(out)).num_rows == len(rows)  # one schema for every row


@pytest.mark.trl  # the trainer lane has datasets (with TRL), and may not skip this
@pytest.mark.parametrize("fmt", FORMATS)
def test_datasets_loads_each_format_as_written(run: Path, tmp_path: Path, fmt: str) -> None:
    datasets = pytest.importorskip("datasets", reason="pip install 'spade-selfplay[trl]'")
    out = tmp_path / f"{fmt}.jsonl"
    rows = export(run, out, fmt)
    loaded = datasets.load_dataset("json", data_files=str(out), split="train")
    assert loaded.num_rows == len(rows) and loaded.column_names == list(rows[0])
    assert [dict(r) for r in loaded] == rows


def test_sft_rows_are_the_answers_whose_tasks_were_all_accepted_and_one_learnable(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "sft.jsonl", "sft")
    got = {(r["epoch"], r["request_index"]) for r in rows}
    learnable = {k for k, s in truth["status"].items() if s == "learnable"}
    assert got == {k for k in learnable if truth["kept"][k]}  # every one, and only those
    assert any(len(r["task_ids"]) == 2 for r in rows)
    for row in rows:
        key = (row["epoch"], row["request_index"])
        answer = truth["proposals"][key]
        tasks = truth["answer_tasks"][key]
        assert row["messages"] == [*truth["shown"](key), {"role": "assistant", "content": answer["text"]}]
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
        assert len(tasks) == len(answer["candidates"]), "every candidate accepted"
        assert row["task_ids"] == [t.task_id for t in tasks]
        stats = [truth["stats"][t.task_id] for t in tasks]
        assert row["pass_rates"] == [s["pass_rate"] for s in stats]
        assert any(s["learnability"] > 0 for s in stats)
        assert row["learnability"] == pytest.approx(sum(s["learnability"] for s in stats) / answer["n"])
        plan = truth["plans"][row["epoch"]]
        request = truth["requests"][row["epoch"], row["request_index"]]
        assert row["target_difficulty"] == plan["target_difficulty"]
        assert (row["kind"], row["prompt_index"], row["sample"]) == (
            request["kind"],
            request["prompt_index"],
            request["sample"],
        )
        assert row["generator_model"] == "fake/noisy"


def test_dpo_pairs_two_answers_to_one_prompt_the_rejected_one_really_rejected_or_trivial(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "dpo.jsonl", "dpo")
    assert {r["pair_type"] for r in rows} == {"rejected", "trivial"}, "the fixture needs both kinds of pair"
    per_prompt = Counter((r["epoch"], r["prompt_index"]) for r in rows)
    assert max(per_prompt.values()) <= MAX_SAMPLE_PAIRS
    for row in rows:
        good = truth["proposals"][row["epoch"], row["chosen_request_index"]]
        bad = truth["proposals"][row["epoch"], row["rejected_request_index"]]
        assert good["prompt_index"] == bad["prompt_index"] == row["prompt_index"]
        assert truth["kept"][row["epoch"], row["chosen_request_index"]]
        assert truth["kept"][row["epoch"], row["rejected_request_index"]]
        assert (
            row["prompt"]
            == truth["shown"]((row["epoch"], row["chosen_request_index"]))
            == truth["shown"]((row["epoch"], row["rejected_request_index"]))
        )
        assert row["chosen"] == [{"role": "assistant", "content": good["text"]}]
        assert row["rejected"] == [{"role": "assistant", "content": bad["text"]}]
        assert row["chosen"] != row["rejected"]
        assert truth["status"][row["epoch"], row["chosen_request_index"]] == "learnable"
        assert truth["status"][row["epoch"], row["rejected_request_index"]] == row["pair_type"]
        assert row["kind"] == truth["requests"][row["epoch"], row["chosen_request_index"]]["kind"]


def test_dpo_skips_a_rejected_answer_whose_only_fault_is_duplicating_the_chosen_one(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    before = export(run, tmp_path / "dpo.jsonl", "dpo")
    proposals = truth["proposals"]
    pair = next(
        r
        for r in before
        if r["pair_type"] == "rejected" and not proposals[r["epoch"], r["rejected_request_index"]]["failure"]
    )
    chosen_task = truth["answer_tasks"][pair["epoch"], pair["chosen_request_index"]][0].task_id
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    rejections = read_rows(copy / "rejected.jsonl")
    for r in rejections:
        if (r["epoch"], r["request_index"]) == (pair["epoch"], pair["rejected_request_index"]):
            r.update(reason="duplicate", detail=f"100% similar to {chosen_task}")
    write_rows(copy / "rejected.jsonl", rejections)
    after = export(copy, tmp_path / "dpo-twin.jsonl", "dpo")
    assert after == [r for r in before if r != pair]


def test_grpo_one_row_per_prompt_with_the_columns_the_proposal_reward_reads(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    rows = export(run, tmp_path / "grpo.jsonl", "grpo")
    prompts = defaultdict(list)
    for (e, ri), p in truth["proposals"].items():
        prompts[e, p["prompt_index"]].append(ri)
    assert [(r["epoch"], r["prompt_index"]) for r in rows] == sorted(prompts)
    order = sorted(truth["tasks"], key=lambda t: (t.meta["epoch"], t.meta["request_index"], t.meta["position"]))
    for row in rows:
        first = min(prompts[row["epoch"], row["prompt_index"]])
        request = truth["requests"][row["epoch"], first]
        assert row["prompt"] == truth["shown"]((row["epoch"], first))
        assert (row["kind"], row["n"], row["request_index"]) == (request["kind"], request["n"], first)
        assert row["seed"] == SEED
        assert row["difficulty"] == truth["plans"][row["epoch"]]["target_difficulty"]
        earlier = [t for t in order if t.meta["epoch"] < row["epoch"]][-KNOWN_TASKS_CAP:]
        # whole (meta.behaviour too), but the solver's test split sealed: no id, code, test or text
        want = [sealed_entry(t) if t.task_id in truth["held_out"] else t.dump() for t in earlier]
        assert json.loads(row["known_tasks"]) == want
        assert row["mean_learnability"] is None or 0 <= row["mean_learnability"] < 1
    assert any(json.loads(r["known_tasks"]) for r in rows) and json.loads(rows[0]["known_tasks"]) == []


def test_known_tasks_keep_the_most_recent_ones(
    run: Path, truth: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proposal_exports, "KNOWN_TASKS_CAP", 5)
    rows = export(run, tmp_path / "grpo.jsonl", "grpo")
    last = max(r["epoch"] for r in rows)
    order = sorted(truth["tasks"], key=lambda t: (t.meta["epoch"], t.meta["request_index"], t.meta["position"]))
    earlier = [t.task_id for t in order if t.meta["epoch"] < last]
    assert len(earlier) > 5
    row = next(r for r in rows if r["epoch"] == last)
    shown = [t.get("task_id", "held out") for t in json.loads(row["known_tasks"])]
    assert shown == [t if t not in truth["held_out"] else "held out" for t in earlier[-5:]]


def test_the_proposal_reward_pays_a_recorded_answer_what_the_run_measured(run: Path, tmp_path: Path) -> None:
    """With the run's seed and sample count, the reward on a row's first answer repeats the run's episodes."""
    reward_module = pytest.importorskip("spade_llm.rewards.proposal")
    from spade_llm.config import load_config

    grpo = {(r["epoch"], r["prompt_index"]): r for r in export(run, tmp_path / "grpo.jsonl", "grpo")}
    sft = next(r for r in export(run, tmp_path / "sft.jsonl", "sft") if r["sample"] == 0 and r["epoch"] > 0)
    row = grpo[sft["epoch"], sft["prompt_index"]]
    reward = reward_module.make_proposal_reward(
        "fake/default", samples=4, seed=SEED, config=load_config(run / "config.yaml")
    )
    columns = {k: [v] for k, v in row.items() if k != "prompt"}
    assert reward([row["prompt"]], [sft["messages"][-1]["content"]], **columns) == [pytest.approx(sft["learnability"])]


def test_the_repetition_weight_takes_the_proposal_rewards_penalty_off_each_answer(run: Path, tmp_path: Path) -> None:
    """R-Zero's term, a prompt's answers being the batch: the export pays what the live reward pays them together."""
    reward_module = pytest.importorskip("spade_llm.rewards.proposal")
    from spade_llm.config import load_config

    plain = {(r["epoch"], r["prompt_index"], r["sample"]): r for r in export(run, tmp_path / "sft0.jsonl", "sft")}
    assert all(r["reward"] == r["learnability"] and r["repetition"] == 0.0 for r in plain.values())
    weighed = {
        (r["epoch"], r["prompt_index"], r["sample"]): r
        for r in export(run, tmp_path / "sft1.jsonl", "sft", "--repetition-weight", "1")
    }
    assert set(weighed) <= set(plain)
    for key, row in weighed.items():
        assert row["learnability"] == plain[key]["learnability"]
        assert (row["reward"] < row["learnability"]) == (row["repetition"] > 0) and row["reward"] > 0
    repeated = [r for r in weighed.values() if r["repetition"] > 0]
    assert repeated and len(weighed) < len(plain)  # this seed: one answer paid less, one paid nothing
    # the live reward on every answer of that prompt together, with the run's seed and sample count
    row = repeated[0]
    answers = [
        a
        for a in read_rows(run / "proposals.jsonl")
        if (a["epoch"], a["prompt_index"]) == (row["epoch"], row["prompt_index"])
    ]
    rejected = [r for r in read_rows(run / "rejected.jsonl") if r["epoch"] == row["epoch"]]
    assert not any(
        r["reason"] == "duplicate" for r in rejected if r["request_index"] in {a["request_index"] for a in answers}
    )
    grpo = next(
        r
        for r in export(run, tmp_path / "grpo.jsonl", "grpo")
        if (r["epoch"], r["prompt_index"]) == (row["epoch"], row["prompt_index"])
    )
    reward = reward_module.make_proposal_reward(
        "fake/default", samples=4, seed=SEED, config=load_config(run / "config.yaml"), repetition_weight=1.0
    )
    columns = {
        k: [grpo[k] if k != "request_index" else a["request_index"] for a in answers]
        for k in reward_module.PROPOSAL_COLUMNS
    }
    paid = reward([grpo["prompt"]] * len(answers), [a["text"] for a in answers], **columns)
    for a, score in zip(answers, paid, strict=True):
        key = (a["epoch"], a["prompt_index"], a["sample"])
        if key in weighed:
            assert score == pytest.approx(weighed[key]["reward"], abs=1e-6)
        elif key in plain:  # learnable, but its every task asked again by its siblings
            assert score == 0.0


# -- split, order, identical rows -----------------------------------------------------------------


def test_every_row_of_a_prompt_is_in_its_split_in_every_format(run: Path, tmp_path: Path) -> None:
    splits: dict[tuple[int, int], set[str]] = defaultdict(set)
    for fmt in FORMATS:
        for row in export(run, tmp_path / f"{fmt}.jsonl", fmt, "--test-fraction", "0.5"):
            key = (row["epoch"], row["prompt_index"])
            assert row["split"] == generator_split(SEED, *key, 0.5)
            splits[key].add(row["split"])
    assert all(len(s) == 1 for s in splits.values())
    assert set().union(*splits.values()) == {"train", "test"}, "the fixture needs both splits at 0.5"


def _strings(value: Any) -> Any:
    """Every string a row holds, JSON strings inside it opened too (an answer's text, known_tasks)."""
    if isinstance(value, str):
        yield value
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if isinstance(inner, (list, dict)):
            yield from _strings(inner)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.parametrize("fraction", ["0.1", "0.3"])
def test_no_task_of_the_solvers_test_split_is_in_a_train_row_of_either_role(
    run: Path, truth: dict[str, Any], tmp_path: Path, fraction: str
) -> None:
    """issue 35, finding 20: the generator's rows held the solver's test tasks (reference code in sft
    answers, hidden tests in grpo's known_tasks, descriptions in the prompts' examples)."""
    argv = ["export", str(run), "--format", "grpo", "--test-fraction", fraction, "-o", str(tmp_path / "s.jsonl")]
    assert main(argv) == 0
    solver = read_rows(tmp_path / "s.jsonl")
    test_ids = {r["task_id"] for r in solver if r["split"] == "test"}
    assert test_ids, "the fixture needs tasks in the solver's test split"
    assert not any(r["task_id"] in test_ids for r in solver if r["split"] == "train")  # the solver's own rows
    by_id = {t.task_id: t for t in truth["tasks"]}
    held = [by_id[t] for t in test_ids]
    found: Counter[str] = Counter()
    for fmt in FORMATS:
        train = [
            r for r in export(run, tmp_path / f"{fmt}.jsonl", fmt, "--test-fraction", fraction) if r["split"] == "train"
        ]
        assert train, fmt
        for row in train:
            text = "\n".join(_strings(row))
            for t in held:
                found["id"] += t.task_id in text
                found["code"] += t.reference_code.strip() in text
                # its tests together (another task of the same family may share one), its whole description
                found["tests"] += all(x.input in text for x in t.tests)
                found["description"] += t.description in text
    assert sum(found.values()) == 0, found


def test_answers_holding_a_held_out_task_are_left_out_of_train_rows_and_counted(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    held = {t.task_id for t in truth["tasks"] if split_of(t.task_id, 0.5) == "test"}
    holds = {
        key: any(t.task_id in held for t in tasks)
        or any(
            r["reason"] == "duplicate" and any(h in r["detail"] for h in held)
            for k, r in truth["rejected"].items()
            if k[:2] == key
        )
        for key, tasks in truth["answer_tasks"].items()
    }
    train_prompt = {
        key: generator_split(SEED, key[0], p["prompt_index"], 0.5) == "train" for key, p in truth["proposals"].items()
    }
    result = export_generator(run, "sft", tmp_path / "sft.jsonl", ExportFilters(), test_fraction=0.5)
    rows = read_rows(result.path)
    assert not any(set(r["task_ids"]) & held for r in rows if r["split"] == "train")
    assert any(set(r["task_ids"]) & held for r in rows if r["split"] == "test"), "test rows keep them"
    assert result.held_out == sum(holds[k] and train_prompt[k] for k in holds) > 0
    assert "holding a task of the solver's test split" in result.describe()


def test_each_split_alone_is_exactly_its_rows_of_the_whole_export(run: Path, tmp_path: Path) -> None:
    for fmt in FORMATS:
        whole = export(run, tmp_path / f"{fmt}.jsonl", fmt, "--test-fraction", "0.5")
        for split in ("train", "test"):
            alone = export(run, tmp_path / f"{fmt}-{split}.jsonl", fmt, "--test-fraction", "0.5", "--split", split)
            assert alone == [r for r in whole if r["split"] == split], (fmt, split)


def test_the_same_records_in_any_file_order_give_the_same_bytes(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    shuffle = random.Random(0).shuffle
    for journal in ("proposals.jsonl", "tasks.jsonl", "rejected.jsonl", "task_stats.jsonl"):
        lines = (copy / journal).read_text().splitlines(keepends=True)
        shuffle(lines)
        (copy / journal).write_text("".join(lines))
    for fmt in FORMATS:
        export(run, tmp_path / f"a-{fmt}.jsonl", fmt)
        export(run, tmp_path / f"b-{fmt}.jsonl", fmt)
        export(copy, tmp_path / f"c-{fmt}.jsonl", fmt)
        first = (tmp_path / f"a-{fmt}.jsonl").read_bytes()
        assert first == (tmp_path / f"b-{fmt}.jsonl").read_bytes() == (tmp_path / f"c-{fmt}.jsonl").read_bytes()


def test_identical_rows_are_written_once(run: Path, truth: dict[str, Any], tmp_path: Path) -> None:
    before = export(run, tmp_path / "sft.jsonl", "sft")
    by_prompt = defaultdict(list)
    for row in before:
        by_prompt[row["epoch"], row["prompt_index"]].append(row)
    first, second = next(rows for rows in by_prompt.values() if len(rows) == 2)  # two learnable answers
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    proposals = read_rows(copy / "proposals.jsonl")
    text = truth["proposals"][first["epoch"], first["request_index"]]["text"]
    for p in proposals:
        if (p["epoch"], p["request_index"]) == (second["epoch"], second["request_index"]):
            p["text"] = text  # the same answer twice
    write_rows(copy / "proposals.jsonl", [*proposals, proposals[0]])  # and a row written twice
    assert export(copy, tmp_path / "sft-twin.jsonl", "sft") == [r for r in before if r != second]
    for fmt in ("dpo", "grpo"):
        rows = export(copy, tmp_path / f"{fmt}-twin.jsonl", fmt)
        keys = [json.dumps([r.get("prompt"), r.get("chosen"), r.get("rejected"), r.get("known_tasks")]) for r in rows]
        assert len(keys) == len(set(keys)), fmt


# -- the solver's exports are unchanged -----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["sft", "dpo", "grpo", "verl"])
def test_role_solver_is_the_default_export_byte_for_byte(run: Path, tmp_path: Path, fmt: str) -> None:
    if fmt == "verl":
        pytest.importorskip("pyarrow")
    assert main(["export", str(run), "--format", fmt]) == 0
    default = next((run / "exports").glob(f"{fmt}.*"))
    solver = tmp_path / default.name
    assert main(["export", str(run), "--role", "solver", "--format", fmt, "-o", str(solver)]) == 0
    assert default.read_bytes() == solver.read_bytes()


def test_the_default_output_is_generator_format_in_the_run_exports(run: Path, capsys: Any) -> None:
    assert main(["export", str(run), "--role", "generator", "--format", "grpo"]) == 0
    path = run / "exports" / "generator-grpo.jsonl"
    assert path.is_file() and read_rows(path)
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"-> {path}") and "generator grpo rows" in err and "prompts" in err


def test_the_python_api_says_what_it_wrote(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "dpo.jsonl"
    result = export_generator(run, "dpo", out, ExportFilters(), test_fraction=0.5)
    assert isinstance(result, GeneratorExportResult) and isinstance(result, ExportResult)
    rows = read_rows(out)
    assert (result.rows, result.test) == (len(rows), sum(r["split"] == "test" for r in rows))
    assert result.tasks == len({(r["epoch"], r["prompt_index"]) for r in rows})


# -- filters ----------------------------------------------------------------------------------------


def test_kinds_keep_the_prompts_of_those_kinds(run: Path, tmp_path: Path) -> None:
    for fmt in FORMATS:
        whole = export(run, tmp_path / f"{fmt}.jsonl", fmt)
        for kinds in ("induction", "deduction,abduction"):
            rows = export(run, tmp_path / f"{fmt}-kinds.jsonl", fmt, "--kinds", kinds)
            assert rows == [r for r in whole if r["kind"] in kinds.split(",")], (fmt, kinds)


def test_difficulty_and_tier_use_the_measured_pass_rate_of_the_rows_answers(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    def measured(fmt: str, row: dict[str, Any]) -> tuple[int, int] | None:
        if fmt == "grpo":
            key = (row["epoch"], row["prompt_index"])
            keys = [k for k, p in truth["proposals"].items() if (k[0], p["prompt_index"]) == key]
            return pooled([t for k in keys for t in truth["answer_tasks"][k]], truth["stats"])
        ri = row["request_index"] if fmt == "sft" else row["chosen_request_index"]
        return pooled(truth["answer_tasks"][row["epoch"], ri], truth["stats"])

    seen_tiers = set()
    for fmt in FORMATS:
        whole = export(run, tmp_path / f"{fmt}.jsonl", fmt)
        counts = [measured(fmt, r) for r in whole]
        for tier in ("easy", "medium", "hard"):
            rows = export(run, tmp_path / f"{fmt}-{tier}.jsonl", fmt, "--tier", tier)
            expect = [r for r, c in zip(whole, counts, strict=True) if c is not None and tier_of(*c) == tier]
            assert rows == expect, (fmt, tier)
            seen_tiers |= {tier} if rows else set()
        rows = export(run, tmp_path / f"{fmt}-mid.jsonl", fmt, "--min-difficulty", "0.2", "--max-difficulty", "0.6")
        expect = [r for r, c in zip(whole, counts, strict=True) if c is not None and 0.2 <= difficulty(c) <= 0.6]
        assert rows == expect, fmt
    assert len(seen_tiers) >= 2, "the fixture needs rows of more than one tier"


def test_filters_that_leave_nothing_write_an_empty_file(run: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "sft.jsonl"
    assert export(run, out, "sft", "--min-difficulty", "1.0") == []  # a learnable answer has a pass somewhere
    assert out.read_bytes() == b""
    assert "0 generator sft rows" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--format", "verl"], "--format verl is the solver's"),
        (["--format", "sft", "--status", "passed"], "--status is about trajectories"),
        (["--format", "grpo", "--final-only"], "--final-only is for the solver's sft"),
        (["--format", "dpo", "--verl-reward", "sandbox_fusion"], "--verl-reward is for the solver's"),
        (["--format", "grpo", "--tier", "easy", "--min-difficulty", "0.5"], "can never both hold"),
        (["--format", "sft", "--split", "test", "--test-fraction", "0"], "the test split is empty"),
        (["--format", "sft", "--kinds", "nope"], "unknown task kind"),
    ],
)
def test_refused_combinations_exit_2_with_one_line(
    run: Path, tmp_path: Path, capsys: Any, flags: list[str], says: str
) -> None:
    out = tmp_path / "out.jsonl"
    assert main(["export", str(run), "--role", "generator", *flags, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert not out.exists()


def test_an_unknown_role_is_one_line_and_exit_2(run: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["export", str(run), "--role", "judge", "--format", "sft"])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_solve_directory_is_refused_with_why(run: Path, tmp_path: Path, capsys: Any) -> None:
    copy = tmp_path / "solve"
    shutil.copytree(run, copy)
    for journal in ("plans.jsonl", "proposals.jsonl", "metrics.jsonl"):
        (copy / journal).unlink()
    assert main(["export", str(copy), "--role", "generator", "--format", "sft"]) == 2
    err = capsys.readouterr().err
    assert "spade solve directory" in err and len(err.strip().splitlines()) == 1


def test_a_run_with_no_answer_recorded_says_so(run: Path, tmp_path: Path, capsys: Any) -> None:
    copy = tmp_path / "early"
    shutil.copytree(run, copy)
    (copy / "proposals.jsonl").write_text("")
    assert main(["export", str(copy), "--role", "generator", "--format", "grpo"]) == 2
    err = capsys.readouterr().err
    assert "records no generator answer" in err and len(err.strip().splitlines()) == 1


# -- runs an older spade wrote --------------------------------------------------------------------


def _strip(run: Path, copy: Path, *keys: str, journal: str = "proposals.jsonl", every: int = 1) -> None:
    if not copy.exists():
        shutil.copytree(run, copy)
    rows = read_rows(copy / journal)
    for i, row in enumerate(rows):
        targets = row["requests"] if journal == "plans.jsonl" else [row]
        for target in targets:
            if i % every == 0:
                for key in keys:
                    target.pop(key, None)
    write_rows(copy / journal, rows)


def test_rows_without_prompt_index_export_the_same_from_the_plan(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "old"
    _strip(run, copy, "prompt_index", "sample")
    for fmt in FORMATS:
        export(run, tmp_path / f"new-{fmt}.jsonl", fmt)
        export(copy, tmp_path / f"old-{fmt}.jsonl", fmt)
        assert (tmp_path / f"new-{fmt}.jsonl").read_bytes() == (tmp_path / f"old-{fmt}.jsonl").read_bytes(), fmt


def test_without_prompt_index_anywhere_each_answer_is_its_own_prompt(
    run: Path, truth: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "older"
    _strip(run, copy, "prompt_index", "sample")
    _strip(run, copy, "prompt_index", "sample", journal="plans.jsonl")
    rows = export(copy, tmp_path / "grpo.jsonl", "grpo")
    assert all(r["prompt_index"] == r["request_index"] for r in rows)  # one prompt per request, as then
    # two answers' prompts are the same messages, so the rows are the same example: written once
    assert len(rows) == len({json.dumps(p["prompt"]) for p in truth["proposals"].values()})
    assert export(copy, tmp_path / "dpo.jsonl", "dpo") == []  # no two answers to one prompt
    assert len(export(copy, tmp_path / "sft.jsonl", "sft")) == len(export(run, tmp_path / "sft-new.jsonl", "sft"))


def test_rows_without_their_prompt_are_left_out_and_counted(run: Path, tmp_path: Path, capsys: Any) -> None:
    copy = tmp_path / "half"
    shutil.copytree(run, copy)
    proposals = read_rows(copy / "proposals.jsonl")
    for p in proposals:
        if p["epoch"] == 0:
            del p["prompt"]
    write_rows(copy / "proposals.jsonl", proposals)
    left = sum(p["epoch"] == 0 for p in proposals)
    for fmt in FORMATS:
        whole = export(run, tmp_path / f"{fmt}.jsonl", fmt)
        assert export(copy, tmp_path / f"{fmt}-half.jsonl", fmt) == [r for r in whole if r["epoch"] > 0], fmt
        assert f"left out: {left} generator answers recorded without the prompt" in capsys.readouterr().err


def test_a_run_whose_answers_record_no_prompt_says_why_not(run: Path, tmp_path: Path, capsys: Any) -> None:
    copy = tmp_path / "oldest"
    _strip(run, copy, "prompt", "prompt_index", "sample", "generator_model")
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(copy), "--role", "generator", "--format", "sft", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "proposals.jsonl" in err and "records the prompt" in err
    assert not out.exists()


# -- the command stays light ----------------------------------------------------------------------


def test_the_parser_does_not_import_the_generator_exports() -> None:
    code = (
        "import sys; from spade_llm.cli.app import build_parser; build_parser(); "
        "print('spade_llm.export.generator_rows' in sys.modules or 'spade_llm.export.solver_rows' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_run_of_one_answer_per_prompt_says_what_dpo_pairs_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: 0 dpo rows and no word why; a pair is two answers to one prompt (grpo rows need one: the
    # trainer samples its own completions)
    run = run_fake(tmp_path / "run", small_config())
    assert main(["export", str(run), "--role", "generator", "--format", "dpo", "-o", str(tmp_path / "dpo.jsonl")]) == 0
    said = capsys.readouterr().err
    assert said.startswith("0 generator dpo rows") and "generator.samples_per_request: 2 or more" in said
    for fmt in ("sft", "grpo"):
        out = str(tmp_path / f"{fmt}.jsonl")
        assert main(["export", str(run), "--role", "generator", "--format", fmt, "-o", out]) == 0
        assert "samples_per_request" not in capsys.readouterr().err
