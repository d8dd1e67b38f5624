"""The ``stacks`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit


def _brackets_input(rng: random.Random, p: Params, scale: float) -> Args:
    opener_to_closer = {v: k for k, v in p["pairs"].items()}
    opens = p["opens"]
    closes = "".join(opener_to_closer[o] for o in opens)
    out: list[str] = []
    stack: list[str] = []
    for _ in range(_size(rng, 2, 30, scale)):
        r = rng.random()
        if r < 0.4 or not stack:
            i = rng.randrange(len(opens))
            out.append(opens[i])
            stack.append(closes[i])
        elif r < 0.8:
            out.append(stack.pop())
        else:
            out.append(rng.choice("abxy "))
    out.extend(reversed(stack))
    text = "".join(out)
    if rng.random() < 0.5 and text:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(opens + closes) + text[i + 1 :]
    return (text,)


_BALANCED = Variant(
    family="stacks",
    name="balanced_brackets",
    topic="matching brackets",
    difficulty=0.25,
    entry_points=("is_balanced", "brackets_match", "valid_brackets"),
    args=("text",),
    statements=(
        "Write `$sig` that returns `True` if the brackets in `text` are balanced and properly nested, and "
        "`False` otherwise. The bracket pairs are $kinds; every other character is ignored.",
        "Implement `$sig`: check that every opening bracket in `text` is closed by the matching bracket type "
        "in the right order. Bracket types: $kinds. Characters that are not brackets do not matter, and an "
        "empty string is balanced.",
        "`$sig` validates bracket nesting in a string: with the pairs $kinds, return whether each closer "
        "matches the most recent unmatched opener and nothing is left open at the end.",
    ),
    code=_code(
        """
        def $ep(text):
            pairs = $pairs_r
            stack = []
            for ch in text:
                if ch in $opens_r:
                    stack.append(ch)
                elif ch in pairs:
                    if not stack or stack.pop() != pairs[ch]:
                        return False
            return not stack
        """
    ),
    params=(
        {"opens": "([{", "pairs": {")": "(", "]": "[", "}": "{"}, "kinds": "`()`, `[]` and `{}`"},
        {
            "opens": "([{<",
            "pairs": {")": "(", "]": "[", "}": "{", ">": "<"},
            "kinds": "`()`, `[]`, `{}` and `<>`",
            "_bump": 0.02,
        },
    ),
    make_input=_brackets_input,
    edges=lambda p: [("",), ("(a[b]{c})",), ("([)]",), ("((",), (")(",)],
    bugs={
        "edge_case": _edit("    return not stack", "    return True"),
        "exception": _edit("if not stack or stack.pop() != pairs[ch]:", "if stack.pop() != pairs[ch]:"),
    },
)


def _rpn_tokens(rng: random.Random, depth: int) -> tuple[list[str], int]:
    if depth <= 0 or rng.random() < 0.3:
        value = rng.randint(-9, 20)
        return [str(value)], value
    left, lv = _rpn_tokens(rng, depth - 1)
    right, rv = _rpn_tokens(rng, depth - 1)
    ops = ["+", "-", "*"] + (["/"] if rv != 0 else [])
    op = rng.choice(ops)
    if op == "+":
        value = lv + rv
    elif op == "-":
        value = lv - rv
    elif op == "*":
        value = lv * rv
    else:
        quotient = abs(lv) // abs(rv)
        value = quotient if (lv < 0) == (rv < 0) else -quotient
    return [*left, *right, op], value


_RPN = Variant(
    family="stacks",
    name="rpn",
    topic="postfix evaluation",
    difficulty=0.4,
    entry_points=("eval_rpn", "evaluate_postfix", "rpn_value"),
    args=("tokens",),
    statements=(
        "Write `$sig` that evaluates an expression in reverse Polish notation. `tokens` is a list of strings, "
        "each either an integer (possibly negative, like `'-4'`) or one of the operators `'+'`, `'-'`, `'*'`, "
        "`'/'`. Division truncates toward zero, as in `int(a / b)`. The expression is always valid and never "
        "divides by zero.",
        "Implement `$sig`: process the postfix token list `tokens` with a stack; numbers are pushed, and an "
        "operator pops the right operand, then the left operand, and pushes the result. `/` is integer "
        "division rounding toward zero. Return the single value left at the end.",
        "`$sig` computes the value of a postfix (RPN) expression such as `['2', '1', '+', '3', '*']`, which is "
        "9. Operators are `+ - * /`; `/` truncates toward zero.",
    ),
    code=_code(
        """
        def $ep(tokens):
            stack = []
            for token in tokens:
                if token in ("+", "-", "*", "/"):
                    right = stack.pop()
                    left = stack.pop()
                    if token == "+":
                        stack.append(left + right)
                    elif token == "-":
                        stack.append(left - right)
                    elif token == "*":
                        stack.append(left * right)
                    else:
                        quotient = abs(left) // abs(right)
                        stack.append(quotient if (left < 0) == (right < 0) else -quotient)
                else:
                    stack.append(int(token))
            return stack[-1]
        """
    ),
    make_input=lambda rng, p, scale: (_rpn_tokens(rng, 1 + round(3 * scale))[0],),
    edges=lambda p: [
        (["2", "1", "+", "3", "*"],),
        (["7", "-2", "/"],),
        (["4", "13", "5", "/", "+"],),
        (["5", "8", "-"],),
        (["42"],),
    ],
    bugs={
        "edge_case": _edit(
            "                quotient = abs(left) // abs(right)\n"
            "                stack.append(quotient if (left < 0) == (right < 0) else -quotient)\n",
            "                stack.append(left // right)\n",
        ),
        "exception": _edit('if token in ("+", "-", "*", "/"):', 'if token in ("+", "*", "/"):'),
        "logic": _edit(
            "            right = stack.pop()\n            left = stack.pop()\n",
            "            left = stack.pop()\n            right = stack.pop()\n",
        ),
    },
)


def _encoded(rng: random.Random, depth: int, scale: float) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        if depth > 0 and rng.random() < 0.6:
            parts.append(f"{rng.randint(1, 3 + round(9 * scale))}[{_encoded(rng, depth - 1, scale)}]")
        else:
            parts.append("".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 3))))
    return "".join(parts)


_DECODE = Variant(
    family="stacks",
    name="decode_string",
    topic="nested repetition",
    difficulty=0.6,
    entry_points=("decode_string", "expand_repeats", "decode"),
    args=("s",),
    statements=(
        "Write `$sig` that decodes a string in which `k[...]` means the bracketed part repeated `k` times; "
        "brackets can be nested and `k` can have several digits, so `'3[a]2[bc]'` decodes to `'aaabcbc'` and "
        "`'2[a2[c]]'` to `'accacc'`. Letters outside brackets are copied as they are.",
        "Implement `$sig`: expand the notation `count[body]` in `s`, where `body` may itself contain encoded "
        "parts and `count` is a positive integer (possibly with several digits). Return the fully expanded "
        "string.",
        "`$sig` expands nested repetition markers: every `n[x]` is replaced by `x` written `n` times, innermost "
        "first, so `'3[a2[c]]'` becomes `'accaccacc'`. Plain letters stay as they are.",
    ),
    code=_code(
        """
        def $ep(s):
            stack = []
            current = ""
            number = 0
            for ch in s:
                if ch.isdigit():
                    number = number * 10 + int(ch)
                elif ch == "[":
                    stack.append((current, number))
                    current, number = "", 0
                elif ch == "]":
                    previous, repeat = stack.pop()
                    current = previous + current * repeat
                else:
                    current += ch
            return current
        """
    ),
    make_input=lambda rng, p, scale: (_encoded(rng, 1 + round(2 * scale), scale),),
    edges=lambda p: [("",), ("3[a]2[bc]",), ("2[a2[c]]",), ("10[x]",), ("ab2[c]d",)],
    bugs={
        "edge_case": _edit("number = number * 10 + int(ch)", "number = int(ch)"),
        "off_by_one": _edit("current = previous + current * repeat", "current = previous + current * (repeat - 1)"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _BALANCED,
    _RPN,
    _DECODE,
)
"""The stacks exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "cancel_pairs", "stacks", "cancellation", "ints", "ints", 0.15,
        "remove adjacent equal numbers in pairs, again and again, until no two neighbours are equal ([1, 2, 2, 1, "
        "3] becomes [3])",
        """
        stack = []
        for x in $IN:
            if stack and stack[-1] == x:
                stack.pop()
            else:
                stack.append(x)
        $OUT = stack
        """,
        "cancelled",
        bugs={
            "logic": [
                (
                    "if stack and stack[-1] == x:\n        stack.pop()\n    else:\n        stack.append(x)\n",
                    "if not stack or stack[-1] != x:\n        stack.append(x)\n",
                )
            ],
        },
    ),
    _step(
        "next_greater", "stacks", "monotonic stacks", "ints", "ints", 0.3,
        "replace every number by the nearest number to its right that is larger than it, or by -1 when there is "
        "none",
        """
        answer = [-1] * len($IN)
        waiting = []
        for i, x in enumerate($IN):
            while waiting and $IN[waiting[-1]] < x:
                answer[waiting.pop()] = x
            waiting.append(i)
        $OUT = answer
        """,
        "next_greater", bugs={"edge_case": [("$IN[waiting[-1]] < x", "$IN[waiting[-1]] <= x")]},
    ),
    _step(
        "paren_depth", "stacks", "nesting", "parens", "int", 0.1,
        "take the deepest nesting of its parentheses (other characters are ignored, 0 when there are none)",
        """
        depth = deepest = 0
        for ch in $IN:
            if ch == '(':
                depth += 1
                deepest = max(deepest, depth)
            elif ch == ')':
                depth -= 1
        $OUT = deepest
        """,
        "depth", bugs={"logic": [("        depth -= 1\n", "        deepest = max(deepest, depth)\n")]},
    ),
    _step(
        "unmatched", "stacks", "bracket matching", "parens", "int", 0.18,
        "count the parentheses that have no partner (an opening one never closed or a closing one never opened)",
        """
        open_count = unmatched = 0
        for ch in $IN:
            if ch == '(':
                open_count += 1
            elif ch == ')':
                if open_count:
                    open_count -= 1
                else:
                    unmatched += 1
        $OUT = unmatched + open_count
        """,
        "unmatched", bugs={"edge_case": [("$OUT = unmatched + open_count", "$OUT = unmatched")]},
    ),
    _step(
        "backspaces", "stacks", "editing", "keys", "text", 0.12,
        "type it out, each `#` deleting the last character still typed (if any)",
        """
        typed = []
        for ch in $IN:
            if ch == '#':
                if typed:
                    typed.pop()
            else:
                typed.append(ch)
        $OUT = ''.join(typed)
        """,
        "typed", bugs={"exception": [("        if typed:\n            typed.pop()\n", "        typed.pop()\n")]},
    ),
    _step(
        "collisions", "stacks", "collisions", "ints", "ints", 0.4,
        "drop the zeros, then simulate collisions: positive numbers move right, negative ones move left, and when "
        "two meet the one with the smaller absolute value disappears (both when they are equal)",
        """
        alive = []
        for x in $IN:
            keep = x != 0
            while keep and x < 0 and alive and alive[-1] > 0:
                if alive[-1] < -x:
                    alive.pop()
                else:
                    if alive[-1] == -x:
                        alive.pop()
                    keep = False
            if keep:
                alive.append(x)
        $OUT = alive
        """,
        "survivors", bugs={"logic": [("            if alive[-1] == -x:\n                alive.pop()\n", "")]},
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "paren_pairs", "stacks", "bracket matching", "parens", "int", 0.06,
        "count the pairs of matching parentheses (a closing one matches the nearest unmatched opening one before it)",
        """
        waiting = 0
        matched = 0
        for ch in $IN:
            if ch == '(':
                waiting += 1
            elif ch == ')' and waiting:
                waiting -= 1
                matched += 1
        $OUT = matched
        """,
        "matched_pairs", bugs={"edge_case": [("elif ch == ')' and waiting:", "elif ch == ')':")]},
    ),
    _step(
        "cancel_chars", "stacks", "cancellation", "text", "text", 0.1,
        "remove adjacent equal characters in pairs, again and again, until no two neighbours are equal (abba "
        "becomes the empty string)",
        """
        kept = []
        for ch in $IN:
            if kept and kept[-1] == ch:
                kept.pop()
            else:
                kept.append(ch)
        $OUT = ''.join(kept)
        """,
        "reduced",
        bugs={
            "logic": [
                (
                    "if kept and kept[-1] == ch:\n        kept.pop()\n    else:\n        kept.append(ch)\n",
                    "if not kept or kept[-1] != ch:\n        kept.append(ch)\n",
                )
            ],
        },
    ),
)  # fmt: skip
"""The stacks building blocks of pipeline exercises."""
