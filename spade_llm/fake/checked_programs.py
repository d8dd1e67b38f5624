"""The fake model's ``program`` tasks with several right outputs, each judged by its checker.

Why apart from :mod:`spade_llm.fake.programs` (the bank's exercises as programs): there the one right
output is the reference's, so a run on the fake never exercises a ``checker``. The problems here
(:data:`PROBLEMS`) are written for it: the position of any largest value, any two positions whose
values sum to a target, any proper divisor. Each has a reference, a checker (a program, run in the
sandbox by the gates and the judge), *another right answer* that prints another output than the
reference wherever it can (the last largest position where the reference prints the first), and
wrong answers a weaker solver writes. So the gates prove the checker (``bad_checker``,
``weak_checker``), and a strong solver's answer passes only because the checker judges it.

The hook: ``FakeLLM.complete`` hands every request to :func:`play` first, which answers it or returns
None (then the model answers as it would have). A generator request for program tasks whose topic is
one of a problem's (``topics``: the run's built-in topics hand each to at most one request of an
epoch, so two requests rarely propose the same problem at once) gets, with probability
:data:`CHECKED_SHARE`, one of its tasks replaced by that problem, unless the prompt already shows it;
every other choice of the answer is the model's own, made before.
A solver prompt whose task is one of these problems (recognised by its statement's first sentence)
gets the other right answer with the profile's ``p_first_try`` for the problem's difficulty, else
one of its wrong ones; a repair turn fixes a wrong answer with ``p_fix`` (the feedback shows the
input, one right output and the rejected one). Every choice comes from the model's generator for
the request (``_rng``): the same request, the same answer, in-process and over HTTP.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..llm.base import LLMRequest
from .polyglot import asked_language
from .programs import WRITING_MARKER

__all__ = ["CHECKED_SHARE", "PROBLEMS", "CheckedProblem", "identify", "play", "task_json"]

CHECKED_SHARE = 0.6
"""The chance that a program-task request on one of a problem's topics carries that problem."""


class Player(Protocol):
    """What :func:`play` needs of the model (``FakeLLM`` is one): its profile, its generator per request,
    its skill curve, and its own proposal (which a checked problem then joins)."""

    @property
    def profile(self) -> Any: ...

    def _rng(self, request: LLMRequest, role: str, *extra: Any, digest: bool = False) -> random.Random: ...

    def _propose(self, request: LLMRequest) -> tuple[str, str]: ...

    def p_first_try(self, difficulty: float, epoch: int = 0) -> float: ...

    def p_fix(self, p_first_try: float, clarity: float) -> float: ...


@dataclass(frozen=True)
class CheckedProblem:
    """One problem with several right outputs: its statement (whose first sentence, ``title``, the solver
    recognises it by), a reference, its checker, another right answer, wrong ones, and its tests (fixed
    edge cases that every stand-in fails on one of, and a few drawn at random)."""

    key: str
    title: str
    statement: str
    difficulty: float
    tags: tuple[str, ...]
    topics: tuple[str, ...]
    reference: str
    checker: str
    other_right: str
    wrong: tuple[str, ...]
    tests: Callable[[random.Random], list[str]]


def _ints(values: list[int]) -> str:
    return " ".join(map(str, values))


# -- the position of any largest value -------------------------------------------------------------

_READ_LIST = "n = int(input())\nxs = list(map(int, input().split()))[:n]\n"


def _argmax_tests(rng: random.Random) -> list[str]:
    fixed = [[1, 3, 3], [7], [5, 5, 5, 5], [9, 1, 2], [-5, -2, -9, -2], [1, 2, 9, 2, 9]]
    drawn = []
    for _ in range(3):
        n = rng.randint(5, 40)
        top = rng.randint(5, 50)
        xs = [rng.randint(-50, top - 1) for _ in range(n)]
        for i in rng.sample(range(n), rng.randint(1, 3)):
            xs[i] = top
        drawn.append(xs)
    return [f"{len(xs)}\n{_ints(xs)}\n" for xs in [*fixed, *drawn]]


