"""Reading SkyPilot's catalog CSVs (fixture dir and the real snapshots) and the compact form."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from skyc.catalog import OfferQuery, load_catalog
from skyc.catalog.csvformat import parse_vms_text
from skyc.catalog.store import BUNDLED_DIR, write_compact
from skyc.catalog.table import CloudTable
from skyc.errors import CatalogError
from tests.optimizer.helpers import SMALL_CATALOG

# The repository sits next to shared/, which holds the reference catalogs.
REF = Path(__file__).resolve().parents[3] / "shared" / "catalog-ref"


def test_azure_unquoted_generation_is_joined() -> None:
    data = parse_vms_text("azure", (SMALL_CATALOG / "azure" / "vms.csv").read_text(), "x")
    names = {t[0] for t in data["types"]}
    assert {"Standard_D4s_v5", "Standard_F4s_v2"} <= names
    cat = load_catalog(SMALL_CATALOG, clouds=["azure"])
    d4 = cat.offers(OfferQuery(instance_type="Standard_D4s_v5"))
    assert [(o.region, o.zone, o.price, o.spot_price) for o in d4] == [
        ("eastus", None, 0.192, 0.04)]


def test_accelerator_memory_from_gpuinfo_and_table() -> None:
    cat = load_catalog(SMALL_CATALOG)
    aws = cat.offers(OfferQuery(cloud="aws", accelerator="A100", accelerator_count=8))
    assert {o.accelerator_memory_gib for o in aws} == {40.0}
    az = cat.offers(OfferQuery(cloud="azure", accelerator="A100-80GB"))
    assert [o.accelerator_memory_gib for o in az] == [80]
    big = cat.offers(OfferQuery(min_accelerator_memory_gib=80))
    assert {o.accelerator for o in big} == {"A100-80GB", "H100"}


def test_gcp_pairs_accelerators_with_hosts() -> None:
    cat = load_catalog(SMALL_CATALOG, clouds=["gcp"])
    t4 = cat.offers(OfferQuery(accelerator="T4", accelerator_count=1))
    # N1 hosts only (never n2-standard-4 nor the A2 types), one per zone and host,
    # at least the default host size for one T4 (4 vCPUs, 16 GiB: not n1-standard-4)
    assert sorted((o.zone, o.instance_type, o.price) for o in t4) == [
        ("europe-west4-a", "n1-highmem-4", pytest.approx(0.61)),
        ("us-central1-a", "n1-highmem-4", pytest.approx(0.59)),
        ("us-central1-a", "n1-standard-8", pytest.approx(0.73)),
    ]
    sized = cat.offers(OfferQuery(accelerator="T4", accelerator_count=1, cpus=(4, False)))
    assert {o.instance_type for o in sized} == {"n1-standard-4", "n1-highmem-4"}
    a100 = cat.offers(OfferQuery(accelerator="A100", accelerator_count=8))
    assert [(o.instance_type, o.price, o.spot_price) for o in a100] == [
        ("a2-highgpu-8g", pytest.approx(26.47), pytest.approx(12.47))]
    assert cat.offers(OfferQuery(accelerator="H100", accelerator_count=8)) == []  # no A3 host
    tpu = cat.offers(OfferQuery(accelerator="tpu-v5litepod-8"))
    assert [(o.instance_type, o.price, o.vcpus) for o in tpu] == [("TPU-VM", 9.6, None)]
    # host types whose GPUs are priced elsewhere are never offered bare
    assert cat.offers(OfferQuery(instance_type="a2-highgpu-8g")) == []


def test_aliases_case_insensitive() -> None:
    cat = load_catalog()
    assert cat.canonical_accelerator("a100-80gb") == "A100-80GB"
    assert cat.canonical_accelerator("h100") == "H100"
    assert cat.canonical_accelerator("l40s") == "L40S"
    assert cat.canonical_accelerator("TPU-V5E-8") == "tpu-v5litepod-8"
    assert cat.canonical_accelerator("mi300x") == "MI300X"
    assert cat.canonical_accelerator("gaudi") == "Gaudi HL-205"
    assert cat.canonical_accelerator("nonesuch") is None


def test_bad_catalogs_raise_catalog_error(tmp_path: Path) -> None:
    (tmp_path / "aws").mkdir()
    (tmp_path / "aws" / "vms.csv").write_text("Foo,Bar\n1,2\n")
    with pytest.raises(CatalogError, match="missing column"):
        load_catalog(tmp_path).offers(OfferQuery())
    (tmp_path / "aws" / "vms.csv").write_text(
        (SMALL_CATALOG / "aws" / "vms.csv").read_text().replace("0.192,0.080000", "cheap,0.08"))
    with pytest.raises(CatalogError, match=r"vms.csv:2: bad number"):
        load_catalog(tmp_path).offers(OfferQuery())
    with pytest.raises(CatalogError, match="no such catalog directory"):
        load_catalog(tmp_path / "missing")


def test_compact_form_is_deterministic(tmp_path: Path) -> None:
    data = {c: parse_vms_text(c, (SMALL_CATALOG / c / "vms.csv").read_text(), c)
            for c in ("aws", "azure", "gcp")}
    write_compact(tmp_path / "a", data, "src", "2026-01-01")
    write_compact(tmp_path / "b", data, "src", "2026-01-01")
    for c in data:
        assert (tmp_path / "a" / f"{c}.json.gz").read_bytes() == \
            (tmp_path / "b" / f"{c}.json.gz").read_bytes()
    raw = load_catalog(SMALL_CATALOG)
    compact = load_catalog(tmp_path / "a")
    assert compact.source.source == "src" and compact.source.date == "2026-01-01"
    q = OfferQuery(any_accelerator=True)
    assert sorted(map(repr, raw.offers(q))) == sorted(map(repr, compact.offers(q)))


@pytest.mark.skipif(not REF.is_dir(), reason="the reference snapshots are not on this machine")
@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_bundled_snapshot_keeps_every_row(cloud: str) -> None:
    with gzip.open(BUNDLED_DIR / f"{cloud}.json.gz") as fh:
        table = CloudTable.from_data(json.loads(fh.read()))
    with (REF / cloud / "vms.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    zone_col = "AvailabilityZone" if cloud != "azure" else None
    want = {(r["InstanceType"] or r["AcceleratorName"], r["AcceleratorCount"] if not
             r["InstanceType"] else "", r["Region"], (r[zone_col] or None) if zone_col else None)
            for r in rows}
    have = {(t.name, "", row[0], row[1]) for t in table.types for row in t.rows}
    have |= {(a.name, f"{a.count:g}" if cloud != "gcp" else str(a.count), row[0], row[1])
             for a in table.accelerators for row in a.rows}
    assert len(have) == len(want)
    assert {w[2] for w in want} == {h[2] for h in have}


def test_bundled_meta_records_source_and_date() -> None:
    meta = json.loads((BUNDLED_DIR / "meta.json").read_text())
    assert meta["clouds"] == ["aws", "azure", "gcp"]
    assert meta["date"] == "2026-11-29"
    total = sum(p.stat().st_size for p in BUNDLED_DIR.iterdir())
    assert total < 3 * 1024 * 1024
