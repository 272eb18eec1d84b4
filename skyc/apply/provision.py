"""Provision a cluster: write its stack into the workspace and apply it.

``provision`` writes ``$SKYC_HOME/clusters/<name>/`` (the stack as its engine
reads it, variable values, the cluster's SSH key), prepares the engine, runs
plan / apply / outputs and records the
result as ``cluster.json`` (a ClusterInfo, read by the runtime). A failed apply
raises a ProvisionError (classified by the target's ``errors``) or an
EngineError, and destroys nothing: the failover loop decides what comes next.

``destroy_attempt`` destroys a failed attempt's resources and keeps the
workspace (failover re-targets the same cluster). ``teardown`` destroys the
stack with the engine it was written for, then removes the workspace except
``logs/``, which stays for inspection (``skyc destroy`` on a name with only logs
left removes them).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skyc.compiler import (
    build_stack,
    choose_engine,
    classify_error,
    nodes_from_outputs,
    workspace_values,
)
from skyc.errors import ApplyFailed, ConfigError, ProvisionError, StateError
from skyc.model.nodes import CLUSTER_FILE, ClusterInfo
from skyc.model.plan import Placement
from skyc.model.workspace import NETWORK_FILE, NETWORK_MODE_FILE
from skyc.settings.config import SkycConfig, load_config
from skyc.stacks.engine import Engine, ProgressCallback, StackDiff
from skyc.stacks.registry import open_engine, stack_engine, write_stack
from skyc.stacks.workspace import cluster_workspace
from skyc.task.candidate import ResourceCandidate

REQUEST_FILE = "request.json"   # the placement and resources the stack was built from
# A stack whose nodes can be stopped declares the input POWER_VARIABLE (running |
# stopped); its value is kept in the workspace's POWER_FILE (see ``set_power``).
POWER_VARIABLE = POWER_FILE = "power_state"


def _prepare(
    cluster: str, placement: Placement, candidate: ResourceCandidate, config: SkycConfig,
    engine: str | None, workspace: Path | None = None,
) -> tuple[Path, Engine]:
    name = choose_engine(placement.cloud, engine, config)
    workspace = workspace or cluster_workspace(cluster)
    existing = stack_engine(workspace)
    if existing is not None and existing != name and (workspace / CLUSTER_FILE).exists():
        raise ConfigError(
            f"cluster {cluster} was created with {existing}; its stack cannot move to {name}",
            hint=f"use --engine {existing}, or `skyc destroy {cluster}` first",
        )
    driver = open_engine(name, workspace)  # an engine missing here: nothing is written
    stack = build_stack(cluster, placement, candidate, config=config, workspace=workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    write_stack(stack, workspace, workspace_values(stack, workspace), engine=name)
    driver.prepare(stack)
    return workspace, driver


def classified(exc: ApplyFailed, placement: Placement) -> Exception:
    """The engine's failure as the placement's target classifies it (else as it is)."""
    return _classified(exc, placement)


def _classified(exc: ApplyFailed, placement: Placement) -> Exception:
    error = classify_error(placement.cloud, exc.diagnostics, placement=placement)
    if error is None:
        return exc
    if exc.log_file and error.hint is None:
        error.hint = f"full engine output: {exc.log_file}"
    return error


def plan_changes(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig | None = None,
    engine: str | None = None,
    workspace: Path | None = None,
) -> StackDiff:
    """What ``provision`` would change, against the cluster's current state.

    Writes the workspace (stack, key) and initializes it; changes no resources.
    ``engine`` as :func:`skyc.compiler.choose_engine` takes it. ``workspace``: where
    to work instead of the cluster's own (a temporary folder for a cluster that was
    never applied: the diff is then all creates, and nothing is left behind).
    """
    config = config or load_config()
    _, driver = _prepare(cluster, placement, candidate, config, engine, workspace)
    try:
        return driver.plan()
    except ApplyFailed as exc:
        raise _classified(exc, placement) from None


def provision(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig | None = None,
    progress: ProgressCallback | None = None,
    engine: str | None = None,
    reviewed: StackDiff | None = None,
    expected: list[tuple[str, str]] | None = None,
    saved_plan: bytes | None = None,
    say: Callable[[str, str], None] | None = None,
) -> ClusterInfo:
    """Create or update the cluster; returns its nodes. Also writes ``cluster.json``.

    ``reviewed``: the diff the user confirmed (from :func:`plan_changes` on this
    workspace): its saved engine plan is applied as it is, with no second plan (the
    engine refuses it when the state moved since). ``expected``: the (address,
    action) pairs a saved plan file lists; the engine's plan must list the same, or
    nothing is applied (:class:`skyc.errors.StateError` names what differs).
    ``saved_plan``: with ``expected``, the engine's saved plan from a plan file made
    against this workspace: applied as it is, with no new plan (the engine refuses it
    when its state moved since). ``say(stage, detail)``: progress in words (of the
    shared network, :mod:`skyc.apply.networks`, made first where the target has one).
    """
    config = config or load_config()
    (cluster_workspace(cluster) / POWER_FILE).unlink(missing_ok=True)  # provisioned: running
    # The region's shared network first; a plan made before it was (re)applied holds
    # other ids: it is checked against the engine's new plan, not applied as it is.
    if _ensure_network(cluster, placement, config, progress, say):
        expected = change_pairs(reviewed) if reviewed and expected is None else expected
        reviewed, saved_plan = None, None
    workspace, driver = _prepare(cluster, placement, candidate, config, engine)
    try:
        if saved_plan is not None and expected is not None:
            reviewed = _saved_diff(workspace, saved_plan, expected)
        diff = reviewed if reviewed is not None else driver.plan()
        if expected is not None:
            check_expected(cluster, diff, expected)
        if diff.has_changes:
            driver.apply(diff, progress)
    except ApplyFailed as exc:
        raise _classified(exc, placement) from None
    return _record(cluster, placement, candidate, config, workspace, driver.outputs())


def _record(cluster: str, placement: Placement, candidate: ResourceCandidate,
            config: SkycConfig, workspace: Path, outputs: dict[str, Any]) -> ClusterInfo:
    """The applied cluster's nodes, written as ``cluster.json`` with the request."""
    nodes = nodes_from_outputs(
        placement.cloud, cluster, outputs, config=config, workspace=workspace,
        region=placement.region,
    )
    info = ClusterInfo(
        name=cluster,
        cloud=placement.cloud,
        region=placement.region,
        zone=placement.zone,
        nodes=nodes,
        num_gpus_per_node=sum((placement.accelerators or {}).values()),
        workspace=str(workspace),
    )
    (workspace / CLUSTER_FILE).write_text(info.model_dump_json(indent=2) + "\n")
    request = {"placement": placement.model_dump(mode="json"),
               "candidate": candidate.model_dump(mode="json")}
    (workspace / REQUEST_FILE).write_text(json.dumps(request, indent=2, sort_keys=True) + "\n")
    return info


