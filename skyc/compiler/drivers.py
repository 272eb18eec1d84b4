"""Which driver an accelerator needs, and whether an image's driver has it.

``data/accelerator_drivers.csv`` holds, per accelerator (the catalog's names), its
vendor and the oldest driver that supports it: an NVIDIA driver branch (B200 and
GB200 need 570 or later, B300 580, H200 550, H100/L4/L40S 525, A100 450, ...), a
ROCm release for AMD Instinct/Radeon GPUs (MI300X 6.0), the Neuron SDK major for
AWS Trainium/Inferentia. An empty minimum means no image skyc knows carries a
driver for it (its note says why).

Each target's image table names the driver its images carry, written
``vendor:version`` (``nvidia:570``, ``amd:6.0``, ``neuron:2``) or ``none``. A
target picks, per accelerator, the first image of its table whose driver
supports it, and refuses the placement with :func:`refusal` when none does.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

NONE = "none"
# How messages name each vendor's driver.
VENDORS = {"nvidia": "NVIDIA", "amd": "AMD ROCm", "neuron": "AWS Neuron", "habana": "Habana"}


def _named(vendor: str) -> str:
    return VENDORS.get(vendor, vendor)


@dataclass(frozen=True)
class Driver:
    """A driver an image carries: its vendor and version (``nvidia`` 570 -> (570,))."""

    vendor: str | None
    version: tuple[int, ...] = ()

    def __str__(self) -> str:
        if self.vendor is None:
            return "no accelerator driver"
        return f"{_named(self.vendor)} {'.'.join(str(p) for p in self.version)}".strip()


NO_DRIVER = Driver(None)


@dataclass(frozen=True)
class Requirement:
    """What an accelerator needs: its vendor's driver at ``minimum`` or later (None:
    no image carries one), and why."""

    accelerator: str
    vendor: str
    minimum: tuple[int, ...] | None
    notes: str

    @property
    def wanted(self) -> str:
        name = _named(self.vendor)
        if self.minimum is None:
            return f"the {name} driver, which no image skyc knows carries ({self.notes})"
        return f"the {name} driver {'.'.join(str(p) for p in self.minimum)} or later"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split("."))


def parse(text: str) -> Driver:
    """``nvidia:570`` -> Driver("nvidia", (570,)); ``none`` -> no driver."""
    text = text.strip()
    if not text or text == NONE:
        return Driver(None)
    vendor, _, version = text.partition(":")
    return Driver(vendor.strip(), _version(version) if version else ())


@lru_cache(maxsize=1)
def _table() -> dict[str, Requirement]:
    text = resources.files("skyc.compiler").joinpath("data/accelerator_drivers.csv").read_text()
    table = {}
    for row in csv.DictReader(text.splitlines()):
        minimum = _version(row["MinDriver"]) if row["MinDriver"].strip() else None
        table[row["Accelerator"].lower()] = Requirement(
            row["Accelerator"], row["Vendor"], minimum, row["Notes"])
    return table


def known() -> list[str]:
    """Every accelerator the table names."""
    return [r.accelerator for r in _table().values()]


def requirement(accelerator: str) -> Requirement | None:
    """What ``accelerator`` needs; None for one with no driver of its own (TPU slices)
    or one the table does not name."""
    return _table().get(accelerator.lower())


def supports(driver: Driver, accelerator: str) -> bool:
    """Whether ``driver`` runs ``accelerator`` (always, for one that needs no driver)."""
    need = requirement(accelerator)
    if need is None:
        return True
    return (need.minimum is not None and driver.vendor == need.vendor
            and driver.version >= need.minimum)


def vendor(accelerator: str) -> str | None:
    need = requirement(accelerator)
    return need.vendor if need else None


def refusal(accelerator: str, where: str, carried: list[Driver]) -> str:
    """Why no image of ``where`` runs ``accelerator``: what it needs, what they carry."""
    need = requirement(accelerator)
    wanted = need.wanted if need else "a driver"
    have = ", ".join(sorted({str(d) for d in carried})) or "none"
    return (f"accelerators: {accelerator} needs {wanted}; the images skyc knows for "
            f"{where} carry {have}")
