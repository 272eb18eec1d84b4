"""GCP images by accelerator vendor and TPU runtime versions by generation."""

from __future__ import annotations

from typing import Any

import pytest

from skyc.catalog import load_catalog
from skyc.compiler.gcp.images import choose_image, image_kind, runtime_version, tpu_generation
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.task.candidate import ResourceCandidate

DLVM = "projects/deeplearning-platform-release/global/images/family/common-cu124-ubuntu-2204-py310"
UBUNTU = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"


def _p(instance_type: str, accelerators: dict[str, float] | None = None,
       **kw: Any) -> Placement:
    return Placement(cloud="gcp", region="us-central1", zone="us-central1-a",
                     instance_type=instance_type, accelerators=accelerators, hourly_cost=1.0, **kw)


def _c(**kw: Any) -> ResourceCandidate:
    return ResourceCandidate.model_validate({"index": 0, **kw})


@pytest.mark.parametrize(("placement", "image"), [
    (_p("a2-highgpu-8g", {"A100": 8}), DLVM),
    (_p("n1-highmem-4", {"T4": 1}), DLVM),
    (_p("g2-standard-4", {"L4": 1}), DLVM),
    (_p("n2-standard-8"), UBUNTU),
    (_p("t2a-standard-4"), UBUNTU + "-arm64"),
    (_p("c4a-standard-8", arch="arm64"), UBUNTU + "-arm64"),
])
def test_default_image_by_accelerator_vendor(placement: Placement, image: str) -> None:
    assert choose_image(placement, _c()) == image


def test_task_image_wins_and_is_checked() -> None:
    gpu = _p("a2-highgpu-8g", {"A100": 8})
    mine = "projects/my-project-1/global/images/my-image"
    assert choose_image(gpu, _c(image_id=mine)) == mine
    family = "my-project-1/family/train"
    assert choose_image(gpu, _c(image_id=family)) == family
    url = "https://www.googleapis.com/compute/v1/projects/p-1234/global/images/img-1"
    assert choose_image(gpu, _c(image_id=url)) == url
    assert choose_image(gpu, _c(image_id={"us-central1": mine, "europe-west4": "x"})) == mine
    with pytest.raises(ConfigError, match="no image given for region us-central1"):
        choose_image(gpu, _c(image_id={"europe-west4": mine}))
    with pytest.raises(ConfigError, match="is an AWS AMI"):
        choose_image(gpu, _c(image_id="ami-0abcdef"))
    with pytest.raises(ConfigError, match="is not a GCP image"):
        choose_image(gpu, _c(image_id="Not An Image!"))
    with pytest.raises(UnsupportedFeature, match="container images"):
        choose_image(gpu, _c(image_id="docker:nvcr.io/nvidia/pytorch:24.01-py3"))


@pytest.mark.parametrize(("tpu", "version"), [
    ("tpu-v2-8", "tpu-vm-base"),
    ("tpu-v3-32", "tpu-vm-base"),
    ("tpu-v4-8", "tpu-ubuntu2204-base"),
    ("tpu-v4-32", "tpu-ubuntu2204-base"),
    ("tpu-v5litepod-16", "v2-alpha-tpuv5-lite"),
    ("tpu-v5p-8", "v2-alpha-tpuv5"),
    ("tpu-v6e-8", "v2-alpha-tpuv6e"),
])
def test_tpu_runtime_default_per_generation(tpu: str, version: str) -> None:
    placement = _p("TPU-VM", {tpu: 1})
    assert image_kind(placement) == "tpu"
    assert runtime_version(placement, _c()) == version
    given = _c(accelerator_args={"runtime_version": "v2-alpha-tpuv6e"})
    assert runtime_version(placement, given) == "v2-alpha-tpuv6e"


def test_every_bundled_tpu_has_a_default_runtime() -> None:
    table = load_catalog().table("gcp")
    assert table is not None
    tpus = sorted({a.name for a in table.accelerators if a.name.startswith("tpu-")})
    assert tpus
    for tpu in tpus:
        assert runtime_version(_p("TPU-VM", {tpu: 1}), _c())


def test_tpu_refusals_name_the_field() -> None:
    tpu = _p("TPU-VM", {"tpu-v4-8": 1})
    with pytest.raises(UnsupportedFeature, match="image_id: TPU VMs boot a TPU runtime"):
        choose_image(tpu, _c(image_id="projects/p-1234/global/images/x"))
    with pytest.raises(ConfigError, match=r"accelerator_args\.runtime_version"):
        runtime_version(tpu, _c(accelerator_args={"runtime_version": "bad version!"}))
    with pytest.raises(UnsupportedFeature, match="no TPU"):
        runtime_version(_p("n2-standard-8"), _c())
    with pytest.raises(UnsupportedFeature, match="not a TPU slice"):
        tpu_generation("tpu-x9")
