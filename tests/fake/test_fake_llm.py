"""``fake/<profile>``: a deterministic generator and a learning solver, reached through ``complete``.

Answers are judged in-process (the bank's references are trusted code; a wrong answer's infinite
loop is cut by an interval timer), the way the pipeline's sandbox would judge them.
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import json
import re
from collections import Counter
from typing import Any

import pytest

from spade_llm.errors import UserError
from spade_llm.fake import bank
from spade_llm.fake.model import PROFILES, FakeLLM, infer_role, profile_for_model
from spade_llm.llm.base import LLM, LLMRequest
from spade_llm.types import Message

HUMANEVAL_PROMPT = (
    "Complete the following function.\n\nfrom typing import List\n\n\n"
    "def has_close_elements(numbers: List[float], threshold: float = 0.5) -> bool:\n"
    '    """ Check if in given list of numbers, are any two numbers closer to each other than\n'
    '    given threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n    """\n'
)


def gen_request(*, epoch: int = 0, difficulty: float = 0.5, index: int = 0, n: int | None = 4) -> LLMRequest:
    meta: dict[str, Any] = {"epoch": epoch, "difficulty": difficulty, "request_index": index}
    if n is not None:
        meta["n"] = n
    messages = [Message(role="system", content="You design Python exercises."), Message(role="user", content="Go.")]
    return LLMRequest(
        messages=messages, role="generator", response_format="json_object", seed=1000 * epoch + index, metadata=meta
    )


def solver_prompt(task: dict[str, Any]) -> str:
    """What a pipeline's first solver prompt carries: the description verbatim, the entry point,
    the public test inputs."""
    tests = "\n".join(f"- {t['input']}" for t in task["tests"][:3])
    return (
        f"Solve the following task in Python.\n\n{task['description']}\n\n"
        f"Define a function named `{task['entry_point']}`. It will be called with these arguments:\n{tests}\n"
        "Answer with one ```python block."
    )


def solver_request(
    task: dict[str, Any], messages: list[Message], *, task_id: str, turn: int, epoch: int = 0
) -> LLMRequest:
    meta = {"epoch": epoch, "task_id": task_id, "turn": turn, "difficulty": task["difficulty"]}
    return LLMRequest(messages=messages, role="solver", seed=turn, metadata=meta)


def code_of(answer: str) -> str | None:
    blocks = re.findall(r"```python\n(.*?)```", answer, re.S)
    return blocks[-1] if blocks else None


def judge(answer: str, task: dict[str, Any]) -> tuple[bool, str]:
    """Run the answer on every test; on failure, return feedback the way a harness reports it."""
    code = code_of(answer)
    if code is None:
        return False, "No ```python block found in your answer."
    ep = task["entry_point"]
    inputs = [eval(t["input"]) for t in task["tests"]]  # our own literals
    expected = bank.run_in_process(task["reference_code"], ep, inputs)
    for i, (args, want) in enumerate(zip(inputs, expected, strict=True)):
        got = bank.run_in_process(code, ep, [args], time_limit_s=0.1)[0]
        if got.ok and bank.strict_equal(got.value, want.value):
            continue
        head = f"Test {i + 1} failed.\nInput: {task['tests'][i]['input']}\n"
        if got.status == "timeout":
            return False, head + "The program timed out."
        if got.status == "error":
            error = got.error or ""
            if error.startswith("KeyError") and f"def {ep}(" not in code:
                error = f"NameError: name '{ep}' is not defined"
            return False, head + f"Traceback (most recent call last):\n  ...\n{error}"
        return False, head + f"Expected: {want.value!r}\nGot: {got.value!r}"
    return True, ""


async def propose(llm: FakeLLM, **kwargs: Any) -> list[dict[str, Any]]:
    answer = await llm.complete(gen_request(**kwargs))
    return list(json.loads(answer.text)["tasks"])


async def many_tasks(llm: FakeLLM, count: int, difficulty: float) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    index = 0
    while len(tasks) < count:
        tasks += await propose(llm, difficulty=difficulty, index=index)
        index += 1
    return tasks[:count]


# --------------------------------------------------------------------------------------------
# Profiles and the protocol
# --------------------------------------------------------------------------------------------


