"""Kubernetes nodes from the stack's outputs: one pod per node, reached through the API.

Each node is a pod (name, namespace, kubeconfig context) that the runtime
reaches with the Kubernetes API's exec stream (``transport="kubernetes"``, see
:mod:`skyc.runtime.kube`); its ``ip`` is the pod IP, which the other nodes use
(``SKYPILOT_NODE_IPS``). A namespace the stack left to the context comes back
from the engine; when it does not, the kubeconfig context's namespace is used,
else ``default``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skyc.compiler.base import list_output, node_name
from skyc.compiler.kubernetes.credentials import credentials
from skyc.errors import EngineError
from skyc.model.nodes import Node
from skyc.settings.config import SkycConfig


def _namespace(outputs: dict[str, Any], context: str, config: SkycConfig) -> str:
    given = outputs.get("namespace")
    if isinstance(given, str) and given:
        return given
    settings = config.kubernetes.contexts.get(context)
    if settings and settings.namespace:
        return settings.namespace
    info = credentials(os.environ).context(context)
    return (info.namespace if info else None) or "default"


def nodes(
    cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path
) -> list[Node]:
    pods = list_output(outputs, "pods", cluster)
    ips = list_output(outputs, "pod_ips", cluster)
    context = outputs.get("context")
    if not isinstance(context, str) or not context:
        raise EngineError(f"cluster {cluster}: stack outputs lack context")
    if len(pods) != len(ips):
        raise EngineError(f"cluster {cluster}: {len(pods)} pods but {len(ips)} pod IPs")
    namespace = _namespace(outputs, context, config)
    return [
        Node(name=node_name(rank), rank=rank, transport="kubernetes", ip=str(ip or ""),
             pod=str(pod), namespace=namespace, context=context)
        for rank, (pod, ip) in enumerate(zip(pods, ips, strict=True))
    ]
