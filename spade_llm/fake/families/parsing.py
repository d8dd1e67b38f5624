"""The ``parsing`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _WORDS, _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit


def _kv_input(rng: random.Random, p: Params, scale: float) -> Args:
    sep = p["sep"]
    keys = rng.sample(_WORDS, _size(rng, 1, 9, scale))
    if len(keys) > 2 and rng.random() < 0.3:
        keys.append(keys[0])
    pieces = []
    for key in keys:
        value = str(rng.randint(-50, 500))
        pad = rng.choice(("", "", " ", "  "))
        pieces.append(f"{pad}{key}{rng.choice(('', ' '))}={rng.choice(('', ' '))}{value}{pad}")
        if rng.random() < 0.15:
            pieces.append("")
    return (sep.join(pieces),)


_KEY_VALUES = Variant(
    family="parsing",
    name="key_values",
    topic="splitting strings",
    difficulty=0.22,
    entry_points=("parse_pairs", "parse_settings", "parse_kv"),
    args=("text",),
    statements=(
        "Write `$sig` that parses a string of `key=value` pairs separated by `'$sep'` into a dictionary "
        "mapping each key to its integer value. Whitespace around keys and values is ignored, empty segments "
        "are skipped, and when a key repeats the last value wins.",
        "Implement `$sig`: `text` looks like `'a=1$sep b = -2'`. Split it on `'$sep'`, ignore blank pieces, "
        "strip spaces and return a dict from key (string) to value (int); a repeated key keeps its last value.",
        "`$sig` turns a configuration string such as `'width=10$sep height=4'` into a dict of integers keyed "
        "by name. Pairs are separated by `'$sep'` and may carry extra spaces, a later duplicate key overrides "
        "an earlier one, and empty pieces are ignored.",
    ),
    code=_code(
        """
        def $ep(text):
            result = {}
            for part in text.split($sep_r):
                part = part.strip()
                if not part:
                    continue
                key, value = part.split("=")
                result[key.strip()] = int(value)
            return result
        """
    ),
    params=({"sep": ";"}, {"sep": ","}, {"sep": "&"}, {"sep": "|"}),
    make_input=_kv_input,
    edges=lambda p: [
        ("",),
        (f"a=1{p['sep']}b=2",),
        (f" x = 5 {p['sep']}{p['sep']} y=-3{p['sep']}",),
        (f"k=1{p['sep']}k=2",),
    ],
    bugs={
        "off_by_one": _edit("text.split($sep_r)", "text.split($sep_r)[1:]"),
        "exception": _edit("        if not part:\n            continue\n", ""),
        "edge_case": _edit("result[key.strip()]", "result[key]"),
    },
)


def _duration_input(rng: random.Random, p: Params, scale: float) -> Args:
    units = list(p["factors"])
    chosen = rng.sample(units, _size(rng, 1, len(units), scale))
    text = "".join(f"{rng.randint(0, 99)}{unit}" for unit in chosen)
    if rng.random() < 0.3:
        text += str(rng.randint(1, 59))
    return (text,)


_DURATION = Variant(
    family="parsing",
    name="duration",
    topic="tokenizing",
    difficulty=0.36,
    entry_points=("parse_duration", "duration_seconds", "to_seconds"),
    args=("text",),
    statements=(
        "Write `$sig` that converts a compact duration such as `'1h30m'` into a number of seconds. The string "
        "is a sequence of integers, each followed by a unit letter: $unit_words. A trailing number without a "
        "unit counts as seconds, and the empty string means 0.",
        "Implement `$sig`: `text` is made of number-and-unit chunks like `'2h5m10s'`, where the units are "
        "$unit_words. Units may appear in any order and more than once (their amounts add up). A number at "
        "the very end with no unit is a count of seconds. Return the total duration in seconds.",
        "`$sig` parses durations written like `'45m'` or `'3h0m20s'` and returns the total in seconds. "
        "Recognised units: $unit_words. A final bare number is seconds; `''` is 0 seconds.",
    ),
    code=_code(
        """
        def $ep(text):
            factors = $factors_r
            total = 0
            number = ""
            for ch in text:
                if ch.isdigit():
                    number += ch
                else:
                    total += int(number) * factors[ch]
                    number = ""
            if number:
                total += int(number)
            return total
        """
    ),
    params=(
        {"factors": {"h": 3600, "m": 60, "s": 1}, "unit_words": "`h` (hours), `m` (minutes) and `s` (seconds)"},
        {
            "factors": {"d": 86400, "h": 3600, "m": 60, "s": 1},
            "unit_words": "`d` (days), `h` (hours), `m` (minutes) and `s` (seconds)",
            "_bump": 0.03,
        },
    ),
    make_input=_duration_input,
    edges=lambda p: [("",), ("1h30m",), ("90",), ("2m5",), ("10s10s",)],
    bugs={"edge_case": _edit("    if number:\n        total += int(number)\n", "")},
)


def _expression(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        atom = str(rng.randint(0, 99 if rng.random() < 0.5 else 9))
    else:
        parts = [_expression(rng, depth - 1) for _ in range(rng.randint(2, 3))]
        inner = parts[0]
        for part in parts[1:]:
            inner += rng.choice((" + ", " - ", " * ", "+", "-", "*")) + part
        atom = f"({inner})" if rng.random() < 0.5 else inner
    if rng.random() < 0.1:
        atom = "-" + (atom if atom.isdigit() or (atom.startswith("(") and atom.endswith(")")) else f"({atom})")
    return atom


_EXPRESSION = Variant(
    family="parsing",
    name="expression",
    topic="recursive descent",
    difficulty=0.66,
    entry_points=("evaluate", "eval_expression", "calculate"),
    args=("expr",),
    statements=(
        "Write `$sig` that evaluates an arithmetic expression given as a string. It contains non-negative "
        "integer literals, the binary operators `+`, `-` and `*`, unary minus, parentheses and spaces. `*` "
        "binds tighter than `+` and `-`, operators of equal precedence associate to the left, and the result "
        "is an integer. Do not use `eval`.",
        "Implement `$sig`: compute the value of `expr`, an integer expression built from numbers, `+`, `-`, "
        "`*`, parentheses and optional spaces (a `-` may also negate the value that follows it). Standard "
        "precedence rules apply.",
        "`$sig` is a tiny calculator: parse `expr` (for example `'2 * (3 + 4) - 5'`) and return its integer "
        "value, honouring parentheses, unary minus and the usual precedence of `*` over `+` and `-`.",
    ),
    code=_code(
        """
        def $ep(expr):
            tokens = []
            i = 0
            while i < len(expr):
                ch = expr[i]
                if ch.isdigit():
                    j = i
                    while j < len(expr) and expr[j].isdigit():
                        j += 1
                    tokens.append(int(expr[i:j]))
                    i = j
                else:
                    if not ch.isspace():
                        tokens.append(ch)
                    i += 1
            pos = 0

            def peek():
                return tokens[pos] if pos < len(tokens) else None

            def parse_sum():
                nonlocal pos
                value = parse_product()
                while peek() in ("+", "-"):
                    op = tokens[pos]
                    pos += 1
                    rhs = parse_product()
                    value = value + rhs if op == "+" else value - rhs
                return value

            def parse_product():
                nonlocal pos
                value = parse_atom()
                while peek() == "*":
                    pos += 1
                    value *= parse_atom()
                return value

            def parse_atom():
                nonlocal pos
                token = tokens[pos]
                pos += 1
                if token == "(":
                    value = parse_sum()
                    pos += 1
                    return value
                if token == "-":
                    return -parse_atom()
                return token

            return parse_sum()
        """
    ),
    make_input=lambda rng, p, scale: (_expression(rng, 1 + round(2 * scale)),),
    edges=lambda p: [("42",), ("2 + 3 * 4",), ("(1 + 2) * 3",), ("10 - 4 - 3",), ("-3 + 5",), ("2 * -(3 + 1)",)],
    bugs={
        "edge_case": _edit(
            "            j = i\n            while j < len(expr) and expr[j].isdigit():\n                j += 1\n",
            "            j = i + 1\n",
        ),
        "exception": _edit("return tokens[pos] if pos < len(tokens) else None", "return tokens[pos]"),
        "infinite_loop": _edit("                j += 1\n", "                i += 1\n"),
        "logic": _edit("            pos += 1\n            return value\n", "            return value\n"),
    },
)


def _regex_input(rng: random.Random, p: Params, scale: float) -> Args:
    any_char = p["any"]
    text = "".join(rng.choice("ab") for _ in range(rng.randint(0, 4 + round(8 * scale))))
    if rng.random() < 0.4 and text:
        pattern = ""
        i = 0
        while i < len(text):
            ch = text[i]
            run = 1
            while i + run < len(text) and text[i + run] == ch:
                run += 1
            pattern += rng.choice((ch * run, ch + "*", any_char + "*", ch * (run - 1) + any_char))
            i += run
    else:
        tokens = ("a", "b", any_char, "a*", "b*", any_char + "*")
        pattern = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 2 + round(4 * scale))))
    return text, pattern


_REGEX = Variant(
    family="parsing",
    name="regex_match",
    topic="pattern matching",
    difficulty=0.84,
    entry_points=("is_match", "regex_match", "matches_pattern"),
    args=("text", "pattern"),
    statements=(
        "Write `$sig` that returns whether the whole string `text` matches `pattern`, a simplified regular "
        "expression in which `'$any'` matches any single character and `'*'` matches zero or more copies of "
        "the element right before it. Every other character matches itself, and the match must cover all of "
        "`text`, not just a part of it.",
        "Implement `$sig`: decide if `pattern` matches the entire `text`. In the pattern, `$any` stands for "
        "exactly one arbitrary character, and a `*` after a character (or after `$any`) lets that element "
        "repeat any number of times, including zero. No other metacharacters exist.",
        "`$sig` is a tiny regular-expression matcher supporting literal characters, the wildcard `'$any'` (one "
        "character) and the postfix `'*'` (zero or more of the preceding element). Return `True` only if the "
        "pattern matches all of `text`; patterns never start with `*`.",
    ),
    code=_code(
        """
        def $ep(text, pattern):
            memo = {}

            def match(i, j):
                if (i, j) in memo:
                    return memo[(i, j)]
                if j == len(pattern):
                    result = i == len(text)
                else:
                    first = i < len(text) and pattern[j] in (text[i], $any_r)
                    if j + 1 < len(pattern) and pattern[j + 1] == "*":
                        result = match(i, j + 2) or (first and match(i + 1, j))
                    else:
                        result = first and match(i + 1, j + 1)
                memo[(i, j)] = result
                return result

            return match(0, 0)
        """
    ),
    params=({"any": "."}, {"any": "?", "_bump": 0.01}),
    make_input=_regex_input,
    edges=lambda p: [
        ("aa", "a"),
        ("aa", "a*"),
        ("ab", p["any"] + "*"),
        ("aab", "c*a*b"),
        ("", "a*b*"),
        ("mississippi", "mis*is*p*" + p["any"]),
    ],
    bugs={
        "edge_case": _edit("result = i == len(text)", "result = True"),
        "off_by_one": _edit("if j + 1 < len(pattern) and", "if j + 1 < len(pattern) - 1 and"),
        "exception": _edit("first = i < len(text) and pattern[j]", "first = pattern[j]"),
        "logic": _edit("(first and match(i + 1, j))", "(first and match(i + 1, j + 2))"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _KEY_VALUES,
    _DURATION,
    _EXPRESSION,
    _REGEX,
)
"""The parsing exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "parse_csv", "parsing", "comma-separated values", "csv", "ints", 0.06,
        "parse it into the list of its integers (spaces around a number are allowed, empty fields are skipped)",
        "$OUT = [int(part) for part in $IN.split(',') if part.strip()]", "parsed",
        bugs={"exception": [("if part.strip()]", "]")]},
    ),
    _step(
        "parse_kv", "parsing", "key-value pairs", "kv", "counts", 0.1,
        "parse it into a dictionary from key to integer value (empty pieces are skipped, a repeated key keeps "
        "its last value)",
        """
        parsed = {}
        for piece in $IN.split(';'):
            if piece:
                key, _, raw = piece.partition('=')
                parsed[key] = int(raw)
        $OUT = parsed
        """,
        "settings", bugs={"logic": [("parsed[key] = int(raw)", "parsed.setdefault(key, int(raw))")]},
    ),
    _step(
        "extract_numbers", "parsing", "tokenizing", "text", "ints", 0.15,
        "extract every maximal run of decimal digits as a non-negative integer, in order",
        """
        found = []
        digits = ''
        for ch in $IN:
            if ch.isdigit():
                digits += ch
            elif digits:
                found.append(int(digits))
                digits = ''
        if digits:
            found.append(int(digits))
        $OUT = found
        """,
        "numbers", bugs={"edge_case": [("if digits:\n    found.append(int(digits))\n", "")]},
    ),
    _step(
        "durations", "parsing", "time formats", "times", "ints", 0.08,
        "convert every duration to minutes",
        """
        minutes = []
        for t in $IN:
            hours, _, mins = t.partition(':')
            minutes.append(int(hours) * 60 + int(mins))
        $OUT = minutes
        """,
        "minutes", bugs={"logic": [("int(hours) * 60 + int(mins)", "int(hours) * 100 + int(mins)")]},
    ),
    _step(
        "evaluate_sum", "parsing", "expressions", "expr", "int", 0.15,
        "evaluate it (a leading sign is allowed, the empty string is 0)",
        """
        result, number, sign = 0, 0, 1
        for ch in $IN:
            if ch.isdigit():
                number = number * 10 + int(ch)
            else:
                result += sign * number
                number, sign = 0, (1 if ch == '+' else -1)
        $OUT = result + sign * number
        """,
        "evaluated", bugs={"edge_case": [("$OUT = result + sign * number", "$OUT = result")]},
    ),
    _step(
        "format_csv", "parsing", "formatting", "ints", "text", 0.03,
        "format the numbers as one string, separated by commas without spaces",
        "$OUT = ','.join(str(x) for x in $IN)", "formatted", bugs={"logic": [("','.join(", "', '.join(")]},
    ),
    # for harder chains
    _step(
        "roman_values", "parsing", "roman numerals", "romans", "ints", 0.2, "convert every Roman numeral to its value",
        """
        values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
        converted = []
        for numeral in $IN:
            amount = 0
            for i, ch in enumerate(numeral):
                if i + 1 < len(numeral) and values[ch] < values[numeral[i + 1]]:
                    amount -= values[ch]
                else:
                    amount += values[ch]
            converted.append(amount)
        $OUT = converted
        """,
        "values",
        bugs={
            "off_by_one": [("values[ch] < values[numeral[i + 1]]", "values[ch] <= values[numeral[i + 1]]")],
        },
    ),
    _step(
        "evaluate_parens", "parsing", "expressions", "pexpr", "int", 0.4,
        "evaluate it (a sign may also start the expression or follow an opening parenthesis, and the empty "
        "string is 0)",
        """
        stack = []
        result, number, sign = 0, 0, 1
        for ch in $IN:
            if ch.isdigit():
                number = number * 10 + int(ch)
            elif ch in '+-':
                result += sign * number
                number, sign = 0, (1 if ch == '+' else -1)
            elif ch == '(':
                stack.append((result, sign))
                result, sign = 0, 1
            elif ch == ')':
                result += sign * number
                outer, outer_sign = stack.pop()
                result, number = outer + outer_sign * result, 0
        $OUT = result + sign * number
        """,
        "evaluated",
        bugs={
            "logic": [("result, number = outer + outer_sign * result, 0", "result, number = outer + result, 0")],
        },
    ),
)  # fmt: skip
"""The parsing building blocks of pipeline exercises."""
