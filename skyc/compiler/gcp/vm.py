"""Compute Engine VMs: ``num_nodes`` instances of the placement's machine type.

- GPUs: A2/A3/A4/G2 machine types carry theirs; an N1 host gets the placement's
  T4/V100/P100/P4 as ``guest_accelerators``. A VM with GPUs cannot live-migrate,
  so its host maintenance is ``TERMINATE`` (with automatic restart), as for
  every family without live migration and every compact placement.
- Spot: the ``SPOT`` provisioning model (no automatic restart); a preempted node
  is deleted (``instance_termination_action = DELETE``), so nothing keeps billing
  and a refresh reports it gone, which is what recovery re-provisions from.
- Boot disk: the image whose driver runs the GPU, or the task's ``image_id``
  (:mod:`skyc.compiler.gcp.images`), ``disk_size`` GiB (never less than the image)
  of the type ``disk_tier`` asks for where the family takes it (Hyperdisk Balanced
  where it takes only Hyperdisk: :mod:`skyc.compiler.gcp.machines`).
- Reservations: an on-demand placement GCP grants only from a reservation
  (:func:`skyc.catalog.reservations.needs_reservation`: A3 Ultra, A4) consumes the
  reservations the config names (``gcp.reservations``), by a specific reservation
  affinity; with none named it is refused, saying what to do.
- Multi-node clusters get a compact placement policy where the family has one.
- An on-demand node's power state is an input of the stack (``power_state``:
  ``RUNNING``, or ``TERMINATED``, which is GCP's word for stopped): ``skyc stop``
  re-applies the same stack stopped (disks kept), ``skyc start`` running again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skyc.catalog.reservations import needs_reservation, reservation_reason
from skyc.compiler.base import node_name
from skyc.compiler.gcp import images, machines, names
from skyc.compiler.gcp.resources import block, resource
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.model.stack import Block, Output, Ref, Stack, Var, Variable
from skyc.task.candidate import ResourceCandidate

# The power-state input skyc's stop/start sets (its value from the workspace's file of
# the same name: see ``lowering.workspace_values``).
POWER_VARIABLE = "power_state"
POWER_FILE = "power_state"
POWER = {"running": "RUNNING", "stopped": "TERMINATED"}
SERVICE_ACCOUNT = Ref(resource="service_account", attribute="email")


@dataclass(frozen=True)
class Site:
    """What every node of the cluster shares: where it is and how it is reached."""

    cluster: str
    zone: str
    network: Ref | Var
    subnetwork: Ref | Var
    tag: str
    labels: dict[str, str]
    metadata: dict[str, Any]
    reservations: tuple[str, ...] = ()   # gcp.reservations of the config
    owner_hash: str = ""                 # in every name; empty for a cluster with no owner
    # gcp.service_account_scopes of the config; empty: the nodes get no service account
    # of the cluster's own (a cluster created before owners were recorded)
    scopes: tuple[str, ...] = ()

    def name(self, suffix: str = "") -> str:
        """A resource's name: ``skyc-<cluster>-<owner hash>[-<suffix>]``, fit to GCP."""
        return names.resource_name(self.cluster, suffix, self.owner_hash)

    def service_account(self, args: str) -> dict[str, Block]:
        """A node's ``service_account`` argument (the SDK's class ``gcp.<args>``): the
        cluster's service account, the nodes' one identity, with the config's scopes;
        none for a cluster that has none (see ``scopes``)."""
        if not self.scopes:
            return {}
        return {"service_account": block(args, email=SERVICE_ACCOUNT,
                                         scopes=list(self.scopes))}


def guest_accelerators(placement: Placement) -> list[Block]:
    """The GPUs attached to an N1 host (none for machine types that carry their own)."""
    found = []
    for name, count in sorted((placement.accelerators or {}).items()):
        if name not in machines.ATTACHED_GPUS:
            continue
        if not (placement.instance_type or "").startswith("n1-"):
            raise UnsupportedFeature(f"accelerators: {name} attaches to N1 machine types only "
                                     f"(not {placement.instance_type})")
        found.append(block("compute.InstanceGuestAcceleratorArgs",
                           type=machines.ATTACHED_GPUS[name], count=int(count)))
    return found


RESERVATION_KEY = "compute.googleapis.com/reservation-name"


def reservation_affinity(placement: Placement, reservations: tuple[str, ...]) -> Block | None:
    """The named reservations, for an on-demand placement GCP grants only from one;
    None for every other placement (it takes any capacity, reserved or not)."""
    machine = placement.instance_type or ""
    if not needs_reservation("gcp", machine, placement.use_spot):
        return None
    if not reservations:
        raise UnsupportedFeature(reservation_reason(machine))
    return block("compute.InstanceReservationAffinityArgs", type="SPECIFIC_RESERVATION",
                 specific_reservation=block(
                     "compute.InstanceReservationAffinitySpecificReservationArgs",
                     key=RESERVATION_KEY, values=list(reservations)))


