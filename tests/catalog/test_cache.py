"""The catalog's cache under $SKYC_HOME/cache: the same data as the compact file, read
again when that file changes, and never a reason for a plan to fail."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from skyc.catalog.store import BUNDLED_DIR, read_compact, write_compact


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _caches(home: Path) -> list[Path]:
    return sorted((home / "cache" / "catalog").glob("*.marshal"))


def test_the_cache_holds_what_the_file_holds(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "aws.json.gz"
    shutil.copy(BUNDLED_DIR / "aws.json.gz", path)
    first = read_compact(path)
    assert len(_caches(home)) == 1
    assert read_compact(path) == first  # from the cache
    # A catalog rewritten in place (skyc catalog update) is read again, and its old
    # cache replaced.
    changed = {**first, "types": first["types"][:3]}
    write_compact(tmp_path, {"aws": changed}, "test", "2026-12-01")
    os.utime(path, ns=(1, 1))
    again = read_compact(path)
    assert again["types"] == read_compact(path)["types"] and len(again["types"]) == 3
    assert len(_caches(home)) == 1


def test_a_broken_cache_is_read_past(home: Path) -> None:
    expected = read_compact(BUNDLED_DIR / "gcp.json.gz")
    (cache,) = _caches(home)
    cache.write_bytes(b"\x00not marshal")
    assert read_compact(BUNDLED_DIR / "gcp.json.gz") == expected
    assert cache.read_bytes() != b"\x00not marshal"  # and written again


def test_a_home_that_cannot_hold_a_cache_only_loses_speed(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "cache").write_text("a file where the cache directory would be")
    data = read_compact(BUNDLED_DIR / "aws.json.gz")
    assert data["cloud"] == "aws" and data["types"]
    assert not list(home.glob("cache/**/*.tmp"))


def test_a_cache_of_another_catalog_is_read_past(home: Path) -> None:
    """A cache file's name is a CRC of the catalog's path; the path, size, change time
    and Python version kept inside it decide whether it is used: another catalog's data
    under that name (or a stale one) is never taken for this one."""
    aws = read_compact(BUNDLED_DIR / "aws.json.gz")
    gcp = read_compact(BUNDLED_DIR / "gcp.json.gz")
    by_cloud = {c.name.split("-")[0]: c for c in _caches(home)}
    by_cloud["aws"].write_bytes(by_cloud["gcp"].read_bytes())
    assert read_compact(BUNDLED_DIR / "aws.json.gz") == aws != gcp
    assert read_compact(BUNDLED_DIR / "gcp.json.gz") == gcp


def test_a_cache_named_as_earlier_releases_named_it_is_removed(home: Path) -> None:
    old = home / "cache" / "catalog" / "aws-0123456789ab-ba9876543210.marshal"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"stale")
    read_compact(BUNDLED_DIR / "aws.json.gz")
    assert not old.exists() and len(_caches(home)) == 1
