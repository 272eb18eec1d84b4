"""A cluster's status from what its engine and its nodes show (``skyc status --refresh``).

The words are SkyPilot's: ``UP`` is a cluster that came up and whose every resource
and node is still there; ``INIT`` is one that is not (or no longer) whole: its
provisioning never finished (killed before or while its engine ran), or some or all
of it was terminated outside skyc. The note says which, and what to run. A cluster
whose last apply FAILED and that never came up stays FAILED; one that skyc stopped
stays ``STOPPED`` while its resources are there. A cluster whose every node the
engine reads back as stopped (the target says which resources are nodes and how
they stand) is ``STOPPED`` too, with a note when skyc did not stop it; some nodes
stopped and others running is ``INIT``. An empty engine state is not a stopped
cluster.

:func:`observe` reads (the engine's refresh, the node directories);
:func:`decide` is the pure decision; :func:`probe` is both.
:func:`removed_nodes_outcome` gives ``skyc logs`` what a job did on nodes that a
reshape removed since (their stored logs, the recorded code).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyc.stacks.engine import RefreshedResource
    from skyc.state.database import ClusterRecord, ClusterStatus


@dataclass(frozen=True)
class Observed:
    """What a refresh found. ``stack``: the workspace holds the cluster's stack;
    ``managed``: resources in the engine's state; ``gone``: resources deleted outside
    skyc; ``missing_nodes``: nodes whose directory (local nodes) is gone; ``stopped``
    and ``running``: the nodes' resources the engine read back, by power state (both
    empty where the target or engine cannot tell)."""

    workspace: str
    stack: bool
    managed: int = 0
    gone: tuple[str, ...] = ()
    missing_nodes: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    running: tuple[str, ...] = ()


def _fix(name: str, verb: str) -> str:
    return f"`skyc apply` {verb}, `skyc destroy {name}` removes what is left"


def decide(record: ClusterRecord, seen: Observed) -> tuple[ClusterStatus, str]:
    """The status ``record`` should have given ``seen``, and a note saying why."""
    stopped = record.status == "STOPPED"
    came_up = record.launched_at is not None and (bool(record.nodes) or stopped)
    if not came_up:
        status: ClusterStatus = "FAILED" if record.status == "FAILED" else "INIT"
        if not seen.stack or seen.managed == 0:
            what = "nothing was created"
        else:
            what = f"the engine's state holds {seen.managed} resource(s)"
        return status, f"provisioning did not finish: {what} ({_fix(record.name, 'resumes it')})"
    if not seen.stack:
        return "INIT", (f"terminated outside skyc: its stack is missing from "
                        f"{seen.workspace} ({_fix(record.name, 'recreates it')})")
    if seen.managed == 0:
        return "INIT", ("terminated outside skyc: the engine's state holds none of its "
                        f"resources ({_fix(record.name, 'recreates it')})")
    if seen.gone or seen.missing_nodes:
        parts = []
        if seen.gone:
            parts.append("deleted outside skyc: " + ", ".join(seen.gone))
        if seen.missing_nodes:
            every = len(seen.missing_nodes) == len(record.nodes)
            parts.append(("every node directory is gone: " if every
                          else "node directories missing: ") + ", ".join(seen.missing_nodes))
        return "INIT", "; ".join(parts) + f" ({_fix(record.name, 'recreates them')})"
    return _power(record.name, stopped, seen)


def _power(name: str, stopped: bool, seen: Observed) -> tuple[ClusterStatus, str]:
    """A whole cluster's status from its nodes' power states (``stopped``: skyc
    stopped it)."""
    if seen.stopped and not seen.running:
        if stopped:
            return "STOPPED", ""
        return "STOPPED", (f"stopped outside skyc: {', '.join(seen.stopped)} (disks kept; "
                           f"`skyc start {name}` resumes it, `skyc destroy {name}` removes it)")
    if seen.stopped:
        return "INIT", (f"stopped outside skyc: {', '.join(seen.stopped)}, while "
                        f"{', '.join(seen.running)} run (`skyc apply` starts them again, "
                        f"`skyc stop {name}` stops the rest)")
    if stopped and seen.running:
        return "STOPPED", (f"its nodes run again, started outside skyc: "
                           f"{', '.join(seen.running)} (`skyc start {name}` records their "
                           f"addresses, `skyc stop {name}` stops them)")
    return ("STOPPED" if stopped else "UP"), ""


def observe(record: ClusterRecord) -> Observed:
    """Ask the engine the cluster was created with to refresh (it reads every resource
    back; nothing is changed) and look for local nodes' directories."""
    from skyc.stacks.registry import open_engine, stack_engine
    from skyc.stacks.workspace import cluster_workspace

    workspace = Path(record.workspace) if record.workspace else cluster_workspace(record.name)
    missing = tuple(
        str(n.get("name")) for n in record.nodes
        if n.get("node_dir") and not Path(str(n["node_dir"])).is_dir()
    )
    written_for = stack_engine(workspace)
    if written_for is None:
        return Observed(str(workspace), stack=False, missing_nodes=missing)
    found = open_engine(record.engine or written_for, workspace).refresh()
    stopped, running = power_states(record.cloud, found.resources)
    return Observed(str(workspace), stack=True, managed=found.managed,
                    gone=tuple(found.gone), missing_nodes=missing,
                    stopped=stopped, running=running)


