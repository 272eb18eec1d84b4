"""What the lowering needs to know about an Azure VM size, from ``data/azure_sizes.csv``.

Each row of the table names a size family by a pattern over the size name
(``Standard_ND96isr_MI300X_v5``): its accelerator vendor, which image kind it
boots (``data/azure_images.csv``; empty: none skyc knows), whether its NICs
take accelerated networking, and whether it has an InfiniBand fabric (the ``r``,
RDMA, in the size name: ND A100 v4, ND H100/H200 v5, ND MI300X v5), which the
lowering keeps inside one placement. The first matching row wins; the last row
is every other (CPU) size.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class SizeFacts:
    family: str
    vendor: str | None            # nvidia, amd, xilinx; None for CPU sizes
    accelerator: str | None
    image_kind: str | None        # a Kind of data/azure_images.csv; None: no known image
    infiniband: bool
    accelerated_networking: bool


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[re.Pattern[str], SizeFacts], ...]:
    text = resources.files("skyc.compiler").joinpath("data/azure_sizes.csv").read_text()
    rows = []
    for row in csv.DictReader(text.splitlines()):
        rows.append((re.compile(row["Pattern"]), SizeFacts(
            family=row["Family"],
            vendor=row["Vendor"] or None,
            accelerator=row["Accelerator"] or None,
            image_kind=row["ImageKind"] or None,
            infiniband=row["InfiniBand"] == "true",
            accelerated_networking=row["AcceleratedNetworking"] == "true",
        )))
    return tuple(rows)


def size_facts(size: str) -> SizeFacts:
    """The facts of one VM size; every ``Standard_*`` name matches some row."""
    for pattern, facts in _table():
        if pattern.match(size):
            return facts
    return SizeFacts(family="unknown", vendor=None, accelerator=None, image_kind=None,
                     infiniband=False, accelerated_networking=False)


def is_infiniband(size: str) -> bool:
    return size_facts(size).infiniband


# Accelerated networking needs at least two vCPUs, and four on the older sizes with
# hyperthreading; Azure refuses a VM whose NIC asks for it on a size without it
# (VMSizeIsNotPermittedToEnableAcceleratedNetworking), so sizes under four vCPUs
# go without it.
MIN_ACCELERATED_VCPUS = 4
_VCPUS = re.compile(r"^Standard_[A-Z]+(\d+)")


def accelerated_networking(size: str) -> bool:
    vcpus = _VCPUS.match(size)
    return (size_facts(size).accelerated_networking and vcpus is not None
            and int(vcpus.group(1)) >= MIN_ACCELERATED_VCPUS)
