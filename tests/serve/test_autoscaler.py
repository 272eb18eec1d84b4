"""The autoscaler's decisions (pure logic, given times and rates)."""

from __future__ import annotations

from skyc.serve.autoscaler import Autoscaler
from skyc.serve.spec import Scaling

POLICY = Scaling(min_replicas=1, max_replicas=4, target_qps=2.0, upscale_delay_s=10,
                 downscale_delay_s=30)


def test_wanted_replicas_follow_the_rate_within_the_range() -> None:
    scaler = Autoscaler(POLICY, target=1, window_s=60)
    assert [scaler.wanted(q) for q in (0, 1.9, 2.0, 2.1, 7.9, 100)] == [1, 1, 1, 2, 4, 4]
    fixed = Autoscaler(Scaling(min_replicas=3, max_replicas=3), target=3, window_s=60)
    assert fixed.wanted(1000) == 3 and fixed.decide(0, 1000) is None


def test_upscale_waits_for_the_delay_and_a_dip_starts_it_again() -> None:
    scaler = Autoscaler(POLICY, target=1, window_s=60)
    assert scaler.decide(0, 5.0) is None
    assert scaler.decide(9, 5.0) is None
    assert scaler.decide(9.5, 1.0) is None     # back within the target: the wait ends
    assert scaler.decide(15, 5.0) is None      # a new wait from here
    assert scaler.decide(24, 5.0) is None
    decision = scaler.decide(25, 5.0)
    assert decision is not None and (decision.before, decision.after) == (1, 3)
    assert scaler.target == 3
    assert "5.00 requests/s" in decision.reason and "upscale_delay_seconds 10" in decision.reason
    assert "wants 3 replica(s) (within 1-4)" in decision.reason


def test_downscale_waits_longer_and_stops_at_min_replicas() -> None:
    scaler = Autoscaler(POLICY, target=4, window_s=60)
    assert scaler.decide(0, 0.0) is None
    assert scaler.decide(29, 0.0) is None
    decision = scaler.decide(30, 0.0)
    assert decision is not None and (decision.before, decision.after) == (4, 1)
    assert "downscale_delay_seconds 30" in decision.reason
    assert scaler.decide(100, 0.0) is None


def test_from_zero_replicas_a_request_scales_up_at_once() -> None:
    scaler = Autoscaler(Scaling(min_replicas=0, max_replicas=2, target_qps=1.0,
                                upscale_delay_s=300, downscale_delay_s=10), target=0,
                        window_s=60)
    decision = scaler.decide(0, 0.1)
    assert decision is not None and (decision.before, decision.after) == (0, 1)
    assert "from zero" in decision.reason
