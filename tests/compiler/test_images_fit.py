"""Images, drivers and disks fit the hardware.

Over the whole bundled catalog: every offer with an accelerator (NVIDIA, AMD, Neuron,
Habana; TPU slices need no driver of their own) maps to an image whose driver runs
it, or is refused naming what the accelerator needs. Then the emitted stacks: AWS's
Terraform JSON for B200 and EFA nodes (the Deep Learning Base OSS Nvidia Driver AMI),
the boot disk never smaller than the image, and TPU Nodes refused. No engine, cloud
or Pulumi CLI runs here: the stacks are built and read as data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skyc.catalog import OfferQuery, load_catalog
from skyc.compiler import build_stack, drivers, target_names
from skyc.compiler.aws import images as aws_images
from skyc.compiler.azure import images as azure_images
from skyc.compiler.gcp import images as gcp_images
from skyc.errors import ConfigError, UnsupportedFeature
from skyc.model.plan import Placement
from skyc.settings.config import SkycConfig
from skyc.stacks import emit
from skyc.task.candidate import ResourceCandidate

WS = Path("/nonexistent/skyc/clusters/c")
DLAMI_PARAMETER = ("resolve:ssm:/aws/service/deeplearning/ami/x86_64/"
                   "base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id")
SELECT: dict[str, Callable[[Placement, ResourceCandidate], Any]] = {
    "aws": aws_images.select_image,
    "gcp": gcp_images.select_image,
    "azure": azure_images.choose_image,
}


def _catalog_placements() -> list[Placement]:
    """One placement per (cloud, instance type) with an accelerator the bundled catalog
    sells: the first region by name that the image table has images for (on AWS), on
    demand where priced, else spot."""
    chosen: dict[tuple[str, str], Placement] = {}
    catalog = load_catalog()
    for cloud in SELECT:
        offers = catalog.offers(OfferQuery(cloud=cloud, any_accelerator=True, kind="elastic"))
        for offer in sorted(offers, key=lambda o: (o.instance_type or "", o.region)):
            if not offer.accelerator or offer.accelerator.lower().startswith("tpu-"):
                continue
            key = (cloud, offer.instance_type or "")
            spot = offer.price is None
            price = offer.hourly(spot)
            placement = Placement(
                cloud=cloud, region=offer.region, zone=offer.zone,
                instance_type=offer.instance_type, arch=offer.arch,
                accelerators={offer.accelerator: offer.accelerator_count}, use_spot=spot,
                hourly_cost=price or 0.0)
            if price is not None and (key not in chosen or not _has_images(chosen[key])):
                chosen[key] = placement if key not in chosen or _has_images(placement) \
                    else chosen[key]
    return [chosen[k] for k in sorted(chosen)]


def _has_images(placement: Placement) -> bool:
    """Whether AWS's image table has images in the placement's region (other clouds'
    images are global)."""
    tag = aws_images.image_tag(placement)
    return placement.cloud != "aws" or (tag, placement.region) in aws_images._table()


PLACEMENTS = _catalog_placements()


def _accelerator(placement: Placement) -> str:
    return next(iter(placement.accelerators or {}))


def test_the_catalog_has_every_kind_of_accelerator_skyc_places() -> None:
    names = {(p.cloud, _accelerator(p)) for p in PLACEMENTS}
    assert {("aws", "B200"), ("gcp", "B200"), ("aws", "H100"), ("gcp", "L4"),
            ("azure", "MI300X"), ("azure", "A10"), ("aws", "Trainium")} <= names
    assert len(PLACEMENTS) > 100


def test_every_accelerator_of_the_catalog_is_in_the_driver_table() -> None:
    missing = sorted({_accelerator(p) for p in PLACEMENTS
                      if drivers.requirement(_accelerator(p)) is None})
    assert not missing, f"add them to skyc/compiler/data/accelerator_drivers.csv: {missing}"


def test_every_offer_gets_an_image_whose_driver_runs_it_or_is_refused_with_the_reason(
) -> None:
    chosen: dict[tuple[str, str], Any] = {}
    refused: dict[tuple[str, str], str] = {}
    for placement in PLACEMENTS:
        accelerator = _accelerator(placement)
        key = (placement.cloud, placement.instance_type or "")
        try:
            image = SELECT[placement.cloud](placement, ResourceCandidate(index=0))
        except UnsupportedFeature as exc:
            if not _has_images(placement):  # sold only where skyc knows no AWS images
                assert "image known for aws region" in exc.message
                continue
            need = drivers.requirement(accelerator)
            assert need is not None and f"{accelerator} needs {need.wanted}" in exc.message
            assert "image_id" in (exc.hint or ""), exc
            refused[key] = exc.message
            continue
        assert drivers.supports(image.driver, accelerator), (key, image)
        chosen[key] = image
    # What the hardware needs: Blackwell 570+, H200 550+, whichever cloud.
    for key in [("aws", "p6-b200.48xlarge"), ("gcp", "a4-highgpu-8g")]:
        assert chosen[key].driver.version >= (570,), chosen[key]
    assert chosen[("aws", "p6-b200.48xlarge")].ref == DLAMI_PARAMETER
    assert chosen[("aws", "p6-b300.48xlarge")].driver.version >= (580,)
    assert chosen[("aws", "p5e.48xlarge")].driver.version >= (550,)
    assert chosen[("gcp", "a3-ultragpu-8g")].driver.version >= (550,)
    # Older GPUs keep the image they had (SkyPilot's, the cu124 Deep Learning VM).
    assert chosen[("aws", "g5.xlarge")].tag == "skypilot:custom-gpu-ubuntu"
    assert chosen[("gcp", "a2-highgpu-1g")].driver.version == (550,)
    # Refused: the accelerators no image skyc knows has a driver for, and nothing else.
    assert {k for k in refused} >= {("aws", "g4ad.xlarge"), ("aws", "dl1.24xlarge"),
                                    ("azure", "Standard_NCC40ads_H100_v5")}
    for (cloud, instance_type), reason in refused.items():
        assert f"the images skyc knows for {cloud} {instance_type} carry " in reason
        accelerator = reason.split(" needs ", 1)[0].removeprefix("accelerators: ")
        offered = _offered_drivers(cloud, instance_type)
        assert not any(drivers.supports(d, accelerator) for d in offered), reason


def _offered_drivers(cloud: str, instance_type: str) -> list[drivers.Driver]:
    """The drivers of the images a size may boot: AWS's and GCP's GPU images (every one
    is tried), the image of the size's kind on Azure."""
    if cloud == "aws":
        return [i.driver for i in aws_images._table().values()]
    if cloud == "gcp":
        return [i.driver for group in gcp_images._images().values() for i in group]
    kind = azure_images.size_facts(instance_type).image_kind or ""
    return [azure_images._table()[kind].driver]


