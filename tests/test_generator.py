import json
from typing import Any

import pytest

from spade_llm.errors import LLMCallError
from spade_llm.fake.scripted import ScriptedLLM
from spade_llm.generator import (
    BadAnswer,
    LLMGenerator,
    ProposalContext,
    extract_json,
    is_task_answer,
    kept_answer,
    make_task_id,
    task_answer_schema,
)
from spade_llm.llm.base import LLMResponse
from spade_llm.llm.stats import LLMStats
from spade_llm.templates import Prompts

TASK = {
    "description": "Return the sum of a and b.",
    "entry_point": "add",
    "reference_code": "def add(a, b):\n    return a + b\n",
    "tests": [{"input": "(1, 2)"}, {"input": "(3, 4)", "expected": 7}, {"input": "(0, 0)"}],
    "difficulty": 0.2,
    "tags": ["arithmetic"],
}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"tasks": [TASK]}),
        "Here you go:\n```json\n" + json.dumps({"tasks": [TASK]}) + "\n```\nHope it helps!",
        "Sure! " + json.dumps({"tasks": [TASK]}) + " -- and some trailing text {not json",
        "```\n" + json.dumps([TASK]) + "\n```",
    ],
)
def test_extract_json_survives_fences_prose_and_trailing_text(text):
    value = extract_json(text)
    items = value["tasks"] if isinstance(value, dict) else value
    assert items[0]["entry_point"] == "add"


@pytest.mark.parametrize(
    ("text", "finish", "reason"),
    [
        ("", "stop", "empty"),
        ("   \n", "stop", "empty"),
        ("I'm sorry, but I can't help with that.", "stop", "refusal"),
        ('{"tasks": [{"description": "abc', "length", "truncated"),
        ('{"tasks": [{"description": "abc', "stop", "bad_json"),
        ("no json here at all", "stop", "bad_json"),
    ],
)
def test_extract_json_failures_have_reasons(text, finish, reason):
    with pytest.raises(BadAnswer) as e:
        extract_json(text, finish)
    assert e.value.reason == reason


def ctx(**kw):
    base: dict[str, Any] = dict(
        epoch=0, request_index=0, n=2, difficulty=0.4, capability=0.5, examples=[], avoid_tags=[], seed=11, run_seed=3
    )
    base.update(kw)
    return ProposalContext(**base)


async def test_generator_parses_tasks_and_ids_are_deterministic():
    llm = ScriptedLLM([json.dumps({"tasks": [TASK, {**TASK, "entry_point": "plus"}]})])
    gen = LLMGenerator(llm, Prompts(), temperature=0.9, max_tokens=100, response_format="json_object")
    proposal = await gen.propose(ctx())
    assert proposal.failure is None
    tasks = [c.task for c in proposal.candidates if c.task is not None]
    assert len(tasks) == len(proposal.candidates)  # every candidate parsed
    assert [t.entry_point for t in tasks] == ["add", "plus"]
    assert tasks[0].task_id == make_task_id(3, 0, (0, 0), TASK)
    assert tasks[0].tests[1].has_expected and not tasks[0].tests[0].has_expected
    assert tasks[0].meta["epoch"] == 0 and tasks[0].source == "generated"
    request = llm.calls[0]
    assert request.role == "generator" and request.json_mode
    assert "0.40" in request.messages[-1].content  # the target difficulty reaches the prompt


async def test_generator_re_asks_once_quoting_the_problem():
    stats = LLMStats()
    llm = ScriptedLLM(["this is not json", json.dumps({"tasks": [TASK]})])
    gen = LLMGenerator(llm, Prompts(), temperature=0.9, max_tokens=100, response_format="json_object", stats=stats)
    proposal = await gen.propose(ctx())
    assert proposal.failure is None and len(proposal.candidates) == 1
    repair = llm.calls[1].messages
    assert repair[-2].role == "assistant" and repair[-2].content == "this is not json"
    assert "could not be used" in repair[-1].content and "no JSON object" in repair[-1].content
    assert stats.summary()["content_faults"] == {"bad_json": 1} and stats.summary()["by_kind"] == {}


async def test_generator_gives_up_after_one_repair_and_on_refusal():
    gen = LLMGenerator(
        ScriptedLLM(["nope", "still nope"]), Prompts(), temperature=0.9, max_tokens=100, response_format="json_object"
    )
    proposal = await gen.propose(ctx())
    assert proposal.failure == "bad_json" and proposal.candidates == []
    llm = ScriptedLLM(["I cannot help with that."])
    proposal = await LLMGenerator(
        llm, Prompts(), temperature=0.9, max_tokens=100, response_format="json_object"
    ).propose(ctx())
    assert proposal.failure == "refusal" and len(llm.calls) == 1


