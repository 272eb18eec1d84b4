"""The AWS resource kinds a stack is made of: each one's terraform type and Pulumi class
(``pulumi_aws``), for the clusters' stacks and the region's shared network."""

from __future__ import annotations

from typing import Any

from skyc.model.stack import Resource

# Resource kinds: (terraform type, Pulumi class).
TYPES: dict[str, tuple[str, str]] = {
    "vpc": ("aws_vpc", "aws.ec2.Vpc"),
    "subnet": ("aws_subnet", "aws.ec2.Subnet"),
    "internet_gateway": ("aws_internet_gateway", "aws.ec2.InternetGateway"),
    "route_table": ("aws_route_table", "aws.ec2.RouteTable"),
    "route": ("aws_route", "aws.ec2.Route"),
    "route_table_association": ("aws_route_table_association", "aws.ec2.RouteTableAssociation"),
    "security_group": ("aws_security_group", "aws.ec2.SecurityGroup"),
    "ingress_rule": ("aws_vpc_security_group_ingress_rule", "aws.vpc.SecurityGroupIngressRule"),
    "egress_rule": ("aws_vpc_security_group_egress_rule", "aws.vpc.SecurityGroupEgressRule"),
    "key_pair": ("aws_key_pair", "aws.ec2.KeyPair"),
    "placement_group": ("aws_placement_group", "aws.ec2.PlacementGroup"),
    "network_interface": ("aws_network_interface", "aws.ec2.NetworkInterface"),
    "eip": ("aws_eip", "aws.ec2.Eip"),
    "launch_template": ("aws_launch_template", "aws.ec2.LaunchTemplate"),
    "instance": ("aws_instance", "aws.ec2.Instance"),
    "instance_state": ("aws_ec2_instance_state", "aws.ec2transitgateway.InstanceState"),
    "iam_role": ("aws_iam_role", "aws.iam.Role"),
    "iam_role_policy": ("aws_iam_role_policy", "aws.iam.RolePolicy"),
    "instance_profile": ("aws_iam_instance_profile", "aws.iam.InstanceProfile"),
}


def resource(kind: str, key: str, name: str, properties: dict[str, Any],
             **fields: Any) -> Resource:
    """A resource of ``kind`` with the AWS provider."""
    terraform, pulumi = TYPES[kind]
    return Resource(key=key, name=name, types={"terraform": terraform, "pulumi": pulumi},
                    properties=properties, provider="aws", **fields)
