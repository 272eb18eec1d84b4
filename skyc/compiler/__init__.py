"""The compiler: lower a cluster placement into a Stack, one folder per target.

Targets are a registry of packages loaded lazily by name: each package's ``target``
module holds ``TARGET``, a :class:`~skyc.compiler.contract.Target` (its record and
parts). The built-in ones are the folders ``skyc/compiler/<name>/``; another is added
with :func:`register` (a target's name and its package need not be the same word:
``lambda`` cannot be a folder an ``import`` statement names). This package picks the
target for ``placement.cloud``, applies the checks its capabilities call for, and
chooses the engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from skyc.compiler.contract import Capabilities, Target
from skyc.errors import UnsupportedFeature

# Light on purpose: the config module imports the target folders' config sections,
# which imports this package; the base module (and through it the optimizer's and
# the stacks' models) loads when a target's parts are first asked for.
if TYPE_CHECKING:
    from skyc.compiler.contract import CredentialCheck, Lowering, OwnOffers
    from skyc.errors import ProvisionError
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.nodes import Node
    from skyc.model.plan import Placement
    from skyc.model.stack import Stack
    from skyc.settings.config import SkycConfig
    from skyc.task.candidate import ResourceCandidate

# The built-in targets, in the order `skyc check` lists the bought ones.
_BUILT_IN = ("aws", "gcp", "azure", "kubernetes", "local", "ssh")
# name -> the package holding its ``target`` module, in registration order.
_PACKAGES: dict[str, str] = {name: f"skyc.compiler.{name}" for name in _BUILT_IN}
_LOADED: dict[str, Target] = {}
# The modules every target package holds (its ``target`` module hands them out).
TARGET_MODULES = ("target", "lowering", "errors", "outputs", "credentials")


def register(name: str, package: str) -> None:
    """Add the target ``name`` whose record is ``<package>.target.TARGET`` (replacing a
    registration of the same name). Its record is checked when first loaded."""
    if not name or name != name.strip().lower() or "/" in name:
        raise ValueError(f"a target's name is a lower-case word, not {name!r}")
    _PACKAGES[name] = package
    _LOADED.pop(name, None)


def unregister(name: str) -> None:
    """Remove a target added with :func:`register` (the built-in ones stay)."""
    if name in _BUILT_IN:
        raise ValueError(f"{name} is a built-in target")
    _PACKAGES.pop(name, None)
    _LOADED.pop(name, None)


def target_names() -> tuple[str, ...]:
    """Every registered target's name, sorted."""
    return tuple(sorted(_PACKAGES))


def cloud_names() -> tuple[str, ...]:
    """The registered targets bought from a provider (they need credentials; `skyc
    check` lists them in this order); the others are machines skyc is given."""
    return tuple(name for name in _PACKAGES if target(name).bought)


def is_target(name: str) -> bool:
    return name in _PACKAGES


def target(name: str) -> Target:
    """The target ``name`` (its record and parts), or UnsupportedFeature naming the
    known ones. A record that disagrees with itself (a capability without the part
    that carries it out) is a TypeError."""
    record = _LOADED.get(name)
    if record is not None:
        return record
    package = _PACKAGES.get(name)
    if package is None:
        raise UnsupportedFeature(
            f"infra: skyc cannot provision on {name!r} yet "
            f"(supported: {', '.join(target_names())})"
        )
    record = importlib.import_module(f"{package}.target").TARGET
    if record.name != name:
        raise TypeError(f"{package}.target.TARGET is named {record.name!r}, not {name!r}")
    # A registered target's parts are checked when it is loaded; the built-in ones'
    # are checked by the conformance tests, so that a plan loads no part it does not use.
    problems = record.problems(parts=name not in _BUILT_IN)
    if problems:
        raise TypeError(f"target {name}: {'; '.join(problems)}")
    _LOADED[name] = record
    return record  # type: ignore[no-any-return]


