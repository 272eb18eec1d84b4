"""One apply's provisioning attempts: the steps :func:`skyc.apply.failover.provision_with_failover`
drives for a cluster (which placement comes next, what an attempt runs, what a failed one
leaves behind), and what the cluster's record says when every attempt failed.

Imported by :func:`skyc.apply.launch._provision` when it runs, as the engine's modules are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skyc.apply.admission import admit_and_record
from skyc.apply.failover import Attempt
from skyc.apply.infra import missing_credentials
from skyc.apply.launch import make_plan, reviewed_next
from skyc.apply.networks import network_for, release_networks
from skyc.apply.preflight import check_failover_placement
from skyc.apply.provision import destroy_attempt, forget_attempts, provision
from skyc.apply.shared_backend import check_shared_backend
from skyc.compiler import choose_engine, lowering, target
from skyc.compiler.keys import ED25519, public_key
from skyc.errors import InfeasibleError, ProvisionError, ProvisionFailure, SkycError
from skyc.model.plan import Placement
from skyc.optimizer.blocked import Blocked
from skyc.stacks.workspace import cluster_workspace, has_stack

if TYPE_CHECKING:
    from skyc.apply.launch import LaunchOptions, LaunchReporter
    from skyc.model.nodes import ClusterInfo
    from skyc.settings.config import SkycConfig
    from skyc.stacks.engine import StackDiff
    from skyc.state.database import ClusterRecord, StateDB
    from skyc.task import Task
    from skyc.task.candidate import ResourceCandidate


@dataclass
class AttemptTrail:
    """What one apply's attempts did: engine runs, whether a cleanup began destroying,
    and how many runs were destroyed again since (all of them: nothing is left)."""

    runs: list[Placement] = field(default_factory=list)  # each engine run's placement
    destroying: bool = False
    cleaned: int = 0

    @property
    def ran(self) -> int:
        return len(self.runs)


@dataclass
class AttemptSteps:
    """Provisioning cluster ``name`` for ``task``, one attempt at a time. ``pinned``: the
    options failover plans with (a cluster that has come up stays in place); ``chosen``:
    the first placement, which ``confirmed`` (the diff the user said yes to) is for."""

    task: Task
    name: str
    opts: LaunchOptions
    pinned: LaunchOptions
    config: SkycConfig
    db: StateDB
    reporter: LaunchReporter
    candidates: Sequence[ResourceCandidate]
    chosen: Placement
    confirmed: StackDiff | None
    blocked: Sequence[Blocked] = ()
    keep_in_place: bool = False  # a cluster that has come up: its resources stay
    trail: AttemptTrail = field(default_factory=AttemptTrail)
    leave_review: bool = False  # set once the user said to fail over past the review
    network: str | None = None  # the shared network of the last attempt

    def next_placement(self, more: list[Blocked]) -> Placement:
        """The next best placement: a reviewed plan's next one, else the optimizer's."""
        both = [*self.blocked, *more]
        reviewed = self.opts.reviewed
        if reviewed is not None and not self.leave_review:
            try:
                return reviewed_next(reviewed.placements, both)
            except InfeasibleError as exc:
                question = (f"{exc} ({', '.join(str(b) for b in both)} failed). Plan "
                            "again outside the reviewed plan and continue?")
                if reviewed.ask is None or not reviewed.ask(question):
                    raise
                self.leave_review = True
        return make_plan([self.task], self.pinned, blocked=both,
                         config=self.config).tasks[0].placement

    def provision(self, p: Placement) -> ClusterInfo:
        """One attempt: credentials, preflight, the policy gate, then the engine."""
        missing = missing_credentials(p.cloud, config=self.config)
        if missing:
            raise ProvisionError(
                missing,
                ProvisionFailure(code="NoCredentials", scope="cloud", retryable=True,
                                 cloud=p.cloud),
            )
        if p is not self.chosen:  # a failover re-target: the same preflight as the first
            check_failover_placement(self.task, self.name, p,
                                     self.candidates[p.candidate_index], self.config)
        engine = self._engine(p)
        check_shared_backend(p.cloud, engine, self.config)
        first = not self.trail.runs

        def record() -> None:
            self.trail.runs.append(p)
            self.db.upsert_cluster_from_placement(self.name, p, status="INIT", engine=engine)

        # The quotas' check and the record it counts next time: one step for everyone.
        admit_and_record(self.opts.admit, self.name, p, record,
                         on_wait=lambda text: self.reporter.stage("policy", text))
        # The cluster leaves the shared network of an earlier attempt's region (the
        # engine makes the new one's first: its quota errors fail over as the
        # cluster's would).
        network = network_for(self.name, p)
        if self.network is not None and self.network != network:
            release_networks(self.name, self.db, self.reporter.stage,
                             self.reporter.engine_event, keep=network)
        self.network = network
        self.reporter.stage("provision", f"{p.infra} ({engine})")
        # The first attempt applies the diff the user confirmed (its saved engine plan),
        # or checks the engine's plan against the reviewed plan file's changes.
        reviewed = self.opts.reviewed if first else None
        info = provision(
            self.name, p, self.candidates[p.candidate_index], config=self.config,
            progress=self.reporter.engine_event, engine=engine,
            reviewed=self.confirmed if first and p is self.chosen else None,
            expected=reviewed.changes if reviewed is not None else None,
            saved_plan=(reviewed.engine_plan if reviewed is not None and p is self.chosen
                        else None),
            say=self.reporter.stage,
        )
        # The stack's public key, in the state: a plan of this cluster from another
        # machine (a teammate's, CI's) builds the stack it has.
        algorithm = getattr(lowering(p.cloud), "KEY_ALGORITHM", ED25519)
        key = public_key(cluster_workspace(self.name), algorithm)
        if key is not None:
            self.db.set_cluster_key(self.name, key)
        return info

    def _engine(self, p: Placement) -> str:
        """The option's engine, else the one the cluster was made with, else the config's."""
        recorded = self.db.get_cluster(self.name)
        prior = recorded.engine if recorded and recorded.engine in target(p.cloud).engines else None
        return choose_engine(p.cloud, self.opts.engine or prior, self.config)

    def cleanup(self, p: Placement) -> None:
        """After a failed attempt: destroy what it created (a cluster that has come up
        keeps its resources)."""
        runs = self.trail.runs
        if not runs or runs[-1] is not p:
            return  # refused before the engine ran (no credentials): nothing was created
        if self.keep_in_place:
            self.reporter.stage("kept", f"cluster {self.name} keeps its resources on {p.infra}")
            return
        if not has_stack(cluster_workspace(self.name)):
            self.trail.cleaned = self.trail.ran  # the engine stopped before writing anything
            return
        self.reporter.stage("cleanup", f"destroying what the attempt on {p.infra} created")
        self.trail.destroying = True
        try:
            destroy_attempt(self.name, progress=self.reporter.engine_event)
            self.trail.cleaned = self.trail.ran
        except SkycError as exc:
            exc.hint = (f"the engine's state still lists what the attempt created: run "
                        f"`skyc destroy {self.name}` to remove it, or `skyc apply` to retry")
            raise

    def on_attempt(self, a: Attempt, nxt: Placement | None) -> None:
        self.db.add_event(self.name, "attempt", a.message,
                          {"infra": a.placement.infra, "error": a.error})
        self.reporter.attempt(a, nxt)


def record_failed_apply(db: StateDB, name: str, before: ClusterRecord | None,
                        trail: AttemptTrail, error: SkycError) -> None:
    """After every attempt failed. A cluster of which nothing was destroyed, and that
    had come up or that no engine ran for, keeps its record as it was (the engine may
    have changed part of it: ``skyc status --refresh`` checks). A new cluster that left
    nothing behind is forgotten. Any other is FAILED, with the failure as an event."""
    if db.get_cluster(name) is None:
        return  # refused before provisioning (no credentials): nothing was recorded
    came_up = before is not None and before.launched_at is not None
    if before is not None and not trail.destroying and (came_up or trail.ran == 0):
        db.upsert_cluster(before)
        db.add_event(name, "apply-failed", f"apply failed; the cluster keeps its status "
                     f"{before.status}: {error.message}", {"status": before.status})
    elif before is None and trail.ran == 0:
        db.remove_cluster(name)
    elif not came_up and trail.ran > 0 and trail.cleaned == trail.ran:
        db.remove_cluster(name)  # every engine run was destroyed again: nothing is left
        forget_attempts(name)
    else:
        db.set_cluster_status(name, "FAILED")
        db.add_event(name, "apply-failed", f"apply failed: {error.message}",
                     {"status": "FAILED"})
