"""The ``graphs`` family of the fake's task bank: its classic exercises and its
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

_DIRS4 = ((1, 0), (-1, 0), (0, 1), (0, -1))
_DIRS8 = (*_DIRS4, (1, 1), (1, -1), (-1, 1), (-1, -1))

_ISLANDS = Variant(
    family="graphs",
    name="islands",
    topic="flood fill",
    difficulty=0.46,
    entry_points=("count_islands", "island_count", "num_islands"),
    args=("grid",),
    statements=(
        "`grid` is a list of equal-length strings made of `'#'` (land) and `'.'` (water). Write `$sig` that "
        "returns the number of islands: maximal groups of land cells connected $adj.",
        "Implement `$sig`: count the connected components of `'#'` cells in the character grid `grid`, where "
        "two land cells are connected when they are adjacent $adj. An empty grid has no islands.",
        "`$sig` scans a map given as rows of `'#'` and `'.'` and returns how many separate islands of `'#'` it "
        "contains; cells belong to the same island when linked through neighbours adjacent $adj.",
    ),
    code=_code(
        """
        def $ep(grid):
            rows = len(grid)
            cols = len(grid[0]) if rows else 0
            seen = set()
            islands = 0
            for r in range(rows):
                for c in range(cols):
                    if grid[r][c] == "#" and (r, c) not in seen:
                        islands += 1
                        stack = [(r, c)]
                        seen.add((r, c))
                        while stack:
                            cr, cc = stack.pop()
                            for dr, dc in $dirs_r:
                                nr, nc = cr + dr, cc + dc
                                inside = 0 <= nr < rows and 0 <= nc < cols
                                if inside and grid[nr][nc] == "#" and (nr, nc) not in seen:
                                    seen.add((nr, nc))
                                    stack.append((nr, nc))
            return islands
        """
    ),
    params=(
        {"dirs": _DIRS4, "adj": "horizontally or vertically (not diagonally)"},
        {"dirs": _DIRS8, "adj": "horizontally, vertically or diagonally", "_bump": 0.03},
    ),
    make_input=lambda rng, p, scale: (
        ["".join("#" if rng.random() < 0.45 else "." for _ in range(cols)) for _ in range(_size(rng, 2, 9, scale))]
        if (cols := _size(rng, 2, 11, scale))
        else [],
    ),
    edges=lambda p: [([],), (["#..", "...", "..#"],), (["##.", ".#.", "..#"],), (["...", "..."],)],
    bugs={
        "exception": _edit("inside = 0 <= nr < rows and 0 <= nc < cols", "inside = True"),
        "edge_case": _edit("cols = len(grid[0]) if rows else 0", "cols = len(grid[0])"),
    },
)


def _graph_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 18, scale)
    edges = [sorted(rng.sample(range(n), 2)) for _ in range(rng.randint(n // 2, n + n // 2))]
    edges = [e if rng.random() < 0.5 else e[::-1] for e in edges]
    return n, edges, rng.randrange(n), rng.randrange(n)


_SHORTEST_PATH = Variant(
    family="graphs",
    name="shortest_path",
    topic="breadth-first search",
    difficulty=0.55,
    entry_points=("shortest_path_length", "min_hops", "bfs_distance"),
    args=("n", "edges", "start", "goal"),
    statements=(
        "Write `$sig` that returns the length (number of edges) of a shortest path from `start` to `goal` in a "
        "$kind_words graph with nodes `0` to `n - 1`. `edges` is a list of pairs `[a, b]`; each pair "
        "$edge_words. Return `-1` if `goal` cannot be reached; the distance from a node to itself is 0.",
        "Implement `$sig`: breadth-first search on a $kind_words graph. There are `n` nodes numbered from 0, "
        "and every `[a, b]` in `edges` $edge_words. Return the fewest edges on a path from `start` to `goal`, "
        "or `-1` when no path exists.",
        "`$sig` finds the minimum number of hops between `start` and `goal` in the $kind_words graph given by "
        "`n` nodes and the edge list `edges` (an edge `[a, b]` $edge_words). Unreachable goals give `-1`.",
    ),
    code=_code(
        """
        def $ep(n, edges, start, goal):
            neighbours = [[] for _ in range(n)]
            for a, b in edges:
                neighbours[a].append(b)
                $back
            dist = [-1] * n
            dist[start] = 0
            queue = [start]
            head = 0
            while head < len(queue):
                node = queue[head]
                head += 1
                for nxt in neighbours[node]:
                    if dist[nxt] == -1:
                        dist[nxt] = dist[node] + 1
                        queue.append(nxt)
            return dist[goal]
        """
    ),
    params=(
        {
            "back": "neighbours[b].append(a)",
            "back_bug": "",
            "kind_words": "undirected",
            "edge_words": "connects `a` and `b` in both directions",
        },
        {
            "back": "",
            "back_bug": "neighbours[b].append(a)",
            "kind_words": "directed",
            "edge_words": "goes from `a` to `b` only",
            "_bump": 0.02,
        },
    ),
    make_input=_graph_input,
    edges=lambda p: [
        (1, [], 0, 0),
        (4, [[0, 1], [1, 2], [2, 3]], 0, 3),
        (4, [[0, 1], [2, 3]], 0, 3),
        (3, [[2, 0], [1, 2]], 0, 1),
        (5, [[0, 4], [4, 3], [0, 1], [1, 2], [2, 3]], 0, 3),
    ],
    bugs={
        "edge_case": _edit("$back\n", "$back_bug\n"),
        "off_by_one": _edit("dist[start] = 0", "dist[start] = 1"),
        "exception": _edit("[[] for _ in range(n)]", "[[] for _ in range(n - 1)]"),
        "infinite_loop": _edit("        head += 1\n", ""),
    },
)


def _dag_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 12, scale)
    order = list(range(n))
    rng.shuffle(order)
    deps = []
    for _ in range(rng.randint(1, n + 2)):
        i, j = sorted(rng.sample(range(n), 2))
        deps.append([order[i], order[j]])
    if rng.random() < 0.2:
        a, b = rng.choice(deps)
        deps.append([b, a])
    return n, deps


_TOPO_ORDER = Variant(
    family="graphs",
    name="topological_order",
    topic="topological sort",
    difficulty=0.72,
    entry_points=("task_order", "topological_order", "schedule_tasks"),
    args=("n", "deps"),
    statements=(
        "There are `n` tasks numbered `0` to `n - 1`, and each pair `[a, b]` in `deps` says task `a` must be "
        "done before task `b`. Write `$sig` that returns the lexicographically smallest order in which all "
        "tasks can be done, or an empty list if the dependencies contain a cycle.",
        "Implement `$sig`: produce a topological ordering of the nodes `0..n-1` of the directed graph whose "
        "edges are the `[before, after]` pairs in `deps`. Whenever several tasks are available, take the "
        "smallest number first. If no valid order exists (a cycle), return `[]`.",
        "`$sig` schedules `n` jobs subject to precedence constraints `deps` (pairs `[first, then]`), always "
        "picking the lowest-numbered job that is ready. Return the full schedule as a list, or `[]` when the "
        "constraints are cyclic.",
    ),
    code=_code(
        """
        import heapq


        def $ep(n, deps):
            indegree = [0] * n
            after = [[] for _ in range(n)]
            for a, b in deps:
                after[a].append(b)
                indegree[b] += 1
            ready = [node for node in range(n) if indegree[node] == 0]
            heapq.heapify(ready)
            order = []
            while ready:
                node = heapq.heappop(ready)
                order.append(node)
                for nxt in after[node]:
                    indegree[nxt] -= 1
                    if indegree[nxt] == 0:
                        heapq.heappush(ready, nxt)
            return order if len(order) == n else []
        """
    ),
    make_input=_dag_input,
    edges=lambda p: [(3, []), (3, [[0, 1], [1, 2], [2, 1]]), (4, [[3, 1], [0, 2]]), (5, [[4, 0], [3, 0], [0, 1]])],
    bugs={
        "edge_case": _edit("    return order if len(order) == n else []", "    return order"),
        "logic": (("heapq.heappop(ready)", "ready.pop(0)"), ("heapq.heappush(ready, nxt)", "ready.append(nxt)")),
        "exception": _edit("indegree = [0] * n", "indegree = [0] * (n - 1)"),
    },
)


def _weighted_input(rng: random.Random, p: Params, scale: float) -> Args:
    n = _size(rng, 3, 14, scale)
    edges = []
    for _ in range(rng.randint(n - 1, 2 * n)):
        a, b = rng.sample(range(n), 2)
        edges.append([a, b, rng.randint(1, 20)])
    return n, edges, rng.randrange(n)


_DIJKSTRA = Variant(
    family="graphs",
    name="dijkstra",
    topic="weighted shortest paths",
    difficulty=0.8,
    entry_points=("shortest_distances", "dijkstra", "min_costs"),
    args=("n", "edges", "source"),
    statements=(
        "Write `$sig` for a $kind_words graph with nodes `0` to `n - 1` and weighted edges `edges`, a list of "
        "`[a, b, w]` triples where each edge $edge_words and costs `w` (a positive integer). Return a list "
        "whose item `v` is the cost of the cheapest path from `source` to `v`, or `None` when `v` is "
        "unreachable (the source itself costs 0).",
        "Implement `$sig` with Dijkstra's algorithm: in a $kind_words graph of `n` nodes, each `[a, b, w]` in "
        "`edges` $edge_words with positive weight `w`. Return the list of minimum path costs from `source` to "
        "every node, using `None` for nodes that cannot be reached.",
        "`$sig` computes single-source shortest path costs. The graph is $kind_words: an edge `[a, b, w]` "
        "$edge_words and has weight `w > 0`. Return `dist` with `dist[v]` the smallest total weight of a path "
        "from `source` to `v`, `None` if there is none.",
    ),
    code=_code(
        """
        import heapq


        def $ep(n, edges, source):
            graph = [[] for _ in range(n)]
            for a, b, w in edges:
                graph[a].append((b, w))
                $back
            dist = [None] * n
            heap = [(0, source)]
            while heap:
                d, node = heapq.heappop(heap)
                if dist[node] is not None:
                    continue
                dist[node] = d
                for nxt, w in graph[node]:
                    if dist[nxt] is None:
                        heapq.heappush(heap, (d + w, nxt))
            return dist
        """
    ),
    params=(
        {"back": "graph[b].append((a, w))", "kind_words": "undirected", "edge_words": "joins `a` and `b`"},
        {"back": "", "kind_words": "directed", "edge_words": "leads from `a` to `b`", "_bump": 0.02},
    ),
    make_input=_weighted_input,
    edges=lambda p: [
        (3, [[0, 1, 5], [0, 2, 1], [2, 1, 1]], 0),
        (4, [[0, 1, 2]], 0),
        (1, [], 0),
        (4, [[3, 2, 4], [2, 1, 4], [1, 0, 4], [3, 0, 20]], 3),
    ],
    bugs={
        "edge_case": _edit("        if dist[node] is not None:\n            continue\n", ""),
        "logic": (
            ("heapq.heappop(heap)", "heap.pop(0)"),
            ("heapq.heappush(heap, (d + w, nxt))", "heap.append((d + w, nxt))"),
        ),
        "exception": _edit("dist = [None] * n", "dist = [None] * (n - 1)"),
        "off_by_one": _edit("heap = [(0, source)]", "heap = [(1, source)]"),
    },
)


VARIANTS: tuple[Variant, ...] = (
    _ISLANDS,
    _SHORTEST_PATH,
    _TOPO_ORDER,
    _DIJKSTRA,
)
"""The graphs exercises, in the order the catalogue lists them."""

STEPS: tuple[Step, ...] = (
    _step(
        "degrees", "graphs", "degrees", "graph", "ints", 0.08,
        "list the degree (number of edges touching it) of every node 0 to n - 1",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        degree = [0] * size
        for u, v in $IN:
            degree[u] += 1
            degree[v] += 1
        $OUT = degree
        """,
        "degrees", bugs={"edge_case": [("default=0)", "default=-1)")], "logic": [("    degree[v] += 1\n", "")]},
    ),
    _step(
        "reachable", "graphs", "reachability", "graph", "ints", 0.25,
        "list the nodes reachable from node 0 (node 0 included), in increasing order",
        """
        links = {}
        for u, v in $IN:
            links.setdefault(u, []).append(v)
            links.setdefault(v, []).append(u)
        seen = {0}
        todo = [0]
        while todo:
            node = todo.pop()
            for nxt in links.get(node, []):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        $OUT = sorted(seen)
        """,
        "reachable", bugs={"logic": [("    links.setdefault(v, []).append(u)\n", "")]},
    ),
    _step(
        "components", "graphs", "connected components", "graph", "int", 0.3,
        "count the connected components of the graph (every node 0 to n - 1 belongs to one)",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        parent = list(range(size))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for u, v in $IN:
            parent[find(u)] = find(v)
        $OUT = sum(1 for x in range(size) if find(x) == x)
        """,
        "component_count", bugs={"logic": [("parent[find(u)] = find(v)", "parent[u] = v")]},
    ),
    _step(
        "bfs_distances", "graphs", "shortest paths", "graph", "ints", 0.35,
        "list, for every node 0 to n - 1, the least number of edges on a path from node 0 to it, or -1 when "
        "there is none",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        links = [[] for _ in range(size)]
        for u, v in $IN:
            links[u].append(v)
            links[v].append(u)
        dist = [-1] * size
        dist[0] = 0
        queue = [0]
        for node in queue:
            for nxt in links[node]:
                if dist[nxt] == -1:
                    dist[nxt] = dist[node] + 1
                    queue.append(nxt)
        $OUT = dist
        """,
        "distances", bugs={"edge_case": [("    links[v].append(u)\n", "")]},
    ),
    _step(
        "component_sizes", "graphs", "connected components", "graph", "ints", 0.35,
        "list the sizes of the connected components (every node 0 to n - 1 belongs to one), largest first",
        """
        size = 1 + max((max(e) for e in $IN), default=0)
        links = [[] for _ in range(size)]
        for u, v in $IN:
            links[u].append(v)
            links[v].append(u)
        group = [None] * size
        sizes = []
        for start in range(size):
            if group[start] is None:
                group[start] = start
                stack, count = [start], 0
                while stack:
                    node = stack.pop()
                    count += 1
                    for nxt in links[node]:
                        if group[nxt] is None:
                            group[nxt] = start
                            stack.append(nxt)
                sizes.append(count)
        $OUT = sorted(sizes, reverse=True)
        """,
        "component_sizes",
        bugs={
            "edge_case": [
                (
                    "sorted(sizes, reverse=True)",
                    "sorted(sizes, reverse=True)[:-1] if len(sizes) > 1 else sizes",
                )
            ],
        },
    ),
    _step(
        "leaves", "graphs", "degrees", "graph", "ints", 0.12,
        "list the nodes with exactly one neighbour, in increasing order",
        """
        touching = {}
        for u, v in $IN:
            touching[u] = touching.get(u, 0) + 1
            touching[v] = touching.get(v, 0) + 1
        $OUT = sorted(node for node, d in touching.items() if d == 1)
        """,
        "leaves", bugs={"logic": [("if d == 1", "if d <= 2")]},
    ),
    # small steps, so that easy exercises come in many shapes too
    _step(
        "max_degree", "graphs", "degrees", "graph", "int", 0.06,
        "take the largest number of edges that touch one node (0 when there are no edges)",
        """
        touching = {}
        for u, v in $IN:
            touching[u] = touching.get(u, 0) + 1
            touching[v] = touching.get(v, 0) + 1
        $OUT = max(touching.values(), default=0)
        """,
        "max_degree", bugs={"logic": [("    touching[v] = touching.get(v, 0) + 1\n", "")]},
    ),
    _step(
        "node_count", "graphs", "graph size", "graph", "int", 0.04, "count the nodes n",
        "$OUT = 1 + max((max(e) for e in $IN), default=0)", "node_count",
        bugs={"edge_case": [("1 + max((max(e) for e in $IN), default=0)", "len({x for e in $IN for x in e})")]},
    ),
)  # fmt: skip
"""The graphs building blocks of pipeline exercises."""
