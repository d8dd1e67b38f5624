"""The leak detector: whether the text a solver is shown hands over a hidden test, input and answer.

Why: a task whose description says ``f(3) -> 9`` while ``f(3) == 9`` is one of its hidden tests
pays a solver for copying, not solving, and a policy trained on such tasks learns to copy. Models
write such lines readily ("Example: ..."), so every proposal is checked (the kinds' ``run_gates``
rejects it as ``leaks_hidden_test``; an imported benchmark is reported instead).

What counts: a hidden test's *input together with its expected value*, tied by a call or a
connector within a short span, after normalising literals and whitespace. Forms (``EXP`` the
expected value, ``ARGS`` the arguments, each in any literal spelling below):

* ``call``: ``name(ARGS)`` then a connector then ``EXP``: ``f(3) -> 9``, ``f(3) == 9``,
  ``f(3) = 9``, ``f(3): 9``, ``f(3) returns 9``, ``f(3) is equal to 9``, ``f(3) should return the
  list [9]``, ``=>``, ``→``, ``-> result = 9``, ``# 9``, ``# returns 9`` or ``// 9`` (a comment
  after a call), IPython's ``Out[1]: 9``, keyword arguments (``f(n=3)``), a one-list call unpacked
  (``f(1, 2)`` for ``f([1, 2])``), markdown backticks;
* ``doctest``: ``>>> f(3)`` (or ``>>> print(f(3))``) with ``EXP`` on the next line;
* ``bare``: ``ARGS`` then an arrow or a verb then ``EXP``: ``3 -> 9``, ``1, 2 -> 3``,
  ``(1, 2) gives 3``, ``3 should return 9``, ``3 as input gives 9``, ``[4, 1, 3] should become
  [1, 3, 4]``, ``3 squared is 9``, ``'abc' reversed is 'cba'`` (no bare ``=``, ``:`` or ``is``:
  prose is full of them);
* ``io``: ``input 3 gives 9``, ``Input: 3, Output: 9`` (a line apart, or ``/`` between),
  ``Sample input: 3 Sample output: 9``, ``for 3 the answer is 9``, ``given n = 3, it returns 9``,
  ``When n is 3, the function returns 9``, ``if n = 3 then the answer is 9``, ``given the list
  1, 2, 3 it returns 6``, ``Let n = 3; then f(n) = 9``, ``for input 3, expect 9``,
  ``{"input": [3], "output": 9}``, ``{"input": "(3,)", "expected": 9}``;
* ``noun``: ``the value for 3 is 9``, ``the result of f on [4, 1, 3] is [1, 3, 4]`` (the value
  ends its clause: ``the value for 3 is 9 times ...`` is prose);
* ``maps``: ``maps 3 to 9``, ``turns [4, 1, 3] into [1, 3, 4]`` (likewise: ``convert 3 to 9-bit``);
* ``keyed``: every argument named, then a colon: ``a=2, b=5: 7``;
* ``op``: two or more arguments joined by an operator: ``2 + 5 = 7``, ``2 * 5 is 10``;
* ``chain``: a worked example ending in the value: ``f(3) = 3 * 3 = 9``, ``[1, 2, 3]: 1 + 4 + 9 = 14``;
* ``assert``: a test written out: ``assertEqual(f(3), 9)``, ``expect(f(3)).toBe(9)``;
* ``table``: a markdown row ``| 3 | 9 |`` or ``| f(3) | 9 |``;
* ``reverse``: ``9 == f(3)``;
* ``after``: the value first, then its input ending its clause: ``returns 9 for 3``, ``gives 9
  when n is 3`` (``returns 9 for 3 items`` is prose);
* ``near``: a distinctive input (``_distinctive``: a list or dict of two items or more, a string
  of 4 characters or more, quoted, a number of 3 digits or more) with the expected value at most
  ``_NEAR_GAP`` characters after it in the same sentence, whatever the words between
  (``[4, 1, 3] is returned as [1, 3, 4]``, ``sum of [1, 2, 3] is 6``); when the value is not
  distinctive itself, another literal between them (a digit, a bracket, a quote) parts them too.

Literal spellings: JSON's or Python's (``true``/``True``, ``null``/``None``, ``'a'``/``"a"``),
any whitespace between tokens (``[1,2]`` is ``[1, 2]``), a tuple or a list alike (a one-argument
call ``f((1, 2))`` or ``f([1, 2])``; ``(3,)`` or ``[3]`` for the bare arguments of a one-argument
test), an int written ``9.0``, an integral float written ``9``, a float rounded to 2 to 6 decimals,
a word-like string unquoted (``abc -> cba``). Boundaries keep numbers whole (``13 -> 9`` is not
``3 -> 9``, nor ``3 -> 9.5`` ``3 -> 9``), and each form needs its connector: two numbers that
merely both appear, however close, are not a leak. A literal longer than ``MAX_LITERAL_CHARS`` is
matched verbatim (whitespace, quotes and JSON words normalised) with its input shortly before it.

Blanks: a run of 32 or more counts as one (a tie padded with a page of spaces is still a tie).

Pure and fast: text and values in, findings out; nothing runs. A test whose arguments' or
expected value's digits or words are nowhere in the text is skipped at once, before any of its
patterns is built (``_may_show``); else its expected value is searched (one small
pattern), each connector is read once per text and only near a value, and the arguments' own
pattern is compiled and run, over a bounded window, only where a value follows a connector; a
distinctive input is looked for once, and the value only in the few characters after each
occurrence; a form's own words (``input``, ``=``, an operator...) are looked up before its pattern
runs. Under a millisecond for a task's description and tests; a few hundred milliseconds at most for
100 kB of text built to be slow (connectors and values repeated, long blank runs, deep brackets):
``benchmarks/bench_leaks.py``.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Final

__all__ = ["MAX_LITERAL_CHARS", "Leak", "Secret", "describe", "find_leaks"]

MAX_LITERAL_CHARS: Final = 1_000
"""Longest literal (input or expected, as ``repr``) matched in all its spellings; a longer one is
matched verbatim, normalised (its spellings would make a pattern as long as a page)."""
_MAX_DEPTH: Final = 12
"""Deepest nesting spelled in all its forms (deeper literals are matched verbatim)."""
_EXCERPT_CHARS: Final = 80
_VERBATIM_GAP: Final = 60
"""Characters allowed between a long literal's input and its expected value (the verbatim match)."""


