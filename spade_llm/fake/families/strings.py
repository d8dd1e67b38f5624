"""The ``strings`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _sentence, _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit

_VOWEL_COUNT = Variant(
    family="strings",
    name="vowel_count",
    topic="counting characters",
    difficulty=0.1,
    entry_points=("count_vowels", "vowel_count", "num_vowels"),
    args=("s",),
    statements=(
        "Write a function `$sig` that returns the number of vowels in the string `s`. Vowels are counted "
        "case-insensitively, so `'A'` and `'a'` both count.$y_note",
        "Implement `$sig`: count how many characters of `s` are vowels (a, e, i, o, u), ignoring case.$y_note "
        "Any other character, including digits and punctuation, is ignored.",
        "Given a piece of text `s`, `$sig` should return how many vowels it contains, treating upper- and "
        "lower-case letters alike.$y_note An empty string contains no vowels.",
    ),
    code=_code(
        """
        def $ep(s):
            count = 0
            for ch in s.lower():
                if ch in $vowels_r:
                    count += 1
            return count
        """
    ),
    params=(
        {"vowels": "aeiou", "y_note": ""},
        {"vowels": "aeiouy", "y_note": " For this exercise the letter `y` counts as a vowel too.", "_bump": 0.04},
    ),
    make_input=lambda rng, p, scale: (_sentence(rng, _size(rng, 1, 12, scale)),),
    edges=lambda p: [("",), ("Apple pie",), ("rhythm",), ("AEIOU and sometimes Y",)],
    bugs={
        "edge_case": _edit("for ch in s.lower():", "for ch in s:"),
        "exception": _edit(
            "    for ch in s.lower():\n", "    for i in range(len(s) + 1):\n        ch = s[i].lower()\n"
        ),
        "off_by_one": _edit("for ch in s.lower():", "for ch in s.lower()[1:]:"),
    },
)


def _runs(rng: random.Random, scale: float) -> str:
    letters = "abcxyzAB"
    out: list[str] = []
    for _ in range(_size(rng, 1, 7, scale)):
        ch = rng.choice(letters)
        while out and out[-1][0] == ch:
            ch = rng.choice(letters)
        out.append(ch * _size(rng, 1, 12, scale))
    return "".join(out)


_RUN_LENGTH = Variant(
    family="strings",
    name="run_length",
    topic="run-length encoding",
    difficulty=0.32,
    entry_points=("run_length_encode", "rle_encode", "compress"),
    args=("s",),
    statements=(
        "Write `$sig`, which compresses a string with run-length encoding: every maximal run of the same "
        "character becomes that character followed by the length of the run. $ones_note The empty string "
        "encodes to the empty string.",
        "Implement `$sig` that returns the run-length encoding of `s`: scan the string from left to right and "
        "replace each maximal block of identical characters by the character followed by the block's length. "
        "$ones_note Case matters: `'a'` and `'A'` are different characters.",
        "`$sig` takes a string and returns its run-length encoded form. Consecutive equal characters are "
        "collapsed into the character plus how many times it repeats. $ones_note An empty input gives an "
        "empty output.",
    ),
    code=_code(
        """
        def $ep(s):
            if not s:
                return ""
            parts = []
            current = s[0]
            run = 1
            for ch in s[1:]:
                if ch == current:
                    run += 1
                else:
                    parts.append(current + $fmt)
                    current = ch
                    run = 1
            parts.append(current + $fmt)
            return "".join(parts)
        """
    ),
    params=(
        {"fmt": "str(run)", "ones_note": "Every run is written with its count, even a count of 1."},
        {
            "fmt": '(str(run) if run > 1 else "")',
            "ones_note": "A run of length 1 is written as the bare character, without a count.",
            "_bump": 0.05,
        },
    ),
    make_input=lambda rng, p, scale: (_runs(rng, scale),),
    edges=lambda p: [("",), ("aaabccdddd",), ("abc",), ("zzzzzzzzzzzz",)],
    bugs={
        "exception": _edit('    if not s:\n        return ""\n', ""),
        "edge_case": _edit("            run = 1\n    parts.append(current + $fmt)\n", "            run = 1\n"),
        "off_by_one": _edit(
            "            current = ch\n            run = 1", "            current = ch\n            run = 0"
        ),
        "infinite_loop": _edit(
            "    for ch in s[1:]:\n        if ch == current:\n            run += 1\n",
            "    i = 1\n    while i < len(s):\n        ch = s[i]\n        if ch == current:\n            run += 1\n",
        ),
    },
)


def _palindrome_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 2, 12, scale)
    half = "".join(rng.choice("abcdeklmnorst") for _ in range(n))
    core = half + (rng.choice("xyz") if rng.random() < 0.5 else "") + half[::-1]
    if rng.random() < 0.4:
        i = rng.randrange(len(core))
        core = core[:i] + rng.choice("qwv") + core[i + 1 :]
    out = []
    for ch in core:
        out.append(ch.upper() if rng.random() < 0.3 else ch)
        if rng.random() < 0.2:
            out.append(rng.choice(" ,.!'-" + ("7" if p["pred"] == "isalpha" else " ")))
    return ("".join(out),)


_PALINDROME = Variant(
    family="strings",
    name="palindrome",
    topic="two pointers",
    difficulty=0.24,
    entry_points=("is_palindrome", "is_palindromic_phrase", "reads_same_both_ways"),
    args=("s",),
    statements=(
        "Write `$sig` that returns `True` if `s` is a palindrome when only its $kept are considered and case "
        "is ignored, and `False` otherwise. Spaces and punctuation do not matter; the empty string is a "
        "palindrome.",
        "A phrase is a palindrome if, after dropping every character that is not one of its $kept and "
        "lower-casing the rest, it reads the same forwards and backwards. Implement `$sig` to test this for "
        "the string `s`.",
        "Implement `$sig`. Return whether `s` reads the same in both directions, looking only at $kept and "
        "ignoring upper/lower case (so `'No lemon, no melon'` qualifies).",
    ),
    code=_code(
        """
        def $ep(s):
            chars = [ch.lower() for ch in s if ch.$pred()]
            left, right = 0, len(chars) - 1
            while left < right:
                if chars[left] != chars[right]:
                    return False
                left += 1
                right -= 1
            return True
        """
    ),
    params=(
        {"pred": "isalnum", "kept": "letters and digits"},
        {"pred": "isalpha", "kept": "letters", "_bump": 0.02},
    ),
    make_input=_palindrome_input,
    edges=lambda p: [
        ("",),
        ("A man, a plan, a canal: Panama",),
        ("Racecar",),
        ("hello",),
        ("race 1 car",),
    ],
    bugs={
        "edge_case": _edit("ch.lower() for ch in s", "ch for ch in s"),
        "off_by_one": _edit("len(chars) - 1", "len(chars) - 2"),
        "exception": _edit("len(chars) - 1", "len(s) - 1"),
        "infinite_loop": _edit(
            "            return False\n        left += 1\n        right -= 1\n", "            return False\n"
        ),
    },
)


_LONGEST_UNIQUE = Variant(
    family="strings",
    name="longest_unique",
    topic="sliding window",
    difficulty=0.5,
    entry_points=("longest_unique_substring", "longest_distinct_run", "max_unique_window"),
    args=("s",),
    statements=(
        "Write `$sig` that returns the length of the longest substring of `s` (a contiguous run of "
        "characters) in which no character appears twice. The empty string gives 0.",
        "Implement `$sig`. Among all contiguous substrings of `s` whose characters are all distinct, find the "
        "longest one and return its length.",
        "`$sig` should return the size of the longest window of consecutive characters of `s` that contains "
        "no repeated character. Characters are compared exactly, so `'a'` and `'A'` differ.",
    ),
    code=_code(
        """
        def $ep(s):
            last_seen = {}
            start = 0
            best = 0
            for i, ch in enumerate(s):
                if ch in last_seen and last_seen[ch] >= start:
                    start = last_seen[ch] + 1
                last_seen[ch] = i
                if i - start + 1 > best:
                    best = i - start + 1
            return best
        """
    ),
    make_input=lambda rng, p, scale: (
        "".join(rng.choice("abcdefghijklmnop"[: _size(rng, 3, 14, scale)]) for _ in range(_size(rng, 5, 50, scale))),
    ),
    edges=lambda p: [("",), ("abcabcbb",), ("bbbbb",), ("abba",), ("pwwkew",)],
    bugs={
        "off_by_one": _edit("start = last_seen[ch] + 1", "start = last_seen[ch]"),
        "edge_case": _edit("if ch in last_seen and last_seen[ch] >= start:", "if ch in last_seen:"),
        "exception": _edit("if ch in last_seen and last_seen[ch] >= start:", "if last_seen[ch] >= start:"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _VOWEL_COUNT,
    _PALINDROME,
    _RUN_LENGTH,
    _LONGEST_UNIQUE,
)
"""The strings exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "lower", "strings", "case", "text", "text", 0.02, "convert it to lower case", "$OUT = $IN.lower()", "lowered",
    ),
    _step(
        "letters_only", "strings", "cleaning", "text", "text", 0.05,
        "remove every character that is neither a letter nor a space",
        "$OUT = ''.join(ch for ch in $IN if ch.isalpha() or ch == ' ')", "letters",
        bugs={"edge_case": [("if ch.isalpha() or ch == ' '", "if ch.isalpha()")]},
    ),
    _step(
        "remove_vowels", "strings", "vowels", "text", "text", 0.05,
        "remove the vowels (a, e, i, o, u, in either case)",
        "$OUT = ''.join(ch for ch in $IN if ch.lower() not in 'aeiou')", "consonants",
        bugs={"edge_case": [("ch.lower() not in", "ch not in")]},
    ),
    _step(
        "squeeze", "strings", "runs", "text", "text", 0.1,
        "collapse every run of the same character into one character",
        """
        squeezed = ''
        for ch in $IN:
            if not squeezed or squeezed[-1] != ch:
                squeezed += ch
        $OUT = squeezed
        """,
        "squeezed",
        bugs={
            "off_by_one": [("if not squeezed or squeezed[-1] != ch:", "if squeezed and squeezed[-1] != ch:")],
        },
    ),
    _step(
        "caesar", "strings", "ciphers", "text", "text", 0.15,
        "shift every lower-case letter $k places forward in the alphabet, wrapping around from z to a (other "
        "characters stay as they are)",
        """
        shifted = []
        for ch in $IN:
            if 'a' <= ch <= 'z':
                shifted.append(chr((ord(ch) - ord('a') + $k) % 26 + ord('a')))
            else:
                shifted.append(ch)
        $OUT = ''.join(shifted)
        """,
        "shifted", ({"k": 1}, {"k": 3}, {"k": 13}),
        {"edge_case": [("chr((ord(ch) - ord('a') + $k) % 26 + ord('a'))", "chr(ord(ch) + $k)")]},
    ),
    _step(
        "split_words", "strings", "tokenizing", "text", "words", 0.02, "split it into words at whitespace",
        "$OUT = $IN.split()", "words", bugs={"edge_case": [("$IN.split()", "$IN.split(' ')")]},
    ),
    _step(
        "count_vowels", "strings", "counting characters", "text", "int", 0.05,
        "count its vowels (a, e, i, o, u, in either case)",
        """
        vowels = 0
        for ch in $IN.lower():
            if ch in 'aeiou':
                vowels += 1
        $OUT = vowels
        """,
        "vowel_count", bugs={"edge_case": [("for ch in $IN.lower():", "for ch in $IN:")]},
    ),
    _step(
        "char_codes", "strings", "character codes", "text", "ints", 0.04,
        "replace it by the list of its characters' Unicode code points (as `ord` gives them)",
        "$OUT = [ord(ch) for ch in $IN]", "codes", bugs={"logic": [("ord(ch) for", "ord(ch) - ord('a') for")]},
    ),
    _step(
        "reverse_each", "strings", "reversal", "words", "words", 0.04,
        "reverse the letters of every word, keeping the words in order", "$OUT = [w[::-1] for w in $IN]", "mirrored",
        bugs={"logic": [("[w[::-1] for w in $IN]", "$IN[::-1]")]},
    ),
    _step(
        "join_words", "strings", "joining", "words", "text", 0.02, "join the words with single spaces",
        "$OUT = ' '.join($IN)", "joined", bugs={"logic": [("' '.join($IN)", "''.join($IN)")]},
    ),
    _step(
        "word_lengths", "strings", "lengths", "words", "ints", 0.03, "replace every word by its length",
        "$OUT = [len(w) for w in $IN]", "lengths",
    ),
    _step(
        "long_words", "strings", "filtering", "words", "words", 0.04,
        "keep only the words with more than $k characters", "$OUT = [w for w in $IN if len(w) > $k]", "long_words",
        ({"k": 3}, {"k": 4}), {"off_by_one": [("len(w) > $k", "len(w) >= $k")]},
    ),
    _step(
        "capitalize", "strings", "case", "words", "words", 0.03,
        "capitalize every word (first character upper case, the rest lower case)",
        "$OUT = [w[:1].upper() + w[1:].lower() for w in $IN]", "capitalized",
        bugs={"edge_case": [("w[:1].upper() + w[1:].lower()", "w[:1].upper() + w[1:]")]},
    ),
    _step(
        "palindromes", "strings", "palindromes", "words", "words", 0.08,
        "keep only the words that read the same backwards, ignoring case",
        "$OUT = [w for w in $IN if w.lower() == w.lower()[::-1]]", "palindromes",
        bugs={"edge_case": [("w.lower() == w.lower()[::-1]", "w == w[::-1]")]},
    ),
    _step(
        "common_prefix", "strings", "prefixes", "words", "text", 0.2,
        "take the longest prefix that all the words share (the empty string when there are no words)",
        """
        prefix = $IN[0] if $IN else ''
        for w in $IN[1:]:
            while not w.startswith(prefix):
                prefix = prefix[:-1]
        $OUT = prefix
        """,
        "common_prefix", bugs={"exception": [("prefix = $IN[0] if $IN else ''", "prefix = $IN[0]")]},
        order_free=True,
    ),
    # for harder chains
    _step(
        "rle", "strings", "run-length encoding", "text", "text", 0.2,
        "replace every run of the same character by the character followed by the length of the run (aaab "
        "becomes a3b1)",
        """
        encoded = []
        i = 0
        while i < len($IN):
            j = i
            while j < len($IN) and $IN[j] == $IN[i]:
                j += 1
            encoded.append($IN[i] + str(j - i))
            i = j
        $OUT = ''.join(encoded)
        """,
        "encoded", bugs={"off_by_one": [("str(j - i)", "str(j - i - 1)")]},
    ),
    _step(
        "longest_palindrome", "strings", "palindromes", "text", "text", 0.35,
        "take its longest substring that reads the same backwards, case-sensitively (the leftmost of the "
        "longest ones, empty for an empty string)",
        """
        best = ''
        for center in range(2 * len($IN) - 1):
            lo, hi = center // 2, center // 2 + center % 2
            while lo >= 0 and hi < len($IN) and $IN[lo] == $IN[hi]:
                lo, hi = lo - 1, hi + 1
            if hi - lo - 1 > len(best):
                best = $IN[lo + 1:hi]
        $OUT = best
        """,
        "longest_palindrome", bugs={"edge_case": [("if hi - lo - 1 > len(best):", "if hi - lo - 1 >= len(best):")]},
    ),
)  # fmt: skip
"""The strings building blocks of pipeline exercises."""
