"""The managed-jobs controller's credentials on AWS: an IAM role for EC2, its policy
and an instance profile, attached to the controller cluster's instances.

The policy allows what skyc's AWS stacks do (skyc.compiler.aws.lowering): VPCs,
subnets, internet gateways, route tables and routes, security groups and their
rules, key pairs, placement groups, network interfaces and Elastic IPs, launch
templates, instances (spot ones included) and their power state, tags, and every
EC2 describe call; reading the public SSM parameters EC2 resolves the Deep Learning
AMI from at launch;
``sts:GetCallerIdentity`` for the provider's own check; and the one IAM action a
first spot request in an account needs (EC2 Spot's own service-linked role).
Nothing else: no ``iam:PassRole`` (job clusters get no role), no S3, no wildcard
service. Code on the controller's nodes reads the credentials from the instance
metadata service (IMDSv2, as the instances require).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# EC2 actions beyond Describe*, grouped by the resource of skyc's stacks they serve.
EC2_ACTIONS: dict[str, tuple[str, ...]] = {
    "vpc": ("CreateVpc", "DeleteVpc", "ModifyVpcAttribute"),
    "subnet": ("CreateSubnet", "DeleteSubnet", "ModifySubnetAttribute"),
    "internet_gateway": ("CreateInternetGateway", "DeleteInternetGateway",
                         "AttachInternetGateway", "DetachInternetGateway"),
    "route_table": ("CreateRouteTable", "DeleteRouteTable", "CreateRoute", "DeleteRoute",
                    "ReplaceRoute", "AssociateRouteTable", "DisassociateRouteTable"),
    "security_group": ("CreateSecurityGroup", "DeleteSecurityGroup",
                       "AuthorizeSecurityGroupIngress", "AuthorizeSecurityGroupEgress",
                       "RevokeSecurityGroupIngress", "RevokeSecurityGroupEgress",
                       "ModifySecurityGroupRules", "UpdateSecurityGroupRuleDescriptionsIngress",
                       "UpdateSecurityGroupRuleDescriptionsEgress"),
    "key_pair": ("ImportKeyPair", "DeleteKeyPair"),
    "placement_group": ("CreatePlacementGroup", "DeletePlacementGroup"),
    "network_interface": ("CreateNetworkInterface", "DeleteNetworkInterface",
                          "ModifyNetworkInterfaceAttribute", "AttachNetworkInterface",
                          "DetachNetworkInterface"),
    "eip": ("AllocateAddress", "ReleaseAddress", "AssociateAddress", "DisassociateAddress"),
    "launch_template": ("CreateLaunchTemplate", "CreateLaunchTemplateVersion",
                        "ModifyLaunchTemplate", "DeleteLaunchTemplate"),
    "instance": ("RunInstances", "TerminateInstances", "StartInstances", "StopInstances",
                 "ModifyInstanceAttribute", "CancelSpotInstanceRequests"),
    "volume": ("CreateVolume", "DeleteVolume", "AttachVolume", "DetachVolume",
               "ModifyVolume"),
    "tags": ("CreateTags", "DeleteTags"),
}

# The public SSM parameters EC2 resolves an image id from at launch (resolve:ssm:...).
IMAGE_PARAMETERS = "arn:aws:ssm:*::parameter/aws/service/deeplearning/*"
SPOT_SERVICE_ROLE = ("arn:aws:iam::*:role/aws-service-role/spot.amazonaws.com/"
                     "AWSServiceRoleForEC2Spot")


def role_name(cluster: str, owner_hash: str = "") -> str:
    """The role's (and instance profile's) name, ``skyc-<cluster>[-<owner hash>]``: at
    most 64 characters, as IAM allows (a long cluster name is cut and a hash of it
    added; the owner's hash is always kept)."""
    tail = f"-{owner_hash}" if owner_hash else ""
    name = f"skyc-{cluster}{tail}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    return f"skyc-{cluster[:50 - len(tail)]}-{digest}{tail}"


def _document(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, indent=2,
                      sort_keys=True)


def trust_policy() -> str:
    """Who may take the role: EC2, for the instances the profile is attached to."""
    return _document([{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": "ec2.amazonaws.com"},
    }])


def controller_policy() -> str:
    """What the role may do: manage the EC2 resources of skyc's AWS stacks."""
    actions = sorted({f"ec2:{a}" for group in EC2_ACTIONS.values() for a in group})
    return _document([
        {"Sid": "Describe", "Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
        {"Sid": "Clusters", "Effect": "Allow", "Action": actions, "Resource": "*"},
        {"Sid": "Identity", "Effect": "Allow", "Action": ["sts:GetCallerIdentity"],
         "Resource": "*"},
        {"Sid": "ImageParameters", "Effect": "Allow", "Action": ["ssm:GetParameters"],
         "Resource": IMAGE_PARAMETERS},
        # A spot request's first use in an account creates EC2's own service-linked role.
        {"Sid": "SpotServiceRole", "Effect": "Allow", "Action": ["iam:CreateServiceLinkedRole"],
         "Resource": SPOT_SERVICE_ROLE,
         "Condition": {"StringEquals": {"iam:AWSServiceName": "spot.amazonaws.com"}}},
    ])
