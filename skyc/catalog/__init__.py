"""Price catalogs: offers (instance, accelerators, vCPUs, memory, prices, place).

Reads SkyPilot's catalog CSV format; ships a compact snapshot of it
(``skyc/catalog/data/``, built by ``scripts/build_catalog.py``).
"""

from __future__ import annotations

from skyc.catalog.catalog import Catalog, load_catalog
from skyc.catalog.offer import Offer, OfferQuery
from skyc.catalog.pseudo import local_offers, ssh_offers
from skyc.catalog.store import update_catalog

__all__ = [
    "Catalog",
    "Offer",
    "OfferQuery",
    "load_catalog",
    "local_offers",
    "ssh_offers",
    "update_catalog",
]
