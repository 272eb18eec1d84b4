"""Provision a cluster: write its stack into the workspace and apply it.

``provision`` writes ``$SKYC_HOME/clusters/<name>/`` (stack, variable values,
the cluster's SSH key), runs init / plan / apply / output and records the
result as ``cluster.json`` (a ClusterInfo, read by the runtime). A failed apply
raises a ProvisionError (classified by the cloud's compiler module) or an
EngineError, and destroys nothing: the failover loop decides what comes next.

``destroy_attempt`` destroys a failed attempt's resources and keeps the
workspace (failover re-targets the same cluster). ``teardown`` destroys the
stack, then removes the workspace except ``logs/``, which stays for inspection
(``skyc destroy`` on a name with only logs left removes them).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from skyc.compiler import build_stack, classify_error, nodes_from_outputs, workspace_values
from skyc.config import SkycConfig, load_config
from skyc.errors import ConfigError
from skyc.nodes import ClusterInfo
from skyc.optimizer.plan import Placement
from skyc.stacks.engine import ApplyFailed, ProgressCallback, StackDiff
from skyc.stacks.model import Stack
from skyc.stacks.terraform import TerraformEngine
from skyc.stacks.terraform_json import to_terraform
from skyc.stacks.workspace import cluster_workspace, write_stack
from skyc.task.candidate import ResourceCandidate

CLUSTER_FILE = "cluster.json"
_INIT_MARK = ".terraform/skyc-init.sha256"


def _init_key(stack: Stack) -> str:
    """Changes when terraform must be initialized again (providers or backend)."""
    doc = to_terraform(stack)
    relevant = {"terraform": doc.get("terraform"), "providers": sorted(doc.get("provider", {}))}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def _engine_for(stack: Stack, workspace: Path) -> TerraformEngine:
    """An initialized engine for the workspace; init runs only when it is needed."""
    engine = TerraformEngine(workspace)
    mark = workspace / _INIT_MARK
    key = _init_key(stack)
    if not mark.exists() or mark.read_text() != key:
        engine.init()
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text(key)
    return engine


def _prepare(
    cluster: str, placement: Placement, candidate: ResourceCandidate, config: SkycConfig
) -> tuple[Stack, Path, TerraformEngine]:
    workspace = cluster_workspace(cluster)
    stack = build_stack(cluster, placement, candidate, config=config, workspace=workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    write_stack(stack, workspace, workspace_values(stack, workspace))
    return stack, workspace, _engine_for(stack, workspace)


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
) -> StackDiff:
    """What ``provision`` would change, against the cluster's current state.

    Writes the workspace (stack, key) and initializes it; changes no resources.
    """
    config = config or load_config()
    _, _, engine = _prepare(cluster, placement, candidate, config)
    try:
        return engine.plan()
    except ApplyFailed as exc:
        raise _classified(exc, placement) from None


def provision(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig | None = None,
    progress: ProgressCallback | None = None,
) -> ClusterInfo:
    """Create or update the cluster; returns its nodes. Also writes ``cluster.json``."""
    config = config or load_config()
    _, workspace, engine = _prepare(cluster, placement, candidate, config)
    try:
        diff = engine.plan()
        if diff.has_changes:
            engine.apply(diff, progress)
    except ApplyFailed as exc:
        raise _classified(exc, placement) from None
    outputs = engine.outputs()
    nodes = nodes_from_outputs(
        placement.cloud, cluster, outputs, config=config, workspace=workspace
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
    return info


def destroy_attempt(cluster: str, progress: ProgressCallback | None = None) -> None:
    """Destroy what a failed provisioning attempt created, keeping the workspace.

    The failover loop calls this before re-targeting the same cluster (same name,
    same key pair) to the next placement. A workspace without a stack is a no-op.
    """
    workspace = cluster_workspace(cluster)
    if not (workspace / "main.tf.json").exists():
        return
    engine = TerraformEngine(workspace)
    if not (workspace / _INIT_MARK).exists():
        engine.init()
    engine.destroy(progress)
    (workspace / CLUSTER_FILE).unlink(missing_ok=True)


def teardown(cluster: str, progress: ProgressCallback | None = None) -> None:
    """Destroy the cluster's resources and remove its workspace (``logs/`` stays)."""
    workspace = cluster_workspace(cluster)
    if not (workspace / "main.tf.json").exists():
        if workspace.exists() and not any(p.name != "logs" for p in workspace.iterdir()):
            shutil.rmtree(workspace)
            return
        raise ConfigError(f"no cluster named {cluster!r} (nothing in {workspace})")
    engine = TerraformEngine(workspace)
    if not (workspace / _INIT_MARK).exists():
        engine.init()
    engine.destroy(progress)
    for path in workspace.iterdir():
        if path.name == "logs":
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
