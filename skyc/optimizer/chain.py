"""Pipelines (chains): dynamic programming over placements.

``options[t]`` are task t's choices, at most one per (cloud, region) (the best
there; data moves between regions, so the zone does not change a transfer).
``gb[t]`` is what task t passes to task t+1. The total to minimize is
``sum(objective(task)) + sum(transfer(t -> t+1))``, where the objective is the
hourly cost (each task is taken to run one hour, SkyPilot's default estimate)
or the estimated hours, or, when every task has a duration, the task's whole
run (hourly cost x its hours there, or those hours), and the transfer is the
egress cost in USD or the transfer time in hours.

The transfer weight depends only on the source cloud, the destination cloud
and whether the region differs (``skyc.catalog.egress``), so for each
destination the best predecessor is the one in the same region, or one of the
two best of each cloud: the DP is exact in O(tasks x locations x clouds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skyc.optimizer.choice import Choice, Target

Weight = Callable[[Choice, Choice, float], float]


def solve_chain(options: Sequence[Sequence[Choice]], gb: Sequence[float], target: Target,
                weight: Weight) -> tuple[list[Choice], float]:
    """The optimal choice per task and the optimal total."""
    if not options:
        return [], 0.0
    best: list[tuple[float, int]] = [(c.objective(target), -1) for c in options[0]]
    back: list[list[int]] = []
    for t in range(1, len(options)):
        prev, cur = options[t - 1], options[t]
        by_loc = {c.location: i for i, c in enumerate(prev)}
        top: dict[str, list[int]] = {}
        for i, c in enumerate(prev):
            lst = top.setdefault(c.offer.cloud, [])
            lst.append(i)
            lst.sort(key=lambda j: (best[j][0], prev[j].key(target)))
            del lst[2:]
        nxt: list[tuple[float, int]] = []
        links: list[int] = []
        for c in cur:
            cands = {i for lst in top.values() for i in lst}
            same = by_loc.get(c.location)
            if same is not None:
                cands.add(same)
            val, arg = min(
                ((best[i][0] + weight(prev[i], c, gb[t - 1]), i) for i in sorted(cands)),
                key=lambda vi: (vi[0], vi[1]),
            )
            nxt.append((val + c.objective(target), arg))
            links.append(arg)
        best = nxt
        back.append(links)
    end = min(range(len(best)), key=lambda i: (best[i][0], i))
    total = best[end][0]
    picks = [end]
    for links in reversed(back):
        picks.append(links[picks[-1]])
    picks.reverse()
    return [options[t][i] for t, i in enumerate(picks)], total
