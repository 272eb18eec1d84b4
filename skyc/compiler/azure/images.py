"""Azure images: by accelerator vendor from ``data/azure_images.csv``, or the user's own.

NVIDIA sizes (NC, ND, NV) boot the Azure HPC/AI Ubuntu image with NVIDIA drivers
and CUDA; AMD ND MI300X v5 boots its ROCm variant; CPU sizes boot Canonical's
Ubuntu LTS. Both HPC images need security type Standard (no Trusted Launch),
which the table says per image.

``image_id`` overrides, as a marketplace URN ``publisher:offer:sku:version`` or an
image resource id (a managed image, or a gallery image definition or version,
including shared and community galleries); a mapping ``{region: image}`` picks
one per region.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

from skyc.compiler.azure.sizes import size_facts
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.optimizer.plan import Placement
from skyc.task.candidate import ResourceCandidate

_URN = re.compile(r"^([A-Za-z0-9][\w.-]*):([\w.-]+):([\w.-]+):([\w.-]+)$")
_NAME = r"[\w.()-]+"
_RESOURCE_IDS = (
    re.compile(rf"^/subscriptions/[0-9a-fA-F-]{{36}}/resourceGroups/{_NAME}/providers/"
               rf"Microsoft\.Compute/images/{_NAME}$", re.I),
    re.compile(rf"^/subscriptions/[0-9a-fA-F-]{{36}}/resourceGroups/{_NAME}/providers/"
               rf"Microsoft\.Compute/galleries/{_NAME}/images/{_NAME}(/versions/{_NAME})?$",
               re.I),
    re.compile(rf"^/(SharedGalleries|CommunityGalleries)/{_NAME}/images/{_NAME}"
               rf"(/versions/{_NAME})?$", re.I),
)
_FORMS = ("a marketplace URN publisher:offer:sku:version (e.g. "
          "Canonical:ubuntu-24_04-lts:server:latest) or an image resource id "
          "(/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Compute/images/<name>)")


@dataclass(frozen=True)
class Image:
    """One image: a marketplace URN's four parts, or a resource id."""

    kind: Literal["marketplace", "resource"]
    publisher: str | None = None
    offer: str | None = None
    sku: str | None = None
    version: str | None = None
    resource_id: str | None = None
    security_type: str | None = None   # Standard / TrustedLaunch; None: Azure's default

    @property
    def urn(self) -> str | None:
        if self.kind != "marketplace":
            return None
        return f"{self.publisher}:{self.offer}:{self.sku}:{self.version}"


@dataclass(frozen=True)
class _Row:
    urn: str
    security_type: str


@lru_cache(maxsize=1)
def _table() -> dict[str, _Row]:
    text = resources.files("skyc.compiler").joinpath("data/azure_images.csv").read_text()
    return {r["Kind"]: _Row(r["Urn"], r["SecurityType"]) for r in csv.DictReader(text.splitlines())}


def parse_image_id(text: str, *, field: str = "image_id") -> Image:
    """A user's image: a marketplace URN or an image resource id; ConfigError otherwise."""
    value = text.strip()
    if value.startswith("docker:"):
        raise UnsupportedFeature(
            f"{field}: container images ({value}) are not supported on azure yet",
            hint=f"use {_FORMS}, or leave image_id unset",
        )
    urn = _URN.match(value)
    if urn:
        publisher, offer, sku, version = urn.groups()
        return Image("marketplace", publisher, offer, sku, version)
    if value.startswith("/"):
        if any(p.match(value) for p in _RESOURCE_IDS):
            return Image("resource", resource_id=value)
        raise ConfigError(
            f"{field}: {value!r} is not an image resource id",
            hint="expected /subscriptions/<id>/resourceGroups/<group>/providers/"
            "Microsoft.Compute/images/<name> or .../galleries/<gallery>/images/<definition>"
            "[/versions/<version>]",
        )
    raise ConfigError(f"{field}: {value!r} is not an Azure image", hint=f"use {_FORMS}")


def image_kind(placement: Placement) -> str:
    """Which row of the image table the placement's size boots."""
    facts = size_facts(placement.instance_type or "")
    if facts.image_kind is None:
        raise UnsupportedFeature(
            f"no image known for azure size {placement.instance_type} ({facts.family})",
            hint=f"set image_id to {_FORMS}",
        )
    return facts.image_kind


def default_image(placement: Placement) -> Image:
    row = _table()[image_kind(placement)]
    image = parse_image_id(row.urn, field="data/azure_images.csv")
    return Image("marketplace", image.publisher, image.offer, image.sku, image.version,
                 security_type=row.security_type)


def choose_image(placement: Placement, candidate: ResourceCandidate) -> Image:
    """The image for the placement: the task's ``image_id`` if set, else the table's."""
    image = candidate.image_id
    if isinstance(image, dict):
        region = placement.region or ""
        if region not in image:
            raise ConfigError(
                f"image_id: no image given for region {region}",
                hint=f"add '{region}: <image>' to image_id, or restrict infra to "
                f"{', '.join(sorted(image))}",
            )
        return parse_image_id(image[region], field=f"image_id.{region}")
    if isinstance(image, str):
        return parse_image_id(image)
    return default_image(placement)
