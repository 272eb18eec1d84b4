"""Planning on Kubernetes from a cached read of a large cluster, as whole processes:
``skyc plan --no-diff`` of a 2-node H100:8 task over a context of N nodes (the GKE
fixture's node pools repeated), and the same plan with its offline Pulumi preview
(the pods' program under Pulumi's mock runtime).

Prints medians of N runs (wall and CPU); exits 1 when the --no-diff plan's wall
median is above the budget (1.5 s).

    python benchmarks/bench_kubernetes.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import ROOT, bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

NODES = int(os.environ.get("SKYC_BENCH_K8S_NODES", "2000"))
TASK = """\
name: train
num_nodes: 2
resources:
  infra: k8s/bench
  accelerators: H100:8
run: python train.py
"""


def node_list(count: int) -> dict[str, object]:
    """``count`` nodes: the GKE fixture's nodes, renamed, over and over."""
    base = json.loads((ROOT / "tests" / "fixtures" / "kubernetes" / "gke-nodes.json").read_text())
    items = []
    for i in range(count):
        node = copy.deepcopy(base["items"][i % len(base["items"])])
        node["metadata"]["name"] = f"{node['metadata']['name']}-{i}"
        items.append(node)
    return {"kind": "List", "apiVersion": "v1", "items": items}


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 1.5)
    sys.path.insert(0, str(ROOT))
    from skyc.compiler.kubernetes.discovery import write_cache

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        write_cache("bench", node_list(NODES), home=home)
        task = home / "task.yaml"
        task.write_text(TASK)
        (home / ".kube").mkdir()  # the context exists (never reached: the preview is offline)
        (home / ".kube" / "config").write_text(
            "contexts:\n- name: bench\n  context: {cluster: bench}\n"
            "clusters:\n- name: bench\n  cluster: {server: 'https://127.0.0.1:9'}\n")
        env = bench_env(SKYC_HOME=str(home), HOME=str(home))
        plan = skyc_command("plan", str(task), "--no-diff", "--format", "json")
        check = subprocess.run(plan, env=env, capture_output=True, text=True, check=True)
        placement = json.loads(check.stdout)["tasks"][0]["placement"]
        if (placement["cloud"], placement["region"]) != ("kubernetes", "bench"):
            sys.exit(f"not placed on the cached context: {placement}")
        times = time_runs(plan, env, args.runs)
        print(f"skyc plan --no-diff, k8s context of {NODES} cached nodes, {args.runs} runs: "
              f"{times.summary()}; {load_average()}")
        preview = skyc_command("plan", str(task), "--format", "json", "--cluster", "bench")
        out = subprocess.run(preview, env=env, capture_output=True, text=True, check=True)
        [stack] = json.loads(out.stdout)["stacks"]
        if stack["preview"] != "offline" or not stack["resource_changes"]:
            sys.exit(f"no offline preview: {stack['note']}")
        with_preview = time_runs(preview, env, args.runs)
        print(f"skyc plan with the offline Pulumi preview (2 pods + services): "
              f"{with_preview.summary()}")
    failure = over_budget(times, args.budget, args.budget_cpu)
    if failure:
        print(failure)
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} median within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