def test_profiles_are_the_documented_ones_and_unknown_profiles_are_user_errors() -> None:
    assert list(PROFILES) == ["default", "strong-solver", "weak-solver", "collapse", "noisy"]
    llm = FakeLLM()
    assert isinstance(llm, LLM) and llm.model == "fake/default"
    assert FakeLLM("noisy", seed=3).model == "fake/noisy"
    with pytest.raises(UserError) as info:
        FakeLLM("brilliant")
    assert "brilliant" in str(info.value) and all(name in str(info.value) for name in PROFILES)


def test_profile_for_model_maps_any_name_to_a_profile() -> None:
    assert profile_for_model("fake/strong-solver") == "strong-solver"
    assert profile_for_model("openai/noisy") == "noisy"
    assert profile_for_model("gpt-4o") == "default"


async def test_usage_counts_prompt_and_completion_tokens() -> None:
    answer = await FakeLLM().complete(gen_request())
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > len(answer.text) // 8
    assert answer.model == "fake/default" and answer.finish_reason == "stop"


# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------


async def test_generator_answers_a_json_object_of_valid_tasks() -> None:
    llm = FakeLLM()
    tasks = await propose(llm, n=None)
    assert len(tasks) == 4, "n defaults to 4"
    assert len(await propose(llm, n=6)) == 6
    for task in tasks:
        assert {"description", "entry_point", "reference_code", "tests", "difficulty", "tags"} <= task.keys()
        assert task["entry_point"] in task["description"] and "`" in task["description"]
        assert 5 <= len(task["tests"]) <= 8 + bank.MAX_KILLER_TESTS
        passed, feedback = judge(f"```python\n{task['reference_code']}```", task)
        assert passed, feedback


async def test_same_seed_same_tasks_and_other_seeds_differ() -> None:
    a = await FakeLLM(seed=1).complete(gen_request(index=2))
    b = await FakeLLM(seed=1).complete(gen_request(index=2))
    d = await FakeLLM(seed=1).complete(gen_request(index=3))
    assert a.text == b.text and a.text != d.text
    # the request's seed decides (it carries the run seed); the fake's own seed is for seedless requests
    assert (await FakeLLM(seed=2).complete(gen_request(index=2))).text == a.text
    seedless = LLMRequest(messages=gen_request().messages, role="generator", response_format="json_object")
    assert (await FakeLLM(seed=1).complete(seedless)).text != (await FakeLLM(seed=2).complete(seedless)).text


@pytest.mark.slow
async def test_answers_do_not_depend_on_call_order_or_concurrency() -> None:
    llm = FakeLLM("default", seed=5)
    tasks = await many_tasks(llm, 10, 0.5)
    requests = [gen_request(epoch=1, index=i, difficulty=i / 10) for i in range(10)]
    requests += [
        solver_request(t, [Message(role="user", content=solver_prompt(t))], task_id=f"t{i}", turn=1)
        for i, t in enumerate(tasks)
    ]
    forward = await asyncio.gather(*(FakeLLM("default", seed=5).complete(r) for r in requests))
    shared = FakeLLM("default", seed=5)
    backward = await asyncio.gather(*(shared.complete(r) for r in reversed(requests)))
    sequential = [await shared.complete(r) for r in requests]
    assert [r.text for r in forward] == [r.text for r in reversed(backward)] == [r.text for r in sequential]


@pytest.mark.slow
async def test_every_family_is_reachable_and_difficulty_follows_the_target() -> None:
    llm = FakeLLM(seed=2)
    families: set[str] = set()
    kinds: Counter[str] = Counter()
    mean = {}
    for target in [i / 20 for i in range(21)]:
        tasks = []
        for index in range(4):
            tasks += await propose(llm, difficulty=target, index=index)
        families |= {t["tags"][0] for t in tasks}
        for t in tasks:
            found = bank.identify(t["description"])
            assert found is not None
            kinds["composed" if isinstance(found.variant, bank.PipelineVariant) else "classic"] += 1
        mean[target] = sum(t["difficulty"] for t in tasks) / len(tasks)
    assert families == set(bank.FAMILIES)
    assert kinds["composed"] > 2 * kinds["classic"] > 0, kinds
    assert mean[0.1] < mean[0.5] < mean[0.9]
    for target in (0.1, 0.3, 0.6, 0.9):
        assert abs(mean[target] - target) < 0.1, (target, mean[target])


