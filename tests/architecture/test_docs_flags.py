"""Every flag the README and docs/ show after ``spade COMMAND`` is one that command takes (issue 36):
a renamed or removed flag cannot linger in a page a user copies from."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from spade_llm.cli.flags import build_parser, command_parsers

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, sub-commands included (``prompts check``...), by the words typed."""
    return {words: parser for words, parser in command_parsers(build_parser()).items() if words}


def flags_shown(text: str, names: list[str]) -> list[tuple[str, str]]:
    """(command, flag) for each ``--flag`` after ``spade COMMAND`` in an inline code span or a line of
    a code block that starts with ``spade`` (up to the end of the span, the line or a table bar)."""
    command = re.compile(r"spade (" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b([^`\n|]*)")
    pieces = re.findall(r"`([^`\n]+)`", text) + [
        line for line in text.splitlines() if line.lstrip().startswith("spade ")
    ]
    return [
        (m.group(1), flag)
        for piece in pieces
        for m in command.finditer(piece)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", m.group(2))
    ]


def test_the_scanner_finds_flags_in_spans_tables_and_code_lines() -> None:
    text = (
        "Run `spade run --epochs 2 --out d`.\n"
        "| `spade export R --format sft` | x --not-this |\n"
        "  spade verify t.jsonl --timeout 3\n"
    )
    assert flags_shown(text, ["run", "export", "verify"]) == [
        ("run", "--epochs"),
        ("run", "--out"),
        ("export", "--format"),
        ("verify", "--timeout"),
    ]


def test_every_flag_the_pages_show_is_in_its_commands_help() -> None:
    parsers = commands()
    top = [name for name in parsers if " " not in name]
    shown: set[tuple[str, str]] = set()
    unknown = []
    for page in PAGES:
        for command, flag in flags_shown(page.read_text(encoding="utf-8"), top):
            shown.add((command, flag))
            takes = {s for a in parsers[command]._actions for s in a.option_strings}
            if flag not in takes:
                unknown.append(f"{page.name}: spade {command} {flag}")
    assert unknown == []
    assert len(shown) >= 40 and {c for c, _ in shown} >= {"run", "export", "solve", "serve-env", "serve-sandbox"}


def test_the_readme_lands_and_its_commands_table_names_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 200, f"README.md is {len(lines)} lines: the manual belongs in docs/"
    before_install = readme[: readme.index("## Install")]
    assert "self-play" in before_install and "spade" in before_install  # what spade is, first
    two = readme[readme.index("## Two commands") : readme.index("## A one-minute tour")]
    assert two.count("spade run") >= 2  # offline on the fake model, then against a real endpoint
    table = readme[readme.index("## Commands") :]
    table = table[: table.index("\n## ")]
    named = set(re.findall(r"^\| `spade ([a-z-]+)", table, re.M))
    top = {name for name in commands() if " " not in name}
    assert named == top, f"README's commands table: missing {sorted(top - named)}, extra {sorted(named - top)}"
    assert "<!--" not in readme  # nothing hidden
