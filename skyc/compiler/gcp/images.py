"""GCP boot images and TPU runtime versions: the tables in ``data/gcp_images.csv``
and ``data/gcp_tpu_runtimes.csv``, or the task's own.

- VMs with GPUs (all NVIDIA on GCP) boot a Deep Learning VM image family, which
  carries the NVIDIA driver and CUDA: the first of the table whose driver runs the
  GPU (:mod:`skyc.compiler.drivers`: ``common-cu124`` carries 550, B200 needs
  ``common-cu128-ubuntu-2204-nvidia-570``); VMs without accelerators boot Ubuntu
  22.04 (its arm64 build on arm machine types). Each row also says the image's
  size, below which no boot disk can be. A task's ``image_id`` (an image, an image
  family, ``project/image`` or a full URL; or one per region) wins.
- TPU VMs boot a TPU runtime version instead of an image:
  ``accelerator_args.runtime_version``, else Google's default for the TPU
  generation (v2/v3 ``tpu-vm-base``, v4 ``tpu-ubuntu2204-base``, v5e
  ``v2-alpha-tpuv5-lite``, v5p ``v2-alpha-tpuv5``, v6e ``v2-alpha-tpuv6e``).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

from skyc.compiler import drivers
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.task.candidate import ResourceCandidate

Kind = Literal["gpu", "cpu", "tpu"]

# Arm machine families on GCP (Tau T2A, Axion C4A, A4X with Grace CPUs).
_ARM_FAMILIES = ("t2a", "c4a", "a4x")
_IMAGE_REF = re.compile(
    r"^(?:https://(?:www\.)?(?:googleapis\.com|compute\.googleapis\.com)/compute/v1/)?"
    r"projects/[a-z][-a-z0-9.:]*/global/images/(?:family/)?[a-z][-a-z0-9]*$"
    r"|^(?:[a-z][-a-z0-9.:]*/)?(?:family/)?[a-z][-a-z0-9]{0,62}$"
)
_TPU_GENERATION = re.compile(r"^tpu-(v\d+(?:litepod|p|e)?)-\d+$")
_RUNTIME = re.compile(r"^[a-z0-9][-a-z0-9.]*$")
MIN_DISK_GIB = 10  # the smallest boot disk GCP takes (for an image skyc knows nothing of)


@dataclass(frozen=True)
class Image:
    """A boot image: its reference, and (for the table's) the driver it carries and
    its size."""

    ref: str
    driver: drivers.Driver = drivers.NO_DRIVER
    disk_gib: int = MIN_DISK_GIB
    from_table: bool = False


def _data(name: str) -> list[dict[str, str]]:
    text = resources.files("skyc.compiler").joinpath(f"data/{name}").read_text()
    return list(csv.DictReader(text.splitlines()))


@lru_cache(maxsize=1)
def _images() -> dict[tuple[str, str], list[Image]]:
    """(kind, arch) -> the table's images, in order of preference."""
    table: dict[tuple[str, str], list[Image]] = {}
    for row in _data("gcp_images.csv"):
        table.setdefault((row["Kind"], row["Arch"]), []).append(Image(
            row["Image"], drivers.parse(row["Driver"]), int(row["DiskGiB"]), from_table=True))
    return table


@lru_cache(maxsize=1)
def _runtimes() -> dict[str, str]:
    return {row["Generation"]: row["RuntimeVersion"] for row in _data("gcp_tpu_runtimes.csv")}


def tpu_accelerator(placement: Placement) -> str | None:
    """The TPU slice the placement asks for (``tpu-v4-8``), if it is a TPU VM."""
    return next((a for a in placement.accelerators or {} if a.lower().startswith("tpu-")), None)


def image_kind(placement: Placement) -> Kind:
    if tpu_accelerator(placement):
        return "tpu"
    return "gpu" if placement.accelerators else "cpu"


def is_arm(placement: Placement) -> bool:
    if placement.arch:
        return placement.arch.lower() in ("arm64", "aarch64")
    return (placement.instance_type or "").split("-")[0] in _ARM_FAMILIES


def tpu_generation(accelerator: str) -> str:
    """``tpu-v4-32`` -> ``v4``, ``tpu-v5litepod-16`` -> ``v5litepod``, ``tpu-v6e-8`` -> ``v6e``."""
    name = accelerator.lower()
    match = _TPU_GENERATION.match(name)
    if match is None:
        raise UnsupportedFeature(f"accelerators: {accelerator!r} is not a TPU slice skyc knows "
                                 "(tpu-v<N>[e|p|litepod]-<cores>)")
    return match.group(1)


def runtime_version(placement: Placement, candidate: ResourceCandidate) -> str:
    """The TPU VM's runtime version: the task's, else the default for its generation."""
    accelerator = tpu_accelerator(placement)
    if accelerator is None:
        raise UnsupportedFeature("a runtime version is for TPU VMs; this placement has no TPU")
    given = candidate.accelerator_args.get("runtime_version")
    if given is not None:
        if not isinstance(given, str) or not _RUNTIME.match(given):
            raise ConfigError(
                f"accelerator_args.runtime_version: {given!r} is not a TPU runtime version",
                hint="e.g. tpu-ubuntu2204-base or v2-alpha-tpuv5-lite "
                "(`gcloud compute tpus versions list --zone <zone>` lists them)")
        return given
    generation = tpu_generation(accelerator)
    found = _runtimes().get(generation)
    if found is None:
        raise UnsupportedFeature(
            f"no default runtime version for {accelerator} ({generation})",
            hint="set accelerator_args.runtime_version")
    return found


def choose_image(placement: Placement, candidate: ResourceCandidate) -> str:
    """The boot image of a GCP VM (not a TPU VM: see ``runtime_version``)."""
    return select_image(placement, candidate).ref


def select_image(placement: Placement, candidate: ResourceCandidate) -> Image:
    """The task's ``image_id`` (for the placement's region), else :func:`default_image`."""
    image = candidate.image_id
    if image_kind(placement) == "tpu":
        if image is not None:
            raise UnsupportedFeature(
                "image_id: TPU VMs boot a TPU runtime version, not an image",
                hint="remove image_id and set accelerator_args.runtime_version if the default "
                "for the TPU generation does not fit")
        raise UnsupportedFeature("TPU VMs boot a runtime version: use runtime_version()")
    region = placement.region or ""
    if isinstance(image, dict):
        if region not in image:
            raise ConfigError(
                f"image_id: no image given for region {region}",
                hint=f"add '{region}: projects/<project>/global/images/<image>' to image_id, or "
                f"restrict infra to {', '.join(sorted(image))}")
        image = image[region]
    if isinstance(image, str):
        return Image(_checked(image.strip()))
    return default_image(placement)


def default_image(placement: Placement) -> Image:
    """The table's first image for the placement's kind and arch whose driver runs its
    accelerator; UnsupportedFeature naming what it needs when none does."""
    arch = "arm64" if is_arm(placement) else "x86_64"
    kind = image_kind(placement)
    found = _images().get((kind, arch), [])
    if not found:
        raise UnsupportedFeature(f"no {kind} image known for {arch} on gcp",
                                 hint="set image_id to an image for this machine type")
    accelerator = next(iter(placement.accelerators or {}), None)
    for image in found:
        if accelerator is None or drivers.supports(image.driver, accelerator):
            return image
    raise UnsupportedFeature(
        drivers.refusal(accelerator or "", f"gcp {placement.instance_type}",
                        [i.driver for i in found]),
        hint="set image_id to an image whose driver runs it")


def _checked(image: str) -> str:
    if image.startswith("docker:"):
        raise UnsupportedFeature(
            f"image_id: container images ({image}) are not supported on gcp yet",
            hint="use a GCP image (projects/<project>/global/images/<image>) or leave "
            "image_id unset")
    if image.startswith("ami-"):
        raise ConfigError(f"image_id: {image!r} is an AWS AMI, not a GCP image",
                          hint="use projects/<project>/global/images/<image> (or .../family/<f>)")
    if not _IMAGE_REF.match(image):
        raise ConfigError(
            f"image_id: {image!r} is not a GCP image",
            hint="use projects/<project>/global/images/<image>, "
            "projects/<project>/global/images/family/<family>, <project>/<image> or a full URL")
    return image