def _variant_keys(tasks: list[dict[str, Any]]) -> list[str]:
    keys = []
    for task in tasks:
        found = bank.identify(task["description"])
        assert found is not None
        keys.append(found.variant.key)
    return keys


def _focus_request(topic: str, target: float, seed: int, extra: str = "") -> LLMRequest:
    text = f"Propose 1 new Python programming task at difficulty {target:.2f}.\nTopic for this request: {topic}.\n"
    return LLMRequest(
        messages=[Message(role="user", content=text + extra)],
        role="generator",
        response_format="json_object",
        seed=seed,
    )


@pytest.mark.slow
async def test_a_long_run_of_independent_requests_is_mostly_novel() -> None:
    """The run's duplicate gate rejects a task whose reference has the shape of any earlier one:
    192 one-task requests, topics rotating and targets moving as in a 12 x 16 run, must stay
    mostly novel, which only composed exercises make possible."""
    from spade_llm.evaluator import similarity, task_fingerprint

    topics = [
        "strings", "lists", "arithmetic", "recursion", "dynamic programming", "parsing", "dictionaries",
        "sorting and searching", "bit manipulation", "matrices", "intervals", "simulation", "stacks", "graphs",
    ]  # fmt: skip
    llm = FakeLLM()
    accepted: list[frozenset[tuple[str, ...]]] = []
    proposed = 0
    for epoch in range(12):
        target = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.8, 0.6, 0.4, 0.2, 0.1][epoch]
        for index in range(16):
            request = _focus_request(topics[(epoch + index) % len(topics)], target, 1000 * epoch + index)
            for task in json.loads((await llm.complete(request)).text)["tasks"]:
                proposed += 1
                fp = task_fingerprint(task["reference_code"])
                if all(similarity(fp, other) < 0.9 for other in accepted):
                    accepted.append(fp)
    assert proposed == 192
    assert len(accepted) >= 0.8 * proposed, len(accepted)


@pytest.mark.slow
async def test_one_answer_holds_different_tasks_and_classics_shown_in_the_prompt_are_avoided() -> None:
    llm = FakeLLM(seed=4)
    for index in range(3):
        keys = _variant_keys(await propose(llm, index=index, difficulty=0.45, n=8))
        assert len(set(keys)) == 8, keys
    graphs = bank.FAMILIES["graphs"]
    shown = "\n".join(f"- {v.entry_points[0]}" for v in graphs[1:])
    listing = f"Tasks already accepted (write different ones):\n{shown}"
    classics: Counter[str] = Counter()
    for seed in range(120):
        answer = await llm.complete(_focus_request("graphs", 0.55, seed, listing))
        for key in _variant_keys(json.loads(answer.text)["tasks"]):
            if "pipeline:" not in key:
                classics[key] += 1
    assert classics[graphs[0].key] > sum(classics.values()) / 2, classics


async def test_generator_answers_agree_in_process_and_over_http() -> None:
    """``spade serve-fake`` sees only the HTTP body (messages, seed, response_format; no metadata, no
    role) and its model has its own seed: the generator's answers are the same all the same."""
    from spade_llm.generator import LLMGenerator, ProposalContext
    from spade_llm.serve.fake import to_llm_request
    from spade_llm.templates import Prompts

    generator = LLMGenerator(FakeLLM(), Prompts(), temperature=0.9, max_tokens=4096, response_format="json_object")
    cases = ((1, 0, 0, 0.3, "graphs"), (1, 3, 5, 0.55, "strings"), (7, 11, 15, 0.9, "dynamic programming"),
             (7, 2, 1, 0.12, None))  # fmt: skip
    for run_seed, epoch, index, target, focus in cases:
        ctx = ProposalContext(epoch=epoch, request_index=index, n=1, difficulty=target, capability=0.5, examples=[],
                              avoid_tags=[], seed=run_seed, focus=focus)  # fmt: skip
        messages = generator.messages(ctx)
        seed = 12345 + 17 * index + epoch
        local = LLMRequest(
            messages=messages, role="generator", response_format="json_object", seed=seed,
            metadata={"epoch": epoch, "difficulty": target, "n": 1, "request_index": index, "focus": focus},
        )  # fmt: skip
        body = {
            "model": "openai/default",
            "messages": [m.model_dump() for m in messages],
            "temperature": 0.9,
            "max_tokens": 4096,
            "seed": seed,
            "response_format": {"type": "json_object"},
        }
        remote = to_llm_request(json.loads(json.dumps(body)), infer_role)
        assert remote.role == "generator" and not remote.metadata
        in_process = await FakeLLM("default", seed=run_seed).complete(local)
        over_http = await FakeLLM("default", seed=0).complete(remote)
        assert in_process.text == over_http.text
        task = json.loads(in_process.text)["tasks"][0]
        assert abs(task["difficulty"] - target) < 0.15
        if focus is not None:
            assert task["tags"][0] == {"dynamic programming": "dynamic_programming"}.get(focus, focus)


