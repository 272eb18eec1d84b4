"""Start-up of skyc against its floor, paired in one run: a bare
``python -c 'import typer, pydantic, yaml'`` and, interleaved with it,
``skyc plan --no-diff`` (one GPU task, bundled catalog), ``skyc validate`` and
``skyc exec`` to its first log line (a 2-node local cluster, as in bench_exec).

Interleaving the runs keeps the comparison fair on a machine other work keeps
busy: each skyc run is timed next to a bare run. Prints per command the median
wall time and its ratio to the bare import's median. Exits 1 when a ratio is
over ``--ratio`` (2.0) or the plan's wall median is over ``--budget`` (0.5 s).
``--importtime`` adds the heaviest imports of ``skyc plan`` (``python -X
importtime``, cumulative, the fastest of three runs) and their own time summed per
package (which also counts modules loaded by ``importlib.import_module``, which
``-X importtime`` does not list). ``--phases`` adds, per command, where the time
goes inside the process (``startup_phases.py``: the floor's imports, the CLI, typer's
parsing, the command's imports and the rest of its body; the fastest of five runs).

    python benchmarks/bench_startup.py [--runs N] [--ratio R] [--budget S] [--importtime]
                                       [--phases]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _timing import ROOT, bench_env, load_average, run_once, skyc_command
from bench_exec import first_line_seconds
from bench_exec import setup as exec_setup

TASK = "name: train\nresources:\n  accelerators: A100:8\nrun: python train.py\n"
BARE = [sys.executable, "-c", "import typer, pydantic, yaml"]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--ratio", type=float, default=2.0)
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--phases", action="store_true")
    return parser.parse_args()


def import_profile(cmd: list[str], env: dict[str, str], top: int = 15
                   ) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The heaviest imports of ``cmd``: (cumulative us, module) of the outermost ones,
    and (own us summed, package) per package (``skyc.<package>`` for skyc's own);
    each module's fastest of 3 runs."""
    best: dict[str, int] = {}
    own: dict[str, int] = {}
    for _ in range(3):
        exe = [sys.executable, "-X", "importtime", "-m", "skyc", *cmd[1:]]
        proc = subprocess.run(exe, cwd=ROOT, env=env, capture_output=True, text=True)
        for line in proc.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if not m:
                continue
            name, self_us, cum = m.group(4), int(m.group(1)), int(m.group(2))
            own[name] = min(self_us, own.get(name, self_us))
            if not m.group(3).strip(" ") and len(m.group(3)) <= 3:
                best[name] = min(cum, best.get(name, cum))
    packages: dict[str, int] = {}
    for name, us in own.items():
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "skyc" and len(parts) > 1 else parts[0]
        packages[key] = packages.get(key, 0) + us
    return (sorted(((us, n) for n, us in best.items()), reverse=True)[:top],
            sorted(((us, n) for n, us in packages.items()), reverse=True)[:top])


def phase_profile(cmd: list[str], env: dict[str, str], runs: int = 5) -> dict[str, float]:
    """``startup_phases.py``'s milliseconds for ``cmd``, each phase's fastest of ``runs``."""
    best: dict[str, float] = {}
    script = str(Path(__file__).with_name("startup_phases.py"))
    for _ in range(runs):
        proc = subprocess.run([sys.executable, script, *cmd[1:]], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"startup_phases.py {' '.join(cmd[1:])} failed:\n{proc.stderr[-3000:]}")
        for name, ms in json.loads(proc.stdout.splitlines()[-1]).items():
            best[name] = min(ms, best.get(name, ms))
    return best


def _report_walls(walls: dict[str, list[float]], args: argparse.Namespace) -> list[str]:
    """Print each command's median against the bare import's; the budgets it breaks."""
    floor = statistics.median(walls["bare import"])
    print(f"{args.runs} interleaved runs each; {load_average()}")
    failures = []
    for name, values in walls.items():
        median = statistics.median(values)
        ratio = median / floor
        print(f"  {name:<20} wall median {median:.3f} s (min {min(values):.3f}), "
              f"{ratio:.2f}x the bare import")
        if name != "bare import" and ratio > args.ratio:
            failures.append(f"{name}: {ratio:.2f}x is over {args.ratio:.2f}x")
    plan_median = statistics.median(walls["plan --no-diff"])
    if plan_median > args.budget:
        failures.append(f"plan --no-diff: wall median {plan_median:.3f} s is over "
                        f"{args.budget:.3f} s")
    return failures


def _print_profiles(profile: tuple[list[Any], list[Any]], phases: dict[str, Any]) -> None:
    if profile[0]:
        print("heaviest imports of skyc plan --no-diff (cumulative, fastest of 3):")
        for us, name in profile[0]:
            print(f"  {us / 1000:8.1f} ms  {name}")
        print("own import time per package, skyc plan --no-diff (fastest of 3 each):")
        for us, name in profile[1]:
            print(f"  {us / 1000:8.1f} ms  {name}")
    for name, times in phases.items():
        print(f"phases of skyc {name} in the process (ms, fastest of 5 each):")
        print("  " + ", ".join(f"{phase} {ms:.1f}" for phase, ms in times.items()))


def main() -> int:
    args = _args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "skyc_home"
        home.mkdir()
        task = root / "task.yaml"
        task.write_text(TASK)
        env = bench_env(SKYC_HOME=str(home), HOME=str(root))
        plan = skyc_command("plan", str(task), "--format", "json", "--no-diff")
        validate = skyc_command("validate", str(task))
        exec_task = exec_setup(root)
        os.environ["SKYC_HOME"] = str(home)
        for cmd in (BARE, plan, validate):
            run_once(cmd, env)  # warm-up
        first_line_seconds(exec_task, home)  # warm-up: uploads the agent
        walls: dict[str, list[float]] = {"bare import": [], "plan --no-diff": [],
                                         "validate": [], "exec to first line": []}
        for _ in range(args.runs):
            walls["bare import"].append(run_once(BARE, env)[0])
            walls["plan --no-diff"].append(run_once(plan, env)[0])
            walls["validate"].append(run_once(validate, env)[0])
            walls["exec to first line"].append(first_line_seconds(exec_task, home))
        profile = import_profile(plan, env) if args.importtime else ([], [])
        phases = {}
        if args.phases:
            exec_cmd = skyc_command("exec", "bench", str(exec_task))
            phases = {"plan --no-diff": phase_profile(plan, env),
                      "validate": phase_profile(validate, env),
                      "exec": phase_profile(exec_cmd, env)}
    failures = _report_walls(walls, args)
    _print_profiles(profile, phases)
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print("ok: within the budget")
    return 1 if failures else 0


if __name__ == "__main__":
    start = time.perf_counter()
    sys.exit(main())
