"""A task's ``service:`` section as the controller acts on it, with SkyPilot's defaults.

The section is validated by :mod:`skyc.task.serving` when the task is loaded; what
this version cannot do yet (spot fallback, per-accelerator QPS targets, any infra
but ``local``) and what SkyPilot refuses only when a service starts (a readiness path
without a leading ``/``, a ``post_data`` string that is not JSON, an unknown load
balancing policy, ``target_qps_per_replica`` without ``max_replicas``, a TLS key or
certificate that is missing or does not load) is refused here, naming the field,
before anything is created.

``tls: {keyfile, certfile}`` (PEM files; a relative path is taken from the working
directory, as a task's ``workdir``) makes the endpoint HTTPS: the controller loads
them when it starts (:func:`tls_context`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from skyc.errors import SpecProblem, TaskSpecError, UnsupportedFeature
from skyc.serve import knobs

if TYPE_CHECKING:
    import ssl

    from skyc.task import Task
    from skyc.task.serving import ReplicaPolicy, ServiceSpec

POLICIES = ("least_load", "round_robin")
DEFAULT_POLICY = "least_load"  # SkyPilot's default


@dataclass(frozen=True)
class Readiness:
    path: str = "/"
    post_data: dict[str, Any] | list[Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    initial_delay_s: float = knobs.DEFAULT_INITIAL_DELAY_S
    timeout_s: float = knobs.DEFAULT_PROBE_TIMEOUT_S

    def describe(self) -> str:
        method = "GET" if self.post_data is None else "POST"
        return f"{method} {self.path}" + (" with headers" if self.headers else "")


@dataclass(frozen=True)
class Scaling:
    min_replicas: int = 1
    max_replicas: int = 1
    target_qps: float | None = None
    upscale_delay_s: float = knobs.DEFAULT_UPSCALE_DELAY_S
    downscale_delay_s: float = knobs.DEFAULT_DOWNSCALE_DELAY_S
    overprovision: int = 0

    @property
    def autoscaling(self) -> bool:
        return self.target_qps is not None and self.max_replicas > self.min_replicas

    def describe(self) -> str:
        if not self.autoscaling:
            return f"fixed {self.min_replicas} replica(s)"
        return (f"autoscaling {self.min_replicas}-{self.max_replicas} replicas at "
                f"{self.target_qps:g} requests/s per replica")


@dataclass(frozen=True)
class Tls:
    keyfile: str    # absolute paths
    certfile: str


@dataclass(frozen=True)
class ServiceConfig:
    readiness: Readiness
    scaling: Scaling
    policy: str = DEFAULT_POLICY
    tls: Tls | None = None

    def dump(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def load(cls, doc: dict[str, Any]) -> ServiceConfig:
        tls = doc.get("tls")
        return cls(Readiness(**doc["readiness"]), Scaling(**doc["scaling"]), doc["policy"],
                   None if tls is None else Tls(**tls))


def service_config(task: Task, file: str) -> ServiceConfig:
    """The task's service, or TaskSpecError / UnsupportedFeature naming the field."""
    spec = task.service
    if spec is None:
        raise TaskSpecError(
            [SpecProblem(file=file, path="service", message="the task has no service section")],
            hint="add service: {readiness_probe: /, replicas: 1} (see `skyc schema task`), "
            "or run it as a cluster with `skyc apply`")
    problems: list[SpecProblem] = []
    _refuse_unsupported(spec, file)
    readiness = _readiness(spec, file, problems)
    scaling = _scaling(spec, file, problems)
    policy = spec.load_balancing_policy or DEFAULT_POLICY
    if policy not in POLICIES:
        problems.append(SpecProblem(
            file=file, path="service.load_balancing_policy",
            message=f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}"))
    tls = _tls(spec, file, problems)
    if problems:
        raise TaskSpecError(problems)
    return ServiceConfig(readiness, scaling, policy, tls)


def _tls(spec: ServiceSpec, file: str, problems: list[SpecProblem]) -> Tls | None:
    """The TLS files as absolute paths, each there and loading as a key and its
    certificate."""
    if spec.tls is None:
        return None
    paths = {}
    for name in ("keyfile", "certfile"):
        path = os.path.abspath(os.path.expanduser(getattr(spec.tls, name)))
        if not os.path.isfile(path):
            problems.append(SpecProblem(file=file, path=f"service.tls.{name}",
                                        message=f"no such file: {path}"))
        paths[name] = path
    tls = Tls(**paths)
    if not any(p.path.startswith("service.tls") for p in problems):
        try:
            tls_context(tls)
        except OSError as exc:  # ssl.SSLError is one
            problems.append(SpecProblem(
                file=file, path="service.tls",
                message=f"{tls.certfile} and {tls.keyfile} do not load as a PEM "
                f"certificate and its unencrypted private key: {exc}"))
    return tls


def tls_context(tls: Tls, context: ssl.SSLContext | None = None) -> ssl.SSLContext:
    """The endpoint's server-side TLS context, or ``context`` with the key and
    certificate loaded into it (ssl.SSLError or OSError when the files do not load;
    an encrypted key is refused, never prompted for)."""
    import ssl

    context = context or ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls.certfile, tls.keyfile, password=_no_password)
    return context


