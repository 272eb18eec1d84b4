"""Offers granted only from a reservation: not placed unless the config names one.

The catalog says which placements a cloud grants only from a reservation that the
config does not name (``catalog.reservation_missing(offer, use_spot)``: why, or
None). Such a choice is left out; when it ranked above every choice kept, the task's
reason says so, as for offers a policy excludes (``constraints``). A candidate left
with nothing fails with that reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from skyc.optimizer.choice import Choice, Target
from skyc.optimizer.constraints import better_excluded, excluded_note
from skyc.optimizer.ports import CatalogLike


class Reserved:
    """The choices kept, what better ones were left out, and per candidate left with
    nothing (by index) why."""

    __slots__ = ("kept", "note", "why")

    def __init__(self, kept: list[Choice], note: str | None, why: dict[int, str]) -> None:
        self.kept, self.note, self.why = kept, note, why


def without_unreserved(choices: Sequence[Choice], catalog: CatalogLike, target: Target
                       ) -> Reserved:
    """``choices`` less those that need a reservation the config does not name."""
    verdicts = [(c, catalog.reservation_missing(c.offer, c.use_spot)) for c in choices]
    kept = [c for c, why in verdicts if why is None]
    if len(kept) == len(verdicts):
        return Reserved(kept, None, {})
    better = better_excluded(verdicts, target)
    note = excluded_note("left out {n} better offer(s) granted only from a reservation",
                         better) if better else None
    have = {c.candidate_index for c in kept}
    why: dict[int, str] = {}
    for c, reason in verdicts:
        if reason is not None and c.candidate_index not in have:
            why.setdefault(c.candidate_index, reason)
    return Reserved(kept, note, why)
