"""The ``kubernetes:`` section of the config file.

::

    kubernetes:
      prefer: false                 # a task with no infra prefers these clusters
      accelerator_label: example.com/gpu-model   # a label naming the GPU model
      pending_timeout: 600          # seconds a pod may stay unscheduled
      image: python:3.12-slim       # pods of tasks without image_id
      ports_service: LoadBalancer   # how the task's ports are exposed
      pod_config: {spec: {...}}     # merged into every pod (SkyPilot's pass-through)
      contexts:
        prod-gpu:                   # a kubeconfig context
          namespace: ml
          price_per_gpu_hour: 2.5   # chargeback for nodes read from the cluster
          network_resources:        # requested per pod when network_tier: best
            rdma/ib: 1              # (the interconnect device plugin's resource)
          pools:                    # planning without access to the cluster
            - {accelerator: H100, count_per_node: 8, nodes: 2, price_per_gpu_hour: 2.5}

Only pydantic here: the config module imports these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use


class GpuPool(_Model):
    """Identical nodes of one context, described instead of read."""

    accelerator: str | None = None
    count_per_node: float = Field(default=1, gt=0)
    nodes: int = Field(default=1, ge=1)
    price_per_gpu_hour: float | None = Field(default=None, ge=0)
    cpus: float | None = Field(default=None, gt=0)
    memory: float | None = Field(default=None, gt=0)
    spot: bool = False


class KubeContext(_Model):
    """One kubeconfig context skyc may place pods in."""

    namespace: str | None = None
    price_per_gpu_hour: float | None = Field(default=None, ge=0)
    pools: list[GpuPool] = Field(default_factory=list)
    network_resources: dict[str, int] = Field(default_factory=dict)


class KubernetesConfig(_Model):
    contexts: dict[str, KubeContext] = Field(default_factory=dict)
    prefer: bool = False
    accelerator_label: str | None = None
    pending_timeout: float = Field(default=600, gt=0)
    pod_config: dict[str, Any] | None = None
    image: str | None = None
    ports_service: Literal["LoadBalancer", "NodePort", "ClusterIP"] = "LoadBalancer"