def _no_password() -> bytes:
    return b""


def _readiness(spec: ServiceSpec, file: str, problems: list[SpecProblem]) -> Readiness:
    probe = spec.readiness_probe
    if probe is None:
        return Readiness()
    if isinstance(probe, str):
        path, where = probe, "service.readiness_probe"
        probe_doc: dict[str, Any] = {}
    else:
        path, where = probe.path, "service.readiness_probe.path"
        probe_doc = probe.model_dump(exclude_none=True)
    if not path.startswith("/"):
        problems.append(SpecProblem(file=file, path=where,
                                    message=f"{path!r} must start with '/' (e.g. /{path})"))
    post = probe_doc.get("post_data")
    if isinstance(post, str):
        try:
            post = json.loads(post)
        except json.JSONDecodeError as exc:
            problems.append(SpecProblem(
                file=file, path="service.readiness_probe.post_data",
                message=f"a string must be JSON (the probe POSTs it as such): {exc.msg}"))
            post = None
    return Readiness(
        path=path, post_data=post, headers=dict(probe_doc.get("headers") or {}),
        initial_delay_s=float(probe_doc.get("initial_delay_seconds",
                                            knobs.DEFAULT_INITIAL_DELAY_S)),
        timeout_s=float(probe_doc.get("timeout_seconds", knobs.DEFAULT_PROBE_TIMEOUT_S)))


def _scaling(spec: ServiceSpec, file: str, problems: list[SpecProblem]) -> Scaling:
    policy = spec.replica_policy
    if policy is None:
        count = 1 if spec.replicas is None else spec.replicas
        return Scaling(min_replicas=count, max_replicas=count)
    target = policy.target_qps_per_replica
    assert not isinstance(target, dict)  # refused by _refuse_unsupported
    if target is not None and policy.max_replicas is None:
        problems.append(SpecProblem(
            file=file, path="service.replica_policy.target_qps_per_replica",
            message="autoscaling needs a range: set max_replicas (above min_replicas)"))
    top = policy.min_replicas if policy.max_replicas is None else policy.max_replicas
    return Scaling(
        min_replicas=policy.min_replicas, max_replicas=top, target_qps=target,
        upscale_delay_s=_or(policy.upscale_delay_seconds, knobs.DEFAULT_UPSCALE_DELAY_S),
        downscale_delay_s=_or(policy.downscale_delay_seconds,
                              knobs.DEFAULT_DOWNSCALE_DELAY_S),
        overprovision=policy.num_overprovision or 0)


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def _refuse_unsupported(spec: ServiceSpec, file: str) -> None:
    found = []
    policy: ReplicaPolicy | None = spec.replica_policy
    if policy is not None:
        if isinstance(policy.target_qps_per_replica, dict):
            found.append("service.replica_policy.target_qps_per_replica by accelerator")
        for name in ("dynamic_ondemand_fallback", "base_ondemand_fallback_replicas",
                     "spot_placer"):
            if getattr(policy, name) is not None:
                found.append(f"service.replica_policy.{name} (spot replicas)")
    if found:
        raise UnsupportedFeature(
            f"{file}: {'; '.join(found)}: not supported by services in this version",
            hint="remove the field(s); services run on local, with fixed or autoscaled "
            "replicas")


def check_local(task: Task, file: str) -> None:
    """Every placement the task allows is on ``local``: services run there only."""
    clouds = sorted({c.infra.cloud or "any cloud" for c in task.candidates()})
    if clouds != ["local"]:
        raise UnsupportedFeature(
            f"{file}: services run on local in this version; this task may run on "
            f"{', '.join(clouds)} (resources.infra)",
            hint="set resources.infra: local (or pass --infra local); a local replica "
            "must listen on the port in $SKYC_SERVE_PORT")
