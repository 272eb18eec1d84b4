"""What every target of the compiler declares and provides.

Each target is a folder, ``skyc/compiler/<target>/``, with the same files:
``__init__.py`` (a :class:`Target` record: name, capabilities, the engines it
supports in order of preference), ``lowering.py`` (``build(request) -> Stack``
and ``workspace_values``), ``errors.py`` (``classify(diagnostics, placement)``),
``outputs.py`` (``nodes(cluster, outputs, ...)``) and ``credentials.py``
(``credentials(env, home)``). Differences between targets are declared in the
record and handled here, not branched on by cloud name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

from skyc.errors import ConfigError, EngineError, ProvisionError, UnsupportedFeature
from skyc.model.owner import OWNER_LABEL
from skyc.model.owner import owner_hash as hash_of_owner
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate

if TYPE_CHECKING:  # neither the catalog nor the stacks are loaded for a target record
    from skyc.catalog.offer import Offer
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.nodes import Node
    from skyc.model.stack import Stack

CLUSTER_LABEL = "skyc-cluster"
# The label of the managed-jobs controller's cluster (skyc.jobs.controller_cluster).
ROLE_LABEL = "skyc-role"
CONTROLLER_ROLE = "jobs-controller"


class Capabilities(NamedTuple):
    """What a target can do. The compiler and failover read this, never a cloud name.
    A record declared in code, so a named tuple: an unknown field is a TypeError and
    mypy checks the types (a pydantic model's validator would be built on every plan)."""

    cloud: str
    spot: bool = False
    multi_node: bool = True
    placement_groups: bool = False
    open_ports: bool = False
    stop_start: bool = False
    disk_gb_month: float = 0.0         # USD per GB-month a stopped node's disk still costs
    custom_images: bool = False
    creates_resources: bool = True     # False: the nodes exist already (ssh pools)
    needs_providers: bool = False      # the stack needs provider plugins (terraform init)
    # The most nodes one cluster may have on this target. Checked before anything
    # runs, so a typo such as ``num_nodes: 100000`` never reaches the engine.
    max_nodes: int = 1
    # How the nodes of a managed-jobs controller cluster on this target get credentials
    # to provision this target's clusters: "instance-role" (a role attached to the
    # nodes, scoped to what skyc's stacks need). None: skyc gives them none yet.
    controller_credentials: str | None = None


class BuildRequest(BaseModel):
    """One cluster to lower: its name, placement and resources, the config, the
    workspace its stack is written to, and its owner (:mod:`skyc.model.owner`; None
    for a cluster created before owners were recorded, whose names stay as they were).

    Names on a cloud carry the owner's hash (``owner_hash``) after skyc's cluster name,
    the cluster part cut to fit where a cloud's limit asks; every resource is labelled
    with the cluster and, where there is one, the owner (``labels``)."""

    # Built on first use: a target's record (plan, check) needs no lowering request.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    cluster: str
    placement: Placement
    candidate: ResourceCandidate
    config: SkycConfig
    workspace: Path
    owner: str | None = None

    @property
    def labels(self) -> dict[str, str]:
        """The labels every resource of the cluster carries."""
        return cluster_labels(self.cluster, self.candidate, self.owner)

    @property
    def owner_hash(self) -> str:
        """The owner's short hash for names on a cloud; empty for a cluster without a
        recorded owner."""
        return hash_of_owner(self.owner) if self.owner else ""

    @property
    def name_on_cloud(self) -> str:
        """``<cluster>-<owner hash>`` (the cluster alone without an owner): the part of
        the cloud's names that says whose cluster it is, where no limit cuts it."""
        return f"{self.cluster}-{self.owner_hash}" if self.owner else self.cluster

    @property
    def jobs_controller(self) -> bool:
        """Whether the cluster runs the managed-jobs controller (its label says so):
        its nodes get the credentials the target's ``controller_credentials`` names."""
        return self.candidate.labels.get(ROLE_LABEL) == CONTROLLER_ROLE


class Target(NamedTuple):
    """A target's record: its name, what it can do, and the engines that can apply its
    stacks, the preferred first."""

    name: str
    capabilities: Capabilities
    engines: tuple[str, ...]


class Credentials(NamedTuple):
    """Whether a target's credentials were found (``reason`` says which, or why not;
    ``hint`` what to set). Never holds a secret."""

    ok: bool
    reason: str
    hint: str | None = None


class CredentialCheck(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def hint(self) -> str | None: ...


class Lowering(Protocol):
    def build(self, request: BuildRequest) -> Stack: ...

    def workspace_values(self, stack: Stack, workspace: Path) -> dict[str, Any]: ...


class Outputs(Protocol):
    def nodes(
        self, cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path,
    ) -> list[Node]: ...


class Errors(Protocol):
    def classify(
        self, diagnostics: Sequence[Diagnostic], placement: Placement | None
    ) -> ProvisionError | None: ...


class OwnOffers(Protocol):
    """The ``offers`` module of a target whose offers come from somewhere other than
    a price catalog. ``EMPTY_HINT`` says how to get some when there are none."""

    EMPTY_HINT: str

    def offers_for(self, config: SkycConfig) -> list[Offer]: ...

    def describe(self, config: SkycConfig, env: Mapping[str, str], home: Path
                 ) -> list[str]: ...


class CredentialsModule(Protocol):
    def credentials(
        self, env: Mapping[str, str], home: Path, config: SkycConfig | None = None
    ) -> CredentialCheck: ...


def check_supported(caps: Capabilities, placement: Placement, candidate: ResourceCandidate) -> None:
    """Refuse requests the target cannot do, naming the field."""
    if placement.num_nodes < 1:
        raise UnsupportedFeature(f"num_nodes must be at least 1 (got {placement.num_nodes})")
    if placement.use_spot and not caps.spot:
        raise UnsupportedFeature(f"use_spot: {caps.cloud} has no spot instances")
    if placement.num_nodes > 1 and not caps.multi_node:
        raise UnsupportedFeature(f"num_nodes: {caps.cloud} supports a single node only")
    if placement.num_nodes > caps.max_nodes:
        raise UnsupportedFeature(
            f"num_nodes: {placement.num_nodes} is more than {caps.cloud} supports in one "
            f"cluster ({caps.max_nodes})"
        )
    if candidate.image_id is not None and not caps.custom_images:
        raise UnsupportedFeature(f"image_id: {caps.cloud} does not use machine images")
    check_accelerator_args(candidate.accelerator_args)


def check_accelerator_args(args: Mapping[str, Any]) -> None:
    """Refuse what no target provisions: TPU Nodes (``tpu_vm: false``, a TPU attached
    to an N1 host: an architecture Cloud TPU deprecates in favour of TPU VMs)."""
    tpu_vm = args.get("tpu_vm")
    if tpu_vm is False or (isinstance(tpu_vm, str) and tpu_vm.strip().lower() == "false"):
        raise UnsupportedFeature(
            "accelerator_args.tpu_vm: TPU Nodes are not supported; TPU VMs only: drop "
            "tpu_vm: false")


def cluster_labels(cluster: str, candidate: ResourceCandidate,
                   owner: str | None = None) -> dict[str, str]:
    """The labels every resource of the cluster carries: the task's, the cluster's
    name and its owner (when it has one)."""
    ours = {CLUSTER_LABEL: cluster, **({OWNER_LABEL: owner} if owner else {})}
    return dict(sorted({**candidate.labels, **ours}.items()))


def no_workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    """``workspace_values`` of a target whose stacks have no input variables."""
    return {}


def classify_nothing(
    diagnostics: Sequence[Diagnostic], placement: Placement | None
) -> ProvisionError | None:
    """``classify`` of a target with no capacity or quota to run out of."""
    return None


def list_output(outputs: dict[str, Any], key: str, cluster: str) -> list[Any]:
    """The stack output ``key``, a list; EngineError when the outputs lack it."""
    value = outputs.get(key)
    if not isinstance(value, list):
        raise EngineError(f"cluster {cluster}: stack outputs lack {key}")
    return value


def port_range(spec: str) -> tuple[int, int]:
    """A task port (``8080``) or range (``9000-9010``) as (low, high); ConfigError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(spec))
    if not match:
        raise ConfigError(f"ports: {spec!r} is not a port or a range like 9000-9010")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if not 1 <= low <= high <= 65535:
        raise ConfigError(f"ports: {spec!r} is outside 1-65535")
    return low, high


def port_range_text(spec: str) -> str:
    """A task port or range as firewall rules write it: ``8080`` or ``9000-9010``."""
    low, high = port_range(spec)
    return str(low) if low == high else f"{low}-{high}"


def node_name(rank: int) -> str:
    return "head" if rank == 0 else f"worker{rank}"

