"""Azure: NVIDIA ND/NC/NV and AMD ND MI300X virtual machines (engine: Pulumi azure-native).

The folder holds what the lowering builds on: error classification
(``errors``), credentials (``credentials``), the ``azure:`` config section
(``config``) and images and size facts (``images``, ``sizes``).
"""
