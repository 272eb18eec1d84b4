"""Azure images by accelerator vendor, the image_id forms, and the size facts table."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import pytest

from skyc.compiler.azure.images import Extension, Image, choose_image, parse_image_id
from skyc.compiler.azure.sizes import accelerated_networking, is_infiniband, size_facts
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.task.candidate import ResourceCandidate

HPC = "microsoft-dsvm:ubuntu-hpc:2204:latest"
ROCM = "microsoft-dsvm:ubuntu-hpc:2204-rocm:latest"
UBUNTU = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"
SUB = "11111111-2222-3333-4444-555555555555"


def _c(image_id: str | dict[str, str] | None = None) -> ResourceCandidate:
    return ResourceCandidate(index=0, image_id=image_id)


def _p(size: str, accelerators: dict[str, float] | None = None) -> Placement:
    return Placement(cloud="azure", region="eastus2", instance_type=size,
                     accelerators=accelerators, hourly_cost=1.0)


@pytest.mark.parametrize(("size", "accelerators", "urn"), [
    ("Standard_ND96isr_MI300X_v5", {"MI300X": 8}, ROCM),
    ("Standard_ND96amsr_A100_v4", {"A100-80GB": 8}, HPC),
    ("Standard_ND96isr_H100_v5", {"H100": 8}, HPC),
    ("Standard_ND96isr_H200_v5", {"H200": 8}, HPC),
    ("Standard_NC4as_T4_v3", {"T4": 1}, HPC),
    ("Standard_NC24ads_A100_v4", {"A100-80GB": 1}, HPC),
    ("Standard_D4s_v5", None, UBUNTU),
])
def test_image_by_vendor(size: str, accelerators: dict[str, float] | None, urn: str) -> None:
    image = choose_image(_p(size, accelerators), _c())
    assert image.kind == "marketplace" and image.urn == urn
    # The HPC images are not Trusted Launch images.
    assert image.security_type == ("TrustedLaunch" if urn == UBUNTU else "Standard")
    assert image.extension is None


@pytest.mark.parametrize("size", ["Standard_NV36ads_A10_v5", "Standard_NV6ads_A10_v5",
                                  "Standard_NC8ads_A10_v4"])
def test_every_a10_size_gets_the_grid_driver(size: str) -> None:
    """The partitioned A10 sizes take NVIDIA's GRID driver, not the HPC image's data
    center driver: Ubuntu without Secure Boot plus Azure's NVIDIA GPU Driver Extension."""
    image = choose_image(_p(size, {"A10": 1}), _c())
    assert image.urn != HPC and image.urn == UBUNTU
    assert image.security_type == "Standard"
    assert image.extension == Extension("Microsoft.HpcCompute", "NvidiaGpuDriverLinux", "1.6")


def test_sizes_without_a_known_image_ask_for_image_id() -> None:
    with pytest.raises(UnsupportedFeature) as info:
        choose_image(_p("Basic_A1"), _c())
    assert "image_id" in (info.value.hint or "")
    # ... and take one when it is given.
    image = choose_image(_p("Basic_A1"), _c("Canonical:ubuntu-24_04-lts:server:latest"))
    assert image.urn == "Canonical:ubuntu-24_04-lts:server:latest"


@pytest.mark.parametrize(("size", "urn", "security"), [
    ("Standard_D4ps_v5", "Canonical:ubuntu-24_04-lts:server-arm64:latest", "Standard"),
    ("Standard_A2_v2", "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest", "Standard"),
    ("Standard_D4_v3", "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest", "Standard"),
    ("Standard_D11_v2_Promo", "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest",
     "Standard"),
    ("Standard_F8", "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest", "Standard"),
    ("Standard_D4s_v3", UBUNTU, "TrustedLaunch"),
    ("Standard_D4_v5", UBUNTU, "TrustedLaunch"),
    ("Standard_HB120-32rs_v3", HPC, "Standard"),
    ("Standard_E16-4ads_v5", UBUNTU, "TrustedLaunch"),
])
def test_every_family_has_an_image(size: str, urn: str, security: str) -> None:
    """arm64 sizes boot arm64, the older sizes without premium storage a Gen1 image,
    HPC sizes the HPC image, the rest a plain Ubuntu."""
    image = choose_image(_p(size), _c())
    assert (image.urn, image.security_type) == (urn, security)


@pytest.mark.parametrize(("size", "needs"), [
    ("Standard_ND128isr_NDR_GB200_v6", "GB200 needs the NVIDIA driver 570 or later"),
    ("Standard_NCC40ads_H100_v5", "H100 needs the NVIDIA driver 525 or later"),
    ("Standard_NV16as_v4", "MI25 needs the AMD ROCm driver, which no image skyc knows carries"),
    ("Standard_NG8ads_V620_v1", "V620 needs the AMD ROCm driver 5.0 or later"),
])
def test_sizes_whose_image_has_no_driver_for_them_are_refused(size: str, needs: str) -> None:
    """The images of these sizes carry no driver (arm64 Grace hosts, confidential VMs,
    Radeon partitions): refused with what the accelerator needs, and image_id as the way
    out; an image the task gives is taken as it is."""
    with pytest.raises(UnsupportedFeature) as info:
        choose_image(_p(size), _c())
    assert needs in info.value.message and "no accelerator driver" in info.value.message
    assert "image_id" in (info.value.hint or "")
    own = "Canonical:ubuntu-24_04-lts:server-arm64:latest"
    assert choose_image(_p(size), _c(own)).urn == own


