"""The failover loop's decisions, driven with plain functions.

These tests check the loop's logic only (which placement comes next, what is
blocked, what is cleaned up); the real terraform + moto + fault-proxy runs are
in test_failover_e2e.py.
"""

from __future__ import annotations

import pytest

from skyc.apply.failover import Attempt, Blocked, FailoverPolicy, provision_with_failover
from skyc.errors import (
    FailoverExhausted,
    InfeasibleError,
    ProvisionError,
    ProvisionFailure,
    SkycError,
)
from skyc.model.plan import Placement


def _p(region: str, zone: str | None = None, cost: float = 1.0) -> Placement:
    return Placement(
        cloud="aws", region=region, zone=zone, instance_type="p4d.24xlarge", hourly_cost=cost
    )


CANDIDATES = [
    _p("us-east-1", "use1-az1", 1.0),
    _p("us-east-1", "use1-az2", 1.1),
    _p("us-west-2", "usw2-az1", 1.2),
    _p("eu-west-1", "euw1-az1", 1.3),
]


def _next(blocked: list[Blocked]) -> Placement:
    for c in CANDIDATES:
        if any(
            b.cloud == c.cloud
            and (b.region is None or b.region == c.region)
            and (b.zone is None or b.zone == c.zone)
            for b in blocked
        ):
            continue
        return c
    raise InfeasibleError("nothing left")


def _error(code: str, scope: str, retryable: bool = True) -> ProvisionError:
    failure = ProvisionFailure(
        code=code, scope=scope, retryable=retryable, cloud="aws"  # type: ignore[arg-type]
    )
    return ProvisionError(f"api error {code}", failure)


def test_zone_capacity_error_moves_to_next_zone_and_cleans_up() -> None:
    cleaned: list[str | None] = []

    def provision(p: Placement) -> str:
        if p.zone == "use1-az1":
            raise _error("InsufficientInstanceCapacity", "zone")
        return f"up in {p.zone}"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: cleaned.append(p.zone),
        next_placement=_next,
    )
    assert result.value == "up in use1-az2"
    assert cleaned == ["use1-az1"]
    assert [a.error for a in result.attempts] == ["InsufficientInstanceCapacity", None]


def test_region_quota_error_skips_the_whole_region() -> None:
    tried: list[str | None] = []

    def provision(p: Placement) -> str:
        tried.append(p.zone)
        if p.region == "us-east-1":
            raise _error("VcpuLimitExceeded", "region")
        return "ok"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next
    )
    assert tried == ["use1-az1", "usw2-az1"]
    assert result.placement.region == "us-west-2"


def test_non_retryable_error_stops_at_once() -> None:
    tried: list[str | None] = []

    def provision(p: Placement) -> str:
        tried.append(p.zone)
        raise _error("AuthFailure", "cloud", retryable=False)

    with pytest.raises(ProvisionError) as info:
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next
        )
    assert info.value.code == "AuthFailure"
    assert tried == ["use1-az1"]


def test_every_candidate_failing_lists_each_attempt() -> None:
    seen: list[tuple[Attempt, Placement | None]] = []

    def provision(p: Placement) -> str:
        raise _error("InsufficientInstanceCapacity", "zone")

    with pytest.raises(FailoverExhausted) as info:
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next,
            on_attempt=lambda a, n: seen.append((a, n)),
        )
    assert len(info.value.attempts) == 4
    text = str(info.value)
    for zone in ("use1-az1", "use1-az2", "usw2-az1", "euw1-az1"):
        assert zone in text
    assert "no placement is left" in text
    # Each announcement names the next placement, the last names none.
    assert [n.zone if n else None for _, n in seen] == ["use1-az2", "usw2-az1", "euw1-az1", None]


def test_attempt_limit() -> None:
    def provision(p: Placement) -> str:
        raise _error("InsufficientInstanceCapacity", "zone")

    with pytest.raises(FailoverExhausted) as info:
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next,
            policy=FailoverPolicy(max_attempts=2),
        )
    assert len(info.value.attempts) == 2
    assert "attempt limit" in str(info.value)


def test_retry_until_up_cycles_with_backoff() -> None:
    calls = {"n": 0}
    sleeps: list[float] = []

    def provision(p: Placement) -> str:
        calls["n"] += 1
        if calls["n"] <= 5:  # the whole list fails once, then the first zone comes up
            raise _error("InsufficientInstanceCapacity", "zone")
        return "ok"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next,
        policy=FailoverPolicy(retry_until_up=True, backoff_s=2.0),
        sleep=sleeps.append,
    )
    assert result.value == "ok"
    assert sleeps == [2.0]
    assert result.placement.zone == "use1-az2"


