"""Lowering onto a Kubernetes context: one pod per node, a headless Service, a ports Service.

Why bare pods, one per node, and not a StatefulSet, Job or JobSet: a node must
keep its identity (rank, hostname, logs) for the cluster's life, and skyc's
runtime agent, not the pod's command, runs setup and run on it. A StatefulSet
would also give stable names, but it replaces a failed pod behind the runtime's
back (a new pod, a new IP, an empty home, under a running job) and rolls all
pods on any change; a Job or JobSet runs a command to completion and counts
retries, which is the agent's business here. A bare pod with
``restartPolicy: Never`` fails visibly, is one resource of the stack per node
(as on every other target), and is re-created only by the engine.

Names carry the owner's hash (``<cluster>-<owner hash>``: :func:`manifest.dns_name`)
and the cluster's pods are picked by its name and owner labels, so two people's
clusters of one name can share a namespace.

Per node: pod ``<cluster>-<head|workerN>`` with ``hostname`` = the node's name
and ``subdomain`` = the headless Service, so every node has the stable DNS name
``head.<cluster>.<namespace>.svc.cluster.local``; it requests the accelerator
(``nvidia.com/gpu``, ``amd.com/gpu``, ``google.com/tpu``), CPU and memory (the
task's ``cpus``/``memory``, else 2 CPUs and 8 GiB, as requests with no CPU or
memory limit, so a pod may use what its node has free), selects
nodes of the model by node affinity and tolerates the GPU/TPU taints (see
:mod:`selectors`), mounts ``/dev/shm`` as a memory ``emptyDir`` (half the node's
memory: PyTorch's DataLoader workers and NCCL move tensors through it), and
runs the task's container image (``image_id: docker:IMAGE``) or
``kubernetes.image`` or :data:`DEFAULT_IMAGE`, which has what the agent needs
(bash, python3, tar). The pod just waits; the agent reaches it through the
Kubernetes API's exec stream (:mod:`skyc.runtime.kube`), so no sshd is needed.

TPU slices: single-host ones only, one pod per slice. A multi-host slice's pods
(one per host) are refused: GKE's labels let them select the slice's accelerator
and topology, but nothing pins them all to one node pool, so they can land on
hosts of two different slices (SkyPilot refuses them too). The default image
finds the GPU driver GKE mounts at ``/usr/local/nvidia`` through ``PATH`` and
``LD_LIBRARY_PATH``; AMD pods default to a ROCm image, so the agent's
accelerator detection works on both. ``network_tier: best`` adds ``IPC_LOCK``
(RDMA pins memory), asks for the context's ``network_resources`` (the
interconnect device plugin's resource, e.g. ``rdma/ib``, whose name varies per
cluster) and prefers one zone for all
pods. The task's ``ports`` become a Service (``kubernetes.ports_service``,
LoadBalancer by default) in front of the head pod. ``kubernetes.pod_config`` is
merged into every pod (see :mod:`manifest`). Each pod carries the engine's wait
for readiness (``pulumi.com/timeoutSeconds`` = ``kubernetes.pending_timeout``): a
pod still unscheduled then fails the apply as a capacity error of the context,
and failover moves on.

Engine: Pulumi with ``pulumi_kubernetes``. Manifests are written in the
Kubernetes API's own shape (camelCase mappings, passed through unchanged by the
SDK) so ``pod_config`` merges as it does in SkyPilot and every recorded manifest
can be checked against the API's JSON schema (``kubernetes-validate``, strict,
oldest and newest of :data:`SUPPORTED_VERSIONS`). No Terraform: the kubernetes
provider's schema cannot be checked here, so ``--engine terraform`` is refused.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from skyc.compiler.base import BuildRequest, no_workspace_values, node_name
from skyc.compiler.kubernetes import manifest, selectors
from skyc.compiler.kubernetes.config import KubernetesConfig
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.owner import OWNER_LABEL
from skyc.model.plan import Placement
from skyc.model.stack import Output, Provider, Ref, Resource, Stack
from skyc.task.candidate import ResourceCandidate

DEFAULT_IMAGE = "docker.io/library/python:3.12-slim"  # bash, python3, tar
# AMD pods without an image of their own: ROCm's userland (rocm-smi, which is Python:
# python3 comes with it), bash and tar.
AMD_IMAGE = "docker.io/rocm/dev-ubuntu-22.04:6.2"
# NVIDIA pods on the default image: GKE mounts the node's driver at /usr/local/nvidia
# (the GPU operator's runtime puts it in the usual places, where these change
# nothing); the image's own PATH (python's) follows.
NVIDIA_ENV = (
    ("PATH", "/usr/local/nvidia/bin:/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"),
)
# The oldest and newest Kubernetes versions the manifests are checked against.
SUPPORTED_VERSIONS = ("1.28", "1.37")
CLUSTER_LABEL = "skyc-cluster"
NODE_LABEL = "skyc-node"
PROVIDER = "kubernetes"
MAX_PORTS = 100
# How long the engine waits for a pod to become ready: a pod still Pending then is a
# capacity error (see errors.py), not a hang.
TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"
DEFAULT_CPUS = 2.0
DEFAULT_MEMORY_GIB = 8.0
_KEEP_ALIVE = "trap 'exit 0' TERM INT; sleep infinity & wait"

TYPES = {
    "pod": "kubernetes.core.v1.Pod",
    "service": "kubernetes.core.v1.Service",
    "volume": "kubernetes.core.v1.PersistentVolumeClaim",
}


def _resource(kind: str, key: str, properties: dict[str, Any], **fields: Any) -> Resource:
    return Resource(key=key, types={"pulumi": TYPES[kind]}, properties=properties,
                    provider=PROVIDER, **fields)


def image(candidate: ResourceCandidate, kube: KubernetesConfig,
          resource: str | None = None) -> str:
    """The pod's image: the task's (``docker:IMAGE``), else ``kubernetes.image``, else
    :data:`AMD_IMAGE` for AMD pods and :data:`DEFAULT_IMAGE` for the others."""
    raw = candidate.image_id
    if raw is None:
        return kube.image or (AMD_IMAGE if resource == selectors.AMD else DEFAULT_IMAGE)
    if isinstance(raw, str) and raw.startswith("docker:") and raw[len("docker:"):].strip():
        return raw[len("docker:"):].strip()
    raise UnsupportedFeature(
        f"image_id: {raw!r} is not a container image for kubernetes",
        hint="write image_id: docker:IMAGE (e.g. docker:nvcr.io/nvidia/pytorch:24.05-py3)")


def ports(candidate: ResourceCandidate) -> list[int]:
    out: set[int] = set()
    for spec in candidate.ports:
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(spec))
        if not m:
            raise ConfigError(f"ports: {spec!r} is not a port or a range like 9000-9010")
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 1 <= low <= high <= 65535:
            raise ConfigError(f"ports: {spec!r} is outside 1-65535")
        out |= set(range(low, high + 1))
    if len(out) > MAX_PORTS:
        raise UnsupportedFeature(f"ports: {len(out)} ports; a Kubernetes Service here "
                                 f"exposes at most {MAX_PORTS}")
    return sorted(out)


def _cpu(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{round(value * 1000)}m"


def _gib(value: float) -> str:
    return f"{value:g}Gi" if value == int(value) else f"{math.ceil(value * 1024)}Mi"


def _count(value: float) -> str:
    if value != int(value):
        raise UnsupportedFeature(f"accelerators: {value:g} is not a whole number of devices "
                                 "(fractional GPUs need a sharing setup skyc does not manage)")
    return str(int(value))


class _Shape:
    """What every pod of the cluster asks for."""

    def __init__(self, placement: Placement, candidate: ResourceCandidate,
                 kube: KubernetesConfig) -> None:
        first: tuple[str | None, float] = next(iter((placement.accelerators or {}).items()),
                                               (None, 0.0))
        self.model, count = first
        self.resource = selectors.device_resource(self.model) if self.model else None
        self.tpu = selectors.tpu_slice(self.model) \
            if self.model and self.resource == selectors.TPU else None
        if self.tpu and self.tpu.hosts > 1:
            raise UnsupportedFeature(
                f"accelerators: {self.model} is a multi-host TPU slice ({self.tpu.hosts} hosts); "
                "on Kubernetes its pods can land on hosts of different slices (nothing pins "
                "them to one node pool), so multi-host TPU slices are not supported there",
                hint="use a single-host slice (up to 8 chips of v5e/v6e, 4 of v4/v5p) on "
                "Kubernetes, or run it on gcp, where a slice is one TPU VM resource")
        self.devices = str(self.tpu.chips_per_host) if self.tpu else (
            _count(count) if self.model else None)
        self.cpus = candidate.cpus.value if candidate.cpus else DEFAULT_CPUS
        self.memory = candidate.memory.value if candidate.memory else DEFAULT_MEMORY_GIB
        node_memory = placement.memory_gib or self.memory
        self.shm = max(1, int(node_memory // 2))
        self.spot = placement.use_spot
        self.custom_label = kube.accelerator_label

    def resources(self, extra: dict[str, int]) -> dict[str, Any]:
        requests: dict[str, str] = {"cpu": _cpu(self.cpus), "memory": _gib(self.memory)}
        limits: dict[str, str] = {}
        if self.resource and self.devices:
            requests[self.resource] = limits[self.resource] = self.devices
        for name, amount in sorted(extra.items()):
            requests[name] = limits[name] = str(amount)
        out: dict[str, Any] = {"requests": dict(sorted(requests.items()))}
        if limits:
            out["limits"] = dict(sorted(limits.items()))
        return out

    def affinity(self, cluster_label: dict[str, str], best: bool) -> dict[str, Any]:
        affinity: dict[str, Any] = {}
        if self.model and not self.tpu:
            affinity["nodeAffinity"] = selectors.gpu_affinity(
                self.model, spot=self.spot, custom_label=self.custom_label)
        elif self.spot and not self.tpu:
            affinity["nodeAffinity"] = selectors.spot_affinity()
        if best:
            affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {"labelSelector": {"matchLabels": cluster_label},
                                    "topologyKey": "topology.kubernetes.io/zone"},
            }]}
        return affinity

    def node_selector(self) -> dict[str, str]:
        if not self.tpu:
            return {}
        selector = {"cloud.google.com/gke-tpu-accelerator": self.tpu.accelerator_label,
                    "cloud.google.com/gke-tpu-topology": self.tpu.topology}
        if self.spot:
            selector["cloud.google.com/gke-spot"] = "true"
        return selector


def _metadata(name: str, namespace: str | None, labels: dict[str, str],
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    if namespace:
        meta["namespace"] = namespace
    return meta


def _container(img: str, shape: _Shape, env: list[dict[str, str]], best: bool,
               extra: dict[str, int], container_ports: list[int]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "node", "image": img, "command": ["/bin/bash", "-c", _KEEP_ALIVE],
        "resources": shape.resources(extra),
        "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}],
    }
    if env:
        container["env"] = env
    if best:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if container_ports:
        container["ports"] = [{"containerPort": p, "name": f"p{p}"[:15], "protocol": "TCP"}
                              for p in container_ports]
    return container


def _volumes(request: BuildRequest, stack: Stack, service: str, namespace: str | None,
             labels: dict[str, str]) -> list[tuple[str, str, str]]:
    """The task's volumes as (pod volume name, claim name, mount path): an existing
    claim by its name; one made with the cluster (``size``) a PersistentVolumeClaim of
    the stack, deleted with it. The resource keys the pods depend on are the claims'."""
    mounts = []
    for i, claim in enumerate(request.candidate.volumes):
        claim_name = claim.name
        if claim_name is None:
            claim_name = f"{service[:240]}-vol-{i}"
            spec: dict[str, Any] = {"accessModes": [claim.access_mode],
                                    "resources": {"requests": {"storage": claim.size}}}
            if claim.storage_class:
                spec["storageClassName"] = claim.storage_class
            stack.add(_resource("volume", f"volume_{i}", {
                "metadata": _metadata(claim_name, namespace,
                                      {**manifest.labels(claim.labels), **labels}),
                "spec": spec}))
        mounts.append((f"vol-{i}", claim_name, claim.target))
    return mounts


