"""The ``matrices`` family of the fake's task bank: its classic exercises and its
building blocks of composed ones.

``VARIANTS`` are the classic exercises, in the order the bank lists them; ``STEPS`` the family's
pipeline steps (:mod:`spade_llm.fake.pipelines`). :mod:`spade_llm.fake.catalogue` puts every
family's together, the steps in its ``STEP_ORDER``.
"""

from __future__ import annotations

import random

from ..inputs import _matrix, _size
from ..steps import Step, _step
from ..variant import Args, Params, Variant, _code, _edit

_TRANSPOSE = Variant(
    family="matrices",
    name="transpose",
    topic="rows and columns",
    difficulty=0.15,
    entry_points=("transpose", "transpose_matrix", "swap_axes"),
    args=("matrix",),
    statements=(
        "Write `$sig` that returns the transpose of `matrix`, a list of equally long rows: row `i` of the "
        "result is column `i` of the input. The matrix need not be square, and an empty matrix transposes "
        "to `[]`.",
        "Implement `$sig`: turn the rows of the rectangular matrix `matrix` into columns, returning a new list "
        "of lists. `matrix` is never ragged, but it may be empty.",
        "`$sig` should flip `matrix` over its main diagonal, so an `r x c` matrix becomes a `c x r` one "
        "(an empty matrix stays empty).",
    ),
    code=_code(
        """
        def $ep(matrix):
            if not matrix:
                return []
            return [[row[c] for row in matrix] for c in range(len(matrix[0]))]
        """
    ),
    make_input=lambda rng, p, scale: (_matrix(rng, _size(rng, 1, 6, scale), _size(rng, 2, 6, scale), 0, 9),),
    edges=lambda p: [([],), ([[1, 2, 3]],), ([[1, 2], [3, 4], [5, 6]],)],
    bugs={
        "exception": _edit("    if not matrix:\n        return []\n", ""),
        "off_by_one": _edit("range(len(matrix[0]))", "range(len(matrix[0]) - 1)"),
        "edge_case": _edit("range(len(matrix[0]))", "range(len(matrix))"),
    },
)


def _multiply_input(rng: random.Random, p: Params, scale: float) -> Args:
    n, m, q = (_size(rng, 1, 5, scale) for _ in range(3))
    return _matrix(rng, n, m, -5, 9), _matrix(rng, m, q, -5, 9)


_MULTIPLY = Variant(
    family="matrices",
    name="multiply",
    topic="matrix product",
    difficulty=0.34,
    entry_points=("matmul", "multiply_matrices", "matrix_product"),
    args=("a", "b"),
    statements=(
        "Write `$sig` that returns the matrix product of `a` (an `n x m` matrix) and `b` (an `m x p` matrix) "
        "as a new `n x p` list of lists. Entry `[i][j]` is the sum over `k` of `a[i][k] * b[k][j]`.",
        "Implement `$sig`: multiply two integer matrices given as lists of rows. The number of columns of `a` "
        "equals the number of rows of `b`; the result has as many rows as `a` and as many columns as `b`.",
        "`$sig` computes `a @ b` for matrices stored as nested lists (no NumPy). Dimensions always match, and "
        "every matrix has at least one row and one column.",
    ),
    code=_code(
        """
        def $ep(a, b):
            rows, inner, cols = len(a), len(b), len(b[0])
            result = [[0] * cols for _ in range(rows)]
            for i in range(rows):
                for j in range(cols):
                    total = 0
                    for k in range(inner):
                        total += a[i][k] * b[k][j]
                    result[i][j] = total
            return result
        """
    ),
    make_input=_multiply_input,
    edges=lambda p: [
        ([[1, 2], [3, 4]], [[5, 6], [7, 8]]),
        ([[1, 2, 3]], [[4], [5], [6]]),
        ([[2]], [[3]]),
    ],
    bugs={
        "exception": _edit("for k in range(inner):", "for k in range(inner + 1):"),
        "logic": _edit("a[i][k] * b[k][j]", "a[i][k] * b[j][k]"),
    },
)

