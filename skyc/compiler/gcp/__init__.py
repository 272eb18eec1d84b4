"""GCP: one VPC network per cluster; GPU and CPU VMs (A2/A3/A4/G2, and N1 hosts with
attached GPUs) or TPU VMs (single-host slices, or one multi-host slice whose workers
are the nodes). Pulumi only: no google provider can be run here to check Terraform
JSON against, so ``--engine terraform`` is refused for gcp, naming ``--engine pulumi``.

The record and its parts are in ``target``.
"""
