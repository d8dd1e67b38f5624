"""The fake solver's generic mistakes (rewrites of the first ``for`` loop, a syntax slip, a misnamed
function) and the mistakes a variant offers (:func:`mistake_kinds`, :func:`mistake_code`)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from .variant import MISTAKE_KINDS, Variant

_FOR_LINE = re.compile(r"^(?P<indent>[ \t]*)for (?P<target>.+?) in (?P<expr>.+):[ \t]*$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_ALLOCATING = ("append(", "extend(", "insert(", "+= [", "+= ch", '+= "', "+= token", ".add(")


def _first_for(code: str) -> tuple[list[str], int, re.Match[str]] | None:
    lines = code.splitlines()
    for i, line in enumerate(lines):
        match = _FOR_LINE.match(line)
        if match:
            return lines, i, match
    return None


def _block_end(lines: list[str], start: int, indent: int) -> int:
    j = start + 1
    while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
        j += 1
    return j


def _fresh(code: str, *names: str) -> str:
    for name in names:
        if not re.search(rf"\b{name}\b", code):
            return name
    return names[-1] + "_"


def split_top_level(args: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return [p for p in parts if p]


def _generic_off_by_one(code: str) -> str | None:
    """Skip the first element (``xs`` -> ``xs[1:]``) or stop one early (``range(n)`` -> ``range(n - 1)``)."""
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    expr = m["expr"].strip()
    if _IDENT.fullmatch(expr):
        new_expr = f"{expr}[1:]"
    elif expr.startswith("range(") and expr.endswith(")"):
        args = split_top_level(expr[6:-1])
        if len(args) not in (1, 2):
            return None
        stop = args[-1]
        stop = stop[: -len(" + 1")] if stop.endswith(" + 1") else f"{stop} - 1"
        new_expr = f"range({', '.join([*args[:-1], stop])})"
    else:
        return None
    lines[i] = f"{m['indent']}for {m['target']} in {new_expr}:"
    return "\n".join(lines) + "\n"


def _generic_exception(code: str) -> str | None:
    """Index one past the end: ``for x in xs`` -> ``for i in range(len(xs) + 1): x = xs[i]`` (IndexError)."""
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    expr = m["expr"].strip()
    if not _IDENT.fullmatch(expr):
        return None
    indent = m["indent"]
    idx = _fresh(code, "i", "idx", "pos")
    lines[i : i + 1] = [f"{indent}for {idx} in range(len({expr}) + 1):", f"{indent}    {m['target']} = {expr}[{idx}]"]
    return "\n".join(lines) + "\n"


def _generic_infinite_loop(code: str) -> str | None:
    """Turn the first ``for`` into a ``while`` that never advances its index.

    Refused when the loop body allocates on every pass (appends, string growth): such a loop
    would end on the memory limit, and this mistake is meant to end on the time limit.
    """
    found = _first_for(code)
    if not found:
        return None
    lines, i, m = found
    indent, target, expr = m["indent"], m["target"].strip(), m["expr"].strip()
    end = _block_end(lines, i, len(indent))
    body = lines[i + 1 : end]
    if any(token in line for line in body for token in _ALLOCATING):
        return None
    inner = indent + "    "
    if expr.startswith("range(") and expr.endswith(")") and _IDENT.fullmatch(target):
        args = split_top_level(expr[6:-1])
        if len(args) not in (1, 2):
            return None
        start, stop = (args[0], args[1]) if len(args) == 2 else ("0", args[0])
        var = target if target != "_" else _fresh(code, "step", "count")
        head = [f"{indent}{var} = {start}", f"{indent}while {var} < {stop}:"]
    else:
        idx = _fresh(code, "idx", "pos", "cursor")
        if _IDENT.fullmatch(expr):
            seq, head = expr, []
        else:
            seq = _fresh(code, "items", "values", "elements")
            head = [f"{indent}{seq} = list({expr})"]
        head += [f"{indent}{idx} = 0", f"{indent}while {idx} < len({seq}):", f"{inner}{target} = {seq}[{idx}]"]
    lines[i : i + 1] = head
    return "\n".join(lines) + "\n"


_GENERIC_REWRITES: dict[str, Callable[[str], str | None]] = {
    "off_by_one": _generic_off_by_one,
    "exception": _generic_exception,
    "infinite_loop": _generic_infinite_loop,
}


def break_syntax(code: str, entry_point: str, rng: random.Random) -> str:
    """A typo that stops the code from compiling: a missing colon, ``=`` for ``==``, a lost parenthesis."""
    options: list[Callable[[str], str]] = []
    lines = code.splitlines()
    def_line = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(f"def {entry_point}(")), None)
    if def_line is not None:

        def drop_colon(src: str, at: int = def_line) -> str:
            out = src.splitlines()
            out[at] = out[at].rstrip().removesuffix(":")
            return "\n".join(out) + "\n"

        options.append(drop_colon)
    eq_line = next((i for i, ln in enumerate(lines) if re.match(r"\s*(if|elif|while) .* == .*:$", ln)), None)
    if eq_line is not None:

        def single_equals(src: str, at: int = eq_line) -> str:
            out = src.splitlines()
            out[at] = out[at].replace(" == ", " = ", 1)
            return "\n".join(out) + "\n"

        options.append(single_equals)
    paren_line = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("return ") and ln.endswith(")")), None)
    if paren_line is not None:

        def lost_paren(src: str, at: int = paren_line) -> str:
            out = src.splitlines()
            out[at] = out[at][:-1]
            return "\n".join(out) + "\n"

        options.append(lost_paren)
    if not options:
        return code.replace("def ", "def def ", 1)
    return rng.choice(options)(code)


def rename_function(code: str, entry_point: str, alternatives: Sequence[str], rng: random.Random) -> str:
    """Define the function under another plausible name (a synonym, camelCase, ``solution``)."""
    parts = entry_point.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    names = [n for n in (*alternatives, camel, "solution", f"{entry_point}_solution") if n != entry_point]
    other = rng.choice(names)
    return re.sub(rf"\b{re.escape(entry_point)}\b(?=\s*\()", other, code)


def mistake_kinds(variant: Variant, params_index: int) -> list[str]:
    """The mistake kinds available for this variant and parameter choice, in ``MISTAKE_KINDS`` order."""
    reference = variant.code_for(params_index, variant.entry_points[0])
    assert reference is not None
    kinds = []
    for kind in MISTAKE_KINDS:
        universal = kind in ("syntax_error", "wrong_name")
        explicit = variant.code_for(params_index, variant.entry_points[0], kind) is not None
        rewrite = _GENERIC_REWRITES.get(kind) if kind in variant.generic else None
        if universal or explicit or (rewrite is not None and rewrite(reference) is not None):
            kinds.append(kind)
    return kinds


def mistake_code(variant: Variant, params_index: int, entry_point: str, kind: str, rng: random.Random) -> str | None:
    """The wrong code of ``kind`` for this task (None when the kind does not apply to it).

    Explicit per-variant edits win over the generic loop rewrites. Every mistake is built to fail
    at least one of the task's tests (the fixed edge-case inputs are chosen for that); the test
    suite checks it for every variant.
    """
    reference = variant.code_for(params_index, entry_point)
    assert reference is not None
    if kind == "syntax_error":
        return break_syntax(reference, entry_point, rng)
    if kind == "wrong_name":
        return rename_function(reference, entry_point, variant.entry_points, rng)
    explicit = variant.code_for(params_index, entry_point, kind)
    if explicit is not None:
        return explicit
    if kind in variant.generic and kind in _GENERIC_REWRITES:
        return _GENERIC_REWRITES[kind](reference)
    return None