async def test_solver_answers_agree_in_process_and_over_http_at_epoch_0() -> None:
    """The solver's skill grows with the epoch, which only in-process metadata carries; at epoch 0
    (and for the strong solver at any epoch) the answers over HTTP are the same."""
    from spade_llm.serve.fake import to_llm_request

    tasks = await many_tasks(FakeLLM(seed=5), 12, 0.5)
    for i, task in enumerate(tasks):
        messages = [Message(role="user", content=solver_prompt(task))]
        local = LLMRequest(
            messages=messages, role="solver", seed=100 + i, metadata={"epoch": 0, "task_id": f"t{i}", "turn": 1}
        )
        body = {"model": "default", "messages": [m.model_dump() for m in messages], "seed": 100 + i}
        remote = to_llm_request(body, infer_role)
        assert remote.role == "solver"
        assert (await FakeLLM(seed=3).complete(local)).text == (await FakeLLM().complete(remote)).text


async def test_http_style_requests_without_metadata_are_still_deterministic() -> None:
    llm = FakeLLM()
    messages = [Message(role="user", content="Propose 3 new Python tasks at difficulty 0.7 as JSON.")]
    request = LLMRequest(messages=messages, role=infer_role(messages, json_mode=True), response_format="json_object")
    first, again = await llm.complete(request), await llm.complete(request)
    assert first.text == again.text
    tasks = json.loads(first.text)["tasks"]
    assert len(tasks) == 3 and sum(t["difficulty"] for t in tasks) / 3 > 0.45
    other = [Message(role="user", content="Propose 3 new Python tasks at difficulty 0.7 as JSON, please.")]
    assert (
        await llm.complete(LLMRequest(messages=other, role="generator", response_format="json_object"))
    ).text != first.text


def _mean_pairwise_similarity(codes: list[str]) -> float:
    pairs = [(a, b) for i, a in enumerate(codes) for b in codes[i + 1 :]]
    return sum(difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs) / len(pairs)


async def test_collapse_profile_keeps_proposing_near_duplicates() -> None:
    """One exercise, fixed for the profile (the same in every process), with other constants."""
    collapsed = await many_tasks(FakeLLM("collapse", seed=4), 16, 0.5)
    varied = await many_tasks(FakeLLM("default", seed=4), 16, 0.5)
    top_family, count = Counter(t["tags"][0] for t in collapsed).most_common(1)[0]
    assert count >= 12
    assert len({t["tags"][0] for t in varied}) >= 6
    same = [t["reference_code"] for t in collapsed if t["tags"][0] == top_family]
    assert _mean_pairwise_similarity(same) > 0.85
    assert _mean_pairwise_similarity([t["reference_code"] for t in varied]) < 0.5


def _recover_json(text: str) -> Any:
    """What a tolerant parser does: strip a code fence or the prose around the outermost object."""
    start, end = text.find("{"), text.rfind("}")
    return json.loads(text[start : end + 1]) if start >= 0 and end > start else json.loads(text)


