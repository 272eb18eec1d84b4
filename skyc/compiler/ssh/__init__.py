"""SSH pools (``ssh/<pool>``): existing hosts from the config become the nodes
(terraform only: the stack records the hosts with terraform's built-in resource).

The record and its parts are in ``target``.
"""
