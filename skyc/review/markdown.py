"""``skyc plan --format markdown``: a pull-request comment.

Its first line is a hidden marker that is the same for the same set of clusters
(``<!-- skyc-plan:<id> -->``), so a bot finds and updates its own comment; then a
one-line verdict (adds / changes / destroys, $/hour and monthly delta with %),
the policy's result, a table per cluster, replacements and destroys called out,
the full diff and each generated stack folded in ``<details>``, and next steps.
No ANSI codes; never more than :data:`LIMIT` characters (the folded parts are cut
first, inside their code fences, and the comment says so). Every value that is not
the template's own text goes through :mod:`skyc.review.md_escape` for the place it
lands in, so no name, path or message can add a heading, a table, a fence or HTML.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from skyc.review.md_escape import cell_code, code_span, fence, html_text, text
from skyc.review.report import change_counts

LIMIT = 65_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SIGNS = {"create": "+", "delete": "-", "update": "~", "replace": "-/+"}


def marker(clusters: list[str]) -> str:
    key = hashlib.sha256("\n".join(sorted(clusters)).encode()).hexdigest()[:16]
    return f"<!-- skyc-plan:{key} -->"


def _pct(before: float, delta: float) -> str:
    return "new" if before == 0 else f"{delta / before * 100:+.1f}%"


def _signed(value: float, digits: int) -> str:
    return f"{'-' if value < 0 else '+'}${abs(value):.{digits}f}"


def _changes(stacks: list[dict[str, Any]], clusters: int) -> str:
    """The resource counts, over the stacks whose diff was computed only, and how many
    have none: the comment never claims counts it does not have."""
    known = [st for st in stacks if st.get("status") == "ok"]
    if not known:
        why = "`--no-diff`" if not stacks else "see the table"
        return f"no engine diff ({why}): changes unknown"
    n = change_counts(known)
    adds = n["create"] + n["replace"]
    destroys = n["delete"] + n["replace"]
    counts = f"{adds} to add, {n['update']} to change, {destroys} to destroy"
    missing = max(clusters, len(stacks)) - len(known)
    return counts + (f" (no diff for {missing} of {max(clusters, len(stacks))} stacks)"
                     if missing else "")


def _verdict(stacks: list[dict[str, Any]], cost: dict[str, Any]) -> str:
    t = cost["total"]
    at, why = "", ""
    if t.get("basis") == "peak":  # a pipeline: its steps' prices are never added up
        names = ", ".join(code_span(c) for c in t["at_once"])
        at = " at the peak"
        why = (f"; {names}, the dearest step: the steps run one after another"
               if len(t["at_once"]) == 1 else
               f"; {names}, the dearest steps that run at the same time")
    return (f"**skyc plan**: {_changes(stacks, len(cost['clusters']))}; "
            f"${t['after']['hourly']:.4f}/hour{at} ({_signed(t['delta']['hourly'], 4)}, "
            f"{_pct(t['before']['hourly'], t['delta']['hourly'])}{why}), "
            f"${t['after']['monthly']:.2f}/month{at} ({_signed(t['delta']['monthly'], 2)})")


def _for_hours(cost: dict[str, Any]) -> list[str]:
    """``--hours N``: what every cluster costs for N hours, at the planned prices."""
    from skyc.optimizer.pipeline_cost import hours_text

    total = cost["total"]
    if total.get("run_total") is None:
        return []
    each = " (each cluster for that long)" if len(cost["clusters"]) > 1 else ""
    return [f"**For {hours_text(total['hours'])}**: ${total['run_total']:,.2f} at the "
            f"planned prices{each}", ""]


def _run_cost(doc: dict[str, Any]) -> list[str]:
    """A pipeline's run cost (its steps run one after another, so the $/hour above is
    only its dearest step's): each step and the total."""
    from skyc.optimizer.pipeline_cost import hours_text

    rc = doc.get("run_cost")
    why = []
    if doc.get("objective") == "run":  # ranked by the whole run: say so where it mattered
        for t in doc["tasks"]:
            price = t["placement"]["hourly_cost"]
            if any(a["hourly_cost"] < price - 1e-9 for a in t.get("alternatives", [])):
                why.append(f"- {code_span(t['name'])}: {text(t['reason'])}")
    why = ["**Placed for the whole run**", "", *why, ""] if why else []
    if not rc or len(rc["steps"]) < 2:
        return why
    steps = ", ".join(f"{text(s['name'])} " + (f"${s['cost']:,.2f} for {hours_text(s['hours'])}"
                                               if s["cost"] is not None else "no duration")
                      for s in rc["steps"])
    how = "one after another" if rc["execution"] == "serial" else "at once"
    if rc["total_cost"] is None:
        total = f"no total: no duration for {', '.join(map(text, rc['missing_duration']))}"
    else:
        total = f"total ${rc['total_cost']:,.2f} for about {hours_text(rc['total_hours'])}"
    return [f"**Run cost** (the steps {how}): {total} ({steps})", "", *why]