def power_states(cloud: str, resources: Sequence[RefreshedResource]
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The addresses of the nodes' resources that are stopped, and of those running,
    as the target reads the resources the engine refreshed."""
    from skyc.compiler import node_stopped

    stopped: list[str] = []
    running: list[str] = []
    for resource in resources:
        state = node_stopped(cloud, resource.type, resource.values)
        if state is not None:
            (stopped if state else running).append(resource.address)
    return tuple(sorted(stopped)), tuple(sorted(running))


def hourly_cost_after(record: ClusterRecord, status: str) -> float | None:
    """What the cluster costs per hour once its status changed to ``status`` by a
    refresh: its disks' price when it became STOPPED, its placement's when it is UP
    again; None when the cost stays (or cannot be read)."""
    from skyc.errors import SkycError

    if status == record.status or status not in ("STOPPED", "UP"):
        return None
    try:
        if status == "STOPPED":
            from skyc.apply.power import stopped_hourly_cost

            return stopped_hourly_cost(record.name, record)
        from skyc.apply.provision import recorded_request

        return recorded_request(record.name)[0].hourly_cost
    except (SkycError, OSError):
        return None


# A refresh is read-only: one that failed (a connection cut, a throttled read) while a
# recovery asks what the cloud says of its lost node is run again after this pause (s).
CLOUD_VIEW_RETRY_PAUSES_S = (2.0,)


def cloud_view(cluster: str) -> str:
    """What the cloud says of a cluster whose node stopped answering, read through its
    engine (``; the cloud reports aws_instance.node_0 gone``), for a recovery's reason;
    empty when it reports nothing amiss or cannot be asked, and for targets that do not
    read their nodes' states (their refresh would tell nothing of the nodes)."""
    from skyc.compiler import tells_node_states
    from skyc.errors import SkycError
    from skyc.state.database import StateDB

    try:
        with StateDB() as db:
            record = db.get_cluster(cluster)
    except (SkycError, OSError):
        return ""
    if record is None or not tells_node_states(record.cloud):
        return ""  # (a refresh there would only delay the recovery)
    seen = _observed_again_if_need_be(record)
    if seen is None:
        return ""
    parts = []
    if seen.gone:
        parts.append(", ".join(seen.gone) + " gone")
    if seen.stopped:
        parts.append(", ".join(seen.stopped) + " stopped")
    return f"; the cloud reports {'; '.join(parts)}" if parts else ""


def _observed_again_if_need_be(record: ClusterRecord) -> Observed | None:
    """``observe(record)``, run again after a pause when it fails; None when it fails
    again (a refresh changes nothing, so running it twice is safe)."""
    from skyc.errors import SkycError
    from skyc.retrying import with_pauses

    try:
        return with_pauses(lambda: observe(record), CLOUD_VIEW_RETRY_PAUSES_S,
                           (SkycError, OSError), lambda exc: True)
    except (SkycError, OSError):
        return None


def probe(record: ClusterRecord) -> tuple[str, str]:
    """The cluster's status as its engine and its nodes show it, with a note."""
    return decide(record, observe(record))


def removed_nodes_outcome(cluster: str, present: set[str], job_id: int,
                          out: Callable[[bytes], None]) -> int | None:
    """A finished job that ran on nodes the cluster no longer has (it was reshaped):
    passes their stored logs to ``out``, prefixed ``(<node>, removed)``, and returns the
    job's code as recorded (a node's own failure before a peer stopped with 143); None
    when every node of the job is still there, or the job has not finished."""
    from skyc.runtime.control import job_exit_code
    from skyc.runtime.logs import Prefixer, log_name
    from skyc.state.database import TERMINAL_JOB_STATUSES, StateDB

    with StateDB() as db:
        record = db.find_job(cluster, job_id)
    if record is None or record.status not in TERMINAL_JOB_STATUSES:
        return None
    gone = sorted(set(record.exit_codes) - present)
    if not gone:
        return None
    for node in gone:
        prefixer = Prefixer(f"({node}, removed)", out)
        for phase in ("setup", "run"):
            path = Path(record.log_path or "") / log_name(node, phase)
            if record.log_path and path.is_file():
                with path.open("rb") as fh:
                    while chunk := fh.read(1 << 20):
                        prefixer.feed(chunk)
        prefixer.flush()
    return job_exit_code([(c, c == 143) for c in record.exit_codes.values()])
