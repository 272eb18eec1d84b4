"""What ``skyc plan`` says about its scope: plan-only clouds, skipped ones, a cheaper
disabled cloud. Pure functions returning text and data; the commands print them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyc.apply.infra import PlanScope
    from skyc.model.plan import Plan
    from skyc.settings.config import SkycConfig


def scope_lines(scope: PlanScope) -> list[str]:
    """One line each: plan-only clouds, then skipped ones."""
    out = []
    if scope.plan_only:
        names = ", ".join(scope.plan_only)
        out.append(f"no credentials for {names}: planned over all; apply needs credentials "
                   "(`skyc check` shows what is enabled and why)")
    if scope.skipped:
        out.append(f"skipped {', '.join(scope.skipped)}: skyc cannot provision there yet")
    return out


def cheaper_elsewhere(tasks: Sequence[Any], plan: Plan, scope: PlanScope, config: SkycConfig,
                      *, infra: str | None, catalog_dir: Path | None, target: str,
                      parallel: bool) -> dict[str, Any] | None:
    """The same tasks planned over the disabled provisionable clouds only, when that
    is cheaper than ``plan`` (per hour, for every task): the clouds and the price."""
    if not scope.disabled or target != "cost":
        return None

    from skyc.apply.infra import catalog_for, missing_credentials
    from skyc.errors import SkycError
    from skyc.optimizer import optimize

    other_scope = scope._replace(names=frozenset(scope.disabled))
    try:
        cat = catalog_for(config, tasks, infra=infra, catalog_dir=catalog_dir, scope=other_scope)
        other = optimize(list(tasks), cat, infra=infra, edges=[] if parallel else None)
    except SkycError:
        return None
    from skyc.optimizer.durations import task_duration
    from skyc.optimizer.pipeline_cost import comparable_cost

    durations = [task_duration(t) for t in tasks]
    mine, basis = comparable_cost(plan, durations, "parallel" if parallel else "serial")
    theirs, _ = comparable_cost(other, durations, "parallel" if parallel else "serial")
    if theirs >= mine - 1e-9:
        return None
    clouds = sorted({t.placement.cloud for t in other.tasks})
    how = [m for c in clouds if (m := missing_credentials(c, config=config))]
    found = {"clouds": clouds, "hourly_cost_total": round(other.hourly_cost, 6),
             "egress_cost": round(other.egress_cost, 6), "enable": how}
    if basis == "run" or (len(tasks) > 1 and not parallel):
        # a pipeline's steps run one after another: compared by the whole run, or by
        # an hour of each step, never by their hourly prices added up
        found.update({"compared_by": basis, "cost": round(theirs, 6),
                      "this_plan_cost": round(mine, 6)})
    return found


def cheaper_line(found: dict[str, Any], plan: Plan) -> str:
    where = ", ".join(found["clouds"])
    how = "; ".join(found["enable"]) or "list it under infra: in $SKYC_HOME/config.yaml"
    if found.get("compared_by") == "run":
        return (f"{where} would cost ${found['cost']:,.2f} for the whole run "
                f"(this plan: ${found['this_plan_cost']:,.2f}): enable it ({how})")
    if found.get("compared_by") == "hour":
        return (f"{where} would cost ${found['cost']:.4f} for an hour of each step, data "
                f"transfer included (this plan: ${found['this_plan_cost']:.4f}): enable it "
                f"({how})")
    return (f"{where} would be ${found['hourly_cost_total']:.4f}/hr total "
            f"(this plan: ${plan.hourly_cost:.4f}/hr total): enable it ({how})")
