"""One cloud's offers in a compact form, and the query over them.

A table holds instance types (specs once, then one row per region/zone with its
prices) and, for catalogs laid out like GCP's, accelerators priced on their own
that are paired with a host type at query time (see ``hosts``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from skyc.catalog import hosts
from skyc.catalog.accelerators import family_rank
from skyc.catalog.families import is_default
from skyc.catalog.offer import Offer, OfferQuery, quantity_ok

Row = tuple[str, "str | None", "float | None", "float | None"]  # region, zone, price, spot

class InstanceEntry:
    """One instance type: its specs, and its rows (parsed from ``packed`` on first use).

    The table's classes are plain classes: a dataclass's methods are compiled when the
    module is imported, and every plan imports this one."""

    __slots__ = (
        "_by_zone",
        "acc_memory",
        "accelerator",
        "arch",
        "count",
        "default_family",
        "host_only",
        "memory",
        "name",
        "packed",
        "vcpus",
    )

    def __init__(self, name: str, accelerator: str | None, count: float,
                 acc_memory: float | None, vcpus: float | None, memory: float | None,
                 arch: str | None, packed: str | list[Row], *, host_only: bool = False
                 ) -> None:
        self.name, self.accelerator, self.count = name, accelerator, count
        self.acc_memory, self.vcpus, self.memory, self.arch = acc_memory, vcpus, memory, arch
        self.packed = packed
        # of its cloud's default CPU families (``families``); None until first asked
        self.default_family: bool | None = None
        self.host_only = host_only
        self._by_zone: dict[tuple[str, str | None], Row] | None = None

    @property
    def rows(self) -> list[Row]:
        if isinstance(self.packed, str):
            self.packed = unpack_rows(self.packed)
        return self.packed

    def row_at(self, region: str, zone: str | None) -> Row | None:
        if self._by_zone is None:
            self._by_zone = {(r[0], r[1]): r for r in self.rows}
        return self._by_zone.get((region, zone))


class AcceleratorEntry:
    """An accelerator priced alone (GCP): ``count`` of them, per region/zone."""

    __slots__ = ("count", "memory", "name", "packed")

    def __init__(self, name: str, count: float, memory: float | None,
                 packed: str | list[Row]) -> None:
        self.name, self.count, self.memory, self.packed = name, count, memory, packed

    @property
    def rows(self) -> list[Row]:
        if isinstance(self.packed, str):
            self.packed = unpack_rows(self.packed)
        return self.packed


class CloudTable:
    """One cloud's instance types and separately priced accelerators."""

    def __init__(self, cloud: str, types: list[InstanceEntry],
                 accelerators: list[AcceleratorEntry] | None = None) -> None:
        self.cloud = cloud
        self.types = types
        self.accelerators = accelerators if accelerators is not None else []
        self._medians: dict[tuple[str, str | None, float], float | None] = {}
        # The types a query may match, by accelerator (None: CPU-only) and by name;
        # built on first query.
        self._by_accelerator: dict[str | None, list[InstanceEntry]] | None = None
        self._by_name: dict[str, list[InstanceEntry]] = {}

    def places(self) -> set[tuple[str, str | None]]:
        """Every (region, zone) an offer of this cloud is priced in."""
        found: set[tuple[str, str | None]] = set()
        for t in self.types:
            found.update((row[0], row[1]) for row in t.rows)
        for a in self.accelerators:
            found.update((row[0], row[1]) for row in a.rows)
        return found

    def accelerator_names(self) -> set[str]:
        names = {t.accelerator for t in self.types if t.accelerator}
        return names | {a.name for a in self.accelerators}

    def median_price(self, instance_type: str, accelerator: str | None, count: float,
                     min_regions: int) -> float | None:
        """The median over regions of the type's on-demand price (each region's
        lowest), when at least ``min_regions`` price it; cached per table."""
        cache = self._medians
        key = (instance_type, accelerator, count)
        if key not in cache:
            regions: dict[str, float] = {}
            for t in self.types:
                if t.name == instance_type and t.accelerator == accelerator and t.count == count:
                    for row in t.rows:
                        if row[2] is not None:
                            regions[row[0]] = min(row[2], regions.get(row[0], row[2]))
            cache[key] = _median(list(regions.values())) if len(regions) >= min_regions \
                else None
        return cache[key]

    # -- query -------------------------------------------------------------
    def query(self, q: OfferQuery) -> Iterator[Offer]:
        if q.cloud is not None and q.cloud != self.cloud:
            return
        if q.cheapest is None:
            for t in self._types(q):
                for row in t.rows:
                    if _place_ok(row, q):
                        yield self._offer(t, row)
            yield from self._all_paired(q)
            return
        col = 3 if q.cheapest == "spot" else 2
        Best = tuple[float, int, str, InstanceEntry, Row]
        best: dict[tuple[str, str | None, str | None, float], Best] = {}
        for t in self._types(q):
            rank = family_rank(t.name)
            for row in t.rows:
                price = row[3] if col == 3 else row[2]
                if price is None or not _place_ok(row, q):
                    continue
                key = (row[0], row[1], t.accelerator, t.count)
                cur = best.get(key)
                if cur is None or (price, rank, t.name) < cur[:3]:
                    best[key] = (price, rank, t.name, t, row)
        offers = [self._offer(t, row) for _, _, _, t, row in best.values()]
        yield from cheapest_per_place([*offers, *self._all_paired(q)], col == 3)

    def _types(self, q: OfferQuery) -> Iterator[InstanceEntry]:
        return (t for t in self._may_match(q) if _type_ok(t, q)
                and (not q.default_families_only or self._mark_family(t)))

    def _may_match(self, q: OfferQuery) -> list[InstanceEntry]:
        """The types (not host-only, in table order) that ``q`` can match: those of its
        instance type, else of its accelerator, else the CPU-only ones when it asks for
        none; every type for a query by accelerator memory or any accelerator."""
        if self._by_accelerator is None:
            self._by_accelerator = {}
            for t in self.types:
                if not t.host_only:
                    self._by_accelerator.setdefault(t.accelerator, []).append(t)
                    self._by_name.setdefault(t.name, []).append(t)
        if q.instance_type is not None:
            return self._by_name.get(q.instance_type, [])
        if q.accelerator is not None:
            return self._by_accelerator.get(q.accelerator, [])
        if q.min_accelerator_memory_gib is None and not q.any_accelerator:
            return self._by_accelerator.get(None, [])
        return [t for t in self.types if not t.host_only]

    def _mark_family(self, t: InstanceEntry) -> bool:
        """Whether ``t`` is of a default CPU family, read from its name once, when first
        asked: most runs never ask, and reading all of Azure's types is costly."""
        if t.default_family is None:
            t.default_family = t.accelerator is None and is_default(self.cloud, t.name)
        return t.default_family

    def _all_paired(self, q: OfferQuery) -> Iterator[Offer]:
        if q.accelerator is None and not q.any_accelerator and q.min_accelerator_memory_gib is None:
            return
        for a in self.accelerators:
            if _accel_ok(a.name, a.count, a.memory, q):
                yield from self._paired(a, q)

    def _offer(self, t: InstanceEntry, row: Row) -> Offer:
        return Offer(
            cloud=self.cloud, region=row[0], zone=row[1], instance_type=t.name,
            accelerator=t.accelerator, accelerator_count=t.count,
            accelerator_memory_gib=t.acc_memory, vcpus=t.vcpus, memory_gib=t.memory,
            price=row[2], spot_price=row[3], arch=t.arch, default_family=self._mark_family(t),
        )

    def _paired(self, a: AcceleratorEntry, q: OfferQuery) -> Iterator[Offer]:
        if hosts.is_tpu(a.name):
            if q.instance_type not in (None, hosts.TPU_VM) or q.default_families_only:
                return
            for row in a.rows:
                if _place_ok(row, q):
                    yield Offer(
                        cloud=self.cloud, region=row[0], zone=row[1],
                        instance_type=hosts.TPU_VM, accelerator=a.name,
                        accelerator_count=a.count, accelerator_memory_gib=a.memory,
                        vcpus=None, memory_gib=None, price=row[2], spot_price=row[3],
                    )
            return
        sized = q.cpus is not None or q.memory_gib is not None or q.instance_type is not None
        carriers = [
            t for t in self.types
            if (q.instance_type is None or t.name == q.instance_type)
            and quantity_ok(t.vcpus, q.cpus) and quantity_ok(t.memory, q.memory_gib)
            and hosts.carries(t.name, t.vcpus, t.memory, a.name, a.count, sized=sized)
        ]
        for row in a.rows:
            if not _place_ok(row, q):
                continue
            for t in carriers:
                h = t.row_at(row[0], row[1])
                if h is None:
                    continue
                price = _add(h[2], row[2])
                spot = _add(h[3], row[3])
                yield Offer(
                    cloud=self.cloud, region=row[0], zone=row[1], instance_type=t.name,
                    accelerator=a.name, accelerator_count=a.count,
                    accelerator_memory_gib=a.memory, vcpus=t.vcpus, memory_gib=t.memory,
                    price=price, spot_price=spot, arch=t.arch,
                )

    # -- compact (de)serialization ------------------------------------------
    def to_data(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "types": [
                [t.name, t.accelerator, t.count, t.acc_memory, t.vcpus, t.memory, t.arch,
                 pack_rows(t.rows)]
                for t in self.types
            ],
            "accelerators": [
                [a.name, a.count, a.memory, pack_rows(a.rows)] for a in self.accelerators
            ],
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> CloudTable:
        cloud = str(data["cloud"])
        types = []
        for name, acc, count, accmem, vcpus, mem, arch, rows in data["types"]:
            types.append(InstanceEntry(
                name, acc, count, accmem, vcpus, mem, arch, _rows_of(rows),
                host_only=bool(data["accelerators"]) and hosts.host_only(name),
            ))
        accs = [AcceleratorEntry(n, c, m, _rows_of(rows))
                for n, c, m, rows in data["accelerators"]]
        return cls(cloud, types, accs)


def _median(values: list[float]) -> float:
    """As ``statistics.median`` (which imports fractions and decimal)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def cheapest_per_place(offers: Iterable[Offer], spot: bool) -> list[Offer]:
    """Per (region, zone, accelerator, count): the cheapest offer (ties: the preferred
    family, :func:`~skyc.catalog.accelerators.family_rank`, then the type's name)."""
    best: dict[tuple[str, str | None, str | None, float], Offer] = {}
    for o in offers:
        price = o.spot_price if spot else o.price
        if price is None:
            continue
        key = (o.region, o.zone, o.accelerator, o.accelerator_count)
        cur = best.get(key)
        if cur is None:
            best[key] = o
            continue
        cur_price = cur.spot_price if spot else cur.price
        assert cur_price is not None
        mine, theirs = o.instance_type or "", cur.instance_type or ""
        if (price, family_rank(mine), mine) < (cur_price, family_rank(theirs), theirs):
            best[key] = o
    return list(best.values())


def _rows_of(rows: str | list[list[Any]]) -> str | list[Row]:
    if isinstance(rows, str):
        return rows
    return [(str(r[0]), r[1], r[2], r[3]) for r in rows]


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def pack_rows(rows: list[Row]) -> str:
    """Rows as ``region,zone,price,spot;...`` (empty for None): parsed on first use."""
    return ";".join(f"{r[0]},{r[1] or ''},{_fmt(r[2])},{_fmt(r[3])}" for r in rows)


def unpack_rows(text: str) -> list[Row]:
    out: list[Row] = []
    if not text:
        return out
    for item in text.split(";"):
        region, zone, price, spot = item.split(",")
        out.append((region, zone or None, float(price) if price else None,
                    float(spot) if spot else None))
    return out


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a + b, 6)


def _accel_ok(name: str | None, count: float, mem: float | None, q: OfferQuery) -> bool:
    if q.accelerator is None and q.min_accelerator_memory_gib is None:
        return q.any_accelerator or name is None
    if name is None:
        return False
    if q.accelerator is not None and name != q.accelerator:
        return False
    if q.accelerator_count is not None and abs(count - q.accelerator_count) > 1e-6:
        return False
    return q.min_accelerator_memory_gib is None or (
        mem is not None and mem >= q.min_accelerator_memory_gib - 1e-6
    )


def _type_ok(t: InstanceEntry, q: OfferQuery) -> bool:
    if q.instance_type is not None and t.name != q.instance_type:
        return False
    if not _accel_ok(t.accelerator, t.count, t.acc_memory, q):
        return False
    if q.min_memory_per_vcpu is not None and t.vcpus and t.memory is not None \
            and t.memory < q.min_memory_per_vcpu * t.vcpus - 1e-6:
        return False
    return quantity_ok(t.vcpus, q.cpus) and quantity_ok(t.memory, q.memory_gib)


# Zones a cloud account must opt in to first (AWS Local Zones, e.g. ``use1-atl2-az1``,
# ``usw2-lax1-az1``): offered only when a task pins that zone, never picked by default.
_OPT_IN_ZONE = re.compile(r"^[a-z]+[0-9]+-[a-z]+[0-9]+[a-z]?-az[0-9]+$")


def _place_ok(row: Row, q: OfferQuery) -> bool:
    if q.region is not None and row[0] != q.region:
        return False
    if q.zone is None:
        return row[1] is None or not _OPT_IN_ZONE.match(row[1])
    return row[1] == q.zone