@dataclass(frozen=True)
class Secret:
    """A hidden test as the detector needs it: its index in the task's tests, its arguments and
    its expected value (both Python values)."""

    index: int
    args: tuple[Any, ...]
    expected: Any


@dataclass(frozen=True)
class Leak:
    """One hidden test found in the shown text."""

    test: int
    """Index of the hidden test in the task's ``tests``."""
    part: str
    """Which shown text holds it: ``description``, ``public tests``, ``program``, ``tags``..."""
    start: int
    """Offset of the match in that text (long blank runs counted as one)."""
    form: str
    """The form (see the module's docstring): ``call``, ``doctest``, ``bare``, ``io``, ``noun``, ``maps``,
    ``keyed``, ``op``, ``chain``, ``table``, ``reverse``, ``after``, ``near`` or ``verbatim``."""
    excerpt: str
    """The matched text (shortened)."""

    def describe(self) -> str:
        return f"hidden test {self.test} shown in the {self.part}: {self.excerpt!r}"


def describe(leaks: Sequence[Leak]) -> str:
    """One line for a rejection's ``detail``: which hidden tests show, and where."""
    if not leaks:
        return ""
    tests = sorted({leak.test for leak in leaks})
    first = leaks[0].describe()
    more = f" ({len(tests)} hidden tests shown: {', '.join(map(str, tests))})" if len(tests) > 1 else ""
    return (
        f"{first}{more}; the solver must not see a hidden test's input with its answer: "
        "leave it out of the text, or make it one of the public tests (the first ones)"
    )


def find_leaks(shown: Mapping[str, str], secrets: Sequence[Secret], *, code: Collection[str] = ()) -> list[Leak]:
    """The hidden tests of ``secrets`` that the texts of ``shown`` (name -> text) show, the first
    place each one shows, in test order. Texts are searched one by one (a form never spans two).

    ``code`` names the texts that are program code (a program the solver reads): there only the
    forms with a call count (``assert f(3) == 9``, ``print(f(3))  # 9``, a doctest), since code is
    full of bare values after verbs (``return 3`` then ``return 9``); its comments and strings are
    prose, to be given as a text of their own.
    """
    found: list[Leak] = []
    texts = {part: _Text(_squeeze(text)) for part, text in shown.items() if text}
    compacts: dict[str, str] = {}
    seen: dict[str, Leak | None] = {}  # a test repeated is searched once
    for secret in secrets:
        key = _safe_repr((secret.args, secret.expected))
        if key and key in seen:
            earlier = seen[key]
            if earlier is not None:
                found.append(replace(earlier, test=secret.index))
            continue
        if not any(_may_show(secret, text.text) for text in texts.values()):
            seen[key] = None  # nothing every spelling holds is there: no pattern is built or run
            continue
        spelled = _Spelled.of(secret)
        leak = None
        for part, text in texts.items():
            if spelled is None:
                if part not in compacts:
                    compacts[part] = _compact(text.text)
                leak = _verbatim(secret, part, compacts[part])
            else:
                leak = spelled.search(part, text, code=part in code)
            if leak is not None:
                found.append(leak)
                break
        seen[key] = leak
    return found


# -- searching -------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError):  # a pattern too large for the engine
        return None


