"""Provisioning with failover: re-target the same stack until a placement comes up.

The loop (see DESIGN.md's pipeline)::

    placement = next best (optimizer, minus blocked)
    try provision(placement)
    except ProvisionError e:
        cleanup(placement)              # destroy what the attempt created
        if not e.retryable: stop        # bad parameters, auth
        if e is transient and tried it less than twice: same placement again
        blocked += scope of e at placement
        placement = next best ...

It knows nothing about clouds or engines: the caller passes the three steps as
functions, which keeps this loop small and lets the CLI, the tests and the
benchmarks drive it the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from skyc.errors import (
    Cancelled,
    EngineInterrupted,
    FailoverExhausted,
    InfeasibleError,
    Interrupted,
    ProvisionError,
    ProvisionFailure,
    SkycError,
)
from skyc.model.plan import Placement
from skyc.optimizer.blocked import Blocked

T = TypeVar("T")


@dataclass(frozen=True)
class Attempt:
    placement: Placement
    error: str | None           # the error code, None when it came up
    message: str
    seconds: float


@dataclass
class FailoverPolicy:
    max_attempts: int = 8
    timeout_s: float = 3600.0
    retry_until_up: bool = False
    backoff_s: float = 5.0       # between full cycles when retrying until up
    backoff_max_s: float = 300.0
    # A transient error (scope "placement": throttling, eventual consistency): the same
    # placement again, this many times, after transient_backoff_s x the try's number.
    transient_retries: int = 2
    transient_backoff_s: float = 3.0
    # A failed attempt's cleanup that fails is run again after these pauses (s): a
    # destroy is idempotent, and what made it fail (a resource the cloud still lists
    # as in use, a lost answer under load) is often gone a few seconds later.
    cleanup_pauses_s: tuple[float, ...] = (5.0,)


@dataclass
class FailoverResult(Generic[T]):
    value: T
    placement: Placement
    attempts: list[Attempt] = field(default_factory=list)


def blocked_scope(placement: Placement, error: ProvisionError) -> Blocked:
    """The part of the world a failure at ``placement`` rules out (a transient error
    that kept coming back: the zone)."""
    if error.scope == "cloud":
        return Blocked(cloud=placement.cloud)
    if error.scope == "region" or not placement.zone:
        return Blocked(cloud=placement.cloud, region=placement.region)
    return Blocked(cloud=placement.cloud, region=placement.region, zone=placement.zone)


def describe_attempt(placement: Placement) -> str:
    where = "/".join(p for p in (placement.cloud, placement.region) if p)
    text = f"{placement.instance_type or placement.cloud} {where}"
    if placement.zone:
        text += f" ({placement.zone})"
    return text


def provision_with_failover(
    first: Placement,
    *,
    provision: Callable[[Placement], T],
    cleanup: Callable[[Placement], None],
    next_placement: Callable[[list[Blocked]], Placement],
    policy: FailoverPolicy | None = None,
    on_attempt: Callable[[Attempt, Placement | None], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> FailoverResult[T]:
    """Provision ``first``; on retryable ProvisionErrors fail over to the next best.

    ``next_placement(blocked)`` must raise InfeasibleError when nothing is left.
    With ``policy.retry_until_up`` an exhausted list starts over (blocked cleared)
    after a growing backoff, until ``policy.timeout_s``.
    """
    policy = policy or FailoverPolicy()
    loop = _Loop(policy, cleanup, next_placement, on_attempt, sleep, clock,
                 start=clock(), backoff=policy.backoff_s)
    placement = first
    while True:
        t0 = clock()
        try:
            value = provision(placement)
        except ProvisionError as exc:
            nxt = loop.failed(placement, exc, t0)
            if nxt is None:  # not retryable: the error is the user's as it was
                raise
            placement = nxt
            continue
        except (EngineInterrupted, Interrupted, Cancelled):
            # Stopped on request (Ctrl-C, a cancelled managed job): what exists stays in
            # the engine's state, for the caller to resume or tear down.
            raise
        except Exception as exc:
            loop.crashed(placement, exc, t0)
            raise
        attempt = Attempt(placement, None, "up", clock() - t0)
        loop.attempts.append(attempt)
        loop.record(attempt, None)
        return FailoverResult(value, placement, loop.attempts)


@dataclass
class _Loop:
    """The failover loop's state between attempts, and what it does after each one."""

    policy: FailoverPolicy
    cleanup: Callable[[Placement], None]
    next_placement: Callable[[list[Blocked]], Placement]
    on_attempt: Callable[[Attempt, Placement | None], None] | None
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    start: float
    backoff: float
    attempts: list[Attempt] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    again: int = 0  # transient errors in a row at this placement

    def record(self, attempt: Attempt, nxt: Placement | None) -> None:
        if self.on_attempt:
            self.on_attempt(attempt, nxt)

    def failed(self, placement: Placement, exc: ProvisionError, t0: float
               ) -> Placement | None:
        """After a classified failure: the placement to try next; None when the error
        is not retryable; raises FailoverExhausted when nothing is left to try."""
        _cleanup_or_explain(self.cleanup, placement, exc, self.policy.cleanup_pauses_s,
                            self.sleep)
        attempt = Attempt(placement, exc.code, exc.message, self.clock() - t0)
        self.attempts.append(attempt)
        if not exc.retryable:
            self.record(attempt, None)
            return None
        if self._try_again(exc):
            self.again += 1
            self.record(attempt, placement)
            self.sleep(self.policy.transient_backoff_s * self.again)
            return placement
        self.again = 0
        scope = blocked_scope(placement, exc)
        if scope not in self.blocked:
            self.blocked.append(scope)
        nxt = self._next_or_restart()
        too_many = (not self.policy.retry_until_up
                    and len(self.attempts) >= self.policy.max_attempts)
        if nxt is None or too_many or self._out_of_time():
            self.record(attempt, None)
            raise FailoverExhausted(
                _exhausted_message(self.attempts, nxt is None),
                self.attempts,
                hint="retry later, allow more infra (--infra / any_of), or use "
                "--retry-until-up",
            ) from exc
        self.record(attempt, nxt)
        return nxt

    def _try_again(self, exc: ProvisionError) -> bool:
        """A transient error: the same placement again, while tries and time are left."""
        return (exc.transient and self.again < self.policy.transient_retries
                and len(self.attempts) < self.policy.max_attempts
                and self.clock() - self.start < self.policy.timeout_s)

    def _out_of_time(self) -> bool:
        return self.clock() - self.start >= self.policy.timeout_s

    def _next_or_restart(self) -> Placement | None:
        """The next best placement; with retry_until_up and time left, an exhausted
        list starts over (blocked cleared) after a growing backoff."""
        nxt = _next_or_none(self.next_placement, self.blocked)
        out_of_time = self._out_of_time()
        if nxt is None and self.policy.retry_until_up and not out_of_time:
            self.sleep(self.backoff)
            self.backoff = min(self.backoff * 2, self.policy.backoff_max_s)
            self.blocked.clear()
            nxt = _next_or_none(self.next_placement, self.blocked)
        return nxt

    def crashed(self, placement: Placement, exc: Exception, t0: float) -> None:
        """Not a classified provisioning error (an engine that crashed, a bug, a state
        that could not be written): nothing to fail over to, but what the attempt
        created is removed before the error is the user's."""
        failure = ProvisionError(str(exc), ProvisionFailure(
            code=type(exc).__name__, scope="cloud", retryable=False,
            cloud=placement.cloud))
        _cleanup_or_explain(self.cleanup, placement, failure, self.policy.cleanup_pauses_s,
                            self.sleep)
        attempt = Attempt(placement, failure.code, failure.message, self.clock() - t0)
        self.attempts.append(attempt)
        self.record(attempt, None)


