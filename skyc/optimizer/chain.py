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
    keys = _Keys(target)
    moved = _Moved(weight)
    best: list[tuple[float, int]] = [(c.objective(target), -1) for c in options[0]]
    back: list[list[int]] = []
    for t in range(1, len(options)):
        prev, cur, moving = options[t - 1], options[t], gb[t - 1]
        prev_keys, prev_locs = keys.of(prev), keys.locations(prev)
        by_loc = {loc: i for i, loc in enumerate(prev_locs)}
        top: dict[str, list[int]] = {}  # per cloud, its two best predecessors
        for j in sorted(range(len(prev)), key=lambda j: (best[j][0], prev_keys[j])):
            lst = top.setdefault(prev[j].offer.cloud, [])
            if len(lst) < 2:
                lst.append(j)
        tops = sorted(i for lst in top.values() for i in lst)
        nxt: list[tuple[float, int]] = []
        links: list[int] = []
        for c in cur:
            here = c.location
            cands = tops
            same = by_loc.get(here)
            if same is not None and same not in tops:
                cands = [*tops, same]
            val, arg = min((best[i][0] + moved(prev[i], c, moving, prev_locs[i], here), i)
                           for i in cands)
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


Location = tuple[str, str]


class _Keys:
    """Each options list's ranking keys and locations, worked out once (tasks may
    share one list; by identity, as every list stays alive for the whole solve)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._keys: dict[int, list[tuple[object, ...]]] = {}
        self._locations: dict[int, list[Location]] = {}

    def of(self, opts: Sequence[Choice]) -> list[tuple[object, ...]]:
        found = self._keys.get(id(opts))
        if found is None:
            found = self._keys[id(opts)] = [c.key(self.target) for c in opts]
        return found

    def locations(self, opts: Sequence[Choice]) -> list[Location]:
        found = self._locations.get(id(opts))
        if found is None:
            found = self._locations[id(opts)] = [c.location for c in opts]
        return found


class _Moved:
    """The transfer weight, worked out once per (source, destination, GB): by the
    contract above it depends on nothing else of the two choices."""

    def __init__(self, weight: Weight) -> None:
        self.weight = weight
        self._known: dict[tuple[Location, Location, float], float] = {}

    def __call__(self, a: Choice, b: Choice, gb: float, src: Location, dst: Location
                 ) -> float:
        """``weight(a, b, gb)``; ``src`` and ``dst``: ``a``'s and ``b``'s locations."""
        key = (src, dst, gb)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self.weight(a, b, gb)
        return found