class _Text:
    """One shown text and where its connectors are, found once for every hidden test: ``gap(form,
    p)`` is where a connector of ``form`` that ends at ``p`` (where a value starts) starts. Found a
    block of text at a time, on first need, so a long text is read only where values occur."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._gaps: dict[tuple[str, int], dict[int, int]] = {}
        self._cues: dict[str, list[int]] = {}
        self._sites: dict[int, list[tuple[str, int, tuple[str, ...]]]] = {}

    def sites(self, p: int) -> list[tuple[str, int, tuple[str, ...]]]:
        """(form, where its connector starts, the text before the connector with closers taken off
        its end) of each form whose connector ends at ``p``: the same for every hidden test."""
        found = self._sites.get(p)
        if found is None:
            found = []
            gaps: dict[str, int | None] = {}  # forms share connectors (``_SHARED``): each found once
            befores: dict[int, tuple[str, ...]] = {}  # and different ones often start alike (an arrow)
            for form in _FORMS:
                family = _SHARED.get(form, form)
                if family not in gaps:
                    gaps[family] = self.gap(family, p)
                gap = gaps[family]
                if gap is not None:
                    if gap not in befores:
                        befores[gap] = _before(self.text, max(0, gap - _TAIL_CHARS), gap)
                    found.append((form, gap, befores[gap]))
            self._sites[p] = found
        return found

    def gap(self, form: str, p: int) -> int | None:
        form = _SHARED.get(form, form)
        block = p // _BLOCK
        key = (form, block)
        if key not in self._gaps:
            lo, hi = block * _BLOCK, (block + 1) * _BLOCK
            found = _CONNECTORS[form].finditer(self.text, max(0, lo - _LONGEST_CONNECTOR), hi + 1)
            self._gaps[key] = {m.end(): m.start() for m in found if lo <= m.end() <= hi}
        return self._gaps[key].get(p)

    def cued(self, cue: str, lo: int, hi: int) -> bool:
        """Whether a word of ``_CUES[cue]`` (an ``input``-like word, an operator...) starts in
        ``text[lo:hi]``: each kind found once in the whole text, then looked up."""
        starts = self._cues.get(cue)
        if starts is None:
            starts = self._cues[cue] = [m.start() for m in _CUES[cue].finditer(self.text)]
        i = bisect_left(starts, lo)
        return i < len(starts) and starts[i] < hi


class _Spelled:
    """One hidden test's patterns. The expected value is searched first (a small pattern: most
    hidden values are nowhere in the text); only where it occurs right after a connector (found once
    per text) is the text before that read for the arguments, with this test's own pattern,
    compiled when first needed and run over a bounded window. A distinctive input is then looked
    for on its own, with the value just after it (``near``)."""

    def __init__(self, secret: Secret, exp: str, args: list[str], args_chars: int, near: str | None) -> None:
        self.secret = secret
        self.exp = exp
        self.args = args
        self.window = 80 + 4 * args_chars
        """How far before its connector a form may start (words, spaces and spellings aside)."""
        self.span = 40 + 4 * args_chars
        """How far before its connector the arguments alone may start (their names and spellings aside)."""
        found = _tokens(secret.args)
        self.tokens = sorted(set(found), key=len, reverse=True)[:3]
        """Text every spelling of the arguments holds (digits, words): a window without them is skipped."""
        last = _tokens(_last_scalar(secret.args))
        self.tail = last[-1].rstrip(_CLOSERS) or None if last else None
        """The last argument's own text (its last item's, for a list), which every form writes just
        before its connector: a connector without it close before is skipped."""
        self.items = _items(secret.args)
        """A one-list test's items, spelled one by one (``f(1, 2)``, ``given 1, 2``), or None."""
        self.near = near
        """The pattern of a distinctive input in the ``near`` form (None: the input is not distinctive)."""
        self.exp_distinctive = _distinctive(secret.expected)
        self.exp_chars = len(_safe_repr(secret.expected))
        self._lefts: dict[str, re.Pattern[str] | None] = {}

    @classmethod
    def of(cls, secret: Secret) -> _Spelled | None:
        """The patterns of ``secret``, or None when a literal is too long or deep to spell."""
        args_text, exp_text = _safe_repr(secret.args), _safe_repr(secret.expected)
        if not (0 < len(args_text) <= MAX_LITERAL_CHARS and 0 < len(exp_text) <= MAX_LITERAL_CHARS):
            return None
        exp = _value(secret.expected, 0)
        args = [_value(a, 0) for a in secret.args]
        if exp is None or any(a is None for a in args) or _compiled(_EXP.format(exp=exp)) is None:
            return None
        near = None
        # an input that is its own answer (``f(1000) == 1000``) is no tie: a bound in prose
        # (``n <= 1000, at most 1000``) would read as one
        if any(_distinctive(a) for a in secret.args) and exp_text not in map(_safe_repr, secret.args):
            quoted = [_value(a, 0, words=False) for a in secret.args]
            if all(q is not None for q in quoted):
                spelled = [q for q in quoted if q is not None]
                body = spelled[0] if len(spelled) == 1 else _bare_args(spelled, keyword=_KEYWORD)
                near = rf"{_NEAR_START}{_MARK}{body}(?![\w.])"
        return cls(secret, exp, [a for a in args if a is not None], len(args_text), near)

    def left(self, form: str) -> re.Pattern[str] | None:
        """The pattern of what stands before the connector in ``form``, ending where it ends (for
        ``reverse`` and ``after``, of what follows the value)."""
        if form not in self._lefts:
            pattern = self._pattern(form)
            self._lefts[form] = _compiled(pattern) if pattern else None
        return self._lefts[form]

    def _pattern(self, form: str) -> str:
        joined = _join(self.args, _COMMA, keyword=_KEYWORD)
        if self.items is not None:
            joined = rf"(?:{joined}|{_join(self.items, _COMMA, keyword='')})"
        call = _CALL.format(args=joined)
        bare = _bare_args(self.args, keyword=_KEYWORD, items=self.items)
        named = _bare_args(self.args, keyword=_IO_KEYWORD, items=self.items)
        if form == "doctest":
            return rf">>>\s*(?:print\(\s*)?{call}\s*\)?[^\S\n]*\Z"
        if form == "call":
            return rf"(?:print\(\s*{call}\s*\)|{call})\s*{_MARK}\s*[,:]?\s*\Z"
        if form == "bare":
            return rf"{_BARE_START}{_MARK}{bare}\s*{_MARK}\s*,?\s*\Z"
        if form == "io":
            return rf"{_IO_IN}{named}{_IO_MID}\Z"
        if form == "noun":
            return rf"{_NOUN_IN}{_MARK}{named}{_MARK}\s*[,;]?\s*\Z"
        if form == "keyed":
            return rf"{_BARE_START}{_MARK}{_join(self.args, _LISTED, keyword=_NAME)}{_MARK}\s*\Z"
        if form == "op":
            if len(self.args) < 2:
                return ""
            return rf"{_BARE_START}{_MARK}{_OP.join(self.args)}{_MARK}\s*\Z"
        if form == "chain":
            return rf"(?:print\(\s*{call}\s*\)|{call}|{_BARE_START}{_MARK}{bare})\s*{_MARK}\s*\Z"
        if form == "table":
            cells = _join(self.args, _CELL, keyword=_KEYWORD)
            return rf"\|\s*{_MARK}(?:{call}|{cells}){_MARK}\s*\Z"
        if form == "maps":
            return rf"{_MAPS_IN}{_ARG_NOUN}{_MARK}{named}{_MARK}\s*\Z"
        if form == "assert":
            return rf"(?<![\w.])(?:[A-Za-z_][\w.]*\.)?(?i:assert\w*!?|expect|check)\s*\(\s*{call}\s*\Z"
        if form == "after":  # what follows the value: its input, then the end of a clause
            return rf"{_MARK}\s*{_IO_IN}{named}{_MARK}{_CLAUSE_END}"
        return rf"\s*={{1,2}}\s*{_MARK}{call}"  # reverse: what follows the value

    def search(self, part: str, text: _Text, *, code: bool = False) -> Leak | None:
        exp = _compiled(_EXP.format(exp=self.exp))
        if exp is None or any(token not in text.text for token in self.tokens):
            return None
        for m in exp.finditer(text.text):
            tied = self._tied(text, m.start(), m.end(), code)
            if tied is not None:
                form, start, end = tied
                return self._leak(part, text, form, start, end)
        if self.near is not None and not code:
            near = self._near(text, exp)
            if near is not None:
                return self._leak(part, text, "near", *near)
        return None

    def _leak(self, part: str, text: _Text, form: str, start: int, end: int) -> Leak:
        excerpt = " ".join(text.text[start:end].split())
        return Leak(self.secret.index, part, start, form, _short(excerpt))

    def _tied(self, text: _Text, p: int, q: int, code: bool) -> tuple[str, int, int] | None:
        """(form, start, end) of a form that ties the value at ``text[p:q]`` to its arguments. Cheap
        tests first (a connector ends here, the last argument's text ends just before it, every
        argument's text is near, the form's own words are there), the arguments' own pattern last."""
        s = text.text
        near: dict[int, bool] = {}  # forms share connectors: the arguments' text is looked for once
        for form, gap, rest in text.sites(p):
            if form not in _CALLS and (code or not self.args):  # no call: not in code, and
                continue  # with no argument at all any value after an arrow would be one
            if gap not in near:
                start = max(0, gap - self.window)
                near[gap] = (self.tail is None or _ends_with(rest, self.tail)) and all(
                    s.find(token, start, gap) >= 0 for token in self.tokens
                )
            lo = max(0, gap - (self.window if form in _WORDY else self.span))
            if not near[gap] or not self._cued(form, text, lo, gap):
                continue
            end = q
            if form in ("noun", "maps") and not _ENDS_CLAUSE.match(s, q):  # "the value for 3 is 9 times",
                continue  # "convert 3 to 9-bit form"
            if form == "table":
                after = _TABLE_END.match(s, q)
                if after is None:
                    continue
                end = after.end()
            left = self.left(form)
            m = left.search(s, lo, gap) if left else None
            if m is not None:
                return form, m.start(), end
        if _REVERSE_NEXT.match(s, q):
            right = self.left("reverse")
            m = right.match(s, q) if right else None
            if m is not None:
                return "reverse", p, m.end()
        verb = text.gap("after", p)
        if verb is not None and s[verb].isalpha() and self.args and not code and _AFTER_NEXT.match(s, q):
            right = self.left("after")  # a verb before the value (``returns 9``), its input after it
            m = right.match(s, q) if right else None
            if m is not None:
                return "after", verb, m.end()
        return None

    def _cued(self, form: str, text: _Text, lo: int, gap: int) -> bool:
        """Whether ``text[lo:gap]`` holds what ``form`` cannot do without (its introducing word, its
        prompt, its ``=``, its operator): the arguments' pattern is run only then."""
        if form == "op" and len(self.args) < 2:
            return False
        return form not in _CUES or text.cued(form, lo, gap)

    def _near(self, text: _Text, exp: re.Pattern[str]) -> tuple[int, int] | None:
        """(start, end) of a distinctive input with the expected value at most ``_NEAR_GAP``
        characters after it, in the same sentence: each occurrence of the input is read once, the
        value looked for only in the span after it. A value that is not distinctive itself must not
        have another literal between it and the input either."""
        pattern = _compiled(self.near or "")
        if pattern is None:
            return None
        s = text.text
        for m in pattern.finditer(s):
            end = m.end()
            limit = min(len(s), end + _NEAR_GAP + 4 * self.exp_chars + 8)
            found = exp.search(s, end, limit)
            while found is not None and exp.match(s, found.start()) is None:  # cut short by the limit
                found = exp.search(s, found.start() + 1, limit)
            if found is None or found.start() - end > _NEAR_GAP:
                continue
            if _SENTENCE_END.search(s, end, found.start()):
                continue
            if self.exp_distinctive or not _LITERAL.search(s, end, found.start()):
                return m.start(), found.end()
        return None


