"""AWS: one VPC per cluster, ``num_nodes`` EC2 instances (terraform or Pulumi)."""

from __future__ import annotations

from skyc.compiler.base import Capabilities, Target

TARGET = Target(
    name="aws",
    engines=("terraform", "pulumi"),
    capabilities=Capabilities(
        cloud="aws",
        spot=True,
        multi_node=True,
        placement_groups=True,
        open_ports=True,
        stop_start=True,
        disk_gb_month=0.08,  # gp3, us-east-1: what a stopped node still costs per GB
        custom_images=True,
        needs_providers=True,
        max_nodes=512,  # one cluster placement group holds at most a few hundred instances
        controller_credentials="instance-role",  # an IAM role and instance profile
    ),
)
