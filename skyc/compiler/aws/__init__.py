"""AWS: one VPC per cluster, ``num_nodes`` EC2 instances (terraform or Pulumi).

The record and its parts are in ``target``."""
