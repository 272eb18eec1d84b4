"""AWS machine images: the image table (``data/aws_images.csv``) or the user's own.

The table holds SkyPilot's images per region (CPU, NVIDIA GPU, Neuron; x86_64 and
arm64) and AWS's Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04), which
every region resolves from AWS's public SSM parameter (``resolve:ssm:...``, the
latest release). Each row says the driver its image carries, its root volume's
size and whether it has the EFA software (driver, libfabric, aws-ofi-nccl).

A placement gets, of the images for its kind of host (:func:`image_tags`), the first
whose driver runs its accelerator (:mod:`skyc.compiler.drivers`: SkyPilot's GPU
image carries 535, so B200/B300 and H200 nodes boot the DLAMI) and, for NVIDIA
nodes with EFA interfaces, the first with the EFA software; none: the placement is
refused, naming what the accelerator needs.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from skyc.compiler import drivers
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.task.candidate import ResourceCandidate

# Instance families whose accelerators are AWS Neuron devices (Trainium, Inferentia).
_NEURON_PREFIXES = ("trn", "inf")
# Graviton families (arm64) when the placement does not say the arch: a "g" after
# the generation digit, e.g. m7g, c6gn, g5g, r8g.
_ARM_SUFFIXES = ("g", "gd", "gn", "ge")
DLAMI = "aws:deep-learning-base-oss-nvidia-ubuntu-2204"
SSM_PREFIX = "resolve:ssm:"
MIN_DISK_GIB = 8  # the smallest root volume EC2 takes (for an image skyc knows nothing of)


@dataclass(frozen=True)
class Image:
    """One image a node boots: its table tag (None: the user's), the AMI id or the
    ``resolve:ssm:`` parameter EC2 resolves at launch, and what it carries."""

    ref: str
    tag: str | None = None
    driver: drivers.Driver = drivers.NO_DRIVER
    disk_gib: int = MIN_DISK_GIB
    efa: bool = False

    @property
    def resolved_at_launch(self) -> bool:
        """Whether EC2 resolves the id from an SSM parameter when the node launches."""
        return self.ref.startswith(SSM_PREFIX)


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], Image]:
    """(tag, region) -> image; region "" for an image every region resolves itself."""
    text = resources.files("skyc.compiler").joinpath("data/aws_images.csv").read_text()
    table: dict[tuple[str, str], Image] = {}
    for row in csv.DictReader(text.splitlines()):
        if row["ImageId"]:
            table[(row["Tag"], row["Region"])] = Image(
                ref=row["ImageId"], tag=row["Tag"], driver=drivers.parse(row["Driver"]),
                disk_gib=int(row["DiskGiB"]), efa=row["Efa"] == "true")
    return table


def is_arm(placement: Placement) -> bool:
    if placement.arch:
        return placement.arch.lower() in ("arm64", "aarch64")
    family = (placement.instance_type or "").split(".")[0]
    digits = [i for i, ch in enumerate(family) if ch.isdigit()]
    return bool(digits) and family[digits[0] + 1 :] in _ARM_SUFFIXES


def image_tags(placement: Placement) -> tuple[str, ...]:
    """The table's images for the placement's kind of host, preferred first."""
    family = (placement.instance_type or "").split(".")[0]
    if family.startswith(_NEURON_PREFIXES):
        return ("skypilot:neuron-ubuntu-2204",)
    if is_arm(placement):
        kind = "gpu" if placement.accelerators else "cpu"
        return (f"skypilot:custom-{kind}-ubuntu-arm64",)
    if placement.accelerators:
        return ("skypilot:custom-gpu-ubuntu", DLAMI)
    return ("skypilot:custom-cpu-ubuntu",)


def image_tag(placement: Placement) -> str:
    """The first image of the table for the placement's kind of host."""
    return image_tags(placement)[0]


def _accelerator(placement: Placement) -> str | None:
    return next(iter(placement.accelerators or {}), None)


def default_image(placement: Placement, *, efa: bool = False) -> Image:
    """The first image of :func:`image_tags` in the placement's region whose driver runs
    its accelerator (and that has the EFA software, for NVIDIA nodes with EFA)."""
    region = placement.region or ""
    accelerator = _accelerator(placement)
    needs_efa = efa and accelerator is not None and drivers.vendor(accelerator) == "nvidia"
    first, *others = image_tags(placement)
    if (first, region) not in _table():  # a region skyc knows no images of
        raise UnsupportedFeature(f"no {first} image known for aws region {region}",
                                 hint="set image_id to an AMI id for this region")
    found = [_table()[(first, region)]] + [
        image for tag in others
        if (image := _table().get((tag, region)) or _table().get((tag, ""))) is not None]
    for image in found:
        if accelerator and not drivers.supports(image.driver, accelerator):
            continue
        if needs_efa and not image.efa:
            continue
        return image
    if accelerator and not any(drivers.supports(i.driver, accelerator) for i in found):
        raise UnsupportedFeature(
            drivers.refusal(accelerator, f"aws {placement.instance_type}",
                            [i.driver for i in found]),
            hint="set image_id to an AMI whose driver runs it")
    raise UnsupportedFeature(
        f"network_tier: best attaches EFA to {placement.instance_type}, and no image skyc "
        f"knows for it there has the EFA software",
        hint="set image_id to an AMI with the EFA software, or use network_tier: standard")


def choose_image(placement: Placement, candidate: ResourceCandidate, *,
                 efa: bool = False) -> str:
    """The AMI id (or ``resolve:ssm:`` parameter) for the placement's region."""
    return select_image(placement, candidate, efa=efa).ref


def select_image(placement: Placement, candidate: ResourceCandidate, *,
                 efa: bool = False) -> Image:
    """The task's ``image_id`` (for the placement's region), else :func:`default_image`."""
    region = placement.region or ""
    image = candidate.image_id
    if isinstance(image, dict):
        if region not in image:
            raise ConfigError(
                f"image_id: no image given for region {region}",
                hint=f"add '{region}: ami-...' to image_id, or restrict infra to "
                f"{', '.join(sorted(image))}",
            )
        image = image[region]
    if isinstance(image, str):
        if image.startswith("docker:"):
            raise UnsupportedFeature(
                f"image_id: container images ({image}) are not supported on aws yet",
                hint="use an AMI id (ami-...) or leave image_id unset",
            )
        if not image.startswith("ami-"):
            raise ConfigError(f"image_id: {image!r} is not an AMI id (ami-...)")
        return Image(ref=image)
    return default_image(placement, efa=efa)
