"""SkyPilot's ``service:`` and ``pool:`` sections, validated by SkyPilot's rules.

skyc serves no models and runs no worker pools yet: both sections are checked
as SkyPilot checks them (so a file that SkyPilot refuses is refused here too,
naming the field), then ``service`` is ignored with a warning and a task with
a ``pool`` is refused when it is applied.

Rules kept from SkyPilot: ``replicas`` and ``replica_policy`` exclude each
other; ``max_replicas`` is at least ``min_replicas``; an autoscaling policy
(``min_replicas != max_replicas``) needs ``target_qps_per_replica``; a pool has
``workers`` (a count, 0 or more) and no ``run`` section.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from skyc.task.resources import plain_data

Count = Annotated[StrictInt, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ReadinessProbe(_Model):
    path: str
    initial_delay_seconds: Seconds | None = None
    timeout_seconds: Seconds | None = None
    post_data: Annotated[str | dict[str, Any], BeforeValidator(plain_data)] | None = None
    headers: dict[str, str] | None = None


class ReplicaPolicy(_Model):
    min_replicas: Count
    max_replicas: Count | None = None
    num_overprovision: Count | None = None
    target_qps_per_replica: (
        Annotated[float, Field(gt=0, allow_inf_nan=False)]
        | dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]]
        | None
    ) = None
    dynamic_ondemand_fallback: StrictBool | None = None
    base_ondemand_fallback_replicas: Count | None = None
    spot_placer: str | None = None
    upscale_delay_seconds: Seconds | None = None
    downscale_delay_seconds: Seconds | None = None

    @model_validator(mode="after")
    def _autoscaling(self) -> ReplicaPolicy:
        top = self.max_replicas
        if top is None:
            return self
        if top < self.min_replicas:
            raise ValueError(f"max_replicas ({top}) must be at least min_replicas "
                             f"({self.min_replicas})")
        if top != self.min_replicas and self.target_qps_per_replica is None:
            raise ValueError(
                f"min_replicas ({self.min_replicas}) != max_replicas ({top}) is an autoscaling "
                "policy and needs target_qps_per_replica; set it, or make them equal")
        return self


class Tls(_Model):
    keyfile: str
    certfile: str


class ServiceSpec(_Model):
    """``service:`` (SkyServe). Validated, not acted on."""

    readiness_probe: str | ReadinessProbe | None = None
    replica_policy: ReplicaPolicy | None = None
    replicas: Count | None = None
    ports: StrictInt | str | None = None
    load_balancing_policy: str | None = None
    tls: Tls | None = None

    @model_validator(mode="after")
    def _one_policy(self) -> ServiceSpec:
        if self.replicas is not None and self.replica_policy is not None:
            raise ValueError("give either replicas or replica_policy, not both")
        return self

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class PoolSpec(_Model):
    """``pool:`` (a pool of workers for managed jobs). Validated; refused at apply."""

    workers: Count | None = None
    min_workers: Count | None = None
    max_workers: Count | None = None
    queue_length_threshold: Count | None = None
    upscale_delay_seconds: Seconds | None = None
    downscale_delay_seconds: Seconds | None = None

    @model_validator(mode="after")
    def _bounds(self) -> PoolSpec:
        low, high = self.min_workers, self.max_workers
        if low is not None and high is not None and high < low:
            raise ValueError(f"max_workers ({high}) must be at least min_workers ({low})")
        if self.workers is not None and (low is not None or high is not None):
            raise ValueError("give either workers or min_workers/max_workers, not both")
        return self