def _ensure_network(cluster: str, placement: Placement, config: SkycConfig,
                    progress: ProgressCallback | None,
                    say: Callable[[str, str], None] | None) -> bool:
    """The cluster's shared network, ready (see :func:`skyc.apply.networks.ensure_network`);
    whether its ids in the workspace changed."""
    from skyc.apply.networks import ensure_network, network_for

    if network_for(cluster, placement) is None:
        return False
    from skyc.state.database import StateDB

    with StateDB() as db:
        return ensure_network(cluster, placement, config, db,
                              say or (lambda stage, detail: None), progress)


REVIEWED_PLAN_FILE = ".skyc-reviewed-plan"


def _saved_diff(workspace: Path, saved_plan: bytes, expected: list[tuple[str, str]]
                ) -> StackDiff:
    """A plan file's engine plan as the diff to apply, written into the workspace."""
    from skyc.stacks.engine import ResourceChange

    path = workspace / REVIEWED_PLAN_FILE
    path.write_bytes(saved_plan)
    path.chmod(0o600)
    return StackDiff(plan_file=str(path), changes=[
        ResourceChange(address=a, type=a.split(".")[0], action=b)
        for a, b in expected])


def change_pairs(diff: StackDiff) -> list[tuple[str, str]]:
    """The diff's changes as sorted (address, action) pairs, no-ops left out."""
    return sorted((c.address, c.action) for c in diff.changes
                  if c.action not in ("no-op", "read"))


