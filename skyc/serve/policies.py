"""Load balancing policies: which ready replica takes the next request.

``round_robin`` takes them in turn; ``least_load`` (SkyPilot's default) the one with
the fewest requests in flight, in turn among equals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class RoundRobin:
    name = "round_robin"

    def __init__(self) -> None:
        self.turn = 0

    def pick(self, replicas: Sequence[int], inflight: Mapping[int, int]) -> int:
        choice = replicas[self.turn % len(replicas)]
        self.turn += 1
        return choice


class LeastLoad(RoundRobin):
    name = "least_load"

    def pick(self, replicas: Sequence[int], inflight: Mapping[int, int]) -> int:
        least = min(inflight.get(r, 0) for r in replicas)
        tied = [r for r in replicas if inflight.get(r, 0) == least]
        return super().pick(tied, inflight)


def policy(name: str) -> RoundRobin:
    return {"round_robin": RoundRobin, "least_load": LeastLoad}[name]()