ARGMAX = CheckedProblem(
    key="argmax",
    title="Print the position of a largest of n integers",
    statement=(
        "Print the position of a largest of n integers. Input: n (1 <= n <= 1000) on the first line, then n "
        "integers between -1000 and 1000 on the second. Output: one integer, the 1-based position of a largest "
        "value; when several values tie for the largest, the position of any of them is accepted. Example: for "
        "the input 3 / 4 8 8 the answer is 2 (or 3)."
    ),
    difficulty=0.25,
    tags=("arrays", "several answers"),
    topics=("lists", "sorting and searching"),
    reference=_READ_LIST + "print(xs.index(max(xs)) + 1)\n",
    checker=(
        "import json\n"
        "import sys\n"
        "\n"
        "data = json.load(sys.stdin)\n"
        "lines = data['input'].split('\\n')\n"
        "n = int(lines[0])\n"
        "xs = list(map(int, lines[1].split()))[:n]\n"
        "tokens = data['actual'].split()\n"
        "if len(tokens) != 1 or not tokens[0].lstrip('-').isdigit():\n"
        "    sys.exit('print one position')\n"
        "i = int(tokens[0])\n"
        "if not (1 <= i <= n and xs[i - 1] == max(xs)):\n"
        "    sys.exit(f'position {i} does not hold a largest value')\n"
    ),
    other_right=_READ_LIST + "best = max(xs)\nprint(max(i for i, x in enumerate(xs, 1) if x == best))\n",
    wrong=(
        _READ_LIST + "print(xs.index(max(xs)))\n",  # 0-based
        _READ_LIST + "print(xs.index(min(xs)) + 1)\n",  # a smallest one
        _READ_LIST + "print(max(xs))\n",  # the value, not its position
        _READ_LIST + "best = 0\nfor i in range(1, n):\n    if xs[i] > xs[best]:\n        best = i\nprint(best)\n",
    ),
    tests=_argmax_tests,
)


# -- any two positions whose values sum to a target ----------------------------------------------------


def _pair_sum_tests(rng: random.Random) -> list[str]:
    fixed = [
        (9, [2, 7, 4, 5, 1, 8]),  # three pairs
        (6, [3, 1, 2]),  # 3 + 3 would need the 3 twice: none
        (6, [3, 3]),
        (10, [1, 2, 3]),
        (0, [-4, 4, 0, 5, -5, 0]),
        (8, [4, 1, 4, 7, 1]),
    ]
    drawn = []
    for _ in range(3):
        n = rng.randint(6, 40)
        xs = [rng.randint(-30, 30) for _ in range(n)]
        i, j = rng.sample(range(n), 2)
        drawn.append((xs[i] + xs[j], xs))
    return [f"{len(xs)} {t}\n{_ints(xs)}\n" for t, xs in [*fixed, *drawn]]


_READ_PAIRS = "n, t = map(int, input().split())\nxs = list(map(int, input().split()))[:n]\n"

