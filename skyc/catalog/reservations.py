"""Offers a cloud sells only from a reservation.

GCP grants on-demand A3 Ultra (H200) and A4 (B200) VMs only to a reservation (the
reservation-bound provisioning model); a plain on-demand request fails every time.
Their spot (and flex-start) capacity needs none. Such an on-demand offer is placed
only when the config names a reservation (``gcp.reservations``), and the stack then
consumes it.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path


@cache
def reservation_only() -> tuple[tuple[str, str], ...]:
    """(cloud, instance type prefix) whose on-demand capacity comes only from a
    reservation: catalog data (``data/reservation_only.csv``)."""
    path = Path(__file__).parent / "data" / "reservation_only.csv"
    with path.open(encoding="utf-8", newline="") as f:
        return tuple((row["cloud"], row["instance_type_prefix"]) for row in csv.DictReader(f))


def needs_reservation(cloud: str, instance_type: str | None, use_spot: bool) -> bool:
    """Whether this placement can only be granted from a reservation."""
    if use_spot or instance_type is None:
        return False
    return any(cloud == c and instance_type.startswith(prefix)
               for c, prefix in reservation_only())


def reservation_reason(instance_type: str) -> str:
    """Why such an offer is left out when no reservation is named, and what to do."""
    return (f"{instance_type} on-demand capacity is granted only from a reservation: "
            "name yours in the config (gcp: {reservations: [NAME]}), or use spot")


def configured_reservations(config: object | None = None) -> dict[str, list[str]]:
    """Per cloud of :func:`reservation_only`: the reservations its section of ``config``
    (a ``SkycConfig``; None: the config file) names (``gcp: {reservations: [NAME]}``)."""
    if config is None:
        from skyc.settings.config import load_config

        config = load_config()
    out: dict[str, list[str]] = {}
    for cloud in sorted({c for c, _ in reservation_only()}):
        section = getattr(config, cloud, None)
        out[cloud] = [str(n) for n in getattr(section, "reservations", None) or []]
    return out