def test_a_failing_cleanup_reports_both_errors() -> None:
    from skyc.errors import EngineError

    def provision(p: Placement) -> str:
        raise _error("InsufficientInstanceCapacity", "zone")

    def cleanup(p: Placement) -> None:
        raise EngineError("terraform destroy failed: DependencyViolation", hint="see log")

    with pytest.raises(SkycError) as caught:
        provision_with_failover(
            _next([]), provision=provision, cleanup=cleanup, next_placement=_next,
            sleep=lambda _: None,
        )
    text = str(caught.value)
    assert "InsufficientInstanceCapacity" in text and "DependencyViolation" in text
    assert caught.value.hint == "see log"
    assert isinstance(caught.value.__cause__, EngineError)


def test_a_transient_error_tries_the_same_placement_again() -> None:
    """Throttling or eventual consistency: the same placement again (after cleaning up
    and a growing pause), then up there."""
    tried: list[str | None] = []
    cleaned: list[str | None] = []
    pauses: list[float] = []

    def provision(p: Placement) -> str:
        tried.append(p.zone)
        if len(tried) <= 2:
            raise _error("InvalidPermission.NotFound", "placement")
        return f"up in {p.zone}"

    seen: list[tuple[str | None, str | None]] = []
    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: cleaned.append(p.zone),
        next_placement=_next, sleep=pauses.append,
        on_attempt=lambda a, nxt: seen.append((a.error, nxt.zone if nxt else None)),
    )
    assert result.value == "up in use1-az1"
    assert tried == ["use1-az1"] * 3 and cleaned == ["use1-az1"] * 2
    assert pauses == [3.0, 6.0]
    assert seen == [("InvalidPermission.NotFound", "use1-az1")] * 2 + [(None, None)]


def test_a_transient_error_that_keeps_coming_back_passes_the_zone_over() -> None:
    tried: list[str | None] = []

    def provision(p: Placement) -> str:
        tried.append(p.zone)
        if p.zone == "use1-az1":
            raise _error("RequestLimitExceeded", "placement")
        return "ok"

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=lambda p: None, next_placement=_next,
        sleep=lambda s: None, policy=FailoverPolicy(transient_retries=2),
    )
    assert tried == ["use1-az1"] * 3 + ["use1-az2"]
    assert result.placement.zone == "use1-az2"


def test_a_cleanup_that_fails_once_is_run_again_and_the_loop_moves_on() -> None:
    """Under load a destroy now and then fails (a lost answer, a resource the cloud still
    lists as in use): it runs again after a pause instead of ending the apply with the
    failed region's network left behind."""
    from skyc.errors import EngineError

    calls: list[str | None] = []
    pauses: list[float] = []

    def provision(p: Placement) -> str:
        if p.zone == "use1-az1":
            raise _error("InsufficientInstanceCapacity", "zone")
        return f"up in {p.zone}"

    def cleanup(p: Placement) -> None:
        calls.append(p.zone)
        if len(calls) == 1:
            raise EngineError("terraform destroy failed: DependencyViolation")

    result = provision_with_failover(
        _next([]), provision=provision, cleanup=cleanup, next_placement=_next,
        sleep=pauses.append,
    )
    assert result.value == "up in use1-az2"
    assert calls == ["use1-az1", "use1-az1"]
    assert pauses == list(FailoverPolicy().cleanup_pauses_s)


def test_an_unclassified_error_still_removes_what_the_attempt_created() -> None:
    from skyc.errors import EngineError

    cleaned: list[str | None] = []
    seen: list[Attempt] = []

    def provision(p: Placement) -> str:
        raise EngineError("terraform crashed: panic: runtime error")

    with pytest.raises(EngineError, match="panic"):
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: cleaned.append(p.zone),
            next_placement=_next, on_attempt=lambda a, nxt: seen.append(a),
        )
    assert cleaned == ["use1-az1"]
    assert [a.error for a in seen] == ["EngineError"]


def test_an_unexpected_exception_is_cleaned_up_and_raised_as_it_was() -> None:
    cleaned: list[str | None] = []

    def provision(p: Placement) -> str:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: cleaned.append(p.zone),
            next_placement=_next,
        )
    assert cleaned == ["use1-az1"]


def test_an_interrupted_attempt_is_left_for_the_caller() -> None:
    """Ctrl-C or a cancelled managed job stops the engine: what exists stays in its
    state (to resume, or for the controller to tear down), and the error is raised as
    it was."""
    from skyc.errors import EngineInterrupted

    cleaned: list[str | None] = []

    def provision(p: Placement) -> str:
        raise EngineInterrupted("terraform apply was stopped")

    with pytest.raises(EngineInterrupted):
        provision_with_failover(
            _next([]), provision=provision, cleanup=lambda p: cleaned.append(p.zone),
            next_placement=_next,
        )
    assert cleaned == []
