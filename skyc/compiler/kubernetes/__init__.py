"""The Kubernetes target: GPU and TPU pods on the user's own clusters (Pulumi only).

``config`` holds the ``kubernetes:`` config section; ``labels`` and ``nodes``
turn a cluster's node list into offers, ``discovery`` reads it through the
official client and caches it, ``offers`` is what a catalog asks for;
``lowering`` writes one pod per node (``selectors``: devices, affinity,
tolerations, TPU slices; ``manifest``: label rules and the ``pod_config``
merge), ``outputs`` turns the stack's outputs into nodes; ``events`` turns pod
statuses and events into diagnostics, ``errors`` classifies them;
``credentials`` reads the kubeconfig.

Capabilities, as ``target`` declares them: spot only where the context has spot node
pools (offers carry a spot price only for nodes labelled as spot, and the pods
select and tolerate them, see ``selectors``); multi-node; open ports (a Service);
no stop/start (a pod cannot be stopped and resumed); custom images are
container images (``image_id: docker:IMAGE``); at most 256 pods per cluster.

The record and its parts are in ``target``.
"""
