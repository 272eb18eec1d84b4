"""This machine: each node is a directory under the cluster's workspace (terraform only:
its nodes are local commands run by the engine, which Pulumi's SDK alone cannot run).

The record and its parts are in ``target``.
"""
