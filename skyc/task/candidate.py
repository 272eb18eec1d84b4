"""The flat, typed request the optimizer and compilers consume.

A task's ``resources`` may hold alternatives (``any_of``, ``ordered``, an
accelerator list or set). ``expand_resources`` (in this package) turns them
into a list of ``ResourceCandidate``s, each a single concrete request with
every field resolved (``any_of`` entries override the base fields). The
optimizer picks one candidate per task and records its index in
``Placement.candidate_index``; compilers read disk, ports, image and network
settings from that candidate.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    # defer_build: a model's validator is built on first use, not at import (start-up time).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class InfraSpec(_Frozen):
    """Parsed ``infra`` (or legacy cloud/region/zone).

    ``aws`` -> (aws, None, None); ``aws/us-east-1/us-east-1a``; ``*/us-east-1`` ->
    cloud None; ``k8s`` / ``k8s/<context>`` -> cloud "kubernetes", region = context;
    ``ssh/<pool>`` -> cloud "ssh", region = pool; ``local`` -> cloud "local".
    An empty InfraSpec (all None) means anywhere.
    """

    cloud: str | None = None
    region: str | None = None
    zone: str | None = None


class Quantity(_Frozen):
    """``4`` (exactly) or ``4+`` (at least)."""

    value: float
    at_least: bool = False


class AcceleratorRequest(_Frozen):
    """One accelerator ask: ``A100:8``, ``tpu-v4-8``, ``A100:0.5``, ``80GB+:1``.

    ``name`` is as the user wrote it (the catalog canonicalizes, case-insensitively);
    None when only memory was asked (``80GB+``). ``min_memory_gib`` is per accelerator.
    """

    name: str | None
    count: float = 1
    min_memory_gib: float | None = None


class BucketGrant(_Frozen):
    """A bucket the task's nodes reach (``file_mounts``): its store (None: the store of
    the cloud the task lands on, for a bucket skyc creates), its name, whether the
    nodes write to it (every mount mode but COPY) and whether skyc creates it (named,
    not a bucket URL)."""

    store: str | None
    bucket: str
    write: bool = False
    created: bool = False


class VolumeClaim(_Frozen):
    """A volume the task mounts at ``target``: an existing one by ``name`` (a Kubernetes
    PersistentVolumeClaim), or one of ``size`` made with the cluster and deleted with it."""

    target: str
    name: str | None = None
    size: str | None = None
    access_mode: str = "ReadWriteOnce"
    storage_class: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class ResourceCandidate(_Frozen):
    """One concrete alternative of a task's resources, all fields resolved."""

    index: int                              # position in expand_resources() output
    preference: int = 0                     # lower is preferred; equal = no preference
    infra: InfraSpec = Field(default_factory=InfraSpec)
    accelerator: AcceleratorRequest | None = None
    cpus: Quantity | None = None
    memory: Quantity | None = None
    instance_type: str | None = None
    use_spot: bool = False
    disk_size: int = 256
    disk_tier: str | None = None            # low | medium | high | ultra | best
    network_tier: str | None = None         # standard | best
    ports: tuple[str, ...] = ()             # "22", "8080", "9000-9010"
    image_id: str | dict[str, str] | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    accelerator_args: dict[str, Any] = Field(default_factory=dict)
    # The buckets the task mounts: what the target grants the cluster's identity.
    buckets: tuple[BucketGrant, ...] = ()
    # The volumes the task mounts (``volumes``): a target with ``volumes`` lowers them.
    volumes: tuple[VolumeClaim, ...] = ()
