"""Kubernetes resource quantities (``7910m``, ``30310052Ki``, ``64G``) as numbers."""

from __future__ import annotations

import re

_SUFFIX: dict[str, float] = {
    "": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([KMGTPE]i|[mkMGTPE])?$")


def parse_quantity(value: str | float | int | None) -> float | None:
    """The quantity's value in base units (cores, bytes, devices); None if unreadable."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY.match(value.strip())
    if m is None:
        return None
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


def gib(value: str | float | int | None) -> float | None:
    """A memory quantity in GiB, rounded to 0.1."""
    amount = parse_quantity(value)
    return None if amount is None else round(amount / 2**30, 1)