def _action(rc: dict[str, Any]) -> str:
    return "replace" if rc["actions"] == ["delete", "create"] else str(rc["actions"][0])


def _policy(policy: dict[str, Any] | None) -> list[str]:
    if policy is None:
        return ["**Policy**: none applies"]
    if policy["ok"]:
        return [f"**Policy** ({code_span(policy['file'])}): passed"]
    out = [f"**Policy** ({code_span(policy['file'])}): {len(policy['violations'])} "
           "violation(s), `skyc plan` fails and `skyc apply` refuses it", ""]
    for v in policy["violations"]:
        where = f"cluster {code_span(v['cluster'])}: " if v["cluster"] else ""
        out.append(f"- :x: {code_span(v['rule'])}: {where}{text(v['message'])}")
    return out


def _table(doc: dict[str, Any], stacks: list[dict[str, Any]], cost: dict[str, Any]
           ) -> list[str]:
    out = ["| cluster | task | placement | nodes | $/hour | delta $/hour | changes |",
           "|---|---|---|---:|---:|---:|---|"]
    by_cluster = {st["cluster"]: st for st in stacks}
    for task, c in zip(doc["tasks"], cost["clusters"], strict=True):
        p = task["placement"]
        where = p["cloud"] + "".join(f"/{x}" for x in (p.get("region"), p.get("zone"))
                                     if x and x != p["cloud"])
        what = f"{where} {p.get('instance_type') or ''}".strip()
        st = by_cluster.get(c["cluster"])
        if st is None or st["status"] != "ok":
            changes = "no diff" + (f" ({text(st['note'])})" if st and st["note"] else "")
        else:
            parts = [f"{n} {text(a)}" for a, n in st["summary"].items()
                     if a not in ("no-op", "read")]
            changes = ", ".join(parts) or "no changes"
        out.append(f"| {cell_code(c['cluster'])} | {text(task['name'])} | {text(what)}"
                   f"{' spot' if p.get('use_spot') else ''} | {p['num_nodes']} | "
                   f"{c['after']['hourly']:.4f} | {_signed(c['delta']['hourly'], 4)} | {changes} |")
    return out


def _callouts(stacks: list[dict[str, Any]]) -> list[str]:
    out = []
    for st in stacks:
        for rc in st["resource_changes"]:
            a = _action(rc)
            if a in ("replace", "delete"):
                word = "replaced" if a == "replace" else "destroyed"
                out.append(f"- :warning: {code_span(st['cluster'])}: {code_span(rc['address'])} "
                           f"is {word}")
    return (["**Replacements and destroys**", "", *out] if out else [])


def _diff_text(stacks: list[dict[str, Any]]) -> str:
    lines = []
    for st in stacks:
        lines.append(f"# stack {st['cluster']} ({st['engine']})")
        for rc in st["resource_changes"]:
            a = _action(rc)
            if a in ("no-op", "read"):
                continue
            lines.append(f"{_SIGNS.get(a, a)} {rc['address']} ({rc['type']})")
            for key, value in sorted((rc.get("inputs") or {}).items()):
                lines.append(f"    {key} = {json.dumps(value, sort_keys=True)}")
    return "\n".join(lines)


def _fold(summary: str, lang: str, body: str) -> tuple[str, str, str]:
    """A folded code block: its opening (``summary`` is already HTML), its body and its
    closing; the fence outlasts every run of backticks in the body."""
    body = _ANSI.sub("", body)
    ticks = fence(body)
    return (f"<details><summary>{summary}</summary>\n\n{ticks}{lang}\n", body,
            f"\n{ticks}\n</details>")


