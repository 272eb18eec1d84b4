"""Each cloud's default CPU families: where a CPU-only task that names no instance
type is placed, as SkyPilot places it.

The families are catalog data (``data/cpu_families.csv``: cloud, family, GiB of
memory per vCPU, role), as is the pattern that reads a type's family from its name
(``data/family_patterns.csv``):
AWS ``m6i.2xlarge`` is ``m6i``, GCP ``n2-standard-8`` is ``n2-standard``, Azure
``Standard_D8s_v5`` is ``Ds_v5`` (``Standard_E8-4s_v5``, a constrained-vCPU size, and
``Standard_D8as_v5``, another family, are not default). Such a task gets at least
:data:`DEFAULT_CPUS` vCPUs when it gives neither cpus nor memory, and at least
:data:`MEMORY_PER_VCPU` GiB of memory per vCPU when it gives no memory.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

DEFAULT_CPUS = (8.0, True)  # SkyPilot's default: 8 or more vCPUs
MEMORY_PER_VCPU = 4.0  # SkyPilot's default memory ratio ("4x")



@cache
def _family_patterns() -> dict[str, re.Pattern[str]]:
    """cloud -> the pattern whose groups spell a type's family (``family_patterns.csv``)."""
    path = Path(__file__).parent / "data" / "family_patterns.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    if header != "cloud,pattern":
        raise ValueError(f"{path}: expected the header 'cloud,pattern'")
    return {cloud: re.compile(pattern)
            for cloud, pattern in (line.split(",", 1) for line in rows if line)}


@cache
def default_families() -> dict[str, frozenset[str]]:
    """cloud -> its default CPU families, from the bundled ``cpu_families.csv``."""
    path = Path(__file__).parent / "data" / "cpu_families.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    columns = header.split(",")
    cloud_at, family_at = columns.index("cloud"), columns.index("family")
    out: dict[str, set[str]] = {}
    for line in rows:
        cells = line.split(",")  # plain cells: no quotes, no commas inside
        out.setdefault(cells[cloud_at], set()).add(cells[family_at])
    return {cloud: frozenset(names) for cloud, names in out.items()}


def family(cloud: str, instance_type: str) -> str | None:
    """The family of ``instance_type`` as the default families name it; None when its
    name does not read as one of ``cloud``'s families."""
    pattern = _family_patterns().get(cloud)
    found = pattern.match(instance_type) if pattern else None
    return None if found is None else "".join(found.groups())


def is_default(cloud: str, instance_type: str) -> bool:
    """Whether ``instance_type`` is of one of ``cloud``'s default CPU families."""
    return family(cloud, instance_type) in default_families().get(cloud, frozenset())
