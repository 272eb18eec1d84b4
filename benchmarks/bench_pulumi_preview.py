"""The offline Pulumi preview of a 2-node AWS GPU cluster (``skyc plan --engine pulumi``,
no CLI: the program under Pulumi's mock runtime), as a whole process, and apart from
it what the Pulumi SDK imports cost (``import pulumi``; the first ``pulumi_aws``
class a program touches), each in a fresh process.

Prints medians of N runs (wall and CPU); exits 1 when the preview's wall median is
above the budget (3 s: the provider SDK import is most of it).

    python benchmarks/bench_pulumi_preview.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

TASK = """\
name: train
num_nodes: 2
resources:
  infra: aws/us-east-1
  accelerators: A10G:1
run: python train.py
"""
IMPORTS = {
    "import pulumi": "import pulumi",
    "import pulumi_aws + first ec2.Instance": "import pulumi_aws as aws; aws.ec2.Instance",
    "python start-up": "pass",
}


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 3.0)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        task = home / "task.yaml"
        task.write_text(TASK)
        env = bench_env(SKYC_HOME=str(home), AWS_ACCESS_KEY_ID="bench",
                        AWS_SECRET_ACCESS_KEY="bench", AWS_EC2_METADATA_DISABLED="true")
        env.pop("SKYC_PULUMI_ROOT", None)
        cmd = skyc_command("plan", str(task), "--engine", "pulumi", "--format", "json",
                           "--cluster", "bench")
        check = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        [stack] = json.loads(check.stdout)["stacks"]
        if stack["preview"] != "offline" or not stack["resource_changes"]:
            sys.exit(f"no offline preview: {stack['note']}")
        times = time_runs(cmd, env, args.runs)
        print(f"skyc plan --engine pulumi (2-node AWS, offline preview), {args.runs} runs: "
              f"{times.summary()}; {load_average()}")
        for label, code in IMPORTS.items():
            part = time_runs([sys.executable, "-c", code], env, args.runs)
            print(f"  {label}: {part.summary()}")
    failure = over_budget(times, args.budget, args.budget_cpu)
    if failure:
        print(failure)
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} median within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
