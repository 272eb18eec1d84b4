"""Ranking one task's choices: the best, and the alternatives worth showing."""

from __future__ import annotations

from collections.abc import Sequence

from skyc.optimizer.choice import Choice, Target

MIN_ALTERNATIVES = 5
MAX_ALTERNATIVES = 10


def top_preference(choices: Sequence[Choice]) -> list[Choice]:
    """Only the choices of the most preferred candidate level that has any.

    ``ordered`` resources: a lower preference wins over a cheaper higher one.
    """
    if not choices:
        return []
    best = min(c.preference for c in choices)
    return [c for c in choices if c.preference == best]


def best_per_location(choices: Sequence[Choice], target: Target) -> dict[tuple[str, str], Choice]:
    """Per (cloud, region): the best choice."""
    out: dict[tuple[str, str], Choice] = {}
    for c in sorted(choices, key=lambda c: c.key(target)):
        out.setdefault(c.location, c)
    return out


def ranked_options(choices: Sequence[Choice], target: Target) -> list[Choice]:
    """Per (cloud, region) the best choice of the most preferred candidate level, best
    first: what the solvers choose among (``best_per_location`` keeps ranked order)."""
    return list(best_per_location(top_preference(choices), target).values())


def alternatives(choices: Sequence[Choice], chosen: Choice, target: Target) -> list[Choice]:
    """Ranked: the best per region (at least ``MIN_ALTERNATIVES``, up to
    ``MAX_ALTERNATIVES``), always including the best of every cloud."""
    ranked = sorted(choices, key=lambda c: c.key(target))
    per_region: list[Choice] = []
    seen: set[tuple[str, str]] = set()
    for c in ranked:
        if c is chosen or c.location in seen or (c.location == chosen.location and
                                                 c.candidate_index == chosen.candidate_index):
            continue
        seen.add(c.location)
        per_region.append(c)
    picked = per_region[:MAX_ALTERNATIVES]
    clouds = {c.offer.cloud for c in picked} | {chosen.offer.cloud}
    for c in per_region[MAX_ALTERNATIVES:]:
        if c.offer.cloud not in clouds:
            picked.append(c)
            clouds.add(c.offer.cloud)
    if len(picked) < MIN_ALTERNATIVES:
        extra = [c for c in ranked if c is not chosen and c not in picked]
        picked.extend(extra[: MIN_ALTERNATIVES - len(picked)])
    return sorted(picked, key=lambda c: c.key(target))
