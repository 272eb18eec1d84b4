"""The Kubernetes target: GPU and TPU pods on the user's own clusters (Pulumi only).

``config`` holds the ``kubernetes:`` config section; ``labels`` and ``nodes``
turn a cluster's node list into offers, ``discovery`` reads it through the
official client and caches it, ``offers`` is what a catalog asks for;
``lowering`` writes one pod per node (``selectors``: devices, affinity,
tolerations, TPU slices; ``manifest``: label rules and the ``pod_config``
merge), ``outputs`` turns the stack's outputs into nodes; ``events`` turns pod
statuses and events into diagnostics, ``errors`` classifies them;
``credentials`` reads the kubeconfig.

Capabilities, as declared below: spot only where the context has spot node
pools (offers carry a spot price only for nodes labelled as spot, and the pods
select and tolerate them, see ``selectors``); multi-node; open ports (a Service);
no stop/start (a pod cannot be stopped and resumed); custom images are
container images (``image_id: docker:IMAGE``); at most 256 pods per cluster.
"""

from __future__ import annotations

from typing import Any

from skyc.lazy import lazy_target


def _record() -> Any:
    from skyc.compiler.base import Capabilities, Target

    return Target(
        name="kubernetes",
        # The kubernetes Terraform provider's schema cannot be checked here: Pulumi only.
        engines=("pulumi",),
        capabilities=Capabilities(
            cloud="kubernetes",
            spot=True,
            multi_node=True,
            open_ports=True,
            stop_start=False,
            custom_images=True,
            # Each pod is one resource the engine creates and waits for; beyond a few
            # hundred a single stack's apply gets slow and a JobSet would fit better.
            max_nodes=256,
            controller_credentials=None,  # not yet: an in-cluster service account
        ),
    )


__getattr__ = lazy_target(__name__, _record)