def test_every_nvidia_efa_type_boots_an_image_with_the_efa_software() -> None:
    efa_types = {p.instance_type: p for p in PLACEMENTS if p.cloud == "aws"
                 and drivers.vendor(_accelerator(p)) == "nvidia"
                 and (p.instance_type or "").split(".")[0] in ("p4d", "p4de", "p5", "p5e",
                                                                "p5en", "p6-b200")}
    assert {"p4d.24xlarge", "p5.48xlarge", "p6-b200.48xlarge"} <= set(efa_types)
    for placement in efa_types.values():
        image = aws_images.select_image(placement, ResourceCandidate(index=0), efa=True)
        assert image.efa and drivers.supports(image.driver, _accelerator(placement))


def _aws(instance_type: str, accelerators: dict[str, float], **kw: Any) -> Placement:
    return Placement(cloud="aws", region="us-east-1", zone="use1-az6",
                     instance_type=instance_type, accelerators=accelerators,
                     hourly_cost=1.0, **kw)


def _terraform(placement: Placement, **candidate: Any) -> dict[str, Any]:
    stack = build_stack("c", placement, ResourceCandidate(index=0, **candidate),
                        config=SkycConfig(), workspace=WS)
    doc: dict[str, Any] = json.loads(emit(stack, "terraform")["main.tf.json"])
    return doc["resource"]


def _launched_from_dlami(resources: dict[str, Any], node: str, disk: int) -> None:
    instance = resources["aws_instance"][node]
    assert "ami" not in instance and "root_block_device" not in instance
    assert instance["launch_template"] == {"id": "${aws_launch_template.main.id}",
                                           "version": "$Default"}
    template = resources["aws_launch_template"]["main"]
    assert template["image_id"] == DLAMI_PARAMETER
    (mapping,) = template["block_device_mappings"]
    assert mapping["device_name"] == "/dev/sda1"
    assert mapping["ebs"]["volume_size"] == disk and mapping["ebs"]["encrypted"] == "true"


def test_b200_nodes_boot_the_deep_learning_ami_in_the_terraform_json() -> None:
    """SkyPilot's GPU image carries driver 535; B200 needs 570: the nodes are launched
    from a template holding the Deep Learning Base OSS Nvidia Driver AMI (EC2 resolves
    its id from AWS's public SSM parameter) and the root volume."""
    resources = _terraform(_aws("p6-b200.48xlarge", {"B200": 8}), disk_size=300)
    _launched_from_dlami(resources, "node_0", 300)
    older = _terraform(_aws("g5.xlarge", {"A10G": 1}))["aws_instance"]["node_0"]
    assert older["ami"].startswith("ami-") and "launch_template" not in older