@pytest.mark.slow
async def test_noisy_profile_breaks_a_fraction_of_answers_and_tasks() -> None:
    llm = FakeLLM("noisy", seed=6)
    outcomes: Counter[str] = Counter()
    broken: Counter[str] = Counter()
    for index in range(150):
        answer = await llm.complete(gen_request(index=index, difficulty=0.4))
        try:
            data = json.loads(answer.text)
            outcomes["clean"] += 1
        except json.JSONDecodeError:
            try:
                data = _recover_json(answer.text)
                outcomes["recoverable"] += 1
            except json.JSONDecodeError:
                if "{" not in answer.text:
                    outcomes["refusal"] += 1
                else:
                    outcomes["truncated" if answer.finish_reason == "length" else "broken"] += 1
                continue
        for task in data["tasks"]:
            broken[_breakage(task)] += 1
    assert outcomes["clean"] >= 0.4 * sum(outcomes.values()), outcomes
    assert all(outcomes[k] >= 2 for k in ("recoverable", "refusal", "truncated", "broken")), outcomes
    assert broken["ok"] > 0.6 * sum(broken.values())
    for kind in ("syntax_error", "missing_entry_point", "raises", "expected_mismatch", "nondeterministic"):
        assert broken[kind] >= 1, broken


def _breakage(task: dict[str, Any]) -> str:
    ep, code = task["entry_point"], task["reference_code"]
    try:
        compile(code, "ref", "exec")
    except SyntaxError:
        return "syntax_error"
    if not re.search(rf"^def {re.escape(ep)}\(", code, re.M):
        return "missing_entry_point"
    inputs = [eval(t["input"]) for t in task["tests"]]
    first = bank.run_in_process(code, ep, inputs, time_limit_s=1.0)
    if any(not o.ok for o in first):
        return "raises"
    second = bank.run_in_process(code, ep, inputs, time_limit_s=1.0)
    differs = any(not bank.strict_equal(a.value, b.value) for a, b in zip(first, second, strict=True))
    if differs or "import random" in code:
        return "nondeterministic"
    for test, outcome in zip(task["tests"], first, strict=True):
        if "expected" in test and not bank.strict_equal(test["expected"], outcome.value):
            return "expected_mismatch"
    return "ok"


# --------------------------------------------------------------------------------------------
# Solver
# --------------------------------------------------------------------------------------------


async def first_try_pass_rate(profile: str, tasks: list[dict[str, Any]], epoch: int = 0) -> float:
    llm = FakeLLM(profile, seed=9)
    passed = 0
    for i, task in enumerate(tasks):
        answer = await llm.complete(
            solver_request(
                task, [Message(role="user", content=solver_prompt(task))], task_id=f"t{i}", turn=1, epoch=epoch
            )
        )
        passed += judge(answer.text, task)[0]
    return passed / len(tasks)


async def test_solver_skill_depends_on_profile_and_grows_with_epochs() -> None:
    tasks = await many_tasks(FakeLLM(seed=8), 40, 0.4)
    strong = await first_try_pass_rate("strong-solver", tasks)
    default = await first_try_pass_rate("default", tasks)
    weak = await first_try_pass_rate("weak-solver", tasks)
    later = await first_try_pass_rate("default", tasks, epoch=8)
    assert strong >= 0.9
    assert weak <= 0.2
    assert weak < default < strong
    assert later > default


def test_the_skill_curve_puts_the_band_within_reach() -> None:
    """Episode pass rate (3 turns) against task difficulty, from the fake's own model: falling,
    high on easy tasks, low on the hardest, crossing 0.5 mid-scale at every epoch, and gentle
    enough that one 0.1 step of the target cannot jump over the band [0.3, 0.7]."""
    grid = [i / 100 for i in range(101)]
    default = FakeLLM("default")
    for epoch in range(12):
        curve = [default.p_episode(d, epoch) for d in grid]
        assert all(a > b for a, b in itertools.pairwise(curve)), epoch
        assert curve[10] > 0.8 and curve[95] < 0.2, (epoch, curve[10], curve[95])
        crossing = next(d for d, p in zip(grid, curve, strict=True) if p < 0.5)
        assert 0.25 <= crossing <= 0.75, (epoch, crossing)
        inside = [d for d, p in zip(grid, curve, strict=True) if 0.3 <= p <= 0.7]
        assert max(inside) - min(inside) >= 0.15, (epoch, inside)
    strong, weak = FakeLLM("strong-solver"), FakeLLM("weak-solver")
    assert all(strong.p_episode(d, epoch) > 0.95 for d in grid for epoch in (0, 11))
    assert all(weak.p_episode(d, epoch) < 0.4 for d in grid[10:] for epoch in (0, 11))
    assert weak.p_episode(0.3) < 0.3