def _may_show(secret: Secret, text: str) -> bool:
    """False when ``text`` cannot show ``secret`` in any form: it is short enough to be spelled (a longer
    literal is matched verbatim, whitespace ignored: ``_verbatim``) and a piece of text every spelling
    of its arguments or of its value holds (``_tokens``) is not in ``text``. Checked before its patterns
    are built: most hidden tests of a benchmark with hundreds are nowhere in its docstring."""
    lengths = (len(_safe_repr(secret.args)), len(_safe_repr(secret.expected)))
    if not all(0 < n <= MAX_LITERAL_CHARS for n in lengths):
        return True
    return all(token in text for token in _tokens(secret.args)) and all(
        token in text for token in _tokens(secret.expected)
    )


def _verbatim(secret: Secret, part: str, compact: str) -> Leak | None:
    """A long literal: an input spelling in the compact text and an expected spelling just after it.
    The longer side's (rarer) occurrences are walked, the other looked for in a window beside each."""
    inputs = sorted(_compact_arg_spellings(secret.args), key=len, reverse=True)
    exps = sorted(_compact_spellings(secret.expected), key=len, reverse=True)
    if not inputs or not exps:
        return None
    gap = _VERBATIM_GAP + max(map(len, exps)) + max(map(len, inputs))
    walk_inputs = len(inputs[0]) >= len(exps[0])
    for anchor in inputs if walk_inputs else exps:
        start = compact.find(anchor)
        while start >= 0:
            if walk_inputs:
                beside = compact[start + len(anchor) : start + len(anchor) + gap]
                hit = any(e in beside for e in exps)
            else:
                beside = compact[max(0, start - gap) : start]
                hit = any(i in beside for i in inputs)
            if hit:
                return Leak(secret.index, part, start, "verbatim", _short(anchor))
            start = compact.find(anchor, start + 1)
    return None


