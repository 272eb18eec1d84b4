"""AWS machine images: SkyPilot's image table (``data/aws_images.csv``) or the user's own."""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources

from skyc.errors import ConfigError, UnsupportedFeature
from skyc.optimizer.plan import Placement
from skyc.task.candidate import ResourceCandidate

# Instance families whose accelerators are AWS Neuron devices (Trainium, Inferentia).
_NEURON_PREFIXES = ("trn", "inf")
# Graviton families (arm64) when the placement does not say the arch: a "g" after
# the generation digit, e.g. m7g, c6gn, g5g, r8g.
_ARM_SUFFIXES = ("g", "gd", "gn", "ge")


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], str]:
    text = resources.files("skyc.compiler").joinpath("data/aws_images.csv").read_text()
    table: dict[tuple[str, str], str] = {}
    for row in csv.DictReader(text.splitlines()):
        if row["ImageId"]:
            table[(row["Tag"], row["Region"])] = row["ImageId"]
    return table


def is_arm(placement: Placement) -> bool:
    if placement.arch:
        return placement.arch.lower() in ("arm64", "aarch64")
    family = (placement.instance_type or "").split(".")[0]
    digits = [i for i, ch in enumerate(family) if ch.isdigit()]
    return bool(digits) and family[digits[0] + 1 :] in _ARM_SUFFIXES


def image_tag(placement: Placement) -> str:
    """Which image of the table fits: Neuron, NVIDIA GPU or CPU; arm64 variants."""
    family = (placement.instance_type or "").split(".")[0]
    if family.startswith(_NEURON_PREFIXES):
        return "skypilot:neuron-ubuntu-2204"
    kind = "gpu" if placement.accelerators else "cpu"
    suffix = "-arm64" if is_arm(placement) else ""
    return f"skypilot:custom-{kind}-ubuntu{suffix}"


def choose_image(placement: Placement, candidate: ResourceCandidate) -> str:
    """The AMI id for the placement's region."""
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
        return image
    tag = image_tag(placement)
    found = _table().get((tag, region))
    if found is None:
        raise UnsupportedFeature(
            f"no {tag} image known for aws region {region}",
            hint="set image_id to an AMI id for this region",
        )
    return found