async def test_solver_answer_is_a_sentence_and_a_python_block_defining_the_entry_point() -> None:
    task = (await propose(FakeLLM(), difficulty=0.2))[0]
    answer = await FakeLLM("strong-solver").complete(
        solver_request(task, [Message(role="user", content=solver_prompt(task))], task_id="x", turn=1)
    )
    sentence, _, rest = answer.text.partition("\n\n")
    assert sentence and "```" not in sentence and rest.startswith("```python\n")
    code = code_of(answer.text)
    assert code is not None and f"def {task['entry_point']}(" in code
    assert judge(answer.text, task)[0]


@pytest.mark.slow
async def test_wrong_answers_are_realistic_mistakes_that_really_fail() -> None:
    tasks = await many_tasks(FakeLLM(seed=12), 60, 0.35)
    llm = FakeLLM("default", seed=12)
    wrong = 0
    for i, task in enumerate(tasks):
        answer = await llm.complete(
            solver_request(task, [Message(role="user", content=solver_prompt(task))], task_id=f"w{i}", turn=1)
        )
        code = code_of(answer.text)
        assert code is not None
        if code.strip() != task["reference_code"].strip():
            wrong += 1
            assert not judge(answer.text, task)[0], f"a mistake passed:\n{code}"
    assert 10 <= wrong <= 55


@pytest.mark.slow
async def test_repair_with_feedback_fixes_more_often_than_without() -> None:
    tasks = await many_tasks(FakeLLM(seed=13), 120, 0.3)
    llm = FakeLLM("default", seed=13)
    fixed = Counter[str]()
    failures = 0
    for i, task in enumerate(tasks):
        first = [Message(role="user", content=solver_prompt(task))]
        answer = await llm.complete(solver_request(task, first, task_id=f"r{i}", turn=1))
        ok, feedback = judge(answer.text, task)
        if ok:
            continue
        failures += 1
        assert feedback
        for label, reply in (("feedback", feedback), ("nothing", "Please try again.")):
            conversation = [*first, Message(role="assistant", content=answer.text), Message(role="user", content=reply)]
            retry = await llm.complete(solver_request(task, conversation, task_id=f"r{i}", turn=2))
            fixed[label] += judge(retry.text, task)[0]
    assert failures >= 30
    assert fixed["feedback"] >= fixed["nothing"] + 5, fixed
    assert fixed["feedback"] >= 0.2 * failures


async def test_repairs_are_deterministic_per_task_and_turn() -> None:
    task = (await propose(FakeLLM(seed=3), difficulty=0.9))[0]
    first = [Message(role="user", content=solver_prompt(task))]
    conversation = [
        *first,
        Message(role="assistant", content="```python\ndef f():\n    pass\n```"),
        Message(role="user", content="Test 1 failed.\nNameError: name 'f' is not defined"),
    ]
    answers = {
        (await FakeLLM(seed=3).complete(solver_request(task, conversation, task_id="a", turn=2))).text for _ in range(3)
    }
    assert len(answers) == 1


async def test_unknown_tasks_get_a_generic_attempt_that_defines_the_entry_point() -> None:
    llm = FakeLLM("strong-solver")
    for prompt, name, params in (
        (HUMANEVAL_PROMPT, "has_close_elements", "numbers, threshold"),
        ("Write a function `add(a, b)` that returns a + b.", "add", "a, b"),
        ("Do something clever.", "solution", "*args"),
    ):
        answer = await llm.complete(LLMRequest(messages=[Message(role="user", content=prompt)], role="solver"))
        code = code_of(answer.text)
        assert code is not None and f"def {name}({params}):" in code
        namespace: dict[str, Any] = {}
        exec(code, namespace)
        assert callable(namespace[name])


async def test_solver_recognises_tasks_from_the_description_and_entry_point_alone() -> None:
    """Prompts may show one public test or none: identification rests on the statement."""
    tasks = await many_tasks(FakeLLM(seed=22), 24, 0.6)
    llm = FakeLLM("strong-solver", seed=22)
    for i, task in enumerate(tasks):
        shown = task["tests"][:1] if i % 2 else []
        prompt = f"{task['description']}\n\nWrite a Python function `{task['entry_point']}`.\n" + "".join(
            f"- {task['entry_point']}{t['input']}\n" for t in shown
        )
        answer = await llm.complete(LLMRequest(messages=[Message(role="user", content=prompt)], role="solver", seed=i))
        assert judge(answer.text, task)[0], task["description"]