_BLANK_RUN = re.compile(r"\s{32,}")


def _squeeze(text: str) -> str:
    """``text`` with each run of 32 blanks or more made one (a line break when it held one): a tie
    padded with a page of spaces is still a tie, and a long run is read once."""
    return _BLANK_RUN.sub(lambda m: "\n" if "\n" in m.group() else " ", text)


def _tokens(value: Any) -> list[str]:
    """Pieces of text every spelling of ``value`` holds: an int's digits, a plain string's own text."""
    t = type(value)
    if t is int:
        digits = _safe_repr(abs(value))
        return [digits] if digits else []
    if t is str:
        return [value] if value.isascii() and value.isprintable() and not set(value) & set("'\"\\") else []
    if t is list or t is tuple:
        return [token for item in value for token in _tokens(item)]
    if t is dict:
        return [token for pair in value.items() for token in _tokens(pair)]
    return []


def _before(text: str, lo: int, hi: int) -> tuple[str, ...]:
    """``text[lo:hi]`` with closers (``_CLOSERS``) taken off its end, and again without a last ``and``
    or ``then``: what a form's last argument must end (``3 -> 0, 2 f(3) -> 0`` does not end with
    ``2`` before its second arrow)."""
    rest = text[lo:hi].rstrip(_CLOSERS)
    tail = rest[-5:].lower()
    for word in ("and", "then"):
        if tail.endswith(word) and not rest[-len(word) - 1 : -len(word)].isalnum():
            return rest, rest[: -len(word)].rstrip(_CLOSERS)
    return (rest,)


def _ends_with(rests: tuple[str, ...], tail: str) -> bool:
    """Whether a text of ``rests`` (see ``_before``) ends with an argument's text, whole (``12`` does
    not end with the argument ``2``; an int's written ``2.0`` too)."""
    for rest in rests:
        if _ends_whole(rest, tail):
            return True
        whole = rest.rstrip("0")
        if whole.endswith(".") and _ends_whole(whole[:-1], tail):
            return True
    return False


def _ends_whole(text: str, tail: str) -> bool:
    if not text.endswith(tail):
        return False
    before = len(text) - len(tail) - 1
    return before < 0 or not (_is_word(tail[0]) and _is_word(text[before]))


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _last_scalar(value: Any) -> Any:
    """The last value written in ``value``'s literal (a list's last item's, a dict's last value's)."""
    while (type(value) is list or type(value) is tuple or type(value) is dict) and value:
        value = list(value.values())[-1] if type(value) is dict else value[-1]
    return value


