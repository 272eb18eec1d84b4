"""TPU VMs (``gcp.tpu.V2Vm``): a slice per node, or one multi-host slice.

A single-host slice (``tpu-v4-8``, ``tpu-v5litepod-8``, ``tpu-v6e-4``) is one
TPU VM per node, so ``num_nodes`` of them make a cluster. A multi-host slice
(``tpu-v4-32``: 4 hosts) is one TPU resource whose every worker becomes a node
of the cluster (ranks in worker order, from the slice's network endpoints: see
:mod:`skyc.compiler.gcp.outputs`); ``num_nodes`` > 1 of such a slice is
refused. The runtime version is ``accelerator_args.runtime_version`` or the
default for the TPU generation; spot TPUs use the TPU API's spot scheduling.
"""

from __future__ import annotations

from skyc.compiler.base import node_name
from skyc.compiler.gcp import images, machines
from skyc.compiler.gcp.metadata import metadata
from skyc.compiler.gcp.resources import block, resource
from skyc.compiler.gcp.vm import Site
from skyc.errors import UnsupportedFeature
from skyc.model.plan import Placement
from skyc.model.stack import Output, Ref, Stack
from skyc.task.candidate import ResourceCandidate


def add_tpu_vms(stack: Stack, site: Site, placement: Placement,
                candidate: ResourceCandidate) -> dict[str, Output]:
    """Adds the TPU VMs; returns the stack's outputs."""
    accelerator = images.tpu_accelerator(placement) or ""
    if candidate.image_id is not None:
        images.choose_image(placement, candidate)  # refuses image_id for TPU VMs, with the fix
    piece = machines.tpu_slice(accelerator)
    if piece.hosts > 1 and placement.num_nodes > 1:
        raise UnsupportedFeature(
            f"num_nodes: {accelerator} is a multi-host slice ({piece.hosts} hosts, each a node "
            f"of the cluster); skyc provisions one such slice per cluster, not "
            f"{placement.num_nodes}",
            hint=f"set num_nodes: 1 (the job then runs on all {piece.hosts} hosts), or ask for "
            "a larger slice")
    runtime = images.runtime_version(placement, candidate)
    properties = {
        "zone": site.zone, "accelerator_type": piece.accelerator_type,
        "runtime_version": runtime,
        "network_config": block("tpu.V2VmNetworkConfigArgs", network=site.network,
                                subnetwork=site.subnetwork, enable_external_ips=True),
        "labels": site.labels, "tags": [site.tag],
        "metadata": metadata(site.cluster, {"TPU_ACCELERATOR_TYPE": piece.accelerator_type},
                             bucket_tools=bool(candidate.buckets)),
        "description": f"skyc cluster {site.cluster}",
        **site.service_account("tpu.V2VmServiceAccountArgs"),
    }
    if placement.use_spot:
        properties["scheduling_config"] = block("tpu.V2VmSchedulingConfigArgs", spot=True)
    slices = range(placement.num_nodes)
    for index in slices:
        stack.add(resource("tpu_vm", f"tpu_{index}", {
            **properties, "name": site.name(node_name(index)),
        }, depends_on=["firewall_internal", "firewall_ssh"]))
    return {
        "instance_names": Output(value=[Ref(resource=f"tpu_{i}", attribute="name")
                                        for i in slices]),
        "tpu_endpoints": Output(value=[Ref(resource=f"tpu_{i}", attribute="network_endpoints")
                                       for i in slices]),
        "tpu_hosts": Output(value=[piece.hosts for _ in slices]),
    }