def _pods(request: BuildRequest, stack: Stack, service: str, namespace: str | None,
          labels: dict[str, str]) -> list[str]:
    placement, candidate = request.placement, request.candidate
    kube = request.config.kubernetes
    shape = _Shape(placement, candidate, kube)
    best = candidate.network_tier == "best"
    settings = kube.contexts.get(placement.region or "")
    extra = settings.network_resources if (best and settings) else {}
    img = image(candidate, kube, shape.resource)
    env = [{"name": k, "value": v} for k, v in NVIDIA_ENV] \
        if img == DEFAULT_IMAGE and shape.resource == selectors.NVIDIA else []
    open_ports = ports(candidate)
    pod_config = kube.pod_config or {}
    manifest.check_pod_config(pod_config)
    volumes = _volumes(request, stack, service, namespace, labels)
    made = [f"volume_{i}" for i, v in enumerate(candidate.volumes) if v.name is None]
    keys = []
    for rank in range(placement.num_nodes):
        host = node_name(rank)
        pod_labels = {**labels, NODE_LABEL: host}
        spec: dict[str, Any] = {
            "hostname": host, "subdomain": service, "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "containers": [_container(img, shape, env, best, extra,
                                      open_ports if rank == 0 else [])],
            "volumes": [{"emptyDir": {"medium": "Memory", "sizeLimit": f"{shape.shm}Gi"},
                         "name": "dshm"},
                        *({"name": n, "persistentVolumeClaim": {"claimName": c}}
                          for n, c, _ in volumes)],
        }
        spec["containers"][0]["volumeMounts"] += [{"mountPath": path, "name": n}
                                                  for n, _, path in volumes]
        affinity = shape.affinity(selector(labels, request), best)
        if affinity:
            spec["affinity"] = affinity
        if shape.node_selector():
            spec["nodeSelector"] = shape.node_selector()
        tolerations = selectors.tolerations(shape.resource, spot=shape.spot)
        if tolerations:
            spec["tolerations"] = tolerations
        name = f"{service}-{host}"  # a DNS subdomain: up to 253 characters
        pod = {"metadata": _metadata(name, namespace, pod_labels, {
            TIMEOUT_ANNOTATION: str(math.ceil(kube.pending_timeout))}), "spec": spec}
        merged = manifest.merge(pod, pod_config)
        merged["metadata"].update(_metadata(name, namespace, {**merged["metadata"].get(
            "labels", {}), **pod_labels}))
        merged["spec"].update(hostname=host, subdomain=service)
        merged.pop("apiVersion", None)
        merged.pop("kind", None)
        key = f"node_{rank}"
        stack.add(_resource("pod", key, merged, depends_on=["headless", *made]))
        keys.append(key)
    return keys


