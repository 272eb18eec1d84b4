"""The offline Pulumi preview of GCP clusters (``skyc plan``, no CLI: the program under
Pulumi's mock runtime), as a whole process: a 2-node L4 cluster and a 4-host
``tpu-v4-32`` slice; apart from it what the first ``pulumi_gcp`` class a program
touches costs, in a fresh process.

Prints medians of N runs (wall and CPU); exits 1 when a preview's wall median is above
the budget (8 s: importing pulumi_gcp's compute module is most of it).

    python benchmarks/bench_gcp_preview.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

TASKS = {
    "2-node L4": "name: serve\nnum_nodes: 2\nresources:\n  infra: gcp\n  accelerators: L4:1\n"
                 "  ports: 8080\nrun: python serve.py\n",
    "tpu-v4-32 slice": "name: tpu\nresources:\n  infra: gcp\n  accelerators: tpu-v4-32\n"
                       "run: python train.py\n",
}
IMPORTS = {
    "import pulumi_gcp + first compute.Instance": "import pulumi_gcp as gcp; gcp.compute.Instance",
    "import pulumi_gcp + first tpu.V2Vm": "import pulumi_gcp as gcp; gcp.tpu.V2Vm",
}


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 8.0)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        adc = home / "gcloud" / "application_default_credentials.json"
        adc.parent.mkdir()
        adc.write_text(json.dumps({"type": "authorized_user", "refresh_token": "bench",
                                   "quota_project_id": "bench-project-1"}))
        env = bench_env(SKYC_HOME=str(home / "skyc"), HOME=str(home),
                        CLOUDSDK_CONFIG=str(adc.parent))
        env.pop("SKYC_PULUMI_ROOT", None)
        env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
        for label, text in TASKS.items():
            task = home / f"{label.replace(' ', '-')}.yaml"
            task.write_text(text)
            cmd = skyc_command("plan", str(task), "--format", "json", "--cluster", "bench")
            check = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if check.returncode != 0:
                sys.exit(f"{label}: skyc plan failed: {check.stderr.strip()}")
            [stack] = json.loads(check.stdout)["stacks"]
            if stack["preview"] != "offline" or not stack["resource_changes"]:
                sys.exit(f"{label}: no offline preview: {stack['note']}")
            times = time_runs(cmd, env, args.runs)
            print(f"skyc plan ({label} on gcp, offline Pulumi preview), {args.runs} runs: "
                  f"{times.summary()}; {load_average()}")
            failure = over_budget(times, args.budget, args.budget_cpu)
            if failure:
                failures.append(f"{label}: {failure}")
        for label, code in IMPORTS.items():
            part = time_runs([sys.executable, "-c", code], env, args.runs)
            print(f"  {label}: {part.summary()}")
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} medians within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