def _cleanup_or_explain(
    cleanup: Callable[[Placement], None], placement: Placement, error: ProvisionError,
    pauses: tuple[float, ...], sleep: Callable[[float], None],
) -> None:
    """Destroy the failed attempt, again after each of ``pauses`` while that fails; if
    it still fails, say both errors and how to clean up."""
    for pause in (*pauses, None):
        try:
            cleanup(placement)
            return
        except SkycError as exc:
            if pause is not None:
                sleep(pause)
                continue
            raise SkycError(
                f"provisioning on {describe_attempt(placement)} failed ({error.code}: "
                f"{error.message}), and destroying what it created failed too: "
                f"{exc.message}",
                hint=exc.hint or "the engine's state still lists those resources: run "
                "`skyc destroy <cluster>` to remove them (or `skyc apply` again to retry)",
            ) from exc


def _next_or_none(
    next_placement: Callable[[list[Blocked]], Placement], blocked: list[Blocked]
) -> Placement | None:
    try:
        return next_placement(list(blocked))
    except InfeasibleError:
        return None


def _exhausted_message(attempts: list[Attempt], nothing_left: bool) -> str:
    why = "no placement is left to try" if nothing_left else "the attempt limit was reached"
    lines = [f"could not provision the cluster: {why}. Attempts:"]
    for i, a in enumerate(attempts, 1):
        lines.append(f"  {i}. {describe_attempt(a.placement)}: {a.error}: {a.message}")
    return "\n".join(lines)
