"""The Catalog: every offer of the infra being considered, loaded lazily per cloud."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from skyc.catalog import egress
from skyc.catalog.accelerators import canonical_name, normalize_key
from skyc.catalog.offer import Offer, OfferQuery
from skyc.catalog.reservations import configured_reservations, needs_reservation, reservation_reason
from skyc.catalog.store import BUNDLED_DIR, raw_clouds, read_compact, read_meta
from skyc.catalog.table import CloudTable
from skyc.errors import CatalogError
from skyc.model.plan import CatalogSource
from skyc.settings.config import skyc_home


class Catalog:
    """Offers from priced tables (one per cloud, loaded on first use) and fixed machines."""

    def __init__(self, loaders: dict[str, Callable[[], CloudTable]], source: CatalogSource,
                 fixed: Iterable[Offer] = (),
                 reservations: Mapping[str, Sequence[str]] | None = None) -> None:
        self._loaders = dict(loaders)
        self._tables: dict[str, CloudTable] = {}
        self._fixed = list(fixed)
        self.source = source
        # Per cloud with no price catalog: what to do when it offers nothing.
        self.empty_hints: dict[str, str] = {}
        self._names: dict[str, str] | None = None
        # Per cloud: the reservations the config names (``gcp.reservations``); None:
        # read from the config file when an offer first needs one.
        self.reservations: Mapping[str, Sequence[str]] | None = reservations

    @property
    def clouds(self) -> list[str]:
        """Every cloud with offers (priced or fixed), sorted."""
        return sorted(set(self._loaders) | {o.cloud for o in self._fixed})

    @property
    def priced_clouds(self) -> list[str]:
        """The clouds that come from a price catalog (not this machine or SSH pools)."""
        return sorted(self._loaders)

    def table(self, cloud: str) -> CloudTable | None:
        if cloud not in self._tables:
            loader = self._loaders.get(cloud)
            if loader is None:
                return None
            self._tables[cloud] = loader()
        return self._tables[cloud]

    def load_all(self) -> None:
        for cloud in self._loaders:
            self.table(cloud)

    def offers(self, query: OfferQuery) -> list[Offer]:
        clouds = [query.cloud] if query.cloud else sorted(self._loaders)
        if query.kind == "fixed":
            clouds = []
        out: list[Offer] = []
        for cloud in clouds:
            table = self.table(cloud)
            if table is not None:
                out.extend(table.query(query))
        if query.kind != "elastic":
            out.extend(o for o in self._fixed if _fixed_ok(o, query))
        return out

    def accelerator_names(self) -> dict[str, str]:
        """Normalized key -> canonical name, over every accelerator on offer."""
        if self._names is None:
            names: set[str] = {o.accelerator for o in self._fixed if o.accelerator}
            for cloud in self._loaders:
                table = self.table(cloud)
                if table is not None:
                    names |= table.accelerator_names()
            self._names = {normalize_key(n): n for n in sorted(names)}
        return self._names

    def median_price(self, offer: Offer, min_regions: int) -> float | None:
        """The median on-demand price of ``offer``'s instance type over its cloud's
        regions (None for fixed machines and types priced in too few regions)."""
        table = self.table(offer.cloud) if offer.elastic and offer.instance_type else None
        if table is None or offer.instance_type is None:
            return None
        return table.median_price(offer.instance_type, offer.accelerator,
                                  offer.accelerator_count, min_regions)

    def canonical_accelerator(self, name: str) -> str | None:
        return canonical_name(name, self.accelerator_names())

    def places(self, cloud: str) -> set[tuple[str, str | None]] | None:
        """Every (region, zone) the cloud's offers are priced in; None for a cloud
        without a price catalog here (fixed machines, Kubernetes contexts)."""
        table = self.table(cloud)
        return None if table is None else table.places()

    def reservation_missing(self, offer: Offer, use_spot: bool) -> str | None:
        """Why ``offer`` cannot be placed: its cloud grants it only from a reservation
        (``reservations``) and the config names none for that cloud; None: it can be."""
        if not needs_reservation(offer.cloud, offer.instance_type, use_spot):
            return None
        if self.reservations is None:
            self.reservations = configured_reservations()
        if self.reservations.get(offer.cloud):
            return None
        return reservation_reason(offer.instance_type or "")

    @staticmethod
    def egress_cost(src: Offer, dst: Offer, gb: float) -> float:
        return egress.egress_cost(src.cloud, src.region, dst.cloud, dst.region, gb)

    @staticmethod
    def egress_seconds(src: Offer, dst: Offer, gb: float) -> float:
        return egress.egress_seconds(src.cloud, src.region, dst.cloud, dst.region, gb)


def _fixed_ok(o: Offer, q: OfferQuery) -> bool:
    from skyc.catalog.offer import quantity_ok

    if q.cloud is not None and o.cloud != q.cloud:
        return False
    if q.region is not None and o.region != q.region:
        return False
    if q.zone is not None or q.instance_type is not None:
        return False
    if not (quantity_ok(o.vcpus, q.cpus) and quantity_ok(o.memory_gib, q.memory_gib)):
        return False
    if q.accelerator is None and q.min_accelerator_memory_gib is None:
        return True
    if o.accelerator is None:
        return False
    if q.accelerator is not None and normalize_key(o.accelerator) != normalize_key(q.accelerator):
        return False
    if q.accelerator_count is not None and o.accelerator_count < q.accelerator_count - 1e-6:
        return False
    mem = q.min_accelerator_memory_gib
    return mem is None or (o.accelerator_memory_gib is not None and o.accelerator_memory_gib >= mem)


def _compact_loader(path: Path) -> Callable[[], CloudTable]:
    return lambda: CloudTable.from_data(read_compact(path))


def _raw_loader(cloud: str, path: Path) -> Callable[[], CloudTable]:
    def load() -> CloudTable:
        from skyc.catalog.csvformat import parse_vms_csv

        return parse_vms_csv(cloud, path)

    return load


def _compact_dir(directory: Path) -> tuple[dict[str, Callable[[], CloudTable]], CatalogSource]:
    meta = read_meta(directory) or {}
    loaders = {p.name[: -len(".json.gz")]: _compact_loader(p)
               for p in sorted(directory.glob("*.json.gz"))}
    source = CatalogSource(source=str(meta.get("source", directory)),
                           date=str(meta.get("date", "unknown")))
    return loaders, source


def load_catalog(directory: Path | None = None, clouds: Iterable[str] | None = None,
                 *, fixed: Iterable[Offer] = (),
                 reservations: Mapping[str, Sequence[str]] | None = None) -> Catalog:
    """The catalog to plan with.

    ``directory``: a SkyPilot-layout dir (``<cloud>/vms.csv``, read as-is) or a
    compact dir (``meta.json`` + ``<cloud>.json.gz``). Without it: the bundled
    snapshot, overridden per cloud by ``$SKYC_HOME/catalog/`` (``skyc catalog
    update``). ``clouds`` restricts which priced clouds are offered; ``fixed``
    adds offers of fixed machines (``pseudo.local_offers()``, ``ssh_offers()``).
    ``reservations``: per cloud, the reservations the config names
    (``reservations.configured_reservations(config)``): an offer a cloud grants only
    from a reservation is placed only where one is named. None: read from the config
    file when an offer first needs one.
    """
    if directory is not None:
        directory = Path(directory).expanduser()
        if (directory / "meta.json").exists():
            loaders, source = _compact_dir(directory)
        else:
            names = raw_clouds(directory)
            if not names:
                raise CatalogError(f"{directory}: no <cloud>/vms.csv in this directory",
                                   hint="lay it out like SkyPilot's catalog: aws/vms.csv, ...")
            loaders = {c: _raw_loader(c, directory / c / "vms.csv") for c in names}
            newest = max((directory / c / "vms.csv").stat().st_mtime for c in names)
            date = _dt.datetime.fromtimestamp(newest, _dt.timezone.utc).date().isoformat()
            # The directory's name, not its path: plans and stacks stay free of
            # this machine's paths, so CI artifacts compare across machines.
            source = CatalogSource(source=directory.resolve().name, date=date)
    else:
        loaders, source = _compact_dir(BUNDLED_DIR)
        source = CatalogSource(source="bundled", date=source.date)
        home = skyc_home() / "catalog"
        if (home / "meta.json").exists():
            extra, home_source = _compact_dir(home)
            if extra:
                loaders.update(extra)
                source = home_source
    if clouds is not None:
        wanted = set(clouds)
        loaders = {c: f for c, f in loaders.items() if c in wanted}
    return Catalog(loaders, source, fixed, reservations)