async def test_solver_recognises_a_task_written_by_another_process() -> None:
    """Identification reads the prompt only: a task serialized and read back (no shared objects,
    other whitespace) is solved by the strong solver."""
    tasks = json.loads(json.dumps(await many_tasks(FakeLLM(seed=21), 12, 0.5)))
    llm = FakeLLM("strong-solver", seed=21)
    for i, task in enumerate(tasks):
        prompt = solver_prompt(task).replace("\n\n", "\n")
        answer = await llm.complete(
            LLMRequest(messages=[Message(role="user", content=prompt)], role="solver", metadata={"task_id": f"p{i}"})
        )
        assert judge(answer.text, task)[0], task["description"]


# --------------------------------------------------------------------------------------------
# Role inference
# --------------------------------------------------------------------------------------------


def test_infer_role_reads_the_structure_of_the_conversation() -> None:
    user = lambda text: Message(role="user", content=text)  # noqa: E731
    assistant = lambda text: Message(role="assistant", content=text)  # noqa: E731
    # JSON mode is the generator, whatever the messages say
    assert infer_role([user("Write `f(x)`.")], json_mode=True) == "generator"
    # an earlier answer with code: a repair turn
    repair = [user("Fix it."), assistant("```python\ndef f(x):\n    return x\n```"), user("Failed.")]
    assert infer_role(repair) == "solver"
    # a task statement naming the function to write
    assert infer_role([user("Write a function `is_even(n)` returning whether n is even.")]) == "solver"
    assert infer_role([user(HUMANEVAL_PROMPT)]) == "solver"
    # the task schema in the prompt means proposals, even when examples show signatures
    schema = 'Return JSON {"tasks": [{"description", "entry_point", "reference_code", "tests"}]}; e.g. `f(x)`.'
    assert infer_role([user(schema)]) == "generator"
    assert infer_role([user("Invent some programming exercises.")]) == "generator"
    # a re-ask after a fenced JSON proposal is still the generator
    reask = [
        user("Propose tasks."),
        assistant('```json\n{"tasks": [{"description": "`f(x)` ..."}]}\n```'),
        user("That answer could not be used. Reply with only the JSON object."),
    ]
    assert infer_role(reask) == "generator"
    assert infer_role([user("Solve it."), assistant("```\ndef f(x):\n    return x\n```"), user("No.")]) == "solver"
    # OpenAI-style dicts, as an HTTP body carries them
    assert infer_role([{"role": "user", "content": [{"type": "text", "text": "def g(a):\n    ..."}]}]) == "solver"
    assert infer_role([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]) == "generator"


async def test_requests_rebuilt_over_http_reach_the_same_answers() -> None:
    """The role inferred from structure matches what the pipeline sets, so serve-fake behaves alike."""
    task = (await propose(FakeLLM(), difficulty=0.3))[0]
    messages = [Message(role="user", content=solver_prompt(task))]
    assert infer_role(messages) == "solver"
    assert infer_role(gen_request().messages, json_mode=True) == "generator"


def test_focus_topic_steers_the_family_in_process_and_over_http_text() -> None:
    import asyncio
    import json as _json

    from spade_llm.fake.model import FakeLLM
    from spade_llm.llm.base import LLMRequest
    from spade_llm.types import Message

    fake = FakeLLM("default", seed=3)
    for topic, family in [("graphs", "graphs"), ("bit manipulation", "bits"), ("dictionaries", "dicts")]:
        by_meta = LLMRequest(
            messages=[Message(role="user", content="Propose 1 new Python programming task at difficulty 0.50.")],
            role="generator",
            response_format="json_object",
            seed=11,
            metadata={"n": 1, "difficulty": 0.5, "focus": topic},
        )
        by_text = LLMRequest(
            messages=[
                Message(
                    role="user", content=f"Propose 1 new task at difficulty 0.50.\nTopic for this request: {topic}."
                )
            ],
            role="generator",
            response_format="json_object",
            seed=11,
        )
        for request in (by_meta, by_text):
            tasks = _json.loads(asyncio.run(fake.complete(request)).text)["tasks"]
            assert len(tasks) == 1 and family in tasks[0]["tags"], (topic, tasks[0]["tags"])
