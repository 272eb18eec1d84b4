"""The environment every node's setup and run commands see."""

from __future__ import annotations

import json

from skyc.model.nodes import ClusterInfo, Node
from skyc.runtime.spec import JobSpec

PREFIXES = ("SKYPILOT_", "SKYC_")


def _gpus(spec: JobSpec, cluster: ClusterInfo) -> str:
    value = spec.num_gpus_per_node or cluster.num_gpus_per_node
    return str(int(value)) if float(value).is_integer() else str(value)


def node_env(cluster: ClusterInfo, node: Node, spec: JobSpec, task_id: str,
             phase: str) -> dict[str, str]:
    """SKYPILOT_* (and the same under SKYC_*) variables, then the task's envs and secrets."""
    nodes = sorted(cluster.nodes, key=lambda n: n.rank)
    ips = "\n".join(n.ip for n in nodes)
    info = {"cluster": cluster.name, "cloud": cluster.cloud, "region": cluster.region,
            "zone": cluster.zone}
    values = {
        "NODE_RANK": str(node.rank),
        "NODE_IPS": ips,
        "NUM_NODES": str(len(nodes)),
        "NUM_GPUS_PER_NODE": _gpus(spec, cluster),
        "TASK_ID": task_id,
        "CLUSTER_INFO": json.dumps(info, sort_keys=True),
    }
    if phase == "setup":
        values["SETUP_NODE_RANK"] = str(node.rank)
        values["SETUP_NODE_IPS"] = ips
    env = {prefix + k: v for prefix in PREFIXES for k, v in values.items()}
    env.update(spec.envs)
    env.update(spec.secret_values())
    return env
