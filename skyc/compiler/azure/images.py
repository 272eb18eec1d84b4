"""Azure images: by accelerator vendor from ``data/azure_images.csv``, or the user's own.

NVIDIA sizes (NC, ND, NV) boot the Azure HPC/AI Ubuntu image with NVIDIA's data
center driver and CUDA, except the partitioned A10 sizes (NVadsA10 v5, NC A10 v4),
which take NVIDIA's GRID driver only: they boot Canonical's Ubuntu with Azure's
NVIDIA GPU Driver Extension, which installs the GRID driver (as SkyPilot boots a
GRID image for every A10 size). AMD ND MI300X v5 boots the ROCm variant of the HPC
image; CPU sizes boot Canonical's Ubuntu LTS. Each row names its security type
(the HPC images and unsigned driver modules need Standard: no Trusted Launch), the
driver it carries, its OS disk size and the VM extension that brings a driver.

A size whose accelerator no image's driver runs (:mod:`skyc.compiler.drivers`:
the confidential H100, GB200 on arm64 hosts, the Radeon partitions) is refused,
naming what it needs; ``image_id`` then gives an image that has it.

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

from skyc.compiler import drivers
from skyc.compiler.azure.sizes import size_facts
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
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
class Extension:
    """A VM extension the image's nodes get: ``publisher:type:version``."""

    publisher: str
    type: str
    version: str


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
    driver: drivers.Driver = drivers.NO_DRIVER
    disk_gib: int = 30                 # the OS disk size of the images skyc knows
    extension: Extension | None = None  # a VM extension that installs the driver
    from_table: bool = False           # one of data/azure_images.csv (its size is known)

    @property
    def urn(self) -> str | None:
        if self.kind != "marketplace":
            return None
        return f"{self.publisher}:{self.offer}:{self.sku}:{self.version}"


@dataclass(frozen=True)
class _Row:
    urn: str
    security_type: str
    driver: drivers.Driver
    disk_gib: int
    extension: Extension | None


def _extension(text: str) -> Extension | None:
    if not text:
        return None
    publisher, kind, version = text.split(":")
    return Extension(publisher, kind, version)


@lru_cache(maxsize=1)
def _table() -> dict[str, _Row]:
    text = resources.files("skyc.compiler").joinpath("data/azure_images.csv").read_text()
    return {r["Kind"]: _Row(r["Urn"], r["SecurityType"], drivers.parse(r["Driver"]),
                            int(r["DiskGiB"]), _extension(r["Extension"]))
            for r in csv.DictReader(text.splitlines())}


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
    """The table's image for the placement's size; UnsupportedFeature when its driver
    does not run the size's accelerator."""
    row = _table()[image_kind(placement)]
    accelerator = (next(iter(placement.accelerators or {}), None)
                   or size_facts(placement.instance_type or "").accelerator)
    if accelerator and not drivers.supports(row.driver, accelerator):
        raise UnsupportedFeature(
            drivers.refusal(accelerator, f"azure {placement.instance_type}", [row.driver]),
            hint=f"set image_id to an image whose driver runs it ({_FORMS})")
    image = parse_image_id(row.urn, field="data/azure_images.csv")
    return Image("marketplace", image.publisher, image.offer, image.sku, image.version,
                 security_type=row.security_type, driver=row.driver, disk_gib=row.disk_gib,
                 extension=row.extension, from_table=True)


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
