"""The ``dicts`` family of the fake's task bank (dictionaries): its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _WORDS, _ints, _sentence, _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit

_WORD_FREQ = Variant(
    family="dicts",
    name="word_frequencies",
    topic="counting",
    difficulty=0.14,
    entry_points=("word_counts", "word_frequencies", "count_words"),
    args=("text",),
    statements=(
        "Write `$sig` that returns a dictionary mapping each word of `text` to the number of times it occurs. "
        "$punct_note Keys are lower-case.",
        "Implement `$sig`: build a word-count table for `text`. $punct_note The result maps each lower-cased "
        "word to its count.",
        "`$sig` counts word occurrences in `text` and returns them as a dict keyed by the lower-cased word. "
        "$punct_note An empty text gives an empty dict.",
    ),
    code=_code(
        """
        def $ep(text):
            counts = {}
            for word in text.split():
                word = word.lower()$strip
                if word:
                    counts[word] = counts.get(word, 0) + 1
            return counts
        """
    ),
    params=(
        {"strip": "", "punct_note": "Words are separated by whitespace and compared case-insensitively."},
        {
            "strip": '.strip(".,!?;:")',
            "punct_note": "Words are separated by whitespace and compared case-insensitively; punctuation "
            "(`.,!?;:`) at either end of a word is removed first, and a word that becomes empty is skipped.",
            "_bump": 0.05,
        },
    ),
    make_input=lambda rng, p, scale: (_sentence(rng, _size(rng, 2, 25, scale)),),
    edges=lambda p: [("",), ("The cat and the hat",), ("Go, go, GO!",), ("a b a",)],
    bugs={
        "edge_case": _edit("word = word.lower()", "word = word"),
        "exception": _edit("counts.get(word, 0) + 1", "counts[word] + 1"),
        "off_by_one": _edit("text.split()", "text.split()[1:]"),
    },
)


def _anagram_input(rng: random.Random, p: Params, scale: float) -> Args:
    words = []
    for base in rng.sample(_WORDS, _size(rng, 1, 5, scale)):
        for _ in range(rng.randint(1, 3)):
            letters = list(base)
            rng.shuffle(letters)
            word = "".join(letters)
            words.append(word.capitalize() if p["key"] != "word" and rng.random() < 0.3 else word)
    rng.shuffle(words)
    if words and rng.random() < 0.3:
        words.append(rng.choice(words))
    return (words,)


_ANAGRAMS = Variant(
    family="dicts",
    name="anagram_groups",
    topic="grouping by key",
    difficulty=0.35,
    entry_points=("group_anagrams", "anagram_classes", "bucket_anagrams"),
    args=("words",),
    statements=(
        "Write `$sig` that groups the strings in `words` into anagram classes (words made of exactly the same "
        "letters). Return a list of groups; each group lists its words in their original order, and the groups "
        "are ordered by the position of their first word. Duplicates are kept. $case_note",
        "Implement `$sig`: partition `words` so that two words share a group exactly when one is a "
        "rearrangement of the other's letters. $case_note Keep words in input order inside each group, keep "
        "repeated words, and order the groups by first appearance.",
        "`$sig` collects anagrams together: return a list of lists where every inner list holds the words of "
        "`words` that are anagrams of one another, in input order (repeats included); groups appear in the "
        "order their first member appears. $case_note",
    ),
    code=_code(
        """
        def $ep(words):
            groups = {}
            for word in words:
                key = "".join(sorted($key))
                groups.setdefault(key, []).append(word)
            return list(groups.values())
        """
    ),
    params=(
        {"key": "word", "case_note": "Letters are compared exactly, so upper- and lower-case differ."},
        {
            "key": "word.lower()",
            "case_note": "Letter case is ignored when deciding whether two words are anagrams (the words "
            "themselves are returned unchanged).",
            "_bump": 0.03,
        },
    ),
    make_input=_anagram_input,
    edges=lambda p: [
        ([],),
        (["eat", "tea", "tan", "ate", "nat", "bat"],),
        (["abc", "cab", "abc"],),
        (["Listen", "Silent", "enlist"],),
    ],
    bugs={
        "edge_case": _edit(
            "        groups.setdefault(key, []).append(word)\n",
            "        if word not in groups.get(key, []):\n            groups.setdefault(key, []).append(word)\n",
        ),
        "exception": _edit("groups.setdefault(key, []).append(word)", "groups[key].append(word)"),
    },
)

_GROUPS = ("red", "blue", "green", "amber", "teal", "violet")

_INVERT = Variant(
    family="dicts",
    name="invert",
    topic="inverting a mapping",
    difficulty=0.24,
    entry_points=("invert_mapping", "invert_dict", "group_keys_by_value"),
    args=("mapping",),
    statements=(
        "Write `$sig` that inverts the dictionary `mapping`, whose keys and values are strings: the result maps "
        "every value that occurs in `mapping` to the alphabetically sorted list of keys that had that value.",
        "Implement `$sig`: several keys of the string-to-string dictionary `mapping` may share a value. Return a "
        "new dict whose keys are the original values and whose values are sorted lists of the original keys.",
        "`$sig` turns a `{name: group}` dictionary around into `{group: [names...]}`, with each list of names "
        "sorted alphabetically. An empty mapping gives an empty dict.",
    ),
    code=_code(
        """
        def $ep(mapping):
            inverted = {}
            for key, value in mapping.items():
                inverted.setdefault(value, []).append(key)
            for keys in inverted.values():
                keys.sort()
            return inverted
        """
    ),
    make_input=lambda rng, p, scale: (
        {w: rng.choice(_GROUPS[: 2 + round(4 * scale)]) for w in rng.sample(_WORDS, _size(rng, 2, 12, scale))},
    ),
    edges=lambda p: [({},), ({"bob": "red", "ann": "red", "cy": "blue"},), ({"x": "solo"},)],
    bugs={
        "edge_case": _edit("inverted.setdefault(value, []).append(key)", "inverted[value] = [key]"),
        "exception": _edit("inverted.setdefault(value, []).append(key)", "inverted[value].append(key)"),
        "logic": _edit("    for keys in inverted.values():\n        keys.sort()\n", ""),
    },
)


def _top_k_input(rng: random.Random, p: Params, scale: float) -> Args:
    return _ints(rng, _size(rng, 3, 40, scale), 0, 5 + round(10 * scale)), rng.randint(1, 4)


_TOP_K = Variant(
    family="dicts",
    name="top_k",
    topic="frequency ranking",
    difficulty=0.48,
    entry_points=("top_k_frequent", "most_common_values", "k_most_frequent"),
    args=("nums", "k"),
    statements=(
        "Write `$sig` that returns the `k` most frequent values in `nums`, most frequent first. Values with "
        "equal frequency are ordered from smallest to largest. If there are fewer than `k` distinct values, "
        "return all of them.",
        "Implement `$sig`: count how often each number appears in `nums` and return a list of the `k` numbers "
        "with the highest counts, sorted by decreasing count and, for ties, increasing value.",
        "`$sig` finds the top-`k` most common elements of `nums` (ties broken by the smaller value first) and "
        "returns them in order of decreasing frequency; with fewer than `k` distinct values it returns them all.",
    ),
    code=_code(
        """
        def $ep(nums, k):
            counts = {}
            for x in nums:
                counts[x] = counts.get(x, 0) + 1
            ranked = sorted(counts, key=lambda x: (-counts[x], x))
            return ranked[:k]
        """
    ),
    make_input=_top_k_input,
    edges=lambda p: [([3, 3, 1, 1, 2], 2), ([4, 4, 4, 6], 1), ([], 3), ([5, 7, 5, 7, 9], 5)],
    bugs={
        "edge_case": _edit("key=lambda x: (-counts[x], x)", "key=lambda x: -counts[x]"),
        "off_by_one": _edit("ranked[:k]", "ranked[:k - 1]"),
        "exception": _edit("counts.get(x, 0) + 1", "counts[x] + 1"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _WORD_FREQ,
    _INVERT,
    _ANAGRAMS,
    _TOP_K,
)
"""The dictionaries exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "count_words", "dicts", "counting", "words", "counts", 0.08,
        "count how often each word occurs, as a dictionary from word to count",
        """
        counts = {}
        for w in $IN:
            counts[w] = counts.get(w, 0) + 1
        $OUT = counts
        """,
        "word_counts", bugs={"off_by_one": [("counts.get(w, 0) + 1", "counts.get(w, 1)")]},
    ),
    _step(
        "count_letters", "dicts", "counting", "text", "counts", 0.1,
        "count each letter, case-insensitively, as a dictionary from lower-case letter to count (other "
        "characters are not counted)",
        """
        letters = {}
        for ch in $IN.lower():
            if ch.isalpha():
                letters[ch] = letters.get(ch, 0) + 1
        $OUT = letters
        """,
        "letter_counts", bugs={"edge_case": [("for ch in $IN.lower():", "for ch in $IN:")]},
    ),
    _step(
        "frequent_keys", "dicts", "filtering", "counts", "words", 0.08,
        "list the keys whose count is at least $k, in alphabetical order",
        "$OUT = sorted(key for key, c in $IN.items() if c >= $k)", "frequent",
        ({"k": 2}, {"k": 3}), {"off_by_one": [("c >= $k", "c > $k")]},
    ),
    _step(
        "by_count", "dicts", "sorting by value", "counts", "words", 0.14,
        "list the keys by decreasing count, keys with equal counts in alphabetical order",
        "$OUT = sorted($IN, key=lambda key: (-$IN[key], key))", "by_count",
        bugs={"logic": [("key=lambda key: (-$IN[key], key)", "key=lambda key: -$IN[key]")]},
    ),
    _step(
        "top_count", "dicts", "aggregation", "counts", "int", 0.05,
        "take the largest count (0 when the dictionary is empty)", "$OUT = max($IN.values(), default=0)", "top_count",
        bugs={"logic": [("max($IN.values(), default=0)", "len($IN)")]},
    ),
    _step(
        "count_pairs", "dicts", "items", "counts", "pairs", 0.05,
        "turn the dictionary into a list of `[key, count]` pairs sorted by key",
        "$OUT = [[key, $IN[key]] for key in sorted($IN)]", "pairs",
        bugs={"logic": [("for key in sorted($IN)", "for key in $IN")]},
    ),
    _step(
        "singles", "dicts", "counting", "ints", "ints", 0.14,
        "keep only the numbers that occur exactly once in the list, in their order",
        """
        tally = {}
        for x in $IN:
            tally[x] = tally.get(x, 0) + 1
        $OUT = [x for x in $IN if tally[x] == 1]
        """,
        "singles", bugs={"logic": [("if tally[x] == 1", "if tally[x] <= 2")]},
    ),
    _step(
        "occurrences", "dicts", "counting", "ints", "ints", 0.1,
        "replace every number by how many times it occurs in the whole list",
        """
        tally = {}
        for x in $IN:
            tally[x] = tally.get(x, 0) + 1
        $OUT = [tally[x] for x in $IN]
        """,
        "occurrences", bugs={"off_by_one": [("tally.get(x, 0) + 1", "tally.get(x, 1)")]},
    ),
    _step(
        "first_index", "dicts", "index maps", "ints", "ints", 0.12,
        "replace every number by the position (from 0) of its first occurrence in the list",
        """
        first_at = {}
        for i, x in enumerate($IN):
            first_at.setdefault(x, i)
        $OUT = [first_at[x] for x in $IN]
        """,
        "first_positions", bugs={"logic": [("first_at.setdefault(x, i)", "first_at[x] = i")]},
    ),
    # for harder chains
    _step(
        "distinct_window", "dicts", "sliding window", "ints", "int", 0.3,
        "take the length of the longest run of consecutive numbers in which no number repeats (0 for no numbers)",
        """
        last_seen = {}
        start = longest = 0
        for i, x in enumerate($IN):
            if x in last_seen and last_seen[x] >= start:
                start = last_seen[x] + 1
            last_seen[x] = i
            longest = max(longest, i - start + 1)
        $OUT = longest
        """,
        "longest_distinct",
        bugs={
            "edge_case": [("if x in last_seen and last_seen[x] >= start:", "if x in last_seen:")],
        },
    ),
    _step(
        "two_sum_positions", "dicts", "index maps", "ints", "ints", 0.25,
        "find the pair of positions [i, j] with i < j whose numbers add up to $k, with the smallest j and then "
        "the smallest i (an empty list when there is none)",
        """
        where = {}
        found = []
        for j, x in enumerate($IN):
            if $k - x in where:
                found = [where[$k - x], j]
                break
            where.setdefault(x, j)
        $OUT = found
        """,
        "pair_positions", ({"k": 10}, {"k": 0}), {"logic": [("where.setdefault(x, j)", "where[x] = j")]},
    ),
    _step(
        "anagram_pairs", "dicts", "anagrams", "words", "int", 0.22,
        "count the pairs of positions whose words are anagrams of each other, ignoring case (equal words count "
        "too)",
        """
        groups = {}
        for w in $IN:
            key = ''.join(sorted(w.lower()))
            groups[key] = groups.get(key, 0) + 1
        $OUT = sum(c * (c - 1) // 2 for c in groups.values())
        """,
        "anagram_pairs", bugs={"edge_case": [("''.join(sorted(w.lower()))", "''.join(sorted(w))")]}, order_free=True,
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "distinct_words", "dicts", "distinct values", "words", "int", 0.05,
        "count the different words, ignoring case", "$OUT = len({w.lower() for w in $IN})", "distinct_words",
        bugs={"edge_case": [("{w.lower() for w in $IN}", "set($IN)")]}, order_free=True,
    ),
    _step(
        "unique_words", "dicts", "distinct values", "words", "words", 0.07,
        "remove repeated words, ignoring case, keeping the first spelling of each in order",
        """
        seen_words = set()
        firsts = []
        for w in $IN:
            if w.lower() not in seen_words:
                seen_words.add(w.lower())
                firsts.append(w)
        $OUT = firsts
        """,
        "unique_words", bugs={"edge_case": [("if w.lower() not in seen_words:", "if w not in seen_words:")]},
    ),
)  # fmt: skip
"""The dictionaries building blocks of pipeline exercises."""
