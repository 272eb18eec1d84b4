"""The GCP target: GPU VMs (A2/A3/A4/G2 and N1 hosts with attached GPUs) and TPU VMs.

The folder holds the same files as every target: error classification
(``errors``), credentials (``credentials``), the ``gcp:`` config section
(``config``) and images (``images``); the lowering is added next to them.
"""