def check_expected(cluster: str, diff: StackDiff, expected: list[tuple[str, str]]) -> None:
    """Refuse when the engine's plan is not the reviewed one."""
    got = change_pairs(diff)
    want = sorted((a, b) for a, b in expected)
    if got == want:
        return
    extra = [f"{a} ({b})" for a, b in got if (a, b) not in want]
    gone = [f"{a} ({b})" for a, b in want if (a, b) not in got]
    parts = ([f"now also {', '.join(extra)}"] if extra else []) + (
        [f"no longer {', '.join(gone)}"] if gone else [])
    raise StateError(
        f"cluster {cluster} moved since the plan was saved: {'; '.join(parts)}",
        hint="nothing was applied; run `skyc plan -o FILE` again and review the new plan")


def recorded_request(cluster: str) -> tuple[Placement, ResourceCandidate]:
    """The placement and resources cluster ``cluster`` was last provisioned with."""
    path = cluster_workspace(cluster) / REQUEST_FILE
    try:
        doc = json.loads(path.read_text())
        return (Placement.model_validate(doc["placement"]),
                ResourceCandidate.model_validate(doc["candidate"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StateError(f"cluster {cluster}: {path} cannot be read ({exc})",
                         hint=f"run `skyc apply` for it again, or `skyc destroy {cluster}`"
                         ) from None


def can_stop(cluster: str, placement: Placement, candidate: ResourceCandidate,
             config: SkycConfig | None = None) -> bool:
    """Whether the cluster's stack lets its nodes be stopped (declares the power input)."""
    stack = build_stack(cluster, placement, candidate, config=config or load_config(),
                        workspace=cluster_workspace(cluster))
    return POWER_VARIABLE in stack.variables


def set_power(
    cluster: str, state: str, *, config: SkycConfig | None = None,
    progress: ProgressCallback | None = None,
) -> ClusterInfo | None:
    """Re-apply the cluster's stack with its nodes ``stopped`` (disks kept) or ``running``
    again; returns the nodes once running (their addresses may have changed)."""
    config = config or load_config()
    placement, candidate = recorded_request(cluster)
    workspace = cluster_workspace(cluster)
    engine = stack_engine(workspace)
    power = workspace / POWER_FILE
    before = power.read_text() if power.exists() else None
    power.write_text(state + "\n")
    try:
        if state == "running":
            return provision(cluster, placement, candidate, config=config, progress=progress,
                             engine=engine)
        _, driver = _prepare(cluster, placement, candidate, config, engine)
        try:
            diff = driver.plan()
            if diff.has_changes:
                driver.apply(diff, progress)
        except ApplyFailed as exc:
            raise _classified(exc, placement) from None
        return None
    except BaseException:
        if before is None:
            power.unlink(missing_ok=True)
        else:
            power.write_text(before)
        raise


# A destroy that meets a transient error (throttling; a rule or instance the cloud
# does not list yet or any more) runs again: destroying is idempotent, and the next run
# refreshes what is left. After these pauses (s), the error is the user's to see.
DESTROY_RETRY_PAUSES_S = (3.0, 6.0)


def _destroy(cluster: str, engine: Engine, progress: ProgressCallback | None) -> None:
    from skyc.retrying import with_pauses

    with_pauses(lambda: engine.destroy(progress), DESTROY_RETRY_PAUSES_S, ApplyFailed,
                lambda exc: _transient(cluster, exc))


def destroy_stack(cloud: str, engine: Engine, progress: ProgressCallback | None) -> None:
    """Destroy a stack of ``cloud`` that is no cluster's (a shared network), retried as
    a cluster's is."""
    from skyc.retrying import with_pauses

    def transient(exc: ApplyFailed) -> bool:
        error = classify_error(cloud, exc.diagnostics)
        return isinstance(error, ProvisionError) and error.transient

    with_pauses(lambda: engine.destroy(progress), DESTROY_RETRY_PAUSES_S, ApplyFailed,
                transient)


def _transient(cluster: str, exc: ApplyFailed) -> bool:
    try:
        placement, _ = recorded_request(cluster)
    except StateError:
        return False
    error = _classified(exc, placement)
    return isinstance(error, ProvisionError) and error.transient


def destroy_attempt(cluster: str, progress: ProgressCallback | None = None) -> None:
    """Destroy what a failed provisioning attempt created, keeping the workspace.

    The failover loop calls this before re-targeting the same cluster (same name,
    same key pair) to the next placement. A workspace without a stack is a no-op.
    """
    workspace = cluster_workspace(cluster)
    engine = stack_engine(workspace)
    if engine is None:
        return
    _destroy(cluster, open_engine(engine, workspace), progress)
    (workspace / CLUSTER_FILE).unlink(missing_ok=True)


def teardown(cluster: str, progress: ProgressCallback | None = None,
             say: Callable[[str, str], None] | None = None) -> None:
    """Destroy the cluster's resources and remove its workspace (``logs/`` stays); the
    shared network it was in goes too when no other cluster uses it."""
    workspace = cluster_workspace(cluster)
    engine = stack_engine(workspace)
    if engine is None:
        if workspace.exists() and not any(p.name not in ("logs", NETWORK_FILE, NETWORK_MODE_FILE)
                                          for p in workspace.iterdir()):
            shutil.rmtree(workspace)  # its stack was never written (its network may be)
            _release_networks(cluster, progress, say)
            return
        raise _no_workspace(cluster, workspace)
    _destroy(cluster, open_engine(engine, workspace), progress)
    _clear_workspace(workspace)
    _release_networks(cluster, progress, say)


def _release_networks(cluster: str, progress: ProgressCallback | None,
                      say: Callable[[str, str], None] | None) -> None:
    from skyc.apply.networks import release_networks
    from skyc.state.database import StateDB

    with StateDB() as db:
        release_networks(cluster, db, say or (lambda stage, detail: None), progress)


def _no_workspace(cluster: str, workspace: Path) -> ConfigError:
    """What a teardown says of a cluster whose stack is not in this machine's
    ``SKYC_HOME``: with a team's state, one a teammate made on their machine."""
    from skyc.model.owner import owner
    from skyc.settings.config import load_config
    from skyc.state.database import StateDB

    with StateDB() as db:
        record = db.get_cluster(cluster)
    made_by = record.owner if record is not None else None
    if made_by and made_by != owner(load_config()):
        return ConfigError(
            f"cluster {cluster!r} belongs to {made_by}: its stack and engine state are in "
            f"the SKYC_HOME it was created from, not here ({workspace})",
            hint=f"run `skyc down {cluster}` as {made_by}, or keep stacks in a remote "
            "backend (config backend:) so that a teammate's skyc can reach them")
    return ConfigError(f"no cluster named {cluster!r} (nothing in {workspace})")


def forget_attempts(cluster: str) -> None:
    """After a first apply whose every attempt was destroyed again: remove the stack,
    its empty engine state and the key from the workspace (``logs/`` stays), so that no
    workspace of a cluster that never existed is left behind."""
    workspace = cluster_workspace(cluster)
    if workspace.is_dir():
        _clear_workspace(workspace)


def _clear_workspace(workspace: Path) -> None:
    """Remove everything in ``workspace`` but ``logs/``."""
    for path in workspace.iterdir():
        if path.name == "logs":
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
