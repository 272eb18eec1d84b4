"""What runs at the same time: the dearest set of tasks that can run at once.

Tasks joined by a path of edges run one after another (a step starts when the one
before it is done); tasks with no path between them may run at once. The hourly
price a plan reaches at its peak is therefore the dearest antichain of the task
graph: for a chain, its dearest step; with no edges, every task together.
"""

from __future__ import annotations

from collections.abc import Sequence


def _below(n: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Per task, a bit mask of the tasks a path of ``edges`` leads to from it (the
    graph has no cycle: the optimizer checks its edges first)."""
    out: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in edges:
        out[u].append(v)
        indeg[v] += 1
    order = [u for u in range(n) if indeg[u] == 0]
    for u in order:  # grows as it goes: a topological order
        for v in out[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                order.append(v)
    below = [0] * n
    for u in reversed(order):
        for v in out[u]:
            below[u] |= (1 << v) | below[v]
    return below


def _reach(n: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Per task, a bit mask of the tasks joined to it by a path (either way)."""
    after = _below(n, edges)
    before = _below(n, [(v, u) for u, v in edges])
    return [a | b for a, b in zip(after, before, strict=True)]


def peak_tasks(hourly: Sequence[float], edges: Sequence[tuple[int, int]]) -> list[int]:
    """The indices of the dearest set of tasks that can run at once (ties: the set
    found first, lower indices first); exact, by branching on each task."""
    n = len(hourly)
    if n == 0:
        return []
    joined = _reach(n, edges)
    memo: dict[int, tuple[float, int]] = {}

    def best(free: int) -> tuple[float, int]:
        if free == 0:
            return 0.0, 0
        if free in memo:
            return memo[free]
        u = (free & -free).bit_length() - 1
        rest = free & ~(1 << u)
        with_val, with_set = best(rest & ~joined[u])
        take = (with_val + hourly[u], with_set | (1 << u))
        skip = best(rest)
        memo[free] = take if take[0] >= skip[0] - 1e-12 else skip
        return memo[free]

    _, chosen = best((1 << n) - 1)
    return [i for i in range(n) if chosen >> i & 1]
