"""``update_catalog``: a directory or a file:// URL into $SKYC_HOME/catalog/, which then wins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skyc.catalog import OfferQuery, load_catalog, update_catalog
from skyc.errors import CatalogError
from tests.optimizer.helpers import SMALL_CATALOG


def test_update_from_directory_takes_precedence(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    before = load_catalog()
    assert before.source.source == "bundled"
    clouds = update_catalog(str(SMALL_CATALOG), tmp_path / "home" / "catalog", today="2026-02-03")
    assert clouds == ["aws", "azure", "gcp"]
    after = load_catalog()
    assert after.source.source == str(SMALL_CATALOG) and after.source.date == "2026-02-03"
    h100 = after.offers(OfferQuery(cloud="aws", accelerator="H100"))
    assert sorted(o.price for o in h100 if o.price) == [90.0, 98.32]


def test_update_from_file_url_partial(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SMALL_CATALOG / "gcp", src / "gcp")  # only gcp: others are skipped
    dest = tmp_path / "out"
    assert update_catalog(src.as_uri(), dest, today="2026-02-03") == ["gcp"]
    cat = load_catalog(dest)
    assert cat.clouds == ["gcp"] and cat.source.source == src.as_uri()
    assert cat.offers(OfferQuery(accelerator="T4", accelerator_count=1))


def test_update_from_empty_source_fails(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"no <cloud>/vms\.csv"):
        update_catalog(tmp_path.as_uri(), tmp_path / "out")
    with pytest.raises(CatalogError, match=r"no such catalog directory"):
        update_catalog(str(tmp_path / "nope"), tmp_path / "out")
