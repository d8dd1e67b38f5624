"""The ``simulation`` family of the fake's task bank: its classic exercises and its
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

_ROBOT = Variant(
    family="simulation",
    name="robot",
    topic="grid walking",
    difficulty=0.24,
    entry_points=("final_position", "run_robot", "walk"),
    args=("commands",),
    statements=(
        "A robot starts at `(0, 0)` facing north (the positive y direction). Write `$sig` that executes the "
        "command string `commands` and returns its final position as `[x, y]`. `'F'` moves one step forward, "
        "`'L'` and `'R'` turn 90 degrees left or right on the spot.$b_note",
        "Implement `$sig`: simulate a robot on a grid that begins at the origin looking north. Each character "
        "of `commands` is one of $cmds: F steps forward, L turns left, R turns right.$b_note Return the final "
        "coordinates as a list `[x, y]` (east is +x, north is +y).",
        "`$sig` follows turtle-style instructions ($cmds) from the origin, initially heading north (+y), and "
        "reports where the robot ends up as `[x, y]`.$b_note Turning does not change the position.",
    ),
    code=_code(
        """
        def $ep(commands):
            dx, dy = 0, 1
            x = y = 0
            for command in commands:
                if command == "F":
                    x, y = x + dx, y + dy
                elif command == "B":
                    x, y = x - dx, y - dy
                elif command == "L":
                    dx, dy = -dy, dx
                elif command == "R":
                    dx, dy = dy, -dx
            return [x, y]
        """
    ),
    params=(
        {"cmds": "F, L and R", "b_note": "", "letters": "FFFLR"},
        {
            "cmds": "F, B, L and R",
            "b_note": " `'B'` moves one step backwards without turning.",
            "letters": "FFBLR",
            "_bump": 0.03,
        },
    ),
    make_input=lambda rng, p, scale: ("".join(rng.choice(p["letters"]) for _ in range(_size(rng, 3, 35, scale))),),
    edges=lambda p: [("",), ("FFRFF",), ("LFLF",), ("FRFRFRF",)],
    bugs={
        "logic": _edit(
            '        elif command == "L":\n            dx, dy = -dy, dx\n'
            '        elif command == "R":\n            dx, dy = dy, -dx\n',
            '        elif command == "L":\n            dx, dy = dy, -dx\n'
            '        elif command == "R":\n            dx, dy = -dy, dx\n',
        ),
        "edge_case": _edit("dx, dy = 0, 1", "dx, dy = 1, 0"),
    },
)


def _bank_input(rng: random.Random, p: Params, scale: float) -> Args:
    ops = []
    for _ in range(_size(rng, 2, 18, scale)):
        ops.append([rng.choice(("deposit", "withdraw", "withdraw")), rng.randint(1, 80)])
    return (ops,)


_BANK = Variant(
    family="simulation",
    name="bank_account",
    topic="state machines",
    difficulty=0.28,
    entry_points=("apply_transactions", "simulate_account", "process_ledger"),
    args=("operations",),
    statements=(
        "A bank account starts with a balance of $start. Write `$sig` that applies `operations`, a list of "
        "`[kind, amount]` pairs where `kind` is `'deposit'` or `'withdraw'`, in order. A withdrawal larger "
        "than the current balance is rejected and leaves the balance unchanged. Return "
        "`[final_balance, number_of_rejected_withdrawals]`.",
        "Implement `$sig`: starting from a balance of $start, process each `[kind, amount]` operation "
        "(`'deposit'` adds, `'withdraw'` subtracts). Withdrawals that would make the balance negative are "
        "refused. Return a two-element list: the final balance and how many withdrawals were refused.",
        "`$sig` simulates an account opened with $start units: deposits always succeed, and a withdrawal "
        "succeeds only if the balance covers it (an exact match is fine). Return `[balance, refused]` after "
        "all operations in `operations` (each `[kind, amount]`).",
    ),
    code=_code(
        """
        def $ep(operations):
            balance = $start
            rejected = 0
            for kind, amount in operations:
                if kind == "deposit":
                    balance += amount
                elif amount <= balance:
                    balance -= amount
                else:
                    rejected += 1
            return [balance, rejected]
        """
    ),
    params=({"start": 0}, {"start": 100}),
    make_input=_bank_input,
    edges=lambda p: [
        ([],),
        ([["deposit", 50], ["withdraw", 50 + p["start"]]],),
        ([["withdraw", p["start"] + 10], ["deposit", 5]],),
    ],
    bugs={
        "off_by_one": _edit("elif amount <= balance:", "elif amount < balance:"),
        "edge_case": _edit(
            "        elif amount <= balance:\n            balance -= amount\n"
            "        else:\n            rejected += 1\n",
            "        else:\n            balance -= amount\n",
        ),
    },
)

_JOSEPHUS = Variant(
    family="simulation",
    name="josephus",
    topic="circular elimination",
    difficulty=0.44,
    entry_points=("josephus", "elimination_order", "circle_game"),
    args=("n", "k"),
    statements=(
        "`n` people numbered 1 to `n` stand in a circle. Starting from person 1, count `k` people around the "
        "circle (the starting person counts as 1); the `k`-th person leaves and counting restarts from the "
        "next person. Write `$sig` that returns $ret_words.",
        "Implement `$sig` for the Josephus game: people `1..n` in a circle, every `k`-th person is eliminated "
        "(the count starts at person 1 and continues from the person after each elimination) until nobody is "
        "left. Return $ret_words.",
        "`$sig` simulates eliminating every `k`-th person from a circle of `n` people labelled 1 through `n`, "
        "counting from person 1, and returns $ret_words. `n` and `k` are at least 1.",
    ),
    code=_code(
        """
        def $ep(n, k):
            people = list(range(1, n + 1))
            order = []
            index = 0
            while people:
                index = (index + k - 1) % len(people)
                order.append(people.pop(index))
            return $ret
        """
    ),
    params=(
        {"ret": "order", "ret_words": "the list of people in the order they leave the circle"},
        {"ret": "order[-1]", "ret_words": "the number of the last person remaining", "_bump": -0.04},
    ),
    make_input=lambda rng, p, scale: (_size(rng, 2, 30, scale), rng.randint(2, 2 + round(8 * scale))),
    edges=lambda p: [(7, 3), (1, 1), (5, 2), (6, 1)],
    bugs={
        "off_by_one": _edit("index + k - 1", "index + k"),
        "exception": _edit("(index + k - 1) % len(people)", "index + k - 1"),
        "edge_case": _edit("list(range(1, n + 1))", "list(range(n))"),
    },
)

_LIFE = Variant(
    family="simulation",
    name="life_step",
    topic="cellular automata",
    difficulty=0.54,
    entry_points=("life_step", "next_generation", "evolve"),
    args=("grid",),
    statements=(
        "Write `$sig` that advances the cellular automaton `grid` (a rectangular list of rows of 0s and 1s) by "
        "one generation and returns the new grid. Each cell has up to eight neighbours; cells outside the grid "
        "count as dead. A live cell survives with two or three live neighbours, otherwise it dies; $rule_words.",
        "Implement `$sig`: compute one step of the Game of Life on a finite board (no wrap-around). Live cells "
        "with 2 or 3 live neighbours stay alive, all other live cells die, and $rule_words. Return a new grid; "
        "do not modify the input.",
        "`$sig` returns the next generation of the 0/1 grid `grid` under these rules: neighbours are the 8 "
        "surrounding cells inside the board; survival needs 2 or 3 live neighbours; $rule_words.",
    ),
    code=_code(
        """
        def $ep(grid):
            rows = len(grid)
            cols = len(grid[0]) if rows else 0
            result = []
            for r in range(rows):
                row = []
                for c in range(cols):
                    alive = 0
                    for dr in (-1, 0, 1):
                        for dc in (-1, 0, 1):
                            if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols:
                                alive += grid[r + dr][c + dc]
                    if grid[r][c]:
                        row.append(1 if alive in (2, 3) else 0)
                    else:
                        row.append(1 if alive in $born_r else 0)
                result.append(row)
            return result
        """
    ),
    params=(
        {"born": (3,), "rule_words": "a dead cell with exactly three live neighbours becomes alive"},
        {
            "born": (3, 6),
            "rule_words": "a dead cell with exactly three or exactly six live neighbours becomes alive "
            "(the HighLife rule)",
            "_bump": 0.03,
        },
    ),
    make_input=lambda rng, p, scale: (
        [[1 if rng.random() < 0.4 else 0 for _ in range(cols)] for _ in range(_size(rng, 2, 7, scale))]
        if (cols := _size(rng, 2, 7, scale))
        else [],
    ),
    edges=lambda p: [([[0, 1, 0], [0, 1, 0], [0, 1, 0]],), ([[1]],), ([[1, 1], [1, 1]],)],
    bugs={
        "edge_case": _edit("if (dr or dc) and 0 <= r + dr", "if 0 <= r + dr"),
        "exception": _edit(
            "if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols:",
            "if dr or dc:",
        ),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _ROBOT,
    _BANK,
    _JOSEPHUS,
    _LIFE,
)
"""The simulation exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "balances", "simulation", "accounts", "ints", "ints", 0.15,
        "treat the numbers as deposits and withdrawals on an account that starts at 0, skip any withdrawal that "
        "would make the balance negative, and list the balance after each number",
        """
        balance = 0
        history = []
        for amount in $IN:
            if balance + amount >= 0:
                balance += amount
            history.append(balance)
        $OUT = history
        """,
        "balances", bugs={"edge_case": [("if balance + amount >= 0:", "if balance + amount > 0:")]},
    ),
    _step(
        "robot_walk", "simulation", "grid walks", "moves", "ints", 0.1,
        "move a robot from `[0, 0]` (U adds 1 to y, D subtracts 1, R adds 1 to x, L subtracts 1) and give its "
        "final position `[x, y]`",
        """
        x = y = 0
        for ch in $IN:
            if ch == 'U':
                y += 1
            elif ch == 'D':
                y -= 1
            elif ch == 'R':
                x += 1
            elif ch == 'L':
                x -= 1
        $OUT = [x, y]
        """,
        "position", bugs={"logic": [("        x -= 1\n", "        y -= 1\n")]},
    ),
    _step(
        "cells_visited", "simulation", "grid walks", "moves", "int", 0.2,
        "move a robot from (0, 0) one cell per command (U up, D down, L left, R right) and count the different "
        "cells it visits, the start included",
        """
        x = y = 0
        visited = {(0, 0)}
        for ch in $IN:
            if ch in 'UDLR':
                x += (ch == 'R') - (ch == 'L')
                y += (ch == 'U') - (ch == 'D')
                visited.add((x, y))
        $OUT = len(visited)
        """,
        "visited", bugs={"edge_case": [("visited = {(0, 0)}", "visited = set()")]},
    ),
    _step(
        "elimination", "simulation", "elimination games", "ints", "ints", 0.3,
        "stand the numbers in a circle and, starting from the first, repeatedly remove every $k-th number "
        "(counting restarts after each removal), listing the numbers in the order they are removed",
        """
        circle = list($IN)
        removed = []
        pos = 0
        while circle:
            pos = (pos + $k - 1) % len(circle)
            removed.append(circle.pop(pos))
        $OUT = removed
        """,
        "removal_order", ({"k": 2}, {"k": 3}),
        {
            "off_by_one": [("pos = (pos + $k - 1) % len(circle)", "pos = (pos + $k) % len(circle)")],
        },
    ),
    _step(
        "collatz", "simulation", "iterated maps", "int", "int", 0.1,
        "count the steps of the Collatz process (halve an even number, turn an odd one into 3 * n + 1) until it "
        "reaches 1 (0 steps for a number below 2)",
        """
        steps = 0
        current = $IN
        while current > 1:
            current = current // 2 if current % 2 == 0 else 3 * current + 1
            steps += 1
        $OUT = steps
        """,
        "collatz_steps", bugs={"off_by_one": [("while current > 1:", "while current > 2:")]},
    ),
    _step(
        "parity_automaton", "simulation", "cellular automata", "ints", "ints", 0.2,
        "replace every number by 1 when exactly one of its two neighbours in the list is odd and by 0 otherwise "
        "(a missing neighbour counts as even)",
        """
        odd = [x % 2 for x in $IN]
        cells = []
        for i in range(len(odd)):
            left = odd[i - 1] if i > 0 else 0
            right = odd[i + 1] if i + 1 < len(odd) else 0
            cells.append(1 if left + right == 1 else 0)
        $OUT = cells
        """,
        "next_cells", bugs={"edge_case": [("left = odd[i - 1] if i > 0 else 0", "left = odd[i - 1]")]},
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "returns_to_start", "simulation", "grid walks", "moves", "int", 0.08,
        "move a robot from (0, 0) one cell per command (U up, D down, L left, R right) and count how often it is "
        "back at (0, 0) after a move",
        """
        x = y = 0
        returns = 0
        for ch in $IN:
            if ch in 'UDLR':
                x += (ch == 'R') - (ch == 'L')
                y += (ch == 'U') - (ch == 'D')
                if x == 0 and y == 0:
                    returns += 1
        $OUT = returns
        """,
        "returns", bugs={"logic": [("if x == 0 and y == 0:", "if x == 0 or y == 0:")]},
    ),
)  # fmt: skip
"""The simulation building blocks of pipeline exercises."""
