"""Read SkyPilot's catalog CSV format (``<cloud>/vms.csv``) into a ``CloudTable``.

Columns are found by name, so AWS's, Azure's and GCP's orders all work:
``InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo,
Price, SpotPrice, Region, AvailabilityZone[, Arch]``; Azure has ``Generation``
instead of the zone (its unquoted ``V1,V2`` form gives extra trailing fields,
which are joined back into the last column). Rows with an empty InstanceType
are accelerators priced on their own (GCP); they are paired with hosts later.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skyc.catalog.accelerators import gpu_info_memory_gib, memory_of
from skyc.catalog.table import CloudTable
from skyc.errors import CatalogError
from skyc.task.inputs import MAX_CATALOG_ROWS

_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB",
             "Price", "SpotPrice", "Region")


def _num(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    value = float(text)
    return int(value) if value.is_integer() else value


def _price(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


def read_vms_csv(path: Path) -> str:
    """A ``vms.csv``'s text: a regular file of at most 32 MiB of UTF-8."""
    from skyc.task.inputs import CATALOG
    from skyc.task.reading import read_text

    return read_text(path, str(path), CATALOG)


def parse_vms_csv(cloud: str, path: Path) -> CloudTable:
    return CloudTable.from_data(parse_vms_text(cloud, read_vms_csv(path), str(path)))


def _rows(text: str, where: str) -> Iterator[list[str]]:
    """The CSV rows of ``text``, the header first, at most MAX_CATALOG_ROWS after it (a
    text of more lines is refused before a row is parsed)."""
    too_many = CatalogError(f"{where}: holds more than {MAX_CATALOG_ROWS:,} rows; a "
                            f"catalog file holds at most {MAX_CATALOG_ROWS:,}")
    if text.count("\n", 0, len(text) - 1) > MAX_CATALOG_ROWS:
        raise too_many
    reader = csv.reader(io.StringIO(text))
    try:
        for count, row in enumerate(reader):
            if count > MAX_CATALOG_ROWS:
                raise too_many
            yield row
    except csv.Error as exc:
        raise CatalogError(f"{where}:{reader.line_num}: not CSV: {exc}") from None


def _columns(header: list[str] | None, where: str) -> dict[str, int]:
    if header is None:
        raise CatalogError(f"{where}: empty catalog file")
    col = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in _REQUIRED if c not in col]
    if missing:
        raise CatalogError(
            f"{where}: not a SkyPilot vms.csv: missing column(s) {', '.join(missing)}",
            hint="expected the header of SkyPilot's catalog format (catalogs/v8/<cloud>/vms.csv)",
        )
    return col


def parse_vms_text(cloud: str, text: str, where: str) -> dict[str, Any]:
    """Parse one vms.csv into ``CloudTable.to_data()`` form."""
    reader = _rows(text, where)
    header = next(reader, None)
    col = _columns(header, where)
    width = len(header or ())
    i_type, i_acc, i_cnt = col["InstanceType"], col["AcceleratorName"], col["AcceleratorCount"]
    i_cpu, i_mem, i_price = col["vCPUs"], col["MemoryGiB"], col["Price"]
    i_spot, i_region = col["SpotPrice"], col["Region"]
    i_zone, i_arch, i_info = col.get("AvailabilityZone"), col.get("Arch"), col.get("GpuInfo")
    types: dict[str, list[Any]] = {}
    accels: dict[tuple[str, float], list[Any]] = {}
    for lineno, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) > width:  # unquoted "V1,V2" (Azure): join the tail into the last column
            row = [*row[: width - 1], ",".join(row[width - 1 :])]
        if len(row) != width:
            raise CatalogError(f"{where}:{lineno}: expected {width} fields, found {len(row)}")
        try:
            acc = row[i_acc].strip() or None
            count = _num(row[i_cnt]) or 0
            price, spot = _price(row[i_price]), _price(row[i_spot])
            vcpus, mem = _num(row[i_cpu]), _num(row[i_mem])
        except ValueError as exc:
            raise CatalogError(f"{where}:{lineno}: bad number: {exc}") from None
        zone = row[i_zone].strip() or None if i_zone is not None else None
        place = [row[i_region].strip(), zone, price, spot]
        acc_mem = None
        if acc is not None:
            info = row[i_info] if i_info is not None else ""
            acc_mem = gpu_info_memory_gib(info) or memory_of(acc)
        name = row[i_type].strip()
        if not name:
            if acc is None:
                continue
            entry = accels.setdefault((acc, count), [acc, count, acc_mem, []])
            entry[3].append(place)
            continue
        arch = (row[i_arch].strip() or None) if i_arch is not None else None
        entry = types.setdefault(name, [name, acc, count, acc_mem, vcpus, mem, arch, []])
        entry[7].append(place)
    return {"cloud": cloud, "types": list(types.values()), "accelerators": list(accels.values())}
