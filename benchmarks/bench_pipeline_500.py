"""Time of ``skyc plan`` for a 500-step pipeline over aws, gcp and azure (bundled
catalog), as a whole process, placement only (``--no-diff``), in JSON and as tables.

The pipeline is written to a temp dir: a header document (``name: big``), then 500
steps that cycle through a handful of resource specs (CPU-only with and without
memory, A100, L4, T4 and H100 asks, spot and on-demand), as real pipelines repeat a
few shapes over many steps.

Prints the median wall time and the median CPU time (user + sys of the child, from
``os.wait4``) of N runs of each. Exits 1 when a wall median is above the budget
(3.0 s); with ``--budget-cpu`` the budget applies to the CPU medians instead, which
are the steadier figures on a machine that other work keeps busy.

Timing as in ``_timing``: as installed, after one untimed warm-up run.

    python benchmarks/bench_pipeline_500.py [--runs N] [--budget SECONDS] [--budget-cpu]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _timing import bench_env, budget_args, load_average, over_budget, skyc_command, time_runs

STEPS = 500
# The resource specs the steps cycle through (YAML lines under ``resources:``).
SPECS = (
    ("cpus: 4+",),
    ("cpus: 8+", "memory: 32+"),
    ("cpus: 2+", "use_spot: true"),
    ("accelerators: A100:1",),
    ("accelerators: L4:1", "use_spot: true"),
    ("accelerators: T4:1", "cpus: 8+"),
    ("accelerators: H100:8", "use_spot: true"),
    ("memory: 64+",),
)


def pipeline_text(steps: int = STEPS) -> str:
    """The pipeline's YAML: a header document, then ``steps`` tasks."""
    docs = ["name: big\n"]
    for i in range(steps):
        spec = "".join(f"  {line}\n" for line in SPECS[i % len(SPECS)])
        docs.append(f"name: step{i}\nresources:\n{spec}run: echo {i}\n")
    return "---\n".join(docs)


def main() -> int:
    args = budget_args(__doc__.splitlines()[0], 3.0)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_text("infra: [aws, gcp, azure]\n")
        pipeline = home / "pipeline.yaml"
        pipeline.write_text(pipeline_text())
        for fmt in ("json", "table"):
            cmd = skyc_command("plan", str(pipeline), "--format", fmt, "--no-diff")
            times = time_runs(cmd, bench_env(SKYC_HOME=str(home)), args.runs)
            print(f"skyc plan ({STEPS} steps, {len(SPECS)} resource specs, over aws, gcp, "
                  f"azure; --no-diff; --format {fmt}), {args.runs} runs: {times.summary()}; "
                  f"{load_average()}")
            failure = over_budget(times, args.budget, args.budget_cpu)
            if failure:
                failures.append(f"--format {fmt}: {failure}")
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"ok: {'CPU' if args.budget_cpu else 'wall'} medians within the budget of "
          f"{args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
