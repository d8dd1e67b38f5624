"""The user's cache of pure results (``_util.cache``): what is stored is found again, and a cache that
cannot be read or written is only ever a miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_llm._util import cache


def test_a_stored_value_is_found_again_and_nothing_else_is(tmp_path: Path) -> None:
    key = cache.digest("a task", "3")
    assert cache.load("leaks", key) is None
    cache.store("leaks", key, [1, 4])
    assert cache.load("leaks", key) == [1, 4]
    assert cache.load("leaks", cache.digest("another task", "3")) is None
    assert cache.load("other", key) is None  # namespaces apart
    assert [p.name for p in (cache.cache_dir() / "leaks").iterdir()] == [key]  # no temporary file left


def test_the_folder_is_the_environments_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("SPADE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "spade_llm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "spade_llm"


def test_digests_keep_their_parts_apart() -> None:
    assert cache.digest("ab", "c") != cache.digest("a", "bc")
    assert cache.digest("ab", "c") == cache.digest(b"ab", b"c")
    assert len(cache.digest("x")) == 40


def test_an_unwritable_cache_is_a_miss_not_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPADE_CACHE_DIR", str(blocker))
    cache.store("leaks", "k", [1])  # says nothing, raises nothing
    assert cache.load("leaks", "k") is None


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache.store("leaks", "k", [1])
    (cache.cache_dir() / "leaks" / "k").write_bytes(b"\xff[1,")
    assert cache.load("leaks", "k") is None
