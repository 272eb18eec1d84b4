"""Where catalogs live: the bundled snapshot, ``$SKYC_HOME/catalog/`` and raw CSV dirs.

Compact form: ``<cloud>.json.gz`` (``CloudTable.to_data()``, sorted keys, gzip
mtime 0, so a rebuild from the same input is byte-identical) plus ``meta.json``
(``{"source": ..., "date": ..., "clouds": [...]}``). A raw directory has
SkyPilot's layout, ``<cloud>/vms.csv``. Each compact file read is kept decoded under
``$SKYC_HOME/cache/catalog/`` (derived data: safe to delete).
"""

from __future__ import annotations

import datetime as _dt
import json
import zlib
from pathlib import Path
from typing import Any

from skyc.catalog.csvformat import read_vms_csv
from skyc.catalog.table import CloudTable
from skyc.errors import CatalogError, SkycError
from skyc.task.documents import load_json, parse_json
from skyc.task.inputs import CATALOG
from skyc.task.reading import decode, read_bytes

BUNDLED_DIR = Path(__file__).parent / "data"
# A decoded catalog's cache holds its file's path, size, change time and Python version
CacheKey = tuple[str, int, int, int, int]


def bundled_clouds() -> tuple[str, ...]:
    """The clouds the bundled snapshot has a price catalog of (``data/<cloud>.json.gz``)."""
    return tuple(sorted(p.name.removesuffix(".json.gz")
                        for p in BUNDLED_DIR.glob("*.json.gz")))


