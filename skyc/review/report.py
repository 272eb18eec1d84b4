"""The review report's data: cost before, after and delta per cluster and in total.

``before`` is what the cluster costs now (the state's $/hour; 0 for a cluster not
up), ``after`` the plan's placement; monthly figures are 730 hours. The total's
``after`` counts what runs at the same time (``at_once``: the plan's ``peak_tasks``):
every cluster of a plan whose tasks run at once, but only the dearest step of a
pipeline whose steps run one after another (``basis``: ``peak``), never their sum.
"""

from __future__ import annotations

from typing import Any

HOURS_PER_MONTH = 730.0


def _money(hourly: float) -> dict[str, float]:
    return {"hourly": round(hourly, 6), "monthly": round(hourly * HOURS_PER_MONTH, 2)}


def cost_section(doc: dict[str, Any], clusters: list[str], hours: float | None = None
                 ) -> dict[str, Any]:
    """``--format json``'s ``cost``: per cluster and in total."""
    from skyc.review.quotas import clusters_in_use

    now = clusters_in_use()
    per: list[dict[str, Any]] = []
    for task, cluster in zip(doc["tasks"], clusters, strict=True):
        before = now.get(cluster, (0.0, 0.0))[1]
        after = float(task["placement"]["hourly_cost"])
        entry: dict[str, Any] = {"cluster": cluster, "task": task["name"],
                                 "before": _money(before), "after": _money(after),
                                 "delta": _money(after - before)}
        if hours is not None:
            entry["run_total"] = round(after * hours, 2)
        per.append(entry)
    peak = doc.get("peak_tasks")
    at_once = [int(i) for i in peak] if peak else list(range(len(per)))
    before = sum(c["before"]["hourly"] for c in per)
    after = sum(per[i]["after"]["hourly"] for i in at_once)
    total: dict[str, Any] = {"before": _money(before), "after": _money(after),
                             "delta": _money(after - before),
                             "basis": "all at once" if len(at_once) == len(per) else "peak",
                             "at_once": [per[i]["cluster"] for i in at_once]}
    if hours is not None:  # each cluster for N hours, whether at once or one after another
        total["run_total"] = round(sum(c["after"]["hourly"] for c in per) * hours, 2)
        total["hours"] = hours
    return {"clusters": per, "total": total, "hours_per_month": HOURS_PER_MONTH}


def change_counts(stacks: list[dict[str, Any]]) -> dict[str, int]:
    """Creates, updates, replaces and destroys over every stack."""
    out = {"create": 0, "update": 0, "replace": 0, "delete": 0}
    for st in stacks:
        for rc in st["resource_changes"]:
            a = "replace" if rc["actions"] == ["delete", "create"] else rc["actions"][0]
            if a in out:
                out[a] += 1
    return out
