"""Constraints on placements from outside the catalog (a team's policy): offers a
constraint refuses are not chosen, and what better offers it excluded is said.

The optimizer knows no policy: the caller passes ``allowed(placement)``, which returns
why a placement is refused (None: allowed). When a task allows no offer at all (it pins
something the policy refuses), its offers stay as they were: the plan is made, and the
policy's own check reports the violation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skyc.model.plan import Placement
from skyc.optimizer.choice import Choice, Target

Allowed = Callable[[Placement], "str | None"]
Report = Callable[[str, str], None]  # (task name, what the constraint excluded)


def better_excluded(verdicts: Sequence[tuple[Choice, str | None]], target: Target
                    ) -> list[tuple[Choice, str]]:
    """The refused choices (with why) ranked above every kept one, best first; none
    when nothing was kept."""
    kept = [c.key(target) for c, why in verdicts if why is None]
    if not kept:
        return []
    best = min(kept)
    return sorted(((c, why) for c, why in verdicts if why is not None and c.key(target) < best),
                  key=lambda cw: cw[0].key(target))


def excluded_note(lead: str, better: Sequence[tuple[Choice, str]]) -> str:
    """``lead`` with ``{n}`` the number of better offers excluded (e.g. "the policy
    excluded {n} better offer(s)"), then the best of them and why it was excluded."""
    top, why = better[0]
    o = top.offer
    return (f"{lead.format(n=len(better))}; the best of them: "
            f"{o.infra} {o.instance_type or ''} at ${top.hourly_cost:.4f}/hr total ({why})"
            ).replace("  ", " ")


def admitted(name: str, choices: Sequence[Choice], allowed: Allowed, target: Target,
             report: Report | None = None) -> tuple[list[Choice], str | None]:
    """The choices ``allowed`` keeps, and a note naming the better ones it excluded
    (None when it excluded none better than what it kept)."""
    verdicts = [(c, allowed(c.placement())) for c in choices]
    kept = [c for c, why in verdicts if why is None]
    if not kept:
        return list(choices), None
    better = better_excluded(verdicts, target)
    if not better:
        return kept, None
    note = excluded_note("the policy excluded {n} better offer(s)", better)
    if report is not None:
        report(name, note)
    return kept, note