def test_efa_nodes_boot_the_deep_learning_ami_in_the_terraform_json() -> None:
    """network_tier: best attaches EFA to p5 nodes: their image has the EFA software;
    without EFA the same nodes keep SkyPilot's image (driver 535 runs H100)."""
    p5 = _aws("p5.48xlarge", {"H100": 8}, num_nodes=2)
    best = _terraform(p5, network_tier="best")
    for node in ("node_0", "node_1"):
        _launched_from_dlami(best, node, 256)
    # The EFA is each node's one interface, made at launch from the template.
    [nic] = best["aws_launch_template"]["main"]["network_interfaces"]
    assert nic["interface_type"] == "efa"
    plain = _terraform(p5)
    assert "aws_launch_template" not in plain
    assert plain["aws_instance"]["node_0"]["ami"].startswith("ami-")
    own = _terraform(p5, network_tier="best", image_id="ami-0123456789abcdef0")
    assert own["aws_launch_template"]["main"]["image_id"] == "ami-0123456789abcdef0"
    assert "ami" not in own["aws_instance"]["node_0"]


def test_an_accelerator_no_image_has_a_driver_for_is_refused_at_compile() -> None:
    with pytest.raises(UnsupportedFeature) as info:
        _terraform(_aws("g4ad.xlarge", {"Radeon Pro V520": 1}))
    assert "Radeon Pro V520 needs the AMD ROCm driver" in info.value.message


@pytest.mark.parametrize(("placement", "image", "size"), [
    (_aws("g5.xlarge", {"A10G": 1}), "skypilot:custom-gpu-ubuntu", 45),
    (_aws("p6-b200.48xlarge", {"B200": 8}), "aws:deep-learning-base-oss-nvidia-ubuntu-2204", 75),
    (Placement(cloud="gcp", region="us-central1", zone="us-central1-a",
               instance_type="g2-standard-4", accelerators={"L4": 1}, hourly_cost=1.0),
     "common-cu124-ubuntu-2204-py310", 50),
    (Placement(cloud="azure", region="eastus", instance_type="Standard_NC4as_T4_v3",
               accelerators={"T4": 1}, hourly_cost=1.0), "ubuntu-hpc:2204", 30),
])
def test_a_disk_smaller_than_the_image_is_refused_naming_its_size(
        placement: Placement, image: str, size: int) -> None:
    candidate = ResourceCandidate(index=0, disk_size=size - 1)
    with pytest.raises(ConfigError) as info:
        build_stack("c", placement, candidate, config=SkycConfig(), workspace=WS)
    assert info.value.message.startswith(f"disk_size: {size - 1} GiB is smaller than the image")
    assert image in info.value.message and f"({size} GiB)" in info.value.message
    assert info.value.hint == f"set disk_size: {size} or more"
    exact = ResourceCandidate(index=0, disk_size=size)
    build_stack("c", placement, exact, config=SkycConfig(), workspace=WS)


def test_a_users_image_is_held_to_the_clouds_own_floor() -> None:
    """skyc does not know the size of an image the task names: only the cloud's
    smallest boot disk applies."""
    own = ResourceCandidate(index=0, disk_size=20, image_id="ami-0123456789abcdef0")
    build_stack("c", _aws("g5.xlarge", {"A10G": 1}), own, config=SkycConfig(), workspace=WS)
    tiny = own.model_copy(update={"disk_size": 4})
    with pytest.raises(ConfigError, match=r"smaller than EC2's smallest root volume \(8 GiB\)"):
        build_stack("c", _aws("g5.xlarge", {"A10G": 1}), tiny, config=SkycConfig(),
                    workspace=WS)


def test_the_default_disk_fits_every_image_of_the_tables() -> None:
    default = ResourceCandidate(index=0).disk_size
    sizes = ([i.disk_gib for i in aws_images._table().values()]
             + [i.disk_gib for g in gcp_images._images().values() for i in g]
             + [r.disk_gib for r in azure_images._table().values()])
    assert max(sizes) >= 50 and default >= max(sizes)


@pytest.mark.parametrize("value", [False, "false", "False"])
def test_tpu_nodes_are_refused_on_every_target(value: object) -> None:
    """accelerator_args.tpu_vm: false asks for a TPU Node (an N1 host plus a TPU):
    refused with the reason on every target, not placed as a TPU VM."""
    placement = Placement(cloud="gcp", region="us-central1", zone="us-central1-b",
                          instance_type="TPU-VM", accelerators={"tpu-v3-8": 1},
                          hourly_cost=8.0)
    candidate = ResourceCandidate(index=0, accelerator_args={"tpu_vm": value})
    for name in target_names():
        moved = placement.model_copy(update={"cloud": name})
        with pytest.raises(UnsupportedFeature) as info:
            build_stack("c", moved, candidate, config=SkycConfig(), workspace=WS)
        assert info.value.message == ("accelerator_args.tpu_vm: TPU Nodes are not supported; "
                                      "TPU VMs only: drop tpu_vm: false"), name
    vm = ResourceCandidate(index=0, accelerator_args={"tpu_vm": True})
    build_stack("c", placement, vm, config=SkycConfig(), workspace=WS)
