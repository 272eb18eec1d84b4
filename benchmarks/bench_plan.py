"""Time of ``skyc plan`` for one GPU task over aws, gcp and azure (bundled catalog),
as a whole process, placement only (``--no-diff``: the engine diff runs terraform).

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs. Exits 1 when the wall median is above the budget (0.5 s);
with ``--budget-cpu`` the budget applies to the CPU median instead, which is the
steadier figure on a machine that other work keeps busy.

Timing as in ``_timing``: as installed, after one untimed warm-up run.

    python benchmarks/bench_plan.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

TASK = "name: train\nresources:\n  accelerators: A100:8\nrun: python train.py\n"


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 0.5)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        task = home / "task.yaml"
        task.write_text(TASK)
        cmd = skyc_command("plan", str(task), "--format", "json", "--no-diff")
        times = time_runs(cmd, bench_env(SKYC_HOME=str(home)), args.runs)
    print(f"skyc plan (A100:8 over aws, gcp, azure; --no-diff), {args.runs} runs: "
          f"{times.summary()}; {load_average()}")
    failure = over_budget(times, args.budget, args.budget_cpu)
    if failure:
        print(failure)
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} median within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