def write_compact(dest: Path, tables: dict[str, dict[str, Any]], source: str, date: str) -> None:
    import gzip

    dest.mkdir(parents=True, exist_ok=True)
    for cloud, data in sorted(tables.items()):
        packed = CloudTable.from_data(data).to_data()
        raw = json.dumps(packed, sort_keys=True, separators=(",", ":")).encode()
        tmp = dest / f".{cloud}.json.gz.tmp"
        with tmp.open("wb") as fh, gzip.GzipFile(
            filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9
        ) as gz:
            gz.write(raw)
        tmp.replace(dest / f"{cloud}.json.gz")
    meta = {"clouds": sorted(tables), "date": date, "source": source}
    (dest / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def read_meta(directory: Path) -> dict[str, Any] | None:
    """A catalog directory's ``meta.json`` (None when there is none)."""
    path = directory / "meta.json"
    if not (path.exists() or path.is_symlink()):
        return None
    meta = load_json(path, str(path), CATALOG)
    if not isinstance(meta, dict):
        raise CatalogError(f"{path}: catalog metadata is not a JSON object")
    return meta


def _gunzip(raw: bytes, shown: str) -> bytes:
    """A gzip file's content, of at most the catalog cap (a small file may inflate to
    gigabytes: inflating stops one byte past the cap)."""
    inflate = zlib.decompressobj(31)  # wbits 31: the gzip container
    try:
        data = inflate.decompress(raw, CATALOG.max_bytes + 1)
    except zlib.error as exc:
        raise CATALOG.fail(shown, f"not a gzip file ({exc})") from None
    if len(data) > CATALOG.max_bytes:
        raise CATALOG.fail(shown, f"inflates to more than {CATALOG.cap_text}; a catalog "
                                  f"file holds at most {CATALOG.cap_text}")
    if not inflate.eof:
        raise CATALOG.fail(shown, "not a whole gzip file (it ends too soon)")
    return data


def read_compact(path: Path) -> dict[str, Any]:
    """A compact catalog file's data; from its cache when the file has not changed."""
    shown = str(path)
    raw = read_bytes(path, shown, CATALOG)
    try:
        info = path.stat()
    except OSError as exc:
        raise CatalogError(f"{path}: unreadable catalog: {exc}",
                           hint="run 'skyc catalog update --from DIR' again") from None
    cache, key = _cache_path(path, info.st_size, info.st_mtime_ns)
    cached = _read_cache(cache, key)
    if cached is not None:
        return cached
    data = parse_json(_gunzip(raw, shown), shown, CATALOG)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: not a catalog")
    _write_cache(cache, key, data)
    return data


# Decompressing and parsing a cloud's catalog costs far more than loading its data kept
# in marshal's format (Azure's holds 1.6 MB of JSON; bench_catalog.py measures both).
# The cache is derived data, under $SKYC_HOME/cache, one file per catalog file, and
# holds the catalog file's path, size and change time and this Python's version
# (marshal's format is its own) beside the data: a catalog that changes, or a cache of
# another, is read again. The file's name takes a CRC of the path, not a hash: hashlib
# loads OpenSSL on every plan's path.


def _cache_path(path: Path, size: int, mtime_ns: int) -> tuple[Path, CacheKey]:
    import sys

    from skyc.settings.home import skyc_home

    where = str(path.resolve())
    key: CacheKey = (where, size, mtime_ns, sys.version_info[0], sys.version_info[1])
    name = f"{path.name.split('.')[0]}-{zlib.crc32(where.encode()):08x}"
    return skyc_home() / "cache" / "catalog" / f"{name}.marshal", key


def _read_cache(cache: Path, key: CacheKey) -> dict[str, Any] | None:
    import marshal

    try:
        stored = marshal.loads(read_bytes(cache, str(cache), CATALOG))
    except (SkycError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key):
        return None
    data = stored[1]
    return data if isinstance(data, dict) else None


def _write_cache(cache: Path, key: CacheKey, data: dict[str, Any]) -> None:
    """Best effort: a home that cannot be written to only loses the speed-up."""
    import contextlib
    import marshal
    import os

    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        stem = cache.name.split("-", 1)[0]
        for old in cache.parent.glob(f"{stem}-*-*.marshal"):
            old.unlink(missing_ok=True)  # named as earlier releases named the cache
        tmp.write_bytes(marshal.dumps((key, data)))
        tmp.replace(cache)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def raw_clouds(directory: Path) -> list[str]:
    """The clouds of a SkyPilot-layout directory (those with ``<cloud>/vms.csv``)."""
    if not directory.is_dir():
        raise CatalogError(f"{directory}: no such catalog directory",
                           hint="give a directory laid out as <cloud>/vms.csv")
    return sorted(p.parent.name for p in directory.glob("*/vms.csv"))


def _read_file_url(url: str) -> str | None:
    """A ``file:`` URL's text, read as any catalog file is (None when there is none)."""
    import urllib.parse
    import urllib.request

    path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
    if not (path.exists() or path.is_symlink()):
        return None
    return read_vms_csv(path)


def _fetch(url: str) -> str | None:
    """A URL's text, at most the catalog cap (None for a 404 or a missing file)."""
    import urllib.error
    import urllib.request

    if url.startswith("file:"):
        return _read_file_url(url)
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # an explicit URL only
            body: bytes = resp.read(CATALOG.max_bytes + 1)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise CatalogError(f"{url}: HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        raise CatalogError(f"{url}: cannot fetch: {exc.reason}") from None
    if len(body) > CATALOG.max_bytes:
        raise CATALOG.fail(url, f"is larger than {CATALOG.cap_text}; a catalog file holds "
                                f"at most {CATALOG.cap_text}")
    return decode(body, url, CATALOG)


def update_catalog(source: str, dest: Path, *, today: str | None = None) -> list[str]:
    """Convert a directory or URL in SkyPilot's layout into ``dest`` (compact form).

    Returns the clouds written. A URL (``https://...``, ``file://...``) is the
    base holding ``<cloud>/vms.csv`` for each cloud of the bundled snapshot.
    """
    from skyc.catalog.csvformat import parse_vms_text

    tables: dict[str, dict[str, Any]] = {}
    if "://" in source:
        base = source.rstrip("/")
        for cloud in bundled_clouds():
            text = _fetch(f"{base}/{cloud}/vms.csv")
            if text is not None:
                tables[cloud] = parse_vms_text(cloud, text, f"{base}/{cloud}/vms.csv")
    else:
        directory = Path(source).expanduser()
        for cloud in raw_clouds(directory):
            path = directory / cloud / "vms.csv"
            tables[cloud] = parse_vms_text(cloud, read_vms_csv(path), str(path))
    if not tables:
        raise CatalogError(f"{source}: no <cloud>/vms.csv found",
                           hint="expected SkyPilot's layout, e.g. aws/vms.csv, gcp/vms.csv")
    date = today or _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    write_compact(dest, tables, source, date)
    return sorted(tables)