def lowering(name: str) -> Lowering:
    return target(name).lowering()


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
    :func:`skyc.model.workspace.cluster_owner`: a new cluster's is the config's), and
    writes nothing on disk. The stack's ``labels`` hold the owner for
    :func:`workspace_values` to record."""
    from skyc.compiler.base import BuildRequest, check_supported
    from skyc.model.owner import OWNER_LABEL, owner
    from skyc.model.workspace import check_cluster_name, cluster_owner, shares_network

    check_cluster_name(cluster)
    check_supported(capabilities(placement.cloud), placement, candidate)
    who = cluster_owner(workspace, owner(config))
    shared = has_shared_network(placement.cloud) and shares_network(workspace)
    stack = lowering(placement.cloud).build(BuildRequest(
        cluster=cluster, placement=placement, candidate=candidate, config=config,
        workspace=workspace, owner=who, shared_network=shared))
    labels = {k: v for k, v in stack.labels.items() if k != OWNER_LABEL}
    stack.labels = dict(sorted({**labels, **({OWNER_LABEL: who} if who else {})}.items()))
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """Values of the stack's input variables; may create files (the cluster's SSH key),
    and records the cluster's owner (from the stack's labels) the first time."""
    from skyc.model.owner import OWNER_LABEL
    from skyc.model.workspace import record_network_mode, record_owner

    who = stack.labels.get(OWNER_LABEL)
    if who:
        record_owner(workspace, who)
    if has_shared_network(stack.cloud):
        record_network_mode(workspace, NETWORK_INPUT in stack.variables)
    return lowering(stack.cloud).workspace_values(stack, workspace)


# The input of a cluster's stack that names its shared network's VPC.
NETWORK_INPUT = "vpc_id"


class NetworkPart(Protocol):
    """What a lowering whose clusters share a network per region adds
    (:mod:`skyc.compiler.aws.network`, :mod:`skyc.compiler.gcp.network`)."""

    def network_name(self, region: str) -> str: ...
    def network_stack(self, region: str, zones: list[str | None], owner: str,
                      config: SkycConfig) -> Stack: ...
    def network_inputs(self, outputs: dict[str, Any], zone: str | None) -> dict[str, str]: ...
    def network_values(self, stack: Stack, workspace: Path) -> dict[str, Any]: ...


def network_part(cloud: str) -> NetworkPart | None:
    """The target's shared-network functions, or None for a target without one."""
    part = lowering(cloud)
    return cast(NetworkPart, part) if hasattr(part, "network_stack") else None


def has_shared_network(cloud: str) -> bool:
    """Whether ``cloud``'s clusters share a network skyc keeps per region."""
    return network_part(cloud) is not None


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
    ``ssh_proxy`` part)."""
    record = target(cloud)
    nodes = record.outputs().nodes(cluster, outputs, config=config, workspace=workspace)
    hook = record.ssh_proxy()
    proxy = hook.ssh_proxy_command(config, region) if hook is not None else None
    if not proxy:
        return nodes
    return [n.model_copy(update={"proxy_command": proxy})
            if n.transport == "ssh" and n.proxy_command is None else n for n in nodes]


def node_stopped(cloud: str, resource_type: str, values: dict[str, Any]) -> bool | None:
    """Whether a resource the engine read back is one of the target's nodes and stopped
    (True) or running (False); None for other resources, and for targets that cannot
    tell (no ``power`` part)."""
    power = target(cloud).power()
    return None if power is None else power.stopped(resource_type, values)


def tells_node_states(cloud: str) -> bool:
    """Whether the target reads its nodes' states from refreshed resources."""
    return target(cloud).power() is not None


def classify_error(
    cloud: str, diagnostics: Sequence[Diagnostic], *, placement: Placement | None = None
) -> ProvisionError | None:
    """A ProvisionError for the first diagnostic the target recognizes, else None."""
    return target(cloud).errors().classify(diagnostics, placement)


def own_offers(name: str) -> OwnOffers | None:
    """The offers part of a target that has no price catalog and learns its offers
    elsewhere (a cluster's nodes, the config), or None."""
    return target(name).own_offers()


def credentials(
    cloud: str, env: Mapping[str, str], home: Path, config: SkycConfig | None = None
) -> CredentialCheck:
    """Whether the target's credentials are present (cheap local checks only); the
    config gives a target its own section (a project, a subscription)."""
    return target(cloud).credentials().credentials(env, home, config)


__all__ = [
    "TARGET_MODULES",
    "Capabilities",
    "Target",
    "build_stack",
    "capabilities",
    "choose_engine",
    "classify_error",
    "cloud_names",
    "credentials",
    "is_target",
    "lowering",
    "node_stopped",
    "nodes_from_outputs",
    "own_offers",
    "register",
    "target",
    "target_names",
    "tells_node_states",
    "unregister",
    "workspace_values",
]