async def test_generator_records_invalid_items_and_endpoint_failures():
    bad = {"description": "x"}  # no entry point, no code, no tests
    gen = LLMGenerator(
        ScriptedLLM([json.dumps({"tasks": [bad, TASK]})]),
        Prompts(),
        temperature=0.9,
        max_tokens=100,
        response_format="text",
    )
    proposal = await gen.propose(ctx())
    assert proposal.candidates[0].reason == "invalid_task" and proposal.candidates[1].task is not None
    gen = LLMGenerator(
        ScriptedLLM([LLMCallError("down", kind="server_error")]),
        Prompts(),
        temperature=0.9,
        max_tokens=100,
        response_format="text",
    )
    proposal = await gen.propose(ctx())
    assert proposal.failure == "llm_server_error"


async def test_truncated_answer_is_reported_as_truncated():
    text = '{"tasks": [{"description": "Return'
    gen = LLMGenerator(
        ScriptedLLM([LLMResponse(text=text, finish_reason="length")] * 2),
        Prompts(),
        temperature=0.9,
        max_tokens=10,
        response_format="json_object",
    )
    proposal = await gen.propose(ctx())
    assert proposal.failure == "truncated"


async def test_an_answer_holds_at_most_n_tasks_and_an_empty_one_is_a_failure():
    three = json.dumps({"tasks": [TASK, {**TASK, "entry_point": "plus"}, {**TASK, "entry_point": "more"}]})
    gen = LLMGenerator(ScriptedLLM([three]), Prompts(), temperature=0.9, max_tokens=100, response_format="json_object")
    proposal = await gen.propose(ctx(n=1))
    assert [c.task.entry_point for c in proposal.candidates if c.task] == ["add"]
    empty = json.dumps({"tasks": []})
    gen = LLMGenerator(
        ScriptedLLM([empty, empty]), Prompts(), temperature=0.9, max_tokens=100, response_format="json_object"
    )
    proposal = await gen.propose(ctx())
    assert proposal.failure == "no_tasks" and not proposal.candidates and proposal.text == empty


async def test_a_proposal_survives_its_journal_row():
    from spade_llm.generator import Proposal

    gen = LLMGenerator(
        ScriptedLLM([json.dumps({"tasks": [TASK, {"bad": 1}]})]),
        Prompts(),
        temperature=0.9,
        max_tokens=100,
        response_format="json_object",
    )
    proposal = await gen.propose(ctx())
    back = Proposal.from_record(json.loads(json.dumps(proposal.record(0, 2))))
    assert [c.task.dump() if c.task else c.reason for c in back.candidates] == [
        c.task.dump() if c.task else c.reason for c in proposal.candidates
    ]
    assert (back.usage_prompt, back.text, back.failure) == (proposal.usage_prompt, proposal.text, proposal.failure)


# A real broken answer's shape: the outer object breaks (a comma missing before "difficulty"), but the
# test list inside it is valid JSON on its own. Main used to take that list for the task list.
BROKEN = (
    '{"tasks": [{"description": "Add two numbers.", "entry_point": "add",\n'
    '  "reference_code": "def add(a, b):\\n    return a + b",\n'
    '  "tests": [{"input": "(1, 2)"}, {"input": "(3, 4)"}, {"input": "(5, 6)"}] "difficulty": 0.3}]}'
)


def test_a_nested_test_list_is_never_taken_for_the_task_list():
    with pytest.raises(BadAnswer) as e:
        extract_json(BROKEN, accept=is_task_answer)
    assert e.value.reason == "bad_json"
    assert e.value.where is not None and e.value.where["line"] == 3  # where the JSON broke, in the answer
    assert "delimiter" in e.value.where["message"]


async def test_a_broken_answer_yields_no_phantom_task_and_keeps_where_it_broke():
    llm = ScriptedLLM([BROKEN, BROKEN])
    gen = LLMGenerator(llm, Prompts(), temperature=0.9, max_tokens=100, response_format="json_object")
    proposal = await gen.propose(ctx(n=3))
    assert proposal.failure == "bad_json" and proposal.candidates == []
    assert proposal.text == BROKEN and proposal.parse_error is not None
    assert proposal.parse_error["line"] == 3 and proposal.parse_error["offset"] == BROKEN.index('"difficulty"')


