"""The compiler: lower a cluster placement into a Stack, one folder per target.

Targets are a registry loaded lazily by name: ``skyc/compiler/<name>/`` holds
the ``TARGET`` record and the same modules for every target (see
:mod:`skyc.compiler.base`). This package picks the target for ``placement.cloud``,
applies the checks its capabilities call for, and chooses the engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from skyc.errors import UnsupportedFeature

# Light on purpose: the config module imports the target folders' config sections,
# which imports this package; the base module (and through it the optimizer's and
# the stacks' models) loads when a target's record or modules are first asked for.
if TYPE_CHECKING:
    from skyc.compiler.base import (
        Capabilities,
        CredentialCheck,
        CredentialsModule,
        Errors,
        Lowering,
        Outputs,
        OwnOffers,
        Target,
    )
    from skyc.errors import ProvisionError
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.nodes import Node
    from skyc.model.plan import Placement
    from skyc.model.stack import Stack
    from skyc.settings.config import SkycConfig
    from skyc.task.candidate import ResourceCandidate

# Registered targets; each is the folder skyc/compiler/<name>/.
TARGETS = ("aws", "azure", "gcp", "kubernetes", "local", "ssh")
# The targets that are bought from a provider (they need credentials and have offers
# of their own or a price catalog), in the order `skyc check` lists them; the others
# (local, ssh) are machines skyc is given.
CLOUD_TARGETS = ("aws", "gcp", "azure", "kubernetes")
# The modules every target folder holds.
TARGET_MODULES = ("lowering", "errors", "outputs", "credentials")


def target(name: str) -> Target:
    """The target record for ``name``, or UnsupportedFeature naming the known ones."""
    if name not in TARGETS:
        raise UnsupportedFeature(
            f"infra: skyc cannot provision on {name!r} yet (supported: {', '.join(TARGETS)})"
        )
    record = importlib.import_module(f"skyc.compiler.{name}").TARGET
    return cast("Target", record)


def _part(name: str, module: str) -> Any:
    target(name)
    return importlib.import_module(f"skyc.compiler.{name}.{module}")


def lowering(name: str) -> Lowering:
    return cast("Lowering", _part(name, "lowering"))


def capabilities(cloud: str) -> Capabilities:
    return target(cloud).capabilities


def choose_engine(cloud: str, requested: str | None, config: SkycConfig) -> str:
    """The engine for a target's stacks: ``requested`` (``--engine``), else the
    config's ``engine`` (for this target, then for all), else the target's first.

    An explicit request (``--engine``, or the config naming this target) for an
    engine the target lacks is refused, naming the engines it has; a config-wide
    default it lacks falls back to the target's own first engine.
    """
    record = target(cloud)
    per_target, default = config.engine_for(cloud)
    explicit = requested or per_target
    if explicit:
        if explicit not in record.engines:
            raise UnsupportedFeature(
                f"engine: {cloud} stacks cannot be applied with {explicit} "
                f"(engines for {cloud}: {', '.join(record.engines)})",
                hint=f"use --engine {record.engines[0]}, or leave the engine unset",
            )
        return explicit
    if default and default in record.engines:
        return default
    return record.engines[0]


def build_stack(
    cluster: str,
    placement: Placement,
    candidate: ResourceCandidate,
    *,
    config: SkycConfig,
    workspace: Path,
) -> Stack:
    """The cluster's stack. Reads only the owner recorded in ``workspace`` (see
    :func:`skyc.stacks.workspace.cluster_owner`: a new cluster's is the config's), and
    writes nothing on disk. The stack's ``labels`` hold the owner for
    :func:`workspace_values` to record."""
    from skyc.compiler.base import BuildRequest, check_supported
    from skyc.model.owner import OWNER_LABEL, owner
    from skyc.stacks.workspace import check_cluster_name, cluster_owner

    check_cluster_name(cluster)
    check_supported(capabilities(placement.cloud), placement, candidate)
    who = cluster_owner(workspace, owner(config))
    stack = lowering(placement.cloud).build(BuildRequest(
        cluster=cluster, placement=placement, candidate=candidate, config=config,
        workspace=workspace, owner=who))
    labels = {k: v for k, v in stack.labels.items() if k != OWNER_LABEL}
    stack.labels = dict(sorted({**labels, **({OWNER_LABEL: who} if who else {})}.items()))
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Values of the stack's input variables; may create files (the cluster's SSH key),
    and records the cluster's owner (from the stack's labels) the first time."""
    from skyc.model.owner import OWNER_LABEL
    from skyc.stacks.workspace import record_owner

    who = stack.labels.get(OWNER_LABEL)
    if who:
        record_owner(workspace, who)
    return lowering(stack.cloud).workspace_values(stack, workspace)