PAIR_SUM = CheckedProblem(
    key="pair_sum",
    title="Find two positions whose values sum to a target",
    statement=(
        "Find two positions whose values sum to a target. Input: n and t on the first line (2 <= n <= 1000, "
        "|t| <= 2000), then n integers between -1000 and 1000. Output: two positions i < j (1-based), separated "
        "by a space, with a_i + a_j = t; when several pairs do, any of them is accepted. If no pair does, print "
        "-1. Example: for the input 4 5 / 1 4 2 3 the answer is 1 2 (or 3 4)."
    ),
    difficulty=0.4,
    tags=("hashing", "several answers"),
    topics=("dictionaries", "intervals"),
    reference=(
        _READ_PAIRS + "seen = {}\n"
        "for j, x in enumerate(xs):\n"
        "    if t - x in seen:\n"
        "        print(seen[t - x] + 1, j + 1)\n"
        "        break\n"
        "    seen.setdefault(x, j)\n"
        "else:\n"
        "    print(-1)\n"
    ),
    checker=(
        "import json\n"
        "import sys\n"
        "\n"
        "data = json.load(sys.stdin)\n"
        "lines = data['input'].split('\\n')\n"
        "n, t = map(int, lines[0].split())\n"
        "xs = list(map(int, lines[1].split()))[:n]\n"
        "tokens = data['actual'].split()\n"
        "if not all(tok.lstrip('-').isdigit() for tok in tokens):\n"
        "    sys.exit('print two positions, or -1')\n"
        "got = list(map(int, tokens))\n"
        "seen, some = set(), False\n"
        "for x in xs:\n"
        "    some = some or t - x in seen\n"
        "    seen.add(x)\n"
        "if got == [-1]:\n"
        "    sys.exit('there is a pair' if some else 0)\n"
        "if len(got) != 2 or not 1 <= got[0] < got[1] <= n:\n"
        "    sys.exit('print two positions i < j between 1 and n')\n"
        "if xs[got[0] - 1] + xs[got[1] - 1] != t:\n"
        "    sys.exit(f'the values at {got[0]} and {got[1]} do not sum to {t}')\n"
    ),
    other_right=(
        _READ_PAIRS + "pair = next(((i + 1, j + 1) for j in range(n - 1, 0, -1) for i in range(j) "
        "if xs[i] + xs[j] == t), None)\n"
        "print(*pair) if pair else print(-1)\n"
    ),
    wrong=(
        # one value used twice
        _READ_PAIRS + "seen = {}\nfor j, x in enumerate(xs):\n    seen.setdefault(x, j)\n"
        "    if t - x in seen:\n        print(seen[t - x] + 1, j + 1)\n        break\nelse:\n    print(-1)\n",
        # the values, not their positions
        _READ_PAIRS + "seen = set()\nfor x in xs:\n    if t - x in seen:\n        print(t - x, x)\n        break\n"
        "    seen.add(x)\nelse:\n    print(-1)\n",
        # 0-based positions
        _READ_PAIRS + "seen = {}\nfor j, x in enumerate(xs):\n    if t - x in seen:\n        print(seen[t - x], j)\n"
        "        break\n    seen.setdefault(x, j)\nelse:\n    print(-1)\n",
    ),
    tests=_pair_sum_tests,
)


# -- any proper divisor ------------------------------------------------------------------------------------


def _divisor_tests(rng: random.Random) -> list[str]:
    fixed = [360, 2, 49, 1001, 97, 4, 999966000289, 1000003]  # 999983 squared; 1000003 is prime
    drawn = [rng.randint(2, 10**6) for _ in range(3)]
    return [f"{n}\n" for n in [*fixed, *drawn]]


DIVISOR = CheckedProblem(
    key="divisor",
    title="Print a proper divisor of n",
    statement=(
        "Print a proper divisor of n. Input: one integer n (2 <= n <= 10^12). Output: a divisor d of n with "
        "1 < d < n; when there are several, any of them is accepted. If n is prime, print -1. Example: for 15 "
        "the answer is 3 (or 5), for 13 it is -1."
    ),
    difficulty=0.35,
    tags=("number theory", "several answers"),
    topics=("arithmetic", "simulation"),
    reference=("n = int(input())\nd = 2\nwhile d * d <= n and n % d:\n    d += 1\nprint(d if d * d <= n else -1)\n"),
    checker=(
        "import json\n"
        "import sys\n"
        "\n"
        "data = json.load(sys.stdin)\n"
        "n = int(data['input'].split()[0])\n"
        "tokens = data['actual'].split()\n"
        "if len(tokens) != 1 or not tokens[0].lstrip('-').isdigit():\n"
        "    sys.exit('print one number')\n"
        "d = int(tokens[0])\n"
        "if d == -1:\n"
        "    k = 2\n"
        "    while k * k <= n:\n"
        "        if n % k == 0:\n"
        "            sys.exit(f'{n} is not prime: {k} divides it')\n"
        "        k += 1\n"
        "elif not (1 < d < n and n % d == 0):\n"
        "    sys.exit(f'{d} is not a divisor of {n} between 1 and {n}')\n"
    ),
    other_right=(
        "n = int(input())\nd = 2\nwhile d * d <= n and n % d:\n    d += 1\nprint(n // d if d * d <= n else -1)\n"
    ),
    wrong=(
        # stops short of the square root: misses the divisor of a prime's square
        "n = int(input())\nd = 2\nwhile d * d < n and n % d:\n    d += 1\nprint(d if d * d < n else -1)\n",
        # a prime is its own divisor
        "n = int(input())\nd = 2\nwhile n % d:\n    d += 1\nprint(d)\n",
        # the number of divisors, not one of them
        "n = int(input())\nprint(sum(1 for d in range(2, min(n, 10**6)) if n % d == 0) or -1)\n",
    ),
    tests=_divisor_tests,
)

