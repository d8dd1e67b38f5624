"""``spade_llm.serve.netguard``: the rules every spade server shares (framing, descriptors, connection slots,
JSON size), on their own; ``test_httpserve.py`` holds them over real sockets."""

from __future__ import annotations

import asyncio
import itertools
import json
import resource
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_llm.serve.netguard import (
    FD_RESERVE,
    MAX_ACCEPT_BATCH,
    SINGLE_FIELDS,
    AcceptErrors,
    ConnectionSlots,
    JSONMeter,
    JSONTooLarge,
    accept_batch,
    check_json_items,
    connection_cap,
    count_json_items,
    default_max_connections,
    framing_error,
    head_error,
    raise_open_files_limit,
)

# -- framing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [("Content-Length", "12")],
        [("content-length", " 0 ")],
        [("Transfer-Encoding", "chunked")],
        [("TRANSFER-ENCODING", "Chunked")],
        [("Host", "a"), ("Accept", "x"), ("Accept", "y"), ("Content-Length", "3")],
    ],
)
def test_sound_framing_passes(headers: list[tuple[str, str]]) -> None:
    assert framing_error(headers) is None


@pytest.mark.parametrize(
    ("headers", "needle"),
    [
        ([("Content-Length", "5"), ("Content-Length", "5")], "more than one Content-Length"),
        ([("Content-Length", "5"), ("content-length", "6")], "more than one Content-Length"),
        ([("Content-Length", "5, 5")], "bad Content-Length"),
        ([("Content-Length", "+5")], "bad Content-Length"),
        ([("Content-Length", "-1")], "bad Content-Length"),
        ([("Content-Length", "0x5")], "bad Content-Length"),
        ([("Content-Length", "")], "bad Content-Length"),
        ([("Content-Length", "\u0663")], "bad Content-Length"),  # an Arabic-Indic 3: isdigit(), not ASCII
        ([("Content-Length", "5"), ("Transfer-Encoding", "chunked")], "both Content-Length and Transfer-Encoding"),
        ([("Transfer-Encoding", "chunked"), ("Content-Length", "5")], "both Content-Length and Transfer-Encoding"),
        ([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")], "more than one Transfer-Encoding"),
        ([("Transfer-Encoding", "gzip, chunked")], "not supported"),
        ([("Transfer-Encoding", "identity")], "not supported"),
        ([("Transfer-Encoding", "chunked, chunked")], "not supported"),
    ],
)
def test_smuggling_framing_is_refused(headers: list[tuple[str, str]], needle: str) -> None:
    problem = framing_error(headers)
    assert problem is not None and needle in problem, problem


@pytest.mark.parametrize("name", sorted(SINGLE_FIELDS))
def test_a_field_the_access_rules_read_may_come_once(name: str) -> None:
    """Two ``Authorization`` (or ``Host``, ``Origin``, ``Content-Type``) headers, in any case, equal or
    not: a 400 from every server (serve-env's guard kept the last of two, httpserve refused them)."""
    for first, second in (("a", "b"), ("a", "a")):
        problem = head_error([("X-Other", "1"), (name.title(), first), (name.upper(), second)])
        assert problem is not None and f"more than one {name!r}" in problem, problem
    assert head_error([(name.title(), "a"), ("Accept", "x"), ("Accept", "y")]) is None
    assert head_error([(name, "a"), ("Content-Length", "1"), ("Content-Length", "1")]) == framing_error(
        [("Content-Length", "1"), ("Content-Length", "1")]
    )


# -- descriptors --------------------------------------------------------------------------------------------


def test_the_default_cap_leaves_descriptors_for_the_work() -> None:
    assert default_max_connections(1024) == 768  # a quarter kept back
    assert default_max_connections(20_000) == 15_000
    assert default_max_connections(4096) == 3072
    assert default_max_connections(128) == 16  # never below 16
    for limit in (64, 300, 1024, 5000, 65536, 1 << 20):
        cap = default_max_connections(limit)
        assert cap >= 16 and (cap <= limit - FD_RESERVE or cap <= limit * 3 // 4)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY:
        assert default_max_connections() == default_max_connections(soft)


@given(st.integers(min_value=1, max_value=1 << 22), st.integers(min_value=16, max_value=1 << 21))
def test_an_asked_cap_is_never_past_the_descriptors(asked: int, open_files: int) -> None:
    """One rule for the three servers: the default, or the cap asked for when it is lower; never above
    the default (the first round took serve-sandbox's and serve-fake's ``--max-connections`` as given)."""
    room = default_max_connections(open_files)
    assert connection_cap(None, open_files) == room
    assert connection_cap(asked, open_files) == min(asked, room)
    with pytest.raises(ValueError, match="at least 1"):
        connection_cap(0, open_files)


@given(st.integers(min_value=16, max_value=1 << 21))
def test_an_accept_batch_fits_in_the_descriptors_kept_back(open_files: int) -> None:
    cap = default_max_connections(open_files)
    batch = accept_batch(open_files, cap)
    assert 8 <= batch <= MAX_ACCEPT_BATCH
    if open_files - cap >= 32:
        assert cap + batch <= open_files - (open_files - cap) * 3 // 4  # a quarter of the reserve at most


def test_failed_accepts_are_told_once_a_minute() -> None:
    told: list[str] = []
    loop = asyncio.new_event_loop()
    try:
        handler = AcceptErrors(told.append, every_s=60.0)
        context = {"message": AcceptErrors.MESSAGE, "exception": OSError(24, "Too many open files")}
        for _ in range(1000):
            handler(loop, context)
        assert handler.count == 1000 and len(told) == 1 and "Too many open files" in told[0]
        handler._last -= 61  # a minute on: the next one tells how many came meanwhile
        handler(loop, context)
        assert len(told) == 2 and "1000 time(s)" in told[1]
        handler(loop, {"message": "something else"})  # the loop's default handler tells anything else
        assert handler.count == 1001 and len(told) == 2
    finally:
        loop.close()


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    """In a child whose soft limit is 64 below a hard limit of 256: raised to 256."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 256))

    code = (
        "import resource\nfrom spade_llm.serve.netguard import raise_open_files_limit\n"
        "print(raise_open_files_limit(), resource.getrlimit(resource.RLIMIT_NOFILE))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=lower, check=True)
    assert done.stdout.split(maxsplit=1) == ["256", "(256, 256)\n"]
    assert raise_open_files_limit() == resource.getrlimit(resource.RLIMIT_NOFILE)[0]  # here: already at the hard


# -- connection slots -----------------------------------------------------------------------------------------


def test_past_the_cap_the_oldest_silent_connection_makes_room() -> None:
    evicted: list[str] = []
    slots = ConnectionSlots(3, lambda conn: evicted.append(str(conn)))
    for conn in ("a", "b", "c"):
        assert slots.admit(conn)
    slots.active("a")  # a has sent its request: kept
    assert slots.admit("d") and evicted == ["b"]
    slots.waiting("a")  # a is idle again, newest of the idle ones
    assert slots.admit("e") and evicted == ["b", "c"]
    assert slots.admit("f") and evicted == ["b", "c", "d"]
    assert len(slots) == 3 and slots.evicted == 3 and slots.refused == 0


def test_when_every_connection_is_busy_the_newcomer_is_refused() -> None:
    slots = ConnectionSlots(2, lambda conn: pytest.fail(f"{conn} evicted"))
    for conn in ("a", "b"):
        slots.admit(conn)
        slots.active(conn)
    assert not slots.admit("c") and slots.refused == 1 and len(slots) == 2
    slots.release("a")
    assert slots.admit("c") and len(slots) == 2
    slots.release("a")  # twice, or after an eviction: nothing
    assert len(slots) == 2
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionSlots(0, lambda conn: None)


@settings(max_examples=200, deadline=None)
@given(cap=st.integers(1, 6), ops=st.lists(st.tuples(st.sampled_from("nawr"), st.integers(0, 12)), max_size=80))
def test_the_cap_holds_and_busy_connections_are_never_evicted(cap: int, ops: list[tuple[str, int]]) -> None:
    """Any order of newcomers (n), whole requests (a), idling (w) and closes (r)."""
    live: dict[int, str] = {}  # connection -> "waiting" | "busy", as the caller knows it
    evicted: list[int] = []

    def evict(conn: Any) -> None:
        assert live.pop(conn) == "waiting", "a busy connection was evicted"
        evicted.append(conn)

    slots = ConnectionSlots(cap, evict)
    fresh = 100
    for op, pick in ops:
        if op == "n":
            fresh += 1
            had_waiting = "waiting" in live.values()
            full = len(live) >= cap
            admitted = slots.admit(fresh)
            assert admitted == (not full or had_waiting)
            if admitted:
                live[fresh] = "waiting"
        elif live:
            conn = sorted(live)[pick % len(live)]
            if op == "a":
                slots.active(conn)
                live[conn] = "busy"
            elif op == "w":
                slots.waiting(conn)
                live[conn] = "waiting"
            else:
                slots.release(conn)
                del live[conn]
        assert len(slots) == len(live) <= cap


# -- JSON size -----------------------------------------------------------------------------------------------


def values_in(value: Any) -> int:
    """What ``count_json_items`` counts: members and elements at any depth, an empty container as one."""
    if isinstance(value, dict):
        return max(1, len(value)) + sum(values_in(v) for v in value.values())
    if isinstance(value, list):
        return max(1, len(value)) + sum(values_in(v) for v in value)
    return 0


TRICKY = st.text(alphabet=st.sampled_from(list('ab,[]{}:"\\ \n\u00e9\U0001f600')), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(TRICKY, children, max_size=5),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans(), compact=st.booleans())
def test_the_count_is_exact_for_any_json(value: Any, ascii_only: bool, compact: bool) -> None:
    """Strings full of commas, brackets, quotes and backslashes count for nothing, however escaped: a
    text passes a limit of exactly its values, and not one less."""
    separators = (",", ":") if compact else (", ", ": ")
    data = json.dumps(value, ensure_ascii=ascii_only, separators=separators).encode()
    true = values_in(value)
    assert count_json_items(data, 10_000) >= true
    assert count_json_items(data, true) == true  # a bound at the limit: exact
    asyncio.run(check_json_items(data, true))
    if true:
        with pytest.raises(JSONTooLarge):
            count_json_items(data, true - 1)
        with pytest.raises(JSONTooLarge):
            asyncio.run(check_json_items(data, true - 1))


def metered(data: bytes, limit: int, cuts: list[int]) -> JSONMeter:
    """A meter fed ``data`` in pieces cut at ``cuts``."""
    meter = JSONMeter(limit)
    edges = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    for start, end in itertools.pairwise(edges):
        meter.feed(data[start:end])
    return meter


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, cuts=st.lists(st.integers(0, 10_000), max_size=4))
def test_a_body_counted_as_it_arrives_gets_the_same_verdict(value: Any, cuts: list[int]) -> None:
    """However the body is cut into pieces, the meter and the check after it pass exactly its values."""
    data = json.dumps(value).encode()
    true = values_in(value)
    asyncio.run(check_json_items(data, true, metered(data, true, cuts)))
    if true:
        with pytest.raises(JSONTooLarge):
            asyncio.run(check_json_items(data, true - 1, metered(data, true - 1, cuts)))


def test_a_body_of_too_many_plain_strings_is_refused_as_it_arrives() -> None:
    """10,000 map entries against a limit of 100: refused within its first pieces, the rest unread."""
    data = json.dumps({f"k{i}": None for i in range(10_000)}).encode()
    meter = JSONMeter(100)
    fed = 0
    with pytest.raises(JSONTooLarge):
        for start in range(0, len(data), 1024):
            meter.feed(data[start : start + 1024])
            fed += 1
    assert fed * 1024 < len(data) // 20
    escaped = json.dumps({f'k"{i}': None for i in range(10_000)}).encode()  # escaped quotes: only the end tells
    meter = metered(escaped, 100, [len(escaped) // 2])
    with pytest.raises(JSONTooLarge):
        asyncio.run(check_json_items(escaped, 100, meter))
    asyncio.run(check_json_items(escaped, 10_000, metered(escaped, 10_000, [7])))


def test_the_count_takes_the_precise_path_where_strings_hold_commas() -> None:
    one_string = json.dumps([',"\\' * 100_000]).encode()  # 300,000 commas, escaped quotes and backslashes
    assert count_json_items(one_string, 10) == 1
    asyncio.run(check_json_items(one_string, 10))
    crowd = json.dumps({f"k{i}": None for i in range(1000)}).encode()
    with pytest.raises(JSONTooLarge, match="more than 999 values"):
        count_json_items(crowd, 999)


def test_more_strings_than_values_allow_is_too_large() -> None:
    """Strings with no comma between them is not JSON, but must not cost a step per string either."""
    data = b"[" + b'""' * 50_000 + b"]"
    with pytest.raises(JSONTooLarge):
        count_json_items(b"[" + b'"a,",' * 10 + b'""' * 50_000 + b"]", 20)
    assert count_json_items(data, 10) == 1  # no comma at all: the quick bound holds


def test_the_check_gives_the_event_loop_back_while_it_counts() -> None:
    """A body that needs every pass of the precise count: another task gets a turn between them."""

    async def race() -> int:
        turns = 0
        done = False

        async def ticker() -> None:
            nonlocal turns
            while not done:
                turns += 1
                await asyncio.sleep(0)

        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        body = json.dumps({"numbers": list(range(300_000)), "text": "a,b\\" * 1_000_000}).encode()
        with pytest.raises(JSONTooLarge):
            await check_json_items(body, 100_000)
        done = True
        await task
        return turns

    assert asyncio.run(race()) >= 4  # one before the check, then one between each two of its passes