def scheduling(placement: Placement, compact: bool) -> Block:
    machine = placement.instance_type or ""
    migrate = (not placement.accelerators and not compact
               and machines.live_migration(machine))
    values: dict[str, Any] = {"on_host_maintenance": "MIGRATE" if migrate else "TERMINATE"}
    if placement.use_spot:
        values.update(provisioning_model="SPOT", preemptible=True, automatic_restart=False,
                      instance_termination_action="DELETE")
    else:
        values.update(provisioning_model="STANDARD", automatic_restart=True)
    return block("compute.InstanceSchedulingArgs", **values)


def boot_disk(placement: Placement, candidate: ResourceCandidate, labels: dict[str, str]
              ) -> Block:
    machine = placement.instance_type or ""
    image = images.select_image(placement, candidate)
    if image.from_table and candidate.disk_size < image.disk_gib:
        raise ConfigError(
            f"disk_size: {candidate.disk_size} GiB is smaller than the image {image.ref} "
            f"({image.disk_gib} GiB)", hint=f"set disk_size: {image.disk_gib} or more")
    disk_type, performance = machines.boot_disk(machine, candidate.disk_tier, candidate.disk_size)
    params: dict[str, Any] = {
        "image": image.ref, "size": candidate.disk_size, "type": disk_type, "labels": labels,
    }
    if performance is not None:
        params.update(provisioned_iops=performance[0], provisioned_throughput=performance[1])
    return block("compute.InstanceBootDiskArgs", auto_delete=True,
                 initialize_params=block("compute.InstanceBootDiskInitializeParamsArgs", **params))


def _power_input(stack: Stack, placement: Placement, machine: str,
                 shared: dict[str, Any]) -> None:
    """The nodes' power state as a stack input (skyc stop / start). Spot VMs and types
    with local SSD are created and deleted only (see machines.bundles_local_ssd):
    without the input, stop and autostop-stop are refused for them and autostop with
    down is offered."""
    if not placement.use_spot and not machines.bundles_local_ssd(machine):
        shared["desired_status"] = Var(name=POWER_VARIABLE)
        stack.variables[POWER_VARIABLE] = Variable(
            description="RUNNING or TERMINATED (stopped): the nodes' power state "
            "(skyc stop / start)", default=POWER["running"])


def add_instances(stack: Stack, site: Site, placement: Placement,
                  candidate: ResourceCandidate) -> dict[str, Output]:
    """Adds one VM per node (and the placement policy); returns the stack's outputs."""
    machine = placement.instance_type or ""
    compact = machines.compact_placement(machine, placement.num_nodes)
    metadata = dict(site.metadata)
    if images.image_kind(placement) == "gpu" and candidate.image_id is None:
        metadata["install-nvidia-driver"] = "True"  # the Deep Learning VM image's driver
    shared: dict[str, Any] = {
        "machine_type": machine, "zone": site.zone,
        "boot_disk": boot_disk(placement, candidate, site.labels),
        "network_interfaces": [block(
            "compute.InstanceNetworkInterfaceArgs", network=site.network,
            subnetwork=site.subnetwork,
            access_configs=[block("compute.InstanceNetworkInterfaceAccessConfigArgs",
                                  network_tier="PREMIUM")],
        )],
        "scheduling": scheduling(placement, compact),
        "metadata": metadata, "labels": site.labels, "tags": [site.tag],
        "allow_stopping_for_update": True,
        **site.service_account("compute.InstanceServiceAccountArgs"),
    }
    _power_input(stack, placement, machine, shared)
    accelerators = guest_accelerators(placement)
    if accelerators:
        shared["guest_accelerators"] = accelerators
    affinity = reservation_affinity(placement, site.reservations)
    if affinity is not None:
        shared["reservation_affinity"] = affinity
    if compact:
        stack.add(resource("resource_policy", "placement_policy", {
            "name": site.name("placement"),
            "region": stack.region,
            "group_placement_policy": block("compute.ResourcePolicyGroupPlacementPolicyArgs",
                                            collocation="COLLOCATED",
                                            vm_count=placement.num_nodes),
        }))
        # One policy at most: pulumi_gcp takes it as one string, not a list.
        shared["resource_policies"] = Ref(resource="placement_policy", attribute="id")
    nodes = range(placement.num_nodes)
    for rank in nodes:
        stack.add(resource("instance", f"node_{rank}", {
            **shared, "name": site.name(node_name(rank)),
        }, depends_on=["firewall_internal", "firewall_ssh"]))
    interface = "network_interfaces[0]"
    return {
        "instance_names": Output(value=[Ref(resource=f"node_{i}", attribute="name")
                                        for i in nodes]),
        "internal_ips": Output(value=[Ref(resource=f"node_{i}",
                                          attribute=f"{interface}.network_ip") for i in nodes]),
        "external_ips": Output(value=[
            Ref(resource=f"node_{i}", attribute=f"{interface}.access_configs[0].nat_ip")
            for i in nodes]),
    }
