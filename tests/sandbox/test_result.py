"""A run's result is a dataclass, and every record that holds one writes and reads it as the model did."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from spade_llm.sandbox.result import ExecutionResult, TestResult, dump_json
from spade_llm.types import Attempt

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
test_results = st.builds(
    TestResult,
    index=st.integers(0, 1000),
    input=texts,
    status=st.sampled_from(["passed", "failed", "error", "timeout"]),
    output=st.none() | texts,
    error=st.none() | texts,
    duration_ms=st.none() | st.floats(0, 1e6),
)
results = st.builds(
    ExecutionResult,
    status=st.sampled_from(["ok", "error", "timeout", "memory", "output_limit", "killed"]),
    return_code=st.none() | st.integers(-255, 255),
    signal=st.none() | st.integers(1, 64),
    stdout=texts,
    stderr=texts,
    stdout_truncated=st.booleans(),
    stderr_truncated=st.booleans(),
    duration_ms=st.floats(0, 1e7),
    tests_passed=st.none() | st.integers(0, 50),
    tests_total=st.none() | st.integers(0, 50),
    test_results=st.none() | st.lists(test_results, max_size=3),
    load_error=st.none() | texts,
)


@given(results)
def test_spade_exec_prints_what_a_record_holds(result: ExecutionResult) -> None:
    """``dump_json`` (``spade exec``'s output, no pydantic) is the JSON pydantic writes of the same result
    inside a record: the same keys in the same order, the same values."""
    ours = json.loads(dump_json(result))
    held = json.loads(Attempt(turn=0, code="", result=result).model_dump_json())["result"]
    assert list(ours) == list(held) == [f.name for f in dataclasses.fields(ExecutionResult)]
    assert ours == held
    assert "\n" not in dump_json(result)


@given(results)
def test_a_record_reads_back_the_result_it_wrote(result: ExecutionResult) -> None:
    attempt = Attempt(turn=1, code="x", result=result)
    again = Attempt.model_validate_json(attempt.model_dump_json())
    assert again.result == result
    assert all(type(r) is TestResult for r in again.result.test_results or [])


def test_a_record_checks_the_result_it_reads() -> None:
    """Reading is as strict as it was: a wrong status or type is an error, an unknown field is ignored
    (docs/records.md, "The record version rule")."""
    adapter = TypeAdapter(ExecutionResult)
    assert adapter.validate_json('{"status": "ok", "added_later": 1}') == ExecutionResult(status="ok")
    with pytest.raises(ValidationError, match="status"):
        adapter.validate_json('{"status": "fine"}')
    with pytest.raises(ValidationError, match="test_results"):
        adapter.validate_json('{"status": "ok", "test_results": [{"index": 0, "input": "()", "status": "won"}]}')
    with pytest.raises(ValidationError, match="return_code"):
        adapter.validate_json('{"status": "ok", "return_code": "zero"}')


def test_all_passed_needs_a_test_and_every_test() -> None:
    assert not ExecutionResult(status="ok").all_passed
    assert not ExecutionResult(status="ok", tests_passed=0, tests_total=0).all_passed
    assert not ExecutionResult(status="ok", tests_passed=1, tests_total=2).all_passed
    assert ExecutionResult(status="ok", tests_passed=2, tests_total=2).all_passed
    assert TestResult(index=0, input="()", status="passed").passed
    assert not TestResult(index=0, input="()", status="error").passed