def selector(labels: dict[str, str], request: BuildRequest) -> dict[str, str]:
    """The labels that pick the cluster's pods: its name and, where it has one, its
    owner (two people's clusters of one name may share a namespace)."""
    keys = (CLUSTER_LABEL, OWNER_LABEL) if request.owner else (CLUSTER_LABEL,)
    return {key: labels[key] for key in keys}


def _services(stack: Stack, service: str, namespace: str | None, labels: dict[str, str],
              request: BuildRequest) -> None:
    candidate, kube = request.candidate, request.config.kubernetes
    cluster_selector = selector(labels, request)
    stack.add(_resource("service", "headless", {
        "metadata": _metadata(service, namespace, labels),
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                 "selector": cluster_selector},
    }))
    open_ports = ports(candidate)
    if open_ports:
        stack.add(_resource("service", "ports", {
            "metadata": _metadata(f"{service[:57].rstrip('-')}-ports", namespace, labels),
            "spec": {"type": kube.ports_service,
                     "selector": {**cluster_selector, NODE_LABEL: node_name(0)},
                     "ports": [{"name": f"p{p}", "port": p, "protocol": "TCP", "targetPort": p}
                               for p in open_ports]},
        }))


def build(request: BuildRequest) -> Stack:
    placement = request.placement
    kube = request.config.kubernetes
    context = placement.region
    if not context:
        raise ConfigError("kubernetes placement has no context",
                          hint="give infra as kubernetes/<context> (k8s/<context>)")
    settings = kube.contexts.get(context)
    namespace = settings.namespace if settings else None
    labels = manifest.labels(request.labels)
    labels[CLUSTER_LABEL] = manifest.label_value(request.cluster)
    labels = dict(sorted(labels.items()))
    service = manifest.dns_name(request.cluster, request.owner_hash)
    provider: dict[str, Any] = {"context": context}
    if namespace:
        provider["namespace"] = namespace
    stack = Stack(name=request.cluster, cloud="kubernetes", region=context, labels=labels,
                  providers={PROVIDER: Provider(types={"pulumi": "kubernetes.Provider"},
                                                settings=provider)},
                  backend=request.config.backend)
    _services(stack, service, namespace, labels, request)
    keys = _pods(request, stack, service, namespace, labels)
    stack.outputs = {
        "context": Output(value=context),
        "namespace": Output(value=Ref(resource="headless", attribute="metadata.namespace")),
        "pods": Output(value=[Ref(resource=k, attribute="metadata.name") for k in keys]),
        "pod_ips": Output(value=[Ref(resource=k, attribute="status.pod_ip") for k in keys]),
        "service": Output(value=service),
    }
    return stack


def workspace_values(stack: Stack, workspace: Path) -> dict[str, Any]:
    return no_workspace_values(stack, workspace)
