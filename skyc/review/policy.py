"""Policy: which placements a plan may use, and per-user / per-team quotas.

The policy file (``skyc-policy.yaml`` beside the task, ``--policy FILE``, or the
config's ``policy:`` path; the first found wins) is YAML for :class:`Policy`
(unknown keys are errors, named with their path). Every rule is optional:

    allowed_clouds: [aws, local]
    allowed_regions: [aws/us-east-1, us-west-2]    # cloud/region, or a region anywhere
    max_hourly_cost_per_cluster: 20
    max_hourly_cost_total: 50
    max_accelerators_per_cluster: 8
    spot: required | forbidden
    required_labels: [team, cost-center]           # keys of the task's resources.labels
    allowed_instance_families: [m6i, g5, p4d]      # the instance type before its first '.'
    users:
      alice: {max_gpus: 8, max_spend_per_day: 200, allowed_clouds: [aws]}
    teams:
      ml: {members: [alice, bob], max_gpus: 16}

Quotas count what the state knows (clusters not stopped, managed jobs still running)
plus the plan, minus the planned clusters' current use (they are replaced). The
user is the task's ``user`` label, else ``SKYC_USER``, else ``USER``; a team is the
task's ``team`` label or the team listing the user as a member.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skyc.errors import ConfigError
from skyc.model.plan import Placement
from skyc.review.policy_file import POLICY_FILE as POLICY_FILE
from skyc.review.policy_file import find_policy as find_policy


class _Model(BaseModel):
    # Validators are built when a policy is first read: a plan without one builds none.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Quota(_Model):
    max_gpus: float | None = Field(default=None, ge=0)
    max_spend_per_day: float | None = Field(default=None, ge=0)
    allowed_clouds: list[str] | None = None


class Team(Quota):
    members: list[str] = Field(default_factory=list)


class Policy(_Model):
    allowed_clouds: list[str] | None = None
    allowed_regions: list[str] | None = None
    max_hourly_cost_per_cluster: float | None = Field(default=None, ge=0)
    max_hourly_cost_total: float | None = Field(default=None, ge=0)
    max_accelerators_per_cluster: float | None = Field(default=None, ge=0)
    spot: Literal["required", "forbidden"] | None = None
    required_labels: list[str] = Field(default_factory=list)
    allowed_instance_families: list[str] | None = None
    users: dict[str, Quota] = Field(default_factory=dict)
    teams: dict[str, Team] = Field(default_factory=dict)


class Violation(_Model):
    rule: str            # the policy key, e.g. max_hourly_cost_per_cluster, users.alice
    cluster: str | None  # None: the plan as a whole
    message: str


@dataclass(frozen=True)
class Planned:
    """One cluster of the plan, as the policy sees it."""

    cluster: str
    placement: Placement
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """What is in use already, per cluster: (GPUs, $/hour)."""

    clusters: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def load_policy(path: Path, what: str = "policy") -> Policy:
    """A policy file (a regular file of at most 8 MiB, bounded YAML), validated; errors
    name the file and the key."""
    from skyc.task.documents import load_yaml
    from skyc.task.inputs import POLICY

    data = load_yaml(path, f"{what} {path}", POLICY) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path}: expected a mapping at the top level")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"{what} {path}: {problems}",
                          hint="see `skyc plan --help` for the policy keys") from None


def gpus(p: Placement) -> float:
    return p.total_accelerators


def family(instance_type: str) -> str:
    """``m6i.large`` -> ``m6i``; ``n2-standard-8`` -> ``n2-standard``; others as they are."""
    if "." in instance_type:
        return instance_type.split(".")[0]
    if instance_type.count("-") > 1:
        return instance_type.rsplit("-", 1)[0]
    return instance_type


def _region_ok(allowed: Sequence[str], p: Placement) -> bool:
    return any(a in (p.region, f"{p.cloud}/{p.region}", p.cloud) for a in allowed)


def check_placement(policy: Policy, item: Planned) -> list[Violation]:
    """The rules that apply to one cluster on its own."""
    p, c = item.placement, item.cluster
    out: list[Violation] = []

    def bad(rule: str, message: str) -> None:
        out.append(Violation(rule=rule, cluster=c, message=message))

    if policy.allowed_clouds is not None and p.cloud not in policy.allowed_clouds:
        bad("allowed_clouds", f"{p.cloud} is not an allowed cloud "
            f"({', '.join(policy.allowed_clouds) or 'none'})")
    if policy.allowed_regions is not None and p.region and not _region_ok(
            policy.allowed_regions, p):
        bad("allowed_regions", f"{p.infra} is not in an allowed region "
            f"({', '.join(policy.allowed_regions) or 'none'})")
    cap = policy.max_hourly_cost_per_cluster
    if cap is not None and p.hourly_cost > cap + 1e-9:
        bad("max_hourly_cost_per_cluster", f"${p.hourly_cost:.4f}/hour is over the "
            f"${cap:g}/hour allowed per cluster")
    acc = policy.max_accelerators_per_cluster
    if acc is not None and gpus(p) > acc:
        bad("max_accelerators_per_cluster", f"{gpus(p):g} accelerators are over the "
            f"{acc:g} allowed per cluster")
    if policy.spot == "required" and not p.use_spot:
        bad("spot", "spot is required, and this placement is on-demand")
    if policy.spot == "forbidden" and p.use_spot:
        bad("spot", "spot is forbidden, and this placement is spot")
    missing = [k for k in policy.required_labels if k not in item.labels]
    if missing:
        bad("required_labels", f"resources.labels lacks {', '.join(missing)}")
    fams = policy.allowed_instance_families
    if fams is not None and p.instance_type and family(p.instance_type) not in fams:
        bad("allowed_instance_families", f"{p.instance_type} (family "
            f"{family(p.instance_type)}) is not an allowed family ({', '.join(fams)})")
    return out


# The rules a placement decides (the others are the task's: its labels).
PLACEMENT_RULES = frozenset({"allowed_clouds", "allowed_regions", "max_hourly_cost_per_cluster",
                             "max_accelerators_per_cluster", "spot",
                             "allowed_instance_families"})


def placement_allowed(policy: Policy) -> Callable[[Placement], str | None]:
    """The policy as a constraint of the optimizer: why a placement breaks one of the
    rules a placement decides (None: it breaks none)."""
    def allowed(placement: Placement) -> str | None:
        found = check_placement(policy, Planned(cluster="", placement=placement))
        why = [f"{v.rule}: {v.message}" for v in found if v.rule in PLACEMENT_RULES]
        return why[0] if why else None
    return allowed


def evaluate(policy: Policy, planned: Sequence[Planned], usage: Usage,
             user: str | None, at_once: Sequence[int] | None = None,
             gpus_at_once: Sequence[int] | None = None) -> list[Violation]:
    """Every violation of the plan: per cluster, in total, and against quotas.

    ``at_once``: the planned clusters that run at the same time at the plan's peak
    (the plan's ``peak_tasks``; None: all of them). A pipeline's steps run one after
    another, so the hourly total and the daily spend count its dearest step, not the
    steps added up. ``gpus_at_once``: likewise the clusters that hold the most GPUs at
    the same time (the plan's ``peak_accelerator_tasks``), which GPU quotas count."""
    out = [v for item in planned for v in check_placement(policy, item)]
    peak = [planned[i] for i in at_once] if at_once else list(planned)
    total = sum(i.placement.hourly_cost for i in peak)
    cap = policy.max_hourly_cost_total
    if cap is not None and total > cap + 1e-9:
        what = _when(peak, planned) or "in all"
        out.append(Violation(rule="max_hourly_cost_total", cluster=None,
                             message=f"${total:.4f}/hour {what} is over the ${cap:g}/hour "
                             "allowed in total"))
    held = [planned[i] for i in gpus_at_once] if gpus_at_once else list(planned)
    out += _quotas(policy, planned, usage, user, peak, held)
    return out


def _when(at_once: Sequence[Planned], planned: Sequence[Planned], whose: str = "the") -> str:
    """"at the peak (a, b; the others run before or after)" when only some of the planned
    clusters run at once; empty when all of them do."""
    if len(at_once) == len(planned):
        return ""
    return (f"at {whose} peak ({', '.join(i.cluster for i in at_once)}; the others run "
            "before or after)")


def _quotas(policy: Policy, planned: Sequence[Planned], usage: Usage, user: str | None,
            peak: Sequence[Planned], held: Sequence[Planned]) -> list[Violation]:
    names = {i.cluster for i in planned}
    gpus_used = sum(g for c, (g, _) in usage.clusters.items() if c not in names)
    cost_used = sum(h for c, (_, h) in usage.clusters.items() if c not in names)
    gpus_new = gpus_used + sum(gpus(i.placement) for i in held)
    when = _when(held, planned, "its")
    when = f" {when}" if when else ""
    per_day = 24 * (cost_used + sum(i.placement.hourly_cost for i in peak))
    labels: dict[str, str] = {}
    for i in planned:
        labels.update(i.labels)
    who = labels.get("user") or user
    quotas: list[tuple[str, Quota]] = []
    if who and who in policy.users:
        quotas.append((f"users.{who}", policy.users[who]))
    for name, team in sorted(policy.teams.items()):
        if labels.get("team") == name or (who and who in team.members):
            quotas.append((f"teams.{name}", team))
    out = []
    for rule, q in quotas:
        if q.max_gpus is not None and gpus_new > q.max_gpus:
            out.append(Violation(rule=rule, cluster=None, message=(
                f"{gpus_new:g} GPUs in use with this plan{when} ({gpus_used:g} already) are over "
                f"the {q.max_gpus:g} of {rule}")))
        if q.max_spend_per_day is not None and per_day > q.max_spend_per_day + 1e-9:
            out.append(Violation(rule=rule, cluster=None, message=(
                f"${per_day:.2f}/day with this plan is over the ${q.max_spend_per_day:g}/day "
                f"of {rule}")))
        for i in planned:
            if q.allowed_clouds is not None and i.placement.cloud not in q.allowed_clouds:
                out.append(Violation(rule=rule, cluster=i.cluster, message=(
                    f"{i.placement.cloud} is not among the clouds {rule} may use "
                    f"({', '.join(q.allowed_clouds) or 'none'})")))
    return out