def test_one_task_object_and_bare_lists_of_tasks_are_still_answers():
    assert is_task_answer(TASK) and is_task_answer([TASK]) and is_task_answer({"tasks": []})
    assert not is_task_answer([{"input": "(1,)"}]) and not is_task_answer([]) and not is_task_answer({"input": "x"})


def test_a_long_bad_answer_keeps_its_head_and_tail():
    text = "x" * 10_000 + "MIDDLE" + "y" * 30_000 + "THE END"
    kept = kept_answer(text)
    assert len(kept) < 16_500 and kept.startswith("xxx") and kept.endswith("THE END") and "characters cut" in kept
    assert kept_answer("short") == "short"


async def test_a_json_schema_request_carries_the_schema_for_n_tasks():
    llm = ScriptedLLM([json.dumps({"tasks": [TASK]})])
    gen = LLMGenerator(llm, Prompts(), temperature=0.9, max_tokens=100)  # json_schema is the default
    await gen.propose(ctx(n=2))
    request = llm.calls[0]
    assert request.response_format == "json_schema" and request.json_schema == task_answer_schema(2)


def test_a_generator_cannot_write_what_only_an_importer_sets():
    """A proposed ``check_code``, ``public_tests: 0`` or ``examples`` would have sent the task past every gate
    of validation (a check that asserts nothing, no test shown, tests that decide nothing); a test's
    ``abs_tol``/``as_bool`` would loosen its comparison, ``python_eq``/``as_tuple`` change it. They are dropped,
    and the schema never offers them."""
    from spade_llm.generator import parse_task

    proposed = {
        **TASK,
        "check_code": "def check(candidate):\n    pass\n",
        "public_tests": 0,
        "examples": [{"input": "(1, 2)", "expected": 3}],
        "tests": [
            {"input": "(1, 2)", "expected": 3, "abs_tol": 100.0, "as_bool": True, "python_eq": "3.0", "as_tuple": True}
        ],
    }
    task = parse_task(proposed, task_id="e0-x", epoch=0, target=0.5)
    assert task.check_code is None and task.public_tests is None and task.examples == []
    assert not task.shows_examples
    assert [t.dump() for t in task.tests] == [{"input": "(1, 2)", "expected": 3}]
    test_schema = task_answer_schema(1)["schema"]["properties"]["tasks"]["items"]["properties"]["tests"]["items"]
    assert set(test_schema["properties"]) == {"input", "expected"}


async def test_an_answer_records_the_prompt_as_sent_and_the_model_that_wrote_it():
    """The generator's training data: the prompt exactly as the model saw it (the first ask's messages,
    not the repair re-ask's) and which model answered, in the ``proposals.jsonl`` row and back."""
    from spade_llm.generator import Proposal

    llm = ScriptedLLM(["this is not json", json.dumps({"tasks": [TASK]})])
    gen = LLMGenerator(llm, Prompts(), temperature=0.9, max_tokens=100, response_format="json_object", model="m/x")
    proposal = await gen.propose(ctx())
    sent = [m.model_dump() for m in llm.calls[0].messages]
    assert proposal.prompt == sent and [m["role"] for m in sent] == ["system", "user"]
    assert proposal.generator_model == "m/x"
    row = json.loads(json.dumps(proposal.record(0, 1)))
    assert (row["prompt"], row["generator_model"], row["prompt_index"], row["sample"]) == (sent, "m/x", 0, 0)
    back = Proposal.from_record(row)
    assert (back.prompt, back.generator_model) == (sent, "m/x")


def test_samples_per_request_asks_each_prompt_k_times_with_seeds_of_their_own():
    from spade_llm.config import load_config
    from spade_llm.curriculum import Curriculum, History

    def plan(k: int) -> Any:
        config = load_config(None, {"controller": {"tasks_per_epoch": 6}, "generator": {"samples_per_request": k}})
        return Curriculum(config).plan(2, History(tasks=[], metrics=[]))

    one, three = plan(1), plan(3)
    assert [r.request_index for r in three.requests] == list(range(18))
    for r in three.requests:
        first = one.requests[r.prompt]  # the same prompt: topic, kind and size; only the seed differs
        assert (r.prompt, r.sample) == (r.request_index // 3, r.request_index % 3)
        assert (r.focus, r.kind, r.n) == (first.focus, first.kind, first.n)
        assert (r.seed == first.seed) == (r.sample == 0)  # the first answer keeps the seed it had at K=1
    assert len({r.seed for r in three.requests}) == 18
    assert [r.model_dump() for r in one.requests] == [
        {**r.model_dump(), "prompt_index": r.request_index, "sample": 0} for r in one.requests
    ]
