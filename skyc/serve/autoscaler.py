"""Autoscaling on requests per second, with hysteresis (SkyPilot's request-rate policy).

The replicas wanted for a rate are ``ceil(qps / target_qps_per_replica)`` within
``[min_replicas, max_replicas]``. The target moves only once that number has stayed
above it for ``upscale_delay_seconds`` (or below it for ``downscale_delay_seconds``)
without a break; a move the other way, or the number reaching the target, starts the
wait again. From zero replicas a request scales up at once. Every move is a
:class:`Decision` that says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from skyc.serve.records import Decision
from skyc.serve.spec import Scaling


@dataclass
class Autoscaler:
    scaling: Scaling
    target: int
    window_s: float
    above_since: float | None = None
    below_since: float | None = None

    def wanted(self, qps: float) -> int:
        low, high = self.scaling.min_replicas, self.scaling.max_replicas
        if not self.scaling.autoscaling or self.scaling.target_qps is None:
            return low
        return min(high, max(low, math.ceil(qps / self.scaling.target_qps - 1e-9)))

    def decide(self, now: float, qps: float) -> Decision | None:
        """The decision to take now, given the rate measured over the window; None
        to keep the target (the waits are updated)."""
        want = self.wanted(qps)
        if want > self.target:
            self.below_since = None
            if self.above_since is None:
                self.above_since = now
            waited = now - self.above_since
            if self.target > 0 and waited < self.scaling.upscale_delay_s:
                return None
            return self._move(now, want, qps, waited, "upscale_delay_seconds",
                              self.scaling.upscale_delay_s)
        if want < self.target:
            self.above_since = None
            if self.below_since is None:
                self.below_since = now
            waited = now - self.below_since
            if waited < self.scaling.downscale_delay_s:
                return None
            return self._move(now, want, qps, waited, "downscale_delay_seconds",
                              self.scaling.downscale_delay_s)
        self.above_since = self.below_since = None
        return None

    def _move(self, now: float, want: int, qps: float, waited: float, delay_name: str,
              delay: float) -> Decision:
        before = self.target
        self.target = want
        self.above_since = self.below_since = None
        per = self.scaling.target_qps
        held = ("scaling up from zero at once" if before == 0 else
                f"for {waited:.1f} s (>= {delay_name} {delay:g})")
        reason = (f"{qps:.2f} requests/s over the last {self.window_s:g} s at "
                  f"{per:g} per replica wants {want} replica(s) (within "
                  f"{self.scaling.min_replicas}-{self.scaling.max_replicas}), {held}")
        return Decision(at=now, before=before, after=want, reason=reason)
