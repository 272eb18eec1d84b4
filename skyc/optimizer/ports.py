"""What the optimizer needs from its inputs (structural types, no cloud names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from skyc.catalog.offer import Offer, OfferQuery
from skyc.model.plan import CatalogSource
from skyc.task.candidate import ResourceCandidate


class CatalogLike(Protocol):
    source: CatalogSource

    def offers(self, query: OfferQuery) -> list[Offer]: ...

    def canonical_accelerator(self, name: str) -> str | None: ...

    def accelerator_names(self) -> dict[str, str]: ...

    @property
    def clouds(self) -> list[str]: ...

    @property
    def priced_clouds(self) -> list[str]: ...

    def egress_cost(self, src: Offer, dst: Offer, gb: float) -> float: ...

    def egress_seconds(self, src: Offer, dst: Offer, gb: float) -> float: ...

    def reservation_missing(self, offer: Offer, use_spot: bool) -> str | None:
        """Why ``offer`` cannot be placed: its cloud grants it only from a reservation
        and none is named (None: it can be)."""
        ...


class TaskLike(Protocol):
    """The parts of ``skyc.task.Task`` the optimizer reads."""

    @property
    def name(self) -> str | None: ...

    @property
    def num_nodes(self) -> int: ...

    @property
    def outputs(self) -> Mapping[str, float] | None: ...

    def candidates(self) -> Sequence[ResourceCandidate]: ...