def render(doc: dict[str, Any], stacks: list[dict[str, Any]], cost: dict[str, Any],
           policy: dict[str, Any] | None, stack_files: dict[str, dict[str, str]],
           next_steps: list[str], limit: int = LIMIT) -> str:
    """The comment, at most ``limit`` characters."""
    clusters = [c["cluster"] for c in cost["clusters"]]
    head = [marker(clusters), _verdict(stacks, cost), "", *_for_hours(cost), *_policy(policy), "",
            *_table(doc, stacks, cost), "", *_run_cost(doc)]
    refused = [f"- :x: {text(r)}" for r in (doc.get("notes") or {}).get("apply_refusals", [])]
    if refused:
        head += ["**Apply would refuse**", "", *refused, ""]
    head += _buckets((doc.get("notes") or {}).get("buckets") or [])
    callouts = _callouts(stacks)
    if callouts:
        head += [*callouts, ""]
    tail = ["", "", "**Next steps**", "", *[f"- {code_span(s)}" for s in next_steps]]
    folds = [_fold("Full diff", "diff", _diff_text(stacks) or "(no changes)")]
    for cluster, files in sorted(stack_files.items()):
        for name, body in sorted(files.items()):
            folds.append(_fold(f"Generated stack: {html_text(cluster)} ({html_text(name)})",
                               "", body))
    return _fit("\n".join(head), folds, "\n".join(tail), limit)


_BUCKET_ACTIONS = {"create": "create", "reuse": "use again", "read": "read"}


def _buckets(notes: list[dict[str, Any]]) -> list[str]:
    """The buckets the tasks mount: what apply does with each, where it is mounted, what
    a GB kept in it costs a month."""
    if not notes:
        return []
    rows = ["**Buckets**", "", "| bucket | action | persistent | mounted at | mode | cluster "
            "| storage price |", "|---|---|---|---|---|---|---|"]
    for n in notes:
        kept = "-" if n["action"] == "read" else ("yes" if n["persistent"] else "no")
        rows.append(f"| {code_span(n['url'])} | {_BUCKET_ACTIONS[n['action']]} | {kept} | "
                    f"{code_span(n['target'])} | {n['mode']} | {code_span(n['cluster'])} | "
                    f"{_bucket_price(n)} |")
    return [*rows, ""]


def _bucket_price(note: dict[str, Any]) -> str:
    """``$0.023/GB-month (us-east-1)``, ``(store default)`` or ``(global)``, and the
    monthly estimate when the size is known; ``-`` without a price."""
    from skyc.catalog.storage_prices import price_text

    price = note.get("storage_price")
    if price is None:
        return "-"
    basis = note.get("storage_price_basis")
    where = (text(str(note.get("region"))) if basis == "region"
             else "global" if basis == "global" else "store default")
    out = f"{price_text(float(price))}/GB-month ({where})"
    monthly, gb = note.get("monthly_storage_cost"), note.get("storage_gb")
    if monthly is not None and gb is not None:
        out += f"; ~${float(monthly):,.2f}/month for {float(gb):,.6g} GB"
    return out


def _fit(head: str, folds: list[tuple[str, str, str]], tail: str, limit: int) -> str:
    """Head and tail whole; the folded parts as long as they fit, each cut inside its
    fence when it does not, with a note saying so."""
    note = ("\n\n_Truncated to stay under {limit} characters: {cut} characters left out; "
            "`skyc plan --format json` or the plan file has everything._")
    reserve = len(note) + 20
    budget = limit - len(head) - len(tail) - reserve
    parts: list[str] = []
    cut = 0
    for opening, body, closing in folds:
        room = budget - len(opening) - len(closing) - 2
        if room <= 0:
            cut += len(body)
            continue
        if len(body) > room:
            keep = body[:room].rsplit("\n", 1)[0]
            cut += len(body) - len(keep)
            body = keep + "\n..."
        parts.append(opening + body + closing)
        budget -= len(parts[-1]) + 2
    comment = head + "\n" + "\n\n".join(parts) + tail
    if cut:
        comment += note.format(limit=f"{limit:,}", cut=f"{cut:,}")
    return comment[: limit - 1] + "\n"