def _short(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an int too long for repr
        return ""


# -- the grammar -----------------------------------------------------------------------------------

_MARK = r"[`*]{0,3}"
"""Markdown around a literal: `f(3)`, **9**."""
_COMMA = r"\s*,\s*"
_CELL = r"\s*[,|]\s*"
_LISTED = r"\s*(?:,\s*(?:and\s+)?|and\s+|;\s*)"
"""Between arguments listed in prose: ``1, 2``, ``1 and 2``, ``1, and 2``, ``1; 2``."""
_ARROW = r"(?:-{1,2}>|={1,2}>|~>|→|⟶|⇒|⟹|↦|⟼|⇨|➔|➜|➞|➡|⮕)"
_LABEL = r"(?:(?i:result|output|answer|out|res|ans|expected|value|ret|returns?|y)\s*[=:]\s*)?"
"""A name for the value after an arrow: ``-> result = 9``, ``→ y = 9``."""
_VERB = (
    r"(?:returns?(?:\s+(?:back|you|us))?|returning|gives?(?:\s+(?:back|you|us))?|giving|yields?|yielding|outputs?|"
    r"produces?|prints?|"
    r"evaluates?\s+to|results?\s+in|maps?\s+to|becomes?|turns?\s+into|changes?\s+(?:in)?to|goes\s+to|"
    r"ends?\s+up\s+(?:as|being)|equals?|(?:is\s+)?equal\s+to)"
)
_MODAL = (
    r"(?:(?:should|must|will|would|shall|ought\s+to|is\s+expected\s+to|is\s+supposed\s+to)\s+"
    r"(?:return|give|yield|output|produce|evaluate\s+to|equal|become|turn\s+into|end\s+up\s+as|"
    r"be\s+(?:turned|converted|changed|mapped)\s+(?:in)?to|be))"
)
_NOUN = (
    r"(?:(?:the|a|an)\s+)?(?:(?:value|number|integer|int|float|string|str|list|tuple|dict|dictionary|set|"
    r"boolean|bool|result|answer|output)\s+)?"
)
_WORDS = rf"(?:{_MODAL}|{_VERB})"
_DONE = r"(?:(?<!\w)(?:[A-Za-z]{3,}(?:ed|en)|backwards?|in\s+reverse(?:\s+order)?))"
"""What was done to the input before ``is``: ``3 squared is 9``, ``'abc' reversed is 'cba'``."""
_EXPR = r"(?:(?:[\w \t]|\.(?=\d)){0,20}?(?:\*\*|//|[-+*/%^×÷·])){1,6}(?:[\w \t]|\.(?=\d)){0,20}?"
"""A worked computation between ``=`` signs: ``3 * 3``, ``1 + 4 + 9`` (one operator at least)."""
_GATE = r"(?:(?<!\w)(?=[A-Za-z])|(?=[^\w\s]))"
"""Where a connector with words can start: a word's first letter or a sign (every word in a
connector is whole). Checked first, it spares the alternatives at every other character."""


def _connector(pattern: str) -> re.Pattern[str]:
    return re.compile(f"{_GATE}(?:{pattern})")


_CONNECTORS = {
    "call": _connector(
        rf"(?:{_ARROW}\s*{_MARK}\s*{_LABEL}|==|=|:|Out\s*\[\s*\d*\s*\]\s*:"
        rf"|(?:\#|//)[^\S\n]*(?:{_ARROW}|==|=|:|(?i:(?:{_WORDS}|outputs?|results?|answer)(?!\w)[^\S\n]*:?))?"
        rf"|(?i:(?<!\w)(?:{_WORDS}|is|are|was)(?!\w)\s*:?\s*{_NOUN}))\s*{_MARK}\s*"
    ),
    "bare": _connector(
        rf"(?:{_ARROW}\s*{_MARK}\s*{_LABEL}|(?i:(?<!\w){_WORDS}(?!\w)\s*:?\s*{_NOUN})"
        rf"|(?i:{_DONE}\s+(?:is|are|=|==|{_WORDS})(?!\w)\s*:?\s*{_NOUN})"
        rf"|(?i:(?<!\w)as\s+(?:the\s+|an?\s+)?(?:input|argument|parameter)s?\s*,?\s*{_WORDS}(?!\w)\s*:?\s*{_NOUN}))"
        rf"\s*{_MARK}\s*"
    ),
    "io": _connector(
        r"(?i:(?<!\w)(?:(?:the|its|sample|example|expected|correct|desired|resulting|final)\s+){0,2}"
        r"(?:output|result|answer|return(?:\s+value)?|value|expected|out(?=\s*[:=]))(?!\w)"
        r"['\"]?\s*(?:(?:is|should\s+be|will\s+be|would\s+be|must\s+be|of)(?!\w)|=|:)?"
        rf"|(?<!\w)(?:it\s+|the\s+function\s+|this\s+|that\s+|we\s+|you\s+)?(?:(?:should|will|would)\s+)?"
        rf"(?:{_WORDS}|get|see|expect(?:ed)?)(?!\w)\s*:?\s*{_NOUN}"
        rf"|[A-Za-z_][\w.]*\(\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s*\)\s*(?:={{1,2}}|{_ARROW}|(?i:is|returns?|gives?|equals?)(?!\w))"
        rf"|{_ARROW})\s*{_MARK}\s*"
    ),
    "maps": _connector(rf"(?i:(?<!\w)(?:in)?to(?!\w))\s*{_MARK}\s*"),
    "chain": re.compile(rf"(?:={{1,2}}|{_ARROW}|:)[ \t]*{_EXPR}[ \t]*={{1,2}}\s*{_MARK}\s*"),
    "assert": re.compile(r"(?:,|\)\s*\.\s*to(?:Be|Equal|StrictEqual)\s*\()\s*"),
    "table": re.compile(rf"\|\s*{_MARK}\s*"),
    "doctest": re.compile(rf"\n\s*{_MARK}"),
}
"""Each form's connector before a value, from its first character to the value: an arrow, ``==``,
``=``, ``:``, a comment or a verb phrase after a call (and after ``the value for 3``, named
arguments, arguments joined by an operator, and before a value its input follows: ``_SHARED``);
an arrow or a verb after bare arguments (never ``=``, ``:`` or ``is`` alone: prose is full of
them); ``output:``, ``the answer is``, ``it returns``, ``f(n) =`` after ``input 3``; a worked
computation; ``to`` after ``maps 3``; a comma after ``assertEqual(f(3)``; a table's bar; a
doctest's line break. Each begins at a
character that is not a space, so a long run of blanks is read once, not once per blank."""
_WORDY = frozenset({"call", "io", "noun", "maps", "assert", "doctest"})
_CALLS = frozenset({"call", "doctest", "assert"})
"""The forms with a call: the only ones read in program code, and with no argument at all."""
"""The forms with words before the arguments (a name, ``input``...): read over the whole window."""
_SHARED = {"noun": "call", "keyed": "call", "op": "call", "after": "call"}
"""Forms whose connectors are the call's (each form's own pattern then says which fit): found once."""
_TAIL_CHARS = 200
"""How much text before a connector is read for the last argument's own text."""
_CLOSERS = " \t\r\n\f\v)]}'\"`*,;.:/|-–—"
"""What may stand between the last argument's text and its connector: closing brackets and quotes,
a call's ``)``, markdown, a separator (``Input: 3 / Output: 9``), blanks."""
_FORMS = ("call", "io", "bare", "noun", "keyed", "op", "chain", "maps", "assert", "table", "doctest")
"""The forms with a connector before the value and the arguments before that, in the order they are tried."""
_BLOCK = 2048
"""Characters of text whose connectors are found at once."""
_LONGEST_CONNECTOR = 200
"""A connector starting this far before a block still counts for it (words, marks, a computation)."""
_BARE_START = r"(?<![\w.+\-,'\"])(?<![\d\])'\"],\s)"
"""Bare arguments start whole: not inside ``13``, ``-3``, ``1.3``, ``'3'``, nor as the last of a
list of values (``1, 3``), though after a word (``For example, 3 -> 9``)."""
_IO_WORDS = (
    r"(?:inputs?|arguments?|args?|parameters?|given|for|on|with|when\s+given|"
    r"(?:when\s+)?call(?:ed|ing)\s+(?:it\s+)?(?:with|on)|(?:when|whenever|if)(?:\s+(?:given|passed))?|where|"
    r"pass(?:ed|ing)?(?:\s+in)?|applied\s+to|in(?=\s*:)|\{|let|suppose|say|assume|consider)"
)
_IO_WORD = re.compile(rf"(?i:(?<![\w.]){_IO_WORDS}(?!\w))")
_ARG_NOUN = (
    r"(?i:(?:(?:the|a|an)\s+)?(?:input|argument|list|array|string|number|integer|value|word|text|tuple|"
    r"matrix|grid)\s+)?"
)
"""What may name the input after its introducer: ``given the list``, ``for the input``."""
_IO_IN = rf"(?i:(?<![\w.]){_IO_WORDS}(?!\w))['\"]?\s*(?:(?i:is|of)\s+|[=:]\s*)?{_ARG_NOUN}['\"]?{_MARK}"
"""What introduces the arguments in the ``io`` form: ``input``, ``Input:``, ``for``, ``given``,
``when``, ``if``..."""
_IO_MID = rf"{_MARK}['\"]?\s*[,;.:/|\-–—]?\s*(?:(?i:and|then|so)\s+)?['\"]?"
"""Between ``input 3`` and the word that brings its value (``, output``, ``. The answer``, `` / Output``)."""
_NOUN_IN = (
    r"(?i:(?<![\w.])(?:(?:the|its|an?)\s+)?(?:(?:expected|correct|right|desired)\s+)?"
    r"(?:value|result|answer|output|return\s+value|outcome)"
    r"(?:\s+(?:of|from)\s+`?[A-Za-z_][\w.]*(?:\(\))?`?)?"
    r"\s+(?:for|on|at|with|given|when\s+given|when\s+called\s+(?:with|on))(?!\w))\s*" + _ARG_NOUN
)
"""What introduces the arguments in the ``noun`` form: ``the value for``, ``the result of f on``."""
_MAPS_VERBS = r"(?:maps?|mapping|sends?|turns?|converts?|transforms?|changes?)"
_MAPS_IN = rf"(?i:(?<!\w){_MAPS_VERBS}(?!\w))\s+"
"""What introduces the arguments in the ``maps`` form: ``maps 3 to 9``, ``turns [4, 1, 3] into [1, 3, 4]``."""

_KEYWORD = r"(?:[A-Za-z_]\w*\s*[=:]\s*)?"
_IO_KEYWORD = r"(?:['\"]?[A-Za-z_]\w*['\"]?\s*(?:[=:]|(?i:is|equals)(?!\w))\s*)?"
"""An argument's name in prose: ``n = 3``, ``n is 3``, ``"n": 3``."""
_NAME = r"[A-Za-z_]\w*\s*=\s*"
"""An argument's name, required (``keyed``)."""
_OP = r"\s*(?:\*\*|//|<<|>>|[-+*/%^&|×÷·]|(?i:plus|minus|times|mod|xor)(?!\w))\s*"
"""Between arguments joined in a computation: ``2 + 5``, ``2 times 5``."""

_CLAUSE_END = r"(?=\s*(?:[.,;:!?()\[\]{}]|\Z|\n|(?i:and|or|but|while|whereas|since|because|as|so|then)(?!\w)))"
"""Where the input of an ``after`` form, or the value of a ``noun`` or ``maps`` form, ends: a clause's end
(``for 3 items`` is not ``for 3``)."""
_ENDS_CLAUSE = re.compile(_CLAUSE_END)
_CALL = r"(?<![\w.])[A-Za-z_][\w.]*\(\s*{args}\s*\)"
"""A call of any name (``f``, ``obj.method``) with the arguments; ``{args}`` filled per test."""
_EXP = r"(?<![\w.+\-]){exp}(?!\w|\.\d)"
"""The expected value, whole: not the ``3`` of ``13``, ``-3``, ``1.3``, ``3.5`` or ``3x``."""
_TABLE_END = re.compile(_MARK + r"\s*\|")
_REVERSE_NEXT = re.compile(r"\s*={1,2}\s*" + _MARK + r"[A-Za-z_][\w.]*\(")
_AFTER_NEXT = re.compile(rf"{_MARK}\s*(?i:{_IO_WORDS})(?!\w)")
_NEAR_GAP: Final = 60
"""Characters allowed between a distinctive input and its expected value (``near``)."""
_NEAR_START = r"(?<![\w.+\-'\"\[,])(?<![\[,]\s)"
"""A distinctive input starts whole: not inside a longer literal, nor as an item of a list."""
_SENTENCE_END = re.compile(r"[.!?;]\s|\n\s*\n")
"""What parts an input from a value in the ``near`` form: a sentence's end."""
_LITERAL = re.compile(r"[\d\[\]{}()'\"]")
"""What parts an input from a value that is not distinctive, besides: another literal."""


_CUES = {
    "io": _IO_WORD,
    "doctest": re.compile(">>>"),
    "keyed": re.compile("="),
    "noun": re.compile(r"(?i:value|result|answer|output|outcome)"),
    "op": re.compile(r"[-+*/%^&|×÷·<>]|(?i:plus|minus|times|mod|xor)"),
    "maps": re.compile(rf"(?i:{_MAPS_VERBS})"),
    "assert": re.compile(r"(?i:assert|expect|check)"),
}
"""What each form cannot do without before its connector (its ``_cued`` test), found once per text."""


def _join(values: Sequence[str], sep: str, *, keyword: str) -> str:
    joined = sep.join(keyword + v for v in values)
    return joined + r"(?:\s*,)?" if values else ""


def _bare_args(values: Sequence[str], *, keyword: str, items: Sequence[str] | None = None) -> str:
    """The arguments without a call: listed (``1, 2``, ``1 and 2``) or as one tuple or list; a
    one-list test's items listed too (``given 1, 2, 3``)."""
    listed = _LISTED.join(keyword + v for v in values)
    wrapped = rf"[\[(]\s*{_join(values, _COMMA, keyword='')}\s*[\])]"
    unpacked = "|" + _LISTED.join(items) if items else ""
    return rf"(?:{wrapped}|{listed}{unpacked})"


def _items(args: tuple[Any, ...]) -> list[str] | None:
    """The items of a test's one list argument, each spelled, when it has two or more (None else)."""
    if len(args) != 1 or type(args[0]) not in (list, tuple) or len(args[0]) < 2:
        return None
    items = [_value(v, 1) for v in args[0]]
    return None if any(i is None for i in items) else [i for i in items if i is not None]


def _distinctive(value: Any) -> bool:
    """Whether ``value``'s literal is rare in honest prose: a list, tuple, set or dict of two items
    or more (or of one distinctive item), a string of 4 characters or more, a number of 3 digits or
    more, a float written with 3 digits or more. Small numbers, short words, booleans and ``None``
    are everywhere."""
    t = type(value)
    if t is bool or value is None:
        return False
    if t is int:
        return bool(abs(value) >= 100)
    if t is float:
        return math.isfinite(value) and (abs(value) >= 100 or len(repr(abs(value)).strip("0.")) >= 3)
    if t is str:
        return len(value.strip()) >= 4
    if t in (list, tuple, set, frozenset, dict):
        items = list(value.values()) if t is dict else list(value)
        return len(items) >= 2 or (len(items) == 1 and (t is dict or _distinctive(items[0])))
    return len(_safe_repr(value)) >= 4


# -- literal spellings -----------------------------------------------------------------------------

_WORDLIKE = re.compile(r"[A-Za-z0-9_]{2,}")


def _alternatives(spellings: set[str]) -> str:
    return "(?:" + "|".join(re.escape(s) for s in sorted(spellings, key=lambda s: (-len(s), s))) + ")"


def _value(value: Any, depth: int, *, words: bool = True) -> str | None:
    """A pattern matching ``value`` written as a Python or JSON literal, any whitespace between its
    tokens; None when it is too long or deep to spell (or has no literal). ``words``: a word-like
    string may stand without its quotes (``abc -> cba``)."""
    if depth > _MAX_DEPTH:
        return None
    t = type(value)
    if value is None:
        return r"(?:None|null)"
    if t is bool:
        return r"(?:True|true)" if value else r"(?:False|false)"
    if t is int:
        try:
            digits = str(abs(value))
        except ValueError:  # an int too long for str()
            return None
        if len(digits) > MAX_LITERAL_CHARS:
            return None
        return (r"-\s*" if value < 0 else r"\+?") + digits + r"(?:\.0+)?"
    if t is float:
        return _float(value)
    if t is str:
        return _string(value, words=words)
    if t is list or t is tuple:
        items = [_value(v, depth + 1, words=words) for v in value]
        if any(i is None for i in items) or sum(len(i or "") for i in items) > 40 * MAX_LITERAL_CHARS:
            return None
        body = _COMMA.join(i for i in items if i is not None)
        return rf"[\[(]\s*{body}(?:\s*,)?\s*[\])]" if body else r"[\[(]\s*[\])]"
    if t is dict:
        pairs = [(_value(k, depth + 1, words=words), _value(v, depth + 1, words=words)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs) or sum(len(k or "") + len(v or "") for k, v in pairs) > (
            40 * MAX_LITERAL_CHARS
        ):
            return None
        body = _COMMA.join(rf"{k}\s*:\s*{v}" for k, v in pairs)
        return rf"\{{\s*{body}(?:\s*,)?\s*\}}" if body else r"\{\s*\}"
    try:  # sets, bytes, complex numbers...: as Python writes them
        text = repr(value)
    except Exception:
        return None
    if len(text) > MAX_LITERAL_CHARS:
        return None
    return r"\s*".join(re.escape(token) for token in text.split())


def _float(value: float) -> str:
    if math.isnan(value):
        return r"(?:nan|NaN|float\(\s*['\"]nan['\"]\s*\))"
    sign = r"-\s*" if math.copysign(1.0, value) < 0 else r"\+?"  # -0.0 is written with its sign
    size = abs(value)
    if math.isinf(size):
        return sign + r"(?:inf|Infinity|float\(\s*['\"]-?inf['\"]\s*\))"
    spellings = {repr(size)}
    if size.is_integer() and size < 1e16:
        spellings |= {str(int(size)), f"{int(size)}.0"}
    text = repr(size)
    if "e" not in text and "." in text:
        for decimals in range(2, 7):
            rounded = f"{size:.{decimals}f}".rstrip("0")
            if len(rounded) < len(text) and not rounded.endswith("."):
                spellings.add(rounded)
    return sign + _alternatives(spellings)


def _string(value: str, *, words: bool = True) -> str | None:
    if len(value) > MAX_LITERAL_CHARS:
        return None
    loose = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"')
    spellings = {
        repr(value),
        json.dumps(value),
        json.dumps(value, ensure_ascii=False),
        "'" + loose.replace("'", "\\'") + "'",
    }
    quoted = _alternatives(spellings)
    if words and _WORDLIKE.fullmatch(value):  # `abc -> cba`: a word written without its quotes
        return rf"(?:{quoted}|(?<![\w'\"]){re.escape(value)}(?![\w'\"]))"
    return quoted


# -- the verbatim match of long literals ----------------------------------------------------------

_SPACE = re.compile(r"\s+")
_JSON_WORD = re.compile(r"\b(?:true|false|null)\b")
_PYTHON_WORD = {"true": "True", "false": "False", "null": "None"}


def _compact(text: str) -> str:
    """Whitespace out, one kind of quote and bracket, JSON's words as Python's."""
    text = _SPACE.sub("", text).replace('"', "'").replace("(", "[").replace(")", "]")
    return _JSON_WORD.sub(lambda m: _PYTHON_WORD[m.group()], text)


def _compact_spellings(value: Any) -> set[str]:
    out = set()
    for spell in (repr, json.dumps):
        try:
            out.add(_compact(spell(value)))
        except (TypeError, ValueError):
            continue
    out.discard("")
    return out


def _compact_arg_spellings(args: tuple[Any, ...]) -> set[str]:
    try:
        text = repr(tuple(args))
    except ValueError:
        return set()
    whole = _compact(text)  # "[a,b]" (a tuple's parentheses are brackets here), and "a,b" inside
    out = {whole, whole[1:-1].rstrip(",")}
    if len(args) == 1:
        out |= _compact_spellings(args[0])
    out.discard("")
    return out
