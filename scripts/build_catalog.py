"""Build the bundled catalog snapshot (skyc/catalog/data/) from SkyPilot-format CSVs.

    python scripts/build_catalog.py [SOURCE_DIR] [--date YYYY-MM-DD]

SOURCE_DIR is laid out as ``<cloud>/vms.csv`` (default: shared/catalog-ref next to
the repository).
Every region and zone is kept; only the columns skyc uses are stored.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skyc.catalog.csvformat import parse_vms_text
from skyc.catalog.store import BUNDLED_DIR, raw_clouds, write_compact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_source = Path(__file__).resolve().parents[2] / "shared" / "catalog-ref"
    parser.add_argument("source", nargs="?", default=str(default_source))
    parser.add_argument("--date", default="2026-11-29", help="snapshot date (ISO 8601)")
    parser.add_argument("--label", default=None, help="source label stored in meta.json")
    parser.add_argument("--out", type=Path, default=BUNDLED_DIR)
    args = parser.parse_args()
    src = Path(args.source)
    tables = {}
    for cloud in raw_clouds(src):
        path = src / cloud / "vms.csv"
        tables[cloud] = parse_vms_text(cloud, path.read_text(encoding="utf-8"), str(path))
    label = args.label or "SkyPilot catalog v8 (skypilot-catalog; anycloud-sh/catalog 2026-05-20)"
    write_compact(args.out, tables, label, args.date)
    for cloud in sorted(tables):
        size = (args.out / f"{cloud}.json.gz").stat().st_size
        print(f"{cloud}: {len(tables[cloud]['types'])} types, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
