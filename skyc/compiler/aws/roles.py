"""The nodes' identities on AWS: an IAM role for EC2, its policy and an instance
profile attached to a cluster's instances. A managed-jobs controller's role manages job
clusters (below); a job cluster whose task mounts S3 buckets gets a role that reaches
those buckets and nothing else (:func:`bucket_policy`).

The policy allows what skyc's AWS stacks do (skyc.compiler.aws.lowering): VPCs,
subnets, internet gateways, route tables and routes, security groups and their
rules, key pairs, placement groups, network interfaces and Elastic IPs, launch
templates, instances (spot ones included) and their power state, tags, and every
EC2 describe call; reading the public SSM parameters EC2 resolves the Deep Learning
AMI from at launch;
``sts:GetCallerIdentity`` for the provider's own check; the one IAM action a
first spot request in an account needs (EC2 Spot's own service-linked role); the roles
of job clusters whose task mounts S3 buckets (created, given their bucket policy,
passed to EC2: only roles named for job clusters, ``skyc-skyc-job-*``, never the
controller's own); and the S3 buckets a managed job's task creates or reads (their
stacks: create, configure, read, empty and delete; the task's local sources uploaded).
No other IAM, no wildcard service. Code on the controller's nodes reads the
credentials from the instance metadata service (IMDSv2, as the instances require).
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
# The roles (and instance profiles) of job clusters: ``roles.role_name`` of a managed
# job's cluster (``skyc-job-<id>``). The controller's own role is not among them.
JOB_ROLES = ("arn:aws:iam::*:role/skyc-skyc-job-*",
             "arn:aws:iam::*:instance-profile/skyc-skyc-job-*")
JOB_ROLE_ACTIONS = (
    "AddRoleToInstanceProfile", "CreateInstanceProfile", "CreateRole", "DeleteInstanceProfile",
    "DeleteRole", "DeleteRolePolicy", "GetInstanceProfile", "GetRole", "GetRolePolicy",
    "ListAttachedRolePolicies", "ListInstanceProfilesForRole", "ListRolePolicies",
    "PutRolePolicy", "RemoveRoleFromInstanceProfile", "TagInstanceProfile", "TagRole",
    "UntagInstanceProfile", "UntagRole")
# What a bucket's stack (skyc.compiler.aws.storage) and the bucket checks and uploads do.
BUCKET_ACTIONS = (
    "CreateBucket", "DeleteBucket", "GetAccelerateConfiguration", "GetBucketAcl",
    "GetBucketCORS", "GetBucketLocation", "GetBucketLogging", "GetBucketObjectLockConfiguration",
    "GetBucketOwnershipControls", "GetBucketPolicy", "GetBucketPublicAccessBlock",
    "GetBucketRequestPayment", "GetBucketTagging", "GetBucketVersioning", "GetBucketWebsite",
    "GetEncryptionConfiguration", "GetLifecycleConfiguration", "GetReplicationConfiguration",
    "ListBucket", "ListBucketVersions", "PutBucketPublicAccessBlock", "PutBucketTagging",
    "PutEncryptionConfiguration")
OBJECT_ACTIONS = ("DeleteObject", "DeleteObjectVersion", "GetObject", "PutObject")
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
        {"Sid": "JobClusterRoles", "Effect": "Allow",
         "Action": [f"iam:{a}" for a in JOB_ROLE_ACTIONS], "Resource": list(JOB_ROLES)},
        {"Sid": "PassJobClusterRoles", "Effect": "Allow", "Action": ["iam:PassRole"],
         "Resource": JOB_ROLES[0],
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
        {"Sid": "TaskBuckets", "Effect": "Allow",
         "Action": [f"s3:{a}" for a in BUCKET_ACTIONS], "Resource": "arn:aws:s3:::*"},
        {"Sid": "TaskBucketObjects", "Effect": "Allow",
         "Action": [f"s3:{a}" for a in OBJECT_ACTIONS], "Resource": "arn:aws:s3:::*/*"},
    ])


def bucket_policy(buckets: list[tuple[str, bool]]) -> str:
    """What a cluster's nodes may do with the S3 buckets their task mounts, given as
    (bucket, written to): list and read each, and write and delete objects in those
    mounted for writing. Nothing else in S3, nothing outside it."""
    names = sorted({b for b, _ in buckets})
    written = sorted({b for b, w in buckets if w})
    statements: list[dict[str, Any]] = [
        {"Sid": "ListBuckets", "Effect": "Allow",
         "Action": ["s3:GetBucketLocation", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{b}" for b in names]},
        {"Sid": "ReadObjects", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": [f"arn:aws:s3:::{b}/*" for b in names]},
    ]
    if written:
        statements.append({
            "Sid": "WriteObjects", "Effect": "Allow",
            "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject",
                       "s3:ListMultipartUploadParts", "s3:PutObject"],
            "Resource": [f"arn:aws:s3:::{b}/*" for b in written]})
    return _document(statements)
