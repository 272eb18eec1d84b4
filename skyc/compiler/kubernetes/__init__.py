"""The Kubernetes target: GPU and TPU pods on the user's own clusters.

``config`` holds the ``kubernetes:`` config section; ``labels`` and ``nodes``
turn a cluster's node list into offers, ``discovery`` reads it through the
official client and caches it, ``offers`` is what a catalog asks for;
``events`` turns pod statuses and events into diagnostics, ``errors``
classifies them; ``credentials`` reads the kubeconfig.
"""