_SPIRAL = Variant(
    family="matrices",
    name="spiral",
    topic="boundary walking",
    difficulty=0.55,
    entry_points=("spiral_order", "spiral_walk", "read_spiral"),
    args=("matrix",),
    statements=(
        "Write `$sig` that returns the elements of `matrix` in clockwise spiral order, starting at the top-left "
        "corner and moving right along the first row. The matrix is rectangular (not necessarily square) and "
        "may be empty.",
        "Implement `$sig`: walk around `matrix` layer by layer (along the top row, down the right column, back "
        "along the bottom row and up the left column) and return the visited values as a flat list, visiting "
        "each element exactly once.",
        "`$sig` reads a rectangular grid in a clockwise spiral from the top-left corner inwards and returns the "
        "values in that order; an empty grid gives `[]`.",
    ),
    code=_code(
        """
        def $ep(matrix):
            result = []
            if not matrix:
                return result
            top, bottom = 0, len(matrix) - 1
            left, right = 0, len(matrix[0]) - 1
            while top <= bottom and left <= right:
                for c in range(left, right + 1):
                    result.append(matrix[top][c])
                top += 1
                for r in range(top, bottom + 1):
                    result.append(matrix[r][right])
                right -= 1
                if top <= bottom:
                    for c in range(right, left - 1, -1):
                        result.append(matrix[bottom][c])
                    bottom -= 1
                if left <= right:
                    for r in range(bottom, top - 1, -1):
                        result.append(matrix[r][left])
                    left += 1
            return result
        """
    ),
    make_input=lambda rng, p, scale: (_matrix(rng, _size(rng, 2, 7, scale), _size(rng, 2, 7, scale), 0, 99),),
    edges=lambda p: [
        ([],),
        ([[1, 2, 3]],),
        ([[1], [2], [3]],),
        ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],),
        ([[1, 2, 3, 4], [5, 6, 7, 8]],),
    ],
    bugs={
        "exception": _edit("    if not matrix:\n        return result\n", ""),
        "edge_case": _edit(
            "        if top <= bottom:\n"
            "            for c in range(right, left - 1, -1):\n"
            "                result.append(matrix[bottom][c])\n"
            "            bottom -= 1\n",
            "        for c in range(right, left - 1, -1):\n"
            "            result.append(matrix[bottom][c])\n"
            "        bottom -= 1\n",
        ),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _TRANSPOSE,
    _MULTIPLY,
    _SPIRAL,
)
"""The matrices exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "row_sums", "matrices", "rows", "grid", "ints", 0.04, "replace the grid by the sum of each row",
        "$OUT = [sum(row) for row in $IN]", "row_sums", bugs={"off_by_one": [("sum(row) for", "sum(row[1:]) for")]},
    ),
    _step(
        "col_sums", "matrices", "columns", "grid", "ints", 0.1,
        "replace the grid by the sum of each column (no rows give no sums)",
        "$OUT = [sum(row[c] for row in $IN) for c in range(len($IN[0]))] if $IN else []", "column_sums",
        bugs={
            "exception": [
                (
                    "[sum(row[c] for row in $IN) for c in range(len($IN[0]))] if $IN else []",
                    "[sum(row[c] for row in $IN) for c in range(len($IN[0]))]",
                )
            ],
        },
    ),
    _step(
        "flatten_grid", "matrices", "flattening", "grid", "ints", 0.04,
        "read the grid row by row into one flat list",
        """
        cells = []
        for row in $IN:
            cells.extend(row)
        $OUT = cells
        """,
        "cells",
    ),
    _step(
        "transpose", "matrices", "transpose", "grid", "grid", 0.1,
        "transpose the grid (row i becomes column i)",
        """
        flipped = []
        for c in range(len($IN[0]) if $IN else 0):
            flipped.append([row[c] for row in $IN])
        $OUT = flipped
        """,
        "transposed", bugs={"exception": [("range(len($IN[0]) if $IN else 0)", "range(len($IN[0]))")]},
    ),
    _step(
        "rotate_grid", "matrices", "rotation", "grid", "grid", 0.18, "rotate the grid 90 degrees clockwise",
        "$OUT = [list(row) for row in zip(*$IN[::-1])]", "rotated_grid",
        bugs={"logic": [("zip(*$IN[::-1])", "zip(*$IN)")]},
    ),
    _step(
        "diagonal", "matrices", "diagonals", "grid", "ints", 0.06,
        "take the main diagonal (the entries whose row and column numbers are equal)",
        "$OUT = [$IN[i][i] for i in range(min(len($IN), len($IN[0]) if $IN else 0))]", "diagonal",
        bugs={
            "off_by_one": [
                (
                    "range(min(len($IN), len($IN[0]) if $IN else 0))",
                    "range(min(len($IN), len($IN[0]) if $IN else 0) - 1)",
                )
            ],
        },
    ),
    _step(
        "neighbour_sums", "matrices", "neighbourhoods", "grid", "grid", 0.2,
        "replace every entry by the sum of its up to four horizontal and vertical neighbours",
        """
        rows = len($IN)
        sums = []
        for r in range(rows):
            sums.append([])
            for c in range(len($IN[r])):
                acc = 0
                for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    if 0 <= r + dr < rows and 0 <= c + dc < len($IN[r]):
                        acc += $IN[r + dr][c + dc]
                sums[r].append(acc)
        $OUT = sums
        """,
        "neighbour_sums",
        bugs={
            "edge_case": [
                (
                    "if 0 <= r + dr < rows and 0 <= c + dc < len($IN[r]):",
                    "if r + dr < rows and c + dc < len($IN[r]):",
                )
            ],
        },
    ),
    _step(
        "spiral", "matrices", "spiral order", "grid", "ints", 0.35,
        "read its entries in clockwise spiral order, starting at the top-left corner",
        """
        order = []
        top, bottom, left, right = 0, len($IN) - 1, 0, (len($IN[0]) - 1 if $IN else -1)
        while top <= bottom and left <= right:
            for c in range(left, right + 1):
                order.append($IN[top][c])
            for r in range(top + 1, bottom + 1):
                order.append($IN[r][right])
            if top < bottom and left < right:
                for c in range(right - 1, left - 1, -1):
                    order.append($IN[bottom][c])
                for r in range(bottom - 1, top, -1):
                    order.append($IN[r][left])
            top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
        $OUT = order
        """,
        "spiral", bugs={"edge_case": [("if top < bottom and left < right:", "if True:")]},
    ),
    _step(
        "local_peaks", "matrices", "neighbourhoods", "grid", "int", 0.2,
        "count the entries strictly larger than each of their up to four horizontal and vertical neighbours",
        """
        peaks = 0
        for r, row in enumerate($IN):
            for c, x in enumerate(row):
                around = [$IN[r + dr][c + dc] for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
                          if 0 <= r + dr < len($IN) and 0 <= c + dc < len(row)]
                if all(x > y for y in around):
                    peaks += 1
        $OUT = peaks
        """,
        "peak_count", bugs={"edge_case": [("if all(x > y for y in around):", "if all(x >= y for y in around):")]},
    ),
)  # fmt: skip
"""The matrices building blocks of pipeline exercises."""
