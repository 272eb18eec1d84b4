"""A task's data: where the buckets it reads are and how much it reads from each
(``_metadata.skyc.reads``, located by the caller), and what reading them costs from
each offer: egress, once, counted in the task's objective as pipeline transfers are
(a task near its data pays none)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from skyc.catalog.egress import egress_cost
from skyc.optimizer.choice import Choice
from skyc.optimizer.rank import top_preference


class DataSource(NamedTuple):
    """``gb`` read from ``url``, which lives on ``cloud`` (in ``region``, None: not
    known, so only leaving the cloud is counted)."""

    url: str
    cloud: str
    region: str | None
    gb: float


def data_cost(choice: Choice, sources: Sequence[DataSource]) -> float:
    """The egress of reading ``sources`` on ``choice``'s offer."""
    offer = choice.offer
    total = 0.0
    for src in sources:
        if src.cloud == offer.cloud and src.region is None:
            continue
        total += egress_cost(src.cloud, src.region, offer.cloud, offer.region, src.gb)
    return round(total, 6)


def with_data(choices: Sequence[Choice], sources: Sequence[DataSource]) -> list[Choice]:
    return [c._replace(data_cost=data_cost(c, sources)) for c in choices]


def data_note(chosen: Choice, choices: Sequence[Choice],
              sources: Sequence[DataSource]) -> str:
    """What the plan says of the task's data: kept near it, or what reading it costs."""
    gb = sum(s.gb for s in sources)
    where = ", ".join(sorted({s.url for s in sources}))
    cheaper = [c for c in top_preference(choices)
               if c.hourly_cost < chosen.hourly_cost - 1e-9 and c.data_cost > 0]
    if chosen.data_cost == 0 and cheaper:
        best = min(cheaper, key=lambda c: c.hourly_cost)
        return (f"kept near its data ({gb:g} GB of {where}): the cheaper "
                f"{best.offer.cloud}/{best.offer.region} (${best.hourly_cost:.3f}/h) would "
                f"pay ${best.data_cost:.2f} of egress to read it")
    if chosen.data_cost > 0:
        return f"reads {gb:g} GB of {where} from elsewhere: ${chosen.data_cost:.2f} of egress"
    return f"near its data ({gb:g} GB of {where}): no egress"
