"""What the targets share: the request a lowering gets, the labels and names every
stack uses, and the checks every placement passes before a target lowers it.

What a target is (its record and parts) is :mod:`skyc.compiler.contract`; its names
are re-exported here for the targets' modules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from skyc.compiler.contract import (
    Capabilities,
    CredentialCheck,
    CredentialsModule,
    Errors,
    Lowering,
    Outputs,
    OwnOffers,
    Power,
    SshProxy,
    Target,
)
from skyc.errors import ConfigError, EngineError, ProvisionError, UnsupportedFeature
from skyc.model.owner import OWNER_LABEL
from skyc.model.owner import owner_hash as hash_of_owner
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.task.candidate import ResourceCandidate

if TYPE_CHECKING:  # neither the catalog nor the stacks are loaded for a target record
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.stack import Stack

__all__ = [
    "Capabilities", "CredentialCheck", "CredentialsModule", "Errors", "Lowering",
    "Outputs", "OwnOffers", "Power", "SshProxy", "Target",
]

CLUSTER_LABEL = "skyc-cluster"
# The label of the managed-jobs controller's cluster (skyc.jobs.controller_cluster).
ROLE_LABEL = "skyc-role"
CONTROLLER_ROLE = "jobs-controller"


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
    # The nodes go into the network skyc keeps for the region (a target with one: see
    # ``network_stack`` in its lowering), not into one of the cluster's own.
    shared_network: bool = False

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


class Credentials(NamedTuple):
    """Whether a target's credentials were found (``reason`` says which, or why not;
    ``hint`` what to set). Never holds a secret."""

    ok: bool
    reason: str
    hint: str | None = None


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
    if candidate.volumes and not caps.volumes:
        raise UnsupportedFeature(
            f"volumes: {caps.cloud} nodes mount no volumes; volumes are Kubernetes "
            "PersistentVolumeClaims (infra: k8s)",
            hint="place the task on Kubernetes, or keep its data in a bucket (file_mounts)")
    shared = [v.target for v in candidate.volumes  # an existing volume's own mode decides
              if v.size is not None and v.access_mode != "ReadWriteMany"]
    if shared and placement.num_nodes > 1:
        raise UnsupportedFeature(
            f"volumes.{shared[0]}: {placement.num_nodes} nodes mount it, which needs "
            "config.access_mode: ReadWriteMany (and a storage class that offers it)")
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

