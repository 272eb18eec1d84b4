"""General DAGs: an integer program (PuLP, CBC).

One binary ``x[t][k]`` per task option, exactly one per task; options are one
per (cloud, region). The transfer weight of an edge depends only on the source
cloud, the destination cloud and whether the region differs (the contract of
``skyc.catalog.egress``), so the pairwise term is linearized per cloud pair
rather than per option pair:

- ``C[t][c] = sum(x[t][k] for k in cloud c)``: task t runs in cloud c;
- for each edge (u, v) and clouds (c1, c2): ``z >= C[u][c1] + C[v][c2] - 1``,
  ``z >= 0``, weighted by the transfer weight from c1 to c2 (for c1 == c2: the
  inter-region weight);
- for each region r both tasks can use: ``q <= x[u][r]``, ``q <= x[v][r]``,
  weighted by minus the inter-region weight of r's cloud (same region: nothing moves).

Weights are non-negative, so at the optimum ``z`` and ``q`` equal the products
of the binaries they bound: the program is exact (checked against brute force
in tests/optimizer/test_bruteforce.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from skyc.errors import InfeasibleError
from skyc.optimizer.chain import Weight
from skyc.optimizer.choice import Choice, Target


def _by_cloud(opts: Sequence[Choice]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for k, c in enumerate(opts):
        out.setdefault(c.offer.cloud, []).append(k)
    return out


def _cloud_weight(a_opts: list[Choice], b_opts: list[Choice], gb: float,
                  weight: Weight) -> float | None:
    """Weight between two clouds (for one cloud: between two of its regions)."""
    for a in a_opts:
        for b in b_opts:
            if a.location != b.location:
                return weight(a, b, gb)
    return None


class _Program:
    """The integer program being built: the binaries ``x[t][k]``, the constraints, and
    the terms of the objective."""

    def __init__(self, options: Sequence[Sequence[Choice]]) -> None:
        import pulp

        self.pulp: Any = pulp
        self.prob: Any = pulp.LpProblem("skyc_placement", pulp.LpMinimize)
        self.options = options
        self.x = [[self.var(f"x_{t}_{k}", "Binary") for k in range(len(opts))]
                  for t, opts in enumerate(options)]
        self.terms: list[Any] = []

    def var(self, name: str, cat: str = "Continuous") -> Any:
        if hasattr(self.prob, "add_variable"):  # PuLP >= 3.3
            return self.prob.add_variable(name, lowBound=0, cat=cat)
        return self.pulp.LpVariable(name, lowBound=0, cat=cat)

    def add_edge(self, e: int, u: int, v: int, clouds: Sequence[dict[str, list[int]]],
                 gb: float, weight: Weight) -> None:
        """Edge ``e`` (``u`` -> ``v``): per cloud pair, the transfer weight when u runs in
        the first and v in the second, less what a shared region saves."""
        lp_sum = self.pulp.lpSum
        for c1, ks1 in sorted(clouds[u].items()):
            for c2, ks2 in sorted(clouds[v].items()):
                w = _cloud_weight([self.options[u][k] for k in ks1],
                                  [self.options[v][k] for k in ks2], gb, weight)
                if not w or w <= 0:
                    continue
                z = self.var(f"z_{e}_{c1}_{c2}")
                self.prob += z >= lp_sum(self.x[u][k] for k in ks1) + lp_sum(
                    self.x[v][k] for k in ks2) - 1
                self.terms.append(w * z)
                if c1 == c2:
                    self._same_region(e, u, v, ks1, ks2, w)

    def _same_region(self, e: int, u: int, v: int, ks1: list[int], ks2: list[int],
                     w: float) -> None:
        """For each region both tasks can use: ``w`` back when both run there."""
        where_v = {self.options[v][k].location: k for k in ks2}
        for k1 in ks1:
            k2 = where_v.get(self.options[u][k1].location)
            if k2 is None:
                continue
            q = self.var(f"q_{e}_{k1}_{k2}")
            self.prob += q <= self.x[u][k1]
            self.prob += q <= self.x[v][k2]
            self.terms.append(-w * q)

    def solve(self) -> list[Choice]:
        """The option picked for each task; InfeasibleError when there is none."""
        pulp = self.pulp
        self.prob += pulp.lpSum(self.terms)
        with warnings.catch_warnings():  # PuLP 3.3 announces CBC packaging changes for 4.0
            warnings.simplefilter("ignore", DeprecationWarning)
            status = self.prob.solve(pulp.PULP_CBC_CMD(msg=False))
        if pulp.LpStatus[status] != "Optimal":
            raise InfeasibleError(f"the placement program is {pulp.LpStatus[status].lower()}")
        picks = []
        for t, opts in enumerate(self.options):
            k = max(range(len(opts)), key=lambda k: (pulp.value(self.x[t][k]) or 0.0, -k))
            picks.append(opts[k])
        return picks


def solve_dag(options: Sequence[Sequence[Choice]], edges: Sequence[tuple[int, int]],
              gb: Sequence[float], target: Target, weight: Weight) -> tuple[list[Choice], float]:
    program = _Program(options)
    clouds = [_by_cloud(opts) for opts in options]
    for t, opts in enumerate(options):
        program.prob += program.pulp.lpSum(program.x[t]) == 1, f"one_{t}"
        program.terms.extend(c.objective(target) * program.x[t][k] for k, c in enumerate(opts))
    for e, (u, v) in enumerate(edges):
        program.add_edge(e, u, v, clouds, gb[u], weight)
    picks = program.solve()
    total = sum(c.objective(target) for c in picks)
    total += sum(weight(picks[u], picks[v], gb[u]) for u, v in edges)
    return picks, total