def nodes_from_outputs(
    cloud: str,
    cluster: str,
    outputs: dict[str, Any],
    *,
    config: SkycConfig,
    workspace: Path,
    region: str | None = None,
) -> list[Node]:
    """The cluster's nodes from the engine's outputs. SSH nodes are reached through the
    proxy command the target's config names for ``region``, if any (the target's
    ``outputs.ssh_proxy_command``)."""
    module = cast("Outputs", _part(cloud, "outputs"))
    nodes = module.nodes(cluster, outputs, config=config, workspace=workspace)
    proxy_for = getattr(module, "ssh_proxy_command", None)
    proxy = proxy_for(config, region) if proxy_for is not None else None
    if not proxy:
        return nodes
    return [n.model_copy(update={"proxy_command": proxy})
            if n.transport == "ssh" and n.proxy_command is None else n for n in nodes]


def node_stopped(cloud: str, resource_type: str, values: dict[str, Any]) -> bool | None:
    """Whether a resource the engine read back is one of the target's nodes and stopped
    (True) or running (False); None for other resources, and for targets that cannot
    tell (the target's ``outputs.stopped``)."""
    hook = getattr(_part(cloud, "outputs"), "stopped", None)
    return None if hook is None else cast("bool | None", hook(resource_type, values))


def tells_node_states(cloud: str) -> bool:
    """Whether the target reads its nodes' states from refreshed resources."""
    return hasattr(_part(cloud, "outputs"), "stopped")


def classify_error(
    cloud: str, diagnostics: Sequence[Diagnostic], *, placement: Placement | None = None
) -> ProvisionError | None:
    """A ProvisionError for the first diagnostic the target recognizes, else None."""
    return cast("Errors", _part(cloud, "errors")).classify(diagnostics, placement)


def own_offers(name: str) -> OwnOffers | None:
    """The ``offers`` module of a target that has no price catalog and learns its
    offers elsewhere (a cluster's nodes, the config), or None."""
    import importlib.util

    target(name)
    module = f"skyc.compiler.{name}.offers"
    if importlib.util.find_spec(module) is None:
        return None
    return cast("OwnOffers", importlib.import_module(module))


def credentials(
    cloud: str, env: Mapping[str, str], home: Path, config: SkycConfig | None = None
) -> CredentialCheck:
    """Whether the target's credentials are present (cheap local checks only); the
    config gives a target its own section (a project, a subscription)."""
    module = cast("CredentialsModule", _part(cloud, "credentials"))
    return module.credentials(env, home, config)


def __getattr__(name: str) -> Any:
    """``Capabilities`` and ``Target``, the records' types, from the base module on
    first use (importing it here would load the optimizer's and stacks' models)."""
    if name in ("Capabilities", "Target"):
        from skyc.compiler import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TARGETS",
    "TARGET_MODULES",
    "Capabilities",
    "Target",
    "build_stack",
    "capabilities",
    "choose_engine",
    "classify_error",
    "credentials",
    "lowering",
    "node_stopped",
    "nodes_from_outputs",
    "target",
    "tells_node_states",
    "workspace_values",
]