PROBLEMS: tuple[CheckedProblem, ...] = (ARGMAX, PAIR_SUM, DIVISOR)
"""Every problem with several right outputs the fake proposes, in a fixed order."""


def task_json(problem: CheckedProblem, rng: random.Random) -> dict[str, Any]:
    """``problem`` as a generator writes a program task: statement, reference, its tests' inputs (the
    reference fills their outputs), and its ``checker``."""
    return {
        "description": problem.statement,
        "entry_point": "",
        "reference_code": problem.reference,
        "tests": [{"input": text} for text in problem.tests(rng)],
        "checker": problem.checker,
        "difficulty": problem.difficulty,
        "tags": list(problem.tags),
    }


def identify(prompt: str) -> CheckedProblem | None:
    """The problem whose statement opens with a sentence ``prompt`` holds, or None."""
    return next((p for p in PROBLEMS if p.title + "." in prompt), None)


def play(model: Player, request: LLMRequest, role: str) -> tuple[str, str] | None:
    """The answer to ``request`` when it concerns these problems (module docstring), else None."""
    if role == "generator":
        return _propose(model, request)
    return _solve(model, request)


def _propose(model: Player, request: LLMRequest) -> tuple[str, str] | None:
    prompt = "\n".join(m.content for m in request.messages)
    if WRITING_MARKER not in prompt or model.profile.noisy:
        return None
    on_topic = [p for p in PROBLEMS if any(f"Topic for this request: {t}." in prompt for t in p.topics)]
    fresh = [p for p in on_topic if p.title + "." not in prompt]  # one already shown would be a duplicate
    rng = model._rng(request, "checked programs", digest=True)
    if not fresh or rng.random() >= CHECKED_SHARE:
        return None
    text, finish = model._propose(request)
    try:
        answer = json.loads(text)
        tasks = answer["tasks"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(tasks, list) or not tasks:
        return None
    problem = rng.choice(fresh)
    tasks[rng.randrange(len(tasks))] = task_json(problem, rng)
    return json.dumps({"tasks": tasks}, indent=2), finish


def _code(text: str) -> str | None:
    start = text.find("```python\n")
    end = text.find("```", start + 10) if start >= 0 else -1
    return text[start + 10 : end] if end >= 0 else None


def _solve(model: Player, request: LLMRequest) -> tuple[str, str] | None:
    messages = request.messages
    first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    task_prompt = "\n\n".join(m.content for m in messages[:first_answer] if m.role != "assistant")
    # asked in another language, the fake still answers in Python (polyglot's docstring says why)
    problem = identify(task_prompt) if asked_language(task_prompt) is not None else None
    if problem is None:
        return None
    answers = [m.content for m in messages if m.role == "assistant"]
    epoch = request.metadata.get("epoch")
    p = model.p_first_try(problem.difficulty, epoch if isinstance(epoch, int) else 0)
    rng = model._rng(request, "solver", "checked", problem.key, len(answers) + 1)
    previous = _code(answers[-1]) if answers else None
    if previous is None:
        code = problem.other_right if rng.random() < p else rng.choice(problem.wrong)
    elif previous in (problem.other_right, problem.reference):
        code = previous
    elif rng.random() < model.p_fix(p, 1.0):  # the feedback shows the input, a right output and the rejected one
        code = problem.other_right
    else:
        code = rng.choice([w for w in problem.wrong if w != previous] or list(problem.wrong))
    opening = "Here is a fixed program." if answers else "Here is my program."
    return f"{opening}\n\n```python\n{code}```", "stop"