@pytest.mark.parametrize("urn", [
    "Canonical:ubuntu-24_04-lts:server:latest",
    "microsoft-dsvm:ubuntu-hpc:2204-rocm:22.04.2025030701",
])
def test_marketplace_urn_overrides(urn: str) -> None:
    image = choose_image(_p("Standard_ND96isr_MI300X_v5"), _c(urn))
    assert image.urn == urn and image.security_type is None
    publisher, offer, sku, version = urn.split(":")
    assert (image.publisher, image.offer, image.sku, image.version) == (
        publisher, offer, sku, version)


@pytest.mark.parametrize("rid", [
    f"/subscriptions/{SUB}/resourceGroups/images-rg/providers/Microsoft.Compute/images/rocm-6.2",
    f"/subscriptions/{SUB}/resourceGroups/images-rg/providers/Microsoft.Compute/galleries/"
    "ml_gallery/images/ubuntu-rocm/versions/1.0.3",
    f"/subscriptions/{SUB}/resourceGroups/images-rg/providers/microsoft.compute/galleries/"
    "ml_gallery/images/ubuntu-rocm",
    "/CommunityGalleries/contoso-1a2b3c/images/ubuntu-cuda/versions/latest",
])
def test_image_resource_id_overrides(rid: str) -> None:
    image = choose_image(_p("Standard_D4s_v5"), _c(rid))
    assert image == Image("resource", resource_id=rid)
    assert image.urn is None


@pytest.mark.parametrize(("value", "words"), [
    ("ubuntu-22.04", "is not an Azure image"),
    ("Canonical:ubuntu-24_04-lts:server", "is not an Azure image"),
    ("Canonical:ubuntu 24:server:latest", "is not an Azure image"),
    ("ami-0123456789abcdef0", "is not an Azure image"),
    ("/subscriptions/not-a-guid/resourceGroups/rg/providers/Microsoft.Compute/images/x",
     "is not an image resource id"),
    (f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Storage/accounts/x",
     "is not an image resource id"),
])
def test_bad_image_ids_name_the_field_and_the_forms(value: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_image_id(value)
    assert str(info.value).startswith("image_id: ") and words in str(info.value)
    assert info.value.hint


def test_container_images_are_refused_as_unsupported() -> None:
    with pytest.raises(UnsupportedFeature, match="image_id: container images"):
        parse_image_id("docker:rocm/pytorch:latest")


def test_image_per_region() -> None:
    cand = _c({"eastus2": ROCM, "westus3": HPC})
    assert choose_image(_p("Standard_ND96isr_MI300X_v5"), cand).urn == ROCM
    with pytest.raises(ConfigError, match="no image given for region eastus2"):
        choose_image(_p("Standard_D4s_v5"), _c({"westus3": HPC}))
    with pytest.raises(ConfigError, match=r"^image_id\.eastus2: "):
        choose_image(_p("Standard_D4s_v5"), _c({"eastus2": "bad"}))


@pytest.mark.parametrize(("size", "infiniband"), [
    ("Standard_ND96isr_MI300X_v5", True),
    ("Standard_ND96is_MI300X_v5", False),
    ("Standard_ND96amsr_A100_v4", True),
    ("Standard_ND96asr_v4", True),
    ("Standard_ND96isr_H100_v5", True),
    ("Standard_ND96isr_H200_v5", True),
    ("Standard_NC96ads_A100_v4", False),
    ("Standard_NC4as_T4_v3", False),
    ("Standard_D96s_v5", False),
])
def test_infiniband_sizes(size: str, infiniband: bool) -> None:
    assert is_infiniband(size) is infiniband


@pytest.mark.parametrize(("size", "accelerated"), [
    ("Standard_ND96isr_MI300X_v5", True),
    ("Standard_NC4as_T4_v3", True),
    ("Standard_D4s_v5", True),
    ("Standard_A2_v2", False),
    ("Standard_B2s", False),
    ("Standard_D2s_v3", False),   # fewer than four vCPUs
    ("Standard_DS1_v2", False),
])
def test_accelerated_networking(size: str, accelerated: bool) -> None:
    assert accelerated_networking(size) is accelerated


def test_vendor_and_accelerator_of_the_gpu_families() -> None:
    mi300x = size_facts("Standard_ND96isr_MI300X_v5")
    assert (mi300x.vendor, mi300x.accelerator, mi300x.image_kind) == ("amd", "MI300X", "amd")
    assert size_facts("Standard_D4s_v5").vendor is None


def test_every_bundled_azure_gpu_size_has_facts_that_agree_with_the_catalog() -> None:
    # The catalog names an accelerator for these sizes; the table must know the
    # same family (so an image is chosen by the right vendor) and mark it a GPU.
    path = resources.files("skyc.catalog").joinpath("data/azure.json.gz")
    types = json.loads(gzip.decompress(path.read_bytes()))["types"]
    gpu_sizes = {row[0]: row[1] for row in types if row[1]}
    assert "Standard_ND96isr_MI300X_v5" in gpu_sizes
    for size, accelerator in sorted(gpu_sizes.items()):
        facts = size_facts(size)
        assert facts.vendor is not None, size
        assert facts.accelerator is not None and accelerator.startswith(
            facts.accelerator.split("-")[0]), (size, accelerator, facts)
